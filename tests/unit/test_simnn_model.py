"""The simulated NameNode's model: the native event loop against the simpy reference (the same
times to the last bit), and both against queueing cases computed by hand (M/M/1 and M/D/1
means, a lock serialising writers, shared readers, group commit, fair against unfair hand-over).

Every exact case uses constant costs (``cpu_cv`` 0, ``delay_sigma`` 0): no random draw, so the
answer does not depend on numpy's streams. The two statistical cases (M/M/1, M/D/1 with Poisson
arrivals) compare a mean over 200,000 calls with the formula within 5 %, about ten of its
standard errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mimesisbench.errors import ConfigError
from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.calls import Calls, make_calls
from mimesisbench.sim.engine import simulate
from mimesisbench.sim.model import (
    LOCK_NONE,
    MAX_RPCS,
    STALL_MEAN,
    STALL_QUEUE_POWER,
    Calibration,
    OpCost,
    ServerSettings,
)
from mimesisbench.sim.ops import simulate_micro, simulate_ops

READ, WRITE = OpCode.GETFILEINFO, OpCode.MKDIRS
ENGINES = ("native", "simpy")


def constant(server_s: float, *, client_s: float = 0.0, delay_s: float = 0.0, lock_share: float = 1.0) -> OpCost:
    return OpCost(client_cpu_s=client_s, server_cpu_s=server_s, delay_s=delay_s, delay_sigma=0.0, cpu_cv=0.0,
                  lock_share=lock_share)


def settings(**changes: object) -> ServerSettings:
    base = dict(handlers=10, cores=0, colocated=False, fair=True, sync_s=0.0, wake_s=0.0, park_s=0.0)
    base.update(changes)
    return ServerSettings(**base)  # type: ignore[arg-type]


def run(ops: list[OpCode], arrive: np.ndarray, cal: Calibration, outstanding: int, engine: str):
    codes = np.array([int(o) for o in ops], dtype=np.uint8)
    return simulate_ops(codes, arrive, cal, outstanding, engine=engine).times


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("colocated", [True, False])
@pytest.mark.parametrize("cores", [0, 2])
@pytest.mark.parametrize("outstanding", [0, 6])
@pytest.mark.parametrize("async_edits", [True, False])
def test_the_native_loop_gives_the_reference_s_times(fair: bool, colocated: bool, cores: int, outstanding: int,
                                                     async_edits: bool) -> None:
    _same_times(fair=fair, colocated=colocated, cores=cores, outstanding=outstanding, async_edits=async_edits)
    # with slow syncs
    _same_times(fair=fair, colocated=colocated, cores=cores, outstanding=outstanding, async_edits=async_edits,
                slow_sync_p=0.05)


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("colocated", [True, False])
def test_the_native_loop_gives_the_reference_s_times_with_a_switch_between_threads(fair: bool,
                                                                                   colocated: bool) -> None:
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=6, async_edits=True, dispatch_s=4e-6)
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=0, async_edits=True, dispatch_s=4e-6)
    # a woken thread with no park to pay still does not pay the switch (both engines alike)
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=6, async_edits=True, dispatch_s=4e-6,
                park_s=0.0)


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("colocated", [True, False])
@pytest.mark.parametrize("outstanding", [0, 6])
def test_the_native_loop_gives_the_reference_s_times_with_an_edit_log_thread(fair: bool, colocated: bool,
                                                                            outstanding: int) -> None:
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=True, edit_s=9e-6)
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=True, edit_s=9e-6,
                dispatch_s=4e-6)
    # without asynchronous edit logging there is no such thread: the setting is ignored
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=False, edit_s=9e-6)


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("colocated", [True, False])
@pytest.mark.parametrize("outstanding", [0, 6])
def test_the_native_loop_gives_the_reference_s_times_with_the_host_s_other_work(fair: bool, colocated: bool,
                                                                               outstanding: int) -> None:
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=True, edit_s=9e-6,
                dispatch_s=4e-6, other_share=0.3)
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=False,
                other_share=0.6)
    # woken threads placed behind a run by chance, another core free or not
    _same_times(fair=fair, colocated=colocated, cores=2, outstanding=outstanding, async_edits=True, edit_s=9e-6,
                other_share=0.3, other_place=0.3)


@pytest.mark.parametrize("seed", [7, 8])
def test_readers_woken_together_by_a_fair_lock_ask_for_cores_in_the_same_order(seed: int) -> None:
    """A heavier open loop (2,000 calls in 20 ms) on two busy cores: a fair lock hands itself to a
    run of readers at once, and whether the later ones find the cores wanted (and stall) depends
    on the earlier ones having asked for a core as they woke. The reference once asked only when
    its handler resumed, after the others' checks: one engine's reader stalled where the other's
    did not, and every call behind it came out a stall (2 ms) apart."""
    _same_times(fair=True, colocated=True, cores=2, outstanding=0, async_edits=True, seed=seed, span_s=0.02)


@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("outstanding", [0, 3])
def test_the_native_loop_gives_the_reference_s_times_with_clients_of_their_own(fair: bool, outstanding: int) -> None:
    _same_times(fair=fair, colocated=True, cores=2, outstanding=outstanding, async_edits=True, clients=3,
                dispatch_s=4e-6, edit_s=9e-6)
    _same_times(fair=fair, colocated=False, cores=0, outstanding=outstanding, async_edits=False, clients=2)


def _same_times(*, fair: bool, colocated: bool, cores: int, outstanding: int, async_edits: bool, seed: int = 7,
                span_s: float = 0.05, dispatch_s: float = 0.0, park_s: float = 8e-6, edit_s: float = 0.0,
                clients: int = 1, other_share: float = 0.0, other_place: float | None = None,
                slow_sync_p: float = 0.0) -> None:
    rng = np.random.default_rng(seed)
    costs = {
        READ: OpCost(10e-6, 30e-6, 50e-6, delay_sigma=0.4, cpu_cv=0.8, client_wake_s=15e-6, client_spin_s=8e-6,
                     server_wake_s=40e-6,
                     stall_p=0.01, stall_s=2e-3, stall_queue=3.0),
        # a write whose stall comes with a chance growing with the run queue (its draws for it)
        OpCode.CREATE: OpCost(15e-6, 80e-6, 60e-6, lock_share=0.7, server_wake_s=100e-6, server_spin_s=30e-6,
                              handler_wake_s=30e-6, stall_p=0.02, stall_s=1e-3, stall_queue=1.5),
        WRITE: OpCost(12e-6, 60e-6, 40e-6, cpu_cv=1.5, client_wake_s=5e-6),
    }
    if slow_sync_p:  # the creates' edits make their syncs slow more often than the other writes'
        costs = {op: replace(cost, slow_sync_p=slow_sync_p * (2 if op is OpCode.CREATE else 1) if op != READ else 0.0)
                 for op, cost in costs.items()}
    cal = Calibration(costs, ServerSettings(handlers=4, cores=cores, colocated=colocated, fair=fair, sync_s=100e-6,
                                            wake_s=20e-6, park_s=park_s, async_edits=async_edits,
                                            dispatch_s=dispatch_s, edit_s=edit_s, other_share=other_share,
                                            other_s=0.5e-3, other_place=other_place, slow_sync_s=0.4e-3))
    n = 2000
    ops = rng.choice([int(READ), int(OpCode.CREATE), int(WRITE)], n, p=[0.6, 0.3, 0.1]).astype(np.uint8)
    arrive = np.zeros(n) if outstanding else np.sort(rng.uniform(0.0, span_s, n))
    calls, _ = make_calls(ops, arrive, cal, seed=3)
    client = rng.integers(0, clients, n).astype(np.uint32) if clients > 1 else None
    assert (calls.sync_slow > 0).any() == (slow_sync_p > 0)
    native = simulate(calls, cal.settings, outstanding, client=client, engine="native")
    reference = simulate(calls, cal.settings, outstanding, client=client, engine="simpy")
    assert native.engine == "native" and reference.engine == "simpy"
    np.testing.assert_array_equal(native.start, reference.start)
    np.testing.assert_array_equal(native.end, reference.end)
    np.testing.assert_array_equal(native.lock_wait, reference.lock_wait)
    np.testing.assert_array_equal(native.client_wakes, reference.client_wakes)
    np.testing.assert_array_equal(native.server_wakes, reference.server_wakes)
    np.testing.assert_array_equal(native.handler_wakes, reference.handler_wakes)
    np.testing.assert_array_equal(native.lock_parks, reference.lock_parks)
    np.testing.assert_array_equal(native.run_queue, reference.run_queue)
    # the same waits for a core, summed in another order
    assert native.core_wait_s == pytest.approx(reference.core_wait_s, rel=1e-9, abs=1e-12)
    assert native.lock_parks.any()
    assert np.all(native.end > native.start)


@pytest.mark.parametrize("engine", ENGINES)
def test_each_client_s_slots_hold_only_its_own_calls(engine: str) -> None:
    """Six calls due at once, alternating between a client of slow calls (1 ms away, calls 0, 2,
    4) and one of fast calls (0.1 ms, calls 1, 3, 5). With a slot each, the fast client does not
    wait for the slow one: 0.1, 0.2, 0.3 ms; 1, 2, 3 ms. With both in one client of two slots
    (first come, first served) a fast call waits behind the slow ones: call 2 takes the slot
    call 1 frees at 0.1 ms and call 3 the one call 0 frees at 1 ms."""
    slow, fast = OpCode.LIST_DIR, READ
    cal = Calibration({slow: constant(0.0, delay_s=1e-3), fast: constant(0.0, delay_s=0.1e-3)}, settings())
    ops = np.array([int(slow), int(fast)] * 3, dtype=np.uint8)
    calls, _ = make_calls(ops, np.zeros(6), cal, seed=0)
    own = simulate(calls, cal.settings, 1, client=np.array([0, 1] * 3, dtype=np.uint32), engine=engine)
    np.testing.assert_allclose(own.end * 1e3, [1.0, 0.1, 2.0, 0.2, 3.0, 0.3])
    shared = simulate(calls, cal.settings, 2, engine=engine)
    np.testing.assert_allclose(shared.end * 1e3, [1.0, 0.1, 1.1, 1.1, 2.1, 1.2])


@pytest.mark.parametrize("engine", ENGINES)
def test_each_call_needs_a_client_and_a_client_number_is_bounded(engine: str) -> None:
    cal = Calibration({READ: constant(1e-6)}, settings())
    calls, _ = make_calls(np.full(3, int(READ), dtype=np.uint8), np.zeros(3), cal, seed=0)
    with pytest.raises(ValueError, match="3 calls but 2 clients"):
        simulate(calls, cal.settings, 1, client=np.zeros(2, dtype=np.uint32), engine=engine)
    with pytest.raises(ValueError, match="client must be below"):
        simulate(calls, cal.settings, 1, client=np.full(3, 1 << 20, dtype=np.uint32), engine=engine)


def _poisson_sojourn(cpu_cv: float, seed: int) -> float:
    """Mean time in system of a single-handler server at load 0.5 with Poisson arrivals."""
    service, rho, n = 100e-6, 0.5, 200_000
    rng = np.random.default_rng(seed)
    arrive = np.cumsum(rng.exponential(service / rho, n))
    cal = Calibration({READ: OpCost(0.0, service, 0.0, delay_sigma=0.0, cpu_cv=cpu_cv, lock_share=0.5)},
                      settings(handlers=1))
    times = run([READ] * n, arrive, cal, 0, "native")
    return float(times.service.mean())


def test_a_single_handler_with_exponential_service_is_m_m_1() -> None:
    service, rho = 100e-6, 0.5
    assert _poisson_sojourn(1.0, seed=11) == pytest.approx(service / (1 - rho), rel=0.05)


def test_a_single_handler_with_constant_service_is_m_d_1() -> None:
    service, rho = 100e-6, 0.5
    pollaczek_khinchine = service + rho * service / (2 * (1 - rho))
    assert _poisson_sojourn(0.0, seed=12) == pytest.approx(pollaczek_khinchine, rel=0.05)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_write_lock_serialises_writers_and_readers_share_it(engine: str) -> None:
    n, s = 200, 50e-6
    for op, expected in ((WRITE, n * s), (READ, n * s / 10)):  # 10 handlers, all due at once
        cal = Calibration({op: constant(s)}, settings())
        times = run([op] * n, np.zeros(n), cal, 10, engine)
        assert times.end.max() == pytest.approx(expected, rel=1e-9)
    # the writers' lock holds never overlap: sorted by end, each starts after the last ended
    cal = Calibration({WRITE: constant(s)}, settings())
    times = run([WRITE] * n, np.zeros(n), cal, 10, engine)
    ends = np.sort(times.end)
    assert np.allclose(np.diff(ends), s)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_burst_that_waited_for_a_core_starts_a_switch_after_it_is_freed(engine: str) -> None:
    """Reads due at once on one core: the first runs at once, each other waited for the core and
    starts ``dispatch_s`` after the one before it ended (the core idle meanwhile)."""
    n, s, g = 6, 50e-6, 7e-6
    cal = Calibration({READ: constant(s)}, settings(cores=1, dispatch_s=g))
    times = run([READ] * n, np.zeros(n), cal, n, engine)
    assert np.sort(times.end) == pytest.approx([k * s + (k - 1) * g for k in range(1, n + 1)], rel=1e-9)
    # with no switch, back to back
    times = run([READ] * n, np.zeros(n), Calibration({READ: constant(s)}, settings(cores=1)), n, engine)
    assert np.sort(times.end) == pytest.approx([k * s for k in range(1, n + 1)], rel=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_writes_share_edit_log_syncs(engine: str) -> None:
    d = 1e-3
    cal = Calibration({WRITE: constant(0.0)}, settings(sync_s=d))
    times = run([WRITE] * 10, np.zeros(10), cal, 10, engine)
    # the first write starts a sync alone; the nine that join during it share the next one
    assert sorted(times.end.round(9).tolist()) == [d] + [2 * d] * 9


@pytest.mark.parametrize("engine", ENGINES)
def test_a_slow_sync_holds_every_write_in_it_and_behind_it(engine: str) -> None:
    """1 ms syncs, writes of no other work; the second of ten writes at 0 makes its sync 3 ms
    slower, the fourth 5 ms (``Calls.sync_slow``). The first syncs alone (0-d); the nine others
    join the next, which lasts d + 5 ms (the longest extra among its edits): all nine end at
    2d + 5 ms. A write due at 1.5d joins the sync after that one, as long as it alone (d, at 2d +
    5 ms to 3d + 5 ms). A create's two RPCs have a draw each: its complete's makes its second sync
    slow."""
    d, x = 1e-3, 1e-3
    cal = Calibration({WRITE: constant(0.0), OpCode.CREATE: constant(0.0)}, settings(sync_s=d))
    ops = np.array([int(WRITE)] * 11, dtype=np.uint8)
    calls, _ = make_calls(ops, np.array([0.0] * 10 + [1.5 * d]), cal, seed=0)
    assert calls.sync_slow.size == 0  # no chance: no draw
    slow = np.zeros(11 * MAX_RPCS)
    slow[1 * MAX_RPCS], slow[3 * MAX_RPCS] = 3 * x, 5 * x
    times = simulate(replace(calls, sync_slow=slow), cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end * 1e3, [1.0] + [7.0] * 9 + [8.0])
    create, _ = make_calls(np.array([int(OpCode.CREATE)], dtype=np.uint8), np.zeros(1), cal, seed=0)
    complete_slow = np.array([2 * x, 0.0])  # the RPC with none after it, the complete, at offset 0
    times = simulate(replace(create, sync_slow=complete_slow), cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end * 1e3, [4.0])


def test_slow_syncs_are_drawn_for_write_rpcs_after_every_other_draw() -> None:
    """Each write RPC's slow sync comes with its operation's chance, an exponential extra of mean
    ``slow_sync_s``; a read has none, a create a draw for each of its two RPCs; the other arrays
    are exactly what they are without it."""
    base = {READ: replace(constant(50e-6), stall_p=0.1, stall_s=1e-3, cpu_cv=0.5),
            WRITE: replace(constant(80e-6), stall_p=0.1, stall_s=1e-3, stall_queue=3.0, cpu_cv=0.5),
            OpCode.CREATE: replace(constant(90e-6), cpu_cv=0.5)}
    n = 30_000
    ops = np.array([int(READ), int(WRITE), int(OpCode.CREATE)] * (n // 3), dtype=np.uint8)
    plain, _ = make_calls(ops, np.zeros(n), Calibration(base, settings(other_share=0.2, cores=2)), seed=5)
    chance = {op: replace(cost, slow_sync_p=0.0 if op is READ else 0.1) for op, cost in base.items()}
    slowed, _ = make_calls(ops, np.zeros(n), Calibration(chance, settings(other_share=0.2, cores=2,
                                                                          slow_sync_s=2e-3)), seed=5)
    for name in ("c_send", "net", "s_lock", "s_post", "stall", "stall_gate", "other_gap", "other_run"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(slowed, name))
    extra = slowed.sync_slow.reshape(n, MAX_RPCS)
    assert not extra[ops == int(READ)].any()
    assert not extra[ops == int(WRITE), 1].any()  # a mkdirs is one RPC: its draw at offset 0
    for drawn in (extra[ops == int(WRITE), 0], extra[ops == int(OpCode.CREATE), 0], extra[ops == int(OpCode.CREATE), 1]):
        assert 0.08 < float((drawn > 0).mean()) < 0.12
        assert 1.6e-3 < float(drawn[drawn > 0].mean()) < 2.4e-3
    # no length (simnn:?slow_sync=0ms): no sync is slow, whatever the chances
    none, _ = make_calls(ops, np.zeros(n), Calibration(chance, settings(slow_sync_s=0.0)), seed=5)
    assert none.sync_slow.size == 0


def test_the_native_loop_refuses_slow_syncs_of_the_wrong_size_or_not_finite() -> None:
    cal = Calibration({WRITE: constant(0.0)}, settings(sync_s=1e-3))
    calls, _ = make_calls(np.array([int(WRITE)] * 3, dtype=np.uint8), np.zeros(3), cal, seed=0)
    for bad in (np.zeros(3), np.array([0.0, float("nan"), 0.0, 0.0, 0.0, 0.0]), np.full(6, -1.0)):
        with pytest.raises(ValueError, match="sync_slow"):
            simulate(replace(calls, sync_slow=bad), cal.settings, 0, engine="native")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_edit_log_thread_sends_each_answer_after_the_sync_one_after_the_other(engine: str) -> None:
    """Asynchronous edit logging with the edit-log thread's CPU (``edit_s``, e per answer), one
    core, writes of no other work, 1 ms syncs. Three writes at 0: the first syncs alone (0-d) and
    is answered at d + e; the two others joined the next sync, which waits for the thread to send
    that answer (d + e to 2d + e), then are answered one after the other, at 2d + 2e and 2d + 3e.
    A read due at d (2 e of work) finds the thread on the core and waits for it: it ends at
    d + 3e."""
    d, e = 1e-3, 40e-6
    cal = Calibration({WRITE: constant(0.0), READ: constant(2 * e)}, settings(sync_s=d, cores=1, edit_s=e))
    times = run([WRITE] * 3 + [READ], np.array([0.0, 0.0, 0.0, d]), cal, 0, engine)
    np.testing.assert_allclose(times.end * 1e6, [(d + e) * 1e6, (2 * d + 2 * e) * 1e6, (2 * d + 3 * e) * 1e6,
                                                 (d + 3 * e) * 1e6])
    # the setting is the edit-log thread's: a handler that waits for its sync (Hadoop 2) has none
    hadoop2 = Calibration(cal.costs, replace(cal.settings, async_edits=False))
    times = run([WRITE] * 3, np.zeros(3), hadoop2, 0, engine)
    np.testing.assert_allclose(sorted(times.end * 1e6), [d * 1e6, 2 * d * 1e6, 2 * d * 1e6])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_create_waits_for_two_syncs_one_after_the_other(engine: str) -> None:
    """A create is two RPCs, its create and, once that is answered, its complete, each synced
    before its answer: one create alone waits 2 syncs; a mkdirs alone, 1. Ten creates at once:
    the first starts a sync alone (d), the nine others join the next (d-2d); then the first's
    complete joins the one after it (2d-3d), while the nine's completes join the fourth (3d-4d)."""
    d = 1e-3
    cal = Calibration({OpCode.CREATE: constant(0.0), WRITE: constant(0.0)}, settings(sync_s=d))
    alone = run([OpCode.CREATE, WRITE], np.array([0.0, 10 * d]), cal, 0, engine)
    np.testing.assert_allclose(alone.end - alone.start, [2 * d, d])
    ten = run([OpCode.CREATE] * 10, np.zeros(10), cal, 10, engine)
    assert sorted(ten.end.round(9).tolist()) == [3 * d] + [4 * d] * 9


