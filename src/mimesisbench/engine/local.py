"""The local engine: one ``multiprocessing`` process and one pipe per worker.

Processes are started with the ``forkserver`` context (``spawn`` where it is unavailable), so a
worker never inherits the coordinator's threads or locks, and a dying worker cannot take the
others' results with it: each worker writes its own part file.

Messages, worker -> coordinator: ``("ready", ReadyInfo)``, ``("prepare_failed", index, text)``,
``("progress", Progress)``, ``("done", WorkerResult)``. Coordinator -> worker: ``("start",
wall_ns)``, ``("stop",)``. Workers ignore SIGINT: Ctrl-C reaches the coordinator, which stops
them through their pipes so they can write what they measured.

Signals and a vanished coordinator: SIGTERM to a worker that is replaying stops it like a stop
message (it writes what it measured and reports); before the replay it simply exits. A worker
notices that the coordinator is gone (killed with SIGKILL, say) through the end of its pipe
and, while it is still preparing, through ``PR_SET_PDEATHSIG`` (its parent, the forkserver,
ends with the coordinator): it stops, keeps its part file, and exits quietly (a message to a
closed pipe is dropped, never a traceback), so no worker outlives its run.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TYPE_CHECKING, Any, Generic, cast

from mimesisbench.errors import BackendError, MimesisError
from mimesisbench.jobs import (
    Crashed,
    EngineEvent,
    JobFactory,
    Progress,
    ReadyInfo,
    SpecT,
    StopSignal,
    WorkerResult,
    tighten_timer_slack,
)

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext

#: ``prctl`` option: the signal this process gets when its parent ends
_PR_SET_PDEATHSIG = 1


def _die_with_parent(signum: int) -> bool:
    """Ask Linux to send ``signum`` when the parent process ends (False where unsupported)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signum), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


@dataclass
class _WorkerState:
    """What the worker process's threads and its SIGTERM handler share."""

    replaying: bool = False
    start_wall_ns: int | None = None
    coordinator_gone: bool = False


