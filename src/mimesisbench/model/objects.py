"""Per-object features from a canonical event table (the paper's Table 1 quantities per object).

Objects are files *and* directories (format 2). A path is a *directory* if a snapshot says so, if
it was ``mkdirs``-ed, if it is an ancestor of any other path in the trace, if it is only ever
listed (``listStatus``, ``contentSummary``) and never opened, created, appended, truncated,
concatenated or re-replicated (and the snapshot does not list it as a file), or if it is the
destination of a directory's rename; every other path is a file. Every allowed event with a path
and a command belongs to one object. An object keeps its identity across renames: events on a
rename's destination are attributed to the object of its source (chains followed in time order),
so MapReduce's "write to _temporary, rename to the output directory" keeps the file's creation
time, and a renamed directory stays one directory object. Events without a path (``src=null``,
NameNode-wide commands) belong to no object.

An object's *accesses* are all its events except the event that made it in the window (its first
event when that is a ``create`` of a file or a ``mkdirs`` of a directory, and the path is not in
the snapshot) and the ``delete`` that removed it for good (its last event, when a delete). The
access table (``ObjectView.accesses``: obj, time, command index, sorted by object then time) is
what per-object gaps, command chains and popularity are computed from.
"""

from __future__ import annotations

from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow.compute as pc
from numpy.typing import NDArray

from mimesisbench.handover import Handover, owned
from mimesisbench.native import native_module
from mimesisbench.schedule.format import opcode_for

OPEN = "open"
LIST = "listStatus"
CREATE = "create"
DELETE = "delete"
RENAME = "rename"
MKDIRS = "mkdirs"
GETFILEINFO = "getfileinfo"

_KNOWN_OPS = (CREATE, OPEN, LIST, DELETE, RENAME, "append", GETFILEINFO, MKDIRS)

OBJECT_COLUMNS = (
    "path",
    "is_dir",
    "created_ms",
    "first_access_ms",
    "last_access_ms",
    "deleted_ms",
    "accesses",
    "opens",
    "lists",
    "renames",
    "depth",
    "children_created",
    "parent_made",
)


@dataclass(frozen=True)
class ObjectView:
    """The trace seen per object (files and directories)."""

    directories: pl.Series  # String, unique directory paths (no trailing slash; "/" is the root)
    objects: pl.DataFrame  # one row per object: obj (Int32 id) and OBJECT_COLUMNS (path: unless left out)
    accesses: pl.DataFrame  # obj Int32, time_ms Int64 (relative: see build_view), cmd (index into ``commands``), sorted by (obj, time)
    commands: tuple[str, ...]  # the audit cmd names that ``accesses.cmd`` and ``events.op`` index
    events: pl.DataFrame  # time_ms, obj, op (Enum): every allowed event with a path (empty: see build_view)
    unmodelled: dict[str, int]  # accesses per cmd whose (cmd, kind) a schedule cannot hold (``opcode_for``)

    @property
    def gaps(self) -> pl.DataFrame:
        """Per-object access interarrivals (consecutive accesses of one object, every command):
        ``obj``, ``gap_ms``, grouped by object in time order."""
        return _gaps_from_grouped(self.accesses["obj"].to_numpy(), self.accesses["time_ms"].to_numpy())

    def access_commands(self) -> pl.Series:
        """The command name of each access (aligned with ``accesses``)."""
        names = pl.Series("cmd", self.commands, dtype=pl.Enum(list(self.commands)))
        return names.gather(self.accesses["cmd"].to_numpy())


def path_depth(paths: pl.Expr) -> pl.Expr:
    """Depth of a path: "/" is 0, "/a" is 1, "/a/b" is 2."""
    stripped = paths.str.strip_chars_end("/")
    return pl.when(stripped == "").then(0).otherwise(stripped.str.count_matches("/")).cast(pl.Int16)


def _normalised_depths(paths: pl.Series) -> NDArray[np.int16]:
    """``path_depth`` of paths without a trailing slash (but "/"), as numpy: the slashes counted by
    pyarrow's byte search, several times faster than a regex count."""
    slashes = pc.count_substring(paths.to_arrow(), "/").to_numpy(zero_copy_only=False).astype(np.int16)
    return np.where((paths == "/").to_numpy(), np.int16(0), slashes)


def _parents(paths: pl.Series) -> pl.Series:
    """The parent of each path ("/" for "/a" and for "/"), text before the last slash: pyarrow's
    plain split from the right, a few times faster than a regex replace."""
    if paths.len() == 0:
        return paths.cast(pl.String)
    halves = pc.split_pattern(paths.cast(pl.String).to_arrow(), "/", max_splits=1, reverse=True)
    parent = pl.Series(pc.list_element(halves, 0))
    no_slash = pl.Series(pc.list_value_length(halves)) < 2  # a relative name: its parent is the root
    return parent.set(no_slash, "/").replace("", "/")


#: the seed of the path texts' hashes that order path ids
PATH_HASH_SEED = 0x4D42
#: paths whose parents are taken at a time (the split's temporaries are a few times the text)
PARENT_ROWS = 262_144


