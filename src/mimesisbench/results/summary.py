"""Summaries and time series derived from the merged raw samples (never from per-worker stats).

Three times per operation, all in milliseconds:

* latency = end - scheduled: what a client of the schedule would see (coordinated omission
  cannot hide a slow server: waiting for an earlier slow operation counts);
* service time = end - actual start: how long the backend took once asked;
* lateness = actual start - scheduled: how far behind the harness issued the operation.

Each is summarised the same way (``mean, p50, p90, p99, p999, max``: :class:`~mimesisbench.results.records.Times`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import OUTCOME_LABELS
from mimesisbench.backends.commands import CommandPlan
from mimesisbench.results.records import RECORD_VERSION, GroupStats, RunSummary, Times
from mimesisbench.results.samples import OP_LABELS

PCTS = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}


def _times(values: np.ndarray) -> Times:
    """Mean, percentiles and maximum of one group of times (ms); all None without samples."""
    if not values.size:
        return Times()
    pcts = {key: float(np.percentile(values, q)) for key, q in PCTS.items()}
    return Times(mean=float(values.mean()), max=float(values.max()), **pcts)


def _stats(frame: pl.DataFrame, active_s: float | None) -> GroupStats:
    """The statistics of one group of samples."""
    sched = frame["scheduled_us"].to_numpy()
    start = frame["start_us"].to_numpy()
    end = frame["end_us"].to_numpy()
    ok = (frame["outcome"] == "ok").to_numpy()
    issued = int(frame.height)
    return GroupStats(
        issued=issued,
        succeeded=int(ok.sum()),
        failed=int(issued - ok.sum()),
        errors={label: int((frame["outcome"] == label).sum()) for label in OUTCOME_LABELS[1:]},
        throughput_ops_per_s=(issued / active_s) if active_s else None,
        latency_ms=_times((end - sched) / 1000.0),
        service_ms=_times((end - start) / 1000.0),
        lateness_ms=_times((start - sched) / 1000.0),
    )


def summarize_record(
    samples: pl.DataFrame,
    *,
    scheduled_total: int,
    complete: bool,
    extra: dict[str, Any] | None = None,
    commands: CommandPlan | None = None,
) -> RunSummary:
    """The run's :class:`RunSummary`: overall, per operation and per file type.

    ``extra`` sets further fields of the record (``status``, ``message``, ``time_scale``, ``workers``);
    ``commands`` what the backend skipped (not issued) and mapped (``skipped``, ``mapped``,
    ``operations_skipped``).
    """
    n = samples.height
    if n:
        first = float(samples["start_us"].min())  # type: ignore[arg-type]
        last = float(samples["end_us"].max())  # type: ignore[arg-type]
        active_ms = max(0.0, (last - first) / 1000.0)
    else:
        active_ms = 0.0
    active_s = active_ms / 1000.0 if active_ms > 0 else None
    overall = _stats(samples, active_s)
    # one partition of the samples, not a scan per operation (format 2 has 40 of them)
    by_op = {str(key[0]): group for key, group in samples.partition_by("op", as_dict=True).items()} if n else {}
    operations = {label: _stats(by_op[label], active_s) for label in OP_LABELS if label in by_op}
    types = {}
    for type_id in sorted(samples["type"].unique().to_list()):
        types[str(type_id)] = _stats(samples.filter(pl.col("type") == type_id), active_s)
    fields: dict[str, Any] = {
        "version": RECORD_VERSION,
        "complete": bool(complete),
        "throughput_ops_per_s": overall.throughput_ops_per_s or 0.0,
        "active_time_ms": active_ms,
        "operations_scheduled": int(scheduled_total),
        "operations_issued": n,
        "operations_succeeded": overall.succeeded,
        "operations_failed": overall.failed,
        "outcomes": {label: int((samples["outcome"] == label).sum()) for label in OUTCOME_LABELS},
        "latency_ms": overall.latency_ms,
        "service_ms": overall.service_ms,
        "lateness_ms": overall.lateness_ms,
        "operations": operations,
        "types": types,
    }
    if commands is not None:
        fields.update(
            operations_skipped=commands.operations_skipped, skipped=dict(commands.skipped), mapped=dict(commands.mapped)
        )
    fields.update(extra or {})
    return RunSummary.model_validate(fields)


def summarize(
    samples: pl.DataFrame,
    *,
    scheduled_total: int,
    complete: bool,
    extra: dict[str, Any] | None = None,
    commands: CommandPlan | None = None,
) -> dict[str, Any]:
    """``summary.json`` as a JSON-ready dict (see :class:`RunSummary` for its keys)."""
    record = summarize_record(
        samples, scheduled_total=scheduled_total, complete=complete, extra=extra, commands=commands
    )
    return record.model_dump(mode="json")


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
