"""Wall-clock timestamps of a run's records (the barrier itself is converted by each job:
``jobs.wall_to_monotonic_ns``)."""

from __future__ import annotations

import time


def iso_utc(wall_ns: int | None = None) -> str:
    """An ISO-8601 UTC timestamp with microseconds."""
    import datetime as dt

    ns = time.time_ns() if wall_ns is None else wall_ns
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="microseconds")
