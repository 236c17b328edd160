"""The Backend protocol: one interface for every system under test.

A backend is opened from a URL (see ``registry``) in two places: once in the coordinator, which
calls ``setup`` (base directory checks, ownership marker) and runs phase 1, and once in each
worker process, which calls ``connect`` and then issues operations. Backend objects are runtime
objects; the URL string is their whole configuration, so a worker on another machine can open
the same backend.

Operations (``create``, ``open``, ``list_file``, ``list_dir``, ``delete``, ``mkdirs``,
``rename``, ``getfileinfo``) take *native* paths, produced once per worker by
``native_paths`` from the schedule's relative paths (which start with ``/``, the base itself).
An operation returns on success (``list_dir`` may return the entry names; the replay ignores
every return value) and raises on failure:

* an ``OSError`` (or another type listed in ``op_errors``) is a failed operation: it is
  classified by ``classify`` into the small ``Outcome`` taxonomy and counted, never fatal;
* ``BackendError`` or any other exception means the backend itself is broken: the worker stops
  and the run ends incomplete.

Blocking backends implement the synchronous methods; the worker runs them on a pool of threads
("lanes"). A backend whose client is asynchronous (the HDFS backend, ``hdfs-native``) sets ``is_async`` and
implements ``aio_<op>`` coroutines as well (the synchronous methods stay: setup and phase 1 use
them); the worker then runs its lanes as asyncio tasks. Both
variants share everything else (paths, recording, pacing, drift control).

What a backend performs is its ``capabilities`` (per instance; a ``Capabilities``): the commands
it carries out (the others are accepted and do nothing), whether directories are objects, and
whether a rename is atomic. ``backends.conformance`` checks a backend against what it claims.

A backend may also offer a *native lane* (``native_lane_runner``): one call that replays a whole
lane outside the interpreter, with the GIL released, with the same semantics as the Python lane
(``run.lanes.run_sync_lane`` over ``sync_ops``), which stays the reference. The posix backend
offers one when the native extension is installed (``mimesisbench.native``). An asynchronous
backend's native lane is *keyed* (the hdfs backend's): it replays all of a worker's events with
``run.lanes.run_async_dispatch``'s semantics (per-object dependencies, a bound on operations in
flight), the Python dispatcher over ``async_ops`` being the reference.
"""

from __future__ import annotations

import errno
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import polars as pl

from mimesisbench.schedule.format import OpCode


class Outcome(IntEnum):
    """How one operation ended. The names are what samples and summaries show."""

    OK = 0
    NOT_FOUND = 1
    EXISTS = 2
    PERMISSION = 3
    OTHER = 4

    @property
    def label(self) -> str:
        return self.name.lower()


OUTCOME_LABELS: tuple[str, ...] = tuple(o.label for o in Outcome)

_ERRNO_OUTCOME: Mapping[int, Outcome] = MappingProxyType({
    errno.ENOENT: Outcome.NOT_FOUND,
    errno.ENOTDIR: Outcome.NOT_FOUND,
    errno.EEXIST: Outcome.EXISTS,
    errno.ENOTEMPTY: Outcome.EXISTS,
    errno.EACCES: Outcome.PERMISSION,
    errno.EPERM: Outcome.PERMISSION,
    errno.EROFS: Outcome.PERMISSION,
})


