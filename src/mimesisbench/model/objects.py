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

from dataclasses import dataclass

import numpy as np
import polars as pl

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

    file_events: pl.DataFrame  # time_ms Int64, obj Int32 (object id), op String: allowed events on files
    directories: pl.Series  # String, unique directory paths (no trailing slash; "/" is the root)
    dir_events: pl.DataFrame  # time_ms, path, op: allowed events on directories
    objects: pl.DataFrame  # one row per file: obj (Int32 id) and OBJECT_COLUMNS


def path_depth(paths: pl.Expr) -> pl.Expr:
    """Depth of a path: "/" is 0, "/a" is 1, "/a/b" is 2."""
    stripped = paths.str.strip_chars_end("/")
    return pl.when(stripped == "").then(0).otherwise(stripped.str.count_matches("/")).cast(pl.Int16)


def ancestor_directories(paths: pl.Series) -> pl.Series:
    """Every proper ancestor directory of the given paths (unique), root included."""
    seen: list[pl.Series] = []
    current = paths.cast(pl.String).unique()
    while current.len() > 0:
        parents = current.str.replace(r"/[^/]*$", "").replace("", "/").unique()
        seen.append(parents)
        current = parents.filter(parents != "/")
    if not seen:
        return pl.Series("path", [], dtype=pl.String)
    return pl.concat(seen).unique().alias("path")


