"""The simulated NameNode's parameters: typed, frozen records and their JSON form.

The model (one call of an operation, in virtual time; ``native/src/simnn.rs`` and
``sim.reference`` implement it):

1. the client takes one of its ``outstanding`` slots (a run's worker: its lanes; micro: its
   clients), in arrival order, and spends ``client_cpu_s / 2`` of CPU sending;
2. half of the call's ``delay`` (network, the RPC reader: what is neither CPU nor a queue)
   brings it to the NameNode; a call that finds no other call in the NameNode, none having been
   in it for longer than ``server_spin_s``, sets its other
   threads (the reader, the responder, the edit log's) spending ``server_wake_s`` of CPU beside
   the call (they had gone idle: spinning, parking and waking them is work that a busy server
   does not do per call; it takes a core, the call does not wait for it: at one client the
   NameNode's CPU per operation and the client's together exceed the measured response; a gap
   shorter than the window costs nothing, as a thread that has not yet parked, or a core not yet
   in a deep idle state, wakes at no cost: without it a create's CPU at 8 clients, where a third of
   its RPCs find the NameNode empty for a few tens of microseconds, came out 15-22 % over the
   measured and at 64 clients 15-20 % under, the split having no solution); the
   call waits in the call queue (FIFO) for one of ``handlers``; a call that finds a handler
   parked on the empty queue spends ``handler_wake_s`` waking it (one that a handler takes from
   the queue as it finishes another does not);
3. the handler takes the namesystem lock, shared for a read, exclusive for a write, and spends
   ``server_cpu_s * lock_share`` of CPU under it. A handler that finds the lock taken parks; woken,
   it spends ``park_s`` of CPU (the context switch and the retry) before its work. ``fair``: a FIFO
   hand-over, the lock reserved for the waiter from the release, its wake-up CPU starting
   ``wake_s`` later; not fair: a free lock goes to whoever asks first, the queue's head is woken
   ``wake_s`` after the release, spends its wake-up CPU on a core with the lock free for anyone,
   then tries again, and a reader waits behind a queued writer (Java's ``ReentrantReadWriteLock``);
4. a write's edit is synced (``sync_s``, as the NameNode times it; group commit: one sync at a
   time, every write that joins while one runs goes in the next), and every call spends the rest
   of its server CPU (audit log, the response) before its handler is free. With ``async_edits`` (Hadoop 3's
   default, ``dfs.namenode.edits.asynclogging``) the sync runs beside that work and the handler
   goes on without waiting for it, the answer waits for both; without, the handler waits for
   the sync first. With ``async_edits`` and ``edit_s``, the syncs are one thread's, the edit
   log's (Hadoop 3's ``FSEditLogAsync``): after each sync it sends the batch's answers itself,
   one after the other, ``edit_s`` of CPU each on a core it takes after the sync's I/O, and only
   then syncs the writes that joined meanwhile; an answer leaves once it is sent. An edit makes
   the sync it goes in slow with its operation's ``slow_sync_p`` (each RPC's own draw): the sync
   then lasts ``sync_s`` plus the longest extra drawn among its edits (exponential, of mean
   ``slow_sync_s``), and every write in it waits, and every one that joins meanwhile. A chance per
   edit rather than per sync: with more clients a sync holds more edits and is slow more often,
   which is how a write's tail at the middle loads grows on this project's machine while one
   client's p99.9 stays a few milliseconds (one sync slow in a few hundred; ``docs/simnn.md``,
   session 69; a chance per sync, the same at every load, was tried in session 65);
5. the other half of the delay brings the answer back, and the client spends ``client_cpu_s / 2``
   receiving it. An operation of several RPCs (``rpcs_of``: a create is its ``create`` and,
   once that is answered, its ``complete``) goes through 1-5 once per RPC on the same client
   slot, each time with its share of the work and the delay, its own lock and sync. A client
   burst that starts while the client has had no other burst started or waiting for longer than
   ``client_spin_s`` adds ``client_wake_s`` (the client's thread had parked).

Every CPU burst takes one of ``cores`` cores (FIFO; 0: unlimited); the client's only when
``colocated`` (the client on the server's host, as on one machine), else they are pure delays.
A burst that waited for a core starts ``dispatch_s`` after the core is freed (the switch to its
thread: the core is idle meanwhile), unless its thread was woken for the lock, whose wake-up is
the hand-over's (``wake_s``). A
thread keeps its core from one burst to the next while it runs on (a handler from its wake-up to
its work under the lock, from there to the rest, and on to the next waiting call; a client from a
receive to its next send): only a thread that blocks or goes idle gives it back, as a scheduler
does, rather than queueing again after every burst.
The host's other work (``other_share`` of one core; 0: none, its CPU then in the NameNode's
fitted costs) comes in runs at Poisson times, each holding a core for an exponential time of mean
``other_s``: it takes a free core, else the next core freed or given up by a thread that would
run on after its burst (preemption between bursts); a burst that finds no core free while a run
holds one is placed on the cores in turn (or, with ``other_place``, a burst woken while a run holds
a core is placed behind it by that chance, another core free or not) and, placed on that run's
core, waits for it to end even if another core is freed (the kernel's run queue per core).
A call's handler may stall (its thread descheduled on a busy host; what makes the tail of a
busy server), once per RPC, at the first of two points where at least ``cores`` other bursts are
waiting for a core (twice as many threads runnable as cores): as it is woken from a park for the
lock, which a fair lock, reserved for it, waits through (every call behind it waits too: a fair
hand-over to a thread that does not run is what makes a fair lock's convoy), while an unfair one
goes to whoever asks meanwhile; or after its work under the lock, with the lock held for the
share of the stall that its work under the lock has of its NameNode work (every call behind it
for the lock waits that long too), then without it. A call's stall after its work is exponential,
of mean ``STALL_MEAN`` times ``stall_s``, with probability ``stall_p``; as it wakes for the lock
it stalls ``stall_s`` with the probability that such a stall lasts longer than ``stall_s``
(``stall_p`` times e^(-1 / STALL_MEAN), e^-2). Why: one length for every stall puts the p99 on a
cliff (with a few more calls stalled than one in a hundred it is the stall's, with a few fewer
the CPU's), and a read's p99 fell off it wherever its load was lighter than the calibration's 64
clients, a write's in the runs (a write's stall had one length at either point before session
33). As it wakes for the lock the stall stays one length, rarer: an exponential one there (more
stalls, shorter) lengthened the fair lock's convoy in every mix, which waits through each.
A stall after the work under the lock lasts its drawn length times (the run queue as it starts /
``stall_queue``) ** ``STALL_QUEUE_POWER`` where its operation gives ``stall_queue``, as the fit
does for every operation (a thread descheduled behind fewer runnable threads waits less; with the
heavy load's length at every load a read's p99 came out over at lighter ones). A stall as the
handler wakes is not scaled (scaling it too shortened the runs' tails; ``docs/simnn.md``).
A write's stall (where its operation gives ``stall_queue``) does not come whenever ``cores`` bursts
wait: at either point it comes with the chance min(1, the run queue then / ``stall_queue``), a draw
of its own at each (``sim.calls``). Why: all or nothing on the run queue put the fair creates' p99
at 16 and 32 clients on a cliff (+134 % in one session, −31 % in another, as small changes
elsewhere threw it across; ``docs/simnn.md``, session 62), where a thread competes for a core the
more the longer the queue. A read's keeps the gate: with the chance its tail came out shorter
than measured (the read-heavy type's p99 13-31 % under, from −21 to +6 %).
CPU bursts are gamma-distributed around their means (coefficient of variation ``cpu_cv``); the
delay is log-normal (median ``delay_s``, shape ``delay_sigma``).

An operation's costs (``OpCost``) are per operation of the replay, which may be more than one RPC
(a create is ``create`` + ``complete``): they are measured so, per operation, and divided evenly
between its RPCs when simulated (``sim.calls``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mimesisbench.errors import ConfigError, InputError
from mimesisbench.schedule.format import OpCode, op_class

#: the calibration format's version (``Calibration.to_json``)
CALIBRATION_VERSION = 1
#: a read's share of its NameNode work under the (shared) namesystem lock that the fit gives it by
#: default: the NameNode's own timing of its read holds (``dfs.namenode.lock.detailed-metrics.enabled``,
#: ``bench/bench_lock_hold.py``: getfileinfo 1.6-1.7 us, open 2.1-2.5, listStatus 1.7-2.1) against
#: the fitted work per read (about 20 us)
READ_LOCK_SHARE = 0.1
LOCK_NONE, LOCK_READ, LOCK_WRITE = 0, 1, 2


#: the settings a calibration's fit chooses (``sim.fit``), in seconds: the lock hand-over's
#: wake-up, the host's switch between threads, a slow sync's length
FITTED_SETTINGS = ("wake_s", "dispatch_s", "slow_sync_s")


@dataclass(frozen=True)
class ServerSettings:
    """The simulated server and host (``simnn:?handlers=..&fair=..`` overrides each)."""

    handlers: int = 10  # dfs.namenode.handler.count's default
    cores: int = 2  # cores of the host the NameNode runs on (0: unlimited)
    colocated: bool = True  # the clients' CPU comes from the same cores
    fair: bool = True  # dfs.namenode.fslock.fair's default
    sync_s: float = 0.0002  # one edit-log sync (fdatasync of the edits file)
    wake_s: float = 0.00002  # a blocked handler thread's wake-up after a lock hand-over
    # the CPU a handler spends parking for the namesystem lock and waking again (a voluntary
    # context switch and the lock's retry: bench/bench_fslock.py measured 7-12 us per switch)
    park_s: float = 0.00001
    # dfs.namenode.edits.asynclogging's default (Hadoop 3): a write's handler goes on once the
    # edit is queued; its answer waits for the sync (False: the handler waits for it)
    async_edits: bool = True
    # a CPU burst that waited for a core starts this long after the core is freed: the host's
    # switch from one thread to another, during which the core runs neither (on a busy host of
    # many threads, what keeps its cores from being used in full while threads wait: measured
    # here, 17 % of two cores idle with two handlers runnable; fitted on request, ``sim.fit``)
    dispatch_s: float = 0.0
    # with async_edits, the edit-log thread's CPU per edit (per write RPC) after the sync: Hadoop
    # 3's FSEditLogAsync sends each answer itself, one after the other, before it takes the next
    # edits, so one thread serialises every write's tail (measured here: 5-9 us an edit beside
    # 60 us of CPU per sync, ``docs/simnn.md``); 0: no such thread, the handlers' work has it
    edit_s: float = 0.0
    # the host's other work (threads the model leaves out: the JVM's compiler and collector, the
    # kernel's workers, other processes), ``other_share`` of one core between its runs, which come
    # at Poisson times and each hold a core for an exponential time of mean ``other_s``. A burst
    # that finds no core free while a run holds one is placed on the cores in turn; one placed on
    # that core waits for the run to end, even if another core is freed meanwhile (the kernel keeps
    # a run queue per core: measured here, a serial thread's waits of 1 ms or more came with the
    # other core idle more than half of the time, docs/simnn.md). 0: none (the work is then in
    # the NameNode's fitted CPU, as the calibration measures the host's CPU)
    other_share: float = 0.0
    other_s: float = 0.002
    # the chance that a burst woken while a run of the other work holds a core is placed behind
    # that run, whether or not another core is free (the kernel puts a woken thread on the busy
    # core: traced here about as often with the other core idle as not, docs/simnn.md); every
    # 1/other_place-th such burst, deterministically. None: a free core is always taken, and with
    # none free the bursts are placed on the cores in turn
    other_place: float | None = None
    # a slow sync's extra length (exponential, of this mean): an edit may make the sync it goes
    # in slow (its operation's ``OpCost.slow_sync_p``), and every write in that sync, and every
    # one queued behind it, waits the longest extra drawn among its edits (what makes a write's
    # tail at the middle loads on this project's machine: pauses of every write in flight at
    # once, a few per cent of the calls, which reads do not share; ``docs/simnn.md``, session 69);
    # a calibration's fit shortens it where the writes' heavy loads call for it (``sim.fit``)
    slow_sync_s: float = 0.003

    def before_fit(self) -> ServerSettings:
        """These settings with the ones a calibration's fit chooses (the lock hand-over, the
        switch between threads, a slow sync's length; ``sim.fit``) back at their defaults: where
        a fit of other measurements starts, rather than where an earlier fit ended."""
        default = ServerSettings()
        return replace(self, **{name: getattr(default, name) for name in FITTED_SETTINGS})

    def __post_init__(self) -> None:
        if self.handlers < 1:
            raise ConfigError(f"simnn: handlers must be at least 1, got {self.handlers}")
        if self.cores < 0:
            raise ConfigError(f"simnn: cores must be 0 (unlimited) or more, got {self.cores}")
        for name in ("sync_s", "wake_s", "park_s", "dispatch_s", "edit_s", "slow_sync_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"simnn: {name} must be a finite duration >= 0, got {value}")
        if not (math.isfinite(self.other_share) and 0 <= self.other_share < max(1, self.cores)):
            raise ConfigError(f"simnn: other_share must be a share of one core >= 0 and below the cores,"
                              f" got {self.other_share}")
        if self.other_place is not None and not (math.isfinite(self.other_place) and 0 <= self.other_place <= 1):
            raise ConfigError(f"simnn: other_place must be a chance from 0 to 1, got {self.other_place}")
        if not (math.isfinite(self.other_s) and self.other_s > 0):
            raise ConfigError(f"simnn: other_s must be a finite duration > 0, got {self.other_s}")


@dataclass(frozen=True)
class OpCost:
    """What one operation costs the client and the NameNode (seconds; see the module doc)."""

    client_cpu_s: float
    server_cpu_s: float
    delay_s: float
    delay_sigma: float = 0.3
    cpu_cv: float = 0.5
    lock_share: float = 0.5
    client_wake_s: float = 0.0
    client_spin_s: float = 0.0
    server_wake_s: float = 0.0
    # a call finds the NameNode's other threads parked (and pays ``server_wake_s``) only when no
    # call has been in it for longer than this (as ``client_spin_s`` for the client)
    server_spin_s: float = 0.0
    handler_wake_s: float = 0.0
    stall_p: float = 0.0
    stall_s: float = 0.0
    # the run queue (bursts waiting for a core) ``stall_s`` is the length for, after the work under
    # the lock: a stall there lasts its drawn length times (the queue then / this) ** STALL_QUEUE_POWER
    # (0: its drawn length, whatever the queue, as in calibrations made before the fit gave it)
    stall_queue: float = 0.0
    # the chance that each edit of the operation (each RPC that waits for a sync) makes its sync
    # slow by an extra drawn with mean ``ServerSettings.slow_sync_s``; fitted on the middle load's
    # p99 (``sim.fit``), 0 for a read and in calibrations made before session 69
    slow_sync_p: float = 0.0

    def __post_init__(self) -> None:
        for name in ("client_cpu_s", "server_cpu_s", "delay_s", "delay_sigma", "cpu_cv", "client_wake_s",
                     "client_spin_s", "server_wake_s", "server_spin_s", "handler_wake_s", "stall_s", "stall_queue"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"simnn: {name} must be a finite number >= 0, got {value!r}")
        for name in ("lock_share", "stall_p", "slow_sync_p"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"simnn: {name} must be between 0 and 1, got {getattr(self, name)!r}")


#: a stall after the work under the lock: exponential, of mean this share of ``stall_s``
STALL_MEAN = 0.5
#: how a stall after the work under the lock scales with the run queue, where its operation gives
#: the queue its length is for (``OpCost.stall_queue``): as the queue's square root
STALL_QUEUE_POWER = 0.5


def lock_kind(op: OpCode) -> int:
    """The namesystem lock an operation takes: exclusive when it changes the namespace."""
    return LOCK_WRITE if op_class(op) == "write" else LOCK_READ


def edit_syncs(op: OpCode) -> int:
    """How many edit-log syncs each RPC of an operation waits for: a write's one (a create's
    ``create`` and ``complete`` each theirs, ``rpcs_of``), a read's none."""
    return 1 if op_class(op) == "write" else 0


