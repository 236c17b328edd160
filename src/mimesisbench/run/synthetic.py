"""Synthetic schedules written straight in the schedule format (for benchmarks and smoke tests).

Not a workload model: the generator (``mimesisbench.synth``) makes realistic schedules from a
profile. These are regular ones whose expected outcome is known, e.g. "create N files per type,
then open, stat and delete them", issued as fast as possible or at a given Poisson rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from mimesisbench.errors import ConfigError
from mimesisbench.schedule import format as fmt
from mimesisbench.schedule.format import OpCode
from mimesisbench.schedule.writer import write_schedule_dir

FILE_OPS = (OpCode.CREATE, OpCode.OPEN, OpCode.LIST_FILE, OpCode.GETFILEINFO, OpCode.DELETE)


def write_phased_schedule(
    root: str | Path,
    *,
    types: int,
    files_per_type: int,
    phases: Sequence[OpCode] = (OpCode.CREATE, OpCode.OPEN, OpCode.GETFILEINFO, OpCode.DELETE),
    rate_per_s: float | None = None,
    seed: int = 0,
) -> Path:
    """Type t's files live in ``/d<t>``; each phase applies one file operation to every file.

    Files are pre-existing unless the first phase is ``CREATE``. Events run phase by phase,
    files interleaved across types. ``rate_per_s`` None puts every event at time 0 (replay as
    fast as possible, in this order); otherwise arrivals are Poisson at that total rate.
    """
    dirs, files, events = _phased_tables(types, files_per_type, phases, rate_per_s, seed)
    return _write(Path(root), dirs, files, events, {"synthetic": "phased", "types": types, "seed": seed})


def _phased_tables(
    types: int, files_per_type: int, phases: Sequence[OpCode], rate_per_s: float | None, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    if types < 1 or files_per_type < 1:
        raise ConfigError("a synthetic schedule needs at least one type and one file per type")
    for op in phases:
        if op not in FILE_OPS:
            raise ConfigError(f"{op.label} is not a single-file operation")
    created = phases[0] == OpCode.CREATE
    n_files = types * files_per_type
    file_id = np.arange(n_files, dtype=np.int64)
    # interleave types: file k belongs to type (k % types) + 1
    file_type = (file_id % types + 1).astype(np.int16)
    dirs = pl.DataFrame(
        {
            "dir_id": np.arange(types + 1, dtype=np.int32),
            "parent_id": np.array([-1] + [0] * types, dtype=np.int32),
            "depth": np.array([0] + [1] * types, dtype=np.int16),
            "type": np.array([0, *range(1, types + 1)], dtype=np.int16),
            "path": ["/", *(f"/d{t}" for t in range(1, types + 1))],
            "pre_existing": [True] * (types + 1),
        }
    )
    files = pl.DataFrame(
        {
            "file_id": file_id,
            "type": file_type,
            "dir_id": file_type.astype(np.int32),
            "pre_existing": np.full(n_files, not created),
        }
    )
    ops = np.concatenate([np.full(n_files, int(op), dtype=np.uint8) for op in phases])
    target = np.tile(file_id, len(phases))
    n_events = ops.size
    if rate_per_s is None:
        times = np.zeros(n_events, dtype=np.int64)
    else:
        if rate_per_s <= 0:
            raise ConfigError("the rate must be positive")
        gaps = np.random.default_rng(seed).exponential(1e6 / rate_per_s, n_events)
        times = np.floor(np.cumsum(gaps)).astype(np.int64)
    events = pl.DataFrame(
        {
            "time_us": times,
            "op": ops,
            "type": np.tile(file_type, len(phases)),
            "target": target,
            "generation": np.zeros(n_events, dtype=np.uint8),
            "seq": np.arange(n_events, dtype=np.int64),
        }
    )
    return dirs, files, events


def write_random_access_schedule(
    root: str | Path,
    *,
    types: int,
    files_per_type: int,
    events: int,
    rate_per_s: float,
    ops: Sequence[OpCode] = (OpCode.OPEN, OpCode.GETFILEINFO, OpCode.LIST_FILE),
    seed: int = 0,
) -> Path:
    """Read-only accesses to random pre-existing files at a Poisson ``rate_per_s`` (repeatable)."""
    rng = np.random.default_rng(seed)
    if rate_per_s <= 0:
        raise ConfigError("the rate must be positive")
    dirs, files, _ = _phased_tables(types, files_per_type, (OpCode.OPEN,), None, 0)
    n_files = types * files_per_type
    target = rng.integers(0, n_files, events).astype(np.int64)
    gaps = rng.exponential(1e6 / rate_per_s, events)
    frame = pl.DataFrame(
        {
            "time_us": np.floor(np.cumsum(gaps)).astype(np.int64),
            "op": rng.choice(np.array([int(o) for o in ops], dtype=np.uint8), events),
            "type": (target % types + 1).astype(np.int16),
            "target": target,
            "generation": np.zeros(events, dtype=np.uint8),
            "seq": np.arange(events, dtype=np.int64),
        }
    )
    extra: dict[str, object] = {"synthetic": "random-access", "types": types, "seed": seed}
    return _write(Path(root), dirs, files, frame, extra)


def _write(root: Path, dirs: pl.DataFrame, files: pl.DataFrame, events: pl.DataFrame, extra: dict[str, object]) -> Path:
    """Through the one atomic schedule writer (``schedule.writer``)."""
    manifest = {"format": fmt.SCHEDULE_FORMAT, "version": fmt.SCHEDULE_VERSION, "seed": extra.get("seed"), **extra}
    return write_schedule_dir(root, directories=dirs, files=files, events=events, manifest=manifest)
