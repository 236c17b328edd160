"""Data jobs' write bandwidth on /dev/shm (issue 17): IOR-like N-N, N-1 segmented and N-1 strided
writers, each beside two references measured in the same run, on the same file system, with
the same tasks, transfer size and bytes:

* ``dd``: ``dd if=/dev/zero of=FILE bs=TRANSFER count=N conv=notrunc`` per task, started together
  (a C loop of write(2); ``dd``'s own figure is not used: the wall time of all of them is);
* the plain loop: ``os.pwrite`` of the same offsets from one Python process per task, without
  the recording (the client's plain loop).

Bandwidth = bytes / the write phase's time (the union of the tasks' passes, ``datajobs.trace``);
the references: bytes / wall time from the first start to the last end. Printed as MiB/s and as
the ratio to each reference.

    .venv/bin/python bench/bench_data_jobs.py [--tasks 2] [--mib 256] [--transfer-kib 1024] [--passes 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import polars as pl

from mimesisbench.datajobs.layout import task_offsets
from mimesisbench.datajobs.spec import parse_data_job
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

LAYOUTS = ("n-n", "n-1-segmented", "n-1-strided")


def _dd(root: Path, tasks: int, transfer: int, count: int, shared: bool) -> float:
    """MiB/s of ``tasks`` dd processes writing ``count`` transfers each (at their own offsets)."""
    procs = []
    began = time.perf_counter()
    for t in range(tasks):
        target = root / ("dd.shared" if shared else f"dd.{t}")
        seek = t * count if shared else 0  # a segment of its own in the shared file
        procs.append(subprocess.Popen(
            ["dd", "if=/dev/zero", f"of={target}", f"bs={transfer}", f"count={count}", f"seek={seek}",
             "conv=notrunc", "status=none"]
        ))
    for p in procs:
        p.wait()
    wall = time.perf_counter() - began
    return tasks * count * transfer / 2**20 / wall


def _loop_task(path: str, offsets: list[int], transfer: int, start: float) -> None:
    data = os.urandom(transfer)
    while time.time() < start:
        time.sleep(0.0005)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for offset in offsets:
            os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def _plain_loop(root: Path, text: str, shared: bool) -> float:
    """MiB/s of one process per task writing the layout's offsets with os.pwrite, unrecorded."""
    job = parse_data_job(text)
    ctx = mp.get_context("forkserver")
    start = time.time() + 0.5
    procs = []
    for t in range(job.tasks):
        path = str(root / ("loop.shared" if shared else f"loop.{t}"))
        procs.append(ctx.Process(target=_loop_task, args=(path, task_offsets(job, t).tolist(), job.transfer, start)))
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    wall = time.time() - start
    return job.tasks * job.bytes_per_task / 2**20 / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--mib", type=int, default=256, help="MiB each task writes per pass")
    parser.add_argument("--transfer-kib", type=int, default=1024)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--where", default="/dev/shm")
    args = parser.parse_args()
    transfer = args.transfer_kib * 1024
    count = args.mib * 2**20 // transfer
    root = Path(tempfile.mkdtemp(prefix="mb-datajobs-", dir=args.where))
    try:
        schedule = write_phased_schedule(root / "schedule", types=1, files_per_type=1, phases=(OpCode.GETFILEINFO,))
        print(f"{args.tasks} tasks, {args.mib} MiB each, transfers of {args.transfer_kib} KiB, on {args.where}")
        print(f"{'layout':<14} {'tool MiB/s':>11} {'dd MiB/s':>10} {'loop MiB/s':>11} {'tool/dd':>8} {'tool/loop':>10}")
        for layout in LAYOUTS:
            # segments of one transfer each for the strided layout (IOR's -s N -b T -t T), one
            # block of everything for the others
            if layout == "n-1-strided":
                text = f"{layout}:tasks={args.tasks},block={transfer},transfer={transfer},segments={count}"
            else:
                text = f"{layout}:tasks={args.tasks},block={count * transfer},transfer={transfer},segments=1"
            shared = layout != "n-n"
            tool, dd, loop = [], [], []
            for rep in range(args.passes):
                base = root / f"base-{layout}-{rep}"
                config = RunConfig(schedule=str(schedule), backend=f"posix:{base}", out=str(root / "runs"),
                                   data_jobs=(f"{text},passes=1",), replay=False)
                report = run_benchmark(config, show_progress=False)
                if not report.complete:
                    raise SystemExit(f"{layout}: run incomplete: {report.message}")
                figures = report.summary["data"]["jobs"]["data1"]["ops"]["write"]
                tool.append(figures["bandwidth_mib_s"])
                calls = pl.read_parquet(report.run_dir / "data_calls.parquet")
                assert calls.height == args.tasks * count, calls.height
                shutil.rmtree(base, ignore_errors=True)
                dd.append(_dd(root, args.tasks, transfer, count, shared))
                loop.append(_plain_loop(root, text, shared))
                for leftover in root.glob("dd.*"):
                    leftover.unlink()
                for leftover in root.glob("loop.*"):
                    leftover.unlink()
            t, d, lp = (sorted(x)[len(x) // 2] for x in (tool, dd, loop))
            print(f"{layout:<14} {t:>11,.0f} {d:>10,.0f} {lp:>11,.0f} {t / d:>8.2f} {t / lp:>10.2f}")
        print("(medians of the passes; each pass: the tool, then dd, then the plain loop)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
