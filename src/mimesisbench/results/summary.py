"""Summaries and time series derived from the merged raw samples (never from per-worker stats).

Three times per operation, all in milliseconds:

* latency = end - scheduled: what a client of the schedule would see (coordinated omission
  cannot hide a slow server: waiting for an earlier slow operation counts);
* service time = end - actual start: how long the backend took once asked;
* lateness = actual start - scheduled: how far behind the harness issued the operation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import OUTCOME_LABELS
from mimesisbench.results.samples import OP_LABELS

PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}


def _pct(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def _stats(frame: pl.DataFrame, active_s: float | None) -> dict[str, Any]:
    """The statistics of one group of samples."""
    sched = frame["scheduled_us"].to_numpy()
    start = frame["start_us"].to_numpy()
    end = frame["end_us"].to_numpy()
    ok = (frame["outcome"] == "ok").to_numpy()
    latency = (end - sched) / 1000.0
    service = (end - start) / 1000.0
    lateness = (start - sched) / 1000.0
    issued = int(frame.height)
    out: dict[str, Any] = {
        "issued": issued,
        "succeeded": int(ok.sum()),
        "failed": int(issued - ok.sum()),
        "errors": {label: int((frame["outcome"] == label).sum()) for label in OUTCOME_LABELS[1:]},
        "throughput_ops_per_s": (issued / active_s) if active_s else None,
        "mean_ms": float(latency.mean()) if issued else None,
    }
    for key, q in PCTS.items():
        out[f"{key}_ms"] = _pct(latency, q)
    out["max_ms"] = float(latency.max()) if issued else None
    out["service_mean_ms"] = float(service.mean()) if issued else None
    out["service_p50_ms"] = _pct(service, 50.0)
    out["service_p99_ms"] = _pct(service, 99.0)
    out["service_max_ms"] = float(service.max()) if issued else None
    out["lateness_ms"] = {
        "mean": float(lateness.mean()) if issued else None,
        "p50": _pct(lateness, 50.0),
        "p99": _pct(lateness, 99.0),
        "max": float(lateness.max()) if issued else None,
    }
    return out


def summarize(samples: pl.DataFrame, *, scheduled_total: int, complete: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``: overall, per operation (``operations.<op>``) and per type (``types.<id>``)."""
    n = samples.height
    if n:
        first = float(samples["start_us"].min())  # type: ignore[arg-type]
        last = float(samples["end_us"].max())  # type: ignore[arg-type]
        active_ms = max(0.0, (last - first) / 1000.0)
    else:
        active_ms = 0.0
    active_s = active_ms / 1000.0 if active_ms > 0 else None
    overall = _stats(samples, active_s)
    summary: dict[str, Any] = {
        "complete": bool(complete),
        "throughput_ops_per_s": overall["throughput_ops_per_s"] or 0.0,
        "active_time_ms": active_ms,
        "operations_scheduled": int(scheduled_total),
        "operations_issued": n,
        "operations_succeeded": overall["succeeded"],
        "operations_failed": overall["failed"],
        "outcomes": {label: int((samples["outcome"] == label).sum()) for label in OUTCOME_LABELS},
        "latency_ms": {k: overall[k] for k in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")},
        "service_ms": {"mean": overall["service_mean_ms"], "p50": overall["service_p50_ms"], "p99": overall["service_p99_ms"]},
        "lateness_ms": overall["lateness_ms"],
        "operations": {},
        "types": {},
    }
    for label in OP_LABELS:
        group = samples.filter(pl.col("op") == label)
        if group.height:
            summary["operations"][label] = _stats(group, active_s)
    for type_id in sorted(samples["type"].unique().to_list()):
        group = samples.filter(pl.col("type") == type_id)
        summary["types"][str(type_id)] = _stats(group, active_s)
    if extra:
        summary.update(extra)
    return summary


def timeseries(samples: pl.DataFrame) -> pl.DataFrame:
    """Per second of the run (by completion time) and op (plus ``all``): throughput and latency."""
    schema = {
        "second": pl.Int64,
        "op": pl.String,
        "ops": pl.UInt32,
        "throughput_ops_per_s": pl.Float64,
        "latency_p50_ms": pl.Float64,
        "latency_p90_ms": pl.Float64,
        "latency_p99_ms": pl.Float64,
        "latency_max_ms": pl.Float64,
        "lateness_p99_ms": pl.Float64,
    }
    if samples.height == 0:
        return pl.DataFrame(schema=schema)
    base = samples.select(
        (pl.col("end_us") // 1_000_000).cast(pl.Int64).alias("second"),
        pl.col("op").cast(pl.String),
        ((pl.col("end_us") - pl.col("scheduled_us")) / 1000.0).alias("lat"),
        ((pl.col("start_us") - pl.col("scheduled_us")) / 1000.0).alias("late"),
    )
    aggs = [
        pl.len().cast(pl.UInt32).alias("ops"),
        pl.len().cast(pl.Float64).alias("throughput_ops_per_s"),
        pl.col("lat").quantile(0.5, "linear").alias("latency_p50_ms"),
        pl.col("lat").quantile(0.9, "linear").alias("latency_p90_ms"),
        pl.col("lat").quantile(0.99, "linear").alias("latency_p99_ms"),
        pl.col("lat").max().alias("latency_max_ms"),
        pl.col("late").quantile(0.99, "linear").alias("lateness_p99_ms"),
    ]
    per_op = base.group_by("second", "op").agg(aggs)
    overall = base.group_by("second").agg(aggs).with_columns(pl.lit("all").alias("op"))
    return pl.concat([per_op, overall.select(per_op.columns)]).sort("second", "op").cast(schema)  # type: ignore[arg-type]