def classify_oserror(exc: BaseException) -> Outcome:
    """Map an ``OSError`` (by errno) to the taxonomy; anything unknown is ``OTHER``."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return _ERRNO_OUTCOME.get(exc.errno, Outcome.OTHER)
    return Outcome.OTHER


#: the operations of schedule format version 1 (op codes 1-9): what every backend implements
V1_COMMANDS: frozenset[OpCode] = frozenset(op for op in OpCode if int(op) <= 9)
#: the instant SET_TIMES sets (modification and access time): 2000-01-01T00:00:00Z, in ns (a fixed
#: value, so the effect is visible and repeating it does not make the namespace drift)
SET_TIMES_NS = 946_684_800 * 10**9


@dataclass(frozen=True)
class Capabilities:
    """What one backend instance does with each operation (``Backend.capabilities``; checked by
    ``backends.conformance``). Every op code is in exactly one of three sets:

    * ``commands``: performed against the system under test (timed and counted by the replay);
    * ``mapped``: performed as a documented *nearest* operation (``mapped[op]``, itself one of the
      ``commands``): timed and counted under its own label, the summary says what it ran as;
    * ``skipped``: not performed at all: the replay does not issue it and counts it as skipped per
      command (summary ``skipped``); a run says so at start. Default: every op neither performed
      nor mapped.

    A stateless backend (``null``) has all three empty: it accepts every operation and does nothing
    (each is still timed and counted; that is what it measures).

    ``directories``: directories are objects (made by ``mkdirs``, needed below them, listed,
    renamed with their contents); without them, names are flat keys (an object store).
    ``atomic_rename``: a rename is one step (onto an existing name it fails with ``exists``; a
    directory moves with its subtree), not a copy and a delete.
    """

    commands: frozenset[OpCode] = V1_COMMANDS
    directories: bool = True
    atomic_rename: bool = True
    mapped: Mapping[OpCode, OpCode] = field(default_factory=dict)
    skipped: frozenset[OpCode] | None = None

    def __post_init__(self) -> None:
        commands = frozenset(OpCode(op) for op in self.commands)
        mapped = {OpCode(k): OpCode(v) for k, v in dict(self.mapped).items()}
        object.__setattr__(self, "commands", commands)
        object.__setattr__(self, "mapped", MappingProxyType(mapped))
        bad = sorted(op.label for op, to in mapped.items() if op in commands or to not in commands)
        if bad:
            raise ValueError(f"mapped operations must map a command not performed to one performed: {', '.join(bad)}")
        if self.skipped is None:
            skipped = frozenset(OpCode) - commands - frozenset(mapped)
        else:
            skipped = frozenset(OpCode(op) for op in self.skipped)
            both = sorted(op.label for op in skipped & (commands | frozenset(mapped)))
            if both:
                raise ValueError(f"operations both skipped and performed: {', '.join(both)}")
        object.__setattr__(self, "skipped", skipped)

    def __hash__(self) -> int:
        return hash((self.commands, self.directories, self.atomic_rename, tuple(sorted(self.mapped.items()))))

    def performs(self, op: OpCode) -> bool:
        return op in self.commands

    def skips(self, op: OpCode) -> bool:
        """True when the replay does not issue ``op`` (counted as skipped)."""
        return op in (self.skipped or frozenset())

    def performed_as(self, op: OpCode) -> OpCode | None:
        """The operation ``op`` is performed as: itself, its nearest operation, None when skipped
        (or when nothing is performed: a stateless backend)."""
        if op in self.commands:
            return op
        return self.mapped.get(op)


#: a file system with the operations of format version 1 (``Backend.capabilities``' default)
FILE_SYSTEM = Capabilities()
#: performs nothing and skips nothing: every operation is accepted and timed (``null``)
NOTHING = Capabilities(commands=frozenset(), directories=False, atomic_rename=False, skipped=frozenset())


def _noop(_arg: object) -> None:
    """What an operation the backend does not perform runs as when issued anyway."""


async def _aio_noop(_arg: object) -> None:
    """The async twin of ``_noop``."""


@dataclass(frozen=True)
class Inspection:
    """What ``Backend.inspect`` sees of one path (for the conformance suite's effect checks)."""

    is_dir: bool
    size: int
    mtime_ns: int | None = None  # None: the backend has no modification time


#: the directory below a base that a run's data jobs put their files in (``Backend.data_root``)
DATA_DIR = ".mimesisbench-data"


@dataclass(frozen=True)
class DataRoot:
    """Where a run's data jobs (``datajobs``) may put their files: ``target``, a directory below
    the base (a local path, or ``hdfs://authority/path``); ``shared_writes``: whether several
    tasks may write one file (N-1 layouts); ``client_config``: what a client of the file system
    is opened with (HDFS: the backend URL's Hadoop keys)."""

    target: str
    shared_writes: bool
    client_config: Mapping[str, str] = field(default_factory=dict)


SyncOp = Callable[[Any], object]
AsyncOp = Callable[[Any], Awaitable[object]]


@dataclass(frozen=True)
class NativeLaneRunner:
    """A backend's native replay lane (see ``run.lanes.run_native_lane``, which calls it).

    ``run(ops, due_ns, offsets, data, offsets2, data2, start_ns, end_ns, outcome, *, origin_ns,
    max_drift_ns, paced, spin_ns, stop, progress)`` replays one lane with the GIL released and
    returns ``(status, count, behind_ns, message)``, status one of ``done``, ``stopped``,
    ``drift``, ``failed``. It knows the operations ``ops`` only (the worker uses the Python lanes
    when any other is among its events). ``stop_flag()`` makes the flag shared by a worker's lanes (``set()``,
    ``is_set()``), ``progress()`` one lane's published count (``.count``).
    """

    name: str  # recorded in the run manifest (``posix``)
    version: str  # the native module's version
    run: Callable[..., tuple[str, int, int, str]]
    stop_flag: Callable[[], Any]
    progress: Callable[[], Any]
    #: the op codes it performs; a worker with any other operation replays in Python lanes
    ops: frozenset[OpCode] = V1_COMMANDS
    #: a dispatcher over all of a worker's events (see ``run.lanes.run_native_lane``): ``run``
    #: also takes ``keys=`` (each event's object) and ``outstanding=`` (operations in flight)
    keyed: bool = False
    #: lanes sharing hot objects' events round robin: ``key_gate(key, need, offsets, events)`` makes
    #: the gate they share (``run.key_gate.requirements``), given to ``run`` as ``gate=`` with
    #: ``rows=`` (each event's position in it); None: the runner has no gate
    key_gate: Callable[..., Any] | None = None


class Backend(ABC):
    """A system under test. Subclasses implement the eight operations (sync or async)."""

    #: URL scheme this class serves (``posix``, ``memory``, ``null``, ``hdfs``)
    scheme: ClassVar[str] = ""
    #: exception types that mean "this operation failed" (counted), not "the backend is broken"
    op_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError,)
    #: true when each process sees its own namespace (memory, null): phase 1 then runs in each
    #: worker, and the coordinator's instance is only used for setup
    process_local: ClassVar[bool] = False
    #: true when the backend keeps no state at all (null): phase 1 is skipped
    stateless: ClassVar[bool] = False
    #: true when the backend implements ``aio_*`` coroutines instead of the blocking methods
    is_async: ClassVar[bool] = False
    #: lanes (threads or tasks) per worker when the run does not say otherwise
    default_concurrency: ClassVar[int] = 1
    #: threads that build the namespace in phase 1 when the run does not say otherwise (a
    #: remote metadata server needs many requests in flight; a local file system few)
    phase1_concurrency: ClassVar[int] = 4
    #: true when operations are safe to call from several threads of one process at once
    thread_safe: ClassVar[bool] = True

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def capabilities(self) -> Capabilities:
        """What this instance performs (a file system's everything by default; see ``Capabilities``)."""
        return FILE_SYSTEM

    def default_lanes(self) -> int:
        """Lanes per worker when the run does not say (``default_concurrency``; a backend may
        adapt it to the machine)."""
        return self.default_concurrency

    # ------------------------------------------------------------------ lifecycle

    def setup(self, *, reuse: bool) -> None:  # noqa: B027 - optional hook
        """Coordinator side, before phase 1: check and prepare the base (may raise SafetyError)."""

    def connect(self) -> None:  # noqa: B027 - optional hook
        """Worker side: open connections. Called once per process before any operation."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the backend is not used afterwards."""

    def read_marker(self) -> str | None:
        """The namespace marker written after phase 1 (None when absent or unsupported)."""
        return None

    def write_marker(self, text: str) -> None:  # noqa: B027 - optional hook
        """Record that phase 1 completed for a schedule (``text`` holds its hash)."""

    def lock_path(self) -> str | None:
        """A local file the coordinator holds an exclusive ``flock`` on for the whole run, so two
        runs never share one base (None: the coordinator locks in the run root instead)."""
        return None

    def verify_namespace(self, rel_dirs: list[str]) -> None:  # noqa: B027 - optional hook
        """Before phase 2: check the tree is safe to work in (raise ``SafetyError`` if not)."""

    def describe(self) -> dict[str, Any]:
        """Facts for the run manifest (file system type, base path, server version ...)."""
        return {"scheme": self.scheme, "url": self.url}

    def data_root(self) -> DataRoot | None:
        """Where data jobs may write beside the replay (None: this backend holds no data)."""
        return None

    def worker_urls(self, n: int, state_dir: Path) -> list[str]:
        """The URL each of a run's ``n`` workers opens (this one by default). A wrapper gives each
        worker its own random stream, and a rate limit the bucket file (in ``state_dir``, inside
        the run directory) that all of them share."""
        return [self.url] * n

    def native_paths(self, rel: pl.Series) -> pl.Series:
        """Map the schedule's relative paths (``/a/b``) to what the operations take."""
        return rel

    def classify(self, exc: BaseException) -> Outcome:
        """Map a failed operation's exception to an ``Outcome``."""
        return classify_oserror(exc)

    def native_lane_runner(self) -> NativeLaneRunner | None:
        """The native replay lane for this backend, None (the default) for the Python lanes.

        Called in the worker after ``connect``; a runner must give, for every schedule, the same
        outcomes as ``sync_ops`` run by the Python lane.
        """
        return None

    # ------------------------------------------------------------------ operations (sync)

    @abstractmethod
    def create(self, path: str) -> None:
        """Create an empty file; fails with ``exists`` when it exists, ``not_found`` without parent."""

    @abstractmethod
    def open(self, path: str) -> None:
        """Open a file for reading and close it (no data read)."""

    @abstractmethod
    def list_file(self, path: str) -> None:
        """List a file's status (a listing of a single file)."""

    @abstractmethod
    def list_dir(self, path: str) -> list[str] | None:
        """List a directory's entries; returns their names where the backend has them (the
        replay ignores them, the conformance suite compares them)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file."""

    @abstractmethod
    def mkdirs(self, path: str) -> None:
        """Make one directory whose parent exists; ``exists`` when it is already there."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Rename a file or an empty directory; ``exists`` when ``dst`` exists."""

    @abstractmethod
    def getfileinfo(self, path: str) -> None:
        """Read a file's metadata."""

    def getfileinfo_absent(self, path: str) -> None:
        """``getfileinfo`` of an object its stream deleted (GETFILEINFO_ABSENT): the lookup is
        issued like any other, and *not found* is its expected answer, not a failure."""
        try:
            self.getfileinfo(path)
        except Exception as exc:
            if self.classify(exc) is not Outcome.NOT_FOUND:
                raise

    def inspect(self, path: Any) -> Inspection | None:
        """What the backend sees at a native ``path`` (raises like ``getfileinfo`` when missing);
        None when it cannot tell (the conformance suite then skips its effect checks)."""
        return None

    # ------------------------------------------------------------------ dispatch

    def operation_table(self) -> dict[OpCode, SyncOp]:
        """One single-argument callable per operation the backend performs (rename takes a
        ``(src, dst)`` tuple). The default: the eight methods of format version 1; a backend that
        performs more adds its own (see ``sync_ops`` for what happens to the others)."""
        rename = self.rename

        def rename_pair(pair: tuple[str, str]) -> None:
            rename(pair[0], pair[1])

        return {
            OpCode.CREATE: self.create,
            OpCode.OPEN: self.open,
            OpCode.LIST_FILE: self.list_file,
            OpCode.LIST_DIR: self.list_dir,
            OpCode.DELETE: self.delete,
            OpCode.MKDIRS: self.mkdirs,
            OpCode.RENAME_FILE: rename_pair,
            OpCode.RENAME_DIR: rename_pair,
            OpCode.GETFILEINFO: self.getfileinfo,
        }

    def sync_ops(self) -> dict[OpCode, SyncOp]:
        """The replay's dispatch table: a callable for every op code. A performed command runs its
        own operation, a mapped one its nearest operation's (``Capabilities.mapped``), any other
        does nothing (the replay does not issue skipped ones at all)."""
        return complete_table(self.operation_table(), self.capabilities, _noop)

    def async_operation_table(self) -> dict[OpCode, AsyncOp]:
        """Like ``operation_table`` for async backends: ``aio_<label>`` coroutine functions of
        the performed commands (``aio_rename(src, dst)`` for both renames)."""
        if not self.is_async:
            raise TypeError(f"{type(self).__name__} is not an async backend")
        renames = (OpCode.RENAME_FILE, OpCode.RENAME_DIR)
        found = {op: getattr(self, f"aio_{op.label}", None) for op in self.capabilities.commands if op not in renames}
        table: dict[OpCode, AsyncOp] = {op: fn for op, fn in found.items() if fn is not None}
        aio_rename = getattr(self, "aio_rename")  # noqa: B009 - only async subclasses define it

        async def rename_pair(pair: tuple[str, str]) -> None:
            await aio_rename(pair[0], pair[1])

        table[OpCode.RENAME_FILE] = rename_pair
        table[OpCode.RENAME_DIR] = rename_pair
        return table

    def async_ops(self) -> dict[OpCode, AsyncOp]:
        """Like ``sync_ops`` for async backends (``async_operation_table`` completed the same way)."""
        return complete_table(self.async_operation_table(), self.capabilities, _aio_noop)


_Fn = TypeVar("_Fn")


def complete_table(performed: Mapping[OpCode, _Fn], caps: Capabilities, noop: _Fn) -> dict[OpCode, _Fn]:
    """A callable for every op code: ``performed[op]`` for a command, ``performed[mapped[op]]``
    for a mapped one, ``noop`` otherwise (raises ``TypeError`` naming a command without one)."""
    missing = sorted(op.label for op in caps.commands if op not in performed)
    if missing:
        raise TypeError(f"the backend claims {', '.join(missing)} but has no operation for it")
    table: dict[OpCode, _Fn] = {}
    for op in OpCode:
        target = caps.performed_as(op)
        table[op] = noop if target is None else performed[target]
    return table