@pytest.mark.parametrize("engine", ENGINES)
def test_a_create_s_complete_takes_the_lock_again_after_its_create_is_answered(engine: str) -> None:
    """A create (200 us of work under the lock, 100 us for each of its RPCs; 1 ms syncs) at 0 and
    a mkdirs (5 ms under the lock) at 150 us. The create holds the lock 0-100 us, its create RPC
    is synced 100-1,100 us and answered; meanwhile the mkdirs took the lock at 150 us, so the
    create's complete waits for it until 5,150 us, holds it to 5,250 us, and its sync joins the
    one after the mkdirs' (5,150-6,150 us): 6,150-7,150 us. One pass with two syncs would have
    ended at 2,200 us."""
    d, s, m = 1e-3, 200e-6, 5e-3
    cal = Calibration({OpCode.CREATE: constant(s), WRITE: constant(m)}, settings(sync_s=d))
    times = run([OpCode.CREATE, WRITE], np.array([0.0, 150e-6]), cal, 0, engine)
    np.testing.assert_allclose(times.end * 1e6, [7150, 6150])
    np.testing.assert_allclose(times.lock_wait * 1e6, [5150 - 1100, 0], atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("async_edits", [True, False])
def test_with_asynchronous_edit_logging_the_handler_goes_on_before_the_sync(engine: str, async_edits: bool) -> None:
    """One handler, two writes at 0 (10 us of work each, a 1 ms sync). Hadoop 3's default
    (asynchronous edit logging): the handler queues the first's edit and takes the second at
    10 us; the first's sync runs 10-1,010 us, the second's joins the next, 1,010-2,010. Without
    it the handler waits for each sync: the second starts at 1,010 and is synced at 2,020."""
    d, s = 1e-3, 10e-6
    cal = Calibration({WRITE: constant(s)}, settings(handlers=1, sync_s=d, async_edits=async_edits))
    times = run([WRITE, WRITE], np.zeros(2), cal, 0, engine)
    expected = [s + d, s + 2 * d] if async_edits else [s + d, 2 * s + 2 * d]
    np.testing.assert_allclose(times.end, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fair_hand_over_waits_for_the_woken_thread_and_an_unfair_lock_is_taken_meanwhile(engine: str) -> None:
    wake, s = 100e-6, 20e-6
    cal = Calibration({READ: constant(s), WRITE: constant(s)}, settings(wake_s=wake))
    ops = [WRITE, WRITE, WRITE]
    arrive = np.array([0.0, 1e-6, 30e-6])
    fair = run(ops, arrive, cal, 0, engine)
    # fair: W1 [0, 20], W2 handed the lock at 20, works [120, 140], W3 (queued at 30) [240, 260] us
    np.testing.assert_allclose(fair.end * 1e6, [20, 140, 260])
    unfair = run(ops, arrive, cal.with_settings(fair=False), 0, engine)
    # unfair: W2 is woken at 20 and tries at 120; W3 arrives at 30 to a free lock and takes it
    # [30, 50]; W2 finds it free at 120 and works [120, 140]
    np.testing.assert_allclose(unfair.end * 1e6, [20, 140, 50])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_thread_parked_for_the_lock_spends_its_wake_up_on_a_core(engine: str) -> None:
    """Three writers on one core, 20 us of work each under the lock; a thread woken from a park
    for the lock spends ``park_s`` (30 us) of CPU first: fair, with the lock reserved for it; not
    fair, with the lock free for anyone meanwhile."""
    wake, park, s = 100e-6, 30e-6, 20e-6
    cal = Calibration({WRITE: constant(s)}, settings(wake_s=wake, park_s=park, cores=1))
    ops = [WRITE, WRITE, WRITE]
    arrive = np.array([0.0, 1e-6, 30e-6])
    fair = run(ops, arrive, cal, 0, engine)
    # fair: W1 [0, 20]; W2 handed the lock at 20, wakes at 120, [120, 170] (park + work); W3
    # (queued at 30) handed it at 170, [270, 320]
    np.testing.assert_allclose(fair.end * 1e6, [20, 170, 320])
    np.testing.assert_array_equal(fair.lock_parks, [0, 1, 1])
    unfair = run(ops, arrive, cal.with_settings(fair=False), 0, engine)
    # unfair: W3 takes the free lock at 30 [30, 50]; W2 woken at 20 wakes on the core [120, 150],
    # finds the lock free and works [150, 170]
    np.testing.assert_allclose(unfair.end * 1e6, [20, 170, 50])
    np.testing.assert_array_equal(unfair.lock_parks, [0, 1, 0])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_reader_waits_behind_a_queued_writer_even_when_not_fair(engine: str) -> None:
    s = 100e-6
    cal = Calibration({READ: constant(s), WRITE: constant(s)}, settings(fair=False))
    # R1 holds the lock [0, 100]; W2 queues at 10; R3 at 20 must not join R1 (Java's readerShouldBlock)
    times = run([READ, WRITE, READ], np.array([0.0, 10e-6, 20e-6]), cal, 0, engine)
    np.testing.assert_allclose(times.end * 1e6, [100, 200, 300])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dispatch_s", [0.0, 5e-6])
def test_the_time_bursts_wait_for_a_core_is_summed_with_the_switch(engine: str, dispatch_s: float) -> None:
    """Three reads of s at once on one core: the second waits s and the switch to its thread, the
    third 2s, the second's switch and its own: 3s and 3 switches in all; they end at s, 2s and a
    switch, 3s and 2 switches."""
    s = 80e-6
    cal = Calibration({READ: constant(s)}, settings(cores=1, dispatch_s=dispatch_s))
    times = run([READ] * 3, np.zeros(3), cal, 0, engine)
    np.testing.assert_allclose(times.end, [s, 2 * s + dispatch_s, 3 * s + 2 * dispatch_s], rtol=1e-9)
    assert times.core_wait_s == pytest.approx(3 * s + 3 * dispatch_s, rel=1e-9)
    assert run([READ] * 3, np.zeros(3), cal.with_settings(cores=0), 0, engine).core_wait_s == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_cores_limit_cpu_and_a_colocated_client_shares_them(engine: str) -> None:
    n, c, s = 5000, 20e-6, 80e-6
    cal = Calibration({READ: constant(s, client_s=c, lock_share=0.5)}, settings(handlers=64, cores=2, colocated=True))
    times = run([READ] * n, np.zeros(n), cal, 64, engine)
    assert n / times.end.max() == pytest.approx(2 / (c + s), rel=0.01)
    apart = run([READ] * n, np.zeros(n), cal.with_settings(colocated=False), 64, engine)
    assert n / apart.end.max() == pytest.approx(2 / s, rel=0.01)


def _three_reads_beside_a_run(*, cores: int, cpu_s: float, run_s: float, first_s: float) -> tuple[Calibration, Calls]:
    """Three reads of ``cpu_s`` of NameNode CPU each, due at 1, 2 and 3 ms, on ``cores``, and one
    run of the host's other work of ``run_s`` from ``first_s`` after the first (none after it)."""
    cal = Calibration({READ: constant(cpu_s, lock_share=0.5)}, settings(cores=cores))
    calls, _ = make_calls(np.full(3, int(READ), dtype=np.uint8), np.array([1e-3, 2e-3, 3e-3]), cal, 0)
    return cal, replace(calls, other_gap=np.array([first_s, 1e3, 1e3]), other_run=np.full(3, run_s))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_host_s_other_work_holds_a_core_and_a_burst_placed_behind_it_waits_for_it(engine: str) -> None:
    # two cores; calls A, B, C (5 ms of NameNode CPU each) arrive at 1, 2 and 3 ms; a run of the
    # host's other work holds the second core from just after 1 ms for 10 ms. B finds no core
    # free and is placed first (on the core the other work holds): it waits for the run to end,
    # at 11 ms, though A frees the other core at 6 ms; C, placed next on A's core, takes it then.
    s, run, tiny = 5e-3, 10e-3, 1e-9
    cal, calls = _three_reads_beside_a_run(cores=2, cpu_s=s, run_s=run, first_s=tiny)
    times = simulate(calls, cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end, [6e-3, 1e-3 + tiny + run + s, 6e-3 + s], rtol=1e-9)
    # placed by chance, never (other_place 0): B waits for A's core, C for the next one freed (the
    # same core, as B ends, just before the run does)
    never = simulate(calls, cal.with_settings(other_place=0.0).settings, 0, engine=engine)
    np.testing.assert_allclose(never.end, [6e-3, 6e-3 + s, 6e-3 + 2 * s], rtol=1e-9)
    # without it, B takes the second core at once and C waits for A's
    alone = simulate(replace(calls, other_gap=np.zeros(0), other_run=np.zeros(0)), cal.settings, 0, engine=engine)
    np.testing.assert_allclose(alone.end, [6e-3, 2e-3 + s, 6e-3 + s], rtol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_burst_placed_behind_the_other_work_by_chance_waits_with_a_core_free(engine: str) -> None:
    # four cores; calls A, B, C (5 ms of NameNode CPU each) arrive at 1, 2 and 3 ms; a run of the
    # host's other work holds a core from just after 1 ms for 10 ms. Placed behind the run every
    # time (other_place 1), B and C wait for it with two cores free, and as it ends both start, one
    # on the run's core and one on a core left free; every other time (0.5), B takes a free core
    # and C, the second, waits behind the run; without a chance (None), each takes a free core
    s, run, tiny = 5e-3, 10e-3, 1e-9
    cal, calls = _three_reads_beside_a_run(cores=4, cpu_s=s, run_s=run, first_s=tiny)
    ended = 1e-3 + tiny + run + s
    for place, ends in ((1.0, [6e-3, ended, ended]), (0.5, [6e-3, 7e-3, ended]), (None, [6e-3, 7e-3, 8e-3])):
        times = simulate(calls, cal.with_settings(other_place=place).settings, 0, engine=engine)
        np.testing.assert_allclose(times.end, ends, rtol=1e-9, err_msg=f"other_place {place}")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_host_s_other_work_takes_its_share_of_a_core(engine: str) -> None:
    # one core, CPU-bound reads from 64 closed-loop clients: the other work's 20 % of the core
    # leaves the reads 80 % of it (its runs are exponential: the mean over 40,000 calls, about
    # 800 runs, within 5 %)
    n, s = 40_000, 50e-6
    cal = Calibration({READ: constant(s, lock_share=0.5)}, settings(handlers=64, cores=1, other_share=0.2,
                                                                     other_s=0.5e-3))
    times = run([READ] * n, np.zeros(n), cal, 64, engine)
    assert n / times.end.max() == pytest.approx(0.8 / s, rel=0.05)
    assert n / run([READ] * n, np.zeros(n), cal.with_settings(other_share=0.0), 64, engine).end.max() == pytest.approx(
        1 / s, rel=0.01)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_that_finds_a_thread_parked_pays_its_wake_up(engine: str) -> None:
    """One client: every call finds the client, the NameNode and a handler idle, and pays the three
    wake-ups (the send that follows a receive at once continues the client's work). The client's
    and the handler's are on its path; the NameNode's is spent beside it (its other threads'), so
    the call waits for it only when it takes the core the call wants. A spin window longer than
    the round trip: the client never parks after the first call; the NameNode's the same way.
    Many clients on one handler:
    after the first call the NameNode is never idle and its handler never parked."""
    c, s, cw, sw, hw, d = 20e-6, 50e-6, 10e-6, 30e-6, 7e-6, 40e-6
    cost = OpCost(c, s, d, delay_sigma=0.0, cpu_cv=0.0, client_wake_s=cw, server_wake_s=sw, handler_wake_s=hw)
    cal = Calibration({READ: cost}, settings(handlers=1))
    one = run([READ] * 50, np.zeros(50), cal, 1, engine)
    np.testing.assert_allclose(one.service[1:], c + s + cw + hw + d)
    assert one.service[0] == pytest.approx(c + s + 2 * cw + hw + d)  # the very first send wakes the client too
    assert one.client_wakes.tolist() == [2] + [1] * 49
    assert one.server_wakes.all() and one.handler_wakes.all()
    # one core for the NameNode (the client's CPU elsewhere): its wake-up takes it first, and the
    # handler's wake-up and work queue behind it
    one_core = run([READ] * 50, np.zeros(50), cal.with_settings(cores=1), 1, engine)
    np.testing.assert_allclose(one_core.service[1:], c + s + cw + sw + hw + d)
    spinning = run([READ] * 50, np.zeros(50), Calibration({READ: replace(cost, client_spin_s=1.0)}, cal.settings), 1,
                   engine)
    np.testing.assert_allclose(spinning.service[1:], c + s + hw + d)
    assert spinning.client_wakes.tolist() == [1] + [0] * 49
    # the NameNode's spin window: a call finds its threads parked only when no call has been in it
    # for longer (here the gap between calls is the round trip outside it: 70 us)
    for spin, woken in ((50e-6, True), (100e-6, False)):
        warm = run([READ] * 50, np.zeros(50),
                   Calibration({READ: replace(cost, server_spin_s=spin)}, cal.settings).with_settings(cores=1), 1, engine)
        assert warm.server_wakes.tolist() == [1] + [int(woken)] * 49, spin
        np.testing.assert_allclose(warm.service[1:], c + s + cw + hw + d + (sw if woken else 0.0))
    many = run([READ] * 200, np.zeros(200), cal, 20, engine)
    assert many.server_wakes.sum() == 1 and many.handler_wakes.sum() == 1
    # the handler is the bottleneck: after the first call, one call per s
    assert many.end.max() == pytest.approx(hw + 199 * s + (c + cw + s + d), rel=0.02)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("op", "cores", "expected_ms"), [
    # the first read stalls; the second waits for the one core then, works 0.1-0.2 and goes on
    # with its zero-length rest on the core it holds (0.2); the third works 0.2-0.3
    (READ, 1, [1.1, 0.2, 0.3]),
    (READ, 4, [0.1, 0.11, 0.12]),  # a core each: nobody waits for one, no stall
    # the writers behind it wait for the lock, not for a core: no stall (each writer's zero-length
    # burst after its sync queues behind the next writer's work: 0.2, 0.3, 0.3)
    (WRITE, 1, [0.2, 0.3, 0.3]),
])
def test_a_call_stalls_with_the_lock_held_only_when_a_core_is_wanted(
        engine: str, op: OpCode, cores: int, expected_ms: list[float]) -> None:
    """Three calls at 0, 10 and 20 us, 100 us of work under the lock each (none after it: a
    zero-length burst, on the core the handler holds, or, after a write's sync, which the handler
    waits for here (Hadoop's synchronous edit logging), on a core it queues for again); the first
    may stall 1 ms before releasing
    the lock, which it does when another burst is waiting for a core as its work ends."""
    cal = Calibration({op: constant(100e-6)}, settings(cores=cores, async_edits=False))
    codes = np.full(3, int(op), dtype=np.uint8)
    calls, _ = make_calls(codes, np.array([0.0, 10e-6, 20e-6]), cal, seed=0)
    calls = replace(calls, stall=np.array([1e-3, 0.0, 0.0]))
    times = simulate(calls, cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end * 1e3, expected_ms)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("calls", "stalls"), [(3, False), (4, True)])
def test_a_call_stalls_only_when_more_bursts_wait_than_there_are_cores(engine: str, calls: int, stalls: bool) -> None:
    """Reads at 0, 10, 20 (and 30) us on two cores, 100 us of work each: when the first one's work
    ends, one burst waits for a core (three calls: no more runnable threads than cores, no stall)
    or two (four calls: the first is descheduled for 1 ms)."""
    cal = Calibration({READ: constant(100e-6)}, settings(cores=2))
    made, _ = make_calls(np.full(calls, int(READ), dtype=np.uint8), np.arange(calls) * 10e-6, cal, seed=0)
    made = replace(made, stall=np.array([1e-3] + [0.0] * (calls - 1)))
    times = simulate(made, cal.settings, 0, engine=engine)
    assert bool(times.end[0] >= 1e-3) == stalls


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("stall_queue", "stall_ms"), [(0.0, 1.0), (2.0, 1.0), (8.0, 0.5), (0.5, 2.0)])
def test_a_stall_after_the_lock_scales_with_the_run_queue_it_is_the_length_for(
        engine: str, stall_queue: float, stall_ms: float) -> None:
    """The four reads above: as the first one's work ends (at 100 us) two bursts wait for a core,
    and it stalls its 1 ms times (2 / stall_queue) ** STALL_QUEUE_POWER (the square root): 1 ms
    for a queue of 2 (or none given), 0.5 ms for 8, 2 ms for 0.5. Nothing else is left to wait
    for by then: it ends as its stall does."""
    cal = Calibration({READ: replace(constant(100e-6), stall_queue=stall_queue)}, settings(cores=2))
    made, _ = make_calls(np.full(4, int(READ), dtype=np.uint8), np.arange(4) * 10e-6, cal, seed=0)
    assert STALL_QUEUE_POWER == 0.5
    made = replace(made, stall=np.array([1e-3, 0.0, 0.0, 0.0]))
    times = simulate(made, cal.settings, 0, engine=engine)
    assert times.run_queue[0] == 2
    assert times.end[0] * 1e3 == pytest.approx(0.1 + stall_ms)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("calls", "stall_queue", "draw", "stall_ms"), [
    (4, 4.0, 0.4, 2 ** -0.5),  # 2 bursts wait, chance 2/4 = 0.5 > 0.4: it stalls (1 ms * (2/4) ** 0.5)
    (4, 4.0, 0.6, 0.0),  # the same queue, its draw over the chance: no stall
    (4, 1.0, 0.99, 2 ** 0.5),  # chance min(1, 2/1) = 1: it stalls, 1 ms * 2 ** 0.5
    (3, 4.0, 0.2, 0.5),  # 1 burst waits (fewer than the 2 cores): chance 1/4 > 0.2, it stalls 1 ms * (1/4) ** 0.5
    (3, 4.0, -1.0, 0.0),  # no draw (a read's): the cores gate, 1 burst waiting is not 2: no stall
    (4, 4.0, -1.0, 2 ** -0.5),  # no draw: 2 bursts waiting are the 2 cores': it stalls
])
def test_a_write_s_stall_comes_with_a_chance_growing_with_the_run_queue(
        engine: str, calls: int, stall_queue: float, draw: float, stall_ms: float) -> None:
    """A write and two or three calls that take no lock, due 10 us apart on two cores, 100 us of
    work each (under the lock for the write). As the write's work ends (at 100 us) one burst waits
    for a core per call beyond two. The write was drawn to stall 1 ms (scaled by (the queue /
    stall_queue) ** STALL_QUEUE_POWER); it does when its draw is under min(1, the queue /
    stall_queue), and without a draw whenever the queue holds as many bursts as there are cores."""
    cal = Calibration({WRITE: replace(constant(100e-6), stall_queue=stall_queue)}, settings(cores=2))
    made, _ = make_calls(np.full(calls, int(WRITE), dtype=np.uint8), np.arange(calls) * 10e-6, cal, seed=0)
    lock = made.lock.copy()
    lock[1:] = LOCK_NONE
    gate = np.full(calls, -1.0)
    gate[0] = draw
    made = replace(made, lock=lock, stall=np.array([1e-3] + [0.0] * (calls - 1)), stall_gate=gate)
    times = simulate(made, cal.settings, 0, engine=engine)
    assert times.run_queue[0] == calls - 2
    assert times.end[0] * 1e3 == pytest.approx(0.1 + stall_ms)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fair", [True, False])
