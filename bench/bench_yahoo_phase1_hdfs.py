"""Phase 1 of the full Yahoo profile on a managed HDFS through the hdfs backend.

Imports the 2014 Yahoo profile (about 1.1 million pre-existing files over 112,792 directories),
generates a schedule with the synth module, starts a fresh managed NameNode (``LocalHdfs``) and
runs the replay engine's phase 1 (``mimesisbench.run.phase1.build_namespace``: directories level
by level, then the files, on a thread pool of blocking hdfs-native clients) against
``hdfs://127.0.0.1:PORT/yahoo``. Prints directories and files created, total time and files per
second.

    .venv/bin/python bench/bench_yahoo_phase1_hdfs.py [--threads 64] [--scale-files 1.0]
        [--heap 4g] [--workdir DIR] [--duration-ms 60000] [--seed 1] [--mkdirs strict|native]

``--duration-ms`` shortens the generated window (phase 2 events are not replayed here; the
pre-existing namespace comes from the profile, not from the window).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from mimesisbench.backends.hdfs import HdfsBackend
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.run.phase1 import build_namespace
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.paths import namespace_paths
from mimesisbench.synth.legacy2014 import import_2014
from mimesisbench.synth.namespace import tree_from_paths
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to

YAHOO = Path(__file__).resolve().parents[2] / "shared" / "data" / "mimesisbench-yahoo-2011"
YAHOO = YAHOO / "nnmetadata.properties.zip"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, default=YAHOO)
    parser.add_argument("--threads", type=int, default=64, help="phase 1 threads (blocking clients)")
    parser.add_argument("--scale-files", type=float, default=1.0)
    parser.add_argument("--duration-ms", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heap", default="4g", help="NameNode heap")
    parser.add_argument("--mkdirs", choices=("strict", "native"), default="strict",
                        help="backend mkdirs mode: strict = getFileInfo + mkdirs (default), native = mkdirs only")
    parser.add_argument("--workdir", type=Path, default=None, help="managed HDFS workdir (default: a temp dir)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-yahoo-p1-"))
    t0 = time.perf_counter()
    profile, dirs = import_2014(args.profile)
    options = GenerateOptions(scale_files=args.scale_files, duration_ms=args.duration_ms)
    schedule_dir, _, _ = generate_to(profile, tmp / "schedule", options, args.seed, tree_from_paths(dirs))
    schedule = load_schedule(schedule_dir)
    ns_dirs, ns_files = namespace_paths(schedule)
    print(f"# schedule: {ns_dirs.height:,} directories, {ns_files.len():,} pre-existing files "
          f"(generated in {time.perf_counter() - t0:.1f} s)", flush=True)

    workdir = args.workdir or tmp / "hdfs"
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap=args.heap, startup_timeout_s=300.0))
    cluster.up()
    try:
        backend = HdfsBackend(f"{cluster.url}/yahoo?mkdirs={args.mkdirs}")
        backend.setup(reuse=False)
        backend.connect()
        print(f"# NameNode {cluster.url}, heap {args.heap}, {args.threads} threads, mkdirs={args.mkdirs}, "
              f"workdir {workdir}; load average {os.getloadavg()[0]:.2f}, cpus {os.cpu_count()}", flush=True)
        report = build_namespace(backend, schedule, threads=args.threads, show_progress=True)
        backend.close()
        total = report.files_created + report.files_existing
        items = total + report.directories_created + report.directories_existing
        print()
        print(f"directories created  {report.directories_created:,} (existing {report.directories_existing:,})")
        print(f"files created        {report.files_created:,} (existing {report.files_existing:,})")
        print(f"phase 1 time         {report.seconds:.1f} s")
        rate, item_rate = total / report.seconds, items / report.seconds
        print(f"files per second     {rate:,.0f} (files + directories: {item_rate:,.0f}/s)")
        print(f"load average after   {os.getloadavg()[0]:.2f}")
    finally:
        cluster.down()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
