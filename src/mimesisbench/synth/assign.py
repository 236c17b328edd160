"""Give drawn streams (or deletion delays) to objects at random, so that each fits its room.

A type's streams (their counts, commands and gaps) and its deletion delays are drawn apart from
when their objects appear, but every stream and every deletion a trace shows lies in its window:
an object made late had only the rest of it. Drawn blindly, late objects lose the tails of their
streams and their deletions to the window's end (13 % of a mixed trace's reader files were never
deleted). Sorted (the longest to the object with the most room), every one fits but an object's
life is tied to its birth: on that trace the files made first lived 330 s and those made last
17 s, no file of the type was deleted in the first 300 s, the live files piled up mid-window and
the offered load per minute rose and fell 4.4-fold where the trace's varied 1.2-fold.

``fitting_assignment`` keeps the assignment random and mends only what does not fit: starting
from a random permutation, each object whose stream is too long swaps with a random object whose
stream fits it and which has room for the long one, in vectorised rounds; the few left are
matched by rank with as few objects of the most room as it takes. Streams longer than any room
go to the largest rooms first (squeezed or cut there, they lose the least). The streams are only permuted: their law
is unchanged. Written here because the assignment libraries (scipy's ``linear_sum_assignment``)
solve for an optimum, which would be the sort again, and in cubic time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

I64 = NDArray[np.int64]
#: swap rounds; each mends the misfits that drew a willing partner (most do within a few dozen)
ROUNDS = 64


def fitting_assignment(length: I64, room: I64, rng: np.random.Generator) -> I64:
    """``out[i]``: the index of the stream or delay (of ``length``) object ``i`` (of ``room``)
    takes, a permutation. The streams longer than every room the others leave go to the objects
    with the most room, longest first (they are squeezed or cut there, the least of all); the
    others are given at random, an object whose stream would not fit swapping with a partner for
    which both fit, and those no partner was found for matched by rank with as few objects of the
    most room as it takes (``_random_fit``)."""
    n = int(length.size)
    out = np.empty(n, dtype=np.int64)
    objects = np.argsort(-room, kind="stable")  # most room first
    streams = np.argsort(-length, kind="stable")  # longest first
    taken = 0
    # reserve the largest rooms for the streams that fit no room left to them
    while taken < n and length[streams[taken]] > room[objects[taken]]:
        taken += 1
    out[objects[:taken]] = streams[:taken]
    rest_objects, rest_streams = objects[taken:], streams[taken:]
    if rest_objects.size:
        out[rest_objects] = rest_streams[_random_fit(length[rest_streams], room[rest_objects], rng)]
    return out


def _random_fit(length: I64, room: I64, rng: np.random.Generator) -> I64:
    """``fitting_assignment`` for streams that each fit the largest room."""
    n = int(length.size)
    out = rng.permutation(n).astype(np.int64)
    if n < 2:
        return out
    for _ in range(ROUNDS):
        bad = np.flatnonzero(length[out] > room)
        if bad.size == 0:
            break
        partner = rng.integers(0, n, bad.size)
        fits = length[out] <= room
        ok = fits[partner] & (length[out[bad]] <= room[partner]) & (length[out[partner]] <= room[bad])
        bad, partner = bad[ok], partner[ok]
        # one swap per partner this round
        partner, first = np.unique(partner, return_index=True)
        bad = bad[first]
        out[bad], out[partner] = out[partner], out[bad].copy()
    # the rest by rank among themselves and the objects with the most room (the sort, on as few
    # objects as it takes: twice as many each time, the whole type at worst)
    top = np.argsort(-room, kind="stable")
    size = 1
    while True:
        bad = np.flatnonzero(length[out] > room)
        if bad.size == 0 or size >= n:
            break
        size = min(n, 2 * max(size, int(bad.size)))
        pool = np.union1d(bad, top[:size])
        by_room = pool[np.argsort(-room[pool], kind="stable")]
        streams = out[pool]
        out[by_room] = streams[np.argsort(-length[streams], kind="stable")]
    return out
