"""Raw per-operation samples: the workers' part files merged into one table.

``samples.parquet`` columns: ``worker`` Int16, ``type`` Int16 (the event's file type, 0 for
directory operations), ``op`` Enum (operation label), ``seq`` Int64 (the schedule's event seq),
``scheduled_us`` Float64 (scheduled time after the start barrier, time scale applied),
``start_us`` and ``end_us`` Float64 (actual start and end after the barrier, ns precision),
``outcome`` Enum (ok, not_found, exists, permission, other). Sorted by ``start_us``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from mimesisbench.backends.base import OUTCOME_LABELS
from mimesisbench.schedule.format import OpCode

OP_LABELS: tuple[str, ...] = tuple(op.label for op in OpCode)
OP_ENUM = pl.Enum(list(OP_LABELS))
OUTCOME_ENUM = pl.Enum(list(OUTCOME_LABELS))
SCHEMA: dict[str, pl.DataType] = {
    "worker": pl.Int16(),
    "type": pl.Int16(),
    "op": OP_ENUM,
    "seq": pl.Int64(),
    "scheduled_us": pl.Float64(),
    "start_us": pl.Float64(),
    "end_us": pl.Float64(),
    "outcome": OUTCOME_ENUM,
}


def empty_samples() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def load_part(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in ("row", "start_ns", "end_ns", "outcome")}


def merge_parts(parts: Sequence[tuple[int, str | Path]], events: pl.DataFrame, time_scale: float) -> pl.DataFrame:
    """One table from ``(worker index, part file)`` pairs and the schedule's (sorted) events.

    At time scale 0 (as fast as possible: a closed loop, no schedule to keep) an operation is due
    when it is issued: its latency is its service time and its lateness 0."""
    frames = []
    by_code = [""] * (max(int(op) for op in OpCode) + 1)
    for op in OpCode:
        by_code[int(op)] = op.label
    op_labels = pl.Series(by_code, dtype=pl.String)
    outcome_labels = pl.Series(list(OUTCOME_LABELS), dtype=pl.String)
    for worker, path in parts:
        part = load_part(path)
        if part["row"].size == 0:
            continue
        ev = events[pl.Series(part["row"])]
        start_us = pl.Series(part["start_ns"].astype(np.float64) / 1000.0)
        frames.append(
            pl.DataFrame(
                {
                    "worker": pl.Series(np.full(part["row"].size, worker, dtype=np.int16)),
                    "type": ev["type"].cast(pl.Int16),
                    "op": op_labels.gather(ev["op"].cast(pl.UInt32)).cast(OP_ENUM),
                    "seq": ev["seq"].cast(pl.Int64),
                    "scheduled_us": start_us if time_scale == 0 else ev["time_us"].cast(pl.Float64) * float(time_scale),
                    "start_us": start_us,
                    "end_us": pl.Series(part["end_ns"].astype(np.float64) / 1000.0),
                    "outcome": outcome_labels.gather(pl.Series(part["outcome"]).cast(pl.UInt32)).cast(OUTCOME_ENUM),
                }
            )
        )
    if not frames:
        return empty_samples()
    return pl.concat(frames).sort("start_us", "seq")


def write_samples(frame: pl.DataFrame, path: Path) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    tmp.replace(path)
    return path
