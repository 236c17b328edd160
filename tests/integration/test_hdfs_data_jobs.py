"""Data jobs on a real HDFS (the ``local_hdfs`` fixture): N-N writers and readers beside a
replay, every call traced, the files gone afterwards; N-1 refused (HDFS has no shared writes)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from mimesisbench.errors import ConfigError
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration


def test_n_n_data_jobs_write_and_read_back_on_hdfs_beside_the_replay(local_hdfs, tmp_path: Path) -> None:
    from hdfs_native import Client

    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=200, rate_per_s=400.0,
                                     phases=(OpCode.CREATE, OpCode.GETFILEINFO))
    backend = f"{local_hdfs.url}/mbtest-datajobs"
    config = RunConfig(
        schedule=str(schedule), backend=backend, out=str(tmp_path / "runs"), max_drift_s=None, jmx="off",
        data_jobs=("n-n:tasks=2,block=1MiB,transfer=256KiB,segments=2,ops=write+read,passes=2,fsync=true",),
    )
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    calls = pl.read_parquet(report.run_dir / rundir.DATA_CALLS)
    counts = dict(calls.group_by("op").len().iter_rows())
    assert counts == {"write": 2 * 2 * 8, "read": 2 * 2 * 8, "fsync": 2 * 2}
    moved = calls.filter(pl.col("op") != "fsync")
    assert (moved["done"] == 256 * 1024).all() and (calls["errno"] == 0).all()
    figures = report.summary["data"]["jobs"]["data1"]["ops"]
    assert figures["read"]["bytes"] == figures["write"]["bytes"] == 2 * 2 * 2 * 1024**2
    assert report.summary["operations_issued"] == 400  # the replay ran beside them
    client = Client(local_hdfs.url)
    names = [s.path for s in client.list_status("/mbtest-datajobs")]
    assert not any(".mimesisbench-data" in n for n in names)  # the files and their directory are removed


def test_a_shared_file_layout_is_refused_on_hdfs(local_hdfs, tmp_path: Path) -> None:
    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=2, phases=(OpCode.CREATE,))
    config = RunConfig(schedule=str(schedule), backend=f"{local_hdfs.url}/mbtest-datajobs-n1", out=str(tmp_path / "runs"),
                       jmx="off", data_jobs=("n-1-strided:tasks=2",))
    with pytest.raises(ConfigError, match="hdfs has no shared writes"):
        run_benchmark(config, show_progress=False)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
