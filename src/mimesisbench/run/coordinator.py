"""The coordinator: phase 1, the barrier, phase 2 through an engine, and the run directory.

``run_benchmark`` always writes a run directory (config, manifest, samples, time series,
summary), also when the run ends early; ``RunReport.complete`` tells, and
``raise_if_incomplete`` turns an incomplete report into ``RunIncomplete`` for the CLI.

Everything that can refuse a run (the base directory's checks, the run lock, a namespace already
used by an earlier run) is decided *before* the run directory is made, so a refused run leaves
no run directory behind. The base is locked (``run.runlock``) for the whole run. SIGTERM ends a
run the way Ctrl-C does (the workers stop and write what they measured). Whatever watches the
run from the side (JMX sampling, live metrics) is a ``run.probes.Probe``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, cast

import numpy as np
import polars as pl
from rich.console import Console

from mimesisbench.backends.base import Backend, DataRoot
from mimesisbench.backends.commands import CommandPlan, command_plan
from mimesisbench.backends.registry import innermost_url, open_backend
from mimesisbench.datajobs.spec import DataJob, parse_data_jobs
from mimesisbench.datajobs.task import DataTaskSpec, remove_job_files
from mimesisbench.datajobs.trace import data_summary, merge_data_parts
from mimesisbench.engine.base import Crashed, Engine, EngineEvent
from mimesisbench.engine.local import LocalEngine
from mimesisbench.errors import ConfigError, MimesisError, RunIncomplete, SafetyError
from mimesisbench.jobs import Progress, WorkerResult
from mimesisbench.results import records, rundir
from mimesisbench.results.hostinfo import host_facts, versions
from mimesisbench.results.samples import merge_parts, write_samples
from mimesisbench.results.summary import summarize, timeseries
from mimesisbench.run.client_cost import cost_warning, run_cost
from mimesisbench.run.clock import iso_utc
from mimesisbench.run.config import RunConfig
from mimesisbench.run.jobkinds import build_job
from mimesisbench.run.partition import PartitionPlan, plan_partition
from mimesisbench.run.phase1 import (
    Phase1Report,
    build_namespace,
    marker_text,
    read_marker_state,
)
from mimesisbench.run.probes import Probe, probes_for_run
from mimesisbench.run.progress import Bar
from mimesisbench.run.runlock import RunLock
from mimesisbench.run.virtual import simulated_replay
from mimesisbench.run.worker import WorkerSpec
from mimesisbench.schedule import Schedule, load_schedule

LOG = logging.getLogger(__name__)

COLLECT_TIMEOUT_S = 120.0
#: what writing a result file raises when the disk is full or read-only (polars wraps the OSError)
WRITE_ERRORS: tuple[type[BaseException], ...] = (OSError, pl.exceptions.ComputeError)


@dataclass(frozen=True)
class RunReport:
    """What a run produced (the run directory holds the same, on disk)."""

    run_dir: Path
    complete: bool
    status: str
    message: str
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def raise_if_incomplete(report: RunReport) -> None:
    if not report.complete:
        raise RunIncomplete(f"run incomplete ({report.status}): {report.message}; partial results in {report.run_dir}")


@dataclass
class _Interrupts:
    """Which signal interrupted the run (SIGINT unless SIGTERM arrived)."""

    signal_name: str = "SIGINT"

    def describe(self) -> str:
        if self.signal_name == "SIGTERM":
            return "terminated (SIGTERM)"
        return "interrupted by the user (Ctrl-C)"


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[_Interrupts]:
    """While running, SIGTERM raises ``KeyboardInterrupt`` in the main thread, so a terminated run
    ends exactly like an interrupted one (workers stopped, partial results written)."""
    seen = _Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        seen.signal_name = "SIGTERM"
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


def _phase1_plan(backend: Backend, schedule: Schedule, config: RunConfig, warnings: list[str]) -> Phase1Report | None:
    """Phase 1's decision, taken before the run directory exists: a report when phase 1 is
    skipped, None when the namespace must be built; ``SafetyError`` for a used namespace."""
    if not config.replay:
        return Phase1Report(skipped=True, reason="--no-replay: the data jobs run alone")
    if backend.process_local:
        return Phase1Report(skipped=True, reason="in-process backend: each worker builds its own namespace")
    if config.skip_phase1:
        return Phase1Report(skipped=True, reason="--skip-phase1")
    state = read_marker_state(backend, schedule.namespace_hash())
    if state == "ready":
        return Phase1Report(skipped=True, reason="namespace already built for this schedule (marker)")
    if state == "used":
        if not config.reuse:
            raise SafetyError(
                "the namespace below the base directory was changed by an earlier run of this schedule; "
                "use a fresh base directory (or --reuse to replay on it anyway)"
            )
        warnings.append("replaying on a namespace changed by an earlier run (--reuse): expect exists/not_found errors")
    return None


def _phase1(
    backend: Backend,
    schedule: Schedule,
    config: RunConfig,
    planned: Phase1Report | None,
    console: Console | None,
    show: bool,
) -> Phase1Report:
    if planned is not None:
        return planned
    threads = config.phase1_threads or backend.phase1_concurrency
    report = build_namespace(backend, schedule, threads=threads, show_progress=show, console=console)
    backend.write_marker(marker_text(schedule.namespace_hash(), "ready"))
    return report


def prepare_namespace(config: RunConfig, *, console: Console | None = None, show_progress: bool = False) -> Phase1Report:
    """Phase 1 alone: build the schedule's namespace below the backend's base and mark it ready,
    so that a run of the same schedule skips it (no run directory; a study checkpoints the server
    here, then starts every run from that state). Skipped, as a run would, when already built."""
    schedule = load_schedule(config.schedule)
    backend = open_backend(config.backend)
    backend.setup(reuse=config.reuse)
    try:
        with _run_lock(backend, config):
            planned = _phase1_plan(backend, schedule, config, [])
            if console is not None:
                console.print(phase1_announcement(backend, schedule, planned))
            return _phase1(backend, schedule, config, planned, console, show_progress)
    finally:
        backend.close()


def namespace_counts(schedule: Schedule) -> tuple[int, int]:
    """Pre-existing directories (the base itself not counted) and files phase 1 makes."""
    dirs = schedule.directories.filter(pl.col("pre_existing") & (pl.col("dir_id") != 0)).height
    files = schedule.files.filter(pl.col("pre_existing")).height
    return dirs, files


def phase1_announcement(backend: Backend, schedule: Schedule, planned: Phase1Report | None) -> str:
    """What phase 1 will do, said before it starts (how many directories and files)."""
    dirs, files = namespace_counts(schedule)
    items = f"{dirs:,} directories and {files:,} files"
    if backend.stateless:
        return f"phase 1: nothing to make (the {backend.scheme} backend keeps no namespace)"
    if backend.process_local:
        return f"phase 1: each worker makes its own in-memory copy of the namespace ({items})"
    if planned is not None:
        return f"phase 1: skipped ({planned.reason}); the namespace holds {items}"
    return f"phase 1: making {items} below {backend.url}"


def _run_lock(backend: Backend, config: RunConfig) -> contextlib.AbstractContextManager[object]:
    """The lock that keeps a second run off this backend's base while this one runs."""
    if backend.process_local:
        return contextlib.nullcontext()
    path = backend.lock_path()
    if path is not None:
        return RunLock(path, f"the base directory of {config.backend}")
    out = Path(config.out)  # no local base: lock the run root itself (no file is made in it)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--output: cannot create {out}: {exc.strerror}") from None
    return RunLock(str(out), f"the run folder {out} (for a backend without a local base directory)", directory=True)


