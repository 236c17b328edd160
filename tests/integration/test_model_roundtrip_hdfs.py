"""Per-command round trip on a real NameNode: fit its audit log, replay the model, compare the logs.

A small mixed workload (4,800 steps, ~40 s on a quiet machine) is driven through the native client ``hdfs-native`` under
``BASE/src`` on the managed HDFS (the ``local_hdfs`` fixture), issuing every command the client
can: ``create``, ``create`` with overwrite, ``open``, ``getfileinfo``, ``listStatus``,
``contentSummary``, ``setPermission``, ``setOwner``, ``setTimes``, ``setReplication``,
``append``, ``rename`` of files and directories, ``mkdirs`` of existing directories, ``delete`` of
files and recursive ``delete`` of directory trees, with a poller loop and job bursts (files made
in a ``_temporary`` directory, renamed out, the directory deleted). Its audit lines are fitted
(``model``), the profile generated (``generate``) and the schedule ``run`` against the same
NameNode under ``BASE/replay``. The NameNode's log of the replay (phase 2 only: from the run's
start barrier) must have the op mix of the first log: every command's share within 1 percentage
point, as the issue asks (``SHARE_TOLERANCE``).

Counts and shares only: nothing here depends on how fast the loaded machine runs the workload.
"""


from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import polars as pl
import pytest
from tests.integration.child_cli import audit_under, cli

from mimesisbench.trace.hdfs_audit import read_audit_logs

pytestmark = pytest.mark.integration

BASE = "/mbtest-roundtrip"
SRC = f"{BASE}/src"
REPLAY = f"{BASE}/replay"
#: the workload is counted in steps, not timed: a loaded machine runs the same operations, slower
#: (a timed workload would give it a smaller trace, and the fitted model a noisier op mix)
STEPS = 4800
POLL_EVERY = 120  # steps: a poll instead of a step (40 polls)
BURST_EVERY, BURST_AT = 600, 150  # steps: a job burst instead of a step (8 bursts)
PACE_S = 0.005  # between steps (about 40 s in all on a quiet machine)
#: the issue's bar. The replay is a sample of the model: over 12 generation seeds of one fitted
#: profile (~6,500 operations) a command's share varied by 0.07-0.28 points (sd), the model's own
#: biases stayed under 0.35 and the worst command of each draw was 0.2-0.7 points off; with half
#: the steps the worst reached 0.9 in 8 draws, too near the bar for a test that must not flip
SHARE_TOLERANCE = 0.01


def _shares(events: pl.DataFrame) -> dict[str, float]:
    counts = events.group_by("op").len()
    total = max(int(counts["len"].sum()), 1)
    return {str(op): n / total for op, n in counts.iter_rows()}


class Mixed:
    """The workload's live namespace and its steps (a seeded RNG: the same commands every time)."""

    def __init__(self, client: Any, rng: np.random.Generator) -> None:
        self.c = client
        self.rng = rng
        self.dirs = [f"{SRC}/data/d{i}" for i in range(3)]
        self.files: list[str] = []
        self.trees: list[str] = []
        self.serial = 0

    def name(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}-{self.serial:05d}"

    def pick(self, items: list[str]) -> str:
        return items[int(self.rng.integers(len(items)))]

    def write(self, path: str, overwrite: bool = False) -> None:
        from hdfs_native import WriteOptions

        with self.c.create(path, WriteOptions(overwrite=overwrite)):
            pass  # empty files: no block, no DataNode round trip (the NameNode's commands are the point)

    def prepare(self) -> None:
        for d in (*self.dirs, f"{SRC}/inbox", f"{SRC}/out", f"{SRC}/trees"):
            self.c.mkdirs(d, create_parent=True)
        for d in self.dirs:
            for i in range(8):
                self.files.append(f"{d}/base-{i:03d}")
                self.write(self.files[-1])
        self.tree()

    def tree(self) -> None:
        root = f"{SRC}/trees/{self.name('tree')}"
        for sub in range(2):
            self.c.mkdirs(f"{root}/s{sub}", create_parent=True)
            self.write(f"{root}/s{sub}/f")
        self.trees.append(root)

    def poll(self) -> None:
        self.c.get_file_info(f"{SRC}/data")
        list(self.c.list_status(f"{SRC}/inbox"))

    def burst(self) -> None:
        job = f"{SRC}/out/{self.name('job')}"
        attempt = f"{job}/_temporary/0/attempt_0"
        self.c.mkdirs(attempt, create_parent=True)
        parts = [f"part-{k:05d}" for k in range(int(self.rng.integers(5, 12)))]
        for part in parts:
            self.write(f"{attempt}/{part}")
        for part in parts:
            self.c.rename(f"{attempt}/{part}", f"{job}/{part}")
        self.c.delete(f"{job}/_temporary", recursive=True)

    def step(self) -> None:
        c, rng, files = self.c, self.rng, self.files
        roll = float(rng.random())
        if roll < 0.20:
            path = self.pick(files)
            c.get_file_info(path)
            with c.read(path) as reader:
                reader.read()
        elif roll < 0.28:
            c.get_file_info(self.pick(files))
        elif roll < 0.34:
            list(c.list_status(self.pick(self.dirs)))
        elif roll < 0.37:
            c.get_content_summary(self.pick(self.dirs))
        elif roll < 0.47:
            files.append(f"{self.pick(self.dirs)}/{self.name('new')}")
            self.write(files[-1])
        elif roll < 0.50:
            self.write(self.pick(files), overwrite=True)
        elif roll < 0.54:
            c.set_permission(self.pick(files), 0o644)
        elif roll < 0.57:
            c.set_owner(self.pick(files), group="supergroup")
        elif roll < 0.61:
            now = int(time.time() * 1000)
            c.set_times(self.pick(files), now, now)
        elif roll < 0.64:
            c.set_replication(self.pick(files), 1)
        elif roll < 0.68:
            with c.append(self.pick(files)):
                pass
        elif roll < 0.74:
            index = int(rng.integers(len(files)))
            target = f"{self.pick(self.dirs)}/{self.name('moved')}"
            c.rename(files[index], target)
            files[index] = target
        elif roll < 0.78:
            c.mkdirs(self.pick(self.dirs))
        elif roll < 0.86 and len(files) > 10:
            c.delete(files.pop(int(rng.integers(len(files)))))
        elif roll < 0.93:
            if self.trees and rng.random() < 0.5:
                index = int(rng.integers(len(self.trees)))
                target = f"{SRC}/trees/{self.name('renamed')}"
                c.rename(self.trees[index], target)
                self.trees[index] = target
            else:
                self.tree()
        elif self.trees:
            c.delete(self.trees.pop(0), recursive=True)


