"""Compatibility names: the schedule format moved to ``mimesisbench.schedule.format``."""

from __future__ import annotations

from mimesisbench.schedule.format import (
    AUDIT_CMD,
    DIRECTORIES,
    EVENTS,
    FILES,
    MANIFEST,
    MAX_TIME_US,
    SCHEDULE_FORMAT,
    SCHEDULE_VERSION,
    OpCode,
    dir_rename_name,
    file_name,
)

__all__ = [
    "AUDIT_CMD",
    "DIRECTORIES",
    "EVENTS",
    "FILES",
    "MANIFEST",
    "MAX_TIME_US",
    "SCHEDULE_FORMAT",
    "SCHEDULE_VERSION",
    "OpCode",
    "dir_rename_name",
    "file_name",
]
