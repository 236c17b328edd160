"""The simulated NameNode's model written with simpy: the reference the native event loop
(``native/src/simnn.rs``) is tested against, and the engine where the native core is absent.

One simpy process per call walks the path ``sim.model`` describes. Cores, client slots and
handlers are small FIFO classes of their own rather than ``simpy.Resource``s, because a thread
keeps its core from one burst to the next while it runs on, and a handler (or a client's lane)
that goes on to the next waiting call takes its core along: a ``Resource`` gives it back after
every burst and queues it again. The namesystem lock and the edit log's group commit are classes
too (simpy has neither a read-write lock nor a batching server).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from mimesisbench.sim.calls import Calls
from mimesisbench.sim.model import LOCK_NONE, LOCK_WRITE, MAX_RPCS, STALL_QUEUE_POWER, ServerSettings

SimProcess = Generator[simpy.Event, Any, None]


class Cores:
    """The host's cores: FIFO, 0 for unlimited. A thread holds one from a burst to the next as long
    as it runs on, and gives it back (``give``) when it blocks or goes idle. The host's other work
    (``other_work``) holds cores too; a burst that finds no core free while it runs is placed on
    the cores in turn, or with a chance given (``other_place``) a burst woken while it runs is
    placed on a core it holds by chance, another core free or not; one placed on a core it holds
    waits behind it (``sim.model``)."""

    def __init__(self, env: simpy.Environment, count: int, dispatch_s: float = 0.0,
                 other_place: float | None = None) -> None:
        self.env = env
        self.other_place = other_place
        self.place_sum = 0.0  # the running sum of other_place over the bursts it was drawn for
        self.dispatch_s = dispatch_s
        self.count = count
        self.unlimited = count == 0
        self.free = count
        self.wanted_at = max(1, count)
        self.queue: deque[tuple[simpy.Event, float, float]] = deque()
        self.waited = 0.0  # how long bursts waited for a core in all, the switch included
        self.behind: deque[tuple[simpy.Event, float, float]] = deque()  # placed behind other work
        self.other_running = 0
        self.other_waiting: set[simpy.Event] = set()  # runs waiting for a core (at the queue's head)
        self.placed = 0  # bursts placed on a core while other work ran
        self.calls_left = 0  # the other work goes on while calls remain

    @property
    def waiting(self) -> int:
        """Bursts waiting for a core (the run queue), those behind the host's other work too."""
        return len(self.queue) + len(self.behind)

    @property
    def wanted(self) -> bool:
        """At least as many bursts wait for a core as there are cores (twice as many threads
        runnable as cores: a thread would be descheduled); never when unlimited."""
        return self.waiting >= self.wanted_at

    def take(self, *, handed: bool = False) -> simpy.Event:
        """A core; if it waits for one, it gets it the switch to its thread (``dispatch_s``) after
        it is freed, unless ``handed``: the thread woken for the lock, whose wake-up is the
        hand-over's."""
        got = self.env.event()
        if self.unlimited:
            got.succeed()
        elif self.other_running and self._placed_behind():
            self.behind.append((got, 0.0 if handed else self.dispatch_s, self.env.now))
        elif self.free > 0:
            self.free -= 1
            got.succeed()
        else:
            self.queue.append((got, 0.0 if handed else self.dispatch_s, self.env.now))
        return got

    def _placed_behind(self) -> bool:
        """A burst woken while other work runs is placed behind it: by chance (``other_place``), a
        core free or not; without one, never while a core is free, and with none free on the cores
        in turn (those that land on a core the other work holds wait for it)."""
        if self.other_place is not None:
            return self._placed_by_chance()
        if self.free > 0:
            return False
        core = self.placed % self.count
        self.placed += 1
        return core < self.other_running

    def _placed_by_chance(self) -> bool:
        """Placed behind by chance each time the running sum of ``other_place`` passes a whole
        number (as the native loop: deterministic, no draw)."""
        if self.other_place is None or self.other_place <= 0:
            return False
        before = np.floor(self.place_sum)
        self.place_sum += self.other_place
        return bool(np.floor(self.place_sum) > before)

    def other_work(self, gaps: np.ndarray, runs: np.ndarray, first: float) -> SimProcess:
        """The host's other work: the k-th run comes ``gaps[k % n]`` after the one before (the
        first ``gaps[0]`` after ``first``) and holds a core for ``runs[k % n]``, while
        ``calls_left``."""
        n = len(gaps)
        k = 0
        yield self.env.timeout(first + float(gaps[0]))
        while self.calls_left > 0:
            run = float(runs[k % n])
            if self.free > 0:
                self.free -= 1
                self._other_start(run)
            else:  # it goes first: the next core freed, or one a thread would run on with
                got = self.env.event()
                got.callbacks.append(lambda _, run=run: self._other_start(run))  # type: ignore[misc]
                self.other_waiting.add(got)
                self.queue.appendleft((got, self.dispatch_s, self.env.now))
            k += 1
            yield self.env.timeout(float(gaps[k % n]))

    def _other_start(self, run: float) -> None:
        self.other_running += 1
        self.env.timeout(run).callbacks.append(self._other_done)

    def _other_done(self, _: simpy.Event) -> None:
        """A run ends: the bursts placed behind one go first, in order, then the run queue's."""
        self.other_running -= 1
        while self.behind:
            self.queue.appendleft(self.behind.pop())
        self.give()
        while self.free > 0 and self.queue:  # those placed behind while another core was free
            self.free -= 1
            self.give()

    def run_on(self, held: bool, *, handed: bool = False) -> simpy.Event | None:
        """A thread's next burst: on the core it holds (None: it goes on at once), unless the
        host's other work waits for a core, which then takes it (a scheduler's preemption, at the
        model's grain: between bursts), the thread waiting for a core again; or a core taken."""
        if held and not self.other_waiting:
            return None
        if held:
            self.give()
        return self.take(handed=handed)

    def give(self) -> None:
        if self.unlimited:
            return
        if self.queue:
            waiter, switch, asked = self.queue.popleft()
            self.other_waiting.discard(waiter)
            self.waited += self.env.now - asked + switch
            if switch > 0:  # the switch to the waiting thread: the core idle meanwhile
                self.env.timeout(switch).callbacks.append(lambda _: _grant(waiter))
            else:
                waiter.succeed()
        else:
            self.free += 1


