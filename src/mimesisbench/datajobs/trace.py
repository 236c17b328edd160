"""The data jobs' client I/O trace and what a run's summary says of it.

``merge_data_parts`` gathers the tasks' part files into one table, written to the run directory
as ``data_calls.parquet``, one row per call (the IOScope view of an application's I/O):

=============  ========  =====================================================================
column         type      meaning
=============  ========  =====================================================================
job            String    the data job's name
layout         String    ``n-n``, ``n-1-segmented`` or ``n-1-strided``
task           Int32     the task (0 .. tasks-1)
pass           Int32     the task's pass (0, 1, ...): a pass writes the layout, then reads it
op             String    ``write``, ``read`` or ``fsync``
path           String    the file, relative to the data directory
offset         Int64     bytes from the file's start
size           Int64     bytes asked for (0 for fsync)
done           Int64     bytes moved
start_ns       Int64     when the call began, ns after the run's barrier
end_ns         Int64     when it returned
errno          Int32     0, or the error the call failed with
=============  ========  =====================================================================

``data_summary`` is the ``data`` section of ``summary.json``: per job and op the calls, bytes,
the time the op was under way (``span_s``: the union over tasks of each pass's interval of that
op, from its first call's start to its last call's end, as IOR times a write or read phase), the
bandwidth over that time (MiB/s), and the calls' latency (mean, p50, p99 in ms); ``data_bandwidth_series`` the MiB moved
per second of the run, per job and op (a call's bytes counted in the second it ended).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import polars as pl

from mimesisbench.datajobs.layout import file_name
from mimesisbench.datajobs.spec import DataJob

CALL_OPS = ("write", "read", "fsync")
MIB = 1024.0**2
SCHEMA: dict[str, Any] = {
    "job": pl.String, "layout": pl.String, "task": pl.Int32, "pass": pl.Int32, "op": pl.String, "path": pl.String,
    "offset": pl.Int64, "size": pl.Int64, "done": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
    "errno": pl.Int32,
}


def merge_data_parts(parts: Iterable[tuple[DataJob, int, Path | IO[bytes]]]) -> pl.DataFrame:
    """One table of every call of ``parts`` (job, task, part file), in time order."""
    frames = []
    for job, task, part in parts:
        with np.load(part) as data:
            arrays = {name: data[name] for name in data.files}
        n = int(arrays["op"].size)
        names = np.array([file_name(job, t) for t in range(job.tasks)] if not job.shared else [file_name(job, 0)])
        frames.append(pl.DataFrame({
            "job": [job.name] * n, "layout": [job.layout] * n, "task": np.full(n, task, np.int32),
            "pass": arrays["pass_no"].astype(np.int32),
            "op": np.array(CALL_OPS)[arrays["op"].astype(np.int64)], "path": names[arrays["file_no"].astype(np.int64)],
            "offset": arrays["offset"], "size": arrays["size"], "done": arrays["done"],
            "start_ns": arrays["start_ns"], "end_ns": arrays["end_ns"], "errno": arrays["errno"].astype(np.int32),
        }, schema=SCHEMA))
    if not frames:
        return pl.DataFrame(schema=SCHEMA)
    return pl.concat(frames).sort(["start_ns", "job", "task"])


def data_summary(calls: pl.DataFrame, jobs: Sequence[DataJob]) -> dict[str, Any]:
    """The ``data`` section of a run's summary (module docstring)."""
    out: dict[str, Any] = {"jobs": {}}
    for job in jobs:
        mine = calls.filter(pl.col("job") == job.name)
        ops: dict[str, Any] = {}
        for op in (*job.ops, *(("fsync",) if job.fsync and "write" in job.ops else ())):
            these = mine.filter(pl.col("op") == op)
            if these.height == 0:
                ops[op] = {"calls": 0, "bytes": 0, "span_s": 0.0, "bandwidth_mib_s": 0.0, "latency_ms": None}
                continue
            span_ns = busy_ns(these)
            moved = int(these["done"].sum())
            latency = (these["end_ns"] - these["start_ns"]).to_numpy() / 1e6
            ops[op] = {
                "calls": these.height,
                "failed": int((these["errno"] != 0).sum()),
                "bytes": moved,
                "span_s": span_ns / 1e9,
                "bandwidth_mib_s": moved / MIB / (span_ns / 1e9) if span_ns > 0 else 0.0,
                "latency_ms": {
                    "mean": float(latency.mean()),
                    "p50": float(np.percentile(latency, 50)),
                    "p99": float(np.percentile(latency, 99)),
                },
            }
        out["jobs"][job.name] = {"job": job.describe(), "ops": ops}
    return out


def data_bandwidth_series(calls: pl.DataFrame, bin_s: float = 1.0) -> pl.DataFrame:
    """MiB moved per ``bin_s`` of the run, per job and op (by the second each call ended)."""
    moving = calls.filter(pl.col("op") != "fsync")
    if moving.height == 0:
        return pl.DataFrame(schema={"job": pl.String, "op": pl.String, "t_s": pl.Float64, "mib_s": pl.Float64})
    width = int(bin_s * 1e9)
    return (
        moving.with_columns((pl.col("end_ns") // width).alias("bin"))
        .group_by(["job", "op", "bin"])
        .agg(pl.col("done").sum().alias("bytes"))
        .with_columns((pl.col("bin") * bin_s).cast(pl.Float64).alias("t_s"), (pl.col("bytes") / MIB / bin_s).alias("mib_s"))
        .select("job", "op", "t_s", "mib_s")
        .sort(["job", "op", "t_s"])
    )


def busy_ns(calls: pl.DataFrame) -> int:
    """How long ``calls`` (of one op) were under way: the union of each task's passes' intervals
    (first start to last end of the op in that pass). A task that writes and then reads back
    counts only its writing time as the write's, as IOR times its write phase."""
    phases = calls.group_by(["task", "pass"]).agg(pl.col("start_ns").min().alias("a"), pl.col("end_ns").max().alias("b"))
    spans = phases.sort("a").select("a", "b").to_numpy()
    total, end = 0, None
    for a, b in spans.tolist():
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return int(total)

