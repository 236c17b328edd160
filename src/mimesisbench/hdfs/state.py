"""The state file in a cluster's working directory: what was started, on which ports."""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesisbench.errors import MimesisError
from mimesisbench.hdfs.processes import ProcessRecord, read_state_file
from mimesisbench.hdfs.site import Ports

STATE_VERSION = 1


@dataclass(frozen=True)
class ClusterState:
    """Written after every start, kept after a stop (ports are reused on the next start)."""

    hadoop_version: str
    ports: Ports
    processes: tuple[ProcessRecord, ...] = ()
    started_at: float = 0.0
    startup_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "state_version": STATE_VERSION,
            "hadoop_version": self.hadoop_version,
            "ports": self.ports.as_dict(),
            "processes": [record.to_json() for record in self.processes],
            "started_at": self.started_at,
            "startup_seconds": self.startup_seconds,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterState:
        return cls(
            hadoop_version=str(data["hadoop_version"]),
            ports=Ports(**{k: int(v) for k, v in data["ports"].items()}),
            processes=tuple(ProcessRecord.from_json(p) for p in data.get("processes", [])),
            started_at=float(data.get("started_at", 0.0)),
            startup_seconds=data.get("startup_seconds"),
            extra=dict(data.get("extra", {})),
        )

    def running(self) -> list[ProcessRecord]:
        return [record for record in self.processes if record.is_running()]


def read_state(path: Path) -> ClusterState | None:
    return read_state_file(path, ClusterState.from_json, "the cluster state file")


def write_state(path: Path, state: ClusterState) -> None:
    """Atomic write (temporary file + rename), so a reader never sees half a file."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


#: host names that reach a cluster bound to 127.0.0.1 (as ``mimesisbench hdfs up`` binds it)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})


def managed_state(backend_url: str, state_file: Path) -> ClusterState | None:
    """The state of the managed cluster whose state file is ``state_file`` when ``backend_url``
    names it (``hdfs://``, a loopback host and the RPC port the file records); None otherwise
    (no such cluster, another NameNode, not hdfs://, an unreadable file)."""
    parts = urllib.parse.urlsplit(backend_url.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() != "hdfs" or (parts.hostname or "") not in LOOPBACK_HOSTS or port is None:
        return None
    try:
        state = read_state(state_file)
    except (MimesisError, OSError):
        return None
    return state if state is not None and state.ports.rpc == port else None
