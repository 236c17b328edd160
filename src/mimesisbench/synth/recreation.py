"""Directories a workload makes again implicitly, by creating a file in them.

In a real job trace a directory deleted in the middle of its stream (a job's ``_temporary``
tree, a control or output directory cleared before a run) is mostly made again without a
``mkdirs`` of its own: a file created in it (``FileSystem.create`` makes missing parents) or a
``mkdirs`` of a path below it makes it on the way, and the NameNode audits only that ``create``
or ``mkdirs``. Seen in a real MapReduce trace (1,532 lines): none of its 39 mid-stream deletes
of a directory was followed by a ``mkdirs`` of it, yet each directory was listed or deleted
again afterwards, once a file or a directory below it had made it again.

The command chain makes the first non-lookup access after such a delete re-create the
directory (MKDIRS_EXISTING), so that the stream stays replayable, and keeps the access's own
command in the meta's generation byte (``chains.ChainLaw.with_origins``). This pass gives each
such access a file created in the window between the delete and the access, the latest one made
there whose events all end before the directory's next delete: the file goes into the directory,
its CREATE makes the directory again, and the access gets its own command back. An access no
created file fits keeps its MKDIRS_EXISTING (one ``mkdirs`` more than the trace had). Renamed
directories are left alone (their files would move with them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.chains import ORIGIN_SHIFT
from mimesisbench.synth.streams import NEVER, RANK_BITS

I64 = NDArray[np.int64]
#: created files tried per re-creation, on either side of the access
TRIES = 64
#: the least time between the directory's delete, the file's creation and the access (and
#: between the file's last event and the next delete), when the gap allows it (else a third of
#: it): the replay issues them from different lanes, and 1 us apart they would race
GUARD_US = 50_000
_ORIGIN_MASK = np.uint32(0xFF << ORIGIN_SHIFT)


@dataclass(frozen=True)
class Recreations:
    """What ``resolve`` did: files moved into directories, and re-creations left as mkdirs."""

    files: I64  # indices into the candidate arrays
    dirs: I64  # the directory each of ``files`` goes into
    shift_us: I64  # how far each of ``files`` moves in time (all its events)
    kept_mkdirs: int  # implicit re-creations no created file fitted

    @property
    def placed(self) -> int:
        return int(self.files.size)


def _previous(times: I64, at: int) -> int:
    """The last of the sorted ``times`` before ``at``, -1 when none."""
    i = int(np.searchsorted(times, at, side="left"))
    return int(times[i - 1]) if i else -1


def _next(times: I64, at: int) -> int:
    """The first of the sorted ``times`` after ``at``, NEVER when none."""
    i = int(np.searchsorted(times, at, side="right"))
    return int(times[i]) if i < times.size else int(NEVER)


def resolve(
    key: I64,
    meta: NDArray[np.uint32],
    target: NDArray[np.integer],
    made_us: I64,
    last_us: I64,
    window_us: int,
) -> Recreations:
    """Resolve the implicit re-creations among the directory events (``key``, ``meta``,
    ``target``; ``meta`` is updated in place: every origin byte cleared, each resolved access
    given its command back) with the candidate created files (made at ``made_us``, their last
    event at ``last_us``). Of the ``TRIES`` free candidates made nearest before and after the
    access, the one that has to move least: each fits if its whole life, moved in time, lies
    between the delete and the directory's next delete (or the window's end) with its creation
    before the access, ``GUARD_US`` from each. Returns which candidates go into which directory, moved how far."""
    origin = ((meta & _ORIGIN_MASK) >> np.uint32(ORIGIN_SHIFT)).astype(np.uint8)
    stops = np.flatnonzero(origin)
    meta[stops] &= ~_ORIGIN_MASK
    none = np.empty(0, dtype=np.int64)
    if stops.size == 0:
        return Recreations(none, none, none, 0)
    op = (meta & 0xFF).astype(np.uint8)
    time = key >> RANK_BITS
    renamed = np.unique(target[op == OpCode.RENAME_DIR])
    all_stops = int(stops.size)
    stops = stops[~np.isin(target[stops], renamed)]
    if stops.size == 0 or made_us.size == 0:
        return Recreations(none, none, none, all_stops)
    # each stopped directory's deletes, in time order, with the stops that are deletes waiting for
    # their re-creation (``chains.ChainLaw.labels``): a file placed for one must not outlive the next
    deleting = op == OpCode.DELETE_DIR
    deleting[stops[origin[stops] == OpCode.DELETE_DIR]] = True
    deletes = np.flatnonzero(deleting & np.isin(target, target[stops]))
    by_dir: dict[int, I64] = {}
    order = np.lexsort((time[deletes], target[deletes]))
    deletes = deletes[order]
    dirs, first = np.unique(target[deletes], return_index=True)
    bounds = np.append(first, deletes.size)
    for i, d in enumerate(dirs.tolist()):
        by_dir[d] = time[deletes[bounds[i] : bounds[i + 1]]]
    candidates = np.argsort(made_us, kind="stable")
    made = made_us[candidates]
    life = last_us[candidates] - made
    taken = np.zeros(candidates.size, dtype=bool)
    files: list[int] = []
    into: list[int] = []
    shifts: list[int] = []
    kept = all_stops - int(stops.size)
    # per directory, when a stop of it was last left a mkdirs (the directory exists from then on)
    left_made: dict[int, int] = {}
    # one step per re-creation (a few per deleted directory): what fits depends on what the
    # earlier ones took, so this greedy pass is sequential by nature
    for s in stops[np.argsort(time[stops], kind="stable")].tolist():
        d = int(target[s])
        at = int(time[s])
        times = by_dir.get(d, np.empty(0, dtype=np.int64))
        # a file made for a stop that is a delete must be gone (its events done) before it
        after = _previous(times, at)
        is_delete = origin[s] == OpCode.DELETE_DIR
        if is_delete and left_made.get(d, -1) >= after:
            # the stop before it was left a mkdirs: the directory is there to delete, no file needed
            # (at worst every other delete of a run of deletes is kept, as a mkdirs and a delete)
            meta[s] = (meta[s] & np.uint32(0xFFFFFF00)) | np.uint32(origin[s])
            continue
        before = at if is_delete else min(_next(times, at), window_us)
        mid = int(np.searchsorted(made, at, side="left"))
        near = np.arange(max(mid - TRIES, 0), min(mid + TRIES, made.size))
        near = near[~taken[near]]
        # the made time each one could move to: after the delete, before the access, its last
        # event before the directory's next delete (or the window's end), each by a guard
        guard = max(min(GUARD_US, (at - after) // 3), 1)
        lo = after + guard
        hi = np.minimum(at - guard, before - guard - life[near])
        fits = hi >= lo
        if not fits.any():
            kept += 1
            left_made[d] = at
            continue
        near, hi = near[fits], hi[fits]
        moved = np.clip(made[near], lo, hi)
        best = int(np.argmin(np.abs(moved - made[near])))
        j = int(near[best])
        taken[j] = True
        files.append(int(candidates[j]))
        into.append(d)
        shifts.append(int(moved[best] - made[j]))
        meta[s] = (meta[s] & np.uint32(0xFFFFFF00)) | np.uint32(origin[s])
    return Recreations(
        np.array(files, dtype=np.int64), np.array(into, dtype=np.int64), np.array(shifts, dtype=np.int64), kept
    )


__all__ = ["GUARD_US", "TRIES", "Recreations", "resolve"]
