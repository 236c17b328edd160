"""The simulated NameNode calibrated on the real one of ``local_hdfs`` (``simnn calibrate``).

What is asserted does not depend on how fast this machine is: the calibration measures, the fit
reproduces what was measured (its own numbers, not a timing), the files are written, and the
calibrated model runs. How well it predicts other loads is measured by ``bench/bench_simnn.py``
(figures in the README), not asserted here."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hdfs_native import Client
from tests.unit.cli_run import run_cli

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.fit import simulate_measurement
from mimesisbench.sim.model import Calibration
from mimesisbench.study.simnn_calibration import calibration_measurements, measure_and_fit

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base(local_hdfs: LocalHdfs) -> Iterator[str]:
    root = f"/simnn-tests-{uuid.uuid4().hex[:8]}"
    yield f"{local_hdfs.url}{root}"
    Client(local_hdfs.url).delete(root, recursive=True)  # leave the session's namespace as found


def test_calibrate_measures_the_namenode_and_the_fit_reproduces_its_load(
        local_hdfs: LocalHdfs, base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal"
    code, stdout, err = run_cli(["simnn", "calibrate", "-b", base, "--hdfs-workdir", str(local_hdfs.workdir),
                                 "--ops", "fileStatus,create", "-n", "1500", "--loads", "1,8,64", "--repeat", "2", "-o",
                                 str(out)],
                                capsys)
    assert code == 0, err
    cal = Calibration.load(out / "calibration.json")
    assert set(cal.costs) == {OpCode.GETFILEINFO, OpCode.CREATE}
    assert cal.settings.handlers == 10 and cal.settings.fair and cal.settings.cores >= 1 and cal.settings.sync_s > 0
    assert cal.settings.async_edits  # Hadoop 3's default: the cluster's hdfs-site.xml does not turn it off
    # the sync time is the NameNode's own, from its JMX: every create measurement saw its syncs
    # (at least one a create: one client makes two per create, 3,000 in a batch of 1,500)
    sync = cal.source["sync"]
    assert sync["source"] == "namenode" and cal.settings.sync_s == sync["namenode_s"] > 0
    assert sync["fdatasync_s"] > 0
    seen = {(m["clients"], m["syncs"] > 0) for m in sync["measurements"] if m["op"] == "create"}
    assert {c for c, _ in seen} == {1, 8, 64}
    light = [m for m in sync["measurements"] if m["clients"] == 1]
    assert all(m["syncs"] >= 1500 for m in light)
    measured = calibration_measurements(out, cal)
    for op, cost in cal.costs.items():
        assert cost.server_cpu_s > 0, op
        # the client's CPU per operation, its work and its wake-ups together, as measured at the
        # light load (the split is a least-squares fit over the three loads: a create's work may
        # come out at its bound, 0, where its wake-ups account for all of it)
        at_light = measured[(op, 1)]
        wakes = simulate_measurement(at_light, cost, cal.settings).client_wakes
        assert cost.client_cpu_s + wakes * cost.client_wake_s == pytest.approx(at_light.client_cpu_s, rel=0.25), op
    fit = cal.source["fit"]
    for label in ("getfileinfo", "create"):
        # the delay is bisected on the light load's mean response: the fit lands on it (or, where
        # the CPU alone already takes longer, no delay is left to fit)
        f, cost = fit[label], cal.costs[OpCode.GETFILEINFO if label == "getfileinfo" else OpCode.CREATE]
        assert cost.delay_s == 0 or f["light_fitted_mean_ms"] == pytest.approx(f["light_measured_mean_ms"], rel=0.05)
        assert (f["light_clients"], f["middle_clients"], f["heavy_clients"]) == (1, 8, 64)
    micro = json.loads((out / "micro.json").read_text())
    runs = [(op, t) for op in ("fileStatus", "create") for t in (1, 8, 64)]
    assert [(m["op"], m["concurrency"]) for m in micro] == runs * 2  # two rounds
    assert cal.source["repeat"] == 2
    assert all(m["errors"] == 0 for m in micro)
    # each round's throughput and p99 (what `simnn show` checks the rounds' agreement on), in the
    # order the rounds ran: the micro-benchmarks' own figures, and their medians the measurements'
    rounds = {(r["op"], r["clients"]): r for r in cal.source["rounds"]}
    assert set(rounds) == {(op, t) for op in ("getfileinfo", "create") for t in (1, 8, 64)}
    label = {"fileStatus": "getfileinfo", "create": "create"}
    for key, r in rounds.items():
        ran = [m for m in micro if (label[m["op"]], m["concurrency"]) == key]
        assert r["ops_per_s"] == pytest.approx([m["ops_per_s"] for m in ran], rel=1e-3)
        assert r["p99_ms"] == pytest.approx([m["latency_ms"]["p99"] for m in ran], rel=1e-3)
        assert measured[(OpCode[key[0].upper()], key[1])].ops_per_s == pytest.approx(
            sum(r["ops_per_s"]) / 2, rel=1e-3)  # the median of two rounds: their mean
    # the process's CPU is read in clock ticks (psutil), its threads' in nanoseconds: the two
    # readings around a batch of 1,500 may be two ticks off the threads' sum (13 us an operation)
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    for m in micro:  # the NameNode's own threads, by group: the handlers work on every call
        threads = m["namenode_threads_us_per_op"]
        assert any(name.startswith("IPC Server hand") and t["cpu"] > 0 for name, t in threads.items()), threads
        assert all(t["runnable"] >= 0 for t in threads.values())
        # its threads' CPU is the process's (threads that ended during the batch are not counted)
        ticks_us = 2 * tick_s / m["files"] * 1e6
        assert sum(t["cpu"] for t in threads.values()) <= 1.2 * m["server_cpu_us_per_op"] + ticks_us + 5, m["op"]
        # the host's stolen time is part of its busy time (0 on bare metal)
        assert 0 <= m["host_steal_us_per_op"] <= m["host_cpu_us_per_op"] + ticks_us, m
        if m["op"] == "create":  # Hadoop 3's asynchronous edit log has a thread of its own
            assert threads.get("FSEditLogAsync", {"cpu": 0.0})["cpu"] > 0, threads
            assert m["namenode_syncs"] > 0  # the syncs the NameNode counted over the benchmark
    steal = cal.source["host_steal"]  # the host's steal over the batches, and the worst batch's
    assert 0 <= steal["share"] <= steal["max_share"] <= 1 and " x " in steal["worst"]
    # the host's other work (its busy CPU less the client's and the NameNode's), a share of one
    # core per load: recorded for each load measured, never negative, at most the host's cores
    other = cal.source["host_other"]
    assert set(other["by_clients"]) == {"1", "8", "64"}
    assert all(0 <= share <= os.cpu_count() for share in other["by_clients"].values())
    assert min(other["by_clients"].values()) <= other["share"] <= max(other["by_clients"].values())
    assert all(m["host_other_us_per_op"] >= 0 for m in micro)
    # the edit-log thread's CPU, per edit and per sync, solved from the creates' three loads: the
    # model's edit-log thread spends the first on every write RPC (not a timing: its own CPU, and
    # what it spends per create at one client, a sync per edit, is more than at 64, a sync per batch)
    edit = cal.source["edit_thread"]
    assert edit is not None and edit["measurements"] == 6
    assert cal.settings.edit_s == pytest.approx(edit["us_per_edit"] / 1e6) and edit["us_per_sync"] >= 0
    per_create = {m["concurrency"]: m["namenode_threads_us_per_op"]["FSEditLogAsync"]["cpu"]
                  for m in micro if m["op"] == "create"}
    assert per_create[1] > per_create[64]
    assert "calibration.json" in stdout
    code, stdout, err = run_cli(["micro", "create", "-n", "2000", "-t", "16", "-b", f"simnn:?calibration={out}",
                                 "--json"], capsys)
    assert code == 0, err
    assert json.loads(stdout)["ops_per_s"] > 0


def test_calibrate_without_the_sync_watch_reads_no_jmx(local_hdfs: LocalHdfs, base: str) -> None:
    # bench_simnn.py path measures the calibration without its JMX reads: the sync is then the
    # fdatasync probe's, and nothing was read from the NameNode's JMX
    cal, raw = measure_and_fit(f"{base}/nowatch", str(local_hdfs.workdir), ops=("create",), files=300,
                               loads=(1, 2, 4), repeat=1, warmup=False, sync_watch=False)
    sync = cal.source["sync"]
    assert sync["source"] == "fdatasync" and sync["jmx"] is None and sync["measurements"] == []
    assert cal.settings.sync_s == sync["fdatasync_s"] > 0
    assert [r["concurrency"] for r in raw] == [1, 2, 4] and all("namenode_syncs" not in r for r in raw)


def test_calibrate_refuses_a_namenode_it_does_not_manage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["simnn", "calibrate", "-b", "hdfs://127.0.0.1:1/x", "--hdfs-workdir", str(tmp_path),
                            "-o", str(tmp_path / "cal")], capsys)
    assert code == 2 and "needs the NameNode's CPU" in err
