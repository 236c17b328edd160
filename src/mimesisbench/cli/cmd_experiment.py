"""``mimesisbench experiment``: designed experiments (designs, and the analysis of their runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from mimesisbench.errors import ConfigError


@click.group("experiment")
def experiment_group() -> None:
    """Designed experiments: two-level designs 2^k and 2^(k-p), sweeps, effects with intervals."""


def _factor_list(text: str) -> list[str]:
    names = [f.strip() for f in text.split(",") if f.strip()]
    if not names:
        raise ConfigError("--factors: no factor named (a comma-separated list, e.g. handlers,fair_lock,audit)")
    return names


@experiment_group.command("design")
@click.option("--factors", "factors_text", required=True,
              help="The factors, comma-separated; lettered A, B, C, ... by position (I is skipped).")
@click.option("--generators", default=None,
              help="A 2^(k-p) fraction by generators, e.g. 'D=AB E=AC F=BC' (letters by position; D=-AB "
              "for the other half). Default: the full factorial.")
@click.option("--resolution", type=int, default=None,
              help="The smallest fraction of at least this resolution (3, 4, 5...) instead of --generators.")
@click.option("--replications", type=int, default=1, show_default=True, help="Runs of each design point.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the randomized run order.")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None,
              help="CSV to write (default: standard output).")
def design_cmd(factors_text: str, generators: str | None, resolution: int | None, replications: int, seed: int,
               output: Path | None) -> None:
    """The runs of a two-level design in a randomized order, one CSV row each: its order, design
    point and replication, each factor's level (-1/+1), and an empty response column to fill in."""
    from mimesisbench.analysis.designs import design_by_resolution, fractional_factorial, full_factorial
    from mimesisbench.atomic import atomic_write_text

    factors = _factor_list(factors_text)
    if generators and resolution is not None:
        raise ConfigError("--generators and --resolution: give one of them")
    if generators:
        design = fractional_factorial(factors, generators)
    elif resolution is not None:
        design = design_by_resolution(factors, resolution)
    else:
        design = full_factorial(factors)
    order = design.run_order(replications, seed)
    structure = design.aliases()
    lines = [",".join(["order", "point", "replication", *design.factors, "response"])]
    for i, (point, rep) in enumerate(order.tolist()):
        lines.append(",".join([str(i + 1), str(point + 1), str(rep + 1), *(f"{v:+d}" for v in design.matrix[point].tolist()), ""]))
    text = "\n".join(lines) + "\n"
    letters = ", ".join(f"{x}={f}" for x, f in zip(design.letters, design.factors))
    kind = f"2^({len(factors)}-{len(design.generators)})" if design.generators else f"2^{len(factors)}"
    res = f", resolution {structure.resolution}" if structure.resolution else ""
    summary = (f"{kind} design{res}: {design.runs} points x {replications} = {len(order)} runs; {letters}"
               + (f"; generators {' '.join(design.generators)}; I = {' = '.join(structure.defining_relation)}"
                  if design.generators else ""))
    if output is None:
        click.echo(text, nl=False)
        click.echo(summary, err=True)
    else:
        atomic_write_text(output, text)
        click.echo(f"{summary}\nwrote {output}", err=True)


@experiment_group.command("run")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="The experiment directory (made, or resumed: runs already in its results.csv are not run again).")
def run_cmd(file: Path, out: Path) -> None:
    """Run the experiment FILE (TOML): its design's runs in their randomized order, each a run of
    the schedule (generated per design point when generate options are factors), the responses of
    each appended to OUTPUT/results.csv as soon as it ends.

    FILE may be a folder of experiment files (a study, e.g. examples/icac14): each runs in turn
    into OUTPUT/<file name without .toml>, all validated before the first run."""
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import run_benchmark
    from mimesisbench.study.experiment_run import RESULTS, run_experiment
    from mimesisbench.study.experiment_suite import run_suite

    def one(config: RunConfig) -> Path:
        report = run_benchmark(config, console=None, show_progress=False)
        click.echo(f"  {report.status} ({report.run_dir})", err=True)
        return report.run_dir

    def say(text: str) -> None:
        click.echo(text, err=True)

    if file.is_dir():
        for name, table in run_suite(file, out, one, announce=say).items():
            click.echo(f"{name}: {table.height} runs in {out / name / RESULTS}")
        return
    results = run_experiment(file, out, one, announce=say)
    click.echo(f"{results.height} runs in {out / RESULTS}")


@experiment_group.command("status")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status_cmd(directory: Path, as_json: bool) -> None:
    """How far the experiment in DIRECTORY is: runs planned and finished, by status."""
    from mimesisbench.study.experiment_run import status

    s = status(directory)
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    by = ", ".join(f"{n} {k}" for k, n in s["statuses"].items())
    click.echo(f"{s['name']}: {s['finished']} of {s['planned']} runs finished" + (f" ({by})" if by else "")
               + f"; {s['wall_s'] / 60:.1f} min so far")


