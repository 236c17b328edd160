"""One task of a data job as a ``jobs.Job``: started at the run's barrier like a replay worker,
it writes (and reads back) its share of the job's layout in passes and records every call.

Each call is timed on the monotonic clock around the one system call (POSIX ``pwrite``/``pread``,
``fsync``) or client call (HDFS: ``write`` of the stream, ``read_range``, ``hsync``) and recorded
in preallocated arrays; the task writes them, times relative to the barrier, to its part file
``parts/data-<index>.npz`` also when it is stopped early (``datajobs.trace`` merges them).

HDFS has no shared writes (a file has one writer, appended at its end): only ``n-n`` runs there,
each task streaming its own file from offset 0; a pass of writes makes the file anew.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mimesisbench.datajobs.layout import file_name, task_offsets
from mimesisbench.datajobs.spec import DataJob
from mimesisbench.jobs import Progress, ReadyInfo, StopSignal, WorkerResult, wall_to_monotonic_ns, write_part_file

#: op codes of a call in a part file (``datajobs.trace.CALL_OPS`` names them)
WRITE, READ, FSYNC = 0, 1, 2
#: calls recorded per growth of the arrays
CHUNK = 65_536


@dataclass(frozen=True)
class DataTaskSpec:
    """Everything a data task needs (picklable; sent to a process or an actor). ``target``: the
    directory the job's files go in (a local path, or ``hdfs://authority/path``); ``until_ns``:
    repeat whole passes until this long after the barrier (at least one; ``job.passes`` fixes the
    number instead)."""

    index: int
    schedule_dir: str
    parts_dir: str
    job: DataJob
    task: int
    target: str
    until_ns: int = 0
    hdfs_config: dict[str, str] = field(default_factory=dict)

    def relocated(self, *, schedule_dir: str | None = None, parts_dir: str | None = None) -> DataTaskSpec:
        return replace(
            self,
            schedule_dir=self.schedule_dir if schedule_dir is None else schedule_dir,
            parts_dir=self.parts_dir if parts_dir is None else parts_dir,
        )


class _Files(Protocol):
    """Where a task's calls go: one file at a time, opened for a pass of one op."""

    def begin(self, path: str, op: int) -> None: ...

    def call(self, op: int, offset: int, data: memoryview) -> int: ...

    def sync(self) -> None: ...

    def end(self) -> None: ...


class _PosixFiles:
    """A local file through ``os.pwrite``/``os.pread`` (shared by the tasks of an N-1 job)."""

    def __init__(self) -> None:
        self.fd = -1

    def begin(self, path: str, op: int) -> None:
        flags = os.O_RDWR | os.O_CREAT if op == WRITE else os.O_RDONLY
        self.fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)

    def call(self, op: int, offset: int, data: memoryview) -> int:
        if op == WRITE:
            return os.pwrite(self.fd, data, offset)
        return len(os.pread(self.fd, len(data), offset))

    def sync(self) -> None:
        os.fsync(self.fd)

    def end(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _HdfsFiles:
    """An HDFS file through ``hdfs-native``: a pass of writes streams it anew, reads are ranges."""

    def __init__(self, fs_url: str, config: dict[str, str]) -> None:
        from hdfs_native import Client

        self.client = Client(fs_url, config=dict(config))
        self.stream: Any = None

    def begin(self, path: str, op: int) -> None:
        from hdfs_native import WriteOptions

        if op == WRITE:
            self.stream = self.client.create(path, WriteOptions(overwrite=True))
        else:
            self.stream = self.client.read(path)

    def call(self, op: int, offset: int, data: memoryview) -> int:
        if op == WRITE:
            self.stream.write(data)
            return len(data)
        return len(self.stream.read_range(offset, len(data)))

    def sync(self) -> None:
        self.stream.hsync()

    def end(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None


@dataclass
class _Calls:
    """The calls recorded so far (arrays grown by ``CHUNK``)."""

    n: int = 0
    start_ns: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int64))
    end_ns: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int64))
    op: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.uint8))
    file: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int32))
    offset: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int64))
    size: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int64))
    done: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int64))
    errno: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int32))
    pass_no: np.ndarray = field(default_factory=lambda: np.zeros(CHUNK, np.int32))

    def add(self, start: int, end: int, op: int, file: int, offset: int, size: int, done: int, code: int,
            pass_no: int) -> None:
        """Record one call (the arrays grow by ``CHUNK`` when full)."""
        i = self.n
        if i == self.start_ns.size:
            for name in ("start_ns", "end_ns", "op", "file", "offset", "size", "done", "errno", "pass_no"):
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.zeros(CHUNK, old.dtype)]))
        self.start_ns[i], self.end_ns[i], self.op[i], self.file[i] = start, end, op, file
        self.offset[i], self.size[i], self.done[i], self.errno[i], self.pass_no[i] = offset, size, done, code, pass_no
        self.n = i + 1

    def arrays(self, origin: int) -> dict[str, np.ndarray]:
        n = self.n
        return {
            "start_ns": self.start_ns[:n] - origin, "end_ns": self.end_ns[:n] - origin, "op": self.op[:n],
            "file_no": self.file[:n], "offset": self.offset[:n], "size": self.size[:n], "done": self.done[:n],
            "errno": self.errno[:n], "pass_no": self.pass_no[:n],
        }


