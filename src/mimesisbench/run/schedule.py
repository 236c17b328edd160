"""Compatibility names: the schedule format lives in ``mimesisbench.schedule`` (one reader, one
writer); replay code imports from there. Kept so that older imports keep working."""

from __future__ import annotations

from mimesisbench.schedule.paths import event_paths, namespace_paths, owner_columns
from mimesisbench.schedule.reader import Schedule, load_schedule, read_schedule

__all__ = ["Schedule", "event_paths", "load_schedule", "namespace_paths", "owner_columns", "read_schedule"]
