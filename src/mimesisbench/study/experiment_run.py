"""Running an experiment: its design's runs in their randomized order, each a ``run`` of the
schedule (generated per design point from a profile when generate options are factors), the
responses of each appended to ``results.csv`` as soon as it ends. An experiment directory holds:

- ``experiment.toml``: the file as given (a rerun checks it is the same);
- ``design.csv``: every run's order, design point, replication and factor levels;
- ``schedules/``: one schedule per distinct set of generate options;
- ``runs/``: the run directories;
- ``results.csv``: per finished run its order, levels, status, run directory and responses.

Interrupted, it resumes: runs already in ``results.csv`` are not run again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench.analysis.designs import design_by_resolution, fractional_factorial, full_factorial
from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import ConfigError
from mimesisbench.results.load import load_run
from mimesisbench.run.config import RunConfig
from mimesisbench.study.experiment_file import Experiment, Level, load_experiment
from mimesisbench.units import parse_duration_ms, parse_rate

FILE = "experiment.toml"
DESIGN = "design.csv"
RESULTS = "results.csv"


@dataclass(frozen=True)
class PlannedRun:
    """One run of the design: its place in the order, design point, replication, and the level
    of each factor (by name)."""

    order: int
    point: int
    replication: int
    levels: dict[str, Level]


def plan(exp: Experiment) -> list[PlannedRun]:
    """The design's runs in the randomized order drawn from the experiment's seed."""
    names = [f.name for f in exp.factors]
    if exp.design.kind == "sweep":
        factor = exp.factors[0]
        points = [{factor.name: level} for level in factor.levels]
    else:
        if exp.design.kind == "fractional":
            design = fractional_factorial(names, exp.design.generators or "")
        elif exp.design.kind == "resolution":
            design = design_by_resolution(names, exp.design.resolution or 0)
        else:
            design = full_factorial(names)
        points = [{f.name: f.levels[0 if sign < 0 else 1] for f, sign in zip(exp.factors, row)}
                  for row in design.matrix.tolist()]
    pairs = [(p, r) for r in range(exp.replications) for p in range(len(points))]
    import numpy as np

    order = np.random.default_rng(exp.seed).permutation(len(pairs))
    return [PlannedRun(order=i + 1, point=pairs[j][0] + 1, replication=pairs[j][1] + 1, levels=points[pairs[j][0]])
            for i, j in enumerate(order.tolist())]


def _options(exp: Experiment, levels: dict[str, Level], kind: str) -> dict[str, Level]:
    out = dict(exp.generate if kind == "generate" else exp.run)
    out.update({f.option: levels[f.name] for f in exp.factors if f.kind == kind})
    return out


def run_config(exp: Experiment, schedule: Path, levels: dict[str, Level], out: Path, reuse: bool) -> RunConfig:
    """The run of one design point: the experiment's run options with the factors' levels."""
    o = _options(exp, levels, "run")
    return RunConfig(
        schedule=str(schedule), backend=exp.backend, out=str(out), reuse=reuse,
        rate=parse_rate(str(o["rate"]), option="rate") if "rate" in o else None,
        time_scale=float(o.get("time_scale", 1.0)),
        workers=int(o["workers"]) if "workers" in o else None,
        concurrency=int(o["concurrency"]) if "concurrency" in o else None,
    )


def _generate_options(o: dict[str, Level]) -> tuple[Any, int]:
    from mimesisbench.synth.options import GenerateOptions

    options = GenerateOptions(
        scale_files=float(o.get("scale_files", 1.0)), time_scale=float(o.get("time_scale", 1.0)),
        span_scale=float(o.get("span_scale", 1.0)),
        duration_ms=parse_duration_ms(str(o["duration"]), option="duration") if "duration" in o else None,
        flat=bool(o.get("flat", False)),
    )
    return options, int(o.get("seed", 1))


def schedule_for(exp: Experiment, exp_dir: Path, levels: dict[str, Level], base: Path) -> Path:
    """The schedule of a design point: the experiment's own, or the profile generated with the
    point's generate options (once per distinct set, under ``schedules/``)."""
    if exp.schedule is not None:
        return (base / exp.schedule).resolve() if not Path(exp.schedule).is_absolute() else Path(exp.schedule)
    from mimesisbench.profile.io import load_profile
    from mimesisbench.synth.pipeline import generate_to

    o = _options(exp, levels, "generate")
    key = hashlib.sha256(json.dumps(o, sort_keys=True, default=str).encode()).hexdigest()[:12]
    target = exp_dir / "schedules" / key
    if not (target / "manifest.json").exists():
        options, seed = _generate_options(o)
        generate_to(load_profile(_profile_path(exp.profile or "", base)), target, options, seed=seed)
    return target


