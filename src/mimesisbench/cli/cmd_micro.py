"""``mimesisbench micro``: one metadata operation N times, as fast as T clients can."""

from __future__ import annotations

import json

import click

from mimesisbench.micro.config import OPERATIONS


def _print_table(result: object) -> None:
    from rich.console import Console
    from rich.table import Table

    from mimesisbench.micro.bench import MicroResult

    assert isinstance(result, MicroResult)
    data = result.to_json()
    lat = data["latency_ms"]
    table = Table(title=f"micro {data['op']}: {data['files']} ops, {data['concurrency']} clients ({data['client']})")
    for name in ("ops/s", "elapsed s", "mean ms", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "errors"):
        table.add_column(name, justify="right")
    table.add_row(
        f"{data['ops_per_s']:,.0f}",
        f"{data['elapsed_s']:.3f}",
        *(f"{lat[k]:.3f}" for k in ("mean", "p50", "p90", "p99", "p999", "max")),
        str(data["errors"]),
    )
    console = Console()
    console.print(table)
    console.print(
        f"backend {data['backend']}  dirs {data['dirs']}  "
        f"prepare {data['prepare_s']:.2f} s  cleanup {data['cleanup_s']:.2f} s"
    )
    if data["kept"]:
        console.print(f"kept {data['workdir']}")
    for warning in data["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}")


@click.command("micro")
@click.argument("op", type=click.Choice(list(OPERATIONS), case_sensitive=True), metavar="OP")
@click.option("--files", "-n", type=int, required=True, help="Operations to time (and files to prepare).")
@click.option(
    "--concurrency", "-t", type=int, default=8, show_default=True, help="Closed-loop clients (operations in flight: native, asyncio tasks or threads)."
)
@click.option("--backend", "-b", required=True, help="posix:/dir, memory, null, hdfs://host:port/dir or simnn: (simulated, docs/simnn.md); wrappers in front: delay:2ms+..., rate:5000+..., fail:0.01+... (docs/run.md).")
@click.option("--dirs", type=int, default=None, help="Directories holding the files (default: 1 per 1000 files).")
@click.option(
    "--client",
    type=click.Choice(["auto", "native", "asyncio", "threads"]),
    default="auto",
    show_default=True,
    help="Client kind: the native lane (hdfs, outside the interpreter), blocking threads, asyncio tasks (async "
    "backends), or auto (native where there is one, else asyncio above 256 clients).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--reuse", is_flag=True, help="Work in a non-empty base directory not created by mimesisbench.")
@click.option("--keep", is_flag=True, help="Keep the files and directories afterwards.")
def micro_command(
    op: str,
    files: int,
    concurrency: int,
    backend: str,
    dirs: int | None,
    client: str,
    as_json: bool,
    reuse: bool,
    keep: bool,
) -> None:
    """Time OP (create, open, fileStatus, listStatus, listDir, delete, mkdirs, rename) like
    NNThroughputBenchmark / mdtest: files the operation needs are made first (untimed), then N
    operations run as fast as T closed-loop clients can; everything made is removed afterwards."""
    from mimesisbench.micro.bench import run_micro
    from mimesisbench.micro.config import MicroConfig

    config = MicroConfig(
        op=op, files=files, backend=backend, concurrency=concurrency, dirs=dirs, reuse=reuse, keep=keep, client=client
    )
    result = run_micro(config)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _print_table(result)


COMMANDS: list[click.Command] = [micro_command]
