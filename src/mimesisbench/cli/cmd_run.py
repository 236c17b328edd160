"""``mimesisbench run`` (replay a schedule against a backend) and ``mimesisbench demo``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click
from rich.console import Console

from mimesisbench.cli.options import max_drift_seconds, output_option, table_console
from mimesisbench.errors import ConfigError
from mimesisbench.run.config import MAX_CONCURRENCY, MAX_WORKERS
from mimesisbench.units import parse_duration_ms, parse_rate

#: the demo replays the built-in profile accelerated to about this long
DEMO_TARGET_MS = 60_000


def _rate(text: str) -> float:
    """``--rate``: operations per second, as ``5000``, ``5000/s`` or ``2.5k/s``."""
    return parse_rate(text, option="--rate")


def _report(console: Console, report: object) -> None:
    from mimesisbench.results.table import data_table, summary_table
    from mimesisbench.run.coordinator import RunReport

    assert isinstance(report, RunReport)
    console.print(summary_table(report.summary))
    data = data_table(report.summary)
    if data is not None:
        console.print(data)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    console.print(f"run directory: [bold]{report.run_dir}[/]")


@click.command("run")
@click.argument("schedule", type=click.Path(path_type=Path))
@click.option("--backend", "-b", required=True, help="posix:/dir, hdfs://host:port/dir, memory, null or simnn: (a simulated NameNode, docs/simnn.md); wrappers in front: delay:2ms+..., rate:5000+..., fail:0.01+... (docs/run.md).")
@click.option(
    "--workers",
    type=click.IntRange(1, MAX_WORKERS),
    default=None,
    help=f"Split all types over N worker processes, 1..{MAX_WORKERS} (default: one per file type).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, MAX_CONCURRENCY),
    default=None,
    help=f"Lanes (threads/tasks) per worker, 1..{MAX_CONCURRENCY} (default: the backend's).",
)
@output_option("out", default="runs", show_default=True, help="Folder that receives the run directory.")
@click.option("--max-drift", default="2s", show_default=True, help="Stop when a worker is this far behind (or 'off').")
@click.option("--reuse", is_flag=True, help="Work in a non-empty base directory not created by mimesisbench.")
@click.option("--skip-phase1", is_flag=True, help="Assume the namespace exists (do not build it).")
@click.option("--phase1-threads", type=click.IntRange(1, 4096), default=None,
              help="Threads that build the namespace (default: the backend's; 64 for hdfs, 4 otherwise).")
@click.option(
    "--time-scale",
    type=float,
    default=None,
    help="Multiply schedule times at replay: 0.5 is twice as fast, 0 as fast as possible (no pacing, no drift "
    "control). Default: 1 (real time).",
)
@click.option(
    "--rate",
    "rate_text",
    default=None,
    help="Target mean rate instead of --time-scale, e.g. 5000/s: the schedule's times are scaled so that its "
    "operations are offered at that mean rate (the scale used is recorded in config.json).",
)
@click.option(
    "--as-fast-as-possible",
    "afap",
    is_flag=True,
    help="Replay in schedule order as fast as the lanes can, closed loop (as --time-scale 0): never stopped for "
    "drift, latency is service time, the throughput reached is the figure (the paper's c = 0).",
)
@click.option(
    "--engine",
    default="local",
    show_default=True,
    help="Where workers run: local, ray (embedded), ray:auto (RAY_ADDRESS), ray:HOST:PORT or ray://HOST:PORT.",
)
@click.option("--spread", is_flag=True, help="Ray: one worker per node, never two on one node (fails if too few nodes).")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve live Prometheus metrics (mimesisbench_*) at http://ADDR:PORT/metrics during the run (0: any free port).",
)
@click.option("--metrics-addr", default="127.0.0.1", show_default=True, help="Address the metrics endpoint listens on.")
@click.option(
    "--metrics-linger", default="0s", show_default=True, help="Keep serving metrics this long after the run (e.g. 2s)."
)
@click.option(
    "--jmx",
    default=None,
    help="NameNode JMX URL sampled into server_timeseries.parquet (default for hdfs:// backends: the "
    "cluster `mimesisbench hdfs up` started in --hdfs-workdir when the backend names it, else "
    "http://HOST:9870/jmx; 'off' to disable).",
)
@click.option("--jmx-interval", default="1s", show_default=True, help="JMX sampling interval.")
@click.option(
    "--hdfs-workdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Workdir of a cluster started by `mimesisbench hdfs up` (default: its default), for the JMX URL.",
)
@click.option(
    "--proxy-workdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Workdir of a latency proxy started by `mimesisbench proxy up` (default: its default), recorded "
    "in the manifest when the backend goes through it.",
)
@click.option(
    "--data-job",
    "data_jobs",
    multiple=True,
    metavar="LAYOUT[:key=value,...]",
    help="An IOR-like data job beside the replay, from the same barrier (repeatable): n-n, n-1-segmented or "
    "n-1-strided, with tasks=, block=, transfer=, segments=, ops=write+read, fsync=, passes=, keep=, name= "
    "(docs/run.md). Its calls go to data_calls.parquet.",
)
@click.option("--no-replay", is_flag=True, help="Run the data jobs alone, for as long as the replay would last.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def run_command(
    schedule: Path,
    backend: str,
    workers: int | None,
    concurrency: int | None,
    out: str,
    max_drift: str,
    reuse: bool,
    skip_phase1: bool,
    phase1_threads: int | None,
    time_scale: float | None,
    rate_text: str | None,
    afap: bool,
    engine: str,
    spread: bool,
    metrics_port: int | None,
    metrics_addr: str,
    metrics_linger: str,
    jmx: str | None,
    jmx_interval: str,
    hdfs_workdir: str | None,
    proxy_workdir: str | None,
    data_jobs: tuple[str, ...],
    no_replay: bool,
    quiet: bool,
) -> None:
    """Replay SCHEDULE against a backend: phase 1 builds the namespace, phase 2 replays in real time."""
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import raise_if_incomplete, run_benchmark

    if rate_text is not None and time_scale is not None:
        raise ConfigError("give --rate or --time-scale, not both (--rate sets the time scale)")
    if afap and (rate_text is not None or time_scale is not None):
        raise ConfigError("--as-fast-as-possible sets the time scale to 0: give it without --rate or --time-scale")
    if afap:
        time_scale = 0.0
    config = RunConfig(
        schedule=str(schedule),
        backend=backend,
        out=out,
        workers=workers,
        concurrency=concurrency,
        max_drift_s=max_drift_seconds(max_drift),
        time_scale=1.0 if time_scale is None else time_scale,
        rate=None if rate_text is None else _rate(rate_text),
        reuse=reuse,
        skip_phase1=skip_phase1,
        phase1_threads=phase1_threads,
        engine=engine,
        spread=spread,
        metrics_port=metrics_port,
        metrics_addr=metrics_addr,
        metrics_linger_s=parse_duration_ms(metrics_linger, option="--metrics-linger") / 1000.0,
        jmx=jmx,
        jmx_interval_s=parse_duration_ms(jmx_interval, option="--jmx-interval") / 1000.0,
        hdfs_workdir=hdfs_workdir,
        proxy_workdir=proxy_workdir,
        data_jobs=data_jobs,
        replay=not no_replay,
    )
    console = table_console()
    report = run_benchmark(config, console=console, show_progress=not quiet)
    _report(console, report)
    raise_if_incomplete(report)


def demo_time_scale(window_ms: int, target_ms: int = DEMO_TARGET_MS) -> float:
    """The acceleration that brings a profile's window to about ``target_ms`` (never slower)."""
    if window_ms <= 0:
        raise ConfigError("the demo profile has no window")
    return min(1.0, target_ms / window_ms)


