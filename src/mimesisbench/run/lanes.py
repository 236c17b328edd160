"""The replay loop: one lane issues its events in order, each at its scheduled time.

A worker runs several lanes (threads for blocking backends, asyncio tasks for async ones), so an
operation is issued when due even while operations of *other* files are still outstanding: a slow
server shows up as latency and lateness, not as a lower offered load. Events of one file share a
lane (see ``partition.lane_of``), which keeps their order.

Per operation the lane records the actual start and end (``time.monotonic_ns``) into
preallocated numpy arrays through memoryviews, and the outcome code (0 = ok) only when it is not
ok. Latency is later measured from the *scheduled* time, service time from the actual start.

Pacing: when ahead, a lane sleeps until the next due time minus a small spin window and then
spins (the worker sets the window to 0 when it runs several lanes: sleep only); when on time or
behind (and always at time scale 0) it issues back to back. Inputs are Python lists made before
the barrier (``Lane.preload``) or, for very long lanes, one chunk at a time. When a lane is further behind than the maximum drift,
it stops the whole worker (``StopSignal``) and records nothing for the late operation.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import AsyncOp, Outcome, SyncOp

#: events converted to Python lists per step (bounded memory; the cost lands before a wait)
CHUNK = 16384
#: lanes up to this many events convert their inputs to Python lists before the barrier
#: (about 60 bytes per event); longer lanes convert one chunk at a time while replaying
PRELOAD_LIMIT = 2_000_000
#: a lane spins (instead of sleeping) this long before a due time
SPIN_NS = 150_000
#: longest single sleep, so a stop request is noticed promptly
MAX_SLEEP_NS = 50_000_000
#: "never" for a disabled drift limit
NO_LIMIT = 1 << 62


class StopSignal:
    """Set once by whoever stops the worker first (coordinator, a late lane, a failing backend)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.reason: str | None = None
        self.message = ""

    def set(self, reason: str, message: str = "") -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.message = reason, message
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


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
    count: int = 0  # operations issued and recorded so far (a prefix of the lane)

    def __post_init__(self) -> None:
        n = len(self.ops)
        self.start_ns = np.zeros(n, dtype=np.int64)
        self.end_ns = np.zeros(n, dtype=np.int64)
        self.outcome = np.zeros(n, dtype=np.uint8)
        self._ops_list: list[int] | None = None
        self._args_list: list[Any] | None = None
        self._dues_list: list[int] | None = None

    def __len__(self) -> int:
        return len(self.ops)

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


def _relax() -> None:
    """Let other lanes of the process take the GIL (a zero sleep; ``sched_yield`` is avoided:
    under CFS it hands the CPU to other processes for a whole time slice)."""
    time.sleep(0)


def tighten_timer_slack(slack_ns: int = 1000) -> bool:
    """Ask Linux for precise sleeps in this process (``PR_SET_TIMERSLACK``; default 50 us).

    Called once in a worker process, never at import; returns False where unsupported.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(29, ctypes.c_ulong(slack_ns), 0, 0, 0)) == 0  # 29 = PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        return False


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
) -> None:
    """Issue every event of ``lane`` at ``origin_ns + due`` (monotonic). Records in place.

    ``paced=False`` (time scale 0): wait for the barrier once, then issue back to back.

    Returns when done or stopped; a failing backend (an exception not in ``op_errors``) is
    recorded as ``other`` for its operation and re-raised after setting ``stop``.
    """
    clock = time.monotonic_ns
    m_start = memoryview(lane.start_ns)
    m_end = memoryview(lane.end_ns)
    m_out = memoryview(lane.outcome)
    n = len(lane)
    k = 0
    if not paced:
        if clock() < origin_ns and not _wait_until(origin_ns, stop, spin_ns, yield_spin):
            return
        while k < n and not stop.is_set():
            hi = min(n, k + chunk)
            ops = lane.chunk_ops(k, hi)
            args = lane.chunk_args(k, hi)
            i = k
            t0 = clock()
            try:
                for op, arg in zip(ops, args):
                    t0 = clock()
                    try:
                        fns[op](arg)  # type: ignore[misc]
                    except op_errors as exc:
                        m_out[i] = classify(exc)
                    t1 = clock()
                    m_start[i] = t0
                    m_end[i] = t1
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
                try:
                    fns[op](arg)  # type: ignore[misc]
                except op_errors as exc:
                    m_out[i] = classify(exc)
                t1 = clock()
                m_start[i] = t0
                m_end[i] = t1
                i += 1
        except BaseException as exc:
            _record_failure(lane, i, t0, clock())
            stop.set("failed", f"backend failed: {type(exc).__name__}: {exc}")
            raise
        lane.count = hi
        k = hi


async def run_async_lane(
    lane: Lane,
    fns: Sequence[AsyncOp | None],
    origin_ns: int,
    stop: StopSignal,
    *,
    classify: Callable[[BaseException], Outcome],
    op_errors: tuple[type[BaseException], ...],
    max_drift_ns: int = NO_LIMIT,
    chunk: int = CHUNK,
) -> None:
    """The asyncio twin of ``run_sync_lane`` (sleeps with ``asyncio.sleep``, awaits the op)."""
    clock = time.monotonic_ns
    n = len(lane)
    k = 0
    while k < n and not stop.is_set():
        hi = min(n, k + chunk)
        ops = lane.chunk_ops(k, hi)
        dues = lane.chunk_dues(k, hi)
        args = lane.chunk_args(k, hi)
        i = k
        t0 = clock()
        try:
            for op, due, arg in zip(ops, dues, args):
                due += origin_ns
                t0 = clock()
                if t0 < due:
                    lane.count = i
                    while t0 < due:
                        if stop.is_set():
                            return
                        await asyncio.sleep(min(due - t0, MAX_SLEEP_NS) / 1e9)
                        t0 = clock()
                elif t0 - due > max_drift_ns:
                    lane.count = i
                    stop.set("drift", f"{(t0 - due) / 1e9:.3f} s behind schedule")
                    return
                try:
                    await fns[op](arg)  # type: ignore[misc]
                except op_errors as exc:
                    lane.outcome[i] = classify(exc)
                lane.start_ns[i] = t0
                lane.end_ns[i] = clock()
                i += 1
        except asyncio.CancelledError:
            lane.count = i
            raise
        except BaseException as exc:
            _record_failure(lane, i, t0, clock())
            stop.set("failed", f"backend failed: {type(exc).__name__}: {exc}")
            raise
        lane.count = hi
        k = hi
