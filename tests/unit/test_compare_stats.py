"""Comparison statistics on synthetic runs with known differences, and the ``compare`` verb."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from mimesisbench.analysis.compare import CompareOptions, bootstrap_ci, compare_runs, cv, verdict_for, welch_p
from mimesisbench.cli.cmd_report import COMMANDS
from mimesisbench.cli.main import cli
from mimesisbench.errors import InputError
from mimesisbench.results import records, rundir
from mimesisbench.results.load import RunDirError, load_run, load_runs
from mimesisbench.results.samples import SCHEMA, write_samples
from mimesisbench.results.summary import summarize, timeseries

OPS = ("open", "create")


def write_synthetic_run(
    parent: Path,
    name: str,
    *,
    latency_factor: float = 1.0,
    duration_s: float = 10.0,
    n: int = 2000,
    seed: int = 0,
    complete: bool = True,
    namespace_hash: str = "h" * 64,
    warnings: list[str] | None = None,
) -> Path:
    """A run directory in the documented format: every latency is ``latency_factor`` times a fixed
    base distribution, and ``n`` operations spread over ``duration_s`` (so throughput ~ n / duration)."""
    rng = np.random.default_rng(seed)
    run_dir = parent / name
    run_dir.mkdir(parents=True)
    sched = np.sort(rng.uniform(0.0, duration_s * 1e6, n))
    sched[0], sched[-1] = 0.0, duration_s * 1e6  # fixed span: throughput is exactly n / duration
    base_ms = np.exp(np.linspace(np.log(0.2), np.log(5.0), n))  # the same latencies in every run ...
    np.random.default_rng(12345).shuffle(base_ms)
    service_us = base_ms * latency_factor * 1000.0  # ... scaled by the run's factor
    samples = pl.DataFrame(
        {
            "worker": np.zeros(n, dtype=np.int16),
            "type": np.ones(n, dtype=np.int16),
            "op": np.asarray(OPS)[np.arange(n) % 2],
            "seq": np.arange(n, dtype=np.int64),
            "scheduled_us": sched,
            "start_us": sched,
            "end_us": sched + service_us,
            "outcome": ["ok"] * n,
        }
    ).cast(SCHEMA)  # type: ignore[arg-type]
    write_samples(samples.sort("start_us"), run_dir / rundir.SAMPLES)
    timeseries(samples).write_parquet(run_dir / rundir.TIMESERIES)
    summary = summarize(samples, scheduled_total=n, complete=complete, extra={"status": "complete" if complete else "drift", "message": "" if complete else "worker 0 fell behind"})
    # throughput as if the run lasted exactly duration_s (the synthetic runs' known figure)
    summary["throughput_ops_per_s"] = n / duration_s
    for stats in summary["operations"].values():
        stats["throughput_ops_per_s"] = stats["issued"] / duration_s
    records.write_summary(run_dir, summary)
    records.write_config(run_dir, {"schedule": "/s", "backend": "null", "time_scale": 1.0})
    manifest = {
        "backend": {"scheme": "null", "url": "null"},
        "schedule": {"namespace_hash": namespace_hash, "manifest": {"window_ms": duration_s * 1000, "profile": {"hash": "p" * 64, "name": "synthetic"}}},
        "started_at": f"2026-01-01T00:{len(name) % 60:02d}:00+00:00",
        "complete": complete,
        "status": "complete" if complete else "drift",
        "warnings": warnings or [],
        "host": {"hostname": "test"},
    }
    records.write_manifest(run_dir, manifest)
    return run_dir


def _side(parent: Path, prefix: str, factors: list[float], durations: list[float] | None = None) -> list[Path]:
    durations = durations or [10.0] * len(factors)
    return [write_synthetic_run(parent, f"{prefix}{i}", latency_factor=f, duration_s=d, seed=i) for i, (f, d) in enumerate(zip(factors, durations))]


def _metric(comparison, op: str, metric: str):  # type: ignore[no-untyped-def]
    oc = next(o for o in comparison.ops if o.op == op)
    return next(m for m in oc.metrics if m.metric == metric)


# 8 % run-to-run noise (sample CV of (-1, 0, +1) * 0.08 is exactly 8 %), 10 % shift
NOISY_BASE = [0.92, 1.00, 1.08]
NOISY_CONT = [1.10 * x for x in NOISY_BASE]
# 1 % noise, 50 % shift
QUIET_BASE = [0.99, 1.00, 1.01]
QUIET_CONT = [1.50 * x for x in QUIET_BASE]


def test_ten_percent_shift_with_eight_percent_noise_is_not_significant(tmp_path: Path) -> None:
    base = load_runs(_side(tmp_path, "a", NOISY_BASE))
    cont = load_runs(_side(tmp_path, "b", NOISY_CONT))
    comparison = compare_runs(base, cont, CompareOptions(bootstrap=2000))
    for op in ("all", "open", "create"):
        for metric in ("latency_mean_ms", "latency_p50_ms", "latency_p99_ms"):
            m = _metric(comparison, op, metric)
            assert m.relative_change == pytest.approx(0.10, abs=0.01)
            assert m.baseline_cv == pytest.approx(0.08, abs=0.005)
            assert m.significant is False, (op, metric, m.verdict)
            assert "noise" in m.verdict or "not significant" in m.verdict
            assert m.welch_p is not None and m.welch_p > 0.05


def test_ten_percent_throughput_gain_with_eight_percent_noise_is_within_noise(tmp_path: Path) -> None:
    durations_a = [10.0 / x for x in NOISY_BASE]  # throughput 200 * (0.92, 1, 1.08)
    durations_b = [10.0 / (1.1 * x) for x in NOISY_BASE]
    base = load_runs(_side(tmp_path, "a", [1.0] * 3, durations_a))
    cont = load_runs(_side(tmp_path, "b", [1.0] * 3, durations_b))
    m = _metric(compare_runs(base, cont, CompareOptions(bootstrap=2000)), "all", "throughput_ops_per_s")
    assert m.relative_change == pytest.approx(0.10, abs=0.005)
    assert m.significant is False
    assert "not significant" in m.verdict or "within run-to-run noise" in m.verdict


def test_fifty_percent_shift_with_one_percent_noise_is_significant(tmp_path: Path) -> None:
    base = load_runs(_side(tmp_path, "a", QUIET_BASE))
    cont = load_runs(_side(tmp_path, "b", QUIET_CONT))
    comparison = compare_runs(base, cont, CompareOptions(bootstrap=2000))
    for op in ("all", "open", "create"):
        m = _metric(comparison, op, "latency_p50_ms")
        assert m.relative_change == pytest.approx(0.50, abs=0.02)
        assert m.significant is True, m.verdict
        assert m.verdict.startswith("significant: worse by")  # latency up is worse
        assert m.ci_low is not None and m.ci_low > 0
    dist = next(o for o in comparison.ops if o.op == "all").distribution
    assert dist is not None and dist.p_value is not None and dist.p_value < 1e-6
    assert dist.prob_contender_slower is not None and dist.prob_contender_slower > 0.6


def test_faster_contender_is_called_better(tmp_path: Path) -> None:
    base = load_runs(_side(tmp_path, "a", QUIET_CONT))
    cont = load_runs(_side(tmp_path, "b", QUIET_BASE))
    m = _metric(compare_runs(base, cont, CompareOptions(bootstrap=2000)), "all", "latency_p99_ms")
    assert m.significant is True and m.verdict.startswith("significant: better by")


def test_single_runs_are_too_few_to_tell(tmp_path: Path) -> None:
    base = load_runs(_side(tmp_path, "a", [1.0]))
    cont = load_runs(_side(tmp_path, "b", [1.5]))
    comparison = compare_runs(base, cont)
    m = _metric(comparison, "all", "latency_p50_ms")
    assert m.significant is None and m.welch_p is None and m.ci_low is None
    assert m.relative_change == pytest.approx(0.5, abs=0.02)
    assert m.verdict.startswith("too few runs to tell")
    assert any("run-to-run noise cannot be estimated" in n for n in comparison.notes)


def test_notes_flag_different_schedules_and_incomplete_runs(tmp_path: Path) -> None:
    a = write_synthetic_run(tmp_path, "a", namespace_hash="x" * 64)
    b = write_synthetic_run(tmp_path, "b", namespace_hash="y" * 64, complete=False)
    comparison = compare_runs([load_run(a)], [load_run(b)])
    text = " ".join(comparison.notes)
    assert "different schedules" in text
    assert "INCOMPLETE" in text


def test_statistics_helpers() -> None:
    assert cv(np.array([1.0])) is None
    assert cv(np.array([0.92, 1.0, 1.08])) == pytest.approx(0.08)
    assert welch_p(np.array([1.0]), np.array([2.0, 3.0])) is None
    assert welch_p(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == 1.0
    low, high = bootstrap_ci(np.array([1.0, 1.1, 0.9]), np.array([2.0, 2.1, 1.9]), n=2000, confidence=0.95, seed=1) or (0, 0)
    assert 0.8 <= low <= 1.0 <= high <= 1.2
    sig, text = verdict_for(0.05, 3, 3, 0.08, 0.4, (-0.1, 0.2), False, 0.05)
    assert sig is False and text.startswith("within run-to-run noise")


def test_compare_cli_json_and_positional_forms(tmp_path: Path) -> None:
    base = _side(tmp_path / "A", "a", QUIET_BASE)
    cont = _side(tmp_path / "B", "b", QUIET_CONT)
    runner = CliRunner()
    for command in COMMANDS:
        cli.add_command(command)
    args = ["compare", "--json", "--bootstrap", "500"]
    for p in base:
        args += ["--baseline", str(p)]
    for p in cont:
        args += ["--contender", str(p)]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["baseline"]["runs"] == [p.name for p in base]
    p50 = data["operations"]["all"]["metrics"]["latency_p50_ms"]
    assert p50["significant"] is True and len(p50["baseline"]) == 3
    # positional form with folders of repeated runs
    result = runner.invoke(cli, ["compare", str(tmp_path / "A"), str(tmp_path / "B"), "--op", "all"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "significant: worse by" in result.output and "all operations" in result.output
    assert "operation open" not in result.output


def test_user_mistakes_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no such run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="not a run directory"):
        load_run(tmp_path / "empty")
    assert issubclass(RunDirError, InputError)
    parent = tmp_path / "parent"
    write_synthetic_run(parent, "r1")
    with pytest.raises(RunDirError, match="contains run directories"):
        load_run(parent)
    with pytest.raises(InputError, match="no run directory given"):
        load_runs([])
