"""The open loop for real (``run.lanes.run_async_dispatch``): operations on one file overlap
unless one depends on another (a create before what follows it, a delete or rename after what
came before), and at most the bound is in flight."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from mimesisbench.backends.base import Outcome
from mimesisbench.jobs import StopSignal
from mimesisbench.run.lanes import Lane, run_async_dispatch
from mimesisbench.schedule.format import ORDERED_OPS, OpCode


class Recorder:
    """An async server taking ``service_s`` per operation, recording each one's span by path."""

    def __init__(self, service_s: float) -> None:
        self.service_s = service_s
        self.spans: list[tuple[str, int, float, float]] = []  # path, op, start, end
        self.in_flight = 0
        self.peak = 0

    def op(self, code: int) -> Callable[[Any], Any]:
        async def run(path: Any) -> None:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            t0 = time.monotonic()
            await asyncio.sleep(self.service_s)
            self.in_flight -= 1
            self.spans.append((str(path), code, t0, time.monotonic()))
        return run


def _lane(ops: list[int], paths: list[str], due_ns: list[int] | None = None) -> Lane:
    n = len(ops)
    return Lane(rows=np.arange(n, dtype=np.int64), ops=np.array(ops, dtype=np.uint8),
                due_ns=np.array(due_ns or [0] * n, dtype=np.int64), paths=pl.Series(paths), paths2=None)


def _run(lane: Lane, keys: list[int], server: Recorder, outstanding: int, paced: bool = False,
         stop: StopSignal | None = None) -> None:
    fns: list[Any] = [None] * 64
    for op in OpCode:
        fns[int(op)] = server.op(int(op))
    asyncio.run(run_async_dispatch(lane, np.array(keys, dtype=np.int64), fns, time.monotonic_ns(), stop or StopSignal(),
                                   classify=lambda e: Outcome.OTHER, op_errors=(OSError,), outstanding=outstanding,
                                   paced=paced))


def test_a_hot_file_gets_as_many_operations_in_flight_as_allowed() -> None:
    """Create one file, open it 40 times, delete it: the opens overlap (the bound, 16, in flight),
    each after the create ended; the delete after every open ended."""
    ops = [int(OpCode.CREATE)] + [int(OpCode.OPEN)] * 40 + [int(OpCode.DELETE)]
    lane = _lane(ops, ["/hot"] * len(ops))
    server = Recorder(0.02)
    _run(lane, [2] * len(ops), server, outstanding=16)
    assert lane.count == len(ops) and (lane.outcome == 0).all()
    assert server.peak == 16  # as many as the bound: not one at a time
    create = next(s for s in server.spans if s[1] == int(OpCode.CREATE))
    delete = next(s for s in server.spans if s[1] == int(OpCode.DELETE))
    opens = [s for s in server.spans if s[1] == int(OpCode.OPEN)]
    assert all(o[2] >= create[3] for o in opens)
    assert delete[2] >= max(o[3] for o in opens)
    # recorded: start before end, every start after the create's end
    assert (lane.end_ns >= lane.start_ns).all() and (lane.start_ns[1:] >= lane.end_ns[0]).all()


def test_ordered_operations_on_one_file_never_overlap_anything_on_it() -> None:
    """A random mix on 5 files: an ordered operation overlaps no other operation on its file, and
    operations keep the schedule's order relative to the ordered ones."""
    rng = np.random.default_rng(7)
    choices = [int(OpCode.OPEN), int(OpCode.GETFILEINFO), int(OpCode.CREATE_OVERWRITE), int(OpCode.RENAME_FILE),
               int(OpCode.SET_TIMES)]
    n = 300
    ops = rng.choice(choices, size=n).tolist()
    files = rng.integers(0, 5, size=n).tolist()
    lane = _lane(ops, [f"/f{f}/{i}" for i, f in enumerate(files)])  # the path names the event
    server = Recorder(0.002)
    _run(lane, [2 * f for f in files], server, outstanding=32)
    assert lane.count == n
    span = {int(p.rsplit("/", 1)[1]): (t0, t1) for p, _, t0, t1 in server.spans}
    for i in range(n):
        for j in range(i + 1, n):
            if files[i] != files[j] or not (ops[i] in ORDERED_OPS or ops[j] in ORDERED_OPS):
                continue
            assert span[i][1] <= span[j][0], (i, j)  # i ended before j began
    assert server.peak > 5  # reads of one file overlapped


def test_paced_dispatch_issues_at_the_due_times_and_bounds_what_is_in_flight() -> None:
    """Twenty reads of one file due every 10 ms on a 50 ms server: open loop, about five in flight
    (not one), each issued close to its due time."""
    due = [i * 10_000_000 for i in range(20)]
    lane = _lane([int(OpCode.OPEN)] * 20, ["/hot"] * 20, due)
    server = Recorder(0.05)
    _run(lane, [2] * 20, server, outstanding=64, paced=True)
    assert lane.count == 20
    assert 3 <= server.peak <= 10  # one lane per file would keep it at 1
    late = (lane.start_ns - lane.start_ns[0]) - np.array(due)
    assert np.abs(late).max() < 200_000_000  # one at a time, the last would start 760 ms late


def test_a_stop_leaves_a_recorded_prefix() -> None:
    ops = [int(OpCode.OPEN)] * 200
    lane = _lane(ops, ["/hot"] * 200)
    stop = StopSignal()
    server = Recorder(0.005)
    original = server.op(int(OpCode.OPEN))

    async def stopping(path: Any) -> None:
        await original(path)
        if len(server.spans) == 50:
            stop.set("stopped", "test")

    fns: list[Any] = [None] * 64
    fns[int(OpCode.OPEN)] = stopping
    asyncio.run(run_async_dispatch(lane, np.full(200, 2, dtype=np.int64), fns, time.monotonic_ns(), stop,
                                   classify=lambda e: Outcome.OTHER, op_errors=(OSError,), outstanding=8, paced=False))
    assert 50 <= lane.count < 200
    assert (lane.end_ns[:lane.count] > 0).all()


def test_a_failing_backend_stops_the_run_and_raises() -> None:
    lane = _lane([int(OpCode.OPEN)] * 10, ["/x"] * 10)

    async def broken(path: Any) -> None:
        raise RuntimeError("the server went away")

    fns: list[Any] = [None] * 64
    fns[int(OpCode.OPEN)] = broken
    stop = StopSignal()
    with pytest.raises(RuntimeError, match="went away"):
        asyncio.run(run_async_dispatch(lane, np.full(10, 2, dtype=np.int64), fns, time.monotonic_ns(), stop,
                                       classify=lambda e: Outcome.OTHER, op_errors=(OSError,), outstanding=4, paced=False))
    assert stop.reason == "failed" and lane.outcome[0] == int(Outcome.OTHER)