def edits_of(op: OpCode) -> int:
    """Edits an operation writes to the edit log: one per RPC that waits for a sync (a create's
    two, a read's none)."""
    return edit_syncs(op) * rpcs_of(op)


#: the most RPCs an operation makes (``rpcs_of``)
MAX_RPCS = 2


def rpcs_of(op: OpCode) -> int:
    """RPCs an operation of the replay makes, one after the other: a create is two (``create``,
    then ``complete`` once its answer is back), every other one."""
    return 2 if op is OpCode.CREATE else 1


#: the operation whose costs stand in for one the calibration did not measure, per class
STAND_INS = MappingProxyType({"read": OpCode.GETFILEINFO, "write": OpCode.MKDIRS})


@dataclass(frozen=True)
class Calibration:
    """Costs per operation and the server's settings, with where they came from."""

    costs: Mapping[OpCode, OpCost]
    settings: ServerSettings = field(default_factory=ServerSettings)
    source: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "costs", MappingProxyType(dict(self.costs)))
        if not self.costs:
            raise ConfigError("simnn: a calibration needs the costs of at least one operation")

    def cost_of(self, op: OpCode) -> tuple[OpCost, OpCode]:
        """The costs an operation is simulated with and the operation they were measured on: its
        own, else its class's stand-in (``STAND_INS``), else the first of its class, else any."""
        if op in self.costs:
            return self.costs[op], op
        kind = op_class(op)
        stand_in = STAND_INS[kind]
        if stand_in in self.costs:
            return self.costs[stand_in], stand_in
        same = [o for o in self.costs if op_class(o) == kind]
        chosen = same[0] if same else next(iter(self.costs))
        return self.costs[chosen], chosen

    def with_settings(self, **changes: Any) -> Calibration:
        return replace(self, settings=replace(self.settings, **changes))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CALIBRATION_VERSION,
            "settings": asdict(self.settings),
            "costs": {op.label: asdict(cost) for op, cost in sorted(self.costs.items())},
            "source": dict(self.source),
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Calibration:
        """Parse the JSON form; a broken file names the bad key (``InputError``, exit 3)."""
        if not isinstance(data, dict):
            raise InputError(f"{where}: a calibration is a JSON object")
        if data.get("version") != CALIBRATION_VERSION:
            raise InputError(f"{where}: version: expected {CALIBRATION_VERSION}, got {data.get('version')!r}")
        by_label = {op.label: op for op in OpCode}
        costs: dict[OpCode, OpCost] = {}
        raw_costs = data.get("costs")
        if not isinstance(raw_costs, dict):
            raise InputError(f"{where}: costs: expected an object of operation -> costs")
        for label, raw in raw_costs.items():
            if label not in by_label:
                raise InputError(f"{where}: costs.{label}: not an operation")
            costs[by_label[label]] = _record(OpCost, raw, f"{where}: costs.{label}")
        settings = _record(ServerSettings, data.get("settings", {}), f"{where}: settings")
        source = data.get("source", {})
        return cls(costs, settings, source if isinstance(source, dict) else {})

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> Calibration:
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise InputError(f"cannot read the calibration {path} ({exc.strerror or exc})") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
        return cls.from_json(data, str(path))


def _record(kind: type[Any], raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected an object")
    known = {f for f in kind.__dataclass_fields__}
    for key in raw:
        if key not in known:
            raise InputError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
    types = {name: type(getattr(kind, name, 0.0)) for name in known}
    for key, value in raw.items():
        want = types.get(key, float)
        if value is None and want is type(None):  # an optional number left unset
            continue
        if want is bool and not isinstance(value, bool):
            raise InputError(f"{where}.{key}: expected true or false, got {value!r}")
        if want is not bool and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"{where}.{key}: expected a number, got {value!r}")
        if want is int and not (isinstance(value, int) or float(value).is_integer()):
            raise InputError(f"{where}.{key}: expected a whole number, got {value!r}")
    try:
        return kind(**{k: int(v) if types.get(k) is int else v for k, v in raw.items()})
    except ConfigError as exc:
        raise InputError(f"{where}: {exc}") from None
    except TypeError as exc:  # a required key is missing
        raise InputError(f"{where}: {exc}") from None
