"""A study of several experiments in one command: a folder of experiment files (the paper's
evaluation, ``examples/icac14/``) run one after the other, each into its own directory below the
suite's (named after its file), and one report over them: each experiment's page, and an index
with their progress, wall times and every paper figure beside ours."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from mimesisbench import __version__
from mimesisbench.errors import ConfigError
from mimesisbench.report.html import Page, esc, facts, table
from mimesisbench.run.config import RunConfig
from mimesisbench.study.experiment_file import load_experiment
from mimesisbench.study.experiment_report import ExperimentReport, build_experiment_report, paper_table
from mimesisbench.study.experiment_run import FILE, RESULTS, run_experiment, status
from mimesisbench.study.paper_figures import Comparison


def suite_files(folder: Path) -> list[Path]:
    """The experiment files of a suite folder, in name order; each is validated first, so a bad
    one stops the suite before any run."""
    files = sorted(p for p in folder.glob("*.toml") if p.is_file())
    if not files:
        raise ConfigError(f"{folder}: no experiment file (*.toml) in it")
    for f in files:
        load_experiment(f)
    return files


def is_suite(directory: Path) -> bool:
    """Whether ``directory`` holds experiment directories rather than being one."""
    return directory.is_dir() and not (directory / FILE).exists() and any(
        (d / FILE).exists() for d in directory.iterdir() if d.is_dir())


def run_suite(folder: Path, out: Path, run: Callable[[RunConfig], Path],
              announce: Callable[[str], None] = lambda _: None) -> dict[str, pl.DataFrame]:
    """Run (or resume) every experiment of ``folder`` into ``out/<file stem>``."""
    results = {}
    files = suite_files(folder)
    for i, file in enumerate(files, 1):
        announce(f"experiment {i}/{len(files)}: {file.name}")
        results[file.stem] = run_experiment(file, out / file.stem, run, announce)
    return results


@dataclass(frozen=True)
class _Member:
    name: str
    directory: Path
    planned: int
    finished: int
    wall_s: float
    comparisons: tuple[Comparison, ...]


def build_suite_report(directory: Path, out: Path) -> ExperimentReport:
    """Each experiment's report in ``out/<name>/``, and ``out/index.html`` over them."""
    members: list[_Member] = []
    figures: list[Path] = []
    for sub in sorted(d for d in directory.iterdir() if (d / FILE).exists()):
        s = status(sub)
        comparisons: tuple[Comparison, ...] = ()
        if (sub / RESULTS).exists():
            report = build_experiment_report(sub, out / sub.name)
            figures.extend(report.figure_files)
            comparisons = report.comparisons
        members.append(_Member(sub.name, sub, s["planned"], s["finished"], s["wall_s"], comparisons))
    if not members:
        raise ConfigError(f"{directory}: no experiment directory in it")
    page = Page(title=f"Study: {directory.name}",
                subtitle=f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} by MimesisBench {__version__}")
    total = sum(m.wall_s for m in members)
    page.add(facts([("experiments", str(len(members))),
                    ("runs", f"{sum(m.finished for m in members)} of {sum(m.planned for m in members)} finished"),
                    ("wall time", f"{total / 60:.1f} min")]))
    page.heading("Experiments", anchor="experiments")
    rows = [[f'<a href="{esc(m.name)}/index.html">{esc(m.name)}</a>' if m.finished else esc(m.name),
             f"{m.finished} / {m.planned}", f"{m.wall_s / 60:.1f} min"] for m in members]
    page.add(table(["experiment", "runs finished", "wall time"], rows))
    every = [c for m in members for c in m.comparisons]
    if every:
        page.heading("Beside the paper", anchor="paper")
        page.add(paper_table(every))
    out.mkdir(parents=True, exist_ok=True)
    html_path = out / "index.html"
    html_path.write_text(page.render(), encoding="utf-8")
    return ExperimentReport(html_path=html_path, figure_files=tuple(figures))