def _distinct_parents(paths: pl.Series) -> pl.Series:
    """The distinct parents of paths, a slice of ``PARENT_ROWS`` at a time (less memory, and
    faster for millions of paths than one split of them all)."""
    if paths.len() <= PARENT_ROWS:
        return _parents(paths).unique()
    return pl.concat([_parents(paths.slice(i, PARENT_ROWS)).unique() for i in range(0, paths.len(), PARENT_ROWS)]).unique()


def _parents_of_unique(paths: pl.Series) -> list[pl.Series]:
    """The ancestors of distinct paths, one Series of distinct directories per level."""
    seen: list[pl.Series] = []
    current = paths
    while current.len() > 0:
        parents = _distinct_parents(current)
        seen.append(parents)
        current = parents.filter(parents != "/")
    return seen


def _ancestors_and_parent_hashes(paths: pl.Series) -> tuple[pl.Series, NDArray[np.uint64]]:
    """``_ancestors`` of distinct paths, and the hash (``PATH_HASH_SEED``) of each path's parent,
    aligned with ``paths``: the first level's parents are taken once for both."""
    if paths.len() == 0:
        return pl.Series("path", [], dtype=pl.String), np.empty(0, dtype=np.uint64)
    hashes: list[NDArray[np.uint64]] = []
    firsts: list[pl.Series] = []
    for i in range(0, paths.len(), PARENT_ROWS):
        parents = _parents(paths.slice(i, PARENT_ROWS))
        hashes.append(parents.hash(seed=PATH_HASH_SEED).to_numpy())
        firsts.append(parents.unique())
    first = pl.concat(firsts).unique()
    seen = [first, *_parents_of_unique(first.filter(first != "/"))]
    return pl.concat(seen).unique(), np.concatenate(hashes)


def _ancestors(paths: pl.Series) -> pl.Series:
    """Every proper ancestor directory of distinct paths (unique, String), root included."""
    seen = _parents_of_unique(paths)
    return pl.concat(seen).unique() if seen else pl.Series("path", [], dtype=pl.String)


def _categorical(col: pl.Series) -> pl.Series:
    """The column as polars' (global) Categorical, whose physical codes are the strings' ids."""
    return col if col.dtype == pl.Categorical else col.cast(pl.String).cast(pl.Categorical)


def _codes(col: pl.Series, keep: NDArray[np.bool_] | None) -> NDArray[np.uint32]:
    """Physical codes of a Categorical column (nulls as 0), restricted to the ``keep`` rows."""
    physical = col.to_physical()
    if physical.null_count():
        physical = physical.fill_null(0)
    codes = physical.to_numpy()
    return codes if keep is None else codes[keep]


@dataclass(frozen=True)
class _Names:
    """The texts behind the dense ids of ``_EventArrays``."""

    op_names: tuple[str, ...]  # sorted; every known operation included
    paths: pl.Series  # String, normalised (no trailing slash; "/" is the root), one per id
    path_hash: NDArray[np.uint64]  # each path's hash (``PATH_HASH_SEED``): ascending, ids follow it
    norm_of_id: NDArray[np.integer]  # for each id, the index of one of its texts in code order

    def ids_of_hashes(self, h: NDArray[np.uint64]) -> NDArray[np.int32]:
        """The path id of each text hash (-1 when the trace never names the text)."""
        if self.path_hash.size == 0:
            return np.full(h.size, -1, dtype=np.int32)
        order = np.argsort(h)  # sorted queries: the binary searches stay in cache
        at = np.empty(h.size, dtype=np.intp)
        at[order] = np.minimum(np.searchsorted(self.path_hash, h[order]), self.path_hash.size - 1)
        return np.where(self.path_hash[at] == h, at, -1).astype(np.int32)


    def op_index(self, name: str) -> int:
        return self.op_names.index(name)

    def op_series(self, idx: NDArray[np.uint8]) -> pl.Series:
        """The operations at ``idx`` as an Enum column (a gather from the small table of names)."""
        names = pl.Series("op", self.op_names, dtype=pl.Enum(list(self.op_names)))
        return names.gather(idx)


