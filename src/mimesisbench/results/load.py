"""A small typed reader of run directories: the one place that knows their file and column names.

Reports, comparisons and the runs catalog read runs only through :func:`load_run` and
:class:`RunData`, so a renamed file or column is adapted here and nowhere else. The writer is
``mimesisbench.results.rundir`` / ``samples`` / ``summary`` (the coordinator); names are taken
from there (``datajobs.trace`` for the data jobs' calls). Reading is lazy: JSON files are read at
load time (they are small), samples, time series and data calls only when asked for, and samples
and data calls as a ``polars.LazyFrame`` with the needed columns only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench.errors import InputError
from mimesisbench.results import rundir
from mimesisbench.results.records import GroupStats, RecordError, RunConfigRecord, RunManifest, RunSummary, read_record

#: column names of ``samples.parquet`` (see ``mimesisbench.results.samples.SCHEMA``)
COL_WORKER = "worker"
COL_TYPE = "type"
COL_OP = "op"
COL_SCHEDULED = "scheduled_us"
COL_START = "start_us"
COL_END = "end_us"
COL_OUTCOME = "outcome"
SAMPLE_COLUMNS: tuple[str, ...] = (COL_WORKER, COL_TYPE, COL_OP, COL_SCHEDULED, COL_START, COL_END, COL_OUTCOME)
OUTCOME_OK = "ok"

#: columns of ``timeseries.parquet`` written by the client side (``results.summary.timeseries``);
#: any other numeric column is treated as a server-side series (e.g. NameNode JMX figures)
TS_SECOND = "second"
TS_OP = "op"
TS_CLIENT_COLUMNS: frozenset[str] = frozenset(
    {
        "second",
        "op",
        "ops",
        "throughput_ops_per_s",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "latency_max_ms",
        "lateness_p99_ms",
    }
)
#: the op label of the all-operations rows in ``timeseries.parquet``
TS_ALL = "all"

#: columns of ``data_calls.parquet`` (see ``mimesisbench.datajobs.trace.SCHEMA``) that readers use
DATA_JOB = "job"
DATA_LAYOUT = "layout"
DATA_TASK = "task"
DATA_OP = "op"
DATA_OFFSET = "offset"
DATA_DONE = "done"
DATA_START = "start_ns"
DATA_END = "end_ns"
DATA_ERRNO = "errno"
DATA_COLUMNS: tuple[str, ...] = (DATA_JOB, DATA_LAYOUT, DATA_TASK, DATA_OP, DATA_OFFSET, DATA_DONE, DATA_START, DATA_END, DATA_ERRNO)

#: Parquet/CSV files of a run directory that are not client-side results: candidates for server series
KNOWN_FILES: frozenset[str] = frozenset(
    {rundir.CONFIG, rundir.MANIFEST, rundir.SAMPLES, rundir.TIMESERIES, rundir.SUMMARY, rundir.DATA_CALLS}
)


class RunDirError(InputError):
    """A path given as a run directory does not exist, is not one, or one of its files is damaged."""


class NoRunsError(InputError):
    """No run directory was found where runs were looked for."""


def is_run_dir(path: Path) -> bool:
    """A run directory holds results (a summary or samples), or a manifest and a configuration
    (a run that ended before writing any results, e.g. refused or failed in phase 1)."""
    if (path / rundir.SUMMARY).is_file() or (path / rundir.SAMPLES).is_file():
        return True
    return (path / rundir.MANIFEST).is_file() and (path / rundir.CONFIG).is_file()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _parquet_schema(path: Path) -> dict[str, pl.DataType]:
    try:
        return dict(pl.read_parquet_schema(path))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise RunDirError(f"{path}: not a readable Parquet file ({_first_line(exc)})") from None


def _is_label(dtype: pl.DataType) -> bool:
    return dtype == pl.String or dtype == pl.Categorical or isinstance(dtype, pl.Enum)


#: what each sample column must be: integer, number or label (string, categorical, enum)
_SAMPLE_KINDS: dict[str, str] = {
    COL_WORKER: "integer",
    COL_TYPE: "integer",
    COL_OP: "label",
    COL_SCHEDULED: "number",
    COL_START: "number",
    COL_END: "number",
    COL_OUTCOME: "label",
}


def _kind_ok(dtype: pl.DataType, kind: str) -> bool:
    if kind == "integer":
        return dtype.is_integer()
    if kind == "number":
        return dtype.is_numeric()
    return _is_label(dtype)


def _check_columns(path: Path, schema: dict[str, pl.DataType], kinds: dict[str, str], required: Iterable[str]) -> None:
    missing = [c for c in required if c not in schema]
    if missing:
        raise RunDirError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for name, kind in kinds.items():
        if name in schema and not _kind_ok(schema[name], kind):
            raise RunDirError(f"{path}: column {name} is {schema[name]}, expected a{'n' if kind[0] == 'i' else ''} {kind}")


def check_samples(path: Path) -> None:
    """Raise :class:`RunDirError` unless ``path`` is a samples table with the expected columns."""
    _check_columns(path, _parquet_schema(path), _SAMPLE_KINDS, SAMPLE_COLUMNS)


def check_timeseries(path: Path) -> None:
    """Raise :class:`RunDirError` unless ``path`` is a per-second table with the expected columns."""
    kinds = {TS_SECOND: "number", TS_OP: "label"}
    kinds.update({c: "number" for c in TS_CLIENT_COLUMNS if c not in kinds})
    _check_columns(path, _parquet_schema(path), kinds, (TS_SECOND, TS_OP))


#: what each data-call column must be (a damaged or foreign file is named at load, not mid-report)
_DATA_KINDS: dict[str, str] = {
    DATA_JOB: "label",
    DATA_LAYOUT: "label",
    DATA_TASK: "integer",
    DATA_OP: "label",
    DATA_OFFSET: "number",
    DATA_DONE: "number",
    DATA_START: "number",
    DATA_END: "number",
    DATA_ERRNO: "integer",
}


def check_data_calls(path: Path) -> None:
    """Raise :class:`RunDirError` unless ``path`` is a data-call table with the expected columns."""
    _check_columns(path, _parquet_schema(path), _DATA_KINDS, DATA_COLUMNS)


def collect(frames: Sequence[pl.LazyFrame], source: Path) -> list[pl.DataFrame]:
    """``pl.collect_all`` with damage in ``source`` (found only when its pages are read) as :class:`RunDirError`."""
    try:
        return pl.collect_all(list(frames))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise RunDirError(f"{source}: cannot be read ({_first_line(exc)})") from None


@dataclass(frozen=True)
class RunData:
    """One run directory: its records and where its tables are.

    ``has_results`` is False for a run that ended before writing any (refused, or failed before
    the replay): its ``summary`` is then empty.
    """

    path: Path
    config: RunConfigRecord
    manifest: RunManifest
    summary: RunSummary
    extra_files: tuple[Path, ...] = field(default=())
    has_results: bool = True

    # -- identity and facts -------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def started_at(self) -> str | None:
        return self.manifest.started_at

    @property
    def ended_at(self) -> str | None:
        return self.manifest.ended_at

    @property
    def complete(self) -> bool:
        if not self.has_results:
            return False
        return self.summary.complete and self.manifest.complete

    @property
    def status(self) -> str:
        status = self.manifest.status
        if status in ("", "unknown") and self.summary.status:
            status = self.summary.status
        if status in ("", "unknown") and self.complete:
            return "complete"
        return status or "unknown"

    @property
    def message(self) -> str:
        return str(self.summary.message or self.manifest.message or "")

    @property
    def backend(self) -> str:
        backend = self.manifest.backend
        if isinstance(backend, dict):
            return str(backend.get("url") or backend.get("scheme") or "?")
        return str(backend or self.config.backend or "?")

    @property
    def backend_scheme(self) -> str:
        backend = self.manifest.backend
        scheme = backend.get("scheme") if isinstance(backend, dict) else None
        return str(scheme) if scheme else self.backend.split(":", 1)[0]

    @property
    def schedule_hash(self) -> str | None:
        return self.manifest.schedule.namespace_hash or None

    @property
    def profile_hash(self) -> str | None:
        value = self.manifest.profile_hash or _get(self.manifest.schedule.manifest, "profile", "hash")
        return str(value) if value else None

    @property
    def profile_name(self) -> str | None:
        value = _get(self.manifest.schedule.manifest, "profile", "name")
        return str(value) if value else None

    @property
    def seed(self) -> int | None:
        return self.manifest.seed

    @property
    def time_scale(self) -> float:
        if "time_scale" not in self.config.model_fields_set and self.summary.time_scale is not None:
            return self.summary.time_scale
        return self.config.time_scale

    @property
    def factors(self) -> dict[str, bool | int | float | str]:
        return self.config.factors

    @property
    def tags(self) -> list[str]:
        return self.config.tags

    @property
    def window_ms(self) -> float | None:
        """The schedule's window as replayed (time scale applied), or None when unknown or 0."""
        window = self.manifest.schedule.manifest.get("window_ms")
        if not isinstance(window, (int, float)) or isinstance(window, bool) or window <= 0 or self.time_scale <= 0:
            return None
        return float(window) * self.time_scale

    @property
    def host(self) -> dict[str, Any]:
        return self.manifest.host

    @property
    def versions(self) -> dict[str, Any]:
        return self.manifest.versions

    @property
    def warnings(self) -> list[str]:
        """The manifest's warnings plus what a reader must not miss (incomplete, failures)."""
        out = [w for w in self.manifest.warnings if w]
        if not self.complete:
            head = f"run INCOMPLETE (status {self.status})"
            if self.message and self.message not in out:
                head += f": {self.message}"
            out.insert(0, head)
        return out

    # -- figures from summary.json ------------------------------------------------------------
    @property
    def throughput(self) -> float:
        return self.summary.throughput_ops_per_s

    @property
    def operations(self) -> dict[str, GroupStats]:
        return self.summary.operations

    @property
    def types(self) -> dict[str, GroupStats]:
        return self.summary.types

    @property
    def overall(self) -> GroupStats:
        """The all-operations figures in the same shape as ``operations.<op>``."""
        return self.summary.overall()

    def op_figures(self, op: str) -> GroupStats | None:
        """``operations.<op>`` or, for ``all``, the overall figures; None when the op did not occur."""
        if op == TS_ALL:
            return self.overall
        return self.operations.get(op)

    # -- tables ---------------------------------------------------------------------------------
    @property
    def samples_path(self) -> Path:
        return self.path / rundir.SAMPLES

    @property
    def timeseries_path(self) -> Path:
        return self.path / rundir.TIMESERIES

    @property
    def has_samples(self) -> bool:
        return self.samples_path.is_file()

    def scan_samples(self, columns: Sequence[str] = SAMPLE_COLUMNS) -> pl.LazyFrame:
        """The raw samples, lazily, with the op and outcome as strings (collect with :func:`collect`)."""
        return self._scan(self.samples_path, "the run wrote no samples", columns, (COL_OP, COL_OUTCOME))

    @property
    def data_calls_path(self) -> Path:
        return self.path / rundir.DATA_CALLS

    @property
    def has_data_calls(self) -> bool:
        """The run had data jobs and wrote their calls (``run --data-job``)."""
        return self.data_calls_path.is_file()

    def scan_data_calls(self, columns: Sequence[str] = DATA_COLUMNS) -> pl.LazyFrame:
        """The data jobs' calls, lazily (a long run holds millions: read only what is needed),
        with the labels as strings (collect with :func:`collect`)."""
        return self._scan(self.data_calls_path, "the run had no data jobs", columns, (DATA_JOB, DATA_LAYOUT, DATA_OP))

    def _scan(self, path: Path, why_missing: str, columns: Sequence[str], labels: Sequence[str]) -> pl.LazyFrame:
        """``columns`` of the Parquet file ``path`` of this run, lazily, its ``labels`` (categorical
        columns) as strings; ``RunDirError`` when it is missing or unreadable."""
        if not path.is_file():
            raise RunDirError(f"{self.path}: no {path.name} ({why_missing})")
        try:
            frame = pl.scan_parquet(path).select(list(columns))
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise RunDirError(f"{path}: cannot be read ({_first_line(exc)})") from None
        casts = [pl.col(c).cast(pl.String) for c in labels if c in columns]
        return frame.with_columns(casts) if casts else frame

    def timeseries(self) -> pl.DataFrame | None:
        if not self.timeseries_path.is_file():
            return None
        try:
            return pl.read_parquet(self.timeseries_path)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise RunDirError(f"{self.timeseries_path}: cannot be read ({_first_line(exc)})") from None


