"""``mimesisbench report`` (HTML with figures), ``compare`` (baseline vs contender) and ``runs`` (catalog)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from mimesisbench.cli.options import output_option
from mimesisbench.errors import ConfigError


def _side_dirs(paths: tuple[Path, ...]) -> list[Path]:
    """Run directories of one side: each path is a run directory or a folder of run directories
    (an interference study's folder is kept whole: the report adds its table)."""
    from mimesisbench.results.load import find_run_dirs, is_run_dir
    from mimesisbench.run.interference import STUDY_FILE

    out: list[Path] = []
    for path in paths:
        if path.is_dir() and not is_run_dir(path) and not (path / STUDY_FILE).is_file():
            found = find_run_dirs(path)
            if found:
                out.extend(found)
                continue
        out.append(path)  # load_run explains what is wrong with it
    return out


def _console(min_width: int) -> Console:
    """The terminal's width, or ``min_width`` columns when printing to a pipe or file."""
    console = Console()
    return console if console.is_terminal else Console(width=min_width)


def _json_default(value: object) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@output_option("out", type=click.Path(path_type=Path), required=True, help="Folder receiving index.html and figures/.")
@click.option("--title", default=None, help="Page title (default: the run id or the number of runs).")
@click.option("--max-points", type=int, default=900, show_default=True, help="Most points per time series (bins widen to fit).")
def report_command(run_dirs: tuple[Path, ...], out: Path, title: str | None, max_points: int) -> None:
    """Write an HTML report (SVG figures inline, SVG and PNG files beside it) of one or more runs.

    Each RUN_DIR is a run directory, or a folder whose run directories are all included. With
    several runs at different loads the report adds the throughput-latency knee curve; an
    interference study's folder (``interfere -o``) adds its table and figure.
    """
    from mimesisbench.report.build import ReportOptions, build_report

    if max_points < 10:
        raise ConfigError(f"--max-points must be at least 10 (got {max_points})")
    result = build_report(_side_dirs(run_dirs), out, ReportOptions(max_points=max_points, title=title))
    click.echo(
        f"report of {result.runs} run(s): {result.html_path} ({result.html_bytes / 1e6:.2f} MB, "
        f"{len(result.figure_files)} figure files, {result.seconds:.1f} s)"
    )


@click.command("compare")
@click.argument("positional", nargs=-1, type=click.Path(path_type=Path), metavar="[BASELINE CONTENDER]")
@click.option("--baseline", "baseline", multiple=True, type=click.Path(path_type=Path), help="A baseline run (repeatable).")
@click.option("--contender", "contender", multiple=True, type=click.Path(path_type=Path), help="A contender run (repeatable).")
@click.option("--op", "ops", multiple=True, help="Show only these operations (repeatable; 'all' for the total).")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Significance level.")
@click.option("--bootstrap", type=int, default=10_000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and subsampling.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(
    positional: tuple[Path, ...],
    baseline: tuple[Path, ...],
    contender: tuple[Path, ...],
    ops: tuple[str, ...],
    alpha: float,
    bootstrap: int,
    seed: int,
    as_json: bool,
) -> None:
    """Compare a baseline with a contender, per operation, with run-to-run noise in mind.

    Either two positional paths (BASELINE CONTENDER: each a run directory or a folder of repeated
    runs) or --baseline/--contender repeated once per run. With repeated runs on both sides it
    reports the coefficient of variation and whether each change is significant (Welch's t-test,
    bootstrap interval); a Mann-Whitney U test compares the raw latency samples.
    """
    from mimesisbench.analysis.compare import CompareOptions, compare_runs
    from mimesisbench.report.terminal import comparison_renderable
    from mimesisbench.results.load import load_runs

    if positional and (baseline or contender):
        raise ConfigError("give either BASELINE CONTENDER as two arguments or --baseline/--contender, not both")
    if positional:
        if len(positional) != 2:
            raise ConfigError(f"expected two paths, BASELINE and CONTENDER (got {len(positional)}); use --baseline/--contender for more runs")
        baseline, contender = (positional[0],), (positional[1],)
    if not baseline or not contender:
        raise ConfigError("need at least one baseline and one contender run (BASELINE CONTENDER, or --baseline and --contender)")
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha must be between 0 and 1 (got {alpha})")
    if bootstrap < 100:
        raise ConfigError(f"--bootstrap must be at least 100 (got {bootstrap})")
    base_runs = load_runs(_side_dirs(baseline))
    cont_runs = load_runs(_side_dirs(contender))
    comparison = compare_runs(base_runs, cont_runs, CompareOptions(alpha=alpha, bootstrap=bootstrap, seed=seed))
    if as_json:
        data = comparison.to_json()
        if ops:
            data["operations"] = {k: v for k, v in data["operations"].items() if k in ops}
        click.echo(json.dumps(data, indent=2, default=_json_default))
        return
    _console(160).print(comparison_renderable(comparison, ops=ops or None))


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _interval(ci: list[float] | None) -> str:
    return "" if ci is None else f" [{ci[0]:.3g}, {ci[1]:.3g}]"


@click.command("fidelity")
@click.argument("verbatim", type=click.Path(path_type=Path))
@click.argument("synthetic", type=click.Path(path_type=Path))
@click.option("--bootstrap", type=int, default=2000, show_default=True, help="Bootstrap resamples of each interval.")
@click.option("--confidence", type=float, default=0.95, show_default=True, help="Confidence level of the intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and subsampling.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def fidelity_command(verbatim: Path, synthetic: Path, bootstrap: int, confidence: float, seed: int, as_json: bool) -> None:
    """Does the server respond to the model as to the trace? VERBATIM and SYNTHETIC are runs, on one
    server and its settings, of the trace's verbatim schedule (schedule-from-trace) and of a
    schedule generated from the profile fitted on that trace.

    Per audit command: throughput of each run and their ratio (synthetic / verbatim); service-time
    KS distance, p50 and p99 with the ratios' bootstrap intervals; the NameNode's JMX series side
    by side; and how faithfully the verbatim run replayed its trace (lateness p99, outcomes).
    """
    from rich.table import Table

    from mimesisbench.analysis.server_fidelity import ALL, FidelityOptions, server_fidelity
    from mimesisbench.results.load import load_runs

    if bootstrap < 100:
        raise ConfigError(f"--bootstrap must be at least 100 (got {bootstrap})")
    if not 0.5 <= confidence < 1:
        raise ConfigError(f"--confidence must be in [0.5, 1) (got {confidence})")
    runs = load_runs([verbatim, synthetic])
    result = server_fidelity(runs[0], runs[1], FidelityOptions(resamples=bootstrap, confidence=confidence, seed=seed))
    if as_json:
        click.echo(json.dumps(result, indent=2, default=_json_default))
        return
    table = Table(title="synthetic vs verbatim, per command (service time: actual start to end)")
    for col in ("command", "n verbatim", "n synthetic", "throughput ratio", "KS", "p50 ratio [CI]", "p99 ratio [CI]"):
        table.add_column(col, justify="left" if col == "command" else "right")
    rows = [*sorted(result["by_command"].items()), (ALL, result[ALL])]
    for name, row in rows:
        table.add_row(
            name, f"{row['n_verbatim']:,}", f"{row['n_synthetic']:,}", _fmt(row["throughput_ratio"]), _fmt(row["ks_service"]),
            _fmt(row["service_p50_ratio"]) + _interval(row["service_p50_ratio_ci"]),
            _fmt(row["service_p99_ratio"]) + _interval(row["service_p99_ratio_ci"]),
        )  # fmt: skip
    console = _console(140)
    console.print(table)
    for name, row in result["server"].items():
        console.print(f"server {name}: verbatim {_fmt(row['verbatim'])}, synthetic {_fmt(row['synthetic'])}")
    replay = result["verbatim_replay"]
    console.print(
        f"verbatim replay: lateness p99 {_fmt(replay['lateness_p99_ms'])} ms; outcomes as in the trace "
        f"{_fmt(replay['outcome_matches_trace'], 4)}, as predicted {_fmt(replay['outcome_matches_prediction'], 4)}"
    )


@click.command("runs")
@click.argument("directory", required=False, default="runs", type=click.Path(path_type=Path))
@click.option("--where", "where", default=None, help="SQL condition on the runs table, e.g. \"complete AND backend_scheme = 'posix'\".")
@click.option("--sql", "sql", default=None, help="Any SQL query over the tables runs, ops, types and the view samples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def runs_command(directory: Path, where: str | None, sql: str | None, as_json: bool) -> None:
    """List the runs found (recursively) under DIRECTORY (default ./runs) with their key figures.

    Backed by an in-memory DuckDB: tables runs (one row per run), ops and types (figures per
    operation and per file type) and the view samples (every raw sample, with run_id). A damaged
    run directory is listed with status 'damaged' and what is wrong in the column problem.
    """
    from mimesisbench.report.terminal import query_renderable, runs_renderable
    from mimesisbench.results.catalog import open_catalog

    if where and sql:
        raise ConfigError("give --where or --sql, not both")
    catalog = open_catalog(directory)
    try:
        console = _console(200)
        if sql:
            result = catalog.query(sql)
            if as_json:
                click.echo(json.dumps(result.records(), indent=2, default=_json_default))
            else:
                console.print(query_renderable(result))
            return
        result = catalog.list_runs(where)
        ids = [str(r["run_id"]) for r in result.records()]
        p99 = catalog.p99_by_op(ids)
        if as_json:
            records = result.records()
            for record in records:
                record["latency_p99_ms_by_op"] = p99.get(str(record["run_id"]), {})
            click.echo(json.dumps(records, indent=2, default=_json_default))
        else:
            console.print(runs_renderable(result, p99))
    finally:
        catalog.close()


COMMANDS: list[click.Command] = [report_command, compare_command, fidelity_command, runs_command]
