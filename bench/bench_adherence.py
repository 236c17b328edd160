"""Schedule adherence: at half the posix backend's measured capacity, p99 lateness <= 1 ms.

1. capacity: random reads (open, getfileinfo, list_file) of pre-existing files on /dev/shm,
   replayed as fast as possible (time scale 0) by one worker;
2. the same kind of schedule with Poisson arrivals at half that rate, replayed in real time;
   lateness = actual start - scheduled time, over every operation.

    .venv/bin/python bench/bench_adherence.py [--seconds 10] [--files 20000] [--concurrency N]
        [--lanes default|native|python|both] [--rate OPS_PER_S]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_random_access_schedule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lanes_switch import LANE_MODES, lanes_mode  # noqa: E402

TARGET_P99_MS = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the paced run")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=None, help="lanes per worker (default: the backend's)")
    parser.add_argument("--shm", default="/dev/shm")
    parser.add_argument("--rate", type=float, default=None,
                        help="offered ops/s (default: half the capacity measured first); compares lanes at one load")
    parser.add_argument("--lanes", choices=LANE_MODES, default="default",
                        help="replay lanes: native (Rust), python, both (one run each), default (per MIMESISBENCH_NATIVE)")
    args = parser.parse_args()
    code = lanes_mode(__file__, sys.argv[1:], args.lanes)
    if code is not None:
        return code
    tmp = Path(tempfile.mkdtemp(prefix="bench-adherence-"))
    shm = Path(tempfile.mkdtemp(prefix="bench-adherence-", dir=args.shm))
    try:
        capacity = float("nan")
        if args.rate is None:
            probe = write_random_access_schedule(
                tmp / "capacity", types=1, files_per_type=args.files, events=200_000, rate_per_s=1e9, seed=1
            )
            cap = run_benchmark(
                RunConfig(schedule=str(probe), backend=f"posix:{shm / 'base'}", out=str(tmp / "runs"), time_scale=0.0,
                          concurrency=args.concurrency),
                show_progress=False,
            )
            capacity = cap.summary["throughput_ops_per_s"]
        rate = capacity / 2 if args.rate is None else args.rate
        paced = write_random_access_schedule(
            tmp / "paced", types=1, files_per_type=args.files, events=int(rate * args.seconds), rate_per_s=rate, seed=2
        )
        run = run_benchmark(
            RunConfig(schedule=str(paced), backend=f"posix:{shm / 'base2'}", out=str(tmp / "runs"), time_scale=1.0,
                      concurrency=args.concurrency),
            show_progress=False,
        )
        late = run.summary["lateness_ms"]
        summary = json.loads((run.run_dir / "summary.json").read_text())
        summary_lanes = json.loads((run.run_dir / "manifest.json").read_text()).get("lane_impl", [])
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"lane implementation: {', '.join(summary_lanes)}")
    print(f"capacity (time scale 0, 1 worker): {capacity:,.0f} ops/s")
    print(f"offered {rate:,.0f} ops/s for {args.seconds:g} s: achieved {summary['throughput_ops_per_s']:,.0f} ops/s, "
          f"{summary['operations_issued']:,} ops, complete={run.complete}")
    print(f"lateness ms: p50 {late['p50']:.4f}  p99 {late['p99']:.4f}  max {late['max']:.3f}")
    passed = run.complete and late["p99"] <= TARGET_P99_MS
    print(f"p99 lateness {late['p99']:.4f} ms (target <= {TARGET_P99_MS} ms): {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