@dataclass(frozen=True)
class _EventArrays:
    """Every row of the event table as numpy columns over dense path ids; only the rows of
    ``keep`` (allowed events with a path and an operation) count. The columns are the table's own
    buffers where they can be (no copy of 10 M-row columns)."""

    time: NDArray[np.int64]
    op: NDArray[np.unsignedinteger[Any]]  # index into ``names.op_names`` (uint8; uint16 past 255 names)
    pcode: NDArray[np.uint32]  # the path's Categorical code ...
    code_pid: NDArray[np.int32]  # ... and each code's path id (index into ``paths``; -1: unused code)
    keep: NDArray[np.bool_] | None  # the rows that count (None: all)
    dst_at: NDArray[np.intp]  # the kept rows (ascending) that have a destination ...
    did: NDArray[np.int32]  # ... and its path id
    names: _Names

    def destinations(self, at: NDArray[np.intp]) -> NDArray[np.int32]:
        """The destination's path id of the rows ``at`` (-1 for none)."""
        idx = np.minimum(np.searchsorted(self.dst_at, at), max(self.dst_at.size - 1, 0))
        if self.dst_at.size == 0:
            return np.full(at.size, -1, dtype=np.int32)
        return np.where(self.dst_at[idx] == at, self.did[idx], np.int32(-1))

    def kept(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """``mask`` restricted to the rows that count (in place)."""
        if self.keep is not None:
            mask &= self.keep
        return mask


def _first_of_each(dense: NDArray[np.int32], n: int) -> NDArray[np.int64]:
    """For each id 0..n-1, an index ``i`` with ``dense[i] == id``."""
    out = np.zeros(n, dtype=np.int64)
    out[dense] = np.arange(dense.size)
    return out


def _row_of_each_code(codes: NDArray[np.uint32], rows: NDArray[np.integer], size: int) -> NDArray[np.int64]:
    """``at[code]``: a row holding ``code`` (any one: a code has one text), -1 for absent codes."""
    at = np.full(size, -1, dtype=np.int64)
    at[codes] = rows
    return at


#: event rows read at a time where a pass over every event needs row numbers or copies
EVENT_ROWS = 1 << 20


def _relative_kept_times(times: NDArray[np.int64], keep: NDArray[np.bool_] | None) -> tuple[NDArray[np.signedinteger[Any]], int]:
    """The times of the ``keep`` rows (None: all) as ms since an origin at or before each (the
    earliest time of all rows) and that origin: int32 (half the memory) when all rows span less
    than 2**31 ms (24.8 days), else the int64 times themselves (origin 0). Made a chunk at a time."""
    if times.size == 0 or int(times.max()) - int(times.min()) >= 2**31:
        return (times if keep is None else times[keep]), 0
    base = int(times.min())
    out = np.empty(times.size if keep is None else int(np.count_nonzero(keep)), dtype=np.int32)
    filled = 0
    for start in range(0, times.size, EVENT_ROWS):
        part = times[start : start + EVENT_ROWS]
        if keep is not None:
            part = part[keep[start : start + EVENT_ROWS]]
        out[filled : filled + part.size] = part - base
        filled += part.size
    return out, base


def _rows_of_codes(codes: NDArray[np.uint32], rows: NDArray[np.bool_] | None, size: int) -> NDArray[np.int64]:
    """``at[code]``: a row holding ``code`` among the ``rows`` (None: all), -1 for absent codes; a
    chunk of rows at a time (no row number of every event)."""
    at = np.full(size, -1, dtype=np.int64)
    for start in range(0, codes.size, EVENT_ROWS):
        stop = min(start + EVENT_ROWS, codes.size)
        part, numbers = codes[start:stop], np.arange(start, stop)
        if rows is not None:
            part, numbers = part[rows[start:stop]], numbers[rows[start:stop]]
        at[part] = numbers
    return at


def _gather_codes(lut: NDArray[np.int32], codes: NDArray[np.uint32], rows: NDArray[np.bool_] | None) -> NDArray[np.int32]:
    """``lut[codes[rows]]`` (``rows``: a mask, None for all), a chunk at a time."""
    if rows is None:
        return lut[codes]
    out = np.empty(int(np.count_nonzero(rows)), dtype=lut.dtype)
    filled = 0
    for start in range(0, codes.size, EVENT_ROWS):
        part = lut[codes[start : start + EVENT_ROWS][rows[start : start + EVENT_ROWS]]]
        out[filled : filled + part.size] = part
        filled += part.size
    return out


def _event_arrays(
    events: pl.DataFrame, pool: Executor
) -> tuple[_EventArrays, Future[tuple[pl.Series, NDArray[np.uint64]]]]:
    """Dense path ids for the allowed events with a path.

    Paths go through polars' Categorical codes, so string work happens once per distinct path,
    never per event (a code's text is read from one row holding it). Ids follow a hash of the path
    text, so they do not depend on the order in which a parser met the paths (and profiles are
    reproducible). Also returns the ancestors of the paths and the hashes of their parents in
    code order (``_ancestors_and_parent_hashes``), computed by ``pool`` meanwhile.
    """
    op_col, path_col, dst_col = (_categorical(events[c]) for c in ("op", "path", "dst"))
    allowed = events["allowed"]
    keep: NDArray[np.bool_] | None = None
    if allowed.null_count() or not allowed.all() or path_col.null_count() or op_col.null_count():
        keep = allowed.fill_null(False).to_numpy() & path_col.is_not_null().to_numpy() & op_col.is_not_null().to_numpy()

    # operations (of every event, as before filtering): codes -> index of the name in op_names.
    # A null's code (0, see ``_codes``) may be a real operation's too: texts are read from rows
    # holding a real operation only.
    op_codes = _codes(op_col, None)
    op_size = int(op_codes.max(initial=0)) + 1
    op_at = _rows_of_codes(op_codes, op_col.is_not_null().to_numpy() if op_col.null_count() else None, op_size)
    op_ucodes = np.flatnonzero(op_at >= 0)
    op_present = op_col.gather(op_at[op_ucodes]).cast(pl.String).to_list()
    op_names = tuple(sorted({o for o in op_present if o is not None} | set(_KNOWN_OPS)))
    op_dtype: type[np.unsignedinteger[Any]] = np.uint8 if len(op_names) < 256 else np.uint16
    op_lut = np.zeros(op_at.size, dtype=op_dtype)
    op_lut[op_ucodes] = [op_names.index(o) if o is not None else 0 for o in op_present]
    op = op_lut[op_codes]  # every row (as time and path codes): rows outside ``keep`` are never read
    del op_codes

    time_col = events["time_ms"]
    time = (time_col if time_col.dtype == pl.Int64 else time_col.cast(pl.Int64)).to_numpy()
    all_pcodes = _codes(path_col, None)
    # destinations are rare: kept only where there is one
    has_dst = dst_col.is_not_null().to_numpy()
    dst_rows = np.flatnonzero(has_dst if keep is None else has_dst & keep)
    del has_dst
    dcodes = dst_col.gather(dst_rows).to_physical().to_numpy()

    # the distinct codes met in the kept events (ascending) and their text, read from a row holding
    # each (any row, kept or not: a code has one text)
    # (a null path's code, 0, may be a real path's too: only kept rows, which have a path, are read)
    size = int(max(all_pcodes.max(initial=0), dcodes.max(initial=0))) + 1
    at_path = _rows_of_codes(all_pcodes, keep, size)
    at_dst = _row_of_each_code(dcodes, dst_rows, size)
    codes = np.flatnonzero((at_path >= 0) | (at_dst >= 0))
    from_path = at_path[codes] >= 0
    raw = pl.concat([path_col.gather(at_path[codes[from_path]]), dst_col.gather(at_dst[codes[~from_path]])]).cast(pl.String)
    if not from_path.all():  # put the texts in code order
        raw = raw.gather(np.argsort(np.concatenate([codes[from_path], codes[~from_path]]), kind="stable"))
    suspicious = (raw.str.ends_with("/") & (raw != "/")) | (raw == "")
    norm = raw.str.strip_chars_end("/").replace("", "/") if suspicious.any() else raw
    ancestors = pool.submit(_ancestors_and_parent_hashes, norm)  # string work on another core while ids are made
    hashes = norm.hash(seed=PATH_HASH_SEED).to_numpy()
    order = np.argsort(hashes, kind="stable")
    ranked = norm.gather(order)
    if not suspicious.any():  # distinct codes are distinct texts
        dense = np.empty(order.size, dtype=np.int32)
        dense[order] = np.arange(order.size, dtype=np.int32)
        paths = ranked
    else:  # "/a" and "/a/" both seen: one id for both
        paths = ranked.unique(maintain_order=True)
        dense = (
            pl.DataFrame({"norm": norm})
            .join(pl.DataFrame({"norm": paths, "id": np.arange(paths.len(), dtype=np.int32)}), on="norm",
                  how="left", maintain_order="left")["id"].to_numpy()
        )
    lut = np.full(size, -1, dtype=np.int32)
    lut[codes] = dense
    path_hash = hashes[order] if not suspicious.any() else paths.hash(seed=PATH_HASH_SEED).to_numpy()
    # a text (in ``norm``, code order) of each id, to read the parents' hashes by id
    norm_of_id = order if not suspicious.any() else _first_of_each(dense, paths.len())
    arrays = _EventArrays(time=time, op=op, pcode=all_pcodes, code_pid=lut, keep=keep, dst_at=dst_rows, did=lut[dcodes],
                          names=_Names(op_names=op_names, paths=paths.alias("path"), path_hash=path_hash, norm_of_id=norm_of_id))
    return arrays, ancestors


def _rename_roots(
    src: NDArray[np.int32], dst: NDArray[np.int32], is_dir: NDArray[np.bool_]
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """``root[pid]``: the object id a path continues (renames' destinations map to their source's
    root, chains followed in time order) and ``last[obj]``: the path id an object ends at. A
    directory's rename makes its destination a directory (``is_dir``, updated in place). Renames
    are rare next to accesses, so a walk over them is cheap."""
    n_paths = is_dir.size
    root = np.arange(n_paths, dtype=np.int32)
    last = np.arange(n_paths, dtype=np.int32)
    for s, d in zip(src.tolist(), dst.tolist()):
        if d >= 0:
            obj = root[s]
            root[d] = obj
            last[obj] = d
            if is_dir[s]:
                is_dir[d] = True
    return root, last


def _group_order(keys: NDArray[np.int32], times: NDArray[np.signedinteger[Any]]) -> NDArray[np.integer]:
    """The order that groups ``keys`` (ascending, not negative), time order kept within a key (ties:
    input order). Events come in time order (the event table's contract), so a stable sort by key
    suffices: with the native core one counting sort (``mimesisbench_native.group_order``: 0.13 s
    for 10 M events of 1.4 M objects, where the numpy passes below take 0.6 s and three times the
    memory); else two passes of numpy's radix sort on 16-bit digits, several times faster than a
    comparison sort of 32-bit keys."""
    if not _ascending(times):
        return np.lexsort((times, keys))
    native = native_module()
    if native is not None and keys.size and keys.size < 2**32 - 1 and keys.dtype == np.int32:
        order: NDArray[np.integer] = native.group_order(np.ascontiguousarray(keys), int(keys.max()) + 1)
        return order
    order = np.argsort(keys.astype(np.uint16), kind="stable")  # the low digit (the cast keeps the low 16 bits)
    if keys.size and int(keys.max()) >= 1 << 16:  # ids are below 2**31 and not negative
        if order.size < 2**31:
            order = order.astype(np.int32)  # half the memory of an intp order
        # the high digit in the low digit's order, a chunk at a time (no 32-bit temporary of all)
        high = np.empty(keys.size, dtype=np.uint16)
        for start in range(0, keys.size, EVENT_ROWS):
            high[start : start + EVENT_ROWS] = keys[order[start : start + EVENT_ROWS]] >> 16
        by_high = np.argsort(high, kind="stable")
        del high
        order = order[by_high]
    return order


def _ascending(values: NDArray[np.integer]) -> bool:
    """Whether ``values`` never decrease, a chunk at a time (no mask of every row)."""
    for start in range(0, values.size - 1, EVENT_ROWS):
        part = values[start : start + EVENT_ROWS + 1]
        if not np.all(part[1:] >= part[:-1]):
            return False
    return True


def _gaps_from_grouped(obj: NDArray[np.int32], times: NDArray[np.int64]) -> pl.DataFrame:
    same = obj[1:] == obj[:-1]
    return pl.DataFrame({"obj": obj[1:][same], "gap_ms": np.diff(times).astype(np.int64, copy=False)[same]},
                        schema={"obj": pl.Int32, "gap_ms": pl.Int64})


def _group_bounds(keys: NDArray[np.int32]) -> tuple[NDArray[np.signedinteger[Any]], NDArray[np.signedinteger[Any]]]:
    """First and last row of each run of equal ``keys`` (grouped), as int32 below 2**31 rows."""
    dtype: type[np.signedinteger[Any]] = np.int32 if keys.size < 2**31 else np.int64
    if keys.size == 0:
        return np.empty(0, dtype=dtype), np.empty(0, dtype=dtype)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))).astype(dtype)
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:] - 1
    ends[-1] = keys.size - 1
    return starts, ends


