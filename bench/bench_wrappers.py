"""The wrapping backends' figures (issue 17): a delay's measured service time, and a rate limit
shared by the workers of a run.

* ``delay:2ms+null``: p50 service time of a paced run (Poisson arrivals), beside the plain
  ``null`` run's in the same process (the harness's own cost per operation, the reference).
  Bar: within 5 % of 2 ms.
* ``rate:R+null`` with 2 workers replaying as fast as possible: the rate reached over the run
  (operations between the first start and the last, per second). Bar: within 2 % of R.

    .venv/bin/python bench/bench_wrappers.py [--delay-ms 2] [--rate 2000] [--ops 12000]
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

PHASES = (OpCode.OPEN, OpCode.GETFILEINFO)


def _samples(root: Path, name: str, backend: str, schedule: Path, **kw: object) -> pl.DataFrame:
    config = RunConfig(schedule=str(schedule), backend=backend, out=str(root / name), workers=2, **kw)  # type: ignore[arg-type]
    report = run_benchmark(config, show_progress=False)
    if not report.complete:
        raise SystemExit(f"{backend}: run incomplete: {report.message}")
    return pl.read_parquet(report.run_dir / "samples.parquet")


def _p50_service_ms(samples: pl.DataFrame) -> float:
    return float(((samples["end_us"] - samples["start_us"]) / 1000).median())  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay-ms", type=float, default=2.0)
    ap.add_argument("--rate", type=float, default=2000.0, help="ops/s for the whole run")
    ap.add_argument("--ops", type=int, default=12_000, help="operations of the rate run")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-wrappers-") as tmp:
        root = Path(tmp)
        paced = write_phased_schedule(root / "paced", types=2, files_per_type=500, phases=PHASES, rate_per_s=200.0)
        plain = _p50_service_ms(_samples(root, "null", "null", paced))
        delayed = _p50_service_ms(_samples(root, "delay", f"delay:{args.delay_ms:g}ms+null", paced))
        err = delayed / args.delay_ms - 1
        ok &= abs(err) <= 0.05
        print(f"delay:{args.delay_ms:g}ms+null, 2 workers, 2,000 ops at 200/s: p50 service time {delayed:.3f} ms "
              f"({err:+.1%} of {args.delay_ms:g} ms; bar 5 %: {'PASS' if abs(err) <= 0.05 else 'FAIL'}); "
              f"plain null p50 {plain * 1000:.1f} µs (the harness's own), delay - null {delayed - plain:.3f} ms")

        fast = write_phased_schedule(root / "fast", types=2, files_per_type=args.ops // 4, phases=PHASES)
        samples = _samples(root, "rate", f"rate:{args.rate:g}+null", fast, time_scale=0.0, max_drift_s=None)
        span_s = float(samples["start_us"].max() - samples["start_us"].min()) / 1e6  # type: ignore[operator]
        reached = (samples.height - 1) / span_s
        err = reached / args.rate - 1
        ok &= abs(err) <= 0.02
        shares = samples.group_by("worker").len().sort("worker")["len"].to_list()
        print(f"rate:{args.rate:g}+null, 2 workers as fast as possible, {samples.height:,} ops: {reached:,.1f} ops/s "
              f"({err:+.2%} of {args.rate:g}; bar 2 %: {'PASS' if abs(err) <= 0.02 else 'FAIL'}); "
              f"per worker {shares} (one bucket: the split is whatever each worker won)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
