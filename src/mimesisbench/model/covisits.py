"""Co-visited objects: objects whose visits all come together, found in one array pass.

A daemon lists its eight directories in each round, a query reads the files of the partitions it
scans: their objects are visited at the same moments, round after round. Each object's stream,
drawn apart from the others', has them at unrelated moments, so the load loses its rounds (on a
real 600 s poller trace the operations per 10 ms bin vary 6.5 times their mean, the streams drawn
apart 1.0 times). This module finds such objects in a trace and is what the generator uses to
find the objects it makes visit together (``synth.covisits``); both work on times of one unit:

* a **visit** is a run of one object's accesses each at most ``window`` after the one before;
* two objects with the same number n >= 2 of visits are **co-visited** when each visit of one
  starts within ``window`` of the same visit of the other. Objects sorted by (n, first visit) are
  compared with the few before them; a **group** is a connected set of co-visited objects.

Written by hand: this is interval matching of runs in sorted arrays, which no clustering library
does without comparing every pair (scikit-learn's DBSCAN on visit vectors would need one vector
length per n and quadratic memory for the large n); scipy finds the connected components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import MAX_COVISIT_ROWS, CoVisitRow, CoVisits, NestedRow

I64 = NDArray[np.int64]
#: a visit's accesses and co-visited objects' visits lie at most this far apart (ms): a query's or a
#: poll round's operations on a NameNode come within milliseconds, a client's separate visits of
#: one object (a reader's next query) seconds apart
WINDOW_MS = 100
#: an object is compared with this many objects before it in (visits, first visit) order
NEIGHBOURS = 8
#: an object is taken for nested in a host only when visits at random would all fall in the host's
#: visits with at most this probability ((host visits x window / trace span) ** visits): an object
#: polled every second "hosts" every object visited twice by chance
NESTED_CHANCE = 1e-3


@dataclass(frozen=True)
class Visits:
    """Objects' visits. ``count[o]`` visits of object o, whose starts are
    ``start[first[o] : first[o] + count[o]]`` (times) at rows ``row[...]`` of the access array."""

    count: I64
    first: I64
    start: I64
    row: I64


def visits_of(bounds: I64, time: NDArray[np.integer], window: int, access: NDArray[np.bool_] | None = None) -> Visits:
    """The visits of objects whose events are rows ``bounds[o]`` to ``bounds[o + 1]`` of ``time``
    (time order within one object). ``access`` (optional) marks the rows that are accesses: the
    others (a creation, a rename, a deletion) are never in a visit and end the one before them."""
    n_rows = int(bounds[-1])
    t = time[:n_rows]  # its own dtype (the fit's int32 times): no copy per access
    begins = np.zeros(n_rows, dtype=bool)
    if n_rows > 1:
        np.greater(np.diff(t), window, out=begins[1:])
        if access is not None:
            begins[1:] |= ~access[: n_rows - 1]
    begins[bounds[:-1][np.diff(bounds) > 0]] = True  # an object's first row
    if access is not None:
        begins &= access[:n_rows]
    row = np.flatnonzero(begins).astype(np.int64)
    del begins
    count = np.diff(np.searchsorted(row, bounds)).astype(np.int64)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    return Visits(count=count, first=first, start=t[row].astype(np.int64), row=row)


def runs(starts: I64, lengths: I64) -> I64:
    """Indices ``starts[i] .. starts[i] + lengths[i] - 1`` for every i, concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total, dtype=np.int64)


