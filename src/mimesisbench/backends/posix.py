"""``posix:/some/dir``: any mounted file system, through plain system calls.

==================  =========================================================================
operation           system calls
==================  =========================================================================
create              ``open(O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW)`` + ``close``; on ``ENOENT``
                    the missing parents are made (``os.makedirs``) and the open retried, as
                    HDFS's ``create`` makes them
open                ``open(O_RDONLY | O_NOFOLLOW)`` + ``close`` (no data read)
list_file           ``lstat`` of the file (what ``ls FILE`` does; HDFS listStatus on a file
                    returns its status)
list_dir            ``os.listdir`` (``getdents`` until the end; entries are not stat'ed)
delete              ``unlink``
mkdirs              ``mkdir`` of one directory whose parent exists
rename_file/_dir    ``rename`` (after an ``lstat`` of the target: see ``rename``)
getfileinfo(_dir)   ``lstat`` (symlinks are never followed, so a planted link cannot lead out)
content_summary     file: ``lstat``; directory: ``du``: ``scandir`` of the whole tree, an
                    ``lstat`` per entry (``DirEntry.stat``), symlinks not followed
set_permission      ``open(O_NOFOLLOW)`` + ``fstat`` + ``fchmod`` to the mode it has + ``close``
set_owner           ``open(O_NOFOLLOW)`` + ``fstat`` + ``fchown`` to the owner and group it has
set_times           ``utimensat(AT_SYMLINK_NOFOLLOW)`` to ``SET_TIMES_NS`` (2000-01-01, both times)
append              ``open(O_WRONLY | O_APPEND | O_NOFOLLOW)`` + ``close``
truncate            ``open(O_WRONLY | O_NOFOLLOW)`` + ``ftruncate(0)`` + ``close``
create_overwrite    ``open(O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW)`` + ``close``
mkdirs_existing     ``mkdir``; ``EEXIST`` on a directory is success
mkdirs_parents      ``mkdirs_existing``; on ``ENOENT`` the missing parents are made
                    (``os.makedirs``) and it is retried (``mkdir -p``, HDFS's ``mkdirs``)
delete_dir          ``shutil.rmtree`` (fd-based on Linux: never follows a symlink)
check_access        ``faccessat(R_OK, AT_SYMLINK_NOFOLLOW)`` (+ ``lstat`` to tell a missing
                    path from a refused one)
get_acl_status      ``lgetxattr(system.posix_acl_access)`` (no ACL, ``ENODATA``: success)
list_xattrs         ``llistxattr``
get_xattrs          ``llistxattr`` + ``lgetxattr`` of each
set_xattr           ``lsetxattr(user.mimesisbench = 1)``
==================  =========================================================================

Mapped (performed as the nearest operation, counted under their own label): ``concat`` (a
schedule names no sources) runs as ``append``. Skipped (not issued; counted per command in the
summary): ``set_replication``, ``set_storage_policy(_dir)``, ``get_storage_policy(_dir)`` (a
POSIX file system has no replication or storage policies) and ``namenode`` (no NameNode). When
the base's file system has no extended attributes (``ENOTSUP``; probed once per instance on the
base), the ACL and xattr commands are skipped too.

Every path is ``<base><relative path>``, handed to the system calls as bytes; relative paths are validated once per worker
(``safety.check_relative_series``) and the tree is checked for symlinks before phase 2.

With the native extension installed (and ``MIMESISBENCH_NATIVE`` not ``0``), the replay's lanes
of a worker whose operations are all of format version 1 (op codes 1-9, what the native lane
knows) run in native code (``native/src/posix.rs``: the same system calls, the GIL released, so the
lanes of a worker run in parallel); the methods below stay the reference and serve phase 1.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import polars as pl

from mimesisbench.backends import safety
from mimesisbench.backends.base import (
    DATA_DIR,
    SET_TIMES_NS,
    V1_COMMANDS,
    Backend,
    Capabilities,
    DataRoot,
    Inspection,
    NativeLaneRunner,
    SyncOp,
)
from mimesisbench.errors import ConfigError, SafetyError
from mimesisbench.native import native_module
from mimesisbench.schedule.format import OpCode

_CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(path: str | bytes, _open=os.open, _close=os.close, _flags=_CREATE_FLAGS) -> None:  # noqa: ANN001
    try:
        fd = _open(path, _flags, 0o644)
    except FileNotFoundError:
        # a missing parent is made, as HDFS's create does: a workload makes a directory it
        # deleted again by creating a file in it (``synth.recreation``)
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        fd = _open(path, _flags, 0o644)
    _close(fd)


def _open_close(path: str | bytes, _open=os.open, _close=os.close, _flags=_OPEN_FLAGS) -> None:  # noqa: ANN001
    _close(_open(path, _flags))


def _mkdir(path: str | bytes, _mkdir=os.mkdir) -> None:  # noqa: ANN001
    _mkdir(path, 0o755)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_OVERWRITE_FLAGS = os.O_CREAT | os.O_TRUNC | os.O_WRONLY | _NOFOLLOW
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | _NOFOLLOW
_WRITE_FLAGS = os.O_WRONLY | _NOFOLLOW
#: open flags for a descriptor on a file or a directory to change its metadata (fchmod and fchown
#: need a real descriptor, not ``O_PATH``)
_META_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
XATTR_NAME = "user.mimesisbench"
ACL_XATTR = "system.posix_acl_access"


def _create_overwrite(path: str | bytes) -> None:
    os.close(os.open(path, _OVERWRITE_FLAGS, 0o644))


def _append(path: str | bytes) -> None:
    os.close(os.open(path, _APPEND_FLAGS))


def _truncate(path: str | bytes) -> None:
    fd = os.open(path, _WRITE_FLAGS)
    try:
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def _mkdirs_existing(path: str | bytes) -> None:
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise


def _mkdirs_parents(path: str | bytes) -> None:
    try:
        _mkdirs_existing(path)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        _mkdirs_existing(path)


def _set_permission(path: str | bytes) -> None:
    fd = os.open(path, _META_FLAGS)
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode))
    finally:
        os.close(fd)


def _set_owner(path: str | bytes) -> None:
    fd = os.open(path, _META_FLAGS)
    try:
        st = os.fstat(fd)
        os.fchown(fd, st.st_uid, st.st_gid)
    finally:
        os.close(fd)


def _set_times(path: str | bytes) -> None:
    os.utime(path, ns=(SET_TIMES_NS, SET_TIMES_NS), follow_symlinks=False)


def _lstat_absent(path: str | bytes) -> None:
    """``lstat`` of an object its stream deleted (GETFILEINFO_ABSENT): not found is its answer."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return


