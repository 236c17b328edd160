"""Runs as fast as possible (the paper's c = 0): in schedule order, closed loop, never stopped for
drift, latency the service time, and the summary says which mode ran."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from tests.unit.cli_run import run_cli

from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode


def _all_at_once(tmp_path: Path, files: int) -> Path:
    """A schedule generated at c = 0: every operation due at time 0."""
    return write_phased_schedule(tmp_path / "s", types=1, files_per_type=files, phases=(OpCode.CREATE, OpCode.OPEN),
                                 rate_per_s=None)


def test_a_schedule_due_at_once_completes_on_a_server_slower_than_its_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1,200 operations due at once on a server taking 5 ms each, 4 lanes: about 1.5 s of work.
    Paced with the default --max-drift 2s the backlog (up to 1.5 s behind) would be counted as
    lateness and latency; as fast as possible each operation is due when issued."""
    schedule = _all_at_once(tmp_path, 600)
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", str(schedule), "-b", "delay:5ms+memory", "--workers", "1", "--concurrency", "4",
                            "--out", str(out), "-q"], capsys)
    assert code == 0, err
    run_dir = next(out.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert summary["complete"] and summary["operations_issued"] == 1200 and summary["mode"] == "as-fast-as-possible"
    assert any("all due at once" in w for w in manifest["warnings"])
    assert json.loads((run_dir / "config.json").read_text())["time_scale"] == 0.0
    samples = pl.read_parquet(run_dir / "samples.parquet")
    assert (samples["scheduled_us"] == samples["start_us"]).all()  # due when issued: latency = service
    assert summary["latency_ms"]["p50"] == summary["service_ms"]["p50"] >= 5.0
    assert summary["lateness_ms"]["max"] == 0.0
    # four lanes, closed loop: about 4 operations in flight, so about 4 / 5 ms = 800 ops/s at most
    assert summary["throughput_ops_per_s"] <= 4 / 0.005 * 1.05


def test_the_flag_runs_a_paced_schedule_as_fast_as_possible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=200, phases=(OpCode.CREATE, OpCode.OPEN),
                                     rate_per_s=10.0)  # 40 s in real time
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", str(schedule), "-b", "memory", "--as-fast-as-possible", "--out", str(out), "-q"], capsys)
    assert code == 0, err
    summary = json.loads((next(out.iterdir()) / "summary.json").read_text())
    assert summary["mode"] == "as-fast-as-possible" and summary["active_time_ms"] < 20_000


@pytest.mark.parametrize("extra", [["--rate", "100/s"], ["--time-scale", "0.5"]])
def test_the_flag_sets_the_scale_itself(extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["run", str(tmp_path / "none"), "-b", "null", "--as-fast-as-possible", *extra], capsys)
    assert code == 2 and "--as-fast-as-possible sets the time scale to 0" in err
