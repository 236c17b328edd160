"""Writing a ``Schedule`` to its on-disk directory (see ``format``) atomically, and reading it back."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from mimesisbench import __version__
from mimesisbench.errors import ScheduleError
from mimesisbench.synth.format import DIRECTORIES, EVENTS, FILES, MANIFEST, SCHEDULE_FORMAT, SCHEDULE_VERSION, OpCode
from mimesisbench.synth.schedule import Schedule

#: rows per Parquet row group of events.parquet (bounds the write's temporaries)
ROW_GROUP = 1 << 20

EVENTS_SCHEMA = pa.schema(
    [
        ("time_us", pa.int64()),
        ("op", pa.uint8()),
        ("type", pa.int16()),
        ("target", pa.int64()),
        ("generation", pa.uint8()),
        ("seq", pa.int64()),
    ]
)


def _write_table(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, compression="zstd", row_group_size=ROW_GROUP)


def _write_events(s: Schedule, path: Path) -> None:
    # sorted times and seq delta-encode well (a quarter smaller, and faster to write)
    with pq.ParquetWriter(
        path,
        EVENTS_SCHEMA,
        compression="zstd",
        use_dictionary=["op", "type", "generation"],
        column_encoding={"time_us": "DELTA_BINARY_PACKED", "seq": "DELTA_BINARY_PACKED"},
    ) as writer:
        for lo in range(0, max(s.events, 1), ROW_GROUP):
            hi = min(s.events, lo + ROW_GROUP)
            meta = s.meta[lo:hi]
            batch = pa.record_batch(
                [
                    pa.array(s.time_us[lo:hi]),
                    pa.array((meta & 0xFF).astype(np.uint8)),
                    pa.array((meta >> 16).astype(np.int16)),
                    pa.array(s.target[lo:hi].astype(np.int64)),
                    pa.array(((meta >> 8) & 0xFF).astype(np.uint8)),
                    pa.array(np.arange(lo, hi, dtype=np.int64)),
                ],
                schema=EVENTS_SCHEMA,
            )
            writer.write_batch(batch)


def _directories(s: Schedule) -> pa.Table:
    ns = s.namespace
    pre = np.zeros(ns.size, dtype=bool)
    pre[: s.pre_dirs] = True
    return pa.table(
        {
            "dir_id": pa.array(np.arange(ns.size, dtype=np.int32)),
            "parent_id": pa.array(ns.parent.astype(np.int32)),
            "depth": pa.array(ns.depth.astype(np.int16)),
            "type": pa.array(ns.dtype.astype(np.int16)),
            "path": ns.paths.cast(pl.String).to_arrow().cast(pa.string()),
            "pre_existing": pa.array(pre),
        }
    )


def _files(s: Schedule) -> pa.Table:
    return pa.table(
        {
            "file_id": pa.array(np.arange(s.file_type.size, dtype=np.int64)),
            "type": pa.array(s.file_type.astype(np.int16)),
            "dir_id": pa.array(s.file_dir.astype(np.int32)),
            "pre_existing": pa.array(s.file_pre),
        }
    )


def manifest_for(s: Schedule, *, profile_hash: str, seed_source: str) -> dict[str, Any]:
    return {
        "format": SCHEDULE_FORMAT,
        "version": SCHEDULE_VERSION,
        "profile": {"hash": profile_hash, "name": s.profile.name},
        "options": s.options.to_json(),
        "seed": int(s.seed),
        "seed_source": seed_source,
        "window_ms": int(s.window_ms),
        "counts": {
            "events": s.events,
            "files": int(s.file_type.size),
            "pre_existing_files": int(s.file_pre.sum()),
            "directories": s.namespace.size,
            "pre_existing_directories": s.pre_dirs,
            "per_op": s.op_counts(),
            "per_type": s.type_counts(),
        },
        "notes": list(s.notes),
        "tool_version": __version__,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def write_schedule(s: Schedule, out: str | Path, manifest: dict[str, Any]) -> Path:
    """Write into a temporary sibling directory, then rename it to ``out``.

    An existing schedule directory at ``out`` is replaced; anything else there is an error.
    """
    dest = Path(out)
    if dest.exists() and not (dest.is_dir() and ((dest / MANIFEST).is_file() or not any(dest.iterdir()))):
        raise ScheduleError(f"-o: {dest} exists and is not a schedule directory; choose another path")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        _write_table(_directories(s), tmp / DIRECTORIES)
        _write_table(_files(s), tmp / FILES)
        _write_events(s, tmp / EVENTS)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        if dest.exists():
            old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


@dataclass(frozen=True)
class ScheduleTables:
    """A schedule read back: the manifest and the three tables."""

    path: Path
    manifest: dict[str, Any]
    directories: pl.DataFrame
    files: pl.DataFrame
    events: pl.DataFrame


#: columns each table must have (extra columns are allowed)
REQUIRED_COLUMNS = {
    DIRECTORIES: ("dir_id", "parent_id", "depth", "type", "path", "pre_existing"),
    FILES: ("file_id", "type", "dir_id", "pre_existing"),
    EVENTS: ("time_us", "op", "type", "target", "generation", "seq"),
}


def read_manifest(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_dir():
        raise ScheduleError(f"schedule {p} is not a directory")
    try:
        manifest = json.loads((p / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScheduleError(f"{p} is not a schedule directory (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise ScheduleError(f"cannot read {p / MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != SCHEDULE_FORMAT or manifest.get("version") != SCHEDULE_VERSION:
        found = manifest if isinstance(manifest, dict) else {}
        raise ScheduleError(
            f"{p}: {MANIFEST} is not a {SCHEDULE_FORMAT} version {SCHEDULE_VERSION} manifest "
            f"(format {found.get('format')!r}, version {found.get('version')!r})"
        )
    return manifest


def _read_table(root: Path, name: str) -> pl.DataFrame:
    path = root / name
    if not path.is_file():
        raise ScheduleError(f"schedule {root}: {name} is missing")
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise ScheduleError(f"schedule {root}: cannot read {name}: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS[name] if c not in frame.columns]
    if missing:
        raise ScheduleError(f"schedule {root}: {name} lacks column(s) {', '.join(missing)}")
    return frame


def read_schedule(path: str | Path) -> ScheduleTables:
    """Read and check a schedule directory; raises ``ScheduleError`` naming what is wrong.
    Events come sorted by (time_us, seq)."""
    p = Path(path)
    manifest = read_manifest(p)
    dirs = _read_table(p, DIRECTORIES)
    files = _read_table(p, FILES)
    events = _read_table(p, EVENTS)
    if dirs.height == 0 or dirs.filter(pl.col("dir_id") == 0).height != 1:
        raise ScheduleError(f"schedule {p}: {DIRECTORIES} has no root directory (dir_id 0)")
    if dirs["dir_id"].n_unique() != dirs.height:
        raise ScheduleError(f"schedule {p}: {DIRECTORIES} repeats a dir_id")
    if files["file_id"].n_unique() != files.height:
        raise ScheduleError(f"schedule {p}: {FILES} repeats a file_id")
    known_ops = [int(op) for op in OpCode]
    if events.height and not events["op"].cast(pl.Int64).is_in(known_ops).all():
        raise ScheduleError(f"schedule {p}: {EVENTS} holds an unknown op code")
    events = events.sort(["time_us", "seq"], maintain_order=True)
    return ScheduleTables(path=p, manifest=manifest, directories=dirs, files=files, events=events)
