"""HDFS audit-log parsing: hand-written logs whose right answer is known."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from mimesisbench.errors import TraceError
from mimesisbench.native import ENV_SWITCH
from mimesisbench.trace.events import EVENT_COLUMNS
from mimesisbench.trace.hdfs_audit import EVENT_SCHEMA, parse_audit_line, read_audit_logs

T0 = 1_444_521_600_000  # 2015-10-11 00:00:00 UTC in ms


def line(ts: str, cmd: str, src: str, *, dst: str = "null", ugi: str = "user1 (auth:KERBEROS)",
         allowed: str = "true", logger: str = "FSNamesystem.audit", tail: str = "\tproto=rpc") -> str:
    return (f"{ts} INFO {logger}: allowed={allowed}\tugi={ugi}\tip=/10.10.10.10\tcmd={cmd}\tsrc={src}"
            f"\tdst={dst}\tperm=null{tail}")  # fmt: skip


def write(path: Path, lines: list[str], *, compress: bool = False, newline: str = "\n") -> Path:
    data = (newline.join(lines) + newline).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def rows(table: pl.DataFrame) -> list[tuple[Any, ...]]:
    return table.select(pl.col(c).cast(pl.String) if c not in ("time_ms", "allowed") else pl.col(c)
                        for c in EVENT_COLUMNS).rows()  # fmt: skip


def mixed_lines() -> list[str]:
    """Audit lines of many shapes: ops with options, users with auth, other loggers, denied ops,
    webhdfs, a null path (shared with the native parser's tests)."""
    return [
        line("2015-10-11 00:00:00,062", "getfileinfo", "/dir1/part-00000", tail=""),
        line("2015-10-11 00:00:01,000", "create", "/dir1/new file.txt", ugi="alice (auth:SIMPLE)"),
        line("2015-10-11 00:00:02,500", "rename (options=[NONE])", "/dir1/a", dst="/dir2/b",
             tail="\tproto=rpc\tcallerContext=HIVE_QUERY_ID:q1"),
        line("2015-10-11 00:00:03,001", "delete", "/dir1/x", allowed="false"),
        line("2015-10-11 01:00:00,000", "listStatus", "/dir with spaces", tail="\tproto=webhdfs",
             logger="org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit"),
        line("2015-10-11 01:00:00,001", "setPermission", "/dir1", ugi="bob"),
        line("2015-10-11 01:00:00,002", "datanodeReport", "null"),
    ]  # fmt: skip


def test_fields_times_ops_users_and_nulls(tmp_path: Path) -> None:
    log = write(tmp_path / "hdfs-audit.log", mixed_lines())
    table, report = read_audit_logs([log])
    assert table.schema == pl.Schema(EVENT_SCHEMA)
    assert rows(table) == [
        (T0 + 62, "getfileinfo", "/dir1/part-00000", None, "user1", True),
        (T0 + 1000, "create", "/dir1/new file.txt", None, "alice", True),
        (T0 + 2500, "rename", "/dir1/a", "/dir2/b", "user1", True),
        (T0 + 3001, "delete", "/dir1/x", None, "user1", False),
        (T0 + 3_600_000, "listStatus", "/dir with spaces", None, "user1", True),
        (T0 + 3_600_001, "setPermission", "/dir1", None, "bob", True),
        (T0 + 3_600_002, "datanodeReport", None, None, "user1", True),
    ]
    assert (report.lines, report.events, report.malformed, report.other_lines) == (7, 7, 0, 0)
    assert report.sources == [str(log)]


def test_every_cmd_is_kept_verbatim(tmp_path: Path) -> None:
    cmds = ["create", "open", "getfileinfo", "listStatus", "delete", "rename", "mkdirs", "append",
            "setPermission", "setOwner", "setReplication", "setTimes", "contentSummary", "getAclStatus"]  # fmt: skip
    log = write(tmp_path / "a.log", [line(f"2015-10-11 00:00:{i:02d},000", c, f"/f{i}") for i, c in enumerate(cmds)])
    table, _ = read_audit_logs([log])
    assert table["op"].cast(pl.String).to_list() == cmds


def test_proxy_users_take_the_text_before_the_first_space(tmp_path: Path) -> None:
    log = write(tmp_path / "a.log", [
        line("2015-10-11 00:00:00,000", "open", "/a", ugi="hue/host@REALM (auth:KERBEROS) via alice"),
        line("2015-10-11 00:00:00,001", "open", "/b", ugi="alice (auth:PROXY) via hue/gw@EXAMPLE.COM (auth:KERBEROS)"),
        line("2015-10-11 00:00:00,002", "open", "/c", ugi=""),
    ])  # fmt: skip
    table, _ = read_audit_logs([log])
    assert table["user"].cast(pl.String).to_list() == ["hue/host@REALM", "alice", None]


def test_gzip_is_recognised_by_magic_bytes_not_suffix(tmp_path: Path) -> None:
    lines = [line("2015-10-11 00:00:00,000", "open", "/a"), line("2015-10-11 00:00:01,000", "mkdirs", "/d")]
    plain, _ = read_audit_logs([write(tmp_path / "plain.log", lines)])
    zipped, report = read_audit_logs([write(tmp_path / "audit.log.1", lines, compress=True)])
    assert rows(zipped) == rows(plain)
    assert report.events == 2


def test_rotated_set_merges_in_time_order_however_listed(tmp_path: Path) -> None:
    oldest = write(tmp_path / "hdfs-audit.log.2", [
        line("2015-10-11 00:00:00,000", "mkdirs", "/old"),
        line("2015-10-11 00:00:05,000", "create", "/old/f"),
    ])  # fmt: skip
    middle = write(tmp_path / "hdfs-audit.log.1", [
        line("2015-10-11 00:00:05,000", "open", "/old/f"),  # same ms as the oldest file's last line
        line("2015-10-11 00:00:07,000", "getfileinfo", "/old/f"),
    ], compress=True)  # fmt: skip
    current = write(tmp_path / "hdfs-audit.log", [line("2015-10-11 00:00:09,000", "delete", "/old/f")])
    table, report = read_audit_logs([current, oldest, middle])
    assert table["op"].cast(pl.String).to_list() == ["mkdirs", "create", "open", "getfileinfo", "delete"]
    assert table["time_ms"].to_list() == [T0, T0 + 5000, T0 + 5000, T0 + 7000, T0 + 9000]
    assert report.sources == [str(current), str(oldest), str(middle)]
    assert report.lines == 5


def test_out_of_order_lines_are_sorted_and_ties_keep_input_order(tmp_path: Path) -> None:
    log = write(tmp_path / "a.log", [
        line("2015-10-11 00:00:00,010", "open", "/first"),
        line("2015-10-11 00:00:00,005", "open", "/early"),
        line("2015-10-11 00:00:00,010", "open", "/second"),
        line("2015-10-11 00:00:00,010", "open", "/third"),
    ])  # fmt: skip
    table, _ = read_audit_logs([log])
    assert table["path"].cast(pl.String).to_list() == ["/early", "/first", "/second", "/third"]


def test_other_loggers_are_skipped_not_malformed(tmp_path: Path) -> None:
    log = write(tmp_path / "a.log", [
        "2015-10-11 00:00:00,000 INFO org.apache.hadoop.hdfs.StateChange: BLOCK* allocate blk_1",
        line("2015-10-11 00:00:00,001", "open", "/a"),
        "",
        "2015-10-11 00:00:00,002 WARN BlockStateChange: BLOCK* addStoredBlock:\tblockMap\tupdated",
        line("2015-10-11 00:00:00,003", "open", "/b"),
    ])  # fmt: skip
    table, report = read_audit_logs([log])
    assert table["path"].cast(pl.String).to_list() == ["/a", "/b"]
    assert (report.lines, report.events, report.other_lines, report.malformed) == (5, 2, 3, 0)


def test_malformed_lines_are_counted_with_line_numbers_and_good_lines_kept(tmp_path: Path) -> None:
    good = line("2015-10-11 00:00:00,000", "open", "/a")
    truncated = good[:70]
    no_cmd = "2015-10-11 00:00:01,000 INFO FSNamesystem.audit: allowed=true\tugi=u (auth:SIMPLE)\tip=/1.2.3.4"
    bad_time = line("2015-13-45 00:00:00,000", "open", "/b")
    no_src = line("2015-10-11 00:00:02,000", "open", "")
    log = write(tmp_path / "a.log", [good, truncated, no_cmd, line("2015-10-11 00:00:03,000", "open", "/c"),
                                     bad_time, no_src])  # fmt: skip
    table, report = read_audit_logs([log])
    assert table["path"].cast(pl.String).to_list() == ["/a", "/c"]
    assert (report.lines, report.events, report.malformed, report.other_lines) == (6, 2, 4, 0)
    assert [(m.source, m.line_number) for m in report.malformed_examples] == [
        (str(log), 2), (str(log), 3), (str(log), 5), (str(log), 6)]  # fmt: skip
    assert report.malformed_examples[0].text == truncated
    assert "malformed" in report.describe()


def test_only_ten_malformed_examples_are_kept_but_all_counted(tmp_path: Path) -> None:
    bad = "2015-10-11 00:00:00,000 INFO FSNamesystem.audit: allowed=true"
    log = write(tmp_path / "a.log", [bad] * 25 + [line("2015-10-11 00:00:00,000", "open", "/a")])
    _, report = read_audit_logs([log])
    assert report.malformed == 25
    assert [m.line_number for m in report.malformed_examples] == list(range(1, 11))


@pytest.mark.parametrize("workers", [1, 2])
def test_small_blocks_give_the_same_answer_and_line_numbers(tmp_path: Path, workers: int) -> None:
    lines = [line(f"2015-10-11 00:{i // 60:02d}:{i % 60:02d},000", "open", f"/d/f{i % 7}") for i in range(200)]
    lines[57] = "2015-10-11 00:00:57,000 INFO FSNamesystem.audit: allowed=true\tugi=x"
    lines[133] = "2015-10-11 00:02:13,000 INFO other.Logger: hello"
    log = write(tmp_path / "a.log", lines, newline="\r\n")
    big, big_report = read_audit_logs([log])
    small, small_report = read_audit_logs([log], workers=workers, block_bytes=300)
    assert rows(small) == rows(big)
    assert small.height == 198
    assert [m.line_number for m in small_report.malformed_examples] == [58]
    assert small_report.other_lines == 1 and big_report.malformed == 1


def test_a_path_holding_a_tab_is_recovered_by_the_slow_path(tmp_path: Path) -> None:
    log = write(tmp_path / "a.log", [
        line("2015-10-11 00:00:00,000", "open", "/a"),
        line("2015-10-11 00:00:00,001", "create", "/odd\tname"),
        line("2015-10-11 00:00:00,002", "open", "/b"),
    ])  # fmt: skip
    table, report = read_audit_logs([log])
    assert table["path"].cast(pl.String).to_list() == ["/a", "/odd\tname", "/b"]
    assert table["op"].cast(pl.String).to_list() == ["open", "create", "open"]
    assert report.malformed == 0


@pytest.mark.parametrize("native", ["0", "1"])
def test_non_ascii_users_end_at_their_first_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str) -> None:
    monkeypatch.setenv(ENV_SWITCH, native)
    # polars' str.find counts bytes and str.slice characters: "jürgen (auth:SIMPLE)" gave "jürgen "
    users = ["jürgen (auth:SIMPLE)", "路径路径 (auth:KERBEROS)", "ünï/hôst@RÉALM (auth:KERBEROS) via x", "🙂"]
    log = write(tmp_path / "a.log", [line(f"2015-10-11 00:00:0{i},000", "open", "/a", ugi=u) for i, u in enumerate(users)])
    table, _ = read_audit_logs([log])
    assert table["user"].cast(pl.String).to_list() == ["jürgen", "路径路径", "ünï/hôst@RÉALM", "🙂"]


