"""Every backend against the reference model (the memory backend).

To add a backend (e.g. HDFS), add a factory to ``FACTORIES``: a callable that returns a fresh,
connected backend on an empty namespace plus a cleanup callable. The explicit cases and the
Hypothesis state machine then run against it; outcomes are compared as ``Outcome`` values.
File operations are only applied to file names and directory operations to directory names
(operations of one kind on the other are outside the contract).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from mimesisbench.backends.base import Backend, Outcome
from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.backends.null import NullBackend
from mimesisbench.backends.posix import PosixBackend
from mimesisbench.backends.registry import open_backend

Factory = Callable[[], tuple[Backend, Callable[[], None]]]


def _memory() -> tuple[Backend, Callable[[], None]]:
    return MemoryBackend(), lambda: None


def _posix() -> tuple[Backend, Callable[[], None]]:
    root = Path(tempfile.mkdtemp(prefix="mimesis-conf-"))
    backend = PosixBackend(f"posix:{root / 'base'}")
    backend.setup(reuse=False)
    backend.connect()
    return backend, lambda: shutil.rmtree(root, ignore_errors=True)


FACTORIES: dict[str, Factory] = {"memory": _memory, "posix": _posix}


class Target:
    """A backend under test with relative paths (``/a/b``) mapped to its native ones."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.base = getattr(backend, "base", "")

    def native(self, rel: str) -> str:
        return self.base + rel if rel != "/" else (self.base or "/")

    def call(self, name: str, *rel: str) -> Outcome:
        try:
            getattr(self.backend, name)(*(self.native(r) for r in rel))
        except self.backend.op_errors as exc:
            return self.backend.classify(exc)
        return Outcome.OK

    def names(self, rel: str) -> list[str] | None:
        try:
            listed = self.backend.list_dir(self.native(rel))
        except self.backend.op_errors:
            return None
        return sorted(n for n in (listed or []) if not n.startswith(".mimesisbench"))


@pytest.fixture(params=sorted(FACTORIES))
def target(request: pytest.FixtureRequest) -> Target:
    backend, cleanup = FACTORIES[request.param]()
    request.addfinalizer(cleanup)
    return Target(backend)


# ---------------------------------------------------------------------- explicit cases


def test_create_then_create_again_is_exists(target: Target) -> None:
    assert target.call("create", "/f") is Outcome.OK
    assert target.call("create", "/f") is Outcome.EXISTS
    assert target.call("open", "/f") is Outcome.OK
    assert target.call("list_file", "/f") is Outcome.OK
    assert target.call("getfileinfo", "/f") is Outcome.OK


def test_missing_things_are_not_found(target: Target) -> None:
    assert target.call("open", "/nope") is Outcome.NOT_FOUND
    assert target.call("getfileinfo", "/nope") is Outcome.NOT_FOUND
    assert target.call("list_file", "/nope") is Outcome.NOT_FOUND
    assert target.call("list_dir", "/nodir") is Outcome.NOT_FOUND
    assert target.call("delete", "/nope") is Outcome.NOT_FOUND
    assert target.call("create", "/nodir/f") is Outcome.NOT_FOUND
    assert target.call("mkdirs", "/nodir/sub") is Outcome.NOT_FOUND
    assert target.call("rename", "/nope", "/other") is Outcome.NOT_FOUND


def test_rename_moves_and_refuses_an_existing_target(target: Target) -> None:
    assert target.call("mkdirs", "/d") is Outcome.OK
    assert target.call("create", "/d/f") is Outcome.OK
    assert target.call("create", "/d/g") is Outcome.OK
    assert target.call("rename", "/d/f", "/d/f.r1") is Outcome.OK
    assert target.call("open", "/d/f") is Outcome.NOT_FOUND
    assert target.call("open", "/d/f.r1") is Outcome.OK
    assert target.call("rename", "/d/f.r1", "/d/g") is Outcome.EXISTS
    assert target.call("open", "/d/f.r1") is Outcome.OK
    assert target.names("/d") == ["f.r1", "g"]


