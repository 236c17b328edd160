"""Harness ceiling: scheduled operations per second per worker process on the null backend.

Time scale 0 (no pacing), recording on (every sample is kept and merged into samples.parquet).
Target: >= 1,000,000 operations per second per worker process.

    .venv/bin/python bench/bench_null.py [--events 2000000] [--workers 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import polars as pl

from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

TARGET = 1_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000, help="events per worker")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (one file type each)")
    parser.add_argument("--concurrency", type=int, default=1, help="lanes per worker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-null-") as tmp:
        root = Path(tmp)
        files = args.events // 2
        schedule = write_phased_schedule(
            root / "schedule", types=args.workers, files_per_type=files, phases=(OpCode.OPEN, OpCode.GETFILEINFO)
        )
        config = RunConfig(
            schedule=str(schedule), backend="null", out=str(root / "runs"), time_scale=0.0,
            concurrency=args.concurrency,
        )
        report = run_benchmark(config, show_progress=False)
        samples = pl.read_parquet(report.run_dir / "samples.parquet")
    per_worker = samples.group_by("worker").agg(
        pl.len().alias("ops"), ((pl.col("end_us").max() - pl.col("start_us").min()) / 1e6).alias("seconds")
    ).sort("worker").with_columns((pl.col("ops") / pl.col("seconds")).alias("ops_per_s"))
    print(f"null backend, time scale 0, {args.workers} worker(s), {args.concurrency} lane(s), recording on")
    for w, ops, secs, rate in per_worker.iter_rows():
        print(f"  worker {w}: {ops:,} ops in {secs:.3f} s = {rate:,.0f} ops/s")
    worst = float(per_worker["ops_per_s"].min())
    print(f"complete={report.complete}  samples={samples.height:,}  min per-worker rate {worst:,.0f} ops/s "
          f"(target {TARGET:,}): {'PASS' if worst >= TARGET else 'FAIL'}")
    return 0 if report.complete and worst >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
