"""Baseline against contender: per operation, per figure, with run-to-run noise taken seriously.

Each side is one run or several repeated runs of the same schedule. For every operation (and
``all``) and every figure (throughput, mean and percentile latencies) the per-run values of each
side give a mean, a coefficient of variation (CV, sample standard deviation over mean) and the
relative change. With at least two runs per side, Welch's t-test on the per-run values and a
bootstrap confidence interval of the difference of means (runs resampled within each side)
decide whether the change is significant; a change no larger than the runs' own variation is
called "within run-to-run noise". With one run on a side nothing can be told about noise, and
the verdict says so. Independently, a Mann-Whitney U test compares the raw latency samples of
the two sides per operation: it tells whether the distributions differ, but samples of one run
are not independent repetitions, so it never decides the verdict on its own.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.results.load import COL_END, COL_OP, COL_SCHEDULED, TS_ALL, RunData, collect

#: figures compared (names of ``GroupStats.flat``), with whether a higher value is better
METRICS: dict[str, bool] = {
    "throughput_ops_per_s": True,
    "latency_mean_ms": False,
    "latency_p50_ms": False,
    "latency_p90_ms": False,
    "latency_p99_ms": False,
    "latency_p999_ms": False,
}
METRIC_LABELS: dict[str, str] = {
    "throughput_ops_per_s": "throughput (ops/s)",
    "latency_mean_ms": "latency mean (ms)",
    "latency_p50_ms": "latency p50 (ms)",
    "latency_p90_ms": "latency p90 (ms)",
    "latency_p99_ms": "latency p99 (ms)",
    "latency_p999_ms": "latency p99.9 (ms)",
}
MIN_RUNS = 2
RECOMMENDED_RUNS = 3
MWU_MAX_SAMPLES = 50_000


@dataclass(frozen=True)
class CompareOptions:
    alpha: float = 0.05
    confidence: float = 0.95
    bootstrap: int = 10_000
    seed: int = 0
    mwu_max_samples: int = MWU_MAX_SAMPLES


@dataclass(frozen=True)
class MetricComparison:
    """One figure of one operation on both sides."""

    op: str
    metric: str
    higher_is_better: bool
    baseline: tuple[float, ...]
    contender: tuple[float, ...]
    baseline_mean: float | None
    contender_mean: float | None
    baseline_cv: float | None
    contender_cv: float | None
    relative_change: float | None
    welch_p: float | None
    ci_low: float | None
    ci_high: float | None
    significant: bool | None
    verdict: str
    label: str = ""

    @property
    def noise(self) -> float | None:
        """The larger of the two sides' CVs (None with fewer than two runs on a side)."""
        cvs = [c for c in (self.baseline_cv, self.contender_cv) if c is not None]
        return max(cvs) if len(cvs) == 2 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "higher_is_better": self.higher_is_better,
            "baseline": list(self.baseline),
            "contender": list(self.contender),
            "baseline_mean": self.baseline_mean,
            "contender_mean": self.contender_mean,
            "baseline_cv": self.baseline_cv,
            "contender_cv": self.contender_cv,
            "relative_change": self.relative_change,
            "welch_p": self.welch_p,
            "difference_ci": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "significant": self.significant,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class DistributionTest:
    """Mann-Whitney U on the raw latency samples of one operation (pooled per side)."""

    op: str
    n_baseline: int
    n_contender: int
    p_value: float | None
    #: probability that a contender sample is slower than a baseline sample (0.5: no shift)
    prob_contender_slower: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "n_baseline": self.n_baseline,
            "n_contender": self.n_contender,
            "p_value": self.p_value,
            "prob_contender_slower": self.prob_contender_slower,
        }


@dataclass(frozen=True)
class OpComparison:
    op: str
    metrics: list[MetricComparison]
    distribution: DistributionTest | None


@dataclass(frozen=True)
class Comparison:
    baseline_runs: tuple[str, ...]
    contender_runs: tuple[str, ...]
    ops: list[OpComparison]
    notes: list[str] = field(default_factory=list)
    alpha: float = 0.05
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": {"runs": list(self.baseline_runs)},
            "contender": {"runs": list(self.contender_runs)},
            "alpha": self.alpha,
            "confidence": self.confidence,
            "notes": self.notes,
            "operations": {
                oc.op: {
                    "metrics": {m.metric: m.to_json() for m in oc.metrics},
                    "latency_distribution": oc.distribution.to_json() if oc.distribution else None,
                }
                for oc in self.ops
            },
        }


