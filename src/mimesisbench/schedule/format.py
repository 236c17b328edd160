"""The on-disk schedule format (version 1): the contract between ``generate`` and ``run``.

A schedule is a directory::

    SCHEDULE/
      manifest.json        format, version, profile hash and name, options, seed, window,
                           counts per type and per operation, tool version, creation time
      directories.parquet  the directory tree to build in phase 1
      files.parquet        every file the schedule names (pre-existing and created)
      events.parquet       phase 2's operations, sorted by (time_us, seq)

Paths are relative to the run's base directory and start with ``/`` (``/`` is the base itself).
No table holds a Python object per file: ids are integers and names are derived from them.

``directories.parquet``: ``dir_id`` Int32 (dense, 0..D-1; 0 is the root, ``/``), ``parent_id``
Int32 (-1 for the root), ``depth`` Int16 (root 0, a child one deeper than its parent), ``type``
Int16 (the file type whose part of the tree this is, 0 when shared), ``path`` String (the
parent's path plus one name; no empty, ``.`` or ``..`` component, no NUL). Directories made by
``mkdirs`` events during phase 2 are
listed too, with ``pre_existing`` Boolean false; phase 1 builds only those with true.

``files.parquet``: ``file_id`` Int64 (dense, 0..N-1), ``type`` Int16, ``dir_id`` Int32,
``pre_existing`` Boolean. A file's name is ``file_name(file_id, type, generation)``.

``events.parquet``: ``time_us`` Int64 (microseconds after the start barrier, at most
``MAX_TIME_US``), ``op`` UInt8
(``OpCode``), ``type`` Int16 (file type, 0 for operations not owned by a type), ``target``
Int64 (file_id for file operations, dir_id for directory operations), ``generation`` UInt8 (the
file's rename generation at that event; for ``RENAME_*`` the generation *before*, the new name
has ``generation + 1``), ``seq`` Int64 (a tiebreak that keeps same-time events in causal order).
"""

from __future__ import annotations

from enum import IntEnum

SCHEDULE_FORMAT = "mimesisbench-schedule"
SCHEDULE_VERSION = 1

MANIFEST = "manifest.json"
DIRECTORIES = "directories.parquet"
FILES = "files.parquet"
EVENTS = "events.parquet"

#: the latest event time a schedule may hold, microseconds (10**15 us, about 31.7 years): a
#: replay turns times into int64 nanoseconds after a wall-clock origin, which this keeps exact
MAX_TIME_US = 10**15
#: file type ids are Int16 in every table
MAX_TYPE_ID = 32767
#: rename generations are UInt8
MAX_GENERATION = 255


class OpCode(IntEnum):
    """Operations of a schedule. The names are what reports and summaries show."""

    CREATE = 1  # create an empty file (create + close)
    OPEN = 2  # open a file for reading (NameNode: getBlockLocations), no data read
    LIST_FILE = 3  # listStatus on a file
    LIST_DIR = 4  # listStatus on a directory
    DELETE = 5  # delete a file
    MKDIRS = 6  # make a directory (its parent exists)
    RENAME_FILE = 7  # rename a file within its directory
    RENAME_DIR = 8  # rename a directory made by MKDIRS (empty), within its parent
    GETFILEINFO = 9  # getfileinfo (stat) on a file

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def on_directory(self) -> bool:
        return self in (OpCode.LIST_DIR, OpCode.MKDIRS, OpCode.RENAME_DIR)


_LABELS = {
    OpCode.CREATE: "create",
    OpCode.OPEN: "open",
    OpCode.LIST_FILE: "list_file",
    OpCode.LIST_DIR: "list_dir",
    OpCode.DELETE: "delete",
    OpCode.MKDIRS: "mkdirs",
    OpCode.RENAME_FILE: "rename_file",
    OpCode.RENAME_DIR: "rename_dir",
    OpCode.GETFILEINFO: "getfileinfo",
}

#: the audit-log ``cmd`` each operation produces on a NameNode (used by ``export-audit``)
AUDIT_CMD = {
    OpCode.CREATE: "create",
    OpCode.OPEN: "open",
    OpCode.LIST_FILE: "listStatus",
    OpCode.LIST_DIR: "listStatus",
    OpCode.DELETE: "delete",
    OpCode.MKDIRS: "mkdirs",
    OpCode.RENAME_FILE: "rename",
    OpCode.RENAME_DIR: "rename",
    OpCode.GETFILEINFO: "getfileinfo",
}

#: the audited commands a schedule can contain, i.e. the ones a profile models (``validate`` and
#: ``model`` report the share of a trace's operations these cover): extended with ``AUDIT_CMD``
MODELLED_CMDS: frozenset[str] = frozenset(AUDIT_CMD.values())


def file_name(file_id: int, file_type: int, generation: int = 0) -> str:
    """The name of a file (no directory): ``t<type>_<id>``, plus ``.r<generation>`` once renamed."""
    base = f"t{file_type}_{file_id}"
    return base if generation == 0 else f"{base}.r{generation}"


def dir_rename_name(path: str, generation: int) -> str:
    """The path of a directory made by MKDIRS after ``generation`` renames."""
    return path if generation == 0 else f"{path}.r{generation}"


__all__ = [
    "AUDIT_CMD",
    "DIRECTORIES",
    "EVENTS",
    "FILES",
    "MANIFEST",
    "MAX_GENERATION",
    "MAX_TIME_US",
    "MAX_TYPE_ID",
    "MODELLED_CMDS",
    "SCHEDULE_FORMAT",
    "SCHEDULE_VERSION",
    "OpCode",
    "dir_rename_name",
    "file_name",
]
