"""Toxiproxy (Shopify's TCP proxy with "toxics"): built once from the Go module proxy into the
tool's cache, and driven through its HTTP API.

The binary is ``go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0`` with its own
``GOPATH``/``GOCACHE`` under ``~/.cache/mimesisbench/toxiproxy-<version>/`` (``$MIMESISBENCH_CACHE``
moves it), so nothing outside the cache is written; a lock file serialises concurrent builds.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesisbench.errors import BackendError
from mimesisbench.hdfs.jars import cache_root, find_tool

MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
DEFAULT_VERSION = "v2.5.0"
BUILD_TIMEOUT_S = 900.0
API_TIMEOUT_S = 10.0


def build_dir(version: str = DEFAULT_VERSION, root: Path | None = None) -> Path:
    return (root if root is not None else cache_root()) / f"toxiproxy-{version}"


def cached_binary(version: str = DEFAULT_VERSION, root: Path | None = None) -> Path | None:
    binary = build_dir(version, root) / "bin" / "server"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


#: where the official Go distribution installs itself, for a PATH that does not name it
GO_HOME_BIN = Path("/usr/local/go/bin/go")


def _find_go(version: str) -> str:
    """``go`` from PATH, else from the official distribution's place (exit 7 when neither)."""
    if shutil.which("go") is None and GO_HOME_BIN.is_file() and os.access(GO_HOME_BIN, os.X_OK):
        return str(GO_HOME_BIN)
    return find_tool("go", f"build toxiproxy {version} from the Go module proxy (or install Go in /usr/local/go)")


def ensure_toxiproxy(version: str = DEFAULT_VERSION, root: Path | None = None) -> Path:
    """The toxiproxy server binary, built from the Go module proxy on first use (exit 7 without ``go``)."""
    found = cached_binary(version, root)
    if found is not None:
        return found
    go = _find_go(version)
    directory = build_dir(version, root)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = cached_binary(version, root)
        if found is not None:
            return found
        env = {**os.environ, "GOBIN": str(directory / "bin"), "GOPATH": str(directory / "gopath"),
               "GOCACHE": str(directory / "gocache"), "GOFLAGS": "-modcacherw", "CGO_ENABLED": "0"}
        log = directory / "build.log"
        try:
            with open(log, "w", encoding="utf-8") as out:
                result = subprocess.run([go, "install", f"{MODULE}@{version}"], env=env, stdout=out,
                                        stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise BackendError(f"building toxiproxy {version} took over {BUILD_TIMEOUT_S:.0f} s; see {log}") from None
        if result.returncode != 0:
            tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-10:])
            raise BackendError(f"go could not build toxiproxy {version} (exit {result.returncode}); see {log}:\n{tail}")
    built = cached_binary(version, root)
    if built is None:
        raise BackendError(f"go install finished but left no toxiproxy binary in {directory / 'bin'}")
    return built


@dataclass(frozen=True)
class ToxiproxyApi:
    """The server's HTTP API (``http://127.0.0.1:<port>``)."""

    port: int
    host: str = "127.0.0.1"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://{self.host}:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=API_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise BackendError(f"toxiproxy {method} {path}: HTTP {exc.code} {detail}") from None
        except OSError as exc:
            raise BackendError(f"toxiproxy API on {self.host}:{self.port} not reachable ({exc})") from None
        return json.loads(raw) if raw.strip() else None

    def version(self) -> str:
        request = urllib.request.Request(f"http://{self.host}:{self.port}/version")
        with urllib.request.urlopen(request, timeout=API_TIMEOUT_S) as response:
            return str(response.read().decode().strip())

    def create_proxy(self, name: str, listen: str, upstream: str) -> dict[str, Any]:
        out: dict[str, Any] = self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream,
                                                              "enabled": True})
        return out

    def add_latency(self, proxy: str, latency_ms: int, jitter_ms: int, stream: str) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics", {
            "name": f"latency_{stream}", "type": "latency", "stream": stream, "toxicity": 1.0,
            "attributes": {"latency": latency_ms, "jitter": jitter_ms},
        })

    def proxies(self) -> dict[str, Any]:
        out: dict[str, Any] = self._call("GET", "/proxies")
        return out
