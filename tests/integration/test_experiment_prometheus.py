"""An experiment archives what a real Prometheus stored during each of its runs: every run serves
its series on the experiment's metrics port, Prometheus scrapes it, and the samples of the run's
window land in the run directory as Parquet (``prometheus.parquet``)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from tests.integration.prometheus_server import free_port, prometheus_server

from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration


def test_each_run_keeps_the_samples_of_its_own_window(tmp_path: Path) -> None:
    # 3,000 events at 1,000/s; the sweep replays them at 600/s and 1,200/s: about 5 s and 2.5 s
    schedule = write_phased_schedule(tmp_path / "schedule", types=1, files_per_type=1500,
                                     phases=(OpCode.OPEN, OpCode.GETFILEINFO), rate_per_s=1000.0)
    metrics_port = free_port()
    with prometheus_server(tmp_path, [f"127.0.0.1:{metrics_port}"]) as (prom, _):
        file = tmp_path / "experiment.toml"
        file.write_text(f"""
name = "archive"
schedule = "{schedule}"
backend = "null"
responses = ["issued"]

[[factors]]
name = "rate"
kind = "run"
option = "rate"
levels = ["600/s", "1200/s"]

[design]
kind = "sweep"

[prometheus]
url = "{prom}"
metrics_port = {metrics_port}
linger = "2s"
match = ['{{__name__=~"mimesisbench_.+"}}', '{{__name__="up"}}']
""")
        done = subprocess.run([sys.executable, "-m", "mimesisbench", "experiment", "run", str(file),
                               "-o", str(tmp_path / "exp")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = pl.read_csv(tmp_path / "exp" / "results.csv")
    assert results.height == 2
    run_ids = [Path(d).name for d in results["run_dir"]]
    for run_dir in map(Path, results["run_dir"]):
        summary = json.loads((run_dir / "summary.json").read_text())
        series = pl.read_parquet(run_dir / "prometheus.parquet")
        assert set(series.columns) == {"series", "name", "labels", "time", "value"}
        ops = series.filter(pl.col("name") == "mimesisbench_operations_total").with_columns(
            pl.col("labels").str.json_path_match("$.run_id").alias("run_id"))
        # only this run's series: the other run's samples lie outside this one's window
        assert set(ops["run_id"]) == {run_dir.name}
        assert set(run_ids) - {run_dir.name}
        # the last scrape (the endpoint lingered) saw every operation the summary counts
        final = ops.sort("time").group_by("series").agg(pl.col("value").last())["value"].sum()
        assert final == summary["operations_issued"] == 3000
        # and earlier scrapes saw the replay under way
        totals = ops.group_by("time").agg(pl.col("value").sum())["value"]
        assert ((totals > 0) & (totals < 3000)).sum() >= 2
        up = series.filter(pl.col("name") == "up")
        assert up.height >= 3 and up["value"].max() == 1.0
        started = datetime.fromisoformat(json.loads((run_dir / "manifest.json").read_text())["started_at"])
        assert series["time"].min() >= started
