"""Every built-in backend through the public conformance suite (``mimesisbench.backends.conformance``).

To add a backend, add a factory to ``FACTORIES``: a callable that returns a fresh, connected
backend on an empty namespace plus a cleanup callable (the hdfs one is in the integration tests).
Each case of the suite that applies to what a backend's capabilities claim runs as its own test
(``CLAIMS``, checked against the backends themselves below); that the others are recognised as not
applying is a test of its own, so nothing is skipped.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mimesisbench.backends import conformance
from mimesisbench.backends.base import FILE_SYSTEM, NOTHING, V1_COMMANDS, Backend, Capabilities
from mimesisbench.backends.conformance import CASES, Case, ConformanceError, check_random_sequences, run_case
from mimesisbench.backends.memory import MEMORY_CAPABILITIES, MemoryBackend
from mimesisbench.backends.null import NullBackend
from mimesisbench.backends.posix import posix_capabilities, xattrs_supported
from mimesisbench.backends.registry import open_backend
from mimesisbench.schedule.format import OpCode

Factory = Callable[[], tuple[Backend, Callable[[], None]]]


def _memory() -> tuple[Backend, Callable[[], None]]:
    return MemoryBackend(), lambda: None


def _null() -> tuple[Backend, Callable[[], None]]:
    return open_backend("null"), lambda: None


def _posix(wrappers: str = "") -> tuple[Backend, Callable[[], None]]:
    root = Path(tempfile.mkdtemp(prefix="mimesis-conf-"))
    backend = open_backend(f"{wrappers}posix:{root / 'base'}")
    backend.setup(reuse=False)
    backend.connect()
    return backend, lambda: shutil.rmtree(root, ignore_errors=True)


def _wrapped_posix() -> tuple[Backend, Callable[[], None]]:
    """posix behind all three wrappers (``backends.wrappers``), none of which may change what it does."""
    return _posix("delay:20us+rate:200000+fail:0+")


def _wrapped_memory() -> tuple[Backend, Callable[[], None]]:
    backend = open_backend("delay:uniform(0us,40us)+memory")
    backend.connect()
    return backend, lambda: None


FACTORIES: dict[str, Factory] = {
    "memory": _memory, "null": _null, "posix": _posix, "wrapped-posix": _wrapped_posix, "wrapped-memory": _wrapped_memory,
}
#: what each backend's capabilities claim (``test_capabilities_of_the_built_in_backends`` checks it)
def _posix_claim() -> Capabilities:
    """posix performs the ACL and xattr commands where the temporary directory's file system has
    ``user`` extended attributes (tmpfs before Linux 6.6 has none)."""
    with tempfile.TemporaryDirectory(prefix="mimesis-conf-") as scratch:
        return posix_capabilities(xattrs_supported(scratch))


CLAIMS: dict[str, Capabilities] = {"memory": MEMORY_CAPABILITIES, "null": NOTHING, "posix": _posix_claim()}
CLAIMS["wrapped-posix"], CLAIMS["wrapped-memory"] = CLAIMS["posix"], CLAIMS["memory"]  # a wrapper claims what it wraps
APPLICABLE = [(name, case) for name in sorted(FACTORIES) for case in CASES if case.applies_to(CLAIMS[name])]
NOT_APPLICABLE = [(name, case) for name in sorted(FACTORIES) for case in CASES if not case.applies_to(CLAIMS[name])]


@pytest.mark.parametrize(("name", "case"), APPLICABLE, ids=[f"{n}-{c.name}" for n, c in APPLICABLE])
def test_case(name: str, case: Case) -> None:
    assert run_case(FACTORIES[name], case)


@pytest.mark.parametrize(("name", "case"), NOT_APPLICABLE, ids=[f"{n}-{c.name}" for n, c in NOT_APPLICABLE])
def test_a_case_beyond_the_claims_is_not_run(name: str, case: Case) -> None:
    assert not run_case(FACTORIES[name], case)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_random_sequences_agree_with_the_reference(name: str) -> None:
    check_random_sequences(FACTORIES[name], max_examples=40, steps=25)


def test_capabilities_of_the_built_in_backends() -> None:
    for name, factory in FACTORIES.items():
        backend, cleanup = factory()
        try:
            assert backend.capabilities == CLAIMS[name], name
        finally:
            cleanup()
    assert MemoryBackend().capabilities.skipped == {OpCode.NAMENODE}
    assert NullBackend().capabilities == NOTHING and not NOTHING.commands and not NOTHING.skipped
    assert FILE_SYSTEM.commands == V1_COMMANDS and FILE_SYSTEM.skipped == frozenset(OpCode) - V1_COMMANDS
    posix, cleanup = _posix()
    try:
        caps = posix.capabilities
        assert caps.performs(OpCode.RENAME_DIR) and caps.performs(OpCode.DELETE_DIR)
        assert caps.skips(OpCode.SET_STORAGE_POLICY) and caps.skips(OpCode.NAMENODE)
        assert caps.performed_as(OpCode.CONCAT) is OpCode.APPEND
    finally:
        cleanup()
    with pytest.raises(ValueError):
        Capabilities(commands=frozenset({99}))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- the suite finds faults


class _FlatMemory(MemoryBackend):
    """Claims no directories but still has them: its capabilities say what it does not do."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(directories=False)


