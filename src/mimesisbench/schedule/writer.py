"""The one schedule writer: a schedule directory written atomically.

The tables and the manifest go into a temporary sibling directory (``.NAME.tmp-...``), the
manifest last, and the directory is renamed to its place only when everything is written; an
existing schedule there is replaced only then. On any failure the temporary directory is
removed, so a full disk never leaves a partial schedule that looks valid; a disk-full or
permission problem becomes an ``OutputError`` (exit 3) naming the path.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias, Union

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from mimesisbench.errors import OutputError, ScheduleError
from mimesisbench.schedule.format import DIRECTORIES, EVENTS, FILES, MANIFEST
from mimesisbench.schedule.reader import COLUMNS

#: rows per Parquet row group (bounds the write's temporaries)
ROW_GROUP = 1 << 20

Table: TypeAlias = Union[pa.Table, pl.DataFrame]  # noqa: UP007 - pa.Table is untyped
#: events as a table, or a function that writes events.parquet at the path it is given
EventsSource: TypeAlias = Union[pa.Table, pl.DataFrame, Callable[[Path], None]]  # noqa: UP007


def _arrow(table: Table, name: str) -> pa.Table:
    frame = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):
        raise TypeError(f"{name}: expected a table")
    cols = COLUMNS[name]
    frame = frame.with_columns([pl.col(c).cast(t) for c, t in cols.items()])
    return frame.to_arrow()


def write_table(table: Table, path: Path, name: str) -> None:
    """One table in the format's dtypes (zstd, row groups of ``ROW_GROUP``)."""
    pq.write_table(_arrow(table, name), path, compression="zstd", row_group_size=ROW_GROUP)


def _describe(exc: OSError, dest: Path) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc):
        return f"cannot write schedule {dest}: no space left on the device (or quota exceeded); nothing was written"
    reason = exc.strerror or str(exc)
    return f"cannot write schedule {dest}: {reason}; nothing was written"


def check_destination(out: str | Path) -> Path:
    """``out``, if a schedule may be written there: absent, empty, or a schedule directory."""
    dest = Path(out)
    if dest.exists() and not (dest.is_dir() and ((dest / MANIFEST).is_file() or not any(dest.iterdir()))):
        raise ScheduleError(f"-o: {dest} exists and is not a schedule directory; choose another path")
    return dest


def write_schedule_dir(
    out: str | Path,
    *,
    directories: Table,
    files: Table,
    events: EventsSource,
    manifest: dict[str, Any],
) -> Path:
    """Write a schedule directory atomically (see the module's docstring); returns its path.

    ``events`` is a table, or a callable that writes ``events.parquet`` at the path it is given
    (the generator streams its arrays in row groups). An existing schedule directory at ``out``
    is replaced; anything else there is refused.
    """
    dest = check_destination(out)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
    except OSError as exc:
        raise OutputError(_describe(exc, dest)) from None
    try:
        write_table(directories, tmp / DIRECTORIES, DIRECTORIES)
        write_table(files, tmp / FILES, FILES)
        if callable(events):
            events(tmp / EVENTS)
        else:
            write_table(events, tmp / EVENTS, EVENTS)
        text = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
        with (tmp / MANIFEST).open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if dest.exists():
            old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(_describe(exc, dest)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


__all__ = ["ROW_GROUP", "check_destination", "write_schedule_dir", "write_table"]
