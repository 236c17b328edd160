"""Operations simulated on the simulated NameNode: ``simulate_ops`` (any sequence of operations
with their arrival times; ``run.virtual`` gives it a schedule's), ``simulate_micro`` (``micro``:
N operations of one kind from ``concurrency`` closed-loop clients)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.calls import make_calls
from mimesisbench.sim.engine import SimTimes, simulate
from mimesisbench.sim.model import Calibration


@dataclass(frozen=True)
class Simulated:
    """What one simulation gave: the times and the facts a run's manifest records."""

    times: SimTimes
    facts: dict[str, Any] = field(default_factory=dict)


def simulate_ops(
    ops: NDArray[np.integer],
    arrive_s: NDArray[np.float64],
    calibration: Calibration,
    outstanding: int,
    *,
    client: NDArray[np.uint32] | None = None,
    seed: int = 0,
    engine: str = "auto",
) -> Simulated:
    """Simulate calls of ``ops`` arriving at ``arrive_s`` (sorted) with ``outstanding`` in flight
    from each client (``client``: each call's; all one client when None)."""
    t0 = time.perf_counter()
    calls, stand_ins = make_calls(ops, arrive_s, calibration, seed)
    t1 = time.perf_counter()
    times = simulate(calls, calibration.settings, outstanding, client=client, engine=engine)
    t2 = time.perf_counter()
    facts = {
        "engine": times.engine,
        "calls": len(calls),
        "outstanding": outstanding,
        "clients": int(client.max()) + 1 if client is not None and client.size else 1,
        "draw_s": round(t1 - t0, 4),
        "simulate_s": round(t2 - t1, 4),
        "stand_ins": stand_ins,
        "settings": calibration.to_json()["settings"],
        "seed": seed,
        "virtual_s": float(np.nanmax(times.end)) if len(calls) else 0.0,
        "lock_wait_mean_us": float(times.lock_wait.mean() * 1e6) if len(calls) else 0.0,
    }
    return Simulated(times, facts)


def simulate_micro(op: OpCode, files: int, concurrency: int, calibration: Calibration, *, seed: int = 0,
                   engine: str = "auto") -> Simulated:
    """``files`` operations ``op`` from ``concurrency`` closed-loop clients (all due at 0)."""
    ops = np.full(files, int(op), dtype=np.uint8)
    return simulate_ops(ops, np.zeros(files), calibration, concurrency, seed=seed, engine=engine)
