"""Objects visited together: the generator's side of ``model.covisits``.

Every object's stream is drawn apart from the others', so objects a trace visits together (a
daemon's directories, round after round) come out at unrelated moments. After the streams are
drawn, the objects of each number of visits that the profile's law groups are put in groups of
the law's sizes (among the objects with exactly that many visits, objects whose visits span about
as long: ``_alike_groups``), and each
member's visits are moved to its group's first object's visit times, delayed by one draw of the
law's ``offset`` (a member keeps its delay in every round, as a daemon keeps its order, give or
take one draw of the law's ``jitter`` per round). A visit moves whole: its own gaps, commands and
count stay; only when it starts changes.

Only objects that are only accessed in the window move (the fit counts only those): a job's files
come in bursts by their creations, and their lives hold their streams. Creations, renames and
deletions never move. A member's visits stay in the window: a group whose members are delayed
past its end moves earlier, whole, as far as its first visit's room allows; a member still past the
end by no more than the largest delay is moved back to it (its last gap a few ms short); a member
whose visits would leave it by more keeps its own times.

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
#: the groups of one number of visits are placed one by one where the spans are closest
#: (``_alike_groups``) while groups x candidates stays within this; more are cut from the span
#: order in blocks (each placement is a pass over the candidates)
CLOSEST_WORK = 1 << 21


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
        for leaders, members in _alike_groups(candidates, visits, _group_slices(candidates.size, sizes, rng), rng):
            groups.append((leaders, members))
            is_member[members.ravel()] = True
    moved_objects: list[I64] = []
    if law.nested and law.nested_offset is not None:
        moved_objects.append(_nest(visits, new_start, only_accessed & ~is_member, law.nested, Sampler(law.nested_offset), rng))
    offsets = Sampler(law.offset)
    jitter = Sampler(law.jitter) if law.jitter is not None else None
    for leaders, members in groups:
        steps = np.arange(int(visits.count[leaders[0]]), dtype=np.int64)
        lead_starts = new_start[visits.first[leaders][:, None] + steps]  # (groups, n)
        delay = offsets.draw(rng, members.size).reshape(members.shape)[:, :, None]  # us, one per member
        if jitter is not None:  # per visit, less the first visit's: that keeps its delay
            wobble = jitter.draw(rng, members.size * steps.size).reshape(*members.shape, steps.size)
            delay = delay + wobble - wobble[:, :, :1]
        member_rows = visits.first[members][:, :, None] + steps  # (groups, size - 1, n)
        new_start[member_rows] = lead_starts[:, None, :] + delay
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
    _back_into_window(new_time, owner, groups, bounds.size - 1, lo, hi)
    # a member delayed out of the window by no more than the largest delay is moved back to its edge;
    # one moved further out (or whose visits would overlap) keeps its own times
    out_by = np.maximum(lo - new_time, new_time - hi)
    np.clip(new_time, lo, hi, out=new_time)
    new_key = (new_time << RANK_BITS) | rank
    largest = max(law.offset.values[-1], law.nested_offset.values[-1] if law.nested_offset is not None else 0.0)
    if law.jitter is not None:
        largest += law.jitter.values[-1] - law.jitter.values[0]
    bad_rows = out_by > np.ceil(largest * 1000.0)
    bad_rows[1:] |= (owner[1:] == owner[:-1]) & (new_key[1:] < new_key[:-1])
    bad = np.zeros(bounds.size - 1, dtype=bool)
    bad[owner[bad_rows]] = True
    new_key[bad[owner]] = sorted_key[bad[owner]]
    key[order] = new_key
    moved = np.concatenate(moved_objects)
    return int((~bad[moved]).sum())


def _alike_groups(
    candidates: I64, visits: Visits, slices: list[tuple[int, int]], rng: np.random.Generator
) -> list[tuple[I64, I64]]:
    """Groups of ``candidates`` (objects of one number of visits) of the sizes ``slices`` asks for
    ((size, groups)), each of objects whose visits span about as long (the time from the first
    visit to the last). Returns (first objects, members: one row per group) per size; one of each
    group at random leads (the middle one would leave the shortest and longest spans out).

    Why: the members take their first object's visit times. Drawn at random among the objects of
    as many visits, a directory its daemon stats twice 2 s apart followed a file a job stats twice
    0.1 s apart, or eight such files the directory (on the real sandbox trace, up to a fifth of the
    per-object gaps moved between 0.1 s and 2 s); co-visited objects of a trace span about as long
    by definition (each visit within the window of the others').

    How: the candidates in order of their span's logarithm (ties at random). While groups x
    candidates is within ``CLOSEST_WORK``, each group, largest first, takes the run of consecutive
    free candidates whose spans lie closest (the smallest ratio of its longest to its shortest):
    the objects left alone are those that fit no group. Else the groups are cut from that order in
    consecutive blocks, the blocks and the objects left alone in random order."""
    if not slices:
        return []
    n = int(visits.count[candidates[0]])
    span = visits.start[visits.first[candidates] + n - 1] - visits.start[visits.first[candidates]]
    log_span = np.log1p(np.maximum(span, 0).astype(np.float64))
    by_span = np.lexsort((rng.random(candidates.size), log_span))
    ordered, log_span = candidates[by_span], log_span[by_span]
    out: list[tuple[I64, I64]] = []
    if sum(count for _, count in slices) * candidates.size <= CLOSEST_WORK:
        free = np.ones(ordered.size, dtype=bool)
        for size, count in sorted(slices, reverse=True):
            blocks = np.empty((count, size), dtype=np.int64)
            for g in range(count):
                at = np.flatnonzero(free)
                spread = log_span[at[size - 1 :]] - log_span[at[: at.size - size + 1]]
                take = at[int(np.argmin(spread)) :][:size]
                free[take] = False
                blocks[g] = ordered[take]
            out.append(_led_at_random(blocks, rng))
        return out
    tags = np.concatenate([np.full(count, size, dtype=np.int64) for size, count in slices])  # a group's size
    tags = rng.permutation(np.concatenate([tags, np.zeros(candidates.size - int(tags.sum()), dtype=np.int64)]))
    lengths = np.maximum(tags, 1)  # 0: an object left alone
    begin = np.cumsum(lengths) - lengths
    for size, _ in slices:
        at = begin[tags == size]
        out.append(_led_at_random(ordered[at[:, None] + np.arange(size)], rng))
    return out


def _led_at_random(blocks: I64, rng: np.random.Generator) -> tuple[I64, I64]:
    """(first objects, members) of groups ``blocks`` (one row per group): one at random leads."""
    lead = rng.integers(0, blocks.shape[1], size=blocks.shape[0])
    rows = np.arange(blocks.shape[0])
    blocks = blocks.copy()
    blocks[rows, 0], blocks[rows, lead] = blocks[rows, lead], blocks[rows, 0]
    return blocks[:, 0], blocks[:, 1:]


def _back_into_window(new_time: I64, owner: I64, groups: list[tuple[I64, NDArray[np.int64]]], objects: int,
                      lo: int, hi: int) -> None:
    """Move each group (its first object and members, all their rows: ``owner``, the object of
    each row) whose visits end past ``hi`` earlier, whole, by as much as that takes and its first
    visit's room from ``lo`` allows (``new_time``, in place). Why: a daemon's round of listings
    seen for the whole window ends at the window's end; its members, delayed by their offsets
    from their first object's times, left it by those few ms, and the clip that brought them back
    cut every member's last gap short by as much (on a real 123-line poller trace, per-object
    interarrival KS 0.054-0.071 for a model whose gaps are the trace's)."""
    if not groups:
        return
    group_of = np.full(objects, -1, dtype=np.int64)
    at = 0
    for leaders, members in groups:
        ids = at + np.arange(leaders.size, dtype=np.int64)
        group_of[leaders] = ids
        group_of[members] = ids[:, None]
        at += leaders.size
    rows = np.flatnonzero(group_of[owner] >= 0)
    row_group = group_of[owner[rows]]
    last = np.full(at, lo, dtype=np.int64)
    first = np.full(at, hi, dtype=np.int64)
    np.maximum.at(last, row_group, new_time[rows])
    np.minimum.at(first, row_group, new_time[rows])
    back = np.clip(np.minimum(last - hi, first - lo), 0, None)
    new_time[rows] -= back[row_group]


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
