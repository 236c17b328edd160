"""The shipped Grafana dashboard: valid JSON, a Prometheus datasource variable, only ``mimesisbench_*``
metrics, and every metric it names is one the collector serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mimesisbench.monitoring.live_stats import aggregate
from mimesisbench.monitoring.live_totals import LiveTotals
from mimesisbench.monitoring.prometheus import MetricsEndpoint

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "grafana-mimesisbench.json"


def dashboard_exprs() -> list[str]:
    data = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in data["panels"] for t in p["targets"]]


def served_sample_names() -> set[str]:
    totals = LiveTotals("r")
    totals.add(0, aggregate(np.zeros(1, np.int64), np.array([[2, 1]]), np.zeros(1, np.int64), np.zeros(1, np.int64),
                            np.ones(1, np.int64), np.zeros(1, np.uint8)))
    totals.set_lag(0, 0)
    text = generate_latest(MetricsEndpoint(totals).registry).decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def test_dashboard_uses_a_datasource_variable_and_only_served_metrics() -> None:
    data = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource" and variables["DS_PROMETHEUS"]["query"] == "prometheus"
    for panel in data["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}"
    served = served_sample_names()
    exprs = dashboard_exprs()
    assert exprs
    for expr in exprs:
        names = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{", expr))
        assert names, expr
        assert all(n.startswith("mimesisbench_") for n in names), expr
        assert names <= served, (expr, names - served)
    joined = " ".join(exprs)
    assert "rate(mimesisbench_operations_total" in joined and "histogram_quantile(0.99" in joined
