"""A worker: loads its share of the schedule, opens its backend, replays at the barrier.

The worker knows nothing about processes, pipes or actors: an engine calls ``prepare`` (returns
``ReadyInfo``), then ``run(start_wall_ns, stop, on_progress)`` (returns ``WorkerResult``), from
whatever process, thread or actor it lives in. Measured samples go to a part file
(``parts/worker-<i>.npz``: event row, start/end ns after the barrier, outcome) written even when
the run stops early, so a crash of *another* worker loses nothing here. The records it returns
(``ReadyInfo``, ``Progress``, ``WorkerResult``) and the ``StopSignal`` are ``mimesisbench.jobs``'s,
shared with the engines and the monitors, which never import this module.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl

from mimesisbench.backends.base import Backend, NativeLaneRunner
from mimesisbench.backends.registry import open_backend
from mimesisbench.jobs import Progress, ReadyInfo, StopSignal, WorkerResult, wall_to_monotonic_ns, write_part_file
from mimesisbench.monitoring.live_stats import LiveTap
from mimesisbench.run import lanes as lanes_mod
from mimesisbench.run.key_gate import KeyGate, requirements, spread_lanes
from mimesisbench.run.lanes import Lane
from mimesisbench.run.partition import PartitionPlan, worker_expr
from mimesisbench.run.phase1 import build_namespace
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.schedule.paths import event_paths, owner_columns

PROGRESS_EVERY_S = 0.5
#: the interpreter's thread switch interval during the replay (CPython's default is 5 ms)
SWITCH_INTERVAL_S = 0.0002


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs (picklable; sent to a process or an actor)."""

    index: int
    schedule_dir: str
    backend_url: str
    plan: PartitionPlan
    parts_dir: str
    time_scale: float = 1.0
    max_drift_ns: int | None = 2_000_000_000
    concurrency: int | None = None
    build_namespace: bool = False
    #: attach per-tick aggregates (``LiveDelta``) to progress and result (``--metrics-port``)
    live_metrics: bool = False

    def relocated(self, *, schedule_dir: str | None = None, parts_dir: str | None = None) -> WorkerSpec:
        """This spec with another schedule or parts directory (``jobs.JobSpec``)."""
        return replace(
            self,
            schedule_dir=self.schedule_dir if schedule_dir is None else schedule_dir,
            parts_dir=self.parts_dir if parts_dir is None else parts_dir,
        )


