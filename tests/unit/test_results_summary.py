"""Summaries, time series and part merging, on hand-made samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mimesisbench.jobs import write_part_file
from mimesisbench.results.records import write_json_atomic
from mimesisbench.results.rundir import new_run_dir
from mimesisbench.results.samples import SCHEMA, empty_samples, merge_parts
from mimesisbench.results.summary import summarize, timeseries
from mimesisbench.results.table import summary_table


def _samples(rows: list[tuple[int, int, str, float, float, float, str]]) -> pl.DataFrame:
    data = [(w, t, op, i, s, a, e, o) for i, (w, t, op, s, a, e, o) in enumerate(rows)]
    return pl.DataFrame(
        data, schema=["worker", "type", "op", "seq", "scheduled_us", "start_us", "end_us", "outcome"], orient="row"
    ).cast(SCHEMA)  # type: ignore[arg-type]


def test_percentiles_come_from_merged_samples_not_worker_averages() -> None:
    rows = []
    # worker 0: 99 fast opens (1 ms); worker 1: one slow open (100 ms) and one failed open
    for i in range(99):
        rows.append((0, 1, "open", i * 1000.0, i * 1000.0 + 10, i * 1000.0 + 1000, "ok"))
    rows.append((1, 2, "open", 0.0, 50_000.0, 100_000.0, "ok"))
    rows.append((1, 2, "open", 10.0, 20.0, 30.0, "not_found"))
    frame = _samples(rows)
    s = summarize(frame, scheduled_total=105, complete=False)
    lat = (frame["end_us"] - frame["scheduled_us"]).to_numpy() / 1000.0
    op = s["operations"]["open"]
    assert op["issued"] == 101 and op["succeeded"] == 100 and op["failed"] == 1
    assert op["errors"]["not_found"] == 1
    assert op["latency_ms"]["p50"] == pytest.approx(np.percentile(lat, 50))
    assert op["latency_ms"]["p99"] == pytest.approx(np.percentile(lat, 99))
    assert op["latency_ms"]["max"] == pytest.approx(100.0)
    # the average of per-worker p50s would be about 25 ms; the merged p50 is 1 ms
    assert op["latency_ms"]["p50"] == pytest.approx(1.0)
    assert op["lateness_ms"]["max"] == pytest.approx(50.0)
    assert op["service_ms"]["mean"] == pytest.approx(((frame["end_us"] - frame["start_us"]) / 1000).mean())
    assert s["complete"] is False and s["operations_scheduled"] == 105 and s["operations_issued"] == 101
    assert s["types"]["2"]["issued"] == 2 and s["types"]["1"]["issued"] == 99
    assert s["active_time_ms"] == pytest.approx((100_000.0 - 10.0) / 1000.0)
    assert s["throughput_ops_per_s"] == pytest.approx(101 / ((100_000.0 - 10.0) / 1e6))


def test_timeseries_buckets_by_second_and_op() -> None:
    rows = [(0, 1, "create", t * 1e5, t * 1e5, t * 1e5 + 500, "ok") for t in range(25)]
    rows += [(0, 1, "delete", 2.1e6, 2.1e6, 2.1e6 + 100, "ok")]
    ts = timeseries(_samples(rows))
    create = ts.filter(pl.col("op") == "create").sort("second")
    assert create["second"].to_list() == [0, 1, 2] and create["ops"].to_list() == [10, 10, 5]
    overall = ts.filter(pl.col("op") == "all").sort("second")
    assert overall["ops"].to_list() == [10, 10, 6]
    assert create["latency_max_ms"].to_list() == pytest.approx([0.5, 0.5, 0.5])
    assert timeseries(empty_samples()).height == 0


def test_empty_run_summarises_to_zeros() -> None:
    s = summarize(empty_samples(), scheduled_total=10, complete=False)
    assert s["operations_issued"] == 0 and s["throughput_ops_per_s"] == 0.0 and s["operations"] == {}
    summary_table(s)  # renders without data


def test_parts_merge_with_schedule_events(tmp_path: Path) -> None:
    events = pl.DataFrame(
        {"time_us": [0, 10, 20], "op": [1, 2, 5], "type": [3, 3, 3], "target": [0, 0, 0],
         "generation": [0, 0, 0], "seq": [0, 1, 2]},
        schema={"time_us": pl.Int64, "op": pl.UInt8, "type": pl.Int16, "target": pl.Int64, "generation": pl.UInt8,
                "seq": pl.Int64},
    )
    part = write_part_file(
        tmp_path / "parts", "worker", 4,
        {"row": np.array([2, 0]), "start_ns": np.array([40_000, 1_000]), "end_ns": np.array([41_500, 2_000]),
         "outcome": np.array([1, 0], dtype=np.uint8)},
    )
    merged = merge_parts([(4, part)], events, time_scale=2.0)
    assert merged["op"].cast(pl.String).to_list() == ["create", "delete"]
    assert merged["scheduled_us"].to_list() == [0.0, 40.0]
    assert merged["start_us"].to_list() == [1.0, 40.0] and merged["end_us"].to_list() == [2.0, 41.5]
    assert merged["outcome"].cast(pl.String).to_list() == ["ok", "not_found"]
    assert merged["worker"].to_list() == [4, 4] and merged["type"].to_list() == [3, 3]


def test_run_dirs_are_unique_and_json_is_clean(tmp_path: Path) -> None:
    a, b = new_run_dir(tmp_path), new_run_dir(tmp_path)
    assert a != b and a.parent == b.parent == tmp_path
    write_json_atomic(a / "x.json", {"v": float("nan"), "k": [1, float("inf")]})
    assert json.loads((a / "x.json").read_text()) == {"v": None, "k": [1, None]}
    assert sorted(p.name for p in a.iterdir()) == ["x.json"]  # no temporary file left
