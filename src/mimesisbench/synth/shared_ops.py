"""Operations the per-file model does not drive, at the profile's ``op_mix`` ratios.

* MKDIRS (``mkdirs_per_create``): a new empty directory ``m<dir_id>`` under a pre-existing
  directory, at the time of a randomly chosen create (so they follow the create rate);
* RENAME_DIR (``dir_renames_per_create``): a directory made by an earlier (or same-time) MKDIRS
  renamed within its parent, at a random create's time;
* RENAME_FILE (``file_renames_per_create``): a file live at a random create's time renamed
  within its directory (later events of the file use the next generation);
* GETFILEINFO (``getfileinfo_per_access``): a stat of the file of a randomly chosen access, at
  that access's time (the file is live then);
* LIST_DIR (``dir_list_per_access``): a listing of the directory holding the file of a randomly
  chosen access, at that access's time.

Directory operations have type 0; GETFILEINFO and RENAME_FILE carry their file's type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from mimesisbench.profile.schema import OpMix
from mimesisbench.schedule.format import COMMANDS, OpCode

I64 = NDArray[np.int64]
#: rounds of redrawing a rename target that is not live at the rename's time
RENAME_TRIES = 16
MAX_GENERATION = 255


class AccessSource(Protocol):
    """The schedule's file accesses (OPEN, LIST_FILE), addressed by ordinal."""

    count: int

    def take(self, ordinals: I64) -> tuple[I64, I64]:
        """(time_us, file id) of the chosen accesses."""
        ...


@dataclass
class SharedOps:
    time: I64
    op: NDArray[np.uint8]
    etype: NDArray[np.int16]
    target: I64
    new_dir_parent: NDArray[np.int32]  # MKDIRS directories, ids first_new_dir + i, in time order
    dir_generation: NDArray[np.uint8]  # per event: the generation of RENAME_DIR events, else 0


def _times_like_creates(create_us: I64, count: int, window_us: int, rng: np.random.Generator) -> I64:
    if count == 0:
        return np.empty(0, dtype=np.int64)
    if create_us.size:
        return create_us[rng.integers(0, create_us.size, size=count)]
    return rng.integers(0, window_us, size=count, dtype=np.int64)


def _count(ratio: float, base: int) -> int:
    return int(round(ratio * base))


def _dedupe(target: I64, time: I64) -> tuple[I64, I64, I64]:
    """Sort by (target, time), drop repeats; also return each item's rank within its target."""
    order = np.lexsort((time, target))
    target, time = target[order], time[order]
    keep = np.ones(target.size, dtype=bool)
    keep[1:] = (target[1:] != target[:-1]) | (time[1:] != time[:-1])
    target, time = target[keep], time[keep]
    new_group = np.ones(target.size, dtype=bool)
    new_group[1:] = target[1:] != target[:-1]
    idx = np.arange(target.size, dtype=np.int64)
    group_start = np.maximum.accumulate(np.where(new_group, idx, 0))
    return target, time, idx - group_start


