"""Which HDFS URLs and configurations the native lane serves (``HdfsBackend.native_lane_runner``):
one NameNode with simple authentication; a nameservice, Hadoop client keys in the URL or a
Hadoop configuration asking for Kerberos leave the replay to the Python dispatcher over
hdfs-native. Real configuration files under ``tmp_path``; no NameNode is contacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from mimesisbench.backends.base import NativeLaneRunner
from mimesisbench.backends.hdfs import HdfsBackend, security_enabled

SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>fs.defaultFS</name><value>hdfs://nn:8020</value></property>
  {extra}
</configuration>
"""


def _conf(root: Path, authentication: str | None, file: str = "core-site.xml") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    extra = "" if authentication is None else (
        f"<property><name>hadoop.security.authentication</name><value>{authentication}</value></property>"
    )
    (root / file).write_text(SITE.format(extra=extra), encoding="utf-8")
    return root


def _runner(url: str) -> NativeLaneRunner | None:
    backend = HdfsBackend(url)
    backend._owner = ("u", "g")  # what connect reads from the base
    return backend.native_lane_runner()


def test_the_configuration_decides_whether_security_is_on(tmp_path: Path) -> None:
    assert not security_enabled({})
    assert not security_enabled({"HADOOP_CONF_DIR": str(_conf(tmp_path / "none", None))})
    assert not security_enabled({"HADOOP_CONF_DIR": str(_conf(tmp_path / "simple", "simple"))})
    assert security_enabled({"HADOOP_CONF_DIR": str(_conf(tmp_path / "krb", "kerberos"))})
    assert security_enabled({"HADOOP_CONF_DIR": str(_conf(tmp_path / "hdfs-site", "kerberos", "hdfs-site.xml"))})
    home = tmp_path / "home"
    _conf(home / "etc" / "hadoop", "kerberos")
    assert security_enabled({"HADOOP_HOME": str(home)})
    assert not security_enabled({"HADOOP_CONF_DIR": str(tmp_path / "simple"), "HADOOP_HOME": str(home)})
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "core-site.xml").write_text("<configuration><property>", encoding="utf-8")
    assert security_enabled({"HADOOP_CONF_DIR": str(broken)})  # unreadable: left to hdfs-native


def test_the_native_lane_serves_one_namenode_with_simple_authentication(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HADOOP_HOME", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(_conf(tmp_path / "simple", "simple")))
    runner = _runner("hdfs://127.0.0.1:8020/bench")
    assert runner is not None and runner.keyed and runner.name == "hdfs"
    assert _runner("hdfs://nameservice1/bench") is None  # HA: hdfs-native fails over
    assert _runner("hdfs://127.0.0.1:8020/bench?dfs.client.socket-timeout=1000") is None  # client keys
    monkeypatch.setenv("HADOOP_CONF_DIR", str(_conf(tmp_path / "krb", "kerberos")))
    assert _runner("hdfs://127.0.0.1:8020/bench") is None  # Kerberos: hdfs-native authenticates
