"""Server-level fidelity (``mimesisbench fidelity``): known answers of the statistics, and the
command on real runs (a real trace's verbatim schedule and a schedule generated from the profile
fitted on it, both replayed on a real local file system)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.unit.cli_run import run_cli

from mimesisbench.analysis.server_fidelity import ALL, FidelityOptions, Side, fidelity_of_sides, side_of


def _side(commands: list[str], service_ms: np.ndarray, span_s: float) -> Side:
    return Side(np.array(commands), np.asarray(service_ms, dtype=np.float64), span_s)


def test_a_server_twice_as_slow_reads_ratio_two_and_disjoint_distributions() -> None:
    rng = np.random.default_rng(3)
    v = _side(["open"] * 1500, rng.uniform(1.0, 2.0, 1500), 10.0)
    s = _side(["open"] * 1500, 2.0 * rng.uniform(1.0, 2.0, 1500) + 0.01, 10.0)
    row = fidelity_of_sides(v, s, FidelityOptions(resamples=500))["by_command"]["open"]
    assert row["ks_service"] == 1.0  # every synthetic time is above every verbatim one
    for q in ("p50", "p99"):
        low, high = row[f"service_{q}_ratio_ci"]
        assert 1.8 < low <= row[f"service_{q}_ratio"] <= high < 2.2, (q, row)
    assert row["throughput_ratio"] == 1.0


def test_the_same_responses_read_ratio_one_and_no_distance() -> None:
    rng = np.random.default_rng(4)
    times = rng.lognormal(0.0, 0.5, 800)
    v = _side(["getfileinfo"] * 600 + ["create"] * 200, times, 8.0)
    s = _side(["getfileinfo"] * 600 + ["create"] * 200, times, 4.0)  # the same operations in half the time
    result = fidelity_of_sides(v, s, FidelityOptions(resamples=300))
    for name, row in [*result["by_command"].items(), (ALL, result[ALL])]:
        assert row["ks_service"] == 0.0 and row["service_p50_ratio"] == 1.0, name
        low, high = row["service_p99_ratio_ci"]
        assert low <= 1.0 <= high, name
        assert row["throughput_ratio"] == pytest.approx(2.0), name
    assert result["by_command"]["create"]["n_verbatim"] == 200


def test_commands_are_the_audit_commands_of_the_operations() -> None:
    samples = pl.DataFrame(
        {
            "op": ["mkdirs_parents", "mkdirs_existing", "getfileinfo_absent_dir", "list_dir", "namenode"],
            "scheduled_us": [0.0, 1.0, 2.0, 3.0, 4.0],
            "start_us": [0.0, 1.0, 2.0, 3.0, 4.0],
            "end_us": [500.0, 1001.0, 2002.0, 3003.0, 2_000_004.0],
        }
    )
    side = side_of(samples)
    assert side.command.tolist() == ["mkdirs", "mkdirs", "getfileinfo", "listStatus", "namenode"]
    assert side.service_ms.tolist() == [0.5, 1.0, 2.0, 3.0, 2000.0]
    assert side.span_s == pytest.approx(2.000004)


def test_a_small_side_gets_figures_without_intervals() -> None:
    row = fidelity_of_sides(_side(["append"], np.array([1.0]), 1.0), _side(["append"] * 3, np.ones(3), 1.0))
    assert row["by_command"]["append"]["service_p50_ratio"] == 1.0
    assert row["by_command"]["append"]["service_p50_ratio_ci"] is None


def _run(schedule: Path, base: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    base.mkdir()
    code, _, err = run_cli(["run", str(schedule), "--backend", f"posix:{base}", "--out", str(out), "--time-scale", "0.005",
                            "--max-drift", "off", "--workers", "1", "--concurrency", "1", "-q"], capsys)  # fmt: skip
    assert code == 0, err
    return next(out.iterdir())


def test_fidelity_of_a_real_trace_and_its_model_on_a_real_file_system(
    sandbox_audit_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verbatim, generated, profile = tmp_path / "verbatim", tmp_path / "generated", tmp_path / "p.json"
    assert run_cli(["schedule-from-trace", str(sandbox_audit_log), "-o", str(verbatim)], capsys)[0] == 0
    assert run_cli(["model", "--audit", str(sandbox_audit_log), "--types", "3", "-o", str(profile)], capsys)[0] == 0
    assert run_cli(["generate", str(profile), "--seed", "1", "-o", str(generated)], capsys)[0] == 0
    v_run = _run(verbatim, tmp_path / "b1", tmp_path / "runs_v", capsys)
    s_run = _run(generated, tmp_path / "b2", tmp_path / "runs_s", capsys)
    code, out, err = run_cli(["fidelity", str(v_run), str(s_run), "--json", "--bootstrap", "200"], capsys)
    assert code == 0, err
    result = json.loads(out)
    trace_commands = {"contentSummary", "create", "delete", "getfileinfo", "listStatus", "mkdirs", "setOwner", "setPermission"}
    assert set(result["by_command"]) >= trace_commands
    assert result[ALL]["n_verbatim"] == 229
    assert sum(row["n_verbatim"] for row in result["by_command"].values()) == 229
    assert 0.0 <= result[ALL]["ks_service"] <= 1.0
    replay = result["verbatim_replay"]
    assert replay["outcome_matches_prediction"] == 1.0  # one lane: the schedule's order, whatever the load
    assert replay["outcome_matches_trace"] == pytest.approx(228 / 229)  # the second delete of a file fails
    code, out, err = run_cli(["fidelity", str(v_run), str(s_run), "--bootstrap", "200"], capsys)
    assert code == 0 and "synthetic vs verbatim" in out and "as predicted 1" in out
    code, _, err = run_cli(["fidelity", str(v_run), str(tmp_path / "nope")], capsys)
    assert code != 0 and "no such run directory" in err
