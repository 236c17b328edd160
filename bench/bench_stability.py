"""Stability: the same schedule replayed 5 times; coefficient of variation of throughput < 2%.

Each repetition gets a fresh base directory on /dev/shm (phase 1 rebuilds the namespace; only
phase 2 is measured). The default replays a paced schedule (Poisson arrivals at --rate) in real
time, as a MimesisBench run is used; ``--time-scale 0`` instead measures the CV of the
as-fast-as-possible capacity, which mostly reflects how quiet the machine is.

    .venv/bin/python bench/bench_stability.py [--runs 5] [--rate 20000] [--seconds 5] [--time-scale 1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_random_access_schedule

TARGET_CV = 0.02


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate", type=float, default=20_000.0, help="offered operations per second")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--shm", default="/dev/shm")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-stability-"))
    shm = Path(tempfile.mkdtemp(prefix="bench-stability-", dir=args.shm))
    rows = []
    try:
        schedule = write_random_access_schedule(
            tmp / "schedule", types=1, files_per_type=args.files, events=int(args.rate * args.seconds),
            rate_per_s=args.rate, seed=3,
        )
        for i in range(args.runs):
            report = run_benchmark(
                RunConfig(schedule=str(schedule), backend=f"posix:{shm / f'base{i}'}", out=str(tmp / "runs"),
                          time_scale=args.time_scale),
                show_progress=False,
            )
            s = report.summary
            rows.append((s["throughput_ops_per_s"], s["latency_ms"]["p99"], s["lateness_ms"]["p99"], report.complete))
            print(f"  run {i + 1}: {s['throughput_ops_per_s']:,.1f} ops/s, latency p99 {s['latency_ms']['p99']:.3f} ms, "
                  f"lateness p99 {s['lateness_ms']['p99']:.3f} ms, complete={report.complete}", flush=True)
            shutil.rmtree(shm / f"base{i}", ignore_errors=True)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    tputs = [r[0] for r in rows]
    mean = statistics.fmean(tputs)
    cv = statistics.stdev(tputs) / mean if len(tputs) > 1 else 0.0
    p99s = [r[1] for r in rows]
    print(f"{args.runs} runs, time scale {args.time_scale:g}, offered {args.rate:,.0f} ops/s for {args.seconds:g} s")
    print(f"throughput mean {mean:,.1f} ops/s, CV {cv * 100:.3f}%; latency p99 mean {statistics.fmean(p99s):.3f} ms "
          f"(CV {statistics.stdev(p99s) / statistics.fmean(p99s) * 100 if len(p99s) > 1 and statistics.fmean(p99s) else 0:.1f}%)")
    passed = all(r[3] for r in rows) and cv < TARGET_CV
    print(f"throughput CV {cv * 100:.3f}% (target < {TARGET_CV * 100:.0f}%): {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
