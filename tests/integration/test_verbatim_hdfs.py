"""A trace replayed verbatim on a real NameNode: the second audit log is the first one.

A small workload of jobs, readers and a poller is driven through the native client
``hdfs-native`` under ``BASE/src`` on the managed HDFS (the ``local_hdfs`` fixture): inputs
read and looked up, job output written under ``_temporary``, renamed out and committed, trees
renamed and deleted recursively, permissions set, directories listed and summed. Its audit lines
(the window after the inputs were made) become a schedule (``schedule-from-trace``), which is
``run`` against the same NameNode under ``BASE/replay``. The NameNode's log of the replay (from
the run's start barrier), with the replay's base taken off every path, must hold the same
commands on the same paths as the first, in the same order on each path up to the order of the
reads between two of the path's ordering commands (create, delete, rename...: the open loop issues
those reads at their due times, whatever else is in flight on the path, so the NameNode may log
two of them the other way round), and every operation's outcome must be the one the schedule
predicts from the trace's history.

Counts and orders only: nothing here depends on how fast the loaded machine runs.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

import polars as pl
import pytest
from tests.integration.child_cli import audit_under, cli

from mimesisbench.schedule import read_schedule
from mimesisbench.trace.hdfs_audit import read_audit_logs

pytestmark = pytest.mark.integration

BASE = "/mbtest-verbatim"
SRC = f"{BASE}/src"
REPLAY = f"{BASE}/replay"
JOBS = 6
PARTS = 5


def _write(client: Any, path: str, overwrite: bool = False) -> None:
    from hdfs_native import WriteOptions

    with client.create(path, WriteOptions(overwrite=overwrite)):
        pass


def _workload(client: Any) -> None:
    """Jobs that read their inputs and commit their output, a poller, and cleanups."""
    for j in range(JOBS):
        inp = f"{SRC}/in/f{j % 3}"
        client.get_file_info(inp)
        with client.read(inp) as reader:
            reader.read()
        job = f"{SRC}/out/job{j}"
        if j % 2:
            try:  # a lookup that misses (audited all the same)
                client.get_file_info(f"{job}/_SUCCESS")
            except FileNotFoundError:
                pass
        attempt = f"{job}/_temporary/0/attempt_{j}"
        client.mkdirs(attempt, create_parent=True)
        for k in range(PARTS):
            _write(client, f"{attempt}/part-{k}")
        for k in range(PARTS):
            client.rename(f"{attempt}/part-{k}", f"{job}/part-{k}")
        client.delete(f"{job}/_temporary", recursive=True)
        _write(client, f"{job}/_SUCCESS")
        client.set_permission(f"{job}/_SUCCESS", 0o644)
        list(client.list_status(f"{SRC}/out"))
        client.get_content_summary(job)
        if j % 3 == 2:
            client.rename(job, f"{SRC}/published-{j}")
        if j % 2 == 1:
            _write(client, f"{SRC}/in/f{j % 3}", overwrite=True)
        time.sleep(0.05)
    client.delete(f"{SRC}/published-2", recursive=True)
    client.mkdirs(f"{SRC}/in")  # of an existing directory


@pytest.fixture(scope="module")
def replayed(local_hdfs, tmp_path_factory) -> dict[str, Any]:
    from hdfs_native import Client

    work = tmp_path_factory.mktemp("verbatim")
    client = Client(local_hdfs.url)
    client.mkdirs(f"{SRC}/in", create_parent=True)
    for i in range(3):
        _write(client, f"{SRC}/in/f{i}")
    time.sleep(0.1)
    logged, _ = read_audit_logs([local_hdfs.audit_log])
    window_start = int(logged.select(pl.col("time_ms").max()).item()) + 1
    time.sleep(0.1)
    _workload(client)
    time.sleep(0.5)
    first = audit_under(local_hdfs.audit_log, window_start, SRC, allowed_only=False)
    trace = work / "trace.parquet"
    first.write_parquet(trace)
    schedule = work / "schedule"
    done = cli("schedule-from-trace", str(trace), "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    done = cli("run", str(schedule), "--backend", f"{local_hdfs.url}{REPLAY}", "--max-drift", "off",
                "--jmx", "off", "--output", str(work / "runs"), "-q", timeout_s=240.0)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next((work / "runs").iterdir())
    barrier_ms = json.loads((run_dir / "manifest.json").read_text())["start_barrier_wall_ns"] // 1_000_000
    time.sleep(0.5)
    second = audit_under(local_hdfs.audit_log, barrier_ms - 1, REPLAY, allowed_only=False).with_columns(
        pl.col("path").str.strip_prefix(REPLAY), pl.col("dst").str.strip_prefix(REPLAY)
    )
    return {"first": first, "second": second, "schedule": read_schedule(schedule), "run_dir": run_dir}


#: audit commands that order what happens on their path (schedule.format.ORDERED_OPS)
ORDERING = frozenset({"create", "delete", "rename", "mkdirs", "append", "truncate", "concat"})


def _per_path(events: pl.DataFrame) -> dict[str, list[Any]]:
    """Per path its commands in order, the reads between two ordering commands as a sorted list."""
    out: dict[str, list[Any]] = defaultdict(list)
    for op, path, dst in events.select("op", "path", "dst").iter_rows():
        seq = out[path]
        if op in ORDERING:
            seq.append((op, dst))
        elif seq and isinstance(seq[-1], list):
            seq[-1] = sorted([*seq[-1], (op, str(dst))])
        else:
            seq.append([(op, str(dst))])
    return dict(out)


def test_the_workload_made_a_trace_of_jobs(replayed) -> None:
    print("trace:", replayed["first"].group_by("op").len().sort("op").rows())
    print("replay:", replayed["second"].group_by("op").len().sort("op").rows())
    commands = set(replayed["first"]["op"].to_list())
    wanted = {"getfileinfo", "open", "mkdirs", "create", "rename", "delete", "setPermission", "listStatus",
              "contentSummary"}  # fmt: skip
    assert wanted <= commands, sorted(wanted - commands)
    manifest = replayed["schedule"].manifest
    assert manifest["verbatim"]["pre_existing_files"] == 3  # the inputs, made before the window
    assert manifest["counts"]["events"] == replayed["first"].height


def test_the_replay_audit_log_is_the_trace(replayed) -> None:
    first, second = replayed["first"], replayed["second"]
    assert second.height == first.height, (
        f"{first.height} trace lines, {second.height} replayed: "
        f"{first.group_by('op').len().sort('op').rows()} vs {second.group_by('op').len().sort('op').rows()}"
    )
    want, got = _per_path(first), _per_path(second)
    assert got.keys() == want.keys()
    differ = {p: (want[p], got[p]) for p in want if want[p] != got[p]}
    assert not differ, list(differ.items())[:5]


def test_every_outcome_is_the_one_the_trace_history_predicts(replayed) -> None:
    samples = pl.read_parquet(replayed["run_dir"] / "samples.parquet")
    events = replayed["schedule"].events.select("seq", "path", "expect_ok")
    got = samples.join(events, on="seq").with_columns((pl.col("outcome") == "ok").alias("ok"))
    assert got.height == replayed["schedule"].events.height
    wrong = got.filter(pl.col("ok") != pl.col("expect_ok"))
    assert wrong.height == 0, wrong.select("op", "outcome", "path").rows()[:10]
