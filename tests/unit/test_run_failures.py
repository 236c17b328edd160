"""Runs that end early: drift, a crashed worker, a failing backend, Ctrl-C. Each keeps what was
measured, writes every file, and is marked incomplete."""

from __future__ import annotations

import _thread
import json
import os
import time
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.cli.main import main
from mimesisbench.engine.base import EngineEvent
from mimesisbench.engine.local import LocalEngine
from mimesisbench.errors import RunIncomplete
from mimesisbench.jobs import Progress
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import RunReport, raise_if_incomplete, run_benchmark
from mimesisbench.run.worker import Worker

HERE = "tests.unit.test_run_failures"


class SlowBackend(MemoryBackend):
    """Every operation takes 40 ms: a server that cannot keep up."""

    default_concurrency: ClassVar[int] = 1

    def open(self, path: str) -> None:
        time.sleep(0.04)
        super().open(path)

    def create(self, path: str) -> None:
        time.sleep(0.04)
        super().create(path)


class _BreaksOnFifteenthType2Open(MemoryBackend):
    """Counts type-2 opens and calls ``breakdown`` on the fifteenth."""

    def __init__(self, url: str = "memory") -> None:
        super().__init__(url)
        self.seen = 0

    def breakdown(self) -> None:
        raise NotImplementedError

    def open(self, path: str) -> None:
        if "/t2_" in path:
            self.seen += 1
            if self.seen == 15:
                self.breakdown()
        super().open(path)


class CrashingBackend(_BreaksOnFifteenthType2Open):
    """The worker of type 2 dies (hard exit) on its fifteenth type-2 open."""

    def breakdown(self) -> None:
        os._exit(3)


class FailingBackend(_BreaksOnFifteenthType2Open):
    """The backend of type 2 breaks (not an operation error) on its fifteenth type-2 open."""

    def breakdown(self) -> None:
        raise RuntimeError("connection to the server lost")


def _run(tmp_path: Path, backend: str, **kw: object) -> RunReport:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    config = RunConfig(schedule=str(schedule), backend=backend, out=str(tmp_path / "runs"), **kw)  # type: ignore[arg-type]
    return run_benchmark(config, show_progress=False)


def _partial(report: RunReport) -> tuple[pl.DataFrame, dict, dict]:  # type: ignore[type-arg]
    assert not report.complete
    samples = pl.read_parquet(report.run_dir / rundir.SAMPLES)
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert summary["complete"] is False and manifest["complete"] is False
    assert summary["operations_issued"] == samples.height < summary["operations_scheduled"]
    assert (report.run_dir / rundir.TIMESERIES).is_file()
    with pytest.raises(RunIncomplete):
        raise_if_incomplete(report)
    return samples, summary, manifest


def test_drift_stops_the_run_and_keeps_the_samples(tmp_path: Path) -> None:
    report = _run(tmp_path, f"py:{HERE}:SlowBackend", max_drift_s=0.3)
    samples, summary, manifest = _partial(report)
    assert report.status == "drift" and summary["status"] == "drift"
    assert "more workers" in report.message and "--workers" in report.message
    assert samples.height > 0
    assert any(w["status"] == "drift" for w in summary["workers"])
    assert report.message in manifest["warnings"]


def test_a_crashed_worker_keeps_the_others_samples(tmp_path: Path) -> None:
    report = _run(tmp_path, f"py:{HERE}:CrashingBackend", time_scale=2.0)
    samples, summary, _ = _partial(report)
    assert report.status == "crashed" and "exit code 3" in report.message
    ends = {w["index"]: w["status"] for w in summary["workers"]}
    assert ends[1] == "crashed" and ends[0] in ("complete", "stopped")
    assert samples.filter(pl.col("worker") == 0).height > 0
    assert samples.filter(pl.col("worker") == 1).height == 0  # its samples died with it


def test_a_failing_backend_ends_the_run_cleanly(tmp_path: Path) -> None:
    report = _run(tmp_path, f"py:{HERE}:FailingBackend", time_scale=2.0)
    samples, summary, _ = _partial(report)
    assert report.status == "failed" and "connection to the server lost" in report.message
    mine = samples.filter((pl.col("worker") == 1) & (pl.col("op") == "open") & (pl.col("type") == 2))
    assert mine.height == 15 and mine.sort("start_us")["outcome"].to_list()[-1] == "other"
    assert samples.filter(pl.col("worker") == 0).height > 0


class InterruptingEngine(LocalEngine):
    """The local engine, plus a Ctrl-C (in the main thread) once some operations were issued."""

    def __init__(self) -> None:
        super().__init__(Worker)
        self.fired = False

    def poll(self, timeout_s: float) -> list[EngineEvent]:
        events = super().poll(timeout_s)
        if not self.fired and any(isinstance(e, Progress) and e.issued > 0 for e in events):
            self.fired = True
            _thread.interrupt_main()
        return events


def test_ctrl_c_writes_partial_results(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    config = RunConfig(schedule=str(schedule), backend="memory", out=str(tmp_path / "runs"), time_scale=6.0)
    report = run_benchmark(config, show_progress=False, engine=InterruptingEngine())
    samples, summary, _ = _partial(report)
    assert report.status == "interrupted" and summary["status"] == "interrupted"
    assert samples.height > 0


def test_cli_exit_code_of_an_incomplete_run(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    argv = ["run", str(schedule), "--backend", f"py:{HERE}:SlowBackend", "--max-drift", "300ms", "-q",
            "--out", str(tmp_path / "runs")]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == RunIncomplete.exit_code
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / rundir.SUMMARY).read_text())["complete"] is False
