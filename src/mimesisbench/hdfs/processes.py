"""Starting daemons and stopping exactly those: a pid is trusted only with its create time."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil

from mimesisbench.errors import BackendError

CREATE_TIME_TOLERANCE_S = 0.05


def started_since_boot_s(pid: int) -> float | None:
    """Seconds from the host's boot to the start of process ``pid`` (Linux: ``starttime`` of
    ``/proc/PID/stat``, in clock ticks); None elsewhere or when it is gone.

    Unlike psutil's ``create_time`` (this plus ``/proc/stat``'s ``btime``: whole seconds the kernel
    derives from the wall clock at each read), it never changes while the process lives. A wall
    clock slewed across a second boundary, or stepped (a VM resumed from a snapshot), moves
    ``btime``: a live daemon then looked like another process that had reused the pid, so
    ``simnn calibrate`` lost the NameNode's CPU reading and the stop that followed left the
    NameNode running (seen once on a loaded host)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22; fields after the name start at 3
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class ProcessRecord:
    """One process this tool started: role, pid and the pid's create time (to spot pid reuse):
    on the wall clock, and where the host tells it, since boot (``boot_start_s``, which a clock
    change cannot move; records written before it had only the first)."""

    role: str
    pid: int
    create_time: float
    log: str
    boot_start_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        return cls(
            role=str(data["role"]),
            pid=int(data["pid"]),
            create_time=float(data["create_time"]),
            log=str(data.get("log", "")),
            boot_start_s=None if data.get("boot_start_s") is None else float(data["boot_start_s"]),
        )

    def is_this(self, proc: psutil.Process) -> bool:
        """Whether ``proc`` (with this record's pid) is the process recorded, not a later one
        that reused the pid: by the start since boot where both are known, else the wall clock's."""
        if self.boot_start_s is not None:
            since_boot = started_since_boot_s(proc.pid)
            if since_boot is not None:
                return abs(since_boot - self.boot_start_s) <= CREATE_TIME_TOLERANCE_S
        return abs(proc.create_time() - self.create_time) <= CREATE_TIME_TOLERANCE_S

    def process(self) -> psutil.Process | None:
        """The live process, or ``None`` if it is gone or the pid now belongs to someone else."""
        try:
            proc = psutil.Process(self.pid)
            if not self.is_this(proc):
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None

    def is_running(self) -> bool:
        return self.process() is not None


@dataclass(frozen=True)
class Started:
    """A daemon just started: its record (for the state file) and, in this process, its handle."""

    record: ProcessRecord
    popen: subprocess.Popen[bytes]


def start_daemon(role: str, command: Sequence[str], out_file: Path, cwd: Path) -> Started:
    """Start a detached process (own session, so it outlives the CLI) writing to ``out_file``.

    Keep the returned ``popen`` while this process lives and ``poll()`` it after a stop, so
    the daemon does not linger as a zombie of a long-lived parent (a test session).
    """
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with open(out_file, "ab") as out:
        popen = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
    create_time = psutil.Process(popen.pid).create_time()
    record = ProcessRecord(role=role, pid=popen.pid, create_time=create_time, log=str(out_file),
                           boot_start_s=started_since_boot_s(popen.pid))
    return Started(record=record, popen=popen)


def stop(records: Sequence[ProcessRecord], grace_s: float) -> list[ProcessRecord]:
    """SIGTERM the recorded processes that are still ours, SIGKILL those left after ``grace_s``.

    Returns the records that were actually signalled. Processes whose pid was reused are ignored.
    A process counts as gone once it is a zombie (its parent may be another process).
    """
    live: list[tuple[ProcessRecord, psutil.Process]] = []
    for record in records:
        proc = record.process()
        if proc is not None:
            live.append((record, proc))
        else:
            _reap_if_our_zombie(record)
    _signal([proc for _, proc in live], kill=False)
    remaining = _wait_gone([record for record, _ in live], grace_s)
    if remaining:
        _signal([proc for record, proc in live if record in remaining], kill=True)
        _wait_gone(remaining, 5.0)
    for record, _ in live:
        _reap_if_our_zombie(record)
    return [record for record, _ in live]


def _signal(procs: Sequence[psutil.Process], *, kill: bool) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if kill:
                proc.kill()
            else:
                proc.terminate()


def _wait_gone(records: Sequence[ProcessRecord], timeout_s: float) -> list[ProcessRecord]:
    """Wait until none of ``records`` runs (zombies count as gone); returns those still running."""
    deadline = time.monotonic() + timeout_s
    remaining = list(records)
    while remaining:
        for record in remaining:
            _reap_if_our_zombie(record)
        remaining = [record for record in remaining if record.is_running()]
        if not remaining or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return remaining


def _reap_if_our_zombie(record: ProcessRecord) -> None:
    """A daemon that died while we (its parent) still run stays a zombie until we wait for it."""
    try:
        proc = psutil.Process(record.pid)
        if (
            proc.status() == psutil.STATUS_ZOMBIE
            and proc.ppid() == os.getpid()
            and record.is_this(proc)
        ):
            os.waitpid(record.pid, os.WNOHANG)
    except (psutil.Error, ChildProcessError):
        pass


_Record = TypeVar("_Record")


def read_state_file(path: Path, parse: Callable[[dict[str, Any]], _Record], what: str) -> _Record | None:
    """The record a daemon's state file holds (``parse`` of its JSON), None when there is none;
    ``BackendError`` naming ``what`` when it cannot be read (the cluster's, the proxy's)."""
    if not path.is_file():
        return None
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise BackendError(f"{what} {path} is unreadable ({exc}); remove it") from None

