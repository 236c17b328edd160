"""Log-spaced latency histograms and the distributions derived from them (CDF, percentile curve).

Bins are ``BINS_PER_DECADE`` per power of ten of milliseconds (20: about 12 % wide), from 1 µs
up; values below 1 µs go to the first bin. A histogram of ten million samples is a few hundred
counts, from which the CDF and the HDR-style percentile curve (latency at percentile q, drawn
against 1/(1-q) on a log axis) are read. Key percentiles in tables come from ``summary.json``
(exact, from raw samples); the curves are accurate to one bin width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from mimesisbench.results.load import COL_END, COL_OP, COL_SCHEDULED, COL_START, COL_TYPE, TS_ALL, RunData, collect

BINS_PER_DECADE = 20
FLOOR_MS = 1e-3

#: what a histogram measures: latency from the scheduled time, or service time (from actual start)
KIND_LATENCY = "latency"
KIND_SERVICE = "service"


@dataclass(frozen=True)
class Histogram:
    """Counts of one group (an op, a type or ``all``) over log-spaced bins.

    ``lower_ms[i]`` and ``upper_ms[i]`` bound bin ``i``; only non-empty bins are kept.
    """

    group: str
    kind: str
    lower_ms: np.ndarray
    upper_ms: np.ndarray
    counts: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """(latency upper bound in ms, fraction of samples at or below it)."""
        if self.total == 0:
            return np.empty(0), np.empty(0)
        return self.upper_ms, np.cumsum(self.counts) / self.total

    def percentile_curve(self) -> tuple[np.ndarray, np.ndarray]:
        """(percentile in %, latency in ms) with a step per bin, up to the last sample.

        The last point is the maximum bin; its percentile is 100 - 100/n so that it can be drawn
        on an axis of 1/(1-q).
        """
        upper, frac = self.cdf()
        if upper.size == 0:
            return np.empty(0), np.empty(0)
        cap = 1.0 - 1.0 / max(self.total, 2)
        pct = np.minimum(frac, cap) * 100.0
        # each bin contributes its lower edge at the previous fraction and its upper edge at its own
        prev = np.concatenate(([0.0], pct[:-1]))
        x = np.column_stack((prev, pct)).ravel()
        y = np.column_stack((self.lower_ms, upper)).ravel()
        return x, y

    def quantile(self, q: float) -> float:
        """The upper edge of the bin holding quantile ``q`` (0..1): accurate to one bin."""
        upper, frac = self.cdf()
        if upper.size == 0:
            return float("nan")
        idx = int(np.searchsorted(frac, q, side="left"))
        return float(upper[min(idx, upper.size - 1)])


def bin_edges(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lower = np.power(10.0, index / BINS_PER_DECADE)
    upper = np.power(10.0, (index + 1) / BINS_PER_DECADE)
    return lower, upper


def bin_expr(values: pl.Expr) -> pl.Expr:
    """The bin index of ``values`` (ms): one expression, so that other tables are binned alike."""
    return (values.clip(lower_bound=FLOOR_MS).log10() * BINS_PER_DECADE).floor().cast(pl.Int32)


def _to_histograms(frame: pl.DataFrame, group_col: str, kind: str) -> list[Histogram]:
    out = []
    for (group,), part in frame.sort(group_col, "bin").group_by(group_col, maintain_order=True):
        index = part["bin"].to_numpy().astype(np.float64)
        lower, upper = bin_edges(index)
        out.append(Histogram(str(group), kind, lower, upper, part["n"].to_numpy().astype(np.int64)))
    out.sort(key=lambda h: (h.group != TS_ALL, -h.total))
    return out


@dataclass(frozen=True)
class RunHistograms:
    """Latency and service-time histograms per op (``all`` included) and latency per type."""

    latency_by_op: list[Histogram]
    service_by_op: list[Histogram]
    latency_by_type: list[Histogram]


def run_histograms(run: RunData) -> RunHistograms:
    """All histograms of one run, in one pass over its samples."""
    lazy = run.scan_samples((COL_OP, COL_TYPE, COL_SCHEDULED, COL_START, COL_END))
    base = lazy.select(
        pl.col(COL_OP).alias("op"),
        pl.col(COL_TYPE).cast(pl.String).alias("type"),
        bin_expr((pl.col(COL_END) - pl.col(COL_SCHEDULED)) / 1000.0).alias("lat_bin"),
        bin_expr((pl.col(COL_END) - pl.col(COL_START)) / 1000.0).alias("svc_bin"),
    )
    lat_op = base.group_by("op", "lat_bin").agg(pl.len().alias("n")).rename({"lat_bin": "bin"})
    svc_op = base.group_by("op", "svc_bin").agg(pl.len().alias("n")).rename({"svc_bin": "bin"})
    lat_type = base.group_by("type", "lat_bin").agg(pl.len().alias("n")).rename({"lat_bin": "bin"})
    lat_op_f, svc_op_f, lat_type_f = collect([lat_op, svc_op, lat_type], run.samples_path)

    def with_all(frame: pl.DataFrame) -> pl.DataFrame:
        total = frame.group_by("bin").agg(pl.col("n").sum()).with_columns(pl.lit(TS_ALL).alias("op"))
        return pl.concat([frame, total.select(frame.columns)])

    return RunHistograms(
        latency_by_op=_to_histograms(with_all(lat_op_f), "op", KIND_LATENCY),
        service_by_op=_to_histograms(with_all(svc_op_f), "op", KIND_SERVICE),
        latency_by_type=_to_histograms(lat_type_f, "type", KIND_LATENCY),
    )