def test_a_write_woken_for_the_lock_stalls_with_a_chance_growing_with_the_run_queue(engine: str, fair: bool) -> None:
    """The case below (W2 woken for the lock while one burst waits for the one core), W2 with a
    stall_queue of 4 and a draw for its stall as it wakes: under the chance 1/4 it stalls as the
    gate made it (ends at 1,140 us), over it not at all; its draw after the lock plays no part."""
    cal, calls = _woken_on_a_busy_core(fair, stall_wake=1e-3)
    gated = replace(calls, stall_queue=np.full(5, 4.0), stall_gate=np.full(5, 0.99))
    under = simulate(replace(gated, stall_gate_wake=np.array([-1.0, 0.2, -1.0, -1.0, -1.0])), cal.settings, 0,
                     engine=engine)
    assert under.end[1] * 1e6 == pytest.approx(1140.0)
    over = simulate(replace(gated, stall_gate_wake=np.array([-1.0, 0.3, -1.0, -1.0, -1.0])), cal.settings, 0,
                    engine=engine)
    assert over.end[1] < 1000e-6


@pytest.mark.parametrize("bad", [1.0, float("nan")])
def test_the_native_loop_refuses_a_draw_for_the_stall_s_chance_not_below_one(bad: float) -> None:
    cal = Calibration({WRITE: replace(constant(10e-6), stall_queue=2.0)}, settings(cores=2))
    made, _ = make_calls(np.full(3, int(WRITE), dtype=np.uint8), np.zeros(3), cal, seed=0)
    for name in ("stall_gate", "stall_gate_wake"):
        with pytest.raises(ValueError, match="stall_gate and stall_gate_wake must be below 1"):
            simulate(replace(made, **{name: np.array([0.5, bad, -1.0])}), cal.settings, 0, engine="native")


