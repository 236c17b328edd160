"""What a job (one worker's share of a run) and the layers around it exchange: plain records.

This module sits at the bottom of the package (it imports nothing of ``mimesisbench``), so the
layers that only move jobs around can share it without importing each other:

* ``engine`` runs jobs (in processes, in Ray actors) and never imports the code of a job: it is
  given a ``JobFactory`` (``run.worker.Worker`` for a replay) that builds the job from its spec;
* ``monitoring`` reads the records jobs report (``Progress``, ``WorkerResult``, ``LiveDelta``);
* ``run`` builds the specs, picks the factory and the engine.

A job's life, as an engine drives it: ``job = factory(spec)``; ``job.prepare()`` returns a
``ReadyInfo``; ``job.run(start_wall_ns, stop, on_progress)`` replays from the barrier and returns
a ``WorkerResult``; meanwhile ``job.current_progress()`` may be asked from another thread. A
``StopSignal`` stops it early; whatever it measured is kept in its part file.

Nothing here runs at import time (``tighten_timer_slack`` is called by a worker process). Also
here: what every job does alike (``wall_to_monotonic_ns``: the barrier on its own clock;
``write_part_file``: its part file).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np


class StopSignal:
    """Set once by whoever stops the worker first (coordinator, a late lane, a failing backend)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], object]] = []
        self.reason: str | None = None
        self.message = ""

    def set(self, reason: str, message: str = "") -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.message = reason, message
            listeners = list(self._listeners)
        self._event.set()
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], object]) -> None:
        """Call ``listener()`` when the signal is set (at once when it already is); native lanes
        hear the stop this way (their flag's ``set``)."""
        with self._lock:
            self._listeners.append(listener)
        if self._event.is_set():
            listener()

    def is_set(self) -> bool:
        return self._event.is_set()


def tighten_timer_slack(slack_ns: int = 1000) -> bool:
    """Ask Linux for precise sleeps in this process (``PR_SET_TIMERSLACK``; default 50 us).

    Called once in a worker process, never at import; returns False where unsupported.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(29, ctypes.c_ulong(slack_ns), 0, 0, 0)) == 0  # 29 = PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        return False


def wall_to_monotonic_ns(wall_ns: int) -> int:
    """The local monotonic time at which the wall clock reads ``wall_ns`` (best of 5 readings).

    The coordinator names the start barrier as a wall-clock time (ns since the epoch) so jobs on
    other machines (NTP-synchronised) can meet it; each job converts it once into its own
    monotonic clock and never reads the wall clock again during the run."""
    best_gap, offset = None, 0
    for _ in range(5):
        m0 = time.monotonic_ns()
        w = time.time_ns()
        m1 = time.monotonic_ns()
        gap = m1 - m0
        if best_gap is None or gap < best_gap:
            best_gap, offset = gap, w - (m0 + m1) // 2
    return wall_ns - offset


def write_part_file(parts_dir: Path, stem: str, index: int, arrays: dict[str, np.ndarray]) -> Path:
    """Atomically write one job's arrays to ``parts_dir/<stem>-<index>.npz`` (a replay worker's
    samples, ``worker``; a data task's calls, ``data``); no half-written file is left behind."""
    parts_dir.mkdir(parents=True, exist_ok=True)
    final = parts_dir / f"{stem}-{index}.npz"
    tmp = parts_dir / f"{stem}-{index}.tmp.npz"
    try:
        named: dict[str, Any] = arrays  # by name (numpy's stubs would also match a ** dict to allow_pickle)
        np.savez(tmp, **named)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):  # it would only take space
            tmp.unlink(missing_ok=True)
        raise
    return final


@dataclass(frozen=True)
class LiveDelta:
    """One worker's operations completed since its previous delta (picklable, small).

    ``keys`` (k, 2) int64: operation code and file type of each row (only rows with operations).
    ``outcomes`` (k, n_outcomes) int64: operations per outcome code.
    ``buckets`` (3, k, n_buckets) int64: per timing (``monitoring.live_stats.TIMINGS``),
    non-cumulative bucket counts.
    ``sums_ns`` (3, k) float64: per timing, the sum of the values (ns).
    ``in_flight``: operations due by the time of the delta and not completed yet (outstanding
    plus waiting behind a late lane); a gauge, not a delta.

    Made by ``monitoring.live_stats`` in the worker, summed by ``monitoring.live_totals``.
    """

    keys: np.ndarray
    outcomes: np.ndarray
    buckets: np.ndarray
    sums_ns: np.ndarray
    in_flight: int = 0

    @property
    def operations(self) -> int:
        return int(self.outcomes.sum())


@dataclass(frozen=True)
class ReadyInfo:
    index: int
    events: int
    lanes: int
    prepare_s: float
    pid: int
    host: str
    #: how the lanes replay: ``python``, or ``native-<backend>-<version>`` (``run_native_lane``)
    lane_impl: str = "python"


@dataclass(frozen=True)
class Progress:
    index: int
    issued: int
    total: int
    lag_ns: int
    live: LiveDelta | None = None  # operations completed since the previous progress (live metrics)


@dataclass(frozen=True)
class WorkerResult:
    """How a worker ended. ``status``: complete, stopped, drift, failed (crashed is the engine's)."""

    index: int
    status: str
    message: str
    total: int
    issued: int
    part_path: str | None
    origin_monotonic_ns: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    live: LiveDelta | None = None  # operations completed since the last progress (live metrics)
    #: the samples themselves (the arrays of a part file, by column) when the part file could not be
    #: written (a full disk): the coordinator writes them with the rest, or keeps what it can
    samples: dict[str, Any] | None = None


@dataclass(frozen=True)
class Crashed:
    """A worker that ended without a result (killed, out of memory, a bug in the process)."""

    index: int
    message: str


#: what an engine reports while jobs run
EngineEvent = Progress | WorkerResult | Crashed


class JobSpec(Protocol):
    """What an engine needs to know of a job's spec (picklable; sent to a process or an actor).

    ``schedule_dir``: the directory of inputs the job reads (shipped to nodes that lack it);
    ``parts_dir``: where the job writes its part file ``worker-<index>.npz``."""

    @property
    def index(self) -> int: ...

    @property
    def schedule_dir(self) -> str: ...

    @property
    def parts_dir(self) -> str: ...

    def relocated(self: SpecT, *, schedule_dir: str | None = None, parts_dir: str | None = None) -> SpecT:
        """The same spec reading its inputs from, or writing its part file to, another directory
        (a Ray actor uses a private copy of the schedule and a node-local part file)."""
        ...


SpecT = TypeVar("SpecT", bound=JobSpec)


class Job(Protocol):
    """One worker's job as an engine drives it (see the module docstring)."""

    def prepare(self) -> ReadyInfo: ...

    def run(
        self, start_wall_ns: int, stop: StopSignal, on_progress: Callable[[Progress], None] | None = None
    ) -> WorkerResult: ...

    def current_progress(self) -> Progress | None:
        """Progress since the barrier (``None`` before ``run`` started); safe from another thread."""
        ...

    def last_due_ns(self) -> int:
        """The last scheduled time after the barrier (ns), known once prepared."""
        ...


#: builds a job from its spec (a module-level callable, e.g. a class: it is pickled by reference)
JobFactory = Callable[[SpecT], Job]
