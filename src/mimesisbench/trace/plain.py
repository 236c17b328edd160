"""Read the plain event format: traces of systems other than HDFS (object stores, POSIX tracers).

A plain trace is a CSV file with a header line (plain or gzip'd) or a Parquet file, with the
columns ``time_ms`` (integer ms since the epoch or any fixed origin), ``op`` and ``path``, and
optionally ``dst``, ``user`` and ``allowed`` (``true``/``false``/``1``/``0``; missing means
allowed). Other columns are ignored.

A row is malformed, counted and skipped (the first ten kept in the report) when its time is not
a finite number below 2**53 in magnitude (``nan``, ``inf``, ``1e30`` are malformed; a fractional
time is truncated), or its ``op`` or ``path`` is empty, or its ``allowed`` is not a boolean. The report's
line numbers are the file's line numbers for CSV (the header is line 1, so the first row is
line 2; quoted values spanning lines are not accounted for) and 1-based row numbers for Parquet.

The table has the dtypes of ``hdfs_audit.EVENT_SCHEMA`` (``op``/``path``/``dst``/``user``
Categorical) and is sorted by ``time_ms``, ties in file order.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from mimesisbench.errors import TraceError
from mimesisbench.trace.events import EVENT_COLUMNS, MAX_REPORTED_MALFORMED, MalformedLine, ParseReport
from mimesisbench.trace.hdfs_audit import EVENT_SCHEMA, merge_events, open_decompressed

REQUIRED_COLUMNS: tuple[str, ...] = ("time_ms", "op", "path")
OPTIONAL_COLUMNS: tuple[str, ...] = ("dst", "user", "allowed")
PARQUET_MAGIC = b"PAR1"
#: times at or beyond this magnitude (ms; ~285,000 years) are malformed: differences of such
#: times would overflow 64-bit arithmetic
MAX_TIME_MS = 2**53

_TRUE = ("true", "1", "t", "yes")
_FALSE = ("false", "0", "f", "no")


def is_parquet(path: str | Path) -> bool:
    """True when the file starts with Parquet's magic bytes."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError as e:
        raise TraceError(f"cannot read trace file {path}: {e.strerror or e}") from None


def _load(path: str | Path) -> tuple[pl.DataFrame, int]:
    """The file's rows as strings (all columns) and the line number of its first row."""
    source = str(path)
    try:
        if is_parquet(path):
            raw = pl.read_parquet(path)
            return raw.select(pl.all().cast(pl.String)), 1
        with open_decompressed(path) as f:
            data = f.read()
    except TraceError:
        raise
    except (OSError, EOFError, pl.exceptions.PolarsError) as e:
        raise TraceError(f"cannot read trace file {source}: {e}") from None
    if not data.strip():
        raise TraceError(f"trace file {source} is empty")
    try:
        raw = pl.read_csv(data, has_header=True, infer_schema=False, encoding="utf8-lossy", raise_if_empty=False)
    except pl.exceptions.PolarsError as e:
        raise TraceError(f"cannot read CSV trace {source}: {e}") from None
    return raw, 2


def read_plain_events(path: str | Path) -> tuple[pl.DataFrame, ParseReport]:
    """Read a plain CSV or Parquet trace into the event table, and a report of what was read.

    Raises ``TraceError`` naming the file when it is missing, unreadable, empty, lacks a required
    column or holds no good row.
    """
    source = str(path)
    raw, first_line = _load(path)
    raw = raw.rename({c: c.strip() for c in raw.columns})
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise TraceError(
            f"trace {source} lacks the column(s) {', '.join(missing)} "
            f"(a plain trace needs {', '.join(REQUIRED_COLUMNS)}; it has {', '.join(raw.columns) or 'none'})"
        )
    if raw.height == 0:
        raise TraceError(f"trace file {source} has a header but no rows")
    for c in OPTIONAL_COLUMNS:
        if c not in raw.columns:
            raw = raw.with_columns(pl.lit(None, dtype=pl.String).alias(c))
    raw = raw.select(*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS).with_row_index("_row")

    time_text = pl.col("time_ms").str.strip_chars()
    allowed_text = pl.col("allowed").str.strip_chars().str.to_lowercase()
    # a float time is truncated; nan, inf and times too large to use (|t| >= MAX_TIME_MS) are null
    time = time_text.cast(pl.Int64, strict=False).fill_null(
        time_text.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)
    )
    parsed = raw.with_columns(
        time=pl.when(time.abs() < MAX_TIME_MS).then(time),
        ok_allowed=allowed_text.is_null() | (allowed_text == "") | allowed_text.is_in(_TRUE + _FALSE),
    )
    good = (
        pl.col("time").is_not_null()
        & (pl.col("op").str.strip_chars().str.len_bytes() > 0)
        & (pl.col("path").str.len_bytes() > 0)
        & pl.col("ok_allowed")
    ).fill_null(False)

    report = ParseReport(sources=[source], lines=raw.height)
    bad = parsed.filter(~good)
    report.malformed = bad.height
    for row in bad.head(MAX_REPORTED_MALFORMED).iter_rows(named=True):
        text = ",".join("" if row[c] is None else str(row[c]) for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS))
        report.malformed_examples.append(MalformedLine(source, first_line + int(row["_row"]), text[:300]))

    def empty_to_null(name: str) -> pl.Expr:
        return pl.when(pl.col(name).str.len_bytes() > 0).then(pl.col(name))

    events = parsed.filter(good).select(
        time_ms="time",
        op=pl.col("op").str.strip_chars().cast(pl.Categorical),
        path=pl.col("path").cast(pl.Categorical),
        dst=empty_to_null("dst").cast(pl.Categorical),
        user=empty_to_null("user").cast(pl.Categorical),
        allowed=~allowed_text.is_in(_FALSE).fill_null(False),
    )
    report.events = events.height
    if events.height == 0:
        raise TraceError(f"no usable event in {source}: {report.describe()}")
    table = merge_events([events]).select(EVENT_COLUMNS)
    return table.cast(EVENT_SCHEMA), report  # type: ignore[arg-type]

