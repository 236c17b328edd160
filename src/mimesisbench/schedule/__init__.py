"""The schedule format, in one package: the contract between ``generate`` and ``run``.

* ``format``: file names, ``OpCode``, naming rules and limits (``MAX_TIME_US``);
* ``reader``: ``read_schedule`` (alias ``load_schedule``), the one reader and validator, and the
  ``Schedule`` it returns;
* ``writer``: ``write_schedule_dir``, the one (atomic) writer;
* ``paths``: replay helpers (``event_paths``, ``owner_columns``, ``namespace_paths``).

Replay workers import this package without loading the generator (``mimesisbench.synth``),
scipy or scikit-learn; numpy, polars and pyarrow are its only heavy dependencies.
"""

from __future__ import annotations

from mimesisbench.schedule.format import (
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
from mimesisbench.schedule.reader import Schedule, load_schedule, read_manifest, read_schedule

__all__ = [
    "DIRECTORIES",
    "EVENTS",
    "FILES",
    "MANIFEST",
    "MAX_TIME_US",
    "SCHEDULE_FORMAT",
    "SCHEDULE_VERSION",
    "OpCode",
    "Schedule",
    "dir_rename_name",
    "file_name",
    "load_schedule",
    "read_manifest",
    "read_schedule",
]
