"""Phase 1: build the schedule's pre-existing directories and empty files below the base.

Directories are made level by level (parents first), then files, each level in parallel chunks
on a thread pool. Each level is checked (``Backend.verify_namespace``: no symlinks) before
anything is made inside it. Restartable: an item that already exists counts as done, so an interrupted
phase 1 simply runs again. After success the backend records a marker with the schedule's
namespace hash; a later run on the same, untouched namespace skips phase 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl
from rich.console import Console

from mimesisbench.backends.base import Backend, Outcome
from mimesisbench.errors import BackendError
from mimesisbench.run.progress import Bar
from mimesisbench.schedule import Schedule
from mimesisbench.schedule.paths import namespace_paths

CHUNK = 1024


@dataclass(frozen=True)
class Phase1Report:
    """What phase 1 did."""

    skipped: bool
    reason: str = ""
    directories_created: int = 0
    directories_existing: int = 0
    files_created: int = 0
    files_existing: int = 0
    seconds: float = 0.0


@dataclass
class _Tally:
    created: int = 0
    existing: int = 0
    failed: int = 0
    first_error: str = ""


def marker_text(namespace_hash: str, state: str) -> str:
    """The namespace marker: ``state`` is ``ready`` after phase 1, ``used`` once phase 2 began."""
    return json.dumps({"namespace_hash": namespace_hash, "state": state}) + "\n"


def read_marker_state(backend: Backend, namespace_hash: str) -> str | None:
    """``ready``/``used`` when the backend holds a marker for this namespace, else None."""
    text = backend.read_marker()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("namespace_hash") != namespace_hash:
        return None
    state = data.get("state")
    return state if isinstance(state, str) else None


def _run_chunk(backend: Backend, fn: Callable[[str], None], paths: list[str], bar: Bar) -> _Tally:
    tally = _Tally()
    for path in paths:
        try:
            fn(path)
            tally.created += 1
        except backend.op_errors as exc:
            outcome = backend.classify(exc)
            if outcome is Outcome.EXISTS:
                tally.existing += 1
            else:
                tally.failed += 1
                if not tally.first_error:
                    tally.first_error = f"{path}: {exc}"
    bar.advance(len(paths))
    return tally


def _run_level(
    backend: Backend, fn: Callable[[str], None], paths: list[str], pool: ThreadPoolExecutor | None, bar: Bar
) -> _Tally:
    chunks = [paths[i : i + CHUNK] for i in range(0, len(paths), CHUNK)]
    if pool is None:
        results = [_run_chunk(backend, fn, c, bar) for c in chunks]
    else:
        results = list(pool.map(lambda c: _run_chunk(backend, fn, c, bar), chunks))
    total = _Tally()
    for r in results:
        total.created += r.created
        total.existing += r.existing
        total.failed += r.failed
        total.first_error = total.first_error or r.first_error
    return total


def build_namespace(
    backend: Backend,
    schedule: Schedule,
    *,
    threads: int = 4,
    show_progress: bool = False,
    console: Console | None = None,
) -> Phase1Report:
    """Create every pre-existing directory and file; raises ``BackendError`` if any failed."""
    t0 = time.perf_counter()
    dirs, file_rel = namespace_paths(schedule)
    total = dirs.height + file_rel.len()
    use_pool = threads > 1 and backend.thread_safe
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="phase1") if use_pool else None
    dir_tally, file_tally = _Tally(), _Tally()
    try:
        with Bar("phase 1: namespace", total, "files", console=console, enabled=show_progress) as bar:
            for depth in dirs["depth"].unique().sort().to_list():
                level = dirs.filter(pl.col("depth") == depth)["path"]
                t = _run_level(backend, backend.mkdirs, backend.native_paths(level).to_list(), pool, bar)
                # before anything is made inside them: no symlink (planted or old) among them
                backend.verify_namespace(level.to_list())
                dir_tally.created += t.created
                dir_tally.existing += t.existing
                dir_tally.failed += t.failed
                dir_tally.first_error = dir_tally.first_error or t.first_error
                if t.failed:
                    break
            if not dir_tally.failed and file_rel.len():
                file_tally = _run_level(backend, backend.create, backend.native_paths(file_rel).to_list(), pool, bar)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    failed = dir_tally.failed + file_tally.failed
    if failed:
        first = dir_tally.first_error or file_tally.first_error
        raise BackendError(f"phase 1: {failed} item(s) could not be created (first: {first})")
    return Phase1Report(
        skipped=False,
        directories_created=dir_tally.created,
        directories_existing=dir_tally.existing,
        files_created=file_tally.created,
        files_existing=file_tally.existing,
        seconds=time.perf_counter() - t0,
    )
