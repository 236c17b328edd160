"""The capacity of a server for a workload: the largest open-loop target rate it sustains.

A rate is sustained when the run completes, serves what it is offered (at least
``SERVED_SHARE`` of the target) and its lateness and latency stay stationary over the run
(``analysis.capacity.trend``): above capacity a backlog grows and they climb with it, by more
than ``BACKLOG_GROWTH`` of the elapsed time. The search
doubles the rate from ``start`` while it is sustained, then bisects (geometrically) between the
last sustained and the first unsustained rate until they are within ``tolerance``; the capacity
is the last sustained rate. Each trial is one ``run`` of the schedule at ``--rate``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mimesisbench.analysis.capacity import Trend, trend
from mimesisbench.errors import ConfigError
from mimesisbench.results.load import COL_END, COL_SCHEDULED, COL_START, collect, load_run
from mimesisbench.run.config import RunConfig

#: a sustained rate serves at least this share of its target
SERVED_SHARE = 0.95
#: a trial's lateness or latency growing faster than this share of the elapsed time is a backlog
#: (offered rho times the capacity, lateness grows by rho - 1 seconds per second): 10 ms per s
BACKLOG_GROWTH = 0.01


@dataclass(frozen=True)
class RateTrial:
    """One run at a target ``rate`` (ops/s): what it served and the trends of its lateness and
    latency; ``note`` says why it is not sustained (empty when it is)."""

    rate: float
    served: float
    lateness: Trend | None
    latency: Trend | None
    status: str
    run_dir: str
    note: str = ""

    @property
    def sustained(self) -> bool:
        return not self.note

    def to_json(self) -> dict[str, Any]:
        return {"rate": self.rate, "served": self.served, "sustained": self.sustained, "note": self.note,
                "status": self.status, "run_dir": self.run_dir,
                "lateness": self.lateness.to_json() if self.lateness else None,
                "latency": self.latency.to_json() if self.latency else None}


@dataclass(frozen=True)
class CapacityResult:
    """The largest sustained rate (None: not even ``start``), the first rate found unsustained
    above it (None: none up to the search's limit), and every trial in the order run."""

    capacity: float | None
    unsustained: float | None
    trials: tuple[RateTrial, ...]

    def to_json(self) -> dict[str, Any]:
        return {"capacity_ops_s": self.capacity, "first_unsustained_ops_s": self.unsustained,
                "trials": [t.to_json() for t in self.trials]}


def search_capacity(trial: Callable[[float], RateTrial], start: float, *, tolerance: float = 0.05,
                    max_trials: int = 16, limit: float = 1e9) -> CapacityResult:
    """Double from ``start`` while sustained (down by halves when ``start`` is not), then bisect
    until the bracket's ends are within ``tolerance`` of each other (or ``max_trials`` ran)."""
    if not start > 0 or not 0 < tolerance < 1 or max_trials < 2:
        raise ConfigError("capacity search: --start must be positive, --tolerance in (0, 1), --max-trials at least 2")
    trials: list[RateTrial] = []

    def run(rate: float) -> bool:
        trials.append(trial(rate))
        return trials[-1].sustained

    good: float | None = None
    bad: float | None = None
    rate = start
    if run(rate):
        good = rate
        while len(trials) < max_trials and rate * 2 <= limit:
            rate *= 2
            if not run(rate):
                bad = rate
                break
            good = rate
    else:
        bad = rate
        while len(trials) < max_trials:
            rate /= 2
            if run(rate):
                good = rate
                break
            bad = rate
    while good is not None and bad is not None and bad / good > 1 + tolerance and len(trials) < max_trials:
        mid = math.sqrt(good * bad)
        if run(mid):
            good = mid
        else:
            bad = mid
    return CapacityResult(capacity=good, unsustained=bad, trials=tuple(trials))


def judge_run(rate: float, run_dir: Path) -> RateTrial:
    """A finished run at target ``rate`` as a trial: its served rate and trends, and the verdict."""
    run = load_run(run_dir)
    status = run.status
    if not run.has_results or not run.has_samples:
        return RateTrial(rate, 0.0, None, None, status, str(run_dir), note=f"the run wrote no samples ({status})")
    samples = collect([run.scan_samples((COL_SCHEDULED, COL_START, COL_END))], run.samples_path)[0]
    scheduled = samples[COL_SCHEDULED].to_numpy()
    start = samples[COL_START].to_numpy()
    end = samples[COL_END].to_numpy()
    span_s = float(end.max() - start.min()) / 1e6 if samples.height else 0.0
    served = samples.height / span_s if span_s > 0 else 0.0
    notes = []
    if not run.complete:
        notes.append(f"the run ended early ({status})")
    if served < SERVED_SHARE * rate:
        notes.append(f"served {served:,.0f} ops/s of {rate:,.0f}")
    late = grow = None
    if samples.height >= 40:
        times = scheduled / 1e6
        bound = BACKLOG_GROWTH * 1000  # ms per s
        late = trend(times, (start - scheduled) / 1e3, max_slope=bound)
        grow = trend(times, (end - scheduled) / 1e3, max_slope=bound)
        for name, t in (("lateness", late), ("latency", grow)):
            if not t.stationary:
                notes.append(f"{name} grew {t.slope:,.3g} ms per s (a backlog: above {bound:g})")
    else:
        notes.append(f"{samples.height} operations: too few to judge (a longer schedule)")
    return RateTrial(rate, served, late, grow, status, str(run_dir), note="; ".join(notes))


def run_trial(base: RunConfig, rate: float, run: Callable[[RunConfig], Path]) -> RateTrial:
    """One trial: ``run`` (the benchmark, returning its run directory) with ``base`` at ``rate``."""
    return judge_run(rate, run(replace(base, rate=rate)))
