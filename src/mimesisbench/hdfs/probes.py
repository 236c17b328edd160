"""Readiness probes: is the RPC port open, is the NameNode out of safe mode with a live DataNode."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

FS_STATE_QUERY = "Hadoop:service=NameNode,name=FSNamesystemState"


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def jmx_url(host: str, http_port: int, query: str = FS_STATE_QUERY) -> str:
    return f"http://{host}:{http_port}/jmx?qry={query}"


def fetch_jmx(url: str, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """The first bean of a JMX servlet answer, or ``None`` while the servlet is not answering."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    try:
        with opener.open(url, timeout=timeout_s) as response:
            body = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None
    beans = body.get("beans") if isinstance(body, dict) else None
    if not beans:
        return None
    first = beans[0]
    return first if isinstance(first, dict) else None


@dataclass(frozen=True)
class NameNodeHealth:
    """What the FSNamesystemState bean says (``fs_state`` is "Operational" or "safeMode")."""

    fs_state: str
    live_datanodes: int
    files_total: int | None

    @property
    def ready(self) -> bool:
        return self.fs_state == "Operational" and self.live_datanodes >= 1

    @classmethod
    def from_bean(cls, bean: dict[str, Any]) -> NameNodeHealth:
        files = bean.get("FilesTotal")
        return cls(
            fs_state=str(bean.get("FSState", "")),
            live_datanodes=int(bean.get("NumLiveDataNodes", 0) or 0),
            files_total=int(files) if isinstance(files, (int, float)) else None,
        )

    def describe(self) -> str:
        return f"FSState={self.fs_state or '?'}, live DataNodes={self.live_datanodes}"


def namenode_health(host: str, http_port: int) -> NameNodeHealth | None:
    bean = fetch_jmx(jmx_url(host, http_port))
    return NameNodeHealth.from_bean(bean) if bean is not None else None