class _OverwritingRename(MemoryBackend):
    """Claims atomic renames but overwrites an existing target (a copy-and-delete rename)."""

    def rename(self, src: str, dst: str) -> None:
        try:
            self.delete(dst)
        except OSError:
            pass
        super().rename(src, dst)


class _NoDelete(MemoryBackend):
    """Declares it does not perform ``delete``, yet raises on it."""

    caps: ClassVar[Capabilities] = Capabilities(
        commands=MEMORY_CAPABILITIES.commands - {OpCode.DELETE}, mapped=MEMORY_CAPABILITIES.mapped
    )

    @property
    def capabilities(self) -> Capabilities:
        return self.caps

    def delete(self, path: str) -> None:
        raise RuntimeError("not supported")

    def sync_ops(self) -> dict[OpCode, Callable[[Any], object]]:
        """Its own table (not ``Backend.sync_ops``, which would make the skipped ``delete`` a no-op)."""
        table = super().sync_ops()
        table[OpCode.DELETE] = self.delete
        return table


def _factory(cls: type[MemoryBackend]) -> Factory:
    return lambda: (cls(), lambda: None)


def test_capabilities_must_match_the_declarations() -> None:
    case = next(c for c in CASES if c.name == "create_twice_is_exists")
    with pytest.raises(ConformanceError, match="mkdirs, rename_dir performed, but the capabilities have no direct"):
        run_case(_factory(_FlatMemory), case)


def test_a_rename_that_overwrites_is_not_atomic() -> None:
    case = next(c for c in CASES if c.name == "rename_moves_a_file_and_refuses_an_existing_target")
    expected = r"_OverwritingRename .*rename_file\('/d/f.r1', '/d/g'\): expected exists"
    with pytest.raises(ConformanceError, match=expected):
        run_case(_factory(_OverwritingRename), case)
    with pytest.raises(ConformanceError, match="rename_file"):
        check_random_sequences(_factory(_OverwritingRename), max_examples=40, steps=25)


def test_an_unperformed_command_must_be_accepted() -> None:
    case = next(c for c in CASES if c.name == "unperformed_commands_are_accepted")
    with pytest.raises(ConformanceError, match="delete is not among the commands the backend performs, yet it"):
        run_case(_factory(_NoDelete), case)
    ran = conformance.run_conformance(_factory(MemoryBackend), max_examples=5, steps=10)
    assert ran == [c.name for c in CASES if c.applies_to(MEMORY_CAPABILITIES)]
    assert "command_concat" not in ran and "mapped_commands_run_as_their_nearest" in ran  # concat runs as append