def _content_summary_dir(path: str | bytes) -> None:
    """``du``: every entry of the tree below ``path`` stat'ed once (symlinks not followed)."""
    os.lstat(path)
    stack = [path]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)


def _delete_dir(path: str | bytes) -> None:
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fsdecode(path))
    shutil.rmtree(path)


def _check_access(path: str | bytes) -> None:
    if not os.access(path, os.R_OK, follow_symlinks=False):
        os.lstat(path)  # missing: not_found
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))


def _get_acl_status(path: str | bytes) -> None:
    try:
        os.getxattr(path, ACL_XATTR, follow_symlinks=False)
    except OSError as exc:
        if exc.errno != errno.ENODATA:  # no ACL: the mode bits are the ACL
            raise


def _list_xattrs(path: str | bytes) -> list[str]:
    return os.listxattr(path, follow_symlinks=False)


def _get_xattrs(path: str | bytes) -> None:
    for name in os.listxattr(path, follow_symlinks=False):
        try:
            os.getxattr(path, name, follow_symlinks=False)
        except OSError as exc:
            if exc.errno != errno.ENODATA:  # removed in between
                raise


def _set_xattr(path: str | bytes) -> None:
    os.setxattr(path, XATTR_NAME, b"1", follow_symlinks=False)


_XATTR_OPS = frozenset({
    OpCode.GET_ACL_STATUS, OpCode.GET_ACL_STATUS_DIR, OpCode.LIST_XATTRS, OpCode.LIST_XATTRS_DIR,
    OpCode.GET_XATTRS, OpCode.GET_XATTRS_DIR, OpCode.SET_XATTR, OpCode.SET_XATTR_DIR,
})
#: what a POSIX file system cannot do: no replication, no storage policies, no NameNode
POSIX_SKIPPED = frozenset({
    OpCode.SET_REPLICATION, OpCode.SET_STORAGE_POLICY, OpCode.SET_STORAGE_POLICY_DIR,
    OpCode.GET_STORAGE_POLICY, OpCode.GET_STORAGE_POLICY_DIR, OpCode.NAMENODE,
})
POSIX_MAPPED: Mapping[OpCode, OpCode] = MappingProxyType({OpCode.CONCAT: OpCode.APPEND})


def posix_capabilities(xattrs: bool) -> Capabilities:
    """The posix backend's table; ``xattrs``: the file system has extended attributes."""
    skipped = POSIX_SKIPPED | (frozenset() if xattrs else _XATTR_OPS)
    return Capabilities(commands=frozenset(OpCode) - skipped - set(POSIX_MAPPED), mapped=POSIX_MAPPED)