@click.command("demo")
@output_option("out", default="runs", show_default=True, help="Folder that receives the run directory.")
@click.option("--keep", is_flag=True, help="Keep the temporary base directory and schedule afterwards.")
@click.option("--seed", type=int, default=2014, show_default=True, help="Seed of the generated schedule.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def demo_command(out: str, keep: bool, seed: int, quiet: bool) -> None:
    """Zero configuration: the built-in demo profile, about a minute, on a temporary local directory."""
    import json
    from importlib import resources

    from mimesisbench.profile.io import profile_from_dict
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import raise_if_incomplete, run_benchmark

    console = table_console()
    text = resources.files("mimesisbench").joinpath("data/demo_profile.json").read_text(encoding="utf-8")
    profile = profile_from_dict(json.loads(text), "demo_profile.json (built in)")
    scale = demo_time_scale(profile.window_ms)
    work = Path(tempfile.mkdtemp(prefix="mimesisbench-demo-"))
    try:
        from mimesisbench.synth.options import GenerateOptions
        from mimesisbench.synth.pipeline import generate_to

        console.print(f"generating a schedule from the demo profile (time scale {scale:g}, seed {seed}) ...")
        schedule_dir, _, manifest = generate_to(profile, work / "schedule", GenerateOptions(time_scale=scale), seed)
        counts = manifest.get("counts")
        events = counts.get("events", "?") if isinstance(counts, dict) else "?"
        console.print(f"schedule: {events} events in {schedule_dir}")
        config = RunConfig(schedule=str(schedule_dir), backend=f"posix:{work / 'base'}", out=out)
        report = run_benchmark(config, console=console, show_progress=not quiet)
        _report(console, report)
        if keep:
            console.print(f"kept the base directory and schedule in {work}")
        raise_if_incomplete(report)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


COMMANDS: list[click.Command] = [run_command, demo_command]
