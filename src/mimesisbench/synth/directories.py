"""Directory types, files in created directories, and pathless commands (format 2).

* Directory types' objects (``directory_objects``): the pre-existing objects of a *stable* type
  (no ``rename`` or ``delete`` in its chain, delete_share 0) are directories of the tree, chosen
  at random; those of a *volatile* type are extra empty directories made in phase 1 under a
  random tree directory; created objects are MKDIRS under a random tree directory at the type's
  C_j times (``round(w_j * created_directories)`` of them), accessed by the type's chain (or
  listed, without one) and deleted (DELETE_DIR, recursive) D_j after their last access.
* Files of types with ``new_dir_share`` (``place_in_new_dirs``): that share of the created
  files goes into a directory created in the window that is never renamed, made before the
  file and not deleted before the file's last event: the latest such (so that a job's files
  share its directory); else the file stays in the tree.
* Pathless commands (``pathless_events``): a renewal stream per command, op NAMENODE, target
  the command's index in the manifest's ``pathless_commands``.

Directory ids: the (pruned) tree ``[0, T)``, then the volatile types' extra directories, then
the created directories (both appended by the caller after the tree, in that order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mimesisbench.profile.schema import FileType, PathlessCommand
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.chains import volatile
from mimesisbench.synth.streams import NEVER, RANK, RANK_BITS, Sampler, TypeEvents, creation_times, type_events

I64 = NDArray[np.int64]
#: earlier created directories tried per file when the latest one made before it does not fit
PLACEMENT_TRIES = 64


@dataclass
class DirectoryObjects:
    """The directory types' events (dir ids as targets) and the directories they add."""

    tree: int  # directories of the tree: ids below are the tree's
    extra_parent: list[I64] = field(default_factory=list)  # volatile pre-existing directories
    extra_type: list[I64] = field(default_factory=list)
    made_parent: list[I64] = field(default_factory=list)  # created directories
    made_type: list[I64] = field(default_factory=list)
    made_us: list[I64] = field(default_factory=list)
    keys: list[I64] = field(default_factory=list)
    metas: list[NDArray[np.uint32]] = field(default_factory=list)
    targets: list[I64] = field(default_factory=list)

    @property
    def extras(self) -> int:
        return sum(int(p.size) for p in self.extra_parent)

    @property
    def created(self) -> int:
        return sum(int(p.size) for p in self.made_parent)

    def new_parents(self) -> tuple[NDArray[np.int32], NDArray[np.int16]]:
        """Parents and types of the added directories, extras first, then created ones."""
        parts = self.extra_parent + self.made_parent
        types = self.extra_type + self.made_type
        if not parts:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int16)
        return np.concatenate(parts).astype(np.int32), np.concatenate(types).astype(np.int16)


def _tree_choice(tree: int, count: int, rng: np.random.Generator) -> I64:
    """``count`` random tree directories (not the root unless it is the whole tree)."""
    lo = 1 if tree > 1 else 0
    return rng.integers(lo, tree, size=count).astype(np.int64)


def directory_objects(
    types: list[FileType],
    created_directories: int,
    tree: int,
    window_us: int,
    type_rngs: dict[int, np.random.Generator],
    place_rngs: dict[int, np.random.Generator],
    balance: bool,
    shared_rng: np.random.Generator,
) -> DirectoryObjects:
    """Every directory type's objects and events (module docstring)."""
    out = DirectoryObjects(tree)
    layouts: list[tuple[FileType, I64, int, TypeEvents]] = []
    for t in types:
        rng = type_rngs[t.id]
        made = creation_times(t, int(round(t.weight * created_directories)), window_us, rng, keep_count=True)
        origin = np.concatenate([np.zeros(t.pre_existing, dtype=np.int64), made])
        ev = type_events(t, origin, made.size, 0, window_us, rng, np.int64, balance)
        layouts.append((t, made, t.pre_existing, ev))
    # stable types' pre-existing objects are distinct tree directories (one permutation for all
    # types, so no two objects share a directory); past the tree's size they are extra directories
    stable_pre = sum(t.pre_existing for t in types if not volatile(t))
    in_tree = min(stable_pre, tree)
    tree_dirs = _distinct(tree, in_tree, shared_rng) if in_tree else np.empty(0, dtype=np.int64)
    next_tree = 0
    next_extra = tree
    next_made = tree + sum(t.pre_existing for t in types if volatile(t)) + (stable_pre - in_tree)
    for t, made, pre, ev in layouts:
        place = place_rngs[t.id]
        obj_dir = np.empty(pre + made.size, dtype=np.int64)
        taken = 0 if volatile(t) else min(pre, in_tree - next_tree)
        obj_dir[:taken] = tree_dirs[next_tree : next_tree + taken]
        next_tree += taken
        extra = pre - taken
        if extra:
            obj_dir[taken:pre] = np.arange(next_extra, next_extra + extra)
            out.extra_parent.append(_tree_choice(tree, extra, place))
            out.extra_type.append(np.full(extra, t.id, dtype=np.int64))
            next_extra += extra
        obj_dir[pre:] = np.arange(next_made, next_made + made.size)
        out.made_parent.append(_tree_choice(tree, made.size, place))
        out.made_type.append(np.full(made.size, t.id, dtype=np.int64))
        out.made_us.append(made)
        next_made += made.size
        out.keys.extend(ev.keys)
        out.metas.extend(ev.metas)
        out.targets.extend(obj_dir[np.asarray(tg, dtype=np.int64)] for tg in ev.targets)
    return out


