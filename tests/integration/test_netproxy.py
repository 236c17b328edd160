"""The managed latency proxy (toxiproxy built from the Go module proxy) in front of real servers:
a TCP echo server, then the managed NameNode with a benchmark run through it.

Latency is asserted as a lower bound (a loaded machine only adds to it); the figure, requested
against measured, is printed by ``bench/bench_netproxy.py``.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hdfs_native import Client

from mimesisbench.cli.main import main
from mimesisbench.errors import BackendError, ConfigError
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.netproxy.latency import (
    LatencyProxyConfig,
    ProxyState,
    proxy_down,
    proxy_for_backend,
    proxy_up,
    read_state,
)
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(64):
            self.request.sendall(data)


@pytest.fixture()
def echo_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _rtt_ms(port: int, n: int = 21) -> float:
    times = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            t0 = time.perf_counter()
            sock.sendall(b"y")
            assert sock.recv(1) == b"y"
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def test_the_proxy_adds_its_latency_and_records_both_figures(tmp_path: Path, echo_port: int) -> None:
    workdir = tmp_path / "proxy"
    state = proxy_up(LatencyProxyConfig(upstream=f"127.0.0.1:{echo_port}", latency_ms=15, workdir=workdir))
    try:
        assert state.process.is_running() and read_state(workdir) == state
        assert state.requested_ms == 15 and state.measured_ms >= 14.0  # a busy machine only adds
        assert _rtt_ms(int(state.listen.rpartition(":")[2])) >= 14.0 > _rtt_ms(echo_port)
        with pytest.raises(BackendError, match="already runs"):
            proxy_up(LatencyProxyConfig(upstream=f"127.0.0.1:{echo_port}", latency_ms=1, workdir=workdir))
        assert proxy_for_backend(f"hdfs://localhost:{state.listen.rpartition(':')[2]}/x", workdir) == state
        assert proxy_for_backend(f"hdfs://127.0.0.1:{echo_port}/x", workdir) is None
    finally:
        assert proxy_down(workdir) == state
    assert not state.process.is_running() and read_state(workdir) is None
    assert proxy_down(workdir) is None


def test_the_cli_refuses_what_it_cannot_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workdir = str(tmp_path / "p")
    for argv, code in ((["proxy", "status", "--workdir", workdir], 7),
                       (["proxy", "up", "--upstream", "nohost", "--workdir", workdir], 2)):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == code
    assert "not HOST:PORT" in capsys.readouterr().err
    with pytest.raises(ConfigError):
        LatencyProxyConfig(upstream="127.0.0.1:80", latency_ms=-1)
    assert not os.path.exists(workdir)  # nothing started, nothing written


def test_a_run_through_the_proxy_to_the_namenode(local_hdfs: LocalHdfs, tmp_path: Path) -> None:
    workdir = tmp_path / "proxy"
    state: ProxyState = proxy_up(LatencyProxyConfig(upstream=f"127.0.0.1:{local_hdfs.rpc_port}", latency_ms=8,
                                                    workdir=workdir))
    base = f"/proxy-tests/{uuid.uuid4().hex[:8]}"
    try:
        schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=60,
                                         phases=(OpCode.GETFILEINFO, OpCode.OPEN), rate_per_s=100.0)
        config = RunConfig(schedule=str(schedule), backend=f"hdfs://{state.listen}{base}", out=str(tmp_path / "runs"),
                           proxy_workdir=str(workdir), jmx="off")
        report = run_benchmark(config, show_progress=False)
        assert report.complete, report.message
        summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
        manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
        assert summary["operations_failed"] == 0
        assert summary["service_ms"]["p50"] >= 7.5  # every RPC's reply waited its 8 ms
        entry = manifest["network_proxy"]
        assert entry["latency_requested_ms"] == 8 and entry["latency_measured_ms"] >= 7.5
        assert entry["upstream"] == f"127.0.0.1:{local_hdfs.rpc_port}"
    finally:
        proxy_down(workdir)
        Client(local_hdfs.url).delete("/proxy-tests", True)