def co_visited(visits: Visits, window: int, candidates: I64 | None = None) -> tuple[I64, I64]:
    """Groups of co-visited objects among ``candidates`` (default: every object of two or more
    visits): ``(objects, group)``, the candidates by group, then first visit, and each one's group
    number (consecutive from 0). An object is compared with the ``NEIGHBOURS`` before it in
    (visits, first visit) order, so that objects of unrelated visits starting in the same window
    do not split a group; groups are the connected components of the co-visited pairs."""
    n = visits.count
    cand = np.flatnonzero(n >= 2) if candidates is None else candidates[n[candidates] >= 2]
    first_start = visits.start[visits.first[cand]]
    order = cand[np.lexsort((first_start, n[cand]))]
    heads, tails = [], []
    for step in range(1, min(NEIGHBOURS, order.size - 1) + 1):
        a, b = order[:-step], order[step:]
        maybe = np.flatnonzero((n[a] == n[b]) & (visits.start[visits.first[b]] - visits.start[visits.first[a]] <= window))
        if not maybe.size:
            continue
        lengths = n[a[maybe]]
        diff = np.abs(visits.start[runs(visits.first[b[maybe]], lengths)] - visits.start[runs(visits.first[a[maybe]], lengths)])
        linked = maybe[np.maximum.reduceat(diff, np.concatenate([[0], np.cumsum(lengths)[:-1]])) <= window]
        heads.append(linked)
        tails.append(linked + step)
    if not heads:
        return order, np.arange(order.size, dtype=np.int64)
    head, tail = np.concatenate(heads), np.concatenate(tails)
    graph = coo_matrix((np.ones(head.size, dtype=np.int8), (head, tail)), shape=(order.size, order.size))
    _, label = connected_components(graph, directed=False)
    # groups numbered by their first object, members in first-visit order (``order`` is sorted so)
    by_group = np.lexsort((np.arange(order.size), label))
    label = label[by_group]
    group = np.concatenate([[0], np.cumsum(label[1:] != label[:-1])]).astype(np.int64)
    return order[by_group], group


def nested_in(visits: Visits, window: int, candidates: I64, span: int) -> tuple[I64, I64, I64]:
    """Objects among ``candidates`` (two or more visits) whose every visit starts within ``window``
    after a visit of another candidate with more visits, its **host** (a table's directory listed
    by every query, a partition by some): ``(objects, hosts, delays)``, each object's host the one with the
    fewest visits among those whose visit began last before its first one (the ``NEIGHBOURS``
    visit starts before it, of any candidate). A host whose visits would cover that many visits at
    random with a probability above ``NESTED_CHANCE`` (its visits x ``window`` over ``span``, the
    trace's length, to the power of the visits) is not taken. ``delays`` are each found object's
    visits' delays from the host's visit begun last before them, object after object."""
    n = visits.count
    cand = candidates[n[candidates] >= 2]
    if cand.size < 2:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    count = n[cand]
    offset = np.concatenate([[0], np.cumsum(count)[:-1]])  # each candidate's first visit in ``keys``
    rows = runs(visits.first[cand], count)
    # one key per candidate's visit, increasing over candidates then time: a host's visit before
    # a time is one search
    shift = np.int64(int(visits.start.max(initial=0)) + window + 1)
    keys = np.repeat(np.arange(cand.size, dtype=np.int64), count) * shift + visits.start[rows]
    # every candidate's visits in time order (by rank among the candidates)
    order = np.argsort(visits.start[rows], kind="stable")
    del rows
    v_start = (keys % shift)[order]
    v_owner = np.repeat(np.arange(cand.size, dtype=np.int32), count)[order]
    del order
    first_start = keys[offset] % shift
    last_before = np.searchsorted(v_start, first_start, side="right") - 1  # its first visit or a tie after it
    best = np.full(cand.size, -1, dtype=np.int64)  # the host's rank among the candidates
    mine_rank = np.arange(cand.size, dtype=np.int64)
    for step in range(0, NEIGHBOURS + 1):
        pos = last_before - step
        ok = pos >= 0
        host = np.where(ok, v_owner[np.maximum(pos, 0)], 0).astype(np.int64)
        ok &= host != mine_rank
        ok &= count[host] > count
        ok &= first_start - v_start[np.maximum(pos, 0)] <= window
        chance = np.minimum(count[host] * float(window) / max(span, 1), 1.0)
        ok &= np.power(chance, count.astype(np.float64)) <= NESTED_CHANCE
        ok &= (best < 0) | (count[host] < count[np.maximum(best, 0)])
        maybe = np.flatnonzero(ok)
        if not maybe.size:
            continue
        lengths = count[maybe]
        gap = _from_host(keys, shift, offset, maybe, host[maybe], lengths, window)
        covered = np.maximum.reduceat(gap, np.concatenate([[0], np.cumsum(lengths)[:-1]])) <= window
        best[maybe[covered]] = host[maybe[covered]]
    found = np.flatnonzero(best >= 0)
    return cand[found], cand[best[found]], _from_host(keys, shift, offset, found, best[found], count[found], window)


def _from_host(keys: I64, shift: np.int64, offset: I64, objects: I64, hosts: I64, lengths: I64, window: int) -> I64:
    """Each visit of ``objects`` (ranks in ``keys``, ``lengths`` visits each) less the start of the
    visit of its host (rank) begun last before it; ``window + 1`` where the host has none."""
    mine = keys[runs(offset[objects], lengths)] % shift
    host = np.repeat(hosts, lengths)
    before = np.searchsorted(keys, host * shift + mine, side="right") - 1
    return np.where(before >= offset[host], mine - keys[np.maximum(before, 0)] % shift, window + 1)