def test_a_write_s_draws_for_its_stall_s_chance_leave_every_other_draw_as_it_was() -> None:
    """The gate's draws come after every other (``make_calls``): a calibration whose writes give
    a stall_queue draws them in [0, 1) for its writes (-1 for its reads) and every other array
    exactly as one whose writes do not, which has no draws (-1 throughout)."""
    base = {READ: replace(constant(50e-6), stall_p=0.1, stall_s=1e-3, stall_queue=2.0, cpu_cv=0.5),
            WRITE: replace(constant(80e-6), stall_p=0.1, stall_s=1e-3, cpu_cv=0.5)}
    ops = np.where(np.arange(1000) % 3 == 0, int(WRITE), int(READ)).astype(np.uint8)
    plain, _ = make_calls(ops, np.zeros(1000), Calibration(base, settings()), seed=5)
    gated, _ = make_calls(ops, np.zeros(1000), Calibration({**base, WRITE: replace(base[WRITE], stall_queue=3.0)},
                                                           settings()), seed=5)
    writes = ops == int(WRITE)
    for gate in (gated.stall_gate, gated.stall_gate_wake):
        assert np.all((gate[writes] >= 0) & (gate[writes] < 1)) and np.all(gate[~writes] == -1.0)
        assert 0.4 < float(gate[writes].mean()) < 0.6
    assert not np.array_equal(gated.stall_gate[writes], gated.stall_gate_wake[writes])
    np.testing.assert_array_equal(plain.stall_gate, -1.0)
    np.testing.assert_array_equal(plain.stall_gate_wake, -1.0)
    for name in ("c_send", "c_recv", "net", "s_lock", "s_post", "stall", "stall_wake"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(gated, name))


