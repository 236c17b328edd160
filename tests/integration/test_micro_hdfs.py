"""Micro-benchmarks and the JMX sampler against the real NameNode of ``local_hdfs``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from hdfs_native import Client

from mimesisbench.backends.safety import OWNER_MARKER
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig
from mimesisbench.monitoring.jmx import JmxSampler, jmx_url_for_backend, rpc_port_of

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def micro_base(local_hdfs: LocalHdfs) -> str:
    return f"{local_hdfs.url}/micro-tests/{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module", autouse=True)
def _remove_root(local_hdfs: LocalHdfs) -> Iterator[None]:
    """Leave the session's namespace as found (other modules model its image and audit log)."""
    yield
    Client(local_hdfs.url).delete("/micro-tests", True)


@pytest.mark.parametrize("client", ["asyncio", "threads"])
@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_operation_runs_on_hdfs_and_cleans_up(
    local_hdfs: LocalHdfs, micro_base: str, op: str, client: str
) -> None:
    config = MicroConfig(op=op, files=150, backend=micro_base, concurrency=8, dirs=2, client=client)
    result = run_micro(config)
    data = result.to_json()
    assert data["errors"] == 0, data["errors_by_outcome"]
    assert data["client"] == client and result.summary["operations"] == 150
    assert data["ops_per_s"] > 0 and data["latency_ms"]["max"] >= data["latency_ms"]["p50"] > 0
    base = micro_base.split(str(local_hdfs.rpc_port), 1)[1]
    names = [s.path.rpartition("/")[2] for s in Client(local_hdfs.url).list_status(base)]
    assert names == [OWNER_MARKER]  # the run's directory is gone, only our marker stays


def test_jmx_sampler_reads_the_real_namenode_during_a_micro_run(local_hdfs: LocalHdfs, tmp_path: Path) -> None:
    backend = f"{local_hdfs.url}/micro-tests/jmx-{uuid.uuid4().hex[:8]}"
    derived = jmx_url_for_backend(backend, http_port=local_hdfs.http_port)
    assert derived == f"http://127.0.0.1:{local_hdfs.http_port}/jmx"
    sampler = JmxSampler(derived, interval_s=0.5, rpc_port=rpc_port_of(backend)).start()
    sampler.set_origin(time.time_ns())
    run_micro(MicroConfig(op="create", files=300, backend=backend, concurrency=16))
    # Hadoop refreshes its beans once per metrics period (1 s on the managed cluster, 10 s by default), each bean on its own tick: sample
    # until NameNodeActivity shows the creates and RpcActivity the calls (a rate needs two of the
    # bean's refreshes; a condition, not a timing assertion). Waiting on the creates alone, a
    # loaded machine stopped before RpcActivity's second refresh and left its rates null
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        frame_now = sampler.frame()
        if all((frame_now[c].drop_nulls() > 0).any() for c in ("jmx_create_file_ops_per_s", "jmx_rpc_ops_per_s")):
            break
        time.sleep(0.5)
    warnings = sampler.stop()
    assert warnings == []
    frame = pl.read_parquet(sampler.write(tmp_path))
    assert frame.height >= 2
    assert (frame["jmx_create_file_ops_per_s"].drop_nulls() > 0).any()
    assert (frame["jmx_rpc_ops_per_s"].drop_nulls() > 0).any()
    assert frame["jmx_heap_used_mb"].drop_nulls().min() > 0
    assert frame["jmx_files_total"].drop_nulls().max() > 0
    assert frame["jmx_open_connections"].drop_nulls().len() > 0