def _grant(event: simpy.Event) -> None:
    event.succeed()


class Pool:
    """Client slots or handler threads, FIFO. A thread that goes on to the next waiting call takes
    the core it ran on along (``put(core=True)``: the waiter's event fires with True)."""

    def __init__(self, env: simpy.Environment, capacity: int, cores: Cores) -> None:
        self.env = env
        self.free = capacity
        self.cores = cores
        self.queue: deque[simpy.Event] = deque()

    @property
    def idle(self) -> bool:
        """A thread waits for work (parked)."""
        return self.free > 0

    def get(self) -> simpy.Event:
        got = self.env.event()
        if self.free > 0:
            self.free -= 1
            got.succeed(False)
        else:
            self.queue.append(got)
        return got

    def put(self, core: bool) -> None:
        if self.queue:
            self.queue.popleft().succeed(core)
            return
        self.free += 1
        if core:
            self.cores.give()


class RWLock:
    """The namesystem lock: shared for reads, exclusive for writes, fair or not (``sim.model``).

    ``acquire`` gives None when the lock is taken at once, else the event of the caller's turn,
    which fires with (the CPU its thread still spends waking from the park before its work under
    the lock, whether it runs on a core already, or the event of the core it asked for as it
    woke: it asks at once, as the native loop's thread does, before others woken with it); each
    park is counted in ``parks`` (per call).
    A woken thread whose call stalls there (``calls.stall_wake``: each call's stall as it wakes for
    the lock) is descheduled first when it stalls now (``stalls_now``), and marks its pass's stall spent in
    ``stalled`` (per call; the handler clears it)."""

    def __init__(self, env: simpy.Environment, settings: ServerSettings, cores: Cores,
                 parks: np.ndarray, calls: Calls, stalled: np.ndarray) -> None:
        self.env = env
        self.calls = calls
        self.stalled = stalled
        self.fair = settings.fair
        self.wake_s = settings.wake_s
        self.park_s = settings.park_s
        self.cores = cores
        self.parks = parks
        self.readers = 0
        self.writer = False
        self.queue: deque[tuple[int, int, simpy.Event]] = deque()  # (kind, call, granted)
        self.waking = False

    def _compatible(self, kind: int) -> bool:
        return not self.writer and (kind != LOCK_WRITE or self.readers == 0)

    def _take(self, kind: int) -> None:
        if kind == LOCK_WRITE:
            self.writer = True
        else:
            self.readers += 1

    def acquire(self, kind: int, call: int) -> simpy.Event | None:
        if self.fair:
            may = not self.queue and self._compatible(kind)
        else:
            head_writer = bool(self.queue) and self.queue[0][0] == LOCK_WRITE
            may = self._compatible(kind) and not (kind != LOCK_WRITE and head_writer)
        if may:
            self._take(kind)
            return None
        granted = self.env.event()
        self.queue.append((kind, call, granted))
        return granted

    def _unpark(self, call: int) -> float:
        if self.parks[call] < 255:  # a u8 count that saturates, as the native loop's
            self.parks[call] += 1
        return self.park_s

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
                kind, call, granted = self.queue.popleft()
                self._take(kind)
                self.env.process(self._wake_granted(call, granted))
                if kind == LOCK_WRITE:
                    break
        else:
            self.waking = True
            self.env.process(self._wake_head())

    def _descheduled(self, call: int) -> float:
        """The stall of a thread woken from its park when its call stalls now (``stalls_now``: its
        stall as it wakes, once per pass through the NameNode), else 0."""
        stall = float(self.calls.stall_wake[call])
        if stall > 0 and not self.stalled[call] and stalls_now(self.calls, call, float(self.calls.stall_gate_wake[call]),
                                                               self.cores):
            self.stalled[call] = True
            return stall
        return 0.0

    def _wake_granted(self, call: int, granted: simpy.Event) -> SimProcess:
        yield self.env.timeout(self.wake_s)
        stall = self._descheduled(call)
        if stall > 0:  # the lock waits for it
            yield self.env.timeout(stall)
        # the lock waits for its wake-up CPU too; it wants a core from now (before the threads
        # woken with it ask for theirs)
        granted.succeed((self._unpark(call), self.cores.take(handed=True)))

    def _wake_head(self) -> SimProcess:
        yield self.env.timeout(self.wake_s)
        stall = self._descheduled(self.queue[0][1])
        if stall > 0:  # anyone may take the lock meanwhile
            yield self.env.timeout(stall)
        park = self._unpark(self.queue[0][1])
        if park > 0:  # the thread wakes on a core; meanwhile the lock is anyone's
            yield self.cores.take(handed=True)
            yield self.env.timeout(park)
        self.waking = False
        kind = self.queue[0][0]
        if self._compatible(kind):
            _, _, granted = self.queue.popleft()
            self._take(kind)
            # its wake-up is paid; it goes on on its core (unless the host's other work takes it
            # now: ``Cores.run_on``), or asks for one as it takes the lock
            granted.succeed((0.0, (self.cores.run_on(True, handed=True) or True) if park > 0
                             else self.cores.take(handed=True)))
            while self.queue and self.queue[0][0] != LOCK_WRITE and self._compatible(self.queue[0][0]):
                k, c, g = self.queue.popleft()
                self._take(k)
                g.succeed((self._unpark(c), self.cores.take(handed=True)))
        elif park > 0:
            self.cores.give()  # it parks again, at the head
        self._hand_over()


