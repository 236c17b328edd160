"""Live metrics of a real run (local engine, worker processes, memory backend), scraped over HTTP
while the endpoint lingers after the run, checked against summary.json and samples.parquet."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.unit.test_run_schedules import workload

from mimesisbench.errors import ConfigError
from mimesisbench.monitoring.live_stats import N_BUCKETS, bucket_index
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import RunReport, run_benchmark


def _scrape_after_run(config: RunConfig, out: Path) -> tuple[RunReport, str]:
    """Run in a thread; once summary.json exists (the endpoint lingers), scrape /metrics."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["report"] = run_benchmark(config, show_progress=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + 120
    summaries: list[Path] = []
    while not summaries and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
        summaries = list(out.glob(f"*/{rundir.SUMMARY}"))
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    assert summaries, "the run wrote no summary"
    manifest = json.loads((summaries[0].parent / rundir.MANIFEST).read_text())
    # the coordinator marks the run done after writing the run directory, then the endpoint
    # lingers: scrape until the final phase shows (on a loaded machine that can take a while)
    text = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(manifest["metrics_url"], timeout=10) as response:
                text = response.read().decode()
        except OSError:
            break  # the endpoint stopped serving: the last scrape is the one to check
        if _final_phase(text):
            break
        time.sleep(0.05)
    thread.join(60)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    report = box["report"]
    assert isinstance(report, RunReport)
    return report, text


def _final_phase(text: str) -> bool:
    """Whether a scrape shows the run ended (phase done or incomplete)."""
    for family in text_string_to_metric_families(text):
        if family.name == "mimesisbench_phase":
            return any(s.value == 1.0 and s.labels["phase"] in ("done", "incomplete") for s in family.samples)
    return False


def _histogram(families: dict, name: str) -> dict[tuple[str, str], tuple[list[float], float, float]]:
    """(op, type) -> (non-cumulative bucket counts, count, sum)."""
    out: dict[tuple[str, str], tuple[list[float], float, float]] = {}
    cum: dict[tuple[str, str], list[float]] = {}
    counts: dict[tuple[str, str], float] = {}
    sums: dict[tuple[str, str], float] = {}
    for s in families[name].samples:
        key = (s.labels["op"], s.labels["type"])
        if s.name.endswith("_bucket"):
            cum.setdefault(key, []).append(s.value)
        elif s.name.endswith("_count"):
            counts[key] = s.value
        elif s.name.endswith("_sum"):
            sums[key] = s.value
    for key, c in cum.items():
        out[key] = (np.diff([0.0, *c]).tolist(), counts[key], sums[key])
    return out


def test_scraped_metrics_match_the_summary(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "schedule", files_per_type=20, span_us=1_200_000)  # a few progress ticks
    out = tmp_path / "runs"
    config = RunConfig(
        schedule=str(schedule), backend="memory", out=str(out), metrics_port=0, metrics_linger_s=3.0
    )
    report, text = _scrape_after_run(config, out)
    assert report.complete
    summary = report.summary
    run_id = report.run_dir.name
    families = {f.name: f for f in text_string_to_metric_families(text)}
    ops = [s for s in families["mimesisbench_operations"].samples if s.name == "mimesisbench_operations_total"]
    assert {s.labels["run_id"] for s in ops} == {run_id}
    assert sum(s.value for s in ops) == summary["operations_issued"] > 0
    assert sum(s.value for s in ops if s.labels["outcome"] != "ok") == summary["operations_failed"]
    for op, stats in summary["operations"].items():
        mine = [s for s in ops if s.labels["op"] == op]
        assert sum(s.value for s in mine) == stats["issued"], op
        assert sum(s.value for s in mine if s.labels["outcome"] == "ok") == stats["succeeded"], op
    for ftype, stats in summary["types"].items():
        assert sum(s.value for s in ops if s.labels["type"] == str(ftype)) == stats["issued"], ftype
    scheduled = next(iter(families["mimesisbench_operations_scheduled"].samples)).value
    assert scheduled == summary["operations_scheduled"]
    phase = {s.labels["phase"]: s.value for s in families["mimesisbench_phase"].samples}
    assert phase["done"] == 1.0

    # every histogram equals the one recomputed from the raw samples (same buckets, same sums)
    samples = pl.read_parquet(report.run_dir / rundir.SAMPLES)
    ns = {c: np.round(samples[c].to_numpy() * 1000.0).astype(np.int64) for c in ("scheduled_us", "start_us", "end_us")}
    timings = {
        "mimesisbench_latency_seconds": ns["end_us"] - ns["scheduled_us"],
        "mimesisbench_service_seconds": ns["end_us"] - ns["start_us"],
        "mimesisbench_lateness_seconds": ns["start_us"] - ns["scheduled_us"],
    }
    op_col = samples["op"].cast(pl.String).to_numpy()
    type_col = samples["type"].cast(pl.String).to_numpy()
    for name, values in timings.items():
        hist = _histogram(families, name)
        assert sum(c for _, c, _ in hist.values()) == samples.height
        for (op, ftype), (buckets, count, total) in hist.items():
            mask = (op_col == op) & (type_col == ftype)
            expected = np.bincount(bucket_index(values[mask]), minlength=N_BUCKETS)
            assert buckets == expected.tolist(), (name, op, ftype)
            assert count == mask.sum()
            assert total == pytest.approx(values[mask].sum() / 1e9, rel=1e-9, abs=1e-9)


def test_no_metrics_port_means_no_live_deltas(tmp_path: Path) -> None:
    schedule = workload(tmp_path / "schedule", files_per_type=4)
    config = RunConfig(schedule=str(schedule), backend="memory", out=str(tmp_path / "runs"))
    report = run_benchmark(config, show_progress=False)
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert report.complete and "metrics_url" not in manifest


def test_bad_metrics_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--metrics-port"):
        RunConfig(schedule="s", backend="null", metrics_port=70000)
    with pytest.raises(ConfigError, match="--metrics-linger"):
        RunConfig(schedule="s", backend="null", metrics_port=1, metrics_linger_s=-1)


def test_a_busy_port_is_a_config_error() -> None:
    import socket

    from mimesisbench.monitoring.live_totals import LiveTotals
    from mimesisbench.monitoring.prometheus import MetricsEndpoint

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        endpoint = MetricsEndpoint(LiveTotals("r"), port=busy.getsockname()[1])
        with pytest.raises(ConfigError, match="--metrics-port"):
            endpoint.start()
        endpoint.close()
