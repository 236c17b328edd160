"""The backend conformance suite: any backend against the reference model (``memory``).

For backend authors. Give it a factory, a callable returning a fresh backend (set up and
connected, on an empty namespace) and a cleanup callable::

    from mimesisbench.backends.conformance import run_conformance

    def factory():
        backend = MyBackend("my:/scratch/conformance")
        backend.setup(reuse=False)
        backend.connect()
        return backend, lambda: my_cleanup(backend)

    run_conformance(factory)  # raises ConformanceError naming the case and the operation

or, in pytest, one test per case (``CASES``, each through ``run_case``) plus
``check_random_sequences`` (a Hypothesis state machine; needs ``hypothesis``, a test dependency).

What is checked is what the backend's ``capabilities`` claim (``Capabilities``):

* every op code is performed (``commands``), mapped to a performed nearest operation (``mapped``)
  or skipped (``skipped``), exactly one of the three (a stateless backend: none of them);
* ``commands``: the operations it performs. Each one must give the reference's outcome
  (``Outcome``), and listings must agree; the *command table* (one case per op code,
  ``command_<label>``) checks that each claimed command really happens: ``set_times`` sets the
  modification time (``SET_TIMES_NS``, where ``Backend.inspect`` tells), ``truncate`` leaves an
  empty file, ``append`` keeps it, ``create_overwrite`` succeeds on an existing file and makes a
  missing one, ``mkdirs_existing`` succeeds on an existing directory, ``delete_dir`` removes a
  tree, ``set_xattr`` is listed by ``list_xattrs``, and every reading command (and every write
  to the value an object has) succeeds on an existing object, fails with ``not_found`` on a
  missing one and changes no listing;
* ``mapped``: a mapped command gives its nearest operation's outcome;
* an operation neither performed nor mapped must be accepted (no exception) and have no effect.
* ``directories``: directories are objects: ``mkdirs`` makes one (``exists`` the second time), a
  file cannot be created below a missing one (``not_found``), a listing names its entries. A
  backend without directories is only exercised with files at the base.
* ``atomic_rename``: a rename is one step: onto an existing name it fails with ``exists`` and
  leaves both names as they were; a directory's rename moves its whole subtree. Renames are only
  checked against the reference when claimed.

Operations are issued as the replay issues them: through ``sync_ops()`` with paths made by
``native_paths`` (an async backend's ``async_ops`` are expected to agree with them; its own
tests check that). File operations are only applied to files and directory operations only to
directories (the rest is outside the contract).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from mimesisbench.backends.base import SET_TIMES_NS, Backend, Capabilities, Outcome
from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.schedule.format import OpCode

#: a fresh backend (set up, connected, empty) and the callable that removes what it made
BackendFactory = Callable[[], tuple[Backend, Callable[[], None]]]

Op = OpCode
#: the suite's namespace: directories, and files below them and at the base
DIRS: tuple[str, ...] = ("/a", "/b", "/a/c")
FILES: tuple[str, ...] = ("/f1", "/f6", "/a/f2", "/a/c/f3", "/b/f4", "/b/f5")
FLAT_FILES: tuple[str, ...] = ("/f1", "/f2", "/f3")
FILE_OPS: tuple[OpCode, ...] = (Op.CREATE, Op.OPEN, Op.LIST_FILE, Op.GETFILEINFO, Op.DELETE)


class ConformanceError(AssertionError):
    """A backend disagrees with the reference, or with its own capabilities."""


class Target:
    """A backend under test, addressed with the schedule's relative paths (``/a/b``)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.caps = backend.capabilities
        self._ops = backend.sync_ops()

    def native(self, rel: str) -> Any:
        return self.backend.native_paths(pl.Series("path", [rel]))[0]

    def performs(self, op: OpCode) -> bool:
        return op in self.caps.commands

    def issue(self, op: OpCode, *rel: str) -> object:
        """Issue ``op`` as the replay does (a rename takes a ``(src, dst)`` pair); may raise."""
        paths = [self.native(r) for r in rel]
        return self._ops[op](paths[0] if len(paths) == 1 else tuple(paths))

    def call(self, op: OpCode, *rel: str) -> Outcome:
        """Issue ``op``; its outcome (``OK`` when it returned)."""
        try:
            self.issue(op, *rel)
        except self.backend.op_errors as exc:
            return self.backend.classify(exc)
        return Outcome.OK

    def names(self, rel: str) -> list[str] | None:
        """The entries of a directory (``None`` when it cannot be listed); the base's marker files
        are left out."""
        try:
            listed: Any = self.issue(Op.LIST_DIR, rel)
        except self.backend.op_errors:
            return None
        names = (os.fsdecode(n) for n in (listed or []))
        return sorted(n for n in names if not n.startswith(".mimesisbench"))

    def expect(self, op: OpCode, expected: Outcome, *rel: str) -> None:
        """Check one operation's outcome (skipped when the backend does not perform ``op``)."""
        if not self.performs(op):
            return
        got = self.call(op, *rel)
        if got is not expected:
            raise ConformanceError(f"{op.label}{rel}: expected {expected.label}, the backend gave {got.label}")

    def expect_names(self, rel: str, expected: list[str]) -> None:
        if not self.performs(Op.LIST_DIR):
            return
        got = self.names(rel)
        if got != expected:
            raise ConformanceError(f"listing of {rel}: expected {expected}, the backend gave {got}")


