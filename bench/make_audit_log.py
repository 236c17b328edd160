"""Write a realistic synthetic HDFS NameNode audit log, fast and reproducibly.

The workload: a directory tree owned by users of skewed activity; every directory is made by
``mkdirs``; files are created in them, then read (``open``), stat'ed (``getfileinfo``),
listed (``listStatus`` of the parent), occasionally changed (``setPermission``,
``setReplication``, ``setTimes``, ``append``, ``setOwner``, ``contentSummary``), some renamed
(later events use the new name) and some deleted. File popularity is Zipf-like, so a few files
take most reads; there are roughly 5-10 events per distinct path. A small share of lines is
``allowed=false``, a share of clients is proxied through a Kerberos gateway (``ugi=alice
(auth:PROXY) via hue/... (auth:KERBEROS)``, ``proto=webhdfs``), a few lines carry a
``callerContext``, a few project directories have spaces in their names, and timestamps jitter by
a few ms the way a busy NameNode's handler threads make them.

Everything is generated as numpy arrays and formatted with vectorised polars string
expressions, a million lines at a time, so 10 million lines take well under a minute.

Usage::

    python bench/make_audit_log.py OUT_DIR [--lines 10000000] [--seed 1] [--gzip] [--rotate 4]

The output is ``OUT_DIR/hdfs-audit.log`` (or the rotated set ``hdfs-audit.log``,
``hdfs-audit.log.1`` ... where the highest suffix is the oldest, as log4j rotates them).
"""

from __future__ import annotations

import argparse
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

#: ``cmd`` values, indexed by the op codes used below
CMDS: tuple[str, ...] = (
    "mkdirs",  # 0
    "create",  # 1
    "open",  # 2
    "getfileinfo",  # 3
    "listStatus",  # 4
    "delete",  # 5
    "rename",  # 6
    "rename (options=[NONE])",  # 7
    "setPermission",  # 8
    "setReplication",  # 9
    "setTimes",  # 10
    "contentSummary",  # 11
    "append",  # 12
    "setOwner",  # 13
)
OTHER = 255  # a line of another logger
PROJECTS: tuple[str, ...] = ("etl", "logs", "warehouse", "ml", "reports", "My Project", "tmp", "raw data")
TOPS: tuple[str, ...] = ("user", "data/warehouse", "tmp/hive")
GATEWAY = "hue/gw01.example.com@EXAMPLE.COM"
CHUNK = 1_000_000


@dataclass(frozen=True)
class AuditLogSpec:
    """What to generate. ``start_ms`` is the first event's time (UTC ms since the epoch)."""

    lines: int = 10_000_000
    seed: int = 1
    hours: float = 24.0
    start_ms: int = 1_444_521_600_000  # 2015-10-11 00:00:00 UTC
    users: int = 60
    other_fraction: float = 0.0
    caller_context_fraction: float = 0.03
    proto: bool = True


@dataclass(frozen=True)
class Workload:
    """Events as parallel arrays (sorted by time) plus the directory table they refer to."""

    time_ms: np.ndarray  # int64, ms after start
    op: np.ndarray  # uint8 code into CMDS, or OTHER
    dir_idx: np.ndarray  # int64, the directory of the path (or the path itself for dir ops)
    file_id: np.ndarray  # int64, -1 for directory operations
    gen: np.ndarray  # uint8, 1 once the file has been renamed
    user: np.ndarray  # int32
    proxied: np.ndarray  # bool
    allowed: np.ndarray  # bool
    host: np.ndarray  # int32
    dir_paths: pl.Series  # String, one per directory
    users: tuple[str, ...]


def _zipf_weights(n: int, s: float, rng: np.random.Generator) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    rng.shuffle(w)
    return w / w.sum()


