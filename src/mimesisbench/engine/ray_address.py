"""What ``--engine`` names: the local engine, or Ray (embedded, an existing cluster, Ray Client).

Pure parsing, no Ray import: the local path (and ``RunConfig`` validation) loads this module.

=====================  ======================================================================
``local``              worker processes on this machine (the default; no server)
``ray``                an embedded single-machine Ray started for the run and shut down after
                       (``ray.init(address="local")``: never attaches to a stale cluster)
``ray:auto``           the existing cluster named by ``RAY_ADDRESS`` (or the one started on
                       this node with ``ray start``); the driver must run on a cluster node
``ray:HOST:PORT``      the existing cluster whose head (GCS) listens at HOST:PORT
``ray://HOST:PORT``    Ray Client: the driver runs anywhere that reaches the head's client port
=====================  ======================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mimesisbench.errors import ConfigError

ENGINE_HELP = "local (default), ray (embedded), ray:auto (RAY_ADDRESS), ray:HOST:PORT or ray://HOST:PORT"

_HOST_PORT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


@dataclass(frozen=True)
class EngineChoice:
    """``kind`` is ``local`` or ``ray``; for Ray, ``address`` is what ``ray.init`` receives."""

    kind: str
    address: str | None = None

    @property
    def embedded(self) -> bool:
        """Ray started (and stopped) by this run on this machine only."""
        return self.kind == "ray" and self.address == "local"


def parse_engine(text: str) -> EngineChoice:
    """Parse an ``--engine`` value; raises ``ConfigError`` naming the accepted forms."""
    value = text.strip()
    low = value.lower()
    if low == "local":
        return EngineChoice("local")
    if low == "ray":
        return EngineChoice("ray", "local")
    if low == "ray:auto":
        return EngineChoice("ray", "auto")
    if low.startswith("ray://"):
        rest = value[len("ray://"):]
        if not _HOST_PORT.match(rest):
            raise ConfigError(f"--engine {text!r}: expected ray://HOST:PORT (the head's Ray Client port, usually 10001)")
        return EngineChoice("ray", value)
    if low.startswith("ray:"):
        rest = value[len("ray:"):]
        if not _HOST_PORT.match(rest):
            raise ConfigError(f"--engine {text!r}: expected ray:HOST:PORT (the head's GCS address, usually port 6379)")
        return EngineChoice("ray", rest)
    raise ConfigError(f"unknown engine {text!r} (available: {ENGINE_HELP})")
