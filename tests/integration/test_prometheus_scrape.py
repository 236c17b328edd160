"""A real Prometheus server scrapes ``mimesisbench run --metrics-port`` during a paced run.

Prometheus (Debian package ``prometheus``, ``/usr/bin/prometheus``; ``scripts/install_test_deps.sh``
installs it) runs as a subprocess on loopback with a temporary config scraping the benchmark every
0.5 s. The run replays a ~12 s schedule on the null backend in real time and keeps its endpoint up
afterwards (``--metrics-linger``); the test asks Prometheus's HTTP API for what it stored and
compares it with the run's summary.json.
"""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_metrics_dashboard import dashboard_exprs

from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

PROMETHEUS = Path("/usr/bin/prometheus")
SCRAPE = "500ms"
LINGER_S = 6  # the final scrapes (every 0.5 s) happen while the endpoint lingers

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def _query(base: str, promql: str, **extra: str) -> list[dict[str, Any]]:
    path = "query_range" if "step" in extra else "query"
    qs = urllib.parse.urlencode({"query": promql, **extra})
    data = json.loads(_get(f"{base}/api/v1/{path}?{qs}"))
    assert data["status"] == "success", data
    return list(data["data"]["result"])


def _scalar(base: str, promql: str) -> float | None:
    result = _query(base, promql)
    return float(result[0]["value"][1]) if result else None


def _wait(what: str, predicate: Any, timeout_s: float, *procs: tuple[str, subprocess.Popen[bytes]]) -> None:
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


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_prometheus_scrapes_a_running_benchmark(tmp_path: Path) -> None:
    if not PROMETHEUS.is_file():
        pytest.fail(f"{PROMETHEUS} is missing: run scripts/install_test_deps.sh (installs Debian's prometheus)",
                    pytrace=False)
    # 12,000 events at 1,000/s (Poisson) over two types: about 12 s in real time
    schedule = write_phased_schedule(
        tmp_path / "schedule", types=2, files_per_type=3000, phases=(OpCode.OPEN, OpCode.GETFILEINFO), rate_per_s=1000.0
    )
    metrics_port, prom_port = _free_port(), _free_port()
    prom = f"http://127.0.0.1:{prom_port}"
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {SCRAPE}\n"
        "  scrape_timeout: 400ms\n"
        "scrape_configs:\n"
        "  - job_name: mimesisbench\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    out = tmp_path / "runs"
    prometheus: subprocess.Popen[bytes] | None = None
    bench: subprocess.Popen[bytes] | None = None
    try:
        prometheus = subprocess.Popen(
            [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("wb"),
        )
        _wait("Prometheus to be ready", lambda: _get(f"{prom}/-/ready") is not None, 60, ("prometheus", prometheus))
        bench = subprocess.Popen(
            [sys.executable, "-m", "mimesisbench", "run", str(schedule), "--backend", "null", "--out", str(out),
             "--metrics-port", str(metrics_port), "--metrics-linger", f"{LINGER_S}s", "-q"],
            stdout=(tmp_path / "run.log").open("wb"), stderr=subprocess.STDOUT,
        )
        _wait("the run's summary.json", lambda: any(out.glob("*/summary.json")), 120,
              ("prometheus", prometheus), ("mimesisbench run", bench))
        run_dir = next(out.glob("*/summary.json")).parent
        run_id = run_dir.name
        summary = json.loads((run_dir / "summary.json").read_text())
        sel = f'run_id="{run_id}"'
        # the endpoint lingers: wait for a scrape taken after the run was marked done
        _wait("a scrape of the finished run",
              lambda: _scalar(prom, f'mimesisbench_phase{{{sel},phase="done"}}') == 1.0, 30,
              ("prometheus", prometheus), ("mimesisbench run", bench))

        total = _scalar(prom, f"sum(mimesisbench_operations_total{{{sel}}})")
        assert summary["complete"] is True
        assert total == summary["operations_issued"] == 12_000
        assert _scalar(prom, f"sum(mimesisbench_latency_seconds_count{{{sel}}})") == summary["operations_issued"]
        failed = _scalar(prom, f'sum(mimesisbench_operations_total{{{sel},outcome!="ok"}})')
        assert (failed or 0.0) == summary["operations_failed"]
        by_op = {r["metric"]["op"]: float(r["value"][1])
                 for r in _query(prom, f"sum by (op) (mimesisbench_operations_total{{{sel}}})")}
        assert by_op == {op: float(stats["issued"]) for op, stats in summary["operations"].items()}
        p99 = _scalar(prom, f"histogram_quantile(0.99, sum by (le) (mimesisbench_latency_seconds_bucket{{{sel}}}))")
        assert p99 is not None and math.isfinite(p99) and p99 > 0

        # it was live: several scrapes during the replay saw partial counts
        now = time.time()
        series = _query(prom, f"sum(mimesisbench_operations_total{{{sel}}})",
                        start=str(now - 120), end=str(now), step="0.5")
        values = [float(v) for _, v in series[0]["values"]]
        partial = {v for v in values if 0 < v < total}
        assert len(partial) >= 3, values
        replay_scrapes = _scalar(prom, f'count_over_time(mimesisbench_phase{{{sel},phase="replay"}}[2m])')
        assert replay_scrapes is not None and replay_scrapes >= 5

        # every query of the shipped Grafana dashboard runs on the real server
        for expr in dashboard_exprs():
            promql = expr.replace("$run_id", run_id).replace("$__rate_interval", "2s")
            result = _query(prom, promql)  # asserts status == success
            if "outcome!=" not in promql:
                assert result, promql

        assert bench.wait(LINGER_S + 30) == 0  # the endpoint stops after the linger; the run exits cleanly
    finally:
        _stop(bench)
        _stop(prometheus)
