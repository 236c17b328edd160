"""A trace's operations as a schedule, as they were (``schedule-from-trace``): the baseline a
model is judged against.

Every event of the trace becomes one operation of a schedule with explicit paths
(``schedule.format`` version 3) at its time after the window's first event, on its own path
(and destination), so ``run``, ``--time-scale``, workers, Ray and reports replay it unchanged.
The namespace it needs before its first event is the snapshot's (``--snapshot``) plus what the
trace's own history implies, found by replaying the trace on a model of the namespace:

* a path that an operation uses while it does not exist in the model *pre-existed* unless the
  trace says otherwise: it or a directory above it was created (a file), deleted or renamed
  before (then the access found nothing in the trace too; a ``mkdirs`` is no such proof, it
  succeeds on an existing directory), or, for the operations that a missing path does
  not fail (``getfileinfo``, ``delete``, ``rename``: the NameNode audits them as allowed either
  way, and audits no ``FileNotFoundException`` of the others), its first creating or removing
  event creates it (``create``, ``mkdirs``, a rename to it): a job's ``getfileinfo`` of its
  output before making it is a miss. A pre-existing path's missing ancestors pre-exist as
  directories;
* a path is a directory when the snapshot says so, when it is ``mkdirs``-ed, when it lies above
  another path of the trace, or when it is only ever listed (``listStatus``,
  ``contentSummary``) and never opened, created, appended or re-replicated (the rule of
  ``model.objects``); in the model a path has the kind it was made with;
* a ``create`` or ``mkdirs`` makes the directories above it that are missing, as HDFS does (a
  directory pre-exists only when an operation needs it before: nothing else says it did).

Each operation is the one that performs its command on what the path is then
(``schedule.format.opcode_for``): ``listStatus`` of a directory is LIST_DIR, a ``delete`` of a
directory DELETE_DIR, a ``getfileinfo`` of a missing path GETFILEINFO_ABSENT (a miss is its
answer), a ``create`` of an existing file CREATE_OVERWRITE, and every ``mkdirs`` MKDIRS_PARENTS
(the one RPC of HDFS's ``mkdirs``: it makes the missing parents and succeeds on an existing
directory). A rename onto an existing directory moves the source into it, as
HDFS does: the schedule names the final path. Each event keeps the trace's ``allowed`` and gets
``expect_ok``: whether it succeeds when replayed in order on that namespace (false for an open of
a path the history says was absent then, a rename onto an existing file, ...). Events a schedule
cannot hold (a command without an operation, a relative path) are counted per command and left
out, and so are the namespace changes the trace shows denied (``allowed=false`` ``create``,
``delete``, ``rename``, ...: replayed by one user they would succeed and change what every later
operation sees); denied reads are kept, and fail in the trace only. NameNode-wide commands
(``src=null``) are NAMENODE operations.

Events of paths joined by renames share an ``order_key`` (one lane issues them in order), and so
do the paths below a directory that is renamed or deleted with its tree (their events must come
before the move, or after it); other paths' events are ordered by their times only, as in
Dynamometer's replay.

The namespace model is a loop over the events in Python: each event's effect depends on every
earlier one (a recursive delete or a directory rename changes what every path below means), a
sequential state machine that no dataframe or graph library expresses; it runs at about two
hundred thousand events per second (``bench/bench_verbatim.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mimesisbench import __version__
from mimesisbench.errors import TraceError
from mimesisbench.schedule.format import (
    EXPLICIT_PATHS,
    EXPLICIT_PATHS_VERSION,
    MAX_TIME_US,
    SCHEDULE_FORMAT,
    OpCode,
    opcode_for,
)
from mimesisbench.schedule.reader import clean_paths
from mimesisbench.schedule.writer import write_schedule_dir
from mimesisbench.trace.anonymise import anonymise_paths

#: commands that make their path (as the source)
_MAKES = frozenset({"create", "mkdirs"})
#: commands whose path is a file (a path they name is never classified a directory by listing)
_FILE_CMDS = frozenset({"open", "create", "append", "truncate", "concat", "setReplication"})
#: commands that list a directory's content
_LISTING = frozenset({"listStatus", "contentSummary"})
#: the skipped-count key of events whose path is not a clean absolute one
UNCLEAN_PATH = "(relative or unclean path)"
#: commands that change the namespace: denied (``allowed=false``), they are left out (replayed by
#: one user they would succeed, and every later operation would see another namespace)
MUTATIONS = frozenset({"create", "mkdirs", "delete", "rename", "append", "truncate", "concat"})
#: the skipped-count key prefix of denied mutations
DENIED = "denied "
#: the schedule type of every file of a verbatim schedule (it has no file types)
FILE_TYPE = 1
#: passes of the namespace model over the trace at most (``verbatim_schedule``)
MAX_PASSES = 4


@dataclass
class VerbatimReport:
    """What the conversion kept, inferred and left out."""

    trace_events: int = 0
    events: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # trace events left out, per command
    pre_existing_directories: int = 0
    pre_existing_files: int = 0
    from_snapshot: int = 0  # of the pre-existing paths, those the snapshot listed
    denied: int = 0  # operations the trace shows denied (allowed=false reads; denied changes are skipped)
    expected_failures: int = 0  # events whose replay fails on the inferred namespace
    anonymised: bool = False
    passes: int = 0  # of the namespace model over the trace

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "skipped": dict(sorted(self.skipped.items()))}


@dataclass(frozen=True)
class VerbatimSchedule:
    """The tables of a verbatim schedule (``schedule.format`` version 3) and its report."""

    directories: pl.DataFrame
    files: pl.DataFrame
    events: pl.DataFrame
    pathless_commands: list[str]
    window_ms: int
    report: VerbatimReport


def _parent(path: str) -> str:
    cut = path.rfind("/")
    return "/" if cut <= 0 else path[:cut]


def _ancestors(path: str) -> Iterable[str]:
    """The directories above ``path``, nearest first, down to (and with) the root."""
    while path != "/":
        path = _parent(path)
        yield path


def _normalised(column: pl.Series) -> pl.Series:
    """Paths without a trailing slash (``/`` stays); null and unclean paths become null."""
    s = column.cast(pl.String).str.strip_chars_end("/")
    s = pl.select(pl.when(s == "").then(pl.lit("/")).otherwise(s)).to_series()
    return pl.select(pl.when(clean_paths(s)).then(s).otherwise(pl.lit(None, dtype=pl.String))).to_series()


class _Namespace:
    """The namespace model that decides what each event of the trace does (module docstring)."""

    def __init__(self, dir_hint: set[str], made_later: set[str]) -> None:
        self.is_dir: dict[str, bool] = {"/": True}  # existing paths -> is a directory
        self.children: dict[str, set[str]] = {"/": set()}
        # paths whose history in the window starts after the window's start: files created,
        # paths deleted or renamed (a ``mkdirs`` is no proof: it succeeds on an existing directory)
        self.touched: set[str] = set()
        self.dir_hint = dir_hint  # paths the whole trace says are directories
        self.made_later = made_later  # paths whose first creating-or-removing event creates them
        self.pre: dict[str, bool] = {}  # pre-existing paths -> is a directory
        self.ever_dir: set[str] = {"/"}
        self.ever_file: set[str] = set()
        self.missed: set[str] = set()  # paths an operation found missing
        # whether a path was found to pre-exist after an earlier event saw it missing or made it:
        # the trace must be replayed again from the namespace now known
        self.retro = False

    # ---------------------------------------------------------------- the model's state

    def _add(self, path: str, is_dir: bool) -> None:
        self.is_dir[path] = is_dir
        (self.ever_dir if is_dir else self.ever_file).add(path)
        if is_dir:
            self.children.setdefault(path, set())
        self.children[_parent(path)].add(path)

    def _subtree(self, path: str) -> list[str]:
        out, todo = [], [path]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(self.children.get(p, ()))
        return out

    def _remove(self, path: str) -> None:
        for p in self._subtree(path):
            self.is_dir.pop(p, None)
            self.children.pop(p, None)
        self.children[_parent(path)].discard(path)

    def _move(self, src: str, dst: str) -> None:
        moved = [(p, self.is_dir[p]) for p in self._subtree(src)]
        self._remove(src)
        for p, is_dir in sorted(moved, key=lambda m: m[0].count("/")):
            self._add(dst + p[len(src):], is_dir)

    # ---------------------------------------------------------------- inference

    def may_pre_exist(self, path: str, proven: bool = False) -> bool:
        """Whether a missing ``path`` can have existed before the window (module docstring).
        ``proven``: an operation that fails on a missing path was audited as allowed, so the path
        existed then whatever the trace makes of it later (the directories above it too, even
        one the trace ``mkdirs``-ed: that made nothing new). Without that proof the directory
        above it that exists must itself have existed before the window."""
        if path in self.touched or (path in self.made_later and not proven):
            return False
        for a in _ancestors(path):
            if a in self.touched:
                return False
            if a in self.is_dir:
                return self.is_dir[a] and (proven or a == "/" or a in self.pre)
        return True

    def pre_exist(self, path: str, is_dir: bool) -> None:
        """Add a missing ``path`` as pre-existing, with the directories above it (those the
        model made during the window become pre-existing too: see ``verbatim_schedule``)."""
        above = []
        for a in _ancestors(path):
            if a == "/" or self.pre.get(a) is True:
                break
            above.append(a)
        for a in reversed(above):
            self.pre[a] = True
            if a in self.is_dir or a in self.missed:
                self.retro = True  # made during the window, or found missing: earlier events saw otherwise
            else:
                self._add(a, True)
        self.retro = self.retro or path in self.missed
        self.pre[path] = is_dir
        self._add(path, is_dir)

    def seed(self, pre: dict[str, bool]) -> None:
        """Paths known to exist before the first event (a snapshot's, an earlier pass's)."""
        for p, is_dir in sorted(pre.items(), key=lambda m: m[0].count("/")):
            if p != "/" and p not in self.is_dir:
                self.pre_exist(p, is_dir)

    def present(self, path: str, is_dir: bool, proven: bool = False) -> bool:
        """Whether ``path`` exists when an operation uses it, pre-existing it when it may."""
        if path in self.is_dir:
            return True
        if self.may_pre_exist(path, proven):
            self.pre_exist(path, is_dir)
            return True
        self.missed.add(path)
        return False

    def kind(self, path: str) -> bool:
        """Whether ``path`` is a directory: as it exists now, else as the trace says."""
        got = self.is_dir.get(path)
        return path in self.dir_hint if got is None else got

    def make_parents(self, path: str) -> bool:
        """Make the missing directories above ``path`` (as HDFS's create and mkdirs do); false
        when a file stands in the way."""
        missing = []
        for a in _ancestors(path):
            if a in self.is_dir:
                if not self.is_dir[a]:
                    return False
                break
            missing.append(a)
        for a in reversed(missing):
            self._add(a, True)
        return True

    # ---------------------------------------------------------------- one event

    def apply(self, cmd: str, path: str, dst: str | None, allowed: bool) -> tuple[OpCode | None, str | None, bool]:
        """The operation of one event, its destination (renames) and whether it succeeds.
        ``allowed``: the trace's outcome (an allowed access of a missing path proves it existed:
        the NameNode audits no ``FileNotFoundException``; a ``getfileinfo``, ``delete`` or
        ``rename`` of a missing path is audited as allowed and proves nothing). A change of the
        root itself (the run's base directory) is never replayed."""
        if path == "/" and cmd in MUTATIONS:
            return None, None, False
        if cmd == "create":
            return self._create(path)
        if cmd == "mkdirs":
            return self._mkdirs(path)
        if cmd == "delete":
            is_dir = self.kind(path)
            ok = self.present(path, is_dir)
            is_dir = self.kind(path)
            if ok:
                self._remove(path)
            self.touched.add(path)
            return (OpCode.DELETE_DIR if is_dir else OpCode.DELETE), None, ok
        if cmd == "rename":
            return self._rename(path, dst)
        if cmd == "getfileinfo":
            is_dir = self.kind(path)
            if self.present(path, is_dir):
                return (OpCode.GETFILEINFO_DIR if self.kind(path) else OpCode.GETFILEINFO), None, True
            return (OpCode.GETFILEINFO_ABSENT_DIR if is_dir else OpCode.GETFILEINFO_ABSENT), None, True
        is_dir = self.kind(path)
        ok = self.present(path, is_dir, proven=allowed)
        is_dir = self.kind(path)
        op = opcode_for(cmd, "directory" if is_dir else "file")
        if op is None:
            op = opcode_for(cmd, "file" if is_dir else "directory")
            ok = False
        if op is None:
            return None, None, False
        return op, None, ok

    def _create(self, path: str) -> tuple[OpCode, None, bool]:
        if path in self.is_dir:  # an overwrite: it made nothing new
            return OpCode.CREATE_OVERWRITE, None, not self.is_dir[path]
        ok = self.make_parents(path)
        self.touched.add(path)
        if ok:
            self._add(path, False)
        return OpCode.CREATE, None, ok

    def _mkdirs(self, path: str) -> tuple[OpCode, None, bool]:
        if path in self.is_dir:  # made nothing new
            return OpCode.MKDIRS_PARENTS, None, self.is_dir[path]
        ok = self.make_parents(path)
        if ok:
            self._add(path, True)
        return OpCode.MKDIRS_PARENTS, None, ok

    def _rename(self, src: str, dst: str | None) -> tuple[OpCode | None, str | None, bool]:
        if dst is None:
            return None, None, False
        is_dir = self.kind(src)
        ok = self.present(src, is_dir)
        is_dir = self.kind(src)
        op = OpCode.RENAME_DIR if is_dir else OpCode.RENAME_FILE
        if self.is_dir.get(dst) is True and dst != src:  # into the directory, as HDFS does
            dst = ("" if dst == "/" else dst) + "/" + src.rsplit("/", 1)[1]
        self.touched.update((src, dst))
        ok = ok and dst != src and not (dst + "/").startswith(src + "/")
        ok = ok and dst not in self.is_dir and self.is_dir.get(_parent(dst)) is True
        if ok:
            self._move(src, dst)
        elif is_dir:
            self.ever_dir.add(dst)
        else:
            self.ever_file.add(dst)
        return op, dst, ok


def _hints(frame: pl.DataFrame, snapshot: pl.DataFrame | None) -> tuple[set[str], set[str]]:
    """The paths the whole trace says are directories, and the paths whose first creating or
    removing event creates them (they did not exist before it)."""
    src = frame.filter(pl.col("path").is_not_null())
    paths = pl.concat([src.get_column("path"), frame.get_column("dst").drop_nulls()]).unique()
    above: set[str] = set()
    for p in paths.to_list():
        for a in _ancestors(p):
            if a in above:
                break
            above.add(a)
    dirs = above | set(src.filter(pl.col("op") == "mkdirs").get_column("path").to_list())
    listed = (
        src.group_by("path")
        .agg(
            pl.col("op").is_in(list(_LISTING)).any().alias("listed"),
            pl.col("op").is_in(list(_FILE_CMDS)).any().alias("as_file"),
        )
        .filter(pl.col("listed") & ~pl.col("as_file"))
    )
    dirs |= set(listed.get_column("path").to_list())
    if snapshot is not None and snapshot.height:
        dirs |= set(snapshot.filter(pl.col("is_dir")).get_column("path").to_list())
    life = pl.concat(
        [
            src.filter(pl.col("op").is_in(["create", "mkdirs", "delete", "rename"])).select(
                "_row", "path", pl.col("op").is_in(list(_MAKES)).alias("makes")
            ),
            frame.filter((pl.col("op") == "rename") & pl.col("dst").is_not_null()).select(
                "_row", pl.col("dst").alias("path"), pl.lit(True).alias("makes")
            ),
        ]
    )
    first = life.sort("_row").group_by("path", maintain_order=True).first()
    made_later = set(first.filter(pl.col("makes")).get_column("path").to_list())
    return dirs, made_later


class _Replay:
    """The operations of one pass of the trace over a namespace model (columns of the events)."""

    def __init__(self) -> None:
        self.time_ms: list[int] = []
        self.op: list[int] = []
        self.path: list[str | None] = []
        self.dst: list[str | None] = []
        self.ok: list[bool] = []
        self.allowed: list[bool] = []
        self.target: list[int] = []  # pathless commands' indexes; paths get ids afterwards
        self.pathless: dict[str, int] = {}
        self.skipped: dict[str, int] = {}

    def run(self, ns: _Namespace, columns: list[list[Any]]) -> None:
        skipped = self.skipped
        for time_ms, cmd, raw, path, dst, allowed in zip(*columns):
            if raw is None:  # a NameNode-wide command (src=null)
                op: OpCode | None = OpCode.NAMENODE
                dest, ok = None, True
                target = self.pathless.setdefault(cmd, len(self.pathless))
            elif path is None:
                skipped[UNCLEAN_PATH] = skipped.get(UNCLEAN_PATH, 0) + 1
                continue
            elif not allowed and cmd in MUTATIONS:
                skipped[DENIED + cmd] = skipped.get(DENIED + cmd, 0) + 1
                continue
            else:
                op, dest, ok = ns.apply(cmd, path, dst, allowed)
                target = -1
            if op is None:
                skipped[cmd] = skipped.get(cmd, 0) + 1
                continue
            self.time_ms.append(time_ms)
            self.op.append(int(op))
            self.path.append(path)
            self.dst.append(dest)
            self.ok.append(ok)
            self.allowed.append(allowed)
            self.target.append(target)


def verbatim_schedule(
    events: pl.DataFrame, snapshot: pl.DataFrame | None = None, *, key: bytes | None = None
) -> VerbatimSchedule:
    """A canonical event table (``trace.events``, sorted by time) as the tables of a verbatim
    schedule (module docstring). ``key``: anonymise every path component with it
    (``trace.anonymise``); ``snapshot``: the namespace before the first event."""
    report = VerbatimReport(trace_events=events.height, anonymised=key is not None)
    if events.height == 0:
        raise TraceError("the trace holds no event: there is nothing to replay")
    frame = events.select(
        pl.col("time_ms").cast(pl.Int64),
        pl.col("op").cast(pl.String),
        pl.col("path").cast(pl.String).alias("raw_path"),
        _normalised(events.get_column("path")).alias("path"),
        _normalised(events.get_column("dst")).alias("dst"),
        pl.col("allowed").cast(pl.Boolean).fill_null(True),
    ).with_row_index("_row")
    snap = None
    if snapshot is not None and snapshot.height:
        snap = snapshot.select(_normalised(snapshot.get_column("path")).alias("path"), pl.col("is_dir")).drop_nulls()
    if key is not None:
        frame = frame.with_columns(anonymise_paths(frame.get_column("path"), key), anonymise_paths(frame.get_column("dst"), key))
        if snap is not None:
            snap = snap.with_columns(anonymise_paths(snap.get_column("path"), key))
    dir_hint, made_later = _hints(frame, snap)
    seed: dict[str, bool] = {}
    if snap is not None:
        seed = dict(zip(snap.get_column("path").to_list(), snap.get_column("is_dir").to_list()))
        report.from_snapshot = len(seed)
    columns = [frame.get_column(c).to_list() for c in ("time_ms", "op", "raw_path", "path", "dst", "allowed")]
    # A later event can show that a directory the model made during the window existed before
    # it (an allowed access below it), or that a path an earlier event found missing existed:
    # the model is then replayed from the namespace so found until nothing changes (one more
    # pass), so that every operation sees it.
    for passes in range(1, MAX_PASSES + 1):
        report.passes = passes
        ns = _Namespace(dir_hint, made_later)
        ns.seed(seed)
        replay = _Replay()
        replay.run(ns, columns)
        if not ns.retro or ns.pre.keys() == seed.keys():
            break
        seed = dict(ns.pre)
    report.skipped = replay.skipped
    if not replay.op:
        raise TraceError(f"no event of the trace can be replayed (left out: {replay.skipped})")
    t0 = int(frame.get_column("time_ms").min())  # type: ignore[arg-type]
    ev = pl.DataFrame(
        {
            "time_us": (pl.Series(replay.time_ms, dtype=pl.Int64) - t0) * 1000,
            "op": pl.Series(replay.op, dtype=pl.UInt8),
            "path": pl.Series(replay.path, dtype=pl.String),
            "path2": pl.Series(replay.dst, dtype=pl.String),
            "expect_ok": pl.Series(replay.ok, dtype=pl.Boolean),
            "allowed": pl.Series(replay.allowed, dtype=pl.Boolean),
            "_pathless": pl.Series(replay.target, dtype=pl.Int64),
        }
    )
    if int(ev.get_column("time_us").max()) > MAX_TIME_US:  # type: ignore[arg-type]
        raise TraceError(f"the trace spans more than {MAX_TIME_US // 10**6 // 86400:,} days; a schedule cannot hold it")
    report.events = ev.height
    report.denied = int((~ev.get_column("allowed")).sum())
    report.expected_failures = int((~ev.get_column("expect_ok")).sum())
    dirs, files = _namespace_tables(ns, ev)
    report.pre_existing_directories = int(dirs.get_column("pre_existing").sum()) - 1
    report.pre_existing_files = int(files.get_column("pre_existing").sum())
    ev = _with_targets(ev, dirs, files)
    return VerbatimSchedule(
        directories=dirs,
        files=files,
        events=ev,
        pathless_commands=list(replay.pathless),
        window_ms=int(ev.get_column("time_us").max()) // 1000,  # type: ignore[arg-type]
        report=report,
    )


def _namespace_tables(ns: _Namespace, ev: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """directories.parquet and files.parquet: every path that is ever a directory (with every
    directory above a listed path) and every path that is ever a file."""
    on_dir = pl.col("op").is_in([int(o) for o in OpCode if o.on_directory])
    named = ev.filter(pl.col("op") != int(OpCode.NAMENODE))
    dir_paths = set(ns.ever_dir) | set(named.filter(on_dir).get_column("path").to_list())
    dir_paths |= set(named.filter(pl.col("op") == int(OpCode.RENAME_DIR)).get_column("path2").to_list())
    file_paths = set(ns.ever_file) | set(named.filter(~on_dir).get_column("path").to_list())
    file_paths |= set(named.filter(pl.col("op") == int(OpCode.RENAME_FILE)).get_column("path2").to_list())
    for p in list(dir_paths) + list(file_paths):
        for a in _ancestors(p):
            if a in dir_paths:
                break
            dir_paths.add(a)
    ordered = sorted(dir_paths - {"/"}, key=lambda p: (p.count("/"), p))
    dir_list = ["/", *ordered]
    dir_id = {p: i for i, p in enumerate(dir_list)}
    pre = ns.pre
    dirs = pl.DataFrame(
        {
            "dir_id": pl.Series(range(len(dir_list)), dtype=pl.Int32),
            "parent_id": pl.Series([-1] + [dir_id[_parent(p)] for p in ordered], dtype=pl.Int32),
            "depth": pl.Series([0] + [p.count("/") for p in ordered], dtype=pl.Int16),
            "type": pl.Series([0] * len(dir_list), dtype=pl.Int16),
            "path": pl.Series(dir_list, dtype=pl.String),
            "pre_existing": pl.Series([True] + [pre.get(p) is True for p in ordered], dtype=pl.Boolean),
        }
    )
    file_list = sorted(file_paths)
    files = pl.DataFrame(
        {
            "file_id": pl.Series(range(len(file_list)), dtype=pl.Int64),
            "type": pl.Series([FILE_TYPE] * len(file_list), dtype=pl.Int16),
            "dir_id": pl.Series([dir_id[_parent(p)] for p in file_list], dtype=pl.Int32),
            "pre_existing": pl.Series([pre.get(p) is False for p in file_list], dtype=pl.Boolean),
            "path": pl.Series(file_list, dtype=pl.String),
        }
    )
    return dirs, files


def _with_targets(ev: pl.DataFrame, dirs: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
    """Targets (the dir_id or file_id of each event's path), types, ``order_key`` (paths joined
    by renames share one: connected components of the rename graph) and ``seq``."""
    on_dir = pl.col("op").is_in([int(o) for o in OpCode if o.on_directory])
    pathless = pl.col("op") == int(OpCode.NAMENODE)
    dmap = dirs.select(pl.col("path"), pl.col("dir_id").cast(pl.Int64).alias("_dir"))
    fmap = files.select(pl.col("path"), pl.col("file_id").cast(pl.Int64).alias("_file"))
    ev = ev.join(dmap, on="path", how="left", maintain_order="left").join(fmap, on="path", how="left", maintain_order="left")
    ev = ev.with_columns(
        pl.when(pathless).then(pl.col("_pathless")).when(on_dir).then(pl.col("_dir")).otherwise(pl.col("_file")).alias("target"),
        pl.when(pathless | on_dir).then(pl.lit(0)).otherwise(pl.lit(FILE_TYPE)).cast(pl.Int16).alias("type"),
    )
    # one id per distinct path text; a rename joins its source's and destination's
    names = pl.concat([ev.get_column("path").drop_nulls(), ev.get_column("path2").drop_nulls()]).unique().sort()
    index = pl.DataFrame({"path": names, "_pid": pl.Series(range(names.len()), dtype=pl.Int64)})
    ev = ev.join(index, on="path", how="left", maintain_order="left")
    ev = ev.join(index.rename({"path": "path2", "_pid": "_pid2"}), on="path2", how="left", maintain_order="left")
    pairs = ev.filter(pl.col("_pid2").is_not_null()).select("_pid", "_pid2")
    # a path below a directory that is renamed or deleted with its tree joins that directory
    # (its nearest such ancestor): its events before the move must come before it, those after after
    moved = set(
        ev.filter(pl.col("op").is_in([int(OpCode.RENAME_DIR), int(OpCode.DELETE_DIR)]))
        .select(pl.concat_list("path", "path2").list.drop_nulls().alias("p"))
        .get_column("p")
        .explode()
        .to_list()
    )
    pid = dict(zip(names.to_list(), range(names.len())))
    nearest: dict[int, int] = {}
    for path, child in pid.items():
        for a in _ancestors(path):  # nearest first
            if a in moved:
                nearest[child] = pid[a]
                break
    src = np.concatenate([pairs.get_column("_pid").to_numpy(), np.fromiter(nearest.keys(), dtype=np.int64)])
    dst = np.concatenate([pairs.get_column("_pid2").to_numpy(), np.fromiter(nearest.values(), dtype=np.int64)])
    n = max(names.len(), 1)
    graph = coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    comp = pl.Series("order_key", component.astype(np.int64))
    # a pathless command's lane key: one past the paths', per command
    key = pl.when(pl.col("_pid").is_null()).then(pl.lit(n) + pl.col("target")).otherwise(
        pl.col("_pid").replace_strict(pl.Series(range(n)), comp, default=None)
    )
    ev = ev.with_columns(key.cast(pl.Int64).alias("order_key"))
    return ev.select(
        "time_us",
        "op",
        "type",
        pl.col("target").cast(pl.Int64),
        pl.lit(0, dtype=pl.UInt8).alias("generation"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("seq"),
        "path",
        "path2",
        "order_key",
        "allowed",
        "expect_ok",
    )


def manifest_for(v: VerbatimSchedule, *, sources: list[str], snapshot: str | None) -> dict[str, Any]:
    """The manifest of a verbatim schedule (``schedule.format`` version 3)."""
    counts = v.events.group_by("op").len()
    per_op = {OpCode(int(o)).label: int(c) for o, c in zip(counts.get_column("op").to_list(), counts.get_column("len").to_list())}
    report = v.report.to_json()
    notes = []
    if report["skipped"]:
        left = ", ".join(f"{c} {n:,}" for c, n in report["skipped"].items())
        notes.append(f"left out: trace events a schedule cannot hold ({left})")
    if report["expected_failures"]:
        notes.append(
            f"{report['expected_failures']:,} operation(s) fail when replayed in order, as the trace's own history says "
            "(accesses of paths that were absent then)"
        )
    return {
        "format": SCHEDULE_FORMAT,
        "version": EXPLICIT_PATHS_VERSION,
        "paths": EXPLICIT_PATHS,
        "seed": None,
        "window_ms": int(v.window_ms),
        "options": {},
        "counts": {
            "events": v.events.height,
            "files": v.files.height,
            "pre_existing_files": report["pre_existing_files"],
            "directories": v.directories.height,
            "pre_existing_directories": report["pre_existing_directories"] + 1,
            "per_op": dict(sorted(per_op.items())),
        },
        "source": {"kind": "trace", "traces": sources, "snapshot": snapshot},
        "verbatim": report,
        "pathless_commands": list(v.pathless_commands),
        "notes": notes,
        "tool_version": __version__,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def write_verbatim(v: VerbatimSchedule, out: str | Path, manifest: dict[str, Any]) -> Path:
    """Write the schedule atomically (``schedule.writer``)."""
    return write_schedule_dir(out, directories=v.directories, files=v.files, events=v.events, manifest=manifest)


__all__ = ["UNCLEAN_PATH", "VerbatimReport", "VerbatimSchedule", "manifest_for", "verbatim_schedule", "write_verbatim"]
