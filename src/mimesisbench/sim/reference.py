"""The simulated NameNode's model written with simpy: the reference the native event loop
(``native/src/simnn.rs``) is tested against, and the engine where the native core is absent.

One simpy process per call walks the path ``sim.model`` describes. Client slots, handlers and
cores are ``simpy.Resource``s (FIFO); the namesystem lock and the edit log's group commit are
small classes of their own (simpy has neither a read-write lock nor a batching server).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from mimesisbench.sim.calls import Calls
from mimesisbench.sim.model import LOCK_NONE, LOCK_WRITE, ServerSettings

SimProcess = Generator[simpy.Event, Any, None]


class RWLock:
    """The namesystem lock: shared for reads, exclusive for writes, fair or not (``sim.model``)."""

    def __init__(self, env: simpy.Environment, fair: bool, wake_s: float) -> None:
        self.env = env
        self.fair = fair
        self.wake_s = wake_s
        self.readers = 0
        self.writer = False
        self.queue: deque[tuple[int, simpy.Event]] = deque()
        self.waking = False

    def _compatible(self, kind: int) -> bool:
        return not self.writer and (kind != LOCK_WRITE or self.readers == 0)

    def _take(self, kind: int) -> None:
        if kind == LOCK_WRITE:
            self.writer = True
        else:
            self.readers += 1

    def acquire(self, kind: int) -> simpy.Event:
        granted = self.env.event()
        if self.fair:
            may = not self.queue and self._compatible(kind)
        else:
            head_writer = bool(self.queue) and self.queue[0][0] == LOCK_WRITE
            may = self._compatible(kind) and not (kind != LOCK_WRITE and head_writer)
        if may:
            self._take(kind)
            granted.succeed()
        else:
            self.queue.append((kind, granted))
        return granted

    def release(self, kind: int) -> None:
        if kind == LOCK_WRITE:
            self.writer = False
        else:
            self.readers -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        if self.waking or not self.queue or not self._compatible(self.queue[0][0]):
            return
        if self.fair:
            while self.queue and self._compatible(self.queue[0][0]):
                kind, granted = self.queue.popleft()
                self._take(kind)
                self.env.process(self._wake_granted(granted))
                if kind == LOCK_WRITE:
                    break
        else:
            self.waking = True
            self.env.process(self._wake_head())

    def _wake_granted(self, granted: simpy.Event) -> SimProcess:
        yield self.env.timeout(self.wake_s)
        granted.succeed()

    def _wake_head(self) -> SimProcess:
        yield self.env.timeout(self.wake_s)
        self.waking = False
        kind = self.queue[0][0]
        if self._compatible(kind):
            _, granted = self.queue.popleft()
            self._take(kind)
            granted.succeed()
            while self.queue and self.queue[0][0] != LOCK_WRITE and self._compatible(self.queue[0][0]):
                k, g = self.queue.popleft()
                self._take(k)
                g.succeed()
        self._hand_over()


class EditLog:
    """Group commit: one sync at a time; every write that joins during a sync goes in the next."""

    def __init__(self, env: simpy.Environment, sync_s: float) -> None:
        self.env = env
        self.sync_s = sync_s
        self.syncing = False
        self.next_batch: list[simpy.Event] = []

    def join(self) -> simpy.Event:
        done = self.env.event()
        if self.syncing:
            self.next_batch.append(done)
        else:
            self.syncing = True
            self.env.process(self._sync([done]))
        return done

    def _sync(self, batch: list[simpy.Event]) -> SimProcess:
        while True:
            yield self.env.timeout(self.sync_s)
            for done in batch:
                done.succeed()
            if not self.next_batch:
                self.syncing = False
                return
            batch, self.next_batch = self.next_batch, []


def simulate_reference(calls: Calls, settings: ServerSettings, outstanding: int) -> tuple[np.ndarray, ...]:
    """(start, end, lock wait) per call, in seconds, and the wake-ups each paid (the client's, the
    NameNode's, its handler's), as ``native.simulate_namenode`` gives them."""
    env = simpy.Environment()
    n = len(calls)
    big = max(n, 1)
    slots = simpy.Resource(env, capacity=outstanding if outstanding > 0 else big)
    handlers = simpy.Resource(env, capacity=settings.handlers)
    cores = simpy.Resource(env, capacity=settings.cores if settings.cores > 0 else big)
    lock = RWLock(env, settings.fair, settings.wake_s)
    log = EditLog(env, settings.sync_s)
    busy = {"client": 0, "server": 0}  # client bursts started or waiting; calls in the NameNode
    client_last_end = [float("-inf")]
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    wait = np.zeros(n)
    c_woke = np.zeros(n, dtype=np.uint8)
    s_woke = np.zeros(n, dtype=np.uint8)
    h_woke = np.zeros(n, dtype=np.uint8)
    arrive = calls.arrive.tolist()

    def cpu(d: float, server: bool) -> SimProcess:
        if not server and not settings.colocated:
            yield env.timeout(d)
            return
        with cores.request() as core:
            yield core
            yield env.timeout(d)

    def client_cpu(d: float, i: int) -> SimProcess:
        # parked: idle past the spin window (a send right after a receive continues the work)
        idle = busy["client"] == 0 and env.now - client_last_end[0] > float(calls.c_spin[i])
        wake = float(calls.c_wake[i]) if idle else 0.0
        c_woke[i] += idle
        busy["client"] += 1
        yield from cpu(d + wake, False)
        busy["client"] -= 1
        client_last_end[0] = env.now

    def rpc(i: int) -> SimProcess:
        """One RPC of call ``i``: from the client's send to its receive."""
        yield from client_cpu(float(calls.c_send[i]), i)
        yield env.timeout(float(calls.net[i]) * 0.5)
        idle = busy["server"] == 0
        busy["server"] += 1
        if idle:
            s_woke[i] += 1
            if calls.s_wake[i] > 0:  # spent by the NameNode's other threads: beside the call
                env.process(cpu(float(calls.s_wake[i]), True))
        parked = handlers.count < handlers.capacity and not handlers.queue  # a handler waits for calls
        with handlers.request() as handler:
            yield handler
            if parked:
                h_woke[i] += 1
                if calls.h_wake[i] > 0:
                    yield from cpu(float(calls.h_wake[i]), True)
            kind = int(calls.lock[i])
            asked = env.now
            if kind != LOCK_NONE:
                yield lock.acquire(kind)
            wait[i] += env.now - asked
            yield from cpu(float(calls.s_lock[i]), True)
            # descheduled (twice as many bursts runnable as cores), with then without the lock
            if calls.stall[i] > 0 and len(cores.queue) >= max(1, settings.cores):
                held, after = float(calls.s_lock[i]), float(calls.s_post[i])
                share = held / (held + after) if held + after > 0 else 0.5
                yield env.timeout(float(calls.stall[i]) * share)
                if kind != LOCK_NONE:
                    lock.release(kind)
                yield env.timeout(float(calls.stall[i]) * (1.0 - share))
            elif kind != LOCK_NONE:
                lock.release(kind)
            synced = None
            if settings.async_edits and calls.sync[i]:  # the edit is queued: its sync goes on beside the handler
                synced = log.join()
            elif calls.sync[i]:  # the handler waits for it
                yield log.join()
            yield from cpu(float(calls.s_post[i]), True)
            busy["server"] -= 1
        if synced is not None:  # the answer waits for it too
            yield synced
        yield env.timeout(float(calls.net[i]) * 0.5)
        yield from client_cpu(float(calls.c_recv[i]), i)

    def call(i: int) -> SimProcess:
        with slots.request() as slot:
            yield slot
            start[i] = env.now
            for _ in range(max(1, int(calls.rpcs[i]))):  # a create's complete once its create is back
                yield from rpc(i)
            end[i] = env.now

    def arrivals() -> SimProcess:
        for i, t in enumerate(arrive):
            if t > env.now:
                yield env.timeout(t - env.now)
            env.process(call(i))

    env.process(arrivals())
    env.run()
    return start, end, wait, c_woke, s_woke, h_woke
