"""``experiment report``: one self-contained HTML page of an experiment directory: what was run
(the file's facts, the design table in run order), and per response its analysis (effects with
their intervals and the share of variation each explains, or a sweep's means per level), with
the warnings of the analysis."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench import __version__
from mimesisbench.analysis.effects import SweepAnalysis, TwoLevelAnalysis
from mimesisbench.analysis.runs_table import analyze_runs, read_runs_csv
from mimesisbench.errors import ConfigError, MimesisError
from mimesisbench.report.html import Page, banner, esc, facts, figure, table
from mimesisbench.report.plots_effects import effects_figure, sweep_figure
from mimesisbench.report.plots_load import LoadPoint, capacity_figure, latency_load_figure
from mimesisbench.report.style import Rendered, plotting, write_files
from mimesisbench.results.load import load_run
from mimesisbench.study.capacity_point import FILE as CAPACITY_FILE
from mimesisbench.study.experiment_file import Experiment, load_experiment
from mimesisbench.study.experiment_run import DESIGN, FILE, RESULTS
from mimesisbench.study.paper_figures import Comparison, compare_all

FIGURES_DIR = "figures"
PAGE = "index.html"


@dataclass(frozen=True)
class ExperimentReport:
    html_path: Path
    figure_files: tuple[Path, ...]
    comparisons: tuple[Comparison, ...] = ()  # the paper's figures beside ours, as the page shows them


def _num(value: float) -> str:
    return f"{value:,.4g}"


def _effects_table(a: TwoLevelAnalysis) -> str:
    rows = [[e.name + (" *" if e.significant else ""), _num(e.q), _num(e.effect),
             f"[{_num(e.ci95[0])}, {_num(e.ci95[1])}]", f"{e.variation_explained:.1%}", " ".join(e.aliases[:4])]
            for e in sorted(a.effects, key=lambda e: -abs(e.effect))]
    if a.error_variation is not None:
        rows.append(["error", "", "", "", f"{a.error_variation:.1%}", ""])
    letters = ", ".join(f"{x} = {f}" for x, f in a.factors.items())
    return (f"<p>{esc(letters)}; * the interval excludes 0</p>"
            + table(["effect", "q", "effect (2q)", "95 % interval", "variation", "aliased with"],
                    [[esc(c) for c in row] for row in rows]))


def _sweep_table(a: SweepAnalysis) -> str:
    rows = [[m.level, str(m.n), _num(m.mean), f"[{_num(m.ci95[0])}, {_num(m.ci95[1])}]" if m.ci95 else "-"]
            for m in a.levels]
    return table([a.factor, "runs", "mean", "95 % interval"], [[esc(c) for c in row] for row in rows])


def paper_table(comparisons: list[Comparison]) -> str:
    """The paper's ratios beside ours, with our interval and what the runs say of the difference."""
    rows = []
    for c in comparisons:
        ours = "no runs yet" if c.ours is None else f"{c.ours:.3g}" + (
            f" [{c.ci95[0]:.3g}, {c.ci95[1]:.3g}]" if c.ci95 else "")
        verdict = "" if c.ci95 is None else ("within our interval" if c.ci95[0] <= c.paper <= c.ci95[1]
                                              else "outside our interval")
        rows.append([esc(c.source), esc(c.says), esc(c.response), f"{c.paper:.3g}", esc(ours),
                     esc(f"{c.runs[0]} / {c.runs[1]}"), esc("; ".join([verdict, *c.notes]).strip("; "))])
    return ("<p>Each row is a ratio of mean responses (the runs at the first levels over those at the second), "
            "with a 95 % bootstrap interval.</p>"
            + table(["source", "the paper says", "response", "paper", "ours [95 %]", "runs", "notes"], rows))


def _run_point(group: str, run_dir: Path, offered: float | None = None, served: float | None = None,
               sustained: bool | None = None) -> LoadPoint | None:
    """A run directory's figures as a point of the load figures (None: it has no results)."""
    try:
        data = load_run(run_dir)
    except MimesisError:
        return None
    if not data.has_results:
        return None
    figures = data.overall.flat()

    def num(key: str) -> float | None:
        value = figures.get(key)
        return None if value is None else float(value)

    return LoadPoint(group=group, offered=offered, served=served if served is not None else num("throughput_ops_per_s") or 0.0,
                     latency_mean_ms=num("latency_mean_ms"), latency_p99_ms=num("latency_p99_ms"), sustained=sustained)


