"""``mimesisbench simnn calibrate|merge|show``: the simulated NameNode's calibration (``mimesisbench.sim``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mimesisbench.sim.model import READ_LOCK_SHARE

if TYPE_CHECKING:
    from rich.console import Console

    from mimesisbench.sim.fit_check import RoundSpread

COMMANDS: list[click.Command] = []


@click.group("simnn")
def simnn() -> None:
    """The simulated NameNode (backend simnn:): calibrate it on a real one, merge calibrations, show one."""


@simnn.command("calibrate")
@click.option("--backend", "-b", required=True, help="hdfs://127.0.0.1:PORT/dir of the cluster `hdfs up` manages.")
@click.option("--hdfs-workdir", type=click.Path(file_okay=False), default=".mimesisbench/hdfs", show_default=True,
              help="The managed cluster's working directory (its settings, its NameNode's CPU).")
@click.option("--ops", default="fileStatus,open,listStatus,create,mkdirs,rename,delete", show_default=True,
              help="The micro operations to measure, comma-separated.")
@click.option("--files", "-n", type=click.IntRange(100), default=10_000, show_default=True,
              help="Operations per measurement.")
@click.option("--loads", default="1,8,64", show_default=True,
              help="Closed-loop clients of the light, middle and heavy loads (the middle one below the handlers).")
@click.option("--repeat", type=click.IntRange(1), default=3, show_default=True,
              help="Runs of each operation and load, round after round; each figure is their median.")
@click.option("--client", type=click.Choice(["auto", "native", "asyncio", "threads"]), default="auto",
              show_default=True, help="As for micro.")
@click.option("--lock-share", type=click.FloatRange(0, 1), default=READ_LOCK_SHARE, show_default=True,
              help="A read's share of its NameNode work under the (shared) namesystem lock (the default: the "
                   "NameNode's own timing of its read holds); a write's is fitted.")
@click.option("--fit-dispatch/--no-fit-dispatch", default=True, show_default=True,
              help="Fit the host's switch between threads (dispatch=) where the reads' heavy loads need it "
                   "(docs/simnn.md); --no-fit-dispatch leaves it at 0.")
@click.option("--output", "-o", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for calibration.json (simnn:?calibration=DIR) and the measurements.")
def calibrate_command(backend: str, hdfs_workdir: str, ops: str, files: int, loads: str, repeat: int, client: str,
                      lock_share: float, fit_dispatch: bool, out: Path) -> None:
    """Measure each operation on the managed NameNode at a light, a middle and a heavy load (micro,
    the CPU of both sides) and fit the simulated NameNode to them; prints how the fit reproduces each."""
    from rich.console import Console

    from mimesisbench.study.simnn_calibration import measure_and_fit, write_calibration

    console = Console(width=max(Console().width, 150))
    chosen = tuple(o.strip() for o in ops.split(",") if o.strip())
    try:  # how many, and in which order, measure_and_fit checks
        counts = tuple(int(x) for x in loads.split(","))
    except ValueError:
        raise click.BadParameter(f"{loads!r}: three client counts, e.g. 1,8,64", param_hint="--loads") from None
    calibration, raw = measure_and_fit(backend, hdfs_workdir, ops=chosen, files=files, loads=counts, repeat=repeat,
                                       client=client, lock_share=lock_share, fit_dispatch=fit_dispatch,
                                       announce=console.print)
    path = write_calibration(out, calibration, raw)
    _show(calibration.to_json(), console)
    console.print(f"wrote {path} (use it as simnn:?calibration={out})")


@simnn.command("merge")
@click.argument("calibrations", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--lock-share", type=click.FloatRange(0, 1), default=READ_LOCK_SHARE, show_default=True,
              help="As for calibrate.")
@click.option("--fit-dispatch/--no-fit-dispatch", default=True, show_default=True, help="As for calibrate.")
@click.option("--output", "-o", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory for the merged calibration.json and every input's measurements.")
def merge_command(calibrations: tuple[Path, ...], lock_share: float, fit_dispatch: bool, out: Path) -> None:
    """Fit one calibration to several (directories simnn calibrate wrote, e.g. on fresh clusters
    at different times): each measurement the median of theirs. Prints how the fit reproduces it."""
    from rich.console import Console

    from mimesisbench.study.simnn_calibration import merge_calibrations, write_calibration

    console = Console(width=max(Console().width, 150))
    calibration, raw = merge_calibrations(list(calibrations), lock_share=lock_share, fit_dispatch=fit_dispatch)
    path = write_calibration(out, calibration, raw)
    _show(calibration.to_json(), console)
    console.print(f"wrote {path}, merged from {len(calibrations)} calibrations (use it as simnn:?calibration={out})")


@simnn.command("show")
@click.argument("calibration", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
def show_command(calibration: Path, as_json: bool) -> None:
    """Print a calibration (a directory or its calibration.json): settings, costs, the fit."""
    from rich.console import Console

    from mimesisbench.backends.simnn import calibration_file
    from mimesisbench.sim.model import Calibration

    data = Calibration.load(calibration_file(calibration)).to_json()
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        _show(data, Console(width=max(Console().width, 150)))


def _show(data: dict, console: Console) -> None:
    from rich.table import Table

    from mimesisbench.sim.fit_check import FIT_BAR, ROUNDS_BAR, fit_misses, round_spreads

    settings = data["settings"]
    console.print("settings: " + "  ".join(f"{k} {v}" for k, v in settings.items()))
    sync = (data.get("source") or {}).get("sync")
    if isinstance(sync, dict):
        how = ("the NameNode's own (its JMX), the median of the write measurements' means"
               if sync.get("source") == "namenode"
               else "a write and fdatasync from this host (the NameNode's JMX showed none)")
        probe = sync.get("fdatasync_s")
        console.print(f"edit-log sync: {settings['sync_s'] * 1e6:.0f} us, {how}"
                      + (f"; a write and fdatasync from this host: {probe * 1e6:.0f} us" if probe else ""))
    steal = (data.get("source") or {}).get("host_steal")
    if isinstance(steal, dict):  # recorded since session 66
        console.print(f"the host's steal: {100 * steal['share']:.1f} % of this machine's busy CPU over the "
                      f"measurements, at most {100 * steal['max_share']:.1f} % ({steal['worst']}); charged to the "
                      f"NameNode's CPU like the host's other work")
    other = (data.get("source") or {}).get("host_other")
    if isinstance(other, dict):  # recorded since session 67
        loads = ", ".join(f"{100 * share:.1f} % at {clients}" for clients, share in other["by_clients"].items())
        console.print(f"the host's other work: {100 * other['share']:.1f} % of one core (median over the batches; "
                      f"{loads} clients); in the NameNode's fitted CPU, and on a core of its own as well "
                      f"with simnn:?other={other['share']:.2f} (a what-if: counted twice, the throughput lower)")
    edit = (data.get("source") or {}).get("edit_thread")
    if isinstance(edit, dict):
        console.print(f"edit-log thread: {edit['us_per_edit']:.1f} us an edit (edit_s), {edit['us_per_sync']:.0f} us a "
                      f"sync (inside the sync's time), from its CPU over {edit['measurements']} write measurements")
    costs = Table(title="costs per operation (us)")
    for name in ("op", "client CPU", "client wake", "client spin", "NameNode CPU", "NameNode wake", "NameNode spin",
                 "handler wake", "delay", "stall", "stall p", "slow sync p", "lock share"):
        costs.add_column(name, justify="right")
    for op, c in data["costs"].items():
        costs.add_row(op, *(f"{c[k] * 1e6:.1f}" for k in ("client_cpu_s", "client_wake_s", "client_spin_s",
                                                          "server_cpu_s", "server_wake_s", "server_spin_s",
                                                          "handler_wake_s", "delay_s", "stall_s")),
                      f"{c['stall_p']:.4f}", f"{c.get('slow_sync_p', 0.0):.4f}", f"{c['lock_share']:.2f}")
    console.print(costs)
    spreads = round_spreads((data.get("source") or {}).get("rounds"))
    fit = (data.get("source") or {}).get("fit") or {}
    if not fit:
        _warn_spreads(spreads, console, ROUNDS_BAR)
        return
    table = Table(title="the fit: measured / model at each calibration load")
    for name in ("op", "clients", "ops/s", "mean ms", "p50 ms", "p99 ms", "p99.9 ms", "NameNode CPU us"):
        table.add_column(name, justify="right")
    for op, f in fit.items():
        for load in ("light", "middle", "heavy"):
            def pair(key: str, fmt: str, f: dict = f, load: str = load) -> str:
                return f"{fmt.format(f[f'{load}_measured_{key}'])} / {fmt.format(f[f'{load}_fitted_{key}'])}"

            if f"{load}_clients" not in f:
                continue
            cpu = pair("server_cpu_us", "{:.1f}") if f"{load}_fitted_server_cpu_us" in f else "-"
            # recorded since session 64: not checked against the bar, shown for how the tail's end fits
            p999 = pair("p999_ms", "{:.3f}") if f"{load}_fitted_p999_ms" in f else "-"
            table.add_row(op if load == "light" else "", f"{f[f'{load}_clients']:.0f}", pair("ops_per_s", "{:,.0f}"),
                          pair("mean_ms", "{:.3f}"), pair("p50_ms", "{:.3f}"), pair("p99_ms", "{:.3f}"), p999, cpu)
    console.print(table)
    misses = fit_misses(fit)
    if misses:
        console.print(f"[yellow]warning:[/yellow] the model misses {len(misses)} of its own calibration's figures by more "
                      f"than {FIT_BAR:.0%} (predictions near these loads are no better): "
                      + "; ".join(m.describe() for m in misses))
    _warn_spreads(spreads, console, ROUNDS_BAR)


def _warn_spreads(spreads: list[RoundSpread], console: Console, bar: float) -> None:
    if spreads:
        console.print(f"[yellow]warning:[/yellow] the rounds of {len(spreads)} of the calibration's figures disagree "
                      f"(largest over smallest more than {bar:g}): each is their median, and no prediction from "
                      f"it is nearer than that spread; calibrate again on a quieter host: "
                      + "; ".join(s.describe() for s in spreads))


COMMANDS.append(simnn)