def _path_ids(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Events with integer ``pid``/``did`` (path/destination ids) and the distinct paths.

    Paths go through polars' Categorical codes, so string work happens once per distinct path,
    never per event. Ids follow a hash of the path text, so they do not depend on the order in
    which a parser met the paths (and profiles are reproducible).
    """
    op_names = events["op"].cast(pl.Categorical).unique().cast(pl.String).to_list()
    op_dtype = pl.Enum(sorted(set(op_names) | set(_KNOWN_OPS)))
    usable = events["allowed"].all() and events["path"].null_count() == 0
    ev = (events if usable else events.filter(pl.col("allowed") & pl.col("path").is_not_null())).select(
        pl.col("time_ms").cast(pl.Int64),
        pl.col("op").cast(op_dtype),
        pl.col("path").cast(pl.Categorical),
        pl.col("dst").cast(pl.Categorical),
    )
    distinct = pl.concat([ev["path"].unique(), ev["dst"].drop_nulls().unique()])
    codes, first = np.unique(distinct.to_physical().to_numpy(), return_index=True)
    raw = distinct.cast(pl.String).gather(first)
    norm = raw.str.strip_chars_end("/").replace("", "/")
    order = np.argsort(norm.hash(seed=0x4D42).to_numpy(), kind="stable")
    ranked = norm.gather(order)
    if ranked.n_unique() == ranked.len():
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
    lut = np.full(int(codes.max()) + 1 if codes.size else 1, -1, dtype=np.int32)
    lut[codes] = dense
    pid = lut[ev["path"].to_physical().to_numpy()]
    dst_codes = ev["dst"].to_physical()
    did = pl.Series("did", lut[dst_codes.fill_null(0).to_numpy()]).set(dst_codes.is_null(), None)
    return ev.select("time_ms", "op").with_columns(pl.Series("pid", pid), did), paths.alias("path")


def _rename_roots(renames: pl.DataFrame, n_paths: int) -> tuple[np.ndarray, np.ndarray]:
    """``root[pid]``: the object id a path continues (renames' destinations map to their source's
    root, chains followed in time order) and ``last[obj]``: the path id an object ends at.
    Renames are rare next to accesses, so a walk over them is cheap."""
    root = np.arange(n_paths, dtype=np.int32)
    last = np.arange(n_paths, dtype=np.int32)
    for src, dst in zip(renames["pid"].to_list(), renames["did"].to_list()):
        if dst is not None:
            obj = root[src]
            root[dst] = obj
            last[obj] = dst
    return root, last


def build_view(events: pl.DataFrame, snapshot: pl.DataFrame | None = None) -> ObjectView:
    """Classify paths, follow renames and compute the per-object table."""
    ev, paths = _path_ids(events)
    mkdirs_ids = np.unique(ev.filter(pl.col("op") == MKDIRS)["pid"].to_numpy())
    dir_parts = [ancestor_directories(paths), paths.gather(mkdirs_ids)]
    if snapshot is not None and snapshot.height:
        dir_parts.append(snapshot.filter(pl.col("is_dir"))["path"].cast(pl.String).str.strip_chars_end("/").replace("", "/"))
    directories = pl.concat([p.cast(pl.String).alias("path") for p in dir_parts]).unique().sort()
    is_dir = paths.is_in(directories.implode()).to_numpy()

    on_dir = pl.Series(is_dir[ev["pid"].to_numpy()])
    dir_ev = ev.filter(on_dir)
    dir_events = pl.DataFrame({"time_ms": dir_ev["time_ms"], "path": paths.gather(dir_ev["pid"]), "op": dir_ev["op"]})
    file_ev = ev.filter(~on_dir & pl.col("op").is_in(_FILE_OPS))
    root, last = _rename_roots(file_ev.filter(pl.col("op") == RENAME), paths.len())
    file_ev = file_ev.with_columns(pl.Series("obj", root[file_ev["pid"].to_numpy()]))

    objects = _object_table(file_ev, paths, last, snapshot)
    return ObjectView(
        file_events=file_ev.select("time_ms", "obj", "op"),
        directories=directories,
        dir_events=dir_events,
        objects=objects,
    )


def _object_table(
    file_ev: pl.DataFrame, paths: pl.Series, last_pid: np.ndarray, snapshot: pl.DataFrame | None
) -> pl.DataFrame:
    """Per-object reductions with numpy scatter operations over dense object ids."""
    n = paths.len()
    obj = file_ev["obj"].to_numpy()
    time = file_ev["time_ms"].to_numpy()
    op_codes = file_ev["op"].to_physical().to_numpy()
    categories = list(file_ev.schema["op"].categories)  # type: ignore[attr-defined]
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min

    def masked(name: str) -> np.ndarray:
        return op_codes == categories.index(name)

    def reduce(mask: np.ndarray, ufunc: np.ufunc, fill: int) -> np.ndarray:
        out = np.full(n, fill, dtype=np.int64)
        ufunc.at(out, obj[mask], time[mask])
        return out

    is_create, is_delete, is_open, is_list, is_rename = (
        masked(CREATE), masked(DELETE), masked(OPEN), masked(LIST), masked(RENAME)
    )
    is_access = is_open | is_list
    present = np.zeros(n, dtype=bool)
    present[obj] = True
    ids = np.flatnonzero(present)

    def nullable(values: np.ndarray, fill: int) -> pl.Series:
        picked = values[ids]
        return pl.Series(picked).set(pl.Series(picked == fill), None)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(obj[mask], minlength=n)[ids].astype(np.int64)

    table = pl.DataFrame(
        {
            "obj": ids.astype(np.int32),
            "path": paths.gather(ids),
            "created_ms": nullable(reduce(is_create, np.minimum, big), big),
            "first_access_ms": nullable(reduce(is_access, np.minimum, big), big),
            "last_access_ms": nullable(reduce(is_access, np.maximum, small), small),
            "deleted_ms": nullable(reduce(is_delete, np.maximum, small), small),
            "accesses": count(is_access),
            "opens": count(is_open),
            "lists": count(is_list),
            "renames": count(is_rename),
            "_last_path": paths.gather(last_pid[ids]),
        },
        schema_overrides={c: pl.Int64 for c in ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms")},
    )
    if snapshot is not None and snapshot.height:
        files = snapshot.filter(~pl.col("is_dir")).select(pl.col("path").cast(pl.String))
        # snapshot files that the trace never touches under any name: cold pre-existing files
        touched = paths.gather(np.unique(file_ev["pid"].to_numpy())).to_frame("path")
        cold = files.join(touched, on="path", how="anti").sort("path")
        cold = cold.with_columns(
            pl.int_range(n, n + cold.height, dtype=pl.Int32).alias("obj"),
            *(pl.lit(None, dtype=pl.Int64).alias(c) for c in ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms")),
            *(pl.lit(0, dtype=pl.Int64).alias(c) for c in ("accesses", "opens", "lists", "renames")),
            pl.col("path").alias("_last_path"),
        )
        table = pl.concat([table, cold.select(table.columns)])
    return table.with_columns(path_depth(pl.col("_last_path")).alias("depth")).select("obj", *OBJECT_COLUMNS)


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
    return build_view(events, snapshot).objects


def access_gaps(file_events: pl.DataFrame) -> pl.DataFrame:
    """Per-file access interarrivals: columns ``obj`` (object id) and ``gap_ms`` (Int64)."""
    acc = file_events.filter(pl.col("op").is_in([OPEN, LIST]))
    obj = acc["obj"].to_numpy()
    times = acc["time_ms"].to_numpy()
    # events are in time order (the event table's contract), so a stable sort by object suffices
    order = np.argsort(obj, kind="stable") if np.all(times[1:] >= times[:-1]) else np.lexsort((times, obj))
    obj, times = obj[order], times[order]
    same = obj[1:] == obj[:-1]
    return pl.DataFrame({"obj": obj[1:][same], "gap_ms": np.diff(times)[same]},
                        schema={"obj": pl.Int32, "gap_ms": pl.Int64})


def access_interarrivals(events: pl.DataFrame) -> np.ndarray:
    """Milliseconds between consecutive accesses of the same file, over all files."""
    return access_gaps(build_view(events).file_events)["gap_ms"].to_numpy()


def popularity(objects: pl.DataFrame) -> np.ndarray:
    """File popularity: accesses per file, over the files accessed at least once."""
    return objects.filter(pl.col("accesses") > 0)["accesses"].to_numpy()
