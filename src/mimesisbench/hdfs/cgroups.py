"""Resource limits for the managed cluster's daemons through cgroups: a CPU quota (cores) and an
I/O throttle (bytes/s on the device of the working directory).

``probe`` says what the machine lets this process write: cgroup v2 (``cpu.max``, ``io.max``; the
controllers must be enabled in the unified hierarchy) or v1 (``cpu.cfs_quota_us`` in the ``cpu``
hierarchy, ``blkio.throttle.{read,write}_bps_device`` in ``blkio``); v2 is used where it has the
controller, v1 otherwise. On machines like this project's, v2 is mounted with no controller and v1
has both. A limit the machine cannot apply is an ``EnvironmentProblem`` (exit 7) naming what is
missing, never a silent run without it.

A ``LimitGroup`` is one group per daemon and controller, named ``mimesisbench-<role>-<id>``
directly under the hierarchy's root; it is removed when the cluster goes down. What the daemons
achieved is read back from the group (CPU time used, periods throttled) and the process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mimesisbench.errors import ConfigError, EnvironmentProblem

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: the CFS period a v1 quota or v2 ``cpu.max`` is stated in (µs)
CPU_PERIOD_US = 100_000
#: how long a group whose processes were just stopped may stay busy before ``remove`` gives up
REMOVE_WAIT_S = 15.0


@dataclass(frozen=True)
class ResourceLimits:
    """What to limit each daemon to (None: no limit)."""

    cpu_cores: float | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    def __post_init__(self) -> None:
        if self.cpu_cores is not None and not 0.01 <= self.cpu_cores <= 1024:
            raise ConfigError(f"--cpu-quota must be between 0.01 and 1024 cores, got {self.cpu_cores}")
        for name in ("read_bps", "write_bps"):
            value = getattr(self, name)
            if value is not None and value < 1024:
                raise ConfigError(f"--io-{name.replace('_bps', '')}-bps must be at least 1 KiB/s, got {value}")

    @property
    def any(self) -> bool:
        return self.cpu_cores is not None or self.io

    @property
    def io(self) -> bool:
        return self.read_bps is not None or self.write_bps is not None

    def to_json(self) -> dict[str, Any]:
        return {"cpu_cores": self.cpu_cores, "read_bps": self.read_bps, "write_bps": self.write_bps}


@dataclass(frozen=True)
class CgroupSupport:
    """Where a CPU quota and an I/O throttle can be set on this machine, and what is missing."""

    cpu: tuple[str, Path] | None  # (version, hierarchy root)
    io: tuple[str, Path] | None
    missing: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        parts = [f"CPU quota: {self.cpu[0]} at {self.cpu[1]}" if self.cpu else "CPU quota: not available",
                 f"I/O throttle: {self.io[0]} at {self.io[1]}" if self.io else "I/O throttle: not available"]
        return "; ".join(parts) + (f" ({'; '.join(self.missing)})" if self.missing else "")


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _v2_root(root: Path) -> Path | None:
    for candidate in (root, root / "unified"):
        if (candidate / "cgroup.controllers").is_file():
            return candidate
    return None


def probe(root: Path = CGROUP_ROOT) -> CgroupSupport:
    """What this process may limit (reads only; nothing is created)."""
    missing: list[str] = []
    cpu: tuple[str, Path] | None = None
    io: tuple[str, Path] | None = None
    v2 = _v2_root(root)
    if v2 is not None:
        controllers = set((v2 / "cgroup.controllers").read_text().split())
        writable = _writable_dir(v2) and os.access(v2 / "cgroup.subtree_control", os.W_OK)
        if "cpu" in controllers and writable:
            cpu = ("v2", v2)
        if "io" in controllers and writable:
            io = ("v2", v2)
        if cpu is None or io is None:
            lacking = [c for c in ("cpu", "io") if c not in controllers]
            missing.append(f"cgroup v2 at {v2}: " + (f"no {' or '.join(lacking)} controller" if lacking else "not writable"))
    else:
        missing.append(f"no cgroup v2 hierarchy under {root}")
    found = {"cpu": cpu, "io": io}
    for key, hierarchy, marker in (("cpu", "cpu", "cpu.cfs_quota_us"), ("io", "blkio", "blkio.throttle.read_bps_device")):
        v1 = root / hierarchy
        if found[key] is not None:
            continue
        if (v1 / marker).is_file() and _writable_dir(v1):
            found[key] = ("v1", v1)
        else:
            missing.append(f"no writable cgroup v1 {hierarchy} hierarchy ({v1 / marker})")
    return CgroupSupport(found["cpu"], found["io"], tuple(missing))


def require(limits: ResourceLimits, support: CgroupSupport) -> None:
    """``EnvironmentProblem`` (exit 7) naming what is missing for ``limits``."""
    lacking = []
    if limits.cpu_cores is not None and support.cpu is None:
        lacking.append("a CPU quota")
    if limits.io and support.io is None:
        lacking.append("an I/O throttle")
    if lacking:
        raise EnvironmentProblem(f"this machine cannot apply {' and '.join(lacking)} through cgroups: "
                                 f"{'; '.join(support.missing)}")


def device_of(path: Path) -> str:
    """``MAJ:MIN`` of the block device holding ``path`` (the whole disk, as throttles want it)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    # a partition's throttle goes on its disk: /sys/dev/block/M:m/partition exists for partitions
    sysfs = Path(f"/sys/dev/block/{major}:{minor}")
    if (sysfs / "partition").is_file():
        disk = (sysfs / "..").resolve() / "dev"
        if disk.is_file():
            return disk.read_text().strip()
    return f"{major}:{minor}"