#: wraps a backend under test (``Target`` or a subclass)
TargetFactory = Callable[[Backend], Target]


# ---------------------------------------------------------------------------------- capabilities


def check_capabilities(backend: Backend) -> None:
    """The capabilities are well formed and consistent with the backend's other declarations."""
    caps = backend.capabilities
    if not isinstance(caps, Capabilities):
        raise ConformanceError(f"{type(backend).__name__}.capabilities is not a Capabilities")
    unknown = [op for op in caps.commands if not isinstance(op, OpCode)]
    if unknown:
        raise ConformanceError(f"capabilities name unknown commands: {unknown}")
    if backend.stateless and caps.commands:
        raise ConformanceError("a stateless backend performs no command (its capabilities claim some)")
    dir_ops = sorted(op.label for op in caps.commands if op in (Op.MKDIRS, Op.RENAME_DIR))
    if dir_ops and not caps.directories:
        raise ConformanceError(f"{', '.join(dir_ops)} performed, but the capabilities have no directories")
    if not backend.stateless:
        covered = caps.commands | frozenset(caps.mapped) | (caps.skipped or frozenset())
        loose = sorted(op.label for op in OpCode if op not in covered)
        if loose:
            raise ConformanceError(f"capabilities neither perform, map nor skip {', '.join(loose)}")
    try:
        table = backend.sync_ops()
    except TypeError as exc:
        raise ConformanceError(str(exc)) from None
    missing = [op.label for op in OpCode if op not in table]
    if missing:
        raise ConformanceError(f"sync_ops() lacks {', '.join(missing)}")


# ---------------------------------------------------------------------------------- explicit cases


@dataclass(frozen=True)
class Case:
    """One explicit check: ``run(target)``, applicable when the backend performs ``needs`` and
    has the ``directories`` / ``atomic_rename`` it asks for."""

    name: str
    run: Callable[[Target], None]
    needs: frozenset[OpCode] = frozenset()
    directories: bool = False
    atomic_rename: bool = False

    def applies_to(self, caps: Capabilities) -> bool:
        return (
            self.needs <= caps.commands
            and (caps.directories or not self.directories)
            and (caps.atomic_rename or not self.atomic_rename)
        )


def _create_twice(t: Target) -> None:
    t.expect(Op.CREATE, Outcome.OK, "/f")
    t.expect(Op.CREATE, Outcome.EXISTS, "/f")
    for op in (Op.OPEN, Op.LIST_FILE, Op.GETFILEINFO):
        t.expect(op, Outcome.OK, "/f")


def _missing_files(t: Target) -> None:
    for op in (Op.OPEN, Op.GETFILEINFO, Op.LIST_FILE, Op.DELETE):
        t.expect(op, Outcome.NOT_FOUND, "/nope")
    t.expect(Op.RENAME_FILE, Outcome.NOT_FOUND, "/nope", "/other")