# -- statistics ------------------------------------------------------------------------------------
def cv(values: np.ndarray) -> float | None:
    """Sample standard deviation over mean (None with fewer than two values or a zero mean)."""
    if values.size < MIN_RUNS:
        return None
    mean = float(values.mean())
    if mean == 0:
        return None
    return float(values.std(ddof=1)) / abs(mean)


def welch_p(a: np.ndarray, b: np.ndarray) -> float | None:
    """Two-sided Welch's t-test p value; None when it cannot be computed."""
    from scipy import stats

    if a.size < MIN_RUNS or b.size < MIN_RUNS:
        return None
    if float(a.std(ddof=1)) == 0 and float(b.std(ddof=1)) == 0:
        return 1.0 if float(a.mean()) == float(b.mean()) else 0.0
    with warnings.catch_warnings():  # nearly identical runs: scipy warns, the p value stays usable
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(b, a, equal_var=False)
    p = float(result.pvalue)
    return p if math.isfinite(p) else None


def bootstrap_ci(a: np.ndarray, b: np.ndarray, *, n: int, confidence: float, seed: int) -> tuple[float, float] | None:
    """Percentile bootstrap interval of mean(b) - mean(a), resampling each side separately."""
    if a.size < MIN_RUNS or b.size < MIN_RUNS or n < 1:
        return None
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, size=(n, a.size))
    ib = rng.integers(0, b.size, size=(n, b.size))
    diffs = b[ib].mean(axis=1) - a[ia].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(diffs, [tail, 100.0 - tail])
    return float(low), float(high)


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float | None, float | None]:
    """(two-sided p, P(b > a) + P(b = a)/2) of the Mann-Whitney U test."""
    from scipy import stats

    if a.size == 0 or b.size == 0:
        return None, None
    result = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
    p = float(result.pvalue)
    return (p if math.isfinite(p) else None), float(result.statistic) / (a.size * b.size)


# -- verdicts ----------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def verdict_for(
    rel: float | None,
    n_a: int,
    n_b: int,
    noise: float | None,
    p: float | None,
    ci: tuple[float, float] | None,
    higher_is_better: bool,
    alpha: float,
) -> tuple[bool | None, str]:
    """(significant or None when it cannot be told, the verdict in words)."""
    if rel is None:
        return None, "no figure on one side"
    if n_a < MIN_RUNS or n_b < MIN_RUNS:
        return None, f"too few runs to tell ({n_a} vs {n_b}): {_pct(rel)} may be run-to-run noise"
    significant = p is not None and p < alpha and ci is not None and (ci[0] > 0 or ci[1] < 0)
    noise_text = f"runs vary by {noise * 100:.1f}% (CV)" if noise is not None else "run-to-run variation unknown"
    p_text = f"Welch p={p:.3g}" if p is not None else "Welch p n/a"
    if significant:
        better = (rel > 0) == higher_is_better
        word = "better" if better else "worse"
        if noise is not None and abs(rel) <= noise:
            return True, f"significant but small: {word} by {abs(rel) * 100:.1f}%, about the runs' own variation ({noise_text}; {p_text})"
        return True, f"significant: {word} by {abs(rel) * 100:.1f}% ({p_text}; {noise_text})"
    if noise is not None and abs(rel) <= noise:
        return False, f"within run-to-run noise: {_pct(rel)} while {noise_text} ({p_text}, not significant)"
    if noise is not None and abs(rel) <= 2 * noise:
        return False, f"not significant: {_pct(rel)} is within twice the run-to-run variation ({noise_text}; {p_text}); more runs needed"
    return False, f"not significant: {_pct(rel)} ({noise_text}; {p_text}); more runs needed to tell"


def compare_metric(op: str, metric: str, a: list[float], b: list[float], options: CompareOptions) -> MetricComparison:
    higher = METRICS[metric]
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ma = float(va.mean()) if va.size else None
    mb = float(vb.mean()) if vb.size else None
    rel = (mb - ma) / abs(ma) if ma not in (None, 0.0) and mb is not None else None
    ca, cb = cv(va), cv(vb)
    p = welch_p(va, vb)
    ci = bootstrap_ci(va, vb, n=options.bootstrap, confidence=options.confidence, seed=options.seed)
    noise = max(ca, cb) if ca is not None and cb is not None else None
    significant, verdict = verdict_for(rel, va.size, vb.size, noise, p, ci, higher, options.alpha)
    return MetricComparison(
        op=op,
        metric=metric,
        higher_is_better=higher,
        baseline=tuple(float(x) for x in va),
        contender=tuple(float(x) for x in vb),
        baseline_mean=ma,
        contender_mean=mb,
        baseline_cv=ca,
        contender_cv=cb,
        relative_change=rel,
        welch_p=p,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        significant=significant,
        verdict=verdict,
        label=METRIC_LABELS[metric],
    )


