"""The report's "Data jobs" section, on run directories made by the real engine with and without
``run --data-job`` (posix backend)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from mimesisbench.analysis.data_calls import data_op_stats, run_data_calls
from mimesisbench.profile.io import profile_from_dict
from mimesisbench.report import plots_data
from mimesisbench.report.build import FIGURES_DIR, build_report
from mimesisbench.report.style import plotting
from mimesisbench.results import rundir
from mimesisbench.results.load import RunDirError, load_run
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to

#: a file per task, writes only: 2 tasks x 2 segments x (64 KiB / 16 KiB) transfers x 2 passes
PER_TASK = "n-n:tasks=2,block=64KiB,transfer=16KiB,segments=2,passes=2"
PER_TASK_CALLS = 2 * 2 * 4 * 2
#: one shared strided file, written, fsynced and read back once
SHARED = "n-1-strided:tasks=2,block=16KiB,transfer=16KiB,segments=4,ops=write+read,fsync=true,passes=1,name=shared"


def _schedule(root: Path) -> Path:
    text = resources.files("mimesisbench").joinpath("data/demo_profile.json").read_text(encoding="utf-8")
    profile = profile_from_dict(json.loads(text), "demo_profile.json")
    schedule_dir, _, _ = generate_to(profile, root / "schedule", GenerateOptions(duration_ms=2000, scale_files=0.25), 11)
    return Path(schedule_dir)


def _real_run(root: Path, schedule: Path, base: str, data_jobs: tuple[str, ...] = ()) -> Path:
    config = RunConfig(schedule=str(schedule), backend=f"posix:{root / base}", out=str(root / "runs"), time_scale=0.25,
                       max_drift_s=None, data_jobs=data_jobs)
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    return Path(report.run_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One replay of a small schedule with two data jobs beside it, one without."""
    root = tmp_path_factory.mktemp("report-data")
    schedule = _schedule(root)
    return {
        "data": _real_run(root, schedule, "base-data", (PER_TASK, SHARED)),
        "plain": _real_run(root, schedule, "base-plain"),
    }


def _section(page: str) -> str:
    start = page.index("<h3>Data jobs</h3>")
    return page[start : page.index("<h3>Workload profile and schedule</h3>", start)]


def _rows(html: str) -> list[list[str]]:
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html) if "<td>" in row]


def test_data_jobs_section_has_a_row_per_job_and_op(runs: dict[str, Path], tmp_path: Path) -> None:
    build_report([runs["data"]], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    section = _section(page)
    # after the replay's figures, before the profile
    assert page.index("<h3>Figures</h3>") < page.index("<h3>Data jobs</h3>")
    rows = {(r[0], r[3]): r for r in _rows(section)}
    assert set(rows) == {("data1", "write"), ("shared", "write"), ("shared", "read"), ("shared", "fsync")}
    assert rows[("data1", "write")][1:3] == ["n-n", "2"]
    assert rows[("data1", "write")][4:6] == [f"{PER_TASK_CALLS:,}", "0"]
    assert rows[("shared", "read")][1:3] == ["n-1-strided", "2"]
    # an fsync moves no bytes: no MiB nor MiB/s, but its latency
    fsync = rows[("shared", "fsync")]
    assert fsync[6:8] == ["-", "-"] and fsync[8] != "-"
    summary = json.loads((runs["data"] / rundir.SUMMARY).read_text())
    for (job, op), row in rows.items():
        assert row[4] == f"{summary['data']['jobs'][job]['ops'][op]['calls']:,}"


def test_data_jobs_figures_are_drawn_and_written(runs: dict[str, Path], tmp_path: Path) -> None:
    result = build_report([runs["data"]], tmp_path / "out")
    page = result.html_path.read_text(encoding="utf-8")
    section = _section(page)
    figures = re.findall(r'data-figure="([^"]+)"', section)
    assert figures == ["data-bandwidth", "data-offsets-data1", "data-offsets-shared", "data-latency"]
    for name in figures:
        svg = tmp_path / "out" / FIGURES_DIR / f"{name}.svg"
        assert ET.parse(svg).getroot().tag.endswith("svg")
        assert (tmp_path / "out" / FIGURES_DIR / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = {name: (tmp_path / "out" / FIGURES_DIR / f"{name}.svg").read_text() for name in figures}
    assert "bandwidth (MiB/s)" in svg["data-bandwidth"] and "data1 write" in svg["data-bandwidth"]
    assert "offset in the file (MiB)" in svg["data-offsets-shared"]
    assert all(label in svg["data-offsets-shared"] for label in ("write", "read", "fsync", "task 0", "task 1"))
    assert "call latency (ms, log)" in svg["data-latency"] and "shared fsync" in svg["data-latency"]
    # every call of a small job is drawn, and the caption says so
    assert f"All {PER_TASK_CALLS:,} calls." in section
    # the calls are not mistaken for a server-side series
    assert 'data-figure="server"' not in page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_offsets_are_an_even_sample_named_in_the_caption(runs: dict[str, Path]) -> None:
    run = load_run(runs["data"])
    full = run_data_calls(run)
    small = run_data_calls(run, offset_sample=5)
    assert full is not None and small is not None
    whole = next(s for s in full.offsets if s.job == "data1")
    sample = next(s for s in small.offsets if s.job == "data1")
    assert whole.every == 1 and whole.moves.height == whole.calls == PER_TASK_CALLS
    assert sample.every == -(-PER_TASK_CALLS // 5) and 0 < sample.moves.height <= 5
    assert sample.calls == PER_TASK_CALLS
    # every kept call is one of the job's calls, in time order
    assert sample.moves.join(whole.moves, on=["task", "op", "t_s", "offset_mib"], how="anti").height == 0
    assert sample.moves["t_s"].is_sorted()
    shared = next(s for s in full.offsets if s.job == "shared")
    assert shared.fsync_t_s.size == 2 and set(shared.moves["op"].to_list()) == {"write", "read"}
    with plotting():
        caption = plots_data.offsets_figure(sample, "offsets", "offsets").caption
    assert f"one call in {sample.every}" in caption and f"of {PER_TASK_CALLS}" in caption


def test_bandwidth_and_latency_cover_every_byte_and_call(runs: dict[str, Path]) -> None:
    run = load_run(runs["data"])
    data = run_data_calls(run)
    assert data is not None
    calls = pl.read_parquet(run.data_calls_path)
    moved_mib = calls.filter(pl.col("op") != "fsync")["done"].sum() / 2**20
    assert data.bandwidth["mib_s"].sum() * data.bin_s == pytest.approx(moved_mib)
    assert {h.group: h.total for h in data.latency} == {
        f"{job} {op}": n for job, op, n in calls.group_by("job", "op").len().iter_rows()
    }


def test_run_without_data_jobs_has_no_data_section(runs: dict[str, Path], tmp_path: Path) -> None:
    run = load_run(runs["plain"])
    assert not run.has_data_calls and run_data_calls(run) is None and data_op_stats(run) == []
    build_report([runs["plain"]], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "Data jobs" not in page and 'data-figure="data-' not in page
    assert not list((tmp_path / "out" / FIGURES_DIR).glob("data-*"))


def test_damaged_data_calls_are_named_at_load(runs: dict[str, Path], tmp_path: Path) -> None:
    run = tmp_path / "runs" / runs["data"].name
    shutil.copytree(runs["data"], run)
    pl.read_parquet(run / rundir.DATA_CALLS).drop("offset").write_parquet(run / rundir.DATA_CALLS)
    with pytest.raises(RunDirError, match=r"data_calls\.parquet: missing column offset"):
        load_run(run)