class DataTask:
    """One task of a data job (runtime object built from a ``DataTaskSpec``; a ``jobs.Job``)."""

    def __init__(self, spec: DataTaskSpec) -> None:
        self.spec = spec
        self.calls = _Calls()
        self.passes = 0
        self.origin_: int | None = None
        self.offsets = task_offsets(spec.job, spec.task)
        name = file_name(spec.job, spec.task)
        hdfs = spec.target.startswith("hdfs://")
        self.path = f"{_hdfs_path(spec.target) if hdfs else spec.target}".rstrip("/") + "/" + name
        self.files: _Files | None = None

    def prepare(self) -> ReadyInfo:
        began = time.perf_counter()
        if self.spec.target.startswith("hdfs://"):
            authority, _, _path = self.spec.target[len("hdfs://"):].partition("/")
            self.files = _HdfsFiles(f"hdfs://{authority}", self.spec.hdfs_config)
            self.files.client.mkdirs(_hdfs_path(self.spec.target), create_parent=True)
        else:
            os.makedirs(self.spec.target, exist_ok=True)
            self.files = _PosixFiles()
        return ReadyInfo(
            index=self.spec.index, events=int(self.offsets.size) * len(self.spec.job.ops), lanes=1,
            prepare_s=time.perf_counter() - began, pid=os.getpid(), host=socket.gethostname(), lane_impl="data",
        )

    def run(self, start_wall_ns: int, stop: StopSignal, on_progress: Callable[[Progress], None] | None = None) -> WorkerResult:
        if self.files is None:
            raise RuntimeError("prepare() first")
        origin = wall_to_monotonic_ns(start_wall_ns)
        self.origin_ = origin
        while time.monotonic_ns() < origin and not stop.is_set():
            time.sleep(min(0.01, max(0.0, (origin - time.monotonic_ns()) / 1e9)))
        status, message = "complete", ""
        try:
            self._passes(origin, stop, on_progress)
        except OSError as exc:
            status, message = "failed", f"data job {self.spec.job.name} task {self.spec.task}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a client's own errors (hdfs-native) end the task, reported
            status, message = "failed", f"data job {self.spec.job.name} task {self.spec.task}: {type(exc).__name__}: {exc}"
        finally:
            with contextlib.suppress(Exception):
                self.files.end()
        if stop.reason is not None and status == "complete":
            status, message = stop.reason, stop.message
        arrays = self.calls.arrays(origin)
        part: Path | None = None
        unwritten = None
        try:
            part = write_part_file(Path(self.spec.parts_dir), "data", self.spec.index, arrays)
        except OSError as exc:
            unwritten = arrays
            if status == "complete":
                status, message = "failed", f"cannot write its calls to {self.spec.parts_dir} ({exc.strerror or exc})"
        return WorkerResult(
            index=self.spec.index, status=status, message=message, total=self.calls.n, issued=self.calls.n,
            part_path=None if part is None else str(part), samples=unwritten, origin_monotonic_ns=origin,
            extra={"passes": float(self.passes)},
        )

    def _passes(self, origin: int, stop: StopSignal, on_progress: Callable[[Progress], None] | None) -> None:
        job, files = self.spec.job, self.files
        assert files is not None
        buffer = memoryview(bytearray(os.urandom(job.transfer)))  # incompressible, as IOR's random data
        ops = [WRITE if op == "write" else READ for op in job.ops]
        next_report = time.monotonic_ns() + 500_000_000
        while not stop.is_set():
            for op in ops:
                for _ in self._one_file_pass(files, op, buffer, stop):
                    if on_progress is not None and time.monotonic_ns() >= next_report:
                        on_progress(self.progress(origin))
                        next_report = time.monotonic_ns() + 500_000_000
                if stop.is_set():
                    return
            self.passes += 1
            if job.passes is not None:
                if self.passes >= job.passes:
                    return
            elif time.monotonic_ns() - origin >= self.spec.until_ns:
                return

    def _one_file_pass(self, files: _Files, op: int, buffer: memoryview, stop: StopSignal) -> Iterator[None]:
        """Every call of one pass of ``op`` (a generator: the caller reports progress between calls)."""
        calls, job = self.calls, self.spec.job
        file_no = 0 if job.shared else self.spec.task
        files.begin(self.path, op)
        clock = time.monotonic_ns
        try:
            for offset in self.offsets.tolist():
                if stop.is_set():
                    return
                code, done = 0, 0
                t0 = clock()
                try:
                    done = files.call(op, offset, buffer)
                except OSError as exc:
                    code = exc.errno or errno.EIO
                calls.add(t0, clock(), op, file_no, offset, job.transfer, done, code, self.passes)
                if code:
                    raise OSError(code, os.strerror(code), self.path)
                yield
            if op == WRITE and job.fsync:
                t0 = clock()
                files.sync()
                calls.add(t0, clock(), FSYNC, file_no, 0, 0, 0, 0, self.passes)
        finally:
            files.end()

    def progress(self, origin: int) -> Progress:
        return Progress(index=self.spec.index, issued=self.calls.n, total=self.calls.n, lag_ns=0)

    def current_progress(self) -> Progress | None:
        return None if self.origin_ is None else self.progress(self.origin_)

    def last_due_ns(self) -> int:
        return self.spec.until_ns


