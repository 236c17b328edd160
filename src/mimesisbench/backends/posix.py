"""``posix:/some/dir``: any mounted file system, through plain system calls.

=============  ==============================================================================
operation      system calls
=============  ==============================================================================
create         ``open(O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW)`` + ``close``
open           ``open(O_RDONLY | O_NOFOLLOW)`` + ``close`` (no data read)
list_file      ``lstat`` of the file (what ``ls FILE`` does; HDFS listStatus on a file returns
               its status)
list_dir       ``os.listdir`` (``getdents`` until the end; entries are not stat'ed)
delete         ``unlink``
mkdirs         ``mkdir`` of one directory whose parent exists
rename         ``rename``
getfileinfo    ``lstat`` (symlinks are never followed, so a planted link cannot lead out)
=============  ==============================================================================

Every path is ``<base><relative path>``, handed to the system calls as bytes; relative paths are validated once per worker
(``safety.check_relative_series``) and the tree is checked for symlinks before phase 2.

With the native extension installed (and ``MIMESISBENCH_NATIVE`` not ``0``), the replay's lanes
run in native code (``native/src/posix.rs``: the same system calls, the GIL released, so the
lanes of a worker run in parallel); the methods below stay the reference and serve phase 1.
"""

from __future__ import annotations

import errno
import os
from typing import Any, ClassVar

import polars as pl

from mimesisbench.backends import safety
from mimesisbench.backends.base import Backend, NativeLaneRunner, SyncOp
from mimesisbench.errors import ConfigError, SafetyError
from mimesisbench.native import native_module
from mimesisbench.schedule.format import OpCode

_CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(path: str | bytes, _open=os.open, _close=os.close, _flags=_CREATE_FLAGS) -> None:  # noqa: ANN001
    _close(_open(path, _flags, 0o644))


def _open_close(path: str | bytes, _open=os.open, _close=os.close, _flags=_OPEN_FLAGS) -> None:  # noqa: ANN001
    _close(_open(path, _flags))


def _mkdir(path: str | bytes, _mkdir=os.mkdir) -> None:  # noqa: ANN001
    _mkdir(path, 0o755)


class PosixBackend(Backend):
    """A directory on a mounted file system."""

    scheme: ClassVar[str] = "posix"
    default_concurrency: ClassVar[int] = 4

    def __init__(self, url: str) -> None:
        super().__init__(url)
        _, _, rest = url.partition(":")
        if rest.startswith("//"):
            rest = rest[2:]
        if not rest:
            raise ConfigError(f"backend {url!r}: give a base directory, e.g. posix:/tmp/mimesis")
        self.base = safety.resolve_base(rest)
        self.created_base = False

    def default_lanes(self) -> int:
        """Four lanes, but no more than the cores this process may use: lanes are threads that
        spin briefly before due times, so more of them than cores take each other's cores (the
        p99 lateness shows it), and a local file system's calls do not block. On a mount whose
        calls block (NFS, Lustre) ask for more with ``--concurrency``."""
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
        return max(1, min(self.default_concurrency, cores))

    # ------------------------------------------------------------------ lifecycle

    def setup(self, *, reuse: bool) -> None:
        self.created_base = safety.prepare_base(self.base, reuse=reuse)

    def connect(self) -> None:
        if not os.path.isdir(self.base) or os.path.islink(self.base):
            from mimesisbench.errors import BackendError

            raise BackendError(f"posix base directory {self.base} is missing or not a directory")

    def read_marker(self) -> str | None:
        try:
            with open(os.path.join(self.base, safety.NAMESPACE_MARKER), encoding="utf-8") as fh:
                return fh.read()
        except OSError:
            return None

    def write_marker(self, text: str) -> None:
        target = os.path.join(self.base, safety.NAMESPACE_MARKER)
        tmp = target + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError as exc:
            raise SafetyError(f"cannot write the namespace marker into the base directory {self.base}: {exc.strerror}") from None

    def lock_path(self) -> str | None:
        return os.path.join(self.base, safety.LOCK_FILE)

    def describe(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "url": self.url, "base": self.base, "fs_type": fs_type(self.base)}

    def native_paths(self, rel: pl.Series) -> pl.Series:
        # bytes: the system calls then skip encoding the path on every call
        return safety.under_base(rel, self.base).cast(pl.Binary)

    def sync_ops(self) -> dict[OpCode, SyncOp]:
        """The replay's dispatch table: system calls directly where one call is the operation."""
        table = super().sync_ops()
        table.update(
            {
                OpCode.CREATE: _create,
                OpCode.OPEN: _open_close,
                OpCode.LIST_FILE: os.lstat,
                OpCode.LIST_DIR: os.listdir,
                OpCode.DELETE: os.unlink,
                OpCode.MKDIRS: _mkdir,
                OpCode.GETFILEINFO: os.lstat,
            }
        )
        return table

    def native_lane_runner(self) -> NativeLaneRunner | None:
        """``run_posix_lane`` of the native extension, when it is installed and turned on."""
        module = native_module()
        if module is None or not hasattr(module, "run_posix_lane"):
            return None
        return NativeLaneRunner(
            name="posix",
            version=str(getattr(module, "__version__", "unknown")),
            run=module.run_posix_lane,
            stop_flag=module.StopFlag,
            progress=module.LaneProgress,
        )

    def verify_namespace(self, rel_dirs: list[str]) -> None:
        """Check the tree for symlinks and escapes (see ``safety.verify_tree``)."""
        safety.verify_tree(self.base, rel_dirs)

    # ------------------------------------------------------------------ operations

    def create(self, path: str) -> None:
        _create(path)

    def open(self, path: str) -> None:
        _open_close(path)

    def list_file(self, path: str) -> None:
        os.lstat(path)

    def list_dir(self, path: str) -> list[str]:
        return os.listdir(path)

    def delete(self, path: str) -> None:
        os.unlink(path)

    def mkdirs(self, path: str) -> None:
        _mkdir(path)

    def rename(self, src: str, dst: str) -> None:
        # rename(2) replaces an existing target silently; the namespace semantics (and HDFS) say
        # "exists", so check first (the check and the rename are two system calls; documented)
        if os.path.lexists(dst):
            if not os.path.lexists(src):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
        os.rename(src, dst)

    def getfileinfo(self, path: str) -> None:
        os.lstat(path)


def fs_type(path: str) -> str:
    """The file system type of the mount holding ``path`` (``unknown`` when not found)."""
    try:
        import psutil

        real = os.path.realpath(path)
        best, best_len = "unknown", -1
        for part in psutil.disk_partitions(all=True):
            mount = part.mountpoint.rstrip("/") or "/"
            if (real == mount or real.startswith(mount.rstrip("/") + "/") or mount == "/") and len(mount) > best_len:
                best, best_len = part.fstype, len(mount)
        return best
    except Exception:  # noqa: BLE001 - a fact for the manifest, never fatal
        return "unknown"
