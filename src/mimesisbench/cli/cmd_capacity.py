"""``mimesisbench capacity``: the largest open-loop rate a server sustains for a schedule."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from mimesisbench.cli.options import max_drift_seconds
from mimesisbench.errors import ConfigError
from mimesisbench.micro.config import OPERATIONS


@click.command("capacity")
@click.argument("schedule", type=click.Path(path_type=Path))
@click.option("--backend", "-b", required=True, help="As for run (wrappers too: rate:5000+null is a server of known capacity).")
@click.option("--start", "start_text", default="1000/s", show_default=True, help="The first target rate tried.")
@click.option("--tolerance", type=float, default=0.05, show_default=True,
              help="Stop when the last sustained and first unsustained rates are this close (relative).")
@click.option("--max-trials", type=int, default=16, show_default=True, help="Runs at most.")
@click.option("--workers", type=click.IntRange(1, 4096), default=None, help="As for run.")
@click.option("--concurrency", type=click.IntRange(1, 4096), default=None, help="As for run.")
@click.option("--max-drift", default="2s", show_default=True,
              help="As for run: a trial this far behind stops early (and is not sustained); 'off' never stops.")
@click.option("--output", "out", default="runs", show_default=True, help="Folder of the trials' run directories.")
@click.option("--bound", "bound_text", default=None,
              help="With --peak-length: a bound B on the mean response time (e.g. 50ms) for Wu's p_max.")
@click.option("--network", "network_text", default="0ms", show_default=True,
              help="The network's round-trip latency C (e.g. 0.2ms), for p_max.")
@click.option("--peak-length", "peak_text", default=None, help="The length T of a peak (e.g. 30s), for p_max.")
@click.option("--hdfs-workdir", type=click.Path(file_okay=False), default=None,
              help="As for run: the workdir of the cluster `mimesisbench hdfs up` started (its JMX, its daemons' CPU).")
@click.option("--check", is_flag=True,
              help="With --bound and --peak-length: run a peak of that length at p_max and measure its mean response time.")
@click.option("--json", "as_json", is_flag=True, help="Print the search as JSON.")
def capacity_command(schedule: Path, backend: str, start_text: str, tolerance: float, max_trials: int,
                     workers: int | None, concurrency: int | None, max_drift: str, out: str, bound_text: str | None,
                     network_text: str, peak_text: str | None, hdfs_workdir: str | None, check: bool,
                     as_json: bool) -> None:
    """Find the capacity q of BACKEND for SCHEDULE: runs at target rates (doubling from --start,
    then bisecting) until the largest rate whose lateness and latency stay stationary is known
    within --tolerance. Each trial is a run directory under --output. With --bound and
    --peak-length, also Wu et al.'s largest peak rate p_max = 2q(B-C)/T + q, and with --check the
    check that closes the loop: a peak of that length at p_max, its mean response time beside B.

    On a plain posix base every trial starts from a copy of the tree phase 1 made (kept inside
    the base); on other backends every trial after the first replays on the namespace the earlier
    ones changed (--reuse). On a managed HDFS, an experiment with [capacity] starts every trial
    from a checkpoint (docs/experiment.md)."""
    from pydantic import ValidationError

    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import run_benchmark
    from mimesisbench.schedule import load_schedule
    from mimesisbench.study.capacity_point import FILE, measure_capacity
    from mimesisbench.study.experiment_file import Capacity, first_error
    from mimesisbench.study.resets import PosixReset, resets_by_copy

    try:
        spec = Capacity(start=start_text, tolerance=tolerance, max_trials=max_trials, bound=bound_text,
                        peak_length=peak_text, network=network_text, check=check)
    except ValidationError as e:
        keys, message = first_error(e)  # a key of the table is an option here: peak_length is --peak-length
        where = "--" + "-".join(keys).replace("_", "-") + ": " if keys else ""
        raise ConfigError(where + message) from None
    base = RunConfig(schedule=str(schedule), backend=backend, out=out, workers=workers, concurrency=concurrency,
                     max_drift_s=max_drift_seconds(max_drift), hdfs_workdir=hdfs_workdir)
    done: list[Path] = []
    reset = PosixReset(backend, lambda text: click.echo(text, err=True)) if resets_by_copy(backend) else None
    key = load_schedule(schedule).namespace_hash()[:12] if reset is not None else ""

    def trial_config(folder: Path) -> RunConfig:
        if reset is not None:  # every trial from a copy of the tree phase 1 made
            return replace(base, out=str(folder), backend=reset.start_run(schedule, key))
        # the first trial as run would (a foreign non-empty base is refused), the later ones on what it left
        return replace(base, out=str(folder), reuse=bool(done))

    def one_run(config: RunConfig) -> Path:
        report = run_benchmark(config, console=None, show_progress=False)
        done.append(report.run_dir)
        return report.run_dir

    point = measure_capacity(spec, schedule, trial_config, one_run, Path(out),
                             (lambda _: None) if as_json else (lambda text: click.echo(text, err=True)))
    payload = point.to_json()
    if as_json:
        click.echo(json.dumps(payload, indent=2))
        return
    result = point.search
    if result.capacity is None:
        click.echo(f"capacity: below {result.unsustained:,.0f} ops/s (no rate tried was sustained)")
    else:
        above = f"; {result.unsustained:,.0f} was not" if result.unsustained else " (no rate tried was too much)"
        click.echo(f"capacity: {result.capacity:,.0f} ops/s sustained{above}")
    if point.p_max is not None:
        click.echo(f"p_max: {point.p_max:,.0f} ops/s for a {peak_text} peak under a {bound_text} mean")
    if point.check is not None:
        c = point.check
        measured = "no result" if c.latency_mean_s is None else f"{c.latency_mean_s * 1000:,.1f} ms"
        short = f" (the schedule ends before {peak_text})" if c.length_s < c.requested_s else ""
        click.echo(f"check: a {c.length_s:.3g} s peak{short} at {c.rate:,.0f} ops/s ({c.offered:,.0f} offered): mean "
                   f"response time {measured} against the bound {bound_text} ({c.status}, {c.run_dir})")
    click.echo(f"written: {Path(out) / FILE}")


@click.command("client-sweep")
@click.argument("op", type=click.Choice(OPERATIONS))
@click.option("--backend", "-b", required=True, help="As for micro.")
@click.option("--files", "-n", type=int, required=True, help="Operations timed per point (as micro's --files).")
@click.option("--clients", "clients_text", default="1,2,4,8,16,32", show_default=True,
              help="Client counts (closed-loop), comma-separated.")
@click.option("--repeat", type=int, default=2, show_default=True, help="Runs of each client count.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the run order and the bootstrap.")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None, help="Write the sweep as JSON here too.")
@click.option("--report", "report_dir", type=click.Path(path_type=Path), default=None,
              help="Write an HTML page of the sweep and its fitted models here (index.html, figures/).")
@click.option("--json", "as_json", is_flag=True, help="Print the sweep as JSON.")
def client_sweep_command(op: str, backend: str, files: int, clients_text: str, repeat: int, seed: int,
                         output: Path | None, report_dir: Path | None, as_json: bool) -> None:
    """Time OP (as micro) at each client count, --repeat times in a random order, and fit the
    capacity models: Wu et al.'s response time R = a x ln x in the clients x (with R^2, as their
    Table 6) and the Universal Scalability Law of the throughput (contention sigma, coherency
    kappa, the peak concurrency and the ceiling, with bootstrap 95 % intervals)."""
    from mimesisbench.atomic import atomic_write_text
    from mimesisbench.micro.bench import run_micro
    from mimesisbench.micro.config import MicroConfig
    from mimesisbench.study.client_sweep import sweep_clients

    try:
        clients = [int(c) for c in clients_text.split(",") if c.strip()]
    except ValueError:
        raise ConfigError(f"--clients: cannot read {clients_text!r} (client counts, e.g. 1,2,4,8)") from None

    def measure(n: int) -> tuple[float, float, int]:
        result = run_micro(MicroConfig(op=op, files=files, backend=backend, concurrency=n))
        s = result.summary
        if not as_json:
            click.echo(f"  {n:>6} clients: {s['ops_per_s']:>12,.0f} ops/s, mean {s['latency_ms']['mean']:.3f} ms", err=True)
        return float(s["ops_per_s"]), float(s["latency_ms"]["mean"]), int(s["errors"])

    sweep = sweep_clients(measure, clients, repeat, seed)
    payload = {"op": op, "backend": backend, "files": files, **sweep.to_json()}
    if output is not None:
        atomic_write_text(output, json.dumps(payload, indent=2) + "\n")
    if report_dir is not None:
        from mimesisbench.study.sweep_report import build_sweep_report

        page = build_sweep_report(sweep, {"operation": op, "backend": backend, "operations per point": f"{files:,}",
                                          "repeats": str(repeat), "seed": str(seed)}, report_dir)
        if not as_json:
            click.echo(f"wrote {page}", err=True)
    if as_json:
        click.echo(json.dumps(payload, indent=2))
        return
    if sweep.wu is not None:
        w = sweep.wu
        click.echo(f"Wu: mean response time = {w.a:.4g} x ln x ms [{w.ci95[0]:.4g}, {w.ci95[1]:.4g}], R^2 {w.r2:.3f}")
    if sweep.usl is not None:
        u = sweep.usl
        click.echo(f"USL: lambda {u.lam:,.1f} ops/s per client, sigma {u.sigma:.4f}, kappa {u.kappa:.3g}; peak at "
                   f"{u.peak_concurrency:,.1f} clients, ceiling {u.ceiling:,.0f} ops/s; R^2 {u.r2:.3f}")
    for note in sweep.notes:
        click.echo(f"note: {note}")


COMMANDS: list[click.Command] = [capacity_command, client_sweep_command]
