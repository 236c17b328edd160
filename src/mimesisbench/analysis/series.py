"""Time series of a run, computed from the raw samples at a resolution fit for plotting.

A one-hour run has 3,600 seconds; plotting each second of each operation would make a figure of
tens of thousands of points. :func:`choose_bin` picks the bin width (0.1 s for short runs, 1 s
up to 15 minutes, wider beyond) so that a series has at most ``max_points`` points, and every
statistic of a bin is computed from the raw samples in it (percentiles are never averaged).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from mimesisbench.results.load import (
    COL_END,
    COL_OP,
    COL_SCHEDULED,
    COL_START,
    TS_ALL,
    TS_OP,
    TS_SECOND,
    RunData,
    collect,
)

#: bin widths tried, in seconds (the smallest that keeps a series short enough wins)
BIN_WIDTHS_S: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
DEFAULT_MAX_POINTS = 900
#: the per-bin latency statistics (quantile or "max")
LATENCY_QUANTILES: dict[str, float] = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}


@dataclass(frozen=True)
class RunSeries:
    """Per bin (``t_s``: bin start in seconds after the start barrier) and op (``all`` included).

    ``completion``: ``t_s, op, ops, throughput_ops_per_s, latency_<p50|p90|p99|p999|max>_ms``
    binned by completion time. ``issue``: ``t_s, offered_ops_per_s, lateness_<p50|p99|max>_ms``
    binned by scheduled time (all ops together). ``source`` tells whether raw samples or the
    stored per-second ``timeseries.parquet`` were used.
    """

    bin_s: float
    completion: pl.DataFrame
    issue: pl.DataFrame
    source: str

    @property
    def ops(self) -> list[str]:
        """Operations present, ``all`` first, then by number of operations."""
        if self.completion.height == 0:
            return []
        counts = self.completion.group_by("op").agg(pl.col("ops").sum()).sort("ops", descending=True)
        names = [str(o) for o in counts["op"].to_list()]
        return ([TS_ALL] if TS_ALL in names else []) + [o for o in names if o != TS_ALL]


def choose_bin(duration_s: float, max_points: int = DEFAULT_MAX_POINTS) -> float:
    """The smallest width of :data:`BIN_WIDTHS_S` giving at most ``max_points`` bins."""
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    for width in BIN_WIDTHS_S:
        if duration_s / width <= max_points:
            return width
    return max(BIN_WIDTHS_S[-1], duration_s / max_points)


def _latency_aggs() -> list[pl.Expr]:
    aggs = [pl.len().alias("ops")]
    aggs += [pl.col("lat").quantile(q, "linear").alias(f"latency_{k}_ms") for k, q in LATENCY_QUANTILES.items()]
    aggs.append(pl.col("lat").max().alias("latency_max_ms"))
    return aggs


def _empty_completion() -> pl.DataFrame:
    schema: dict[str, pl.DataType] = {"t_s": pl.Float64(), "op": pl.String(), "ops": pl.UInt32(), "throughput_ops_per_s": pl.Float64()}
    for key in (*LATENCY_QUANTILES, "max"):
        schema[f"latency_{key}_ms"] = pl.Float64()
    return pl.DataFrame(schema=schema)


def _empty_issue() -> pl.DataFrame:
    names = ("t_s", "offered_ops_per_s", "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms")
    return pl.DataFrame(schema={n: pl.Float64() for n in names})


def series_from_samples(run: RunData, *, max_points: int = DEFAULT_MAX_POINTS) -> RunSeries:
    """Completion and issue series of ``run`` from its raw samples."""
    lazy = run.scan_samples((COL_OP, COL_SCHEDULED, COL_START, COL_END))
    (bounds,) = collect(
        [lazy.select(pl.col(COL_END).max().alias("end"), pl.col(COL_SCHEDULED).max().alias("sched"), pl.len().alias("n"))],
        run.samples_path,
    )
    if bounds["n"][0] == 0:
        return RunSeries(1.0, _empty_completion(), _empty_issue(), "samples")
    duration_s = max(float(bounds["end"][0] or 0.0), float(bounds["sched"][0] or 0.0)) / 1e6
    width = choose_bin(max(duration_s, 1e-6), max_points)
    width_us = width * 1e6
    base = lazy.select(
        ((pl.col(COL_END) / width_us).floor() * width).alias("t_s"),
        ((pl.col(COL_SCHEDULED) / width_us).floor() * width).alias("t_issue"),
        pl.col(COL_OP),
        ((pl.col(COL_END) - pl.col(COL_SCHEDULED)) / 1000.0).alias("lat"),
        ((pl.col(COL_START) - pl.col(COL_SCHEDULED)) / 1000.0).alias("late"),
    )
    per_op = base.group_by("t_s", COL_OP).agg(_latency_aggs())
    overall = base.group_by("t_s").agg(_latency_aggs()).with_columns(pl.lit(TS_ALL).alias(COL_OP))
    sched_end_s = float(bounds["sched"][0] or 0.0) / 1e6
    issue = base.group_by("t_issue").agg(
        (pl.len() / pl.min_horizontal(pl.lit(width), pl.lit(sched_end_s) - pl.col("t_issue").first()).clip(lower_bound=width * 0.05)).alias("offered_ops_per_s"),
        pl.col("late").quantile(0.5, "linear").alias("lateness_p50_ms"),
        pl.col("late").quantile(0.99, "linear").alias("lateness_p99_ms"),
        pl.col("late").max().alias("lateness_max_ms"),
    )
    frames = collect([per_op, overall.select(per_op.collect_schema().names()), issue], run.samples_path)
    # the last bin may be cut short by the end of the run: rates use the time it actually covers
    end_s = float(bounds["end"][0] or 0.0) / 1e6
    covered = pl.min_horizontal(pl.lit(width), pl.lit(end_s) - pl.col("t_s")).clip(lower_bound=width * 0.05)
    completion = (
        pl.concat([frames[0], frames[1]])
        .rename({COL_OP: "op"})
        .with_columns(pl.col("ops").cast(pl.UInt32), (pl.col("ops").cast(pl.Float64) / covered).alias("throughput_ops_per_s"))
        .select(_empty_completion().columns)
        .sort("op", "t_s")
    )
    issue_frame = frames[2].rename({"t_issue": "t_s"}).select(_empty_issue().columns).sort("t_s")
    return RunSeries(width, completion.cast(_empty_completion().schema), issue_frame.cast(_empty_issue().schema), "samples")


def series_from_timeseries(run: RunData) -> RunSeries:
    """The stored per-second series, for runs without samples (percentiles beyond p99 absent)."""
    stored = run.timeseries()
    if stored is None or stored.height == 0:
        return RunSeries(1.0, _empty_completion(), _empty_issue(), "none")
    cols = set(stored.columns)
    out = stored.select(
        pl.col(TS_SECOND).cast(pl.Float64).alias("t_s"),
        pl.col(TS_OP).cast(pl.String).alias("op"),
        *[
            (pl.col(name) if name in cols else pl.lit(None, dtype=pl.Float64)).alias(name)
            for name in _empty_completion().columns[2:]
        ],
    )
    issue = _empty_issue()
    if "lateness_p99_ms" in cols:
        issue = stored.filter(pl.col(TS_OP).cast(pl.String) == TS_ALL).select(
            pl.col(TS_SECOND).cast(pl.Float64).alias("t_s"),
            pl.lit(None, dtype=pl.Float64).alias("offered_ops_per_s"),
            pl.lit(None, dtype=pl.Float64).alias("lateness_p50_ms"),
            pl.col("lateness_p99_ms").cast(pl.Float64),
            pl.lit(None, dtype=pl.Float64).alias("lateness_max_ms"),
        )
    return RunSeries(1.0, out.cast(_empty_completion().schema).sort("op", "t_s"), issue.sort("t_s"), "timeseries")


def run_series(run: RunData, *, max_points: int = DEFAULT_MAX_POINTS) -> RunSeries:
    """From samples when the run has them, else from ``timeseries.parquet``."""
    if run.has_samples:
        return series_from_samples(run, max_points=max_points)
    return series_from_timeseries(run)