def _process_main(conn: Connection, factory: JobFactory[SpecT], spec: SpecT) -> None:
    """The body of a worker process: build the job from its spec, prepare, run at the start."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    state = _WorkerState()
    stop = StopSignal()
    begin = threading.Event()  # the start (or a stop before it) arrived, or the coordinator is gone

    def on_term(signum: int, frame: FrameType | None) -> None:
        if state.replaying:
            stop.set("stopped", "terminated (SIGTERM)")  # ends the lanes; the samples are written
        else:
            raise SystemExit(0)  # nothing measured yet: just go (multiprocessing exits quietly)

    signal.signal(signal.SIGTERM, on_term)
    _die_with_parent(signal.SIGTERM)
    tighten_timer_slack()
    send_lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> bool:
        with send_lock:
            if state.coordinator_gone:
                return False
            try:
                conn.send(message)
                return True
            except (OSError, ValueError):  # BrokenPipeError: nobody listens any more
                state.coordinator_gone = True
                stop.set("stopped", "the coordinator went away")
                return False

    def listen() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                state.coordinator_gone = True
                stop.set("stopped", "the coordinator went away")
                begin.set()
                return
            if msg[0] == "start" and not begin.is_set():
                state.start_wall_ns = int(msg[1])
                begin.set()
                continue
            stop.set("stopped", "stopped by the coordinator")
            begin.set()
            return

    threading.Thread(target=listen, name="listener", daemon=True).start()
    try:
        worker = factory(spec)
        ready = worker.prepare()
    except MimesisError as exc:
        send(("prepare_failed", spec.index, str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - reported to the coordinator with its type
        send(("prepare_failed", spec.index, f"{type(exc).__name__}: {exc}"))
        return
    if not send(("ready", ready)):
        return
    begin.wait()
    if state.start_wall_ns is None or stop.is_set():
        send(("done", WorkerResult(spec.index, "stopped", "stopped before the start", ready.events, 0, None)))
        return
    state.replaying = True

    def on_progress(progress: Progress) -> None:
        send(("progress", progress))

    result = worker.run(state.start_wall_ns, stop, on_progress=on_progress)
    if send(("done", result)):
        # everything is written and reported: end now, without the interpreter's finalisation,
        # where a native client's runtime (hdfs-native's) was seen to block on a futex for good
        # and hold the coordinator, which joins its workers, with it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


class LocalEngine(Generic[SpecT]):
    """Workers as local processes (see module docstring); ``job_factory`` builds each worker's job
    from its spec inside its process (a module-level callable: it is pickled by reference)."""

    def __init__(self, job_factory: JobFactory[SpecT], start_method: str | None = None) -> None:
        self._factory = job_factory
        methods = mp.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        # a concrete context (typeshed types get_context(str) as BaseContext, which has no Process)
        self._ctx = cast("ForkServerContext | SpawnContext | ForkContext", mp.get_context(method))
        if method == "forkserver":
            # the job's module too, so each worker forks with it (and its imports) loaded
            preload = ["mimesisbench.engine.local", getattr(job_factory, "__module__", None)]
            self._ctx.set_forkserver_preload([m for m in preload if isinstance(m, str)])
        self._procs: dict[int, BaseProcess] = {}
        self._conns: dict[int, Connection] = {}
        self._ended: dict[int, WorkerResult | Crashed] = {}
        self._ready: dict[int, ReadyInfo] = {}
        self._failed: dict[int, str] = {}
        self._stopped = False
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    def prepare(self, specs: Sequence[SpecT]) -> None:
        for spec in specs:
            parent, child = self._ctx.Pipe(duplex=True)
            proc = self._ctx.Process(
                target=_process_main, args=(child, self._factory, spec), name=f"mimesis-worker-{spec.index}"
            )
            proc.daemon = True
            proc.start()
            child.close()
            self._procs[spec.index] = proc
            self._conns[spec.index] = parent

    def wait_ready(self, timeout_s: float) -> list[ReadyInfo]:
        deadline = time.monotonic() + timeout_s
        while len(self._ready) + len(self._failed) + len(self._ended) < len(self._procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BackendError(f"workers not ready after {timeout_s:.0f} s")
            for event in self.poll(min(remaining, 0.5)):
                if isinstance(event, Crashed):
                    self._failed[event.index] = event.message
        if self._failed:
            index, text = sorted(self._failed.items())[0]
            raise BackendError(f"worker {index} could not prepare: {text}")
        return [self._ready[i] for i in sorted(self._ready)]

    def start_at(self, wall_ns: int) -> None:
        self._started = True
        for index in self._conns:
            if index not in self._ended:
                self._send(index, ("start", wall_ns))

    def stop(self) -> None:
        self._stopped = True
        for index in self._conns:
            if index not in self._ended:
                self._send(index, ("stop",) if self._started else ("stop-before-start",))

    def _send(self, index: int, message: tuple[Any, ...]) -> None:
        try:
            self._conns[index].send(message)
        except (OSError, ValueError):
            pass  # the worker is gone; its sentinel tells the rest

    # ------------------------------------------------------------------ events

    def _drain(self, index: int, out: list[EngineEvent]) -> None:
        conn = self._conns[index]
        try:
            while conn.poll():
                msg = conn.recv()
                kind = msg[0]
                if kind == "ready":
                    self._ready[index] = msg[1]
                elif kind == "prepare_failed":
                    self._failed[index] = msg[2]
                    out.append(Crashed(index, msg[2]))
                    self._ended[index] = out[-1]  # type: ignore[assignment]
                elif kind == "progress":
                    out.append(msg[1])
                elif kind == "done":
                    self._ended[index] = msg[1]
                    out.append(msg[1])
        except (EOFError, OSError):
            pass

    def poll(self, timeout_s: float) -> list[EngineEvent]:
        out: list[EngineEvent] = []
        live = [i for i in self._procs if i not in self._ended]
        if not live:
            return out
        handles: dict[Any, tuple[str, int]] = {}
        for i in live:
            handles[self._conns[i]] = ("conn", i)
            handles[self._procs[i].sentinel] = ("proc", i)
        for handle in wait(list(handles), timeout=timeout_s):
            kind, index = handles[handle]
            if index in self._ended:
                continue
            self._drain(index, out)
            if kind == "proc" and index not in self._ended:
                proc = self._procs[index]
                proc.join(0.1)
                self._drain(index, out)
                if index not in self._ended:
                    crashed = Crashed(index, f"worker process {index} died (exit code {proc.exitcode})")
                    self._ended[index] = crashed
                    out.append(crashed)
        return out

    def collect(self, timeout_s: float) -> list[WorkerResult | Crashed]:
        deadline = time.monotonic() + timeout_s
        while len(self._ended) < len(self._procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for index in self._procs:
                    if index not in self._ended:
                        self._ended[index] = Crashed(index, f"worker {index} did not end within {timeout_s:.0f} s")
                break
            self.poll(min(remaining, 0.5))
        return [self._ended[i] for i in sorted(self._ended)]

    def close(self) -> None:
        if len(self._ended) < len(self._procs):
            self.stop()  # workers still waiting for the start (or running) end on their own
        for proc in self._procs.values():
            proc.join(timeout=2.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=2.0)
            if proc.is_alive():  # SIGTERM is the worker's stop signal: a stuck one is killed
                proc.kill()
                proc.join(timeout=2.0)
        for conn in self._conns.values():
            conn.close()
