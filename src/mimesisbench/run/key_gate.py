"""Dependency-only ordering across the lanes of one worker (blocking backends with several lanes:
posix; the memory backend runs one).

The lanes of such a worker take a hot object's events (``HOT_EVENTS`` or more) round robin, so
its operations are spread over every lane and are in flight together (an object with fewer keeps
one lane, which orders its events for free); what orders a hot object's events is this gate, with the rule of the async
dispatcher (``schedule.format.ORDERED_OPS``): an operation that makes, removes, renames or opens
its object for writing waits for every earlier operation on the object to end, and any later
operation on the object waits for it. Per object the gate keeps how many of its events, in
schedule order, have ended (the *done prefix*); event ``e`` may go when that prefix reaches
``need[e]``: its position among its object's events for an ordered operation, one past the last
ordered operation before it otherwise. Every requirement points to earlier events, and each
lane issues its events in schedule order, so the earliest event not yet issued can always go:
no deadlock.

Written by hand: the rule is this tool's semantics; numpy and polars compute the requirements.
"""

from __future__ import annotations

import threading

import numpy as np
import polars as pl

from mimesisbench.jobs import StopSignal
from mimesisbench.schedule.format import ORDERED_OPS, OpCode

#: longest single wait for a dependency, so a stop request is noticed
WAIT_S = 0.05
#: an object with this many events (in one worker) has them spread over the lanes
HOT_EVENTS = 8


def ordered_table() -> np.ndarray:
    """A lookup of ``schedule.format.ORDERED_OPS`` by op code."""
    table = np.zeros(max(int(op) for op in OpCode) + 1, dtype=bool)
    table[[int(op) for op in ORDERED_OPS]] = True
    return table


def spread_lanes(keys: np.ndarray, lanes: int) -> np.ndarray:
    """Each event's lane: an object with at least ``HOT_EVENTS`` events has them round robin over
    the lanes (in flight together, ordered by the gate); any other keeps one lane for all its
    events (ordered by the lane itself, at no cost)."""
    n = len(keys)
    if lanes <= 1 or n == 0:
        return np.zeros(n, dtype=np.int32)
    _, dense, counts = np.unique(keys, return_inverse=True, return_counts=True)
    hot = counts[dense] >= HOT_EVENTS
    by_object = (np.asarray(keys, dtype=np.int64) // 2) % lanes  # a file's and a directory's key differ in the low bit
    return np.where(hot, np.arange(n) % lanes, by_object).astype(np.int32)


def requirements(
    keys: np.ndarray, ops: np.ndarray, lanes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(key, need, offsets, events)`` for events in schedule order: each event's dense object
    number, the done prefix it needs, and each object's events in order (``events[offsets[k]:
    offsets[k + 1]]``). With ``lanes`` (each event's lane), an object whose events all share one
    lane needs nothing from the gate: its events need 0."""
    n = len(keys)
    frame = pl.DataFrame({"key": np.asarray(keys, dtype=np.int64), "ordered": ordered_table()[ops]})
    frame = frame.with_columns(pl.col("key").rank("dense").cast(pl.Int64).sub(1).alias("k"))
    frame = frame.with_columns(pl.int_range(pl.len()).over("k").alias("pos"))
    last = pl.when(pl.col("ordered")).then(pl.col("pos")).otherwise(None)
    frame = frame.with_columns(last.shift(1).forward_fill().over("k").fill_null(-1).alias("last_ordered"))
    need = frame.select(
        pl.when(pl.col("ordered")).then(pl.col("pos")).otherwise(pl.col("last_ordered") + 1)
    ).to_series().to_numpy()
    k = frame["k"].to_numpy()
    if lanes is not None and n:
        one_lane = pl.DataFrame({"k": k, "lane": lanes}).group_by("k").agg(pl.col("lane").n_unique() == 1)
        alone = np.zeros(int(k.max()) + 1, dtype=bool)
        alone[one_lane["k"].to_numpy()] = one_lane["lane"].to_numpy()
        need = np.where(alone[k], 0, need)
    order = np.argsort(k, kind="stable")
    counts = np.bincount(k, minlength=int(k.max()) + 1 if n else 0)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return k.astype(np.int64), need.astype(np.int64), offsets, order.astype(np.int64)


class KeyGate:
    """The gate shared by the Python lanes of one worker (native posix lanes share the same
    requirements through ``mimesisbench_native.KeyGate``).

    A lane asks ``ready(e)`` (no lock: a stale answer only makes it wait), ``wait``s when not,
    and calls ``end(e)`` after the operation. ``end`` takes no lock either (each list operation
    is atomic under the GIL; a lock per event halved the Python lanes' rate): it marks the event,
    and when the event sits at its object's prefix it moves the prefix over every ended event,
    then looks once more at the next one, so a mark made while it moved is never missed (two
    lanes moving one prefix at once may write it out of order; each looks again after its write,
    so it settles on the first event not ended). Waiters are woken under the condition's lock,
    only when there are some. An event that is its object's last needs no ``end`` (``tracked``):
    nothing waits for it.
    """

    def __init__(self, key: np.ndarray, need: np.ndarray, offsets: np.ndarray, events: np.ndarray) -> None:
        self.key = key.tolist()
        self.need = need.tolist()
        counts = np.diff(offsets)
        pos = np.empty(len(key), dtype=np.int64)
        pos[events] = np.arange(len(events)) - np.repeat(offsets[:-1], counts)
        self.pos = pos.tolist()
        # an event some later one may wait for (its object's events are spread, and it is not the last)
        spread = np.zeros(len(counts), dtype=bool)
        np.logical_or.at(spread, key, need > 0)
        self.tracked = ((pos < counts[key] - 1) & spread[key]).tolist() if len(key) else []
        self.done = [0] * (len(offsets) - 1)
        self._offsets = offsets.tolist()
        self._events = events.tolist()
        self._ended = bytearray(len(key))
        self._cond = threading.Condition(threading.Lock())
        self._waiting = 0

    @classmethod
    def for_events(cls, keys: np.ndarray, ops: np.ndarray) -> KeyGate:
        return cls(*requirements(keys, ops))

    def ready(self, e: int) -> bool:
        return self.done[self.key[e]] >= self.need[e]

    def wait(self, e: int, stop: StopSignal) -> bool:
        """Wait until event ``e`` may go; False when a stop was requested meanwhile."""
        k, need = self.key[e], self.need[e]
        with self._cond:
            self._waiting += 1
            try:
                while self.done[k] < need:
                    if stop.is_set():
                        return False
                    self._cond.wait(WAIT_S)
            finally:
                self._waiting -= 1
        return True

    def end(self, e: int) -> None:
        """Event ``e`` ended: advance its object's done prefix and wake the lanes waiting."""
        if not self.tracked[e]:
            return
        self._ended[e] = 1
        k = self.key[e]
        done = self.done
        if self.pos[e] > done[k]:
            return  # not at the prefix: whoever ends the event there moves it over this one
        base = self._offsets[k]
        hi = self._offsets[k + 1] - base
        events, ended = self._events, self._ended
        p = done[k]
        while True:
            while p < hi and ended[events[base + p]]:
                p += 1
            done[k] = p
            if not (p < hi and ended[events[base + p]]):
                break
        if self._waiting:
            with self._cond:
                self._cond.notify_all()
