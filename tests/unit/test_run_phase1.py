"""Phase 1: builds the namespace, resumes, skips a namespace that is already there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.backends.posix import PosixBackend
from mimesisbench.backends.registry import backend_class, open_backend
from mimesisbench.errors import BackendError, ConfigError, SafetyError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import _phase1, _phase1_plan
from mimesisbench.run.phase1 import (
    Phase1Report,
    build_namespace,
    marker_text,
    read_marker_state,
)
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.paths import namespace_paths


def _posix(tmp_path: Path) -> PosixBackend:
    backend = PosixBackend(f"posix:{tmp_path / 'base'}")
    backend.setup(reuse=False)
    return backend


def test_builds_every_directory_and_file_then_resumes(tmp_path: Path) -> None:
    sched = load_schedule(workload(tmp_path / "s"))
    backend = _posix(tmp_path)
    dirs, files = namespace_paths(sched)
    # an interrupted earlier attempt made one directory and one file already
    (tmp_path / "base" / "d1").mkdir()
    first = files.to_list()[0]
    (tmp_path / "base" / first.lstrip("/")).touch()
    report = build_namespace(backend, sched, threads=3)
    assert report.directories_created == dirs.height - 1 and report.directories_existing == 1
    assert report.files_created == files.len() - 1 and report.files_existing == 1
    for rel in [*dirs["path"].to_list(), *files.to_list()]:
        assert (tmp_path / "base" / rel.lstrip("/")).exists(), rel
    again = build_namespace(backend, sched, threads=1)
    assert again.files_created == 0 and again.files_existing == files.len()


def test_marker_skips_an_untouched_namespace_and_refuses_a_used_one(tmp_path: Path) -> None:
    sched = load_schedule(workload(tmp_path / "s"))
    backend = _posix(tmp_path)
    config = RunConfig(schedule=str(sched.root), backend=backend.url, out=str(tmp_path / "runs"))
    warnings: list[str] = []

    def phase1(cfg: RunConfig) -> Phase1Report:
        return _phase1(backend, sched, cfg, _phase1_plan(backend, sched, cfg, warnings), None, False)

    built = phase1(config)
    assert not built.skipped and read_marker_state(backend, sched.namespace_hash()) == "ready"
    skipped = phase1(config)
    assert skipped.skipped and "marker" in skipped.reason
    backend.write_marker(marker_text(sched.namespace_hash(), "used"))
    with pytest.raises(SafetyError, match="fresh base"):  # exit 5 (safety), not a bad option
        phase1(config)
    reuse = RunConfig(schedule=str(sched.root), backend=backend.url, out=str(tmp_path / "runs"), reuse=True)
    assert not phase1(reuse).skipped and warnings
    other = load_schedule(workload(tmp_path / "s2", files_per_type=3))
    assert read_marker_state(backend, other.namespace_hash()) is None  # another schedule: no match
    assert json.loads(backend.read_marker() or "{}")["namespace_hash"] == sched.namespace_hash()


def test_a_failing_phase1_names_the_problem(tmp_path: Path) -> None:
    sched = load_schedule(workload(tmp_path / "s"))
    backend = _posix(tmp_path)
    (tmp_path / "base" / "d1").write_text("a file where a directory should be")
    with pytest.raises(SafetyError, match="expected to be a directory"):
        build_namespace(backend, sched, threads=2)
    memory = MemoryBackend()
    memory.create("/d1")
    with pytest.raises(BackendError, match="could not be created"):
        build_namespace(memory, sched, threads=1)


def test_registry_knows_the_builtins_and_refuses_the_rest() -> None:
    assert backend_class("memory").scheme == "memory"
    assert backend_class("null").scheme == "null"
    assert backend_class("posix:/tmp/x").scheme == "posix"
    with pytest.raises(ConfigError, match="unknown backend"):
        open_backend("ftp://host/dir")
    with pytest.raises(ConfigError, match="not a Backend"):
        open_backend("py:mimesisbench.errors:ConfigError")
    with pytest.raises(ConfigError):
        open_backend("")
