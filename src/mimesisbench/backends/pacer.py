"""A rate limit shared by every thread and process of a run: the generic cell rate algorithm
(GCRA, the ATM traffic shaper; a token bucket stated as one number per bucket).

A bucket is its *theoretical arrival time* (TAT, ns of ``CLOCK_MONOTONIC``, which every process
of a host reads alike). A caller at time ``now`` takes the slot ``max(TAT, now)``, may go at
``slot - tolerance`` (``tolerance = (burst - 1) * interval``) and moves TAT to ``slot + interval``.
Callers that wait keep their place: a late wake-up delays that one operation, not the rate, so
a backlogged run goes at exactly the rate.

Shared by processes, the buckets live in a small file (one int64 per bucket) mapped by each
process and updated under ``flock``; a thread lock orders the threads of one process (``flock``
does not: it belongs to the open file, which they share). Why by hand: the maintained Python
rate limiters keep a bucket per process, or share it through SQLite or Redis at tens of
microseconds an operation; this costs two system calls.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import threading
import time
from collections.abc import Sequence

from mimesisbench.errors import BackendError

_SLOT = struct.Struct("<q")


def bucket_file_size(buckets: int) -> int:
    return _SLOT.size * buckets


class Pacer:
    """``reserve(bucket)`` -> the monotonic time (ns) at which the caller may go."""

    def __init__(self, rates: Sequence[float], burst: int = 1, path: str | None = None) -> None:
        self._interval = [max(1, round(1e9 / r)) for r in rates]
        self._tolerance = [(burst - 1) * iv for iv in self._interval]
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._local = [0] * len(rates)
        if path is not None:
            size = bucket_file_size(len(rates))
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if os.fstat(fd).st_size < size:
                        os.ftruncate(fd, size)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    self._map = mmap.mmap(fd, size)
                except BaseException:
                    os.close(fd)
                    raise
            except OSError as exc:
                raise BackendError(f"rate: cannot open the run's shared bucket {path} ({exc.strerror or exc})") from None
            self._fd = fd

    def reserve(self, bucket: int) -> int:
        now = time.monotonic_ns()
        interval, tolerance = self._interval[bucket], self._tolerance[bucket]
        with self._lock:
            if self._map is None:
                slot = max(self._local[bucket], now)
                self._local[bucket] = slot + interval
            else:
                assert self._fd is not None
                offset = bucket * _SLOT.size
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                try:
                    slot = max(_SLOT.unpack_from(self._map, offset)[0], now)
                    _SLOT.pack_into(self._map, offset, slot + interval)
                finally:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        return slot - tolerance

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
