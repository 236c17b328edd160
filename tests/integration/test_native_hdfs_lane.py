"""The native HDFS lane (``native/src/hdfs.rs``) against the Python dispatcher, its reference, on
the real NameNode.

The same events replayed by both (``run_native_lane`` with the keyed ``HdfsLane`` and
``run_async_dispatch`` over the backend's ``aio_*`` operations) must give the same outcome per
operation, every operation and every outcome the backend gives, and leave the same namespace,
paced and as fast as possible; drift, a stop mid-lane and a dead NameNode end both alike; the
conformance suite passes through the native lane; a run replays through it and Ctrl-C keeps its
partial results. The native extension is required: these tests fail, not skip, without it. No
timing assertions (``bench/bench_client_cost.py`` and ``bench/bench_nnthroughput.py`` measure).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hdfs_native import Client

from mimesisbench.backends.base import Backend, NativeLaneRunner, Outcome
from mimesisbench.backends.conformance import CASES, Target, check_random_sequences, run_case
from mimesisbench.backends.hdfs import HDFS_CAPABILITIES, HdfsBackend
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.jobs import StopSignal
from mimesisbench.native import ENV_SWITCH
from mimesisbench.run.lanes import Lane, run_async_dispatch, run_native_lane
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration

Op = OpCode
Step = tuple[OpCode, str] | tuple[OpCode, str, str]
ROOT = "/native-lane"
FAR = 60_000_000_000  # a due time a minute away: the lane waits there until stopped

#: every operation the hdfs backend performs or maps, and the outcomes it gives
SCRIPT: list[Step] = [
    (Op.MKDIRS, "/d"),
    (Op.MKDIRS, "/d"),  # exists
    (Op.MKDIRS, "/x/y"),  # not_found
    (Op.CREATE, "/d/a"),
    (Op.CREATE, "/d/a"),  # exists
    (Op.CREATE, "/made/on/the/way/a"),  # parents made
    (Op.OPEN, "/d/a"),
    (Op.OPEN, "/d/missing"),  # not_found
    (Op.LIST_FILE, "/d/a"),
    (Op.LIST_FILE, "/d/missing"),  # not_found
    (Op.GETFILEINFO, "/d/a"),
    (Op.GETFILEINFO, "/d/a/below"),  # through a file
    (Op.LIST_DIR, "/d"),
    (Op.LIST_DIR, "/nodir"),  # not_found
    (Op.RENAME_FILE, "/d/a", "/d/b"),
    (Op.RENAME_FILE, "/d/a", "/d/c"),  # source gone
    (Op.CREATE, "/d/c"),
    (Op.RENAME_FILE, "/d/b", "/d/c"),  # target exists
    (Op.MKDIRS, "/m"),
    (Op.CREATE, "/m/f"),
    (Op.RENAME_DIR, "/m", "/m.r1"),
    (Op.RENAME_DIR, "/m.r1", "/m.r1/inside"),  # below itself: other
    (Op.MKDIRS, "/m.r1/sub"),
    (Op.RENAME_DIR, "/m.r1", "/m.r1/sub"),  # below itself onto an existing path: exists
    (Op.DELETE, "/d/b"),
    (Op.DELETE, "/d/b"),  # not_found
    (Op.DELETE, "/d"),  # a non-empty directory: exists
    (Op.GETFILEINFO_DIR, "/d"),
    (Op.CONTENT_SUMMARY, "/d/c"),
    (Op.CONTENT_SUMMARY_DIR, "/d"),
    (Op.CONTENT_SUMMARY_DIR, "/gone"),  # not_found
    (Op.SET_PERMISSION, "/d/c"),
    (Op.SET_PERMISSION_DIR, "/d"),
    (Op.SET_OWNER, "/d/c"),
    (Op.SET_OWNER_DIR, "/d"),
    (Op.SET_TIMES, "/d/c"),
    (Op.SET_TIMES_DIR, "/d"),
    (Op.SET_REPLICATION, "/d/c"),
    (Op.SET_REPLICATION, "/d/none"),  # not_found
    (Op.APPEND, "/d/c"),
    (Op.APPEND, "/d/none"),  # not_found
    (Op.CREATE_OVERWRITE, "/d/c"),
    (Op.CREATE_OVERWRITE, "/d/new"),
    (Op.MKDIRS_EXISTING, "/d"),
    (Op.MKDIRS_PARENTS, "/p/q/r"),
    (Op.GET_ACL_STATUS, "/d/c"),
    (Op.GET_ACL_STATUS_DIR, "/d"),
    (Op.GETFILEINFO_ABSENT, "/d/gone"),  # a miss is the answer: ok
    (Op.GETFILEINFO_ABSENT_DIR, "/d"),
    (Op.TRUNCATE, "/d/c"),  # mapped: create_overwrite
    (Op.CONCAT, "/d/c"),  # mapped: append
    (Op.CHECK_ACCESS, "/d/c"),  # mapped: getfileinfo
    (Op.SET_XATTR_DIR, "/d"),  # mapped: set_permission_dir
    (Op.DELETE_DIR, "/p"),
    (Op.DELETE_DIR, "/p"),  # not_found
]


@pytest.fixture(scope="module", autouse=True)
def _remove_root(local_hdfs: LocalHdfs) -> Iterator[None]:
    """Leave the session's namespace as found (other modules model its image and audit log)."""
    yield
    Client(local_hdfs.url).delete(ROOT, True)


