"""Time ``mimesisbench report`` on a synthetic one-hour run of ten million operations.

Builds (vectorised with numpy) a run directory in the documented format: ``samples.parquet``
with the engine's schema, ``summary.json`` and ``timeseries.parquet`` from the engine's own
``summarize`` / ``timeseries``, a manifest and config like the coordinator's, and a server-side
``jmx.parquet`` (per-second NameNode-like figures). Then runs the report and prints the seconds
and the size of the HTML page.

    .venv/bin/python bench/bench_report.py [--samples 10000000] [--seconds 3600] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from mimesisbench.results import records, rundir
from mimesisbench.results.hostinfo import host_facts, versions
from mimesisbench.results.samples import SCHEMA, write_samples
from mimesisbench.results.summary import summarize, timeseries

OPS = ("open", "getfileinfo", "list_file", "create", "delete", "rename_file", "mkdirs", "list_dir", "rename_dir")
OP_SHARE = np.array([0.55, 0.2, 0.08, 0.07, 0.05, 0.03, 0.01, 0.008, 0.002])
OP_MEDIAN_MS = np.array([0.35, 0.25, 0.4, 1.2, 0.9, 1.1, 0.8, 0.6, 1.0])


def synthetic_samples(n: int, seconds: float, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    # arrival rate with a slow wave and bursts: sample times by inverse CDF of the rate
    grid = np.linspace(0.0, seconds, 10_001)
    rate = 1.0 + 0.35 * np.sin(grid / seconds * 6 * np.pi) + 0.25 * (rng.random(grid.size) > 0.995)
    cdf = np.concatenate(([0.0], np.cumsum((rate[1:] + rate[:-1]) / 2.0)))
    cdf /= cdf[-1]
    sched_s = np.sort(np.interp(rng.random(n), cdf, grid))
    op_idx = rng.choice(len(OPS), size=n, p=OP_SHARE / OP_SHARE.sum())
    types = rng.integers(1, 13, size=n).astype(np.int16)
    service_ms = OP_MEDIAN_MS[op_idx] * rng.lognormal(0.0, 0.6, size=n)
    # two "GC pauses": everything completing in them waits
    for start in (0.31 * seconds, 0.74 * seconds):
        hit = (sched_s >= start) & (sched_s < start + 4.0)
        service_ms[hit] += (start + 4.0 - sched_s[hit]) * 1000.0 * 0.05
    lateness_ms = rng.exponential(0.05, size=n)
    scheduled_us = sched_s * 1e6
    start_us = scheduled_us + lateness_ms * 1000.0
    end_us = start_us + service_ms * 1000.0
    outcome = np.where(rng.random(n) < 0.0005, "not_found", "ok")
    frame = pl.DataFrame(
        {
            "worker": pl.Series((types - 1).astype(np.int16)),
            "type": pl.Series(types),
            "op": pl.Series(np.asarray(OPS)[op_idx]),
            "seq": pl.Series(np.arange(n, dtype=np.int64)),
            "scheduled_us": pl.Series(scheduled_us),
            "start_us": pl.Series(start_us),
            "end_us": pl.Series(end_us),
            "outcome": pl.Series(outcome),
        }
    )
    return frame.cast(SCHEMA).sort("start_us", "seq")  # type: ignore[arg-type]


def jmx_series(seconds: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 1)
    t = np.arange(seconds, dtype=np.int64)
    return pl.DataFrame(
        {
            "second": t,
            "RpcQueueTimeAvgTime": 0.2 + np.abs(rng.normal(0, 0.05, seconds)),
            "CallQueueLength": rng.poisson(3, seconds).astype(np.int64),
            "HeapMemoryUsedMB": 800 + 200 * np.sin(t / 600.0) + rng.normal(0, 10, seconds),
        }
    )


def build_run(parent: Path, n: int, seconds: float, seed: int) -> Path:
    run_dir = parent / "20260101T000000Z-bench01"
    run_dir.mkdir(parents=True)
    samples = synthetic_samples(n, seconds, seed)
    write_samples(samples, run_dir / rundir.SAMPLES)
    timeseries(samples).write_parquet(run_dir / rundir.TIMESERIES)
    summary = summarize(samples, scheduled_total=n, complete=True, extra={"status": "complete", "message": "", "time_scale": 1.0})
    records.write_summary(run_dir, summary)
    records.write_config(run_dir, {"schedule": "/synthetic/schedule", "backend": "null", "time_scale": 1.0, "workers": 12})
    per_op = {op: int((samples["op"] == op).sum()) for op in OPS}
    manifest = {
        "tool": "mimesisbench",
        "versions": versions(),
        "host": host_facts(),
        "backend": {"scheme": "null", "url": "null"},
        "schedule": {
            "path": "/synthetic/schedule",
            "events": n,
            "namespace_hash": "bench" * 8,
            "manifest": {"profile": {"hash": "synthetic", "name": "bench"}, "seed": seed, "window_ms": int(seconds * 1000), "counts": {"events": n, "per_op": per_op}},
        },
        "profile_hash": "synthetic",
        "seed": seed,
        "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T01:00:00+00:00",
        "complete": True,
        "status": "complete",
        "warnings": [f"{summary['operations_failed']:,} operations failed (see outcomes in summary.json)"],
    }
    records.write_manifest(run_dir, manifest)
    jmx_series(int(seconds), seed).write_parquet(run_dir / "jmx.parquet")
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=None, help="Where to build (default: a temporary directory).")
    parser.add_argument("--keep", action="store_true", help="Keep the run directory and the report.")
    args = parser.parse_args()

    from mimesisbench.report.build import build_report

    work = args.work or Path(tempfile.mkdtemp(prefix="mimesisbench-bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        began = time.perf_counter()
        run_dir = build_run(work / "runs", args.samples, args.seconds, args.seed)
        print(f"built {args.samples:,} samples over {args.seconds:g} s in {time.perf_counter() - began:.1f} s: {run_dir}")
        size = (run_dir / rundir.SAMPLES).stat().st_size
        print(f"samples.parquet: {size / 1e6:.1f} MB")
        began = time.perf_counter()
        result = build_report([run_dir], work / "report")
        seconds = time.perf_counter() - began
        print(f"report: {seconds:.2f} s, index.html {result.html_bytes / 1e6:.2f} MB, {len(result.figure_files)} figure files")
        print(f"report written to {result.html_path}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
