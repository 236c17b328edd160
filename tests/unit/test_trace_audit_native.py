"""The native audit-log parser against the Python reference: same tables, same reports.

Every case runs ``read_audit_logs`` twice, once with ``MIMESISBENCH_NATIVE=0`` (the Python
parser) and once with the native extension, which these tests require (``scripts/setup.sh
--dev`` builds it).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trace_audit import T0, line, mixed_lines, rows

from mimesisbench.errors import TraceError
from mimesisbench.native import ENV_SWITCH, native_module
from mimesisbench.trace import hdfs_audit
from mimesisbench.trace.events import ParseReport
from mimesisbench.trace.hdfs_audit import EVENT_SCHEMA, read_audit_logs


def write(path: Path, lines: list[str] | list[bytes], *, compress: bool = False, newline: bytes = b"\n") -> Path:
    data = newline.join(x if isinstance(x, bytes) else x.encode() for x in lines) + newline
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def parse(paths: list[Path], native: bool, monkeypatch: pytest.MonkeyPatch, **kw: int) -> Any:
    """(table, report) or the TraceError's message, from the chosen parser."""
    calls: list[int] = []
    real = hdfs_audit._read_native

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    with monkeypatch.context() as m:
        m.setenv(ENV_SWITCH, "1" if native else "0")
        m.setattr(hdfs_audit, "_read_native", spy)
        try:
            result: Any = read_audit_logs(paths, **kw)
        except TraceError as e:
            result = f"TraceError: {e}"
    assert calls == ([1] if native else []), "the parser asked for was not the one used"
    return result


def assert_same(paths: list[Path], monkeypatch: pytest.MonkeyPatch, **kw: int) -> tuple[pl.DataFrame, ParseReport]:
    ref = parse(paths, False, monkeypatch, **kw)
    got = parse(paths, True, monkeypatch, **kw)
    if isinstance(ref, str) or isinstance(got, str):
        assert got == ref
        return pl.DataFrame(), ParseReport()
    (ref_table, ref_report), (table, report) = ref, got
    assert table.schema == pl.Schema(EVENT_SCHEMA)
    assert rows(table) == rows(ref_table)
    assert dataclasses.asdict(report) == dataclasses.asdict(ref_report)
    return table, report


def test_native_module_is_installed() -> None:
    module = native_module()
    assert module is not None, "build the native core: scripts/setup.sh --dev"
    assert hasattr(module, "AuditParser")


def test_fields_times_ops_users_and_nulls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write(tmp_path / "hdfs-audit.log", [
        *mixed_lines(),
        line("2016-02-29 23:59:59,999", "open", "/ünïcødé/路径", dst="", ugi="hue/host@REALM (auth:KERBEROS) via a"),
        line("2015-10-11 00:00:00,000", "open", "/a", ugi=""),
    ])  # fmt: skip
    table, report = assert_same([log], monkeypatch)
    assert rows(table)[0] == (T0, "open", "/a", None, None, True)
    assert rows(table)[-1] == (1456790399999, "open", "/ünïcødé/路径", "", "hue/host@REALM", True)
    assert (report.lines, report.events, report.malformed) == (9, 9, 0)


def test_other_loggers_blank_lines_crlf_and_malformed_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = line("2015-10-11 00:00:00,000", "open", "/a")
    log = write(tmp_path / "a.log", [
        "2015-10-11 00:00:00,000 INFO org.apache.hadoop.hdfs.StateChange: BLOCK* allocate blk_1",
        good, "", good[:70],
        "2015-10-11 00:00:01,000 INFO FSNamesystem.audit: allowed=true\tugi=u (auth:SIMPLE)\tip=/1.2.3.4",
        line("2015-13-45 00:00:00,000", "open", "/b"), line("2015-10-11 00:00:02,000", "open", ""),
        line("2015-10-11 00:00:03,000", "create", "/odd\tname"),  # a TAB in the path: the slow path
        "2015-10-11 00:00:04,000 INFO FSNamesystem.audit: allowed=true\tcmd=open\tugi=x\tsrc=/moved\tdst=null",
        line("2015-10-11 00:00:05.123", "open", "/dot-millis"),  # read leniently by the reference
        line("2015-10-11 00:00:06,000", "open", "/c") + "\r",
    ], newline=b"\r\n")  # fmt: skip
    table, report = assert_same([log], monkeypatch)
    assert rows(table)[-2:] == [(T0 + 5123, "open", "/dot-millis", None, "user1", True),
                                (T0 + 6000, "open", "/c", None, "user1", True)]  # fmt: skip
    assert report.malformed == 4 and report.other_lines == 2
    assert [m.line_number for m in report.malformed_examples] == [4, 5, 6, 7]


