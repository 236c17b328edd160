"""The job factory a run gives its engine: a replay worker for a ``WorkerSpec``, a data task for
a ``DataTaskSpec`` (one engine runs both, from the same barrier)."""

from __future__ import annotations

from mimesisbench.datajobs.task import DataTask, DataTaskSpec
from mimesisbench.jobs import Job
from mimesisbench.run.worker import Worker, WorkerSpec


def build_job(spec: WorkerSpec | DataTaskSpec) -> Job:
    """The job of ``spec`` (a module-level function: engines pickle it by reference)."""
    if isinstance(spec, DataTaskSpec):
        return DataTask(spec)
    return Worker(spec)
