"""Per-call arrays for the simulator: each call's costs drawn from its operation's (seeded).

``make_calls(ops, arrive_s, calibration, seed)`` gives a ``Calls`` record whose arrays are what
the event loop takes (``sim.engine``). CPU bursts are gamma-distributed with the operation's
mean and coefficient of variation ``cpu_cv`` (0: exactly the mean); the delay is log-normal
with median ``delay_s`` and shape ``delay_sigma``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.model import (
    LOCK_WRITE,
    MAX_RPCS,
    STALL_MEAN,
    Calibration,
    OpCost,
    edit_syncs,
    lock_kind,
    rpcs_of,
)


@dataclass(frozen=True)
class Calls:
    """One value per call, in arrival order (seconds)."""

    arrive: NDArray[np.float64]
    c_send: NDArray[np.float64]
    c_recv: NDArray[np.float64]
    c_wake: NDArray[np.float64]
    c_spin: NDArray[np.float64]
    s_wake: NDArray[np.float64]
    s_spin: NDArray[np.float64]  # the NameNode's threads wake for a call after this long idle
    h_wake: NDArray[np.float64]
    stall: NDArray[np.float64]  # after the call's work under the lock
    stall_wake: NDArray[np.float64]  # as its handler is woken from a park for the lock
    stall_queue: NDArray[np.float64]  # the run queue its stall after the lock is the length for (0: any)
    # a write's draws in [0, 1) for whether its stall comes, after the lock and as its handler
    # wakes for it: it does when the draw is under min(1, the run queue then / stall_queue); -1
    # (a read's, or where stall_queue is 0): whenever at least ``cores`` bursts wait for a core
    stall_gate: NDArray[np.float64]
    stall_gate_wake: NDArray[np.float64]
    net: NDArray[np.float64]
    lock: NDArray[np.uint8]
    s_lock: NDArray[np.float64]
    s_post: NDArray[np.float64]
    sync: NDArray[np.uint8]  # 1: a write, each of whose RPCs waits for an edit-log sync (0: a read)
    rpcs: NDArray[np.uint8]  # RPCs of the operation, one after the other (each with the costs above)
    # the host's other work (``ServerSettings.other_share``): the k-th run comes other_gap[k % n]
    # after the one before (the first after the first call's arrival) and holds a core for
    # other_run[k % n]; empty: none
    other_gap: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    other_run: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    # a slow sync's extra (``OpCost.slow_sync_p``, ``ServerSettings.slow_sync_s``) for each RPC of
    # each call: the RPC that has ``k`` more to make after it (a create's ``create`` 1, its
    # ``complete`` 0) at ``call * MAX_RPCS + k``, 0 where it makes no sync slow; empty: none at all
    sync_slow: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return int(self.arrive.size)


def _gamma(rng: np.random.Generator, mean: float, cv: float, n: int) -> NDArray[np.float64]:
    if n == 0 or mean <= 0:
        return np.zeros(n)
    if cv <= 0:
        return np.full(n, mean)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, mean / shape, n)


def make_calls(
    ops: NDArray[np.integer], arrive_s: NDArray[np.float64], calibration: Calibration, seed: int
) -> tuple[Calls, dict[str, str]]:
    """The calls of operations ``ops`` (op codes) arriving at ``arrive_s`` (sorted), and which
    operation's costs stood in for each operation the calibration did not measure."""
    n = int(ops.size)
    if arrive_s.shape != (n,):
        raise ValueError(f"make_calls: {n} operations but {arrive_s.size} arrival times")
    rng = np.random.default_rng(seed)
    c_send = np.empty(n)
    c_recv = np.empty(n)
    c_wake = np.empty(n)
    c_spin = np.empty(n)
    s_wake = np.empty(n)
    s_spin = np.empty(n)
    h_wake = np.empty(n)
    stall = np.empty(n)
    stall_wake = np.empty(n)
    stall_queue = np.empty(n)
    net = np.empty(n)
    lock = np.empty(n, dtype=np.uint8)
    sync = np.empty(n, dtype=np.uint8)
    rpcs = np.empty(n, dtype=np.uint8)
    s_lock = np.empty(n)
    s_post = np.empty(n)
    slow_p = np.zeros(n)  # each call's chance that an edit of it makes its sync slow
    stand_ins: dict[str, str] = {}
    codes, inverse = np.unique(ops, return_inverse=True)
    for k, code in enumerate(codes.tolist()):
        op = OpCode(int(code))
        cost, measured_on = calibration.cost_of(op)
        if measured_on is not op:
            stand_ins[op.label] = measured_on.label
        rows = np.flatnonzero(inverse == k)
        _fill(rng, cost, rpcs_of(op), rows, (c_send, c_recv, c_wake, c_spin, s_wake, h_wake, net, s_lock, s_post))
        _fill_stalls(rng, cost, rows, stall, stall_wake)
        lock[rows] = lock_kind(op)
        stall_queue[rows] = cost.stall_queue
        s_spin[rows] = cost.server_spin_s
        sync[rows] = edit_syncs(op)
        rpcs[rows] = rpcs_of(op)
        slow_p[rows] = cost.slow_sync_p if edit_syncs(op) else 0.0
    # drawn after every other draw, so that those stay as they were before the gate was drawn
    stall_gate, stall_gate_wake = _stall_gates(rng, lock, stall_queue)
    other_gap, other_run = _other_work(rng, calibration, n)
    sync_slow = _slow_syncs(rng, slow_p, rpcs, calibration.settings.slow_sync_s)
    calls = Calls(
        arrive=np.ascontiguousarray(arrive_s, dtype=np.float64),
        c_send=c_send,
        c_recv=c_recv,
        c_wake=c_wake,
        c_spin=c_spin,
        s_wake=s_wake,
        s_spin=s_spin,
        h_wake=h_wake,
        stall=stall,
        stall_wake=stall_wake,
        stall_queue=stall_queue,
        stall_gate=stall_gate,
        stall_gate_wake=stall_gate_wake,
        net=net,
        lock=lock,
        s_lock=s_lock,
        s_post=s_post,
        sync=sync,
        rpcs=rpcs,
        other_gap=other_gap,
        other_run=other_run,
        sync_slow=sync_slow,
    )
    return calls, stand_ins