def test_invalid_utf8_and_a_byte_order_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write(tmp_path / "a.log", [
        b"\xef\xbb\xbf" + line("2015-10-11 00:00:00,000", "open", "/bom").encode(),
        line("2015-10-11 00:00:01,000", "open", "/x").encode().replace(b"/x", b"/\xff\xfe-bad"),
        b"\xef\xbb\xbf" + line("2015-10-11 00:00:02,000", "open", "/bom-inside").encode(),
        line("2015-10-11 00:00:03,000", "open", "/ok").encode(),
    ])  # fmt: skip
    table, report = assert_same([log], monkeypatch)
    assert rows(table)[0][2] == "/bom" and rows(table)[1][2] == "/\ufffd\ufffd-bad"
    assert report.malformed == 1  # the BOM inside the file is not a timestamp


def test_many_malformed_lines_keep_ten_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = "2015-10-11 00:00:00,000 INFO FSNamesystem.audit: allowed=true"
    log = write(tmp_path / "a.log", [bad] * 25 + [line("2015-10-11 00:00:00,000", "open", "/a")])
    _, report = assert_same([log], monkeypatch)
    assert report.malformed == 25 and len(report.malformed_examples) == 10


@pytest.mark.parametrize("compress", [False, True])
def test_rotated_sets_merge_by_earliest_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compress: bool) -> None:
    oldest = write(tmp_path / "hdfs-audit.log.2", [
        line("2015-10-11 00:00:00,000", "mkdirs", "/old"),
        line("2015-10-11 00:00:05,000", "create", "/old/f"),
    ], compress=compress)  # fmt: skip
    middle = write(tmp_path / "hdfs-audit.log.1", [
        line("2015-10-11 00:00:05,000", "open", "/old/f"),
        line("2015-10-11 00:00:07,000", "getfileinfo", "/old/f"),
    ], compress=not compress)  # fmt: skip
    current = write(tmp_path / "hdfs-audit.log", [
        line("2015-10-11 00:00:09,000", "delete", "/old/f"),
        line("2015-10-11 00:00:05,000", "rename", "/old/f", dst="/old/g"),  # a late line
    ])  # fmt: skip
    # earliest events: oldest :00, current :05, middle :05 (a tie: the given order stands)
    table, _ = assert_same([current, oldest, middle], monkeypatch)
    assert table["op"].cast(pl.String).to_list() == ["mkdirs", "create", "rename", "open", "getfileinfo", "delete"]


@pytest.mark.parametrize(("workers", "block_bytes"), [(1, 64), (2, 300), (2, 1 << 20)])
def test_block_sizes_and_workers_do_not_change_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, block_bytes: int
) -> None:
    lines = [line(f"2015-10-11 00:{i // 60 % 60:02d}:{i % 60:02d},{(i * 7) % 1000:03d}", "open", f"/d/f{i % 7}")
             for i in range(500)]  # fmt: skip
    lines[57] = "2015-10-11 00:00:57,000 INFO FSNamesystem.audit: allowed=true\tugi=x"
    lines[133] = "2015-10-11 00:02:13,000 INFO other.Logger: hello"
    lines[400] = line("2015-10-11 00:00:00,000", "open", "/long/" + "x" * 900)
    log = write(tmp_path / "a.log", lines, compress=True)
    table, report = assert_same([log], monkeypatch, workers=workers, block_bytes=block_bytes)
    assert table.height == 498 and report.malformed_examples[0].line_number == 58


