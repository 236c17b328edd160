"""The plain event format (CSV / Parquet) and format detection in ``read_trace``."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from mimesisbench.errors import TraceError
from mimesisbench.trace.hdfs_audit import EVENT_SCHEMA
from mimesisbench.trace.plain import read_plain_events
from mimesisbench.trace.reader import TraceFormat, detect_format, read_trace


def as_rows(table: pl.DataFrame) -> list[tuple]:
    return table.with_columns(pl.col(pl.Categorical).cast(pl.String)).rows()


def test_csv_with_all_columns(tmp_path: Path) -> None:
    f = tmp_path / "trace.csv"
    f.write_text(
        "time_ms,op,path,dst,user,allowed,extra\n"
        "2000,PUT,/bucket/b key,,alice,true,x\n"
        "1000,GET,/bucket/a,,bob,false,y\n"
        "2000,COPY,/bucket/a,/bucket/c,alice,1,z\n"
    )
    table, report = read_plain_events(f)
    assert table.schema == pl.Schema(EVENT_SCHEMA)
    assert as_rows(table) == [
        (1000, "GET", "/bucket/a", None, "bob", False),
        (2000, "PUT", "/bucket/b key", None, "alice", True),
        (2000, "COPY", "/bucket/a", "/bucket/c", "alice", True),
    ]
    assert (report.lines, report.events, report.malformed) == (3, 3, 0)


def test_csv_with_required_columns_only_and_gzip(tmp_path: Path) -> None:
    f = tmp_path / "trace.data"
    f.write_bytes(gzip.compress(b"op,path,time_ms\nstat,/x,5\nunlink,/x,7\n"))
    table, _ = read_plain_events(f)
    assert as_rows(table) == [(5, "stat", "/x", None, None, True), (7, "unlink", "/x", None, None, True)]


def test_bad_rows_are_malformed_with_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("time_ms,op,path,allowed\n1,open,/a,\nsoon,open,/b,\n3,open,,\n4,,/c,\n5,open,/d,maybe\n6,open,/e,FALSE\n")
    table, report = read_plain_events(f)
    assert as_rows(table) == [(1, "open", "/a", None, None, True), (6, "open", "/e", None, None, False)]
    assert report.malformed == 4
    assert [m.line_number for m in report.malformed_examples] == [3, 4, 5, 6]
    assert all(m.source == str(f) for m in report.malformed_examples)


def test_non_finite_and_huge_times_are_malformed_rows(tmp_path: Path) -> None:
    # a cast error (a traceback from `model`) before: inf, nan, 1e30 do not fit an integer
    f = tmp_path / "t.csv"
    f.write_text("time_ms,op,path\n1,open,/a\ninf,open,/b\nnan,open,/c\n1e30,open,/d\n-inf,open,/e\n"
                 "9.1e18,open,/f\n9100000000000000000,open,/g\n2.9,open,/h\n")  # fmt: skip
    table, report = read_plain_events(f)
    assert as_rows(table) == [(1, "open", "/a", None, None, True), (2, "open", "/h", None, None, True)]
    assert report.malformed == 6
    assert [m.line_number for m in report.malformed_examples] == [3, 4, 5, 6, 7, 8]
    assert f"{f}:3: 'inf,open,/b,,,'" in report.describe()
    parquet = tmp_path / "t.parquet"
    pl.DataFrame({"time_ms": [5.0, float("inf"), float("nan"), 1e30], "op": ["GET"] * 4,
                  "path": ["/a", "/b", "/c", "/d"]}).write_parquet(parquet)  # fmt: skip
    table, report = read_plain_events(parquet)
    assert as_rows(table) == [(5, "GET", "/a", None, None, True)]
    assert [m.line_number for m in report.malformed_examples] == [2, 3, 4]


def test_parquet(tmp_path: Path) -> None:
    f = tmp_path / "t.parquet"
    pl.DataFrame({"time_ms": [30, 10, None], "op": ["GET", "PUT", "GET"], "path": ["/a", "/b", "/c"]}).write_parquet(f)
    table, report = read_plain_events(f)
    assert as_rows(table) == [(10, "PUT", "/b", None, None, True), (30, "GET", "/a", None, None, True)]
    assert [m.line_number for m in report.malformed_examples] == [3]


def test_missing_column_is_named(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("time_ms,op\n1,open\n")
    with pytest.raises(TraceError, match=r"t\.csv.*path"):
        read_plain_events(f)


@pytest.mark.parametrize("content", ["", "time_ms,op,path\n", "time_ms,op,path\nx,open,/a\n"])
def test_empty_or_useless_csv_is_an_error(tmp_path: Path, content: str) -> None:
    f = tmp_path / "t.csv"
    f.write_text(content)
    with pytest.raises(TraceError, match=r"t\.csv"):
        read_plain_events(f)


AUDIT = (
    "2015-10-11 00:00:00,500 INFO FSNamesystem.audit: allowed=true\tugi=u (auth:SIMPLE)\tip=/1.2.3.4"
    "\tcmd=open\tsrc=/hdfs/a\tdst=null\tperm=null\tproto=rpc\n"
)


def test_read_trace_detects_and_merges_formats(tmp_path: Path) -> None:
    audit = tmp_path / "nn.log"
    audit.write_bytes(gzip.compress(AUDIT.encode()))
    csv = tmp_path / "s3.csv"
    csv.write_text("time_ms,op,path\n1444521600000,GET,/s3/x\n1444521601000,PUT,/s3/y\n")
    parquet = tmp_path / "posix.bin"
    pl.DataFrame({"time_ms": [1444521600500], "op": ["stat"], "path": ["/posix/z"]}).write_parquet(parquet)
    assert [detect_format(p) for p in (audit, csv, parquet)] == [
        TraceFormat.AUDIT_LOG, TraceFormat.PLAIN_CSV, TraceFormat.PLAIN_PARQUET]  # fmt: skip
    table, report = read_trace([csv, parquet, audit])
    assert table.schema == pl.Schema(EVENT_SCHEMA)
    assert table["path"].cast(pl.String).to_list() == ["/s3/x", "/hdfs/a", "/posix/z", "/s3/y"]
    assert report.events == 4 and len(report.sources) == 3


def test_read_trace_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="missing.log"):
        read_trace([tmp_path / "missing.log"])
    odd = tmp_path / "odd.txt"
    odd.write_text("just some text\n")
    with pytest.raises(TraceError, match="odd.txt"):
        read_trace([odd])
    empty = tmp_path / "empty.log"
    empty.write_text("")
    with pytest.raises(TraceError, match="empty.log"):
        read_trace([empty])
