"""Closed-loop execution: T clients take the next operation as soon as their previous one ended.

Three client kinds: T threads calling the blocking methods, T asyncio tasks on one event loop in
the calling thread awaiting the ``aio_*`` coroutines (async backends only), or ``native``: the
backend's keyed native lane (hdfs, with the extension installed: ``HdfsLane``) issuing the batch
back to back with T operations in flight, outside the interpreter. ``auto`` picks native where the
backend has it, otherwise threads up to ``ASYNC_ABOVE`` clients and asyncio above. Measured with hdfs-native against the
managed NameNode on 2 shared cores (micro fileStatus, 10,000 ops): each completed coroutine costs
an event-loop wake-up and a GIL hand-off from the client's Rust runtime threads, so asyncio spent
~100 us of client CPU per call at 8 in flight against ~55 us for blocking calls (which release
the GIL), and threads gave more ops/s at 8 to 128 clients (e.g. 18,100 vs 13,400 at 8; 19,300 vs
10,500 at 128); at 512 asyncio was ahead (17,200 vs 14,700). Both record, per operation, its start and end (``time.perf_counter_ns``) and its
outcome code (0 = ok), into lists indexed by the operation's position, so nothing is averaged
before the summary.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import AsyncOp, Backend, NativeLaneRunner, Outcome, SyncOp
from mimesisbench.errors import BackendError, ConfigError
from mimesisbench.native import binary_buffers
from mimesisbench.schedule.format import OpCode

#: ``auto`` uses asyncio (for async backends) above this many clients, threads up to it
ASYNC_ABOVE = 256
CLIENTS = ("auto", "native", "asyncio", "threads")
#: called as a timed replay starts and as it ends (``run_batch``)
Mark = Callable[[], object]


@dataclass(frozen=True)
class Timings:
    """Raw samples of one closed-loop batch (numpy arrays of equal length)."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    outcome: np.ndarray
    client: str  # "native", "asyncio" or "threads"
    concurrency: int
    cpu_s: float = 0.0  # the client's CPU time over the replay (this process, every thread; see _replay_window)

    @property
    def elapsed_ns(self) -> int:
        if len(self.start_ns) == 0:
            return 0
        return int(self.end_ns.max() - self.start_ns.min())

    @property
    def latency_ns(self) -> np.ndarray:
        return self.end_ns - self.start_ns


@contextmanager
def _replay_window(mark: Mark | None) -> Iterator[list[float]]:
    """No cyclic garbage collection pauses while timing (nothing here makes cycles), and the
    client's CPU over the replay alone (``[seconds]`` once the block ends): taken after the
    collection and the batch's preparation, as a run's worker takes it, with ``mark`` called
    just inside both ends (where the caller reads the server's and the host's CPU, so that all
    three cover the same span). A full collection in a process that has imported the tool costs
    tens of milliseconds, a few microseconds an operation of a 10,000-operation batch, which
    ``simnn calibrate`` used to charge every call as the client's work."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    if mark is not None:
        mark()
    cpu = [time.process_time()]
    try:
        yield cpu
    finally:
        cpu[0] = time.process_time() - cpu[0]
        if mark is not None:
            mark()
        if enabled:
            gc.enable()


def choose_client(backend: Backend, concurrency: int, client: str = "auto", *, native: bool = False) -> str:
    """``native``, ``asyncio`` or ``threads`` for a backend, a concurrency and a requested client
    kind; ``native``: whether the backend offers a keyed native lane (``native_runner``)."""
    if client not in CLIENTS:
        raise ConfigError(f"unknown client kind {client!r} (choose from {', '.join(CLIENTS)})")
    if client == "asyncio" and not backend.is_async:
        raise ConfigError(f"the {backend.scheme} backend has no asyncio client; use threads")
    if client == "native" and not native:
        raise ConfigError(
            f"the {backend.scheme} backend has no native client here (hdfs only, with the native extension "
            "installed and MIMESISBENCH_NATIVE not 0)"
        )
    if client == "auto":
        if native:
            return "native"
        return "asyncio" if backend.is_async and concurrency > ASYNC_ABOVE else "threads"
    return client


def native_runner(backend: Backend) -> NativeLaneRunner | None:
    """The backend's keyed native lane (the native client), or None."""
    if not backend.is_async:
        return None
    runner = backend.native_lane_runner()
    return runner if runner is not None and runner.keyed else None


def run_batch(
    backend: Backend,
    fn_sync: SyncOp | None,
    fn_async: AsyncOp | None,
    args: Sequence[Any],
    concurrency: int,
    client: str = "auto",
    *,
    native: tuple[NativeLaneRunner, OpCode] | None = None,
    mark: Mark | None = None,
) -> Timings:
    """Issue ``fn(arg)`` for every arg with ``concurrency`` closed-loop clients of kind ``client``
    (``native``: the runner and the op code, when the backend has a native client; ``mark``:
    called as the timed replay starts and as it ends, see ``_replay_window``).

    Failed operations (``backend.op_errors``) are classified and recorded; anything else means
    the backend broke: the batch stops and the exception is raised (``BackendError`` as is,
    others wrapped in one).
    """
    n = len(args)
    concurrency = max(1, min(concurrency, n)) if n else 1
    kind = choose_client(backend, concurrency, client, native=native is not None)
    if kind == "native" and native is not None:
        return _run_native(native[0], native[1], args, concurrency, mark)
    if kind == "asyncio" and fn_async is not None:
        return _run_async(backend, fn_async, args, concurrency, mark)
    if fn_sync is None:
        raise ValueError("no operation to run")
    return _run_threads(backend, fn_sync, args, concurrency if backend.thread_safe else 1, mark)


