"""``monitoring.edit_log.SyncWatch``: the NameNode's syncs and their time, from its refreshed
``NameNodeActivity`` bean (served here by a small HTTP server whose counters the test sets; the
real NameNode's are read by ``tests/integration/test_simnn_hdfs.py``'s calibration)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.unit.test_jmx import FakeNameNode, serving

from mimesisbench.monitoring.edit_log import SyncWatch


class Activity(FakeNameNode):
    """Answers every query with one ``NameNodeActivity`` bean whose counters the test sets."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs = 0
        self.avg_ms = 0.0

    def refresh(self, syncs: int, avg_ms: float) -> None:
        self.syncs, self.avg_ms = syncs, avg_ms

    def answer(self, query: str) -> dict[str, Any]:
        return {"beans": [{"name": "Hadoop:service=NameNode,name=NameNodeActivity", "SyncsNumOps": self.syncs,
                           "SyncsAvgTime": self.avg_ms}]}


@pytest.fixture
def activity() -> Iterator[Activity]:
    with serving(Activity()) as server:
        yield server


def test_each_refresh_adds_its_syncs_at_their_mean(activity: Activity) -> None:
    activity.refresh(10, 0.9)  # before the watch: the baseline, not counted
    watch = SyncWatch(f"{activity.url}/jmx")
    watch.poll()
    activity.refresh(30, 0.2)  # 20 syncs of 0.2 ms
    watch.poll()
    watch.poll()  # the same refresh read again adds nothing
    activity.refresh(50, 0.4)  # 20 of 0.4 ms
    totals = watch.take()
    assert totals.syncs == 40
    assert totals.total_s == pytest.approx(20 * 0.2e-3 + 20 * 0.4e-3)
    assert totals.mean_s == pytest.approx(0.3e-3)
    assert watch.take().syncs == 0 and watch.take().mean_s is None  # taken: the next measurement starts empty


def test_an_answer_older_than_one_counted_is_not_counted_again(activity: Activity) -> None:
    watch = SyncWatch(f"{activity.url}/jmx")
    watch.poll()
    activity.refresh(100, 0.2)
    watch.poll()
    activity.refresh(60, 0.2)  # late: an answer fetched before the last one counted
    watch.poll()
    activity.refresh(110, 0.5)
    assert watch.take().syncs == 110 - 0


def test_the_end_of_a_measurement_waits_for_the_refresh_that_shows_its_syncs(activity: Activity) -> None:
    watch = SyncWatch(f"{activity.url}/jmx", poll_s=0.05)
    watch.take()  # the measurement's start
    timer = threading.Timer(0.3, activity.refresh, (25, 0.2))  # the bean refreshes after the batch ends
    timer.start()
    t0 = time.monotonic()
    totals = watch.take(wait_s=30.0)
    timer.join()
    assert totals.syncs == 25 and totals.mean_s == pytest.approx(0.2e-3)
    assert time.monotonic() - t0 < 30.0  # it stopped at the refresh, not at the bound


def test_only_the_edges_of_a_measurement_are_read(activity: Activity) -> None:
    """No reading while the measurement runs (polling the NameNode then slowed it): syncs of
    several refreshes during it are all counted at the end, at the last refresh's mean."""
    watch = SyncWatch(f"{activity.url}/jmx")
    watch.take()  # the measurement's start
    served = activity.requests
    activity.refresh(40, 0.1)
    time.sleep(0.3)
    activity.refresh(100, 0.3)  # the last refresh: the mean of its interval stands for all
    assert activity.requests == served  # nothing read meanwhile
    totals = watch.take(wait_s=5.0)
    assert totals.syncs == 100 and totals.mean_s == pytest.approx(0.3e-3)


def test_a_servlet_that_does_not_answer_gives_no_syncs_and_counts_the_failures() -> None:
    watch = SyncWatch("http://127.0.0.1:9/jmx")  # the discard port: nothing listens
    totals = watch.take(wait_s=0.2)
    assert totals.syncs == 0 and totals.mean_s is None
    assert watch.failures >= 1
