"""The data jobs of a run (``run --data-job``): their figures from ``summary.json`` and, from
``data_calls.parquet``, what the report draws of their calls.

A run of an hour can hold millions of calls, so nothing here keeps them all: only the columns
needed are read; the bandwidth is binned (``datajobs.trace.data_bandwidth_series``); latencies
go to the log-spaced bins of ``analysis.histogram`` (a few hundred counts per job and op); and
the access-pattern view (offset in the file over time, per task) gets an even sample of at most
:data:`OFFSET_SAMPLE` reads and writes per job, every k-th call in time order, so that its
shape (sequential, strided, interleaved tasks) survives while the figure stays small. fsync
calls are few (one per task and pass) and are all kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.analysis.histogram import Histogram, bin_edges, bin_expr
from mimesisbench.datajobs.trace import MIB, data_bandwidth_series
from mimesisbench.results.load import (
    DATA_DONE,
    DATA_END,
    DATA_JOB,
    DATA_LAYOUT,
    DATA_OFFSET,
    DATA_OP,
    DATA_START,
    DATA_TASK,
    RunData,
    collect,
)

#: width of the bandwidth bins (s): the per-second view IOR users know
DATA_BIN_S = 1.0
#: reads and writes drawn per job in the offset figure, at most
OFFSET_SAMPLE = 50_000
#: the op of a call that moves no bytes (drawn as a tick, not as an offset)
FSYNC = "fsync"
#: what the latency histograms measure: a call's own duration (end minus start)
KIND_CALL = "call"


@dataclass(frozen=True)
class DataOpStats:
    """One row of the data-jobs table: a job's op as ``summary.json`` tells it."""

    job: str
    layout: str
    tasks: int | None
    op: str
    calls: int
    failed: int
    bytes: int
    span_s: float | None
    bandwidth_mib_s: float | None
    latency_mean_ms: float | None
    latency_p50_ms: float | None
    latency_p99_ms: float | None

    @property
    def moves_bytes(self) -> bool:
        """Reads and writes move bytes; an fsync's 0 bytes and 0 MiB/s are no measurement."""
        return self.op != FSYNC

    @property
    def mib(self) -> float:
        return self.bytes / MIB


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _op_stats(job: str, spec: dict[str, Any], op: str, figures: dict[str, Any]) -> DataOpStats:
    latency = _dict(figures.get("latency_ms"))  # None when the op made no call
    tasks = spec.get("tasks")
    return DataOpStats(
        job=job,
        layout=str(spec.get("layout") or "?"),
        tasks=tasks if isinstance(tasks, int) and not isinstance(tasks, bool) else None,
        op=op,
        calls=_count(figures.get("calls")),
        failed=_count(figures.get("failed")),  # absent when the op made no call
        bytes=_count(figures.get("bytes")),
        span_s=_number(figures.get("span_s")),
        bandwidth_mib_s=_number(figures.get("bandwidth_mib_s")),
        latency_mean_ms=_number(latency.get("mean")),
        latency_p50_ms=_number(latency.get("p50")),
        latency_p99_ms=_number(latency.get("p99")),
    )


def data_op_stats(run: RunData) -> list[DataOpStats]:
    """Every job's ops in the order the summary gives them (the order of the command line); empty
    for a run without data jobs. Read defensively: the section is a dict, not a typed record."""
    rows = []
    for name, entry in _dict(_dict(run.summary.data).get("jobs")).items():
        spec = _dict(_dict(entry).get("job"))
        ops = _dict(_dict(entry).get("ops"))
        rows += [_op_stats(str(name), spec, str(op), figures) for op, figures in ops.items() if isinstance(figures, dict)]
    return rows


@dataclass(frozen=True)
class OffsetSample:
    """Where one job's calls fell in its file(s), over time.

    ``moves``: ``task, op, t_s, offset_mib`` of the sampled reads and writes (``t_s``: the call's
    start, seconds after the start barrier, as in every other figure). ``every``: one call in
    ``every`` is kept (1: all). ``fsync_t_s``: the start of every fsync call.
    """

    job: str
    layout: str
    tasks: int
    calls: int
    every: int
    moves: pl.DataFrame
    fsync_t_s: np.ndarray

    @property
    def sampled(self) -> bool:
        return self.every > 1


@dataclass(frozen=True)
class RunDataCalls:
    """What the report draws of a run's data calls.

    ``bandwidth``: ``job, op, t_s, mib_s`` per :data:`DATA_BIN_S` bin (``t_s`` its start; by the
    second a call ended; zero for the idle bins between an op's first and last); ``offsets``: one :class:`OffsetSample` per job; ``latency``: one histogram of the
    calls' durations per job and op, its group ``"<job> <op>"``.
    """

    bin_s: float
    bandwidth: pl.DataFrame
    offsets: list[OffsetSample]
    latency: list[Histogram]


