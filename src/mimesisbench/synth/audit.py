"""A schedule as a canonical event table (``trace.events``) and as an HDFS NameNode audit log.

Paths are materialised vectorised with polars: a file is ``<its directory's path>/`` +
``file_name(id, type, generation)``; a directory made by MKDIRS is ``dir_rename_name(path, g)``
after ``g`` renames. The audit log has the NameNode's exact line format::

    2011-12-01 00:00:00,123 INFO FSNamesystem.audit: allowed=true<TAB>ugi=USER (auth:SIMPLE)<TAB>
    ip=/127.0.0.1<TAB>cmd=open<TAB>src=/base/d1/t3_17<TAB>dst=null<TAB>perm=null<TAB>proto=rpc

(one line each; ``allowed`` is the schedule's own where it keeps the trace's, verbatim
schedules, else true; ``perm`` is ``USER:supergroup:rw-r--r--`` for creates and file rename,
``USER:supergroup:rwxr-xr-x`` for mkdirs and directory rename, ``null`` otherwise). Each
operation's ``cmd`` is its audit command (``schedule.format.COMMANDS``); a NAMENODE event's is
the manifest's ``pathless_commands[target]``, with ``src=null``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import polars as pl

from mimesisbench.schedule import Schedule, read_schedule
from mimesisbench.schedule.format import AUDIT_CMD, OpCode

#: default wall-clock time of the schedule's t0 in exported audit logs (the Yahoo trace's day)
DEFAULT_START = dt.datetime(2011, 12, 1, 0, 0, 0)
DEFAULT_USER = "mimesis"
#: events materialised at a time when exporting (bounds memory)
EXPORT_BATCH = 1 << 20

_CMD = pl.DataFrame(
    {"op": pl.Series([int(o) for o in AUDIT_CMD], dtype=pl.UInt8), "cmd": list(AUDIT_CMD.values())}
)
_FILE_PERM = frozenset({OpCode.CREATE, OpCode.CREATE_OVERWRITE, OpCode.RENAME_FILE})
_DIR_PERM = frozenset({OpCode.MKDIRS, OpCode.MKDIRS_EXISTING, OpCode.RENAME_DIR})
_DIR_OPS = tuple(int(o) for o in OpCode if o.on_directory)


def _prefixed(expr: pl.Expr, base: str) -> pl.Expr:
    """``base`` + a ``/``-rooted path (the root alone becomes ``base``, or ``/``)."""
    base = base.rstrip("/")
    if not base:
        return expr
    return pl.when(expr == "/").then(pl.lit(base)).otherwise(pl.lit(base) + expr)


def _file_name(gen: pl.Expr) -> pl.Expr:
    stem = pl.concat_str([pl.lit("t"), pl.col("type").cast(pl.String), pl.lit("_"), pl.col("target").cast(pl.String)])
    return pl.when(gen > 0).then(stem + pl.lit(".r") + gen.cast(pl.String)).otherwise(stem)


def _under(dir_path: pl.Expr, name: pl.Expr) -> pl.Expr:
    return pl.when(dir_path == "/").then(pl.lit("/") + name).otherwise(dir_path + pl.lit("/") + name)


def _dir_name(path: pl.Expr, gen: pl.Expr) -> pl.Expr:
    return pl.when(gen > 0).then(path + pl.lit(".r") + gen.cast(pl.String)).otherwise(path)


def _materialise(events: pl.DataFrame, tables: Schedule) -> pl.DataFrame:
    """Add ``path`` and ``dst`` (nullable) to a slice of events.parquet (a schedule with
    explicit paths has them)."""
    commands = [str(c) for c in tables.manifest.get("pathless_commands", [])]
    pathless_cmd = (
        pl.when(pl.col("op") == int(OpCode.NAMENODE))
        .then(pl.col("target").replace_strict(list(range(len(commands))), commands, default=None, return_dtype=pl.String))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    if tables.explicit_paths:
        allowed = pl.col("allowed") if "allowed" in events.columns else pl.lit(True)
        return events.select(
            "time_us", "op", "type", "seq", "path", pl.col("path2").alias("dst"), pathless_cmd.alias("pathless_cmd"),
            allowed.alias("allowed"),
        )
    files = tables.files.select(pl.col("file_id").alias("target"), "dir_id")
    dirs = tables.directories.select(pl.col("dir_id"), pl.col("path").alias("dir_path"))
    ev = events.with_columns(is_dir=pl.col("op").is_in(_DIR_OPS), pathless=pl.col("op") == int(OpCode.NAMENODE))
    f = (
        ev.filter(~pl.col("is_dir") & ~pl.col("pathless"))
        .join(files, on="target", how="left")
        .join(dirs, on="dir_id", how="left")
        .with_columns(
            path=_under(pl.col("dir_path"), _file_name(pl.col("generation").cast(pl.Int32))),
            dst=pl.when(pl.col("op") == int(OpCode.RENAME_FILE))
            .then(_under(pl.col("dir_path"), _file_name(pl.col("generation").cast(pl.Int32) + 1)))
            .otherwise(pl.lit(None, dtype=pl.String)),
        )
    )
    d = (
        ev.filter(pl.col("is_dir"))
        .join(dirs, left_on="target", right_on="dir_id", how="left")
        .with_columns(
            path=_dir_name(pl.col("dir_path"), pl.col("generation").cast(pl.Int32)),
            dst=pl.when(pl.col("op") == int(OpCode.RENAME_DIR))
            .then(_dir_name(pl.col("dir_path"), pl.col("generation").cast(pl.Int32) + 1))
            .otherwise(pl.lit(None, dtype=pl.String)),
        )
    )
    n = ev.filter(pl.col("pathless")).with_columns(
        path=pl.lit(None, dtype=pl.String), dst=pl.lit(None, dtype=pl.String), pathless_cmd=pathless_cmd
    )
    cols = ["time_us", "op", "type", "seq", "path", "dst", "pathless_cmd", "allowed"]
    plain = [x.with_columns(pathless_cmd=pl.lit(None, dtype=pl.String), allowed=pl.lit(True)).select(cols) for x in (f, d)]
    return pl.concat([*plain, n.with_columns(allowed=pl.lit(True)).select(cols)]).sort("seq")


def _namespace_events(tables: Schedule) -> pl.DataFrame:
    """Phase 1 as events at time 0: mkdirs of the pre-existing directories, then file creates."""
    dirs = tables.directories.filter(pl.col("pre_existing") & (pl.col("dir_id") > 0)).sort("dir_id")
    mk = dirs.select(
        pl.lit(0, dtype=pl.Int64).alias("time_us"),
        pl.lit(int(OpCode.MKDIRS), dtype=pl.UInt8).alias("op"),
        pl.col("type").cast(pl.Int16),
        pl.lit(-1, dtype=pl.Int64).alias("seq"),
        pl.col("path"),
        pl.lit(None, dtype=pl.String).alias("dst"),
        pl.lit(None, dtype=pl.String).alias("pathless_cmd"),
        pl.lit(True).alias("allowed"),
    )
    paths = tables.directories.select(pl.col("dir_id"), pl.col("path").alias("dir_path"))
    name = pl.col("file_path") if tables.explicit_paths else _under(pl.col("dir_path"), _file_name(pl.lit(0)))
    files = (
        tables.files.filter(pl.col("pre_existing"))
        .sort("file_id")
        .rename({"file_id": "target"})
        .with_columns((pl.col("path") if tables.explicit_paths else pl.lit(None, dtype=pl.String)).alias("file_path"))
        .join(paths, on="dir_id", how="left")
        .select(
            pl.lit(0, dtype=pl.Int64).alias("time_us"),
            pl.lit(int(OpCode.CREATE), dtype=pl.UInt8).alias("op"),
            pl.col("type").cast(pl.Int16),
            pl.lit(-1, dtype=pl.Int64).alias("seq"),
            name.alias("path"),
            pl.lit(None, dtype=pl.String).alias("dst"),
            pl.lit(None, dtype=pl.String).alias("pathless_cmd"),
            pl.lit(True).alias("allowed"),
        )
    )
    return pl.concat([mk, files])


def _batches(tables: Schedule, with_namespace: bool, batch: int) -> Iterator[pl.DataFrame]:
    if with_namespace:
        yield _namespace_events(tables)
    ev = tables.events
    for lo in range(0, ev.height, batch):
        yield _materialise(ev.slice(lo, batch), tables)


def schedule_to_events(
    schedule: Schedule | str | Path,
    *,
    base: str = "",
    with_namespace: bool = False,
    user: str | None = DEFAULT_USER,
) -> pl.DataFrame:
    """The schedule as a canonical event table (``time_ms`` from t0, paths materialised)."""
    tables = schedule if isinstance(schedule, Schedule) else read_schedule(schedule)
    parts = [
        b.join(_CMD, on="op", how="left").select(
            (pl.col("time_us") // 1000).cast(pl.Int64).alias("time_ms"),
            pl.coalesce(pl.col("cmd"), pl.col("pathless_cmd")).alias("op"),
            pl.when(pl.col("path").is_null()).then(pl.lit(None, dtype=pl.String)).otherwise(
                _prefixed(pl.col("path"), base)
            ).alias("path"),
            pl.when(pl.col("dst").is_null()).then(pl.lit(None, dtype=pl.String)).otherwise(
                _prefixed(pl.col("dst"), base)
            ).alias("dst"),
            pl.lit(user, dtype=pl.String).alias("user"),
            pl.col("allowed"),
        )
        for b in _batches(tables, with_namespace, max(tables.events.height, 1))
    ]
    return pl.concat(parts) if parts else pl.DataFrame()


def _audit_lines(frame: pl.DataFrame, base: str, start: dt.datetime, user: str) -> pl.DataFrame:
    perm = (
        pl.when(pl.col("op").is_in([int(o) for o in _FILE_PERM]))
        .then(pl.lit(f"{user}:supergroup:rw-r--r--"))
        .when(pl.col("op").is_in([int(o) for o in _DIR_PERM]))
        .then(pl.lit(f"{user}:supergroup:rwxr-xr-x"))
        .otherwise(pl.lit("null"))
    )
    stamp = (pl.lit(start) + pl.duration(milliseconds=pl.col("time_us") // 1000)).dt.strftime(
        "%Y-%m-%d %H:%M:%S,%3f"
    )
    return frame.join(_CMD, on="op", how="left", maintain_order="left").select(
        pl.concat_str(
            [
                stamp,
                pl.lit(" INFO FSNamesystem.audit: allowed="),
                pl.when(pl.col("allowed")).then(pl.lit("true")).otherwise(pl.lit("false")),
                pl.lit(f"\tugi={user} (auth:SIMPLE)\tip=/127.0.0.1\tcmd="),
                pl.coalesce(pl.col("cmd"), pl.col("pathless_cmd")),
                pl.lit("\tsrc="),
                pl.when(pl.col("path").is_null()).then(pl.lit("null")).otherwise(_prefixed(pl.col("path"), base)),
                pl.lit("\tdst="),
                pl.when(pl.col("dst").is_null()).then(pl.lit("null")).otherwise(_prefixed(pl.col("dst"), base)),
                pl.lit("\tperm="),
                perm,
                pl.lit("\tproto=rpc"),
            ]
        ).alias("line")
    )


def export_audit(
    schedule: Schedule | str | Path,
    out: IO[str],
    *,
    base: str = "",
    start: dt.datetime = DEFAULT_START,
    with_namespace: bool = False,
    user: str = DEFAULT_USER,
) -> int:
    """Write the schedule as audit-log lines to ``out``; returns the number of lines."""
    tables = schedule if isinstance(schedule, Schedule) else read_schedule(schedule)
    written = 0
    for frame in _batches(tables, with_namespace, EXPORT_BATCH):
        if frame.height == 0:
            continue
        lines = _audit_lines(frame, base, start, user).get_column("line")
        out.write(lines.str.join("\n").item())
        out.write("\n")
        written += frame.height
    return written
