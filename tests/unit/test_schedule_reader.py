"""The one schedule reader (``mimesisbench.schedule``): every corruption is refused with exit 4
naming the file and column, before anything is built; the package loads without the generator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from test_run_schedules import Dir, workload, write_schedule
from tests.unit.cli_run import run_cli

from mimesisbench.errors import ScheduleError
from mimesisbench.schedule import DIRECTORIES, EVENTS, FILES, MANIFEST, MAX_TIME_US, OpCode, load_schedule

Edit = Callable[[Path], None]




def _table(name: str, change: Callable[[pl.DataFrame], pl.DataFrame]) -> Edit:
    def edit(root: Path) -> None:
        frame = pl.read_parquet(root / name)
        change(frame).write_parquet(root / name)

    return edit


def _manifest(text: str) -> Edit:
    def edit(root: Path) -> None:
        (root / MANIFEST).write_text(text, encoding="utf-8")

    return edit


def _manifest_key(key: str, value: object) -> Edit:
    def edit(root: Path) -> None:
        data = json.loads((root / MANIFEST).read_text())
        data[key] = value
        (root / MANIFEST).write_text(json.dumps(data), encoding="utf-8")

    return edit


CORRUPTIONS: list[tuple[str, Edit, str]] = [
    ("string times", _table(EVENTS, lambda f: f.with_columns(pl.col("time_us").cast(pl.String))),
     "events.parquet column time_us: holds String"),
    ("time overflow", _table(EVENTS, lambda f: f.with_columns(pl.lit(2**63 - 1, dtype=pl.Int64).alias("time_us"))),
     f"events.parquet column time_us: time 9223372036854775807 us is out of range \\[0, {MAX_TIME_US}\\]"),
    ("negative time", _table(EVENTS, lambda f: f.with_columns((pl.col("time_us") - 10**9).alias("time_us"))),
     "events.parquet column time_us: time -"),
    ("empty files table", _table(FILES, lambda f: f.clear()),
     "events.parquet column target: event seq .* names file [0-9]+, not listed in files.parquet"),
    ("file target out of range", _table(EVENTS, lambda f: f.with_columns(pl.col("target") + 10_000)),
     "events.parquet column target: .* not listed in files.parquet"),
    ("directory target out of range",
     _table(EVENTS, lambda f: f.with_columns(
         pl.when(pl.col("op") == int(OpCode.LIST_DIR)).then(99).otherwise(pl.col("target")).alias("target"))),
     "names directory 99, not listed in directories.parquet"),
    ("null directory path",
     _table(DIRECTORIES, lambda f: f.with_columns(
         pl.when(pl.col("dir_id") == 2).then(None).otherwise(pl.col("path")).alias("path"))),
     "directories.parquet column path: 1 null value"),
    ("file in an unknown directory",
     _table(FILES, lambda f: f.with_columns(pl.lit(77, dtype=pl.Int32).alias("dir_id"))),
     "files.parquet column dir_id: file 0 names dir_id 77, not listed"),
    ("unknown op", _table(EVENTS, lambda f: f.with_columns(pl.lit(200, dtype=pl.UInt8).alias("op"))),
     "events.parquet column op: unknown op code 200"),
    ("type too large for Int16", _table(FILES, lambda f: f.with_columns(pl.col("type").cast(pl.Int64) + 70_000)),
     "files.parquet column type: values .* do not fit Int16"),
    ("event type differs from its file's",
     _table(EVENTS, lambda f: f.with_columns(
         pl.when(pl.col("op") == int(OpCode.OPEN)).then(9).otherwise(pl.col("type")).cast(pl.Int16).alias("type"))),
     "events.parquet column type: event seq .* has type 9"),
    ("repeated seq", _table(EVENTS, lambda f: f.with_columns(pl.lit(0, dtype=pl.Int64).alias("seq"))),
     "events.parquet column seq: a seq is repeated"),
    ("missing column", _table(EVENTS, lambda f: f.drop("generation")),
     "events.parquet: lacks column\\(s\\) generation"),
    ("not parquet", lambda root: (root / FILES).write_text("junk"), "files.parquet: cannot read it"),
    ("garbage manifest", _manifest("\x00\x01garbage"), "manifest.json: not valid JSON"),
    ("manifest is a list", _manifest("[1, 2]"), "manifest.json is not a mimesisbench-schedule"),
    ("window_ms a string", _manifest_key("window_ms", "soon"), "manifest.json key 'window_ms': expected int"),
    ("options a list", _manifest_key("options", [1]), "manifest.json key 'options': expected dict"),
    ("seed a float", _manifest_key("seed", 1.5), "manifest.json key 'seed'"),
    ("op 10 in a version 1 schedule",
     lambda root: (_manifest_key("version", 1)(root), _table(EVENTS, lambda f: f.with_columns(
         pl.when(pl.col("op") == int(OpCode.GETFILEINFO)).then(int(OpCode.GETFILEINFO_DIR)).otherwise(pl.col("op"))
         .cast(pl.UInt8).alias("op")))(root)),
     "events.parquet column op: unknown op code 10 for a version 1 schedule \\(it holds codes 1-9\\)"),
    ("a newer version", _manifest_key("version", 4), "version 1, 2 or 3 manifest .*newer MimesisBench: upgrade it"),
    ("version 3 without explicit paths", _manifest_key("version", 3), "a version 3 schedule, and only one, says \"paths\""),
    ("pathless command out of range",
     lambda root: (_manifest_key("pathless_commands", ["getDatanodeReport"])(root), _table(EVENTS, lambda f: f.with_columns(
         pl.when(pl.col("op") == int(OpCode.OPEN)).then(int(OpCode.NAMENODE)).otherwise(pl.col("op")).cast(pl.UInt8)
         .alias("op"),
         pl.when(pl.col("op") == int(OpCode.OPEN)).then(1).otherwise(pl.col("target")).alias("target")))(root)),
     "names pathless command 1, not listed in manifest.json pathless_commands"),
    ("deep manifest", _manifest('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"), "manifest.json: not valid JSON"),
]


@pytest.mark.parametrize(("what", "edit", "message"), CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_corruptions_are_refused_naming_file_and_column(tmp_path: Path, what: str, edit: Edit, message: str) -> None:
    root = workload(tmp_path / "s", files_per_type=3)
    load_schedule(root)  # intact, it reads
    edit(root)
    with pytest.raises(ScheduleError, match=message):
        load_schedule(root)


@pytest.mark.parametrize(
    ("what", "edit"),
    [(c[0], c[1]) for c in CORRUPTIONS if c[0] in ("string times", "empty files table", "garbage manifest",
                                                    "file target out of range", "null directory path")],
)
def test_validate_and_export_audit_exit_4_on_a_corrupt_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, edit: Edit
) -> None:
    sched = tmp_path / "s"
    assert run_cli(["generate", "demo", "--seed", "2", "--duration", "3s", "-o", str(sched)], capsys)[0] == 0
    edit(sched)
    commands = (["validate", str(sched), "--profile", "demo"], ["export-audit", str(sched), "-o", str(tmp_path / "a")])
    for argv in commands:
        code, out, err = run_cli(argv, capsys)
        assert code == 4, (what, argv, err)
        assert f"schedule {sched}" in err and "Traceback" not in out + err
    assert not (tmp_path / "a").exists()


def test_export_audit_refuses_events_naming_unknown_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sched = tmp_path / "s"
    assert run_cli(["generate", "demo", "--seed", "2", "--duration", "3s", "-o", str(sched)], capsys)[0] == 0
    files = pl.read_parquet(sched / FILES)
    files.head(files.height // 2).write_parquet(sched / FILES)
    code, out, err = run_cli(["export-audit", str(sched), "-o", str(tmp_path / "audit.log")], capsys)
    assert code == 4 and "not listed in files.parquet" in err
    assert not (tmp_path / "audit.log").exists() and "wrote" not in out + err


def test_a_schedule_given_as_a_file_is_an_invalid_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "sched.parquet"
    plain.write_text("x")
    for argv in (["validate", str(plain), "--profile", "demo"], ["export-audit", str(plain)],
                 ["run", str(plain), "-b", f"posix:{tmp_path / 'base'}", "-o", str(tmp_path / "runs")]):
        code, _, err = run_cli(argv, capsys)
        assert code == 4 and "not a directory but a file" in err, (argv, err)
    assert not (tmp_path / "base").exists() and not (tmp_path / "runs").exists()


def test_run_refuses_a_bad_path_before_creating_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, bad in (("dotdot", "/d1/../../x"), ("empty", "/d1//x"), ("nul", "/d1/x\x00y"), ("dot", "/d1/./x")):
        dirs: list[Dir] = [(0, -1, 0, 0, "/", True), (1, 0, 1, 1, "/d1", True), (2, 1, 2, 1, bad, True)]
        root = write_schedule(tmp_path / name, dirs, [(0, 1, 2, True)], [(0, OpCode.OPEN, 1, 0, 0)])
        base = tmp_path / f"base-{name}"
        code, _, err = run_cli(["run", str(root), "-b", f"posix:{base}", "-o", str(tmp_path / "runs")], capsys)
        assert code == 4 and "directories.parquet column path" in err, err
        assert not base.exists() and not (tmp_path / "runs").exists()


def test_times_cast_from_a_narrower_integer_still_read(tmp_path: Path) -> None:
    """Old or hand-written schedules with other integer widths keep reading (same format)."""
    root = workload(tmp_path / "s", files_per_type=2)
    frame = pl.read_parquet(root / EVENTS)
    frame.with_columns(pl.col("time_us").cast(pl.UInt32), pl.col("target").cast(pl.Int32)).write_parquet(root / EVENTS)
    sched = load_schedule(root)
    assert sched.events.schema["time_us"] == pl.Int64 and sched.events.schema["target"] == pl.Int64


def test_the_format_package_loads_without_the_generator() -> None:
    code = (
        "import sys, mimesisbench.schedule, mimesisbench.schedule.paths, mimesisbench.schedule.writer, "
        "mimesisbench.run.worker\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'sklearn') "
        "or m.startswith('mimesisbench.synth.'))\n"
        "print(','.join(bad))"
    )
    import mimesisbench

    env = {**os.environ, "PYTHONPATH": str(Path(mimesisbench.__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert proc.stdout.strip() == ""


def test_version_1_and_2_schedules_read_and_pathless_commands_are_targets(tmp_path: Path) -> None:
    """Version 1 (codes 1-9) still reads; a NAMENODE event names an entry of ``pathless_commands``
    and gets the base as its path (no file or directory)."""
    root = workload(tmp_path / "s", files_per_type=3)
    data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    data["version"] = 1
    (root / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    assert load_schedule(root).manifest["version"] == 1
    data.update(version=2, pathless_commands=["getDatanodeReport", "getServerDefaults"])
    (root / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    events = pl.read_parquet(root / EVENTS)
    extra = pl.DataFrame(
        {"time_us": [5, 6], "op": [int(OpCode.NAMENODE)] * 2, "type": [0, 0], "target": [1, 0],
         "generation": [0, 0], "seq": [10_000, 10_001]},
        schema=events.schema,
    )
    pl.concat([events, extra]).sort("time_us", "seq").write_parquet(root / EVENTS)
    schedule = load_schedule(root)
    from mimesisbench.schedule.paths import event_paths, owner_columns

    rows = event_paths(schedule).filter(pl.col("op") == int(OpCode.NAMENODE))
    assert rows["path"].to_list() == ["/", "/"] and rows["file_type"].null_count() == 2
    assert owner_columns(schedule).filter(pl.col("op") == int(OpCode.NAMENODE))["file_type"].null_count() == 2
