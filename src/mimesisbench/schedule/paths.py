"""Replay helpers over a read schedule: every event's path(s), its owner key, phase 1's work.

Paths are relative to the run's base directory and start with ``/``; names follow
``schedule.format.file_name`` and ``dir_rename_name``. The reader has checked every target, so
no join here can miss.
"""

from __future__ import annotations

import polars as pl

from mimesisbench.errors import ScheduleError
from mimesisbench.schedule import format as fmt
from mimesisbench.schedule.reader import Schedule

#: op codes whose target is not a file: directory operations (a dir_id) and NAMENODE (an index)
_NOT_FILE: list[int] = [int(op) for op, c in fmt.COMMANDS.items() if c.target != "file"]


def event_paths(schedule: Schedule, events: pl.DataFrame | None = None) -> pl.DataFrame:
    """``events`` (default: all) with ``path``, ``path2`` (rename target, else null), ``file_type``
    (the owning file's type, null for directory operations) and ``key`` (one per file or
    directory: events with the same key must run in order).

    Paths are relative to the base and start with ``/``. A schedule with explicit paths
    (version 3) gives them and the keys itself.
    """
    if schedule.explicit_paths:
        return _explicit_event_paths(schedule, schedule.events if events is None else events)
    ev = (schedule.events if events is None else events).drop(["file_type", "key"], strict=False)
    # a pathless command (NAMENODE; target: an index into the manifest's ``pathless_commands``)
    # names no object: its path is the base itself, its key the command's
    dirs = schedule.directories.select(pl.col("dir_id").cast(pl.Int64), pl.col("path").alias("dir_path"))
    files = schedule.files.select(
        pl.col("file_id").cast(pl.Int64),
        pl.col("type").cast(pl.Int64).alias("file_type"),
        pl.col("dir_id").cast(pl.Int64).alias("file_dir"),
    )
    on_dir = pl.col("op").cast(pl.Int64).is_in(_NOT_FILE)
    pathless = pl.col("op").cast(pl.Int64) == int(fmt.OpCode.NAMENODE)
    frame = ev.with_columns(on_dir.alias("_on_dir"), pl.col("target").cast(pl.Int64).alias("_target"))
    frame = frame.join(files, left_on="_target", right_on="file_id", how="left", maintain_order="left")
    frame = frame.with_columns(
        pl.when(pathless)
        .then(pl.lit(0, dtype=pl.Int64))
        .when(pl.col("_on_dir"))
        .then(pl.col("_target"))
        .otherwise(pl.col("file_dir"))
        .alias("_dir")
    )
    frame = frame.join(dirs, left_on="_dir", right_on="dir_id", how="left", maintain_order="left")
    bad_dir = frame.filter(pl.col("dir_path").is_null())
    if bad_dir.height:
        row = bad_dir.row(0, named=True)
        raise ScheduleError(f"schedule {schedule.root}: event seq {row['seq']} names an unknown file or directory")
    gen = pl.col("generation").cast(pl.Int64)

    def file_name(generation: pl.Expr) -> pl.Expr:
        base = pl.format("t{}_{}", pl.col("file_type"), pl.col("_target"))
        return pl.when(generation == 0).then(base).otherwise(pl.format("{}.r{}", base, generation))

    def in_dir(name: pl.Expr) -> pl.Expr:
        return pl.when(pl.col("dir_path") == "/").then(pl.lit("/") + name).otherwise(
            pl.format("{}/{}", pl.col("dir_path"), name)
        )

    def dir_name(generation: pl.Expr) -> pl.Expr:
        return pl.when(generation == 0).then(pl.col("dir_path")).otherwise(
            pl.format("{}.r{}", pl.col("dir_path"), generation)
        )

    is_rename = pl.col("op").cast(pl.Int64).is_in([int(fmt.OpCode.RENAME_FILE), int(fmt.OpCode.RENAME_DIR)])
    frame = frame.with_columns(
        pl.when(pl.col("_on_dir")).then(dir_name(gen)).otherwise(in_dir(file_name(gen))).alias("path"),
        pl.when(~is_rename)
        .then(pl.lit(None, dtype=pl.String))
        .when(pl.col("_on_dir"))
        .then(dir_name(gen + 1))
        .otherwise(in_dir(file_name(gen + 1)))
        .alias("path2"),
        pl.when(pl.col("_on_dir")).then(pl.lit(None, dtype=pl.Int64)).otherwise(pl.col("file_type")).alias("file_type"),
        pl.when(pl.col("_on_dir")).then(pl.col("_target") * 2 + 1).otherwise(pl.col("_target") * 2).alias("key"),
    )
    missing_file = frame.filter(~pl.col("_on_dir") & pl.col("file_type").is_null())
    if missing_file.height:
        row = missing_file.row(0, named=True)
        raise ScheduleError(f"schedule {schedule.root}: event seq {row['seq']} names file {row['target']} not in files")
    return frame.drop("_on_dir", "_target", "file_dir", "_dir", "dir_path")


