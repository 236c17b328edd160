"""``mimesisbench report``: runs -> analysis -> figures -> one HTML page plus SVG and PNG files.

Layout of the output directory::

    index.html            self-contained: CSS and SVG inline, no script, no external URL
    figures/<name>.svg    each figure as a standalone vector file
    figures/<name>.png    and as a bitmap
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mimesisbench import __version__
from mimesisbench.analysis.data_calls import run_data_calls
from mimesisbench.analysis.histogram import run_histograms
from mimesisbench.analysis.interference import InterferenceRow, rows_from_json
from mimesisbench.analysis.knee import is_load_series, load_points
from mimesisbench.analysis.series import DEFAULT_MAX_POINTS, RunSeries, run_series
from mimesisbench.analysis.server import server_series
from mimesisbench.errors import ConfigError
from mimesisbench.report import plots_data, plots_dist, plots_time, sections
from mimesisbench.report.html import Page, banner, figure
from mimesisbench.report.style import Rendered, plotting, write_files
from mimesisbench.results import rundir
from mimesisbench.results.load import RunData, load_runs
from mimesisbench.run.interference import STUDY_FILE

FIGURES_DIR = "figures"
PAGE = "index.html"


@dataclass(frozen=True)
class ReportOptions:
    max_points: int = DEFAULT_MAX_POINTS
    title: str | None = None


@dataclass(frozen=True)
class ReportResult:
    html_path: Path
    figure_files: tuple[Path, ...]
    html_bytes: int
    seconds: float
    runs: int


def _run_figures(run: RunData, series: RunSeries, prefix: str) -> list[Rendered]:
    figures: list[Rendered] = []
    if series.completion.height:
        figures.append(plots_time.throughput_figure(series, f"{prefix}throughput", "Throughput over time"))
        figures.append(plots_time.latency_all_figure(series, f"{prefix}latency-time", "Latency percentiles over time, all operations"))
        if len(series.ops) > 1:
            figures.append(plots_time.latency_ops_figure(series, f"{prefix}latency-time-ops", "Latency over time per operation"))
    if series.issue.height:
        figures.append(plots_time.lateness_figure(series, f"{prefix}lateness", "Lateness over time (issue delay behind schedule)"))
    if run.has_samples:
        hists = run_histograms(run)
        if hists.latency_by_op:
            figures.append(plots_dist.percentile_figure(hists.latency_by_op, f"{prefix}latency-dist-ops", "Latency distribution per operation", what="latency"))
            figures.append(plots_dist.percentile_figure(hists.service_by_op, f"{prefix}service-dist-ops", "Service time distribution per operation", what="service time"))
        if len(hists.latency_by_type) > 0:
            figures.append(plots_dist.percentile_figure(hists.latency_by_type, f"{prefix}latency-dist-types", "Latency distribution per file type", what="latency", label_prefix="type ", colour_by_op=False))
        lat_all = next((h for h in hists.latency_by_op if h.group == "all"), None)
        svc_all = next((h for h in hists.service_by_op if h.group == "all"), None)
        if lat_all is not None:
            figures.append(plots_dist.cdf_figure(lat_all, svc_all, f"{prefix}cdf", "Latency and service time CDF, all operations"))
    server = server_series(run)
    if server:
        figures.append(plots_time.server_figure(server, f"{prefix}server", "Server-side series"))
    return figures


def _data_figures(run: RunData, prefix: str) -> list[Rendered]:
    """The data jobs' figures: bandwidth, the offsets of each job's calls, call latency; none for a
    run without ``data_calls.parquet``."""
    data = run_data_calls(run)
    if data is None:
        return []
    figures: list[Rendered] = []
    if data.bandwidth.height:
        figures.append(plots_data.bandwidth_figure(data, f"{prefix}data-bandwidth", "Data jobs: bandwidth over time"))
    for sample in data.offsets:
        if sample.moves.height or sample.fsync_t_s.size:
            title = f"Data job {sample.job}: offset in the file over time"
            figures.append(plots_data.offsets_figure(sample, f"{prefix}data-offsets-{sample.job}", title))
    if data.latency:
        figures.append(plots_data.latency_figure(data.latency, f"{prefix}data-latency", "Data jobs: call latency distribution"))
    return figures


def _data_section(page: Page, run: RunData, figures: list[Rendered]) -> None:
    """Only for a run with data jobs, so that other runs render as before."""
    jobs = sections.data_jobs_table(run)
    if not jobs and not run.has_data_calls:
        return
    page.heading("Data jobs", 3)
    page.add(jobs)
    if not run.has_data_calls:
        page.add(banner("warn", f"This run has no {rundir.DATA_CALLS}: no figures of its data jobs"))
    for fig in figures:
        page.add(figure(fig, FIGURES_DIR))


def _run_section(page: Page, run: RunData, figures: list[Rendered], data_figures: list[Rendered], multi: bool) -> None:
    page.heading(f"Run {run.run_id}" if multi else "Summary", anchor=f"run-{run.run_id}")
    page.add(sections.warnings_html(run))
    page.add(sections.key_facts(run))
    page.heading("Operations (latency from the scheduled time, ms)", 3)
    page.add(sections.ops_table(run))
    commands = sections.commands_table(run)
    if commands:
        page.heading("Commands mapped or skipped by the backend", 3)
        page.add(commands)
    if run.types:
        page.heading("File types", 3)
        page.add(sections.types_table(run))
    if figures:
        page.heading("Figures", 3)
        for fig in figures:
            page.add(figure(fig, FIGURES_DIR))
    elif not run.has_samples:
        page.add(banner("warn", "This run has no samples.parquet or timeseries.parquet: no figures"))
    _data_section(page, run, data_figures)
    page.heading("Workload profile and schedule", 3)
    page.add(sections.profile_html(run))
    page.heading("Configuration", 3)
    page.add(sections.config_html(run))
    page.add(f"<details><summary>Host and versions</summary>{sections.host_html(run)}</details>")


def _overview(page: Page, runs: Sequence[RunData], figures: list[Rendered]) -> None:
    points = load_points(list(runs))
    page.heading("Runs")
    bad = [r.run_id for r in runs if not r.complete]
    if bad:
        page.add(banner("bad", f"{len(bad)} of {len(runs)} runs are incomplete", bad))
    page.add(sections.runs_overview(runs, points))
    for fig in figures:
        page.add(figure(fig, FIGURES_DIR))


def _overview_figures(runs: Sequence[RunData], all_series: Sequence[RunSeries]) -> list[Rendered]:
    figures: list[Rendered] = []
    if is_load_series(list(runs)):
        figures.append(plots_dist.knee_figure(load_points(list(runs)), "runs-knee", "Throughput vs latency over the runs"))
    overlay = []
    for run, series in zip(runs, all_series):
        if series.completion.height == 0:
            continue
        part = series.completion.filter(series.completion["op"] == "all")
        overlay.append((run.run_id, part["t_s"].to_numpy(), part["throughput_ops_per_s"].to_numpy()))
    if overlay:
        figures.append(plots_dist.overlay_throughput_figure(overlay, "runs-throughput", "Throughput over time per run"))
    return figures


@dataclass(frozen=True)
class _Study:
    """An interference study given to ``report`` (a directory ``mimesisbench interfere`` wrote)."""

    path: Path
    rows: list[InterferenceRow]
    run_dirs: list[Path]  # its runs, in the order they ran


def _interference_studies(paths: Sequence[str | Path]) -> dict[Path, _Study]:
    """The interference studies among ``paths``, by path."""
    studies = {}
    for path in map(Path, paths):
        file = path / STUDY_FILE
        if not file.is_file():
            continue
        try:
            study = json.loads(file.read_text(encoding="utf-8"))
            rows = rows_from_json(study.get("table") or [])
            listed = [Path(r["run_dir"]) for r in study.get("runs") or []]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{file}: not an interference study's file ({type(exc).__name__}: {exc})") from None
        # a study moved elsewhere still holds its runs under runs/
        run_dirs = [d if d.is_dir() else path / "runs" / d.name for d in listed]
        studies[path] = _Study(path=path, rows=rows, run_dirs=run_dirs)
    return studies


def _interference(page: Page, studies: Sequence[_Study]) -> list[Rendered]:
    figures = []
    for i, study in enumerate(studies):
        page.heading(f"Interference: {study.path.name}" if len(studies) > 1 else "Interference")
        page.add(sections.interference_html(study.rows))
        if study.rows:
            fig = plots_data.interference_figure(study.rows, f"interference{i + 1}", "Change together vs alone")
            page.add(figure(fig, FIGURES_DIR))
            figures.append(fig)
    return figures


def build_report(run_dirs: Sequence[str | Path], out: str | Path, options: ReportOptions | None = None) -> ReportResult:
    """Write the report of one or more runs to ``out`` (created if needed). An interference
    study's directory stands for its runs, and adds the study's table and figure."""
    opts = options or ReportOptions()
    began = time.perf_counter()
    studies = _interference_studies(run_dirs)
    runs = load_runs([d for p in run_dirs for d in (studies[Path(p)].run_dirs if Path(p) in studies else [Path(p)])])
    out_dir = Path(out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out: cannot create {out_dir}: {exc.strerror}") from None
    multi = len(runs) > 1
    title = opts.title or (f"MimesisBench report: {runs[0].run_id}" if not multi else f"MimesisBench report: {len(runs)} runs")
    page = Page(title=title, subtitle=f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} by MimesisBench {__version__}")
    written: list[Path] = []
    all_series = [run_series(run, max_points=opts.max_points) for run in runs]
    with plotting():
        for fig in _interference(page, list(studies.values())):
            written.extend(write_files(fig, out_dir / FIGURES_DIR))
        if multi:
            overview = _overview_figures(runs, all_series)
            _overview(page, runs, overview)
            for fig in overview:
                written.extend(write_files(fig, out_dir / FIGURES_DIR))
        for i, run in enumerate(runs):
            prefix = f"run{i + 1}-" if multi else ""
            figures = _run_figures(run, all_series[i], prefix)
            data_figures = _data_figures(run, prefix)
            _run_section(page, run, figures, data_figures, multi)
            for fig in (*figures, *data_figures):
                written.extend(write_files(fig, out_dir / FIGURES_DIR))
    html_path = out_dir / PAGE
    text = page.render()
    html_path.write_text(text, encoding="utf-8")
    return ReportResult(
        html_path=html_path,
        figure_files=tuple(written),
        html_bytes=len(text.encode("utf-8")),
        seconds=time.perf_counter() - began,
        runs=len(runs),
    )
