"""The replay loop: one lane issues its events in order, each at its scheduled time.

A worker with a blocking backend runs several lanes (threads), so an operation is issued when due
even while other operations are still outstanding: a slow server shows up as latency and
lateness, not as a lower offered load. An object's events share one lane, which keeps their
order, unless the object is hot (``run.key_gate.HOT_EVENTS``): its events then go round robin
over the lanes and the worker's gate (``run.key_gate``) makes each wait only for the earlier ones
it depends on (``schedule.format.ORDERED_OPS``).

An asynchronous backend (HDFS) is driven by one dispatcher instead (``run_async_dispatch``): every
event is issued at its due time whatever else is in flight on its file, unless it depends on an
earlier one (``schedule.format.ORDERED_OPS``), up to a bound on operations in flight: the open
loop for real, where a hot file gets as many operations in flight as the schedule offers.

Per operation the lane records the actual start and end (``time.monotonic_ns``) into
preallocated numpy arrays through memoryviews, and the outcome code (0 = ok) only when it is not
ok. Latency is later measured from the *scheduled* time, service time from the actual start.

Pacing: when ahead, a lane sleeps until the next due time minus a small spin window and then
spins (the worker sets the window to 0 when it runs several lanes: sleep only); when on time or
behind (and always at time scale 0) it issues back to back. Inputs are Python lists made before
the barrier (``Lane.preload``) or, for very long lanes, one chunk at a time. When a lane is further behind than the maximum drift,
it stops the whole worker (``StopSignal``) and records nothing for the late operation.

A backend with a native lane (``Backend.native_lane_runner``) replays each lane in one native
call instead (``run_native_lane``): the GIL is released for the whole lane, so the lanes of a
worker run in parallel; the inputs are numpy arrays and Arrow-style path buffers
(``Lane.native_inputs``), the outputs the same arrays, the count is published while it runs
(``Lane.follow``), and the ``StopSignal`` reaches it through a native flag (``add_listener``).
An asynchronous backend's native lane (hdfs) is *keyed*: one native call replays all of a worker's
events with ``run_async_dispatch``'s semantics, the Python dispatcher staying the reference.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import AsyncOp, NativeLaneRunner, Outcome, SyncOp
from mimesisbench.errors import BackendError
from mimesisbench.jobs import StopSignal
from mimesisbench.native import binary_buffers
from mimesisbench.run.key_gate import KeyGate, ordered_table

#: events converted to Python lists per step (bounded memory; the cost lands before a wait)
CHUNK = 16384
#: lanes up to this many events convert their inputs to Python lists before the barrier
#: (about 60 bytes per event); longer lanes convert one chunk at a time while replaying
PRELOAD_LIMIT = 2_000_000
#: a lane spins (instead of sleeping) this long before a due time
SPIN_NS = 150_000
#: the same for a native lane that is its worker's only lane
NATIVE_SPIN_NS = 150_000
#: ... and for each native lane of a worker with several (native lanes spin yielding the core to
#: a lane that is due; the posix backend runs no more lanes than cores by default)
NATIVE_MULTI_SPIN_NS = 100_000
#: longest single sleep, so a stop request is noticed promptly
MAX_SLEEP_NS = 50_000_000
#: "never" for a disabled drift limit
NO_LIMIT = 1 << 62


@dataclass
class Lane:
    """One lane's events (inputs) and what it measured (outputs, filled in place)."""

    rows: np.ndarray  # int64: positions in the worker's event table
    ops: np.ndarray  # uint8 op codes
    due_ns: np.ndarray  # int64: scheduled time after the barrier (time scale applied)
    paths: pl.Series  # native paths
    paths2: pl.Series | None  # rename targets (null elsewhere), or None when the lane has no renames
    start_ns: np.ndarray = field(init=False)
    end_ns: np.ndarray = field(init=False)
    outcome: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.ops)
        self.start_ns = np.zeros(n, dtype=np.int64)
        self.end_ns = np.zeros(n, dtype=np.int64)
        self.outcome = np.zeros(n, dtype=np.uint8)
        self._count = 0
        self._live: Any = None  # a native lane's progress (``.count``) while it runs
        self._ops_list: list[int] | None = None
        self._args_list: list[Any] | None = None
        self._dues_list: list[int] | None = None
        self._native: NativeInputs | None = None

    def __len__(self) -> int:
        return len(self.ops)

    @property
    def count(self) -> int:
        """Operations issued and recorded so far (a prefix of the lane)."""
        live = self._live
        return self._count if live is None else int(live.count)

    @count.setter
    def count(self, value: int) -> None:
        self._count = value

    def follow(self, progress: Any) -> None:
        """Read ``count`` from a native lane's progress (``None``: back to the stored count)."""
        self._live = progress

    def native_inputs(self) -> NativeInputs:
        """The paths as Arrow-style buffers for a native lane (made once, before the barrier)."""
        if self._native is None:
            paths = binary_buffers(self.paths)
            targets = None if self.paths2 is None else binary_buffers(self.paths2)
            self._native = NativeInputs(
                ops=np.ascontiguousarray(self.ops, dtype=np.uint8),
                due_ns=np.ascontiguousarray(self.due_ns, dtype=np.int64),
                offsets=paths[0],
                data=paths[1],
                offsets2=None if targets is None else targets[0],
                data2=None if targets is None else targets[1],
            )
        return self._native

    def preload(self, limit: int = PRELOAD_LIMIT) -> bool:
        """Convert the lane's inputs to Python lists before the barrier (when not too many)."""
        if len(self) > limit:
            return False
        self._ops_list = self.ops.tolist()
        self._args_list = self._convert(0, len(self))
        self._dues_list = self.due_ns.tolist()
        return True

    def _convert(self, lo: int, hi: int) -> list[Any]:
        args: list[Any] = self.paths.slice(lo, hi - lo).to_list()
        if self.paths2 is not None:
            second = self.paths2.slice(lo, hi - lo).to_list()
            args = [a if b is None else (a, b) for a, b in zip(args, second)]
        return args

    def chunk_ops(self, lo: int, hi: int) -> list[int]:
        if self._ops_list is not None:
            return self._ops_list[lo:hi]
        return self.ops[lo:hi].tolist()

    def chunk_dues(self, lo: int, hi: int) -> list[int]:
        """Due times relative to the barrier (ns); preloaded lanes pay no conversion at chunk
        boundaries, which would otherwise delay the chunk's first operations."""
        if self._dues_list is not None:
            return self._dues_list[lo:hi]
        return self.due_ns[lo:hi].tolist()

    def chunk_args(self, lo: int, hi: int) -> list[Any]:
        if self._args_list is not None:
            return self._args_list[lo:hi]
        return self._convert(lo, hi)

    def lag_ns(self, now_rel_ns: int) -> int:
        """How far behind the lane is now (0 when done or ahead)."""
        i = self.count
        if i >= len(self.ops):
            return 0
        return max(0, now_rel_ns - int(self.due_ns[i]))


