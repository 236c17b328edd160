"""The files a cluster reads at start: core-site.xml, hdfs-site.xml and log4j.properties."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

HOST = "127.0.0.1"
AUDIT_LOGGER = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit"
AUDIT_LOG_NAME = "hdfs-audit.log"
AUDIT_PATTERN = "%d{ISO8601} %p %c{2}: %m%n"


@dataclass(frozen=True)
class Ports:
    """Every port the cluster binds, all on 127.0.0.1."""

    rpc: int
    http: int
    datanode: int
    datanode_http: int
    datanode_ipc: int

    def as_dict(self) -> dict[str, int]:
        return {
            "rpc": self.rpc,
            "http": self.http,
            "datanode": self.datanode,
            "datanode_http": self.datanode_http,
            "datanode_ipc": self.datanode_ipc,
        }


@dataclass(frozen=True)
class Layout:
    """Where a cluster keeps things inside its working directory."""

    workdir: Path

    @property
    def conf(self) -> Path:
        return self.workdir / "conf"

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    @property
    def name_dir(self) -> Path:
        return self.workdir / "name"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def tmp(self) -> Path:
        return self.workdir / "tmp"

    @property
    def audit_log(self) -> Path:
        return self.logs / AUDIT_LOG_NAME

    @property
    def state_file(self) -> Path:
        return self.workdir / "mimesisbench-hdfs.json"

    @property
    def log4j(self) -> Path:
        return self.conf / "log4j.properties"

    def is_formatted(self) -> bool:
        return (self.name_dir / "current" / "VERSION").is_file()


def core_site(ports: Ports, layout: Layout) -> dict[str, str]:
    return {
        "fs.defaultFS": f"hdfs://{HOST}:{ports.rpc}",
        "hadoop.tmp.dir": str(layout.tmp),
        "hadoop.security.authentication": "simple",
        "hadoop.security.authorization": "false",
    }


def hdfs_site(ports: Ports, layout: Layout, namenode_settings: Mapping[str, str]) -> dict[str, str]:
    """Single-node defaults (replication 1, no permissions, quick safe mode that waits for every
    block), then the user's keys."""
    settings = {
        "dfs.replication": "1",
        "dfs.permissions.enabled": "false",
        "dfs.namenode.name.dir": f"file://{layout.name_dir}",
        "dfs.datanode.data.dir": f"file://{layout.data_dir}",
        "dfs.namenode.rpc-address": f"{HOST}:{ports.rpc}",
        "dfs.namenode.rpc-bind-host": HOST,
        "dfs.namenode.http-address": f"{HOST}:{ports.http}",
        "dfs.namenode.http-bind-host": HOST,
        "dfs.namenode.https-address": f"{HOST}:0",
        "dfs.namenode.secondary.http-address": f"{HOST}:0",
        "dfs.datanode.address": f"{HOST}:{ports.datanode}",
        "dfs.datanode.http.address": f"{HOST}:{ports.datanode_http}",
        "dfs.datanode.ipc.address": f"{HOST}:{ports.datanode_ipc}",
        "dfs.datanode.https.address": f"{HOST}:0",
        "dfs.datanode.hostname": HOST,
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.safemode.min.datanodes": "0",
        # out of safe mode only once every complete block is reported: with the default (0.999 of
        # them, rounded down) a namespace of one block (a run's marker) left safe mode before the
        # DataNode's block report, and a read right after a restart found no replica of it
        "dfs.namenode.safemode.threshold-pct": "1.0",
        "dfs.webhdfs.enabled": "true",
        "dfs.namenode.audit.loggers": "default",
    }
    settings.update(namenode_settings)
    return settings


def configuration_xml(properties: Mapping[str, str]) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<configuration>"]
    for key, value in properties.items():
        lines.append(f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>")
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def log4j_properties(layout: Layout, audit: bool = True) -> str:
    """reload4j (log4j 1.x) settings: one log file per daemon, plus the NameNode audit log
    (``audit=False``: its logger off, so the NameNode neither formats nor writes audit lines).

    The daemon's file name comes from the ``hadoop.log.file`` system property set at launch.
    """
    logs = layout.logs
    return "\n".join(
        [
            "log4j.rootLogger=INFO,DAEMON",
            "log4j.appender.DAEMON=org.apache.log4j.FileAppender",
            f"log4j.appender.DAEMON.File={logs}/${{hadoop.log.file}}",
            "log4j.appender.DAEMON.Append=true",
            "log4j.appender.DAEMON.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.DAEMON.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n",
            "",
            f"log4j.logger.{AUDIT_LOGGER}={'INFO,AUDIT' if audit else 'OFF'}",
            f"log4j.additivity.{AUDIT_LOGGER}=false",
            "log4j.appender.AUDIT=org.apache.log4j.FileAppender",
            f"log4j.appender.AUDIT.File={layout.audit_log}",
            "log4j.appender.AUDIT.Append=true",
            "log4j.appender.AUDIT.ImmediateFlush=true",
            "log4j.appender.AUDIT.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.AUDIT.layout.ConversionPattern={AUDIT_PATTERN}",
            "",
            "# quieter start-up noise",
            "log4j.logger.org.eclipse.jetty=WARN",
            "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR",
            "log4j.logger.org.apache.hadoop.metrics2=WARN",
            "# one line per HTTP request (every JMX poll) otherwise",
            "log4j.logger.http.requests.namenode=WARN",
            "log4j.logger.http.requests.datanode=WARN",
            "",
        ]
    )


#: Hadoop's metrics system: what JMX shows for its beans (``RpcActivity``, ``NameNodeActivity``...)
#: is refreshed once per period, 10 s by default; every second here, so that a sampler and a
#: calibration see a run's own counters shortly after it ends
METRICS2_PERIOD_S = 1
METRICS2_PROPERTIES = f"*.period={METRICS2_PERIOD_S}\n"


def write_site_files(layout: Layout, ports: Ports, namenode_settings: Mapping[str, str], audit: bool = True) -> None:
    """(Re)write the configuration directory; called on every start so option changes apply."""
    layout.conf.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    layout.tmp.mkdir(parents=True, exist_ok=True)
    (layout.conf / "core-site.xml").write_text(configuration_xml(core_site(ports, layout)), encoding="utf-8")
    (layout.conf / "hdfs-site.xml").write_text(
        configuration_xml(hdfs_site(ports, layout, namenode_settings)), encoding="utf-8"
    )
    layout.log4j.write_text(log4j_properties(layout, audit), encoding="utf-8")
    (layout.conf / "hadoop-metrics2.properties").write_text(METRICS2_PROPERTIES, encoding="utf-8")