def _profile_path(text: str, base: Path) -> Path:
    """The experiment's profile: ``demo`` (the built-in one) or a path relative to the file's folder."""
    from mimesisbench.profile.io import resolve_profile_arg

    path = Path(text) if Path(text).is_absolute() else base / text
    return path if path.exists() else resolve_profile_arg(text)


def _results(exp_dir: Path) -> pl.DataFrame | None:
    path = exp_dir / RESULTS
    return pl.read_csv(path, infer_schema=False) if path.exists() else None


def run_experiment(file: Path, exp_dir: Path, run: Callable[[RunConfig], Path],
                   announce: Callable[[str], None] = lambda _: None) -> pl.DataFrame:
    """Run (or resume) the experiment of ``file`` in ``exp_dir``; returns the results table."""
    exp = load_experiment(file)
    text = file.read_text(encoding="utf-8")
    exp_dir.mkdir(parents=True, exist_ok=True)
    kept = exp_dir / FILE
    if kept.exists() and kept.read_text(encoding="utf-8") != text:
        raise ConfigError(f"{exp_dir} holds another experiment ({kept} differs from {file}): give a new directory")
    atomic_write_text(kept, text)
    runs = plan(exp)
    names = [f.name for f in exp.factors]
    design_rows = [{"order": r.order, "point": r.point, "replication": r.replication,
                    **{n: str(r.levels[n]) for n in names}} for r in runs]
    atomic_write_text(exp_dir / DESIGN, pl.DataFrame(design_rows).write_csv())
    previous = _results(exp_dir)
    rows: list[dict[str, str]] = previous.to_dicts() if previous is not None else []
    done = {int(r["order"]) for r in rows}
    for r in runs:
        if r.order in done:
            continue
        schedule = schedule_for(exp, exp_dir, r.levels, file.parent)
        config = run_config(exp, schedule, r.levels, exp_dir / "runs", reuse=bool(rows))
        announce(f"run {r.order}/{len(runs)}: " + ", ".join(f"{n}={r.levels[n]}" for n in names))
        run_dir = run(config)
        data = load_run(run_dir)
        figures = data.overall.flat() if data.has_results else {}
        rows.append({"order": str(r.order), "point": str(r.point), "replication": str(r.replication),
                     **{n: str(r.levels[n]) for n in names}, "status": data.status, "run_dir": str(run_dir),
                     **{resp: "" if figures.get(resp) is None else repr(float(figures[resp] or 0.0))
                        for resp in exp.responses}})
        atomic_write_text(exp_dir / RESULTS, pl.DataFrame(rows).write_csv())  # after every run: nothing lost
    return pl.DataFrame(rows)


def status(exp_dir: Path) -> dict[str, Any]:
    """How far an experiment directory is: runs planned, finished, and their statuses."""
    kept = exp_dir / FILE
    if not kept.exists():
        raise ConfigError(f"{exp_dir}: not an experiment directory (no {FILE})")
    exp = load_experiment(kept)
    planned = len(plan(exp))
    results = _results(exp_dir)
    statuses = results["status"].value_counts().rows() if results is not None and results.height else []
    return {"name": exp.name, "planned": planned, "finished": 0 if results is None else results.height,
            "statuses": {str(s): int(n) for s, n in statuses}}