@dataclass(frozen=True)
class NativeInputs:
    """A lane's inputs as a native lane takes them (contiguous arrays; paths as offsets + bytes)."""

    ops: np.ndarray  # uint8
    due_ns: np.ndarray  # int64
    offsets: np.ndarray  # int64, len + 1 entries
    data: np.ndarray  # uint8
    offsets2: np.ndarray | None  # rename targets (an empty target where there is none)
    data2: np.ndarray | None


def _relax() -> None:
    """Let other lanes of the process take the GIL (a zero sleep; ``sched_yield`` is avoided:
    under CFS it hands the CPU to other processes for a whole time slice)."""
    time.sleep(0)


def _record_failure(lane: Lane, i: int, t0: int, t1: int) -> None:
    """Record the operation that broke the backend as ``other`` (when one was under way)."""
    if i < len(lane):
        lane.start_ns[i] = t0
        lane.end_ns[i] = t1
        lane.outcome[i] = int(Outcome.OTHER)
        lane.count = i + 1
    else:
        lane.count = i


def _wait_until(due: int, stop: StopSignal, spin_ns: int, yield_spin: bool) -> bool:
    """Sleep then spin until ``due`` (monotonic ns); False when a stop was requested meanwhile."""
    clock = time.monotonic_ns
    sleep = time.sleep
    while True:
        if stop.is_set():
            return False
        remaining = due - clock()
        if remaining <= spin_ns:
            if remaining <= 0:
                return True
            break
        sleep(min(remaining - spin_ns, MAX_SLEEP_NS) / 1e9)
    if yield_spin:
        relax = _relax
        while clock() < due:
            relax()
    else:
        while clock() < due:
            pass
    return True


