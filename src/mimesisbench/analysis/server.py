"""Server-side series found in a run directory, whatever collected them.

Two places are looked at, generically:

* extra numeric columns of ``timeseries.parquet`` (anything the client side does not write,
  e.g. ``jmx_RpcQueueTimeAvgTime``), taken from the all-operations rows (or rows without op);
* extra ``*.parquet`` / ``*.csv`` files of the run directory with a time column (``second``,
  ``t_s``, ``time_s``, ``elapsed_s``, ``timestamp``, ``time`` or ``ts``): every other numeric
  column is a series. Absolute times (datetimes, or epoch seconds/milliseconds) are made
  relative to the run's start barrier.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from mimesisbench.results.load import TS_ALL, TS_CLIENT_COLUMNS, TS_OP, TS_SECOND, RunData

TIME_COLUMNS: tuple[str, ...] = ("second", "t_s", "time_s", "elapsed_s", "timestamp", "time", "ts")
MAX_SERIES = 24


@dataclass(frozen=True)
class ServerSeries:
    """One server-side series: ``t_s`` seconds after the start barrier, ``values`` as found."""

    name: str
    source: str
    t_s: np.ndarray
    values: np.ndarray


def _start_epoch_s(run: RunData) -> float | None:
    for text in (run.manifest.start_barrier_utc, run.manifest.started_at):
        if isinstance(text, str):
            try:
                return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _relative_seconds(column: pl.Series, run: RunData) -> np.ndarray | None:
    if column.dtype == pl.Datetime or isinstance(column.dtype, pl.Datetime):
        start = _start_epoch_s(run)
        epoch = column.dt.epoch("us").to_numpy().astype(np.float64) / 1e6
        return epoch - (start if start is not None else float(np.nanmin(epoch)))
    if not column.dtype.is_numeric():
        return None
    values = column.cast(pl.Float64).to_numpy()
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    if np.nanmedian(finite) > 1e11:  # epoch milliseconds
        values = values / 1000.0
    if np.nanmedian(finite) > 1e8:  # epoch seconds
        start = _start_epoch_s(run)
        values = values - (start if start is not None else float(np.nanmin(values)))
    return values


def _numeric_series(frame: pl.DataFrame, t_s: np.ndarray, skip: set[str], source: str) -> list[ServerSeries]:
    out = []
    for name in frame.columns:
        if name in skip or not frame[name].dtype.is_numeric():
            continue
        values = frame[name].cast(pl.Float64).to_numpy()
        if not np.isfinite(values).any():
            continue
        order = np.argsort(t_s, kind="stable")
        out.append(ServerSeries(name=name, source=source, t_s=t_s[order], values=values[order]))
    return out


def _from_timeseries(run: RunData) -> list[ServerSeries]:
    stored = run.timeseries()
    if stored is None or TS_SECOND not in stored.columns:
        return []
    extra = [c for c in stored.columns if c not in TS_CLIENT_COLUMNS]
    if not extra:
        return []
    rows = stored
    if TS_OP in stored.columns:
        op = stored[TS_OP].cast(pl.String)
        rows = stored.filter((op == TS_ALL) | op.is_null())
        if rows.height == 0:  # server columns repeated on each op row: keep one row per second
            rows = stored.unique(subset=[TS_SECOND], keep="first", maintain_order=True)
    t_s = rows[TS_SECOND].cast(pl.Float64).to_numpy()
    return _numeric_series(rows.select([TS_SECOND, *extra]), t_s, {TS_SECOND}, run.timeseries_path.name)


def _read_table(path: Path) -> pl.DataFrame | None:
    try:
        if path.suffix == ".parquet":
            return pl.read_parquet(path)
        return pl.read_csv(path, try_parse_dates=True, infer_schema_length=1000)
    except (OSError, pl.exceptions.PolarsError):
        return None


def _from_file(run: RunData, path: Path) -> list[ServerSeries]:
    frame = _read_table(path)
    if frame is None or frame.height == 0:
        return []
    time_col = next((c for c in TIME_COLUMNS if c in frame.columns), None)
    if time_col is None:
        return []
    t_s = _relative_seconds(frame[time_col], run)
    if t_s is None:
        return []
    return _numeric_series(frame, t_s, {time_col}, path.name)


def server_series(run: RunData, limit: int = MAX_SERIES) -> list[ServerSeries]:
    """Every server-side series of ``run`` (at most ``limit``), stored columns first."""
    found = _from_timeseries(run)
    for path in run.extra_files:
        found.extend(_from_file(run, path))
    return found[:limit]
