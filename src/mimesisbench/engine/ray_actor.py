"""The body of a Ray worker actor: the unchanged job (built by the run's job factory, e.g.
``run.worker.Worker``) plus what a remote node needs.

``WorkerActor`` is a plain class; the engine turns it into an actor at run time
(``ray.remote(WorkerActor)``), so importing this module does not import Ray. The actor is
*threaded* (several methods run at once): ``run`` blocks for the whole replay while
``progress``, ``clock`` and ``stop`` answer the driver.

A node may not see the driver's files. The schedule is used in place when the node has the same
one at the same path (same manifest, same table sizes); otherwise the driver ships it once
through Ray's object store (:func:`schedule_bundle`) and the actor unpacks it into a private
temporary directory. Samples are written to a node-local part file by ``Worker`` and sent back
as bytes with the result; the driver writes them into the run directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Generic

from mimesisbench.jobs import (
    Job,
    JobFactory,
    Progress,
    ReadyInfo,
    SpecT,
    StopSignal,
    WorkerResult,
    tighten_timer_slack,
)
from mimesisbench.schedule import format as fmt

SCHEDULE_FILES = (fmt.MANIFEST, fmt.DIRECTORIES, fmt.FILES, fmt.EVENTS)
#: an actor's private directory: ``<tmp>/mimesisbench-ray-<pid>-w<index>-<random>``
TMP_PREFIX = "mimesisbench-ray-"


def sweep_stale_dirs(root: str | None = None) -> int:
    """Remove private directories left by actors whose process is gone (killed, node restart)."""
    removed = 0
    base = Path(root or tempfile.gettempdir())
    for path in base.glob(f"{TMP_PREFIX}*-w*"):
        pid_text = path.name[len(TMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def schedule_identity(schedule_dir: str | Path) -> str:
    """A cheap identity of a schedule directory: its manifest's hash and its tables' sizes."""
    root = Path(schedule_dir)
    h = hashlib.sha256()
    try:
        h.update((root / fmt.MANIFEST).read_bytes())
        for name in SCHEDULE_FILES[1:]:
            h.update(f"{name}:{(root / name).stat().st_size};".encode())
    except OSError:
        return ""
    return h.hexdigest()


def schedule_bundle(schedule_dir: str | Path) -> dict[str, bytes]:
    """The files a worker reads, by name (shipped to nodes that lack the schedule)."""
    root = Path(schedule_dir)
    return {name: (root / name).read_bytes() for name in SCHEDULE_FILES}


class WorkerActor(Generic[SpecT]):
    """One worker inside a Ray actor (see the module docstring)."""

    def __init__(self, factory: JobFactory[SpecT], spec: SpecT) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's; it stops us
        tighten_timer_slack()
        self._factory = factory
        self._spec = spec
        sweep_stale_dirs()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-w{spec.index}-"))
        self._worker: Job | None = None
        self._events = 0  # the prepared job's events (reported when stopped before the start)
        self._stop = StopSignal()

    # ------------------------------------------------------------------ before the start

    def locate(self, identity: str) -> dict[str, object]:
        """Where this actor runs (its Ray node id), and whether the node has the driver's schedule."""
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "has_schedule": bool(identity) and schedule_identity(self._spec.schedule_dir) == identity,
        }

    def prepare(self, bundle: dict[str, bytes] | None) -> tuple[ReadyInfo, int]:
        """Load the share and open the backend; returns ``ReadyInfo`` and the last due time (ns)."""
        spec = self._spec.relocated(parts_dir=str(self._tmp / "parts"))
        if bundle is not None:
            root = self._tmp / "schedule"
            root.mkdir()
            for name, data in bundle.items():
                (root / Path(name).name).write_bytes(data)
            spec = spec.relocated(schedule_dir=str(root))
        worker = self._factory(spec)
        ready = worker.prepare()
        self._worker, self._events = worker, ready.events
        return ready, worker.last_due_ns()

    def clock(self) -> int:
        """This node's wall clock (ns since the epoch), for the driver's offset estimate."""
        return time.time_ns()

    # ------------------------------------------------------------------ the replay

    def run(self, start_wall_ns: int) -> tuple[WorkerResult, bytes | None]:
        """Replay from the barrier (this node's wall clock); returns the result and the samples."""
        margin_ns = start_wall_ns - time.time_ns()
        worker = self._worker
        if worker is None:
            raise RuntimeError("prepare() first")
        if self._stop.is_set():
            return WorkerResult(self._spec.index, "stopped", "stopped before the start", self._events, 0, None), None
        result = worker.run(start_wall_ns, self._stop, on_progress=None)
        data = Path(result.part_path).read_bytes() if result.part_path else None
        shutil.rmtree(self._tmp, ignore_errors=True)
        extra = dict(result.extra)
        extra["barrier_margin_ms"] = margin_ns / 1e6
        return replace(result, part_path=None, extra=extra), data

    def progress(self) -> Progress | None:
        """Operations done and current lateness (None before the start)."""
        worker = self._worker
        return None if worker is None else worker.current_progress()

    def stop(self, reason: str = "stopped", message: str = "stopped by the coordinator") -> None:
        self._stop.set(reason, message)

    def cleanup(self) -> None:
        """Remove this actor's private directory (the driver calls it before killing the actor)."""
        shutil.rmtree(self._tmp, ignore_errors=True)
