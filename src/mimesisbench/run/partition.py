"""Which worker issues which event, and which lane inside a worker.

* ``by_type`` (the paper's default): one worker per file type; a file's events go to the worker
  of the file's type; directory operations (type 0, not owned by a type) go round-robin by
  directory id, so the events of one directory stay on one worker too.
* ``modulo`` (``--workers N``): files by ``file_id % N``, directories by ``dir_id % N``.

Inside a worker, events are spread over lanes by ``key % lanes`` (``key`` names one file or one
directory), so the events of a file are issued in schedule order by one lane, while different
files proceed concurrently. Every worker computes its own share from the same pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from mimesisbench.errors import ConfigError


@dataclass(frozen=True)
class PartitionPlan:
    """How events are split between workers (a picklable value shared by every worker)."""

    n_workers: int
    mode: Literal["by_type", "modulo"]
    type_to_worker: dict[int, int] = field(default_factory=dict)

    def worker_labels(self) -> list[str]:
        if self.mode == "modulo":
            return [f"w{i}" for i in range(self.n_workers)]
        by_worker = {w: t for t, w in self.type_to_worker.items()}
        return [f"type {by_worker[i]}" if i in by_worker else f"w{i}" for i in range(self.n_workers)]


def plan_partition(file_types: list[int], workers: int | None) -> PartitionPlan:
    """``workers=None``: one worker per file type (at least one); else ``workers`` workers."""
    if workers is not None:
        if workers < 1:
            raise ConfigError(f"--workers must be at least 1 (got {workers})")
        return PartitionPlan(n_workers=workers, mode="modulo")
    types = sorted({int(t) for t in file_types if int(t) != 0})
    if not types:
        return PartitionPlan(n_workers=1, mode="modulo")
    return PartitionPlan(n_workers=len(types), mode="by_type", type_to_worker={t: i for i, t in enumerate(types)})


def worker_expr(plan: PartitionPlan) -> pl.Expr:
    """The worker of each row of ``schedule.event_paths`` (needs ``key`` and ``file_type``)."""
    n = plan.n_workers
    is_dir = (pl.col("key") % 2) == 1
    ident = pl.col("key") // 2
    if plan.mode == "modulo":
        return (ident % n).cast(pl.Int32)
    mapping = {int(k): int(v) for k, v in plan.type_to_worker.items()}
    by_type = pl.col("file_type").replace_strict(mapping, default=None, return_dtype=pl.Int32)
    # a file of a type absent from the plan (no such file type) falls back to modulo
    return pl.when(is_dir).then(ident % n).otherwise(by_type.fill_null(ident % n)).cast(pl.Int32)
