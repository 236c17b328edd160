"""``linger=``: how the native HDFS lane reads replies (the URL option and the lane's rule)."""

from __future__ import annotations

import pytest

from mimesisbench.backends.hdfs import HdfsUrl
from mimesisbench.errors import ConfigError
from mimesisbench.native import native_module


def _lane(url: str) -> object:
    module = native_module()
    assert module is not None, "the tests need the native core (scripts/setup.sh --dev builds it)"
    return module.HdfsLane(
        "hdfs://127.0.0.1:1", strict_mkdirs=True, owner="u", group="g", replication=None,
        **HdfsUrl(url).native_linger(),
    )


def test_the_url_option_reads_auto_off_and_durations_and_names_a_bad_value() -> None:
    default = HdfsUrl("hdfs://nn:8020/b")
    assert (default.linger, default.linger_s, default.linger_auto) == ("auto", 200e-6, True)
    assert HdfsUrl("hdfs://nn:8020/b?linger=off").native_linger() == {"linger_ns": 0, "linger_auto": False}
    assert HdfsUrl("hdfs://nn:8020/b?linger=0").native_linger() == {"linger_ns": 0, "linger_auto": False}
    assert HdfsUrl("hdfs://nn:8020/b?linger=150us").native_linger() == {"linger_ns": 150_000, "linger_auto": False}
    for bad, says in (("soon", "linger="), ("20ms", "up to 10ms"), ("5", "linger=")):
        with pytest.raises(ConfigError, match=says):
            HdfsUrl(f"hdfs://nn:8020/b?linger={bad}")


def test_auto_naps_an_eighth_of_the_mean_latency_with_16_calls_out_as_fast_as_possible_or_behind() -> None:
    lane = _lane("hdfs://nn:8020/b")
    assert lane.nap_ns(False, 64, 1_000_000) == 125_000
    assert lane.nap_ns(False, 16, 400_000) == 50_000
    assert lane.nap_ns(False, 64, 8_000_000) == 200_000  # at most 200 us
    assert lane.nap_ns(False, 15, 1_000_000) == 0  # too few calls out: it waits on the socket
    # paced: only while behind its schedule (an event due, no slot for it: a backlog)
    assert lane.nap_ns(True, 64, 1_000_000) == 0  # on schedule: replies timed as they come
    assert lane.nap_ns(True, 64, 1_000_000, behind=True) == 125_000
    assert lane.nap_ns(True, 64, 8_000_000, behind=True) == 200_000
    assert lane.nap_ns(True, 15, 1_000_000, behind=True) == 0


def test_a_fixed_linger_naps_always_and_off_never() -> None:
    fixed, off = _lane("hdfs://nn:8020/b?linger=2ms"), _lane("hdfs://nn:8020/b?linger=off")
    for paced, calls, mean, behind in ((False, 1, 100_000, False), (True, 64, 5_000_000, True), (False, 64, 0, False)):
        assert fixed.nap_ns(paced, calls, mean, behind=behind) == 2_000_000
        assert off.nap_ns(paced, calls, mean, behind=behind) == 0
