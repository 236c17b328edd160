"""The native POSIX lane (``native/src/posix.rs``) against the Python lane, its reference.

Real directories under ``tmp_path``, no mocks. The same schedule replayed by both lanes must give
the same outcome per operation (including not_found / exists), the same counts and the same tree;
drift, a stop request (before, during the wait for the barrier, mid-lane) and an operation that
cannot be issued must end both alike. The native extension is required (``setup.sh --dev``
builds it): these tests fail, not skip, without it. No timing assertions (see ``bench/``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.unit.test_run_failures import InterruptingEngine
from tests.unit.test_run_schedules import workload

from mimesisbench.backends.base import Capabilities, NativeLaneRunner, Outcome
from mimesisbench.backends.conformance import CASES, Case, Target, check_random_sequences, run_case
from mimesisbench.backends.posix import NATIVE_OPS, PosixBackend, posix_capabilities, xattrs_supported
from mimesisbench.errors import BackendError
from mimesisbench.jobs import StopSignal
from mimesisbench.native import ENV_SWITCH, native_module
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.lanes import Lane, binary_buffers, run_native_lane, run_sync_lane
from mimesisbench.run.partition import plan_partition
from mimesisbench.run.phase1 import build_namespace
from mimesisbench.run.worker import WorkerSpec, run_worker_inline
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.format import OpCode

Op = OpCode
Step = tuple[OpCode, str] | tuple[OpCode, str, str]

#: every operation, every outcome the posix backend can give without privileges
SCRIPT: list[Step] = [
    (Op.MKDIRS, "/d"),
    (Op.MKDIRS, "/d"),  # exists
    (Op.MKDIRS, "/x/y"),  # not_found
    (Op.CREATE, "/d/a"),
    (Op.CREATE, "/d/a"),  # exists
    (Op.CREATE, "/made/on/the/way/a"),  # the missing parents are made (as HDFS's create)
    (Op.OPEN, "/d/a"),
    (Op.OPEN, "/d/missing"),  # not_found
    (Op.OPEN, "/d"),  # a directory opens read-only
    (Op.LIST_FILE, "/d/a"),
    (Op.LIST_FILE, "/d/missing"),  # not_found
    (Op.GETFILEINFO, "/d/a"),
    (Op.GETFILEINFO, "/d/a/below"),  # ENOTDIR: not_found
    (Op.LIST_DIR, "/d"),
    (Op.LIST_DIR, "/"),
    (Op.LIST_DIR, "/d/a"),  # ENOTDIR: not_found
    (Op.LIST_DIR, "/nodir"),  # not_found
    (Op.RENAME_FILE, "/d/a", "/d/b"),
    (Op.RENAME_FILE, "/d/a", "/d/c"),  # source gone: not_found
    (Op.CREATE, "/d/c"),
    (Op.RENAME_FILE, "/d/b", "/d/c"),  # target exists: exists
    (Op.RENAME_FILE, "/d/zz", "/d/c"),  # target exists, source missing: not_found
    (Op.MKDIRS, "/m"),
    (Op.CREATE, "/m/f"),
    (Op.RENAME_DIR, "/m", "/m.r1"),
    (Op.RENAME_DIR, "/m.r1", "/m.r1/inside"),  # EINVAL: other
    (Op.LIST_DIR, "/m.r1"),
    (Op.DELETE, "/d/b"),
    (Op.DELETE, "/d/b"),  # not_found
    (Op.DELETE, "/d"),  # EISDIR: other
    (Op.CREATE, "/d/c/x"),  # ENOTDIR: not_found
    (Op.MKDIRS, "/m.r1/f/z"),  # ENOTDIR: not_found
    (Op.DELETE, "/m.r1/f"),
    (Op.RENAME_DIR, "/m.r1", "/m2"),
]
EXPECTED = [
    Outcome.OK, Outcome.EXISTS, Outcome.NOT_FOUND, Outcome.OK, Outcome.EXISTS, Outcome.OK,
    Outcome.OK, Outcome.NOT_FOUND, Outcome.OK, Outcome.OK, Outcome.NOT_FOUND, Outcome.OK, Outcome.NOT_FOUND,
    Outcome.OK, Outcome.OK, Outcome.NOT_FOUND, Outcome.NOT_FOUND, Outcome.OK, Outcome.NOT_FOUND, Outcome.OK,
    Outcome.EXISTS, Outcome.NOT_FOUND, Outcome.OK, Outcome.OK, Outcome.OK, Outcome.OTHER, Outcome.OK,
    Outcome.OK, Outcome.NOT_FOUND, Outcome.OTHER, Outcome.NOT_FOUND, Outcome.NOT_FOUND, Outcome.OK, Outcome.OK,
]
FAR = 60_000_000_000  # a due time a minute away: the lane waits there until stopped


def _backend(root: Path) -> PosixBackend:
    backend = PosixBackend(f"posix:{root}")
    backend.setup(reuse=False)
    backend.connect()
    return backend


def _runner(backend: PosixBackend) -> NativeLaneRunner:
    runner = backend.native_lane_runner()
    assert runner is not None, "the native extension is required (scripts/setup.sh --dev builds it)"
    return runner


def _lane(backend: PosixBackend, steps: list[Step], due_ns: list[int] | None = None) -> Lane:
    ops = np.array([int(s[0]) for s in steps], dtype=np.uint8)
    due = np.array(due_ns if due_ns is not None else [0] * len(steps), dtype=np.int64)
    rel = pl.Series([s[1] for s in steps])
    rel2 = pl.Series([s[2] if len(s) > 2 else None for s in steps], dtype=pl.String)  # type: ignore[misc]
    has_rename = rel2.is_not_null().any()
    return Lane(
        rows=np.arange(len(steps), dtype=np.int64),
        ops=ops,
        due_ns=due,
        paths=backend.native_paths(rel),
        paths2=backend.native_paths(rel2) if has_rename else None,
    )


def _python(lane: Lane, backend: PosixBackend, origin: int, stop: StopSignal, **kw: object) -> None:
    fns: list[object] = [None] * (max(int(o) for o in OpCode) + 1)
    for op, fn in backend.sync_ops().items():
        fns[int(op)] = fn
    run_sync_lane(lane, fns, origin, stop, classify=backend.classify, op_errors=backend.op_errors, **kw)  # type: ignore[arg-type]


def _native(lane: Lane, backend: PosixBackend, origin: int, stop: StopSignal, **kw: object) -> None:
    runner = _runner(backend)
    flag = runner.stop_flag()
    stop.add_listener(flag.set)
    run_native_lane(lane, runner, origin, stop, flag, **kw)  # type: ignore[arg-type]


def _tree(root: Path) -> list[tuple[str, bool, int]]:
    return sorted(
        (str(p.relative_to(root)), p.is_dir(), p.lstat().st_mode & 0o7777)
        for p in root.rglob("*")
        if not p.name.startswith(".mimesisbench")
    )


def test_the_native_module_is_installed() -> None:
    module = native_module()
    assert module is not None and hasattr(module, "run_posix_lane")


@pytest.mark.parametrize("paced", [False, True])
def test_native_and_python_lanes_agree_on_every_outcome(tmp_path: Path, paced: bool) -> None:
    due = [i * 100_000 for i in range(len(SCRIPT))]  # 0.1 ms apart when paced
    results = {}
    for name, run in (("python", _python), ("native", _native)):
        backend = _backend(tmp_path / name)
        lane = _lane(backend, SCRIPT, due)
        origin = time.monotonic_ns() + 2_000_000
        stop = StopSignal()
        run(lane, backend, origin, stop, paced=paced)
        assert stop.reason is None
        assert lane.count == len(SCRIPT)
        assert (lane.end_ns >= lane.start_ns).all()
        if paced:
            assert (lane.start_ns >= origin + lane.due_ns).all()
        else:
            assert (lane.start_ns >= origin).all()
            assert (np.diff(lane.start_ns) >= 0).all()  # in order, one after the other
        results[name] = ([Outcome(int(o)) for o in lane.outcome], _tree(tmp_path / name))
    assert results["native"][0] == results["python"][0] == EXPECTED
    assert results["native"][1] == results["python"][1]
    umask = os.umask(0o022)
    os.umask(umask)
    assert ("m2", True, 0o755 & ~umask) in results["native"][1] and ("d/c", False, 0o644 & ~umask) in results["native"][1]


def test_lane_without_renames_and_many_paths(tmp_path: Path) -> None:
    """A lane of thousands of operations (no rename targets): creates, lstats, deletes."""
    backend = _backend(tmp_path / "b")
    names = [f"/f{i}" for i in range(3000)]
    steps: list[Step] = [(Op.CREATE, n) for n in names] + [(Op.GETFILEINFO, n) for n in names]
    steps += [(Op.DELETE, n) for n in names[::2]] + [(Op.OPEN, n) for n in names[:4]]
    lane = _lane(backend, steps)
    assert lane.paths2 is None
    stop = StopSignal()
    _native(lane, backend, time.monotonic_ns(), stop, paced=False)
    assert stop.reason is None and lane.count == len(steps)
    assert (lane.outcome[: 2 * len(names) + len(names) // 2] == 0).all()
    assert [Outcome(int(o)) for o in lane.outcome[-4:]] == [Outcome.NOT_FOUND, Outcome.OK] * 2
    assert len([p for p in (tmp_path / "b").iterdir() if p.name.startswith("f")]) == len(names) // 2


def test_binary_buffers_hold_each_path_and_nulls_as_empty() -> None:
    series = pl.Series([b"/base/a", None, b"/base/long/name", b""], dtype=pl.Binary)
    offsets, data = binary_buffers(series.slice(0, 4))
    got = [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(4)]
    assert got == [b"/base/a", b"", b"/base/long/name", b""]
    offsets, data = binary_buffers(series.slice(2, 2))
    assert [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(2)] == [b"/base/long/name", b""]


def test_drift_stops_both_lanes_alike_and_records_nothing_for_the_late_op(tmp_path: Path) -> None:
    steps: list[Step] = [(Op.CREATE, "/a"), (Op.OPEN, "/a"), (Op.GETFILEINFO, "/a"), (Op.DELETE, "/a")]
    due = [0, 0, 0, -10_000_000_000]  # the fourth is 10 s late when its turn comes
    for name, run in (("python", _python), ("native", _native)):
        backend = _backend(tmp_path / name)
        lane = _lane(backend, steps, due)
        stop = StopSignal()
        run(lane, backend, time.monotonic_ns(), stop, max_drift_ns=1_000_000_000, paced=True)
        assert stop.reason == "drift", name
        assert stop.message.endswith("s behind schedule") and float(stop.message.split()[0]) >= 10.0
        assert lane.count == 3 and lane.end_ns[3] == 0 and lane.start_ns[3] == 0
        assert (tmp_path / name / "a").is_file()  # the delete was never issued


def test_drift_in_one_native_lane_stops_its_sibling(tmp_path: Path) -> None:
    backend = _backend(tmp_path / "b")
    runner = _runner(backend)
    waiting = _lane(backend, [(Op.CREATE, "/w"), (Op.OPEN, "/w")], [0, FAR])
    late = _lane(backend, [(Op.CREATE, "/l"), (Op.OPEN, "/l")], [0, -10_000_000_000])
    stop = StopSignal()
    flag = runner.stop_flag()
    stop.add_listener(flag.set)
    origin = time.monotonic_ns()
    sibling = threading.Thread(target=run_native_lane, args=(waiting, runner, origin, stop, flag))
    sibling.start()
    deadline = time.monotonic() + 30
    while waiting.count < 1 and time.monotonic() < deadline:  # the sibling is waiting for its second op
        time.sleep(0.001)
    run_native_lane(late, runner, origin, stop, flag, max_drift_ns=1_000_000_000)
    sibling.join(30)
    assert not sibling.is_alive()
    assert stop.reason == "drift" and late.count == 1 and waiting.count == 1


def test_a_stop_mid_lane_ends_the_wait_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    backend = _backend(tmp_path / "b")
    steps: list[Step] = [(Op.CREATE, "/a"), (Op.GETFILEINFO, "/a"), (Op.DELETE, "/a"), (Op.CREATE, "/b")]
    lane = _lane(backend, steps, [0, 0, 0, FAR])
    stop = StopSignal()
    thread = threading.Thread(target=_native, args=(lane, backend, time.monotonic_ns(), stop), kwargs={"paced": True})
    thread.start()
    deadline = time.monotonic() + 30
    while lane.count < 3 and time.monotonic() < deadline:  # the count is published while it runs
        time.sleep(0.001)
    assert lane.count == 3
    stop.set("stopped", "stopped by the coordinator")
    thread.join(30)
    assert not thread.is_alive()
    assert stop.reason == "stopped" and lane.count == 3
    assert (lane.outcome[:3] == 0).all() and lane.start_ns[3] == 0
    assert not (tmp_path / "b" / "b").exists()


@pytest.mark.parametrize("paced", [False, True])
def test_a_stop_while_waiting_for_the_barrier_issues_nothing(tmp_path: Path, paced: bool) -> None:
    backend = _backend(tmp_path / "b")
    lane = _lane(backend, [(Op.CREATE, "/a")])
    stop = StopSignal()
    origin = time.monotonic_ns() + FAR
    thread = threading.Thread(target=_native, args=(lane, backend, origin, stop), kwargs={"paced": paced})
    thread.start()
    time.sleep(0.05)
    stop.set("stopped", "stopped by the coordinator")
    thread.join(30)
    assert not thread.is_alive()
    assert lane.count == 0 and not (tmp_path / "b" / "a").exists()


def test_a_stop_set_before_the_lane_starts_issues_nothing(tmp_path: Path) -> None:
    backend = _backend(tmp_path / "b")
    lane = _lane(backend, [(Op.CREATE, "/a"), (Op.CREATE, "/b")])
    stop = StopSignal()
    stop.set("stopped", "early")
    _native(lane, backend, time.monotonic_ns(), stop, paced=False)  # the listener fires at once
    assert lane.count == 0 and not (tmp_path / "b" / "a").exists()


@pytest.mark.parametrize("bad", ["opcode", "nul"])
def test_an_operation_that_cannot_be_issued_fails_the_lane_like_the_python_one(tmp_path: Path, bad: str) -> None:
    for name, run in (("python", _python), ("native", _native)):
        backend = _backend(tmp_path / name)
        steps: list[Step] = [(Op.CREATE, "/a"), (Op.OPEN, "/a"), (Op.DELETE, "/a")]
        lane = _lane(backend, steps)
        if bad == "opcode":
            lane.ops[1] = 0  # no operation has code 0
        else:
            lane.paths = pl.Series([str(tmp_path / name / "a").encode(), f"{tmp_path / name}/a\x00b".encode(),
                                    str(tmp_path / name / "a").encode()], dtype=pl.Binary)
        stop = StopSignal()
        with pytest.raises((BackendError, TypeError, ValueError)):
            run(lane, backend, time.monotonic_ns(), stop, paced=False)
        assert stop.reason == "failed", name
        assert lane.count == 2 and [int(o) for o in lane.outcome[:2]] == [0, int(Outcome.OTHER)]
        assert lane.end_ns[1] >= lane.start_ns[1] > 0
        assert (tmp_path / name / "a").is_file()  # the delete after it was never issued


def test_native_lane_rejects_inputs_of_the_wrong_shape(tmp_path: Path) -> None:
    backend = _backend(tmp_path / "b")
    runner = _runner(backend)
    lane = _lane(backend, [(Op.CREATE, "/a"), (Op.CREATE, "/b")])
    inputs = lane.native_inputs()
    kw = {"origin_ns": 0, "max_drift_ns": 1, "paced": False, "spin_ns": 0, "stop": runner.stop_flag(),
          "progress": runner.progress()}
    with pytest.raises(ValueError, match="offsets"):
        runner.run(inputs.ops, inputs.due_ns, inputs.offsets[:-1], inputs.data, None, None,
                   lane.start_ns, lane.end_ns, lane.outcome, **kw)
    with pytest.raises(ValueError, match="one entry per operation"):
        runner.run(inputs.ops, inputs.due_ns, inputs.offsets, inputs.data, None, None,
                   lane.start_ns[:1], lane.end_ns, lane.outcome, **kw)
    assert not (tmp_path / "b" / "a").exists()


def test_the_switch_turns_the_native_lane_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = PosixBackend(f"posix:{tmp_path / 'b'}")
    assert backend.native_lane_runner() is not None
    monkeypatch.setenv(ENV_SWITCH, "0")
    assert backend.native_lane_runner() is None


# ---------------------------------------------------------------------- whole workers and runs


def _worker_run(tmp_path: Path, name: str, **spec: object) -> tuple[pl.DataFrame, str, str, int]:
    schedule = workload(tmp_path / f"s-{name}", files_per_type=40)
    sched = load_schedule(schedule)
    base = tmp_path / f"base-{name}"
    backend = PosixBackend(f"posix:{base}")
    backend.setup(reuse=False)
    build_namespace(backend, sched, threads=1, show_progress=False)
    plan = plan_partition(sched.files["type"].unique().to_list(), 1)
    ws = WorkerSpec(index=0, schedule_dir=str(schedule), backend_url=f"posix:{base}", plan=plan,
                    parts_dir=str(tmp_path / f"parts-{name}"), max_drift_ns=None, live_metrics=True,
                    **spec)  # type: ignore[arg-type]
    ready, result = run_worker_inline(ws, time.time_ns() + 50_000_000)
    part = np.load(result.part_path)  # type: ignore[arg-type]
    frame = pl.DataFrame({k: part[k] for k in ("row", "start_ns", "end_ns", "outcome")}).sort("row")
    assert result.live is not None
    return frame, ready.lane_impl, result.status, result.live.operations


@pytest.mark.parametrize("time_scale", [0.0, 1.0])
def test_a_worker_replays_alike_with_native_and_python_lanes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, time_scale: float
) -> None:
    native, impl_n, status_n, live_n = _worker_run(tmp_path, "native", time_scale=time_scale, concurrency=4)
    monkeypatch.setenv(ENV_SWITCH, "0")
    python, impl_p, status_p, live_p = _worker_run(tmp_path, "python", time_scale=time_scale, concurrency=4)
    assert impl_n.startswith("native-posix-") and impl_p == "python"
    assert status_n == status_p == "complete"
    assert native["row"].to_list() == python["row"].to_list()
    assert live_n == live_p == native.height  # live metrics see every operation of native lanes too
    assert native["outcome"].to_list() == python["outcome"].to_list()
    assert (native["outcome"] == 0).all()
    assert (native["end_ns"] >= native["start_ns"]).all() and (native["start_ns"] >= 0).all()


def test_a_posix_run_records_the_native_lane_and_ctrl_c_keeps_partial_results(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    config = RunConfig(schedule=str(schedule), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs"),
                       time_scale=6.0)
    report = run_benchmark(config, show_progress=False, engine=InterruptingEngine())
    assert not report.complete and report.status == "interrupted"
    samples = pl.read_parquet(report.run_dir / rundir.SAMPLES)
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert 0 < samples.height == summary["operations_issued"] < summary["operations_scheduled"]
    assert manifest["native_lane"] is True and manifest["lane_impl"][0].startswith("native-posix-")
    assert all(w["lane_impl"].startswith("native-posix-") for w in manifest["workers"])
    assert manifest["versions"]["mimesisbench_native"] == native_module().__version__  # type: ignore[union-attr]
    assert summary["status"] == "interrupted"


# ---------------------------------------------------------------------- conformance through the lane


class NativeLaneTarget(Target):
    """The posix backend, each operation issued through the native lane (one-operation lanes)."""

    def call(self, op: OpCode, *rel: str) -> Outcome:
        assert isinstance(self.backend, PosixBackend)
        if op not in NATIVE_OPS:  # as a worker does: operations the native lane does not know run in Python
            return super().call(op, *rel)
        lane = _lane(self.backend, [(op, *rel)])  # type: ignore[list-item]
        stop = StopSignal()
        _native(lane, self.backend, time.monotonic_ns(), stop, paced=False)
        assert stop.reason is None and lane.count == 1
        return Outcome(int(lane.outcome[0]))


def _posix_native() -> tuple[PosixBackend, Callable[[], None]]:
    top = Path(tempfile.mkdtemp(prefix="mimesis-native-conf-"))
    return _backend(top / "base"), lambda: shutil.rmtree(top, ignore_errors=True)


def _posix_claim() -> Capabilities:
    with tempfile.TemporaryDirectory(prefix="mimesis-native-conf-") as scratch:
        return posix_capabilities(xattrs_supported(scratch))


NATIVE_CASES = [c for c in CASES if c.applies_to(_posix_claim())]


@pytest.mark.parametrize("case", NATIVE_CASES, ids=[c.name for c in NATIVE_CASES])
def test_conformance_case_through_the_native_lane(case: Case) -> None:
    assert run_case(_posix_native, case, target=NativeLaneTarget)


def test_random_sequences_through_the_native_lane_agree_with_the_reference() -> None:
    check_random_sequences(_posix_native, max_examples=40, steps=25, target=NativeLaneTarget)


def test_posix_lanes_default_to_at_most_the_cores_the_worker_may_use(tmp_path: Path) -> None:
    """Four lanes, but one on a process pinned to one core (more busy lanes than cores would take
    each other's cores)."""
    code = (
        "import os, sys\n"
        "from mimesisbench.backends.posix import PosixBackend\n"
        "b = PosixBackend('posix:' + sys.argv[1])\n"
        "before = b.default_lanes()\n"
        "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "print(before, b.default_lanes())\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "base")], capture_output=True, text=True,
                          check=True)
    before, pinned = (int(x) for x in done.stdout.split())
    assert before == min(4, len(os.sched_getaffinity(0)))
    assert pinned == 1