class EditLog:
    """Group commit: one sync at a time; every write that joins during a sync goes in the next.
    With ``edit_s`` (asynchronous edit logging's thread), after each sync the thread sends the
    batch's answers itself, ``edit_s`` of CPU each on a core it takes after the sync's I/O, before
    it syncs the writes that joined meanwhile."""

    def __init__(self, env: simpy.Environment, sync_s: float, cores: Cores, edit_s: float = 0.0) -> None:
        self.env = env
        self.sync_s = sync_s
        self.cores = cores
        self.edit_s = edit_s
        self.syncing = False
        self.next_batch: list[simpy.Event] = []
        self.next_extra = 0.0  # the longest slow-sync extra among the edits of the next sync

    def join(self, extra: float = 0.0) -> simpy.Event:
        """An edit joins the next sync; ``extra``: the sync it goes in is that much slower, at
        least (a sync lasts ``sync_s`` plus the longest extra among its edits)."""
        done = self.env.event()
        if self.syncing:
            self.next_batch.append(done)
            self.next_extra = max(self.next_extra, extra)
        else:
            self.syncing = True
            self.env.process(self._sync([done], extra))
        return done

    def _sync(self, batch: list[simpy.Event], extra: float) -> SimProcess:
        while True:
            yield self.env.timeout(self.sync_s + extra)
            if self.edit_s > 0:
                held = False
                for done in batch:
                    core = self.cores.run_on(held)
                    if core is not None:
                        yield core
                    yield self.env.timeout(self.edit_s)
                    held = True
                    done.succeed()
                self.cores.give()  # it blocks again: in the next sync's I/O, or idle
            else:
                for done in batch:
                    done.succeed()
            if not self.next_batch:
                self.syncing = False
                return
            batch, self.next_batch = self.next_batch, []
            extra, self.next_extra = self.next_extra, 0.0


