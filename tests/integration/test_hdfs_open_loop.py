"""The open loop for real on the real NameNode: a hot file's operations are in flight together
(not one at a time, as one lane per file would issue them), and every dependency holds: the
reads of a file follow its create, its delete follows its reads, and nothing fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from tests.unit.hot_file import hot_file_trace, max_overlap

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("afap", [False, True], ids=["paced", "as-fast-as-possible"])
def test_a_hot_file_has_many_operations_in_flight_and_its_order_holds(local_hdfs, tmp_path: Path, afap: bool) -> None:  # type: ignore[no-untyped-def]
    schedule = tmp_path / "schedule"
    done = subprocess.run([sys.executable, "-m", "mimesisbench", "schedule-from-trace",
                           str(hot_file_trace(tmp_path / "trace.csv", 3000)), "-o", str(schedule)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    timing = ["--as-fast-as-possible"] if afap else ["--time-scale", "0.2"]  # 3,000 reads in 0.6 s: 5,000/s
    done = subprocess.run([sys.executable, "-m", "mimesisbench", "run", str(schedule), "-b",
                           f"{local_hdfs.url}/hot-{'afap' if afap else 'paced'}", "--workers", "1", "--concurrency", "32",
                           "--max-drift", "off", *timing, "--hdfs-workdir", str(local_hdfs.workdir), "-o",
                           str(tmp_path / "runs"), "-q"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["operations_issued"] == 3002 and summary["operations_failed"] == 0
    assert summary["mode"] == ("as-fast-as-possible" if afap else "paced")
    samples = pl.read_parquet(run_dir / "samples.parquet")
    start, end = samples["start_us"].to_numpy(), samples["end_us"].to_numpy()
    assert max_overlap(start, end) > 8  # one file, many operations in flight (one lane per file: 1)
    by_op = {op: samples.filter(pl.col("op") == op) for op in ("create", "open", "getfileinfo", "delete")}
    reads = pl.concat([by_op["open"], by_op["getfileinfo"]])
    assert reads["start_us"].min() >= by_op["create"]["end_us"][0]
    assert by_op["delete"]["start_us"][0] >= reads["end_us"].max()
    assert summary["cost"]["server"]["namenode"]["cpu_s"] > 0
    # its threads park and wake for every call or batch of calls: context switches, per operation
    assert summary["cost"]["server"]["namenode"]["voluntary_switches_per_op"] > 0
