"""Connecting to Ray (imported lazily, offline by default) and leaving it as it was found.

Nothing here runs at import time; ``import ray`` happens inside :func:`import_ray` only, so the
local engine never loads Ray.

Offline defaults (set only when the user has not set them): usage statistics off
(``RAY_USAGE_STATS_ENABLED=0``), no dashboard (``include_dashboard=False``), and a longer
agent start-up allowance (``RAY_agent_register_timeout_ms``) so a busy machine does not make the
raylet give up on its own agents. No ``runtime_env`` that downloads anything is used: when the
code is shipped to an existing cluster it goes as ``py_modules`` through Ray's own object store.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

from mimesisbench.engine.ray_address import EngineChoice
from mimesisbench.errors import EnvironmentProblem

#: environment defaults applied before Ray starts (never overriding what the user set)
OFFLINE_ENV: Mapping[str, str] = MappingProxyType({
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_agent_register_timeout_ms": "120000",
})

#: how long the head's port may take to accept a TCP connection before the run is refused
CONNECT_TIMEOUT_S = 5.0

INSTALL_HINT = "install the extra: pip install 'mimesisbench[ray]' (the same Ray version on every node)"


def apply_offline_env(environ: dict[str, str] | None = None) -> None:
    """Set the offline defaults in ``environ`` (``os.environ`` by default) where unset."""
    env = os.environ if environ is None else environ
    for key, value in OFFLINE_ENV.items():
        env.setdefault(key, value)


def import_ray() -> ModuleType:
    """``ray``, or ``EnvironmentProblem`` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise EnvironmentProblem(f"--engine ray needs Ray, which is not installed ({exc}); {INSTALL_HINT}") from None
    return ray


@dataclass
class RaySession:
    """A connection to Ray. ``owned``: this run called ``ray.init`` and shuts Ray down at the end."""

    ray: Any
    owned: bool
    address: str
    embedded: bool

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False


def _package_dir() -> str:
    import mimesisbench

    return os.path.dirname(os.path.abspath(mimesisbench.__file__))


def connect(choice: EngineChoice, *, embedded_cpus: int | None = None, ship_code: bool = True) -> RaySession:
    """Start or join Ray as ``choice`` says; reuse a connection this process already has.

    Embedded Ray binds to 127.0.0.1 only and gets ``embedded_cpus`` logical CPUs (one per
    worker at least, so every actor can be placed on a small machine). Joining an existing
    cluster ships this ``mimesisbench`` package to the nodes (``py_modules``, no download)
    unless ``ship_code`` is false (the nodes then need the same version installed).
    """
    if choice.kind != "ray" or choice.address is None:
        raise EnvironmentProblem(f"not a Ray engine: {choice}")
    apply_offline_env()
    ray = import_ray()
    if ray.is_initialized():
        return RaySession(ray, owned=False, address="(connection made by the caller)", embedded=False)
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    if choice.embedded:
        kwargs.update(
            address="local",
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            num_cpus=max(os.cpu_count() or 1, embedded_cpus or 1),
        )
    else:
        check_reachable(os.environ.get("RAY_ADDRESS", "") if choice.address == "auto" else choice.address)
        kwargs["address"] = choice.address
        if not choice.address.startswith("ray://"):
            kwargs["include_dashboard"] = False
        if ship_code:
            kwargs["runtime_env"] = {"py_modules": [_package_dir()]}
    try:
        ray.init(**kwargs)
    except Exception as exc:  # noqa: BLE001 - any start or connection failure is the environment's
        if ray.is_initialized():
            ray.shutdown()
        where = "start an embedded Ray" if choice.embedded else f"connect to the Ray cluster at {choice.address}"
        raise EnvironmentProblem(
            f"cannot {where}: {type(exc).__name__}: {_first_line(exc)} (a cluster with token authentication "
            "needs RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token; "
            "ray:auto needs RAY_ADDRESS or a node started with `ray start`)"
        ) from None
    return RaySession(ray, owned=True, address=choice.address, embedded=choice.embedded)


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast when ``HOST:PORT`` (or ``ray://HOST:PORT``) does not accept a TCP connection.

    ``ray.init`` retries an unreachable head for minutes; this says what is wrong in seconds.
    Anything that is not ``HOST:PORT`` (``auto`` without ``RAY_ADDRESS``) is left to Ray.
    """
    target = address[len("ray://"):] if address.startswith("ray://") else address
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise EnvironmentProblem(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}; tried for {timeout_s:g} s): "
            "start the head with `ray start --head --port PORT` or fix --engine ray:HOST:PORT / RAY_ADDRESS"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
