"""A client sweep: one closed-loop operation (``micro``) at several client counts, repeated in a
random order, and the capacity models fitted to it: Wu et al.'s response time a x ln x (their
Table 6) and the Universal Scalability Law (``analysis.capacity``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mimesisbench.analysis.capacity import UslFit, WuFit, usl_fit, wu_fit
from mimesisbench.errors import ConfigError


@dataclass(frozen=True)
class SweepPoint:
    """One micro-benchmark of the sweep: its clients, repetition and what it measured."""

    clients: int
    repeat: int
    ops_per_s: float
    mean_latency_ms: float
    errors: int

    def to_json(self) -> dict[str, Any]:
        return {"clients": self.clients, "repeat": self.repeat, "ops_per_s": self.ops_per_s,
                "mean_latency_ms": self.mean_latency_ms, "errors": self.errors}


@dataclass(frozen=True)
class ClientSweep:
    """The sweep's points in the order run, and the models fitted to them (None, with a note,
    where the points do not allow one)."""

    points: tuple[SweepPoint, ...]
    wu: WuFit | None
    usl: UslFit | None
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"points": [p.to_json() for p in self.points], "wu": self.wu.to_json() if self.wu else None,
                "usl": self.usl.to_json() if self.usl else None, "notes": list(self.notes)}


def sweep_clients(measure: Callable[[int], tuple[float, float, int]], clients: list[int], repeat: int,
                  seed: int) -> ClientSweep:
    """``measure(clients)`` -> (ops/s, mean latency ms, errors) at each client count ``repeat``
    times, in a random order drawn from ``seed`` (a drift of the server over the sweep does not
    then pass for an effect of the client count); then Wu's fit of the mean latency and the USL's
    of the throughput."""
    if not clients or any(c < 1 for c in clients) or len(set(clients)) != len(clients):
        raise ConfigError("--clients: distinct client counts of at least 1, e.g. 1,2,4,8,16")
    if repeat < 1:
        raise ConfigError(f"--repeat must be at least 1 (got {repeat})")
    plan = [(c, r) for r in range(repeat) for c in clients]
    order = np.random.default_rng(seed).permutation(len(plan))
    points = []
    for i in order.tolist():
        c, r = plan[i]
        ops, mean_ms, errors = measure(c)
        points.append(SweepPoint(clients=c, repeat=r + 1, ops_per_s=ops, mean_latency_ms=mean_ms, errors=errors))
    x = np.array([p.clients for p in points], dtype=np.float64)
    notes = []
    wu = usl = None
    try:
        wu = wu_fit(x, np.array([p.mean_latency_ms for p in points]))
    except ConfigError as e:
        notes.append(f"Wu's model not fitted: {e}")
    try:
        usl = usl_fit(x, np.array([p.ops_per_s for p in points]), seed=seed)
    except ConfigError as e:
        notes.append(f"USL not fitted: {e}")
    if any(p.errors for p in points):
        notes.append(f"{sum(p.errors for p in points):,} operations failed: their times are in the figures")
    return ClientSweep(points=tuple(points), wu=wu, usl=usl, notes=tuple(notes))
