"""Phase 2 on a simulated server (``simnn:``): the schedule simulated in virtual time
(``sim.ops``) instead of replayed by workers; the coordinator writes what it gives as any run's
directory, with samples in virtual time after a virtual barrier.

Every event arrives at its due time (time scale applied; all at once at time scale 0, which
makes a closed loop), at most ``lanes`` operations of each worker are in flight (its own slots,
taken in due order, as a real worker's lanes), and a run whose lateness passes ``--max-drift`` stops
where it did, as a real one: what had started is kept. What the model leaves out: per-object
dependencies (an operation of a real run may wait for an earlier one on its file; here only for
a slot) and the namespace (every operation is ``ok``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import Backend
from mimesisbench.engine.ray_address import parse_engine
from mimesisbench.errors import ConfigError
from mimesisbench.jobs import WorkerResult
from mimesisbench.run.clock import iso_utc
from mimesisbench.run.config import RunConfig
from mimesisbench.run.partition import PartitionPlan, worker_expr
from mimesisbench.schedule import Schedule
from mimesisbench.schedule.paths import owner_columns
from mimesisbench.sim.model import Calibration
from mimesisbench.sim.ops import simulate_ops


def simulated_replay(
    backend: Backend, schedule: Schedule, plan: PartitionPlan, config: RunConfig, manifest: dict[str, Any]
) -> list[WorkerResult | Any]:
    """Every worker's result from one simulation; the manifest records how it was simulated."""
    from mimesisbench.backends.simnn import SimnnBackend

    if not isinstance(backend, SimnnBackend):
        raise ConfigError(f"{backend.scheme}: a virtual-time backend must be simnn")
    if parse_engine(config.engine).kind != "local":
        raise ConfigError("simnn: a simulated run has no workers to place (use the local engine)")
    wall = time.time_ns()
    manifest["start_barrier_wall_ns"] = wall
    manifest["start_barrier_utc"] = iso_utc(wall)
    manifest["lane_impl"] = ["simnn"]
    manifest["native_lane"] = False
    results, facts = simulate_run(
        schedule, plan, backend.calibration, time_scale=config.time_scale,
        lanes=config.concurrency or backend.default_lanes(), max_drift_s=config.max_drift_s,
        seed=backend.options.seed, engine=backend.options.engine,
    )
    manifest["simulation"] = facts
    return list(results)


def simulate_run(
    schedule: Schedule,
    plan: PartitionPlan,
    calibration: Calibration,
    *,
    time_scale: float,
    lanes: int,
    max_drift_s: float | None,
    seed: int = 0,
    engine: str = "auto",
) -> tuple[list[WorkerResult], dict[str, Any]]:
    """One ``WorkerResult`` per worker of ``plan`` with its samples (virtual ns after the
    barrier), and the simulation's facts for the manifest."""
    owners = owner_columns(schedule).with_columns(worker_expr(plan).alias("worker"))
    events = owners.select("idx", "op", "time_us", "worker").sort("time_us", "idx")
    rows = events["idx"].cast(pl.Int64).to_numpy()
    arrive = events["time_us"].cast(pl.Float64).to_numpy() * (1e-6 * time_scale)
    ops = events["op"].cast(pl.UInt8).to_numpy()
    workers = events["worker"].cast(pl.UInt32).to_numpy()
    sim = simulate_ops(ops, arrive, calibration, lanes, client=workers, seed=seed, engine=engine)
    start, end = sim.times.start, sim.times.end
    kept = np.ones(rows.size, dtype=bool)
    status, message = "complete", ""
    if max_drift_s is not None and time_scale > 0 and rows.size:
        late = np.flatnonzero(start - arrive > max_drift_s)
        if late.size:  # the run stops when the first operation is that late: what had started is kept
            cut = start[late[0]]
            kept = start < cut
            status = "drift"
            message = (f"fell {start[late[0]] - arrive[late[0]]:.3f} s behind the schedule at {cut:.3f} s "
                       f"(virtual), more than --max-drift {max_drift_s:g} s")
    results = []
    for w in range(plan.n_workers):
        mine = np.flatnonzero((workers == w) & kept)
        samples = {
            "row": rows[mine],
            "start_ns": np.round(start[mine] * 1e9).astype(np.int64),
            "end_ns": np.round(end[mine] * 1e9).astype(np.int64),
            "outcome": np.zeros(mine.size, dtype=np.uint8),
        }
        total = int(np.count_nonzero(workers == w))
        results.append(WorkerResult(index=w, status=status, message=message, total=total, issued=int(mine.size),
                                    part_path=None, samples=samples))
    facts = {**sim.facts, "status": status}
    return results, facts


