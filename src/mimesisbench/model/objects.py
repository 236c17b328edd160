"""Per-object features from a canonical event table (the paper's Table 1 quantities per file).

Objects are files. A path is a *directory* if a snapshot says so, if it was ``mkdirs``-ed, or if
it is an ancestor of any other path in the trace; every other path that is created, opened,
listed, deleted or renamed is a file. A file keeps its identity across renames: events on a
rename's destination are attributed to the object of its source (chains followed in time
order), so MapReduce's "write to _temporary, rename to the output directory" keeps the file's
creation time. Only ``allowed=true`` events with a path count (administrative commands such as
``saveNamespace`` log no path and are left out).

Accesses are ``open`` and ``listStatus`` of a file (the paper's open/list mix); ``getfileinfo``
and listings of directories are counted separately in the operation mix.
"""

from __future__ import annotations

from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow.compute as pc
from numpy.typing import NDArray

OPEN = "open"
LIST = "listStatus"
CREATE = "create"
DELETE = "delete"
RENAME = "rename"
MKDIRS = "mkdirs"
GETFILEINFO = "getfileinfo"

#: file-level operations that make a path an object
_FILE_OPS = (CREATE, OPEN, LIST, DELETE, RENAME, "append", GETFILEINFO)
_KNOWN_OPS = (*_FILE_OPS, MKDIRS)

OBJECT_COLUMNS = (
    "path",
    "created_ms",
    "first_access_ms",
    "last_access_ms",
    "deleted_ms",
    "accesses",
    "opens",
    "lists",
    "renames",
    "depth",
)


@dataclass(frozen=True)
class ObjectView:
    """The trace seen per object: classified file events and the set of directories."""

    file_events: pl.DataFrame  # time_ms Int64, obj Int32 (object id), op Enum: allowed events on files
    directories: pl.Series  # String, unique directory paths (no trailing slash; "/" is the root)
    dir_events: pl.DataFrame  # time_ms, path, op: allowed events on directories
    objects: pl.DataFrame  # one row per file: obj (Int32 id) and OBJECT_COLUMNS
    gaps: pl.DataFrame  # per-file access interarrivals: obj, gap_ms (see ``access_gaps``)
    dir_op_counts: dict[str, int]  # allowed events on directories per operation (those of dir_events)


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


def _row_of_each_code(codes: NDArray[np.uint32], rows: NDArray[np.integer], size: int) -> NDArray[np.int64]:
    """``at[code]``: a row holding ``code`` (any one: a code has one text), -1 for absent codes."""
    at = np.full(size, -1, dtype=np.int64)
    at[codes] = rows
    return at


