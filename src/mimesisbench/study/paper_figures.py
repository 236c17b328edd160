"""Our figures beside a paper's: for each ``[[paper]]`` entry of an experiment, the ratio of the
mean response of the runs at the entry's ``of`` levels to that of the runs at its ``over`` levels,
with a 95 % bootstrap interval (scipy's, percentile method, a fixed seed: with three runs a side
the interval is rough, and says so by its width), set beside the value the paper gives, and what
the runs say about why they may differ (an open-loop run that served its schedule measured the
rate it was offered, not what the server can do; a run whose client set the pace measured the
client)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.errors import MimesisError
from mimesisbench.results.load import COL_END, COL_SCHEDULED, COL_START, RunData, collect, load_run
from mimesisbench.study.experiment_file import Experiment, Level, PaperFigure

#: a run that served its operations within this share of their scheduled span served its offered rate
SERVED_SHARE = 0.98
BOOTSTRAP_SEED = 2014
BOOTSTRAP_RESAMPLES = 4000


@dataclass(frozen=True)
class Comparison:
    """One paper figure beside ours (``ours`` None: no finished run at a side)."""

    source: str
    says: str
    response: str
    paper: float
    ours: float | None
    ci95: tuple[float, float] | None
    runs: tuple[int, int]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "says": self.says, "response": self.response, "paper": self.paper,
                "ours": self.ours, "ci95": list(self.ci95) if self.ci95 else None, "runs": list(self.runs),
                "notes": list(self.notes)}


def _select(results: pl.DataFrame, levels: dict[str, Level]) -> pl.DataFrame:
    mask = pl.lit(True)
    for name, level in levels.items():
        mask = mask & (pl.col(name).cast(pl.String) == str(level))
    return results.filter(mask)


def ratio_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """The 95 % percentile bootstrap interval of mean(a) / mean(b) (None: a side has one run)."""
    if a.size < 2 or b.size < 2:
        return None
    from scipy.stats import bootstrap

    result = bootstrap((a, b), lambda x, y, axis=-1: np.mean(x, axis=axis) / np.mean(y, axis=axis),
                       n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", vectorized=True,
                       rng=np.random.default_rng(BOOTSTRAP_SEED))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _runs(rows: pl.DataFrame) -> list[RunData]:
    """The finished runs of ``rows`` with results (unreadable ones left out)."""
    out = []
    for folder in rows["run_dir"].to_list():
        try:
            run = load_run(Path(str(folder)))
        except MimesisError:
            continue
        if run.has_results:
            out.append(run)
    return out


def _served_as_offered(runs: list[RunData]) -> bool:
    """Whether every run was paced (open loop), complete, and served the rate its schedule offered
    (operations over the span of their scheduled times) within ``SERVED_SHARE``: its throughput is
    then the offered rate, whatever lateness its bursts had."""
    for run in runs:
        if not run.summary.time_scale or not run.complete or not run.has_samples:
            return False
        cols = (COL_SCHEDULED, COL_START, COL_END)
        [t] = collect([run.scan_samples(cols).select(
            *(pl.col(c).min().alias(f"{c}_lo") for c in cols), *(pl.col(c).max().alias(f"{c}_hi") for c in cols))],
            run.samples_path)
        offered_span = float(t[f"{COL_SCHEDULED}_hi"][0] - t[f"{COL_SCHEDULED}_lo"][0])
        served_span = float(t[f"{COL_END}_hi"][0] - t[f"{COL_START}_lo"][0])
        if offered_span <= 0 or served_span > offered_span / SERVED_SHARE:
            return False
    return bool(runs)


def _client_bound(runs: list[RunData]) -> int:
    """How many of the runs had the client, not the server, set their pace (``run.client_cost``)."""
    return sum(1 for run in runs if (run.summary.cost or {}).get("bottleneck") == "client")


def compare(fig: PaperFigure, results: pl.DataFrame) -> Comparison:
    """One ``[[paper]]`` entry against the experiment's finished runs."""
    of, over = _select(results, fig.of), _select(results, fig.over)
    a = of[fig.response].cast(pl.Float64, strict=False).drop_nulls().to_numpy()
    b = over[fig.response].cast(pl.Float64, strict=False).drop_nulls().to_numpy()
    ours = float(a.mean() / b.mean()) if a.size and b.size and b.mean() != 0 else None
    notes: list[str] = []
    runs_of, runs_over = _runs(of), _runs(over)
    if ours is not None and fig.response.startswith("throughput") and _served_as_offered(runs_of) \
            and _served_as_offered(runs_over):
        notes.append("every run was open loop and served the rate its schedule offered: its throughput is that "
                     "rate, not what the server can serve; a paper figure measured as fast as possible (c = 0) is a "
                     "capacity")
    bound = _client_bound(runs_of) + _client_bound(runs_over)
    if bound:
        notes.append(f"in {bound} of {len(runs_of) + len(runs_over)} runs the client, not the server, set the pace "
                     "(each run's summary: cost.bottleneck): those figures measure this client on this machine")
    return Comparison(source=fig.source, says=fig.says, response=fig.response, paper=fig.value, ours=ours,
                      ci95=ratio_interval(a, b) if ours is not None else None, runs=(int(a.size), int(b.size)),
                      notes=tuple(notes))


def compare_all(exp: Experiment, results: pl.DataFrame) -> list[Comparison]:
    return [compare(fig, results) for fig in exp.paper]
