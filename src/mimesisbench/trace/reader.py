"""Read any trace: detect each file's format and merge all events in time order.

Formats, told apart by content rather than by name:

* HDFS audit log, plain or gzip'd (gzip recognised by its magic bytes): a line carrying the
  ``FSNamesystem.audit:`` logger in the first 1 MiB. Several audit logs (a rotated set) are read
  together by ``hdfs_audit.read_audit_logs``.
* Parquet (magic ``PAR1``) or CSV whose header names ``time_ms``, ``op`` and ``path``: the plain
  event format of ``plain``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path

import polars as pl

from mimesisbench.errors import TraceError
from mimesisbench.trace.events import EVENT_COLUMNS, ParseReport
from mimesisbench.trace.hdfs_audit import AUDIT_MARK, merge_events, open_decompressed, read_audit_logs
from mimesisbench.trace.plain import REQUIRED_COLUMNS, is_parquet, read_plain_events

_SNIFF_BYTES = 1 << 20


class TraceFormat(Enum):
    AUDIT_LOG = "audit-log"
    PLAIN_CSV = "plain-csv"
    PLAIN_PARQUET = "plain-parquet"


def detect_format(path: str | Path) -> TraceFormat:
    """The format of one trace file; ``TraceError`` naming the file when it is none we read."""
    p = Path(path)
    if not p.exists():
        raise TraceError(f"trace file {p} does not exist")
    if p.is_dir():
        raise TraceError(f"trace file {p} is a directory")
    if is_parquet(p):
        return TraceFormat.PLAIN_PARQUET
    with open_decompressed(p) as f:
        try:
            head = f.read(_SNIFF_BYTES)
        except (OSError, EOFError) as e:
            raise TraceError(f"cannot read trace file {p}: {e}") from None
    if not head.strip():
        raise TraceError(f"trace file {p} is empty")
    if AUDIT_MARK.encode() in head:
        return TraceFormat.AUDIT_LOG
    header = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    if set(REQUIRED_COLUMNS) <= {c.strip() for c in header.split(",")}:
        return TraceFormat.PLAIN_CSV
    raise TraceError(
        f"cannot tell the format of {p}: it is neither an HDFS audit log (no 'FSNamesystem.audit:' "
        f"line near its start) nor a plain CSV/Parquet trace (columns {', '.join(REQUIRED_COLUMNS)})"
    )


def read_trace(paths: Sequence[str | Path]) -> tuple[pl.DataFrame, ParseReport]:
    """Read trace files of any supported format into one event table sorted by time.

    Ties in time keep input order: audit logs come first (merged among themselves by their first
    event), then the plain traces in the order given. Raises ``TraceError`` naming the file for
    a missing, unreadable, empty or unrecognised file, or when no file holds an event.
    """
    if not paths:
        raise TraceError("no trace file given")
    formats = [(p, detect_format(p)) for p in paths]
    tables: list[pl.DataFrame] = []
    total = ParseReport()
    audit = [p for p, fmt in formats if fmt is TraceFormat.AUDIT_LOG]
    if audit:
        table, report = read_audit_logs(audit)
        tables.append(table)
        total.merge(report)
    for p, fmt in formats:
        if fmt is not TraceFormat.AUDIT_LOG:
            table, report = read_plain_events(p)
            tables.append(table)
            total.merge(report)
    events = tables[0] if len(tables) == 1 else merge_events(tables).select(EVENT_COLUMNS)
    return concat_on_target(events), total


#: the audit ``cmd`` whose ``src`` is a list of paths (``[/a/s1, /a/s2]``) and ``dst`` the target
CONCAT = "concat"


def concat_on_target(events: pl.DataFrame) -> pl.DataFrame:
    """``concat`` events whose ``src`` is a bracketed list of sources (as the NameNode audits
    them) become events on their target (``dst``): the path is the concatenated-into file, the
    one object the command accesses (the sources are merged into it and leave no other line)."""
    is_concat = pl.col("op") == CONCAT  # a Categorical compares with the literal's code: no string per row
    if not events.select(is_concat.any()).item():
        return events
    listed = is_concat & pl.col("path").cast(pl.String).str.starts_with("[")
    if not events.select(listed.any()).item():
        return events
    dtype = events.schema["path"]
    return events.with_columns(
        pl.when(listed).then(pl.col("dst").cast(pl.String)).otherwise(pl.col("path").cast(pl.String)).cast(dtype).alias("path"),
        pl.when(listed).then(None).otherwise(pl.col("dst")).alias("dst"),
    )