def _backend(cluster: LocalHdfs, name: str = "") -> HdfsBackend:
    backend = HdfsBackend(f"{cluster.url}{ROOT}/{name or uuid.uuid4().hex[:12]}")
    backend.setup(reuse=False)
    backend.connect()
    return backend


def _runner(backend: Backend) -> NativeLaneRunner:
    runner = backend.native_lane_runner()
    assert runner is not None and runner.keyed, "the native extension is required (scripts/setup.sh --dev builds it)"
    return runner


def _lane(backend: Backend, steps: list[Step], due_ns: list[int] | None = None) -> tuple[Lane, np.ndarray]:
    """The lane and each event's object (its path: events on one path depend on each other)."""
    rel = pl.Series([s[1] for s in steps])
    rel2 = pl.Series([s[2] if len(s) > 2 else None for s in steps], dtype=pl.String)  # type: ignore[misc]
    lane = Lane(
        rows=np.arange(len(steps), dtype=np.int64),
        ops=np.array([int(s[0]) for s in steps], dtype=np.uint8),
        due_ns=np.array(due_ns if due_ns is not None else [0] * len(steps), dtype=np.int64),
        paths=backend.native_paths(rel),
        paths2=backend.native_paths(rel2) if rel2.is_not_null().any() else None,
    )
    keys = rel.rank("dense").cast(pl.Int64).to_numpy()
    return lane, keys


def _python(lane: Lane, keys: np.ndarray, backend: Backend, origin: int, stop: StopSignal, **kw: Any) -> None:
    fns: list[Any] = [None] * (max(int(o) for o in OpCode) + 1)
    for op, fn in backend.async_ops().items():
        fns[int(op)] = fn
    asyncio.run(run_async_dispatch(lane, keys, fns, origin, stop, classify=backend.classify,
                                   op_errors=backend.op_errors, **kw))


def _native(lane: Lane, keys: np.ndarray, backend: Backend, origin: int, stop: StopSignal, **kw: Any) -> None:
    runner = _runner(backend)
    flag = runner.stop_flag()
    stop.add_listener(flag.set)
    run_native_lane(lane, runner, origin, stop, flag, keys=keys, **kw)


Run = Callable[..., None]
LANES: tuple[tuple[str, Run], ...] = (("python", _python), ("native", _native))


def _namespace(backend: HdfsBackend) -> list[tuple[str, bool, int, int]]:
    base = backend.base
    return sorted(
        (s.path[len(base):], bool(s.isdir), int(s.permission), int(s.length))
        for s in backend.client.list_status(base, True)
        if ".mimesisbench" not in s.path
    )


