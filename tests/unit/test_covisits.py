"""Co-visited objects: finding them in a trace (``model.covisits``) and visiting them together in a
schedule (``synth.covisits``), on hand-made arrays whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from mimesisbench.model.covisits import co_visited, fit_covisits, nested_in, visits_of
from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import CoVisitRow, CoVisits, NestedRow
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.covisits import covisit
from mimesisbench.synth.streams import RANK, RANK_BITS


def _bounds(*lengths: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def test_a_visit_is_a_run_of_close_accesses_that_other_events_end() -> None:
    time = np.array([0, 50, 500, 520, 2000, 0, 10, 20], dtype=np.int64)
    access = np.array([1, 1, 1, 1, 1, 1, 0, 1], dtype=bool)  # object 1's second event is, say, a rename
    v = visits_of(_bounds(5, 3), time, 100, access)
    assert v.count.tolist() == [3, 2]
    assert v.start.tolist() == [0, 500, 2000, 0, 20]
    assert v.row.tolist() == [0, 2, 4, 5, 7]
    assert v.first.tolist() == [0, 3]


def test_objects_whose_every_visit_comes_together_are_one_group() -> None:
    time = np.array(
        [0, 1000, 2000]  # A
        + [5, 1003, 2010]  # B: each visit within 100 of A's
        + [0, 1000, 2500]  # C: its last visit 500 from A's
        + [3, 1001]  # D: as A's first two, but two visits only
        + [7, 1009, 2020],  # E: with B
        dtype=np.int64,
    )
    v = visits_of(_bounds(3, 3, 3, 2, 3), time, 100)
    objects, group = co_visited(v, 100)
    groups: dict[int, set[int]] = {}
    for o, g in zip(objects.tolist(), group.tolist()):
        groups.setdefault(g, set()).add(o)
    assert sorted(map(sorted, groups.values())) == [[0, 1, 4], [2], [3]]


def test_the_fitted_law_gives_each_group_size_its_share_and_the_members_delays() -> None:
    # three objects of 3 visits, two of them together 5 ms apart; one of 2 visits alone
    time = np.array([0, 1000, 2000, 5, 1005, 2005, 300, 1500, 2700, 0, 900], dtype=np.int64)
    lasting = np.ones(4, dtype=bool)
    law = fit_covisits(_bounds(3, 3, 3, 2), time, lasting, points=16)
    assert law is not None
    assert [(r.visits, r.size) for r in law.groups] == [(3, 2)]
    assert law.groups[0].share == pytest.approx(2 / 3)
    assert law.offset.values[0] == pytest.approx(5.0) and law.offset.values[-1] == pytest.approx(5.0)
    assert fit_covisits(_bounds(3, 3), np.array([0, 1000, 2000, 400, 1400, 2400]), lasting[:2], points=16) is None
    # objects made or removed in the window are no candidates
    assert fit_covisits(_bounds(3, 3, 3, 2), time, np.array([True, False, True, True]), points=16) is None


def _events(per_object: list[list[tuple[int, OpCode]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key, meta, target = [], [], []
    for obj, events in enumerate(per_object):
        for t_us, op in events:
            key.append((t_us << RANK_BITS) | int(RANK[op]))
            meta.append(int(op))
            target.append(obj)
    return np.array(key, dtype=np.int64), np.array(meta, dtype=np.uint32), np.array(target, dtype=np.int64)


def _never_moves(key: np.ndarray, meta: np.ndarray, target: np.ndarray, law: CoVisits, window_us: int) -> None:
    """``covisit`` moves nothing, whatever the seed."""
    for seed in range(6):
        moved_key = key.copy()
        assert covisit(moved_key, meta, target, law, window_us, np.random.default_rng(seed)) == 0
        assert moved_key.tolist() == key.tolist()


def test_a_group_takes_its_first_objects_visit_times_delayed_by_its_offset() -> None:
    second = 1_000_000
    listed = [[(k * 2 * second + phase, OpCode.LIST_DIR) for k in range(5)] for phase in (100_000, 700_000, 1_300_000)]
    key, meta, target = _events(listed)
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=5, size=3, share=1.0)],
                   offset=Distribution(values=[3.0, 3.0], weights=[0.5, 0.5]))
    moved = covisit(key, meta, target, law, 20 * second, np.random.default_rng(1))
    assert moved == 2
    times = (key >> RANK_BITS).reshape(3, 5)
    leader = int(np.argmin(times[:, 0]))
    for obj in range(3):
        delay = times[obj] - times[leader]
        assert delay.tolist() == ([0] * 5 if obj == leader else [3000] * 5)
    assert sorted(times[leader].tolist()) == times[leader].tolist()


def test_objects_made_or_removed_in_the_window_keep_their_times() -> None:
    second = 1_000_000
    # object 1 is made at 5 s and deleted at 9 s: its life holds its visits, which never move, and
    # it is no group's member nor leader
    lister = [(k * second, OpCode.LIST_DIR) for k in (1, 3, 5)]
    made = [(5 * second, OpCode.MKDIRS), (6 * second, OpCode.LIST_DIR), (7 * second, OpCode.LIST_DIR),
            (8 * second, OpCode.LIST_DIR), (9 * second, OpCode.DELETE_DIR)]
    key, meta, target = _events([lister, made])
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=3, size=2, share=1.0)],
                   offset=Distribution(values=[2.0, 2.0], weights=[0.5, 0.5]))
    _never_moves(key, meta, target, law, 20 * second)


def test_an_object_its_own_stream_deletes_keeps_its_times() -> None:
    """A directory whose stream deletes it mid-stream (its deletes are accesses, ranked as such:
    a job's control directory, made again between its deletes by files ``synth.recreation``
    placed before this pass) is no group's member nor leader: moved, its deletes would no longer
    follow the files that make it again (a real jobs trace's schedule then deleted directories
    that were not there)."""
    second = 1_000_000
    access = int(RANK[OpCode.OPEN])
    lister = [(k * second, OpCode.LIST_DIR) for k in (1, 3, 5)]
    key, meta, target = _events([lister, lister])
    # object 1: listed, deleted, listed again: three visits, as object 0's, but its own stream deletes it
    key[3:] = np.array([(t + 500_000) << RANK_BITS | access for t, _ in lister], dtype=np.int64)
    meta[4] = int(OpCode.DELETE_DIR)
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=3, size=2, share=1.0)],
                   offset=Distribution(values=[2.0, 2.0], weights=[0.5, 0.5]))
    _never_moves(key, meta, target, law, 20 * second)
    meta[4] = int(OpCode.LIST_DIR)  # the same object only listed moves
    assert covisit(key.copy(), meta, target, law, 20 * second, np.random.default_rng(0)) == 1


def test_a_member_delayed_past_the_window_ends_in_it() -> None:
    second = 1_000_000
    window = 10 * second
    lead = [(k * 4 * second, OpCode.LIST_DIR) for k in (0, 1, 2)]
    lead[-1] = (window - 1000, OpCode.LIST_DIR)  # 1 ms before the end
    other = [(k * 4 * second + second, OpCode.LIST_DIR) for k in (0, 1)] + [(window - 500_000, OpCode.LIST_DIR)]
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=3, size=2, share=1.0)],
                   offset=Distribution(values=[5.0, 5.0], weights=[0.5, 0.5]))
    ends = set()
    for seed in range(8):
        key, meta, target = _events([lead, other])
        assert covisit(key, meta, target, law, window, np.random.default_rng(seed)) == 1
        t = key >> RANK_BITS
        ends.add(int(t.max()))
        assert sorted(t[target == 0].tolist()) == t[target == 0].tolist()
        assert sorted(t[target == 1].tolist()) == t[target == 1].tolist()
    # object 0 led (object 1 delayed 5 ms past the end, moved back to it: the group cannot move
    # earlier, its first visit is at the window's start) or object 1 led
    assert ends == {window - 1, window - 500_000 + 5000}


def test_a_group_delayed_past_the_window_moves_back_whole() -> None:
    """A daemon's round seen to the window's end: its group moves earlier as a whole, so every
    member keeps its first object's gaps (the clip cut each member's last gap short)."""
    second = 1_000_000
    window = 10 * second
    lead = [(second + k * 3 * second, OpCode.LIST_DIR) for k in range(3)]
    lead[-1] = (window - 1000, OpCode.LIST_DIR)
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=3, size=2, share=1.0)],
                   offset=Distribution(values=[5.0, 5.0], weights=[0.5, 0.5]))
    for seed in range(6):
        key, meta, target = _events([lead, [(t + 20_000, op) for t, op in lead[:2]] + [(window - 2000, OpCode.LIST_DIR)]])
        assert covisit(key, meta, target, law, window, np.random.default_rng(seed)) == 1
        t = (key >> RANK_BITS).reshape(2, 3)
        assert int(t.max()) == window - 1
        assert np.diff(t[0]).tolist() == np.diff(t[1]).tolist()
        assert abs(int(t[1, 0] - t[0, 0])) == 5000


def test_a_group_is_made_of_objects_whose_visits_span_alike() -> None:
    """Two objects visited twice 0.1 s apart and two visited twice 2 s apart, in pairs: each pair
    is of one kind, so no object's visits move from 0.1 s apart to 2 s or back."""
    second = 1_000_000
    quick = [[(t0, OpCode.GETFILEINFO), (t0 + 150_000, OpCode.GETFILEINFO)] for t0 in (1 * second, 5 * second)]
    slow = [[(t0, OpCode.GETFILEINFO), (t0 + 2 * second, OpCode.GETFILEINFO)] for t0 in (2 * second, 7 * second)]
    law = CoVisits(window_ms=100, groups=[CoVisitRow(visits=2, size=2, share=1.0)],
                   offset=Distribution(values=[3.0, 3.0], weights=[0.5, 0.5]))
    for seed in range(8):
        key, meta, target = _events([quick[0], slow[0], quick[1], slow[1]])
        assert covisit(key, meta, target, law, 20 * second, np.random.default_rng(seed)) == 2
        t = (key >> RANK_BITS).reshape(4, 2)
        assert np.diff(t, axis=1).ravel().tolist() == [150_000, 2 * second, 150_000, 2 * second]