class Worker:
    """One worker's replay (runtime object; built from a ``WorkerSpec``): the replay's
    ``jobs.Job``, and its ``jobs.JobFactory`` (engines are given this class)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.backend: Backend | None = None
        self.lanes_: list[Lane] = []
        self.rows_: np.ndarray = np.zeros(0, dtype=np.int64)
        self.tap_: LiveTap | None = None
        self.runner_: NativeLaneRunner | None = None
        self.origin_: int | None = None  # the barrier on this host's monotonic clock, once running
        self.keys_: np.ndarray | None = None  # async backends: each event's object (file or directory key)
        self.outstanding_ = 1  # async backends: operations in flight at most
        self.gate_: Any = None  # blocking backends with several lanes: the lanes' KeyGate (Python or native)

    # ------------------------------------------------------------------ prepare

    def prepare(self) -> ReadyInfo:
        t0 = time.perf_counter()
        spec = self.spec
        schedule = load_schedule(spec.schedule_dir)
        owners = owner_columns(schedule)
        backend = open_backend(spec.backend_url)
        backend.connect()
        self.backend = backend
        # what the backend skips is not issued (the coordinator counts it per command)
        skipped = [int(op) for op in backend.capabilities.skipped or ()]
        mine = owners.filter((worker_expr(spec.plan) == spec.index) & ~pl.col("op").cast(pl.Int64).is_in(skipped))
        frame = event_paths(schedule, mine)
        if spec.build_namespace and not backend.stateless:
            build_namespace(backend, schedule, threads=1, show_progress=False)
        n_lanes = spec.concurrency or backend.default_lanes()
        if not backend.thread_safe and not backend.is_async:
            n_lanes = 1
        n_lanes = max(1, min(n_lanes, max(1, frame.height)))
        paths = backend.native_paths(frame["path"])
        paths2 = backend.native_paths(frame["path2"])
        scale = float(spec.time_scale)
        due = np.round(frame["time_us"].cast(pl.Float64).to_numpy() * (1000.0 * scale)).astype(np.int64)
        ops = frame["op"].cast(pl.UInt8).to_numpy()
        self.rows_ = frame["idx"].cast(pl.Int64).to_numpy()
        if backend.is_async:  # one dispatcher over every event, n_lanes operations in flight (run_async_dispatch)
            self.outstanding_ = n_lanes
            self.keys_ = frame["key"].cast(pl.Int64).to_numpy()
            lane_ids = np.zeros(frame.height, dtype=np.int32)
            n_lanes = 1
        else:  # a hot object's events round robin over the lanes, ordered by the gate (run.key_gate)
            lane_ids = spread_lanes(frame["key"].cast(pl.Int64).to_numpy(), n_lanes)
        has_rename = frame["path2"].is_not_null().to_numpy()
        self.lanes_ = []
        for lane_id in range(n_lanes):
            pos = np.flatnonzero(lane_ids == lane_id)
            idx = pl.Series(pos)
            self.lanes_.append(
                Lane(
                    rows=pos.astype(np.int64),
                    ops=ops[pos],
                    due_ns=due[pos],
                    paths=paths.gather(idx),
                    paths2=paths2.gather(idx) if has_rename[pos].any() else None,
                )
            )
        if spec.live_metrics:
            self.tap_ = LiveTap(self.lanes_, frame["type"].cast(pl.Int64).to_numpy())
        self.runner_ = backend.native_lane_runner()
        if self.runner_ is not None and self.runner_.keyed != backend.is_async:
            self.runner_ = None  # a keyed runner dispatches an async backend's events, a plain one a lane's
        if self.runner_ is not None and not native_can_run(self.runner_, ops):
            self.runner_ = None  # an operation the native lane does not know: the Python lanes run them all
        self.gate_ = None
        if n_lanes > 1 and not backend.is_async and not backend.stateless:
            needs = requirements(frame["key"].cast(pl.Int64).to_numpy(), ops, lane_ids)
            if needs[1].any():  # some object's events are spread over lanes
                make_gate = None if self.runner_ is None else self.runner_.key_gate
                if make_gate is None:
                    self.runner_ = None  # a native lane without a gate cannot share a worker's events
                    self.gate_ = KeyGate(*needs)
                else:
                    self.gate_ = make_gate(*needs)
        if self.runner_ is not None:
            for lane in self.lanes_:
                lane.native_inputs()
        else:
            budget = lanes_mod.PRELOAD_LIMIT
            for lane in self.lanes_:
                if lane.preload(budget):
                    budget -= len(lane)
        return ReadyInfo(
            index=spec.index,
            events=frame.height,
            lanes=n_lanes,
            prepare_s=time.perf_counter() - t0,
            pid=os.getpid(),
            host=os.uname().nodename,
            lane_impl="python" if self.runner_ is None else f"native-{self.runner_.name}-{self.runner_.version}",
        )

    # ------------------------------------------------------------------ run

    def run(
        self,
        start_wall_ns: int,
        stop: StopSignal,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> WorkerResult:
        """Replay from the barrier; returns after every lane ended (done or stopped)."""
        if self.backend is None:
            raise RuntimeError("prepare() first")
        backend = self.backend
        origin = wall_to_monotonic_ns(start_wall_ns)
        self.origin_ = origin
        max_drift = lanes_mod.NO_LIMIT
        if self.spec.max_drift_ns is not None and self.spec.time_scale > 0:
            max_drift = int(self.spec.max_drift_ns)
        errors: list[BaseException] = []
        classify, op_errors = backend.classify, backend.op_errors
        threads: list[threading.Thread] = []
        if backend.is_async and self.runner_ is not None:
            runner = self.runner_
            flag = runner.stop_flag()
            stop.add_listener(flag.set)
            lane0 = self.lanes_[0]
            keys = self.keys_ if self.keys_ is not None else np.zeros(0, dtype=np.int64)

            def native_dispatch() -> None:
                try:
                    lanes_mod.run_native_lane(
                        lane0, runner, origin, stop, flag, max_drift_ns=max_drift, spin_ns=lanes_mod.NATIVE_SPIN_NS,
                        paced=self.spec.time_scale > 0, keys=keys, outstanding=self.outstanding_,
                    )
                except BaseException as exc:  # noqa: BLE001 - reported through the result
                    errors.append(exc)

            threads.append(threading.Thread(target=native_dispatch, name="lanes-native", daemon=True))
        elif backend.is_async:
            afns = _table(backend.async_ops())

            keys = self.keys_ if self.keys_ is not None else np.zeros(0, dtype=np.int64)

            async def main() -> None:
                try:
                    await lanes_mod.run_async_dispatch(
                        self.lanes_[0], keys, afns, origin, stop, classify=classify, op_errors=op_errors,
                        outstanding=self.outstanding_, max_drift_ns=max_drift, paced=self.spec.time_scale > 0,
                    )
                except BaseException as exc:  # noqa: BLE001 - reported through the result
                    errors.append(exc)

            threads.append(threading.Thread(target=asyncio.run, args=(main(),), name="lanes-async", daemon=True))
        elif self.runner_ is not None:
            runner = self.runner_
            flag = runner.stop_flag()  # the StopSignal, as native lanes see it
            stop.add_listener(flag.set)
            paced = self.spec.time_scale > 0
            # no GIL: a lane may spin; but several spinning lanes would take the cores from each
            # other (and from the system under test), so several lanes spin only briefly
            native_spin = lanes_mod.NATIVE_SPIN_NS if len(self.lanes_) == 1 else lanes_mod.NATIVE_MULTI_SPIN_NS

            def native_main(lane: Lane) -> None:
                try:
                    lanes_mod.run_native_lane(
                        lane, runner, origin, stop, flag, max_drift_ns=max_drift, spin_ns=native_spin,
                        paced=paced, gate=self.gate_,
                    )
                except BaseException as exc:  # noqa: BLE001 - reported through the result
                    errors.append(exc)

            for i, lane in enumerate(self.lanes_):
                threads.append(threading.Thread(target=native_main, args=(lane,), name=f"lane-{i}", daemon=True))
        else:
            fns = _table(backend.sync_ops())
            # one lane: sleep, then a pure spin for the last SPIN_NS (nobody else needs the GIL);
            # several lanes: sleep only (a spinning lane would keep woken lanes from the GIL)
            yield_spin = len(self.lanes_) > 1
            spin_ns = 0 if yield_spin else lanes_mod.SPIN_NS

            def lane_main(lane: Lane) -> None:
                try:
                    lanes_mod.run_sync_lane(
                        lane, fns, origin, stop, yield_spin=yield_spin, spin_ns=spin_ns,
                        paced=self.spec.time_scale > 0, classify=classify, op_errors=op_errors,
                        max_drift_ns=max_drift, gate=self.gate_,
                    )
                except BaseException as exc:  # noqa: BLE001 - reported through the result
                    errors.append(exc)

            for i, lane in enumerate(self.lanes_):
                threads.append(threading.Thread(target=lane_main, args=(lane,), name=f"lane-{i}", daemon=True))
        # no cyclic garbage collection pauses during the replay (the lanes allocate no cycles)
        gc_was_enabled = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.disable()
        switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)  # a lane waiting for the GIL waits less
        cpu0 = time.process_time()  # the client's cost: this process, lanes (native threads too) included
        try:
            for t in threads:
                t.start()
            self._wait(threads, origin, on_progress)
        finally:
            # over the replay from the barrier (the lanes sleep until then)
            cost = {"cpu_s": time.process_time() - cpu0, "replay_s": max(0, time.monotonic_ns() - origin) / 1e9}
            sys.setswitchinterval(switch)
            if gc_was_enabled:
                gc.enable()
            gc.unfreeze()
        part: Path | None = None
        unwritten: dict[str, np.ndarray] | None = None
        write_error = ""
        arrays = self.part_arrays(origin)
        try:
            part = write_part_file(Path(self.spec.parts_dir), "worker", self.spec.index, arrays)
        except OSError as exc:  # a full or read-only disk: the samples travel with the result instead
            unwritten = arrays
            write_error = (
                f"cannot write its samples to {self.spec.parts_dir} ({exc.strerror or exc}); "
                "they were handed to the coordinator instead"
            )
        issued = sum(lane.count for lane in self.lanes_)
        total = sum(len(lane) for lane in self.lanes_)
        status, message = "complete", ""
        if stop.reason is not None:
            status, message = stop.reason, stop.message
        elif issued < total:
            status, message = "failed", "a lane ended early"
        if errors and status == "complete":
            status, message = "failed", f"{type(errors[0]).__name__}: {errors[0]}"
        if write_error:
            status, message = "failed", write_error if status == "complete" else f"{message}; {write_error}"
        try:
            backend.close()
        except Exception as exc:  # noqa: BLE001 - closing is best effort; the samples are kept
            message = message or f"closing the backend failed: {exc}"
        return WorkerResult(
            index=self.spec.index,
            status=status,
            message=message,
            total=total,
            issued=issued,
            part_path=None if part is None else str(part),
            samples=unwritten,
            origin_monotonic_ns=origin,
            extra=cost,
            live=None if self.tap_ is None else self.tap_.delta(origin, time.monotonic_ns()),
        )

    def _wait(
        self, threads: list[threading.Thread], origin: int, on_progress: Callable[[Progress], None] | None
    ) -> None:
        while True:
            alive = [t for t in threads if t.is_alive()]
            if not alive:
                return
            alive[0].join(PROGRESS_EVERY_S)
            if on_progress is not None:
                on_progress(self.progress(origin))

    def progress(self, origin: int) -> Progress:
        now_rel = time.monotonic_ns() - origin
        return Progress(
            index=self.spec.index,
            issued=sum(lane.count for lane in self.lanes_),
            total=sum(len(lane) for lane in self.lanes_),
            lag_ns=max((lane.lag_ns(now_rel) for lane in self.lanes_), default=0),
            live=None if self.tap_ is None else self.tap_.delta(origin, now_rel + origin),
        )

    def current_progress(self) -> Progress | None:
        """``progress`` since the barrier, or ``None`` before ``run`` (``jobs.Job``)."""
        origin = self.origin_
        return None if origin is None else self.progress(origin)

    def last_due_ns(self) -> int:
        """The last scheduled time after the barrier (ns) over every lane (0 before ``prepare``)."""
        return max((int(lane.due_ns[-1]) for lane in self.lanes_ if len(lane)), default=0)

    def write_part(self, origin: int) -> Path:
        """Write what every lane recorded (a prefix of each lane), times relative to the barrier."""
        return write_part_file(Path(self.spec.parts_dir), "worker", self.spec.index, self.part_arrays(origin))

    def part_arrays(self, origin: int) -> dict[str, np.ndarray]:
        """What every lane recorded (a prefix of each lane), times relative to the barrier."""
        rows, starts, ends, outs = [], [], [], []
        for lane in self.lanes_:
            c = lane.count
            rows.append(self.rows_[lane.rows[:c]])
            starts.append(lane.start_ns[:c] - origin)
            ends.append(lane.end_ns[:c] - origin)
            outs.append(lane.outcome[:c])
        arrays = {
            "row": np.concatenate(rows) if rows else np.zeros(0, np.int64),
            "start_ns": np.concatenate(starts) if starts else np.zeros(0, np.int64),
            "end_ns": np.concatenate(ends) if ends else np.zeros(0, np.int64),
            "outcome": np.concatenate(outs) if outs else np.zeros(0, np.uint8),
        }
        return arrays


def native_can_run(runner: NativeLaneRunner, ops: np.ndarray) -> bool:
    """True when every op code of ``ops`` is one the native lane performs (``runner.ops``)."""
    return bool(np.isin(ops, [int(op) for op in runner.ops]).all())


#: a backend's operation (sync or async)
_Op = TypeVar("_Op")


def _table(mapping: Mapping[OpCode, _Op]) -> list[_Op | None]:
    table: list[_Op | None] = [None] * (max(int(op) for op in OpCode) + 1)
    for op, fn in mapping.items():
        table[int(op)] = fn
    return table


def run_worker_inline(
    spec: WorkerSpec, start_wall_ns: int, stop: StopSignal | None = None
) -> tuple[ReadyInfo, WorkerResult]:
    """Prepare and run one worker in the calling thread (for tests and benchmarks)."""
    worker = Worker(spec)
    ready = worker.prepare()
    return ready, worker.run(start_wall_ns, stop or StopSignal())
