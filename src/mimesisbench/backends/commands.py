"""What a backend does with each command of a schedule: performed, mapped, or skipped.

A run never drops an operation silently. Before phase 2 the coordinator looks up every op code the
schedule holds in the backend's ``Capabilities``: a *mapped* one is performed as its nearest
operation (issued, timed and counted under its own label), a *skipped* one is not issued at all.
Both are said once at start (console and the manifest's warnings) and recorded in the summary
(``skipped``: label -> operations not issued; ``mapped``: label -> the label it ran as;
``operations_skipped``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from mimesisbench.backends.base import Capabilities
from mimesisbench.schedule.format import OpCode


@dataclass(frozen=True)
class CommandPlan:
    """One schedule's operations against one backend's capabilities (labels, schedule counts)."""

    skipped: dict[str, int] = field(default_factory=dict)  # label -> operations not issued
    mapped: dict[str, str] = field(default_factory=dict)  # label -> label of the operation it runs as
    mapped_counts: dict[str, int] = field(default_factory=dict)  # label -> operations run as another

    @property
    def operations_skipped(self) -> int:
        return sum(self.skipped.values())

    def announcement(self, backend: str) -> str | None:
        """One line for the start of a run (None when every operation is performed as itself)."""
        parts = []
        if self.skipped:
            what = ", ".join(f"{label} {n:,}" for label, n in self.skipped.items())
            parts.append(
                f"the {backend} backend cannot perform {len(self.skipped)} command(s) of this schedule: "
                f"{self.operations_skipped:,} operations are skipped ({what})"
            )
        if self.mapped:
            what = ", ".join(f"{label} as {self.mapped[label]} ({n:,})" for label, n in self.mapped_counts.items())
            parts.append(f"performed as the nearest operation: {what}")
        return "; ".join(parts) or None


def command_plan(caps: Capabilities, ops: pl.Series | np.ndarray) -> CommandPlan:
    """What ``caps`` does with the op codes ``ops`` (a schedule's ``op`` column)."""
    codes = np.asarray(ops.to_numpy() if isinstance(ops, pl.Series) else ops, dtype=np.int64)
    counts = np.bincount(codes, minlength=max(int(op) for op in OpCode) + 1) if codes.size else np.zeros(1, np.int64)
    skipped: dict[str, int] = {}
    mapped: dict[str, str] = {}
    mapped_counts: dict[str, int] = {}
    for op in OpCode:
        n = int(counts[int(op)]) if int(op) < counts.size else 0
        if not n:
            continue
        if caps.skips(op):
            skipped[op.label] = n
        elif op in caps.mapped:
            mapped[op.label] = caps.mapped[op].label
            mapped_counts[op.label] = n
    return CommandPlan(skipped=skipped, mapped=mapped, mapped_counts=mapped_counts)