def test_directories_rename_and_list(target: Target) -> None:
    assert target.call("mkdirs", "/m") is Outcome.OK
    assert target.call("mkdirs", "/m") is Outcome.EXISTS
    assert target.call("mkdirs", "/m/sub") is Outcome.OK
    assert target.call("create", "/m/sub/x") is Outcome.OK
    assert target.call("rename", "/m", "/m.r1") is Outcome.OK
    assert target.call("list_dir", "/m") is Outcome.NOT_FOUND
    assert target.names("/") == ["m.r1"]
    assert target.names("/m.r1") == ["sub"]
    assert target.names("/m.r1/sub") == ["x"]
    assert target.call("rename", "/m.r1", "/m.r1/sub/inside") is Outcome.OTHER


def test_delete_removes_only_the_file(target: Target) -> None:
    assert target.call("mkdirs", "/d") is Outcome.OK
    for name in ("a", "b"):
        assert target.call("create", f"/d/{name}") is Outcome.OK
    assert target.call("delete", "/d/a") is Outcome.OK
    assert target.call("delete", "/d/a") is Outcome.NOT_FOUND
    assert target.names("/d") == ["b"]
    assert target.call("create", "/d/a") is Outcome.OK


def test_null_backend_accepts_everything() -> None:
    null = open_backend("null")
    assert isinstance(null, NullBackend)
    target = Target(null)
    for name, args in (("create", ("/x",)), ("create", ("/x",)), ("delete", ("/y",)), ("rename", ("/a", "/b"))):
        assert target.call(name, *args) is Outcome.OK


# ---------------------------------------------------------------------- state machine

DIRS = ["/a", "/b", "/a/c"]
FILES = ["/f1", "/a/f2", "/a/c/f3", "/b/f4", "/b/f5"]


class Conformance(RuleBasedStateMachine):
    """Random operation sequences: the backend under test must agree with the reference."""

    factory: Factory = staticmethod(_memory)  # replaced per backend

    def __init__(self) -> None:
        super().__init__()
        backend, self.cleanup = type(self).factory()
        self.sut = Target(backend)
        self.ref = Target(MemoryBackend())

    def both(self, name: str, *paths: str) -> None:
        expected = self.ref.call(name, *paths)
        got = self.sut.call(name, *paths)
        assert got is expected, f"{name}{paths}: reference {expected.label}, backend {got.label}"

    @rule(path=st.sampled_from(FILES), op=st.sampled_from(["create", "open", "list_file", "getfileinfo", "delete"]))
    def file_op(self, path: str, op: str) -> None:
        self.both(op, path)

    @rule(src=st.sampled_from(FILES), dst=st.sampled_from(FILES))
    def rename_file(self, src: str, dst: str) -> None:
        self.both("rename", src, dst)

    @rule(path=st.sampled_from(DIRS), op=st.sampled_from(["mkdirs", "list_dir"]))
    def dir_op(self, path: str, op: str) -> None:
        self.both(op, path)

    @rule(src=st.sampled_from(DIRS), dst=st.sampled_from(DIRS))
    def rename_dir(self, src: str, dst: str) -> None:
        self.both("rename", src, dst)

    @invariant()
    def listings_agree(self) -> None:
        for d in ["/", *DIRS]:
            assert self.sut.names(d) == self.ref.names(d), f"listing of {d}"

    def teardown(self) -> None:
        self.cleanup()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_random_sequences_agree_with_the_reference(name: str) -> None:
    machine = type(f"Conformance_{name}", (Conformance,), {"factory": staticmethod(FACTORIES[name])})
    run_state_machine_as_test(
        machine,  # type: ignore[arg-type]
        settings=settings(
            max_examples=40, stateful_step_count=25, deadline=None, suppress_health_check=list(HealthCheck)
        ),
    )
