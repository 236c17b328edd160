"""End-to-end runs (both phases, real worker processes) on memory, posix, null and an async backend."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.backends.base import FILE_SYSTEM, Capabilities
from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.errors import SafetyError
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import RunReport, run_benchmark
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.schedule.paths import event_paths

OPS_KEYS = ("issued", "succeeded", "failed", "errors", "throughput_ops_per_s", "latency_ms", "service_ms", "lateness_ms")
TIME_KEYS = {"mean", "p50", "p90", "p99", "p999", "max"}


class AsyncMemoryBackend(MemoryBackend):
    """The memory backend behind coroutines: exercises the asyncio lanes."""

    is_async: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 8

    @property
    def capabilities(self) -> Capabilities:
        return FILE_SYSTEM  # the commands of format version 1: the coroutines below

    async def aio_create(self, path: str) -> None:
        await asyncio.sleep(0)
        self.create(path)

    async def aio_open(self, path: str) -> None:
        self.open(path)

    async def aio_list_file(self, path: str) -> None:
        self.list_file(path)

    async def aio_list_dir(self, path: str) -> None:
        self.list_dir(path)

    async def aio_delete(self, path: str) -> None:
        self.delete(path)

    async def aio_mkdirs(self, path: str) -> None:
        self.mkdirs(path)

    async def aio_rename(self, src: str, dst: str) -> None:
        self.rename(src, dst)

    async def aio_getfileinfo(self, path: str) -> None:
        self.getfileinfo(path)


def _run(tmp_path: Path, schedule: Path, backend: str, **kw: object) -> RunReport:
    config = RunConfig(schedule=str(schedule), backend=backend, out=str(tmp_path / "runs"), **kw)  # type: ignore[arg-type]
    return run_benchmark(config, show_progress=False)


def _check_consistent(report: RunReport, schedule: Path) -> pl.DataFrame:
    run_dir = report.run_dir
    for name in (rundir.CONFIG, rundir.MANIFEST, rundir.SAMPLES, rundir.TIMESERIES, rundir.SUMMARY):
        assert (run_dir / name).is_file(), name
    assert not (run_dir / rundir.PARTS).exists()
    samples = pl.read_parquet(run_dir / rundir.SAMPLES)
    summary = json.loads((run_dir / rundir.SUMMARY).read_text())
    events = pl.read_parquet(schedule / "events.parquet")
    assert summary["complete"] is True and report.complete
    assert summary["operations_scheduled"] == events.height == summary["operations_issued"] == samples.height
    assert sorted(samples["seq"].to_list()) == sorted(events["seq"].to_list())  # every event exactly once
    assert summary["throughput_ops_per_s"] > 0 and summary["active_time_ms"] > 0
    for op, stats in summary["operations"].items():
        group = samples.filter(pl.col("op") == op)
        assert stats["issued"] == group.height
        assert stats["succeeded"] + stats["failed"] == stats["issued"]
        assert set(OPS_KEYS) <= set(stats)
        assert all(set(stats[k]) == TIME_KEYS for k in ("latency_ms", "service_ms", "lateness_ms"))
        lat = stats["latency_ms"]
        latency = (group["end_us"] - group["scheduled_us"]) / 1000.0
        assert lat["max"] == pytest.approx(latency.max())
        assert lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"]
        assert stats["service_ms"]["p99"] <= lat["p99"] + 1e-9 or stats["lateness_ms"]["p50"] < 0
    assert sum(s["issued"] for s in summary["operations"].values()) == samples.height
    assert sum(s["issued"] for s in summary["types"].values()) == samples.height
    assert (samples["end_us"] >= samples["start_us"]).all()
    ts = pl.read_parquet(run_dir / rundir.TIMESERIES)
    assert ts.filter(pl.col("op") == "all")["ops"].sum() == samples.height
    manifest = json.loads((run_dir / rundir.MANIFEST).read_text())
    assert manifest["complete"] is True and manifest["seed"] == 1
    assert {"hostname", "cpu_count", "memory_bytes", "os", "kernel"} <= set(manifest["host"])
    assert manifest["versions"]["mimesisbench"] and manifest["started_at"] and manifest["ended_at"]
    return samples


def test_memory_run_records_every_event_ok(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s")
    report = _run(tmp_path, schedule, "memory")
    samples = _check_consistent(report, schedule)
    assert (samples["outcome"] == "ok").all(), samples.filter(pl.col("outcome") != "ok")
    assert set(samples["worker"].unique().to_list()) == {0, 1}  # one worker per type


def test_posix_run_really_creates_and_deletes(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s")
    base = tmp_path / "base"
    report = _run(tmp_path, schedule, f"posix:{base}", workers=3, concurrency=2)
    samples = _check_consistent(report, schedule)
    assert (samples["outcome"] == "ok").all(), samples.filter(pl.col("outcome") != "ok")
    sched = load_schedule(schedule)
    files = sched.files
    pre = files.filter(pl.col("pre_existing"))
    new = files.filter(~pl.col("pre_existing"))
    dir_path = dict(zip(sched.directories["dir_id"].to_list(), sched.directories["path"].to_list()))
    for fid, ftype, did in pre.select("file_id", "type", "dir_id").iter_rows():
        assert (base / dir_path[did].lstrip("/") / f"t{ftype}_{fid}").is_file()
    for fid, ftype, did in new.select("file_id", "type", "dir_id").iter_rows():
        folder = base / dir_path[did].lstrip("/")
        assert not (folder / f"t{ftype}_{fid}").exists() and not (folder / f"t{ftype}_{fid}.r1").exists()
    assert (base / "m0.r1").is_dir() and not (base / "m0").exists()
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert manifest["backend"]["fs_type"] != "" and manifest["phase1"]["files_created"] == pre.height
    # the namespace was used: the same base is refused for a second replay of this schedule, as a
    # safety problem (exit 5), and the refused run leaves no run directory behind
    with pytest.raises(SafetyError, match="fresh base"):
        _run(tmp_path, schedule, f"posix:{base}")
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [report.run_dir.name]


def test_null_backend_issues_in_schedule_order(tmp_path: Path) -> None:
    """Golden order: one worker, one lane, time scale 0 -> exactly the schedule's order."""
    schedule = workload(tmp_path / "s", files_per_type=20)
    report = _run(tmp_path, schedule, "null", workers=1, concurrency=1, time_scale=0.0)
    samples = pl.read_parquet(report.run_dir / rundir.SAMPLES).sort("start_us")
    expected = pl.read_parquet(schedule / "events.parquet").sort("time_us", "seq")
    assert samples["seq"].to_list() == expected["seq"].to_list()
    labels = [OpCode(op).label for op in expected["op"].to_list()]
    assert samples["op"].cast(pl.String).to_list() == labels
    assert report.complete


def test_per_file_order_holds_with_many_lanes(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s", files_per_type=20)
    report = _run(tmp_path, schedule, "memory", concurrency=4, time_scale=0.0)
    samples = pl.read_parquet(report.run_dir / rundir.SAMPLES)
    frame = event_paths(load_schedule(schedule)).select("seq", "key")
    joined = samples.join(frame, on="seq").sort("start_us")
    for _, group in joined.group_by("key"):
        assert group["seq"].to_list() == sorted(group["seq"].to_list())
    assert (samples["outcome"] == "ok").all()


def test_async_backend_runs_through_asyncio_lanes(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "s")
    report = _run(tmp_path, schedule, "py:tests.unit.test_run_end_to_end:AsyncMemoryBackend")
    samples = _check_consistent(report, schedule)
    assert (samples["outcome"] == "ok").all()
