"""A managed latency proxy: ``mimesisbench proxy up --upstream HOST:PORT --latency 5ms``.

One toxiproxy server (``toxiproxy``) listens on a free 127.0.0.1 port and forwards to the
upstream (a NameNode's RPC port); a latency toxic on its downstream stream delays every reply,
so each round trip through it takes the requested latency longer (toxiproxy takes whole
milliseconds, ± an optional jitter). Clients are pointed at the proxy's port instead of the
server's: ``hdfs://127.0.0.1:<listen>/base``.

What was asked and what it gives are both recorded: ``up`` measures the added round-trip time
with an echo probe (a TCP echo server of this process, reached directly and through a second
proxy of the same server carrying the same toxic; the median of ``PROBE_ROUND_TRIPS`` of each)
and writes both into the state file, which ``status`` prints and a run whose backend goes
through the proxy copies into its manifest (``network_proxy``).

Like the managed HDFS, the proxy is a detached daemon whose pid and create time are in the
state file (``<workdir>/state.json``), so ``down`` stops exactly it.
"""

from __future__ import annotations

import json
import socket
import socketserver
import statistics
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import BackendError, ConfigError
from mimesisbench.hdfs.ports import free_port
from mimesisbench.hdfs.processes import ProcessRecord, read_state_file, start_daemon, stop
from mimesisbench.netproxy.toxiproxy import DEFAULT_VERSION, ToxiproxyApi, ensure_toxiproxy

DEFAULT_WORKDIR = Path(".mimesisbench/proxy")
STATE_FILE = "state.json"
HOST = "127.0.0.1"
PROXY_NAME = "mimesisbench"
PROBE_NAME = "mimesisbench_probe"
PROBE_ROUND_TRIPS = 31
READY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class LatencyProxyConfig:
    """What ``proxy up`` asks for."""

    upstream: str  # host:port
    latency_ms: int
    jitter_ms: int = 0
    workdir: Path = DEFAULT_WORKDIR
    listen_port: int | None = None
    version: str = DEFAULT_VERSION

    def __post_init__(self) -> None:
        host, sep, port = self.upstream.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"--upstream: {self.upstream!r} is not HOST:PORT")
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise ConfigError("--latency and --jitter must be >= 0")


@dataclass(frozen=True)
class ProxyState:
    """A running proxy, as the state file records it."""

    process: ProcessRecord
    api_port: int
    listen: str
    upstream: str
    requested_ms: int
    jitter_ms: int
    version: str
    direct_rtt_ms: float
    proxied_rtt_ms: float

    @property
    def measured_ms(self) -> float:
        """The added round-trip time the echo probe measured."""
        return self.proxied_rtt_ms - self.direct_rtt_ms

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["process"] = self.process.to_json()
        out["measured_ms"] = round(self.measured_ms, 3)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProxyState:
        fields = {k: data[k] for k in ("api_port", "listen", "upstream", "requested_ms", "jitter_ms", "version",
                                      "direct_rtt_ms", "proxied_rtt_ms")}
        return cls(process=ProcessRecord.from_json(data["process"]), **fields)

    def manifest_entry(self) -> dict[str, Any]:
        """What a run through this proxy records (``network_proxy``)."""
        return {"tool": f"toxiproxy {self.version}", "listen": self.listen, "upstream": self.upstream,
                "latency_requested_ms": self.requested_ms, "jitter_ms": self.jitter_ms,
                "latency_measured_ms": round(self.measured_ms, 3), "measured_by": "echo probe, median of "
                f"{PROBE_ROUND_TRIPS} round trips through the proxy minus direct"}


def read_state(workdir: Path) -> ProxyState | None:
    return read_state_file(workdir / STATE_FILE, ProxyState.from_json, "proxy state file")


def running_state(workdir: Path) -> ProxyState | None:
    """The state of the proxy running from ``workdir``, None when there is none."""
    state = read_state(workdir)
    return state if state is not None and state.process.is_running() else None


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(64):
            self.request.sendall(data)


