"""An experiment on a managed HDFS it starts itself (NameNode and DataNode from Maven Central jars):
the namespace built once and checkpointed, each run restored from the checkpoint and started with
its own setting (here the audit log on or off)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.study.experiment_run import run_experiment

pytestmark = pytest.mark.integration


def test_runs_start_from_one_checkpoint_with_their_own_settings(tmp_path: Path) -> None:
    workdir = tmp_path / "hdfs"
    file = tmp_path / "experiment.toml"
    file.write_text(f"""
name = "audit-on-off"
seed = 5
responses = ["throughput_ops_per_s", "failed", "issued"]
profile = "demo"

[generate]
duration = "4s"
seed = 2

[managed_hdfs]
workdir = "{workdir}"
heap = "512m"

[[factors]]
name = "audit"
kind = "hdfs"
option = "audit"
levels = [true, false]
""")
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir))
    audit_growth: list[int] = []

    def audit_bytes() -> int:
        return cluster.audit_log.stat().st_size if cluster.audit_log.exists() else 0

    def run(config: RunConfig) -> Path:
        before = audit_bytes()
        run_dir = run_benchmark(config, console=None, show_progress=False).run_dir
        audit_growth.append(audit_bytes() - before)
        return run_dir

    try:
        results = run_experiment(file, tmp_path / "exp", run)
    finally:
        cluster.down()  # the experiment stops what it started; this is for a test that failed midway
    assert results.height == 2 and set(results["status"]) == {"complete"}
    by_audit = dict(zip(results["audit"], range(2)))
    assert audit_growth[by_audit["True"]] > 1_000 and audit_growth[by_audit["False"]] == 0
    # both runs started from the same namespace: phase 1 skipped (the checkpoint's marker), the same
    # operations issued, the same outcomes
    for run_dir in results["run_dir"]:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
        assert manifest["phase1"]["skipped"] and "marker" in manifest["phase1"]["reason"]
        # what the client and the NameNode spent: both measured (the cluster is managed)
        cost = json.loads((Path(run_dir) / "summary.json").read_text())["cost"]
        assert cost["client_cpu_s"] > 0 and cost["server"]["namenode"]["cpu_s"] > 0
        assert cost["server"]["namenode"]["cpu_us_per_op"] > 0 and "datanode" in cost["server"]
    issued = results["issued"].cast(pl.Float64).to_list()
    failed = results["failed"].cast(pl.Float64).to_list()
    assert issued[0] == issued[1] > 0 and failed[0] == failed[1]
    assert not cluster.is_running()  # the experiment started the cluster and stopped it
    assert (workdir / "checkpoints").is_dir() and len(list((workdir / "checkpoints").iterdir())) == 1