@experiment_group.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="Folder of the report (index.html and figures/).")
def report_cmd(directory: Path, out: Path) -> None:
    """An HTML page of the experiment in DIRECTORY: its facts, per response the effects with their
    95 % intervals (or a sweep's means per level) and the share of variation each explains, the
    warnings of the analysis, latency against load, capacity searches, the paper's figures beside
    ours, and every run. For a study's directory (experiment run FOLDER), each experiment's page
    and an index over them."""
    from mimesisbench.study.experiment_report import build_experiment_report
    from mimesisbench.study.experiment_suite import build_suite_report, is_suite

    report = build_suite_report(directory, out) if is_suite(directory) else build_experiment_report(directory, out)
    click.echo(f"wrote {report.html_path} ({len(report.figure_files) // 2} figures)")


@experiment_group.command("analyze")
@click.argument("runs", type=click.Path(path_type=Path))
@click.option("--response", required=True, help="The response column (e.g. throughput_ops_s, latency_p99_ms).")
@click.option("--factors", "factors_text", default=None,
              help="The factor columns, comma-separated (default: every column but the response and "
              "experiment design's order, point and replication).")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as JSON.")
def analyze_cmd(runs: Path, response: str, factors_text: str | None, as_json: bool) -> None:
    """Effects of a two-level experiment, or the means of a sweep, from RUNS: an experiment
    directory (`experiment run`), or a CSV, one row per run: a column per factor (levels -1/+1,
    or two names or numbers) and the response.

    Two-level: each effect's q (the model coefficient in -1/+1 coding) and mean change from -1 to
    +1 (2q) with its 95% t interval (2^(k-p)(r-1) degrees of freedom; Lenth's method without
    replications), the share of the variation it explains, and the alias structure of a fraction,
    with a warning when a significant effect is aliased with a two-factor interaction. One factor
    of more than two levels: the mean and interval at each level."""
    from mimesisbench.analysis.runs_table import analyze_runs, read_runs_csv

    factors = _factor_list(factors_text) if factors_text else None
    levels: dict[str, list[str]] | None = None
    sweep = False
    if runs.is_dir():  # an experiment directory: its results, over its factors, levels as its file orders them
        from mimesisbench.study.experiment_file import load_experiment
        from mimesisbench.study.experiment_run import FILE, RESULTS

        if not (runs / FILE).exists():
            raise ConfigError(f"{runs}: not an experiment directory (no {FILE}); give it or a CSV of runs")
        exp = load_experiment(runs / FILE)
        factors = factors or [f.name for f in exp.factors]
        levels = {f.name: [str(v) for v in f.levels] for f in exp.factors}
        sweep = exp.design.kind == "sweep"
        runs = runs / RESULTS
    table = read_runs_csv(runs)
    analysis = analyze_runs(table, response, factors, levels, sweep=sweep)
    result = analysis.to_json()
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(_text(result))


def _interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:,.4g}, {ci[1]:,.4g}]" if ci else "-"


def _text(result: dict[str, Any]) -> str:
    """The analysis as a few lines and a table, largest effects first."""
    lines = []
    if result["kind"] == "sweep":
        lines.append(f"sweep of {result['factor']}: {result['response']}, mean {result['mean_response']:,.4g} "
                     f"({result['dof']} degrees of freedom)")
        lines.append(f"{'level':<20} {'runs':>5} {'mean':>12}  95% interval")
        for level, m in result["levels"].items():
            lines.append(f"{level:<20} {m['n']:>5} {m['mean']:>12,.4g}  {_interval(m['ci95'])}")
        return "\n".join(lines)
    factors = ", ".join(f"{x}={f}" for x, f in result["factors"].items())
    reps = result["replications"]
    lines.append(f"two-level design: {result['runs']} points, {result['observations']} runs"
                 + (f" ({reps} each)" if reps else " (unequal replications)")
                 + (f", resolution {result['resolution']}" if result["resolution"] else "") + f"; {factors}")
    lines.append(f"{result['response']}: mean {result['mean_response']:,.4g} {_interval(result['mean_ci95'])}; "
                 f"{result['dof']} degrees of freedom; intervals by {'Student t' if result['method'] == 't' else 'Lenth'}")
    lines.append(f"{'effect':<10} {'q':>12} {'effect (2q)':>12}  {'95% interval of the effect':<28} {'variation':>9}  aliases")
    ranked = sorted(result["effects"].items(), key=lambda kv: -abs(kv[1]["effect"]))
    for name, e in ranked:
        mark = "*" if e["significant"] else " "
        aliases = " ".join(e["aliases"][:3]) + (" ..." if len(e["aliases"]) > 3 else "")
        lines.append(f"{name + mark:<10} {e['q']:>12,.4g} {e['effect']:>12,.4g}  {_interval(e['ci95']):<28} "
                     f"{e['variation_explained']:>9.1%}  {aliases}")
    if result["error_variation"] is not None:
        lines.append(f"{'error':<10} {'':>12} {'':>12}  {'':<28} {result['error_variation']:>9.1%}")
    lines.append("* the interval excludes 0")
    lines.extend(f"warning: {w}" for w in result["warnings"])
    return "\n".join(lines)


COMMANDS: list[click.Command] = [experiment_group]
