"""The check that closes Wu et al.'s capacity loop: a peak of length T at p_max, run.

Wu's peak model says a peak of rate p above the capacity q, lasting T, adds T(p - q)/2q to the
mean response time of the operations that arrive during it; p_max = 2q(B - C)/T + q is the
largest peak that keeps that mean under a bound B (network latency C). The check replays the
first T seconds of the schedule with its times scaled as a run at p_max scales them (the same
namespace: phase 1 is the schedule's own), and reports the measured mean response time of those
operations beside B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench.errors import ConfigError
from mimesisbench.results.load import load_run
from mimesisbench.run.config import RunConfig
from mimesisbench.schedule import Schedule, load_schedule
from mimesisbench.schedule.writer import write_schedule_dir


@dataclass(frozen=True)
class PeakCheck:
    """A peak run at ``rate`` (p_max) for ``length_s`` (shorter than asked, ``requested_s``, when
    the schedule ends before): the rate its events really offered, their measured mean response
    time (from the scheduled time), the bound, and the run directory."""

    rate: float
    offered: float
    length_s: float
    requested_s: float
    bound_s: float
    latency_mean_s: float | None
    status: str
    run_dir: str

    def to_json(self) -> dict[str, Any]:
        return {"rate_ops_s": self.rate, "offered_ops_s": self.offered, "length_s": self.length_s,
                "requested_length_s": self.requested_s,
                "bound_s": self.bound_s, "latency_mean_s": self.latency_mean_s,
                "within_bound": None if self.latency_mean_s is None else self.latency_mean_s <= self.bound_s,
                "status": self.status, "run_dir": self.run_dir}


def time_scale_at(schedule: Schedule, rate: float) -> float:
    """The time scale that makes ``schedule``'s mean offered rate ``rate`` (as ``run --rate``)."""
    last = schedule.events["time_us"].max()
    return RunConfig(schedule=str(schedule.path), backend="", rate=rate).with_rate(
        schedule.n_events, last if isinstance(last, int) else 0).time_scale


def write_peak_schedule(schedule: Schedule, time_scale: float, length_s: float, out: Path) -> tuple[Path, int, float]:
    """A copy of ``schedule`` holding the events due in the first ``length_s`` (from its first
    event) once scaled by ``time_scale`` (its namespace unchanged); returns it, its number of
    events and the length it really spans (the schedule's own, scaled, when that is shorter: one
    mean gap past its last)."""
    first_us = float(schedule.events["time_us"].min() or 0)  # type: ignore[arg-type]
    events = schedule.events.filter(pl.col("time_us") < first_us + length_s * 1e6 / time_scale)
    if events.height < 2:
        raise ConfigError(f"peak: the first {length_s:g} s of the schedule at this rate hold {events.height} operations; "
                          "a longer peak_length")
    manifest = dict(schedule.manifest)
    manifest["notes"] = [*manifest.get("notes", []), f"the first {length_s:g} s at time scale {time_scale:.6g} "
                         f"of {schedule.path}"]
    write_schedule_dir(out, directories=schedule.directories, files=schedule.files, events=events, manifest=manifest)
    spread_us = float(events["time_us"].max() or 0) - first_us  # type: ignore[arg-type]
    spans_s = min(length_s, (spread_us + spread_us / max(1, events.height - 1)) * time_scale / 1e6)
    return out, events.height, spans_s


def peak_check(schedule_path: Path, base: RunConfig, rate: float, length_s: float, bound_s: float,
               out: Path, run: Callable[[RunConfig], Path]) -> PeakCheck:
    """Run the peak (``run``: the benchmark, returning its run directory) and measure it; the peak's
    schedule and run directory go to ``out``."""
    schedule = load_schedule(schedule_path)
    scale = time_scale_at(schedule, rate)
    peak, events, span_s = write_peak_schedule(schedule, scale, length_s, out / "schedule")
    run_dir = run(replace(base, schedule=str(peak), out=str(out), rate=None, time_scale=scale, max_drift_s=None))
    data = load_run(run_dir)
    mean_ms = data.overall.flat().get("latency_mean_ms") if data.has_results else None
    return PeakCheck(rate=rate, offered=events / span_s, length_s=span_s, requested_s=length_s, bound_s=bound_s,
                     latency_mean_s=None if mean_ms is None else float(mean_ms) / 1000.0, status=data.status,
                     run_dir=str(run_dir))