def _fill(
    rng: np.random.Generator, cost: OpCost, rpcs: int, rows: NDArray[np.intp], out: tuple[NDArray[np.float64], ...]
) -> None:
    """Draw the calls ``rows`` of one operation into ``out`` (c_send, c_recv, c_wake, c_spin, s_wake,
    h_wake, net, s_lock, s_post; the stalls are ``_fill_stalls``'s): its work and delay split evenly
    over its ``rpcs`` RPCs, each of which pays its own wake-ups (and stall)."""
    c_send, c_recv, c_wake, c_spin, s_wake, h_wake, net, s_lock, s_post = out
    m = rows.size
    half = cost.client_cpu_s / 2 / rpcs
    c_send[rows] = _gamma(rng, half, cost.cpu_cv, m)
    c_recv[rows] = _gamma(rng, half, cost.cpu_cv, m)
    net[rows] = cost.delay_s / rpcs * np.exp(rng.normal(0.0, cost.delay_sigma, m)) if cost.delay_s > 0 else 0.0
    c_wake[rows] = _gamma(rng, cost.client_wake_s, cost.cpu_cv, m)
    c_spin[rows] = cost.client_spin_s
    s_wake[rows] = _gamma(rng, cost.server_wake_s, cost.cpu_cv, m)
    h_wake[rows] = _gamma(rng, cost.handler_wake_s, cost.cpu_cv, m)
    server = _gamma(rng, cost.server_cpu_s / rpcs, cost.cpu_cv, m)
    s_lock[rows] = server * cost.lock_share
    s_post[rows] = server - s_lock[rows]


def _fill_stalls(rng: np.random.Generator, cost: OpCost, rows: NDArray[np.intp],
                 stall: NDArray[np.float64], stall_wake: NDArray[np.float64]) -> None:
    """The stalls of the calls ``rows`` of one operation, after the work under the lock
    (exponential, of mean ``STALL_MEAN`` times ``stall_s``) and as the handler wakes for it
    (``stall_s``, as often as such a stall lasts longer; ``sim.model`` says why they differ)."""
    m = rows.size
    if cost.stall_p <= 0:
        stall[rows] = 0.0
        stall_wake[rows] = 0.0
        return
    stalls = rng.random(m) < cost.stall_p
    stall[rows] = np.where(stalls, rng.exponential(cost.stall_s * STALL_MEAN, m), 0.0)
    beyond = cost.stall_p * np.exp(-1.0 / STALL_MEAN)  # P(an exponential stall > stall_s)
    stall_wake[rows] = np.where(rng.random(m) < beyond, cost.stall_s, 0.0)


def _stall_gates(rng: np.random.Generator, lock: NDArray[np.uint8],
                 stall_queue: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each write's two draws for its stall's gate, after the lock and as it wakes for it (where
    its operation gives the run queue its stall is for; ``sim.model`` says why), -1 elsewhere."""
    after = np.full(lock.size, -1.0)
    wake = np.full(lock.size, -1.0)
    rows = np.flatnonzero((lock == LOCK_WRITE) & (stall_queue > 0))
    after[rows] = rng.random(rows.size)
    wake[rows] = rng.random(rows.size)
    return after, wake


def _other_work(rng: np.random.Generator, calibration: Calibration, n: int
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The host's other work (``ServerSettings.other_share``, in runs of mean ``other_s``): ``n``
    gaps between runs (exponential: Poisson times) and ``n`` run lengths (exponential), drawn after
    every other draw; empty where there is none (no share, unlimited cores or no call)."""
    settings = calibration.settings
    if settings.other_share <= 0 or settings.cores == 0 or n == 0:
        return np.zeros(0), np.zeros(0)
    gaps = rng.exponential(settings.other_s / settings.other_share, n)
    runs = rng.exponential(settings.other_s, n)
    return np.maximum(gaps, np.finfo(float).tiny), runs


def _slow_syncs(rng: np.random.Generator, slow_p: NDArray[np.float64], rpcs: NDArray[np.uint8],
                mean_s: float) -> NDArray[np.float64]:
    """Each write RPC's slow sync (``Calls.sync_slow``): with its call's chance ``slow_p``, an
    exponential extra of mean ``mean_s``; drawn after every other draw, and only where a call has
    the chance (empty where none has, or where ``mean_s`` is 0: no sync is slow)."""
    if mean_s <= 0 or not slow_p.any():
        return np.zeros(0)
    # the chance at call * MAX_RPCS + k for each of the call's RPCs (k below its rpcs), else 0
    chance = np.where(np.arange(MAX_RPCS)[None, :] < rpcs[:, None], slow_p[:, None], 0.0).ravel()
    slow = rng.random(chance.size) < chance
    return np.where(slow, rng.exponential(mean_s, chance.size), 0.0)
