"""The runs catalog (DuckDB over run directories) and the ``runs`` verb."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from tests.unit.test_report_html import make_real_runs

from mimesisbench.cli.cmd_report import COMMANDS
from mimesisbench.cli.main import cli
from mimesisbench.errors import ConfigError
from mimesisbench.results import rundir
from mimesisbench.results.catalog import open_catalog
from mimesisbench.results.load import NoRunsError


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real runs (memory, posix) in runs/, plus a copy made incomplete in runs/nested/deeper/."""
    root = tmp_path_factory.mktemp("catalog")
    made = make_real_runs(root, [("memory", 0.25), ("posix", 0.25)], seed=5)
    broken = root / "runs" / "nested" / "deeper" / "20990101T000000Z-broken"
    shutil.copytree(made[0], broken)
    manifest = json.loads((broken / rundir.MANIFEST).read_text())
    manifest.update(complete=False, status="interrupted", started_at="2099-01-01T00:00:00+00:00")
    (broken / rundir.MANIFEST).write_text(json.dumps(manifest))
    summary = json.loads((broken / rundir.SUMMARY).read_text())
    summary["complete"] = False
    (broken / rundir.SUMMARY).write_text(json.dumps(summary))
    (root / "runs" / "not-a-run").mkdir()
    return root / "runs"


def _cli() -> CliRunner:
    for command in COMMANDS:
        cli.add_command(command)
    return CliRunner()


def test_catalog_finds_runs_recursively_with_key_figures(runs_root: Path) -> None:
    catalog = open_catalog(runs_root)
    try:
        result = catalog.list_runs()
        records = result.records()
        assert len(records) == 3
        assert records[-1]["run_id"] == "20990101T000000Z-broken"  # ordered by start time
        assert [r["complete"] for r in records] == [True, True, False]
        assert {r["backend_scheme"] for r in records} == {"memory", "posix"}
        for record in records:
            summary = json.loads((Path(record["path"]) / rundir.SUMMARY).read_text())
            assert record["throughput_ops_per_s"] == pytest.approx(summary["throughput_ops_per_s"])
            assert record["operations_issued"] == summary["operations_issued"]
            assert record["schedule_hash"] and record["profile_hash"]
        assert len({r["schedule_hash"] for r in records}) == 1
        p99 = catalog.p99_by_op([r["run_id"] for r in records])
        first = json.loads((Path(records[0]["path"]) / rundir.SUMMARY).read_text())
        assert p99[records[0]["run_id"]] == {op: pytest.approx(s["latency_ms"]["p99"]) for op, s in first["operations"].items()}
    finally:
        catalog.close()


def test_where_filters_and_sql_reaches_samples(runs_root: Path) -> None:
    catalog = open_catalog(runs_root)
    try:
        posix = catalog.list_runs("complete AND backend_scheme = 'posix'").records()
        assert len(posix) == 1 and posix[0]["backend"].startswith("posix:")
        counted = catalog.query("SELECT run_id, count(*) AS n FROM samples GROUP BY run_id ORDER BY run_id").records()
        expected = {p.name: pl.read_parquet(p / rundir.SAMPLES).height for p in (Path(r["path"]) for r in catalog.list_runs().records())}
        assert {r["run_id"]: r["n"] for r in counted} == expected
        ops = catalog.query("SELECT DISTINCT op FROM ops ORDER BY op").records()
        assert {r["op"] for r in ops} <= {"create", "open", "list_file", "list_dir", "delete", "mkdirs", "rename_file", "rename_dir", "getfileinfo"}
        with pytest.raises(ConfigError, match="SQL error"):
            catalog.list_runs("no_such_column = 1")
    finally:
        catalog.close()


def test_runs_cli_table_and_json(runs_root: Path) -> None:
    runner = _cli()
    result = runner.invoke(cli, ["runs", str(runs_root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "3 run(s)" in result.output and "INTERRUPTED" in result.output and "p99 create" in result.output
    result = runner.invoke(cli, ["runs", str(runs_root), "--json", "--where", "NOT complete"], catch_exceptions=False)
    data = json.loads(result.output)
    assert [r["run_id"] for r in data] == ["20990101T000000Z-broken"]
    assert "create" in data[0]["latency_p99_ms_by_op"]
    result = runner.invoke(cli, ["runs", str(runs_root), "--json", "--sql", "SELECT count(*) AS n FROM runs"], catch_exceptions=False)
    assert json.loads(result.output) == [{"n": 3}]


def test_no_runs_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoRunsError, match="no run directories found"):
        open_catalog(tmp_path)
    with pytest.raises(NoRunsError, match="no such directory"):
        open_catalog(tmp_path / "missing")
    result = _cli().invoke(cli, ["runs", str(tmp_path)])
    assert isinstance(result.exception, NoRunsError)
