"""Fixtures that start real software: a single-node HDFS from Maven Central jars, once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mimesisbench.errors import MimesisError
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig


@pytest.fixture(scope="session")
def local_hdfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHdfs]:
    """A running NameNode + DataNode on free 127.0.0.1 ports, in a fresh working directory.

    Yields the :class:`LocalHdfs` runtime object (``url``, ``rpc_port``, ``http_port``,
    ``audit_log``, ``workdir``, ``save_namespace()``, ``dump_image()`` ...) and stops exactly the
    processes it started at the end of the session, whatever happened in between. Jars come from
    the cache (``$MIMESISBENCH_CACHE`` or ``~/.cache/mimesisbench``) or are fetched with ``mvn``.
    A machine without java or mvn fails here with the reason; nothing is skipped. A test that stops
    the cluster must start it again (``local_hdfs.up()``) before it ends.
    """
    workdir = tmp_path_factory.mktemp("hdfs")
    cluster = LocalHdfs(LocalHdfsConfig(workdir=workdir, heap="512m", startup_timeout_s=150.0))
    try:
        try:
            cluster.up()
        except MimesisError as exc:
            pytest.fail(f"could not start the local HDFS in {workdir}: {exc}", pytrace=False)
        yield cluster
    finally:
        cluster.down()
