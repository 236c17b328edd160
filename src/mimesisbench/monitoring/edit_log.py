"""The NameNode's edit-log syncs as the NameNode itself times them, from its JMX servlet.

``NameNodeActivity`` exports ``SyncsNumOps`` (every sync so far) and ``SyncsAvgTime`` (the mean
duration, in milliseconds, of the syncs of the last metrics interval that had any), both
refreshed once per metrics period (``hdfs up`` sets it to 1 s). ``SyncWatch`` polls the bean
several times a period in a background thread and, at each refresh, adds that interval's syncs
and their time (count x mean) to the measurement under way (``take()`` closes one and returns its
``SyncTotals``). The NameNode measures the sync around its whole flush (the write, the
``fdatasync``, and its thread's wake-up afterwards), with a millisecond clock: each duration is
whole milliseconds, but their mean over many syncs is unbiased (a sync of 0.2 ms crosses a
millisecond tick one time in five).

A servlet that does not answer is not an error: the watch counts the failures, and a measurement
with no refresh seen has no syncs (the caller falls back on its own measurement).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from mimesisbench.monitoring.jmx import FETCH_TIMEOUT_S, NN, fetch_beans

ACTIVITY_QUERY = NN + "NameNodeActivity"
#: seconds between polls: several per metrics period, so that no refresh is missed
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
    """Polls ``NameNodeActivity`` at ``jmx_url`` while started (see the module)."""

    def __init__(self, jmx_url: str, poll_s: float = POLL_INTERVAL_S) -> None:
        self.jmx_url = jmx_url
        self.poll_s = poll_s
        self.failures = 0
        self._last_count: int | None = None
        self._syncs = 0
        self._total_s = 0.0
        self._refreshes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> None:
        """One reading: a changed ``SyncsNumOps`` is a refresh, whose syncs and mean are added."""
        try:
            bean = fetch_beans(self.jmx_url, ACTIVITY_QUERY, FETCH_TIMEOUT_S)[0]
            count, mean_ms = int(bean["SyncsNumOps"]), float(bean["SyncsAvgTime"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            with self._lock:  # the watch's thread and take() both poll
                self.failures += 1
            return
        with self._lock:
            if self._last_count is None:
                self._last_count = count
            elif count > self._last_count:  # (an answer older than one already counted is not)
                new = count - self._last_count
                self._syncs += new
                self._total_s += new * mean_ms / 1e3
                self._last_count = count
                self._refreshes += 1

    def take(self, wait_s: float = 0.0) -> SyncTotals:
        """The syncs since the last ``take`` (or the start). ``wait_s`` > 0: the measurement just
        ended had syncs, and the bean shows them only at its next refresh: wait for one (a new
        count), at most that long."""
        with self._lock:
            seen = self._refreshes
        deadline = time.monotonic() + wait_s
        while True:
            self.poll()
            with self._lock:
                refreshed = self._refreshes > seen
            if refreshed or time.monotonic() >= deadline:
                break
            time.sleep(self.poll_s / 4)
        with self._lock:
            totals = SyncTotals(self._syncs, self._total_s)
            self._syncs, self._total_s = 0, 0.0
        return totals

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.poll()

    def start(self) -> SyncWatch:
        self.poll()  # the baseline count
        self._thread = threading.Thread(target=self._loop, name="mimesisbench-sync-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> SyncWatch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
