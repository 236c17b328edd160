"""The coordinator: phase 1, the barrier, phase 2 through an engine, and the run directory.

``run_benchmark`` always writes a run directory (config, manifest, samples, time series,
summary), also when the run ends early; ``RunReport.complete`` tells, and
``raise_if_incomplete`` turns an incomplete report into ``RunIncomplete`` for the CLI.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from mimesisbench.backends.base import Backend
from mimesisbench.backends.registry import open_backend
from mimesisbench.engine.base import Crashed, Engine, EngineEvent
from mimesisbench.engine.local import LocalEngine
from mimesisbench.errors import ConfigError, MimesisError, RunIncomplete
from mimesisbench.monitoring.jmx import JmxSampler, sampler_for_run
from mimesisbench.results import rundir
from mimesisbench.results.hostinfo import host_facts, versions
from mimesisbench.results.samples import merge_parts, write_samples
from mimesisbench.results.summary import summarize, timeseries
from mimesisbench.run.clock import iso_utc
from mimesisbench.run.config import RunConfig
from mimesisbench.run.partition import PartitionPlan, plan_partition
from mimesisbench.run.phase1 import Phase1Report, build_namespace, marker_text, read_marker_state
from mimesisbench.run.progress import Bar
from mimesisbench.run.worker import Progress, WorkerResult, WorkerSpec
from mimesisbench.schedule import Schedule, load_schedule

if TYPE_CHECKING:
    from mimesisbench.monitoring.live import LiveMonitor

COLLECT_TIMEOUT_S = 120.0


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


def _phase1(
    backend: Backend, schedule: Schedule, config: RunConfig, console: Console | None, show: bool, warnings: list[str]
) -> Phase1Report:
    if backend.process_local:
        return Phase1Report(skipped=True, reason="in-process backend: each worker builds its own namespace")
    ns_hash = schedule.namespace_hash()
    if config.skip_phase1:
        return Phase1Report(skipped=True, reason="--skip-phase1")
    state = read_marker_state(backend, ns_hash)
    if state == "ready":
        return Phase1Report(skipped=True, reason="namespace already built for this schedule (marker)")
    if state == "used":
        if not config.reuse:
            raise ConfigError(
                "the namespace below the base directory was changed by an earlier run of this schedule; "
                "use a fresh base directory (or --reuse to replay on it anyway)"
            )
        warnings.append("replaying on a namespace changed by an earlier run (--reuse): expect exists/not_found errors")
    report = build_namespace(backend, schedule, threads=config.phase1_threads or backend.phase1_concurrency, show_progress=show, console=console)
    backend.write_marker(marker_text(ns_hash, "ready"))
    return report


def _drift_message(result: WorkerResult, config: RunConfig) -> str:
    return (
        f"worker {result.index} fell behind schedule ({result.message}, more than --max-drift "
        f"{config.max_drift_s:g} s): the backend or this machine cannot keep up with the offered load; "
        "use more workers (--workers N), more lanes per worker (--concurrency), or replay slower (--time-scale > 1)"
    )


def _end_state(results: list[WorkerResult | Crashed], interrupted: bool, config: RunConfig) -> tuple[str, str]:
    if interrupted:
        return "interrupted", "interrupted by the user (Ctrl-C)"
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
) -> tuple[list[WorkerResult | Crashed], bool]:
    """Prepare, handshake, barrier, replay; returns every worker's end and whether Ctrl-C hit."""
    interrupted = False
    try:
        engine.prepare(specs)
        ready = engine.wait_ready(config.ready_timeout_s)
        manifest["workers"] = [asdict(r) for r in ready]
        impls = sorted({r.lane_impl for r in ready})
        manifest["lane_impl"] = impls  # python, or native-<backend>-<version> (per worker: workers)
        manifest["native_lane"] = bool(impls) and all(i != "python" for i in impls)
        start_wall = time.time_ns() + int(config.start_margin_s * 1e9)
        manifest["start_barrier_wall_ns"] = start_wall
        manifest["start_barrier_utc"] = iso_utc(start_wall)
        engine.start_at(start_wall)
        issued: dict[int, int] = {}
        ended: set[int] = set()
        with Bar("phase 2: replay", total, "ops", console=console, enabled=show) as bar:
            while len(ended) < len(specs):
                for event in engine.poll(0.25):
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

    With ``config.metrics_port`` the run is served to Prometheus while it runs (``monitoring.live``).
    """
    live: LiveMonitor | None = None
    if config.metrics_port is not None:
        from mimesisbench.monitoring.live import LiveMonitor

        live = LiveMonitor(addr=config.metrics_addr, port=config.metrics_port, linger_s=config.metrics_linger_s)
    jmx = sampler_for_run(config.backend, config.jmx, config.jmx_interval_s)
    try:
        report = _run_benchmark(
            config, console=console, show_progress=show_progress, engine=engine, live=live, jmx=jmx
        )
        if live is not None:
            live.finish(report.complete)
        return report
    finally:
        if jmx is not None:
            jmx.stop()  # idempotent; ends the sampling thread on every early exit too
        if live is not None:
            live.close()


def _run_benchmark(
    config: RunConfig,
    *,
    console: Console | None,
    show_progress: bool,
    engine: Engine | None,
    live: LiveMonitor | None,
    jmx: JmxSampler | None = None,
) -> RunReport:
    started = iso_utc()
    schedule = load_schedule(config.schedule)
    backend = open_backend(config.backend)
    backend.setup(reuse=config.reuse)
    run_dir = rundir.new_run_dir(config.out)
    rundir.write_json(run_dir / rundir.CONFIG, config.resolved())
    warnings: list[str] = []
    plan = plan_partition(schedule.files["type"].unique().to_list(), config.workers)
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
    if live is not None:
        info = {"backend": config.backend, "engine": config.engine, "time_scale": f"{config.time_scale:g}"}
        manifest["metrics_url"] = live.start(run_dir.name, schedule.n_events, info)
        if console is not None and show_progress:
            console.print(f"live metrics: {live.url} (run_id {run_dir.name})")
    if jmx is not None:  # from phase 1 on (its samples have t_s < 0)
        manifest["server_metrics"] = {"jmx": jmx.url, "interval_s": jmx.interval_s}
        jmx.start()
    rundir.write_json(run_dir / rundir.MANIFEST, manifest)
    try:
        phase1 = _phase1(backend, schedule, config, console, show_progress, warnings)
        backend.verify_namespace(schedule.directories["path"].to_list())
    except KeyboardInterrupt:
        manifest.update(status="interrupted", ended_at=iso_utc(), message="interrupted during phase 1 (run again to resume)")
        rundir.write_json(run_dir / rundir.MANIFEST, manifest)
        raise RunIncomplete(f"interrupted during phase 1 (run again to resume it); run directory {run_dir}") from None
    except MimesisError as exc:
        manifest.update(status="failed", ended_at=iso_utc(), message=f"phase 1: {exc}")
        rundir.write_json(run_dir / rundir.MANIFEST, manifest)
        raise
    manifest["phase1"] = asdict(phase1)
    if not backend.process_local:
        backend.write_marker(marker_text(schedule.namespace_hash(), "used"))
    specs = _specs(config, schedule, plan, run_dir, backend)
    if live is not None:
        live.set_phase("replay")
    eng = engine or _make_engine(config)
    try:
        results, interrupted = _replay(
            eng, specs, config, schedule.n_events, console, show_progress, manifest, None if live is None else live.observe
        )
    except MimesisError as exc:
        manifest.update(status="failed", ended_at=iso_utc(), message=str(exc))
        rundir.write_json(run_dir / rundir.MANIFEST, manifest)
        raise
    finally:
        eng.close()
    if live is not None:
        for result in results:  # the final deltas of workers whose end the replay loop did not see
            live.observe(result)
        live.set_phase("writing")
    if jmx is not None:
        warnings.extend(jmx.stop())
        origin = manifest.get("start_barrier_wall_ns")
        if isinstance(origin, int):
            jmx.set_origin(origin)
        jmx.write(run_dir)
        manifest["server_metrics"].update(file="server_timeseries.parquet", samples=jmx.samples)
    return _finish(run_dir, config, schedule, plan, manifest, results, interrupted, warnings, backend)


def _make_engine(config: RunConfig) -> Engine:
    """The engine ``config.engine`` names (Ray is imported only when asked for)."""
    from mimesisbench.engine.ray_address import parse_engine

    choice = parse_engine(config.engine)
    if choice.kind == "local":
        return LocalEngine()
    from mimesisbench.engine.ray_engine import RayEngine, RayOptions

    return RayEngine(choice, RayOptions(spread=config.spread))


def _profile_hash(manifest: dict[str, Any]) -> str | None:
    """The profile hash a schedule manifest records (``profile.hash``, or ``profile_hash``)."""
    profile = manifest.get("profile")
    if isinstance(profile, dict) and isinstance(profile.get("hash"), str):
        return str(profile["hash"])
    value = manifest.get("profile_hash")
    return value if isinstance(value, str) else None


def _specs(config: RunConfig, schedule: Schedule, plan: PartitionPlan, run_dir: Path, backend: Backend) -> list[WorkerSpec]:
    drift = None if config.max_drift_s is None else int(config.max_drift_s * 1e9)
    return [
        WorkerSpec(
            index=i,
            schedule_dir=str(schedule.root.resolve()),
            backend_url=config.backend,
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
    interrupted: bool,
    warnings: list[str],
    backend: Backend,
) -> RunReport:
    status, message = _end_state(results, interrupted, config)
    complete = status == "complete"
    parts = [(r.index, r.part_path) for r in results if isinstance(r, WorkerResult) and r.part_path]
    parts = [(i, p) for i, p in parts if Path(p).is_file()]
    samples = merge_parts(parts, schedule.events, config.time_scale)
    write_samples(samples, run_dir / rundir.SAMPLES)
    timeseries(samples).write_parquet(run_dir / rundir.TIMESERIES)
    labels = plan.worker_labels()
    worker_ends = []
    for r in results:
        if isinstance(r, Crashed):
            worker_ends.append({"index": r.index, "label": labels[r.index], "status": "crashed", "message": r.message})
        else:
            worker_ends.append(
                {"index": r.index, "label": labels[r.index], "status": r.status, "message": r.message,
                 "issued": r.issued, "scheduled": r.total, **({"extra": r.extra} if r.extra else {})}
            )
    summary = summarize(
        samples,
        scheduled_total=schedule.n_events,
        complete=complete,
        extra={"status": status, "message": message, "time_scale": config.time_scale, "workers": worker_ends},
    )
    if summary["operations_failed"]:
        warnings.append(f"{summary['operations_failed']:,} operations failed (see outcomes in summary.json)")
    if not complete:
        warnings.append(message)
    rundir.write_json(run_dir / rundir.SUMMARY, summary)
    manifest.update(
        ended_at=iso_utc(),
        complete=complete,
        status=status,
        message=message,
        worker_ends=worker_ends,
        warnings=warnings,
    )
    rundir.write_json(run_dir / rundir.MANIFEST, manifest)
    if complete or parts:
        shutil.rmtree(run_dir / rundir.PARTS, ignore_errors=True)
    return RunReport(run_dir=run_dir, complete=complete, status=status, message=message, summary=summary, warnings=warnings)


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """The summary of a finished run directory."""
    data = rundir.read_json(Path(run_dir) / rundir.SUMMARY)
    if not isinstance(data, dict):
        raise ConfigError(f"{run_dir}: summary.json is not an object")
    return data