def modelled_table(op_names: tuple[str, ...]) -> NDArray[np.bool_]:
    """``ok[op, is_dir]``: whether a schedule can hold an access ``op`` on a file (0) or a
    directory (1), by ``opcode_for`` (an access is never the event that made its object)."""
    ok = np.zeros((len(op_names), 2), dtype=bool)
    for i, name in enumerate(op_names):
        for d, target in enumerate(("file", "directory")):
            ok[i, d] = opcode_for(name, target) is not None
    return ok


def build_view(
    events: pl.DataFrame | Handover[pl.DataFrame],
    snapshot: pl.DataFrame | None = None,
    *,
    event_tables: bool = True,
    modelled_only: bool = False,
    object_paths: bool = True,
    relative_times: bool = False,
    known_directories: pl.Series | None = None,
) -> ObjectView:
    """Classify paths, follow renames, split each object's events into its creation, its final
    deletion and its accesses, and compute the per-object table.

    ``event_tables=False`` leaves ``ObjectView.events`` empty (its columns, no rows): a caller
    that needs only the objects and accesses (the fit) then does not keep a table of every event
    alive beside them. ``modelled_only``: accesses that a schedule cannot hold for the object's
    kind (``opcode_for`` is None) are left out of the access table (and of the per-object counts;
    ``ObjectView.unmodelled`` counts them either way). ``object_paths=False`` leaves the ``path``
    column out of the object table (the fit reads no object's path: a text per object less).
    ``relative_times=True``: the access table's ``time_ms`` are ms since an origin at or before
    the first event (Int32 when the events span less than 2**31 ms, else Int64): for a caller
    that reads only their differences (the fit), half the memory. ``known_directories``: paths
    known to be directories by other means than a snapshot (a schedule's own directory table,
    whose leaf directories deleted untouched show no child in its events); unlike a snapshot's,
    they say nothing about which paths existed before the first event. ``events`` handed over
    (``Handover``) is dropped once its columns are read, before the events are grouped."""
    table = owned(events)
    del events
    with ThreadPoolExecutor(max_workers=2) as pool:
        ev, ancestors = _event_arrays(table, pool)
        del table  # the arrays read from it (``ev``) go too, once the objects are known
        names = ev.names
        paths = names.paths
        mkdirs_ids = np.unique(ev.code_pid[ev.pcode[ev.kept(ev.op == names.op_index(MKDIRS))]])
        ancestor_dirs, parent_hash_norm = ancestors.result()
        # each path id's parent's id, found on the other core while this one classifies
        parent_of = pool.submit(lambda: names.ids_of_hashes(parent_hash_norm[names.norm_of_id]))
        dir_parts = [ancestor_dirs, paths.gather(mkdirs_ids)]
        if known_directories is not None:
            dir_parts.append(known_directories.cast(pl.String).str.strip_chars_end("/").replace("", "/"))
        in_snapshot: NDArray[np.bool_] | None = None
        if snapshot is not None and snapshot.height:
            snap_paths = snapshot["path"].cast(pl.String).str.strip_chars_end("/").replace("", "/")
            dir_parts.append(snap_paths.filter(snapshot["is_dir"]))
            in_snapshot = paths.is_in(snap_paths.implode()).to_numpy()
        directories = pl.concat([p.cast(pl.String).alias("path") for p in dir_parts]).unique().sort()
        n = paths.len()
        is_dir = paths.is_in(directories.implode()).to_numpy().copy() if n else np.zeros(1, dtype=bool)

        code_pid = np.maximum(ev.code_pid, 0)
        # the kept rows' columns, by the mask (no row number of every kept event)
        time, base = _relative_kept_times(ev.time, ev.keep)  # int32 ms since ``base`` where they fit
        op = ev.op if ev.keep is None else ev.op[ev.keep]
        pid = _gather_codes(code_pid, ev.pcode, ev.keep)
        listed_only = _listed_only(names, op, pid, n) & ~is_dir
        if in_snapshot is not None:
            listed_only &= ~in_snapshot[: listed_only.size]  # the snapshot knows it as a file
        if listed_only.any():
            is_dir |= listed_only
            directories = pl.concat([directories, paths.filter(pl.Series(listed_only[:n]))]).unique().sort()
        ren = np.flatnonzero(op == names.op_index(RENAME))
        # the renames' rows in the event table: the kept rows that are renames
        dst = ev.destinations(ren if ev.keep is None else np.flatnonzero(ev.kept(ev.op == names.op_index(RENAME))))
        flagged = int(is_dir.sum())
        root, last = _rename_roots(pid[ren], dst, is_dir)
        del ev, ren, dst
        # the depth of each path id (string work), on the other core while events are grouped
        depths = pool.submit(lambda: _normalised_depths(paths))
        if int(is_dir.sum()) > flagged:  # directories renamed to paths not known as directories
            directories = _with_renamed_directories(directories, paths, is_dir)
        obj = root[pid]
        touched: NDArray[np.bool_] | None = None
        if in_snapshot is not None:
            touched = np.zeros(max(n, 1), dtype=bool)
            touched[pid] = True
        del pid
        # without the event table: fresh empty columns (a ``[:0]`` view would keep the whole
        # array alive through the table, which holds numpy's buffer)
        events_table = pl.DataFrame({"time_ms": time.astype(np.int64) + base if event_tables else np.empty(0, dtype=np.int64),
                                     "obj": obj if event_tables else np.empty(0, dtype=obj.dtype),
                                     "op": names.op_series(op if event_tables else op[:0])})
        events_of_objects = [time, op, obj]  # handed over: _object_table drops them once grouped
        del time, op, obj
        objects, accesses, unmodelled = _object_table(names, events_of_objects, base, is_dir, in_snapshot, touched,
                                                      (root, last), snapshot, modelled_only, (parent_of, depths),
                                                      object_paths, relative_times)
    return ObjectView(directories=directories, objects=objects, accesses=accesses, commands=names.op_names,
                      events=events_table, unmodelled=unmodelled)