def _distinct(tree: int, count: int, rng: np.random.Generator) -> I64:
    """``count <= tree`` distinct random tree directories, the root (0) only when every other one is
    taken (it is the run's base directory)."""
    if count >= tree:
        return np.concatenate([rng.permutation(np.arange(1, tree, dtype=np.int64)), np.zeros(1, dtype=np.int64)])
    return (rng.choice(tree - 1, size=count, replace=False) + 1).astype(np.int64)


def created_dir_lives(
    key: I64, op: NDArray[np.uint8], target: NDArray[np.integer], first_made: int, made: int
) -> tuple[I64, NDArray[np.bool_]]:
    """Per created directory (ids ``first_made + i``): the time of its first DELETE_DIR
    (NEVER when none) and whether it is ever renamed."""
    end = np.full(made, NEVER, dtype=np.int64)
    renamed = np.zeros(made, dtype=bool)
    if made == 0:
        return end, renamed
    mine = (target >= first_made) & (target < first_made + made)
    dl = np.flatnonzero(mine & (op == OpCode.DELETE_DIR))
    np.minimum.at(end, target[dl].astype(np.int64) - first_made, key[dl] >> RANK_BITS)
    rn = np.flatnonzero(mine & (op == OpCode.RENAME_DIR))
    renamed[target[rn].astype(np.int64) - first_made] = True
    return end, renamed


def place_in_new_dirs(
    file_made_us: I64,
    file_last_us: I64,
    share: float,
    dir_made_us: I64,
    dir_end_us: I64,
    dir_ok: NDArray[np.bool_],
    rng: np.random.Generator,
) -> tuple[I64, I64]:
    """Created files (made at ``file_made_us``, last event at ``file_last_us``) going into a
    created directory: a ``share`` of them, each into the latest fitting directory (made strictly
    before the file, ``dir_ok`` (never renamed), first deleted after the file's last event).
    Returns (indices of the placed files, index of each one's directory)."""
    chosen = np.flatnonzero(rng.random(file_made_us.size) < share)
    ok = np.flatnonzero(dir_ok)
    if chosen.size == 0 or ok.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    order = ok[np.argsort(dir_made_us[ok], kind="stable")]
    made, end = dir_made_us[order], dir_end_us[order]
    below = np.searchsorted(made, file_made_us[chosen], side="left")  # directories made strictly before
    last = file_last_us[chosen]
    pick = np.full(chosen.size, -1, dtype=np.int64)
    todo = np.arange(chosen.size)
    for back in range(1, PLACEMENT_TRIES + 1):
        j = below[todo] - back
        live = j >= 0
        todo, j = todo[live], j[live]
        if todo.size == 0:
            break
        fits = end[j] > last[todo]
        pick[todo[fits]] = order[j[fits]]
        todo = todo[~fits]
    placed = pick >= 0
    return chosen[placed], pick[placed]


def pathless_events(
    commands: list[PathlessCommand], window_us: int, rngs: list[np.random.Generator]
) -> tuple[I64, NDArray[np.uint32], I64]:
    """(keys, metas, targets) of the pathless commands' events: a renewal stream of ``count``
    interarrivals per command cut at the window (uniform times without an interarrival law)."""
    keys: list[I64] = []
    targets: list[I64] = []
    for i, (pc, rng) in enumerate(zip(commands, rngs)):
        if pc.interarrival is None:
            times = np.sort(rng.integers(0, window_us, size=pc.count, dtype=np.int64))
        else:
            times = np.cumsum(Sampler(pc.interarrival).draw(rng, pc.count))
            times = times[times < window_us]
        keys.append((times << RANK_BITS) | RANK[OpCode.NAMENODE])
        targets.append(np.full(times.size, i, dtype=np.int64))
    key = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
    meta = np.full(key.size, int(OpCode.NAMENODE), dtype=np.uint32)
    target = np.concatenate(targets) if targets else np.empty(0, dtype=np.int64)
    return key, meta, target
