"""Namespace generation: a directory tree, its split among file types, and file placement.

Directories are numpy arrays indexed by ``dir_id`` (0 is the root ``/``), ordered by depth and,
within a depth, by parent, so that the directories of one depth that belong to one type form a
contiguous id range ("each type lives in its own part of the tree"). Files never become Python
objects: placement returns one ``dir_id`` per file id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench.errors import ProfileError
from mimesisbench.profile.schema import NamespaceShape

I32 = NDArray[np.int32]


@dataclass(frozen=True)
class Namespace:
    """A directory tree: ``parent[i]``, ``depth[i]``, ``dtype[i]`` (owning type, 0 shared), ``paths``."""

    parent: I32
    depth: NDArray[np.int16]
    dtype: NDArray[np.int16]
    paths: pl.Series

    @property
    def size(self) -> int:
        return int(self.parent.size)

    def dirs_per_depth(self) -> list[int]:
        return np.bincount(self.depth.astype(np.int64)).tolist()

    def with_types(self, dtype: NDArray[np.int16]) -> Namespace:
        return Namespace(self.parent, self.depth, dtype, self.paths)


def largest_remainder(total: int, shares: NDArray[np.float64]) -> NDArray[np.int64]:
    """Integers proportional to ``shares`` summing to ``total`` (Hamilton's method, ties by index)."""
    shares = np.asarray(shares, dtype=np.float64)
    if total <= 0 or shares.size == 0:
        return np.zeros(shares.size, dtype=np.int64)
    s = shares.sum()
    if s <= 0:
        shares = np.ones_like(shares)
        s = float(shares.size)
    exact = shares * (total / s)
    base = np.floor(exact).astype(np.int64)
    left = int(total - base.sum())
    if left > 0:
        order = np.argsort(-(exact - base), kind="stable")
        base[order[:left]] += 1
    return base


# ---------------------------------------------------------------------------- building trees
def flat_tree() -> Namespace:
    """The root only: flat mode puts every file in ``/``."""
    return Namespace(
        parent=np.array([-1], dtype=np.int32),
        depth=np.array([0], dtype=np.int16),
        dtype=np.array([0], dtype=np.int16),
        paths=pl.Series("path", ["/"], dtype=pl.String),
    )


def _children_counts(parents: int, children: int, draws: NDArray[np.float64]) -> NDArray[np.int64]:
    """Split ``children`` among ``parents`` in proportion to drawn subdirectory counts."""
    weights = np.maximum(draws[:parents], 0.0)
    if weights.sum() <= 0:
        weights = np.ones(parents)
    return largest_remainder(children, weights)


def synthetic_tree(shape: NamespaceShape, rng: np.random.Generator) -> Namespace:
    """A tree with ``shape.dirs_per_depth`` directories per depth (or ``shape.directories`` in all)
    whose subdirectories per directory follow ``shape.subdirs_per_dir``."""
    per_depth = list(shape.dirs_per_depth)
    if not per_depth:
        per_depth = _grow_levels(max(shape.directories, 1), shape, rng)
    if per_depth[0] != 1:
        raise ProfileError(f"namespace.dirs_per_depth: depth 0 must hold exactly the root, not {per_depth[0]}")
    parents: list[I32] = [np.array([-1], dtype=np.int32)]
    first_id = 0
    for d in range(1, len(per_depth)):
        n_parents, n_children = per_depth[d - 1], per_depth[d]
        if n_children and not n_parents:
            raise ProfileError(f"namespace.dirs_per_depth: depth {d} has directories but depth {d - 1} has none")
        if shape.subdirs_per_dir is not None:
            draws = shape.subdirs_per_dir.sample(rng, n_parents)
        else:
            draws = np.ones(n_parents)
        counts = _children_counts(n_parents, n_children, draws)
        parent_ids = np.arange(first_id, first_id + n_parents, dtype=np.int32)
        parents.append(np.repeat(parent_ids, counts).astype(np.int32))
        first_id += n_parents
    parent = np.concatenate(parents)
    depth = np.repeat(np.arange(len(per_depth), dtype=np.int16), per_depth)
    return Namespace(parent, depth, np.zeros(parent.size, dtype=np.int16), _synthetic_paths(parent, depth))


def _grow_levels(total: int, shape: NamespaceShape, rng: np.random.Generator) -> list[int]:
    """Directories per depth when a profile gives only a total: grow level by level."""
    levels = [1]
    left = total - 1
    while left > 0:
        if shape.subdirs_per_dir is not None:
            k = np.rint(shape.subdirs_per_dir.sample(rng, levels[-1])).astype(np.int64)
            nxt = int(max(k.sum(), 1))
        else:
            nxt = left
        nxt = min(nxt, left)
        levels.append(nxt)
        left -= nxt
    return levels


def _synthetic_paths(parent: I32, depth: NDArray[np.int16]) -> pl.Series:
    """``/d<id>`` names, built one depth at a time with vectorised string concatenation."""
    paths = np.empty(parent.size, dtype=object)
    paths[0] = ""
    max_depth = int(depth.max()) if depth.size else 0
    for d in range(1, max_depth + 1):
        ids = np.flatnonzero(depth == d)
        frame = pl.DataFrame({"p": pl.Series(paths[parent[ids]].tolist(), dtype=pl.String), "i": ids})
        level = frame.select(pl.concat_str([pl.col("p"), pl.lit("/d"), pl.col("i").cast(pl.String)]))
        paths[ids] = np.array(level.to_series().to_list(), dtype=object)
    paths[0] = "/"
    return pl.Series("path", paths.tolist(), dtype=pl.String)


#: a directory path with an empty, ``.`` or ``..`` component, or a NUL
_UNSAFE_PATH = r"//|(^|/)\.\.?(/|$)|\x00"


def tree_from_paths(lines: Iterable[str] | pl.Series, origin: str = "namespace.tree_file") -> Namespace:
    """An explicit tree from directory paths (``/a/b/`` or ``/a/b``); missing parents are added.

    A path with an empty (``/a//b``), ``.`` or ``..`` component or a NUL is refused
    (``ProfileError`` naming ``origin`` and the line): it would name a directory outside the
    run's base directory, or another one than it says."""
    raw = lines if isinstance(lines, pl.Series) else pl.Series("path", list(lines), dtype=pl.String)
    norm = raw.cast(pl.String).str.strip_chars().str.strip_chars_end("/")
    unsafe = norm.str.contains(_UNSAFE_PATH).fill_null(True)
    if unsafe.any():
        line = int(unsafe.arg_max() or 0)
        entry = raw[line]
        raise ProfileError(
            f"{origin}: entry {line + 1} ({entry!r:.80}) has an empty, '.' or '..' component or a NUL; "
            "directory paths must be plain"
        )
    norm = norm.filter(norm.str.len_chars() > 0)
    norm = pl.select(
        pl.when(norm.str.starts_with("/")).then(norm).otherwise(pl.lit("/") + norm)
    ).to_series()
    all_paths = norm.unique(maintain_order=True)
    frontier = all_paths
    while frontier.len() > 0:  # close under parents, one level per round
        parents = frontier.str.replace(r"/[^/]*$", "").unique(maintain_order=True)
        parents = parents.filter(parents != "")
        missing = parents.filter(~parents.is_in(all_paths.implode()))
        all_paths = pl.concat([all_paths, missing])
        frontier = missing
    table = pl.DataFrame({"path": all_paths}).with_columns(
        depth=pl.col("path").str.count_matches("/").cast(pl.Int16),
        parent_path=pl.col("path").str.replace(r"/[^/]*$", ""),
    )
    # ids by depth, then parent id, then name: siblings contiguous, subtrees follow their parents
    levels = [pl.DataFrame({"path": [""], "dir_id": pl.Series([0], dtype=pl.Int32), "parent_id": [-1]})]
    next_id = 1
    max_depth = int(cast("int | None", table.get_column("depth").max()) or 0)
    for d in range(1, max_depth + 1):
        prev = levels[-1].select(pl.col("path").alias("parent_path"), pl.col("dir_id").alias("parent_id"))
        level = (
            table.filter(pl.col("depth") == d)
            .join(prev, on="parent_path", how="left")
            .sort(["parent_id", "path"])
            .select("path", pl.int_range(next_id, next_id + pl.len(), dtype=pl.Int32).alias("dir_id"), "parent_id")
        )
        next_id += level.height
        levels.append(level)
    full = pl.concat(levels, how="vertical_relaxed")
    parent = full.get_column("parent_id").cast(pl.Int32).to_numpy().astype(np.int32)
    depth = np.repeat(np.arange(len(levels), dtype=np.int16), [lv.height for lv in levels])
    paths = pl.concat([pl.Series("path", ["/"]), full.get_column("path").slice(1)])
    return Namespace(parent, depth, np.zeros(parent.size, dtype=np.int16), paths)


def read_tree_file(path: str | Path) -> Namespace:
    """An explicit tree from a file listing one directory per line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"namespace.tree_file: cannot read {path}: {exc.strerror}") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ProfileError(f"namespace.tree_file: {path} lists no directory")
    return tree_from_paths(lines, f"namespace.tree_file {path}")


# ---------------------------------------------------------------------------- types and files
def assign_types(ns: Namespace, shares: Mapping[int, float]) -> Namespace:
    """Split the directories of every depth >= 1 among types in proportion to ``shares``.

    Each type gets a contiguous block of each depth (ordered by parent, so a type's directories
    tend to sit under its own directories of the depth above); every type with a positive share
    gets at least one directory of a depth when the depth has enough directories.
    """
    type_ids = np.array(sorted(shares), dtype=np.int16)
    weights = np.array([shares[int(t)] for t in type_ids], dtype=np.float64)
    dtype = np.zeros(ns.size, dtype=np.int16)
    positive = weights > 0
    for d in range(1, int(ns.depth.max(initial=0)) + 1):
        ids = np.flatnonzero(ns.depth == d)
        counts = largest_remainder(ids.size, weights)
        if ids.size >= int(positive.sum()):
            counts = _at_least_one(counts, positive)
        else:
            counts = np.zeros_like(counts)
            counts[np.flatnonzero(positive)[: ids.size]] = 1
        dtype[ids[: int(counts.sum())]] = np.repeat(type_ids, counts)
    return ns.with_types(dtype)


def _at_least_one(counts: NDArray[np.int64], positive: NDArray[np.bool_]) -> NDArray[np.int64]:
    counts = counts.copy()
    for i in np.flatnonzero(positive & (counts == 0)):
        donor = int(np.argmax(counts))
        counts[donor] -= 1
        counts[i] += 1
    return counts


def prune(ns: Namespace, used: NDArray[np.integer]) -> tuple[Namespace, I32]:
    """The directories in ``used``, their ancestors and the root, in their order (so depths and
    parents stay ordered as ``Namespace`` requires); and the map from old ids to new (-1: dropped).

    Used when only some types are kept (``--types``) or fewer files are made: a 30-second run of
    two Yahoo types would otherwise build all of the tree's 112,792 directories in phase 1.
    """
    keep = np.zeros(ns.size, dtype=bool)
    keep[0] = True
    frontier = np.unique(np.asarray(used, dtype=np.int64))
    while frontier.size:
        fresh = frontier[~keep[frontier]]
        keep[fresh] = True
        parents = ns.parent[fresh].astype(np.int64)
        frontier = np.unique(parents[parents >= 0])
    kept = np.flatnonzero(keep)
    new_id = np.full(ns.size, -1, dtype=np.int32)
    new_id[kept] = np.arange(kept.size, dtype=np.int32)
    old_parent = ns.parent[kept]
    parent = np.where(old_parent >= 0, new_id[np.maximum(old_parent, 0)], -1).astype(np.int32)
    pruned = Namespace(parent, ns.depth[kept], ns.dtype[kept], ns.paths.gather(pl.Series(kept)))
    return pruned, new_id


def depth_shares(shape: NamespaceShape, ns: Namespace) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """File depths and their shares, deeper depths than the tree allows folded into the deepest."""
    max_file_depth = int(ns.depth.max(initial=0)) + 1
    if not shape.files_at_depth:
        return np.array([max_file_depth], dtype=np.int64), np.array([1.0])
    acc: dict[int, float] = {}
    for depth, share in shape.files_at_depth.items():
        d = min(int(depth), max_file_depth)
        acc[d] = acc.get(d, 0.0) + float(share)
    depths = np.array(sorted(acc), dtype=np.int64)
    return depths, np.array([acc[int(d)] for d in depths], dtype=np.float64)


class DirIndex:
    """For each (depth, type): the directories a file may go to (built once per namespace)."""

    def __init__(self, ns: Namespace) -> None:
        self._ns = ns
        self._cache: dict[tuple[int, int], I32] = {}
        self._present = set(np.unique(ns.depth).tolist())

    def owned(self, depth: int, type_id: int) -> I32:
        """Directories of ``depth`` owned by ``type_id`` (any of that depth when it owns none;
        the deepest non-empty depth above when ``depth`` is empty)."""
        while depth > 0 and depth not in self._present:
            depth -= 1
        key = (depth, type_id)
        if key not in self._cache:
            at_depth = self._ns.depth == depth
            found = np.flatnonzero(at_depth & (self._ns.dtype == type_id))
            if found.size == 0:
                found = np.flatnonzero(at_depth)
            self._cache[key] = found.astype(np.int32)
        return self._cache[key]


def place_files(
    index: DirIndex,
    type_id: int,
    count: int,
    depths: NDArray[np.int64],
    shares: NDArray[np.float64],
    rng: np.random.Generator,
) -> I32:
    """A directory for each of ``count`` files of one type, depths in proportion to ``shares``.

    A file at depth ``d`` sits in a directory of depth ``d - 1`` owned by the type (see
    ``DirIndex.owned``). Depth counts are rounded by largest remainder, then the files are
    shuffled so that depth does not follow file id.
    """
    per_depth = largest_remainder(count, shares)
    parts = []
    for depth, k in zip(depths.tolist(), per_depth.tolist()):
        if k:
            candidates = index.owned(depth - 1, type_id)
            parts.append(candidates[rng.integers(0, candidates.size, size=k)])
    if not parts:
        return np.empty(0, dtype=np.int32)
    out = np.concatenate(parts)
    rng.shuffle(out)
    return out