def _missing_directories(t: Target) -> None:
    t.expect(Op.LIST_DIR, Outcome.NOT_FOUND, "/nodir")
    t.expect(Op.MKDIRS, Outcome.NOT_FOUND, "/nodir/sub")


def _create_makes_missing_parents(t: Target) -> None:
    """CREATE makes the missing directories above the file (HDFS's ``create``, ``FileSystem``'s
    default ``createParent``): how a workload makes a directory it deleted again."""
    t.expect(Op.CREATE, Outcome.OK, "/gone/again/f")
    t.expect_names("/gone", ["again"])
    t.expect_names("/gone/again", ["f"])
    t.expect(Op.LIST_DIR, Outcome.OK, "/gone/again")
    t.expect(Op.CREATE, Outcome.EXISTS, "/gone/again/f")


def _rename_file(t: Target) -> None:
    t.expect(Op.MKDIRS, Outcome.OK, "/d")
    t.expect(Op.CREATE, Outcome.OK, "/d/f")
    t.expect(Op.CREATE, Outcome.OK, "/d/g")
    t.expect(Op.RENAME_FILE, Outcome.OK, "/d/f", "/d/f.r1")
    t.expect(Op.OPEN, Outcome.NOT_FOUND, "/d/f")
    t.expect(Op.OPEN, Outcome.OK, "/d/f.r1")
    t.expect(Op.RENAME_FILE, Outcome.EXISTS, "/d/f.r1", "/d/g")
    t.expect(Op.OPEN, Outcome.OK, "/d/f.r1")
    t.expect_names("/d", ["f.r1", "g"])


def _rename_directory(t: Target) -> None:
    t.expect(Op.MKDIRS, Outcome.OK, "/m")
    t.expect(Op.MKDIRS, Outcome.EXISTS, "/m")
    t.expect(Op.MKDIRS, Outcome.OK, "/m/sub")
    t.expect(Op.CREATE, Outcome.OK, "/m/sub/x")
    t.expect(Op.RENAME_DIR, Outcome.OK, "/m", "/m.r1")
    t.expect(Op.LIST_DIR, Outcome.NOT_FOUND, "/m")
    t.expect_names("/", ["m.r1"])
    t.expect_names("/m.r1", ["sub"])
    t.expect_names("/m.r1/sub", ["x"])
    t.expect(Op.RENAME_DIR, Outcome.OTHER, "/m.r1", "/m.r1/sub/inside")


def _delete_one_file(t: Target) -> None:
    t.expect(Op.MKDIRS, Outcome.OK, "/d")
    for name in ("a", "b"):
        t.expect(Op.CREATE, Outcome.OK, f"/d/{name}")
    t.expect(Op.DELETE, Outcome.OK, "/d/a")
    t.expect(Op.DELETE, Outcome.NOT_FOUND, "/d/a")
    t.expect_names("/d", ["b"])
    t.expect(Op.CREATE, Outcome.OK, "/d/a")


def _unperformed_are_accepted(t: Target) -> None:
    """Every command the backend neither performs nor maps returns (any path, twice) without effect."""
    for op in OpCode:
        if t.performs(op) or op in t.caps.mapped:
            continue
        args = ("/x", "/y") if op in (Op.RENAME_FILE, Op.RENAME_DIR) else ("/x",)
        for _ in range(2):
            try:
                t.issue(op, *args)
            except Exception as exc:  # noqa: BLE001 - the finding is the exception itself
                raise ConformanceError(
                    f"{op.label} is not among the commands the backend performs, yet it raised "
                    f"{type(exc).__name__}: {exc}"
                ) from None


# ---------------------------------------------------------------------------------- the command table

