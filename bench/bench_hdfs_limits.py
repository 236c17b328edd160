"""The managed cluster under a CPU quota (issue 17): requested against achieved, and what the
quota does to throughput. For each quota (none first, the reference) a managed HDFS is started
with ``--cpu-quota``, a create/getfileinfo/delete schedule replayed as fast as possible from 2
workers, and the run's ``server_limits`` read back (the NameNode's CPU time over the replay's wall
time; the share of CFS periods it was throttled in).

    .venv/bin/python bench/bench_hdfs_limits.py [--quotas none,1,0.5,0.25] [--files 3000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import psutil

from mimesisbench.hdfs.cgroups import ResourceLimits
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quotas", default="none,1,0.5,0.25")
    ap.add_argument("--files", type=int, default=3000, help="files per worker")
    args = ap.parse_args()
    print("quota cores | ops/s | NameNode cores achieved | throttled share")
    with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
        root = Path(tmp)
        schedule = write_phased_schedule(root / "s", types=2, files_per_type=args.files,
                                         phases=(OpCode.CREATE, OpCode.GETFILEINFO, OpCode.DELETE))
        for text in args.quotas.split(","):
            quota = None if text == "none" else float(text)
            workdir = root / f"hdfs-{text}"
            cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap="512m", startup_timeout_s=300.0,
                                                limits=ResourceLimits(cpu_cores=quota)))
            cluster.up()
            try:
                pid = {role: pid for role, pid, _ in cluster.status().processes}["namenode"]
                before = sum(psutil.Process(pid).cpu_times()[:2])
                report = run_benchmark(RunConfig(schedule=str(schedule), backend=f"{cluster.url}/b", out=str(root / "runs"),
                                                 time_scale=0.0, max_drift_s=None, workers=2,
                                                 hdfs_workdir=str(workdir), jmx="off"), show_progress=False)
                summary = json.loads((report.run_dir / "summary.json").read_text())
                manifest = json.loads((report.run_dir / "manifest.json").read_text())
                used = sum(psutil.Process(pid).cpu_times()[:2]) - before
            finally:
                cluster.down()
            limits = manifest.get("server_limits", {}).get("namenode", {})
            achieved = limits.get("achieved_cpu_cores", used / max(summary["active_time_ms"] / 1000, 1e-9))
            print(f"{text:>11} | {summary['throughput_ops_per_s']:,.0f} | {achieved:.3f} | "
                  f"{limits.get('throttled_share', '-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
