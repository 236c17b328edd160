"""The JSON records of a run directory, as versioned pydantic models (format version 1).

* ``config.json`` (:class:`RunConfigRecord`): what was asked for: the run's configuration, plus
  ``factors`` (named settings of the run, for experiments) and ``tags``;
* ``manifest.json`` (:class:`RunManifest`): what happened: versions, host, backend, schedule,
  times, status, warnings;
* ``summary.json`` (:class:`RunSummary`): the figures, computed from the raw samples.

One naming scheme for times: every group of times is an object ``<what>_ms`` (``latency_ms``,
``service_ms``, ``lateness_ms``) with the keys ``mean, p50, p90, p99, p999, max``
(:class:`Times`), at the top of the summary and in each ``operations.<op>`` and ``types.<id>``.
Flat tables (``timeseries.parquet``, the runs catalog, ``compare --json``) spell the same figure
``<what>_<stat>_ms`` (:meth:`GroupStats.flat`).

Every record carries ``format`` and ``version``. Files written before records were versioned (no
``version``) still read: they are converted on the way in (:func:`_legacy_summary`). Unknown keys
of the top-level records are kept (writers record more facts than readers need). Writes are atomic
(a temporary file in the same directory, then ``os.replace``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, model_validator

from mimesisbench.errors import InputError

RECORD_VERSION: Final = 1
CONFIG_FORMAT: Final = "mimesisbench-run-config"
MANIFEST_FORMAT: Final = "mimesisbench-run-manifest"
SUMMARY_FORMAT: Final = "mimesisbench-run-summary"

CONFIG = "config.json"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"

#: the statistics of a group of times, in this order
TIME_STATS: tuple[str, ...] = ("mean", "p50", "p90", "p99", "p999", "max")
#: the groups of times: from the scheduled time to the end, from the actual start to the end, start behind schedule
TIME_GROUPS: tuple[str, ...] = ("latency", "service", "lateness")

#: a factor's value: a plain scalar
Scalar = bool | int | float | str


class RecordError(InputError):
    """A run record (config, manifest or summary) is unreadable or not of the expected shape."""


class _Nested(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Times(_Nested):
    """One group of times in milliseconds (None: no sample)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None


class GroupStats(_Nested):
    """The figures of one group of operations (one op, one file type, or all)."""

    issued: NonNegativeInt = 0
    succeeded: NonNegativeInt = 0
    failed: NonNegativeInt = 0
    errors: dict[str, NonNegativeInt] = Field(default_factory=dict, description="failed operations by outcome")
    throughput_ops_per_s: float | None = None
    latency_ms: Times = Field(default_factory=Times, description="end - scheduled time")
    service_ms: Times = Field(default_factory=Times, description="end - actual start")
    lateness_ms: Times = Field(default_factory=Times, description="actual start - scheduled time")

    def flat(self) -> dict[str, float | int | None]:
        """``issued, succeeded, failed, throughput_ops_per_s`` and ``<what>_<stat>_ms``."""
        out: dict[str, float | int | None] = {
            "issued": self.issued,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "throughput_ops_per_s": self.throughput_ops_per_s,
        }
        for group in TIME_GROUPS:
            times: Times = getattr(self, f"{group}_ms")
            for stat in TIME_STATS:
                out[f"{group}_{stat}_ms"] = getattr(times, stat)
        return out


#: the flat figure names of :meth:`GroupStats.flat`
FLAT_FIGURES: tuple[str, ...] = tuple(GroupStats().flat())