@pytest.fixture(scope="module")
def driven(local_hdfs, tmp_path_factory) -> dict[str, Any]:
    """The mixed workload, run once; its audit lines under ``SRC`` and the namespace image after it."""
    from hdfs_native import Client

    work = tmp_path_factory.mktemp("roundtrip")
    mixed = Mixed(Client(local_hdfs.url), np.random.default_rng(14))
    mixed.prepare()
    time.sleep(0.1)
    logged, _ = read_audit_logs([local_hdfs.audit_log])
    window_start = int(logged.select(pl.col("time_ms").max()).item()) + 1
    time.sleep(0.1)
    for i in range(STEPS):
        if i % POLL_EVERY == 0:
            mixed.poll()
        elif i % BURST_EVERY == BURST_AT:
            mixed.burst()
        else:
            mixed.step()
        time.sleep(PACE_S)
    time.sleep(0.5)
    first = audit_under(local_hdfs.audit_log, window_start, SRC)
    local_hdfs.save_namespace()
    snapshot = local_hdfs.dump_image("Delimited", work / "fsimage.tsv")
    return {"first": first, "window_start": window_start, "snapshot": snapshot, "work": work}


@pytest.fixture(scope="module")
def roundtrip(local_hdfs, driven) -> dict[str, Any]:
    work, first, window_start, snapshot = driven["work"], driven["first"], driven["window_start"], driven["snapshot"]
    window_end = int(first.select(pl.col("time_ms").max()).item()) + 1
    profile = work / "profile.json"
    done = cli("model", "--audit", str(local_hdfs.audit_log), "--snapshot", str(snapshot), "--prefix", SRC,
                "--window-start", str(window_start), "--window-end", str(window_end), "--types", "auto",
                "--seed", "1", "-o", str(profile))  # fmt: skip
    assert done.returncode == 0, done.stderr
    schedule = work / "schedule"
    done = cli("generate", str(profile), "--seed", "1", "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    # a 40 s window: phase 1 and the replay take well under the timeout even on a loaded machine.
    # ``mkdirs=native``: one mkdirs RPC per MKDIRS, as the client that made the trace sent (the
    # backend's default adds a getfileinfo to give mkdirs of an existing directory POSIX's EEXIST)
    done = cli("run", str(schedule), "--backend", f"{local_hdfs.url}{REPLAY}?mkdirs=native", "--max-drift", "off",
                "--jmx", "off", "--output", str(work / "runs"), "-q", timeout_s=240.0)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next((work / "runs").iterdir())
    barrier_ms = json.loads((run_dir / "manifest.json").read_text())["start_barrier_wall_ns"] // 1_000_000
    time.sleep(0.5)
    second = audit_under(local_hdfs.audit_log, barrier_ms - 1, REPLAY)
    return {"first": first, "second": second, "profile": profile, "run_dir": run_dir}


def test_the_workload_touched_every_command(driven) -> None:
    print("op mix of the workload:", {op: round(v, 4) for op, v in sorted(_shares(driven["first"]).items())})
    commands = set(driven["first"]["op"].to_list())
    wanted = {"create", "open", "getfileinfo", "listStatus", "contentSummary", "setPermission", "setOwner",
              "setTimes", "setReplication", "append", "rename", "mkdirs", "delete"}  # fmt: skip
    assert wanted <= commands, sorted(wanted - commands)


def test_the_replay_has_the_op_mix_of_the_trace(roundtrip) -> None:
    first, second = _shares(roundtrip["first"]), _shares(roundtrip["second"])
    assert roundtrip["second"].height > 0, "the replay left no audit line under its base directory"
    report = {op: (round(first.get(op, 0.0), 4), round(second.get(op, 0.0), 4)) for op in sorted({*first, *second})}
    print("op mix (trace, replay):", report)
    off = {op: shares for op, shares in report.items() if abs(shares[0] - shares[1]) > SHARE_TOLERANCE}
    assert not off, f"commands more than {SHARE_TOLERANCE:.0%} off (trace share, replay share): {off}"