def _event_arrays(events: pl.DataFrame, pool: Executor) -> tuple[_EventArrays, Future[pl.Series]]:
    """Dense path ids for the allowed events with a path.

    Paths go through polars' Categorical codes, so string work happens once per distinct path,
    never per event (a code's text is read from one row holding it). Ids follow a hash of the path
    text, so they do not depend on the order in which a parser met the paths (and profiles are
    reproducible). Also returns the ancestors of the paths, computed by ``pool`` meanwhile.
    """
    op_col, path_col, dst_col = (_categorical(events[c]) for c in ("op", "path", "dst"))
    allowed = events["allowed"]
    keep: NDArray[np.bool_] | None = None
    if allowed.null_count() or not allowed.all() or path_col.null_count() or op_col.null_count():
        keep = allowed.fill_null(False).to_numpy() & path_col.is_not_null().to_numpy() & op_col.is_not_null().to_numpy()
    n_rows = events.height
    row_dtype: type[np.signedinteger[Any]] = np.int32 if n_rows < 2**31 else np.int64
    all_rows = np.arange(n_rows, dtype=row_dtype)

    # operations (of every event, as before filtering): codes -> index of the name in op_names.
    # A null's code (0, see ``_codes``) may be a real operation's too: texts are read from rows
    # holding a real operation only.
    op_codes = _codes(op_col, None)
    op_size = int(op_codes.max(initial=0)) + 1
    if op_col.null_count():
        op_rows = np.flatnonzero(op_col.is_not_null().to_numpy())
        op_at = _row_of_each_code(op_codes[op_rows], op_rows, op_size)
    else:
        op_at = _row_of_each_code(op_codes, all_rows, op_size)
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
    if keep is None:
        at_path = _row_of_each_code(all_pcodes, all_rows, size)
    else:
        kept_rows = np.flatnonzero(keep)
        at_path = _row_of_each_code(all_pcodes[kept_rows], kept_rows, size)
        del kept_rows
    del all_rows
    at_dst = _row_of_each_code(dcodes, dst_rows, size)
    codes = np.flatnonzero((at_path >= 0) | (at_dst >= 0))
    from_path = at_path[codes] >= 0
    raw = pl.concat([path_col.gather(at_path[codes[from_path]]), dst_col.gather(at_dst[codes[~from_path]])]).cast(pl.String)
    if not from_path.all():  # put the texts in code order
        raw = raw.gather(np.argsort(np.concatenate([codes[from_path], codes[~from_path]]), kind="stable"))
    suspicious = (raw.str.ends_with("/") & (raw != "/")) | (raw == "")
    norm = raw.str.strip_chars_end("/").replace("", "/") if suspicious.any() else raw
    ancestors = pool.submit(_ancestors, norm)  # string work on another core while ids are made
    order = np.argsort(norm.hash(seed=0x4D42).to_numpy(), kind="stable")
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
    arrays = _EventArrays(time=time, op=op, pcode=all_pcodes, code_pid=lut, keep=keep, dst_at=dst_rows, did=lut[dcodes],
                          names=_Names(op_names=op_names, paths=paths.alias("path")))
    return arrays, ancestors


