"""The runs catalog: every run directory below a folder, queryable with SQL (embedded DuckDB).

Tables of the in-memory database (one connection per catalog, nothing written to disk):

* ``runs``: one row per run: ``run_id, path, started_at, ended_at (TIMESTAMP, UTC), backend,
  backend_scheme, status, complete, problem, schedule_hash, profile_hash, profile_name, seed,
  time_scale, operations_scheduled, operations_issued, operations_failed, throughput_ops_per_s,
  active_time_s, latency_p50_ms, latency_p99_ms, lateness_p99_ms, warnings, hostname``. A
  damaged run directory is a row too, with status ``damaged`` and the problem (file and what is
  wrong) in ``problem``; a run that ended before writing results (e.g. refused) has its status
  and ``problem`` "no results";
* ``ops``: per run and operation: ``run_id, op, issued, succeeded, failed, throughput_ops_per_s``
  and ``<latency|service|lateness>_<mean|p50|p90|p99|p999|max>_ms``;
* ``types``: the same per file type (column ``type`` instead of ``op``);
* ``samples``: a view over every readable run's ``samples.parquet`` with a ``run_id`` column
  (read only when a query uses it).

JSON documents are parsed in Python (no DuckDB extension is needed); Parquet is read by DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from mimesisbench.errors import ConfigError, EnvironmentProblem, InputError
from mimesisbench.results.load import NoRunsError, RunData, find_run_dirs, load_run
from mimesisbench.results.records import FLAT_FIGURES, GroupStats

if TYPE_CHECKING:
    import duckdb

DAMAGED = "damaged"


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


@dataclass(frozen=True)
class DamagedRun:
    """A run directory that could not be read: where, and what is wrong (file and problem)."""

    path: Path
    problem: str

    @property
    def run_id(self) -> str:
        return self.path.name


def _run_row(run: RunData) -> dict[str, Any]:
    s = run.summary
    return {
        "run_id": run.run_id,
        "path": str(run.path.resolve()),
        "started_at": _timestamp(run.started_at),
        "ended_at": _timestamp(run.ended_at),
        "backend": run.backend,
        "backend_scheme": run.backend_scheme,
        "status": run.status,
        "complete": run.complete,
        "problem": None if run.has_results else f"no results{': ' + run.message if run.message else ''}",
        "schedule_hash": run.schedule_hash,
        "profile_hash": run.profile_hash,
        "profile_name": run.profile_name,
        "seed": run.seed,
        "time_scale": run.time_scale,
        "operations_scheduled": s.operations_scheduled if run.has_results else None,
        "operations_issued": s.operations_issued if run.has_results else None,
        "operations_failed": s.operations_failed if run.has_results else None,
        "throughput_ops_per_s": s.throughput_ops_per_s if run.has_results else None,
        "active_time_s": s.active_time_ms / 1000.0 if run.has_results else None,
        "latency_p50_ms": s.latency_ms.p50,
        "latency_p99_ms": s.latency_ms.p99,
        "lateness_p99_ms": s.lateness_ms.p99,
        "warnings": len(run.warnings),
        "hostname": run.host.get("hostname"),
    }


def _damaged_row(run: DamagedRun) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(RUN_SCHEMA)
    row.update(run_id=run.run_id, path=str(run.path.resolve()), status=DAMAGED, complete=False, problem=run.problem)
    return row


def _figure_rows(run: RunData, groups: dict[str, GroupStats], key: str) -> list[dict[str, Any]]:
    rows = []
    for name, stats in groups.items():
        row: dict[str, Any] = {"run_id": run.run_id, key: str(name)}
        row.update(stats.flat())
        rows.append(row)
    return rows


RUN_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(), "path": pl.String(), "started_at": pl.Datetime("us"), "ended_at": pl.Datetime("us"),
    "backend": pl.String(), "backend_scheme": pl.String(), "status": pl.String(), "complete": pl.Boolean(),
    "problem": pl.String(), "schedule_hash": pl.String(), "profile_hash": pl.String(), "profile_name": pl.String(),
    "seed": pl.Int64(), "time_scale": pl.Float64(), "operations_scheduled": pl.Int64(), "operations_issued": pl.Int64(),
    "operations_failed": pl.Int64(), "throughput_ops_per_s": pl.Float64(), "active_time_s": pl.Float64(),
    "latency_p50_ms": pl.Float64(), "latency_p99_ms": pl.Float64(), "lateness_p99_ms": pl.Float64(),
    "warnings": pl.Int64(), "hostname": pl.String(),
}
_COUNTS = ("issued", "succeeded", "failed")


def _figure_schema(key: str) -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {"run_id": pl.String(), key: pl.String()}
    for f in FLAT_FIGURES:
        schema[f] = pl.Int64() if f in _COUNTS else pl.Float64()
    return schema


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


@dataclass
class Catalog:
    """An open catalog: the DuckDB connection, the runs read and the damaged run directories."""

    root: Path
    runs: list[RunData]
    connection: duckdb.DuckDBPyConnection
    damaged: list[DamagedRun] = field(default_factory=list)

    def query(self, sql: str) -> QueryResult:
        """Run ``sql``: a mistake in it is a ConfigError (exit 2), a damaged file it reads an InputError (exit 3)."""
        import duckdb

        sql_mistakes = (  # duckdb is imported only when a catalog is used
            duckdb.ParserException, duckdb.SyntaxException, duckdb.BinderException, duckdb.CatalogException,
            duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.NotImplementedException,
            duckdb.TypeMismatchException, duckdb.InvalidTypeException,
        )

        try:
            cursor = self.connection.execute(sql)
            columns = [d[0] for d in cursor.description or []]
            return QueryResult(columns, [tuple(r) for r in cursor.fetchall()])
        except sql_mistakes as exc:
            raise ConfigError(f"SQL error: {str(exc).splitlines()[0]}") from None
        except duckdb.Error as exc:
            # the SQL is fine, a file it reads is not (e.g. a samples.parquet damaged past its footer)
            reason = str(exc).splitlines()[0]
            culprit = self._damaged_samples()
            where = f"{culprit}: cannot be read" if culprit else "cannot read a run's samples"
            raise InputError(f"{where} ({reason})") from None

    def _damaged_samples(self) -> Path | None:
        """The first samples file that cannot be read through (looked for after a query failed)."""
        for run in self.runs:
            if run.has_results and run.has_samples:
                try:
                    pl.scan_parquet(run.samples_path).select(pl.all().max()).collect()
                except (OSError, pl.exceptions.PolarsError):
                    return run.samples_path
        return None

    def list_runs(self, where: str | None = None) -> QueryResult:
        """``runs`` rows (optionally filtered by a SQL condition), oldest first."""
        condition = f"WHERE {where}" if where and where.strip() else ""
        return self.query(f"SELECT * FROM runs {condition} ORDER BY started_at NULLS LAST, run_id")

    def p99_by_op(self, run_ids: list[str]) -> dict[str, dict[str, float | None]]:
        """{run_id: {op: p99_ms}} for the given runs."""
        if not run_ids:
            return {}
        placeholders = ", ".join("?" for _ in run_ids)
        rows = self.connection.execute(
            f"SELECT run_id, op, latency_p99_ms FROM ops WHERE run_id IN ({placeholders}) ORDER BY run_id, issued DESC", run_ids
        ).fetchall()
        out: dict[str, dict[str, float | None]] = {r: {} for r in run_ids}
        for run_id, op, p99 in rows:
            out.setdefault(run_id, {})[op] = p99
        return out

    def close(self) -> None:
        self.connection.close()


def _connect() -> duckdb.DuckDBPyConnection:
    try:
        import duckdb
    except ImportError:
        raise EnvironmentProblem("the runs catalog needs DuckDB: pip install duckdb") from None
    con = duckdb.connect(":memory:")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    return con


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_catalog(root: str | Path = "runs") -> Catalog:
    """Find the run directories below ``root`` and load them into an in-memory DuckDB."""
    base = Path(root)
    if not base.exists():
        raise NoRunsError(f"{base}: no such directory (runs are looked for below it; default ./runs)")
    if not base.is_dir():
        raise NoRunsError(f"{base}: not a directory")
    runs: list[RunData] = []
    damaged: list[DamagedRun] = []
    for path in find_run_dirs(base):
        try:
            runs.append(load_run(path))
        except InputError as exc:
            damaged.append(DamagedRun(path, str(exc)))
    if not runs and not damaged:
        raise NoRunsError(f"{base}: no run directories found below it")
    con = _connect()
    runs_df = pl.DataFrame([_run_row(r) for r in runs] + [_damaged_row(d) for d in damaged], schema=RUN_SCHEMA)
    ops_df = pl.DataFrame([row for r in runs for row in _figure_rows(r, r.operations, "op")], schema=_figure_schema("op"))
    types_df = pl.DataFrame([row for r in runs for row in _figure_rows(r, r.types, "type")], schema=_figure_schema("type"))
    for name, frame in (("runs", runs_df), ("ops", ops_df), ("types", types_df)):
        con.register(f"_{name}_arrow", frame.to_arrow())
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _{name}_arrow")
        con.unregister(f"_{name}_arrow")
    with_samples = [r for r in runs if r.has_results and r.has_samples]
    if with_samples:
        files = ", ".join(_sql_str(str(r.samples_path.resolve())) for r in with_samples)
        mapping = " UNION ALL ".join(f"SELECT {_sql_str(r.run_id)} AS run_id, {_sql_str(str(r.samples_path.resolve()))} AS file" for r in with_samples)
        con.execute(
            f"CREATE VIEW samples AS SELECT m.run_id, s.* EXCLUDE (filename) "
            f"FROM read_parquet([{files}], filename = true, union_by_name = true) s JOIN ({mapping}) m ON s.filename = m.file"
        )
    else:
        con.execute("CREATE VIEW samples AS SELECT NULL::VARCHAR AS run_id WHERE false")
    return Catalog(root=base, runs=runs, connection=con, damaged=damaged)