def xattrs_supported(path: str) -> bool:
    """Whether the file system at ``path`` (an existing directory) has ``user`` extended
    attributes: the probe sets one on a scratch file made for it and removes both."""
    probe = os.path.join(path, f".mimesisbench-xattr-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW, 0o600)
    except OSError:
        return False  # cannot tell (read-only base ...): the commands would fail, so skip them
    try:
        os.setxattr(fd, XATTR_NAME, b"1")
        os.listxattr(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass


#: the operations the native lane (``native/src/posix.rs``) performs: those of format version 1
NATIVE_OPS: frozenset[OpCode] = V1_COMMANDS


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
        self._caps: Capabilities | None = None

    @property
    def capabilities(self) -> Capabilities:
        """Every command but replication and storage policies (and extended attributes where
        the file system has none: probed once, on the base once it exists)."""
        if self._caps is None:
            if not os.path.isdir(self.base):
                return posix_capabilities(xattrs=False)  # not set up yet: do not cache
            self._caps = posix_capabilities(xattrs_supported(self.base))
        return self._caps

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

    def data_root(self) -> DataRoot:
        return DataRoot(os.path.join(self.base, DATA_DIR), shared_writes=True)

    def describe(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "url": self.url, "base": self.base, "fs_type": fs_type(self.base)}

    def native_paths(self, rel: pl.Series) -> pl.Series:
        # bytes: the system calls then skip encoding the path on every call
        return safety.under_base(rel, self.base).cast(pl.Binary)

    def operation_table(self) -> dict[OpCode, SyncOp]:
        """The replay's operations: system calls directly where one call is the operation."""
        o = OpCode
        table = super().operation_table()
        table.update(
            {
                o.CREATE: _create,
                o.OPEN: _open_close,
                o.LIST_FILE: os.lstat,
                o.LIST_DIR: os.listdir,
                o.DELETE: os.unlink,
                o.MKDIRS: _mkdir,
                o.GETFILEINFO: os.lstat,
                o.GETFILEINFO_DIR: os.lstat,
                o.GETFILEINFO_ABSENT: _lstat_absent,
                o.GETFILEINFO_ABSENT_DIR: _lstat_absent,
                o.CONTENT_SUMMARY: os.lstat,
                o.CONTENT_SUMMARY_DIR: _content_summary_dir,
                o.SET_PERMISSION: _set_permission,
                o.SET_PERMISSION_DIR: _set_permission,
                o.SET_OWNER: _set_owner,
                o.SET_OWNER_DIR: _set_owner,
                o.SET_TIMES: _set_times,
                o.SET_TIMES_DIR: _set_times,
                o.APPEND: _append,
                o.TRUNCATE: _truncate,
                o.CREATE_OVERWRITE: _create_overwrite,
                o.MKDIRS_EXISTING: _mkdirs_existing,
                o.MKDIRS_PARENTS: _mkdirs_parents,
                o.DELETE_DIR: _delete_dir,
                o.CHECK_ACCESS: _check_access,
                o.CHECK_ACCESS_DIR: _check_access,
                o.GET_ACL_STATUS: _get_acl_status,
                o.GET_ACL_STATUS_DIR: _get_acl_status,
                o.LIST_XATTRS: _list_xattrs,
                o.LIST_XATTRS_DIR: _list_xattrs,
                o.GET_XATTRS: _get_xattrs,
                o.GET_XATTRS_DIR: _get_xattrs,
                o.SET_XATTR: _set_xattr,
                o.SET_XATTR_DIR: _set_xattr,
            }
        )
        return {op: fn for op, fn in table.items() if op in self.capabilities.commands}

    def inspect(self, path: Any) -> Inspection:
        st = os.lstat(path)
        return Inspection(is_dir=stat.S_ISDIR(st.st_mode), size=st.st_size, mtime_ns=st.st_mtime_ns)

    def native_lane_runner(self) -> NativeLaneRunner | None:
        """``run_posix_lane`` of the native extension, when it is installed and turned on. It knows
        the operations of format version 1 only (``NATIVE_OPS``): the worker uses it for a lane
        only when every operation of the lane is one of them."""
        module = native_module()
        if module is None or not hasattr(module, "run_posix_lane"):
            return None
        return NativeLaneRunner(
            name="posix",
            version=str(getattr(module, "__version__", "unknown")),
            run=module.run_posix_lane,
            stop_flag=module.StopFlag,
            progress=module.LaneProgress,
            key_gate=getattr(module, "KeyGate", None),
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