def run_sync_lane(
    lane: Lane,
    fns: Sequence[SyncOp | None],
    origin_ns: int,
    stop: StopSignal,
    *,
    classify: Callable[[BaseException], Outcome],
    op_errors: tuple[type[BaseException], ...],
    max_drift_ns: int = NO_LIMIT,
    spin_ns: int = SPIN_NS,
    yield_spin: bool = False,
    chunk: int = CHUNK,
    paced: bool = True,
    gate: KeyGate | None = None,
) -> None:
    """Issue every event of ``lane`` at ``origin_ns + due`` (monotonic). Records in place.

    ``paced=False`` (time scale 0): wait for the barrier once, then issue back to back.
    ``gate``: the worker's lanes share hot objects' events round robin, and an event also waits
    for the earlier events on its object it depends on (``run.key_gate``); one late past
    ``max_drift_ns`` by that wait is drift too.

    Returns when done or stopped; a failing backend (an exception not in ``op_errors``) is
    recorded as ``other`` for its operation and re-raised after setting ``stop``.
    """
    clock = time.monotonic_ns
    # ``.data`` is ``memoryview(array)`` (numpy's stubs give ndarray no ``__buffer__`` before Python 3.12)
    m_start = lane.start_ns.data
    m_end = lane.end_ns.data
    m_out = lane.outcome.data
    n = len(lane)
    k = 0
    if not paced:
        if clock() < origin_ns and not _wait_until(origin_ns, stop, spin_ns, yield_spin):
            return
        while k < n and not stop.is_set():
            hi = min(n, k + chunk)
            ops = lane.chunk_ops(k, hi)
            args = lane.chunk_args(k, hi)
            rows: list[int] = lane.rows[k:hi].tolist() if gate is not None else []
            i = k
            t0 = clock()
            try:
                for op, arg in zip(ops, args):
                    if gate is not None and not gate.ready(rows[i - k]):
                        lane.count = i
                        if not gate.wait(rows[i - k], stop):
                            return
                    t0 = clock()
                    try:
                        fns[op](arg)  # type: ignore[misc]
                    except op_errors as exc:
                        m_out[i] = classify(exc)
                    t1 = clock()
                    m_start[i] = t0
                    m_end[i] = t1
                    if gate is not None:
                        gate.end(rows[i - k])
                    i += 1
            except BaseException as exc:
                _record_failure(lane, i, t0, clock())
                stop.set("failed", f"backend failed: {type(exc).__name__}: {exc}")
                raise
            lane.count = hi
            k = hi
        return
    while k < n and not stop.is_set():
        hi = min(n, k + chunk)
        ops = lane.chunk_ops(k, hi)
        dues = lane.chunk_dues(k, hi)
        args = lane.chunk_args(k, hi)
        rows = lane.rows[k:hi].tolist() if gate is not None else []
        i = k
        t0 = clock()
        try:
            for op, due, arg in zip(ops, dues, args):
                due += origin_ns
                t0 = clock()
                if t0 < due:
                    if yield_spin or due - t0 > spin_ns:
                        lane.count = i
                        if not _wait_until(due, stop, spin_ns, yield_spin):
                            return
                        t0 = clock()
                    else:  # due within the spin window, and no other lane needs the GIL
                        while t0 < due:
                            t0 = clock()
                elif t0 - due > max_drift_ns:
                    lane.count = i
                    stop.set("drift", f"{(t0 - due) / 1e9:.3f} s behind schedule")
                    return
                if gate is not None and not gate.ready(rows[i - k]):
                    lane.count = i
                    if not gate.wait(rows[i - k], stop):
                        return
                    t0 = clock()
                    if t0 - due > max_drift_ns:
                        stop.set("drift", f"{(t0 - due) / 1e9:.3f} s behind schedule")
                        return
                try:
                    fns[op](arg)  # type: ignore[misc]
                except op_errors as exc:
                    m_out[i] = classify(exc)
                t1 = clock()
                m_start[i] = t0
                m_end[i] = t1
                if gate is not None:
                    gate.end(rows[i - k])
                i += 1
        except BaseException as exc:
            _record_failure(lane, i, t0, clock())
            stop.set("failed", f"backend failed: {type(exc).__name__}: {exc}")
            raise
        lane.count = hi
        k = hi


