"""The capacity search: its bracketing on a known verdict, then real runs against a server of
known capacity (the ``rate:`` wrapper: a token bucket in front of ``null``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_run import run_cli

from mimesisbench.errors import ConfigError
from mimesisbench.study.capacity_search import RateTrial, search_capacity


def _verdicts(capacity: float, calls: list[float]):  # type: ignore[no-untyped-def]
    def trial(rate: float) -> RateTrial:
        calls.append(rate)
        note = "" if rate <= capacity else "a backlog"
        return RateTrial(rate=rate, served=min(rate, capacity), lateness=None, latency=None, status="complete",
                         run_dir="", note=note)
    return trial


@pytest.mark.parametrize("start", [100.0, 3_000.0, 50_000.0])
def test_search_brackets_the_capacity_within_the_tolerance(start: float) -> None:
    calls: list[float] = []
    result = search_capacity(_verdicts(2_500.0, calls), start, tolerance=0.05)
    assert result.capacity is not None and result.unsustained is not None
    assert result.capacity <= 2_500.0 < result.unsustained <= result.capacity * 1.05
    assert [t.rate for t in result.trials] == calls and len(calls) <= 16


def test_search_stops_at_its_trial_budget_and_says_what_it_knows() -> None:
    result = search_capacity(_verdicts(1e12, []), 1_000.0, max_trials=4)
    assert result.capacity == 8_000.0 and result.unsustained is None and len(result.trials) == 4
    none = search_capacity(_verdicts(0.5, []), 1_000.0, max_trials=3)
    assert none.capacity is None and none.unsustained == 250.0


def test_search_refuses_bad_settings() -> None:
    with pytest.raises(ConfigError, match="--tolerance"):
        search_capacity(_verdicts(1.0, []), 10.0, tolerance=1.5)


def _steady_events(path: Path, operations: int, gap_ms: int) -> Path:
    """An event table (CSV, as ``read_trace`` takes one) of ``getfileinfo`` calls every ``gap_ms``
    on 50 files: a steady load, so that a trial's trend is the server's doing, not a burst's (a
    bursty schedule's local rate climbs and falls within a short trial)."""
    n = np.arange(operations)
    pl.DataFrame({"time_ms": 1_700_000_000_000 + n * gap_ms, "op": "getfileinfo", "path": [f"/data/f{i % 50}" for i in n],
                  "dst": None, "user": "u", "allowed": True}).write_csv(path)
    return path


def test_capacity_of_a_token_bucket_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real runs (a steady verbatim schedule, run at each rate) against ``rate:400+null``: the
    search finds about 400 ops/s. A band, not the bench's 10 %: the client shares a loaded machine."""
    schedule = tmp_path / "schedule"
    _ok(["schedule-from-trace", str(_steady_events(tmp_path / "events.csv", 1_000, 10)), "-o", str(schedule)], capsys)
    runs = tmp_path / "runs"
    result = json.loads(_ok(["capacity", str(schedule), "-b", "rate:400+null", "--start", "250/s", "--tolerance", "0.1",
                             "--output", str(runs), "--json"], capsys))
    assert result == json.loads((runs / "capacity.json").read_text())
    assert 0.75 * 400 <= result["capacity_ops_s"] <= 1.1 * 400
    over = [t for t in result["trials"] if not t["sustained"]]
    assert over and all(t["rate"] > result["capacity_ops_s"] for t in over)
    assert all(Path(t["run_dir"]).is_dir() for t in result["trials"])


def _ok(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The command's standard output; it must succeed."""
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    return out


def test_client_sweep_of_a_token_bucket_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``client-sweep`` with real micro runs on ``rate:1000+null``: every client count gets about
    1,000 ops/s (the bucket serialises them), so the USL sees full contention and a ceiling of
    about 1,000 ops/s, and the mean latency grows with the clients."""
    out = tmp_path / "sweep.json"
    result = json.loads(_ok(["client-sweep", "fileStatus", "-b", "rate:1000+null", "-n", "200", "--clients", "1,2,4,8",
                             "--repeat", "1", "--seed", "2", "-o", str(out), "--report", str(tmp_path / "page"),
                             "--json"], capsys))
    assert result == json.loads(out.read_text())
    page = (tmp_path / "page" / "index.html").read_text()
    assert "USL: sigma" in page and "Wu: a (ms)" in page and (tmp_path / "page" / "figures" / "client-sweep.svg").exists()
    assert sorted(p["clients"] for p in result["points"]) == [1, 2, 4, 8]
    assert all(700 <= p["ops_per_s"] <= 1_100 for p in result["points"])
    latency = {p["clients"]: p["mean_latency_ms"] for p in result["points"]}
    assert latency[8] > 3 * latency[1]
    usl = result["usl"]
    # full contention: sigma near 1 (kappa near 0 leaves the peak's concurrency undetermined: a flat curve)
    assert usl["sigma"] > 0.8 and 700 <= usl["ceiling"] <= 1_100
    assert result["wu"]["a"] > 0


def test_capacity_trials_on_posix_start_from_phase_1s_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a plain posix base every trial starts from a copy of the tree phase 1 made: each skips
    phase 1 by the restored marker, and the checkpoint lies inside the base."""
    schedule = tmp_path / "schedule"
    _ok(["schedule-from-trace", str(_steady_events(tmp_path / "events.csv", 400, 10)), "-o", str(schedule)], capsys)
    base = tmp_path / "base"
    result = json.loads(_ok(["capacity", str(schedule), "-b", f"posix:{base}", "--start", "200/s", "--max-trials", "2",
                             "--bound", "50ms", "--peak-length", "1s", "--check",
                             "--output", str(tmp_path / "runs"), "--json"], capsys))
    assert len(result["trials"]) == 2
    check = result["peak_check"]  # the closing check: a peak on the same namespace, from the same tree
    assert check["rate_ops_s"] == pytest.approx(result["p_max_ops_s"]) and check["requested_length_s"] == 1.0
    assert 0 < check["length_s"] <= 1.0  # the schedule, scaled, may end sooner
    for run_dir in [trial["run_dir"] for trial in result["trials"]] + [check["run_dir"]]:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
        assert manifest["phase1"]["skipped"] and "marker" in manifest["phase1"]["reason"]
    assert len(list((base / ".mimesisbench-checkpoints").iterdir())) == 1


def test_the_closing_check_measures_wus_peak_delay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A peak of T = 2 s at p = 480 ops/s on a server of capacity q = 400 (``rate:400+null``, steady
    arrivals): Wu's model says the operations arriving during it wait T(p - q)/2q = 0.2 s on average
    (the k-th waits k(1/q - 1/p)); the check measures about that, on the first 2 s of the schedule."""
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import run_benchmark
    from mimesisbench.study.peak_check import peak_check

    schedule = tmp_path / "schedule"
    _ok(["schedule-from-trace", str(_steady_events(tmp_path / "events.csv", 1_000, 10)), "-o", str(schedule)], capsys)
    base = RunConfig(schedule=str(schedule), backend="rate:400+null", out=str(tmp_path / "runs"))
    check = peak_check(schedule, base, 480.0, 2.0, 0.2, tmp_path / "peak",
                       lambda config: run_benchmark(config, console=None, show_progress=False).run_dir)
    assert check.status == "complete"
    assert check.offered == pytest.approx(480, rel=0.02)  # 2 s of the schedule at the peak's rate
    assert check.latency_mean_s is not None and 0.8 * 0.2 <= check.latency_mean_s <= 1.3 * 0.2
    assert Path(check.run_dir).parent == tmp_path / "peak"
