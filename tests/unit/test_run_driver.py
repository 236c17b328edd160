"""The run driver's contract with the user: refusals (exit 5, no run directory left behind), the
run lock, option bounds, what it says before phase 1, a full disk, probes, option spellings."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.unit.cli_run import run_cli
from tests.unit.test_run_schedules import workload

from mimesisbench.backends import safety
from mimesisbench.cli.main import _register, cli
from mimesisbench.errors import (
    ConfigError,
    EnvironmentProblem,
    RunIncomplete,
    SafetyError,
)
from mimesisbench.hdfs.processes import ProcessRecord
from mimesisbench.hdfs.site import Layout, Ports
from mimesisbench.hdfs.state import ClusterState, write_state
from mimesisbench.monitoring.jmx import managed_jmx_url, sampler_for_run
from mimesisbench.results import rundir
from mimesisbench.run import coordinator
from mimesisbench.run import worker as worker_mod
from mimesisbench.run.config import MAX_CONCURRENCY, MAX_WORKERS, RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.partition import plan_partition
from mimesisbench.run.probes import CpuProbe, JmxProbe, LiveProbe, Probe, probes_for_run
from mimesisbench.run.runlock import RunLock
from mimesisbench.run.worker import WorkerSpec, run_worker_inline


def _run_argv(schedule: Path, base: Path, runs: Path, *extra: str) -> list[str]:
    return ["run", str(schedule), "--backend", f"posix:{base}", "-q", "--output", str(runs), "--time-scale", "0", *extra]


# ---------------------------------------------------------------------------- refusals (exit 5)


def test_a_used_base_is_a_safety_refusal_and_leaves_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = workload(tmp_path / "s")
    base, runs = tmp_path / "base", tmp_path / "runs"
    code, _, _ = run_cli(_run_argv(schedule, base, runs), capsys)
    assert code == 0
    (first,) = runs.iterdir()
    code, _, err = run_cli(_run_argv(schedule, base, runs), capsys)
    assert code == SafetyError.exit_code == 5
    assert "fresh base directory" in err and "Traceback" not in err
    assert list(runs.iterdir()) == [first]  # the refused run made no run directory


def test_a_foreign_non_empty_base_is_refused_without_a_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = workload(tmp_path / "s")
    base, runs = tmp_path / "base", tmp_path / "runs"
    base.mkdir()
    (base / "someone-elses-file").write_text("x")
    code, _, err = run_cli(_run_argv(schedule, base, runs), capsys)
    assert code == 5 and "not empty" in err
    assert not runs.exists() or not any(runs.iterdir())


def test_a_second_run_on_a_locked_base_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = workload(tmp_path / "s")
    base, runs = tmp_path / "base", tmp_path / "runs"
    code, _, _ = run_cli(_run_argv(schedule, base, runs), capsys)  # makes the base (and its lock file)
    assert code == 0 and (base / safety.LOCK_FILE).is_file()
    # another run holds the base: a separate process keeps the lock while this run tries
    hold = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); "
        "print('locked', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(base / safety.LOCK_FILE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code, _, err = run_cli(_run_argv(schedule, base, runs, "--reuse"), capsys)
    finally:
        holder.communicate("", timeout=30)
    assert code == 5 and "another mimesisbench run" in err and "Traceback" not in err
    assert len(list(runs.iterdir())) == 1
    # the lock is released with its holder: the same run now goes ahead
    code, _, _ = run_cli(_run_argv(schedule, base, runs, "--reuse"), capsys)
    assert code == 0 and len(list(runs.iterdir())) == 2


def test_the_run_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    with RunLock(path, "the base"), pytest.raises(SafetyError, match=r"another mimesisbench run is using the base \(pid \d+\)"):
        RunLock(path, "the base").acquire()
    with RunLock(path, "the base"):
        pass


def test_a_run_without_a_local_base_locks_its_output_folder(tmp_path: Path) -> None:
    from mimesisbench.backends.memory import MemoryBackend

    class Remote(MemoryBackend):  # a shared namespace without a local base directory (like hdfs)
        process_local = False

    config = RunConfig(schedule="s", backend="memory", out=str(tmp_path / "runs"))
    with coordinator._run_lock(Remote("memory"), config), pytest.raises(SafetyError, match="run folder"):
        coordinator._run_lock(Remote("memory"), config).__enter__()
    assert list((tmp_path / "runs").iterdir()) == []  # no lock file among the run directories


@pytest.fixture(autouse=True)
def _verbs() -> None:
    """The group's commands, as ``main`` registers them before parsing (without this the tests
    that invoke ``cli`` passed only after another test had called ``main``)."""
    _register()


@pytest.fixture
def readonly_dir(tmp_path: Path) -> Any:
    """A populated directory this process cannot write into: a read-only tmpfs when running as
    root (permissions do not stop root), else a directory without write permission."""
    path = tmp_path / "ro"
    path.mkdir()
    if os.geteuid() != 0:
        (path / "old").write_text("x")
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (path / "old").write_text("x")
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True)
        yield path
    finally:
        subprocess.run(["umount", str(path)], capture_output=True, check=False)


def test_reuse_skip_phase1_on_a_read_only_base_is_a_clear_refusal(
    tmp_path: Path, readonly_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = workload(tmp_path / "s")
    runs = tmp_path / "runs"
    code, _, err = run_cli(_run_argv(schedule, readonly_dir, runs, "--reuse", "--skip-phase1"), capsys)
    assert code == 5 and "not writable" in err and "Traceback" not in err
    assert not runs.exists() or not any(runs.iterdir())


def test_a_marker_that_cannot_be_written_is_a_safety_error(tmp_path: Path) -> None:
    from mimesisbench.backends.posix import PosixBackend

    backend = PosixBackend(f"posix:{tmp_path / 'base'}")
    backend.setup(reuse=False)
    (tmp_path / "base" / (safety.NAMESPACE_MARKER + ".tmp")).mkdir()  # open(..., "w") fails, even for root
    with pytest.raises(SafetyError, match="cannot write the namespace marker"):
        backend.write_marker("{}")


# ---------------------------------------------------------------------------- option bounds (exit 2)


@pytest.mark.parametrize("option", ["--workers", "--concurrency"])
def test_huge_workers_or_concurrency_is_a_bad_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    schedule = workload(tmp_path / "s")
    code, _, err = run_cli(_run_argv(schedule, tmp_path / "base", tmp_path / "runs", option, "1000000000"), capsys)
    assert code == 2 and option in err
    assert not (tmp_path / "base").exists() and not (tmp_path / "runs").exists()


def test_run_config_bounds_workers_and_concurrency() -> None:
    RunConfig(schedule="s", backend="null", workers=MAX_WORKERS, concurrency=MAX_CONCURRENCY)
    with pytest.raises(ConfigError, match="--workers"):
        RunConfig(schedule="s", backend="null", workers=MAX_WORKERS + 1)
    with pytest.raises(ConfigError, match="--concurrency"):
        RunConfig(schedule="s", backend="null", concurrency=MAX_CONCURRENCY + 1)


# ---------------------------------------------------------------------------- what phase 1 will do


def test_run_says_how_many_items_phase1_makes_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = workload(tmp_path / "s")  # 3 pre-existing directories below the base, 12 files
    code, out, _ = run_cli(_run_argv(schedule, tmp_path / "base", tmp_path / "runs"), capsys)
    assert code == 0
    said = out.index("phase 1: making 3 directories and 12 files")
    assert said < out.index("run directory")
    code, out, _ = run_cli(["run", str(schedule), "-b", "memory", "-q", "-o", str(tmp_path / "runs"), "--time-scale", "0"],
                        capsys)
    assert code == 0 and "own in-memory copy of the namespace (3 directories and 12 files)" in out


# ---------------------------------------------------------------------------- a full disk (exit 6)


def _enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_when_writing_samples_keeps_the_parts_and_exits_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(coordinator, "write_samples", _enospc)
    schedule = workload(tmp_path / "s")
    runs = tmp_path / "runs"
    code, out, err = run_cli(_run_argv(schedule, tmp_path / "base", runs), capsys)
    assert code == RunIncomplete.exit_code == 6
    assert "run incomplete" in err and "No space left on device" in err and "Traceback" not in err + out
    (run_dir,) = runs.iterdir()
    manifest = json.loads((run_dir / rundir.MANIFEST).read_text())
    assert manifest["status"] == "failed" and manifest["complete"] is False
    assert "samples.parquet" in manifest["message"] and "parts/" in manifest["message"]
    parts = sorted(p.name for p in (run_dir / rundir.PARTS).iterdir())
    assert parts == ["worker-0.npz", "worker-1.npz"]  # what was measured is kept
    assert (run_dir / rundir.SUMMARY).is_file() and not list(run_dir.glob("*.tmp"))


def test_a_worker_that_cannot_write_its_part_reports_instead_of_crashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = workload(tmp_path / "s")
    parts = tmp_path / "parts"
    spec = WorkerSpec(index=0, schedule_dir=str(schedule), backend_url="null", plan=plan_partition([1, 2], 1),
                      parts_dir=str(parts), time_scale=0.0)

    def savez(path: Any, **arrays: Any) -> None:
        Path(path).write_bytes(b"half")  # a partial file, then the disk is full
        _enospc()

    monkeypatch.setattr(worker_mod.np, "savez", savez)
    _, result = run_worker_inline(spec, 0)
    assert result.status == "failed" and "No space left on device" in result.message
    assert result.part_path is None and result.issued == result.total > 0
    assert not list(parts.iterdir())  # no half-written temporary part left taking space
    assert result.samples is not None and result.samples["row"].size == result.issued  # handed over instead


def test_a_tiny_tmpfs_output_ends_with_exit_6_and_no_traceback(tmp_path: Path) -> None:
    """A real full disk: the run folder on a tmpfs too small for the samples."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    runs = tmp_path / "runs"
    runs.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(runs)], capture_output=True, check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        schedule = workload(tmp_path / "s", files_per_type=1500, span_us=1_000)
        env = {**os.environ, "PYTHONPATH": _src_path()}
        done = subprocess.run(
            [sys.executable, "-m", "mimesisbench", "run", str(schedule), "-b", "null", "-q", "-o", str(runs),
             "--time-scale", "0", "--workers", "1"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )
        assert done.returncode == 6, done.stderr
        assert "run incomplete" in done.stderr and "Traceback" not in done.stderr + done.stdout
        (run_dir,) = runs.iterdir()
        assert "No space left on device" in done.stderr
        assert not [p for p in run_dir.rglob("*.tmp*")]  # no half-written files left behind
        # the worker's samples reached the coordinator although its part file did not fit: the
        # small files that still fit tell what was measured
        summary = json.loads((run_dir / rundir.SUMMARY).read_text())
        assert summary["complete"] is False and summary["operations_issued"] == summary["operations_scheduled"] > 0
        manifest = json.loads((run_dir / rundir.MANIFEST).read_text())
        assert manifest["status"] == "failed" and "No space left on device" in manifest["message"]
    finally:
        subprocess.run(["umount", str(runs)], capture_output=True, check=False)


def _src_path() -> str:
    import mimesisbench

    return str(Path(mimesisbench.__file__).resolve().parent.parent)


# ---------------------------------------------------------------------------- probes


class RecordingProbe(Probe):
    name = "recording"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        self.calls.append("start")
        return {"recording": {"run_id": run_id, "scheduled": scheduled}}

    def phase(self, name: str) -> None:
        self.calls.append(f"phase:{name}")

    def observe(self, event: Any) -> None:
        if "observe" not in self.calls:
            self.calls.append("observe")

    def stop(self) -> list[str]:
        self.calls.append("stop")
        return ["recording probe warning"]

    def results(self, run_dir: Path, origin_wall_ns: int | None) -> dict[str, Any]:
        self.calls.append("results")
        (run_dir / "recording.txt").write_text(str(origin_wall_ns))
        return {"recording_file": "recording.txt"}

    def close(self, complete: bool) -> None:
        self.calls.append(f"close:{complete}")


def test_the_coordinator_drives_every_probe_through_its_lifecycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes = [RecordingProbe(), RecordingProbe()]
    monkeypatch.setattr(coordinator, "probes_for_run", lambda config, announce=None: probes)
    schedule = workload(tmp_path / "s")
    config = RunConfig(schedule=str(schedule), backend="null", out=str(tmp_path / "runs"), time_scale=0.0)
    report = run_benchmark(config, show_progress=False)
    assert report.complete
    expected = ["start", "phase:replay", "observe", "phase:writing", "stop", "results", "close:True"]
    assert all(p.calls == expected for p in probes), [p.calls for p in probes]
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert manifest["recording"]["run_id"] == report.run_dir.name and manifest["recording_file"] == "recording.txt"
    assert int((report.run_dir / "recording.txt").read_text()) == manifest["start_barrier_wall_ns"]
    assert "recording probe warning" in report.warnings


def test_probes_for_run_makes_live_and_jmx_probes_from_the_config() -> None:
    """Every run measures CPU (no managed daemons here: the host's alone); live metrics and JMX
    as the config asks."""
    [cpu] = probes_for_run(RunConfig(schedule="s", backend="null"))
    assert isinstance(cpu, CpuProbe) and cpu.daemons == []
    both = probes_for_run(RunConfig(schedule="s", backend="hdfs://nn:8020/b", metrics_port=0))
    assert [type(p) for p in both] == [LiveProbe, CpuProbe, JmxProbe]
    assert [type(p) for p in probes_for_run(RunConfig(schedule="s", backend="hdfs://nn:8020/b", jmx="off"))] == [CpuProbe]


# ---------------------------------------------------------------------------- the managed cluster's JMX


def _fake_cluster(workdir: Path, rpc: int, http: int) -> None:
    layout = Layout(workdir.resolve())
    workdir.mkdir(parents=True)
    record = ProcessRecord(role="namenode", pid=1, create_time=0.0, log="")
    write_state(layout.state_file, ClusterState("3.4.3", Ports(rpc, http, 1, 2, 3), processes=(record,)))


def test_a_managed_cluster_is_sampled_at_its_own_http_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = tmp_path / "nn"
    _fake_cluster(workdir, rpc=41001, http=41002)
    url = "hdfs://127.0.0.1:41001/bench"
    assert managed_jmx_url(url, workdir) == "http://127.0.0.1:41002/jmx"
    assert managed_jmx_url("hdfs://localhost:41001/b", workdir) == "http://127.0.0.1:41002/jmx"
    sampler = sampler_for_run(url, None, 1.0, workdir)
    assert sampler is not None and sampler.url == "http://127.0.0.1:41002/jmx" and sampler.rpc_port == 41001
    # another NameNode (other port or host), or no cluster there: the HDFS default port
    assert managed_jmx_url("hdfs://127.0.0.1:9999/b", workdir) is None
    assert managed_jmx_url("hdfs://nn.example:41001/b", workdir) is None
    assert managed_jmx_url(url, tmp_path / "none") is None
    assert sampler_for_run("hdfs://127.0.0.1:9999/b", None, 1.0, workdir).url.endswith(":9870/jmx")  # type: ignore[union-attr]
    # the default workdir (relative to where `hdfs up` ran), and an explicit --jmx still wins
    monkeypatch.chdir(tmp_path)
    _fake_cluster(tmp_path / ".mimesisbench" / "hdfs", rpc=42001, http=42002)
    assert sampler_for_run("hdfs://127.0.0.1:42001/b").url == "http://127.0.0.1:42002/jmx"  # type: ignore[union-attr]
    assert sampler_for_run("hdfs://127.0.0.1:42001/b", "http://h:1").url == "http://h:1"  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- one meaning per option


def test_output_is_spelled_output_everywhere_and_out_still_works(tmp_path: Path) -> None:
    runner = CliRunner()
    for command in (["run"], ["demo"], ["report"], ["hdfs", "dump-image"], ["generate"], ["model"]):
        text = runner.invoke(cli, [*command, "--help"]).output
        assert "--output" in text and "--out " not in text and "--out," not in text, command
    schedule = workload(tmp_path / "s")
    result = runner.invoke(cli, ["run", str(schedule), "-b", "null", "-q", "--out", str(tmp_path / "old"),
                                 "--time-scale", "0"])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "old").iterdir())) == 1


def test_b_means_backend_only_compare_takes_contender(tmp_path: Path) -> None:
    runner = CliRunner()
    compare_help = runner.invoke(cli, ["compare", "--help"]).output
    assert "--contender" in compare_help and "-b," not in compare_help
    result = runner.invoke(cli, ["compare", "--baseline", str(tmp_path), "-b", str(tmp_path)])
    assert result.exit_code == 2 and "No such option '-b'" in result.output
    for command in ("run", "micro"):
        assert "-b, --backend" in runner.invoke(cli, [command, "--help"]).output


def test_hdfs_status_without_a_cluster_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["hdfs", "status", "--workdir", str(tmp_path / "nothing")], capsys)
    assert code == EnvironmentProblem.exit_code == 7
    assert "no HDFS cluster in" in err and "mimesisbench hdfs up" in err


def test_help_texts_name_hdfs_as_a_backend_today() -> None:
    text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "later" not in text and "hdfs://" in text

