"""``mimesisbench report`` on run directories made by the real engine (memory and posix backends)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from mimesisbench.cli.cmd_report import COMMANDS
from mimesisbench.cli.main import cli
from mimesisbench.errors import InputError
from mimesisbench.profile.io import profile_from_dict
from mimesisbench.report.build import FIGURES_DIR, build_report
from mimesisbench.results import records, rundir
from mimesisbench.results.load import RunDirError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to

MAX_HTML_BYTES = 5_000_000


def make_real_runs(root: Path, backends_and_scales: Sequence[tuple[str, float]], *, seed: int = 11) -> list[Path]:
    """Generate a small schedule from the built-in demo profile and replay it once per
    (backend, time scale) with the real engine; returns the run directories."""
    text = resources.files("mimesisbench").joinpath("data/demo_profile.json").read_text(encoding="utf-8")
    profile = profile_from_dict(json.loads(text), "demo_profile.json")
    schedule_dir, _, _ = generate_to(profile, root / "schedule", GenerateOptions(duration_ms=8000, scale_files=0.5), seed)
    out = []
    for i, (backend, scale) in enumerate(backends_and_scales):
        if backend == "posix":
            backend = f"posix:{root / f'base{i}'}"
        config = RunConfig(schedule=str(schedule_dir), backend=backend, out=str(root / "runs"), time_scale=scale, max_drift_s=None)
        report = run_benchmark(config, show_progress=False)
        assert report.complete, report.message
        out.append(report.run_dir)
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_real_runs(tmp_path_factory.mktemp("report"), [("memory", 0.25), ("posix", 0.125)])


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


def test_single_run_report_is_self_contained(real_runs: list[Path], tmp_path: Path) -> None:
    result = build_report([real_runs[0]], tmp_path / "out")
    page = result.html_path.read_text(encoding="utf-8")
    assert result.html_path.name == "index.html" and result.html_bytes == len(page.encode())
    assert result.html_bytes < MAX_HTML_BYTES
    # nothing fetched from anywhere: no URL, no script, no stylesheet link, no external image
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page and "<img" not in page
    figures = re.findall(r'data-figure="([^"]+)"', page)
    for expected in ("throughput", "latency-time", "lateness", "latency-dist-ops", "latency-dist-types", "cdf"):
        assert expected in figures
    assert len(_svgs(page)) == len(figures)
    # every inline figure has its SVG and PNG beside the page
    for name in figures:
        svg = tmp_path / "out" / FIGURES_DIR / f"{name}.svg"
        png = tmp_path / "out" / FIGURES_DIR / f"{name}.png"
        assert ET.parse(svg).getroot().tag.endswith("svg")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # ids are unique across the inline SVGs (clip paths of one figure must not capture another's)
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_report_shows_summary_config_host_and_labelled_axes(real_runs: list[Path], tmp_path: Path) -> None:
    run_id = real_runs[0].name
    build_report([real_runs[0]], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    summary = json.loads((real_runs[0] / rundir.SUMMARY).read_text())
    assert run_id in page and "completed without warnings" in page
    for op in summary["operations"]:
        assert f"<td>{op}</td>" in page
    assert "time_scale" in page and "hostname" in page and "profile hash" in page
    svg = (tmp_path / "out" / FIGURES_DIR / "throughput.svg").read_text()
    assert "throughput (ops/s)" in svg and "time since start (s)" in svg
    assert "latency (ms, log)" in (tmp_path / "out" / FIGURES_DIR / "latency-dist-ops.svg").read_text()


def test_set_of_runs_at_different_loads_gets_a_knee_curve(real_runs: list[Path], tmp_path: Path) -> None:
    runner = CliRunner()
    for command in COMMANDS:
        cli.add_command(command)
    result = runner.invoke(cli, ["report", str(real_runs[0].parent), "--out", str(tmp_path / "multi")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "report of 2 run(s)" in result.output
    page = (tmp_path / "multi" / "index.html").read_text(encoding="utf-8")
    assert 'data-figure="runs-knee"' in page and 'data-figure="runs-throughput"' in page
    for run in real_runs:
        assert f'id="run-{run.name}"' in page
    assert 'data-figure="run1-throughput"' in page and 'data-figure="run2-throughput"' in page
    assert "achieved throughput (ops/s)" in (tmp_path / "multi" / FIGURES_DIR / "runs-knee.svg").read_text()


def test_incomplete_run_and_warnings_are_prominent(real_runs: list[Path], tmp_path: Path) -> None:
    run = tmp_path / "runs" / real_runs[0].name
    shutil.copytree(real_runs[0], run)
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    summary = json.loads((run / rundir.SUMMARY).read_text())
    manifest.update(complete=False, status="drift", warnings=["worker 0 fell behind schedule (drift)"])
    summary.update(complete=False, status="drift", message="worker 0 fell behind schedule (drift)")
    (run / rundir.MANIFEST).write_text(json.dumps(manifest))
    (run / rundir.SUMMARY).write_text(json.dumps(summary))
    build_report([run], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    banner = re.search(r'<div class="banner bad".*?</div>', page, flags=re.DOTALL)
    assert banner is not None
    assert "incomplete" in banner.group(0) and "worker 0 fell behind schedule (drift)" in banner.group(0)
    # the banner comes before the first figure
    assert page.index('class="banner bad"') < page.index("<figure")


def test_server_side_series_are_found_generically(real_runs: list[Path], tmp_path: Path) -> None:
    run = tmp_path / "runs" / real_runs[0].name
    shutil.copytree(real_runs[0], run)
    seconds = np.arange(0, 4, dtype=np.int64)
    pl.DataFrame({"second": seconds, "RpcQueueTimeAvgTime": [0.1, 0.4, 0.2, 0.3], "label": ["a"] * 4}).write_parquet(run / "namenode_jmx.parquet")
    ts = pl.read_parquet(run / rundir.TIMESERIES)
    ts.with_columns(pl.lit(42.0).alias("jmx_CallQueueLength")).write_parquet(run / rundir.TIMESERIES)
    build_report([run], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert 'data-figure="server"' in page
    svg = (tmp_path / "out" / FIGURES_DIR / "server.svg").read_text()
    assert "RpcQueueTimeAvgTime" in svg and "jmx_CallQueueLength" in svg and ">label<" not in svg


def test_report_errors_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no such run directory"):
        build_report([tmp_path / "nope"], tmp_path / "out")
    (tmp_path / "notarun").mkdir()
    (tmp_path / "notarun" / "x.txt").write_text("x")
    with pytest.raises(InputError, match="not a run directory"):
        build_report([tmp_path / "notarun"], tmp_path / "out")
    runner = CliRunner()
    for command in COMMANDS:
        cli.add_command(command)
    result = runner.invoke(cli, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert isinstance(result.exception, RunDirError)


def test_run_that_issued_nothing_still_gets_a_report(tmp_path: Path) -> None:
    from mimesisbench.results.samples import empty_samples, write_samples
    from mimesisbench.results.summary import summarize, timeseries

    run = tmp_path / "runs" / "20260101T000000Z-empty0"
    run.mkdir(parents=True)
    samples = empty_samples()
    write_samples(samples, run / rundir.SAMPLES)
    timeseries(samples).write_parquet(run / rundir.TIMESERIES)
    summary = summarize(samples, scheduled_total=100, complete=False, extra={"status": "crashed", "message": "worker 0 crashed"})
    records.write_summary(run, summary)
    records.write_manifest(run, {"complete": False, "status": "crashed", "message": "worker 0 crashed", "warnings": ["worker 0 crashed"]})
    result = build_report([run], tmp_path / "out")
    page = result.html_path.read_text(encoding="utf-8")
    assert "<figure" not in page
    assert "INCOMPLETE (crashed)" in page and "worker 0 crashed" in page
