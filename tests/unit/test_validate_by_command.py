"""validate --trace per audited command (``by_command``) and the coverage of a trace by a profile
(``validate``, ``model``, ``profile show``): known answers on hand-made traces, and a real trace."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_model_cli import SAVE_NAMESPACE_LOG
from test_synth_helpers import make_profile
from tests.unit.cli_run import run_cli

from mimesisbench.profile.io import load_profile, save_profile
from mimesisbench.schedule import Schedule, read_schedule
from mimesisbench.schedule.format import AUDIT_CMD, MODELLED_CMDS, OpCode
from mimesisbench.synth.audit import schedule_to_events
from mimesisbench.synth.by_command import by_command, classify, command_samples
from mimesisbench.synth.coverage import coverage_of_events, coverage_of_profile
from mimesisbench.synth.fidelity import validate_profile, validate_trace
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to

TOL = 1e-6

Event = tuple[int, str, str | None, str | None, bool]


def _table(rows: list[Event]) -> pl.DataFrame:
    time, op, path, dst, allowed = zip(*rows)
    return pl.DataFrame(
        {"time_ms": list(time), "op": list(op), "path": list(path), "dst": list(dst), "user": ["u"] * len(rows),
         "allowed": list(allowed)},
        schema={"time_ms": pl.Int64, "op": pl.String, "path": pl.String, "dst": pl.String, "user": pl.String,
                "allowed": pl.Boolean},
    )


#: 12 allowed events: open 6 (/d/a 3 at gaps 10, 20; /d/b 3 across its rename to /d/c, gaps 45, 10),
#: getfileinfo 2 on one file, listStatus 2 on the directory /d, rename 1, saveNamespace 1 (no
#: path); a denied setPermission is left out
TRACE: list[Event] = [
    (0, "open", "/d/a", None, True),
    (1, "getfileinfo", "/d/a", None, True),
    (2, "getfileinfo", "/d/a", None, True),
    (3, "listStatus", "/d", None, True),
    (4, "saveNamespace", None, None, True),
    (5, "open", "/d/b", None, True),
    (6, "setPermission", "/d/a", None, False),
    (8, "listStatus", "/d/", None, True),
    (10, "open", "/d/a", None, True),
    (30, "open", "/d/a", None, True),
    (40, "rename", "/d/b", "/d/c", True),
    (50, "open", "/d/c", None, True),
    (60, "open", "/d/c", None, True),
]

#: disjoint from TRACE: two files opened 10 times each, 1000 ms apart
OTHER: list[Event] = [(1000 * i, "open", f"/x/f{i % 2}", None, True) for i in range(20)]


def _samples(rows: list[Event]) -> Any:
    return command_samples(classify(_table(rows)))


def test_known_shares_counts_and_targets() -> None:
    table = by_command(_samples(TRACE), _samples(OTHER))
    assert set(table) == {"open", "getfileinfo", "listStatus", "rename", "saveNamespace"}
    op = table["open"]
    assert op["n_trace"] == 6 and op["n_schedule"] == 20
    assert op["trace_share"] == pytest.approx(6 / 12, abs=TOL) and op["schedule_share"] == pytest.approx(1.0, abs=TOL)
    # /d/b and its rename's destination are one object: 3 opens each for both files
    assert op["n_objects"] == {"trace": 2, "schedule": 2} and op["n_gaps"] == {"trace": 4, "schedule": 18}
    assert set(op["targets"]) == {"file"}
    assert table["listStatus"]["targets"]["directory"]["n_trace"] == 2  # "/d/" is the directory "/d"
    assert table["listStatus"]["targets"]["directory"]["n_objects"]["trace"] == 1
    assert table["saveNamespace"]["targets"]["none"]["trace_share"] == pytest.approx(1 / 12, abs=TOL)
    assert table["saveNamespace"]["modelled"] is False and table["open"]["modelled"] is True
    assert "setPermission" not in table  # denied
    # disjoint: every open of OTHER is more frequent and further apart than any of TRACE's
    assert op["ks_popularity"] == pytest.approx(1.0, abs=TOL) and op["ks_interarrival"] == pytest.approx(1.0, abs=TOL)
    # one side without samples, or with a single one: no KS
    assert table["getfileinfo"]["ks_popularity"] is None and table["getfileinfo"]["n_schedule"] == 0
    assert table["getfileinfo"]["schedule_share"] == 0.0


def test_identical_inputs_are_at_distance_zero() -> None:
    table = by_command(_samples(TRACE), _samples(TRACE))
    for cmd, row in table.items():
        assert row["trace_share"] == pytest.approx(row["schedule_share"], abs=TOL), cmd
        for key in ("ks_popularity", "ks_interarrival"):
            assert row[key] is None or row[key] == pytest.approx(0.0, abs=TOL), (cmd, key)
    assert table["open"]["ks_popularity"] == pytest.approx(0.0, abs=TOL)
    assert table["open"]["ks_interarrival"] == pytest.approx(0.0, abs=TOL)


def test_popularity_distance_between_known_counts() -> None:
    # trace: two files with 3 opens each; schedule: one with 3 and one with 1 -> KS 1/2
    other: list[Event] = [(0, "open", "/d/a", None, True), (5, "open", "/d/a", None, True),
                          (9, "open", "/d/a", None, True), (20, "open", "/d/z", None, True)]  # fmt: skip
    row = by_command(_samples(TRACE), _samples(other))["open"]
    assert row["ks_popularity"] == pytest.approx(0.5, abs=TOL)


def test_coverage_of_a_hand_made_trace() -> None:
    cov = coverage_of_events(_table(TRACE))
    assert cov.events == 12
    assert cov.modelled_share == pytest.approx(11 / 12, abs=TOL)
    assert cov.modelled_share_with_path == pytest.approx(1.0, abs=TOL)
    assert cov.not_modelled() == pytest.approx({"saveNamespace": 1 / 12}, abs=TOL)
    assert cov.line().startswith("coverage: 91.7 % of the trace's operations are modelled (not modelled: saveNamespace 8.3 %)")


def test_modelled_commands_are_what_a_schedule_can_contain() -> None:
    assert MODELLED_CMDS == {AUDIT_CMD[o] for o in OpCode if o.audit_cmd is not None}
    assert {"create", "open", "listStatus", "delete", "rename", "mkdirs", "getfileinfo", "setTimes"} <= MODELLED_CMDS


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Schedule:
    out = tmp_path_factory.mktemp("bycmd") / "s"
    generate_to(make_profile(n=400, pre=(60, 40, 10), mix={"getfileinfo_per_access": 0.3, "dir_list_per_access": 0.2,
                                                          "mkdirs_per_create": 0.1}), out, GenerateOptions(), 7)
    return read_schedule(out)


def test_a_schedule_against_its_own_export_is_at_distance_zero(tables: Schedule) -> None:
    report = validate_trace(tables, schedule_to_events(tables))
    table = report["by_command"]
    assert {"create", "open", "getfileinfo", "listStatus"} <= set(table)
    for cmd, row in table.items():
        assert row["n_trace"] == row["n_schedule"], cmd
        for key in ("ks_popularity", "ks_interarrival"):
            assert row[key] is None or row[key] == pytest.approx(0.0, abs=TOL), (cmd, key)
    assert set(table["listStatus"]["targets"]) == {"file", "directory"}
    assert report["coverage"]["modelled_share"] == pytest.approx(1.0, abs=TOL)
    assert report["ks_popularity"] == 0.0 and report["opmix_max_abs_error"] == 0.0  # the existing keys stay


def test_validate_profile_without_counts_has_null_coverage(tables: Schedule) -> None:
    report = validate_profile(tables, make_profile(n=400, pre=(60, 40, 10)))
    assert report["coverage"] is None
    assert any("no operation counts" in n for n in report["notes"])


def test_model_records_the_operations_without_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "audit.log"
    log.write_text("\n".join(SAVE_NAMESPACE_LOG) + "\n")
    code, _, err = run_cli(["model", "--audit", str(log), "--types", "1", "-o", str(tmp_path / "p.json")], capsys)
    assert code == 0
    # 7 operations, 3 without a path (safemode_enter, saveNamespace, safemode_leave): pathless
    # streams; the directory's mkdirs and getfileinfo, the file's create and delete: all modelled
    assert "coverage: 100.0 % of the trace's operations are modelled (not modelled: none)" in err
    assert "100.0 % of those naming a path" in err
    loaded = load_profile(tmp_path / "p.json")
    assert [(p.command, p.count) for p in loaded.pathless] == [("safemode_enter", 1), ("safemode_leave", 1),
                                                               ("saveNamespace", 1)]
    cov = coverage_of_profile(loaded)
    assert cov is not None and cov.modelled_share_with_path == pytest.approx(1.0, abs=TOL)
    code, out, _ = run_cli(["profile", "show", str(tmp_path / "p.json"), "--json"], capsys)
    assert code == 0 and json.loads(out)["coverage"]["modelled_share"] == pytest.approx(1.0, abs=TOL)
    code, out, _ = run_cli(["profile", "show", str(tmp_path / "p.json")], capsys)
    assert "coverage: 100.0 %" in out


def test_profile_show_without_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = save_profile(make_profile(n=100, pre=(10, 10, 5)), tmp_path / "p.json")
    code, out, _ = run_cli(["profile", "show", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out)["coverage"] is None


CMD = re.compile(r"\tcmd=([^\t]+)\t")


def test_real_trace_fitted_generated_validated(
    sandbox_audit_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = sandbox_audit_log.read_text().splitlines()
    cmds = Counter(m.group(1) for line in lines if "allowed=true" in line and (m := CMD.search(line)))
    profile, sched = tmp_path / "p.json", tmp_path / "s"
    code, _, err = run_cli(["model", "--audit", str(sandbox_audit_log), "--types", "3", "-o", str(profile)], capsys)
    # every command of the sandbox trace is in the fitted profile's model
    assert code == 0 and "coverage: 100.0 % of the trace's operations are modelled (not modelled: none)" in err
    model_cov = coverage_of_profile(load_profile(profile))
    assert model_cov is not None and model_cov.modelled_share is not None and model_cov.modelled_share >= 0.99
    assert run_cli(["generate", str(profile), "--seed", "1", "-o", str(sched)], capsys)[0] == 0
    code, out, _ = run_cli(["validate", str(sched), "--trace", str(sandbox_audit_log), "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    # against a schedule: the trace's operations whose command the schedule holds
    held = set(schedule_to_events(read_schedule(sched))["op"].cast(pl.String).drop_nulls().to_list())
    modelled = sum(n for cmd, n in cmds.items() if cmd in held) / sum(cmds.values())
    assert report["coverage"]["modelled_share"] == pytest.approx(modelled, abs=TOL)
    assert report["coverage"]["modelled_share_with_path"] == pytest.approx(modelled, abs=TOL)
    assert report["coverage"]["events"] == sum(cmds.values())
    table = report["by_command"]
    assert set(cmds) <= set(table)
    for cmd, n in cmds.items():
        assert table[cmd]["n_trace"] == n
        assert table[cmd]["trace_share"] == pytest.approx(n / sum(cmds.values()), abs=TOL)
    assert sum(r["trace_share"] for r in table.values()) == pytest.approx(1.0, abs=1e-4)
    assert sum(r["schedule_share"] for r in table.values()) == pytest.approx(1.0, abs=1e-4)
    for key in ("ks_popularity", "ks_interarrival", "opmix_max_abs_error", "popularity_bar"):
        assert key in report
    # the same profile's coverage through validate --profile
    code, out, _ = run_cli(["validate", str(sched), "--profile", str(profile), "--json"], capsys)
    assert code == 0 and json.loads(out)["coverage"]["modelled_share"] == pytest.approx(1.0, abs=TOL)
    # and as a table: no traceback, the per-command rows printed
    code, out, _ = run_cli(["validate", str(sched), "--trace", str(sandbox_audit_log)], capsys)
    assert code == 0 and "contentSummary" in out
