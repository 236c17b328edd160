"""Throughput against latency over a set of runs at different load (the paper's Figures 2 and 3).

Each run gives one point: the load offered by its schedule (operations scheduled per second of
the replayed window), the throughput achieved and its latency percentiles. Sorted by offered
load (or by throughput when the offered load is unknown, e.g. as-fast-as-possible replays), the
points trace the knee where latency climbs while throughput stops growing.
"""

from __future__ import annotations

from dataclasses import dataclass

from mimesisbench.results.load import TS_ALL, RunData


@dataclass(frozen=True)
class LoadPoint:
    run_id: str
    offered_ops_per_s: float | None
    throughput_ops_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    complete: bool


def offered_load(run: RunData) -> float | None:
    """Scheduled operations per second of the replayed window (None when unknown)."""
    window = run.window_ms
    scheduled = run.summary.operations_scheduled
    if window is None or scheduled <= 0:
        return None
    return float(scheduled) / (window / 1000.0)


def load_points(runs: list[RunData], op: str = TS_ALL) -> list[LoadPoint]:
    """One point per run that issued ``op``, sorted by offered load, then throughput."""
    points = []
    for run in runs:
        figures = run.op_figures(op)
        if figures is None or not figures.issued:
            continue
        points.append(
            LoadPoint(
                run_id=run.run_id,
                offered_ops_per_s=offered_load(run),
                throughput_ops_per_s=float(figures.throughput_ops_per_s or 0.0),
                p50_ms=figures.latency_ms.p50,
                p99_ms=figures.latency_ms.p99,
                complete=run.complete,
            )
        )
    points.sort(key=lambda p: (p.offered_ops_per_s if p.offered_ops_per_s is not None else p.throughput_ops_per_s, p.throughput_ops_per_s))
    return points


def is_load_series(runs: list[RunData]) -> bool:
    """Whether the runs look like one workload at several loads (worth a knee curve)."""
    if len(runs) < 2:
        return False
    loads = {round(p.offered_ops_per_s or p.throughput_ops_per_s, 6) for p in load_points(runs)}
    return len(loads) >= 2