def _round_trips(port: int, n: int) -> float:
    """Median round-trip time (ms) of one byte to ``port`` and back, over ``n`` trips."""
    times = []
    with socket.create_connection((HOST, port), timeout=10.0) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n + 1):
            t0 = time.perf_counter()
            sock.sendall(b"x")
            if sock.recv(1) != b"x":
                raise BackendError("the latency probe's echo came back wrong")
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[1:])  # the first trip also sets up the proxy's upstream connection


def measure_added_ms(api: ToxiproxyApi, latency_ms: int, jitter_ms: int) -> tuple[float, float]:
    """(direct, proxied) median round-trip times (ms) of an echo server, the proxied one through
    a probe proxy of ``api``'s server carrying the same toxic."""
    server = socketserver.ThreadingTCPServer((HOST, 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="proxy-echo", daemon=True)
    thread.start()
    try:
        echo_port = int(server.server_address[1])
        probe = api.create_proxy(PROBE_NAME, f"{HOST}:0", f"{HOST}:{echo_port}")
        try:
            if latency_ms or jitter_ms:
                api.add_latency(PROBE_NAME, latency_ms, jitter_ms, "downstream")
            direct = _round_trips(echo_port, PROBE_ROUND_TRIPS)
            proxied = _round_trips(int(str(probe["listen"]).rpartition(":")[2]), PROBE_ROUND_TRIPS)
        finally:
            api._call("DELETE", f"/proxies/{PROBE_NAME}")
    finally:
        server.shutdown()
        server.server_close()
    return direct, proxied


def _wait_ready(api: ToxiproxyApi, log: Path, record: ProcessRecord) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if not record.is_running():
            raise BackendError(f"toxiproxy exited at start; see {log}")
        try:
            api.version()
            return
        except OSError:
            time.sleep(0.1)
    raise BackendError(f"toxiproxy's API did not answer within {READY_TIMEOUT_S:.0f} s; see {log}")


def proxy_up(config: LatencyProxyConfig) -> ProxyState:
    """Start the proxy (building toxiproxy on first use), add the toxic, measure, record."""
    workdir = config.workdir
    running = running_state(workdir)
    if running is not None:
        raise BackendError(f"a proxy already runs from {workdir} ({running.listen} -> {running.upstream}); "
                           "`mimesisbench proxy down` first")
    binary = ensure_toxiproxy(config.version)
    workdir.mkdir(parents=True, exist_ok=True)
    api = ToxiproxyApi(free_port())
    log = workdir / "toxiproxy.log"
    started = start_daemon("toxiproxy", [str(binary), "-host", HOST, "-port", str(api.port)], log, workdir)
    try:
        _wait_ready(api, log, started.record)
        listen = f"{HOST}:{config.listen_port if config.listen_port is not None else 0}"
        made = api.create_proxy(PROXY_NAME, listen, config.upstream)
        if config.latency_ms or config.jitter_ms:
            api.add_latency(PROXY_NAME, config.latency_ms, config.jitter_ms, "downstream")
        direct, proxied = measure_added_ms(api, config.latency_ms, config.jitter_ms)
        state = ProxyState(started.record, api.port, str(made["listen"]), config.upstream, config.latency_ms,
                           config.jitter_ms, config.version, round(direct, 4), round(proxied, 4))
        atomic_write_text(workdir / STATE_FILE, json.dumps(state.to_json(), indent=2) + "\n")
    except BaseException:
        stop([started.record], grace_s=5.0)
        started.popen.poll()
        raise
    return state


def proxy_down(workdir: Path) -> ProxyState | None:
    """Stop the proxy started from ``workdir`` (None when there was none) and forget it."""
    state = read_state(workdir)
    if state is None:
        return None
    stop([state.process], grace_s=5.0)
    (workdir / STATE_FILE).unlink(missing_ok=True)
    return state


def proxy_for_backend(backend_url: str, workdir: Path = DEFAULT_WORKDIR) -> ProxyState | None:
    """The running managed proxy a backend URL goes through (its host:port is the proxy's
    listening address), else None."""
    parts = urllib.parse.urlsplit(backend_url.strip())
    if not parts.hostname or parts.port is None:
        return None
    state = running_state(workdir)
    if state is None:
        return None
    host, _, port = state.listen.rpartition(":")
    local = {"127.0.0.1", "localhost"}
    same_host = parts.hostname == host or (parts.hostname in local and host in local)
    return state if same_host and parts.port == int(port) else None
