"""A managed HDFS whose daemons run under a CPU quota (cgroups), and a run against it that records
the quota requested and the CPU its NameNode achieved during the replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimesisbench.hdfs import cgroups
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration

QUOTA = 0.3


def test_a_cpu_quota_on_the_namenode_is_applied_recorded_and_removed(tmp_path: Path) -> None:
    support = cgroups.probe()
    if support.cpu is None:
        pytest.skip(f"this machine cannot set a CPU quota: {'; '.join(support.missing)}")
    workdir = tmp_path / "hdfs"
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap="512m", startup_timeout_s=300.0,
                                        limits=cgroups.ResourceLimits(cpu_cores=QUOTA)))
    cluster.up()
    try:
        groups = {g.name.split("-")[1]: g for g in cluster.limit_groups()}
        assert set(groups) == {"namenode", "datanode"}
        pids = {role: pid for role, pid, _ in cluster.status().processes}
        assert pids["namenode"] in groups["namenode"].members()  # the JVM itself, from its start
        schedule = write_phased_schedule(tmp_path / "s", types=2, files_per_type=1500,
                                         phases=(OpCode.CREATE, OpCode.GETFILEINFO, OpCode.DELETE))
        config = RunConfig(schedule=str(schedule), backend=f"{cluster.url}/limits", out=str(tmp_path / "runs"),
                           time_scale=0.0, max_drift_s=None, workers=2, hdfs_workdir=str(workdir), jmx="off")
        report = run_benchmark(config, show_progress=False)
        assert report.complete, report.message
        limits = json.loads((report.run_dir / rundir.MANIFEST).read_text())["server_limits"]["namenode"]
        assert limits["requested"]["cpu_cores"] == QUOTA
        # the quota bounds what the NameNode got (CFS accounting may overrun a period a little)
        assert 0 < limits["achieved_cpu_cores"] <= QUOTA * 1.3
        # how often it was throttled depends on how much CPU a loaded machine left it: only recorded
        assert 0 <= limits["throttled_share"] <= 1
    finally:
        cluster.down()
    assert not any(d.exists() for g in groups.values() for d in (g.cpu_dir, g.io_dir) if d is not None)
    assert cluster.limit_groups() == []
