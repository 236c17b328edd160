"""The versioned run records (config, manifest, summary): round trips, old files, factors and tags."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from mimesisbench.errors import InputError
from mimesisbench.results import records
from mimesisbench.results.load import load_run
from mimesisbench.results.records import (
    RECORD_VERSION,
    TIME_STATS,
    RecordError,
    RunConfigRecord,
    RunManifest,
    RunSummary,
    read_record,
)
from mimesisbench.results.samples import SCHEMA, write_samples
from mimesisbench.results.summary import summarize

#: a summary.json as written before the records were versioned (latency_ms.mean_ms vs service_ms.mean,
#: flat per-op latency and service figures, nested lateness)
OLD_SUMMARY = {
    "complete": True,
    "throughput_ops_per_s": 200.0,
    "active_time_ms": 10.0,
    "operations_scheduled": 2,
    "operations_issued": 2,
    "operations_succeeded": 2,
    "operations_failed": 0,
    "outcomes": {"ok": 2, "not_found": 0},
    "latency_ms": {"mean_ms": 1.5, "p50_ms": 1.5, "p90_ms": 1.9, "p99_ms": 1.99, "p999_ms": 2.0, "max_ms": 2.0},
    "service_ms": {"mean": 1.0, "p50": 1.0, "p99": 1.2},
    "lateness_ms": {"mean": 0.5, "p50": 0.5, "p99": 0.6, "max": 0.6},
    "operations": {
        "open": {
            "issued": 2, "succeeded": 2, "failed": 0, "errors": {"not_found": 0}, "throughput_ops_per_s": 200.0,
            "mean_ms": 1.5, "p50_ms": 1.5, "p90_ms": 1.9, "p99_ms": 1.99, "p999_ms": 2.0, "max_ms": 2.0,
            "service_mean_ms": 1.0, "service_p50_ms": 1.0, "service_p99_ms": 1.2, "service_max_ms": 1.2,
            "lateness_ms": {"mean": 0.5, "p50": 0.5, "p99": 0.6, "max": 0.6},
        }
    },
    "types": {},
    "status": "complete",
    "message": "",
    "time_scale": 1.0,
    "workers": [{"index": 0, "status": "complete"}],
}


def _samples(n: int = 50) -> pl.DataFrame:
    sched = np.arange(n, dtype=np.float64) * 1000.0
    return pl.DataFrame(
        {
            "worker": np.zeros(n, dtype=np.int16), "type": (np.arange(n) % 2 + 1).astype(np.int16),
            "op": ["open", "create"] * (n // 2), "seq": np.arange(n, dtype=np.int64), "scheduled_us": sched,
            "start_us": sched + 10.0, "end_us": sched + 10.0 + np.linspace(100.0, 900.0, n), "outcome": ["ok"] * n,
        }
    ).cast(SCHEMA)  # type: ignore[arg-type]


def test_summary_uses_one_naming_scheme_everywhere(tmp_path: Path) -> None:
    data = summarize(_samples(), scheduled_total=50, complete=True, extra={"status": "complete", "message": ""})
    records.write_summary(tmp_path, data)
    written = json.loads((tmp_path / records.SUMMARY).read_text())
    assert written["format"] == records.SUMMARY_FORMAT and written["version"] == RECORD_VERSION
    groups = [written] + list(written["operations"].values()) + list(written["types"].values())
    assert len(groups) == 5
    for group in groups:
        for what in ("latency_ms", "service_ms", "lateness_ms"):
            assert set(group[what]) == set(TIME_STATS), (what, group[what])
    read = read_record(RunSummary, tmp_path / records.SUMMARY)
    assert read.operations["open"].latency_ms.p99 == pytest.approx(written["operations"]["open"]["latency_ms"]["p99"])
    flat = read.overall().flat()
    assert set(flat) == set(records.FLAT_FIGURES)
    assert flat["latency_max_ms"] == pytest.approx(0.91) and flat["service_max_ms"] == pytest.approx(0.9)
    assert flat["lateness_p50_ms"] == pytest.approx(0.01)


def test_unversioned_files_still_read(tmp_path: Path) -> None:
    run = tmp_path / "20250101T000000Z-old000"
    run.mkdir()
    (run / records.SUMMARY).write_text(json.dumps(OLD_SUMMARY))
    (run / records.MANIFEST).write_text(json.dumps({"complete": True, "status": "complete", "backend": {"scheme": "null"},
                                                    "schedule": {"namespace_hash": "abc"}, "warnings": []}))
    (run / records.CONFIG).write_text(json.dumps({"schedule": "/s", "backend": "null", "time_scale": 0.5, "workers": 2}))
    write_samples(_samples(2).with_columns(pl.lit("open").cast(SCHEMA["op"]).alias("op")), run / "samples.parquet")
    data = load_run(run)
    assert data.summary.version == RECORD_VERSION and data.complete and data.schedule_hash == "abc"
    assert data.summary.latency_ms.p99 == pytest.approx(1.99) and data.summary.service_ms.p99 == pytest.approx(1.2)
    op = data.operations["open"]
    assert op.latency_ms.mean == pytest.approx(1.5) and op.latency_ms.max == pytest.approx(2.0)
    assert op.service_ms.max == pytest.approx(1.2) and op.lateness_ms.p99 == pytest.approx(0.6)
    assert data.time_scale == pytest.approx(0.5) and data.config.model_extra == {"workers": 2}
    assert data.factors == {} and data.tags == []


def test_factors_and_tags_round_trip(tmp_path: Path) -> None:
    factors = {"handlers": 40, "cache": True, "fs": "ext4", "ratio": 0.5}
    records.write_config(tmp_path, {"schedule": "/s", "backend": "null", "factors": factors, "tags": ["baseline"]})
    config = read_record(RunConfigRecord, tmp_path / records.CONFIG)
    assert config.factors == factors and config.tags == ["baseline"]
    assert [type(v) for v in config.factors.values()] == [int, bool, str, float]
    with pytest.raises(RecordError, match=r"factors\.handlers"):
        records.parse_record(RunConfigRecord, {"factors": {"handlers": [1, 2]}}, "config.json")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"version": 2}', "version 2 is newer"),
        ('{"version": "one"}', "version"),
        ('{"format": "mimesisbench-profile"}', "format"),
        ("[1, 2]", "valid dictionary"),
        ('{"complete": "perhaps"}', "complete"),
        ("", "empty"),
        ('{"status": ', "not valid JSON"),
    ],
)
def test_bad_records_name_the_file_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / records.MANIFEST
    path.write_text(text)
    with pytest.raises(RecordError, match=problem) as info:
        read_record(RunManifest, path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    assert isinstance(info.value, InputError) and info.value.exit_code == 3


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records.write_manifest(tmp_path, {"status": "phase1"})
    before = (tmp_path / records.MANIFEST).read_text()

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        records.write_manifest(tmp_path, {"status": "complete"})
    assert (tmp_path / records.MANIFEST).read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [records.MANIFEST]
