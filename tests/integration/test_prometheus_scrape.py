"""A real Prometheus server scrapes ``mimesisbench run --metrics-port`` during a paced run.

Prometheus (``prometheus_server``) runs as a subprocess on loopback with a temporary config scraping
the benchmark every 0.5 s. The run replays a ~12 s schedule on the null backend in real time and keeps its endpoint up
afterwards (``--metrics-linger``); the test asks Prometheus's HTTP API for what it stored and
compares it with the run's summary.json.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.integration.prometheus_server import free_port, prometheus_server, query, scalar, stop, wait_for
from tests.unit.test_metrics_dashboard import dashboard_exprs

from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

LINGER_S = 6  # the final scrapes (every 0.5 s) happen while the endpoint lingers

pytestmark = pytest.mark.integration


def test_prometheus_scrapes_a_running_benchmark(tmp_path: Path) -> None:
    # 12,000 events at 1,000/s (Poisson) over two types: about 12 s in real time
    schedule = write_phased_schedule(
        tmp_path / "schedule", types=2, files_per_type=3000, phases=(OpCode.OPEN, OpCode.GETFILEINFO), rate_per_s=1000.0
    )
    metrics_port = free_port()
    out = tmp_path / "runs"
    bench: subprocess.Popen[bytes] | None = None
    with prometheus_server(tmp_path, [f"127.0.0.1:{metrics_port}"]) as (prom, prometheus):
        try:
            bench = subprocess.Popen(
                [sys.executable, "-m", "mimesisbench", "run", str(schedule), "--backend", "null", "--out", str(out),
                 "--metrics-port", str(metrics_port), "--metrics-linger", f"{LINGER_S}s", "-q"],
                stdout=(tmp_path / "run.log").open("wb"), stderr=subprocess.STDOUT,
            )
            wait_for("the run's summary.json", lambda: any(out.glob("*/summary.json")), 120,
                  ("prometheus", prometheus), ("mimesisbench run", bench))
            run_dir = next(out.glob("*/summary.json")).parent
            run_id = run_dir.name
            summary = json.loads((run_dir / "summary.json").read_text())
            sel = f'run_id="{run_id}"'
            # the endpoint lingers: wait for a scrape taken after the run was marked done
            wait_for("a scrape of the finished run",
                  lambda: scalar(prom, f'mimesisbench_phase{{{sel},phase="done"}}') == 1.0, 30,
                  ("prometheus", prometheus), ("mimesisbench run", bench))

            total = scalar(prom, f"sum(mimesisbench_operations_total{{{sel}}})")
            assert summary["complete"] is True
            assert total == summary["operations_issued"] == 12_000
            assert scalar(prom, f"sum(mimesisbench_latency_seconds_count{{{sel}}})") == summary["operations_issued"]
            failed = scalar(prom, f'sum(mimesisbench_operations_total{{{sel},outcome!="ok"}})')
            assert (failed or 0.0) == summary["operations_failed"]
            by_op = {r["metric"]["op"]: float(r["value"][1])
                     for r in query(prom, f"sum by (op) (mimesisbench_operations_total{{{sel}}})")}
            assert by_op == {op: float(stats["issued"]) for op, stats in summary["operations"].items()}
            p99 = scalar(prom, f"histogram_quantile(0.99, sum by (le) (mimesisbench_latency_seconds_bucket{{{sel}}}))")
            assert p99 is not None and math.isfinite(p99) and p99 > 0

            # it was live: several scrapes during the replay saw partial counts
            now = time.time()
            series = query(prom, f"sum(mimesisbench_operations_total{{{sel}}})",
                            start=str(now - 120), end=str(now), step="0.5")
            values = [float(v) for _, v in series[0]["values"]]
            partial = {v for v in values if 0 < v < total}
            assert len(partial) >= 3, values
            replay_scrapes = scalar(prom, f'count_over_time(mimesisbench_phase{{{sel},phase="replay"}}[2m])')
            assert replay_scrapes is not None and replay_scrapes >= 5

            # every query of the shipped Grafana dashboard runs on the real server
            for expr in dashboard_exprs():
                promql = expr.replace("$run_id", run_id).replace("$__rate_interval", "2s")
                result = query(prom, promql)  # asserts status == success
                if "outcome!=" not in promql:
                    assert result, promql

            assert bench.wait(LINGER_S + 30) == 0  # the endpoint stops after the linger; the run exits cleanly
        finally:
            stop(bench)