# -- data gathering ----------------------------------------------------------------------------
def per_run_values(runs: list[RunData], op: str, metric: str) -> list[float]:
    out = []
    for run in runs:
        figures = run.op_figures(op)
        value = None if figures is None else figures.flat().get(metric)
        if isinstance(value, (int, float)) and math.isfinite(value):
            out.append(float(value))
    return out


def pooled_latency(runs: list[RunData], op: str, limit: int, seed: int) -> np.ndarray:
    """Raw latencies (ms) of ``op`` from every run of a side, evenly subsampled to ``limit``."""
    parts = []
    for run in runs:
        if not run.has_samples:
            continue
        lazy = run.scan_samples((COL_OP, COL_SCHEDULED, COL_END))
        if op != TS_ALL:
            lazy = lazy.filter(pl.col(COL_OP) == op)
        (frame,) = collect([lazy.select(((pl.col(COL_END) - pl.col(COL_SCHEDULED)) / 1000.0).alias("lat"))], run.samples_path)
        parts.append(frame["lat"].to_numpy())
    if not parts:
        return np.empty(0)
    values = np.concatenate(parts)
    if values.size > limit:
        values = np.random.default_rng(seed).choice(values, size=limit, replace=False)
    return values


def _ops_of(runs: list[RunData]) -> list[str]:
    counts: dict[str, int] = {}
    for run in runs:
        for op, figures in run.operations.items():
            counts[op] = counts.get(op, 0) + figures.issued
    return [op for op, _ in sorted(counts.items(), key=lambda kv: -kv[1])]


def _notes(baseline: list[RunData], contender: list[RunData]) -> list[str]:
    notes = []
    for side, runs in (("baseline", baseline), ("contender", contender)):
        for run in runs:
            if not run.complete:
                notes.append(f"{side} run {run.run_id} is INCOMPLETE ({run.status}): its figures cover part of the schedule")
        hashes = {r.schedule_hash for r in runs if r.schedule_hash}
        if len(hashes) > 1:
            notes.append(f"the {side} runs replayed different schedules: they are not repetitions of one experiment")
    base_hashes = {r.schedule_hash for r in baseline if r.schedule_hash}
    cont_hashes = {r.schedule_hash for r in contender if r.schedule_hash}
    if base_hashes and cont_hashes and not base_hashes & cont_hashes:
        notes.append("baseline and contender replayed different schedules (namespace hashes differ): the workloads differ")
    for side, runs in (("baseline", baseline), ("contender", contender)):
        ids = [r.run_id for r in runs]
        if len(set(ids)) < len(ids):
            notes.append(f"the {side} lists the same run more than once: repetitions must be separate runs")
    shared = {r.run_id for r in baseline} & {r.run_id for r in contender}
    if shared:
        notes.append(f"run(s) on both sides: {', '.join(sorted(shared))}")
    for side, runs in (("baseline", baseline), ("contender", contender)):
        if len(runs) < MIN_RUNS:
            notes.append(
                f"the {side} has {len(runs)} run: run-to-run noise cannot be estimated, so no difference can be called "
                f"significant (repeat each side at least {RECOMMENDED_RUNS} times)"
            )
    return notes


def compare_runs(baseline: list[RunData], contender: list[RunData], options: CompareOptions | None = None) -> Comparison:
    """The full comparison: ``all`` first, then each operation either side issued."""
    opts = options or CompareOptions()
    ops_present = _ops_of(baseline + contender)
    results = []
    for op in [TS_ALL, *ops_present]:
        metrics = [compare_metric(op, m, per_run_values(baseline, op, m), per_run_values(contender, op, m), opts) for m in METRICS]
        lat_a = pooled_latency(baseline, op, opts.mwu_max_samples, opts.seed)
        lat_b = pooled_latency(contender, op, opts.mwu_max_samples, opts.seed + 1)
        dist = None
        if lat_a.size or lat_b.size:
            p, prob = mann_whitney(lat_a, lat_b)
            dist = DistributionTest(op, int(lat_a.size), int(lat_b.size), p, prob)
        results.append(OpComparison(op=op, metrics=metrics, distribution=dist))
    return Comparison(
        baseline_runs=tuple(r.run_id for r in baseline),
        contender_runs=tuple(r.run_id for r in contender),
        ops=results,
        notes=_notes(baseline, contender),
        alpha=opts.alpha,
        confidence=opts.confidence,
    )