@pytest.mark.parametrize("paced", [False, True], ids=["as-fast-as-possible", "paced"])
def test_native_and_python_lanes_agree_on_every_operation_and_outcome(local_hdfs: LocalHdfs, paced: bool) -> None:
    due = [i * 200_000 for i in range(len(SCRIPT))]  # 0.2 ms apart when paced
    results = {}
    for name, run in LANES:
        backend = _backend(local_hdfs)
        lane, keys = _lane(backend, SCRIPT, due)
        origin = time.monotonic_ns() + 20_000_000
        stop = StopSignal()
        # one in flight: the script's order is the order of effect (its paths are different objects)
        run(lane, keys, backend, origin, stop, paced=paced, outstanding=1)
        assert stop.reason is None
        assert lane.count == len(SCRIPT)
        assert (lane.end_ns >= lane.start_ns).all() and (lane.start_ns >= origin).all()
        if paced:
            assert (lane.start_ns >= origin + lane.due_ns).all()
        results[name] = ([Outcome(int(o)) for o in lane.outcome], _namespace(backend))
    outcomes, namespace = results["native"]
    assert outcomes == results["python"][0]
    assert namespace == results["python"][1]
    exists, not_found, other = {1, 4, 17, 23, 26}, {2, 7, 9, 13, 15, 25, 30, 38, 40, 54}, {21}
    assert {i for i, o in enumerate(outcomes) if o is Outcome.EXISTS} == exists
    assert {i for i, o in enumerate(outcomes) if o is Outcome.OTHER} == other
    assert not_found <= {i for i, o in enumerate(outcomes) if o is Outcome.NOT_FOUND} <= not_found | {11}
    assert ("/m.r1/sub", True, 0o755, 0) in namespace and ("/d/c", False, 0o644, 0) in namespace


def test_a_hot_object_has_many_operations_in_flight_and_its_order_holds(local_hdfs: LocalHdfs) -> None:
    """One file: its create, 2,000 reads, its delete; 32 in flight. Reads overlap each other
    (the open loop), never the create before them or the delete after them."""
    steps: list[Step] = [(Op.CREATE, "/hot/f")]
    steps += [(Op.OPEN if i % 2 else Op.GETFILEINFO, "/hot/f") for i in range(2000)]
    steps += [(Op.DELETE, "/hot/f")]
    backend = _backend(local_hdfs)
    lane, keys = _lane(backend, steps)
    stop = StopSignal()
    _native(lane, keys, backend, time.monotonic_ns(), stop, paced=False, outstanding=32)
    assert stop.reason is None and lane.count == len(steps)
    assert (lane.outcome == 0).all()
    reads = slice(1, len(steps) - 1)
    assert lane.start_ns[reads].min() >= lane.end_ns[0]
    assert lane.start_ns[-1] >= lane.end_ns[reads].max()
    starts, ends = lane.start_ns[reads], lane.end_ns[reads]
    in_flight = np.searchsorted(np.sort(starts), ends) - np.searchsorted(np.sort(ends), ends)
    assert in_flight.max() > 4  # reads of one file in flight together (one lane per file: 1)


def test_drift_stops_both_lanes_alike_and_records_nothing_for_the_late_op(local_hdfs: LocalHdfs) -> None:
    steps: list[Step] = [(Op.MKDIRS, "/late"), (Op.CREATE, "/late/a")]
    for name, run in LANES:
        backend = _backend(local_hdfs)
        lane, keys = _lane(backend, steps)
        stop = StopSignal()
        run(lane, keys, backend, time.monotonic_ns() - 5_000_000_000, stop, max_drift_ns=1_000_000_000,
            outstanding=4)
        assert stop.reason == "drift", name
        assert lane.count == 0, name
        assert "behind schedule" in stop.message
        assert _namespace(backend) == [], name  # nothing issued