def test_the_host_s_other_work_is_drawn_after_every_other_draw_and_only_where_it_can_run() -> None:
    """Its gaps and runs (exponential: Poisson times, mean ``other_s`` / ``other_share`` apart,
    runs of mean ``other_s``) come after every other draw (``make_calls``): the calls' own arrays
    are what they were without it; with unlimited cores there is none to hold."""
    costs = {READ: replace(constant(50e-6), stall_p=0.1, stall_s=1e-3, cpu_cv=0.5),
             WRITE: replace(constant(80e-6), stall_p=0.1, stall_s=1e-3, stall_queue=3.0, cpu_cv=0.5)}
    ops = np.where(np.arange(20_000) % 3 == 0, int(WRITE), int(READ)).astype(np.uint8)
    plain, _ = make_calls(ops, np.zeros(ops.size), Calibration(costs, settings(cores=2)), seed=5)
    other, _ = make_calls(ops, np.zeros(ops.size), Calibration(costs, settings(cores=2, other_share=0.2, other_s=3e-3)),
                          seed=5)
    assert plain.other_gap.size == 0 and plain.other_run.size == 0
    assert other.other_gap.size == other.other_run.size == ops.size
    assert float(other.other_gap.mean()) == pytest.approx(3e-3 / 0.2, rel=0.05)
    assert float(other.other_run.mean()) == pytest.approx(3e-3, rel=0.05)
    for name in ("c_send", "c_recv", "net", "s_lock", "s_post", "stall", "stall_wake", "stall_gate", "stall_gate_wake"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(other, name))
    unlimited, _ = make_calls(ops, np.zeros(ops.size), Calibration(costs, settings(cores=0, other_share=0.2)), seed=5)
    assert unlimited.other_gap.size == 0