def _with_idle_bins(series: pl.DataFrame, bin_s: float) -> pl.DataFrame:
    """``series`` with a zero row for every bin without a call between a job's op's first and
    last bin: a job idle between passes moved nothing then, which a line must not hide."""
    if series.height == 0:
        return series
    bins = series.with_columns((pl.col("t_s") / bin_s).round().cast(pl.Int64).alias("bin"))
    spans = bins.group_by("job", "op", maintain_order=True).agg(pl.int_range(pl.col("bin").min(), pl.col("bin").max() + 1).alias("bin"))
    full = spans.explode("bin").join(bins, on=["job", "op", "bin"], how="left")
    return full.select(
        "job", "op", (pl.col("bin") * bin_s).cast(pl.Float64).alias("t_s"), pl.col("mib_s").fill_null(0.0)
    ).sort("job", "op", "t_s")


def _sampled_moves(lazy: pl.LazyFrame, limit: int) -> pl.LazyFrame:
    """Every k-th read or write of each job in time order, k the smallest keeping ``limit``."""
    moves = lazy.filter(pl.col(DATA_OP) != FSYNC).sort(DATA_START, maintain_order=True)
    rank = pl.int_range(pl.len()).over(DATA_JOB)
    every = ((pl.len().over(DATA_JOB) + limit - 1) // limit).clip(lower_bound=1)
    return moves.with_columns(rank.alias("rank"), every.alias("every"), pl.len().over(DATA_JOB).alias("calls")).filter(
        pl.col("rank") % pl.col("every") == 0
    ).select(
        DATA_JOB,
        DATA_LAYOUT,
        DATA_TASK,
        DATA_OP,
        (pl.col(DATA_START) / 1e9).alias("t_s"),
        (pl.col(DATA_OFFSET) / MIB).alias("offset_mib"),
        "every",
        "calls",
    )


def _latency_bins(lazy: pl.LazyFrame) -> pl.LazyFrame:
    duration_ms = (pl.col(DATA_END) - pl.col(DATA_START)) / 1e6
    return lazy.select(DATA_JOB, DATA_OP, bin_expr(duration_ms).alias("bin")).group_by(DATA_JOB, DATA_OP, "bin").agg(pl.len().alias("n"))


def _histograms(frame: pl.DataFrame) -> list[Histogram]:
    out = []
    for (job, op), part in frame.sort(DATA_JOB, DATA_OP, "bin").group_by(DATA_JOB, DATA_OP, maintain_order=True):
        lower, upper = bin_edges(part["bin"].to_numpy().astype(np.float64))
        out.append(Histogram(f"{job} {op}", KIND_CALL, lower, upper, part["n"].to_numpy().astype(np.int64)))
    return out


def _offset_samples(moves: pl.DataFrame, fsyncs: pl.DataFrame, tasks: dict[str, int]) -> list[OffsetSample]:
    jobs = list(dict.fromkeys([*tasks, *moves[DATA_JOB].to_list(), *fsyncs[DATA_JOB].to_list()]))
    out = []
    for job in jobs:
        mine = moves.filter(pl.col(DATA_JOB) == job)
        ticks = fsyncs.filter(pl.col(DATA_JOB) == job)
        layouts = mine[DATA_LAYOUT].to_list() or ticks[DATA_LAYOUT].to_list() or ["?"]
        seen = int(mine[DATA_TASK].to_numpy().max()) + 1 if mine.height else 1
        out.append(
            OffsetSample(
                job=job,
                layout=str(layouts[0]),
                tasks=tasks.get(job, seen),
                calls=int(mine["calls"][0]) if mine.height else 0,
                every=int(mine["every"][0]) if mine.height else 1,
                moves=mine.select(DATA_TASK, DATA_OP, "t_s", "offset_mib"),
                fsync_t_s=ticks["t_s"].to_numpy(),
            )
        )
    return out


def run_data_calls(run: RunData, *, offset_sample: int = OFFSET_SAMPLE) -> RunDataCalls | None:
    """Bandwidth, offset samples and latency histograms of ``run``'s data calls, in one pass over
    the file; None when the run has no ``data_calls.parquet``."""
    if not run.has_data_calls:
        return None
    lazy = run.scan_data_calls()
    frames = collect(
        [
            lazy.select(DATA_JOB, DATA_OP, DATA_DONE, DATA_END),
            _sampled_moves(lazy, max(offset_sample, 1)),
            lazy.filter(pl.col(DATA_OP) == FSYNC).select(DATA_JOB, DATA_LAYOUT, (pl.col(DATA_START) / 1e9).alias("t_s")),
            _latency_bins(lazy),
        ],
        run.data_calls_path,
    )
    bandwidth_calls, moves, fsyncs, latency = frames
    tasks = {row.job: row.tasks for row in data_op_stats(run) if row.tasks is not None}
    return RunDataCalls(
        bin_s=DATA_BIN_S,
        bandwidth=_with_idle_bins(data_bandwidth_series(bandwidth_calls, DATA_BIN_S), DATA_BIN_S),
        offsets=_offset_samples(moves, fsyncs, tasks),
        latency=_histograms(latency),
    )
