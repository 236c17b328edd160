"""Worker side of live monitoring: what the lanes recorded since the previous tick, aggregated.

Nothing here runs per operation. On each progress tick (every ``PROGRESS_EVERY_S``) a
``LiveTap`` looks at the prefix of every lane recorded since its previous call and reduces it,
vectorised, to a ``LiveDelta``: per (operation, file type) the count of each outcome and
histograms of latency (end - scheduled), service time (end - start) and lateness (start -
scheduled) over fixed power-of-two buckets, plus their sums. A delta is a few small numpy
arrays; the coordinator adds them up (``live_totals``) and serves cumulative histograms.

Buckets: upper bounds ``2**e`` ns for ``e`` in ``MIN_EXP..MAX_EXP`` (about 1 us to 137 s) and
``+Inf``; a value ``v`` falls in the first bucket whose bound is ``>= v`` (Prometheus's ``le``).
The index comes from the exponent bits of ``float(v - 1)``, which is several times cheaper than a
binary search over the bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mimesisbench.backends.base import Outcome
from mimesisbench.jobs import LiveDelta

#: smallest and largest finite bucket bound, as powers of two of nanoseconds
MIN_EXP = 10
MAX_EXP = 37
BOUNDS_NS: tuple[int, ...] = tuple(1 << e for e in range(MIN_EXP, MAX_EXP + 1))
#: finite buckets plus +Inf
N_BUCKETS = len(BOUNDS_NS) + 1
N_OUTCOMES = len(Outcome)
#: the three timings a delta holds, in this order (axis 0 of ``buckets`` and ``sums_ns``)
TIMINGS: tuple[str, ...] = ("latency", "service", "lateness")

_F64_EXP_SHIFT = 52
_F64_EXP_BIAS = 1023


def bucket_index(values_ns: np.ndarray) -> np.ndarray:
    """Bucket of each value (int64 ns): ``0..N_BUCKETS-1``, the last one being ``+Inf``.

    Index ``i < N_BUCKETS - 1`` means ``BOUNDS_NS[i-1] < v <= BOUNDS_NS[i]``; values at or below
    the first bound (zero and negative ones included) go to bucket 0.
    """
    w = np.subtract(values_ns, 1, dtype=np.int64)
    np.maximum(w, 0, out=w)
    exp = w.astype(np.float64).view(np.int64) >> _F64_EXP_SHIFT  # biased exponent; 0 for w == 0
    exp -= _F64_EXP_BIAS + MIN_EXP - 1  # floor(log2(w)) + 1 - MIN_EXP
    np.clip(exp, 0, N_BUCKETS - 1, out=exp)
    return exp


class RecordedLane(Protocol):
    """What ``LiveTap`` reads of a lane (``run.lanes.Lane`` is one): plain arrays, filled in place
    while the lane runs, and the length of the recorded prefix."""

    rows: np.ndarray  # int64: positions in the worker's event table
    ops: np.ndarray  # uint8 op codes
    due_ns: np.ndarray  # int64: scheduled time after the barrier
    start_ns: np.ndarray  # int64 monotonic ns
    end_ns: np.ndarray  # int64 monotonic ns
    outcome: np.ndarray  # uint8 outcome codes

    @property
    def count(self) -> int: ...

    def __len__(self) -> int: ...


def empty_delta(in_flight: int = 0) -> LiveDelta:
    return LiveDelta(
        keys=np.zeros((0, 2), np.int64),
        outcomes=np.zeros((0, N_OUTCOMES), np.int64),
        buckets=np.zeros((len(TIMINGS), 0, N_BUCKETS), np.int64),
        sums_ns=np.zeros((len(TIMINGS), 0), np.float64),
        in_flight=in_flight,
    )


#: samples per vectorised step (the scratch arrays stay in cache)
STEP = 262144
_EXP_OFFSET = _F64_EXP_BIAS + MIN_EXP - 1


class Accumulator:
    """Sums samples of up to ``n_keys`` (operation, type) pairs into one delta, chunk by chunk.

    Written for the worker's progress thread next to a replaying lane: every step reuses the same
    cache-sized scratch arrays; element-wise work is done by ufuncs (which release the GIL); the
    GIL-holding passes are five ``bincount`` (three histograms, two weighted sums) and a
    ``flatnonzero`` for the rare errors. Latency sums are service + lateness sums.
    """

    def __init__(self, n_keys: int, step: int = STEP) -> None:
        self.n_keys = n_keys
        self.step = step
        self._hist = np.zeros((len(TIMINGS), n_keys * N_BUCKETS), np.int64)
        self._sums = np.zeros((2, n_keys), np.float64)  # service, lateness
        self._bad = np.zeros(n_keys * N_OUTCOMES, np.int64)
        self._svc = np.empty(step, np.int64)
        self._late = np.empty(step, np.int64)
        self._base = np.empty(step, np.int64)
        self._f = np.empty(step, np.float64)

    def add(
        self, codes: np.ndarray, scheduled_ns: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray,
        outcome: np.ndarray, scheduled_offset_ns: int = 0,
    ) -> None:
        """Add samples (``codes`` int64 rows of the keys; scheduled time = ``scheduled_ns +
        scheduled_offset_ns``, same clock as start and end)."""
        for lo in range(0, len(codes), self.step):
            hi = min(len(codes), lo + self.step)
            self._add_step(codes[lo:hi], scheduled_ns[lo:hi], start_ns[lo:hi], end_ns[lo:hi], outcome[lo:hi],
                           scheduled_offset_ns)

    def _add_step(
        self, codes: np.ndarray, sched: np.ndarray, start: np.ndarray, end: np.ndarray, outcome: np.ndarray,
        offset: int,
    ) -> None:
        n = len(codes)
        svc, late, base, f = self._svc[:n], self._late[:n], self._base[:n], self._f[:n]
        np.subtract(end, start, out=svc)
        np.subtract(start, sched, out=late)
        if offset:
            late -= offset
        np.multiply(codes, N_BUCKETS, out=base)
        nb = self.n_keys * N_BUCKETS
        for t, values in ((1, svc), (2, late), (0, None)):
            if values is None:  # latency = service + lateness
                np.add(svc, late, out=f, casting="unsafe")
            else:
                np.copyto(f, values, casting="unsafe")
                self._sums[t - 1] += np.bincount(codes, weights=f, minlength=self.n_keys)
            # bucket of v: exponent bits of float(v - 1), see bucket_index; v - 1 <= 0 (sign bit
            # set, or zero) gives an exponent field <= 0 after the shift, clipped to bucket 0
            f -= 1.0
            e = f.view(np.int64)
            np.right_shift(e, _F64_EXP_SHIFT, out=e)
            e -= _EXP_OFFSET
            np.clip(e, 0, N_BUCKETS - 1, out=e)
            e += base
            self._hist[t] += np.bincount(e, minlength=nb)
        bad = np.flatnonzero(outcome)
        if bad.size:
            flat = codes[bad] * N_OUTCOMES + outcome[bad].astype(np.int64)
            self._bad += np.bincount(flat, minlength=self.n_keys * N_OUTCOMES)

    def take(self, keys: np.ndarray, in_flight: int = 0) -> LiveDelta:
        """The delta so far (rows of ``keys`` with operations), and start over."""
        k = self.n_keys
        buckets = self._hist.reshape(len(TIMINGS), k, N_BUCKETS).copy()
        outcomes = self._bad.reshape(k, N_OUTCOMES).copy()
        totals = buckets[0].sum(axis=1)
        outcomes[:, 0] = totals - outcomes[:, 1:].sum(axis=1)
        sums = np.empty((len(TIMINGS), k), np.float64)
        sums[1:] = self._sums
        sums[0] = self._sums.sum(axis=0)
        self._hist[:] = 0
        self._sums[:] = 0.0
        self._bad[:] = 0
        used = np.flatnonzero(totals)
        return LiveDelta(
            keys=np.ascontiguousarray(keys[used]),
            outcomes=outcomes[used],
            buckets=np.ascontiguousarray(buckets[:, used, :]),
            sums_ns=np.ascontiguousarray(sums[:, used]),
            in_flight=in_flight,
        )


def aggregate(
    codes: np.ndarray,
    keys: np.ndarray,
    scheduled_ns: np.ndarray,
    start_ns: np.ndarray,
    end_ns: np.ndarray,
    outcome: np.ndarray,
    in_flight: int = 0,
) -> LiveDelta:
    """Reduce samples to a delta. ``codes[i]`` is sample i's row in ``keys`` ((K, 2): op, type);
    the three times share one clock (any origin)."""
    if len(codes) == 0 or len(keys) == 0:
        return empty_delta(in_flight)
    acc = Accumulator(len(keys), step=min(STEP, len(codes)))
    acc.add(np.asarray(codes, dtype=np.int64), scheduled_ns, start_ns, end_ns, outcome)
    return acc.take(keys, in_flight)


class LiveTap:
    """Reads a worker's lanes since the previous call (thread-safe: a Ray actor may poll it)."""

    def __init__(self, lanes: Sequence[RecordedLane], types: np.ndarray) -> None:
        """``types``: the file type of each of the worker's events (indexed by ``Lane.rows``)."""
        self._lanes = list(lanes)
        ops = [lane.ops.astype(np.int64) for lane in self._lanes]
        tys = [np.asarray(types, dtype=np.int64)[lane.rows] for lane in self._lanes]
        combined = np.concatenate([o << 32 | (t & 0xFFFFFFFF) for o, t in zip(ops, tys)]) if ops else np.zeros(0, np.int64)
        uniq, inverse = np.unique(combined, return_inverse=True)
        self.keys_ = np.stack([uniq >> 32, uniq & 0xFFFFFFFF], axis=1).astype(np.int64) if uniq.size else np.zeros((0, 2), np.int64)
        self._codes: list[np.ndarray] = []
        offset = 0
        for lane in self._lanes:
            self._codes.append(inverse[offset : offset + len(lane)].astype(np.int64))
            offset += len(lane)
        self._seen = [0] * len(self._lanes)
        self._acc = Accumulator(max(1, len(self.keys_)))
        self._lock = threading.Lock()

    def delta(self, origin_ns: int, now_ns: int) -> LiveDelta:
        """What was recorded since the previous call; times are monotonic ns, ``origin_ns`` the barrier."""
        with self._lock:
            in_flight = 0
            now_rel = now_ns - origin_ns
            for i, lane in enumerate(self._lanes):
                count = lane.count  # a prefix: everything below it is fully recorded
                lo = self._seen[i]
                due_by_now = int(np.searchsorted(lane.due_ns, now_rel, side="right"))
                in_flight += max(0, due_by_now - count)
                if count <= lo:
                    continue
                self._seen[i] = count
                self._acc.add(self._codes[i][lo:count], lane.due_ns[lo:count], lane.start_ns[lo:count],
                              lane.end_ns[lo:count], lane.outcome[lo:count], scheduled_offset_ns=origin_ns)
            if len(self.keys_) == 0:
                return empty_delta(in_flight)
            return self._acc.take(self.keys_, in_flight)