def run_native_lane(
    lane: Lane,
    runner: NativeLaneRunner,
    origin_ns: int,
    stop: StopSignal,
    flag: Any,
    *,
    max_drift_ns: int = NO_LIMIT,
    spin_ns: int = SPIN_NS,
    paced: bool = True,
    keys: np.ndarray | None = None,
    outstanding: int = 1,
    gate: Any = None,
) -> None:
    """``run_sync_lane``'s semantics in one native call (GIL released). Records in place.
    ``gate``: the worker's native gate (``runner.key_gate``), for lanes sharing hot objects' events.

    A keyed runner (``runner.keyed``: an asynchronous backend's) has ``run_async_dispatch``'s
    semantics instead, over all of a worker's events: ``keys`` (each event's object) and
    ``outstanding`` (operations in flight at most) are given to it.

    ``flag`` is the worker's native stop flag (``runner.stop_flag()``, made to follow ``stop``
    with ``stop.add_listener(flag.set)``). A lane more than ``max_drift_ns`` late sets ``stop``
    (drift); an operation that cannot be issued is recorded as ``other``, sets ``stop`` (failed)
    and raises ``BackendError``.
    """
    inputs = lane.native_inputs()
    progress = runner.progress()
    keyed: dict[str, Any] = {}
    if runner.keyed:
        if keys is None or len(keys) != len(lane):
            raise ValueError(f"the native {runner.name} lane needs each event's object (keys)")
        keyed = {"keys": np.ascontiguousarray(keys, dtype=np.int64), "outstanding": max(1, outstanding)}
    elif gate is not None:
        keyed = {"gate": gate, "rows": np.ascontiguousarray(lane.rows, dtype=np.int64)}
    lane.follow(progress)
    try:
        status, count, behind_ns, message = runner.run(
            inputs.ops, inputs.due_ns, inputs.offsets, inputs.data, inputs.offsets2, inputs.data2,
            lane.start_ns, lane.end_ns, lane.outcome,
            origin_ns=origin_ns, max_drift_ns=min(max_drift_ns, NO_LIMIT), paced=paced, spin_ns=spin_ns,
            stop=flag, progress=progress, **keyed,
        )
    except BaseException as exc:
        stop.set("failed", f"native lane failed: {type(exc).__name__}: {exc}")
        raise
    finally:
        lane.count = int(progress.count)
        lane.follow(None)
    lane.count = int(count)
    if status == "drift":
        stop.set("drift", f"{behind_ns / 1e9:.3f} s behind schedule")
    elif status == "failed":
        stop.set("failed", f"backend failed: {message}")
        raise BackendError(f"native {runner.name} lane: {message}")
    elif status not in ("done", "stopped"):
        stop.set("failed", f"native lane ended with {status!r}")
        raise BackendError(f"native {runner.name} lane ended with {status!r}")


