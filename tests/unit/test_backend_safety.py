"""Safety: the posix backend stays below its base directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.backends import safety
from mimesisbench.backends.base import Outcome
from mimesisbench.backends.posix import PosixBackend
from mimesisbench.errors import ConfigError, SafetyError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark


def test_a_new_base_is_created_and_marked(tmp_path: Path) -> None:
    backend = PosixBackend(f"posix:{tmp_path / 'new' / 'base'}")
    backend.setup(reuse=False)
    assert (tmp_path / "new" / "base" / safety.OWNER_MARKER).is_file()
    assert backend.created_base
    again = PosixBackend(f"posix:{tmp_path / 'new' / 'base'}")
    again.setup(reuse=False)  # ours: accepted (resumable)
    assert not again.created_base


def test_a_foreign_non_empty_base_is_refused_unless_reuse(tmp_path: Path) -> None:
    base = tmp_path / "theirs"
    base.mkdir()
    (base / "precious.txt").write_text("keep me")
    with pytest.raises(SafetyError, match="not empty"):
        PosixBackend(f"posix:{base}").setup(reuse=False)
    PosixBackend(f"posix:{base}").setup(reuse=True)
    assert (base / "precious.txt").read_text() == "keep me"


def test_root_and_symlinked_bases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SafetyError):
        PosixBackend("posix:/").setup(reuse=True)
    with pytest.raises(ConfigError):
        PosixBackend("posix:")
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    backend = PosixBackend(f"posix:{link}")
    assert backend.base == str(real.resolve())  # the link is resolved once, paths use the real base


def test_relative_path_rules() -> None:
    assert safety.check_relative("/a/b") == "/a/b"
    for bad in ("a/b", "/a/../b", "/..", "/a//b", "/a/", "/a/./b", "/a\x00b"):
        with pytest.raises(SafetyError):
            safety.check_relative(bad)


def test_a_symlinked_directory_in_the_tree_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    backend = PosixBackend(f"posix:{tmp_path / 'base'}")
    backend.setup(reuse=False)
    os.symlink(outside, tmp_path / "base" / "d1")
    with pytest.raises(SafetyError, match="symlink"):
        backend.verify_namespace(["/", "/d1", "/d1/a"])
    schedule = workload(tmp_path / "s", files_per_type=2)
    with pytest.raises(SafetyError, match="symlink"):
        run_benchmark(
            RunConfig(schedule=str(schedule), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs")),
            show_progress=False,
        )
    assert list(outside.iterdir()) == []  # nothing was created through the link


def test_operations_never_follow_a_final_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    backend = PosixBackend(f"posix:{tmp_path / 'base'}")
    backend.setup(reuse=False)
    link = Path(backend.base) / "link"
    link.symlink_to(outside)
    with pytest.raises(OSError) as info:
        backend.open(str(link))
    assert backend.classify(info.value) is Outcome.OTHER  # ELOOP: O_NOFOLLOW refused it
    with pytest.raises(OSError):
        backend.create(str(link))
    backend.delete(str(link))
    assert outside.read_text() == "x" and not link.exists()


def test_run_refuses_a_non_empty_base(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "data").write_text("not ours")
    schedule = workload(tmp_path / "s", files_per_type=2)
    with pytest.raises(SafetyError):
        run_benchmark(
            RunConfig(schedule=str(schedule), backend=f"posix:{base}", out=str(tmp_path / "runs")), show_progress=False
        )
    assert sorted(p.name for p in base.iterdir()) == ["data"]
    assert not (tmp_path / "runs").exists()