def build_workload(spec: AuditLogSpec) -> Workload:
    """Draw the whole workload: one set of arrays, sorted by time (seeded, reproducible)."""
    rng = np.random.default_rng(spec.seed)
    n = spec.lines
    span = int(spec.hours * 3_600_000)
    n_files = max(1, n // 8)
    n_dirs = max(1, n_files // 16)
    users = tuple(f"user{i:03d}" for i in range(spec.users))
    user_w = _zipf_weights(spec.users, 1.1, rng)

    dir_user = rng.choice(spec.users, n_dirs, p=user_w)
    dir_top = rng.choice(len(TOPS), n_dirs, p=[0.7, 0.2, 0.1])
    dir_proj = rng.integers(0, len(PROJECTS), n_dirs)
    dir_birth = rng.uniform(0, 0.5 * span, n_dirs)
    dir_paths = pl.select(
        pl.concat_str(
            pl.lit("/"),
            pl.Series(TOPS).gather(dir_top),
            pl.lit("/"),
            pl.Series(users).gather(dir_user),
            pl.lit("/"),
            pl.Series(PROJECTS).gather(dir_proj),
            pl.lit("/d"),
            pl.int_range(n_dirs, eager=True).cast(pl.String).str.zfill(5),
        )
    ).to_series()

    file_dir = rng.choice(n_dirs, n_files, p=_zipf_weights(n_dirs, 0.6, rng))
    birth = dir_birth[file_dir] + (span - dir_birth[file_dir]) * rng.random(n_files) * 0.9
    deleted = rng.random(n_files) < 0.25
    death = np.where(deleted, birth + (span - birth) * rng.random(n_files), float(span))
    renamed = rng.random(n_files) < 0.06
    rename_t = birth + (death - birth) * rng.uniform(0.2, 0.95, n_files)
    fixed = n_dirs + n_files + int(deleted.sum()) + int(renamed.sum())
    n_other = int(n * spec.other_fraction)
    n_access = n - fixed - n_other
    if n_access < 0:
        raise ValueError(f"{n} lines are too few for this workload (need at least {fixed})")

    acc_file = rng.choice(n_files, n_access, p=_zipf_weights(n_files, 0.9, rng))
    acc_t = birth[acc_file] + (death[acc_file] - birth[acc_file]) * rng.random(n_access)
    acc_op = rng.choice(
        np.array([2, 3, 4, 11, 8, 9, 10, 12, 13], dtype=np.uint8),
        n_access,
        p=[0.52, 0.30, 0.12, 0.01, 0.015, 0.01, 0.015, 0.005, 0.005],
    )
    dir_op = (acc_op == 4) | (acc_op == 11) | ((acc_op == 3) & (rng.random(n_access) < 0.2))
    ren_idx = np.flatnonzero(renamed)
    ren_op = np.where(rng.random(ren_idx.size) < 0.3, 7, 6).astype(np.uint8)
    del_idx = np.flatnonzero(deleted)

    time_ms = np.concatenate([dir_birth, birth, acc_t, rename_t[ren_idx], death[del_idx], rng.uniform(0, span, n_other)])
    op = np.concatenate([np.zeros(n_dirs, np.uint8), np.ones(n_files, np.uint8), acc_op, ren_op,
                         np.full(del_idx.size, 5, np.uint8), np.full(n_other, OTHER, np.uint8)])
    fid = np.concatenate([np.full(n_dirs, -1), np.arange(n_files), np.where(dir_op, -1, acc_file), ren_idx, del_idx,
                          np.full(n_other, -1)])
    owner_file = np.concatenate([np.zeros(n_dirs, np.int64), np.arange(n_files), acc_file, ren_idx, del_idx,
                                 np.zeros(n_other, np.int64)])
    didx = np.concatenate([np.arange(n_dirs), file_dir, file_dir[acc_file], file_dir[ren_idx], file_dir[del_idx],
                           np.zeros(n_other, np.int64)])
    # a file's events after its rename name the new path; the rename itself names the old one
    gen = np.concatenate([np.zeros(n_dirs + n_files, np.uint8),
                          (renamed[acc_file] & (acc_t > rename_t[acc_file])).astype(np.uint8),
                          np.zeros(ren_idx.size, np.uint8), renamed[del_idx].astype(np.uint8),
                          np.zeros(n_other, np.uint8)])
    m = time_ms.size
    # most operations are by the directory's owner, the rest by other (skewed) users
    user = np.where(rng.random(m) < 0.75, dir_user[didx], rng.choice(spec.users, m, p=user_w)).astype(np.int32)
    proxied = rng.random(m) < 0.05
    allowed = rng.random(m) >= np.where(op >= 2, 0.004, 0.0)
    host = (user * 7 + rng.integers(0, 7, m)).astype(np.int32)
    del owner_file

    order = np.argsort(time_ms, kind="stable")
    t = time_ms[order].astype(np.int64)
    # handler threads log a few ms out of order
    t += np.where(rng.random(m) < 0.01, rng.integers(0, 4, m), 0)
    return Workload(t, op[order], didx[order], fid[order], gen[order], user[order], proxied[order],
                    allowed[order], host[order], dir_paths, users)


def format_lines(w: Workload, lo: int, hi: int, spec: AuditLogSpec, rng: np.random.Generator) -> pl.Series:
    """Audit-log text lines (no newline) for events ``lo:hi`` of the workload."""
    n = hi - lo
    op = w.op[lo:hi]
    is_file = w.file_id[lo:hi] >= 0
    frame = pl.DataFrame(
        {
            "ts": pl.from_epoch(pl.Series(w.time_ms[lo:hi] + spec.start_ms), "ms").dt.strftime("%Y-%m-%d %H:%M:%S,%3f"),
            "op": op,
            "dir": w.dir_paths.gather(w.dir_idx[lo:hi]),
            "fid": w.file_id[lo:hi],
            "is_file": is_file,
            "gen": w.gen[lo:hi],
            "user": pl.Series(w.users).gather(w.user[lo:hi]),
            "proxied": w.proxied[lo:hi],
            "allowed": w.allowed[lo:hi],
            "host": w.host[lo:hi],
            "ctx": rng.random(n) < spec.caller_context_fraction,
            "qid": rng.integers(0, 1_000_000, n),
        }
    )
    name = pl.concat_str(pl.lit("/part-"), pl.col("fid").cast(pl.String).str.zfill(7))
    src = (
        pl.when(pl.col("is_file"))
        .then(pl.concat_str(pl.col("dir"), name, pl.when(pl.col("gen") == 1).then(pl.lit(".done")).otherwise(pl.lit(""))))
        .otherwise(pl.col("dir"))
    )
    dst = (
        pl.when(pl.col("op").is_in([6, 7]))
        .then(pl.concat_str(pl.col("dir"), name, pl.lit(".done")))
        .otherwise(pl.lit("null"))
    )
    perm = (
        pl.when(pl.col("op") == 1)
        .then(pl.concat_str(pl.col("user"), pl.lit(":supergroup:rw-r--r--")))
        .when(pl.col("op") == 0)
        .then(pl.concat_str(pl.col("user"), pl.lit(":supergroup:rwxr-xr-x")))
        .when(pl.col("op") == 8)
        .then(pl.concat_str(pl.col("user"), pl.lit(":supergroup:rwx------")))
        .otherwise(pl.lit("null"))
    )
    ugi = (
        pl.when(pl.col("proxied"))
        .then(pl.concat_str(pl.col("user"), pl.lit(f" (auth:PROXY) via {GATEWAY} (auth:KERBEROS)")))
        .otherwise(pl.concat_str(pl.col("user"), pl.lit(" (auth:KERBEROS)")))
    )
    ip = pl.concat_str(
        pl.lit("/10.1."), (pl.col("host") // 250).cast(pl.String), pl.lit("."), (pl.col("host") % 250 + 1).cast(pl.String)
    )
    parts = [
        pl.col("ts"),
        pl.lit(" INFO FSNamesystem.audit: allowed="),
        pl.when(pl.col("allowed")).then(pl.lit("true")).otherwise(pl.lit("false")),
        pl.lit("\tugi="), ugi,
        pl.lit("\tip="), ip,
        pl.lit("\tcmd="), pl.lit(pl.Series(CMDS)).gather(pl.col("op").clip(0, len(CMDS) - 1)),
        pl.lit("\tsrc="), src,
        pl.lit("\tdst="), dst,
        pl.lit("\tperm="), perm,
    ]  # fmt: skip
    if spec.proto:
        parts += [pl.lit("\tproto="), pl.when(pl.col("proxied")).then(pl.lit("webhdfs")).otherwise(pl.lit("rpc"))]
    parts.append(
        pl.when(pl.col("ctx"))
        .then(pl.concat_str(pl.lit("\tcallerContext=HIVE_QUERY_ID:hive_20151011_"), pl.col("qid").cast(pl.String)))
        .otherwise(pl.lit(""))
    )
    other = pl.concat_str(
        pl.col("ts"),
        pl.lit(" INFO BlockStateChange: BLOCK* addStoredBlock: blockMap updated: 10.1.0.7:50010 is added to blk_"),
        pl.col("qid").cast(pl.String),
    )
    line = pl.when(pl.col("op") == OTHER).then(other).otherwise(pl.concat_str(parts))
    return frame.select(line.alias("line")).to_series()


def _open_out(path: Path, compress: bool) -> BinaryIO:
    if compress:
        return gzip.open(path, "wb", compresslevel=1)  # type: ignore[return-value]
    return open(path, "wb")


def write_audit_log(out_dir: Path, spec: AuditLogSpec, *, compress: bool = False, rotate: int = 1) -> list[Path]:
    """Write the log (``rotate`` files, oldest first in time) and return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    w = build_workload(spec)
    rng = np.random.default_rng([spec.seed, 2])
    bounds = np.linspace(0, w.time_ms.size, rotate + 1).astype(np.int64)
    written: list[Path] = []
    for k in range(rotate):
        suffix = f".{rotate - 1 - k}" if rotate - 1 - k > 0 else ""
        path = out_dir / f"hdfs-audit.log{suffix}{'.gz' if compress else ''}"
        with _open_out(path, compress) as f:
            for lo in range(int(bounds[k]), int(bounds[k + 1]), CHUNK):
                hi = min(lo + CHUNK, int(bounds[k + 1]))
                buf = io.BytesIO()
                pl.DataFrame(format_lines(w, lo, hi, spec, rng)).write_csv(buf, include_header=False, quote_style="never")
                f.write(buf.getbuffer())
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--gzip", action="store_true", help="gzip each file (level 1)")
    ap.add_argument("--rotate", type=int, default=1, help="split into this many rotated files")
    ap.add_argument("--other-fraction", type=float, default=0.0, help="share of lines of other loggers")
    ap.add_argument("--no-proto", action="store_true", help="omit proto= (Hadoop 2 style)")
    a = ap.parse_args(argv)
    spec = AuditLogSpec(lines=a.lines, seed=a.seed, hours=a.hours, other_fraction=a.other_fraction, proto=not a.no_proto)
    for p in write_audit_log(a.out_dir, spec, compress=a.gzip, rotate=a.rotate):
        print(p)


if __name__ == "__main__":
    main()
