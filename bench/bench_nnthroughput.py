"""MimesisBench micro vs Hadoop's NNThroughputBenchmark on the same managed NameNode.

One script run starts a fresh managed HDFS (``LocalHdfs``), then for each operation runs
Hadoop's own ``NNThroughputBenchmark`` in remote mode (``-fs hdfs://127.0.0.1:PORT``, a JVM on
this machine issuing ClientProtocol RPCs from T threads) and ``mimesisbench micro`` with the same
operation, file count, files per directory and concurrency, alternating the tools, and prints
both rates and their ratio. Both prepare the files ``open``/``fileStatus``/``delete`` need
before timing; ``create`` runs NNThroughputBenchmark with ``-close`` so both tools send
``create`` + ``complete`` per file.

On a small machine the client competes with the NameNode for CPU, so the lighter client leaves
the NameNode more: MimesisBench's rate (micro's default client: the native HDFS lane where it is
installed) should be at least 1.5 times NNThroughputBenchmark's (``BAR``).

    .venv/bin/python bench/bench_nnthroughput.py [--files 50000] [--threads 8] [--repeat 3]

NNThroughputBenchmark lives in the hadoop-hdfs tests jar (in the managed HDFS's jar cache) and
needs hadoop-common's tests jar (GenericTestUtils), which this script fetches once with ``mvn``
into the same cache.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.hdfs.jars import DEFAULT_HADOOP_VERSION, ensure_jars
from mimesisbench.hdfs.java import ADD_OPENS
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig

NNT_CLASS = "org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark"
OPS = ("create", "open", "fileStatus", "delete")
BLOCK_SIZE = 134217728  # the NameNode's default; NNThroughputBenchmark's 16 bytes needs a min-block-size change
OPS_LINE = re.compile(r"Ops per sec:\s*([0-9.]+)")
#: the issue's bar: micro at least this many times NNThroughputBenchmark's rate
BAR = 1.5
LOG4J = """log4j.rootLogger=INFO,stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""


def common_tests_jar(lib: Path, version: str) -> Path:
    """hadoop-common's tests jar next to the cached jars (fetched with mvn the first time)."""
    extra = lib.parent / "bench-extra"
    jar = extra / f"hadoop-common-{version}-tests.jar"
    if jar.is_file():
        return jar
    extra.mkdir(parents=True, exist_ok=True)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("mvn is needed once to fetch hadoop-common's tests jar")
    subprocess.run(
        [mvn, "-q", "-B", "dependency:copy", f"-Dartifact=org.apache.hadoop:hadoop-common:{version}:jar:tests",
         f"-DoutputDirectory={extra}"],
        check=True,
    )
    return jar


def run_nnt(java_cp: str, log4j: Path, url: str, op: str, files: int, threads: int, per_dir: int) -> float:
    command = [
        "java", "-Xmx1g", *ADD_OPENS, f"-Dlog4j.configuration=file:{log4j}", "-cp", java_cp, NNT_CLASS,
        "-fs", url, "-op", op, "-threads", str(threads), "-files", str(files), "-filesPerDir", str(per_dir),
        "-blockSize", str(BLOCK_SIZE),
    ]
    if op == "create":
        command.append("-close")
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
    rates = OPS_LINE.findall(proc.stdout)
    if proc.returncode != 0 or not rates:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise SystemExit(f"NNThroughputBenchmark -op {op} failed (exit {proc.returncode}):\n{tail}")
    return float(rates[-1])  # the timed operation's stats come last (after the preparation's)


def run_ours(url: str, op: str, files: int, threads: int, per_dir: int) -> tuple[float, dict[str, float]]:
    config = MicroConfig(op=op, files=files, backend=f"{url}/mimesis-micro", concurrency=threads,
                         dirs=max(1, files // per_dir))
    result = run_micro(config)
    if result.summary["errors"]:
        raise SystemExit(f"micro {op}: {result.summary['errors_by_outcome']}")
    return result.summary["ops_per_s"], result.summary["latency_ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--files-per-dir", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool and operation (the median is shown)")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--heap", default="2g", help="NameNode heap")
    parser.add_argument("--workdir", type=Path, default=None, help="managed HDFS workdir (default: a temp dir)")
    args = parser.parse_args()
    ops = [o for o in args.ops.split(",") if o]

    jars = ensure_jars(DEFAULT_HADOOP_VERSION)
    extra = common_tests_jar(jars.lib, jars.version)
    java_cp = os.pathsep.join([*map(str, jars.jars()), str(extra)])
    tmp = Path(tempfile.mkdtemp(prefix="bench-nnt-"))
    log4j = tmp / "log4j.properties"
    log4j.write_text(LOG4J, encoding="utf-8")
    workdir = args.workdir or tmp / "hdfs"
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap=args.heap, startup_timeout_s=300.0))
    print(f"# starting a managed HDFS (Hadoop {jars.version}) in {workdir} ...", flush=True)
    cluster.up()
    url = cluster.url
    print(f"# NameNode {url}; {args.files} files, {args.threads} threads/clients, {args.files_per_dir} files per dir, "
          f"median of {args.repeat}; load average before {os.getloadavg()[0]:.2f}; cpus {os.cpu_count()}", flush=True)
    results: dict[str, tuple[float, float, dict[str, float]]] = {}
    try:
        for op in ops:
            nnt_rates, our_rates, lats = [], [], []
            for i in range(args.repeat):
                first_nnt = i % 2 == 0  # alternate which tool goes first
                for tool in (("nnt", "ours") if first_nnt else ("ours", "nnt")):
                    if tool == "nnt":
                        rate = run_nnt(java_cp, log4j, url, op, args.files, args.threads, args.files_per_dir)
                        nnt_rates.append(rate)
                    else:
                        rate, lat = run_ours(url, op, args.files, args.threads, args.files_per_dir)
                        our_rates.append(rate)
                        lats.append(lat)
                    print(f"  {op:10s} run {i + 1} {tool:4s} {rate:10.0f} ops/s", flush=True)
            mid = statistics.median(our_rates)
            lat = lats[our_rates.index(sorted(our_rates)[len(our_rates) // 2])]
            results[op] = (statistics.median(nnt_rates), mid, lat)
    finally:
        cluster.down()
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    header = ("operation", "NNThroughput ops/s", "mimesisbench ops/s", "ratio", "p50 ms", "p99 ms")
    print(f"{header[0]:12s} {header[1]:>19s} {header[2]:>19s} {header[3]:>7s} {header[4]:>8s} {header[5]:>8s}")
    ok = True
    for op, (nnt, ours, lat) in results.items():
        ratio = ours / nnt if nnt else float("inf")
        ok = ok and ratio >= BAR
        print(f"{op:12s} {nnt:19.0f} {ours:19.0f} {ratio:7.2f} {lat['p50']:8.3f} {lat['p99']:8.3f}")
    print(f"\nload average after {os.getloadavg()[0]:.2f}; all ratios >= {BAR}: {'yes' if ok else 'NO'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    started = time.monotonic()
    main()