def _arrays(n: int) -> tuple[list[int], list[int], list[int]]:
    return [0] * n, [0] * n, [0] * n


def _timings(starts: list[int], ends: list[int], outs: list[int], client: str, concurrency: int,
             cpu_s: float) -> Timings:
    return Timings(
        start_ns=np.asarray(starts, dtype=np.int64),
        end_ns=np.asarray(ends, dtype=np.int64),
        outcome=np.asarray(outs, dtype=np.uint8),
        client=client,
        concurrency=concurrency,
        cpu_s=cpu_s,
    )


def _broken(exc: BaseException) -> BaseException:
    if isinstance(exc, BackendError):
        return exc
    return BackendError(f"the backend failed during the micro-benchmark: {type(exc).__name__}: {exc}")


def _run_async(backend: Backend, fn: AsyncOp, args: Sequence[Any], concurrency: int, mark: Mark | None) -> Timings:
    n = len(args)
    starts, ends, outs = _arrays(n)
    op_errors = backend.op_errors
    classify = backend.classify
    clock = time.perf_counter_ns
    indices = iter(range(n))  # shared by every task; one event loop, so no lock needed

    async def client() -> None:
        for i in indices:
            t0 = clock()
            try:
                await fn(args[i])
            except op_errors as exc:
                outs[i] = int(classify(exc)) or int(Outcome.OTHER)
            t1 = clock()
            starts[i] = t0
            ends[i] = t1

    async def main() -> None:
        tasks = [asyncio.ensure_future(client()) for _ in range(concurrency)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    with _replay_window(mark) as cpu:
        try:
            asyncio.run(main())
        except Exception as exc:  # noqa: BLE001 - the backend broke
            raise _broken(exc) from exc
    return _timings(starts, ends, outs, "asyncio", concurrency, cpu[0])


def _run_threads(backend: Backend, fn: SyncOp, args: Sequence[Any], threads: int, mark: Mark | None) -> Timings:
    n = len(args)
    starts, ends, outs = _arrays(n)
    op_errors = backend.op_errors
    classify = backend.classify
    clock = time.perf_counter_ns
    indices = iter(range(n))  # next() on a range iterator is atomic under the GIL
    stop = threading.Event()
    failures: list[BaseException] = []
    gate = threading.Barrier(threads + 1)

    def client() -> None:
        gate.wait()
        try:
            for i in indices:
                if stop.is_set():
                    return
                t0 = clock()
                try:
                    fn(args[i])
                except op_errors as exc:
                    outs[i] = int(classify(exc)) or int(Outcome.OTHER)
                t1 = clock()
                starts[i] = t0
                ends[i] = t1
        except BaseException as exc:  # noqa: BLE001 - reported after the join
            failures.append(exc)
            stop.set()

    workers = [threading.Thread(target=client, name=f"micro-{k}", daemon=True) for k in range(threads)]
    with _replay_window(mark) as cpu:
        for worker in workers:
            worker.start()
        gate.wait()
        for worker in workers:
            worker.join()
    if failures:
        raise _broken(failures[0]) from failures[0]
    return _timings(starts, ends, outs, "threads", threads, cpu[0])


def _run_native(runner: NativeLaneRunner, op: OpCode, args: Sequence[Any], concurrency: int,
                mark: Mark | None) -> Timings:
    """The batch through the native client: every operation its own object (none waits for
    another), back to back, ``concurrency`` in flight: the closed loop of the other kinds."""
    n = len(args)
    pairs = bool(n) and isinstance(args[0], tuple)
    first = pl.Series([a[0] for a in args] if pairs else list(args), dtype=pl.String)
    offsets, data = binary_buffers(first)
    offsets2, data2 = binary_buffers(pl.Series([a[1] for a in args], dtype=pl.String)) if pairs else (None, None)
    start = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    outcome = np.zeros(n, dtype=np.uint8)
    flag = runner.stop_flag()
    with _replay_window(mark) as cpu:
        try:
            status, count, _, message = runner.run(
                np.full(n, int(op), dtype=np.uint8), np.zeros(n, dtype=np.int64), offsets, data, offsets2, data2,
                start, end, outcome, origin_ns=0, max_drift_ns=0, paced=False, spin_ns=0, stop=flag,
                progress=runner.progress(), keys=np.arange(n, dtype=np.int64), outstanding=concurrency,
            )
        except Exception as exc:  # noqa: BLE001 - the backend broke
            raise _broken(exc) from exc
    if status != "done" or count != n:
        raise BackendError(f"the backend failed during the micro-benchmark: native {runner.name} lane: {message or status}")
    return Timings(start_ns=start, end_ns=end, outcome=outcome, client="native", concurrency=concurrency,
                   cpu_s=cpu[0])