#: commands that only a file takes (a path with one of them is a file)
FILE_ONLY_OPS = ("open", "create", "append", "truncate", "concat", "setReplication")
#: commands that list (a path only ever listed, with no file-only command, is a directory)
LISTING_OPS = ("listStatus", "contentSummary")


def _listed_only(names: _Names, op: NDArray[np.unsignedinteger[Any]], pid: NDArray[np.int32], n: int) -> NDArray[np.bool_]:
    """Per path id: listed (``LISTING_OPS``) and never the path of a file-only command. Without
    a snapshot such a path is a directory: a client lists directories (a leaf directory the
    trace never shows a child of would otherwise pass for a file)."""
    def flagged(ops: tuple[str, ...]) -> NDArray[np.bool_]:
        among = np.zeros(len(names.op_names), dtype=bool)  # a lookup per event: several times faster than np.isin
        among[[names.op_names.index(o) for o in ops if o in names.op_names]] = True
        out = np.zeros(max(n, 1), dtype=bool)
        if among.any():
            out[pid[among[op]]] = True
        return out

    return flagged(LISTING_OPS) & ~flagged(FILE_ONLY_OPS)


def _with_renamed_directories(directories: pl.Series, paths: pl.Series, is_dir: NDArray[np.bool_]) -> pl.Series:
    """``directories`` plus the destinations of directory renames (flagged in ``is_dir``)."""
    flagged = paths.filter(pl.Series(is_dir[: paths.len()]))
    return pl.concat([directories, flagged.alias("path")]).unique().sort()