#: commands that read an object, or write the value it has: no visible effect
_NO_EFFECT: frozenset[OpCode] = frozenset({
    Op.GETFILEINFO, Op.GETFILEINFO_DIR, Op.CONTENT_SUMMARY, Op.CONTENT_SUMMARY_DIR, Op.SET_PERMISSION,
    Op.SET_PERMISSION_DIR, Op.SET_OWNER, Op.SET_OWNER_DIR, Op.SET_REPLICATION, Op.SET_STORAGE_POLICY,
    Op.SET_STORAGE_POLICY_DIR, Op.GET_STORAGE_POLICY, Op.GET_STORAGE_POLICY_DIR, Op.GET_ACL_STATUS,
    Op.GET_ACL_STATUS_DIR, Op.CHECK_ACCESS, Op.CHECK_ACCESS_DIR, Op.LIST_XATTRS, Op.LIST_XATTRS_DIR,
    Op.GET_XATTRS, Op.GET_XATTRS_DIR, Op.OPEN, Op.LIST_FILE,
})


def _object(t: Target, op: OpCode) -> tuple[str, str]:
    """``/d`` with a file ``/d/f`` in it; the path ``op`` works on and a missing one of its kind."""
    t.expect(Op.MKDIRS, Outcome.OK, "/d")
    t.expect(Op.CREATE, Outcome.OK, "/d/f")
    return ("/d", "/nodir") if op.on_directory else ("/d/f", "/d/nofile")


def _mtime(t: Target, rel: str) -> int | None:
    seen = t.backend.inspect(t.native(rel))
    return None if seen is None else seen.mtime_ns


def _size(t: Target, rel: str) -> int | None:
    seen = t.backend.inspect(t.native(rel))
    return None if seen is None else seen.size


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ConformanceError(what)


def _command_case(op: OpCode) -> Callable[[Target], None]:
    def run(t: Target) -> None:
        here, missing = _object(t, op)
        if op in _NO_EFFECT:
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.NOT_FOUND, missing)
            t.expect_names("/", ["d"])
            t.expect_names("/d", ["f"])
        elif op in (Op.SET_TIMES, Op.SET_TIMES_DIR):
            t.expect(op, Outcome.OK, here)
            got = _mtime(t, here)
            _check(got is None or got == SET_TIMES_NS, f"{op.label}: mtime {got}, expected {SET_TIMES_NS}")
            t.expect(op, Outcome.NOT_FOUND, missing)
        elif op in (Op.APPEND, Op.CONCAT, Op.TRUNCATE):
            t.expect(op, Outcome.OK, here)
            t.expect_names("/d", ["f"])
            size = _size(t, here)
            _check(size in (None, 0), f"{op.label}: the file has {size} bytes, expected 0")
            t.expect(op, Outcome.NOT_FOUND, missing)
            t.expect_names("/d", ["f"])
        elif op in (Op.GETFILEINFO_ABSENT, Op.GETFILEINFO_ABSENT_DIR):
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, missing)  # a miss is the lookup's expected answer
            t.expect_names("/", ["d"])
            t.expect_names("/d", ["f"])
        elif op is Op.CREATE_OVERWRITE:
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, "/d/g")
            t.expect_names("/d", ["f", "g"])
            t.expect(op, Outcome.NOT_FOUND, "/nodir/g")
        elif op is Op.MKDIRS_EXISTING:
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, "/e")
            t.expect_names("/", ["d", "e"])
            t.expect_names("/d", ["f"])
            t.expect(op, Outcome.NOT_FOUND, "/nodir/sub")
        elif op is Op.MKDIRS_PARENTS:
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, "/nodir/sub/deeper")
            t.expect_names("/", ["d", "nodir"])
            t.expect_names("/nodir", ["sub"])
            t.expect_names("/nodir/sub", ["deeper"])
            t.expect(op, Outcome.EXISTS, "/d/f")
        elif op is Op.DELETE_DIR:
            t.expect(Op.MKDIRS, Outcome.OK, "/d/sub")
            t.expect(Op.CREATE, Outcome.OK, "/d/sub/x")
            t.expect(op, Outcome.OK, here)
            t.expect_names("/", [])
            t.expect(Op.LIST_DIR, Outcome.NOT_FOUND, here)
            t.expect(op, Outcome.NOT_FOUND, here)
        elif op in (Op.SET_XATTR, Op.SET_XATTR_DIR):
            t.expect(op, Outcome.OK, here)
            t.expect(op, Outcome.OK, here)
            lister = Op.LIST_XATTRS_DIR if op.on_directory else Op.LIST_XATTRS
            if t.performs(lister):
                names = [os.fsdecode(n) for n in (t.issue(lister, here) or [])]  # type: ignore[attr-defined]
                _check(any(n.endswith("mimesisbench") for n in names), f"{op.label}: list_xattrs gave {names}")
            t.expect(op, Outcome.NOT_FOUND, missing)
        else:  # the commands of format version 1 have cases of their own
            t.expect(op, Outcome.OK, here)

    return run


