"""One capacity measurement, as ``mimesisbench capacity`` and a ``[capacity]`` experiment make it:
the search for q (``capacity_search``), Wu's p_max for a bound, and the closing check at p_max
(``peak_check``), written to ``capacity.json`` in its folder with every trial's run directory
below it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesisbench.analysis.capacity import p_max
from mimesisbench.atomic import atomic_write_text
from mimesisbench.run.config import RunConfig
from mimesisbench.study.capacity_search import CapacityResult, RateTrial, run_trial, search_capacity
from mimesisbench.study.experiment_file import Capacity
from mimesisbench.study.peak_check import PeakCheck, peak_check
from mimesisbench.units import parse_duration_s, parse_rate

FILE = "capacity.json"


@dataclass(frozen=True)
class CapacityPoint:
    """The search, p_max (None without a bound, or without a capacity) and the check's run."""

    search: CapacityResult
    p_max: float | None
    p_max_inputs: dict[str, float] | None
    check: PeakCheck | None

    def to_json(self) -> dict[str, Any]:
        out = self.search.to_json()
        if self.p_max is not None:
            out["p_max_ops_s"] = self.p_max
            out["p_max_inputs"] = self.p_max_inputs
        if self.check is not None:
            out["peak_check"] = self.check.to_json()
        return out

    def responses(self) -> dict[str, float | None]:
        """The experiment responses this point gives (``experiment_file.CAPACITY_RESPONSES``)."""
        mean = self.check.latency_mean_s if self.check is not None else None
        return {"capacity_ops_per_s": self.search.capacity, "p_max_ops_per_s": self.p_max,
                "peak_latency_mean_ms": None if mean is None else mean * 1000.0}


def measure_capacity(spec: Capacity, schedule: Path, trial_config: Callable[[Path], RunConfig],
                     run: Callable[[RunConfig], Path], out: Path,
                     announce: Callable[[str], None] = lambda _: None) -> CapacityPoint:
    """Search the capacity of ``schedule`` (each trial ``run`` with ``trial_config(out)``, the
    system reset for it), then p_max and the check as ``spec`` asks; writes ``out/capacity.json``."""

    def trial(rate: float) -> RateTrial:
        verdict = run_trial(trial_config(out), rate, run)
        announce(f"  {rate:>12,.0f} ops/s offered, {verdict.served:>12,.0f} served: "
                 + ("sustained" if verdict.sustained else f"not sustained: {verdict.note}"))
        return verdict

    search = search_capacity(trial, parse_rate(spec.start, option="start"), tolerance=spec.tolerance,
                             max_trials=spec.max_trials)
    peak: float | None = None
    inputs: dict[str, float] | None = None
    check: PeakCheck | None = None
    if spec.bound is not None and spec.peak_length is not None and search.capacity is not None:
        inputs = {"bound_s": parse_duration_s(spec.bound, option="bound"),
                  "network_s": parse_duration_s(spec.network, option="network"),
                  "peak_length_s": parse_duration_s(spec.peak_length, option="peak_length")}
        peak = p_max(search.capacity, inputs["bound_s"], inputs["network_s"], inputs["peak_length_s"])
        if spec.check:
            announce(f"  the closing check: a {spec.peak_length} peak at p_max = {peak:,.0f} ops/s")
            check = peak_check(schedule, trial_config(out), peak, inputs["peak_length_s"], inputs["bound_s"],
                               out / "peak", run)
    point = CapacityPoint(search=search, p_max=peak, p_max_inputs=inputs, check=check)
    atomic_write_text(out / FILE, json.dumps(point.to_json(), indent=2) + "\n", option="--output")
    return point