def _object_table(
    names: _Names,
    events: list[Any],
    base: int,
    is_dir: NDArray[np.bool_],
    in_snapshot: NDArray[np.bool_] | None,
    touched: NDArray[np.bool_] | None,
    renamed: tuple[NDArray[np.int32], NDArray[np.int32]],
    snapshot: pl.DataFrame | None,
    modelled_only: bool,
    per_path: tuple[Future[NDArray[np.int32]], Future[NDArray[np.int16]]],
    object_paths: bool = True,
    relative_times: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """Per-object reductions over dense object ids (numpy) and the access table.

    ``events``: the events' time (ms since ``base``: see ``_relative_kept_times``), operation
    index and object id, in time order; the list is emptied (the caller keeps no other
    reference), so each column goes once grouped.

    Events are grouped by object once (time order kept): an object's first and last events tell
    its creation and deletion, the rest are its accesses. Times are read through the grouping
    order where needed (no grouped copy of every event's time)."""
    time: NDArray[np.signedinteger[Any]] = events.pop(0)
    op: NDArray[np.unsignedinteger[Any]] = events.pop(0)
    obj: NDArray[np.int32] = events.pop(0)
    paths = names.paths
    n = paths.len()
    root, last_pid = renamed
    order = _group_order(obj, time)
    g_obj = obj[order]
    del obj
    g_op = op[order]
    del op
    starts, ends = _group_bounds(g_obj)
    ids = g_obj[starts]  # the objects, ascending
    obj_dir = is_dir[ids]
    first_op, last_op = g_op[starts], g_op[ends]
    fresh = np.ones(ids.size, dtype=bool) if in_snapshot is None else ~in_snapshot[ids]
    created = fresh & np.where(obj_dir, first_op == names.op_index(MKDIRS), first_op == names.op_index(CREATE))
    deleted = (last_op == names.op_index(DELETE)) & ((ends > starts) | ~created)
    del first_op, last_op, fresh
    access = np.ones(g_obj.size, dtype=bool)
    access[starts[created]] = False
    access[ends[deleted]] = False
    # accesses a schedule cannot hold for their object's kind (lookups in tables per operation;
    # the grouped object ids ascend, so the kind's gather reads ``is_dir`` in order)
    ok = modelled_table(names.op_names)
    cannot = access & np.where(is_dir[g_obj], ~ok[:, 1][g_op], ~ok[:, 0][g_op])
    counts = np.bincount(g_op[cannot], minlength=len(names.op_names))
    unmodelled = {names.op_names[i]: int(counts[i]) for i in np.flatnonzero(counts)}
    if modelled_only:
        access &= ~cannot
    del cannot

    # the table's columns are made one after the other, each array dropped once in its column
    def nullable(values: NDArray[np.int64], present: NDArray[np.bool_]) -> pl.Series:
        return pl.Series(values, dtype=pl.Int64).set(pl.Series(~present), None)

    columns: dict[str, pl.Series | NDArray[Any]] = {"obj": ids.astype(np.int32, copy=False), "is_dir": obj_dir}
    if object_paths:
        columns["path"] = paths.gather(ids)
    columns["created_ms"] = nullable(np.where(created, time[order[starts]].astype(np.int64) + base, 0), created)
    columns["deleted_ms"] = nullable(np.where(deleted, time[order[ends]].astype(np.int64) + base, 0), deleted)
    del starts, ends, deleted
    columns["renames"] = np.bincount(g_obj[g_op == names.op_index(RENAME)], minlength=n)[ids].astype(np.int64, copy=False)
    a_obj, a_cmd = g_obj[access], g_op[access]
    del g_obj, g_op
    at = order[access]
    del order, access
    a_time = time[at]
    del time, at
    # per run of accesses (one per accessed object): its object's row among ``ids`` (both ascend)
    a_starts, a_ends = _group_bounds(a_obj)
    a_rows = np.searchsorted(ids, a_obj[a_starts])

    def per_row(values: NDArray[np.integer], rows: NDArray[np.intp] = a_rows) -> NDArray[np.int64]:
        out = np.zeros(ids.size, dtype=np.int64)
        out[rows] = values
        return out

    accessed = np.zeros(ids.size, dtype=bool)
    accessed[a_rows] = True
    columns["first_access_ms"] = nullable(per_row(a_time[a_starts].astype(np.int64) + base), accessed)
    columns["last_access_ms"] = nullable(per_row(a_time[a_ends].astype(np.int64) + base), accessed)
    del accessed
    columns["accesses"] = per_row(a_ends - a_starts + 1)  # grouped: an object's accesses are its run's length
    if a_obj.size:  # the accesses of each command per run, by sums over the runs (no copy per access)
        columns["opens"] = per_row(np.add.reduceat(a_cmd == names.op_index(OPEN), a_starts, dtype=np.int64))
        columns["lists"] = per_row(np.add.reduceat(a_cmd == names.op_index(LIST), a_starts, dtype=np.int64))
    else:
        columns["opens"] = columns["lists"] = np.zeros(ids.size, dtype=np.int64)
    del a_starts, a_ends, a_rows, per_row
    parent_of, depths = per_path  # per path id: its parent's id (-1: not in the trace) and its depth
    columns["depth"] = depths.result()[last_pid[ids]] if n else np.zeros(0, dtype=np.int16)
    columns["children_created"], columns["parent_made"] = _children_created(parent_of.result(), root, ids, created, obj_dir)
    table = pl.DataFrame(columns, schema_overrides={"depth": pl.Int16})
    del columns
    if snapshot is not None and snapshot.height:
        files = snapshot.filter(~pl.col("is_dir")).select(pl.col("path").cast(pl.String))
        # snapshot files that the trace never touches under any name: cold pre-existing files
        touched_paths = paths.filter(pl.Series(touched[:n])) if touched is not None else paths.clear()
        cold = files.join(touched_paths.to_frame("path"), on="path", how="anti").sort("path")
        cold = cold.with_columns(
            pl.int_range(n, n + cold.height, dtype=pl.Int32).alias("obj"),
            pl.lit(False).alias("is_dir"),
            *(pl.lit(None, dtype=pl.Int64).alias(c) for c in ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms")),
            *(pl.lit(0, dtype=pl.Int64).alias(c) for c in ("accesses", "opens", "lists", "renames", "children_created")),
            path_depth(pl.col("path")).alias("depth"),
            pl.lit(False).alias("parent_made"),
        )
        table = pl.concat([table, cold.select(table.columns)])
    if not relative_times and (base or a_time.dtype != np.int64):
        a_time = a_time.astype(np.int64) + base
    access_table = pl.DataFrame({"obj": a_obj, "time_ms": a_time, "cmd": a_cmd},
                                schema={"obj": pl.Int32, "time_ms": pl.Int32 if a_time.dtype == np.int32 else pl.Int64,
                                        "cmd": pl.UInt16 if a_cmd.dtype == np.uint16 else pl.UInt8})
    return table.select("obj", *(c for c in OBJECT_COLUMNS if c in table.columns)), access_table, unmodelled


def _children_created(
    parent_of: NDArray[np.int32],
    root: NDArray[np.int32],
    ids: NDArray[np.int32],
    created: NDArray[np.bool_],
    obj_dir: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Per object (rows of ``ids``): the objects created in the window directly under it, and
    whether it was created under a directory that was itself made in the window (by ``mkdirs``).
    The parents come from ``parent_of`` (each path id's parent's id, found by the texts' hashes)."""
    children = np.zeros(ids.size, dtype=np.int64)
    parent_made = np.zeros(ids.size, dtype=bool)
    made = np.flatnonzero(created)
    if made.size == 0:
        return children, parent_made
    parent_pid = parent_of[ids[made]]
    # row of each parent among the objects (-1: not an object of the trace)
    row_of = np.full(parent_of.size, -1, dtype=np.int64)
    row_of[ids] = np.arange(ids.size)
    parent_row = np.where(parent_pid >= 0, row_of[root[np.maximum(parent_pid, 0)]], -1)
    known = parent_row >= 0
    np.add.at(children, parent_row[known], 1)
    parent_made[made[known]] = created[parent_row[known]] & obj_dir[parent_row[known]]
    return children, parent_made


def restrict_to_subtree(
    events: pl.DataFrame, snapshot: pl.DataFrame | None, prefix: str
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Events whose path lies under ``prefix`` (the directory itself included), and the snapshot's
    entries under it: to model one project's part of a shared namespace."""
    root = prefix.rstrip("/") or "/"
    if root == "/":
        return events, snapshot

    def under(col: str) -> pl.Expr:
        text = pl.col(col).cast(pl.String)
        return (text == root) | text.str.starts_with(root + "/")

    kept = events.filter(under("path"))
    if snapshot is not None:
        snapshot = snapshot.filter(under("path"))
    return kept, snapshot


def object_table(events: pl.DataFrame, snapshot: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per object: ``OBJECT_COLUMNS`` (times nullable Int64, counts Int64, depth Int16)."""
    return build_view(events, snapshot, event_tables=False).objects


def access_gaps(accesses: pl.DataFrame) -> pl.DataFrame:
    """Per-object access interarrivals of an access table (``ObjectView.accesses``, or any table
    with ``obj`` and ``time_ms``): columns ``obj`` and ``gap_ms`` (Int64), grouped by object
    (ascending), in time order within an object."""
    obj = accesses["obj"].cast(pl.Int32).to_numpy()
    times = accesses["time_ms"].to_numpy()
    grouped = obj.size < 2 or bool(np.all(obj[1:] >= obj[:-1]))
    if grouped:  # an access table: grouped already, time order within each object
        same = obj[1:] == obj[:-1]
        if bool(np.all(times[1:][same] >= times[:-1][same])):
            return _gaps_from_grouped(obj, times)
    order = _group_order(obj, times)
    return _gaps_from_grouped(obj[order], times[order])


def access_interarrivals(events: pl.DataFrame) -> np.ndarray:
    """Milliseconds between consecutive accesses of the same object, over all objects."""
    return build_view(events, event_tables=False).gaps["gap_ms"].to_numpy()


def popularity(objects: pl.DataFrame) -> np.ndarray:
    """Object popularity: accesses per object, over the objects accessed at least once."""
    return objects.filter(pl.col("accesses") > 0)["accesses"].to_numpy()
