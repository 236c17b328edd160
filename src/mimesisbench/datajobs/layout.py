"""Where each call of a data job's task goes: its file and offset (vectorised; no I/O).

A task's calls in one pass of one op, in the order it issues them (``task_offsets``):

* ``n-n``: its own file, offsets 0, transfer, 2 transfer, ... up to ``segments * block``;
* ``n-1-segmented``: the shared file, from ``task * segments * block`` on, contiguously;
* ``n-1-strided``: the shared file, segment s's block of task t at ``(s * tasks + t) * block``
  (IOR's ``-s`` layout), each block in transfers.

Over all tasks the calls of a pass cover each file exactly once, with no overlap (tested).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mimesisbench.datajobs.spec import DataJob


def file_name(job: DataJob, task: int) -> str:
    """The name of the file ``task`` writes (the shared one for an N-1 layout)."""
    return f"{job.name}.shared" if job.shared else f"{job.name}.{task:05d}"


def file_size(job: DataJob) -> int:
    """Bytes of one of the job's files after a pass of writes."""
    return job.bytes_per_task * (job.tasks if job.shared else 1)


def task_offsets(job: DataJob, task: int) -> NDArray[np.int64]:
    """The offsets of ``task``'s calls in one pass, in issue order."""
    if not 0 <= task < job.tasks:
        raise ValueError(f"task {task} of a job of {job.tasks} tasks")
    within = np.arange(job.block // job.transfer, dtype=np.int64) * job.transfer  # inside a block
    segment = np.arange(job.segments, dtype=np.int64)
    if job.layout == "n-n":
        starts = segment * job.block
    elif job.layout == "n-1-segmented":
        starts = task * job.bytes_per_task + segment * job.block
    else:  # n-1-strided
        starts = (segment * job.tasks + task) * job.block
    return (starts[:, None] + within[None, :]).ravel()