def test_a_stop_mid_lane_ends_both_alike_and_keeps_what_was_recorded(local_hdfs: LocalHdfs) -> None:
    steps: list[Step] = [(Op.CREATE, f"/s/f{i}") for i in range(5)] + [(Op.CREATE, "/s/never")]
    for name, run in LANES:
        backend = _backend(local_hdfs)
        lane, keys = _lane(backend, steps, [0, 0, 0, 0, 0, FAR])
        stop = StopSignal()
        timer = __import__("threading").Timer(1.5, stop.set, args=("interrupted", "test"))
        timer.start()
        began = time.monotonic()
        run(lane, keys, backend, time.monotonic_ns(), stop, outstanding=8)
        assert time.monotonic() - began < 30, name  # the wait for the far event ended at the stop
        assert stop.reason == "interrupted", name
        assert lane.count == 5 and (lane.outcome[:5] == 0).all(), name
        assert [p for p, *_ in _namespace(backend)] == ["/s", *(f"/s/f{i}" for i in range(5))], name


def test_a_dead_namenode_fails_the_native_lane_with_its_address() -> None:
    backend = HdfsBackend("hdfs://127.0.0.1:1/none")
    backend._owner = ("u", "g")  # what connect would have read; the lane connects by itself
    lane, keys = _lane(backend, [(Op.GETFILEINFO, "/x")])
    stop = StopSignal()
    with pytest.raises(Exception, match="127.0.0.1:1"):
        _native(lane, keys, backend, time.monotonic_ns(), stop, paced=False)
    assert stop.reason == "failed" and lane.count == 0


# ---------------------------------------------------------------------- conformance through the lane


class NativeHdfsTarget(Target):
    """The hdfs backend, each operation issued through the native lane (one-event dispatches)."""

    def call(self, op: OpCode, *rel: str) -> Outcome:
        lane, keys = _lane(self.backend, [(op, *rel)])  # type: ignore[list-item]
        stop = StopSignal()
        _native(lane, keys, self.backend, time.monotonic_ns(), stop, paced=False)
        assert stop.reason is None and lane.count == 1
        return Outcome(int(lane.outcome[0]))


def _factory(cluster: LocalHdfs) -> Callable[[], tuple[Backend, Callable[[], None]]]:
    def make() -> tuple[Backend, Callable[[], None]]:
        backend = _backend(cluster)

        def cleanup() -> None:
            backend.client.delete(backend.base, True)
            backend.close()

        return backend, cleanup

    return make


HDFS_CASES = [c for c in CASES if c.applies_to(HDFS_CAPABILITIES)]


def test_the_conformance_suite_passes_through_the_native_lane(local_hdfs: LocalHdfs) -> None:
    for case in HDFS_CASES:
        assert run_case(_factory(local_hdfs), case, target=NativeHdfsTarget), case.name


def test_random_sequences_through_the_native_lane_agree_with_the_reference(local_hdfs: LocalHdfs) -> None:
    check_random_sequences(_factory(local_hdfs), max_examples=15, steps=20, target=NativeHdfsTarget)


# ---------------------------------------------------------------------- runs and micro