def _drift_message(result: WorkerResult, config: RunConfig) -> str:
    return (
        f"worker {result.index} fell behind schedule ({result.message}, more than --max-drift "
        f"{config.max_drift_s:g} s): the backend or this machine cannot keep up with the offered load; "
        "use more workers (--workers N), more lanes per worker (--concurrency), or replay slower (--time-scale > 1)"
    )


def _end_state(
    results: list[WorkerResult | Crashed], interrupted: str | None, config: RunConfig
) -> tuple[str, str]:
    if interrupted is not None:
        return "interrupted", interrupted
    for wanted in ("crashed", "failed", "drift", "stopped"):
        for r in results:
            if wanted == "crashed" and isinstance(r, Crashed):
                return "crashed", r.message
            if isinstance(r, WorkerResult) and r.status == wanted:
                if wanted == "drift":
                    return "drift", _drift_message(r, config)
                return wanted, f"worker {r.index}: {r.message}"
    return "complete", ""


def _replay(
    engine: Engine,
    specs: list[WorkerSpec],
    config: RunConfig,
    total: int,
    console: Console | None,
    show: bool,
    manifest: dict[str, Any],
    on_event: Callable[[EngineEvent], None] | None = None,
    on_start: Callable[[], None] | None = None,
    data_specs: Sequence[DataTaskSpec] = (),
) -> tuple[list[WorkerResult | Crashed], bool]:
    """Prepare, handshake, barrier, replay; returns every worker's end (the replay's workers,
    then the data tasks) and whether Ctrl-C (or SIGTERM) hit. The progress bar, the probes
    (``on_event``) and the manifest's lanes are the replay's: data tasks are only waited for."""
    interrupted = False
    counted = len(specs)
    try:
        engine.prepare([*specs, *data_specs])
        ready = engine.wait_ready(config.ready_timeout_s)
        manifest["workers"] = [asdict(r) for r in ready if r.index < counted]
        if data_specs:
            manifest["data_tasks"] = [asdict(r) for r in ready if r.index >= counted]
        impls = sorted({r.lane_impl for r in ready if r.index < counted})
        manifest["lane_impl"] = impls  # python, or native-<backend>-<version> (per worker: workers)
        manifest["native_lane"] = bool(impls) and all(i != "python" for i in impls)
        start_wall = time.time_ns() + int(config.start_margin_s * 1e9)
        manifest["start_barrier_wall_ns"] = start_wall
        manifest["start_barrier_utc"] = iso_utc(start_wall)
        engine.start_at(start_wall)
        if on_start is not None:
            on_start()
        issued: dict[int, int] = {}
        ended: set[int] = set()
        with Bar("phase 2: replay", total, "ops", console=console, enabled=show) as bar:
            while len(ended) < counted + len(data_specs):
                for event in engine.poll(0.25):
                    if event.index >= counted:  # a data task
                        if not isinstance(event, Progress):
                            ended.add(event.index)
                            if isinstance(event, Crashed) or event.status != "complete":
                                engine.stop()
                        continue
                    if on_event is not None:
                        on_event(event)
                    if isinstance(event, Progress):
                        issued[event.index] = event.issued
                        lag = event.lag_ns / 1e9
                        bar.update(sum(issued.values()), description=f"phase 2: replay (lag {lag:.3f} s)")
                        continue
                    ended.add(event.index)
                    if isinstance(event, WorkerResult):
                        issued[event.index] = event.issued
                        bar.update(sum(issued.values()))
                    if isinstance(event, Crashed) or event.status != "complete":
                        engine.stop()
    except KeyboardInterrupt:
        interrupted = True
        engine.stop()
    try:
        results = engine.collect(COLLECT_TIMEOUT_S)
    except KeyboardInterrupt:
        interrupted = True
        engine.stop()
        results = engine.collect(10.0)
    return results, interrupted


