"""Choosing ports on 127.0.0.1: fixed ones are checked, missing ones are picked free."""

from __future__ import annotations

import socket
from collections.abc import Mapping

from mimesisbench.errors import EnvironmentProblem
from mimesisbench.hdfs.site import HOST, Ports

PORT_NAMES = ("rpc", "http", "datanode", "datanode_http", "datanode_ipc")


def is_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free_ports(count: int, avoid: set[int]) -> list[int]:
    """``count`` distinct ports the kernel reports free now (held open together, then released)."""
    sockets: list[socket.socket] = []
    try:
        ports: list[int] = []
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((HOST, 0))
            port = sock.getsockname()[1]
            if port not in avoid:
                ports.append(port)
        return ports
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """One port on 127.0.0.1 the kernel reports free now."""
    return _free_ports(1, set())[0]


def choose_ports(fixed: Mapping[str, int | None], previous: Mapping[str, int] | None = None) -> Ports:
    """Resolve every port: a fixed one must be free, else the previous one if free, else a new one.

    Raises :class:`EnvironmentProblem` naming the port and its role when a fixed port is taken.
    """
    chosen: dict[str, int] = {}
    for name in PORT_NAMES:
        port = fixed.get(name)
        if port is None:
            continue
        if not is_free(port):
            raise EnvironmentProblem(
                f"port {port} on {HOST} ({name.replace('_', ' ')}) is already in use; "
                "choose another one or leave it out to pick a free port"
            )
        chosen[name] = port
    for name in PORT_NAMES:
        if name in chosen or previous is None:
            continue
        port = previous.get(name)
        if port is not None and port not in chosen.values() and is_free(port):
            chosen[name] = port
    missing = [name for name in PORT_NAMES if name not in chosen]
    for name, port in zip(missing, _free_ports(len(missing), set(chosen.values())), strict=True):
        chosen[name] = port
    return Ports(**chosen)