def test_unterminated_last_line_and_lone_cr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "a.log"
    log.write_bytes((line("2015-10-11 00:00:00,000", "open", "/a") + "\n\r").encode())
    _, report = assert_same([log], monkeypatch)
    assert (report.lines, report.other_lines) == (2, 1)
    log.write_bytes(line("2015-10-11 00:00:00,000", "open", "/a").encode())
    assert_same([log], monkeypatch)


def test_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    junk = write(tmp_path / "junk.log", ["hello", "2015-10-11 00:00:00,000 INFO FSNamesystem.audit: allowed=true"])
    for paths, pattern in (([empty], "empty.log.*empty"), ([junk], "no parseable audit event in .*junk.log")):
        assert_same(paths, monkeypatch)
        with pytest.raises(TraceError, match=pattern):
            read_audit_logs(paths)
    data = gzip.compress((line("2015-10-11 00:00:00,000", "open", "/a") + "\n").encode() * 1000)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(data[: len(data) // 2])
    for path, pattern in ((cut, "cut.log.gz"), (tmp_path / "nope.log", "nope.log"), (tmp_path, str(tmp_path))):
        with pytest.raises(TraceError, match=pattern):
            read_audit_logs([path])


def test_multi_member_gzip_with_zero_padding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = (line("2015-10-11 00:00:00,000", "open", "/a") + "\n").encode()
    b = (line("2015-10-11 00:00:01,000", "open", "/b") + "\n").encode()
    log = tmp_path / "multi.log.gz"
    log.write_bytes(gzip.compress(a) + b"\0" * 3 + gzip.compress(b) + b"\0" * 100)
    table, _ = assert_same([log], monkeypatch)
    assert table["path"].cast(pl.String).to_list() == ["/a", "/b"]
    log.write_bytes(gzip.compress(a) + b"\0junk")  # not padding: an error for both parsers
    for native in (False, True):
        message = parse([log], native, monkeypatch)
        assert isinstance(message, str) and "multi.log.gz" in message


def test_paths_and_destinations_share_categories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = write(tmp_path / "a.log", [
        line("2015-10-11 00:00:00,000", "create", "/a"),
        line("2015-10-11 00:00:01,000", "rename", "/a", dst="/b"),
        line("2015-10-11 00:00:02,000", "open", "/b"),
    ])  # fmt: skip
    table, _ = assert_same([log], monkeypatch)
    phys = table.select(pl.col("path", "dst").to_physical())
    assert phys["dst"][1] == phys["path"][2] and phys["path"][0] == phys["path"][1]


# --------------------------------------------------------------------------------------------
# generated logs

PATHS = ["/a", "/dir/file one", "/ünï/cødé", "/tab\there", "/x/" + "y" * 40, "null", "/r/part-00001"]
CMDS = ["open", "create", "getfileinfo", "rename", "rename (options=[OVERWRITE])", "delete", "mkdirs", "listStatus"]
UGIS = ["alice (auth:SIMPLE)", "bob", "", "carol (auth:PROXY) via hue/gw@EX.COM (auth:KERBEROS)", "hue/gw@EX.COM"]


@st.composite
def audit_line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["good"] * 8 + ["other", "blank", "cut", "lenient", "junk", "reordered"]))
    ms = draw(st.integers(0, 3 * 86_400_000))
    day, rest = divmod(ms, 86_400_000)
    ts = f"2015-10-{11 + day:02d} {rest // 3_600_000:02d}:{rest // 60_000 % 60:02d}:{rest // 1000 % 60:02d},{rest % 1000:03d}"
    text = line(ts, draw(st.sampled_from(CMDS)), draw(st.sampled_from(PATHS)),
                dst=draw(st.sampled_from(["null", "/dst", "", "/dir/file one"])), ugi=draw(st.sampled_from(UGIS)),
                allowed=draw(st.sampled_from(["true", "false"])),
                tail=draw(st.sampled_from(["", "\tproto=rpc", "\tproto=rpc\tcallerContext=x:y"])))  # fmt: skip
    if kind == "other":
        text = f"{ts} INFO org.apache.hadoop.hdfs.StateChange: BLOCK* {draw(st.text(max_size=8))}"
    elif kind == "blank":
        text = ""
    elif kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif kind == "lenient":
        text = text.replace(",", draw(st.sampled_from([".", ":"])), 1) if draw(st.booleans()) else " " + text[:-1]
    elif kind == "reordered":
        head, *fields = text.split("\t")
        text = "\t".join([head, *draw(st.permutations(fields))])
    data = text.encode()
    if kind == "junk":
        data = data[:40] + draw(st.binary(max_size=6)) + data[40:]
    return data + draw(st.sampled_from([b"", b"", b"\r"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.lists(st.lists(audit_line(), min_size=0, max_size=40), min_size=1, max_size=3),
    compress=st.lists(st.booleans(), min_size=3, max_size=3),
    block_bytes=st.sampled_from([64, 200, 1 << 20]),
    workers=st.sampled_from([1, 2]),
    unterminated=st.booleans(),
)
def test_generated_logs_parse_the_same(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    files: list[list[bytes]],
    compress: list[bool],
    block_bytes: int,
    workers: int,
    unterminated: bool,
) -> None:
    folder = tmp_path_factory.mktemp("gen")
    paths = []
    for i, lines in enumerate(files):
        data = b"\n".join(lines) + (b"" if unterminated and lines else b"\n" if lines else b"")
        p = folder / f"hdfs-audit.log.{i}"
        p.write_bytes(gzip.compress(data) if compress[i] else data)
        paths.append(p)
    assert_same(paths, monkeypatch, workers=workers, block_bytes=block_bytes)


def test_the_fitted_profile_does_not_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mimesisbench.model.fit import FitConfig, fit_profile
    from mimesisbench.profile.io import profile_to_json

    rng = np.random.default_rng(3)
    lines = []
    times = np.sort(rng.integers(0, 3_600_000, 4000))
    for i, t in enumerate(times):
        f = int(rng.zipf(1.5)) % 300
        op = ["create", "open", "open", "getfileinfo", "listStatus", "delete", "rename"][i % 7]
        dst = f"/data/d{f % 9}/moved-{f}" if op == "rename" else "null"
        ts = f"2015-10-11 {t // 3_600_000:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d},{t % 1000:03d}"
        lines.append(line(ts, op, f"/data/d{f % 9}/file {f}", dst=dst, ugi=f"u{f % 5}"))
    log = write(tmp_path / "a.log", lines)
    profiles = []
    for native in (False, True):
        table, _ = parse([log], native, monkeypatch)
        profiles.append(json.loads(profile_to_json(fit_profile(table, None, FitConfig(types=3, seed=1)))))
    for p in profiles:
        p.pop("provenance", None)
        p["source"].pop("created_at")  # the wall clock, to the second: two fits may straddle one
    assert profiles[0] == profiles[1]


def test_non_ascii_users_and_a_cr_before_a_tab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the parsers disagreed on both: the Python one cut non-ASCII users at a byte offset counted
    # as characters, and dropped a CR before a TAB that the native one kept
    good = line("2015-10-11 00:00:00,000", "open", "/a", dst="/d", ugi="u1 (auth:SIMPLE)")
    users = ["jürgen (auth:SIMPLE)", "路径路径 (auth:KERBEROS)", "ünï/hôst@RÉALM (auth:KERBEROS) via x", "🙂", "é"]
    log = write(tmp_path / "a.log", [
        *(line("2015-10-11 00:00:01,000", "open", "/ü", ugi=u) for u in users),
        *(good.replace(f"\t{key}=", f"\r\t{key}=") for key in ("ugi", "ip", "cmd", "src", "dst", "perm", "proto")),
        good.replace("\tsrc=", "\r\r\tsrc="), good.replace("\tdst=/d", "\tdst=/d\r"), good + "\r\r",
        good.replace("\tsrc=/a", "\r\tsrc=/a\r\tb"),  # a TAB in the path: read by the slow path
        good.replace("\tugi=", "\tcmd=open\r\tugi="),  # cmd twice: deferred, read by the slow path
    ])  # fmt: skip
    table, report = assert_same([log], monkeypatch)
    assert table["user"].cast(pl.String).to_list()[-5:] == ["jürgen", "路径路径", "ünï/hôst@RÉALM", "🙂", "é"]
    assert report.malformed == 0


@pytest.mark.parametrize("block_bytes", [64, 1 << 20])
def test_a_byte_order_mark_is_dropped_at_the_start_of_the_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int
) -> None:
    # found by the fuzzing below: the Python parser dropped it at the start of any block, so its
    # answer depended on the block size
    good = line("2015-10-11 00:00:00,000", "open", "/a").encode()
    log = write(tmp_path / "a.log", [b"\x00" + good, b"\xef\xbb\xbf" + good])
    for native in (False, True):
        message = parse([log], native, monkeypatch, block_bytes=block_bytes)
        assert isinstance(message, str) and "no parseable audit event" in message and "2 malformed" in message
    log = write(tmp_path / "b.log", [b"\xef\xbb\xbf" + good, b"\xef\xbb\xbf" + good, good])
    table, report = assert_same([log], monkeypatch, block_bytes=block_bytes)
    assert (table.height, report.malformed) == (2, 1)
    assert [m.line_number for m in report.malformed_examples] == [2]


# --------------------------------------------------------------------------------------------
# fuzzing mutated real lines: no crash, and both parsers agree

#: a real NameNode audit log beside the checkout (read when present, never copied)
REAL_LOG = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "spark-hive-sandbox-audit.log"
#: a few of its lines, so the fuzzing holds on any machine
REAL_LINES = [
    ("2019-04-10 18:01:45,622 INFO FSNamesystem.audit: allowed=true\tugi=root (auth:SIMPLE)\tip=/10.211.55.101"
    "\tcmd=mkdirs\tsrc=/var/hadoop/mr-history/done\tdst=null\tperm=root:supergroup:rwxrwx---\tproto=rpc"),
    ("2019-04-10 18:02:33,946 INFO FSNamesystem.audit: allowed=true\tugi=root (auth:SIMPLE)\tip=/10.211.55.101"
    "\tcmd=create\tsrc=/user/spark/applicationHistory/.619b0c4b-f52c-4473-b61b-fb273f5270c2\tdst=null"
    "\tperm=root:supergroup:rw-r--r--\tproto=rpc"),
    ("2019-04-10 18:02:34,006 INFO FSNamesystem.audit: allowed=true\tugi=root (auth:SIMPLE)\tip=/10.211.55.101"
    "\tcmd=delete\tsrc=/user/spark/applicationHistory/.619b0c4b-f52c-4473-b61b-fb273f5270c2\tdst=null"
    "\tperm=null\tproto=rpc"),
    ("2019-04-10 18:01:45,863 INFO FSNamesystem.audit: allowed=true\tugi=root (auth:SIMPLE)\tip=/10.211.55.101"
    "\tcmd=listStatus\tsrc=/\tdst=null\tperm=null\tproto=rpc"),
    ("2019-04-10 18:03:22,839 INFO FSNamesystem.audit: allowed=true\tugi=hbase (auth:SIMPLE)\tip=/10.211.55.1"
    "\tcmd=contentSummary\tsrc=/tmp/acme_company_datawarehouse/d7319fb5-fd15-4642-9498-3c6597d356ac\tdst=null"
    "\tperm=null\tproto=rpc"),
]


@functools.cache
def real_lines() -> tuple[bytes, ...]:
    extra = REAL_LOG.read_bytes().splitlines() if REAL_LOG.is_file() else []
    return tuple(x.encode() for x in REAL_LINES) + tuple(extra)


MUTATIONS = ("nul", "null", "huge", "reorder", "truncate", "non_ascii", "cr_tab", "cr_end", "tab", "cr",
             "newline", "bad_utf8", "bom", "time", "deny", "drop", "rename")  # fmt: skip


def _mutate(draw: st.DrawFn, kind: str, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    head, *fields = data.split(b"\t")
    if kind == "nul":
        return data[:at] + b"\0" + data[at:]
    if kind == "null" and fields:  # a field's value becomes the text null (src=null: admin commands)
        i = draw(st.integers(0, len(fields) - 1))
        fields[i] = fields[i].partition(b"=")[0] + b"=null"
        return b"\t".join([head, *fields])
    if kind == "huge":
        return data[:at] + b"y" * draw(st.sampled_from([300, 5000, 70_000])) + data[at:]
    if kind == "reorder" and fields:
        return b"\t".join([head, *draw(st.permutations(fields))])
    if kind == "truncate":
        return data[:at]
    if kind == "non_ascii":
        text = draw(st.sampled_from(["ü", "路径", "🙂", "e\u0301", "\u00a0", "\u2028", "Ω "]))
        if draw(st.booleans()) and b"\tugi=" in data:  # in the user name, where offsets matter
            return data.replace(b"\tugi=", b"\tugi=" + text.encode(), 1)
        return data[:at] + text.encode() + data[at:]
    if kind == "cr_tab" and fields:
        i = draw(st.integers(0, len(fields) - 1))
        fields[i] = fields[i] + b"\r" * draw(st.integers(1, 2))
        return b"\t".join([head, *fields])
    if kind == "cr_end":
        return data + b"\r" * draw(st.integers(1, 2))
    if kind in ("tab", "cr", "newline"):
        return data[:at] + {"tab": b"\t", "cr": b"\r", "newline": b"\n"}[kind] + data[at:]
    if kind == "bad_utf8":
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe8\xb7"])) + data[at:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "time":  # a character of the timestamp changed: a bad date, a lenient separator ...
        i = draw(st.integers(0, 23))
        return data[:i] + draw(st.sampled_from([b"9", b"0", b".", b" ", b":", b"x"])) + data[i + 1 :]
    if kind == "deny":
        return data.replace(b"allowed=true", b"allowed=false", 1)
    if kind == "drop" and fields:
        del fields[draw(st.integers(0, len(fields) - 1))]
        return b"\t".join([head, *fields])
    if kind == "rename":
        return data.replace(b"cmd=", draw(st.sampled_from([b"cmd=rename (options=[NONE])\tx=", b"cmd=rename ("])), 1)
    return data


@st.composite
def mutated_real_line(draw: st.DrawFn) -> bytes:
    lines = real_lines()
    data = lines[draw(st.integers(0, len(lines) - 1))]
    for kind in draw(st.lists(st.sampled_from(MUTATIONS), max_size=3)):
        data = _mutate(draw, kind, data)
    return data


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(
    lines=st.lists(mutated_real_line(), min_size=1, max_size=25),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    compress=st.booleans(),
    block_bytes=st.sampled_from([64, 300, 1 << 20]),
    workers=st.sampled_from([1, 2]),
)
def test_fuzzed_real_lines_never_crash_and_both_parsers_agree(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[bytes],
    newline: bytes,
    compress: bool,
    block_bytes: int,
    workers: int,
) -> None:
    log = tmp_path_factory.mktemp("fuzz") / "hdfs-audit.log"
    data = newline.join(lines) + newline
    log.write_bytes(gzip.compress(data) if compress else data)
    table, report = assert_same([log], monkeypatch, workers=workers, block_bytes=block_bytes)
    if table.height:  # what a parse yields, the model reads without crashing
        from mimesisbench.model.objects import object_table

        object_table(table)
        assert report.events == table.height and report.pathless == table["path"].null_count()