def fit_covisits(bounds: I64, time: NDArray[np.integer], lasting: NDArray[np.bool_], points: int) -> CoVisits | None:
    """The co-visit law of a trace's objects (accesses of object o at rows ``bounds[o]`` to
    ``bounds[o + 1]`` of ``time``, ms, time order within one object) among those that ``lasting``
    marks: neither made nor removed in the window, as the generator's only moves them (a job's
    files come in bursts by their creations). None when no two are co-visited. The rows of the law
    are the (visits, size) with the most objects, at most ``MAX_COVISIT_ROWS``."""
    visits = visits_of(bounds, time, WINDOW_MS)
    objects, group = co_visited(visits, WINDOW_MS, np.flatnonzero(lasting))
    if objects.size < 2:
        return None
    sizes = np.bincount(group)
    size = sizes[group]
    leader = objects[np.searchsorted(group, group, side="left")]
    member = (size >= 2) & (leader != objects)
    nested, nested_offset = _nested_law(visits, objects[~member], int(time[: int(bounds[-1])].max(initial=0)), points)
    if not (size >= 2).any():
        if not nested:
            return None
        return CoVisits(window_ms=WINDOW_MS, offset=Distribution.from_samples(np.zeros(1), points), nested=nested, nested_offset=nested_offset)
    n = visits.count[objects]
    grouped = size >= 2
    rows = [CoVisitRow(visits=v, size=k, share=share) for v, k, share in _law_rows(n[grouped], size[grouped], np.bincount(n))]
    delays = visits.start[visits.first[objects[member]]] - visits.start[visits.first[leader[member]]]
    offset = Distribution.from_samples(delays.astype(np.float64), points)
    jitter = _jitter(visits, objects[member], leader[member])
    return CoVisits(window_ms=WINDOW_MS, groups=rows, offset=offset, nested=nested, nested_offset=nested_offset,
                    jitter=Distribution.from_samples(jitter, points) if jitter.any() else None)


def _jitter(visits: Visits, members: I64, leaders: I64) -> NDArray[np.float64]:
    """Each member's delay from its group's first object at each of its visits, less the member's
    median delay: how much a daemon's order within its rounds varies (a listing takes a few ms
    more or less from round to round)."""
    n = visits.count[members]
    own = runs(visits.first[members], n)
    lead = runs(visits.first[leaders], n)
    delay = (visits.start[own] - visits.start[lead]).astype(np.float64)
    member = np.repeat(np.arange(members.size), n)
    order = np.lexsort((delay, member))
    begin = np.cumsum(n) - n
    median = (delay[order[begin + (n - 1) // 2]] + delay[order[begin + n // 2]]) / 2.0
    return np.asarray(delay - median[member])


def _nested_law(visits: Visits, eligible: I64, span: int, points: int) -> tuple[list[NestedRow], Distribution | None]:
    """The nested rows (``NestedRow``) among ``eligible`` objects (those that follow no group's
    first object) and the law of their delay from the host's visit, or ([], None)."""
    objects, hosts, delays = nested_in(visits, WINDOW_MS, eligible, span)
    if not objects.size:
        return [], None
    law = _law_rows(visits.count[objects], visits.count[hosts], np.bincount(visits.count[eligible]))
    rows = [NestedRow(visits=v, host_visits=m, share=share) for v, m, share in law]
    return rows, Distribution.from_samples(delays.astype(np.float64), points)


def _law_rows(n: I64, other: I64, objects_of_n: I64) -> list[tuple[int, int, float]]:
    """(visits, other, share) rows of a law: the (n, other) pairs of the objects counted, the
    ``MAX_COVISIT_ROWS`` most common, in (visits, other) order, each with its share of the
    ``objects_of_n[n]`` objects of n visits."""
    pairs, counts = np.unique(np.stack([n, other]), axis=1, return_counts=True)
    keep = np.argsort(-counts, kind="stable")[:MAX_COVISIT_ROWS]
    return [
        (int(pairs[0, i]), int(pairs[1, i]), min(1.0, int(counts[i]) / int(objects_of_n[pairs[0, i]])))
        for i in sorted(keep.tolist(), key=lambda i: (int(pairs[0, i]), int(pairs[1, i])))
    ]
