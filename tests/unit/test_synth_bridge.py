"""Markov bridges (``synth.bridge``): walks of a chain that end with a given law of last states."""

from __future__ import annotations

import numpy as np
import pytest

from mimesisbench.synth.bridge import BRIDGE_STEPS, bridge_rows, end_weights
from mimesisbench.synth.chains import _Walker

# a reader's chain: 0 = getfileinfo, 1 = open, 2 = setTimes; a lookup leads to an open 80 % of the time
P = [[0.1, 0.8, 0.1], [0.6, 0.2, 0.2], [0.5, 0.3, 0.2]]
FIRST = [0.7, 0.0, 0.3]
LAST = [0.05, 0.9, 0.05]


def _walks(last: list[float] | None, lengths: np.ndarray, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    walker = _Walker(FIRST, P, last)
    desc = np.sort(lengths)[::-1].astype(np.int64)
    pos = np.cumsum(desc) - desc
    out = np.empty(int(desc.sum()), dtype=np.int16)
    walker.walk(out, desc, pos, np.random.default_rng(seed))
    return out, pos, desc


@pytest.mark.parametrize("length", [2, 3, 7, 40, 200])
def test_walks_end_with_the_law_of_last_states_and_keep_the_first(length: int) -> None:
    out, pos, desc = _walks(LAST, np.full(20_000, length))
    last = np.bincount(out[pos + desc - 1], minlength=3) / desc.size
    first = np.bincount(out[pos], minlength=3) / desc.size
    assert last == pytest.approx(LAST, abs=0.015)
    assert first == pytest.approx(FIRST, abs=0.01)


def test_plain_walks_end_in_the_chain_s_state() -> None:
    out, pos, desc = _walks(None, np.full(20_000, 40))
    last = np.bincount(out[pos + desc - 1], minlength=3) / desc.size
    assert last[1] < 0.6  # the stationary share of open: far from the 0.9 a bridge gives


def test_a_bridge_keeps_the_chain_s_transitions_where_it_is_free() -> None:
    """Far from their ends (more than ``BRIDGE_STEPS`` steps left) walks step by the chain itself."""
    out, pos, desc = _walks(LAST, np.full(2_000, BRIDGE_STEPS + 60))
    walks = out.reshape(desc.size, -1)[:, : 50]
    prev, nxt = walks[:, :-1].ravel(), walks[:, 1:].ravel()
    from_info = nxt[prev == 0]
    assert np.mean(from_info == 1) == pytest.approx(0.8, abs=0.02)


def test_mixed_lengths_end_with_the_law_over_all_of_them() -> None:
    lengths = np.random.default_rng(3).integers(2, 60, 20_000)
    out, pos, desc = _walks(LAST, lengths)
    last = np.bincount(out[pos + desc - 1], minlength=3) / desc.size
    assert last == pytest.approx(LAST, abs=0.015)


def test_end_weights_need_walks_of_two_accesses() -> None:
    assert end_weights(np.asarray(P), np.asarray(FIRST), np.asarray(LAST), np.array([1, 1])) is None


def test_unreachable_ends_fall_back_to_the_chain() -> None:
    """A chain that can never reach state 2: its rows stay the chain's own, whatever the weights."""
    p = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    e = end_weights(p, np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), np.full(10, 5))
    assert e is None
    rows = bridge_rows(p, np.array([0.0, 0.0, 1.0]), 4).reshape(4, 3, 3) - np.arange(12).reshape(4, 3, 1)
    assert rows[:, 0, :] == pytest.approx(np.tile([0.5, 1.0, 1.0], (4, 1)))
