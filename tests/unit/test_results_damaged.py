"""Damaged run directories: ``report`` and ``compare`` say which file and what is wrong (exit 3, no
traceback); ``runs`` lists them as damaged and goes on. The runs are real (memory backend), then
damaged one way each."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.cli_run import run_cli
from tests.unit.test_run_schedules import workload

from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark

Damage = Callable[[Path], None]


@pytest.fixture(scope="module")
def good_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two real, complete runs of one schedule on the memory backend."""
    root = tmp_path_factory.mktemp("damaged")
    schedule = workload(root / "schedule")
    out = []
    for _ in range(2):
        report = run_benchmark(RunConfig(schedule=str(schedule), backend="memory", out=str(root / "runs")), show_progress=False)
        assert report.complete, report.message
        out.append(report.run_dir)
    return out




def _truncate(name: str) -> Damage:
    def damage(run: Path) -> None:
        data = (run / name).read_bytes()
        (run / name).write_bytes(data[: len(data) // 2])

    return damage


def _garbage(name: str, data: bytes = b"\x00garbage\xff" * 10) -> Damage:
    def damage(run: Path) -> None:
        (run / name).write_bytes(data)

    return damage


def _remove(name: str) -> Damage:
    def damage(run: Path) -> None:
        (run / name).unlink()

    return damage


def _rewrite_parquet(name: str, change: Callable[[pl.DataFrame], pl.DataFrame]) -> Damage:
    def damage(run: Path) -> None:
        change(pl.read_parquet(run / name)).write_parquet(run / name)

    return damage


def _json(name: str, change: Callable[[dict], object]) -> Damage:  # type: ignore[type-arg]
    def damage(run: Path) -> None:
        data = json.loads((run / name).read_text())
        (run / name).write_text(json.dumps(change(data)))

    return damage


def _set(**values: object) -> Callable[[dict], dict]:  # type: ignore[type-arg]
    return lambda data: {**data, **values}


def _wipe_pages(run: Path) -> None:
    """Overwrite the middle of samples.parquet: header and footer (the schema) stay readable."""
    path = run / rundir.SAMPLES
    data = bytearray(path.read_bytes())
    data[200 : len(data) // 2] = b"\xa5" * (len(data) // 2 - 200)
    path.write_bytes(bytes(data))


SAMPLES, TS, SUMMARY, MANIFEST, CONFIG = rundir.SAMPLES, rundir.TIMESERIES, rundir.SUMMARY, rundir.MANIFEST, rundir.CONFIG

#: (id, damage, the file the message must name, words the message must contain)
CASES: list[tuple[str, Damage, str, str]] = [
    ("samples-truncated", _truncate(SAMPLES), SAMPLES, "not a readable Parquet file"),
    ("samples-garbage", _garbage(SAMPLES), SAMPLES, "not a readable Parquet file"),
    ("samples-empty", _garbage(SAMPLES, b""), SAMPLES, "not a readable Parquet file"),
    ("samples-string-times", _rewrite_parquet(SAMPLES, lambda f: f.with_columns(pl.col("start_us").cast(pl.String))), SAMPLES,
     "column start_us is String"),
    ("samples-string-worker", _rewrite_parquet(SAMPLES, lambda f: f.with_columns(pl.col("worker").cast(pl.String))), SAMPLES,
     "column worker is String"),
    ("samples-missing-column", _rewrite_parquet(SAMPLES, lambda f: f.drop("end_us")), SAMPLES, "missing column end_us"),
    ("samples-pages-wiped", _wipe_pages, SAMPLES, "cannot be read"),
    ("timeseries-garbage", _garbage(TS), TS, "not a readable Parquet file"),
    ("timeseries-truncated", _truncate(TS), TS, "not a readable Parquet file"),
    ("timeseries-missing-second", _rewrite_parquet(TS, lambda f: f.drop("second")), TS, "missing column second"),
    ("timeseries-string-column", _rewrite_parquet(TS, lambda f: f.with_columns(pl.col("ops").cast(pl.String))), TS,
     "column ops is String"),
    ("manifest-missing", _remove(MANIFEST), MANIFEST, "missing"),
    ("manifest-garbage", _garbage(MANIFEST), MANIFEST, "not UTF-8"),
    ("manifest-truncated", _truncate(MANIFEST), MANIFEST, "not valid JSON"),
    ("manifest-array", _json(MANIFEST, lambda d: [d]), MANIFEST, "valid dictionary"),
    ("manifest-warnings-number", _json(MANIFEST, _set(warnings=5)), MANIFEST, "warnings"),
    ("manifest-schedule-string", _json(MANIFEST, _set(schedule="x")), MANIFEST, "schedule"),
    ("manifest-newer-version", _json(MANIFEST, _set(version=7)), MANIFEST, "version 7 is newer"),
    ("summary-missing", _remove(SUMMARY), SUMMARY, "missing"),
    ("summary-empty", _garbage(SUMMARY, b"  \n"), SUMMARY, "empty"),
    ("summary-truncated", _truncate(SUMMARY), SUMMARY, "not valid JSON"),
    ("summary-op-not-object", _json(SUMMARY, lambda d: {**d, "operations": {"open": "x"}}), SUMMARY, "operations.open"),
    ("summary-string-count", _json(SUMMARY, _set(operations_issued="many")), SUMMARY, "operations_issued"),
    ("summary-negative-count", _json(SUMMARY, lambda d: {**d, "types": {"1": {"issued": -3}}}), SUMMARY, "types.1.issued"),
    ("summary-times-string", _json(SUMMARY, _set(latency_ms="fast")), SUMMARY, "latency_ms"),
    ("config-garbage", _garbage(CONFIG, b"{not json"), CONFIG, "not valid JSON"),
    ("config-factor-list", _json(CONFIG, _set(factors={"a": [1]})), CONFIG, "factors.a"),
]


def _damaged_copy(good: Path, tmp_path: Path, damage: Damage) -> Path:
    run = tmp_path / "runs" / good.name
    shutil.copytree(good, run)
    damage(run)
    return run


@pytest.mark.parametrize(("damage", "file", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_damaged_run_is_a_clear_error_and_listed_as_damaged(
    good_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Damage, file: str, words: str
) -> None:
    run = _damaged_copy(good_runs[0], tmp_path, damage)
    for args in (["report", str(run), "--out", str(tmp_path / "report")],
                 ["compare", str(good_runs[1]), str(run), "--bootstrap", "100"],
                 ["compare", str(run), str(good_runs[1]), "--bootstrap", "100", "--json"]):
        code, _, err = run_cli(args, capsys)
        assert code == 3, (args[0], err)
        assert "Traceback" not in err and err.count("\n") == 1, err
        assert f"{run / file}" in err and words in err, err
    # runs: the damaged run is a row with status damaged, the good ones are listed as usual
    shutil.copytree(good_runs[1], tmp_path / "runs" / good_runs[1].name)
    code, out, err = run_cli(["runs", str(tmp_path / "runs"), "--json"], capsys)
    assert code == 0 and not err, err
    rows = {r["run_id"]: r for r in json.loads(out)}
    assert rows[good_runs[1].name]["status"] == "complete"
    if damage is _wipe_pages:
        # the listing reads only the Parquet footers (fast on large runs): damage past them shows
        # when the samples are read (report, compare above; --sql: test_damaged_sql_over_samples...)
        assert rows[run.name]["status"] == "complete"
        return
    assert rows[run.name]["status"] == "damaged" and not rows[run.name]["complete"]
    assert file in rows[run.name]["problem"] and words in rows[run.name]["problem"]
    code, out, err = run_cli(["runs", str(tmp_path / "runs")], capsys)
    assert code == 0 and "damaged" in out and "2 run(s)" in out, out + err


def test_run_left_by_a_refused_run_is_recognised(good_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused = tmp_path / "runs" / "20990101T000000Z-refuse"
    refused.mkdir(parents=True)
    shutil.copy(good_runs[0] / CONFIG, refused / CONFIG)
    manifest = json.loads((good_runs[0] / MANIFEST).read_text())
    manifest.update(status="refused", complete=False, message="the base directory is in use by another run")
    (refused / MANIFEST).write_text(json.dumps(manifest))
    for args in (["report", str(refused), "--out", str(tmp_path / "r")], ["compare", str(good_runs[0]), str(refused)]):
        code, _, err = run_cli(args, capsys)
        assert code == 3 and "Traceback" not in err, err
        assert "was refused: the base directory is in use by another run" in err
    shutil.copytree(good_runs[0], tmp_path / "runs" / good_runs[0].name)
    code, out, err = run_cli(["runs", str(tmp_path / "runs"), "--json"], capsys)
    assert code == 0, err
    rows = {r["run_id"]: r for r in json.loads(out)}
    assert rows[refused.name]["status"] == "refused" and rows[refused.name]["problem"].startswith("no results")
    assert rows[good_runs[0].name]["complete"]
    # a folder holding only the refused run still lists it (it is a run directory, not "no runs")
    shutil.rmtree(tmp_path / "runs" / good_runs[0].name)
    code, out, err = run_cli(["runs", str(tmp_path / "runs")], capsys)
    assert code == 0 and "REFUSED" in out, out + err


def test_damaged_sql_over_samples_is_an_input_error(good_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _damaged_copy(good_runs[0], tmp_path, _wipe_pages)
    code, _, err = run_cli(["runs", str(tmp_path / "runs"), "--sql", "SELECT count(*), sum(end_us) FROM samples"], capsys)
    assert code == 3 and "Traceback" not in err and err.count("\n") == 1, err
    assert f"{run / SAMPLES}: cannot be read" in err, err


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from([SAMPLES, TS, SUMMARY, MANIFEST, CONFIG]),
    cut=st.floats(min_value=0.0, max_value=1.0),
    flips=st.lists(st.tuples(st.floats(min_value=0.0, max_value=1.0), st.integers(1, 255)), max_size=4),
)
def test_any_byte_damage_never_gives_a_traceback(
    good_runs: list[Path], tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
    name: str, cut: float, flips: list[tuple[float, int]],
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")

    def damage(run: Path) -> None:
        data = bytearray((run / name).read_bytes())
        for where, xor in flips:
            if data:
                data[min(int(where * len(data)), len(data) - 1)] ^= xor
        (run / name).write_bytes(bytes(data[: max(0, round(cut * len(data)))] if cut < 1.0 else data))

    run = _damaged_copy(good_runs[0], tmp, damage)
    code, _, err = run_cli(["compare", str(good_runs[1]), str(run), "--bootstrap", "100", "--json"], capsys)
    assert code in (0, 3), err
    assert "Traceback" not in err
    if code == 3:
        assert err.count("\n") == 1 and str(run) in err, err
    code, out, err = run_cli(["runs", str(tmp / "runs"), "--json"], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert next(r["status"] for r in json.loads(out)) in ("complete", "damaged")
