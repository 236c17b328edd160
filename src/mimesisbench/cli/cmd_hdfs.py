"""``mimesisbench hdfs up|down|status|fetch|save-namespace|dump-image``: a local single-node HDFS."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mimesisbench.cli.options import HiddenAliasOption
from mimesisbench.errors import ConfigError, EnvironmentProblem
from mimesisbench.hdfs.cgroups import LimitGroup, ResourceLimits
from mimesisbench.hdfs.cgroups import probe as probe_cgroups
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import DEFAULT_WORKDIR, LocalHdfsConfig, parse_settings
from mimesisbench.hdfs.jars import DEFAULT_HADOOP_VERSION, ensure_jars

COMMANDS: list[click.Command] = []

_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_WORKDIR,
    show_default=True,
    help="Working directory of the cluster (config, name/data dirs, logs, state file).",
)
_version_option = click.option(
    "--hadoop-version",
    default=DEFAULT_HADOOP_VERSION,
    show_default=True,
    help="Hadoop version to fetch from Maven Central.",
)


def _cluster(workdir: Path) -> LocalHdfs:
    return LocalHdfs(LocalHdfsConfig(workdir=workdir))


@click.group("hdfs")
def hdfs() -> None:
    """A managed single-node HDFS (NameNode + DataNode on 127.0.0.1) from Maven Central jars."""


@hdfs.command("up")
@_workdir_option
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="NameNode RPC port [free port].")
@click.option(
    "--http-port", type=click.IntRange(1, 65535), default=None, help="NameNode HTTP port [free port]."
)
@click.option("--heap", default="1g", show_default=True, help="NameNode JVM heap (-Xmx/-Xms).")
@click.option("--handler-count", type=click.IntRange(1), default=None, help="dfs.namenode.handler.count.")
@click.option(
    "--fslock-fair/--no-fslock-fair", default=None, help="dfs.namenode.fslock.fair [Hadoop default]."
)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Any hdfs-site.xml setting.")
@click.option("--cpu-quota", type=float, default=None, metavar="CORES",
              help="Run each daemon under a CPU quota of this many cores (cgroups; exit 7 where not possible).")
@click.option("--io-read-bps", default=None, metavar="BYTES", help="Throttle each daemon's reads (e.g. 50M; cgroups).")
@click.option("--io-write-bps", default=None, metavar="BYTES", help="Throttle each daemon's writes (e.g. 50M; cgroups).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Seconds to wait for the cluster to be ready.",
)
@_version_option
def up(
    workdir: Path,
    port: int | None,
    http_port: int | None,
    heap: str,
    handler_count: int | None,
    fslock_fair: bool | None,
    settings: tuple[str, ...],
    cpu_quota: float | None,
    io_read_bps: str | None,
    io_write_bps: str | None,
    timeout: float,
    hadoop_version: str,
) -> None:
    """Start the cluster (fetching jars and formatting on first use) and wait until it is ready."""
    config = LocalHdfsConfig(
        workdir=workdir,
        rpc_port=port,
        http_port=http_port,
        heap=heap,
        handler_count=handler_count,
        fslock_fair=fslock_fair,
        extra=parse_settings(settings),
        hadoop_version=hadoop_version,
        startup_timeout_s=timeout,
        limits=ResourceLimits(cpu_quota, _bytes(io_read_bps, "--io-read-bps"), _bytes(io_write_bps, "--io-write-bps")),
    )
    cluster = LocalHdfs(config).up()
    click.echo(f"url        {cluster.url}")
    click.echo(f"audit log  {cluster.audit_log}")
    click.echo(f"jmx        {cluster.jmx_url}")
    click.echo(f"web        {cluster.http_url}")
    click.echo(f"workdir    {cluster.workdir}")
    click.echo(f"run with   --backend {cluster.url}/bench --jmx {cluster.jmx_servlet_url}")
    for group in cluster.limit_groups():
        click.echo(f"limits     {group.name}: {_describe_limits(group)}")


@hdfs.command("down")
@_workdir_option
def down(workdir: Path) -> None:
    """Stop the processes this workdir's `up` started (SIGTERM, then SIGKILL), nothing else."""
    stopped = _cluster(workdir).down()
    if not stopped:
        click.echo(f"nothing running in {workdir}")
    for record in stopped:
        click.echo(f"stopped {record.role} (pid {record.pid})")


