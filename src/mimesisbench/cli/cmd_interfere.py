"""``mimesisbench interfere``: how much the replay and data jobs slow each other (repeated runs
of the replay alone, the data jobs alone and both; ``run.interference``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich import box
from rich.table import Table

from mimesisbench.cli.options import max_drift_seconds, output_option, table_console
from mimesisbench.errors import ConfigError
from mimesisbench.run.config import MAX_CONCURRENCY, MAX_WORKERS


def _ci(interval: dict[str, Any], digits: int) -> str:
    ci = interval.get("ci95")
    mean = f"{interval['mean']:,.{digits}f}"
    return mean if ci is None else f"{mean} [{ci[0]:,.{digits}f}, {ci[1]:,.{digits}f}]"


def interference_rich_table(rows: list[dict[str, Any]]) -> Table:
    """The study's table: each figure alone and together (mean [95 % CI]) and the change in %."""
    table = Table(title="interference: mean [95% CI] over the repetitions", title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(["side", "figure", "unit", "alone", "together", "change %"]):
        table.add_column(col, justify="left" if i < 3 else "right", no_wrap=True)
    for row in rows:
        change = _ci(row["change_pct"], 1)
        table.add_row(row["side"], row["figure"], row["unit"], _ci(row["alone"], 3), _ci(row["together"], 3),
                      f"[bold red]{change}[/]" if row["worse"] else change)
    return table


@click.command("interfere")
@click.argument("schedule", type=click.Path(path_type=Path))
@click.option("--backend", "-b", required=True, help="posix:/dir or hdfs://host:port/dir: each run gets a fresh subdirectory of it.")
@click.option("--data-job", "data_jobs", multiple=True, required=True, metavar="LAYOUT[:key=value,...]",
              help="The data side (repeatable; the grammar of `run --data-job`).")
@click.option("--repeat", "-r", type=click.IntRange(1, 100), default=3, show_default=True,
              help="Runs of each kind (metadata alone, data alone, both).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the runs' random order.")
@click.option("--time-scale", type=float, default=1.0, show_default=True, help="The replay's time scale (run --time-scale).")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=None, help="Replay workers (run --workers).")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=None, help="Lanes per worker (run --concurrency).")
@click.option("--max-drift", default="off", show_default=True,
              help="Stop a run when a worker is this far behind (a slowed replay is what is measured: off by default).")
@output_option(required=True, type=click.Path(path_type=Path), help="The study directory (new).")
def interfere_command(
    schedule: Path, backend: str, data_jobs: tuple[str, ...], repeat: int, seed: int, time_scale: float,
    workers: int | None, concurrency: int | None, max_drift: str, output: Path,
) -> None:
    """Measure how much the replay of SCHEDULE and the data jobs slow each other."""
    from mimesisbench.analysis.interference import interference_table, rows_json
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.interference import InterferenceConfig, run_interference

    run = RunConfig(schedule=str(schedule), backend=backend, out=str(output), workers=workers, concurrency=concurrency,
                    max_drift_s=max_drift_seconds(max_drift), time_scale=time_scale, data_jobs=data_jobs)
    console = table_console(160)

    def on_run(i: int, n: int, kind: str, report: Any) -> None:
        state = "complete" if report.complete else f"[red]{report.status}[/]: {report.message}"
        console.print(f"run {i + 1}/{n}: {kind:<8} {state}  ({report.run_dir})")

    study = run_interference(
        InterferenceConfig(run=run, repeat=repeat, seed=seed), output,
        lambda runs: rows_json(interference_table(runs)), on_run,
    )
    console.print(interference_rich_table(study["table"]))
    incomplete = [r for r in study["runs"] if not r["complete"]]
    console.print(f"study directory: [bold]{output}[/] (interference.json)")
    if incomplete:
        raise ConfigError(f"{len(incomplete)} of {len(study['runs'])} runs did not complete; the table leaves them out")


COMMANDS = [interfere_command]
