"""Objects visited together: the generator's side of ``model.covisits``.

Every object's stream is drawn apart from the others', so objects a trace visits together (a
daemon's directories, round after round) come out at unrelated moments. After the streams are
drawn, the objects of each number of visits that the profile's law groups are put in groups of
the law's sizes (drawn at random among the objects with exactly that many visits), and each
member's visits are moved to its group's first object's visit times, delayed by one draw of the
law's ``offset`` (a member keeps its delay in every round, as a daemon keeps its order). A visit
moves whole: its own gaps, commands and count stay; only when it starts changes.

Only objects that are only accessed in the window move (the fit counts only those): a job's files
come in bursts by their creations, and their lives hold their streams. Creations, renames and
deletions never move. A member's visits stay in the window: one delayed past its end by no more
than the largest delay is moved back to it (its last gap a few ms short); a member whose visits
would leave it by more keeps its own times.

Objects whose visits are a subset of another's (a partition listed on some of its table's queries,
the law's ``nested`` rows) are moved first, among the objects no group's first object leads: each
takes n of a host's visits at random, each delayed by a draw of ``nested_offset``; a group's
members then follow their first object wherever it went.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from mimesisbench.model.covisits import Visits, runs, visits_of
from mimesisbench.profile.schema import CoVisits, NestedRow
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.shared_ops import target_kinds
from mimesisbench.synth.streams import RANK, RANK_BITS, Sampler

I64 = NDArray[np.int64]
_ACCESS_RANK = int(RANK[OpCode.OPEN])
#: per op code: whether it deletes its object
_DELETES = np.zeros(max(OpCode) + 1, dtype=bool)
_DELETES[[OpCode.DELETE, OpCode.DELETE_DIR]] = True
_DELETES.flags.writeable = False


def _group_slices(count: int, law: list[tuple[int, float]], rng: np.random.Generator) -> list[tuple[int, int]]:
    """(size, groups) to make of ``count`` objects under ``law`` ((size, share of the objects)):
    the expected number of groups of each size, rounded at random, as many as the objects allow."""
    out: list[tuple[int, int]] = []
    left = count
    for size, share in law:
        expected = share * count / size
        groups = int(expected) + int(rng.random() < expected - int(expected))
        groups = min(groups, left // size)
        if groups:
            out.append((size, groups))
            left -= size * groups
    return out


def covisit(
    key: I64,
    meta: NDArray[np.uint32],
    target: NDArray[np.integer[Any]],
    law: CoVisits,
    window_us: int,
    rng: np.random.Generator,
) -> int:
    """Move the visits of co-visited objects in ``key`` (``time_us << RANK_BITS | rank``, in place,
    events in any order; ``window_us`` the window's length); returns how many objects moved."""
    kinds = target_kinds()[(meta & 0xFF).astype(np.intp)]
    rows = np.flatnonzero(kinds < 2)
    obj = target[rows].astype(np.int64) * 2 + kinds[rows]
    by_object = np.lexsort((key[rows], obj))
    order, obj = rows[by_object], obj[by_object]
    del rows, by_object
    sorted_key = key[order]
    time = sorted_key >> RANK_BITS
    rank = sorted_key & ((1 << RANK_BITS) - 1)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(obj)) + 1, [obj.size]]).astype(np.int64)
    in_visit = rank == _ACCESS_RANK
    visits = visits_of(bounds, time, law.window_ms * 1000, access=in_visit)
    new_start = visits.start.copy()
    by_visits: dict[int, list[tuple[int, float]]] = {}
    for row in law.groups:
        by_visits.setdefault(row.visits, []).append((row.size, row.share))
    # only objects that are only accessed (as the fit's): the others' creations and deletions hold
    # them. Nor one its own stream deletes: the files that make it again between its deletes
    # (``synth.recreation``, placed before this pass) would no longer be there when it is used
    owner = np.repeat(np.arange(bounds.size - 1), np.diff(bounds))
    op = (meta[order] & 0xFF).astype(np.intp)
    held = ~in_visit | _DELETES[op]
    only_accessed = np.bincount(owner, weights=held, minlength=bounds.size - 1) == 0
    # the groups first (who follows whom), then the nested objects among the rest, moved before
    # the groups' members, which follow their first object wherever it went
    groups: list[tuple[I64, NDArray[np.int64]]] = []
    is_member = np.zeros(bounds.size - 1, dtype=bool)
    for n, sizes in sorted(by_visits.items()):
        candidates = np.flatnonzero((visits.count == n) & only_accessed)
        candidates = candidates[rng.permutation(candidates.size)]
        at = 0
        for size, count in _group_slices(candidates.size, sizes, rng):
            block = candidates[at : at + size * count].reshape(count, size)
            at += size * count
            groups.append((block[:, 0], block[:, 1:]))
            is_member[block[:, 1:].ravel()] = True
    moved_objects: list[I64] = []
    if law.nested and law.nested_offset is not None:
        moved_objects.append(_nest(visits, new_start, only_accessed & ~is_member, law.nested, Sampler(law.nested_offset), rng))
    offsets = Sampler(law.offset)
    for leaders, members in groups:
        steps = np.arange(int(visits.count[leaders[0]]), dtype=np.int64)
        lead_starts = new_start[visits.first[leaders][:, None] + steps]  # (groups, n)
        delay = offsets.draw(rng, members.size).reshape(members.shape)  # us, one per member
        member_rows = visits.first[members][:, :, None] + steps  # (groups, size - 1, n)
        new_start[member_rows] = lead_starts[:, None, :] + delay[:, :, None]
        moved_objects.append(members.ravel())
    if not moved_objects:
        return 0
    # each row's visit (the visit begun at or before it); rows outside visits do not move
    visit_of_row = np.searchsorted(visits.row, np.arange(time.size), side="right") - 1
    shift = np.zeros(time.size, dtype=np.int64)
    has = in_visit & (visit_of_row >= 0)
    shift[has] = (new_start - visits.start)[visit_of_row[has]]
    new_time = time + shift
    lo, hi = 0, window_us - 1
    # a member delayed out of the window by no more than the largest delay is moved back to its edge;
    # one moved further out (or whose visits would overlap) keeps its own times
    out_by = np.maximum(lo - new_time, new_time - hi)
    np.clip(new_time, lo, hi, out=new_time)
    new_key = (new_time << RANK_BITS) | rank
    largest = max(law.offset.values[-1], law.nested_offset.values[-1] if law.nested_offset is not None else 0.0)
    bad_rows = out_by > np.ceil(largest * 1000.0)
    bad_rows[1:] |= (owner[1:] == owner[:-1]) & (new_key[1:] < new_key[:-1])
    bad = np.zeros(bounds.size - 1, dtype=bool)
    bad[owner[bad_rows]] = True
    new_key[bad[owner]] = sorted_key[bad[owner]]
    key[order] = new_key
    moved = np.concatenate(moved_objects)
    return int((~bad[moved]).sum())


