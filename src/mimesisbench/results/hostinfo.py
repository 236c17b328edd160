"""Facts about the tool and the machine, recorded in every run manifest."""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

LIBRARIES = ("numpy", "polars", "pyarrow", "scipy", "pydantic", "click", "rich", "psutil")


def versions() -> dict[str, str]:
    """The tool's and its libraries' versions."""
    from mimesisbench import __version__
    from mimesisbench.native import native_version

    out = {"mimesisbench": __version__, "python": platform.python_version()}
    out["mimesisbench_native"] = native_version() or "not loaded"
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def host_facts() -> dict[str, Any]:
    """Hostname, CPU count, memory, OS and kernel."""
    facts: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "os": platform.system(),
        "kernel": platform.release(),
        "platform": platform.platform(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
    }
    try:
        import psutil

        facts["memory_bytes"] = int(psutil.virtual_memory().total)
        facts["cpu_count_physical"] = psutil.cpu_count(logical=False)
        facts["load_average"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    except Exception:  # noqa: BLE001 - facts are best effort
        facts["memory_bytes"] = None
    return facts