def test_a_members_delay_varies_from_round_to_round_as_the_traces() -> None:
    """The fit keeps how much a member's delay varies round to round (``jitter``: its delay less
    its median, over its visits); the generator adds that variation to each later round, and
    without it a member keeps one delay."""
    second = 1_000_000
    wobble = [0, 3, -2, 4, -3, 0]  # ms, the member's delay less its median (5 ms), per round
    lister = [k * 2000 for k in range(6)]
    time = np.array(lister + [t + 5 + w for t, w in zip(lister, wobble)], dtype=np.int64)
    law = fit_covisits(_bounds(6, 6), time, np.ones(2, dtype=bool), points=32)
    assert law is not None and law.jitter is not None
    assert {float(v) for v in law.jitter.values} == {float(w) for w in wobble}
    steady = fit_covisits(_bounds(6, 6), np.array(lister + [t + 5 for t in lister], dtype=np.int64),
                          np.ones(2, dtype=bool), points=32)
    assert steady is not None and steady.jitter is None
    events = [[(t * 1000 + 400_000, OpCode.LIST_DIR) for t in lister], [(t * 1000 + 700_000, OpCode.LIST_DIR) for t in lister]]
    spread = (law.jitter.values[-1] - law.jitter.values[0]) * 1000
    varied = False
    for seed in range(6):
        key, meta, target = _events(events)
        assert covisit(key, meta, target, law, 20 * second, np.random.default_rng(seed)) == 1
        t = (key >> RANK_BITS).reshape(2, 6)
        delay = (t[1] - t[0]) * np.sign(t[1, 0] - t[0, 0])  # whichever leads
        assert abs(int(delay[0]) - 5000) <= 1000 * law.offset.values[-1]
        assert (np.abs(delay - delay[0]) <= spread + 1).all()
        varied |= bool(np.ptp(delay) > 0)
        key, meta, target = _events(events)
        covisit(key, meta, target, steady, 20 * second, np.random.default_rng(seed))
        t = (key >> RANK_BITS).reshape(2, 6)
        assert np.ptp(t[1] - t[0]) == 0
    assert varied


