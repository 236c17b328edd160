"""The analysis of a table of runs (one row per run: factor columns and responses), as
``mimesisbench experiment analyze`` reads it from a CSV: the factors' levels coded -1/+1, then a
two-level analysis, or a sweep when one factor takes more than two levels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from mimesisbench.analysis.designs import LETTERS, MAX_FACTORS
from mimesisbench.analysis.effects import SweepAnalysis, TwoLevelAnalysis, analyze_sweep, analyze_two_level
from mimesisbench.errors import ConfigError, InputError

#: the bookkeeping columns of ``experiment design``'s CSV: never factors by default
DESIGN_COLUMNS = ("order", "point", "replication")
#: level texts read as -1 and +1 as they are
SIGN_TEXTS = {"-1": -1, "+1": 1, "1": 1, "-": -1, "+": 1, "-1.0": -1, "1.0": 1, "+1.0": 1}


def read_runs_csv(path: Path) -> pl.DataFrame:
    """A CSV of runs (a header row, then one row per run), every column read as text."""
    try:
        table = pl.read_csv(path, infer_schema=False)
    except FileNotFoundError:
        raise InputError(f"cannot read runs table {path}: no such file") from None
    except (OSError, pl.exceptions.PolarsError) as e:
        raise InputError(f"cannot read runs table {path}: {str(e).splitlines()[0]}") from None
    if table.height == 0:
        raise InputError(f"runs table {path} has no run")
    return table


def _letters(factors: list[str]) -> list[str]:
    """The factors' letters: their own names when each is one letter of ``LETTERS`` (a table
    written with A, B, C columns), else A, B, C... by position."""
    if all(len(f) == 1 and f in LETTERS for f in factors):
        return list(factors)
    return list(LETTERS[: len(factors)])


def _coded(values: list[str], order: list[str] | None = None) -> tuple[np.ndarray, dict[str, str]]:
    """A two-level column as -1/+1 and its coding: ``order`` (low, high) when given (an
    experiment's levels as its file lists them); else -1/+1 (or -/+) as they are; two numbers,
    the smaller is -1; two names, the first in sorted order is -1."""
    distinct = sorted(set(values))
    if order is not None and set(order) == set(distinct):
        low, high = order
        return np.array([-1 if v == low else 1 for v in values], dtype=np.int8), {"-1": low, "+1": high}
    if set(distinct) <= set(SIGN_TEXTS) and {SIGN_TEXTS[v] for v in distinct} == {-1, 1}:
        return np.array([SIGN_TEXTS[v] for v in values], dtype=np.int8), {"-1": "-1", "+1": "+1"}
    try:
        numbers = {v: float(v) for v in distinct}
        low, high = sorted(distinct, key=numbers.__getitem__)
    except ValueError:
        low, high = distinct
    return np.array([-1 if v == low else 1 for v in values], dtype=np.int8), {"-1": low, "+1": high}


def analyze_runs(table: pl.DataFrame, response: str, factors: list[str] | None = None,
                 levels: dict[str, list[str]] | None = None, *, sweep: bool = False) -> TwoLevelAnalysis | SweepAnalysis:
    """The analysis of ``table``'s ``response`` over ``factors`` (default: every other column but
    ``DESIGN_COLUMNS``); ``levels``: a factor's level texts in order where known (low, high); ``sweep``: the
    runs are a one-factor sweep, analysed per level even at two levels."""
    if response not in table.columns:
        raise ConfigError(f"--response {response!r}: not a column of the runs table (columns: {', '.join(table.columns)})")
    names = factors if factors else [c for c in table.columns if c != response and c not in DESIGN_COLUMNS]
    missing = [f for f in names if f not in table.columns]
    if missing:
        raise ConfigError(f"--factors: {', '.join(missing)} not a column of the runs table")
    if not names:
        raise ConfigError("the runs table has no factor column besides the response")
    rows = table.select([*names, response]).drop_nulls()
    if rows.height < table.height:
        raise ConfigError(f"the runs table has {table.height - rows.height} row(s) with an empty factor or response")
    try:
        y = rows[response].cast(pl.Float64).to_numpy()
    except pl.exceptions.PolarsError:
        raise ConfigError(f"response {response!r}: a value is not a number") from None
    columns = {f: rows[f].cast(pl.String).to_list() for f in names}
    distinct = {f: len(set(v)) for f, v in columns.items()}
    if sweep and len(names) == 1:
        return analyze_sweep(columns[names[0]], y, names[0], response, (levels or {}).get(names[0]))
    if all(n == 2 for n in distinct.values()):
        if len(names) > MAX_FACTORS:
            raise ConfigError(f"a two-level analysis takes at most {MAX_FACTORS} factors, not {len(names)}")
        letters = _letters(names)
        coded, coding = [], {}
        for f in names:
            column, coding[f] = _coded(columns[f], (levels or {}).get(f))
            coded.append(column)
        return analyze_two_level(np.column_stack(coded), y, dict(zip(letters, names)), response, coding)
    if len(names) == 1 and distinct[names[0]] > 2:
        return analyze_sweep(columns[names[0]], y, names[0], response, (levels or {}).get(names[0]))
    shown = ", ".join(f"{f} ({n} levels)" for f, n in distinct.items())
    raise ConfigError(f"neither a two-level design (every factor at two levels) nor a one-factor sweep: {shown}; "
                      "name the factors to analyse with --factors")
