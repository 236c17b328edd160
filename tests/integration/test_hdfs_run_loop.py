"""Closing the loop with real software: a benchmark run against the managed NameNode, the
NameNode's own audit log of it, a profile fitted from that log, and the schedule validated
against the log. Also checks that the run recorded the NameNode's JMX series beside its own."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

from mimesisbench.profile.io import load_profile
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.trace.hdfs_audit import read_audit_logs

pytestmark = pytest.mark.integration

BASE = "/mbloop"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True,
                          timeout=900, check=False)


@pytest.fixture(scope="module")
def looped(local_hdfs, tmp_path_factory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("loop")
    schedule = work / "schedule"
    done = _cli("generate", "demo", "--scale-files", "0.2", "--time-scale", "0.02", "--seed", "4", "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    # `hdfs up` on the running cluster returns at once and says which --jmx a run should use
    up = _cli("hdfs", "up", "--workdir", str(local_hdfs.workdir))
    assert up.returncode == 0, up.stderr
    (run_with,) = [line for line in up.stdout.splitlines() if line.startswith("run with")]
    printed_jmx = run_with.split("--jmx ", 1)[1].strip()
    # no --jmx: the run finds the cluster's HTTP port in its state file (not :9870)
    done = _cli("run", str(schedule), "--backend", f"{local_hdfs.url}{BASE}", "--hdfs-workdir", str(local_hdfs.workdir),
                "--jmx-interval", "0.5s", "--max-drift", "off", "--output", str(work / "runs"), "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next((work / "runs").iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    barrier_ms = manifest["start_barrier_wall_ns"] // 1_000_000
    events, _ = read_audit_logs([local_hdfs.audit_log])
    replay = (
        events.with_columns([pl.col(c).cast(pl.String) for c in ("op", "path", "dst", "user")])
        .filter((pl.col("time_ms") >= barrier_ms - 1) & pl.col("path").str.starts_with(BASE + "/"))
        .with_columns(pl.col("path").str.strip_prefix(BASE), pl.col("dst").str.strip_prefix(BASE))
    )
    trace = work / "replay-trace.csv"
    replay.write_csv(trace)
    return {"schedule": schedule, "run_dir": run_dir, "trace": trace, "replay": replay, "printed_jmx": printed_jmx,
            "http_port": local_hdfs.http_port}


def test_the_run_completes_and_records_the_namenode_jmx_series(looped) -> None:  # type: ignore[no-untyped-def]
    summary = json.loads((looped["run_dir"] / "summary.json").read_text())
    assert summary["complete"] is True
    assert summary["operations_issued"] == read_schedule(looped["schedule"]).events.height
    failed = sum(op["failed"] for op in summary["operations"].values())
    assert failed == 0
    server = pl.read_parquet(looped["run_dir"] / "server_timeseries.parquet")
    assert server.height >= 3
    assert any(c.startswith("jmx_") for c in server.columns)
    manifest = json.loads((looped["run_dir"] / "manifest.json").read_text())
    expected = f"http://127.0.0.1:{looped['http_port']}/jmx"
    assert manifest["server_metrics"]["jmx"] == expected == looped["printed_jmx"]
    # the endpoint found and answering: no refusal, no sampling given up (a fetch that timed out on
    # a loaded host, the series recorded beside it, is a late sample, not a wrong endpoint)
    assert not [w for w in manifest["warnings"] if "JMX" in w and "TimeoutError" not in w]


def test_the_namenode_saw_exactly_what_the_schedule_says(looped) -> None:  # type: ignore[no-untyped-def]
    events = read_schedule(looped["schedule"]).events
    audited = dict(zip(*looped["replay"]["op"].value_counts().to_dict(as_series=False).values()))
    expected_opens = events.filter(pl.col("op") == int(OpCode.OPEN)).height
    expected_creates = events.filter(pl.col("op") == int(OpCode.CREATE)).height
    expected_deletes = events.filter(pl.col("op") == int(OpCode.DELETE)).height
    assert expected_opens > 0 and expected_creates > 0 and expected_deletes > 0
    assert audited.get("open", 0) == expected_opens
    assert audited.get("create", 0) == expected_creates
    assert audited.get("delete", 0) == expected_deletes


def test_fitting_the_audit_log_and_validating_closes_the_loop(looped, tmp_path) -> None:  # type: ignore[no-untyped-def]
    profile_path = tmp_path / "refit.json"
    done = _cli("model", "--audit", str(looped["trace"]), "--types", "2", "--seed", "1", "-o", str(profile_path))
    assert done.returncode == 0, done.stderr
    refit = load_profile(profile_path)
    events = read_schedule(looped["schedule"]).events
    assert refit.total_creates == events.filter(pl.col("op") == int(OpCode.CREATE)).height
    done = _cli("validate", str(looped["schedule"]), "--trace", str(looped["trace"]), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    print("closing the loop on HDFS:", {k: v for k, v in report.items() if k.startswith(("ks_", "opmix"))})
    assert report["ks_popularity"] < 0.04  # the paper's bar
    assert report["ks_depth"] < 0.04
    assert report["opmix_max_abs_error"] < 0.02
