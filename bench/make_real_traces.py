"""Make REAL NameNode audit logs on the managed single-node HDFS, for judging workload models.

Each workload runs against a fresh local cluster (``LocalHdfs``, started in a temporary working
directory under ``--out`` and always stopped) and leaves in ``--out``:

* ``<name>.fsimage.tsv``: the namespace right before the workload (``save_namespace()`` and the
  offline image viewer, ``Delimited``);
* ``<name>.audit.log``: exactly the lines the cluster's audit log got during the workload;

and prints a short summary (lines, commands and their shares). Workloads:

``poller``
    A daemon-like loop through the native client ``hdfs-native``: every ``--poll-period`` seconds
    (default 2, with +-20 % jitter) ``listStatus`` of a few fixed directories and ``getfileinfo``
    of their parents; on about one tick in eight a marker file is created, and a while later
    deleted.
``readers``
    Hive/Spark-style readers through ``hdfs-native``: a warehouse of tables (partition directories
    with part files) is written BEFORE the excerpt starts; then each query picks a table
    (Zipf-like popularity, seeded numpy RNG), ``getfileinfo`` of the table directory,
    ``listStatus`` of it and of the partitions it reads, ``getfileinfo`` of each part file, then
    opens (reads) it.
``mrjobs``
    Hadoop's own MapReduce test programs (``org.apache.hadoop.test.MapredTestDriver`` from
    ``hadoop-mapreduce-client-jobclient:<version>:tests``, with ``-common``, ``-core``, the
    jobclient jar and ``hadoop-common:<version>:tests`` (the driver loads a class from it), plus
    their runtime dependencies, fetched once with ``mvn dependency:copy-dependencies`` into
    ``~/.cache/mimesisbench/mapred-tests-<version>/``) run in local mode against the cluster's
    ``fs.defaultFS``: ``mrbench`` (-numRuns 2 -maps 2 -reduces 1 -inputLines 10), ``nnbench``
    (create_write, open_read, delete, create_write, rename; 20 files per map, -blockSize 1048576,
    -startTime a few seconds ahead, else its maps sleep 2 minutes) and ``SliveTest`` (small).
    Their local scratch space is kept in the cluster's working directory.

The workloads run one after another, each on its own fresh cluster, so each trace starts from a
namespace holding only what the workload itself prepared. ``--seconds`` bounds the poller and
readers loops (the MapReduce jobs take as long as they take, bounded by a timeout each).

Usage::

    python bench/make_real_traces.py [--workloads poller,readers,mrjobs] [--seconds 60] [--seed 1]
        [--out bench/out/traces] [--poll-period 2]

Only 127.0.0.1 is ever contacted. Needs java, mvn (first use) and the ``hdfs-native`` package.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mimesisbench.errors import BackendError, MimesisError
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.hdfs.jars import cache_root, ensure_jars, find_tool
from mimesisbench.hdfs.java import ADD_OPENS, require_java

WORKLOADS = ("poller", "readers", "mrjobs")
DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "traces"
CMD_RE = re.compile(r"\tcmd=([^\t]*)\t")
MR_DRIVER = "org.apache.hadoop.test.MapredTestDriver"
MR_ARTIFACTS = (
    ("hadoop-mapreduce-client-jobclient", "tests"),
    ("hadoop-mapreduce-client-jobclient", None),
    ("hadoop-mapreduce-client-common", None),
    ("hadoop-mapreduce-client-core", None),
    ("hadoop-common", "tests"),  # MapredTestDriver's constructor loads org.apache.hadoop.io.TestSequenceFile
)
MR_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Summary:
    """What one workload left in its audit-log excerpt."""

    name: str
    lines: int
    commands: tuple[tuple[str, int], ...]  # (cmd, count), most frequent first
    audit_path: Path
    fsimage_path: Path
    seconds: float

    def render(self) -> str:
        head = f"{self.name}: {self.lines} audit lines in {self.seconds:.1f} s -> {self.audit_path.name}"
        rows = [f"  {cmd:<28} {count:>7}  {100.0 * count / max(self.lines, 1):5.1f} %" for cmd, count in self.commands]
        return "\n".join([head, *rows])


def summarise(name: str, audit_path: Path, fsimage_path: Path, seconds: float) -> Summary:
    counts: Counter[str] = Counter()
    lines = 0
    with open(audit_path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            lines += 1
            match = CMD_RE.search(line)
            counts[match.group(1) if match else "(no cmd)"] += 1
    return Summary(name, lines, tuple(counts.most_common()), audit_path, fsimage_path, seconds)


# --------------------------------------------------------------------------- hdfs-native workloads
def _client(url: str) -> object:
    try:
        from hdfs_native import Client
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise BackendError("the poller and readers workloads need `hdfs-native` (pip install hdfs-native)") from exc
    return Client(url)


def _write(client: object, path: str, data: bytes) -> None:
    with client.create(path) as writer:  # type: ignore[attr-defined]
        writer.write(data)


def _jittered(rng: np.random.Generator, period: float) -> float:
    return float(period * rng.uniform(0.8, 1.2))


def _sleep_until(deadline: float, wanted: float) -> None:
    time.sleep(max(0.0, min(wanted, deadline - time.monotonic())))


POLL_PARENTS = ("/apps/ingest", "/apps/ingest/feeds", "/user/etl")
POLL_DIRS = (
    "/apps/ingest/incoming",
    "/apps/ingest/staging",
    "/apps/ingest/feeds/clicks",
    "/apps/ingest/feeds/orders",
    "/user/etl/jobs",
)


def prepare_poller(url: str, rng: np.random.Generator) -> None:
    client = _client(url)
    for directory in POLL_DIRS:
        client.mkdirs(directory, create_parent=True)  # type: ignore[attr-defined]
        for i in range(int(rng.integers(1, 5))):
            _write(client, f"{directory}/batch-{i:04d}.dat", b"x" * 64)


def run_poller(url: str, rng: np.random.Generator, seconds: float, period: float) -> None:
    client = _client(url)
    deadline = time.monotonic() + seconds
    markers: list[str] = []
    tick = 0
    max_ticks = int(seconds / max(period * 0.8, 0.05)) + 2
    while time.monotonic() < deadline and tick < max_ticks:
        for parent in POLL_PARENTS:
            client.get_file_info(parent)  # type: ignore[attr-defined]
        for directory in POLL_DIRS:
            list(client.list_status(directory))  # type: ignore[attr-defined]
        if markers and rng.random() < 0.5:
            client.delete(markers.pop(0))  # type: ignore[attr-defined]
        if rng.random() < 0.125:
            marker = f"/apps/ingest/staging/_MARKER-{tick:05d}"
            _write(client, marker, b"")
            markers.append(marker)
        tick += 1
        _sleep_until(deadline, _jittered(rng, period))


@dataclass(frozen=True)
class Table:
    path: str
    partitions: tuple[str, ...]
    parts: dict[str, tuple[str, ...]]


def prepare_readers(url: str, rng: np.random.Generator, tables: int = 12) -> list[Table]:
    client = _client(url)
    made: list[Table] = []
    for t in range(tables):
        db = ("sales", "web", "ops")[t % 3]
        table = f"/warehouse/tablespace/managed/hive/{db}.db/t{t:02d}"
        n_part = int(rng.integers(1, 7))
        partitions = tuple(f"{table}/dt=2024-01-{d + 1:02d}" for d in range(n_part))
        parts: dict[str, tuple[str, ...]] = {}
        for partition in partitions:
            client.mkdirs(partition, create_parent=True)  # type: ignore[attr-defined]
            files = tuple(f"{partition}/part-{k:05d}-c000.snappy.orc" for k in range(int(rng.integers(1, 4))))
            for name in files:
                _write(client, name, rng.bytes(int(rng.integers(256, 4096))))
            parts[partition] = files
        made.append(Table(table, partitions, parts))
    return made


def run_readers(url: str, rng: np.random.Generator, seconds: float, tables: list[Table]) -> None:
    client = _client(url)
    ranks = np.arange(1, len(tables) + 1, dtype=float)
    popularity = ranks**-1.1
    popularity /= popularity.sum()
    order = rng.permutation(len(tables))  # which table gets which popularity rank
    deadline = time.monotonic() + seconds
    max_queries = int(seconds * 20) + 1
    for _ in range(max_queries):
        if time.monotonic() >= deadline:
            break
        table = tables[int(order[rng.choice(len(tables), p=popularity)])]
        client.get_file_info(table.path)  # type: ignore[attr-defined]
        list(client.list_status(table.path))  # type: ignore[attr-defined]
        wanted = max(1, int(rng.integers(1, len(table.partitions) + 1)))
        chosen = rng.choice(len(table.partitions), size=wanted, replace=False)
        for index in sorted(int(i) for i in chosen):
            partition = table.partitions[index]
            list(client.list_status(partition))  # type: ignore[attr-defined]
            for name in table.parts[partition]:
                client.get_file_info(name)  # type: ignore[attr-defined]
            for name in table.parts[partition]:
                with client.read(name) as reader:  # type: ignore[attr-defined]
                    reader.read()
        _sleep_until(deadline, float(rng.exponential(0.5)))


# --------------------------------------------------------------------------- MapReduce test jobs
_MR_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.mimesisbench</groupId><artifactId>mapred-test-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def ensure_mr_jars(version: str) -> list[Path]:
    """The MapReduce client jars (and the jobclient tests jar) of ``version``, fetched once with mvn."""
    directory = cache_root() / f"mapred-tests-{version}"
    lib = directory / "lib"
    marker = directory / "COMPLETE"
    if marker.is_file():
        return sorted(lib.glob("*.jar"))
    mvn = find_tool("mvn", "download the MapReduce test jars from Maven Central")
    directory.mkdir(parents=True, exist_ok=True)
    deps = "\n".join(
        "    <dependency><groupId>org.apache.hadoop</groupId>"
        f"<artifactId>{artifact}</artifactId><version>{version}</version>"
        + (f"<classifier>{classifier}</classifier>" if classifier else "")
        + "</dependency>"
        for artifact, classifier in MR_ARTIFACTS
    )
    pom = directory / "pom.xml"
    pom.write_text(_MR_POM.format(deps=deps), encoding="utf-8")
    command = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={lib}"]
    command += ["-DincludeScope=runtime"]
    log = directory / "mvn.log"
    with open(log, "w", encoding="utf-8") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=1800, check=False)
    if result.returncode != 0 or not any(lib.glob("*-tests.jar")):
        raise BackendError(f"mvn could not fetch the MapReduce test jars (exit {result.returncode}); see {log}")
    marker.write_text(f"version={version}\n", encoding="utf-8")
    return sorted(lib.glob("*.jar"))


def mr_programs(seed: int) -> list[tuple[str, list[str]]]:
    nn = ["-maps", "2", "-reduces", "1", "-blockSize", "1048576", "-bytesToWrite", "0", "-numberOfFiles", "20"]
    nn += ["-baseDir", "/benchmarks/NNBench", "-readFileAfterOpen", "true"]
    return [
        ("mrbench", ["mrbench", "-numRuns", "2", "-maps", "2", "-reduces", "1", "-inputLines", "10"]),
        # rename leaves file_*_r_*, so delete runs on a second create_write's files rather than after it
        *(
            (f"nnbench-{i}-{op}", ["nnbench", "-operation", op, *nn])
            for i, op in enumerate(("create_write", "open_read", "delete", "create_write", "rename"))
        ),
        (
            "SliveTest",
            [
                "SliveTest",
                "-maps",
                "2",
                "-reduces",
                "1",
                "-ops",
                "200",
                "-files",
                "40",
                "-dirSize",
                "8",
                "-seed",
                str(seed),
                "-baseDir",
                "/test/slive",
                "-resFile",
                "slive-result.txt",
                "-blockSize",
                "1048576,1048576",
                "-writeSize",
                "1024,4096",
                "-readSize",
                "1024,4096",
                "-appendSize",
                "1024,4096",
            ],
        ),
    ]


def run_mrjobs(cluster: LocalHdfs, seed: int, log: Callable[[str], None]) -> list[str]:
    """Run the MapReduce test programs; returns one line per program that failed (with its error)."""
    version = cluster.status().hadoop_version or "3.4.3"
    hadoop = ensure_jars(version)
    mr = ensure_mr_jars(version)
    scratch = cluster.workdir / "mapred"
    scratch.mkdir(parents=True, exist_ok=True)
    have = {jar.name for jar in hadoop.jars()}
    extra = [jar for jar in mr if jar.name not in have]  # the cluster's own jars are not listed twice
    classpath = os.pathsep.join([str(cluster.layout.conf), *map(str, hadoop.jars()), *map(str, extra)])
    failures: list[str] = []
    for label, program in mr_programs(seed):
        name, rest = program[0], program[1:]
        if name == "nnbench":  # its maps otherwise sleep until a -startTime 2 minutes ahead
            rest = [*rest, "-startTime", str(int(time.time()) + 5)]
        generic = [
            "-Dmapreduce.framework.name=local",
            f"-Dfs.defaultFS={cluster.url}",
            f"-Dhadoop.tmp.dir={scratch / 'tmp'}",
            f"-Dmapreduce.cluster.local.dir={scratch / 'local'}",
            f"-Dmapreduce.jobtracker.staging.root.dir={scratch / 'staging'}",
        ]
        command = [
            require_java(),
            *ADD_OPENS,
            "-Xmx512m",
            f"-Djava.io.tmpdir={cluster.layout.tmp}",
            f"-Dhadoop.log.dir={cluster.layout.logs}",
            "-Dhadoop.log.file=mapred.log",
            f"-Dlog4j.configuration=file:{cluster.layout.log4j}",
            "-Djava.net.preferIPv4Stack=true",
            "-Duser.timezone=UTC",
            "-cp",
            classpath,
            MR_DRIVER,
            name,
            *generic,
            *rest,
        ]
        transcript = cluster.layout.logs / f"mr-{label.replace(' ', '-')}.out"
        log(f"  running {label} ...")
        try:
            with open(transcript, "w", encoding="utf-8") as out:
                result = subprocess.run(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=scratch,
                    timeout=MR_TIMEOUT_S,
                    check=False,
                )
            code = result.returncode
        except subprocess.TimeoutExpired:
            code = -1
        if code != 0:
            tail = transcript.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
            failures.append(f"{label} failed (exit {code}): {' | '.join(tail)} (see {transcript})")
            log("  " + failures[-1])
    return failures


# --------------------------------------------------------------------------- driver
def run_workload(name: str, out: Path, seconds: float, seed: int, period: float) -> Summary:
    workdir = Path(tempfile.mkdtemp(prefix=f"hdfs-{name}-", dir=out))
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap="512m", startup_timeout_s=150.0))
    rng = np.random.default_rng(seed)
    done = False
    try:
        cluster.up()
        url = cluster.url
        tables: list[Table] = []
        if name == "poller":
            prepare_poller(url, rng)
        elif name == "readers":
            tables = prepare_readers(url, rng)
        fsimage = out / f"{name}.fsimage.tsv"
        cluster.save_namespace()
        cluster.dump_image("Delimited", fsimage)
        time.sleep(0.5)
        start_offset = cluster.audit_log.stat().st_size if cluster.audit_log.exists() else 0
        started = time.monotonic()
        if name == "poller":
            run_poller(url, rng, seconds, period)
        elif name == "readers":
            run_readers(url, rng, seconds, tables)
        else:
            failures = run_mrjobs(cluster, seed, lambda text: print(text, file=sys.stderr))
            if len(failures) == len(mr_programs(seed)):
                raise BackendError("every MapReduce program failed:\n" + "\n".join(failures))
        elapsed = time.monotonic() - started
        time.sleep(1.0)  # let the last audit lines reach the file (immediate flush, but async RPC replies)
        audit = out / f"{name}.audit.log"
        with open(cluster.audit_log, "rb") as src, open(audit, "wb") as dst:
            src.seek(start_offset)
            shutil.copyfileobj(src, dst)
        summary = summarise(name, audit, fsimage, elapsed)
        done = True
        return summary
    finally:
        cluster.down()
        if done:  # a failed workload keeps its cluster directory (logs/) for a look
            shutil.rmtree(workdir, ignore_errors=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: poller,readers,mrjobs")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the poller and readers loops")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--poll-period", type=float, default=2.0, help="poller period in seconds")
    args = parser.parse_args(argv)
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = sorted(set(chosen) - set(WORKLOADS))
    if unknown or not chosen:
        parser.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    if not 0 < args.seconds <= 24 * 3600 or not 0.05 <= args.poll_period <= 600:
        parser.error("--seconds must be in (0, 86400] and --poll-period in [0.05, 600]")
    args.workloads = chosen
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in args.workloads:
        print(f"== {name}", file=sys.stderr)
        try:
            summary = run_workload(name, out, args.seconds, args.seed, args.poll_period)
        except (MimesisError, OSError, RuntimeError) as exc:  # hdfs-native raises the latter two
            print(f"{name}: failed: {exc}", file=sys.stderr)
            failed += 1
            continue
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        print(summary.render(), flush=True)
    return 5 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