def _nest(
    visits: Visits, new_start: I64, eligible: NDArray[np.bool_], law: list[NestedRow], delays: Sampler, rng: np.random.Generator
) -> I64:
    """Move the visits of the nested objects the law asks for among ``eligible`` ones into visits
    of hosts (``new_start`` updated); returns the objects moved. Per (visits n, host visits m) row,
    its share of the eligible objects of n visits are drawn at random; each takes a host among the
    eligible objects neither nested nor of n visits or fewer, of m visits (else of the nearest
    number above n), and n of its visits at random, each visit delayed by one draw of
    ``nested_offset`` (``delays``) from the host's."""
    by_visits: dict[int, list[tuple[int, float]]] = {}
    for row in law:
        by_visits.setdefault(row.visits, []).append((row.host_visits, row.share))
    chosen: list[tuple[I64, int]] = []  # (objects, wanted host visits)
    nested = np.zeros(eligible.size, dtype=bool)
    for n, rows in sorted(by_visits.items()):
        candidates = np.flatnonzero(eligible & (visits.count == n))
        candidates = candidates[rng.permutation(candidates.size)]
        at = 0
        for m, share in rows:
            expected = share * candidates.size
            take = min(int(expected) + int(rng.random() < expected - int(expected)), candidates.size - at)
            if take > 0:
                chosen.append((candidates[at : at + take], m))
                nested[candidates[at : at + take]] = True
                at += take
    pool = np.flatnonzero(eligible & ~nested)
    pool = pool[np.argsort(visits.count[pool], kind="stable")]
    pool_count = visits.count[pool]
    objects, hosts = [], []
    for members, m in chosen:
        n = int(visits.count[members[0]])
        lo, hi = int(np.searchsorted(pool_count, m, side="left")), int(np.searchsorted(pool_count, m, side="right"))
        if hi == lo:  # no host of m visits: the nearest number of visits above n
            near = [c for c in (lo - 1, lo) if 0 <= c < pool.size and pool_count[c] > n]
            if not near:  # no object has more visits: these stay where they are
                continue
            c = min(near, key=lambda c: abs(int(pool_count[c]) - m))
            lo, hi = int(np.searchsorted(pool_count, pool_count[c], side="left")), int(np.searchsorted(pool_count, pool_count[c], side="right"))
        objects.append(members)
        hosts.append(pool[rng.integers(lo, hi, size=members.size)])
    if not objects:
        return np.empty(0, dtype=np.int64)
    obj, host = np.concatenate(objects), np.concatenate(hosts)
    n_obj, n_host = visits.count[obj], visits.count[host]
    # n of each host's visits at random: its visits in random order, the first n of them, in time order
    seg = np.repeat(np.arange(obj.size, dtype=np.int64), n_host)
    seg_start = np.concatenate([[0], np.cumsum(n_host)[:-1]])
    shuffled = np.lexsort((rng.random(seg.size), seg))
    keep = np.arange(seg.size) - seg_start[seg] < n_obj[seg]
    picked = shuffled[keep]
    picked = picked[np.lexsort((picked, seg[picked]))]
    host_rows = visits.first[host][seg[picked]] + (picked - seg_start[seg[picked]])
    own_rows = runs(visits.first[obj], n_obj)
    new_start[own_rows] = visits.start[host_rows] + delays.draw(rng, own_rows.size)
    return obj
