"""POSIX backend vs a minimal C program making the same system calls in a tight loop.

Both run on /dev/shm (tmpfs), with the same number of processes, in the same script run. Per
phase (create, open, getfileinfo = lstat, delete) and per worker, MimesisBench's rate should be at
least 80% of the C program's. The verdict uses the best rate of each side over the repetitions;
the median of the per-run ratios is printed too (steadier on a shared machine).

    .venv/bin/python bench/bench_posix.py [--files 100000] [--workers 1] [--concurrency 1]
        [--lanes default|native|python|both]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lanes_switch import LANE_MODES, lanes_mode  # noqa: E402

HERE = Path(__file__).resolve().parent
PHASES = ("create", "open", "getfileinfo", "delete")  # getfileinfo = lstat, as list_file
TARGET = 0.80


def build_c(out: Path) -> Path:
    exe = out / "posix_loop"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(HERE / "c" / "posix_loop.c")], check=True)
    return exe


def run_c(exe: Path, shm: Path, workers: int, files: int) -> dict[str, float]:
    """Per-phase rate per process (mean over processes) of the C loop, all processes at once."""
    procs = []
    for w in range(workers):
        d = shm / f"c{w}"
        d.mkdir()
        procs.append(subprocess.Popen([str(exe), str(d), str(files), str(w + 1)], stdout=subprocess.PIPE, text=True))
    rates: dict[str, list[float]] = {p: [] for p in PHASES}
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"posix_loop failed: {out}")
        for line in out.splitlines():
            parts = line.split()
            if parts[0] in rates:
                rates[parts[0]].append(float(parts[3]))
    return {p: sum(v) / len(v) for p, v in rates.items()}


def run_mimesis(
    shm: Path, tmp: Path, workers: int, files: int, concurrency: int
) -> tuple[dict[str, float], bool, list[str]]:
    tmp.mkdir(parents=True, exist_ok=True)
    schedule = write_phased_schedule(tmp / "schedule", types=workers, files_per_type=files)
    config = RunConfig(
        schedule=str(schedule), backend=f"posix:{shm / 'mimesis'}", out=str(tmp / "runs"), time_scale=0.0,
        concurrency=concurrency,
    )
    report = run_benchmark(config, show_progress=False)
    samples = pl.read_parquet(report.run_dir / "samples.parquet")
    bad = samples.filter(pl.col("outcome") != "ok").height
    rates = (
        samples.group_by("worker", "op")
        .agg(pl.len().alias("n"), ((pl.col("end_us").max() - pl.col("start_us").min()) / 1e6).alias("s"))
        .with_columns((pl.col("n") / pl.col("s")).alias("rate"))
        .group_by("op")
        .agg(pl.col("rate").mean())
    )
    by_op = {str(op): float(rate) for op, rate in rates.iter_rows()}
    lanes = json.loads((report.run_dir / "manifest.json").read_text()).get("lane_impl", [])
    return {p: by_op.get(p, 0.0) for p in PHASES}, report.complete and bad == 0, lanes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000, help="files per worker")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1, help="lanes per worker (the C loop has one)")
    parser.add_argument("--shm", default="/dev/shm")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions; the best rate of each side counts")
    parser.add_argument("--lanes", choices=LANE_MODES, default="default",
                        help="replay lanes: native (Rust), python, both (one run each), default (per MIMESISBENCH_NATIVE)")
    args = parser.parse_args()
    code = lanes_mode(__file__, sys.argv[1:], args.lanes)
    if code is not None:
        return code
    with tempfile.TemporaryDirectory(prefix="bench-posix-") as tmp_s:
        tmp = Path(tmp_s)
        shm = Path(tempfile.mkdtemp(prefix="bench-posix-", dir=args.shm))
        try:
            exe = build_c(tmp)
            c_rates = {p: 0.0 for p in PHASES}
            m_rates = {p: 0.0 for p in PHASES}
            ok = True
            lane_impl: set[str] = set()
            run_ratios: dict[str, list[float]] = {p: [] for p in PHASES}
            for rep in range(args.repeat):  # interleaved; best of each (filters interference)
                (shm / f"r{rep}").mkdir()
                c = run_c(exe, shm / f"r{rep}", args.workers, args.files)
                m, good, impl = run_mimesis(shm / f"r{rep}", tmp / f"r{rep}", args.workers, args.files, args.concurrency)
                ok = ok and good
                lane_impl.update(impl)
                for p in PHASES:
                    run_ratios[p].append(m[p] / c[p] if c[p] else 0.0)
                    c_rates[p] = max(c_rates[p], c[p])
                    m_rates[p] = max(m_rates[p], m[p])
                print(f"  run {rep + 1}: " + ", ".join(f"{p} {m[p] / c[p]:.2f}" for p in PHASES), flush=True)
        finally:
            shutil.rmtree(shm, ignore_errors=True)
    print(f"{args.workers} process(es), {args.files:,} files each, {args.shm}; mimesisbench lanes {args.concurrency}; "
          f"best of {args.repeat}; lane implementation {', '.join(sorted(lane_impl))}")
    print(f"{'phase':<12} {'C ops/s':>12} {'mimesis ops/s':>14} {'ratio':>7} {'median of runs':>15}")
    worst = 1e9
    for p in PHASES:
        ratio = m_rates[p] / c_rates[p] if c_rates[p] else 0.0
        worst = min(worst, ratio)
        print(f"{p:<12} {c_rates[p]:>12,.0f} {m_rates[p]:>14,.0f} {ratio:>7.2f} {statistics.median(run_ratios[p]):>15.2f}")
    passed = ok and worst >= TARGET
    print(f"all outcomes ok: {ok}; worst ratio {worst:.2f} (target {TARGET:.2f}): {'PASS' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