@dataclass(frozen=True)
class LimitGroup:
    """The cgroups of one daemon: one per controller that has a limit."""

    name: str
    limits: ResourceLimits
    cpu_dir: Path | None
    cpu_version: str | None
    io_dir: Path | None
    io_version: str | None
    device: str | None

    @classmethod
    def create(cls, name: str, limits: ResourceLimits, support: CgroupSupport, data_path: Path) -> LimitGroup:
        """Make the groups and set the limits (raises ``EnvironmentProblem`` when it cannot)."""
        require(limits, support)
        cpu_dir = io_dir = None
        cpu_version = io_version = device = None
        try:
            if limits.cpu_cores is not None and support.cpu is not None:
                cpu_version, root = support.cpu
                cpu_dir = _make(root, name, "+cpu" if cpu_version == "v2" else None)
                quota = max(1000, round(limits.cpu_cores * CPU_PERIOD_US))
                if cpu_version == "v2":
                    _write(cpu_dir / "cpu.max", f"{quota} {CPU_PERIOD_US}")
                else:
                    _write(cpu_dir / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                    _write(cpu_dir / "cpu.cfs_quota_us", str(quota))
            if limits.io and support.io is not None:
                io_version, root = support.io
                device = device_of(data_path)
                # v2 with a CPU limit too: the same group, now with both controllers
                io_dir = _make(root, name, "+io" if io_version == "v2" else None)
                if io_version == "v2":
                    parts = [f"{k}={v}" for k, v in (("rbps", limits.read_bps), ("wbps", limits.write_bps)) if v]
                    _write(io_dir / "io.max", f"{device} {' '.join(parts)}")
                else:
                    if limits.read_bps:
                        _write(io_dir / "blkio.throttle.read_bps_device", f"{device} {limits.read_bps}")
                    if limits.write_bps:
                        _write(io_dir / "blkio.throttle.write_bps_device", f"{device} {limits.write_bps}")
        except BaseException:
            for d in (cpu_dir, io_dir):
                if d is not None:
                    with contextlib.suppress(OSError):
                        d.rmdir()
            raise
        return cls(name, limits, cpu_dir, cpu_version, io_dir, io_version, device)

    def add(self, pid: int) -> None:
        """Move process ``pid`` (all its threads) into the groups."""
        for d in dict.fromkeys(d for d in (self.cpu_dir, self.io_dir) if d):
            _write(d / "cgroup.procs", str(pid))

    def entering(self, command: list[str]) -> list[str]:
        """``command`` run by a shell that first moves itself into the groups, then execs it (so
        the process is limited from its first instruction, and keeps the shell's pid)."""
        dirs = [str(d / "cgroup.procs") for d in dict.fromkeys(d for d in (self.cpu_dir, self.io_dir) if d)]
        script = "set -e; for f in " + " ".join(shlex.quote(d) for d in dirs) + '; do echo $$ > "$f"; done; exec "$@"'
        return ["/bin/sh", "-c", script, "mimesisbench-cgroup", *command]

    def members(self) -> list[int]:
        d = self.cpu_dir or self.io_dir
        if d is None or not (d / "cgroup.procs").is_file():
            return []
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]

    def cpu_stat(self) -> dict[str, int]:
        """The CPU controller's counters (``nr_periods``, ``nr_throttled``, throttled time)."""
        if self.cpu_dir is None or not (self.cpu_dir / "cpu.stat").is_file():
            return {}
        out: dict[str, int] = {}
        for line in (self.cpu_dir / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                out[key] = int(value)
        return out

    def remove(self, wait_s: float = REMOVE_WAIT_S) -> None:
        """Remove the groups once their processes have ended. A process just killed stays in
        its group until the last of its threads has exited: an empty-looking group may still be
        busy for a moment, so a busy group is tried again for up to ``wait_s``."""
        deadline = time.monotonic() + wait_s
        for d in dict.fromkeys(d for d in (self.cpu_dir, self.io_dir) if d):
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                        raise EnvironmentProblem(f"cannot remove cgroup {d} ({exc.strerror}); a process still in it? "
                                                 f"({', '.join(map(str, self.members())) or 'none listed'})") from None
                    time.sleep(0.05)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "limits": self.limits.to_json(), "cpu_dir": str(self.cpu_dir) if self.cpu_dir else None,
                "cpu_version": self.cpu_version, "io_dir": str(self.io_dir) if self.io_dir else None,
                "io_version": self.io_version, "device": self.device}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LimitGroup:
        limits = ResourceLimits(**data["limits"])
        return cls(str(data["name"]), limits, Path(data["cpu_dir"]) if data.get("cpu_dir") else None,
                   data.get("cpu_version"), Path(data["io_dir"]) if data.get("io_dir") else None,
                   data.get("io_version"), data.get("device"))


def _make(root: Path, name: str, enable: str | None) -> Path:
    if enable is not None:  # v2: the controller must be enabled for the root's children
        with contextlib.suppress(OSError):
            _write(root / "cgroup.subtree_control", enable)
    group = root / name
    try:
        group.mkdir(exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot make cgroup {group} ({exc.strerror})") from None
    return group


def _write(path: Path, text: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {text!r} to {path} ({exc.strerror})") from None
