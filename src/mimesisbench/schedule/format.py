"""The on-disk schedule format (version 2): the contract between ``generate`` and ``run``.

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

Version 3 adds *explicit paths*, for schedules that hold a trace's operations as they were
(``schedule-from-trace``: file names, cross-directory renames and directory renames that no
derived name can spell). Its manifest says ``"paths": "explicit"`` and then:

* ``events.parquet`` also has ``path`` String (the operation's path; null only for
  ``NAMENODE``), ``path2`` String (the destination of ``RENAME_*``, null elsewhere), ``order_key``
  Int64 (>= 0: events of one key are issued in schedule order by one lane; a trace's rename
  joins its source's and destination's keys), and may have ``allowed`` Boolean (the trace's
  ``allowed=``) and ``expect_ok`` Boolean (whether the operation succeeds when replayed in order:
  false for an access of a path the trace's own history says was absent then);
* ``files.parquet`` also has ``path`` String (each file's path; what phase 1 creates for a
  pre-existing file), inside the directory its ``dir_id`` names.

``target`` and ``generation`` keep their meaning for the checks (a listed file or directory);
names are never derived. A version 2 reader refuses a version 3 schedule, so no older tool
replays it with names of its own. Generated schedules stay version 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

SCHEDULE_FORMAT = "mimesisbench-schedule"
SCHEDULE_VERSION = 2
#: the version of schedules with explicit paths (``"paths": "explicit"`` in the manifest)
EXPLICIT_PATHS_VERSION = 3
#: schedule format versions this tool reads (version 1 holds op codes 1-9 only)
READABLE_SCHEDULE_VERSIONS = (1, 2, 3)
#: the manifest's ``paths`` value of a schedule with explicit paths
EXPLICIT_PATHS = "explicit"

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
    """Operations of a schedule. The names are what reports and summaries show.

    Codes 1-9 are those of schedule format version 1; the others (version 2) let a schedule hold
    every audited command a profile models (``COMMANDS`` gives each one's audit ``cmd`` and
    target). A ``*_DIR`` code is the same command on a directory (target: a dir_id).
    """

    CREATE = 1  # create an empty file (create + close); fails when it exists
    OPEN = 2  # open a file for reading (NameNode: getBlockLocations), no data read
    LIST_FILE = 3  # listStatus on a file
    LIST_DIR = 4  # listStatus on a directory
    DELETE = 5  # delete a file
    MKDIRS = 6  # make a directory (its parent exists)
    RENAME_FILE = 7  # rename a file within its directory
    RENAME_DIR = 8  # rename a directory within its parent (one the generator keeps free of files)
    GETFILEINFO = 9  # getfileinfo (stat) on a file
    GETFILEINFO_DIR = 10
    CONTENT_SUMMARY = 11  # getContentSummary (du) of a file
    CONTENT_SUMMARY_DIR = 12
    SET_PERMISSION = 13  # chmod (to the mode it has: the namespace does not drift)
    SET_PERMISSION_DIR = 14
    SET_OWNER = 15  # chown (to the owner it has)
    SET_OWNER_DIR = 16
    SET_TIMES = 17  # set modification and access times
    SET_TIMES_DIR = 18
    SET_REPLICATION = 19  # set a file's replication (to the value it has)
    SET_STORAGE_POLICY = 20
    SET_STORAGE_POLICY_DIR = 21
    APPEND = 22  # open a file for append and close it (no data)
    TRUNCATE = 23  # truncate a file to its length (0)
    CONCAT = 24  # concat into a file (see the backends for what each does)
    CREATE_OVERWRITE = 25  # create with overwrite: succeeds whether the file exists or not
    MKDIRS_EXISTING = 26  # mkdirs of a directory that (normally) exists
    DELETE_DIR = 27  # delete a directory, recursively
    GET_ACL_STATUS = 28
    GET_ACL_STATUS_DIR = 29
    CHECK_ACCESS = 30
    CHECK_ACCESS_DIR = 31
    LIST_XATTRS = 32
    LIST_XATTRS_DIR = 33
    GET_XATTRS = 34
    GET_XATTRS_DIR = 35
    SET_XATTR = 36
    SET_XATTR_DIR = 37
    GET_STORAGE_POLICY = 38
    GET_STORAGE_POLICY_DIR = 39
    NAMENODE = 40  # a NameNode-wide command without a path (src=null); target: index into the manifest's ``pathless_commands``
    GETFILEINFO_ABSENT = 41  # getfileinfo of a file its stream deleted (and did not make again): a miss is its answer
    GETFILEINFO_ABSENT_DIR = 42
    MKDIRS_PARENTS = 43  # mkdirs that makes the missing parents, as HDFS's mkdirs does (version 3); succeeds when it exists

    @property
    def label(self) -> str:
        return COMMANDS[self].label

    @property
    def on_directory(self) -> bool:
        return COMMANDS[self].target == "directory"

    @property
    def audit_cmd(self) -> str | None:
        """The audit-log ``cmd`` this operation produces on a NameNode (None: ``NAMENODE``, whose
        command is the schedule's)."""
        return COMMANDS[self].audit_cmd


@dataclass(frozen=True)
class Command:
    """What one ``OpCode`` is: its label, the audit ``cmd`` it produces, and what it targets."""

    label: str
    audit_cmd: str | None
    target: str  # "file", "directory" or "none"


def _table() -> dict[OpCode, Command]:
    o = OpCode
    rows: dict[OpCode, Command] = {
        o.CREATE: Command("create", "create", "file"),
        o.OPEN: Command("open", "open", "file"),
        o.LIST_FILE: Command("list_file", "listStatus", "file"),
        o.LIST_DIR: Command("list_dir", "listStatus", "directory"),
        o.DELETE: Command("delete", "delete", "file"),
        o.MKDIRS: Command("mkdirs", "mkdirs", "directory"),
        o.RENAME_FILE: Command("rename_file", "rename", "file"),
        o.RENAME_DIR: Command("rename_dir", "rename", "directory"),
        o.GETFILEINFO: Command("getfileinfo", "getfileinfo", "file"),
        o.GETFILEINFO_DIR: Command("getfileinfo_dir", "getfileinfo", "directory"),
        o.CREATE_OVERWRITE: Command("create_overwrite", "create", "file"),
        o.MKDIRS_EXISTING: Command("mkdirs_existing", "mkdirs", "directory"),
        o.DELETE_DIR: Command("delete_dir", "delete", "directory"),
        o.SET_REPLICATION: Command("set_replication", "setReplication", "file"),
        o.APPEND: Command("append", "append", "file"),
        o.TRUNCATE: Command("truncate", "truncate", "file"),
        o.CONCAT: Command("concat", "concat", "file"),
        o.NAMENODE: Command("namenode", None, "none"),
        o.GETFILEINFO_ABSENT: Command("getfileinfo_absent", "getfileinfo", "file"),
        o.GETFILEINFO_ABSENT_DIR: Command("getfileinfo_absent_dir", "getfileinfo", "directory"),
        o.MKDIRS_PARENTS: Command("mkdirs_parents", "mkdirs", "directory"),
    }
    pairs = (
        (o.CONTENT_SUMMARY, o.CONTENT_SUMMARY_DIR, "content_summary", "contentSummary"),
        (o.SET_PERMISSION, o.SET_PERMISSION_DIR, "set_permission", "setPermission"),
        (o.SET_OWNER, o.SET_OWNER_DIR, "set_owner", "setOwner"),
        (o.SET_TIMES, o.SET_TIMES_DIR, "set_times", "setTimes"),
        (o.SET_STORAGE_POLICY, o.SET_STORAGE_POLICY_DIR, "set_storage_policy", "setStoragePolicy"),
        (o.GET_ACL_STATUS, o.GET_ACL_STATUS_DIR, "get_acl_status", "getAclStatus"),
        (o.CHECK_ACCESS, o.CHECK_ACCESS_DIR, "check_access", "checkAccess"),
        (o.LIST_XATTRS, o.LIST_XATTRS_DIR, "list_xattrs", "listXAttrs"),
        (o.GET_XATTRS, o.GET_XATTRS_DIR, "get_xattrs", "getXAttrs"),
        (o.SET_XATTR, o.SET_XATTR_DIR, "set_xattr", "setXAttr"),
        (o.GET_STORAGE_POLICY, o.GET_STORAGE_POLICY_DIR, "get_storage_policy", "getStoragePolicy"),
    )
    for on_file, on_dir, label, cmd in pairs:
        rows[on_file] = Command(label, cmd, "file")
        rows[on_dir] = Command(label + "_dir", cmd, "directory")
    return {op: rows[op] for op in OpCode}


#: every operation's label, audit ``cmd`` and target (a read-only view)
COMMANDS: Mapping[OpCode, Command] = MappingProxyType(_table())

#: operations that make, remove, rename or open for writing their object: an open-loop replay
#: issues one only after every earlier operation on its object ended, and later operations on the
#: object only after it ended (``run.lanes.run_async_dispatch``); every other operation (reads,
#: and the setters that set what the object already has) depends on nothing but the last of these
ORDERED_OPS: frozenset[OpCode] = frozenset({
    OpCode.CREATE, OpCode.DELETE, OpCode.MKDIRS, OpCode.RENAME_FILE, OpCode.RENAME_DIR, OpCode.CREATE_OVERWRITE,
    OpCode.MKDIRS_EXISTING, OpCode.DELETE_DIR, OpCode.APPEND, OpCode.TRUNCATE, OpCode.CONCAT, OpCode.MKDIRS_PARENTS,
})

#: the audit-log ``cmd`` each operation produces on a NameNode (used by ``export-audit``)
AUDIT_CMD: Mapping[OpCode, str] = MappingProxyType(
    {op: c.audit_cmd for op, c in COMMANDS.items() if c.audit_cmd is not None}
)

#: the audited commands a schedule can contain (with a path): what a profile can model
MODELLED_CMDS: frozenset[str] = frozenset(AUDIT_CMD.values())


def opcode_for(cmd: str, target: str) -> OpCode | None:
    """The operation that performs audit ``cmd`` as an *access* of a ``target`` ("file" or
    "directory"): a ``create`` is CREATE_OVERWRITE and a ``mkdirs`` MKDIRS_EXISTING (the event that
    made the object is CREATE or MKDIRS, placed by the generator itself); a ``delete`` is DELETE
    or DELETE_DIR wherever it stands. None when a schedule cannot hold the command."""
    return _BY_CMD.get((cmd, target))


def _by_cmd() -> dict[tuple[str, str], OpCode]:
    out: dict[tuple[str, str], OpCode] = {}
    for op, c in COMMANDS.items():
        if c.audit_cmd is not None and op not in (OpCode.CREATE, OpCode.MKDIRS):
            out.setdefault((c.audit_cmd, c.target), op)
    return out


_BY_CMD: Mapping[tuple[str, str], OpCode] = MappingProxyType(_by_cmd())


def file_name(file_id: int, file_type: int, generation: int = 0) -> str:
    """The name of a file (no directory): ``t<type>_<id>``, plus ``.r<generation>`` once renamed."""
    base = f"t{file_type}_{file_id}"
    return base if generation == 0 else f"{base}.r{generation}"


def dir_rename_name(path: str, generation: int) -> str:
    """The path of a directory made by MKDIRS after ``generation`` renames."""
    return path if generation == 0 else f"{path}.r{generation}"


__all__ = [
    "AUDIT_CMD",
    "COMMANDS",
    "Command",
    "DIRECTORIES",
    "EVENTS",
    "EXPLICIT_PATHS",
    "EXPLICIT_PATHS_VERSION",
    "FILES",
    "MANIFEST",
    "MAX_GENERATION",
    "MAX_TIME_US",
    "MAX_TYPE_ID",
    "MODELLED_CMDS",
    "READABLE_SCHEDULE_VERSIONS",
    "SCHEDULE_FORMAT",
    "SCHEDULE_VERSION",
    "OpCode",
    "dir_rename_name",
    "file_name",
    "opcode_for",
    "op_class",
    "WRITE_AUDIT_COMMANDS",
]


#: the audit commands that change the namespace: the ``write`` class (``rate:read=..,write=..``; the
#: simulated NameNode's write lock)
WRITE_AUDIT_COMMANDS = frozenset({
    "create", "delete", "mkdirs", "rename", "append", "truncate", "concat", "setPermission", "setOwner",
    "setTimes", "setReplication", "setStoragePolicy", "setXAttr",
})


def op_class(op: OpCode) -> str:
    """``write`` for an operation that changes the namespace, else ``read``."""
    return "write" if op.audit_cmd in WRITE_AUDIT_COMMANDS else "read"
