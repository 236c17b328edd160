"""Dependency-only ordering for blocking backends (``run.key_gate``): the lanes of a worker take
its events round robin and each event waits only for the earlier events of its object it depends
on. Requirements computed by hand; a hot file on a real posix directory, replayed through the
Python lanes and the native ones: its reads are spread over every lane (in flight together,
shown with a delay wrapper that holds each one for 2 ms), never before the create, never after
the delete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.unit.cli_run import run_cli
from tests.unit.hot_file import hot_file_trace, max_overlap

from mimesisbench.jobs import StopSignal
from mimesisbench.native import ENV_SWITCH
from mimesisbench.run.key_gate import HOT_EVENTS, KeyGate, requirements, spread_lanes
from mimesisbench.schedule.format import OpCode

Op = OpCode


def test_requirements_follow_the_ordering_rule() -> None:
    keys = np.array([7, 7, 7, 9, 7, 7, 9], dtype=np.int64)
    ops = np.array([Op.CREATE, Op.OPEN, Op.GETFILEINFO, Op.MKDIRS, Op.DELETE, Op.OPEN, Op.LIST_DIR], dtype=np.uint8)
    key, need, offsets, events = requirements(keys, ops)
    assert key.tolist() == [0, 0, 0, 1, 0, 0, 1]
    # create: nothing before it; reads: the create; delete: all four before it; the read after: the delete
    assert need.tolist() == [0, 1, 1, 0, 3, 4, 1]
    assert offsets.tolist() == [0, 5, 7]
    assert events.tolist() == [0, 1, 2, 4, 5, 3, 6]


def test_only_hot_objects_are_spread_and_only_they_need_the_gate() -> None:
    keys = np.array([4] * HOT_EVENTS + [6, 6, 8], dtype=np.int64)
    ops = np.array([Op.CREATE] + [Op.OPEN] * (HOT_EVENTS - 1) + [Op.CREATE, Op.DELETE, Op.OPEN], dtype=np.uint8)
    lanes = spread_lanes(keys, 3)
    assert set(lanes[:HOT_EVENTS].tolist()) == {0, 1, 2}  # the hot file's events on every lane
    assert lanes[HOT_EVENTS] == lanes[HOT_EVENTS + 1]  # a cold file's events on one
    _, need, _, _ = requirements(keys, ops, lanes)
    assert need.tolist() == [0] + [1] * (HOT_EVENTS - 1) + [0, 0, 0]  # its lane orders the cold file
    assert spread_lanes(keys, 1).tolist() == [0] * len(keys)


def test_an_event_waits_for_its_dependency_and_no_longer() -> None:
    keys = np.array([1, 1, 1, 2], dtype=np.int64)
    ops = np.array([Op.CREATE, Op.OPEN, Op.OPEN, Op.OPEN], dtype=np.uint8)
    gate = KeyGate.for_events(keys, ops)
    assert gate.ready(0) and gate.ready(3) and not gate.ready(1)
    went = threading.Event()
    stop = StopSignal()
    waiter = threading.Thread(target=lambda: gate.wait(2, stop) and went.set())
    waiter.start()
    assert not went.wait(0.2)  # the read waits for the create
    gate.end(0)
    assert went.wait(10)
    waiter.join()
    assert gate.ready(1) and gate.ready(2)


def test_a_stop_ends_a_wait() -> None:
    gate = KeyGate.for_events(np.array([1, 1], dtype=np.int64), np.array([Op.CREATE, Op.DELETE], dtype=np.uint8))
    stop = StopSignal()
    threading.Timer(0.1, stop.set, args=("interrupted", "test")).start()
    assert gate.wait(1, stop) is False


@pytest.mark.parametrize(("lanes", "wrapper"), [("native", ""), ("python", ""), ("python", "delay:2ms+")])
def test_a_hot_file_is_spread_over_the_lanes_and_its_order_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lanes: str, wrapper: str
) -> None:
    reads = 200 if wrapper else 2000
    code, _, err = run_cli(["schedule-from-trace", str(hot_file_trace(tmp_path / "t.csv", reads)), "-o",
                            str(tmp_path / "s")], capsys)
    assert code == 0, err
    # its own process: the switch reaches the workers (a forkserver started earlier keeps its environment)
    done = subprocess.run([sys.executable, "-m", "mimesisbench", "run", str(tmp_path / "s"), "-b",
                           f"{wrapper}posix:{tmp_path / 'base'}", "--workers", "1", "--concurrency", "4",
                           "--as-fast-as-possible", "-o", str(tmp_path / "runs"), "-q"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, ENV_SWITCH: "1" if lanes == "native" else "0"})
    assert done.returncode == 0, done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["lane_impl"][0].startswith("native-posix-" if lanes == "native" else "python")
    assert manifest["workers"][0]["lanes"] == 4
    assert summary["operations_issued"] == reads + 2 and summary["operations_failed"] == 0
    samples = pl.read_parquet(run_dir / "samples.parquet")
    by_op = {op: samples.filter(pl.col("op") == op) for op in ("create", "open", "getfileinfo", "delete")}
    got = pl.concat([by_op["open"], by_op["getfileinfo"]])
    assert got["start_us"].min() >= by_op["create"]["end_us"][0]
    assert by_op["delete"]["start_us"][0] >= got["end_us"].max()
    if wrapper:  # each read held 2 ms: four lanes have several in flight (one lane per file: 1)
        assert max_overlap(got["start_us"].to_numpy(), got["end_us"].to_numpy()) > 1
