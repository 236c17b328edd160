"""A small typed reader of run directories: the one place that knows their file and column names.

Reports, comparisons and the runs catalog read runs only through :func:`load_run` and
:class:`RunData`, so a renamed file or column is adapted here and nowhere else. The writer is
``mimesisbench.results.rundir`` / ``samples`` / ``summary`` (the coordinator); names are taken
from there. Reading is lazy: JSON files are read at load time (they are small), samples and time
series only when asked for, and samples as a ``polars.LazyFrame`` with the needed columns only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench.errors import InputError
from mimesisbench.results import rundir

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

#: Parquet/CSV files of a run directory that are not client-side results: candidates for server series
KNOWN_FILES: frozenset[str] = frozenset({rundir.CONFIG, rundir.MANIFEST, rundir.SAMPLES, rundir.TIMESERIES, rundir.SUMMARY})


class RunDirError(InputError):
    """A path given as a run directory does not exist or is not a MimesisBench run directory."""


class NoRunsError(InputError):
    """No run directory was found where runs were looked for."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return data


def is_run_dir(path: Path) -> bool:
    """A run directory has a manifest and at least a summary or samples."""
    return (path / rundir.MANIFEST).is_file() and (
        (path / rundir.SUMMARY).is_file() or (path / rundir.SAMPLES).is_file()
    )


def _get(data: dict[str, Any], *keys: str) -> Any:
    cur: Any = data
    for key in keys:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


@dataclass(frozen=True)
class RunData:
    """One run directory: its JSON documents and where its tables are."""

    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]
    summary: dict[str, Any]
    extra_files: tuple[Path, ...] = field(default=())

    # -- identity and facts -------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def started_at(self) -> str | None:
        value = self.manifest.get("started_at")
        return str(value) if value is not None else None

    @property
    def ended_at(self) -> str | None:
        value = self.manifest.get("ended_at")
        return str(value) if value is not None else None

    @property
    def complete(self) -> bool:
        if "complete" in self.summary:
            return bool(self.summary["complete"]) and bool(self.manifest.get("complete", True))
        return bool(self.manifest.get("complete", False))

    @property
    def status(self) -> str:
        return str(self.manifest.get("status") or self.summary.get("status") or ("complete" if self.complete else "unknown"))

    @property
    def backend(self) -> str:
        backend = self.manifest.get("backend")
        if isinstance(backend, dict):
            return str(backend.get("url") or backend.get("scheme") or "?")
        return str(backend or self.config.get("backend") or "?")

    @property
    def backend_scheme(self) -> str:
        scheme = _get(self.manifest, "backend", "scheme")
        return str(scheme) if scheme else self.backend.split(":", 1)[0]

    @property
    def schedule_hash(self) -> str | None:
        value = _get(self.manifest, "schedule", "namespace_hash")
        return str(value) if value else None

    @property
    def profile_hash(self) -> str | None:
        value = self.manifest.get("profile_hash") or _get(self.manifest, "schedule", "manifest", "profile", "hash")
        return str(value) if value else None

    @property
    def profile_name(self) -> str | None:
        value = _get(self.manifest, "schedule", "manifest", "profile", "name")
        return str(value) if value else None

    @property
    def seed(self) -> int | None:
        value = self.manifest.get("seed")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def time_scale(self) -> float:
        value = self.config.get("time_scale", self.summary.get("time_scale", 1.0))
        return float(value) if isinstance(value, (int, float)) else 1.0

    @property
    def window_ms(self) -> float | None:
        """The schedule's window as replayed (time scale applied), or None when unknown or 0."""
        window = _get(self.manifest, "schedule", "manifest", "window_ms")
        if not isinstance(window, (int, float)) or window <= 0 or self.time_scale <= 0:
            return None
        return float(window) * self.time_scale

    @property
    def host(self) -> dict[str, Any]:
        host = self.manifest.get("host")
        return host if isinstance(host, dict) else {}

    @property
    def versions(self) -> dict[str, Any]:
        versions = self.manifest.get("versions")
        return versions if isinstance(versions, dict) else {}

    @property
    def warnings(self) -> list[str]:
        """The manifest's warnings plus what a reader must not miss (incomplete, failures)."""
        out = [str(w) for w in self.manifest.get("warnings") or [] if w]
        if not self.complete:
            message = str(self.summary.get("message") or self.manifest.get("message") or "")
            head = f"run INCOMPLETE (status {self.status})"
            if message and message not in out:
                head += f": {message}"
            out.insert(0, head)
        return out

    # -- figures from summary.json ------------------------------------------------------------
    @property
    def throughput(self) -> float:
        return float(self.summary.get("throughput_ops_per_s") or 0.0)

    @property
    def operations(self) -> dict[str, dict[str, Any]]:
        ops = self.summary.get("operations")
        return ops if isinstance(ops, dict) else {}

    @property
    def types(self) -> dict[str, dict[str, Any]]:
        types = self.summary.get("types")
        return types if isinstance(types, dict) else {}

    @property
    def overall(self) -> dict[str, Any]:
        """The all-operations figures in the same shape as ``operations.<op>``."""
        lat = self.summary.get("latency_ms") or {}
        svc = self.summary.get("service_ms") or {}
        out: dict[str, Any] = {
            "issued": self.summary.get("operations_issued", 0),
            "succeeded": self.summary.get("operations_succeeded"),
            "failed": self.summary.get("operations_failed"),
            "throughput_ops_per_s": self.throughput,
            "service_mean_ms": svc.get("mean"),
            "service_p99_ms": svc.get("p99"),
            "lateness_ms": self.summary.get("lateness_ms") or {},
        }
        out.update({k: v for k, v in lat.items()})
        return out

    def op_figures(self, op: str) -> dict[str, Any]:
        """``operations.<op>`` or, for ``all``, the overall figures; {} when the op did not occur."""
        if op == TS_ALL:
            return self.overall
        return self.operations.get(op, {})

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
        """The raw samples, lazily, with the op and outcome as strings."""
        if not self.has_samples:
            raise RunDirError(f"{self.path}: no {rundir.SAMPLES} (the run wrote no samples)")
        frame = pl.scan_parquet(self.samples_path).select(list(columns))
        casts = [pl.col(c).cast(pl.String) for c in (COL_OP, COL_OUTCOME) if c in columns]
        return frame.with_columns(casts) if casts else frame

    def timeseries(self) -> pl.DataFrame | None:
        if not self.timeseries_path.is_file():
            return None
        return pl.read_parquet(self.timeseries_path)


