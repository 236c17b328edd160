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
``jobs``
    Several mixes of the same test programs plus ``TestDFSIO`` (small ``-write``, ``-read``,
    ``-clean``): round after round until ``--seconds`` have passed (at least one round), each round
    with its own seed (``--seed`` + round) choosing the programs' order and sizes (files per map,
    maps, runs, SliveTest ops), so the trace holds job bursts of different shapes.
``mixed``
    Every command ``hdfs-native`` can issue, on files and directories, mixed at random (seeded):
    ``create``, ``create`` with overwrite, ``open``, ``getfileinfo``, ``listStatus``,
    ``contentSummary``, ``getAclStatus``, ``setPermission``, ``setOwner``, ``setTimes``,
    ``setReplication``, ``append``, ``rename`` of files and of directories, ``mkdirs`` of existing
    directories, ``delete`` of files and recursive ``delete`` of directory trees; a poller loop
    (every 2 s, +-1 %: ``getfileinfo`` of a parent, ``listStatus`` of two directories); job bursts
    (every ~10 s: a ``_temporary`` attempt directory, 10-30 files created in it, renamed into the
    job's output directory, the ``_temporary`` tree deleted, a ``_SUCCESS`` marker). What the native
    client cannot issue (``truncate``, ``concat``, ``setStoragePolicy``, ``getStoragePolicy``) goes
    through Hadoop's own shell tools (one JVM each, every ~15 s, in a side thread), unless
    ``--no-shell``. Files made in the window are empty (no block: the NameNode's commands are the
    point, not DataNode round trips); the tool's ``-getStoragePolicy`` left no ``getStoragePolicy`` line
    in Hadoop 3.4.3's audit log in the traces made so far.

The workloads run one after another, each on its own fresh cluster, so each trace starts from a
namespace holding only what the workload itself prepared. ``--seconds`` bounds the poller,
readers and mixed loops and the jobs rounds (``mrjobs`` takes as long as its programs take,
bounded by a timeout each).

Usage::

    python bench/make_real_traces.py [--workloads poller,readers,mrjobs,mixed,jobs] [--seconds 120]
        [--seed 1] [--out bench/out/traces] [--poll-period 2] [--no-shell]

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
import threading
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

WORKLOADS = ("poller", "readers", "mrjobs", "mixed", "jobs")
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


# --------------------------------------------------------------------------- mixed: every command
MIXED = "/mixed"
MIXED_DATA = tuple(f"{MIXED}/data/d{i}" for i in range(4))
MIXED_POLLED = (f"{MIXED}/inbox", f"{MIXED}/data/d0")
MIXED_POLL_PERIOD_S = 2.0
MIXED_BURST_PERIOD_S = 10.0
MIXED_SHELL_PERIOD_S = 15.0
SHELL_CLASS = "org.apache.hadoop.fs.FsShell"
STORAGE_POLICY_CLASS = "org.apache.hadoop.hdfs.tools.StoragePolicyAdmin"
BLOCK = 1 << 20  # concat wants full blocks: its files are written block by block


@dataclass
class MixedState:
    """The live namespace the mixed workload touches (paths it made and has not removed)."""

    files: list[str]
    trees: list[str]  # directory trees (subdirectories with files), renamed and deleted whole
    serial: int = 0

    def name(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}-{self.serial:06d}"


def prepare_mixed(url: str, rng: np.random.Generator) -> MixedState:
    client = _client(url)
    files: list[str] = []
    for directory in (*MIXED_DATA, f"{MIXED}/inbox", f"{MIXED}/out", f"{MIXED}/trees", f"{MIXED}/concat"):
        client.mkdirs(directory, create_parent=True)  # type: ignore[attr-defined]
    for directory in MIXED_DATA:
        for i in range(int(rng.integers(5, 15))):
            path = f"{directory}/base-{i:04d}.dat"
            _write(client, path, rng.bytes(int(rng.integers(16, 2048))))
            files.append(path)
    state = MixedState(files=files, trees=[])
    for _ in range(2):
        state.trees.append(_make_tree(client, rng, state))
    return state


def _make_tree(client: object, rng: np.random.Generator, state: MixedState) -> str:
    root = f"{MIXED}/trees/{state.name('tree')}"
    for sub in range(int(rng.integers(1, 4))):
        directory = f"{root}/sub{sub}"
        client.mkdirs(directory, create_parent=True)  # type: ignore[attr-defined]
        for k in range(int(rng.integers(1, 5))):
            _write(client, f"{directory}/f{k}", b"")
    return root


def _some(rng: np.random.Generator, items: Sequence[str]) -> str:
    return items[int(rng.integers(len(items)))]


def _mixed_step(client: object, rng: np.random.Generator, state: MixedState, now_ms: int) -> None:
    """One operation (or a short sequence of them) chosen at random; every command hdfs-native can issue."""
    c = client
    files = state.files
    directories = (*MIXED_DATA, f"{MIXED}/inbox", f"{MIXED}/data", MIXED)
    action = str(rng.choice(ACTIONS, p=ACTION_WEIGHTS))
    if len(files) < 20 and action in ("delete", "rename"):
        action = "create"
    if action == "read":
        path = _some(rng, files)
        c.get_file_info(path)  # type: ignore[attr-defined]
        with c.read(path) as reader:  # type: ignore[attr-defined]
            reader.read()
    elif action == "stat":
        c.get_file_info(_some(rng, files) if rng.random() < 0.6 else _some(rng, directories))  # type: ignore[attr-defined]
    elif action == "list":
        list(c.list_status(_some(rng, directories) if rng.random() < 0.85 else _some(rng, files)))  # type: ignore[attr-defined]
    elif action == "summary":
        c.get_content_summary(_some(rng, directories) if rng.random() < 0.7 else _some(rng, files))  # type: ignore[attr-defined]
    elif action == "acl":
        c.get_acl_status(_some(rng, files) if rng.random() < 0.5 else _some(rng, directories))  # type: ignore[attr-defined]
    elif action == "create":
        path = f"{_some(rng, MIXED_DATA)}/{state.name('new')}.dat"
        _write(c, path, b"")  # empty: no block, no DataNode round trip
        files.append(path)
    elif action == "overwrite":
        from hdfs_native import WriteOptions

        with c.create(_some(rng, files), WriteOptions(overwrite=True)) as writer:  # type: ignore[attr-defined]
            writer.write(b"")
    elif action == "chmod":
        if rng.random() < 0.7:
            c.set_permission(_some(rng, files), 0o644)  # type: ignore[attr-defined]
        else:
            c.set_permission(_some(rng, MIXED_DATA), 0o755)  # type: ignore[attr-defined]
    elif action == "chown":
        c.set_owner(_some(rng, files) if rng.random() < 0.7 else _some(rng, MIXED_DATA), group="supergroup")  # type: ignore[attr-defined]
    elif action == "touch":
        c.set_times(_some(rng, files) if rng.random() < 0.8 else _some(rng, MIXED_DATA), now_ms, now_ms)  # type: ignore[attr-defined]
    elif action == "replication":
        c.set_replication(_some(rng, files), 1)  # type: ignore[attr-defined]
    elif action == "append":
        with c.append(_some(rng, files)):  # type: ignore[attr-defined]
            pass
    elif action == "rename":
        index = int(rng.integers(len(files)))
        target = f"{_some(rng, MIXED_DATA)}/{state.name('moved')}.dat"
        c.rename(files[index], target)  # type: ignore[attr-defined]
        files[index] = target
    elif action == "mkdirs":
        c.mkdirs(_some(rng, (*MIXED_DATA, *state.trees)) if state.trees else _some(rng, MIXED_DATA))  # type: ignore[attr-defined]
    elif action == "delete":
        c.delete(files.pop(int(rng.integers(len(files)))))  # type: ignore[attr-defined]
    elif action == "tree":
        roll = rng.random()
        if state.trees and (roll < 0.35 or len(state.trees) > 4):
            c.delete(state.trees.pop(0), recursive=True)  # type: ignore[attr-defined]
        elif state.trees and roll < 0.6:
            index = int(rng.integers(len(state.trees)))
            target = f"{MIXED}/trees/{state.name('renamed')}"
            c.rename(state.trees[index], target)  # type: ignore[attr-defined]
            state.trees[index] = target
        else:
            state.trees.append(_make_tree(c, rng, state))


ACTION_TABLE = (
    ("read", 20), ("stat", 10), ("list", 8), ("summary", 3), ("acl", 2), ("create", 9), ("overwrite", 3),
    ("chmod", 3), ("chown", 2), ("touch", 3), ("replication", 2), ("append", 3), ("rename", 4), ("mkdirs", 3),
    ("delete", 5), ("tree", 2),
)  # fmt: skip
ACTIONS = tuple(a for a, _ in ACTION_TABLE)
ACTION_WEIGHTS = np.array([w for _, w in ACTION_TABLE], dtype=float) / sum(w for _, w in ACTION_TABLE)


def _job_burst(client: object, rng: np.random.Generator, state: MixedState) -> None:
    """A job's commit: files written under _temporary, renamed into the output, the tree deleted."""
    c = client
    job = f"{MIXED}/out/{state.name('job')}"
    attempt = f"{job}/_temporary/0/attempt_{state.serial:06d}_m_000000_0"
    c.mkdirs(attempt, create_parent=True)  # type: ignore[attr-defined]
    parts = [f"part-{k:05d}" for k in range(int(rng.integers(10, 31)))]
    for part in parts:
        _write(c, f"{attempt}/{part}", b"")
    for part in parts:
        c.get_file_info(f"{attempt}/{part}")  # type: ignore[attr-defined]
        c.rename(f"{attempt}/{part}", f"{job}/{part}")  # type: ignore[attr-defined]
    c.delete(f"{job}/_temporary", recursive=True)  # type: ignore[attr-defined]
    _write(c, f"{job}/_SUCCESS", b"")
    list(c.list_status(job))  # type: ignore[attr-defined]
    if rng.random() < 0.5:  # an older job's output is cleaned up
        c.delete(job, recursive=True)  # type: ignore[attr-defined]


def _shell_commands(url: str, rng: np.random.Generator, state: MixedState, round_: int) -> list[tuple[str, list[str]]]:
    """Hadoop tool invocations for the commands hdfs-native cannot issue (one per call)."""
    fs = ["-fs", url]
    path = _some(rng, state.files)
    kind = round_ % 4
    if kind == 0:
        return [(SHELL_CLASS, [*fs, "-truncate", "-w", "0", path])]
    if kind == 1:
        return [(STORAGE_POLICY_CLASS, [*fs, "-setStoragePolicy", "-path", _some(rng, MIXED_DATA), "-policy", "HOT"])]
    if kind == 2:
        target = f"{MIXED}/concat/c{round_:04d}-0"
        sources = [f"{MIXED}/concat/c{round_:04d}-{i}" for i in (1, 2)]
        return [(SHELL_CLASS, [*fs, "-concat", target, *sources])]
    return [(STORAGE_POLICY_CLASS, [*fs, "-getStoragePolicy", "-path", path])]


def _prepare_concat(client: object, rng: np.random.Generator, round_: int) -> None:
    from hdfs_native import WriteOptions

    for i in range(3):  # full blocks of one size: what concat demands
        with client.create(f"{MIXED}/concat/c{round_:04d}-{i}", WriteOptions(block_size=BLOCK)) as writer:  # type: ignore[attr-defined]
            writer.write(rng.bytes(BLOCK))


def _shell_loop(
    cluster: LocalHdfs, url: str, seed: int, state: MixedState, stop: threading.Event, errors: list[str]
) -> None:
    rng = np.random.default_rng(seed + 7)
    launcher = cluster._running_launcher()  # noqa: SLF001 - a bench helper runs the cluster's own tools
    round_ = 0
    while not stop.wait(MIXED_SHELL_PERIOD_S * float(rng.uniform(0.8, 1.2))):
        try:
            if round_ % 4 == 2:
                _prepare_concat(_client(url), rng, round_)
            for main_class, args in _shell_commands(url, rng, state, round_):
                launcher.run_tool(main_class, args, log_file="shell.log", what=" ".join(args[2:4]), timeout_s=120.0)
        except (MimesisError, OSError, RuntimeError) as exc:
            errors.append(str(exc).splitlines()[0])
        round_ += 1


def run_mixed(cluster: LocalHdfs, rng: np.random.Generator, seconds: float, state: MixedState, shell: bool) -> None:
    client = _client(cluster.url)
    started = time.monotonic()
    deadline = started + seconds
    next_poll = started
    next_burst = started + float(rng.uniform(1.0, MIXED_BURST_PERIOD_S))
    stop = threading.Event()
    errors: list[str] = []
    side = threading.Thread(
        target=_shell_loop, args=(cluster, cluster.url, int(rng.integers(1 << 30)), state, stop, errors), daemon=True
    )
    if shell:
        side.start()
    try:
        while (now := time.monotonic()) < deadline:
            if now >= next_poll:  # a periodic daemon: near-constant gaps
                client.get_file_info(f"{MIXED}")  # type: ignore[attr-defined]
                for directory in MIXED_POLLED:
                    list(client.list_status(directory))  # type: ignore[attr-defined]
                next_poll += MIXED_POLL_PERIOD_S * float(rng.uniform(0.99, 1.01))
            elif now >= next_burst:
                _job_burst(client, rng, state)
                next_burst = now + MIXED_BURST_PERIOD_S * float(rng.uniform(0.5, 1.5))
            else:
                try:
                    _mixed_step(client, rng, state, int(time.time() * 1000))
                except (OSError, RuntimeError) as exc:  # e.g. append racing the shell's truncate
                    errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
            _sleep_until(min(deadline, next_poll), float(rng.exponential(0.01)))
    finally:
        stop.set()
        if shell:
            side.join(timeout=180.0)
    for error in errors[:5]:
        print(f"  mixed: {error}", file=sys.stderr)
    if len(errors) > 5:
        print(f"  mixed: ... {len(errors) - 5} more errors", file=sys.stderr)


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


def jobs_programs(seed: int) -> list[tuple[str, list[str]]]:
    """One round of the ``jobs`` workload: the test programs with sizes and order drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    tag = f"r{seed}"
    files = str(int(rng.choice([10, 20, 40])))
    maps = str(int(rng.integers(1, 3)))
    nn = ["-maps", maps, "-reduces", "1", "-blockSize", "1048576", "-bytesToWrite", "0", "-numberOfFiles", files]
    nn += ["-baseDir", f"/benchmarks/NNBench-{tag}", "-readFileAfterOpen", "true"]
    dfsio = [f"-Dtest.build.data=/benchmarks/TestDFSIO-{tag}"]
    io_files, io_size = str(int(rng.integers(2, 5))), f"{int(rng.choice([64, 256, 1024]))}KB"
    slive = ["-maps", maps, "-reduces", "1", "-ops", str(int(rng.choice([100, 200, 400]))), "-files"]
    slive += [str(int(rng.choice([20, 40, 80]))), "-dirSize", str(int(rng.choice([4, 8, 16]))), "-seed", str(seed)]
    slive += ["-baseDir", f"/test/slive-{tag}", "-resFile", f"slive-{tag}.txt", "-blockSize", "1048576,1048576"]
    slive += ["-writeSize", "1024,4096", "-readSize", "1024,4096", "-appendSize", "1024,4096"]
    groups: list[list[tuple[str, list[str]]]] = [
        [(f"mrbench-{tag}", ["mrbench", "-numRuns", str(int(rng.integers(1, 4))), "-maps", maps, "-reduces", "1",
                             "-inputLines", str(int(rng.choice([5, 10, 50]))),
                             "-baseDir", f"/benchmarks/MRBench-{tag}"])],
        [(f"nnbench-{tag}-{i}-{op}", ["nnbench", "-operation", op, *nn])
         for i, op in enumerate(("create_write", "open_read", "delete", "create_write", "rename"))],
        [(f"SliveTest-{tag}", ["SliveTest", *slive])],
        [(f"TestDFSIO-{tag}-{op}", ["TestDFSIO", *dfsio, f"-{op}", *(["-nrFiles", io_files, "-size", io_size]
                                                                     if op != "clean" else [])])
         for op in ("write", "read", "clean")],
    ]  # fmt: skip
    order = rng.permutation(len(groups))
    return [program for index in order for program in groups[int(index)]]


def run_mrjobs(cluster: LocalHdfs, programs: Sequence[tuple[str, list[str]]], log: Callable[[str], None]) -> list[str]:
    """Run MapReduce test programs; returns one line per program that failed (with its error)."""
    version = cluster.status().hadoop_version or "3.4.3"
    hadoop = ensure_jars(version)
    mr = ensure_mr_jars(version)
    scratch = cluster.workdir / "mapred"
    scratch.mkdir(parents=True, exist_ok=True)
    have = {jar.name for jar in hadoop.jars()}
    extra = [jar for jar in mr if jar.name not in have]  # the cluster's own jars are not listed twice
    classpath = os.pathsep.join([str(cluster.layout.conf), *map(str, hadoop.jars()), *map(str, extra)])
    failures: list[str] = []
    for label, program in programs:
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
def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_jobs(cluster: LocalHdfs, seed: int, seconds: float) -> None:
    """Rounds of job mixes until ``seconds`` have passed (at least one round)."""
    deadline = time.monotonic() + seconds
    round_ = 0
    ran = failed = 0
    while round_ == 0 or time.monotonic() < deadline:
        programs = jobs_programs(seed + round_)
        _log(f"  round {round_}: {len(programs)} programs")
        failures = run_mrjobs(cluster, programs, _log)
        ran, failed = ran + len(programs), failed + len(failures)
        round_ += 1
    if failed == ran:
        raise BackendError("every MapReduce program failed")


def run_workload(name: str, out: Path, seconds: float, seed: int, period: float, shell: bool = True) -> Summary:
    workdir = Path(tempfile.mkdtemp(prefix=f"hdfs-{name}-", dir=out))
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap="512m", startup_timeout_s=150.0))
    rng = np.random.default_rng(seed)
    done = False
    try:
        cluster.up()
        url = cluster.url
        tables: list[Table] = []
        mixed = MixedState(files=[], trees=[])
        if name == "poller":
            prepare_poller(url, rng)
        elif name == "readers":
            tables = prepare_readers(url, rng)
        elif name == "mixed":
            mixed = prepare_mixed(url, rng)
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
        elif name == "mixed":
            run_mixed(cluster, rng, seconds, mixed, shell)
        elif name == "jobs":
            run_jobs(cluster, seed, seconds)
        else:
            failures = run_mrjobs(cluster, mr_programs(seed), _log)
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
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated: {','.join(WORKLOADS)}")
    parser.add_argument("--seconds", type=float, default=120.0, help="length of the poller/readers/mixed/jobs loops")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--poll-period", type=float, default=2.0, help="poller period in seconds")
    parser.add_argument("--no-shell", action="store_true", help="mixed: no truncate/concat/storage policy (no JVMs)")
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
            summary = run_workload(name, out, args.seconds, args.seed, args.poll_period, not args.no_shell)
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