class _Record(BaseModel):
    """A top-level record: unknown keys are kept; ``version`` newer than this reader is refused."""

    model_config = ConfigDict(extra="allow", frozen=True)

    version: Literal[1] = RECORD_VERSION

    @model_validator(mode="before")
    @classmethod
    def _version(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data  # pydantic says it is not an object
        version = data.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > RECORD_VERSION:
            raise ValueError(f"version {version} is newer than this MimesisBench reads ({RECORD_VERSION}): upgrade it")
        return data


class RunConfigRecord(_Record):
    """``config.json``: the run's configuration (every ``RunConfig`` field is kept as written)."""

    format: Literal["mimesisbench-run-config"] = CONFIG_FORMAT
    schedule: str | None = None
    backend: str | None = None
    time_scale: float = 1.0
    factors: dict[str, Scalar] = Field(default_factory=dict, description="named settings of the run (experiments)")
    tags: list[str] = Field(default_factory=list, description="free labels of the run")


class ScheduleRef(BaseModel):
    """The schedule a run replayed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str | None = None
    events: NonNegativeInt | None = None
    namespace_hash: str | None = None
    manifest: dict[str, Any] = Field(default_factory=dict, description="the schedule's own manifest")


class RunManifest(_Record):
    """``manifest.json``: facts about the run (written at start, updated at the end)."""

    format: Literal["mimesisbench-run-manifest"] = MANIFEST_FORMAT
    tool: str = "mimesisbench"
    versions: dict[str, Any] = Field(default_factory=dict)
    host: dict[str, Any] = Field(default_factory=dict)
    backend: dict[str, Any] | str | None = None
    schedule: ScheduleRef = Field(default_factory=ScheduleRef)
    profile_hash: str | None = None
    seed: int | None = None
    started_at: str | None = None
    start_barrier_utc: str | None = None
    ended_at: str | None = None
    complete: bool = False
    status: str = "unknown"
    message: str | None = None
    warnings: list[str] = Field(default_factory=list)


class RunSummary(_Record):
    """``summary.json``: overall figures, per operation (``operations``) and per file type (``types``)."""

    format: Literal["mimesisbench-run-summary"] = SUMMARY_FORMAT
    complete: bool = False
    status: str | None = None
    message: str | None = None
    time_scale: float | None = None
    throughput_ops_per_s: float = 0.0
    active_time_ms: float = 0.0
    operations_scheduled: NonNegativeInt = 0
    operations_issued: NonNegativeInt = 0
    operations_succeeded: NonNegativeInt = 0
    operations_failed: NonNegativeInt = 0
    outcomes: dict[str, NonNegativeInt] = Field(default_factory=dict, description="operations by outcome, ok included")
    latency_ms: Times = Field(default_factory=Times)
    service_ms: Times = Field(default_factory=Times)
    lateness_ms: Times = Field(default_factory=Times)
    operations: dict[str, GroupStats] = Field(default_factory=dict)
    types: dict[str, GroupStats] = Field(default_factory=dict)
    operations_skipped: NonNegativeInt = Field(default=0, description="scheduled operations the backend cannot perform (not issued)")
    skipped: dict[str, NonNegativeInt] = Field(
        default_factory=dict, description="per command: scheduled operations the backend skipped (not issued)"
    )
    mapped: dict[str, str] = Field(
        default_factory=dict,
        description="per command the backend performs as a nearest operation: that operation's label "
        "(counted in operations under the command's own label)",
    )
    workers: list[dict[str, Any]] = Field(default_factory=list, description="how each worker ended")
    data: dict[str, Any] | None = Field(
        default=None,
        description="the data jobs run beside the replay: per job and op, calls, bytes, span, bandwidth "
        "(MiB/s) and call latency (ms) (datajobs.trace.data_summary); None without data jobs",
    )
    mode: str | None = Field(default=None, description="paced (open loop) or as-fast-as-possible")
    cost: dict[str, Any] | None = Field(
        default=None,
        description="CPU the client and the managed server spent over the replay, per operation, and which "
        "of them set the pace (run.client_cost)",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" not in data:
            return _legacy_summary(data)
        return data

    def overall(self) -> GroupStats:
        """The all-operations figures in the shape of ``operations.<op>``."""
        errors = {k: v for k, v in self.outcomes.items() if k != "ok"}
        return GroupStats(
            issued=self.operations_issued,
            succeeded=self.operations_succeeded,
            failed=self.operations_failed,
            errors=errors,
            throughput_ops_per_s=self.throughput_ops_per_s,
            latency_ms=self.latency_ms,
            service_ms=self.service_ms,
            lateness_ms=self.lateness_ms,
        )


# -- files written before the records were versioned ----------------------------------------------
_LEGACY_GROUP_KEYS = {
    "latency_ms": {s: f"{s}_ms" for s in TIME_STATS},
    "service_ms": {s: f"service_{s}_ms" for s in TIME_STATS},
}


def _legacy_times(value: Any) -> Any:
    """``{mean_ms, p50_ms, ...}`` (the old top-level latency) or ``{mean, p50, ...}`` -> :class:`Times` keys."""
    if not isinstance(value, dict):
        return value
    return {k.removesuffix("_ms"): v for k, v in value.items() if k.removesuffix("_ms") in TIME_STATS}


def _legacy_group(stats: Any) -> Any:
    """Old per-op figures (flat ``p50_ms``, ``service_p99_ms``; nested lateness) -> :class:`GroupStats`."""
    if not isinstance(stats, dict):
        return stats
    out = {k: stats[k] for k in ("issued", "succeeded", "failed", "errors", "throughput_ops_per_s") if k in stats}
    for group, names in _LEGACY_GROUP_KEYS.items():
        if isinstance(stats.get(group), dict):
            out[group] = _legacy_times(stats[group])
        else:
            out[group] = {stat: stats[key] for stat, key in names.items() if key in stats}
    out["lateness_ms"] = _legacy_times(stats.get("lateness_ms") or {})
    return out


def _legacy_summary(data: dict[str, Any]) -> dict[str, Any]:
    """An unversioned ``summary.json`` converted to version 1."""
    out = dict(data)
    for group in ("latency_ms", "service_ms", "lateness_ms"):
        if group in out:
            out[group] = _legacy_times(out[group])
    for key in ("operations", "types"):
        if isinstance(out.get(key), dict):
            out[key] = {str(name): _legacy_group(stats) for name, stats in out[key].items()}
    out["version"] = RECORD_VERSION
    return out


# -- reading and writing ------------------------------------------------------------------------
R = TypeVar("R", bound=_Record)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


def parse_record(model: type[R], data: Any, source: str | Path) -> R:
    """``data`` as ``model``; :class:`RecordError` naming ``source`` and the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RecordError(f"{source}: {_problem(exc)}") from None


def read_record(model: type[R], path: Path) -> R:
    """Read and validate one record file (unversioned files are converted)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise RecordError(f"{path}: empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise RecordError(f"{path}: JSON nested too deeply") from None
    return parse_record(model, data, path)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_json_atomic(path: Path, data: Any) -> Path:
    """Readable JSON (NaN and infinity become null), written to a temporary file then renamed."""
    text = json.dumps(_clean(data), indent=2) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_record(path: Path, record: _Record) -> Path:
    """Write a record atomically."""
    return write_json_atomic(path, record.model_dump(mode="json"))


def _as(model: type[R], data: R | dict[str, Any]) -> R:
    return data if isinstance(data, model) else model.model_validate(data)


def write_config(run_dir: Path, data: RunConfigRecord | dict[str, Any]) -> Path:
    return write_record(run_dir / CONFIG, _as(RunConfigRecord, data))


def write_manifest(run_dir: Path, data: RunManifest | dict[str, Any]) -> Path:
    return write_record(run_dir / MANIFEST, _as(RunManifest, data))


def write_summary(run_dir: Path, data: RunSummary | dict[str, Any]) -> Path:
    return write_record(run_dir / SUMMARY, _as(RunSummary, data))