def stalls_now(calls: Calls, call: int, draw: float, cores: Cores) -> bool:
    """Whether call ``call``, drawn to stall, does so now: with the chance min(1, the run queue /
    its ``stall_queue``) where it has a ``draw`` for it (a write's, ``Calls.stall_gate``), else
    whenever the cores are wanted."""
    per = float(calls.stall_queue[call])
    if draw >= 0 and per > 0:
        return draw < min(1.0, cores.waiting / per)
    return cores.wanted


def stall_length(calls: Calls, call: int, waiting: int) -> float:
    """Call ``call``'s stall after its work under the lock as it starts, ``waiting`` bursts waiting
    for a core: its drawn length, scaled by the run queue where its operation gives the queue
    that length is for."""
    stall, per = float(calls.stall[call]), float(calls.stall_queue[call])
    return stall * (waiting / per) ** STALL_QUEUE_POWER if per > 0 else stall


def simulate_reference(calls: Calls, settings: ServerSettings, outstanding: int,
                       client: np.ndarray | None = None) -> tuple[Any, ...]:
    """(start, end, lock wait) per call, in seconds, the wake-ups each paid (the client's, the
    NameNode's, its handler's), its parks for the lock and the run queue as its handler was done
    with its work under the lock, and how long bursts waited for a core in all, as
    ``native.simulate_namenode`` gives them. ``client``: each call's client (all one when None),
    each with ``outstanding`` slots."""
    env = simpy.Environment()
    n = len(calls)
    big = max(n, 1)
    cores = Cores(env, settings.cores, settings.dispatch_s, settings.other_place)
    cores.calls_left = n
    if calls.other_gap.size and n and not cores.unlimited:
        env.process(cores.other_work(calls.other_gap, calls.other_run, float(calls.arrive[0])))
    owner = [0] * n if client is None else client.tolist()
    slots = [Pool(env, outstanding if outstanding > 0 else big, cores) for _ in range(max(owner, default=0) + 1)]
    handlers = Pool(env, settings.handlers, cores)
    parks = np.zeros(n, dtype=np.uint8)
    stalled = np.zeros(n, dtype=bool)  # the pass's stall was spent at a wake-up from a park
    lock = RWLock(env, settings, cores, parks, calls, stalled)
    log = EditLog(env, settings.sync_s, cores, settings.edit_s if settings.async_edits else 0.0)
    busy = {"client": 0, "server": 0}  # client bursts started or waiting; calls in the NameNode
    client_last_end = [float("-inf")]
    server_last_end = [float("-inf")]  # when the last call left the NameNode
    passes_left = [0] * n  # RPCs each call makes after the one in the NameNode now
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    wait = np.zeros(n)
    c_woke = np.zeros(n, dtype=np.uint8)
    s_woke = np.zeros(n, dtype=np.uint8)
    h_woke = np.zeros(n, dtype=np.uint8)
    queue = np.zeros(n, dtype=np.uint32)  # the run queue as its handler was done under the lock
    arrive = calls.arrive.tolist()

    # A burst runs on the core its thread holds (it ran the burst before and has not blocked
    # since) or takes one; the thread keeps it afterwards until it blocks (``cores.give()``).
    def cpu(d: float, held: bool) -> SimProcess:
        core = cores.run_on(held)
        if core is not None:
            yield core
        yield env.timeout(d)

    def beside(d: float) -> SimProcess:
        """A burst of the NameNode's other threads, beside the call: a core taken and given back."""
        yield from cpu(d, False)
        cores.give()

    def client_cpu(d: float, i: int, held: bool) -> SimProcess:
        # parked: idle past the spin window (a send right after a receive continues the work)
        idle = busy["client"] == 0 and env.now - client_last_end[0] > float(calls.c_spin[i])
        wake = float(calls.c_wake[i]) if idle else 0.0
        c_woke[i] += idle
        busy["client"] += 1
        if settings.colocated:
            yield from cpu(d + wake, held)
        else:
            yield env.timeout(d + wake)
        busy["client"] -= 1
        client_last_end[0] = env.now

    def server(i: int) -> SimProcess:
        """Call ``i``'s RPC in the NameNode: from its arrival to its handler's release."""
        idle = busy["server"] == 0 and env.now - server_last_end[0] > float(calls.s_spin[i])
        busy["server"] += 1
        if idle:
            s_woke[i] += 1
            if calls.s_wake[i] > 0:  # spent by the NameNode's other threads: beside the call
                env.process(beside(float(calls.s_wake[i])))
        parked = handlers.idle  # a handler waits for calls
        core = yield handlers.get()  # a handler that goes on from its call before keeps its core
        if parked:
            h_woke[i] += 1
            if calls.h_wake[i] > 0:
                yield from cpu(float(calls.h_wake[i]), False)
                core = True
        kind = int(calls.lock[i])
        asked = env.now
        work = float(calls.s_lock[i])
        turn = lock.acquire(kind, i) if kind != LOCK_NONE else None
        if turn is not None:  # it parks for the lock
            if core:
                cores.give()
            owed, core = yield turn
            work += owed
        wait[i] += env.now - asked
        if isinstance(core, simpy.Event):  # the core it asked for as it woke: its burst runs on it
            yield core
            yield env.timeout(work)
        elif turn is not None:  # the core it woke on (the lock's ``_wake_head`` kept it for it)
            yield env.timeout(work)
        else:
            yield from cpu(work, core)
        # descheduled (twice as many bursts runnable as cores), with then without the lock
        used, stalled[i] = bool(stalled[i]), False
        queue[i] = cores.waiting
        if calls.stall[i] > 0 and not used and stalls_now(calls, i, float(calls.stall_gate[i]), cores):
            stall = stall_length(calls, i, cores.waiting)
            cores.give()
            held, after = float(calls.s_lock[i]), float(calls.s_post[i])
            share = held / (held + after) if held + after > 0 else 0.5
            yield env.timeout(stall * share)
            if kind != LOCK_NONE:
                lock.release(kind)
            yield env.timeout(stall * (1.0 - share))
            core = False
        else:
            if kind != LOCK_NONE:
                lock.release(kind)
            core = True
        synced = None
        extra = float(calls.sync_slow[i * MAX_RPCS + passes_left[i]]) if calls.sync_slow.size else 0.0
        if settings.async_edits and calls.sync[i]:  # the edit is queued: its sync goes on beside the handler
            synced = log.join(extra)
        elif calls.sync[i]:  # the handler waits for it
            if core:
                cores.give()
            yield log.join(extra)
            core = False
        yield from cpu(float(calls.s_post[i]), core)
        busy["server"] -= 1
        server_last_end[0] = env.now
        handlers.put(True)  # the handler goes on to the next waiting call, or parks
        if synced is not None:  # the answer waits for it too
            yield synced

    def call(i: int) -> SimProcess:
        core = yield slots[owner[i]].get()  # a client's lane that goes on from the call before keeps its core
        start[i] = env.now
        for left in reversed(range(max(1, int(calls.rpcs[i])))):  # a create's complete once its create is back
            passes_left[i] = left
            yield from client_cpu(float(calls.c_send[i]), i, core)
            if settings.colocated:
                cores.give()  # the client waits for the answer
            yield env.timeout(float(calls.net[i]) * 0.5)
            yield from server(i)
            yield env.timeout(float(calls.net[i]) * 0.5)
            yield from client_cpu(float(calls.c_recv[i]), i, False)
            core = settings.colocated  # it goes on running: the next RPC's send, or the next call
        end[i] = env.now
        cores.calls_left -= 1
        slots[owner[i]].put(core)

    def arrivals() -> SimProcess:
        for i, t in enumerate(arrive):
            if t > env.now:
                yield env.timeout(t - env.now)
            env.process(call(i))

    env.process(arrivals())
    env.run()
    return start, end, wait, c_woke, s_woke, h_woke, parks, queue, cores.waited