def _extra_files(path: Path) -> tuple[Path, ...]:
    found = [
        p
        for p in sorted(path.iterdir())
        if p.is_file() and p.name not in KNOWN_FILES and p.suffix in (".parquet", ".csv") and not p.name.endswith(".tmp")
    ]
    return tuple(found)


def load_run(path: str | Path) -> RunData:
    """Read one run directory; raises :class:`RunDirError` with the reason when it is not one."""
    run_path = Path(path)
    if not run_path.exists():
        raise RunDirError(f"{run_path}: no such run directory")
    if not run_path.is_dir():
        raise RunDirError(f"{run_path}: not a directory (give a run directory, e.g. runs/20260101T000000Z-abc123)")
    if not is_run_dir(run_path):
        hint = ""
        if any(True for _ in find_run_dirs(run_path, limit=1)):
            hint = " (it contains run directories: pass those, or use `mimesisbench runs` to list them)"
        raise RunDirError(
            f"{run_path}: not a run directory: expected {rundir.MANIFEST} and {rundir.SUMMARY}{hint}"
        )
    manifest = _read_json(run_path / rundir.MANIFEST)
    summary = _read_json(run_path / rundir.SUMMARY) if (run_path / rundir.SUMMARY).is_file() else {}
    config = _read_json(run_path / rundir.CONFIG) if (run_path / rundir.CONFIG).is_file() else {}
    return RunData(path=run_path, config=config, manifest=manifest, summary=summary, extra_files=_extra_files(run_path))


def load_runs(paths: Iterable[str | Path]) -> list[RunData]:
    runs = [load_run(p) for p in paths]
    if not runs:
        raise NoRunsError("no run directory given")
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
