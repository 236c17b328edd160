"""``synth.assign.fitting_assignment``: random assignments that fit wherever any assignment can."""

from __future__ import annotations

import numpy as np
import pytest

from mimesisbench.synth.assign import fitting_assignment


def test_a_permutation_that_fits_everything_a_sort_would() -> None:
    rng = np.random.default_rng(1)
    room = rng.integers(1, 1000, 5000).astype(np.int64)
    # lengths that the sort fits exactly: a random permutation of the rooms, each shortened a little
    length = (rng.permutation(room) * rng.uniform(0.5, 1.0, room.size)).astype(np.int64)
    out = fitting_assignment(length, room, np.random.default_rng(2))
    assert np.array_equal(np.sort(out), np.arange(room.size))
    assert not (length[out] > room).any()


def test_what_fits_anyway_stays_random() -> None:
    """Rooms far larger than every length: the assignment is a plain random permutation, with no
    tie between an object's room and its stream's length (a sort would make it -1 or 1)."""
    rng = np.random.default_rng(3)
    room = rng.integers(10_000, 20_000, 4000).astype(np.int64)
    length = rng.integers(0, 5000, 4000).astype(np.int64)
    out = fitting_assignment(length, room, np.random.default_rng(4))
    assert not (length[out] > room).any()
    assert abs(float(np.corrcoef(room, length[out])[0, 1])) < 0.1


def test_streams_too_long_for_any_room_take_the_largest_rooms() -> None:
    """A stream longer than every room goes to the object with the most room (squeezed or cut
    there, it loses the least); the rest fit as they can."""
    room = np.array([5, 5, 100, 40], dtype=np.int64)
    length = np.array([500, 30, 1, 2], dtype=np.int64)  # 500 fits nowhere; 30 only in 100 or 40
    out = fitting_assignment(length, room, np.random.default_rng(5))
    assert length[out[2]] == 500
    assert length[out[3]] == 30
    assert int((length[out] > room).sum()) == 1


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_inputs(n: int) -> None:
    out = fitting_assignment(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.random.default_rng(6))
    assert out.tolist() == list(range(n))
