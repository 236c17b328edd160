"""Which process a record names: a live daemon stays ours when the wall clock moves, a reused pid does not."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mimesisbench.hdfs.processes import ProcessRecord, Started, start_daemon, started_since_boot_s, stop


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[Started]:
    started = start_daemon("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"],
                           tmp_path / "sleeper.out", tmp_path)
    try:
        yield started
    finally:
        started.popen.kill()
        started.popen.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the start since boot is read from /proc")
def test_the_start_since_boot_is_recorded_on_the_uptime_clock_and_kept_in_json(sleeper: Started) -> None:
    record = sleeper.record
    assert record.boot_start_s is not None and record.boot_start_s == started_since_boot_s(record.pid)
    # on the clock of /proc/uptime (since boot, and suspended time): started a moment ago
    uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    assert 0.0 <= uptime_s - record.boot_start_s < 60.0
    assert ProcessRecord.from_json(record.to_json()) == record


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the start since boot is read from /proc")
def test_a_live_daemon_stays_ours_when_the_wall_clock_moves_and_is_stopped(sleeper: Started) -> None:
    # what a boot time moved by a second (a wall clock slewed or stepped) does to the wall create time
    moved = dataclasses.replace(sleeper.record, create_time=sleeper.record.create_time + 1.0)
    assert moved.process() is not None and moved.is_running()
    assert stop([moved], grace_s=10.0) == [moved]
    assert sleeper.popen.wait(timeout=10) is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the start since boot is read from /proc")
def test_a_pid_started_at_another_time_is_not_ours_and_is_left_alone(sleeper: Started) -> None:
    other = dataclasses.replace(sleeper.record, boot_start_s=(sleeper.record.boot_start_s or 0.0) - 1.0)
    assert other.process() is None
    assert stop([other], grace_s=1.0) == []
    assert sleeper.popen.poll() is None  # still running


def test_a_record_written_before_the_start_since_boot_falls_back_to_the_wall_clock(sleeper: Started) -> None:
    data = sleeper.record.to_json()
    del data["boot_start_s"]
    legacy = ProcessRecord.from_json(data)
    assert legacy.boot_start_s is None and legacy.process() is not None
    assert dataclasses.replace(legacy, create_time=legacy.create_time - 5.0).process() is None


def test_a_pid_that_does_not_exist_has_no_start() -> None:
    assert started_since_boot_s(2**22 + 12345) is None
