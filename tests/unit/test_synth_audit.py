"""export-audit and schedule_to_events: NameNode line format, round trip through the parser."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import polars as pl
import pytest
from test_synth_helpers import make_profile

from mimesisbench.schedule import Schedule, read_schedule
from mimesisbench.synth.audit import export_audit, schedule_to_events
from mimesisbench.synth.fidelity import read_trace_events, validate_trace
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to

LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO FSNamesystem\.audit: allowed=true\tugi=mimesis \(auth:SIMPLE\)"
    r"\tip=/127\.0\.0\.1\tcmd=(create|open|listStatus|delete|mkdirs|rename|getfileinfo)\tsrc=/bench(/\S*)?"
    r"\tdst=(null|/bench/\S+)\tperm=(null|mimesis:supergroup:rw[-x]r-[-x]r-[-x])\tproto=rpc$"
)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Schedule:
    out = tmp_path_factory.mktemp("audit") / "s"
    generate_to(make_profile(n=800, pre=(100, 100, 20)), out, GenerateOptions(), 23)
    return read_schedule(out)


def test_lines_have_the_namenode_format(tables: Schedule) -> None:
    buf = io.StringIO()
    n = export_audit(tables, buf, base="/bench/", start=dt.datetime(2020, 5, 6, 7, 8, 9))
    lines = buf.getvalue().splitlines()
    assert n == len(lines) == tables.events.height
    bad = [line for line in lines if not LINE.match(line)]
    assert not bad, bad[:3]
    assert lines[0].startswith("2020-05-06 07:08:")


def test_export_parses_back_to_the_same_events(tables: Schedule, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    with log.open("w") as out:
        export_audit(tables, out, base="/bench", with_namespace=True)
    parsed = read_trace_events([log])
    mine = schedule_to_events(tables, base="/bench", with_namespace=True)
    assert parsed.height == mine.height
    got = parsed.select(pl.col("op").cast(pl.String), pl.col("path").cast(pl.String), pl.col("dst").cast(pl.String))
    assert got.equals(mine.select("op", "path", "dst"))
    t0 = int(parsed.get_column("time_ms")[0])
    assert (parsed.get_column("time_ms") - t0).equals(mine.get_column("time_ms"))


def test_schedule_to_events_materialises_renames(tables: Schedule) -> None:
    ev = schedule_to_events(tables)
    renames = ev.filter(pl.col("op") == "rename")
    assert renames.height > 0
    src, dst = renames.get_column("path").to_list(), renames.get_column("dst").to_list()
    for a, b in zip(src, dst):
        assert b.rsplit(".r", 1)[0] == a.rsplit(".r", 1)[0] and b != a
    assert ev.filter(pl.col("op") != "rename").get_column("dst").null_count() == ev.height - renames.height


def test_validate_against_its_own_trace_is_perfect(tables: Schedule) -> None:
    report = validate_trace(tables, schedule_to_events(tables))
    for key in ("ks_popularity", "ks_interarrival", "ks_span", "ks_depth", "ks_activation"):
        assert report[key] == 0.0, key
    assert report["opmix_max_abs_error"] == 0.0
