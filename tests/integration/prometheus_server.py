"""A real Prometheus server (Debian package ``prometheus``, ``/usr/bin/prometheus``;
``scripts/install_test_deps.sh`` installs it) for integration tests: started on loopback with a
temporary config scraping the given targets, and the few HTTP calls the tests make to it."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

PROMETHEUS = Path("/usr/bin/prometheus")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def query(base: str, promql: str, **extra: str) -> list[dict[str, Any]]:
    path = "query_range" if "step" in extra else "query"
    qs = urllib.parse.urlencode({"query": promql, **extra})
    data = json.loads(get(f"{base}/api/v1/{path}?{qs}"))
    assert data["status"] == "success", data
    return list(data["data"]["result"])


def scalar(base: str, promql: str) -> float | None:
    result = query(base, promql)
    return float(result[0]["value"][1]) if result else None


def wait_for(what: str, predicate: Any, timeout_s: float, *procs: tuple[str, subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        for name, proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited early ({proc.returncode}) while waiting for {what}", pytrace=False)
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}", pytrace=False)


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextmanager
def prometheus_server(workdir: Path, targets: list[str], scrape: str = "500ms") -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A Prometheus scraping ``targets`` (``host:port``) every ``scrape``; yields its URL and process."""
    if not PROMETHEUS.is_file():
        pytest.fail(f"{PROMETHEUS} is missing: run scripts/install_test_deps.sh (installs Debian's prometheus)",
                    pytrace=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = workdir / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {scrape}\n"
        "  scrape_timeout: 400ms\n"
        "scrape_configs:\n"
        "  - job_name: mimesisbench\n"
        f"    static_configs:\n      - targets: {json.dumps(targets)}\n"
    )
    proc = subprocess.Popen(
        [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=(workdir / "prometheus.log").open("wb"),
    )
    try:
        wait_for("Prometheus to be ready", lambda: get(f"{base}/-/ready") is not None, 60, ("prometheus", proc))
        yield base, proc
    finally:
        stop(proc)
