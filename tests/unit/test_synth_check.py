"""The reference checker catches schedules that act on paths that do not exist."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_synth_helpers import make_profile

from mimesisbench.schedule import Schedule, read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.check import check_schedule
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Schedule:
    out = tmp_path_factory.mktemp("check") / "s"
    mix = {"file_renames_per_create": 0.3, "mkdirs_per_create": 0.1, "dir_renames_per_create": 0.1}
    generate_to(make_profile(mix=mix), out, GenerateOptions(), 17)
    return read_schedule(out)


def _with_events(tables: Schedule, events: pl.DataFrame) -> Schedule:
    events = events.with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("seq"))
    return replace(tables, events=events)


def test_the_generated_schedule_passes(tables: Schedule) -> None:
    assert check_schedule(tables).ok


def test_an_open_after_the_delete_is_caught(tables: Schedule) -> None:
    ev = tables.events
    row = int(np.flatnonzero(ev.get_column("op").to_numpy() == OpCode.DELETE)[0])
    ghost = ev.slice(row, 1).with_columns(pl.lit(int(OpCode.OPEN), dtype=pl.UInt8).alias("op"))
    broken = pl.concat([ev.slice(0, row + 1), ghost, ev.slice(row + 1)])
    result = check_schedule(_with_events(tables, broken))
    assert not result.ok and result.first_invalid == row + 1
    assert "does not exist" in result.message


def test_an_access_before_the_create_is_caught(tables: Schedule) -> None:
    ev = tables.events
    op = ev.get_column("op").to_numpy()
    row = int(np.flatnonzero(op == OpCode.CREATE)[0])
    early = ev.slice(row, 1).with_columns(
        pl.lit(int(OpCode.GETFILEINFO), dtype=pl.UInt8).alias("op"), pl.lit(0, dtype=pl.Int64).alias("time_us")
    )
    broken = pl.concat([early, ev])
    result = check_schedule(_with_events(tables, broken))
    assert not result.ok and result.first_invalid == 0


def test_a_stale_generation_after_a_rename_is_caught(tables: Schedule) -> None:
    ev = tables.events
    op = ev.get_column("op").to_numpy()
    target = ev.get_column("target").to_numpy()
    gen = ev.get_column("generation").to_numpy()
    later = np.flatnonzero((gen > 0) & (op != OpCode.RENAME_FILE) & (op != OpCode.RENAME_DIR) & (op != OpCode.LIST_DIR))
    row = int(later[0])
    stale = ev.with_columns(
        pl.when(pl.int_range(0, pl.len()) == row)
        .then(pl.lit(0, dtype=pl.UInt8))
        .otherwise(pl.col("generation"))
        .alias("generation")
    )
    result = check_schedule(_with_events(tables, stale))
    assert not result.ok and result.first_invalid == row, (result, target[row])


def test_time_going_backwards_is_caught(tables: Schedule) -> None:
    ev = tables.events
    swapped = pl.concat([ev.slice(1, 1).with_columns(pl.lit(10**9, dtype=pl.Int64).alias("time_us")), ev.slice(2)])
    result = check_schedule(_with_events(tables, swapped))
    assert not result.ok and result.first_invalid in (0, 1)


def test_a_missing_schedule_directory_is_an_error(tmp_path: Path) -> None:
    from mimesisbench.errors import ScheduleError

    with pytest.raises(ScheduleError, match="not a schedule directory"):
        check_schedule(tmp_path)