def _get(data: dict[str, Any], *keys: str) -> Any:
    cur: Any = data
    for key in keys:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _extra_files(path: Path) -> tuple[Path, ...]:
    try:
        entries = sorted(path.iterdir())
    except OSError as exc:
        raise RunDirError(f"{path}: cannot list ({exc.strerror})") from None
    found = [
        p
        for p in entries
        if p.is_file() and p.name not in KNOWN_FILES and p.suffix in (".parquet", ".csv") and not p.name.endswith(".tmp")
    ]
    return tuple(found)


def _record(model: type[Any], path: Path) -> Any:
    try:
        return read_record(model, path)
    except RecordError as exc:
        raise RunDirError(str(exc)) from None


def load_run(path: str | Path) -> RunData:
    """Read one run directory; raises :class:`RunDirError` naming the file and the problem."""
    run_path = Path(path)
    if not run_path.exists():
        raise RunDirError(f"{run_path}: no such run directory")
    if not run_path.is_dir():
        raise RunDirError(f"{run_path}: not a directory (give a run directory, e.g. runs/20260101T000000Z-abc123)")
    if not is_run_dir(run_path):
        hint = ""
        if any(True for _ in find_run_dirs(run_path, limit=1)):
            hint = " (it contains run directories: pass those, or use `mimesisbench runs` to list them)"
        raise RunDirError(f"{run_path}: not a run directory: expected {rundir.MANIFEST} and {rundir.SUMMARY}{hint}")
    manifest: RunManifest = _record(RunManifest, run_path / rundir.MANIFEST)
    config_path = run_path / rundir.CONFIG
    config: RunConfigRecord = _record(RunConfigRecord, config_path) if config_path.exists() else RunConfigRecord()
    extra = _extra_files(run_path)
    summary_path = run_path / rundir.SUMMARY
    has_samples = (run_path / rundir.SAMPLES).exists()
    if not summary_path.exists() and not has_samples:
        return RunData(run_path, config, manifest, RunSummary(), extra, has_results=False)
    summary: RunSummary = _record(RunSummary, summary_path)
    if has_samples:
        check_samples(run_path / rundir.SAMPLES)
    if (run_path / rundir.TIMESERIES).exists():
        check_timeseries(run_path / rundir.TIMESERIES)
    if (run_path / rundir.DATA_CALLS).exists():
        check_data_calls(run_path / rundir.DATA_CALLS)
    return RunData(run_path, config, manifest, summary, extra)


def _no_results(run: RunData) -> str:
    what = "was refused" if run.status == "refused" else f"ended ({run.status}) before writing any results"
    return f"{run.path}: run {run.run_id} {what}{': ' + run.message if run.message else ''}"


def load_runs(paths: Iterable[str | Path]) -> list[RunData]:
    """Runs to report on or compare: every one must have results."""
    runs = [load_run(p) for p in paths]
    if not runs:
        raise NoRunsError("no run directory given")
    for run in runs:
        if not run.has_results:
            raise RunDirError(_no_results(run))
    return runs


def find_run_dirs(root: str | Path, *, limit: int | None = None) -> list[Path]:
    """Run directories at or below ``root`` (sorted by path, which starts with the UTC start time)."""
    base = Path(root)
    found: list[Path] = []
    if not base.is_dir():
        return found
    stack = [base]
    while stack:
        current = stack.pop()
        if is_run_dir(current):
            found.append(current)
            if limit is not None and len(found) >= limit:
                break
            continue
        try:
            children = sorted((p for p in current.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True)
        except OSError:
            continue
        stack.extend(children)
    return sorted(found)
