"""``hdfs://host:port/base/dir``: a real HDFS NameNode through ``hdfs-native`` (Rust, no JVM).

Each operation is the NameNode RPC(s) below, checked against the NameNode's audit log and its
per-method RPC counters (``RpcDetailedActivityForPort<port>``) on Hadoop 3.4.3:

=============  ===========================================  ====================================
operation      client calls                                 NameNode RPCs (audit ``cmd=``)
=============  ===========================================  ====================================
create         ``create(path, create_parent=True)`` and     ``create`` + ``complete``
               ``close()`` of the empty file (a missing     (``cmd=create``; complete is not
               parent is made on the way, as by             audited; the parents made are not)
               ``FileSystem.create``)
open           ``read(path)`` and ``close()``, no data      ``getBlockLocations`` (``cmd=open``)
list_file      ``list_status(file)`` drained                ``getListing`` (``cmd=listStatus``)
list_dir       ``list_status(dir)`` drained                 ``getListing`` per 1000 entries
                                                            (``cmd=listStatus``)
delete         ``delete(path, recursive=False)``            ``delete`` (``cmd=delete``)
mkdirs         ``get_file_info`` then ``mkdirs(path)``      ``getFileInfo`` + ``mkdirs``
               (``?mkdirs=native``: ``mkdirs`` alone)       (``cmd=getfileinfo``, ``cmd=mkdirs``)
rename         ``rename(src, dst, overwrite=False)``        ``rename2`` (``cmd=rename
                                                            (options=[NONE])``); see below
getfileinfo    ``get_file_info(path)``                      ``getFileInfo`` (``cmd=getfileinfo``)
=============  ===========================================  ====================================

The commands of schedule format 2 (on a file or, ``*_dir``, a directory):

=====================  ============================================  ===============================
operation              client calls                                  audit ``cmd=``
=====================  ============================================  ===============================
getfileinfo_dir        ``get_file_info(dir)``                        ``getfileinfo``
content_summary(_dir)  ``get_content_summary(path)``                 ``contentSummary``
set_permission(_dir)   ``set_permission(path, 0o644 | 0o755)``: the   ``setPermission``
                       mode the benchmark makes files / directories
set_owner(_dir)        ``set_owner(path, owner, group)`` of the base  ``setOwner``
                       (read once at ``connect``: the owner it has)
set_times(_dir)        ``set_times(path, t, t)``, t = 2000-01-01      ``setTimes``
set_replication        ``set_replication(path, r)``, r the            ``setReplication``
                       replication the client creates files with
append                 ``append(path)`` + ``close()`` (no data)       ``append``
create_overwrite       ``create(path, overwrite=True)`` + close       ``create``
mkdirs_existing        ``mkdirs(path)`` (HDFS semantics: succeeds     ``mkdirs``
                       when it exists)
delete_dir             ``delete(path, recursive=True)``               ``delete``
get_acl_status(_dir)   ``get_acl_status(path)``                       ``getAclStatus``
=====================  ============================================  ===============================

``hdfs-native`` has no call for the others; each is *mapped* to the nearest one it has (counted
under its own label; the summary's ``mapped`` says what it ran as): ``truncate`` (to length 0 of
an empty file) -> ``create_overwrite``; ``concat`` (no sources in a schedule) -> ``append``;
``check_access``, ``list_xattrs``, ``get_xattrs``, ``get_storage_policy`` (reads of one inode) ->
``getfileinfo``; ``set_xattr``, ``set_storage_policy`` (edit-logged writes of one inode's
attributes) -> ``set_permission`` (each ``_dir`` variant to the ``_dir`` one). ``namenode``
(pathless commands) is skipped: the client has no harmless NameNode-wide call.

HDFS ``mkdirs`` succeeds on an existing directory; the backend contract says ``exists``, so by
default ``mkdirs`` asks ``getFileInfo`` first (two RPCs when the directory is new, one when it
exists). ``?mkdirs=native`` sends the single ``mkdirs`` RPC with HDFS semantics instead.
Renaming a directory below itself onto an existing path: HDFS refuses it as "under source"
before checking the destination; only on that error path the backend asks ``getFileInfo(dst)``
and reports ``exists`` when it is there (as POSIX and the reference model do).

The backend is asynchronous (``is_async``): a worker's lanes are asyncio tasks on one thread and
``hdfs-native`` runs the RPCs on its own Rust runtime, so one process keeps thousands of calls
in flight. Listings are the exception: hdfs-native's async listing costs one awaited future per
entry, so ``aio_list_file``/``aio_list_dir`` run the blocking listing on a small thread pool
(same RPC). The synchronous methods (setup, phase 1, tests) use the blocking client, which
releases the GIL, so they scale over threads too.

Failures: ``FileNotFoundError``/``FileExistsError``/``PermissionError`` from the client, and
server exceptions it reports as ``RPCError`` (turned into ``HdfsOpError`` with an errno from the
Java class), are failed operations (``classify``). A plain ``OSError`` (connection refused or
reset after the client's retries) or any other client error is a ``BackendError``: the backend
is broken and the worker stops.

Configuration: the URL's authority is the NameNode (``host:port``) or a nameservice, resolved by
``hdfs-native`` from ``$HADOOP_CONF_DIR`` (``core-site.xml``/``hdfs-site.xml``), which is also
where HA and Kerberos settings come from. Query parameters that look like Hadoop keys
(``dfs.*``, ``ipc.*``, ``fs.*``, ``hadoop.*``) are passed to the client; ``mkdirs=`` and
``linger=`` are ours.

``linger=auto|off|DURATION`` (the native lane only): how the native lane reads replies. ``off``
wakes it on every reply; a duration (at most 10ms) naps that long whenever calls are in flight
and nothing may be issued, so one wake-up reads every reply that came meanwhile; ``auto`` (the
default) naps an eighth of the recent mean latency (at most 200us) with at least 16 calls in
flight, in an as-fast-as-possible dispatch (``micro``, runs at time scale 0) always, in a paced
run only while the lane is behind its schedule (an event is due that no slot is free for: the
server is not keeping up, and the latency is mostly the backlog). A reply's end time is when it
was read, so a nap makes it late by at most the nap: with ``auto``, within an eighth of the mean
latency. What it buys: on one machine the client's wake-up per reply is most of its CPU per call
(docs/hdfs-backend.md, "Measured"), CPU that a client on the server's host takes from the server
just when it is short of it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import re
import socket
import urllib.parse
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any, ClassVar, NoReturn
from xml.etree import ElementTree

import numpy as np
import polars as pl

from mimesisbench.backends import safety
from mimesisbench.backends.base import (
    DATA_DIR,
    SET_TIMES_NS,
    Backend,
    Capabilities,
    DataRoot,
    Inspection,
    NativeLaneRunner,
    Outcome,
    SyncOp,
    classify_oserror,
)
from mimesisbench.backends.wrap_spec import parse_duration
from mimesisbench.errors import BackendError, ConfigError, SafetyError
from mimesisbench.native import native_module
from mimesisbench.schedule.format import OpCode

#: without this, a dead NameNode makes every call retry for about three minutes
DEFAULT_CLIENT_CONFIG: Mapping[str, str] = MappingProxyType({"dfs.client.failover.max.attempts": "2"})
#: threads that run listings for the async operations (see ``aio_list_dir``)
LIST_THREADS = 8
_HADOOP_KEY = re.compile(r"^(dfs|ipc|fs|hadoop)\.[A-Za-z0-9_.\-]+$")
_MKDIRS_MODES = ("strict", "native")
#: ``linger=auto``'s longest nap and the longest ``linger=DURATION`` (see the module)
LINGER_AUTO_CAP_S = 200e-6
LINGER_MAX_S = 10e-3
_RPC_ERROR = re.compile(r'^RPCError\("([A-Za-z0-9_.$]+)", "(.*)', re.DOTALL)

#: Java exception class (last component) -> errno, for server errors without a Python subclass
_JAVA_ERRNO: Mapping[str, int] = MappingProxyType({
    "FileNotFoundException": errno.ENOENT,
    "ParentNotDirectoryException": errno.ENOTDIR,
    "FileAlreadyExistsException": errno.EEXIST,
    "PathIsNotEmptyDirectoryException": errno.ENOTEMPTY,
    "AccessControlException": errno.EACCES,
    "AuthorizationException": errno.EACCES,
    "SafeModeException": errno.EROFS,
})

#: modes set by ``set_permission``: what the benchmark makes files and directories with (umask 022)
FILE_MODE = 0o644
DIR_MODE = 0o755
#: ``set_times``' value in ms (``SET_TIMES_NS``)
SET_TIMES_MS = SET_TIMES_NS // 1_000_000
#: what ``hdfs-native`` has no call for, mapped to the nearest call it has
HDFS_MAPPED: Mapping[OpCode, OpCode] = MappingProxyType({
    OpCode.TRUNCATE: OpCode.CREATE_OVERWRITE,
    OpCode.CONCAT: OpCode.APPEND,
    OpCode.CHECK_ACCESS: OpCode.GETFILEINFO,
    OpCode.CHECK_ACCESS_DIR: OpCode.GETFILEINFO_DIR,
    OpCode.LIST_XATTRS: OpCode.GETFILEINFO,
    OpCode.LIST_XATTRS_DIR: OpCode.GETFILEINFO_DIR,
    OpCode.GET_XATTRS: OpCode.GETFILEINFO,
    OpCode.GET_XATTRS_DIR: OpCode.GETFILEINFO_DIR,
    OpCode.GET_STORAGE_POLICY: OpCode.GETFILEINFO,
    OpCode.GET_STORAGE_POLICY_DIR: OpCode.GETFILEINFO_DIR,
    OpCode.SET_XATTR: OpCode.SET_PERMISSION,
    OpCode.SET_XATTR_DIR: OpCode.SET_PERMISSION_DIR,
    OpCode.SET_STORAGE_POLICY: OpCode.SET_PERMISSION,
    OpCode.SET_STORAGE_POLICY_DIR: OpCode.SET_PERMISSION_DIR,
})
HDFS_CAPABILITIES = Capabilities(
    commands=frozenset(OpCode) - set(HDFS_MAPPED) - {OpCode.NAMENODE}, mapped=HDFS_MAPPED
)


class HdfsOpError(OSError):
    """A NameNode error for one operation that ``hdfs-native`` reports as a generic ``RPCError``."""

    def __init__(self, code: int, message: str, java_class: str) -> None:
        super().__init__(code, message)
        self.java_class = java_class


def translate_error(exc: BaseException, url: str) -> BaseException:
    """The exception an operation should raise for what ``hdfs-native`` raised.

    ``FileNotFoundError``/``FileExistsError``/``PermissionError`` (and other ``OSError``
    subclasses) stay failed operations; a server-side ``RPCError`` becomes ``HdfsOpError`` with an
    errno chosen from the Java exception class; a plain ``OSError`` (connection refused or reset,
    after the client's retries) or any other client error is a ``BackendError``.
    """
    if isinstance(exc, OSError) and type(exc) is not OSError and not isinstance(exc, ConnectionError | TimeoutError):
        return exc
    text = str(exc)
    match = _RPC_ERROR.match(text)
    if isinstance(exc, RuntimeError) and match:
        java_class = match.group(1)
        message = match.group(2).split("\\n", 1)[0].split("\n", 1)[0]
        short = java_class.rsplit(".", 1)[-1]
        code = _JAVA_ERRNO.get(short, errno.EIO)
        if short == "AccessControlException" and "is not a directory" in message:
            code = errno.ENOTDIR  # path resolution through a file (HDFS reports it this way)
        if short in ("StandbyException", "RetriableException"):
            return BackendError(f"HDFS at {url}: the NameNode cannot serve ({short}: {message})")
        return HdfsOpError(code, f"{short}: {message}", java_class)
    first = text.split("\n", 1)[0]
    return BackendError(f"HDFS at {url} failed: {type(exc).__name__}: {first}")


def security_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the Hadoop configuration the client reads asks for more than simple
    authentication: ``hadoop.security.authentication`` in ``core-site.xml`` or ``hdfs-site.xml``
    of ``HADOOP_CONF_DIR`` (else ``HADOOP_HOME/etc/hadoop``), where hdfs-native looks. An
    unreadable file counts as secured (the native lane, which speaks simple authentication only,
    then leaves the cluster to hdfs-native)."""
    env = os.environ if environ is None else environ
    conf = env.get("HADOOP_CONF_DIR") or (os.path.join(env["HADOOP_HOME"], "etc", "hadoop") if env.get("HADOOP_HOME") else "")
    value = None
    for name in ("core-site.xml", "hdfs-site.xml"):
        path = os.path.join(conf, name)
        if not conf or not os.path.isfile(path):
            continue
        try:
            root = ElementTree.parse(path).getroot()  # the user's own Hadoop configuration files
        except (OSError, ElementTree.ParseError):
            return True
        for prop in root.iter("property"):
            if (prop.findtext("name") or "").strip() == "hadoop.security.authentication":
                value = (prop.findtext("value") or "").strip()
    return value is not None and value != "simple"


def classify_hdfs(exc: BaseException) -> Outcome:
    """Map a failed HDFS operation to the ``Outcome`` taxonomy."""
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return Outcome.NOT_FOUND
    if isinstance(exc, FileExistsError):
        return Outcome.EXISTS
    if isinstance(exc, PermissionError):
        return Outcome.PERMISSION
    return classify_oserror(exc)


def _into_itself(err: BaseException) -> bool:
    """A rename refused because the destination is below the source.

    HDFS checks this before checking that the destination exists; the contract (and POSIX) says
    ``exists`` when it does, so on this error path only, one ``getFileInfo(dst)`` decides.
    """
    return isinstance(err, HdfsOpError) and "under source" in str(err)


def _not_found(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


def _exists(path: str) -> FileExistsError:
    return FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)


class HdfsUrl:
    """The parts of an ``hdfs://authority/base?options`` URL (validated; no I/O)."""

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url.strip())
        if parsed.scheme.lower() != "hdfs" or not parsed.netloc:
            raise ConfigError(f"backend {url!r}: use hdfs://host:port/base/dir (or hdfs://nameservice/base/dir)")
        base = parsed.path or ""
        if not base.startswith("/") or base.rstrip("/") == "":
            raise ConfigError(f"backend {url!r}: give a base directory below '/', e.g. hdfs://host:8020/mimesis")
        parts = base.strip("/").split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise ConfigError(f"backend {url!r}: the base directory has an empty, '.' or '..' component")
        self.base = "/" + "/".join(parts)
        self.authority = parsed.netloc
        self.fs_url = f"hdfs://{parsed.netloc}"
        self.host = parsed.hostname or ""
        try:
            self.port: int | None = parsed.port
        except ValueError:
            raise ConfigError(f"backend {url!r}: bad port") from None
        self.config: dict[str, str] = dict(DEFAULT_CLIENT_CONFIG)
        self.mkdirs_mode = "strict"
        self.linger = "auto"
        #: the native lane's nap in seconds (0: off) and whether it adapts (see the module)
        self.linger_s, self.linger_auto = LINGER_AUTO_CAP_S, True
        for key, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
            if key == "mkdirs":
                if value not in _MKDIRS_MODES:
                    raise ConfigError(f"backend {url!r}: mkdirs= must be one of {', '.join(_MKDIRS_MODES)}")
                self.mkdirs_mode = value
            elif key == "linger":
                self.linger = value.strip().lower()
                self.linger_s, self.linger_auto = _linger(self.linger, url)
            elif _HADOOP_KEY.match(key):
                self.config[key] = value
            else:
                raise ConfigError(
                    f"backend {url!r}: unknown option {key!r} "
                    "(use mkdirs=strict|native, linger=auto|off|DURATION or Hadoop keys like dfs.*)"
                )

    def native_linger(self) -> dict[str, Any]:
        """``linger=`` as the native ``HdfsLane`` takes it (keyword arguments)."""
        return {"linger_ns": round(self.linger_s * 1e9), "linger_auto": self.linger_auto}


