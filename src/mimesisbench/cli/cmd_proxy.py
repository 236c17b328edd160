"""``mimesisbench proxy up|down|status``: network latency between the clients and a server
(a managed toxiproxy; ``mimesisbench.netproxy``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mimesisbench.errors import EnvironmentProblem
from mimesisbench.units import parse_duration_ms

COMMANDS: list[click.Command] = []

_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".mimesisbench/proxy"),
    show_default=True,
    help="Working directory of the proxy (state file, log).",
)


@click.group("proxy")
def proxy() -> None:
    """A TCP proxy with added latency in front of a server (toxiproxy, built from the Go module proxy)."""


@proxy.command("up")
@_workdir_option
@click.option("--upstream", required=True, help="HOST:PORT of the server (a NameNode's RPC port).")
@click.option("--latency", default="0ms", show_default=True, help="Added to each round trip (whole ms: 5ms, 1s).")
@click.option("--jitter", default="0ms", show_default=True, help="± this much, drawn per reply (whole ms).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port the proxy listens on [free port].")
def up(workdir: Path, upstream: str, latency: str, jitter: str, port: int | None) -> None:
    """Start the proxy, add the latency, measure what it adds, and print where to point clients."""
    from mimesisbench.netproxy.latency import LatencyProxyConfig, proxy_up

    config = LatencyProxyConfig(upstream=upstream, latency_ms=parse_duration_ms(latency, option="--latency"),
                                jitter_ms=parse_duration_ms(jitter, option="--jitter"), workdir=workdir,
                                listen_port=port)
    state = proxy_up(config)
    click.echo(f"listen     {state.listen} -> {state.upstream}")
    click.echo(f"latency    requested {state.requested_ms} ms (jitter {state.jitter_ms} ms), measured "
               f"{state.measured_ms:.2f} ms (echo round trip {state.direct_rtt_ms:.3f} ms direct, "
               f"{state.proxied_rtt_ms:.3f} ms through the proxy)")
    click.echo(f"workdir    {workdir}")
    click.echo(f"run with   --backend hdfs://{state.listen}/bench  (instead of the server's own port)")


@proxy.command("down")
@_workdir_option
def down(workdir: Path) -> None:
    """Stop the proxy this workdir's `up` started, nothing else."""
    from mimesisbench.netproxy.latency import proxy_down

    state = proxy_down(workdir)
    click.echo(f"nothing running in {workdir}" if state is None else f"stopped toxiproxy (pid {state.process.pid})")


@proxy.command("status")
@_workdir_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def status(workdir: Path, as_json: bool) -> None:
    """The running proxy: where it listens, the latency requested and measured (exit 7 when none)."""
    from mimesisbench.netproxy.latency import read_state

    state = read_state(workdir)
    if state is None:
        raise EnvironmentProblem(f"no proxy in {workdir} (no state file); start one with `mimesisbench proxy up`")
    running = state.process.is_running()
    if as_json:
        click.echo(json.dumps({**state.to_json(), "running": running}, indent=2))
        return
    click.echo(f"state      {'running' if running else 'stopped'}")
    click.echo(f"listen     {state.listen} -> {state.upstream}")
    click.echo(f"latency    requested {state.requested_ms} ms, measured {state.measured_ms:.2f} ms")


COMMANDS.append(proxy)
