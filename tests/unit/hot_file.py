"""A hot-file trace and the most operations in flight at once: what the open-loop tests share
(``test_key_gate`` on posix, ``tests/integration/test_hdfs_open_loop`` on the NameNode)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl


def hot_file_trace(path: Path, reads: int) -> Path:
    """A verbatim trace: create /hot/f, ``reads`` opens and getfileinfos of it 1 ms apart, delete it."""
    rows = [(0, "create"), *((1 + i, "open" if i % 2 else "getfileinfo") for i in range(reads)), (reads + 2, "delete")]
    pl.DataFrame({"time_ms": [1_700_000_000_000 + t for t, _ in rows], "op": [op for _, op in rows],
                  "path": "/hot/f", "dst": None, "user": "u", "allowed": True}).write_csv(path)
    return path


def max_overlap(start: np.ndarray, end: np.ndarray) -> int:
    """The most operations in flight at once (from their recorded spans)."""
    times = np.concatenate([start, end])
    steps = np.concatenate([np.ones(start.size, np.int64), -np.ones(end.size, np.int64)])
    order = np.lexsort((steps, times))  # at a tie an end comes before a start
    return int(np.cumsum(steps[order]).max())
