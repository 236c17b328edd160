"""The engine boundary: where workers run, and the small interface a coordinator talks through.

A coordinator never sees processes, pipes or actors. It calls, in order:

``prepare(specs)``
    start one worker per ``WorkerSpec``; each loads its share and opens its backend.
``wait_ready(timeout_s)``
    the ready handshake: one ``ReadyInfo`` per worker (raises ``BackendError`` when a worker
    cannot prepare).
``start_at(wall_ns)``
    the common barrier, a wall-clock time far enough ahead for every worker.
``poll(timeout_s)``
    what happened since the last call: ``Progress``, ``WorkerResult`` (a worker ended) or
    ``Crashed`` (a worker died without a result).
``stop()``
    ask every worker still running to stop (idempotent; workers keep what they measured).
``collect(timeout_s)``
    wait until every worker has ended; one ``WorkerResult`` or ``Crashed`` per worker.
``close()``
    release everything (kill what is left).

The local engine runs one process per worker; the Ray engine runs one actor per worker. Both
are given a job factory (``jobs.JobFactory``; a run passes ``run.worker.Worker``) and build each
job from its spec where it runs (``Job.prepare`` / ``Job.run``): an engine never imports the
code of the jobs it runs, nor anything of ``run``. The records it passes on (``ReadyInfo``,
``Progress``, ``WorkerResult``, ``Crashed``) are ``mimesisbench.jobs``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from mimesisbench.jobs import Crashed, EngineEvent, JobSpec, ReadyInfo, WorkerResult

__all__ = ["Crashed", "Engine", "EngineEvent"]

SpecT_contra = TypeVar("SpecT_contra", bound=JobSpec, contravariant=True)


class Engine(Protocol[SpecT_contra]):
    """Where the jobs of one run execute (see the module docstring)."""

    def prepare(self, specs: Sequence[SpecT_contra]) -> None: ...

    def wait_ready(self, timeout_s: float) -> list[ReadyInfo]: ...

    def start_at(self, wall_ns: int) -> None: ...

    def poll(self, timeout_s: float) -> list[EngineEvent]: ...

    def stop(self) -> None: ...

    def collect(self, timeout_s: float) -> list[WorkerResult | Crashed]: ...

    def close(self) -> None: ...
