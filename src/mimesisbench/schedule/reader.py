"""The one schedule reader: a directory in the format of ``schedule.format``, read and checked.

Every command that reads a schedule (``run``, ``validate``, ``export-audit``, the checker, the
replay workers) goes through ``read_schedule``, so a schedule that passes is safe to replay:

* the manifest is a JSON object of the right format and version, and the keys other code reads
  (``seed``, ``window_ms``, ``options``, ``counts``, ``profile``, ``notes``) have their types;
* every required column exists with the right kind (integer, boolean, string) and no nulls,
  and its values fit the format's type (e.g. a ``type`` in Int16);
* directories: dense ids from 0 (the root ``/``, parent -1, depth 0); every other directory's
  parent exists, is one level up, and its path is the parent's path plus one name (no empty,
  ``.`` or ``..`` component, no NUL); paths are unique; a pre-existing directory's parent is
  pre-existing;
* files: dense ids from 0; each in a listed directory (a pre-existing one if the file is);
* events: known op codes (version 1: codes 1-9 only; version 2: 1-42; version 3: every ``OpCode``); times in ``[0, MAX_TIME_US]``; unique ``seq``; every target names a
  listed file (file operations, of the same type) or directory (directory operations), or for
  ``NAMENODE`` an entry of the manifest's ``pathless_commands`` (a list);
* version 3 (explicit paths, ``"paths": "explicit"``): events have ``path`` (null only for
  ``NAMENODE``), ``path2`` (set exactly on renames) and ``order_key`` (>= 0), files have ``path``;
  every path is a clean absolute one, and a file's path lies in the directory its ``dir_id``
  names (the columns ``allowed`` and ``expect_ok``, when present, are booleans without nulls).

A failed check raises ``ScheduleError`` (exit 4) naming the file and the column. Nothing here
imports the generator: replay workers load this module alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.errors import ScheduleError
from mimesisbench.schedule.format import (
    DIRECTORIES,
    EVENTS,
    EXPLICIT_PATHS,
    EXPLICIT_PATHS_VERSION,
    FILES,
    MANIFEST,
    MAX_TIME_US,
    READABLE_SCHEDULE_VERSIONS,
    SCHEDULE_FORMAT,
    SCHEDULE_VERSION,
    OpCode,
)

#: the op codes a schedule of each readable version may hold (version 1: codes 1-9)
VERSION_OPS: dict[int, frozenset[OpCode]] = {
    1: frozenset(o for o in OpCode if int(o) <= 9),
    2: frozenset(o for o in OpCode if int(o) <= 42),
    3: frozenset(OpCode),
}


@dataclass(frozen=True)
class Schedule:
    """A schedule read back and checked: its manifest and its three tables (never modified).

    Columns have the format's dtypes; events are sorted by (``time_us``, ``seq``).
    """

    root: Path
    manifest: dict[str, Any]
    directories: pl.DataFrame
    files: pl.DataFrame
    events: pl.DataFrame

    @property
    def path(self) -> Path:
        return self.root

    @property
    def n_events(self) -> int:
        return self.events.height

    @property
    def explicit_paths(self) -> bool:
        """Whether events and files carry their paths (version 3; ``schedule.format``)."""
        return self.manifest.get("paths") == EXPLICIT_PATHS

    def namespace_hash(self) -> str:
        """A hash of the namespace phase 1 builds (pre-existing directories and files)."""
        h = hashlib.sha256()
        dirs = self.directories.filter(pl.col("pre_existing")).select("dir_id", "path").sort("dir_id")
        files = self.files.filter(pl.col("pre_existing")).select("file_id", "type", "dir_id").sort("file_id")
        h.update(f"dirs {dirs.height}\n".encode())
        h.update(dirs["dir_id"].cast(pl.Int64).to_numpy().tobytes())
        h.update("\n".join(dirs["path"].to_list()).encode())
        h.update(f"files {files.height}\n".encode())
        for col in ("file_id", "type", "dir_id"):
            h.update(files[col].cast(pl.Int64).to_numpy().tobytes())
        if self.explicit_paths:  # names are not derived from the ids: they are the namespace
            named = self.files.filter(pl.col("pre_existing")).sort("file_id")
            h.update("\n".join(named["path"].to_list()).encode())
        return h.hexdigest()


#: each table's columns and their dtypes (extra columns are allowed and kept as they are)
COLUMNS: dict[str, dict[str, pl.DataType]] = {
    DIRECTORIES: {
        "dir_id": pl.Int32(),
        "parent_id": pl.Int32(),
        "depth": pl.Int16(),
        "type": pl.Int16(),
        "path": pl.String(),
        "pre_existing": pl.Boolean(),
    },
    FILES: {"file_id": pl.Int64(), "type": pl.Int16(), "dir_id": pl.Int32(), "pre_existing": pl.Boolean()},
    EVENTS: {
        "time_us": pl.Int64(),
        "op": pl.UInt8(),
        "type": pl.Int16(),
        "target": pl.Int64(),
        "generation": pl.UInt8(),
        "seq": pl.Int64(),
    },
}

#: manifest keys other code reads, and the JSON types each may have (absent is allowed)
_MANIFEST_KEYS: dict[str, tuple[type, ...]] = {
    "seed": (int, type(None)),
    "window_ms": (int,),
    "options": (dict,),
    "counts": (dict,),
    "profile": (dict,),
    "notes": (list,),
    "profile_hash": (str,),
    "pathless_commands": (list,),
}

#: at most this many bytes of manifest are read (a real one is a few kB)
MAX_MANIFEST_BYTES = 16 << 20


def _fail(root: Path, where: str, why: str) -> ScheduleError:
    return ScheduleError(f"schedule {root}: {where}: {why}")


def _is_dir(p: Path) -> None:
    if not p.exists():
        raise ScheduleError(f"schedule {p} is not a directory (it does not exist)")
    if not p.is_dir():
        raise ScheduleError(f"schedule {p} is not a directory but a file; give the schedule directory")


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of the schedule directory ``path``, checked (see the module's docstring)."""
    p = Path(path)
    _is_dir(p)
    file = p / MANIFEST
    try:
        with file.open("rb") as fh:
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise ScheduleError(f"{p} is not a schedule directory (no {MANIFEST})") from None
    except OSError as exc:
        raise ScheduleError(f"cannot read {file}: {exc.strerror or exc}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _fail(p, MANIFEST, f"larger than {MAX_MANIFEST_BYTES >> 20} MiB; not a manifest")
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _fail(p, MANIFEST, f"not valid JSON ({str(exc)[:120]})") from None
    ours = isinstance(manifest, dict) and manifest.get("format") == SCHEDULE_FORMAT
    version = manifest.get("version") if ours else None
    if not ours or isinstance(version, bool) or version not in READABLE_SCHEDULE_VERSIONS:
        found = manifest if isinstance(manifest, dict) else {}
        newer = isinstance(version, int) and not isinstance(version, bool) and version > max(READABLE_SCHEDULE_VERSIONS)
        hint = "; it was written by a newer MimesisBench: upgrade it" if newer else ""
        *most, last = (str(v) for v in READABLE_SCHEDULE_VERSIONS)
        readable = f"{', '.join(most)} or {last}" if most else last
        raise ScheduleError(
            f"{p}: {MANIFEST} is not a {SCHEDULE_FORMAT} version {readable} manifest "
            f"(format {found.get('format')!r:.60}, version {found.get('version')!r:.60}){hint}"
        )
    for key, types in _MANIFEST_KEYS.items():
        if key in manifest and (not isinstance(manifest[key], types) or isinstance(manifest[key], bool)):
            raise _fail(p, f"{MANIFEST} key {key!r}", f"expected {' or '.join(t.__name__ for t in types)}, "
                        f"got {type(manifest[key]).__name__}")
    explicit = manifest.get("paths")
    wanted = EXPLICIT_PATHS if version == EXPLICIT_PATHS_VERSION else None
    if explicit != wanted:
        raise _fail(
            p, f"{MANIFEST} key 'paths'",
            f"a version {EXPLICIT_PATHS_VERSION} schedule, and only one, says \"paths\": \"{EXPLICIT_PATHS}\" "
            f"(version {version}, paths {explicit!r:.40})",
        )
    window = manifest.get("window_ms", 0)
    if not 0 <= window <= MAX_TIME_US // 1000:
        raise _fail(p, f"{MANIFEST} key 'window_ms'", f"{window} is out of range [0, {MAX_TIME_US // 1000}]")
    return manifest


def _kind_ok(dtype: pl.DataType, want: pl.DataType) -> bool:
    if want == pl.String():
        return dtype == pl.String()
    if want == pl.Boolean():
        return dtype == pl.Boolean()
    return dtype.is_integer()


def _read_table(root: Path, name: str) -> pl.DataFrame:
    path = root / name
    if not path.is_file():
        raise ScheduleError(f"schedule {root}: {name} is missing")
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise _fail(root, name, f"cannot read it ({str(exc).splitlines()[0][:160] if str(exc) else exc!r})") from None
    except MemoryError:
        raise _fail(root, name, "too large to read into memory") from None
    columns = COLUMNS[name]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise _fail(root, name, f"lacks column(s) {', '.join(missing)}")
    casts = []
    for col, want in columns.items():
        dtype = frame.schema[col]
        if not _kind_ok(dtype, want):
            raise _fail(root, f"{name} column {col}", f"holds {dtype}, expected {want}")
        nulls = frame.get_column(col).null_count()
        if nulls:
            raise _fail(root, f"{name} column {col}", f"{nulls:,} null value(s)")
        if dtype != want:
            series = frame.get_column(col)
            if series.len() and want.is_integer():
                lo, hi = int(series.min()), int(series.max())  # type: ignore[arg-type]
                info = np.iinfo(_numpy_int(want))
                if lo < info.min or hi > info.max:
                    raise _fail(root, f"{name} column {col}", f"values {lo}..{hi} do not fit {want}")
            casts.append(pl.col(col).cast(want))
    return frame.with_columns(casts) if casts else frame


def _numpy_int(dtype: pl.DataType) -> type[np.integer[Any]]:
    table: dict[pl.DataType, type[np.integer[Any]]] = {
        pl.Int16(): np.int16,
        pl.Int32(): np.int32,
        pl.Int64(): np.int64,
        pl.UInt8(): np.uint8,
    }
    return table[dtype]


_BAD_PATH = r"//|(^|/)\.\.?(/|$)|\x00"


def _check_directories(root: Path, dirs: pl.DataFrame) -> pl.DataFrame:
    where = DIRECTORIES
    if dirs.height == 0:
        raise _fail(root, where, "is empty (it must hold at least the root, dir_id 0)")
    dirs = dirs.sort("dir_id")
    ids = dirs.get_column("dir_id").to_numpy()
    if ids[0] != 0 or ids[-1] != dirs.height - 1 or np.any(np.diff(ids) != 1):
        raise _fail(root, f"{where} column dir_id", f"ids must be 0..{dirs.height - 1}, each once")
    first = dirs.row(0, named=True)
    if first["parent_id"] != -1 or first["depth"] != 0 or first["path"] != "/" or not first["pre_existing"]:
        raise _fail(root, where, "dir_id 0 must be the pre-existing root '/' (parent_id -1, depth 0)")
    parent = dirs.get_column("parent_id").to_numpy()[1:].astype(np.int64)
    if parent.size and (parent.min() < 0 or parent.max() >= dirs.height or np.any(parent == ids[1:])):
        bad = int(ids[1:][(parent < 0) | (parent >= dirs.height) | (parent == ids[1:])][0])
        raise _fail(root, f"{where} column parent_id", f"dir_id {bad} names no other listed directory as parent")
    depth = dirs.get_column("depth").to_numpy().astype(np.int64)
    wrong = np.flatnonzero(depth[1:] != depth[parent] + 1)
    if wrong.size:
        raise _fail(root, f"{where} column depth", f"dir_id {int(ids[1 + wrong[0]])} is not one level below its parent")
    pre = dirs.get_column("pre_existing").to_numpy()
    orphan = np.flatnonzero(pre[1:] & ~pre[parent])
    if orphan.size:
        raise _fail(root, where, f"pre-existing dir_id {int(ids[1 + orphan[0]])} has a parent made only in phase 2")
    paths = dirs.get_column("path")
    below = paths.slice(1)
    bad_path = below.str.contains(_BAD_PATH) | ~below.str.starts_with("/") | below.str.ends_with("/")
    if bad_path.any():
        example = paths.slice(1).filter(bad_path)[0]
        raise _fail(
            root,
            f"{where} column path",
            f"{example[:80]!r} is not a clean absolute path (empty, '.' or '..' component, NUL, or trailing '/')",
        )
    parent_path = paths.gather(pl.Series(parent)) if parent.size else pl.Series([], dtype=pl.String)
    derived = paths.slice(1).str.replace(r"/[^/]*$", "")
    derived = pl.select(pl.when(derived == "").then(pl.lit("/")).otherwise(derived)).to_series()
    mismatch = (derived != parent_path).to_numpy() if parent.size else np.zeros(0, dtype=bool)
    if mismatch.any():
        k = int(np.flatnonzero(mismatch)[0])
        raise _fail(
            root, f"{where} column path", f"{paths[k + 1][:80]!r} is not inside its parent {parent_path[k][:80]!r}"
        )
    if paths.n_unique() != paths.len():
        raise _fail(root, f"{where} column path", "a path is listed twice")
    return dirs


def _check_files(root: Path, files: pl.DataFrame, dirs: pl.DataFrame) -> pl.DataFrame:
    where = FILES
    files = files.sort("file_id")
    n = files.height
    if n:
        ids = files.get_column("file_id").to_numpy()
        if ids[0] != 0 or ids[-1] != n - 1 or np.any(np.diff(ids) != 1):
            raise _fail(root, f"{where} column file_id", f"ids must be 0..{n - 1}, each once")
        ftype = files.get_column("type").to_numpy()
        if ftype.min() < 0:
            raise _fail(root, f"{where} column type", f"type {int(ftype.min())} is negative")
        dir_id = files.get_column("dir_id").to_numpy().astype(np.int64)
        outside = (dir_id < 0) | (dir_id >= dirs.height)
        if outside.any():
            k = int(np.flatnonzero(outside)[0])
            raise _fail(root, f"{where} column dir_id", f"file {k} names dir_id {int(dir_id[k])}, not listed")
        dir_pre = dirs.get_column("pre_existing").to_numpy()
        pre = files.get_column("pre_existing").to_numpy()
        late = pre & ~dir_pre[dir_id]
        if late.any():
            k = int(np.flatnonzero(late)[0])
            raise _fail(root, where, f"pre-existing file {k} is in a directory made only in phase 2")
    return files


def _check_events(
    root: Path, events: pl.DataFrame, dirs: pl.DataFrame, files: pl.DataFrame, manifest: dict[str, Any]
) -> pl.DataFrame:
    pathless = len(manifest.get("pathless_commands") or [])
    where = EVENTS
    if events.height == 0:
        return events
    time = events.get_column("time_us").to_numpy()
    lo, hi = int(time.min()), int(time.max())
    if lo < 0 or hi > MAX_TIME_US:
        bad = lo if lo < 0 else hi
        raise _fail(root, f"{where} column time_us", f"time {bad} us is out of range [0, {MAX_TIME_US}]")
    op = events.get_column("op").to_numpy()
    version = int(manifest.get("version", SCHEDULE_VERSION))
    known = np.array(sorted(int(o) for o in VERSION_OPS.get(version, frozenset(OpCode))))
    unknown = ~np.isin(op, known)
    if unknown.any():
        code = int(op[unknown][0])
        why = f"unknown op code {code}"
        if version < EXPLICIT_PATHS_VERSION and code in {int(o) for o in OpCode}:
            why += f" for a version {version} schedule (it holds codes {int(known.min())}-{int(known.max())})"
        raise _fail(root, f"{where} column op", why)
    if events.get_column("seq").n_unique() != events.height:
        raise _fail(root, f"{where} column seq", "a seq is repeated")
    target = events.get_column("target").to_numpy()
    on_dir = np.isin(op, [int(o) for o in OpCode if o.on_directory])
    pathless_op = op == OpCode.NAMENODE  # target: an index into the manifest's pathless_commands
    limit = np.where(on_dir, dirs.height, np.where(pathless_op, pathless, files.height))
    outside = (target < 0) | (target >= limit)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        kind = "directory" if on_dir[k] else "pathless command" if pathless_op[k] else "file"
        listed = DIRECTORIES if on_dir[k] else f"{MANIFEST} pathless_commands" if pathless_op[k] else FILES
        raise _fail(
            root, f"{where} column target",
            f"event seq {events.get_column('seq')[k]} ({OpCode(int(op[k])).label}) names {kind} {int(target[k])}, "
            f"not listed in {listed}",
        )
    etype = events.get_column("type").to_numpy()
    on_file = ~on_dir & ~pathless_op
    if on_file.any():
        ftype = files.get_column("type").to_numpy()
        wrong = np.flatnonzero(on_file & (etype != ftype[np.where(on_file, target, 0)]))
        if wrong.size:
            k = int(wrong[0])
            raise _fail(
                root, f"{where} column type",
                f"event seq {events.get_column('seq')[k]} has type {int(etype[k])}, its file {int(target[k])} is of "
                f"type {int(ftype[target[k]])}",
            )
    return events.sort(["time_us", "seq"], maintain_order=True)


#: the columns of explicit-path schedules (version 3), beside ``COLUMNS``; None: nulls allowed
EXPLICIT_COLUMNS: dict[str, dict[str, pl.DataType]] = {
    FILES: {"path": pl.String()},
    EVENTS: {"path": pl.String(), "path2": pl.String(), "order_key": pl.Int64()},
}
#: optional boolean columns of explicit-path events
EXPLICIT_FLAGS = ("allowed", "expect_ok")


def clean_paths(paths: pl.Series) -> pl.Series:
    """Whether each (non-null) path is a clean absolute one: it starts with ``/``, has no empty,
    ``.`` or ``..`` component, no NUL and no trailing ``/`` (the root alone is ``/``)."""
    return (paths == "/") | (paths.str.starts_with("/") & ~paths.str.ends_with("/") & ~paths.str.contains(_BAD_PATH))


def _explicit_column(root: Path, name: str, frame: pl.DataFrame, col: str, want: pl.DataType) -> pl.Series:
    if col not in frame.columns:
        raise _fail(root, name, f"lacks column {col} (an explicit-path schedule needs it)")
    series = frame.get_column(col)
    if not _kind_ok(series.dtype, want):
        raise _fail(root, f"{name} column {col}", f"holds {series.dtype}, expected {want}")
    return series.cast(want)


def _check_explicit(root: Path, dirs: pl.DataFrame, files: pl.DataFrame, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The version 3 columns (module docstring); returns files and events with them cast."""
    fpath = _explicit_column(root, FILES, files, "path", pl.String())
    if fpath.null_count():
        raise _fail(root, f"{FILES} column path", f"{fpath.null_count():,} null value(s)")
    if files.height:
        bad = ~clean_paths(fpath) | (fpath == "/")
        if bad.any():
            raise _fail(root, f"{FILES} column path", f"{fpath.filter(bad)[0][:80]!r} is not a clean absolute path")
        parent = fpath.str.replace(r"/[^/]*$", "")
        parent = pl.select(pl.when(parent == "").then(pl.lit("/")).otherwise(parent)).to_series()
        listed = dirs.get_column("path").gather(files.get_column("dir_id").cast(pl.Int64))
        wrong = (parent != listed).to_numpy()
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            raise _fail(root, f"{FILES} column path", f"{fpath[k][:80]!r} is not inside its directory {listed[k][:80]!r}")
    cols = {c: _explicit_column(root, EVENTS, events, c, t) for c, t in EXPLICIT_COLUMNS[EVENTS].items()}
    for flag in EXPLICIT_FLAGS:
        if flag in events.columns:
            series = _explicit_column(root, EVENTS, events, flag, pl.Boolean())
            if series.null_count():
                raise _fail(root, f"{EVENTS} column {flag}", f"{series.null_count():,} null value(s)")
    if events.height:
        op = events.get_column("op").to_numpy()
        pathless = op == OpCode.NAMENODE
        renames = np.isin(op, [int(OpCode.RENAME_FILE), int(OpCode.RENAME_DIR)])
        path, path2, key = cols["path"], cols["path2"], cols["order_key"]
        missing = path.is_null().to_numpy() & ~pathless
        if missing.any():
            k = int(np.flatnonzero(missing)[0])
            raise _fail(root, f"{EVENTS} column path", f"event seq {events.get_column('seq')[k]} has no path")
        if (path2.is_null().to_numpy() == renames).any():
            k = int(np.flatnonzero(path2.is_null().to_numpy() == renames)[0])
            raise _fail(
                root, f"{EVENTS} column path2",
                f"event seq {events.get_column('seq')[k]}: a rename, and only a rename, has a destination",
            )
        for name, series in (("path", path), ("path2", path2)):
            given = series.drop_nulls()
            bad = ~clean_paths(given)
            if bad.any():
                raise _fail(root, f"{EVENTS} column {name}", f"{given.filter(bad)[0][:80]!r} is not a clean absolute path")
        if key.null_count() or int(key.min()) < 0:  # type: ignore[arg-type]
            raise _fail(root, f"{EVENTS} column order_key", "keys must be non-negative integers, without nulls")
        events = events.with_columns(key)
    return files.with_columns(fpath), events


def read_schedule(path: str | Path) -> Schedule:
    """Read and check a schedule directory (see the module's docstring); raises ``ScheduleError``
    naming the file and column at fault. Events come sorted by (``time_us``, ``seq``)."""
    p = Path(path)
    manifest = read_manifest(p)
    dirs = _check_directories(p, _read_table(p, DIRECTORIES))
    files = _check_files(p, _read_table(p, FILES), dirs)
    pathless = manifest.get("pathless_commands", [])
    if not isinstance(pathless, list) or not all(isinstance(c, str) for c in pathless):
        raise _fail(p, f"{MANIFEST} key pathless_commands", "expected a list of command names")
    events = _check_events(p, _read_table(p, EVENTS), dirs, files, manifest)
    if manifest.get("paths") == EXPLICIT_PATHS:
        files, events = _check_explicit(p, dirs, files, events)
    return Schedule(root=p, manifest=manifest, directories=dirs, files=files, events=events)


#: the name replay code has used
load_schedule = read_schedule

__all__ = ["COLUMNS", "Schedule", "clean_paths", "load_schedule", "read_manifest", "read_schedule"]