def _hdfs_path(target: str) -> str:
    """The path part of ``hdfs://authority/path``."""
    return "/" + target[len("hdfs://"):].partition("/")[2]


def remove_job_files(target: str, jobs: Sequence[DataJob], client_config: Mapping[str, str]) -> list[str]:
    """Remove the files of the ``jobs`` not kept (``keep=true``) from ``target``, and ``target``
    itself once empty; returns what could not be removed (a run says so, and goes on)."""
    names = [file_name(job, t) for job in jobs if not job.keep for t in range(1 if job.shared else job.tasks)]
    left: list[str] = []
    if target.startswith("hdfs://"):
        from hdfs_native import Client

        authority = target[len("hdfs://"):].partition("/")[0]
        client = Client(f"hdfs://{authority}", config=dict(client_config))
        base = _hdfs_path(target)
        for name in names:
            try:
                client.delete(f"{base}/{name}")
            except FileNotFoundError:
                pass
            except Exception as exc:  # noqa: BLE001 - hdfs-native's errors; reported, not raised
                left.append(f"{base}/{name} ({exc})")
        with contextlib.suppress(Exception):
            if not list(client.list_status(base)):
                client.delete(base)
        return left
    for name in names:
        try:
            os.unlink(os.path.join(target, name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            left.append(f"{os.path.join(target, name)} ({exc.strerror})")
    with contextlib.suppress(OSError):
        os.rmdir(target)  # only when empty (kept files stay, with their directory)
    return left