#: the lane key of an explicit-path schedule's event: its ``order_key`` doubled, as derived keys
#: are (partitioning reads ``key // 2``)
_ORDER_KEY = (pl.col("order_key").cast(pl.Int64) * 2).alias("key")


def _file_types(schedule: Schedule, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``file_type``: the type of the file a file operation names, else null."""
    files = schedule.files.select(
        pl.col("file_id").cast(pl.Int64).alias("_fid"), pl.col("type").cast(pl.Int64).alias("file_type")
    )
    on_file = ~pl.col("op").cast(pl.Int64).is_in(_NOT_FILE)
    frame = frame.with_columns(pl.when(on_file).then(pl.col("target").cast(pl.Int64)).alias("_fid"))
    return frame.join(files, on="_fid", how="left", maintain_order="left").drop("_fid")


def _explicit_event_paths(schedule: Schedule, events: pl.DataFrame) -> pl.DataFrame:
    """``event_paths`` of a schedule with explicit paths: its own ``path`` and ``path2``, the
    key from its ``order_key``; a pathless command's path is the base itself."""
    frame = _file_types(schedule, events.drop(["file_type"], strict=False))
    return frame.with_columns(pl.col("path").fill_null("/"), _ORDER_KEY)


def owner_columns(schedule: Schedule) -> pl.DataFrame:
    """The events with ``idx`` (row number), ``key`` (one per file or directory) and
    ``file_type`` (null for directory operations): what partitioning needs, without paths."""
    frame = _file_types(schedule, schedule.events.with_row_index("idx"))
    if schedule.explicit_paths:
        return frame.with_columns(_ORDER_KEY)
    target = pl.col("target").cast(pl.Int64)
    on_dir = pl.col("op").cast(pl.Int64).is_in(_NOT_FILE)
    return frame.with_columns(pl.when(on_dir).then(target * 2 + 1).otherwise(target * 2).alias("key"))


def namespace_paths(schedule: Schedule) -> tuple[pl.DataFrame, pl.Series]:
    """Phase 1's work: pre-existing directories (``path``, ``depth``) and files (paths)."""
    dirs = (
        schedule.directories.filter(pl.col("pre_existing") & (pl.col("dir_id") != 0))
        .select("path", pl.col("depth").cast(pl.Int64))
        .sort("depth", "path")
    )
    if schedule.explicit_paths:
        return dirs, schedule.files.filter(pl.col("pre_existing")).sort("file_id").get_column("path").alias("path")
    files = schedule.files.filter(pl.col("pre_existing")).join(
        schedule.directories.select("dir_id", pl.col("path").alias("dir_path")), on="dir_id", how="left"
    )
    if files.filter(pl.col("dir_path").is_null()).height:
        raise ScheduleError(f"schedule {schedule.root}: a pre-existing file names an unknown directory")
    name = pl.format("t{}_{}", pl.col("type"), pl.col("file_id"))
    under = pl.format("{}/{}", pl.col("dir_path"), name)
    paths = files.select(pl.when(pl.col("dir_path") == "/").then(pl.lit("/") + name).otherwise(under)).to_series()
    return dirs, paths.alias("path")