@pytest.mark.parametrize("native", ["0", "1"])
def test_a_cr_before_a_tab_ends_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str) -> None:
    monkeypatch.setenv(ENV_SWITCH, native)
    # one CR before a TAB is dropped, as before the newline (polars' CSV reader drops it; the
    # native parser and the slow path now do too)
    good = line("2015-10-11 00:00:00,000", "open", "/a", dst="/d", ugi="u1 (auth:SIMPLE)")
    lines = [good.replace(f"\t{key}=", f"\r\t{key}=") for key in ("ugi", "ip", "cmd", "src", "dst", "perm")]
    lines.append(good.replace("\tsrc=", "\r\r\tsrc="))  # only one CR is dropped: cmd keeps one
    lines.append(good.replace("\tsrc=/a", "\r\tsrc=/a\tb"))  # a TAB in the path: the slow path
    table, report = read_audit_logs([write(tmp_path / "a.log", lines)])
    assert report.malformed == 0
    assert rows(table)[:6] == [(T0, "open", "/a", "/d", "u1", True)] * 6
    assert rows(table)[6][1:3] == ("open\r", "/a") and rows(table)[7][2] == "/a\tb"
    assert parse_audit_line(lines[4]) == (T0, "open", "/a", "/d", "u1", True)


@pytest.mark.parametrize("native", ["0", "1"])
def test_pathless_events_are_counted_in_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str) -> None:
    monkeypatch.setenv(ENV_SWITCH, native)
    log = write(tmp_path / "a.log", [
        *mixed_lines(),
        line("2015-10-11 01:00:01,000", "safemode_enter", "null", ugi="hdfs (auth:SIMPLE)"),
        line("2015-10-11 01:00:01,001", "saveNamespace", "null", ugi="hdfs (auth:SIMPLE)"),
    ])  # fmt: skip
    table, report = read_audit_logs([log])
    assert (report.events, report.pathless) == (9, 3) and table["path"].null_count() == 3
    assert "9 events (3 without a path: NameNode-wide commands such as saveNamespace)" in report.describe()