def run_benchmark(
    config: RunConfig,
    *,
    console: Console | None = None,
    show_progress: bool = True,
    engine: Engine | None = None,
) -> RunReport:
    """Run phases 1 and 2 and write the run directory. Never raises for an early end of phase 2.

    With ``config.metrics_port`` the run is served to Prometheus while it runs (``monitoring.live``);
    an ``hdfs://`` backend (or ``config.jmx``) is sampled over JMX (``run.probes``).
    """
    announce = None if console is None or not show_progress else console.print
    complete = False
    with _sigterm_as_interrupt() as interrupts:
        probes = probes_for_run(config, announce)
        try:
            report = _run_benchmark(
                config, console=console, show_progress=show_progress, engine=engine, probes=probes, interrupts=interrupts
            )
            complete = report.complete
            return report
        finally:
            for probe in probes:
                try:
                    probe.close(complete)
                except Exception as exc:  # noqa: BLE001 - a probe never decides the run's fate
                    LOG.warning("closing the %s probe failed: %s", probe.name, exc)


def _write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest.json``; a full or read-only disk becomes ``RunIncomplete`` (exit 6)."""
    try:
        records.write_manifest(run_dir, manifest)  # atomic: removes its own temporary file on failure
    except OSError as exc:
        raise RunIncomplete(
            f"run incomplete: cannot write {run_dir / rundir.MANIFEST} ({exc.strerror or exc})"
        ) from None


def _drop_tmp(path: Path) -> None:
    """Remove the half-written temporary file next to ``path`` (frees space on a full disk)."""
    with contextlib.suppress(OSError):
        path.with_name(path.name + ".tmp").unlink(missing_ok=True)


def _run_benchmark(
    config: RunConfig,
    *,
    console: Console | None,
    show_progress: bool,
    engine: Engine | None,
    probes: list[Probe],
    interrupts: _Interrupts,
) -> RunReport:
    started = iso_utc()
    schedule = load_schedule(config.schedule)
    if config.rate is not None:
        last_us = int(schedule.events["time_us"].max() or 0) if schedule.n_events else 0  # type: ignore[arg-type]
        config = config.with_rate(schedule.n_events, last_us)
    all_at_once = config.time_scale > 0 and schedule.n_events > 1 and bool(
        schedule.events["time_us"].min() == schedule.events["time_us"].max())
    if all_at_once:  # generated at c = 0: nothing to pace; paced, it would only drift
        config = replace(config, time_scale=0.0)
    backend = open_backend(config.backend)
    backend.setup(reuse=config.reuse)
    with _run_lock(backend, config):
        warnings: list[str] = []
        if all_at_once:
            warnings.append("the schedule's operations are all due at once (generated at c = 0): replayed as fast "
                            "as possible, closed loop (latency is service time)")
        commands = command_plan(backend.capabilities, schedule.events["op"])
        said = commands.announcement(backend.scheme)
        if said:
            warnings.append(said)
        planned = _phase1_plan(backend, schedule, config, warnings)  # may refuse: before the run directory
        data = _data_plan(config)  # may refuse too
        plan = plan_partition(schedule.files["type"].unique().to_list(), config.workers)
        run_dir = rundir.new_run_dir(config.out)
        try:
            records.write_config(run_dir, config.resolved())
        except OSError as exc:
            raise RunIncomplete(f"run incomplete: cannot write {run_dir / rundir.CONFIG} ({exc.strerror})") from None
        manifest: dict[str, Any] = {
            "tool": "mimesisbench",
            "versions": versions(),
            "host": host_facts(),
            "backend": backend.describe(),
            "schedule": {
                "path": str(schedule.root.resolve()),
                "events": schedule.n_events,
                "namespace_hash": schedule.namespace_hash(),
                "manifest": schedule.manifest,
            },
            "profile_hash": _profile_hash(schedule.manifest),
            "seed": schedule.manifest.get("seed"),
            "partition": asdict(plan),
            "started_at": started,
            "complete": False,
            "status": "phase1",
            "warnings": warnings,
        }
        if data is not None:
            manifest["data_jobs"] = {"target": data.root.target, "jobs": [job.describe() for job in data.jobs]}
        for probe in probes:  # from phase 1 on (JMX samples before the barrier have t_s < 0)
            manifest.update(probe.start(run_dir.name, schedule.n_events))
        _write_manifest(run_dir, manifest)
        manifest["commands"] = {"skipped": commands.skipped, "mapped": commands.mapped}
        if console is not None:
            if said:
                console.print(said)
            console.print(phase1_announcement(backend, schedule, planned))
        return _run_phases(
            config, backend, schedule, plan, planned, run_dir, manifest, warnings, probes, interrupts,
            console=console, show_progress=show_progress, engine=engine, commands=commands, data=data,
        )


def _run_phases(
    config: RunConfig,
    backend: Backend,
    schedule: Schedule,
    plan: PartitionPlan,
    planned: Phase1Report | None,
    run_dir: Path,
    manifest: dict[str, Any],
    warnings: list[str],
    probes: list[Probe],
    interrupts: _Interrupts,
    *,
    console: Console | None,
    show_progress: bool,
    engine: Engine | None,
    commands: CommandPlan | None = None,
    data: DataPlan | None = None,
) -> RunReport:
    try:
        phase1 = _phase1(backend, schedule, config, planned, console, show_progress)
        backend.verify_namespace(schedule.directories["path"].to_list())
    except KeyboardInterrupt:
        what = "terminated (SIGTERM)" if interrupts.signal_name == "SIGTERM" else "interrupted"
        manifest.update(status="interrupted", ended_at=iso_utc(), message=f"{what} during phase 1 (run again to resume)")
        _write_manifest(run_dir, manifest)
        raise RunIncomplete(f"{what} during phase 1 (run again to resume it); run directory {run_dir}") from None
    except MimesisError as exc:
        manifest.update(status="failed", ended_at=iso_utc(), message=f"phase 1: {exc}")
        _write_manifest(run_dir, manifest)
        raise
    manifest["phase1"] = asdict(phase1)
    if not backend.process_local and config.replay:
        backend.write_marker(marker_text(schedule.namespace_hash(), "used"))
    specs = _specs(config, schedule, plan, run_dir, backend) if config.replay else []
    data_specs = [] if data is None else data.specs(config, schedule, run_dir, first_index=len(specs))
    for probe in probes:
        probe.phase("replay")

    def on_event(event: EngineEvent) -> None:
        for probe in probes:
            probe.observe(event)

    def on_start() -> None:  # the manifest says phase 2 from the barrier on
        manifest["status"] = "replay"
        with contextlib.suppress(RunIncomplete):  # the final manifest is written (or fails) later
            _write_manifest(run_dir, manifest)

    if getattr(backend, "virtual_time", False) and config.replay:  # a simulated server (simnn)
        on_start()
        try:
            results, interrupted = simulated_replay(backend, schedule, plan, config, manifest), False
        except KeyboardInterrupt:  # nothing was measured: the run is written as interrupted
            results, interrupted = [], True
    else:
        eng = engine or _make_engine(config)
        try:
            results, interrupted = _replay(
                eng, specs, config, schedule.n_events if config.replay else 0, console, show_progress, manifest,
                on_event, on_start, data_specs,
            )
        except MimesisError as exc:
            manifest.update(status="failed", ended_at=iso_utc(), message=str(exc))
            _write_manifest(run_dir, manifest)
            raise
        finally:
            eng.close()
    for result in results:  # the final deltas of workers whose end the replay loop did not see
        if result.index < len(specs):
            on_event(result)
    for probe in probes:
        probe.phase("writing")
        warnings.extend(probe.stop())
    origin = manifest.get("start_barrier_wall_ns")
    for probe in probes:
        try:
            manifest.update(probe.results(run_dir, origin if isinstance(origin, int) else None))
        except WRITE_ERRORS as exc:
            warnings.append(f"the {probe.name} probe could not write its results: {exc}")
    why = interrupts.describe() if interrupted else None
    return _finish(run_dir, config, schedule, plan, manifest, results, why, warnings, commands, data)


def _make_engine(config: RunConfig) -> Engine:
    """The engine ``config.engine`` names (Ray is imported only when asked for)."""
    from mimesisbench.engine.ray_address import parse_engine

    choice = parse_engine(config.engine)
    if choice.kind == "local":
        return LocalEngine(build_job)
    from mimesisbench.engine.ray_engine import RayEngine, RayOptions

    return RayEngine(build_job, choice, RayOptions(spread=config.spread))


def _profile_hash(manifest: dict[str, Any]) -> str | None:
    """The profile hash a schedule manifest records (``profile.hash``, or ``profile_hash``)."""
    profile = manifest.get("profile")
    if isinstance(profile, dict) and isinstance(profile.get("hash"), str):
        return str(profile["hash"])
    value = manifest.get("profile_hash")
    return value if isinstance(value, str) else None


def _specs(config: RunConfig, schedule: Schedule, plan: PartitionPlan, run_dir: Path, backend: Backend) -> list[WorkerSpec]:
    drift = None if config.max_drift_s is None else int(config.max_drift_s * 1e9)
    urls = backend.worker_urls(plan.n_workers, run_dir / rundir.PARTS)
    return [
        WorkerSpec(
            index=i,
            schedule_dir=str(schedule.root.resolve()),
            backend_url=urls[i],
            plan=plan,
            parts_dir=str(run_dir / rundir.PARTS),
            time_scale=config.time_scale,
            max_drift_ns=drift,
            concurrency=config.concurrency,
            build_namespace=backend.process_local and not config.skip_phase1,
            live_metrics=config.metrics_port is not None,
        )
        for i in range(plan.n_workers)
    ]


def _finish(
    run_dir: Path,
    config: RunConfig,
    schedule: Schedule,
    plan: PartitionPlan,
    manifest: dict[str, Any],
    results: list[WorkerResult | Crashed],
    interrupted: str | None,
    warnings: list[str],
    commands: CommandPlan | None = None,
    data: DataPlan | None = None,
) -> RunReport:
    """Merge the parts and write samples, time series, summary and manifest (and the data jobs'
    calls, ``data_calls.parquet``, with the summary's ``data`` section).

    A file that cannot be written (full or read-only disk) does not lose the rest: every other
    file is still attempted, the run is marked incomplete with the reason, and the workers' part
    files (what was measured) are kept in ``parts/`` unless ``samples.parquet`` holds them."""
    status, message = _end_state(results, interrupted, config)
    n_replay = plan.n_workers if config.replay else 0
    data_results = [r for r in results if r.index >= n_replay]
    results = [r for r in results if r.index < n_replay]
    parts = [(r.index, r.part_path) for r in results if isinstance(r, WorkerResult) and r.part_path]
    parts = [(i, p) for i, p in parts if Path(p).is_file()]
    handed = [(r.index, _in_memory_part(r.samples)) for r in results if isinstance(r, WorkerResult) and r.samples]
    samples = merge_parts([*parts, *handed], schedule.events, config.time_scale)
    write_failures: list[str] = []

    def attempt(path: Path, write: Callable[[Path], object]) -> bool:
        try:
            write(path)
            return True
        except WRITE_ERRORS as exc:
            _drop_tmp(path)  # every writer here writes a temporary file and renames it
            if isinstance(exc, OSError) and exc.strerror:
                reason = exc.strerror
            else:  # polars: "parquet: ... underlying IO error: No space left on device (os error 28)"
                reason = str(exc).rsplit("IO error: ", 1)[-1]
            write_failures.append(f"{path.name} ({reason})")
            return False

    samples_written = attempt(run_dir / rundir.SAMPLES, lambda p: write_samples(samples, p))
    attempt(run_dir / rundir.TIMESERIES, lambda p: _write_parquet(timeseries(samples), p))
    labels = plan.worker_labels()
    data_summary_: dict[str, Any] | None = None
    if data is not None:
        calls = data.calls(data_results, n_replay)
        attempt(run_dir / rundir.DATA_CALLS, lambda p: _write_parquet(calls, p))
        data_summary_ = data_summary(calls, data.jobs)
        labels = [*labels[:n_replay], *data.labels()]
        results = [*results, *data_results]
        left = remove_job_files(data.root.target, data.jobs, data.root.client_config)
        if left:
            warnings.append(f"could not remove the data jobs' files: {', '.join(left)}")
    worker_ends = []
    for r in results:
        if isinstance(r, Crashed):
            worker_ends.append({"index": r.index, "label": labels[r.index], "status": "crashed", "message": r.message})
        else:
            worker_ends.append(
                {"index": r.index, "label": labels[r.index], "status": r.status, "message": r.message,
                 "issued": r.issued, "scheduled": r.total, **({"extra": r.extra} if r.extra else {})}
            )
    if write_failures:
        kept = " (the measured samples are kept in parts/)" if parts and not samples_written else ""
        what = f"cannot write {', '.join(write_failures)}{kept}"
        if status == "complete":
            status, message = "failed", what
        else:
            message = f"{message}; {what}"
    complete = status == "complete"
    summary = summarize(
        samples,
        scheduled_total=schedule.n_events,
        complete=complete,
        extra={"status": status, "message": message, "time_scale": config.time_scale, "workers": worker_ends,
               **({} if data_summary_ is None else {"data": data_summary_})},
        commands=commands,
    )
    if summary["operations_failed"]:
        warnings.append(f"{summary['operations_failed']:,} operations failed (see outcomes in summary.json)")
    paced = config.time_scale > 0
    summary["mode"] = "paced" if paced else "as-fast-as-possible"
    cpu: dict[str, Any] = manifest.get("cpu") or {}
    summary["cost"] = run_cost(worker_ends[:n_replay], int(summary["operations_issued"]), paced=paced,
                               lateness_p99_ms=(summary.get("lateness_ms") or {}).get("p99"),
                               server=cpu.get("server") or None, host_busy=cpu.get("host_busy"),
                               native_lanes=any(str(i).startswith("native") for i in manifest.get("lane_impl") or []),
                               host_cores=os.cpu_count() or 1)
    bottleneck = cost_warning(summary["cost"])
    if bottleneck:
        warnings.append(bottleneck)
    if not complete:
        warnings.append(message)
    attempt(run_dir / rundir.SUMMARY, lambda p: records.write_summary(run_dir, summary))
    manifest.update(
        ended_at=iso_utc(),
        complete=complete,
        status=status,
        message=message,
        worker_ends=worker_ends,
        warnings=warnings,
    )
    if not attempt(run_dir / rundir.MANIFEST, lambda p: records.write_manifest(run_dir, manifest)):
        LOG.warning("cannot write %s: %s", run_dir / rundir.MANIFEST, write_failures[-1])
        if complete:  # the run measured everything, but its directory does not say so
            status, complete, message = "failed", False, f"cannot write {', '.join(write_failures)}"
    if samples_written and (complete or parts):
        shutil.rmtree(run_dir / rundir.PARTS, ignore_errors=True)
    return RunReport(run_dir=run_dir, complete=complete, status=status, message=message, summary=summary, warnings=warnings)


@dataclass(frozen=True)
class DataPlan:
    """A run's data jobs and where they write (decided before the run directory is made)."""

    jobs: tuple[DataJob, ...]
    root: DataRoot

    def specs(self, config: RunConfig, schedule: Schedule, run_dir: Path, first_index: int) -> list[DataTaskSpec]:
        """One spec per task, indexed after the replay's workers; each repeats whole passes until
        the schedule's last operation is due (at the run's time scale)."""
        last_us = int(schedule.events["time_us"].max() or 0) if schedule.n_events else 0  # type: ignore[arg-type]
        until_ns = int(last_us * 1000 * config.time_scale)
        return [
            DataTaskSpec(
                index=first_index + i, schedule_dir=str(schedule.root.resolve()), parts_dir=str(run_dir / rundir.PARTS),
                job=job, task=task, target=self.root.target, until_ns=until_ns, hdfs_config=dict(self.root.client_config),
            )
            for i, (job, task) in enumerate(self.tasks())
        ]

    def tasks(self) -> list[tuple[DataJob, int]]:
        return [(job, task) for job in self.jobs for task in range(job.tasks)]

    def labels(self) -> list[str]:
        return [f"data:{job.name}/{task}" for job, task in self.tasks()]

    def calls(self, results: list[WorkerResult | Crashed], first_index: int) -> pl.DataFrame:
        """Every call the data tasks recorded (``datajobs.trace``), from their parts."""
        tasks = self.tasks()
        parts: list[tuple[DataJob, int, Any]] = []
        for r in results:
            if not isinstance(r, WorkerResult):
                continue
            job, task = tasks[r.index - first_index]
            if r.part_path and Path(r.part_path).is_file():
                parts.append((job, task, Path(r.part_path)))
            elif r.samples:
                parts.append((job, task, _in_memory_part(r.samples)))
        return merge_data_parts(parts)


def _data_plan(config: RunConfig) -> DataPlan | None:
    """The run's data jobs and their directory; ``ConfigError`` for a backend that holds no data
    or an N-1 layout where files have one writer (HDFS)."""
    jobs = parse_data_jobs(config.data_jobs)
    if not jobs:
        return None
    inner = open_backend(innermost_url(config.backend))
    root = inner.data_root()
    if root is None:
        raise ConfigError(
            f"--data-job: the {inner.scheme} backend keeps no file data; run data jobs on posix:DIR or hdfs://..."
        )
    shared = [job.name for job in jobs if job.shared]
    if shared and not root.shared_writes:
        raise ConfigError(
            f"--data-job {shared[0]}: {inner.scheme} has no shared writes (a file has one writer, appending at its "
            "end): use the n-n layout there"
        )
    return DataPlan(jobs, root)


def _in_memory_part(arrays: dict[str, Any]) -> Path:
    """A worker's samples that reached us in its result (its part file could not be written), as
    something ``merge_parts`` reads like a part file (``np.load`` takes a file object too)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    return cast(Path, buffer)


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp)
    tmp.replace(path)