async def run_async_dispatch(
    lane: Lane,
    keys: np.ndarray,
    fns: Sequence[AsyncOp | None],
    origin_ns: int,
    stop: StopSignal,
    *,
    classify: Callable[[BaseException], Outcome],
    op_errors: tuple[type[BaseException], ...],
    outstanding: int,
    max_drift_ns: int = NO_LIMIT,
    paced: bool = True,
) -> None:
    """The open loop for real: issue each event of ``lane`` (all of a worker's, in schedule order)
    at its due time, whether or not earlier operations on the same object (``keys``) have ended,
    unless it depends on one: an operation of ``ORDERED_OPS`` (create, delete, rename...) waits for
    every earlier operation on its object, and any later operation on the object waits for it.
    At most ``outstanding`` operations are in flight (waiting for a dependency included); a
    dispatch held back by that bound is late, and more than ``max_drift_ns`` late stops the run
    (drift). ``paced=False``: from the barrier, back to back in schedule order (closed loop at
    ``outstanding``).

    Records in place; ``lane.count`` is the prefix of events that ended (an event that ends
    before an earlier one is counted when that one ends). Stopped, operations not yet issued are
    not (the prefix ends at the first of them).

    Written by hand: the per-object dependency rule is this tool's semantics; asyncio supplies the
    tasks, the semaphore and the waits.
    """
    clock = time.monotonic_ns
    n = len(lane)
    if n == 0:
        return
    ordered = ordered_table()
    ops = lane.ops
    ended = bytearray(n)
    prefix = 0
    slots = asyncio.Semaphore(max(1, outstanding))
    barrier: dict[int, asyncio.Task[None]] = {}  # per object: its last ordered operation
    readers: dict[int, set[asyncio.Task[None]]] = {}  # per object: operations since then
    tasks: set[asyncio.Task[None]] = set()
    failures: list[BaseException] = []

    def ended_at(i: int) -> None:
        nonlocal prefix
        ended[i] = 1
        while prefix < n and ended[prefix]:
            prefix += 1
        lane.count = prefix

    async def issue(i: int, op: int, arg: Any, deps: list[asyncio.Task[None]]) -> None:
        t0 = clock()
        try:
            if deps:
                await asyncio.wait(deps)
            if stop.is_set():
                return
            t0 = clock()
            try:
                await fns[op](arg)  # type: ignore[misc]
            except op_errors as exc:
                lane.outcome[i] = classify(exc)
            lane.start_ns[i] = t0
            lane.end_ns[i] = clock()
            ended_at(i)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a failing backend: recorded, the run stopped
            lane.start_ns[i] = t0
            lane.end_ns[i] = clock()
            lane.outcome[i] = int(Outcome.OTHER)
            ended_at(i)
            stop.set("failed", f"backend failed: {type(exc).__name__}: {exc}")
            failures.append(exc)
        finally:
            slots.release()

    def forget(key: int, task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        pending = readers.get(key)
        if pending is not None:
            pending.discard(task)
        if barrier.get(key) is task:
            del barrier[key]
        if pending is not None and not pending and key not in barrier:
            del readers[key]

    if not paced:  # wait for the barrier once, then back to back
        while (now := clock()) < origin_ns and not stop.is_set():
            await asyncio.sleep(min(origin_ns - now, MAX_SLEEP_NS) / 1e9)
    k = 0
    while k < n and not stop.is_set():
        hi = min(n, k + CHUNK)
        chunk_ops = lane.chunk_ops(k, hi)
        dues = lane.chunk_dues(k, hi)
        args = lane.chunk_args(k, hi)
        for j, (op, due, arg) in enumerate(zip(chunk_ops, dues, args)):
            i = k + j
            if paced:
                due += origin_ns
                now = clock()
                while now < due:
                    if stop.is_set():
                        break
                    await asyncio.sleep(min(due - now, MAX_SLEEP_NS) / 1e9)
                    now = clock()
            await slots.acquire()
            if stop.is_set():
                slots.release()
                break
            if paced and clock() - due > max_drift_ns:
                slots.release()
                stop.set("drift", f"{(clock() - due) / 1e9:.3f} s behind schedule")
                break
            key = int(keys[i])
            last = barrier.get(key)
            deps = [] if last is None or last.done() else [last]
            if ordered[ops[i]]:
                deps.extend(t for t in readers.get(key, ()) if not t.done())
            task = asyncio.ensure_future(issue(i, op, arg, deps))
            tasks.add(task)
            if ordered[ops[i]]:
                barrier[key] = task
                readers[key] = set()
            else:
                readers.setdefault(key, set()).add(task)
            task.add_done_callback(partial(forget, key))
        else:
            k = hi
            continue
        break
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    lane.count = prefix
    if failures:
        raise failures[0]
