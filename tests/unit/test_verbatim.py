"""A trace replayed verbatim (``schedule-from-trace``): known answers of the namespace model,
the explicit-path schedule format, anonymisation, and replays on a real local file system whose
every outcome is the one the trace's own history predicts."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from tests.unit.cli_run import run_cli

from mimesisbench.errors import ScheduleError, TraceError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.schedule.paths import event_paths, namespace_paths
from mimesisbench.synth.audit import schedule_to_events
from mimesisbench.synth.check import check_schedule
from mimesisbench.synth.fidelity import validate_trace
from mimesisbench.synth.verbatim import DENIED, manifest_for, verbatim_schedule, write_verbatim
from mimesisbench.trace.anonymise import anonymise_paths, anonymous_name
from mimesisbench.trace.reader import read_trace

KEY = b"0123456789abcdef-test-key"


def trace(*rows: tuple) -> pl.DataFrame:
    """A canonical event table from (time_ms, cmd, path[, dst[, allowed]]) rows."""
    full = [(*r, *(None, True)[len(r) - 3:]) if len(r) < 5 else r for r in rows]
    return pl.DataFrame(
        {
            "time_ms": [r[0] for r in full],
            "op": [r[1] for r in full],
            "path": [r[2] for r in full],
            "dst": [r[3] for r in full],
            "user": ["u"] * len(full),
            "allowed": [r[4] for r in full],
        },
        schema={"time_ms": pl.Int64, "op": pl.String, "path": pl.String, "dst": pl.String, "user": pl.String,
                "allowed": pl.Boolean},
    )


def ops(v) -> list[tuple[str, str | None, str | None, bool]]:  # noqa: ANN001
    return [(OpCode(o).label, p, d, ok) for o, p, d, ok in v.events.select("op", "path", "path2", "expect_ok").iter_rows()]


def written(v, tmp_path: Path) -> Path:  # noqa: ANN001
    out = tmp_path / "verbatim"
    write_verbatim(v, out, manifest_for(v, sources=["test"], snapshot=None))
    return out


def test_each_event_is_one_operation_on_its_own_path_at_its_time() -> None:
    v = verbatim_schedule(trace(
        (1000, "mkdirs", "/job/_temporary/0"),
        (1005, "create", "/job/_temporary/0/part-0"),
        (1010, "getfileinfo", "/job/_temporary/0/part-0"),
        (1020, "rename", "/job/_temporary/0/part-0", "/job/part-0"),
        (1030, "delete", "/job/_temporary"),
        (1040, "open", "/job/part-0"),
        (1050, "listStatus", "/job"),
    ))  # fmt: skip
    assert ops(v) == [
        ("mkdirs_parents", "/job/_temporary/0", None, True),
        ("create", "/job/_temporary/0/part-0", None, True),
        ("getfileinfo", "/job/_temporary/0/part-0", None, True),
        ("rename_file", "/job/_temporary/0/part-0", "/job/part-0", True),
        ("delete_dir", "/job/_temporary", None, True),
        ("open", "/job/part-0", None, True),
        ("list_dir", "/job", None, True),
    ]
    assert v.events["time_us"].to_list() == [0, 5000, 10000, 20000, 30000, 40000, 50000]
    # nothing but the root pre-exists: /job is made by the first mkdirs (it may have existed; no
    # event says it did, and nothing below it is used before it is made)
    assert v.directories.filter(pl.col("pre_existing"))["path"].to_list() == ["/"]
    # one lane for the part file before and after its rename, and for everything below the
    # _temporary tree that is deleted (its events must come before the delete); /job apart
    keys = v.events["order_key"].to_list()
    assert len(set(keys[:6])) == 1 and keys[6] != keys[0]


def test_what_existed_before_the_window_is_inferred_from_the_trace_history() -> None:
    v = verbatim_schedule(trace(
        (0, "getfileinfo", "/out/_SUCCESS"),  # looked for before it is made: a miss
        (1, "open", "/data/old.csv"),  # never made in the window: it existed
        (2, "create", "/out/_SUCCESS"),
        (3, "delete", "/data/gone"),  # never seen before: it existed, and is deleted
        (4, "getfileinfo", "/data/gone"),  # deleted: a miss
        (5, "open", "/data/gone"),  # the trace shows no create after the delete: fails on replay
    ))  # fmt: skip
    assert [(op, ok) for op, _, _, ok in ops(v)] == [
        ("getfileinfo_absent", True), ("open", True), ("create", True), ("delete", True),
        ("getfileinfo_absent", True), ("open", False),
    ]  # fmt: skip
    assert sorted(v.files.filter(pl.col("pre_existing"))["path"].to_list()) == ["/data/gone", "/data/old.csv"]
    assert v.directories.filter(pl.col("pre_existing"))["path"].to_list() == ["/", "/data"]
    assert v.report.expected_failures == 1


def test_an_allowed_access_below_a_mkdirs_ed_directory_shows_that_it_existed() -> None:
    # the NameNode audits no FileNotFoundException: an allowed contentSummary proves its path
    # existed, so the directory the trace mkdirs-ed before it was already there (a second pass
    # of the model replays the trace from that namespace)
    v = verbatim_schedule(trace(
        (0, "getfileinfo", "/warehouse/t1"),
        (1, "mkdirs", "/warehouse"),
        (2, "contentSummary", "/warehouse/t1"),
    ))  # fmt: skip
    assert [(op, ok) for op, _, _, ok in ops(v)] == [
        ("getfileinfo_dir", True), ("mkdirs_parents", True), ("content_summary_dir", True),
    ]  # fmt: skip
    assert set(v.directories.filter(pl.col("pre_existing"))["path"].to_list()) == {"/", "/warehouse", "/warehouse/t1"}


def test_a_rename_onto_a_directory_moves_into_it_and_carries_its_subtree() -> None:
    v = verbatim_schedule(trace(
        (0, "mkdirs", "/a/tree/sub"),
        (1, "create", "/a/tree/sub/f"),
        (2, "mkdirs", "/b"),
        (3, "rename", "/a/tree", "/b"),  # /b exists: HDFS moves the tree into it
        (4, "open", "/b/tree/sub/f"),
        (5, "getfileinfo", "/a/tree/sub/f"),
    ))  # fmt: skip
    got = ops(v)
    assert got[3] == ("rename_dir", "/a/tree", "/b/tree", True)
    assert got[4] == ("open", "/b/tree/sub/f", None, True)
    assert got[5] == ("getfileinfo_absent", "/a/tree/sub/f", None, True)


def test_denied_namespace_changes_are_left_out_and_denied_reads_kept() -> None:
    v = verbatim_schedule(trace(
        (0, "create", "/p/f"),
        (1, "delete", "/p/f", None, False),  # denied: the file stays
        (2, "open", "/p/f", None, False),  # a denied read is replayed (it fails in the trace only)
        (3, "open", "/p/f"),
    ))  # fmt: skip
    assert [(op, ok) for op, _, _, ok in ops(v)] == [("create", True), ("open", True), ("open", True)]
    assert v.report.skipped == {DENIED + "delete": 1}
    assert v.events["allowed"].to_list() == [True, False, True]


def test_namenode_wide_commands_and_unclean_paths() -> None:
    v = verbatim_schedule(trace(
        (0, "datanodeReport", None),
        (1, "open", "relative/path"),
        (2, "getfileinfo", "/x/"),
        (3, "datanodeReport", None),
        (4, "listSnapshottableDirectory", "/"),
    ))  # fmt: skip
    assert [op for op, *_ in ops(v)] == ["namenode", "getfileinfo", "namenode"]
    assert v.pathless_commands == ["datanodeReport"]
    assert v.events["path"].to_list() == [None, "/x", None]
    assert v.report.skipped == {"(relative or unclean path)": 1, "listSnapshottableDirectory": 1}


def test_the_root_itself_is_never_deleted_nor_renamed() -> None:
    # the root is the run's base directory: a replay must not remove it
    v = verbatim_schedule(trace((0, "delete", "/"), (1, "rename", "/", "/x"), (2, "listStatus", "/")))
    assert [op for op, *_ in ops(v)] == ["list_dir"]
    assert v.report.skipped == {"delete": 1, "rename": 1}


def test_a_trace_without_a_replayable_event_is_refused() -> None:
    with pytest.raises(TraceError, match="no event of the trace can be replayed"):
        verbatim_schedule(trace((0, "open", "relative")))
    with pytest.raises(TraceError, match="nothing to replay"):
        verbatim_schedule(trace())


def test_the_schedule_reads_back_and_replays_its_own_paths(tmp_path: Path) -> None:
    v = verbatim_schedule(trace(
        (0, "open", "/data/a b/x.csv"),
        (1, "rename", "/data/a b/x.csv", "/archive/x.csv"),
        (2, "datanodeReport", None),
    ))  # fmt: skip
    s = read_schedule(written(v, tmp_path))
    assert s.explicit_paths and s.manifest["version"] == 3
    frame = event_paths(s)
    assert frame["path"].to_list() == ["/data/a b/x.csv", "/data/a b/x.csv", "/"]
    assert frame["path2"].to_list() == [None, "/archive/x.csv", None]
    assert frame["key"][0] == frame["key"][1] != frame["key"][2]
    dirs, files = namespace_paths(s)
    assert files.to_list() == ["/data/a b/x.csv"]
    assert set(dirs["path"].to_list()) == {"/data", "/data/a b"}  # /archive is not needed before
    with pytest.raises(ScheduleError, match="verbatim schedule"):
        check_schedule(s)  # the checker derives names: it refuses rather than misread the paths


def _broken(tmp_path: Path, table: str, change) -> Path:  # noqa: ANN001
    v = verbatim_schedule(trace((0, "create", "/d/f"), (1, "rename", "/d/f", "/d/g")))
    out = written(v, tmp_path)
    frame = pl.read_parquet(out / table)
    change(frame).write_parquet(out / table)
    return out


@pytest.mark.parametrize(
    ("table", "change", "message"),
    [
        ("events.parquet", lambda f: f.drop("order_key"), "lacks column order_key"),
        ("events.parquet", lambda f: f.with_columns(pl.lit(None, dtype=pl.String).alias("path2")), "only a rename"),
        ("events.parquet", lambda f: f.with_columns(pl.lit("/d/../x").alias("path")), "not a clean absolute path"),
        ("events.parquet", lambda f: f.with_columns(pl.lit(-1, dtype=pl.Int64).alias("order_key")), "non-negative"),
        ("files.parquet", lambda f: f.with_columns(pl.lit("/elsewhere/f").alias("path")), "is not inside its directory"),
        ("files.parquet", lambda f: f.drop("path"), "files.parquet: lacks column path"),
    ],
)
def test_a_broken_explicit_path_schedule_is_refused_naming_the_column(tmp_path: Path, table, change, message) -> None:  # noqa: ANN001
    with pytest.raises(ScheduleError, match=message):
        read_schedule(_broken(tmp_path, table, change))


def test_versions_and_the_paths_key_go_together(tmp_path: Path) -> None:
    out = written(verbatim_schedule(trace((0, "mkdirs", "/a/b"))), tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "version": 2}))
    with pytest.raises(ScheduleError, match="paths"):
        read_schedule(out)
    (out / "manifest.json").write_text(json.dumps({**manifest, "version": 2, "paths": None}))
    with pytest.raises(ScheduleError, match="unknown op code 43 for a version 2 schedule"):
        read_schedule(out)  # a version 2 schedule cannot hold the verbatim mkdirs (parents made)


def test_validate_reads_zero_for_the_verbatim_schedule_of_a_real_trace(sandbox_audit_log: Path, tmp_path: Path) -> None:
    events, _ = read_trace([sandbox_audit_log])
    v = verbatim_schedule(events)
    result = validate_trace(read_schedule(written(v, tmp_path)), events)
    assert result["opmix_max_abs_error"] == 0.0
    assert result["ks_popularity"] == 0.0
    assert result["ks_interarrival"] == 0.0
    assert result["coverage"]["modelled_share"] == 1.0
    for cmd, row in result["by_command"].items():
        assert row["n_trace"] == row["n_schedule"], cmd
    # the same lines, command by command and path by path
    back = schedule_to_events(read_schedule(written(v, tmp_path)))
    stripped = pl.col("path").cast(pl.String).str.strip_chars_end("/")
    want = events.select(pl.col("op").cast(pl.String), pl.when(stripped == "").then(pl.lit("/")).otherwise(stripped))
    assert back.select("op", "path").rows() == want.rows()


def run_verbatim(schedule: Path, tmp_path: Path) -> pl.DataFrame:
    """Replay on a real local file system, one lane (the schedule's order, whatever the load):
    every operation's outcome beside what the schedule predicts."""
    config = RunConfig(
        schedule=str(schedule), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs"), workers=1,
        concurrency=1, time_scale=0.002, max_drift_s=None,
    )  # fmt: skip
    (tmp_path / "base").mkdir()
    report = run_benchmark(config, show_progress=False)
    samples = pl.read_parquet(Path(report.run_dir) / "samples.parquet")
    events = read_schedule(schedule).events.select("seq", "path", "expect_ok")
    return samples.join(events, on="seq").with_columns((pl.col("outcome") == "ok").alias("ok"))


def test_a_real_trace_replays_on_posix_with_the_outcomes_its_history_predicts(
    sandbox_audit_log: Path, tmp_path: Path
) -> None:
    events, _ = read_trace([sandbox_audit_log])
    v = verbatim_schedule(events)
    got = run_verbatim(written(v, tmp_path), tmp_path)
    assert got.height == events.height
    wrong = got.filter(pl.col("ok") != pl.col("expect_ok"))
    assert wrong.height == 0, wrong.select("op", "outcome", "path").head(10)
    assert got.filter(~pl.col("ok")).height == v.report.expected_failures >= 1  # the second delete of a file


def test_a_job_replays_on_posix_with_renames_of_trees_and_parents_made(tmp_path: Path) -> None:
    v = verbatim_schedule(trace(
        (0, "open", "/in/data.csv"),
        (10, "mkdirs", "/out/job/_temporary/0/attempt_0"),
        (11, "create", "/out/job/_temporary/0/attempt_0/part-0"),
        (12, "create", "/out/job/_temporary/0/attempt_0/part-1"),
        (20, "rename", "/out/job/_temporary/0/attempt_0/part-0", "/out/job/part-0"),
        (21, "rename", "/out/job/_temporary/0/attempt_0/part-1", "/out/job/part-1"),
        (30, "delete", "/out/job/_temporary"),
        (31, "create", "/out/job/_SUCCESS"),
        (40, "rename", "/out/job", "/published"),
        (41, "listStatus", "/published"),
        (42, "getfileinfo", "/out/job"),
        (43, "create", "/in/data.csv"),  # an overwrite of the input
    ))  # fmt: skip
    got = run_verbatim(written(v, tmp_path), tmp_path)
    assert got["ok"].all(), got.filter(~pl.col("ok")).select("op", "outcome", "path")
    assert got["op"].cast(pl.String).to_list()[-1] == "create_overwrite"
    base = tmp_path / "base"
    assert sorted(p.name for p in (base / "published").iterdir()) == ["_SUCCESS", "part-0", "part-1"]
    assert (base / "in" / "data.csv").is_file() and not (base / "out" / "job").exists()


def test_anonymised_names_are_stable_per_key_and_keep_the_tree() -> None:
    paths = pl.Series(["/user/alice/data/part-0", "/user/bob/data", "/", None, "/user/alice"])
    a = anonymise_paths(paths, KEY)
    b = anonymise_paths(paths, KEY)
    other = anonymise_paths(paths, KEY + b"!")
    assert a.to_list() == b.to_list()
    assert a[2] == "/" and a[3] is None
    user, alice = anonymous_name(KEY, "user"), anonymous_name(KEY, "alice")
    assert a[0].split("/")[1:3] == [user, alice] and a[4] == f"/{user}/{alice}"
    assert a[1].split("/")[3] == a[0].split("/")[3] == anonymous_name(KEY, "data")  # same name, same hash
    assert [p.count("/") for p in a.drop_nulls()] == [p.count("/") for p in paths.drop_nulls()]
    assert not any(word in " ".join(a.drop_nulls()) for word in ("user", "alice", "bob", "data", "part"))
    assert set(other.drop_nulls()) & set(a.drop_nulls()) == {"/"}


def test_an_anonymised_schedule_replays_like_the_plain_one(tmp_path: Path) -> None:
    rows = (
        (0, "getfileinfo", "/job/out"), (1, "mkdirs", "/job/out"), (2, "create", "/job/out/f"),
        (3, "rename", "/job/out/f", "/job/final"), (4, "open", "/job/final"),
    )  # fmt: skip
    plain, hidden = verbatim_schedule(trace(*rows)), verbatim_schedule(trace(*rows), key=KEY)
    assert hidden.report.anonymised
    assert hidden.events.select("op", "expect_ok").rows() == plain.events.select("op", "expect_ok").rows()

    def lanes(keys: list[int]) -> list[int]:  # which events share a lane (key values differ)
        return [keys.index(k) for k in keys]

    assert lanes(hidden.events["order_key"].to_list()) == lanes(plain.events["order_key"].to_list())
    assert "job" not in " ".join(hidden.events["path"].to_list())


def test_cli_writes_a_schedule_and_refuses_a_short_key(sandbox_audit_log: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "s"
    key = tmp_path / "key"
    key.write_bytes(b"short\n")
    code, _, err = run_cli(["schedule-from-trace", str(sandbox_audit_log), "--anonymise-key-file", str(key), "-o", str(out)], capsys)
    assert code == 3 and "at least 16" in err and not out.exists()
    key.write_bytes(KEY + b"\n")
    code, stdout, err = run_cli(["schedule-from-trace", str(sandbox_audit_log), "--anonymise-key-file", str(key), "-o", str(out)], capsys)
    assert code == 0, err
    assert "229 operations" in err and "paths anonymised" in err
    manifest = read_schedule(out).manifest
    assert manifest["verbatim"]["anonymised"] and manifest["counts"]["events"] == 229
    assert KEY.decode() not in (out / "manifest.json").read_text()
    code, _, err = run_cli(["schedule-from-trace", str(tmp_path / "missing.log"), "-o", str(tmp_path / "t")], capsys)
    assert code == 3 and "does not exist" in err
