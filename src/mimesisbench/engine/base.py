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

The local engine runs one process per worker; the Ray engine (``engine/ray_engine.py``) runs one
actor per worker with the same ``Worker`` class inside (``Worker.prepare`` / ``Worker.run``), unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Union

from mimesisbench.run.worker import Progress, ReadyInfo, WorkerResult, WorkerSpec


@dataclass(frozen=True)
class Crashed:
    """A worker that ended without a result (killed, out of memory, a bug in the process)."""

    index: int
    message: str


EngineEvent = Union[Progress, WorkerResult, Crashed]


class Engine(Protocol):
    def prepare(self, specs: Sequence[WorkerSpec]) -> None: ...

    def wait_ready(self, timeout_s: float) -> list[ReadyInfo]: ...

    def start_at(self, wall_ns: int) -> None: ...

    def poll(self, timeout_s: float) -> list[EngineEvent]: ...

    def stop(self) -> None: ...

    def collect(self, timeout_s: float) -> list[WorkerResult | Crashed]: ...

    def close(self) -> None: ...
