"""cgroup limits for the managed cluster (``mimesisbench.hdfs.cgroups``): the probe and the
groups on stand-in hierarchies (a directory tree shaped like ``/sys/fs/cgroup``), then a real
CPU quota on this machine's own cgroups."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from mimesisbench.errors import ConfigError, EnvironmentProblem
from mimesisbench.hdfs import cgroups
from mimesisbench.hdfs.cgroups import LimitGroup, ResourceLimits


def _v1(root: Path) -> Path:
    (root / "cpu").mkdir(parents=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (root / "blkio").mkdir()
    (root / "blkio" / "blkio.throttle.read_bps_device").write_text("")
    (root / "unified").mkdir()
    (root / "unified" / "cgroup.controllers").write_text("\n")  # v2 mounted, no controller (as here)
    return root


def _v2(root: Path, controllers: str) -> Path:
    root.mkdir(parents=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_the_probe_prefers_v2_and_falls_back_to_v1(tmp_path: Path) -> None:
    v2 = cgroups.probe(_v2(tmp_path / "a", "cpuset cpu io memory"))
    assert v2.cpu == ("v2", tmp_path / "a") and v2.io == ("v2", tmp_path / "a") and not v2.missing
    mixed = cgroups.probe(_v1(tmp_path / "b"))
    assert mixed.cpu == ("v1", tmp_path / "b" / "cpu") and mixed.io == ("v1", tmp_path / "b" / "blkio")
    assert "no cpu or io controller" in mixed.describe()
    none = cgroups.probe(tmp_path / "empty")
    assert none.cpu is None and none.io is None
    with pytest.raises(EnvironmentProblem, match="a CPU quota and an I/O throttle") as info:
        cgroups.require(ResourceLimits(cpu_cores=1.0, read_bps=1 << 20), none)
    assert "cpu.cfs_quota_us" in str(info.value)  # it names what is missing
    cgroups.require(ResourceLimits(), none)  # no limit asked: nothing needed


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="cpu-quota"):
        ResourceLimits(cpu_cores=0.0)
    with pytest.raises(ConfigError, match="io-read-bps"):
        ResourceLimits(read_bps=10)
    assert not ResourceLimits().any and ResourceLimits(write_bps=4096).io


def test_v1_groups_get_their_quota_and_throttle(tmp_path: Path) -> None:
    support = cgroups.probe(_v1(tmp_path / "cg"))
    limits = ResourceLimits(cpu_cores=0.5, read_bps=50 << 20, write_bps=10 << 20)
    group = LimitGroup.create("mimesisbench-namenode-x", limits, support, tmp_path)
    assert (group.cpu_dir / "cpu.cfs_quota_us").read_text() == "50000"  # type: ignore[operator]
    assert (group.cpu_dir / "cpu.cfs_period_us").read_text() == "100000"  # type: ignore[operator]
    device = cgroups.device_of(tmp_path)
    assert (group.io_dir / "blkio.throttle.read_bps_device").read_text() == f"{device} {50 << 20}"  # type: ignore[operator]
    assert (group.io_dir / "blkio.throttle.write_bps_device").read_text() == f"{device} {10 << 20}"  # type: ignore[operator]
    assert LimitGroup.from_json(group.to_json()) == group
    command = group.entering(["java", "-cp", "a b", "Main"])
    assert command[:2] == ["/bin/sh", "-c"] and command[-4:] == ["java", "-cp", "a b", "Main"]
    assert str(group.cpu_dir / "cgroup.procs") in command[2] and str(group.io_dir / "cgroup.procs") in command[2]  # type: ignore[operator]


def test_a_v2_group_carries_both_controllers(tmp_path: Path) -> None:
    support = cgroups.probe(_v2(tmp_path / "cg", "cpu io"))
    group = LimitGroup.create("g", ResourceLimits(cpu_cores=1.5, write_bps=1 << 20), support, tmp_path)
    assert group.cpu_dir == group.io_dir == tmp_path / "cg" / "g"
    assert (group.cpu_dir / "cpu.max").read_text() == "150000 100000"  # type: ignore[operator]
    assert (group.io_dir / "io.max").read_text() == f"{cgroups.device_of(tmp_path)} wbps={1 << 20}"  # type: ignore[operator]
    assert (tmp_path / "cg" / "cgroup.subtree_control").read_text() == "+io"  # the last controller enabled


def test_a_real_cpu_quota_holds_a_busy_process_down() -> None:
    """On this machine's own cgroups (v1 here: the v2 hierarchy carries no cpu controller)."""
    support = cgroups.probe()
    if support.cpu is None:
        pytest.skip(f"this machine cannot set a CPU quota: {'; '.join(support.missing)}")
    group = LimitGroup.create(f"mimesisbench-test-{time.time_ns()}", ResourceLimits(cpu_cores=0.2), support, Path("."))
    busy = subprocess.Popen(group.entering([sys.executable, "-c", "while True: pass"]))
    try:
        deadline = time.monotonic() + 10
        while busy.pid not in group.members() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert busy.pid in group.members()
        proc = psutil.Process(busy.pid)
        c0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
        time.sleep(1.5)
        cores = (sum(proc.cpu_times()[:2]) - c0) / (time.monotonic() - t0)
        assert cores <= 0.3  # without the quota it would take a whole core; a loaded machine gives it less still
        assert group.cpu_stat().get("nr_periods", 0) > 0  # the group accounted its runs
    finally:
        busy.kill()
        busy.wait()
        deadline = time.monotonic() + 5
        while group.members() and time.monotonic() < deadline:
            time.sleep(0.01)
        group.remove()
    assert group.cpu_dir is not None and not group.cpu_dir.exists()
