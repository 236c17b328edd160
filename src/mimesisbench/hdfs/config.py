"""The configuration of a local single-node HDFS (what to start), separate from the running cluster."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mimesisbench.errors import ConfigError
from mimesisbench.hdfs.cgroups import ResourceLimits
from mimesisbench.hdfs.jars import DEFAULT_HADOOP_VERSION

DEFAULT_WORKDIR = Path(".mimesisbench") / "hdfs"
_HEAP = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class LocalHdfsConfig:
    """What to start: paths, ports, JVM sizes and NameNode settings.

    A port of ``None`` means "pick a free one" (on a restart the previous port is reused while it
    is still free), so concurrent test sessions never clash.
    """

    workdir: Path = DEFAULT_WORKDIR
    rpc_port: int | None = None
    http_port: int | None = None
    datanode_port: int | None = None
    datanode_http_port: int | None = None
    datanode_ipc_port: int | None = None
    heap: str = "1g"
    datanode_heap: str = "256m"
    handler_count: int | None = None
    fslock_fair: bool | None = None
    #: the NameNode's audit log (False: its logger off, as a cluster run without auditing)
    audit: bool = True
    extra: Mapping[str, str] = field(default_factory=dict)
    hadoop_version: str = DEFAULT_HADOOP_VERSION
    startup_timeout_s: float = 120.0
    stop_grace_s: float = 15.0
    jvm_options: tuple[str, ...] = ()
    #: a CPU quota and I/O throttle for each daemon (cgroups; ``mimesisbench.hdfs.cgroups``)
    limits: ResourceLimits = field(default_factory=ResourceLimits)

    def __post_init__(self) -> None:
        object.__setattr__(self, "workdir", Path(self.workdir))
        object.__setattr__(self, "extra", dict(self.extra))
        for name in ("rpc_port", "http_port", "datanode_port", "datanode_http_port", "datanode_ipc_port"):
            port = getattr(self, name)
            if port is not None and not 1 <= port <= 65535:
                raise ConfigError(f"{name} must be between 1 and 65535, got {port}")
        for name in ("heap", "datanode_heap"):
            if not _HEAP.match(getattr(self, name)):
                raise ConfigError(f"{name} must look like 512m or 2g, got {getattr(self, name)!r}")
        if self.handler_count is not None and self.handler_count < 1:
            raise ConfigError(f"handler_count must be at least 1, got {self.handler_count}")
        for key in self.extra:
            if not _KEY.match(key):
                raise ConfigError(f"not a Hadoop configuration key: {key!r}")
        if self.startup_timeout_s <= 0 or self.stop_grace_s < 0:
            raise ConfigError("startup_timeout_s must be positive and stop_grace_s not negative")

    def namenode_settings(self) -> dict[str, str]:
        """The NameNode options the user chose (handler count, fair lock, extras), as site keys."""
        settings: dict[str, str] = {}
        if self.handler_count is not None:
            settings["dfs.namenode.handler.count"] = str(self.handler_count)
        if self.fslock_fair is not None:
            settings["dfs.namenode.fslock.fair"] = "true" if self.fslock_fair else "false"
        settings.update(self.extra)
        return settings


def parse_settings(pairs: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; a malformed pair is a :class:`ConfigError`."""
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"expected key=value, got {pair!r}")
        if not _KEY.match(key):
            raise ConfigError(f"not a Hadoop configuration key: {key!r}")
        settings[key] = value.strip()
    return settings