def test_a_share_of_other_work_beyond_the_cores_is_refused() -> None:
    with pytest.raises(ConfigError, match="other_share"):
        settings(cores=2, other_share=2.0)
    with pytest.raises(ConfigError, match="other_s"):
        settings(cores=2, other_share=0.1, other_s=0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stall_holds_the_lock_for_the_share_of_the_work_done_under_it(engine: str) -> None:
    """Two writes on one core, the client's CPU on it too: 100 us of NameNode work each, a quarter
    under the lock; sends and receives 10 us. The first (at 0) sends 0-10 us and works under the
    lock 10-35; the second's send (at 30) waits for the core, so the first stalls 1 ms: 250 us
    (a quarter) with the lock held, then 750 us without it. The second asks at 45 and has the lock
    at 285 (not at 1,035): its work under it 285-310, its sync at once (0 s), the rest 310-385,
    its receive 385-395. The first goes on at 1,035: 75 us, its receive, 1,120 us."""
    cal = Calibration({WRITE: constant(100e-6, client_s=20e-6, lock_share=0.25)}, settings(cores=1, colocated=True))
    calls, _ = make_calls(np.full(2, int(WRITE), dtype=np.uint8), np.array([0.0, 30e-6]), cal, seed=0)
    calls = replace(calls, stall=np.array([1e-3, 0.0]))
    times = simulate(calls, cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end * 1e6, [1120.0, 395.0])
    np.testing.assert_allclose(times.lock_wait * 1e6, [0.0, 240.0])


def test_a_closed_loop_holds_its_clients_and_an_open_loop_arrives_on_time() -> None:
    cal = Calibration({READ: constant(100e-6, delay_s=50e-6)}, settings(handlers=1))
    closed = simulate_micro(READ, 100, 4, cal).times
    in_flight = [(closed.start <= t) & (closed.end > t) for t in closed.start]
    assert max(int(f.sum()) for f in in_flight) == 4
    arrive = np.arange(100) * 1e-3  # far below capacity: no queue, every call at its due time
    open_ = run([READ] * 100, arrive, cal, 0, "native")
    np.testing.assert_allclose(open_.start, arrive)
    np.testing.assert_allclose(open_.service, 150e-6)


def test_ten_million_calls_are_simulated_without_running_out_of_anything() -> None:
    """Not a timing claim (bench/bench_simnn.py measures the speed): the native loop takes a large
    closed loop to its end with every call served once."""
    n = 2_000_000
    cal = Calibration({READ: OpCost(10e-6, 30e-6, 50e-6), WRITE: OpCost(15e-6, 80e-6, 60e-6)}, ServerSettings())
    ops = np.where(np.arange(n) % 5 == 0, int(WRITE), int(READ)).astype(np.uint8)
    times = simulate_ops(ops, np.zeros(n), cal, 64).times
    assert np.isfinite(times.end).all() and np.all(times.end > times.start)


def _woken_on_a_busy_core(fair: bool, *, stall: float = 0.0, stall_wake: float = 0.0) -> tuple[Calibration, Calls]:
    """The case below: W2 (the second call) with the stalls given, after its work under the lock
    and as it wakes for it."""
    cal = Calibration({WRITE: constant(20e-6), READ: constant(100e-6)},
                      settings(cores=1, wake_s=100e-6, fair=fair))
    ops = np.array([int(WRITE), int(WRITE), int(READ), int(READ), int(WRITE)], dtype=np.uint8)
    calls, _ = make_calls(ops, np.array([0.0, 1e-6, 100e-6, 101e-6, 130e-6]), cal, seed=0)
    lock = calls.lock.copy()
    lock[2:4] = LOCK_NONE
    return cal, replace(calls, lock=lock, stall=np.array([0.0, stall, 0.0, 0.0, 0.0]),
                        stall_wake=np.array([0.0, stall_wake, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("fair", "expected_us", "parks"), [
    # fair: the lock is W2's from W1's release at 20 us; W2, woken at 120 while N4 waits for the
    # core N3 runs on, is descheduled 1 ms and works 1,120-1,140; W5 (queued at 130) is handed
    # the lock then and works 1,240-1,260
    (True, [20.0, 1140.0, 200.0, 300.0, 1260.0], [0, 1, 0, 0, 1]),
    # not fair: W5 finds the lock free at 130 and takes it (its work waits for the core: 300-320);
    # W2 tries again once awake, at 1,120, and works 1,120-1,140
    (False, [20.0, 1140.0, 200.0, 300.0, 320.0], [0, 1, 0, 0, 0]),
])
def test_a_thread_woken_for_the_lock_on_a_busy_core_is_descheduled(engine: str, fair: bool,
                                                                   expected_us: list[float], parks: list[int]) -> None:
    """One core. Writers W1 (at 0), W2 (at 1 us) and W5 (at 130 us), 20 us of work under the lock
    each; N3 and N4 (at 100 and 101 us) take no lock and work 100 us each. W2 parks for the lock;
    its hand-over wakes it 100 us later, when a burst (N4's) waits for a core: it stalls there
    (1 ms, once), with the lock reserved for it when fair, free for anyone when not. A stall
    there lasts its length whatever the run queue (only one after the lock scales with it)."""
    cal, calls = _woken_on_a_busy_core(fair, stall_wake=1e-3)
    times = simulate(calls, cal.settings, 0, engine=engine)
    np.testing.assert_allclose(times.end * 1e6, expected_us)
    np.testing.assert_array_equal(times.lock_parks, parks)
    scaled = simulate(replace(calls, stall_queue=np.full(5, 8.0)), cal.settings, 0, engine=engine)
    np.testing.assert_array_equal(scaled.end, times.end)


@pytest.mark.parametrize("fair", [True, False])
def test_the_stall_after_the_lock_is_not_spent_as_the_thread_wakes_for_it(fair: bool) -> None:
    """The case above with W2's 1 ms stall given for after its work under the lock only: it is not
    descheduled as it wakes (it ends far before 1,140 us), and both engines agree on the rest."""
    cal, calls = _woken_on_a_busy_core(fair, stall=1e-3)
    native, simpy = (simulate(calls, cal.settings, 0, engine=e) for e in ENGINES)
    assert native.end[1] < 1000e-6
    np.testing.assert_allclose(native.end, simpy.end, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(native.lock_parks, simpy.lock_parks)


def test_a_stall_after_the_lock_is_exponential_and_one_as_the_handler_wakes_is_one_length() -> None:
    """200 k calls of a read and of a write, stall_p 0.1 and stall_s 1 ms: either's stall after
    the lock is exponential, of mean STALL_MEAN ms (its coefficient of variation 1), and as it
    wakes for the lock 1 ms for the share of calls whose exponential stall would last longer
    (0.1 e^-2), a draw apart from the first. Bounds of several standard errors."""
    n, p, length = 200_000, 0.1, 1e-3
    costs = {op: replace(constant(10e-6), stall_p=p, stall_s=length) for op in (READ, WRITE)}
    calls, _ = make_calls(np.repeat([int(READ), int(WRITE)], n).astype(np.uint8), np.zeros(2 * n),
                          Calibration(costs, settings()), seed=3)
    for rows in (slice(0, n), slice(n, 2 * n)):
        stalled = calls.stall[rows][calls.stall[rows] > 0]
        assert abs(stalled.size / n - p) < 0.005
        assert abs(stalled.mean() / (STALL_MEAN * length) - 1) < 0.03
        assert abs(stalled.std() / stalled.mean() - 1) < 0.05
        woken = calls.stall_wake[rows]
        assert set(np.unique(woken).tolist()) == {0.0, length}
        assert abs(np.mean(woken > 0) / (p * np.exp(-1 / STALL_MEAN)) - 1) < 0.1
        # drawn apart: a call stalled as it wakes is no likelier than any to stall after the lock
        assert abs(np.mean(calls.stall[rows][woken > 0] > 0) - p) < 0.05