def _rename_roots(src: NDArray[np.int32], dst: NDArray[np.int32], n_paths: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """``root[pid]``: the object id a path continues (renames' destinations map to their source's
    root, chains followed in time order) and ``last[obj]``: the path id an object ends at.
    Renames are rare next to accesses, so a walk over them is cheap."""
    root = np.arange(n_paths, dtype=np.int32)
    last = np.arange(n_paths, dtype=np.int32)
    for s, d in zip(src.tolist(), dst.tolist()):
        if d >= 0:
            obj = root[s]
            root[d] = obj
            last[obj] = d
    return root, last


def _group_order(keys: NDArray[np.int32], times: NDArray[np.int64]) -> NDArray[np.integer]:
    """The order that groups ``keys`` (ascending), time order kept within a key (ties: input
    order). Events come in time order (the event table's contract), so a stable sort by key
    suffices: done as two passes of numpy's radix sort on 16-bit digits, several times faster
    than a comparison sort of 32-bit keys."""
    if times.size > 1 and not np.all(times[1:] >= times[:-1]):
        return np.lexsort((times, keys))
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = (keys >> 16).astype(np.uint16)  # ids are below 2**31 and not negative
    if high.size and int(high.max()) > 0:
        if order.size < 2**31:
            order = order.astype(np.int32)  # half the memory of an intp order
        order = order[np.argsort(high[order], kind="stable")]
    return order


def _gaps_from_grouped(obj: NDArray[np.int32], times: NDArray[np.int64]) -> pl.DataFrame:
    same = obj[1:] == obj[:-1]
    return pl.DataFrame({"obj": obj[1:][same], "gap_ms": np.diff(times)[same]},
                        schema={"obj": pl.Int32, "gap_ms": pl.Int64})


def build_view(events: pl.DataFrame, snapshot: pl.DataFrame | None = None, *, event_tables: bool = True) -> ObjectView:
    """Classify paths, follow renames and compute the per-object table.

    ``event_tables=False`` leaves ``ObjectView.file_events`` and ``dir_events`` empty (their
    columns, no rows): a caller that needs only the objects, gaps and counts (the fit) then does
    not keep tables of most events alive beside them."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        ev, ancestors = _event_arrays(events, pool)
        names = ev.names
        paths = names.paths
        mkdirs_ids = np.unique(ev.code_pid[ev.pcode[ev.kept(ev.op == names.op_index(MKDIRS))]])
        dir_parts = [ancestors.result(), paths.gather(mkdirs_ids)]
    if snapshot is not None and snapshot.height:
        dir_parts.append(snapshot.filter(pl.col("is_dir"))["path"].cast(pl.String).str.strip_chars_end("/").replace("", "/"))
    directories = pl.concat([p.cast(pl.String).alias("path") for p in dir_parts]).unique().sort()
    # (without any kept path, one entry for the code -1 clamped to 0 below: no row reads it)
    is_dir = paths.is_in(directories.implode()).to_numpy() if paths.len() else np.zeros(1, dtype=bool)

    # per-event lookups go through tables per Categorical code (one gather per event, not two)
    code_pid = np.maximum(ev.code_pid, 0)
    on_dir = ev.kept(is_dir[code_pid][ev.pcode])
    dir_time, dir_pid, dir_op = ev.time[on_dir], code_pid[ev.pcode[on_dir]], ev.op[on_dir]
    file_op = np.zeros(len(names.op_names), dtype=bool)
    file_op[[names.op_index(o) for o in _FILE_OPS]] = True
    on_file = ev.kept(~on_dir & file_op[ev.op])
    del on_dir
    time, op, pcode = ev.time[on_file], ev.op[on_file], ev.pcode[on_file]
    renames = np.flatnonzero(on_file & (ev.op == names.op_index(RENAME)))
    del on_file
    root, last = _rename_roots(code_pid[ev.pcode[renames]], ev.destinations(renames), paths.len())
    del ev  # the event-sized columns: from here on only the file events' own
    pid = code_pid[pcode]
    del pcode
    obj = root[pid]
    # the path ids the file events name (for the snapshot's cold files), as a mask over ids
    touched: NDArray[np.bool_] | None = None
    if snapshot is not None and snapshot.height:
        touched = np.zeros(paths.len(), dtype=bool)
        touched[pid] = True
    del pid

    op_counts = np.bincount(dir_op, minlength=len(names.op_names))
    dir_op_counts = {names.op_names[i]: int(op_counts[i]) for i in np.flatnonzero(op_counts)}
    if not event_tables:
        dir_time, dir_pid, dir_op = (np.empty(0, dtype=a.dtype) for a in (dir_time, dir_pid, dir_op))

    with ThreadPoolExecutor(max_workers=1) as pool:
        dir_events = pool.submit(
            lambda: pl.DataFrame({"time_ms": dir_time, "path": paths.gather(dir_pid), "op": names.op_series(dir_op)})
        )
        objects, gaps = _object_table(names, time, op, obj, touched, last, snapshot, pool)
        dir_events_table = dir_events.result()
    if not event_tables:
        time, obj, op = (np.empty(0, dtype=a.dtype) for a in (time, obj, op))  # not views: the arrays are freed
    return ObjectView(
        file_events=pl.DataFrame({"time_ms": time, "obj": obj, "op": names.op_series(op)}),
        directories=directories,
        dir_events=dir_events_table,
        objects=objects,
        gaps=gaps,
        dir_op_counts=dir_op_counts,
    )


def _object_table(
    names: _Names,
    time: NDArray[np.int64],
    op: NDArray[np.uint8],
    obj: NDArray[np.int32],
    touched: NDArray[np.bool_] | None,
    last_pid: NDArray[np.int32],
    snapshot: pl.DataFrame | None,
    pool: Executor,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-object reductions over dense object ids (numpy), and the per-file access gaps.

    Accesses are grouped by object once (time order kept): first and last access are the ends of
    each group and the gaps its differences; creations and deletions are few, reduced in place."""
    paths = names.paths
    n = paths.len()
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    is_open, is_list = op == names.op_index(OPEN), op == names.op_index(LIST)
    is_access = is_open | is_list
    present = np.zeros(n, dtype=bool)
    present[obj] = True
    ids = np.flatnonzero(present)
    depth = pool.submit(lambda: _normalised_depths(paths.gather(last_pid[ids])))  # meanwhile: string work
    acc_obj, acc_time = obj[is_access], time[is_access]
    order = _group_order(acc_obj, acc_time)
    acc_obj, acc_time = acc_obj[order], acc_time[order]
    del order
    gaps = _gaps_from_grouped(acc_obj, acc_time)
    first_access = np.full(n, big, dtype=np.int64)
    last_access = np.full(n, small, dtype=np.int64)
    if acc_obj.size:
        starts = np.flatnonzero(np.concatenate(([True], acc_obj[1:] != acc_obj[:-1])))
        ends = np.append(starts[1:] - 1, acc_obj.size - 1)
        first_access[acc_obj[starts]] = acc_time[starts]
        last_access[acc_obj[ends]] = acc_time[ends]
    accesses = np.bincount(acc_obj, minlength=n)[ids].astype(np.int64)
    del acc_obj, acc_time, is_access

    def reduce(name: str, ufunc: np.ufunc, fill: int) -> NDArray[np.int64]:
        mask = op == names.op_index(name)
        out = np.full(n, fill, dtype=np.int64)
        ufunc.at(out, obj[mask], time[mask])
        return out

    def nullable(values: NDArray[np.int64], fill: int) -> pl.Series:
        picked = values[ids]
        return pl.Series(picked).set(pl.Series(picked == fill), None)

    def count(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
        return np.bincount(obj[mask], minlength=n)[ids].astype(np.int64)

    opens = count(is_open)
    table = pl.DataFrame(
        {
            "obj": ids.astype(np.int32),
            "path": paths.gather(ids),
            "created_ms": nullable(reduce(CREATE, np.minimum, big), big),
            "first_access_ms": nullable(first_access, big),
            "last_access_ms": nullable(last_access, small),
            "deleted_ms": nullable(reduce(DELETE, np.maximum, small), small),
            "accesses": accesses,
            "opens": opens,
            "lists": accesses - opens,
            "renames": count(op == names.op_index(RENAME)),
            "depth": depth.result(),
        },
        schema_overrides={
            **{c: pl.Int64 for c in ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms")},
            "depth": pl.Int16,
        },
    )
    if snapshot is not None and snapshot.height:
        files = snapshot.filter(~pl.col("is_dir")).select(pl.col("path").cast(pl.String))
        # snapshot files that the trace never touches under any name: cold pre-existing files
        touched_paths = paths.filter(pl.Series(touched)).to_frame("path") if touched is not None else paths.clear().to_frame("path")
        cold = files.join(touched_paths, on="path", how="anti").sort("path")
        cold = cold.with_columns(
            pl.int_range(n, n + cold.height, dtype=pl.Int32).alias("obj"),
            *(pl.lit(None, dtype=pl.Int64).alias(c) for c in ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms")),
            *(pl.lit(0, dtype=pl.Int64).alias(c) for c in ("accesses", "opens", "lists", "renames")),
            path_depth(pl.col("path")).alias("depth"),
        )
        table = pl.concat([table, cold.select(table.columns)])
    return table.select("obj", *OBJECT_COLUMNS), gaps


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
    """One row per file: ``OBJECT_COLUMNS`` (times nullable Int64, counts Int64, depth Int16)."""
    return build_view(events, snapshot, event_tables=False).objects


def access_gaps(file_events: pl.DataFrame) -> pl.DataFrame:
    """Per-file access interarrivals: columns ``obj`` (object id) and ``gap_ms`` (Int64), grouped by
    object (ascending), in time order within an object."""
    acc = file_events.filter(pl.col("op").is_in([OPEN, LIST]))
    obj = acc["obj"].cast(pl.Int32).to_numpy()
    times = acc["time_ms"].to_numpy()
    order = _group_order(obj, times)
    return _gaps_from_grouped(obj[order], times[order])


def access_interarrivals(events: pl.DataFrame) -> np.ndarray:
    """Milliseconds between consecutive accesses of the same file, over all files."""
    return build_view(events, event_tables=False).gaps["gap_ms"].to_numpy()


def popularity(objects: pl.DataFrame) -> np.ndarray:
    """File popularity: accesses per file, over the files accessed at least once."""
    return objects.filter(pl.col("accesses") > 0)["accesses"].to_numpy()