def _mapped_as_nearest(t: Target) -> None:
    """A mapped command has its nearest operation's outcome (on an object and on a missing one)."""
    t.expect(Op.MKDIRS, Outcome.OK, "/d")
    t.expect(Op.CREATE, Outcome.OK, "/d/f")
    for op, to in sorted(t.caps.mapped.items()):
        for rel in ("/d", "/nodir") if op.on_directory else ("/d/f", "/d/nofile"):
            expected = t.call(to, rel)
            got = t.call(op, rel)
            if got is not expected:
                raise ConformanceError(f"{op.label}{(rel,)} runs as {to.label}: expected {expected.label}, got {got.label}")
            if expected is Outcome.OK and rel == "/d/nofile":
                t.call(Op.DELETE, rel)  # a mapped create made it: back to the start


_V1 = frozenset(op for op in OpCode if int(op) <= 9)
COMMAND_CASES: tuple[Case, ...] = tuple(
    Case(
        f"command_{op.label}", _command_case(op), frozenset({op, Op.MKDIRS, Op.CREATE}), directories=True
    )
    for op in OpCode
    if op not in _V1 and op is not Op.NAMENODE
)

CASES: tuple[Case, ...] = (
    Case("create_twice_is_exists", _create_twice, frozenset({Op.CREATE})),
    Case("missing_files_are_not_found", _missing_files, frozenset({Op.OPEN})),
    Case("missing_directories_are_not_found", _missing_directories, frozenset({Op.LIST_DIR}), directories=True),
    Case(
        "create_makes_missing_parents", _create_makes_missing_parents, frozenset({Op.CREATE, Op.LIST_DIR}),
        directories=True,
    ),
    Case(
        "rename_moves_a_file_and_refuses_an_existing_target", _rename_file,
        frozenset({Op.MKDIRS, Op.CREATE, Op.RENAME_FILE}), directories=True, atomic_rename=True,
    ),
    Case(
        "rename_moves_a_directory_with_its_contents", _rename_directory,
        frozenset({Op.MKDIRS, Op.CREATE, Op.RENAME_DIR}), directories=True, atomic_rename=True,
    ),
    Case(
        "delete_removes_only_the_file", _delete_one_file, frozenset({Op.MKDIRS, Op.CREATE, Op.DELETE}), directories=True
    ),
    Case("unperformed_commands_are_accepted", _unperformed_are_accepted),
    Case("mapped_commands_run_as_their_nearest", _mapped_as_nearest, frozenset({Op.MKDIRS, Op.CREATE}), directories=True),
    *COMMAND_CASES,
)


def run_case(factory: BackendFactory, case: Case, target: TargetFactory | None = None) -> bool:
    """Run one case on a fresh backend; False (nothing run) when it does not apply.

    ``target`` wraps the backend (default ``Target``); a subclass may issue the operations
    another way (through a native lane, say) by overriding ``Target.call``."""
    backend, cleanup = factory()
    try:
        check_capabilities(backend)
        wrapped = (target or Target)(backend)
        if not case.applies_to(wrapped.caps):
            return False
        try:
            case.run(wrapped)
        except ConformanceError as exc:
            raise ConformanceError(f"{type(backend).__name__} ({backend.url}), case {case.name}: {exc}") from None
        return True
    finally:
        cleanup()


# ---------------------------------------------------------------------------------- random sequences


