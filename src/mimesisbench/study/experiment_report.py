"""``experiment report``: one self-contained HTML page of an experiment directory: what was run
(the file's facts, the design table in run order), and per response its analysis (effects with
their intervals and the share of variation each explains, or a sweep's means per level), with
the warnings of the analysis."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mimesisbench import __version__
from mimesisbench.analysis.effects import SweepAnalysis, TwoLevelAnalysis
from mimesisbench.analysis.runs_table import analyze_runs, read_runs_csv
from mimesisbench.errors import ConfigError
from mimesisbench.report.html import Page, banner, esc, facts, figure, table
from mimesisbench.report.plots_effects import effects_figure, sweep_figure
from mimesisbench.report.style import plotting, write_files
from mimesisbench.study.experiment_file import load_experiment
from mimesisbench.study.experiment_run import DESIGN, FILE, RESULTS

FIGURES_DIR = "figures"
PAGE = "index.html"


@dataclass(frozen=True)
class ExperimentReport:
    html_path: Path
    figure_files: tuple[Path, ...]


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


def build_experiment_report(exp_dir: Path, out: Path) -> ExperimentReport:
    """Write the report of the experiment in ``exp_dir`` to ``out`` (``index.html`` and figures)."""
    if not (exp_dir / FILE).exists():
        raise ConfigError(f"{exp_dir}: not an experiment directory (no {FILE})")
    if not (exp_dir / RESULTS).exists():
        raise ConfigError(f"{exp_dir}: no run has finished yet (no {RESULTS}); run the experiment first")
    exp = load_experiment(exp_dir / FILE)
    results = read_runs_csv(exp_dir / RESULTS)
    names = [f.name for f in exp.factors]
    levels = {f.name: [str(v) for v in f.levels] for f in exp.factors if len(f.levels) == 2}
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
                analysis = analyze_runs(results, response, names, levels)
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
    page.heading("Runs", anchor="runs")
    shown = [c for c in ("order", "point", "replication", *names, "status", *exp.responses) if c in results.columns]
    page.add(table(shown, [[esc(c) for c in row] for row in results.select(shown).rows()]))
    out.mkdir(parents=True, exist_ok=True)
    html_path = out / PAGE
    html_path.write_text(page.render(), encoding="utf-8")
    return ExperimentReport(html_path=html_path, figure_files=tuple(written))
