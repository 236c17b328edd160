"""Where a micro-benchmark works: relative paths below the backend's base (no I/O).

Everything lives in one fresh directory ``/micro-<op>-<stamp>`` below the base:
``d<j>`` directories, files ``d<j>/f<i>`` (file ``i`` in directory ``i mod dirs``), new
directories ``d<j>/m<i>`` for mkdirs and rename targets ``d<j>/f<i>.r``.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass

import polars as pl

from mimesisbench.micro.config import NEEDS_FILES, MicroConfig


@dataclass(frozen=True)
class MicroPlan:
    """Relative paths for one run (each a polars String series, built vectorised)."""

    root: str
    dirs: pl.Series  # the root first, then d0 .. d<D-1>
    files: pl.Series  # files to prepare (empty when the operation needs none)
    targets: pl.Series  # what the timed operation works on
    targets2: pl.Series | None  # rename destinations


def run_root(op: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"/micro-{op}-{stamp}-{os.getpid()}-{secrets.token_hex(3)}"


def make_plan(config: MicroConfig, root: str | None = None) -> MicroPlan:
    root = root or run_root(config.op)
    n, d = config.files, config.n_dirs
    dir_names = pl.Series("path", [f"{root}/d{j}" for j in range(d)], dtype=pl.String)
    dirs = pl.concat([pl.Series("path", [root], dtype=pl.String), dir_names])
    idx = pl.int_range(0, n, eager=True)
    frame = pl.DataFrame({"i": idx}).with_columns(
        (pl.lit(f"{root}/d") + (pl.col("i") % d).cast(pl.String) + pl.lit("/")).alias("dir")
    )
    files = frame.select((pl.col("dir") + pl.lit("f") + pl.col("i").cast(pl.String)).alias("path"))["path"]
    targets2: pl.Series | None = None
    op = config.op
    if op == "create":
        targets = files
    elif op == "mkdirs":
        targets = frame.select((pl.col("dir") + pl.lit("m") + pl.col("i").cast(pl.String)).alias("path"))["path"]
    elif op == "listDir":
        targets = frame.select((pl.lit(f"{root}/d") + (pl.col("i") % d).cast(pl.String)).alias("path"))["path"]
    elif op == "rename":
        targets = files
        targets2 = (files + ".r").alias("path2")
    else:
        targets = files
    prepared = files if op in NEEDS_FILES else pl.Series("path", [], dtype=pl.String)
    return MicroPlan(root=root, dirs=dirs, files=prepared, targets=targets, targets2=targets2)
