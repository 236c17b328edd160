"""Small schedules written straight in the format of ``schedule.format`` (helpers for the run
tests), and tests of how a schedule is read, turned into paths and split between workers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mimesisbench.errors import ConfigError, SafetyError, ScheduleError
from mimesisbench.run.partition import plan_partition, worker_expr
from mimesisbench.schedule import format as fmt
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.schedule.paths import event_paths, namespace_paths, owner_columns

Dir = tuple[int, int, int, int, str, bool]  # dir_id, parent_id, depth, type, path, pre_existing
File = tuple[int, int, int, bool]  # file_id, type, dir_id, pre_existing
Event = tuple[int, int, int, int, int]  # time_us, op, type, target, generation


def write_schedule(root: Path, dirs: list[Dir], files: list[File], events: list[Event], seed: int = 7) -> Path:
    """Write a schedule directory (format v1) from plain tuples; events get ``seq`` in list order."""
    root.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        dirs,
        schema={"dir_id": pl.Int32, "parent_id": pl.Int32, "depth": pl.Int16, "type": pl.Int16, "path": pl.String,
                "pre_existing": pl.Boolean},
        orient="row",
    ).write_parquet(root / fmt.DIRECTORIES)
    pl.DataFrame(
        files, schema={"file_id": pl.Int64, "type": pl.Int16, "dir_id": pl.Int32, "pre_existing": pl.Boolean},
        orient="row",
    ).write_parquet(root / fmt.FILES)
    ev = pl.DataFrame(
        events,
        schema={"time_us": pl.Int64, "op": pl.UInt8, "type": pl.Int16, "target": pl.Int64, "generation": pl.UInt8},
        orient="row",
    ).with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
    ev = ev.sort("time_us", "seq").select("time_us", "op", "type", "target", "generation", "seq")
    ev.write_parquet(root / fmt.EVENTS)
    manifest = {
        "format": fmt.SCHEDULE_FORMAT,
        "version": fmt.SCHEDULE_VERSION,
        "profile_hash": "test-profile",
        "seed": seed,
        "events": ev.height,
    }
    (root / fmt.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return root


def workload(root: Path, *, files_per_type: int = 12, span_us: int = 200_000, seed: int = 1) -> Path:
    """A consistent two-type schedule where every operation succeeds when replayed in order.

    Pre-existing files are opened, listed and stat'ed; new files are created, opened, renamed,
    opened under the new name and deleted; directories are made, listed, renamed and listed.
    """
    rng = np.random.default_rng(seed)
    dirs: list[Dir] = [
        (0, -1, 0, 0, "/", True),
        (1, 0, 1, 1, "/d1", True),
        (2, 0, 1, 2, "/d2", True),
        (3, 1, 2, 1, "/d1/a", True),
        (4, 0, 1, 0, "/m0", False),
        (5, 0, 1, 0, "/m1", False),
    ]
    files: list[File] = []
    events: list[Event] = []
    fid = 0
    step = span_us // 10
    for t, tdirs in ((1, (1, 3)), (2, (2,))):
        for k in range(files_per_type):
            d = tdirs[k % len(tdirs)]
            pre = k % 2 == 0
            files.append((fid, t, d, pre))
            base = int(rng.integers(0, span_us // 2))
            if pre:
                events += [
                    (base, OpCode.OPEN, t, fid, 0),
                    (base + step, OpCode.LIST_FILE, t, fid, 0),
                    (base + 2 * step, OpCode.GETFILEINFO, t, fid, 0),
                ]
            else:
                events += [
                    (base, OpCode.CREATE, t, fid, 0),
                    (base + step, OpCode.OPEN, t, fid, 0),
                    (base + 2 * step, OpCode.RENAME_FILE, t, fid, 0),
                    (base + 3 * step, OpCode.OPEN, t, fid, 1),
                    (base + 4 * step, OpCode.DELETE, t, fid, 1),
                ]
            fid += 1
    for d in (4, 5):
        base = int(rng.integers(0, span_us // 2))
        events += [
            (base, OpCode.MKDIRS, 0, d, 0),
            (base + step, OpCode.LIST_DIR, 0, d, 0),
            (base + 2 * step, OpCode.RENAME_DIR, 0, d, 0),
            (base + 3 * step, OpCode.LIST_DIR, 0, d, 1),
        ]
    events.append((span_us // 3, OpCode.LIST_DIR, 0, 1, 0))
    events.append((span_us // 2, OpCode.LIST_DIR, 0, 0, 0))
    return write_schedule(root, dirs, files, events, seed=seed)


# ---------------------------------------------------------------------- tests of the reader


def test_paths_follow_the_format(tmp_path: Path) -> None:
    sched = load_schedule(workload(tmp_path / "s", files_per_type=4))
    frame = event_paths(sched)
    by_op = {OpCode(op).label: frame.filter(pl.col("op") == op) for op in frame["op"].unique().to_list()}
    create = by_op["create"].row(0, named=True)
    assert create["path"].endswith(fmt.file_name(create["target"], create["file_type"]))
    rename = by_op["rename_file"].row(0, named=True)
    assert rename["path2"] == rename["path"] + ".r1"
    rdir = by_op["rename_dir"].row(0, named=True)
    assert rdir["path"] in ("/m0", "/m1") and rdir["path2"] == rdir["path"] + ".r1"
    root_listing = by_op["list_dir"].filter(pl.col("target") == 0).row(0, named=True)
    assert root_listing["path"] == "/"
    assert frame["path"].str.starts_with("/").all()
    dirs, files = namespace_paths(sched)
    assert dirs["path"].to_list() == ["/d1", "/d2", "/d1/a"]
    assert files.len() == 4 and all(p.startswith(("/d1/t1_", "/d2/t2_", "/d1/a/t1_")) for p in files.to_list())


def test_partition_by_type_and_modulo_keep_files_together(tmp_path: Path) -> None:
    sched = load_schedule(workload(tmp_path / "s"))
    owners = owner_columns(sched)
    plan = plan_partition(sched.files["type"].to_list(), None)
    assert plan.n_workers == 2 and plan.mode == "by_type"
    w = owners.with_columns(worker_expr(plan).alias("w"))
    files = w.filter(pl.col("file_type").is_not_null())
    assert (files["w"] == files["file_type"].replace_strict(plan.type_to_worker)).all()
    for n in (1, 3):
        plan_n = plan_partition([], n)
        wn = owners.with_columns(worker_expr(plan_n).alias("w"))
        assert wn.group_by("key").agg(pl.col("w").n_unique())["w"].max() == 1
        assert set(wn["w"].unique().to_list()) <= set(range(n))
    with pytest.raises(ConfigError):
        plan_partition([1], 0)


def test_bad_schedules_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match="not a directory"):
        load_schedule(tmp_path / "missing")
    root = workload(tmp_path / "s", files_per_type=2)
    (root / fmt.MANIFEST).write_text(json.dumps({"format": "other"}), encoding="utf-8")
    with pytest.raises(ScheduleError, match="manifest"):
        load_schedule(root)
    root2 = workload(tmp_path / "s2", files_per_type=2)
    (root2 / fmt.EVENTS).unlink()
    with pytest.raises(ScheduleError, match="events.parquet is missing"):
        load_schedule(root2)


def test_dotdot_paths_are_refused(tmp_path: Path) -> None:
    from mimesisbench.backends.posix import PosixBackend

    dirs: list[Dir] = [(0, -1, 0, 0, "/", True), (1, 0, 1, 1, "/../escape", True)]
    root = write_schedule(tmp_path / "s", dirs, [(0, 1, 1, True)], [(0, OpCode.OPEN, 1, 0, 0)])
    # the reader refuses before anything is created ...
    with pytest.raises(ScheduleError, match=r"directories.parquet column path: '/\.\./escape'"):
        load_schedule(root)
    # ... and the backend still refuses such a path on its own
    backend = PosixBackend(f"posix:{tmp_path / 'base'}")
    with pytest.raises(SafetyError, match=r"\.\."):
        backend.native_paths(pl.Series("path", ["/../escape/t1_0"]))
    assert not (tmp_path / "base").exists()