def test_an_object_visited_on_some_of_anothers_visits_is_nested_in_it() -> None:
    """A table's directory on 10 queries a minute apart, one partition on 4 of them (20 ms later),
    an object on 3 visits of its own; a poller visiting every 150 ms holds any visit by chance."""
    table = [k * 60_000 for k in range(10)]
    partition = [table[k] + 20 for k in (1, 4, 5, 8)]
    loner = [7_000, 31_000, 50_000]
    poller = list(range(0, 600_000, 150))
    pair = [poller[k * 1000] + 30 for k in (1, 2)]  # two visits within 100 ms of the poller's
    time = np.array(table + partition + loner + poller + pair, dtype=np.int64)
    v = visits_of(_bounds(10, 4, 3, len(poller), 2), time, 100)
    assert v.count[3] == 4000
    objects, hosts, _ = nested_in(v, 100, np.arange(5), span=600_000)
    assert dict(zip(objects.tolist(), hosts.tolist())) == {1: 0}
    law = fit_covisits(_bounds(10, 4, 3, len(poller), 2), time, np.ones(5, dtype=bool), points=16)
    assert law is not None and law.nested == [NestedRow(visits=4, host_visits=10, share=1.0)]
    assert law.nested_offset is not None and law.nested_offset.values == [20.0]


def test_a_nested_object_takes_some_of_its_hosts_visits() -> None:
    second = 1_000_000
    host = [(k * 3 * second, OpCode.LIST_DIR) for k in range(9)]
    guest = [(k * 7 * second + 1_000_000, OpCode.GETFILEINFO_DIR) for k in range(3)]
    law = CoVisits(window_ms=100, offset=Distribution(values=[1.0, 1.0], weights=[0.5, 0.5]),
                   nested=[NestedRow(visits=3, host_visits=9, share=1.0)],
                   nested_offset=Distribution(values=[20.0, 20.0], weights=[0.5, 0.5]))
    picked = set()
    for seed in range(6):
        key, meta, target = _events([host, guest])
        assert covisit(key, meta, target, law, 30 * second, np.random.default_rng(seed)) == 1
        t = key >> RANK_BITS
        host_t, guest_t = t[target == 0], np.sort(t[target == 1])
        assert host_t.tolist() == [h for h, _ in host]  # the host never moves
        assert guest_t.size == 3 and set((guest_t - 20_000).tolist()) <= set(host_t.tolist())
        picked.add(tuple(guest_t.tolist()))
    assert len(picked) > 1  # a random 3 of the 9 visits, not always the same