def check_random_sequences(
    factory: BackendFactory, *, max_examples: int = 40, steps: int = 25, target: TargetFactory | None = None
) -> None:
    """Random operation sequences (Hypothesis, derandomised): the backend's outcomes and listings
    must be the reference's after every step. Only the commands it performs are issued
    (``target``: as in ``run_case``)."""
    wrap = target or Target
    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

    probe, probe_cleanup = factory()
    try:
        caps = probe.capabilities
    finally:
        probe_cleanup()
    dirs = DIRS if caps.directories else ()
    files = FILES if caps.directories else FLAT_FILES
    other_file_ops = [op for op in FILE_OPS if op in caps.commands and op is not Op.CREATE] or [Op.OPEN]
    some_dir = dirs or ("/",)

    def performs(*ops: OpCode) -> Callable[[object], bool]:
        return lambda _self: all(op in caps.commands for op in ops)

    renames = caps.atomic_rename  # a non-atomic rename's outcomes are not the reference's

    class Conformance(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            backend, self.cleanup = factory()
            self.sut = wrap(backend)
            self.ref = Target(MemoryBackend())

        def both(self, op: OpCode, *paths: str) -> None:
            expected = self.ref.call(op, *paths)
            got = self.sut.call(op, *paths)
            if got is not expected:
                raise ConformanceError(f"{op.label}{paths}: reference {expected.label}, backend {got.label}")

        # creations have rules of their own, so sequences reach states with several files
        @precondition(performs(Op.CREATE))
        @rule(path=st.sampled_from(files))
        def create(self, path: str) -> None:
            self.both(Op.CREATE, path)

        @precondition(lambda _self: bool(dirs) and Op.MKDIRS in caps.commands)
        @rule(path=st.sampled_from(some_dir))
        def mkdirs(self, path: str) -> None:
            self.both(Op.MKDIRS, path)

        @precondition(performs(*other_file_ops))
        @rule(path=st.sampled_from(files), op=st.sampled_from(other_file_ops))
        def file_op(self, path: str, op: OpCode) -> None:
            self.both(op, path)

        @precondition(lambda _self: bool(dirs) and Op.LIST_DIR in caps.commands)
        @rule(path=st.sampled_from(some_dir))
        def list_dir(self, path: str) -> None:
            self.both(Op.LIST_DIR, path)

        @precondition(lambda _self: renames and Op.RENAME_FILE in caps.commands)
        @rule(src=st.sampled_from(files), dst=st.sampled_from(files))
        def rename_file(self, src: str, dst: str) -> None:
            self.both(Op.RENAME_FILE, src, dst)

        @precondition(lambda _self: bool(dirs) and renames and Op.RENAME_DIR in caps.commands)
        @rule(src=st.sampled_from(some_dir), dst=st.sampled_from(some_dir))
        def rename_dir(self, src: str, dst: str) -> None:
            self.both(Op.RENAME_DIR, src, dst)

        @invariant()
        def listings_agree(self) -> None:
            if Op.LIST_DIR not in caps.commands:
                return
            for d in ("/", *dirs):
                got, expected = self.sut.names(d), self.ref.names(d)
                if got != expected:
                    raise ConformanceError(f"listing of {d}: reference {expected}, backend {got}")

        def teardown(self) -> None:
            self.cleanup()

    if not caps.commands:
        return  # nothing performed: ``unperformed_commands_are_accepted`` covers it
    run_state_machine_as_test(
        Conformance,
        settings=settings(
            max_examples=max_examples, stateful_step_count=steps, deadline=None, derandomize=True,
            suppress_health_check=list(HealthCheck), database=None, report_multiple_bugs=False,
        ),
    )


def run_conformance(factory: BackendFactory, *, max_examples: int = 40, steps: int = 25) -> list[str]:
    """Every case that applies, then the random sequences; returns the names of the cases run.
    Raises ``ConformanceError`` at the first disagreement."""
    ran = [case.name for case in CASES if run_case(factory, case)]
    check_random_sequences(factory, max_examples=max_examples, steps=steps)
    return ran

