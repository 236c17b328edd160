"""One micro-benchmark from start to end: set up, prepare (untimed), time, clean up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.backends.base import Backend, NativeLaneRunner
from mimesisbench.backends.registry import open_backend
from mimesisbench.errors import BackendError, MimesisError
from mimesisbench.micro.cleanup import remove_tree
from mimesisbench.micro.config import MicroConfig
from mimesisbench.micro.plan import MicroPlan, make_plan
from mimesisbench.micro.runner import Timings, native_runner, run_batch
from mimesisbench.micro.stats import error_counts, summarize
from mimesisbench.schedule.format import OpCode

#: closed-loop clients for the untimed preparation when the config does not say
PREPARE_CONCURRENCY_SYNC = 16
PREPARE_CONCURRENCY_ASYNC = 64


@dataclass(frozen=True)
class MicroResult:
    """What a micro-benchmark measured (``to_json`` is the ``--json`` output)."""

    config: MicroConfig
    summary: dict[str, Any]
    prepare_s: float
    cleanup_s: float
    root: str
    backend_info: dict[str, Any]
    timings: Timings
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        c = self.config
        s = self.summary
        return {
            "op": c.op,
            "files": c.files,
            "concurrency": c.concurrency,
            "dirs": c.n_dirs,
            "backend": c.backend,
            "ops_per_s": s["ops_per_s"],
            "elapsed_s": s["elapsed_s"],
            "latency_ms": s["latency_ms"],
            "errors": s["errors"],
            "errors_by_outcome": s["errors_by_outcome"],
            "client": s["client"],
            "client_requested": c.client,
            "client_cpu_us_per_op": s["client_cpu_us_per_op"],
            "server_cpu_us_per_op": s.get("server_cpu_us_per_op"),
            "prepare_s": self.prepare_s,
            "cleanup_s": self.cleanup_s,
            "workdir": self.root,
            "kept": c.keep,
            "backend_info": self.backend_info,
            "warnings": list(self.warnings),
        }


def _ops(backend: Backend, code: OpCode) -> tuple[Any, Any]:
    sync = backend.sync_ops()[code]
    aio = backend.async_ops()[code] if backend.is_async else None
    return sync, aio


def _prepare_step(
    backend: Backend, runner: NativeLaneRunner | None, code: OpCode, paths: list[Any], concurrency: int, what: str
) -> None:
    if not paths:
        return
    sync, aio = _ops(backend, code)
    timings = run_batch(backend, sync, aio, paths, concurrency, native=None if runner is None else (runner, code))
    errors = error_counts(timings.outcome)
    if errors:
        summary = ", ".join(f"{n} {label}" for label, n in errors.items())
        raise BackendError(f"preparing the micro-benchmark: {what} failed ({summary})")


def _prepare(backend: Backend, runner: NativeLaneRunner | None, plan: MicroPlan, concurrency: int) -> None:
    dirs = backend.native_paths(plan.dirs).to_list()
    _prepare_step(backend, runner, OpCode.MKDIRS, dirs[:1], 1, f"making {dirs[0]!r}")
    _prepare_step(backend, runner, OpCode.MKDIRS, dirs[1:], concurrency, "making the directories")
    if plan.files.len():
        files = backend.native_paths(plan.files).to_list()
        _prepare_step(backend, runner, OpCode.CREATE, files, concurrency, "creating the files")


def _timed_args(backend: Backend, plan: MicroPlan) -> list[Any]:
    first = backend.native_paths(plan.targets).to_list()
    if plan.targets2 is None:
        return first
    second = backend.native_paths(plan.targets2).to_list()
    return list(zip(first, second))


def run_micro(config: MicroConfig, server_cpu: Callable[[], float | None] | None = None) -> MicroResult:
    """Run one micro-benchmark; raises ``MimesisError`` subclasses for user and backend problems.

    ``server_cpu``: reads the server's CPU seconds (a managed NameNode's process), read as the timed
    replay starts and as it ends (the span of the client's CPU): the summary then has the server's
    CPU per operation beside the client's.
    """
    backend = open_backend(config.backend)
    if getattr(backend, "virtual_time", False):
        return _simulated_micro(config, backend)
    backend.setup(reuse=config.reuse)
    backend.connect()
    plan = make_plan(config)
    prep_conc = config.prepare_concurrency or max(
        config.concurrency, PREPARE_CONCURRENCY_ASYNC if backend.is_async else PREPARE_CONCURRENCY_SYNC
    )
    native_root = backend.native_paths(pl.Series("path", [plan.root], dtype=pl.String)).to_list()[0]
    warnings: list[str] = []
    cleanup_s = 0.0
    server0: float | None = None
    server1: float | None = None
    try:
        t0 = time.perf_counter()
        runner = native_runner(backend)
        _prepare(backend, runner, plan, prep_conc)
        prepare_s = time.perf_counter() - t0
        sync, aio = _ops(backend, config.op_code)
        args = _timed_args(backend, plan)
        native = None if runner is None else (runner, config.op_code)
        readings: list[float | None] = []  # the server's CPU as the replay starts and as it ends
        mark = None if server_cpu is None else (lambda: readings.append(server_cpu()))
        timings = run_batch(backend, sync, aio, args, config.concurrency, config.client, native=native, mark=mark)
        if len(readings) == 2:
            server0, server1 = readings
    finally:
        if not config.keep:
            t1 = time.perf_counter()
            try:
                if not remove_tree(backend, native_root):
                    warnings.append(f"{backend.scheme}: nothing to clean up (the namespace lives in this process)")
            except (MimesisError, OSError) as exc:
                warnings.append(f"could not remove {native_root!r}: {exc}")
            cleanup_s = time.perf_counter() - t1
        info = backend.describe()
        try:
            backend.close()
        except Exception as exc:  # noqa: BLE001 - closing is best effort
            warnings.append(f"closing the backend failed: {exc}")
    summary = summarize(timings)
    if server0 is not None and server1 is not None and summary["operations"]:
        summary["server_cpu_us_per_op"] = (server1 - server0) / summary["operations"] * 1e6
    if summary["errors"]:
        labels = ", ".join(f"{n} {k}" for k, n in summary["errors_by_outcome"].items())
        warnings.append(f"{summary['errors']} of {summary['operations']} operations failed ({labels})")
    return MicroResult(
        config=config,
        summary=summary,
        prepare_s=prepare_s,
        cleanup_s=cleanup_s,
        root=str(native_root if isinstance(native_root, str) else native_root.decode()),
        backend_info=info,
        timings=timings,
        warnings=warnings,
    )


def _simulated_micro(config: MicroConfig, backend: Backend) -> MicroResult:
    """The micro-benchmark on a simulated server (``simnn:``), in virtual time: nothing to
    prepare or clean; the simulated clients' CPU is in the model, not in this process."""
    from mimesisbench.backends.simnn import SimnnBackend
    from mimesisbench.sim.ops import simulate_micro

    assert isinstance(backend, SimnnBackend)
    sim = simulate_micro(config.op_code, config.files, config.concurrency, backend.calibration,
                         seed=backend.options.seed, engine=backend.options.engine)
    start = np.round(sim.times.start * 1e9).astype(np.int64)
    end = np.round(sim.times.end * 1e9).astype(np.int64)
    timings = Timings(start, end, np.zeros(start.size, dtype=np.uint8), f"simnn-{sim.times.engine}", config.concurrency)
    summary = summarize(timings)
    summary["client_cpu_us_per_op"] = None  # simulated: the model's CPU is no process's
    summary["simulation"] = sim.facts
    stand_ins = sim.facts.get("stand_ins") or {}
    warnings = [f"simnn: {op} simulated with the costs measured on {other}" for op, other in stand_ins.items()]
    info = {**backend.describe(), "simulation": sim.facts}
    return MicroResult(config=config, summary=summary, prepare_s=0.0, cleanup_s=0.0, root="(simulated)",
                       backend_info=info, timings=timings, warnings=warnings)
