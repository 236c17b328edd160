"""Running an experiment: its design's runs in their randomized order, each a ``run`` of the
schedule (generated per design point from a profile when generate options are factors), the
responses of each appended to ``results.csv`` as soon as it ends. An experiment directory holds:

- ``experiment.toml``: the file as given (a rerun checks it is the same);
- ``design.csv``: every run's order, design point, replication and factor levels;
- ``schedules/``: one schedule per distinct set of generate options;
- ``runs/``: the run directories;
- ``results.csv``: per finished run its order, levels, status, run directory and responses;
- ``sessions.csv``: each ``experiment run`` that worked in it: its start and end (UTC), wall
  seconds and runs finished (their sum is the experiment's wall time, namespace builds included);
- with ``[capacity]``, a capacity search per run instead (``runs/capacity-<order>/``: its trials'
  run directories and ``capacity.json``; ``study.capacity_point``), every trial started from the
  same state as a run would be;
- with ``[prometheus]``, ``runs/<run>/prometheus.parquet``: the samples that server stored while
  the run went on (``monitoring.prometheus_export``).

Interrupted, it resumes: runs already in ``results.csv`` are not run again. On a managed HDFS
(``[managed_hdfs]``) and on a plain ``posix:`` base every run starts from the same state: each
schedule's namespace is built once and checkpointed, and each run restores that checkpoint (on
the HDFS with its own settings; ``_Cluster``, ``study.resets.PosixReset``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from mimesisbench.analysis.designs import design_by_resolution, fractional_factorial, full_factorial, random_run_order
from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import ConfigError, RunIncomplete
from mimesisbench.results.load import load_run
from mimesisbench.run.config import RunConfig
from mimesisbench.schedule import load_schedule
from mimesisbench.study.capacity_point import measure_capacity
from mimesisbench.study.experiment_file import Experiment, Level, load_experiment
from mimesisbench.study.resets import PosixReset, resets_by_copy
from mimesisbench.units import parse_duration_ms, parse_duration_s, parse_rate

if TYPE_CHECKING:
    from mimesisbench.hdfs.config import LocalHdfsConfig

FILE = "experiment.toml"
DESIGN = "design.csv"
RESULTS = "results.csv"
SERIES = "prometheus.parquet"
SESSIONS = "sessions.csv"


@dataclass(frozen=True)
class PlannedRun:
    """One run of the design: its place in the order, design point, replication, and the level
    of each factor (by name)."""

    order: int
    point: int
    replication: int
    levels: dict[str, Level]


def plan(exp: Experiment) -> list[PlannedRun]:
    """The design's runs in the randomized order drawn from the experiment's seed."""
    names = [f.name for f in exp.factors]
    if exp.design.kind == "sweep":
        factor = exp.factors[0]
        points = [{factor.name: level} for level in factor.levels]
    else:
        if exp.design.kind == "fractional":
            design = fractional_factorial(names, exp.design.generators or "")
        elif exp.design.kind == "resolution":
            design = design_by_resolution(names, exp.design.resolution or 0)
        else:
            design = full_factorial(names)
        points = [{f.name: f.levels[0 if sign < 0 else 1] for f, sign in zip(exp.factors, row)}
                  for row in design.matrix.tolist()]
    order = random_run_order(len(points), exp.replications, exp.seed)
    return [PlannedRun(order=i + 1, point=p + 1, replication=r + 1, levels=points[p])
            for i, (p, r) in enumerate(order.tolist())]


def _options(exp: Experiment, levels: dict[str, Level], kind: str) -> dict[str, Level]:
    out = dict(exp.generate if kind == "generate" else exp.run)
    out.update({f.option: levels[f.name] for f in exp.factors if f.kind == kind})
    return out


def run_config(exp: Experiment, schedule: Path, levels: dict[str, Level], out: Path, reuse: bool,
               backend: str | None = None, hdfs_workdir: str | None = None) -> RunConfig:
    """The run of one design point: the experiment's run options with the factors' levels
    (``backend``: the managed cluster's URL, when the experiment starts one)."""
    o = _options(exp, levels, "run")
    prom = exp.prometheus
    url = backend or exp.backend or ""
    simnn = {f.option: levels[f.name] for f in exp.factors if f.kind == "simnn"}
    if simnn:  # the simulated NameNode's settings of this design point, in its URL
        from mimesisbench.backends.simnn import with_options

        url = with_options(url, simnn)
    return RunConfig(
        schedule=str(schedule), backend=url, out=str(out), reuse=reuse,
        hdfs_workdir=hdfs_workdir,
        metrics_port=prom.metrics_port if prom is not None else None,
        metrics_linger_s=parse_duration_s(prom.linger, option="linger") if prom is not None else 0.0,
        rate=parse_rate(str(o["rate"]), option="rate") if "rate" in o else None,
        time_scale=float(o.get("time_scale", 1.0)),
        workers=int(o["workers"]) if "workers" in o else None,
        concurrency=int(o["concurrency"]) if "concurrency" in o else None,
    )


def _generate_options(o: dict[str, Level]) -> tuple[Any, int]:
    from mimesisbench.synth.options import GenerateOptions, parse_types

    options = GenerateOptions(
        scale_files=float(o.get("scale_files", 1.0)), time_scale=float(o.get("time_scale", 1.0)),
        span_scale=float(o.get("span_scale", 1.0)),
        duration_ms=parse_duration_ms(str(o["duration"]), option="duration") if "duration" in o else None,
        flat=_flag(o.get("flat", False)),
        types=parse_types(str(o["types"]), option="types") if "types" in o else None,
    )
    return options, int(o.get("seed", 1))


def schedule_for(exp: Experiment, exp_dir: Path, levels: dict[str, Level], base: Path) -> Path:
    """The schedule of a design point: the experiment's own, or the profile generated with the
    point's generate options (once per distinct set, under ``schedules/``)."""
    if exp.schedule is not None:
        return (base / exp.schedule).resolve() if not Path(exp.schedule).is_absolute() else Path(exp.schedule)
    from mimesisbench.profile.io import load_profile
    from mimesisbench.synth.pipeline import generate_to

    o = _options(exp, levels, "generate")
    key = hashlib.sha256(json.dumps(o, sort_keys=True, default=str).encode()).hexdigest()[:12]
    target = exp_dir / "schedules" / key
    if not (target / "manifest.json").exists():
        options, seed = _generate_options(o)
        generate_to(load_profile(_profile_path(exp.profile or "", base)), target, options, seed=seed)
    return target


def _profile_path(text: str, base: Path) -> Path:
    """The experiment's profile: ``demo`` (the built-in one) or a path relative to the file's folder."""
    from mimesisbench.profile.io import resolve_profile_arg

    path = Path(text) if Path(text).is_absolute() else base / text
    return path if path.exists() else resolve_profile_arg(text)


def cluster_config(exp: Experiment, levels: dict[str, Level], base: Path, exp_dir: Path) -> LocalHdfsConfig:
    """The managed HDFS of one design point: the experiment's settings with the hdfs factors' levels."""
    from mimesisbench.hdfs.config import LocalHdfsConfig

    m = exp.managed_hdfs
    assert m is not None  # noqa: S101 - callers check
    named: dict[str, Any] = {"handler_count": m.handler_count, "fslock_fair": m.fslock_fair, "audit": m.audit}
    extra = dict(m.settings)
    for f in exp.factors:
        if f.kind != "hdfs":
            continue
        value = levels[f.name]
        if f.option in named:
            named[f.option] = _flag(value) if f.option != "handler_count" else int(value)
        else:
            extra[f.option] = str(value).lower() if isinstance(value, bool) else str(value)
    workdir = exp_dir / "hdfs" if m.workdir is None else Path(m.workdir) if Path(m.workdir).is_absolute() else base / m.workdir
    return LocalHdfsConfig(workdir=workdir, heap=m.heap, extra=extra, **named)


def _flag(value: Level) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false", "on", "off", "1", "0"):
        raise ConfigError(f"{value!r} is not a true/false level")
    return text in ("true", "on", "1")


class _Cluster:
    """The experiment's managed HDFS: the namespace of each schedule built once below its own base
    and checkpointed, then every run started from its schedule's checkpoint with its own settings."""

    def __init__(self, exp: Experiment, base: Path, exp_dir: Path, announce: Callable[[str], None]) -> None:
        from mimesisbench.hdfs.cluster import LocalHdfs

        self.exp, self.base, self.exp_dir, self.announce = exp, base, exp_dir, announce
        self.first = LocalHdfs(cluster_config(exp, {f.name: f.levels[0] for f in exp.factors}, base, exp_dir))
        self.was_running = self.first.is_running()

    def start_run(self, schedule: Path, key: str, levels: dict[str, Level]) -> tuple[str, str]:
        """Restore the schedule's checkpoint (built first if missing) with the run's settings;
        returns the backend URL and the cluster's working directory."""
        from mimesisbench.hdfs.cluster import LocalHdfs
        from mimesisbench.run.coordinator import prepare_namespace

        m = self.exp.managed_hdfs
        assert m is not None  # noqa: S101 - only made for a managed HDFS
        cluster = LocalHdfs(cluster_config(self.exp, levels, self.base, self.exp_dir))
        name = f"schedule-{key}"
        base_url = f"{m.base.rstrip('/')}/{key}"  # each schedule's namespace below its own base
        if (cluster.checkpoint_dir(name) / "name").is_dir():
            cluster.restore(name)
        else:  # the checkpoint restarts the cluster, with this run's settings, in the state it keeps
            self.announce(f"building the namespace of schedule {key} once, then a checkpoint of it")
            cluster.up()
            prepare_namespace(RunConfig(schedule=str(schedule), backend=cluster.url + base_url,
                                        hdfs_workdir=str(cluster.workdir)))
            cluster.checkpoint(name)
        return cluster.url + base_url, str(cluster.workdir)  # the URL read after the start: its port may change

    def close(self) -> None:
        if not self.was_running:
            self.first.down()


def _results(exp_dir: Path) -> pl.DataFrame | None:
    path = exp_dir / RESULTS
    return pl.read_csv(path, infer_schema=False) if path.exists() else None


def run_experiment(file: Path, exp_dir: Path, run: Callable[[RunConfig], Path],
                   announce: Callable[[str], None] = lambda _: None) -> pl.DataFrame:
    """Run (or resume) the experiment of ``file`` in ``exp_dir``; returns the results table."""
    exp = load_experiment(file)
    text = file.read_text(encoding="utf-8")
    exp_dir.mkdir(parents=True, exist_ok=True)
    kept = exp_dir / FILE
    if kept.exists() and kept.read_text(encoding="utf-8") != text:
        raise ConfigError(f"{exp_dir} holds another experiment ({kept} differs from {file}): give a new directory")
    atomic_write_text(kept, text)
    runs = plan(exp)
    names = [f.name for f in exp.factors]
    design_rows = [{"order": r.order, "point": r.point, "replication": r.replication,
                    **{n: str(r.levels[n]) for n in names}} for r in runs]
    atomic_write_text(exp_dir / DESIGN, pl.DataFrame(design_rows).write_csv())
    previous = _results(exp_dir)
    rows: list[dict[str, str]] = previous.to_dicts() if previous is not None else []
    done = {int(r["order"]) for r in rows}
    cluster = _Cluster(exp, file.parent, exp_dir, announce) if exp.managed_hdfs is not None else None
    tree = PosixReset(exp.backend or "", announce) if resets_by_copy(exp.backend) else None
    replayed = [bool(rows)]  # whether a run replayed here before (a backend without reset reuses what it left)
    session = _Session(exp_dir, len(rows))

    def config_for(r: PlannedRun, schedule: Path, key: str, out: Path) -> RunConfig:
        """A run of ``r``, its system reset to the state phase 1 left where the backend allows."""
        if cluster is not None:  # from the schedule's checkpoint, with the run's settings
            url, workdir = cluster.start_run(schedule, key, r.levels)
            return run_config(exp, schedule, r.levels, out, reuse=False, backend=url, hdfs_workdir=workdir)
        if tree is not None:  # from a copy of the tree phase 1 made
            return run_config(exp, schedule, r.levels, out, reuse=False, backend=tree.start_run(schedule, key))
        # on what the earlier runs left (the memory backend starts afresh each run)
        return run_config(exp, schedule, r.levels, out, reuse=replayed[0])

    def run_once(config: RunConfig) -> Path:
        run_dir = run(config)
        replayed[0] = True
        if load_run(run_dir).status == "interrupted":  # Ctrl-C or SIGTERM: stop here, resumable
            raise RunIncomplete(f"interrupted during the run in {run_dir}; run the experiment again to resume "
                                "(the finished runs are kept, this one runs again)")
        if exp.prometheus is not None:
            _archive_series(exp, run_dir, announce)
        return run_dir

    try:
        for r in runs:
            if r.order in done:
                continue
            schedule = schedule_for(exp, exp_dir, r.levels, file.parent)
            announce(f"run {r.order}/{len(runs)}: " + ", ".join(f"{n}={r.levels[n]}" for n in names))
            key = load_schedule(schedule).namespace_hash()[:12]  # the namespace phase 1 builds
            if exp.capacity is None:
                rows.append(_result_row(exp, r, names, run_once(config_for(r, schedule, key, exp_dir / "runs"))))
            else:  # a capacity search: every trial (and the check) from the same state
                point_dir = exp_dir / "runs" / f"capacity-{r.order:04d}"
                point = measure_capacity(exp.capacity, schedule, partial(config_for, r, schedule, key),
                                         run_once, point_dir, announce)
                rows.append(_row(exp, r, names, "complete", point_dir, point.responses()))
            atomic_write_text(exp_dir / RESULTS, pl.DataFrame(rows).write_csv())  # after every run: nothing lost
    finally:
        if cluster is not None:
            cluster.close()
        session.close(len(rows))
    return pl.DataFrame(rows)


class _Session:
    """One ``experiment run`` in a directory, appended to ``sessions.csv`` when it ends (also when
    interrupted: the runs it finished are in ``results.csv``)."""

    def __init__(self, exp_dir: Path, finished: int) -> None:
        from mimesisbench.run.clock import iso_utc

        self.exp_dir, self.finished = exp_dir, finished
        self.started, self.t0 = iso_utc(), time.monotonic()

    def close(self, finished: int) -> None:
        from mimesisbench.run.clock import iso_utc

        path = self.exp_dir / SESSIONS
        old = pl.read_csv(path, infer_schema=False).to_dicts() if path.exists() else []
        old.append({"started_at": self.started, "ended_at": iso_utc(), "wall_s": f"{time.monotonic() - self.t0:.1f}",
                    "runs_finished": str(finished - self.finished)})
        atomic_write_text(path, pl.DataFrame(old).write_csv())


def wall_time_s(exp_dir: Path) -> float:
    """The experiment's wall time so far: the sum of its sessions' (0 before any)."""
    path = exp_dir / SESSIONS
    return float(pl.read_csv(path, infer_schema=False)["wall_s"].cast(pl.Float64).sum()) if path.exists() else 0.0


def _archive_series(exp: Experiment, run_dir: Path, announce: Callable[[str], None]) -> None:
    """The Prometheus samples of the run's window (its start to now, the linger included) into the
    run directory; a server that cannot answer costs the archive of this run, not the experiment."""
    from datetime import UTC, datetime

    from mimesisbench.errors import MimesisError
    from mimesisbench.monitoring.prometheus_export import export_window

    prom = exp.prometheus
    started = load_run(run_dir).started_at
    if prom is None or started is None:
        return
    try:
        done = export_window(prom.url, datetime.fromisoformat(started), datetime.now(UTC),
                             run_dir / SERIES, match=prom.match)
    except MimesisError as e:
        announce(f"warning: the run's Prometheus series are not archived: {e}")
        return
    announce(f"archived {done.samples} samples of {done.series} series from {prom.url}")


def _result_row(exp: Experiment, r: PlannedRun, names: list[str], run_dir: Path) -> dict[str, str]:
    """A finished run's line of ``results.csv``: its place, levels, status, directory and responses."""
    data = load_run(run_dir)
    figures = data.overall.flat() if data.has_results else {}
    return _row(exp, r, names, data.status, run_dir, {resp: figures.get(resp) for resp in exp.responses})


def _row(exp: Experiment, r: PlannedRun, names: list[str], status: str, run_dir: Path,
         figures: dict[str, Any]) -> dict[str, str]:
    return {"order": str(r.order), "point": str(r.point), "replication": str(r.replication),
            **{n: str(r.levels[n]) for n in names}, "status": status, "run_dir": str(run_dir),
            **{resp: "" if figures.get(resp) is None else repr(float(figures[resp] or 0.0)) for resp in exp.responses}}


def status(exp_dir: Path) -> dict[str, Any]:
    """How far an experiment directory is: runs planned, finished, and their statuses."""
    kept = exp_dir / FILE
    if not kept.exists():
        raise ConfigError(f"{exp_dir}: not an experiment directory (no {FILE})")
    exp = load_experiment(kept)
    planned = len(plan(exp))
    results = _results(exp_dir)
    statuses = results["status"].value_counts().rows() if results is not None and results.height else []
    return {"name": exp.name, "planned": planned, "finished": 0 if results is None else results.height,
            "statuses": {str(s): int(n) for s, n in statuses}, "wall_s": wall_time_s(exp_dir)}
