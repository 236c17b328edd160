"""``memory``: an in-memory namespace, the reference model every backend is checked against.

The namespace is a tree of dicts (a directory maps names to a sub-dict, a file maps to a
``FileNode``). Errors are raised as the ``OSError`` subclasses a POSIX file system raises, so they
classify the same way:

* a missing path or parent, or a file used as a directory: ``not_found``;
* ``create`` / ``mkdirs`` / ``rename`` onto an existing name: ``exists``;
* ``delete`` of a directory, ``list_dir`` of a file: ``other`` / ``not_found`` (as on Linux).

File operations on directories (``open`` of a directory ...) are not part of the contract.

Every command with a path is performed (the reference's ``Capabilities``: ``NAMENODE`` is skipped,
``CONCAT`` has no sources in a schedule and runs as ``APPEND``). A file node records its size
(always 0: no operation writes data), modification time and extended attributes, so the
conformance suite can see the effects: ``SET_TIMES`` sets ``SET_TIMES_NS``, ``TRUNCATE`` empties,
``APPEND`` keeps the file, ``CREATE_OVERWRITE`` makes or empties it, ``MKDIRS_EXISTING`` succeeds
on a directory, ``DELETE_DIR`` removes a tree. Reading commands (``CONTENT_SUMMARY``,
``CHECK_ACCESS``, ``GET_*``, ``LIST_XATTRS``) and the writes that leave the value as it was
(``SET_PERMISSION``, ``SET_OWNER``, ``SET_REPLICATION``, ``SET_STORAGE_POLICY``) check that the
object exists and is of the right kind.
Each process has its own namespace (``process_local``): phase 1 runs inside every worker, and
a worker's listings do not see files that other workers created.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final

from mimesisbench.backends.base import SET_TIMES_NS, Backend, Capabilities, Inspection, SyncOp
from mimesisbench.schedule.format import OpCode


@dataclass
class FileNode:
    """A file of the reference namespace (mutable; guarded by the backend's lock)."""

    size: int = 0
    mtime_ns: int = field(default_factory=time.time_ns)
    xattrs: dict[str, bytes] = field(default_factory=dict)


class Tree(dict[str, "Tree | FileNode"]):
    """A directory of the reference namespace: its entries, plus its extended attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.xattrs: dict[str, bytes] = {}

#: the reference performs every command with a path; ``CONCAT`` (no sources in a schedule) runs as ``APPEND``
MEMORY_CAPABILITIES = Capabilities(
    commands=frozenset(OpCode) - {OpCode.NAMENODE, OpCode.CONCAT}, mapped={OpCode.CONCAT: OpCode.APPEND}
)


def _err(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)


class MemoryBackend(Backend):
    """The reference model: a dict tree guarded by one lock."""

    scheme: ClassVar[str] = "memory"
    process_local: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 1

    @property
    def capabilities(self) -> Capabilities:
        return MEMORY_CAPABILITIES

    def __init__(self, url: str = "memory") -> None:
        super().__init__(url)
        self.root: Tree = Tree()
        self._lock = threading.Lock()
        self._marker: str | None = None

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _split(path: str) -> list[str]:
        return [p for p in path.split("/") if p]

    def _dir(self, parts: list[str], path: str, make: bool = False) -> Tree:
        """The directory ``parts``; with ``make`` the missing ones are made on the way (``create``
        makes missing parents), else a missing one is ENOENT."""
        node: Tree = self.root
        for name in parts:
            child = node.get(name, _MISSING)
            if child is _MISSING:
                if not make:
                    raise _err(errno.ENOENT, path)
                child = node[name] = Tree()
            if isinstance(child, FileNode):
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
                out[path] = not isinstance(child, FileNode)
                if not isinstance(child, FileNode):
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
            parts = self._split(path)
            if not parts:
                raise _err(errno.EEXIST, path)
            parent, name = self._dir(parts[:-1], path, make=True), parts[-1]
            if name in parent:
                raise _err(errno.EEXIST, path)
            parent[name] = FileNode()

    def _stat(self, path: str) -> Tree | FileNode:
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
            if isinstance(node, FileNode):
                raise _err(errno.ENOTDIR, path)
            return list(node)

    def delete(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            child = parent.get(name, _MISSING)
            if child is _MISSING:
                raise _err(errno.ENOENT, path)
            if not isinstance(child, FileNode):
                raise _err(errno.EISDIR, path)
            del parent[name]

    def mkdirs(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            if name in parent:
                raise _err(errno.EEXIST, path)
            parent[name] = Tree()

    def rename(self, src: str, dst: str) -> None:
        with self._lock:
            sparent, sname = self._parent(src)
            node = sparent.get(sname, _MISSING)
            if node is _MISSING:
                raise _err(errno.ENOENT, src)
            dparent, dname = self._parent(dst)
            if dname in dparent:
                raise _err(errno.EEXIST, dst)
            if not isinstance(node, FileNode) and _inside(self._split(dst), self._split(src)):
                raise _err(errno.EINVAL, dst)
            del sparent[sname]
            dparent[dname] = node


    # ------------------------------------------------------------------ commands of format 2

    def _file(self, path: str) -> FileNode:
        node = self._stat(path)
        if not isinstance(node, FileNode):
            raise _err(errno.EISDIR, path)
        return node

    def _directory(self, path: str) -> Tree:
        node = self._stat(path)
        if isinstance(node, FileNode):
            raise _err(errno.ENOTDIR, path)
        return node

    def check_file(self, path: str) -> None:
        """A command that reads (or rewrites unchanged) a file's metadata: the file must exist."""
        with self._lock:
            self._file(path)

    def check_directory(self, path: str) -> None:
        """The same for a directory."""
        with self._lock:
            self._directory(path)

    def set_times(self, path: str) -> None:
        with self._lock:
            node = self._stat(path)
            if isinstance(node, FileNode):
                node.mtime_ns = SET_TIMES_NS

    def truncate(self, path: str) -> None:
        with self._lock:
            node = self._file(path)
            node.size = 0
            node.mtime_ns = time.time_ns()

    def append(self, path: str) -> None:
        with self._lock:
            self._file(path)

    def create_overwrite(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            if name in parent and not isinstance(parent[name], FileNode):
                raise _err(errno.EISDIR, path)
            parent[name] = FileNode()

    def mkdirs_existing(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            child = parent.get(name, _MISSING)
            if child is _MISSING:
                parent[name] = Tree()
            elif isinstance(child, FileNode):
                raise _err(errno.EEXIST, path)

    def mkdirs_parents(self, path: str) -> None:
        """``mkdirs_existing`` that makes the missing parents (HDFS's ``mkdirs``)."""
        with self._lock:
            parts = self._split(path)
            if not parts:
                return
            parent = self._dir(parts[:-1], path, make=True)
            child = parent.get(parts[-1], _MISSING)
            if child is _MISSING:
                parent[parts[-1]] = Tree()
            elif isinstance(child, FileNode):
                raise _err(errno.EEXIST, path)

    def delete_dir(self, path: str) -> None:
        with self._lock:
            parent, name = self._parent(path)
            child = parent.get(name, _MISSING)
            if child is _MISSING:
                raise _err(errno.ENOENT, path)
            if isinstance(child, FileNode):
                raise _err(errno.ENOTDIR, path)
            del parent[name]

    def set_xattr(self, path: str) -> None:
        with self._lock:
            self._stat(path).xattrs[XATTR_NAME] = XATTR_VALUE

    def list_xattrs(self, path: str) -> list[str]:
        with self._lock:
            return sorted(self._stat(path).xattrs)

    def inspect(self, path: Any) -> Inspection:
        with self._lock:
            node = self._stat(str(path))
            if isinstance(node, FileNode):
                return Inspection(is_dir=False, size=node.size, mtime_ns=node.mtime_ns)
            return Inspection(is_dir=True, size=0, mtime_ns=None)

    def operation_table(self) -> dict[OpCode, SyncOp]:
        o = OpCode
        table = super().operation_table()
        table.update({
            o.CREATE_OVERWRITE: self.create_overwrite,
            o.MKDIRS_EXISTING: self.mkdirs_existing,
            o.MKDIRS_PARENTS: self.mkdirs_parents,
            o.GETFILEINFO_ABSENT: self.getfileinfo_absent,
            o.GETFILEINFO_ABSENT_DIR: self.getfileinfo_absent,
            o.DELETE_DIR: self.delete_dir,
            o.SET_TIMES: self.set_times,
            o.SET_TIMES_DIR: self.set_times,
            o.TRUNCATE: self.truncate,
            o.APPEND: self.append,
            o.SET_XATTR: self.set_xattr,
            o.SET_XATTR_DIR: self.set_xattr,
            o.LIST_XATTRS: self.list_xattrs,
            o.LIST_XATTRS_DIR: self.list_xattrs,
        })
        for op in MEMORY_CAPABILITIES.commands:
            if op not in table:
                table[op] = self.check_directory if op.on_directory else self.check_file
        return table


#: the extended attribute SET_XATTR sets (posix: in the ``user`` namespace; hdfs maps the command)
XATTR_NAME = "user.mimesisbench"
XATTR_VALUE = b"1"


def _inside(path: list[str], ancestor: list[str]) -> bool:
    return len(path) > len(ancestor) and path[: len(ancestor)] == ancestor


class _Missing(Enum):
    """No entry of that name (an enum, so that ``is _MISSING`` narrows types)."""

    MISSING = 0


_MISSING: Final = _Missing.MISSING