@hdfs.command("status")
@_workdir_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def status(workdir: Path, as_json: bool) -> None:
    """Running or stopped, where to reach it, which processes (exit 7 when no cluster was ever
    started in WORKDIR)."""
    cluster = _cluster(workdir)
    if not cluster.has_state():
        raise EnvironmentProblem(
            f"no HDFS cluster in {cluster.workdir} (no state file); start one with `mimesisbench hdfs up --workdir {workdir}`"
        )
    report = cluster.status()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    click.echo(f"state      {'running' if report.running else 'stopped'}")
    click.echo(f"workdir    {report.workdir}")
    if report.url:
        click.echo(f"url        {report.url}")
        click.echo(f"jmx        {report.jmx_url}")
    click.echo(f"audit log  {report.audit_log}")
    if report.health is not None:
        click.echo(f"namenode   {report.health.describe()}")
    for role, pid, alive in report.processes:
        click.echo(f"{role:<10} pid {pid} {'running' if alive else 'gone'}")
    for group in cluster.limit_groups():
        click.echo(f"limits     {group.name}: {_describe_limits(group)}")


@hdfs.command("cgroups")
def cgroups_command() -> None:
    """What this machine lets `hdfs up` limit (CPU quota, I/O throttle) and how (exit 7: neither)."""
    support = probe_cgroups()
    click.echo(support.describe())
    if support.cpu is None and support.io is None:
        raise EnvironmentProblem("no cgroup controller to limit the daemons with: " + "; ".join(support.missing))


def _bytes(text: str | None, option: str) -> int | None:
    """``50M`` -> 52,428,800 (K, M, G: powers of 1024); a bare number is bytes."""
    if text is None:
        return None
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number, unit = (text[:-1], text[-1].upper()) if text and text[-1].upper() in "KMG" else (text, "")
    try:
        return int(float(number) * units[unit])
    except ValueError:
        raise ConfigError(f"{option}: {text!r} is not a number of bytes (e.g. 50M)") from None


def _describe_limits(group: LimitGroup) -> str:
    limits = group.limits
    parts = []
    if limits.cpu_cores is not None:
        parts.append(f"CPU {limits.cpu_cores:g} cores ({group.cpu_version})")
    for name, value in (("read", limits.read_bps), ("write", limits.write_bps)):
        if value is not None:
            parts.append(f"{name} {value / (1 << 20):g} MiB/s on {group.device} ({group.io_version})")
    stat = group.cpu_stat()
    if stat.get("nr_periods"):
        parts.append(f"throttled in {stat.get('nr_throttled', 0):,} of {stat['nr_periods']:,} periods")
    return ", ".join(parts)


@hdfs.command("fetch")
@_version_option
def fetch(hadoop_version: str) -> None:
    """Download the Hadoop jars into the cache (no cluster is started)."""
    jars = ensure_jars(hadoop_version)
    click.echo(f"{len(jars.jars())} jars, {jars.size_bytes() / 1e6:.1f} MB in {jars.lib}")


@hdfs.command("save-namespace")
@_workdir_option
def save_namespace(workdir: Path) -> None:
    """Checkpoint the namespace into a new fsimage (safe mode enter, saveNamespace, leave)."""
    image = _cluster(workdir).save_namespace()
    click.echo(str(image))


@hdfs.command("dump-image")
@_workdir_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["delimited", "xml"], case_sensitive=False),
    default="delimited",
    show_default=True,
    help="Offline image viewer processor.",
)
@click.option(
    "-o",
    "--output",
    cls=HiddenAliasOption,
    hidden_aliases=("--out",),
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write.",
)
def dump_image(workdir: Path, fmt: str, output: Path) -> None:
    """Write the newest fsimage as Delimited (TSV) or XML with the offline image viewer."""
    written = _cluster(workdir).dump_image(fmt, output)
    click.echo(str(written))


COMMANDS.append(hdfs)
