"""The NameNode's edit-log syncs as the NameNode itself times them, from its JMX servlet.

``NameNodeActivity`` exports ``SyncsNumOps`` (every sync so far) and ``SyncsAvgTime`` (the mean
duration, in milliseconds, of the syncs of the last metrics interval that had any), both
refreshed once per metrics period (``hdfs up`` sets it to 1 s). ``SyncWatch`` reads the bean at
the edges of a measurement only: ``take()`` before it (its start), and ``take(wait_s)`` after it,
which waits for the refresh that shows its last syncs; each refresh seen adds its new syncs at
that refresh's mean. A measurement's syncs are so counted in full (the count is cumulative), and
their time is the last second's mean times their count.

It does not poll while the measurement runs. It used to, five times a second from a thread of the
measuring process, so as to add every interval's mean: that polling slowed what it watched
(``bench/bench_sync_watch.py``: a fresh managed NameNode, micro at 8 clients, six rounds each way
alternately; with the polling, a create's p99 1.6-1.7 times as long, a mkdirs' 1.2-1.25 times,
getfileinfo's up to 1.5 times), and every calibration measured until then carried it.

The NameNode measures the sync around its whole flush (the write, the ``fdatasync``, and its
thread's wake-up afterwards), with a millisecond clock: each duration is whole milliseconds, but
their mean over many syncs is unbiased (a sync of 0.2 ms crosses a millisecond tick one time in
five).

A servlet that does not answer is not an error: the watch counts the failures, and a measurement
with no refresh seen has no syncs (the caller falls back on its own measurement).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mimesisbench.monitoring.jmx import FETCH_TIMEOUT_S, NN, fetch_beans

ACTIVITY_QUERY = NN + "NameNodeActivity"
#: seconds between readings while a measurement's end waits for a refresh (every quarter of it)
POLL_INTERVAL_S = 0.2
#: how long a measurement's end waits for the refresh that shows its last syncs: a few periods
REFRESH_WAIT_S = 3.0


@dataclass(frozen=True)
class SyncTotals:
    """The syncs seen refreshed during one measurement and their total time (seconds)."""

    syncs: int
    total_s: float

    @property
    def mean_s(self) -> float | None:
        return self.total_s / self.syncs if self.syncs > 0 else None


class SyncWatch:
    """Reads ``NameNodeActivity`` at ``jmx_url`` at each ``take`` (see the module)."""

    def __init__(self, jmx_url: str, poll_s: float = POLL_INTERVAL_S) -> None:
        self.jmx_url = jmx_url
        self.poll_s = poll_s
        self.failures = 0
        self._last_count: int | None = None
        self._syncs = 0
        self._total_s = 0.0
        self._refreshes = 0

    def poll(self) -> None:
        """One reading: a changed ``SyncsNumOps`` is a refresh, whose syncs and mean are added."""
        try:
            bean = fetch_beans(self.jmx_url, ACTIVITY_QUERY, FETCH_TIMEOUT_S)[0]
            count, mean_ms = int(bean["SyncsNumOps"]), float(bean["SyncsAvgTime"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            self.failures += 1
            return
        if self._last_count is None:
            self._last_count = count
        elif count > self._last_count:  # (an answer older than one already counted is not)
            new = count - self._last_count
            self._syncs += new
            self._total_s += new * mean_ms / 1e3
            self._last_count = count
            self._refreshes += 1

    def take(self, wait_s: float = 0.0) -> SyncTotals:
        """The syncs since the last ``take`` (or the first reading). ``wait_s`` > 0: the
        measurement just ended had syncs, and the bean shows them only at its next refresh: wait
        for one (a new count), at most that long, reading it every ``poll_s`` / 4."""
        seen = self._refreshes
        deadline = time.monotonic() + wait_s
        while True:
            self.poll()
            if self._refreshes > seen or time.monotonic() >= deadline:
                break
            time.sleep(self.poll_s / 4)
        totals = SyncTotals(self._syncs, self._total_s)
        self._syncs, self._total_s = 0, 0.0
        return totals