def _trace(path: Path, files: int) -> Path:
    rows = [(0, "create", f"/t/f{i}") for i in range(files)]
    rows += [(1 + i, "getfileinfo" if i % 2 else "open", f"/t/f{i % files}") for i in range(40 * files)]
    rows += [(1 + 40 * files + i, "delete", f"/t/f{i}") for i in range(files)]
    pl.DataFrame({"time_ms": [1_700_000_000_000 + t for t, *_ in rows], "op": [r[1] for r in rows],
                  "path": [r[2] for r in rows], "dst": None, "user": "u", "allowed": True}).write_csv(path)
    return path


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.parametrize("afap", [False, True], ids=["paced", "as-fast-as-possible"])
def test_a_run_replays_alike_through_the_native_and_the_python_lane(local_hdfs: LocalHdfs, tmp_path: Path,
                                                                     afap: bool) -> None:
    schedule = tmp_path / "schedule"
    done = _cli("schedule-from-trace", str(_trace(tmp_path / "trace.csv", 20)), "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    runs = {}
    for name, switch in (("native", "1"), ("python", "0")):
        out = tmp_path / f"runs-{name}"
        timing = ["--as-fast-as-possible"] if afap else ["--time-scale", "0.5"]
        done = _cli("run", str(schedule), "-b", f"{local_hdfs.url}{ROOT}/run-{name}-{uuid.uuid4().hex[:6]}",
                    "--workers", "2", "--concurrency", "16", *timing, "--hdfs-workdir", str(local_hdfs.workdir),
                    "-o", str(out), "-q", env={**os.environ, ENV_SWITCH: switch})
        assert done.returncode == 0, done.stdout + done.stderr
        run_dir = next(out.iterdir())
        manifest = json.loads((run_dir / "manifest.json").read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
        samples = pl.read_parquet(run_dir / "samples.parquet").sort("worker", "type", "seq", "op")
        runs[name] = (manifest["lane_impl"], summary, samples)
    (impl_n, summary_n, samples_n), (impl_p, summary_p, samples_p) = runs["native"], runs["python"]
    assert impl_n[0].startswith("native-hdfs-") and impl_p == ["python"]
    assert summary_n["status"] == summary_p["status"] == "complete"
    assert summary_n["mode"] == summary_p["mode"] == ("as-fast-as-possible" if afap else "paced")
    assert summary_n["operations_issued"] == summary_p["operations_issued"] == 20 * 42
    assert summary_n["operations_failed"] == summary_p["operations_failed"] == 0
    keys = ["worker", "type", "seq", "op", "outcome"]  # as fast as possible, "scheduled" is the start
    assert samples_n.select(keys).rows() == samples_p.select(keys).rows()
    assert summary_n["cost"]["client_cpu_s"] > 0 and summary_n["cost"]["server"]["namenode"]["cpu_s"] > 0


def test_ctrl_c_keeps_the_native_lanes_partial_results(local_hdfs: LocalHdfs, tmp_path: Path) -> None:
    schedule = tmp_path / "schedule"
    done = _cli("schedule-from-trace", str(_trace(tmp_path / "trace.csv", 50)), "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "runs"
    # 2,100 operations over about 42 s (1 ms apart in the trace, time scale 20): interrupted after a few seconds
    proc = subprocess.Popen([sys.executable, "-m", "mimesisbench", "run", str(schedule), "-b",
                             f"{local_hdfs.url}{ROOT}/ctrl-c", "--time-scale", "20", "--hdfs-workdir",
                             str(local_hdfs.workdir), "-o", str(out), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(out.glob("*/manifest.json")):
        time.sleep(0.2)
    time.sleep(5)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 6, stdout + stderr
    run_dir = next(out.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    samples = pl.read_parquet(run_dir / "samples.parquet")
    assert manifest["lane_impl"][0].startswith("native-hdfs-")
    assert summary["status"] == "interrupted"
    assert 0 < samples.height == summary["operations_issued"] < summary["operations_scheduled"]


def test_micro_runs_through_the_native_client_and_reports_both_cpu_costs(local_hdfs: LocalHdfs) -> None:
    from mimesisbench.micro.bench import run_micro
    from mimesisbench.micro.config import MicroConfig

    reads = iter(range(1, 10**9))
    result = run_micro(MicroConfig(op="create", files=400, backend=f"{local_hdfs.url}{ROOT}/micro", concurrency=16),
                       server_cpu=lambda: float(next(reads))).to_json()
    assert result["client"] == "native" and result["errors"] == 0
    assert result["client_cpu_us_per_op"] > 0
    assert result["server_cpu_us_per_op"] == pytest.approx(1e6 / 400)  # one server reading before, one after


def test_a_linger_reads_replies_only_after_its_nap(local_hdfs: LocalHdfs) -> None:
    """``linger=5ms``: with its calls out the lane sleeps 5 ms before reading, so no operation
    ends sooner than 5 ms after it started, and 4 clients make at most 4 operations per nap."""
    from mimesisbench.micro.bench import run_micro
    from mimesisbench.micro.config import MicroConfig

    result = run_micro(MicroConfig(op="fileStatus", files=200, backend=f"{local_hdfs.url}{ROOT}/linger?linger=5ms",
                                   concurrency=4)).to_json()
    assert result["client"] == "native" and result["errors"] == 0
    assert result["backend_info"]["linger"] == "5ms"
    assert result["latency_ms"]["p50"] >= 5.0
    assert result["ops_per_s"] <= 4 / 5e-3