def shared_operations(
    mix: OpMix,
    *,
    create_us: I64,
    accesses: AccessSource,
    file_create_us: I64,
    file_delete_us: I64,
    file_dir: NDArray[np.int32],
    file_type: NDArray[np.int16],
    pre_dirs: int,
    window_us: int,
    rng: np.random.Generator,
    first_new_dir: int | None = None,
) -> SharedOps:
    """The shared operations; MKDIRS directories go under one of the first ``pre_dirs``
    directories (the tree) and get ids from ``first_new_dir`` (``pre_dirs`` when None)."""
    creates, n_acc = int(create_us.size), accesses.count
    base = pre_dirs if first_new_dir is None else first_new_dir
    times: list[I64] = []
    ops: list[NDArray[np.uint8]] = []
    types: list[NDArray[np.int16]] = []
    targets: list[I64] = []
    dir_gens: list[NDArray[np.uint8]] = []

    def add(t: I64, op: OpCode, ty: NDArray[np.int16] | None, tg: I64, gen: NDArray[np.uint8] | None = None) -> None:
        times.append(t)
        ops.append(np.full(t.size, op, dtype=np.uint8))
        types.append(np.zeros(t.size, dtype=np.int16) if ty is None else ty.astype(np.int16))
        targets.append(tg.astype(np.int64))
        dir_gens.append(np.zeros(t.size, dtype=np.uint8) if gen is None else gen)

    # MKDIRS
    n_mk = _count(mix.mkdirs_per_create, creates)
    mk_time = np.sort(_times_like_creates(create_us, n_mk, window_us, rng))
    mk_parent = rng.integers(0, pre_dirs, size=n_mk).astype(np.int32)
    add(mk_time, OpCode.MKDIRS, None, np.arange(base, base + n_mk, dtype=np.int64))

    # RENAME_DIR
    n_rd = _count(mix.dir_renames_per_create, creates) if n_mk else 0
    if n_rd:
        rd_time = _times_like_creates(create_us, n_rd, window_us, rng)
        avail = np.searchsorted(mk_time, rd_time, side="right")
        ok = avail > 0
        pick = np.floor(rng.random(n_rd) * avail).astype(np.int64)
        rd_target, rd_time, rank = _dedupe(base + pick[ok], rd_time[ok])
        keep = rank < MAX_GENERATION
        add(rd_time[keep], OpCode.RENAME_DIR, None, rd_target[keep], rank[keep].astype(np.uint8))

    # RENAME_FILE
    n_rf = _count(mix.file_renames_per_create, creates)
    n_files = int(file_create_us.size)
    if n_rf and n_files:
        rf_time = _times_like_creates(create_us, n_rf, window_us, rng)
        rf_file = np.full(n_rf, -1, dtype=np.int64)
        todo = np.arange(n_rf)
        for _ in range(RENAME_TRIES):
            if todo.size == 0:
                break
            cand = rng.integers(0, n_files, size=todo.size)
            t = rf_time[todo]
            live = (file_create_us[cand] <= t) & (file_delete_us[cand] > t)
            rf_file[todo[live]] = cand[live]
            todo = todo[~live]
        found = rf_file >= 0
        rf_file, rf_time, rank = _dedupe(rf_file[found], rf_time[found])
        keep = rank < MAX_GENERATION
        add(rf_time[keep], OpCode.RENAME_FILE, file_type[rf_file[keep]], rf_file[keep])

    # GETFILEINFO and LIST_DIR, riding on accesses
    n_gfi = _count(mix.getfileinfo_per_access, n_acc) if n_acc else 0
    n_ld = _count(mix.dir_list_per_access, n_acc) if n_acc else 0
    if n_gfi + n_ld:
        picks = rng.integers(0, n_acc, size=n_gfi + n_ld)
        at, tg = accesses.take(picks)  # one pass over the accesses for both
        add(at[:n_gfi], OpCode.GETFILEINFO, file_type[tg[:n_gfi]], tg[:n_gfi])
        add(at[n_gfi:], OpCode.LIST_DIR, None, file_dir[tg[n_gfi:]].astype(np.int64))

    return SharedOps(
        time=np.concatenate(times),
        op=np.concatenate(ops),
        etype=np.concatenate(types),
        target=np.concatenate(targets),
        new_dir_parent=mk_parent,
        dir_generation=np.concatenate(dir_gens),
    )


def target_kinds() -> NDArray[np.uint8]:
    """Per op code: what its target is (0 a file, 1 a directory, 2 neither: NAMENODE)."""
    codes = {"file": 0, "directory": 1, "none": 2}
    out = np.full(max(OpCode) + 1, 2, dtype=np.uint8)
    for op in OpCode:
        out[op] = codes[COMMANDS[op].target]
    return out


def file_generations(key: I64, op: NDArray[np.uint8], target: NDArray[np.integer]) -> NDArray[np.uint8]:
    """Each file event's rename generation: the renames of its file ordered before it.

    ``key`` orders events (time and causal rank); only events of renamed files are touched.
    """
    return _generations(key, op, target, OpCode.RENAME_FILE, 0)


def dir_generations(key: I64, op: NDArray[np.uint8], target: NDArray[np.integer]) -> NDArray[np.uint8]:
    """Each directory event's rename generation (``file_generations`` for directories); 0 on
    the other events."""
    return _generations(key, op, target, OpCode.RENAME_DIR, 1)


def _generations(key: I64, op: NDArray[np.uint8], target: NDArray[np.integer], rename: OpCode, kind: int) -> NDArray[np.uint8]:
    gen = np.zeros(op.size, dtype=np.uint8)
    is_rename = op == rename
    if not np.any(is_rename):
        return gen
    renamed = np.unique(target[is_rename])
    sub = np.flatnonzero((target_kinds()[op] == kind) & np.isin(target, renamed))
    s_target = target[sub]
    s_key = key[sub]
    s_ren = is_rename[sub]
    order = np.lexsort((s_key, s_target))
    s_target, s_ren = s_target[order], s_ren[order].astype(np.int64)
    before = np.cumsum(s_ren) - s_ren  # renames (of any file) ordered before each element
    new_group = np.ones(s_target.size, dtype=bool)
    new_group[1:] = s_target[1:] != s_target[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(s_target.size), 0))
    prior = before - before[group_start]  # renames of the same file strictly before the event
    gen[sub[order]] = np.minimum(prior, MAX_GENERATION).astype(np.uint8)
    return gen
