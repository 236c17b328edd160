"""Clocks: workers pace and record with ``time.monotonic_ns``; barriers are wall-clock times.

The coordinator names the start barrier as a wall-clock time (ns since the epoch) so workers on
other machines (NTP-synchronised) can meet it; each worker converts it once into its own
monotonic clock and never reads the wall clock again during the run.
"""

from __future__ import annotations

import time


def wall_to_monotonic_ns(wall_ns: int) -> int:
    """The local monotonic time at which the wall clock reads ``wall_ns`` (best of 5 readings)."""
    best_gap, offset = None, 0
    for _ in range(5):
        m0 = time.monotonic_ns()
        w = time.time_ns()
        m1 = time.monotonic_ns()
        gap = m1 - m0
        if best_gap is None or gap < best_gap:
            best_gap, offset = gap, w - (m0 + m1) // 2
    return wall_ns - offset


def iso_utc(wall_ns: int | None = None) -> str:
    """An ISO-8601 UTC timestamp with microseconds."""
    import datetime as dt

    ns = time.time_ns() if wall_ns is None else wall_ns
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).isoformat(timespec="microseconds")