def _linger(value: str, url: str) -> tuple[float, bool]:
    """``linger=``'s nap in seconds and whether it is automatic (see the module)."""
    if value == "auto":
        return LINGER_AUTO_CAP_S, True
    if value in ("off", "0"):
        return 0.0, False
    seconds = parse_duration(value, f"backend {url!r}: linger= (auto, off or a duration)")
    if not 0 < seconds <= LINGER_MAX_S:
        raise ConfigError(f"backend {url!r}: linger= must be auto, off or a duration up to 10ms (got {value!r})")
    return seconds, False


class HdfsBackend(Backend):
    """A directory of an HDFS namespace, driven through ``hdfs-native``."""

    scheme: ClassVar[str] = "hdfs"
    is_async: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 64
    phase1_concurrency: ClassVar[int] = 64  # bench_yahoo_phase1_hdfs.py; figure in the README's table
    thread_safe: ClassVar[bool] = True

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.parts = HdfsUrl(url)
        self.base = self.parts.base
        self.created_base = False
        self._client: Any = None
        self._aclient: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._retired: list[Any] = []  # closed clients, never dropped while the process runs (close)
        self._strict_mkdirs = self.parts.mkdirs_mode == "strict"
        self._owner: tuple[str, str] | None = None  # the base's (owner, group), read by connect
        self._replication: int | None = None  # what the client creates files with

    @property
    def capabilities(self) -> Capabilities:
        return HDFS_CAPABILITIES

    # ------------------------------------------------------------------ clients

    def _probe(self) -> None:
        """Fail in seconds (not after the client's retries) when a host:port does not answer."""
        if self.parts.port is None or not self.parts.host:
            return  # a nameservice: hdfs-native resolves and fails over by itself
        try:
            with socket.create_connection((self.parts.host, self.parts.port), timeout=5.0):
                pass
        except OSError as exc:
            raise BackendError(f"cannot reach the NameNode at {self.parts.authority}: {exc}") from None

    def _new_clients(self) -> None:
        try:
            from hdfs_native import AsyncClient, Client, WriteOptions
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigError(
                f"the hdfs backend needs the hdfs-native package ({exc}); pip install 'mimesisbench[hdfs]'"
            ) from None
        self._probe()
        try:
            self._client = Client(self.parts.fs_url, config=dict(self.parts.config))
            self._aclient = AsyncClient(self.parts.fs_url, config=dict(self.parts.config))
        except Exception as exc:  # noqa: BLE001 - bad configuration or unreachable
            raise BackendError(f"cannot open an HDFS client for {self.parts.fs_url}: {exc}") from None
        # a missing parent is made (``FileSystem.create``'s default): a workload makes a directory
        # it deleted again by creating a file in it (``synth.recreation``)
        self._wopts = WriteOptions(create_parent=True, overwrite=False)
        self._overwrite = WriteOptions(create_parent=False, overwrite=True)

    @property
    def client(self) -> Any:
        """The blocking ``hdfs_native.Client`` (connects on first use)."""
        if self._client is None:
            self._new_clients()
        return self._client

    def _fail(self, exc: BaseException) -> NoReturn:
        raise translate_error(exc, self.parts.fs_url) from None

    # ------------------------------------------------------------------ lifecycle

    def setup(self, *, reuse: bool) -> None:
        """Create or adopt the base (refusing a foreign, non-empty one unless ``reuse``)."""
        client = self.client
        base = self.base
        try:
            status = client.get_file_info(base)
        except FileNotFoundError:
            status = None
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        if status is None:
            try:
                client.mkdirs(base, 0o755, True)
                self._touch(posixpath.join(base, safety.OWNER_MARKER))
            except Exception as exc:  # noqa: BLE001
                raise SafetyError(f"cannot create the HDFS base directory {base}: {exc}") from None
            self.created_base = True
            return
        if not status.isdir:
            raise SafetyError(f"the HDFS base {base} exists and is not a directory")
        names = self._names(base)
        if not names:
            self._touch(posixpath.join(base, safety.OWNER_MARKER))
            self.created_base = True
            return
        if safety.OWNER_MARKER in names or reuse:
            return
        raise SafetyError(
            f"the HDFS base directory {base} is not empty and was not created by mimesisbench "
            f"(found e.g. {sorted(names)[0]!r}); give an empty or new directory, or --reuse to work in it anyway"
        )

    def connect(self) -> None:
        client = self.client
        try:
            status = client.get_file_info(self.base)
        except FileNotFoundError:
            raise BackendError(f"the HDFS base directory {self.base} is missing; run setup first") from None
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        if not status.isdir:
            raise BackendError(f"the HDFS base {self.base} is not a directory")
        self._owner = (status.owner, status.group)
        try:
            marker = client.get_file_info(posixpath.join(self.base, safety.OWNER_MARKER))
            self._replication = marker.replication or None
        except Exception:  # noqa: BLE001 - a base adopted with --reuse may have no marker
            self._replication = None

    def close(self) -> None:
        """Stop the listing pool and retire the clients without dropping them.

        hdfs-native shuts its tokio runtime down in the client's destructor while holding the GIL;
        a runtime thread completing an asyncio future (``call_soon_threadsafe``) then waits for the
        GIL for good. Seen: every worker of a run hung here, and the run with them. The clients are
        kept (``_retired``) until this object goes; a worker process ends with ``os._exit``, which
        runs no destructor.
        """
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._retired.extend(c for c in (self._client, self._aclient) if c is not None)
        self._client = None
        self._aclient = None

    def _touch(self, path: str) -> None:
        self.client.create(path, self._wopts).close()

    def _names(self, path: str) -> list[str]:
        try:
            return [s.path.rpartition("/")[2] for s in self.client.list_status(path)]
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def read_marker(self) -> str | None:
        try:
            with self.client.read(posixpath.join(self.base, safety.NAMESPACE_MARKER)) as reader:
                return reader.read().decode("utf-8")
        except OSError:
            return None

    def write_marker(self, text: str) -> None:
        from hdfs_native import WriteOptions

        target = posixpath.join(self.base, safety.NAMESPACE_MARKER)
        tmp = target + ".tmp"
        try:
            with self.client.create(tmp, WriteOptions(overwrite=True, create_parent=False)) as writer:
                writer.write(text.encode("utf-8"))
            self.client.rename(tmp, target, True)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def native_lane_runner(self) -> NativeLaneRunner | None:
        """The native extension's ``HdfsLane`` (a keyed runner, see ``run.lanes.run_native_lane``):
        its own NameNode RPC client (Hadoop IPC, simple authentication) replaying a worker's
        events outside the interpreter. Offered when the extension is installed and turned on and
        the URL names one NameNode (host:port) without Hadoop client keys; otherwise None (the
        Python dispatcher over ``hdfs-native``). Call after ``connect`` (it takes the base's owner
        and the replication files are made with). It performs every command of
        ``HDFS_CAPABILITIES``, as the ``aio_*`` methods do; a mapped op code is turned into the
        one it runs as before the call."""
        module = native_module()
        if module is None or not hasattr(module, "HdfsLane") or self._owner is None:
            return None
        if self.parts.port is None or dict(self.parts.config) != dict(DEFAULT_CLIENT_CONFIG) or security_enabled():
            return None  # a nameservice (HA), Hadoop client keys, Kerberos: hdfs-native's client handles them
        owner, group = self._owner
        lane = module.HdfsLane(
            self.parts.fs_url, strict_mkdirs=self._strict_mkdirs, owner=owner, group=group,
            replication=self._replication, **self.parts.native_linger(),
        )
        as_run = np.arange(256, dtype=np.uint8)  # op code -> the op code it runs as
        for op, target in HDFS_MAPPED.items():
            as_run[int(op)] = int(target)

        def run(ops: np.ndarray, *args: Any, **kwargs: Any) -> tuple[str, int, int, str]:
            return lane.run(as_run[ops], *args, **kwargs)

        return NativeLaneRunner(
            name="hdfs",
            version=str(getattr(module, "__version__", "unknown")),
            run=run,
            stop_flag=module.StopFlag,
            progress=module.LaneProgress,
            ops=frozenset(OpCode(op) for op in lane.ops) | frozenset(HDFS_MAPPED),
            keyed=True,
        )

    def verify_namespace(self, rel_dirs: list[str]) -> None:
        """Nothing to walk: paths are validated and joined below the base (HDFS has no symlinks
        enabled by default, and the client never follows one)."""
        safety.check_relative_series(pl.Series(rel_dirs, dtype=pl.String))

    def data_root(self) -> DataRoot:
        """HDFS files have one writer each, appended at the end: no shared (N-1) writes."""
        return DataRoot(f"{self.parts.fs_url}{posixpath.join(self.base, DATA_DIR)}", shared_writes=False,
                        client_config=dict(self.parts.config))

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "scheme": self.scheme,
            "url": self.url,
            "namenode": self.parts.authority,
            "base": self.base,
            "mkdirs": self.parts.mkdirs_mode,
            "linger": self.parts.linger,
            "client": "hdfs-native (async)",
            "hadoop_conf_dir": os.environ.get("HADOOP_CONF_DIR"),
        }
        try:
            from importlib.metadata import version

            info["client_version"] = version("hdfs-native")
        except Exception:  # noqa: BLE001 - a fact for the manifest
            pass
        return info

    def native_paths(self, rel: pl.Series) -> pl.Series:
        return safety.under_base(rel, self.base)

    def classify(self, exc: BaseException) -> Outcome:
        return classify_hdfs(exc)

    def remove_tree(self, path: str) -> None:
        """Delete ``path`` and everything below it (must be strictly below the base)."""
        norm = posixpath.normpath(path)
        if not norm.startswith(self.base.rstrip("/") + "/"):
            raise SafetyError(f"refusing to delete {path}: not below the base directory {self.base}")
        try:
            self.client.delete(norm, True)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    # ------------------------------------------------------------------ operations (sync)

    def create(self, path: str) -> None:
        try:
            self._client.create(path, self._wopts).close()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def open(self, path: str) -> None:
        try:
            self._client.read(path).close()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def list_file(self, path: str) -> None:
        try:
            for _ in self._client.list_status(path):
                pass
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def list_dir(self, path: str) -> list[str]:
        try:
            return [s.path.rpartition("/")[2] for s in self._client.list_status(path)]
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def delete(self, path: str) -> None:
        try:
            deleted = self._client.delete(path, False)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        if not deleted:
            raise _not_found(path)

    def mkdirs(self, path: str) -> None:
        client = self._client
        try:
            if self._strict_mkdirs:
                try:
                    client.get_file_info(path)
                except FileNotFoundError:
                    pass
                else:
                    raise _exists(path)
            client.mkdirs(path, 0o755, False)
        except FileExistsError:
            raise
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def rename(self, src: str, dst: str) -> None:
        try:
            self._client.rename(src, dst, False)
        except Exception as exc:  # noqa: BLE001
            err = translate_error(exc, self.parts.fs_url)
            if _into_itself(err):
                try:
                    self._client.get_file_info(dst)
                except Exception:  # noqa: BLE001 - the original error stands
                    pass
                else:
                    raise _exists(dst) from None
            raise err from None

    def getfileinfo(self, path: str) -> None:
        try:
            self._client.get_file_info(path)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    # ------------------------------------------------------------------ commands of format 2 (sync)

    def _ownership(self) -> tuple[str, str]:
        if self._owner is None:
            raise BackendError("the HDFS backend is not connected (connect() reads the base's owner)")
        return self._owner

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    def content_summary(self, path: str) -> None:
        self._call(self._client.get_content_summary, path)

    def set_permission(self, path: str) -> None:
        self._call(self._client.set_permission, path, FILE_MODE)

    def set_permission_dir(self, path: str) -> None:
        self._call(self._client.set_permission, path, DIR_MODE)

    def set_owner(self, path: str) -> None:
        owner, group = self._ownership()
        self._call(self._client.set_owner, path, owner, group)

    def set_times(self, path: str) -> None:
        self._call(self._client.set_times, path, SET_TIMES_MS, SET_TIMES_MS)

    def set_replication(self, path: str) -> None:
        replication = self._replication
        if replication is None:  # not known: the file's own (one more RPC)
            replication = self._call(self._client.get_file_info, path).replication or 1
        if not self._call(self._client.set_replication, path, replication):
            raise _not_found(path)  # HDFS answers false for a missing file (or a directory)

    def append(self, path: str) -> None:
        self._call(lambda: self._client.append(path).close())

    def create_overwrite(self, path: str) -> None:
        self._call(lambda: self._client.create(path, self._overwrite).close())

    def mkdirs_existing(self, path: str) -> None:
        self._call(self._client.mkdirs, path, DIR_MODE, False)

    def mkdirs_parents(self, path: str) -> None:
        self._call(self._client.mkdirs, path, DIR_MODE, True)

    def delete_dir(self, path: str) -> None:
        if not self._call(self._client.delete, path, True):
            raise _not_found(path)

    def get_acl_status(self, path: str) -> None:
        self._call(self._client.get_acl_status, path)

    def inspect(self, path: Any) -> Inspection:
        status = self._call(self.client.get_file_info, str(path))
        return Inspection(is_dir=bool(status.isdir), size=int(status.length), mtime_ns=int(status.modification_time) * 1_000_000)

    def operation_table(self) -> dict[OpCode, SyncOp]:
        o = OpCode
        table = super().operation_table()
        table.update({
            o.GETFILEINFO_DIR: self.getfileinfo,
            o.GETFILEINFO_ABSENT: self.getfileinfo_absent,
            o.GETFILEINFO_ABSENT_DIR: self.getfileinfo_absent,
            o.CONTENT_SUMMARY: self.content_summary,
            o.CONTENT_SUMMARY_DIR: self.content_summary,
            o.SET_PERMISSION: self.set_permission,
            o.SET_PERMISSION_DIR: self.set_permission_dir,
            o.SET_OWNER: self.set_owner,
            o.SET_OWNER_DIR: self.set_owner,
            o.SET_TIMES: self.set_times,
            o.SET_TIMES_DIR: self.set_times,
            o.SET_REPLICATION: self.set_replication,
            o.APPEND: self.append,
            o.CREATE_OVERWRITE: self.create_overwrite,
            o.MKDIRS_EXISTING: self.mkdirs_existing,
            o.MKDIRS_PARENTS: self.mkdirs_parents,
            o.DELETE_DIR: self.delete_dir,
            o.GET_ACL_STATUS: self.get_acl_status,
            o.GET_ACL_STATUS_DIR: self.get_acl_status,
        })
        return table

    # ------------------------------------------------------------------ operations (async)

    async def _awrite_nothing(self, open_writer: Any, *args: Any) -> None:
        """Open a writer (``create`` or ``append``) and close it without data."""
        try:
            writer = await open_writer(*args)
            await writer.close()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    async def aio_create(self, path: str) -> None:
        await self._awrite_nothing(self._aclient.create, path, self._wopts)

    async def aio_open(self, path: str) -> None:
        try:
            reader = await self._aclient.read(path)
            await reader.close()
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    # hdfs-native's async listing yields one entry per awaited future (much slower than the
    # blocking iterator; figure in the README's table), so listings run the blocking client on
    # a small thread pool; the RPCs (getListing) are the same.

    def _list_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=LIST_THREADS, thread_name_prefix="hdfs-list")
        return self._pool

    async def aio_list_file(self, path: str) -> None:
        await asyncio.get_running_loop().run_in_executor(self._list_pool(), self.list_file, path)

    async def aio_list_dir(self, path: str) -> list[str]:
        return await asyncio.get_running_loop().run_in_executor(self._list_pool(), self.list_dir, path)

    async def aio_delete(self, path: str) -> None:
        try:
            deleted = await self._aclient.delete(path, False)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        if not deleted:
            raise _not_found(path)

    async def aio_mkdirs(self, path: str) -> None:
        client = self._aclient
        try:
            if self._strict_mkdirs:
                try:
                    await client.get_file_info(path)
                except FileNotFoundError:
                    pass
                else:
                    raise _exists(path)
            await client.mkdirs(path, 0o755, False)
        except FileExistsError:
            raise
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    async def aio_rename(self, src: str, dst: str) -> None:
        try:
            await self._aclient.rename(src, dst, False)
        except Exception as exc:  # noqa: BLE001
            err = translate_error(exc, self.parts.fs_url)
            if _into_itself(err):
                try:
                    await self._aclient.get_file_info(dst)
                except Exception:  # noqa: BLE001 - the original error stands
                    pass
                else:
                    raise _exists(dst) from None
            raise err from None

    async def aio_getfileinfo(self, path: str) -> None:
        try:
            await self._aclient.get_file_info(path)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    aio_getfileinfo_dir = aio_getfileinfo

    async def aio_getfileinfo_absent(self, path: str) -> None:
        """``getfileinfo`` of an object its stream deleted: not found is the expected answer."""
        try:
            await self.aio_getfileinfo(path)
        except Exception as exc:
            if classify_hdfs(exc) is not Outcome.NOT_FOUND:
                raise

    aio_getfileinfo_absent_dir = aio_getfileinfo_absent

    # ------------------------------------------------------------------ commands of format 2 (async)

    async def _acall(self, fn: Any, *args: Any) -> Any:
        try:
            return await fn(*args)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)

    async def aio_content_summary(self, path: str) -> None:
        await self._acall(self._aclient.get_content_summary, path)

    aio_content_summary_dir = aio_content_summary

    async def aio_set_permission(self, path: str) -> None:
        await self._acall(self._aclient.set_permission, path, FILE_MODE)

    async def aio_set_permission_dir(self, path: str) -> None:
        await self._acall(self._aclient.set_permission, path, DIR_MODE)

    async def aio_set_owner(self, path: str) -> None:
        owner, group = self._ownership()
        await self._acall(self._aclient.set_owner, path, owner, group)

    aio_set_owner_dir = aio_set_owner

    async def aio_set_times(self, path: str) -> None:
        await self._acall(self._aclient.set_times, path, SET_TIMES_MS, SET_TIMES_MS)

    aio_set_times_dir = aio_set_times

    async def aio_set_replication(self, path: str) -> None:
        replication = self._replication
        if replication is None:
            replication = (await self._acall(self._aclient.get_file_info, path)).replication or 1
        if not await self._acall(self._aclient.set_replication, path, replication):
            raise _not_found(path)

    async def aio_append(self, path: str) -> None:
        await self._awrite_nothing(self._aclient.append, path)

    async def aio_create_overwrite(self, path: str) -> None:
        await self._awrite_nothing(self._aclient.create, path, self._overwrite)

    async def aio_mkdirs_existing(self, path: str) -> None:
        await self._acall(self._aclient.mkdirs, path, DIR_MODE, False)

    async def aio_mkdirs_parents(self, path: str) -> None:
        await self._acall(self._aclient.mkdirs, path, DIR_MODE, True)

    async def aio_delete_dir(self, path: str) -> None:
        if not await self._acall(self._aclient.delete, path, True):
            raise _not_found(path)

    async def aio_get_acl_status(self, path: str) -> None:
        await self._acall(self._aclient.get_acl_status, path)

    aio_get_acl_status_dir = aio_get_acl_status
