"""``memory``: an in-memory namespace, the reference model every backend is checked against.

The namespace is a tree of dicts (a directory maps names to a sub-dict, a file maps to
``None``). Errors are raised as the ``OSError`` subclasses a POSIX file system raises, so they
classify the same way:

* a missing path or parent, or a file used as a directory: ``not_found``;
* ``create`` / ``mkdirs`` / ``rename`` onto an existing name: ``exists``;
* ``delete`` of a directory, ``list_dir`` of a file: ``other`` / ``not_found`` (as on Linux).

File operations on directories (``open`` of a directory ...) are not part of the contract.
Each process has its own namespace (``process_local``): phase 1 runs inside every worker, and
a worker's listings do not see files that other workers created.
"""

from __future__ import annotations

import errno
import os
import threading
from enum import Enum
from typing import ClassVar, Final

from mimesisbench.backends.base import Backend

Tree = dict[str, "Tree | None"]


def _err(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)


class MemoryBackend(Backend):
    """The reference model: a dict tree guarded by one lock."""

    scheme: ClassVar[str] = "memory"
    process_local: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 1

    def __init__(self, url: str = "memory") -> None:
        super().__init__(url)
        self.root: Tree = {}
        self._lock = threading.Lock()
        self._marker: str | None = None

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _split(path: str) -> list[str]:
        return [p for p in path.split("/") if p]

    def _dir(self, parts: list[str], path: str) -> Tree:
        node: Tree = self.root
        for name in parts:
            child = node.get(name, _MISSING)
            if child is _MISSING:
                raise _err(errno.ENOENT, path)
            if child is None:
                raise _err(errno.ENOTDIR, path)
            node = child
        return node

    def _parent(self, path: str) -> tuple[Tree, str]:
        parts = self._split(path)
        if not parts:
            raise _err(errno.EEXIST, path)
        return self._dir(parts[:-1], path), parts[-1]

    def exists(self, path: str) -> bool:
        """True when ``path`` names a file or a directory (for tests and phase 1 checks)."""
        try:
            with self._lock:
                parent, name = self._parent(path)
            return name in parent
        except OSError as exc:
            return exc.errno == errno.EEXIST  # the root

    def snapshot(self) -> dict[str, bool]:
        """Every path in the namespace mapped to ``is_dir`` (the root excluded)."""
        out: dict[str, bool] = {}

        def walk(node: Tree, prefix: str) -> None:
            for name, child in node.items():
                path = f"{prefix}/{name}"
                out[path] = child is not None
                if child is not None:
                    walk(child, path)

        with self._lock:
            walk(self.root, "")
        return out

    def read_marker(self) -> str | None:
        return self._marker

    def write_marker(self, text: str) -> None:
        self._marker = text

    # ------------------------------------------------------------------ operations

    def create(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            if name in parent:
                raise _err(errno.EEXIST, path)
            parent[name] = None

    def _stat(self, path: str) -> Tree | None:
        parts = self._split(path)
        if not parts:
            return self.root
        parent = self._dir(parts[:-1], path)
        child = parent.get(parts[-1], _MISSING)
        if child is _MISSING:
            raise _err(errno.ENOENT, path)
        return child

    def open(self, path: str) -> None:
        with self._lock:
            self._stat(path)

    def list_file(self, path: str) -> None:
        with self._lock:
            self._stat(path)

    def getfileinfo(self, path: str) -> None:
        with self._lock:
            self._stat(path)

    def list_dir(self, path: str) -> list[str]:
        with self._lock:
            node = self._stat(path)
            if node is None:
                raise _err(errno.ENOTDIR, path)
            return list(node)

    def delete(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            child = parent.get(name, _MISSING)
            if child is _MISSING:
                raise _err(errno.ENOENT, path)
            if child is not None:
                raise _err(errno.EISDIR, path)
            del parent[name]

    def mkdirs(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            if name in parent:
                raise _err(errno.EEXIST, path)
            parent[name] = {}

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            sparent, sname = self._parent(src)
            node = sparent.get(sname, _MISSING)
            if node is _MISSING:
                raise _err(errno.ENOENT, src)
            dparent, dname = self._parent(dst)
            if dname in dparent:
                raise _err(errno.EEXIST, dst)
            if node is not None and _inside(self._split(dst), self._split(src)):
                raise _err(errno.EINVAL, dst)
            del sparent[sname]
            dparent[dname] = node


def _inside(path: list[str], ancestor: list[str]) -> bool:
    return len(path) > len(ancestor) and path[: len(ancestor)] == ancestor


class _Missing(Enum):
    """No entry of that name (an enum, so that ``is _MISSING`` narrows types)."""

    MISSING = 0


_MISSING: Final = _Missing.MISSING