def _capacity_section(page: Page, results: pl.DataFrame, names: list[str]) -> list[Rendered]:
    """Per design point, its search's figure and table; returns the figures drawn."""
    drawn: list[Rendered] = []
    for row in results.iter_rows(named=True):
        folder = Path(str(row["run_dir"]))
        try:
            search: dict[str, Any] = json.loads((folder / CAPACITY_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            page.add(banner("warn", f"run {row['order']}: no capacity search", [f"cannot read {folder / CAPACITY_FILE}"]))
            continue
        group = ", ".join(f"{n}={row[n]}" for n in names)
        trials = [t for t in (_run_point(group, Path(x["run_dir"]), x["rate"], x["served"], x["sustained"])
                              for x in search.get("trials", [])) if t is not None]
        check = search.get("peak_check")
        check_point = _run_point(group, Path(check["run_dir"]), check["offered_ops_s"]) if check else None
        bound = (search.get("p_max_inputs") or {}).get("bound_s")
        fig = capacity_figure(trials, search.get("capacity_ops_s"), search.get("p_max_ops_s"), check_point,
                              None if bound is None else bound * 1000.0, f"capacity-{row['order']}",
                              f"Capacity search, run {row['order']} ({group})")
        page.add(figure(fig, FIGURES_DIR))
        rows = [[_num(x["rate"]), _num(x["served"]), "yes" if x["sustained"] else "no", esc(x["note"])]
                for x in search.get("trials", [])]
        page.add(table(["offered (ops/s)", "served (ops/s)", "sustained", "why not"], rows))
        if check:
            measured = check.get("latency_mean_s")
            page.add(f"<p>Closing check: a {_num(check['length_s'])} s peak at p_max = {_num(check['rate_ops_s'])} ops/s "
                     f"({_num(check['offered_ops_s'])} offered): mean response time "
                     f"{'-' if measured is None else _num(measured * 1000)} ms against the bound "
                     f"{_num(check['bound_s'] * 1000)} ms.</p>")
        drawn.append(fig)
    return drawn


def _load_points(exp: Experiment, results: pl.DataFrame, names: list[str]) -> list[LoadPoint]:
    """Every run's (or trial's) served rate and latency, grouped by design point."""
    points: list[LoadPoint] = []
    for row in results.iter_rows(named=True):
        group = ", ".join(f"{n}={row[n]}" for n in names)
        folder = Path(str(row["run_dir"]))
        if exp.capacity is None:
            points.extend(p for p in [_run_point(group, folder)] if p is not None)
            continue
        try:
            trials = json.loads((folder / CAPACITY_FILE).read_text(encoding="utf-8")).get("trials", [])
        except (OSError, ValueError):
            continue
        points.extend(p for p in (_run_point(group, Path(t["run_dir"]), t["rate"], t["served"], t["sustained"])
                                  for t in trials) if p is not None)
    return points


def build_experiment_report(exp_dir: Path, out: Path) -> ExperimentReport:
    """Write the report of the experiment in ``exp_dir`` to ``out`` (``index.html`` and figures)."""
    if not (exp_dir / FILE).exists():
        raise ConfigError(f"{exp_dir}: not an experiment directory (no {FILE})")
    if not (exp_dir / RESULTS).exists():
        raise ConfigError(f"{exp_dir}: no run has finished yet (no {RESULTS}); run the experiment first")
    exp = load_experiment(exp_dir / FILE)
    results = read_runs_csv(exp_dir / RESULTS)
    names = [f.name for f in exp.factors]
    levels = {f.name: [str(v) for v in f.levels] for f in exp.factors}
    page = Page(title=f"Experiment: {exp.name}",
                subtitle=f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} by MimesisBench {__version__}")
    system = exp.backend or f"managed HDFS ({exp.managed_hdfs.workdir if exp.managed_hdfs else ''})"
    planned = len(read_runs_csv(exp_dir / DESIGN)) if (exp_dir / DESIGN).exists() else results.height
    page.add(facts([(k, esc(v)) for k, v in (
        ("design", exp.design.kind + (f" ({exp.design.generators})" if exp.design.generators else "")),
        ("factors", ", ".join(f"{f.name} ({f.kind} {f.option}: {', '.join(map(str, f.levels))})" for f in exp.factors)),
        ("runs", f"{results.height} of {planned} finished, {exp.replications} per design point"),
        ("workload", exp.profile or exp.schedule or ""), ("system", system), ("run order seed", str(exp.seed)))]))
    if results.height < planned:
        page.add(banner("warn", "The experiment is not finished", [f"{planned - results.height} runs have not run yet: "
                                                                   "the analysis below is of those that did"]))
    written: list[Path] = []
    with plotting():
        for i, response in enumerate(exp.responses):
            page.heading(response, anchor=f"response-{i + 1}")
            try:
                analysis = analyze_runs(results, response, names, levels, sweep=exp.design.kind == "sweep")
            except ConfigError as e:  # e.g. a design not complete yet: said on the page
                page.add(banner("warn", f"{response}: no analysis", [str(e)]))
                continue
            if isinstance(analysis, TwoLevelAnalysis):
                fig = effects_figure(analysis, f"effects-{i + 1}", f"Effects on {response}")
                page.add(figure(fig, FIGURES_DIR))
                page.add(_effects_table(analysis))
                if analysis.warnings:
                    page.add(banner("warn", "Read with care", list(analysis.warnings)))
            else:
                fig = sweep_figure(analysis, f"sweep-{i + 1}", f"{response} by {analysis.factor}")
                page.add(figure(fig, FIGURES_DIR))
                page.add(_sweep_table(analysis))
            written.extend(write_files(fig, out / FIGURES_DIR))
    comparisons = tuple(compare_all(exp, results))
    if comparisons:
        page.heading("Beside the paper", anchor="paper")
        page.add(paper_table(list(comparisons)))
    with plotting():
        if exp.capacity is not None:
            page.heading("Capacity", anchor="capacity")
            for fig in _capacity_section(page, results, names):
                written.extend(write_files(fig, out / FIGURES_DIR))
        points = _load_points(exp, results, names)
        if points:
            page.heading("Latency against load", anchor="load")
            fig = latency_load_figure(points, "latency-load", "Latency against the load served")
            page.add(figure(fig, FIGURES_DIR))
            written.extend(write_files(fig, out / FIGURES_DIR))
    page.heading("Runs", anchor="runs")
    shown = [c for c in ("order", "point", "replication", *names, "status", *exp.responses) if c in results.columns]
    page.add(table(shown, [[esc(c) for c in row] for row in results.select(shown).rows()]))
    out.mkdir(parents=True, exist_ok=True)
    html_path = out / PAGE
    html_path.write_text(page.render(), encoding="utf-8")
    return ExperimentReport(html_path=html_path, figure_files=tuple(written), comparisons=comparisons)