def test_parse_audit_line_slow_path() -> None:
    parsed = parse_audit_line(line("2015-10-11 00:00:02,500", "rename (options=[OVERWRITE])", "/a", dst="/b"))
    assert parsed == (T0 + 2500, "rename", "/a", "/b", "user1", True)
    assert parse_audit_line("2015-10-11 00:00:02,500 INFO FSNamesystem.audit: allowed=true") is None
    assert parse_audit_line("not an audit line") is None


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="nope.log"):
        read_audit_logs([tmp_path / "nope.log"])


def test_empty_file_names_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    with pytest.raises(TraceError, match="empty.log.*empty"):
        read_audit_logs([empty])


def test_no_parseable_event_is_an_error(tmp_path: Path) -> None:
    log = write(tmp_path / "junk.log", ["hello world", "2015-10-11 00:00:00,000 INFO FSNamesystem.audit: allowed=true"])
    with pytest.raises(TraceError, match="junk.log"):
        read_audit_logs([log])


def test_corrupt_gzip_is_a_trace_error(tmp_path: Path) -> None:
    data = gzip.compress((line("2015-10-11 00:00:00,000", "open", "/a") + "\n").encode() * 1000)
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="cut.log.gz"):
        read_audit_logs([bad])


def test_path_dictionary_casts_each_path_once_across_batches() -> None:
    from mimesisbench.trace.hdfs_audit import PathDictionary

    def pairs(*paths: str) -> pl.DataFrame:
        raw = pl.Series("p", [f"src={p}" for p in paths])
        return pl.DataFrame({"h": raw.hash(7), "p": raw})

    d = PathDictionary(batch_rows=2)
    for batch in (("/a", "/b"), ("/b", "/c", "/a"), ("/d",), ("/c", "/e"), ("/a",)):
        d.add(pairs(*batch).filter(pl.col("h").is_first_distinct()))
    known = d.categorical()
    assert sorted(known["path"].cast(pl.String).to_list()) == ["/a", "/b", "/c", "/d", "/e"]
    assert known["h"].n_unique() == 5
    expected = pairs("/a", "/b", "/c", "/d", "/e")
    assert dict(zip(expected["h"], ["/a", "/b", "/c", "/d", "/e"])) == dict(
        zip(known["h"], known["path"].cast(pl.String)))  # fmt: skip
    assert d.categorical().height == 0  # consumed
