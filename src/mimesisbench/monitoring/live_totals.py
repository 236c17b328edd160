"""Coordinator side of live monitoring: the workers' deltas summed into cumulative totals.

``LiveTotals`` is fed from the coordinator's event loop (``add``, ``set_lag``, ``set_phase``)
and read by the Prometheus collector from the HTTP server's thread (``snapshot``); a lock keeps
the two apart. Everything is a few small arrays per (operation, file type).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from mimesisbench.jobs import LiveDelta
from mimesisbench.monitoring.live_stats import N_BUCKETS, N_OUTCOMES, TIMINGS

#: the phases a run goes through, in order (the value of the ``phase`` label)
PHASES: tuple[str, ...] = ("phase1", "replay", "writing", "done", "incomplete")


@dataclass
class KeyTotals:
    """Cumulative counts of one (operation, file type)."""

    outcomes: np.ndarray = field(default_factory=lambda: np.zeros(N_OUTCOMES, np.int64))
    buckets: np.ndarray = field(default_factory=lambda: np.zeros((len(TIMINGS), N_BUCKETS), np.int64))
    sums_ns: np.ndarray = field(default_factory=lambda: np.zeros(len(TIMINGS), np.float64))


@dataclass(frozen=True)
class LiveSnapshot:
    """A consistent copy of the totals at one moment."""

    run_id: str
    phase: str
    scheduled: int
    per_key: dict[tuple[int, int], KeyTotals]
    in_flight: int
    lag_ns: dict[int, int]
    info: dict[str, str]


class LiveTotals:
    """Sums of every worker's ``LiveDelta`` (thread-safe)."""

    def __init__(self, run_id: str, scheduled: int = 0, info: dict[str, str] | None = None) -> None:
        self.run_id = run_id
        self._scheduled = int(scheduled)
        self._info = dict(info or {})
        self._phase = PHASES[0]
        self._per_key: dict[tuple[int, int], KeyTotals] = {}
        self._in_flight: dict[int, int] = {}
        self._lag: dict[int, int] = {}
        self._lock = threading.Lock()

    def add(self, worker: int, delta: LiveDelta) -> None:
        with self._lock:
            self._in_flight[worker] = int(delta.in_flight)
            for row, (op, ftype) in enumerate(delta.keys.tolist()):
                totals = self._per_key.get((op, ftype))
                if totals is None:
                    totals = self._per_key[(op, ftype)] = KeyTotals()
                totals.outcomes += delta.outcomes[row]
                totals.buckets += delta.buckets[:, row, :]
                totals.sums_ns += delta.sums_ns[:, row]

    def worker_ended(self, worker: int) -> None:
        with self._lock:
            self._in_flight[worker] = 0
            self._lag[worker] = 0

    def set_lag(self, worker: int, lag_ns: int) -> None:
        with self._lock:
            self._lag[worker] = int(lag_ns)

    def set_phase(self, phase: str) -> None:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}")
        with self._lock:
            self._phase = phase

    def snapshot(self) -> LiveSnapshot:
        with self._lock:
            per_key = {
                k: KeyTotals(v.outcomes.copy(), v.buckets.copy(), v.sums_ns.copy()) for k, v in self._per_key.items()
            }
            return LiveSnapshot(
                run_id=self.run_id,
                phase=self._phase,
                scheduled=self._scheduled,
                per_key=per_key,
                in_flight=sum(self._in_flight.values()),
                lag_ns=dict(self._lag),
                info=dict(self._info),
            )
