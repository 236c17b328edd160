"""How much a metadata replay and data jobs slow each other (Molina-Estolano et al.'s question):
from the summaries of repeated runs of three kinds, ``metadata`` (the replay alone), ``data``
(the data jobs alone, for as long) and ``both`` (together, from one barrier).

For each figure, its mean and Student-t 95 % interval over the repetitions alone and together,
and the change together vs alone in percent, with Welch's 95 % interval for the difference of
the means (``scipy.stats.ttest_ind``) divided by the mean alone (the mean alone taken as known:
with few repetitions the interval is a little narrow; it says which changes are beyond noise).
Figures: the replay's latency (mean, p50, p99 from the scheduled time), its service time p50
and throughput; per data job and op, its bandwidth and mean call latency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

KINDS = ("metadata", "data", "both")


@dataclass(frozen=True)
class Interval:
    mean: float
    ci95: tuple[float, float] | None  # None with one repetition


@dataclass(frozen=True)
class InterferenceRow:
    """One figure alone and together; ``worse``: the change is beyond the interval, for the worse."""

    side: str  # "metadata" or "data"
    figure: str
    unit: str
    higher_is_better: bool
    alone: Interval
    together: Interval
    change_pct: Interval
    worse: bool


def _interval(values: Sequence[float]) -> Interval:
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, None)
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return Interval(mean, (mean - half, mean + half))


def _change(alone: Sequence[float], together: Sequence[float]) -> Interval:
    base = float(np.mean(alone))
    if base == 0:
        return Interval(float("nan"), None)
    mean = (float(np.mean(together)) - base) / base * 100.0
    if len(alone) < 2 or len(together) < 2:
        return Interval(mean, None)
    if np.ptp(alone) == 0 and np.ptp(together) == 0:  # no spread at all: the change is exact
        return Interval(mean, (mean, mean))
    ci = stats.ttest_ind(together, alone, equal_var=False).confidence_interval(0.95)
    return Interval(mean, (float(ci.low) / base * 100.0, float(ci.high) / base * 100.0))


def _metadata_figures(summary: dict[str, Any]) -> dict[str, tuple[str, bool, float]]:
    latency = summary.get("latency_ms") or {}
    service = summary.get("service_ms") or {}
    out: dict[str, tuple[str, bool, float]] = {}
    for key in ("mean", "p50", "p99"):
        if latency.get(key) is not None:
            out[f"latency {key}"] = ("ms", False, float(latency[key]))
    if service.get("p50") is not None:
        out["service p50"] = ("ms", False, float(service["p50"]))
    out["throughput"] = ("ops/s", True, float(summary.get("throughput_ops_per_s") or 0.0))
    return out


def _data_figures(summary: dict[str, Any]) -> dict[str, tuple[str, bool, float]]:
    out: dict[str, tuple[str, bool, float]] = {}
    for name, entry in ((summary.get("data") or {}).get("jobs") or {}).items():
        for op, figures in (entry.get("ops") or {}).items():
            if op == "fsync" or not figures.get("calls"):
                continue
            out[f"{name} {op} bandwidth"] = ("MiB/s", True, float(figures["bandwidth_mib_s"]))
            latency = figures.get("latency_ms") or {}
            if latency.get("mean") is not None:
                out[f"{name} {op} call latency mean"] = ("ms", False, float(latency["mean"]))
    return out


def interference_table(runs: Sequence[tuple[str, dict[str, Any]]]) -> list[InterferenceRow]:
    """The rows of the interference table from ``(kind, summary)`` of complete runs."""
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for kind, summary in runs:
        if kind not in by_kind:
            raise ValueError(f"unknown run kind {kind!r} (one of {', '.join(KINDS)})")
        by_kind[kind].append(summary)
    rows: list[InterferenceRow] = []
    for side, alone_kind, pick in (("metadata", "metadata", _metadata_figures), ("data", "data", _data_figures)):
        alone = [pick(s) for s in by_kind[alone_kind]]
        together = [pick(s) for s in by_kind["both"]]
        if not alone or not together:
            continue
        for figure, (unit, higher_is_better, _) in alone[0].items():
            a = [f[figure][2] for f in alone if figure in f]
            b = [f[figure][2] for f in together if figure in f]
            if not a or not b:
                continue
            change = _change(a, b)
            worse = change.ci95 is not None and (change.ci95[1] < 0 if higher_is_better else change.ci95[0] > 0)
            rows.append(InterferenceRow(side, figure, unit, higher_is_better, _interval(a), _interval(b), change, worse))
    return rows


def rows_json(rows: Sequence[InterferenceRow]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        data = asdict(row)
        for key in ("alone", "together", "change_pct"):
            ci = data[key]["ci95"]
            data[key]["ci95"] = None if ci is None else [ci[0], ci[1]]
        out.append(data)
    return out


def rows_from_json(data: Sequence[Mapping[str, Any]]) -> list[InterferenceRow]:
    """``rows_json``'s inverse (an ``interference.json``'s ``table``); KeyError or ValueError on
    a table that is not one."""

    def interval(d: Mapping[str, Any]) -> Interval:
        ci = d.get("ci95")
        return Interval(mean=float(d["mean"]), ci95=None if ci is None else (float(ci[0]), float(ci[1])))

    return [
        InterferenceRow(
            side=str(r["side"]), figure=str(r["figure"]), unit=str(r["unit"]), higher_is_better=bool(r["higher_is_better"]),
            alone=interval(r["alone"]), together=interval(r["together"]), change_pct=interval(r["change_pct"]),
            worse=bool(r["worse"]),
        )
        for r in data
    ]
