"""Helpers of the integration tests that drive the CLI against the managed HDFS."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from mimesisbench.trace.hdfs_audit import read_audit_logs


def cli(*args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process (its own process group); past ``timeout_s`` the group is
    interrupted (SIGINT: a run stops its own workers and exits 130), then killed if it does not
    stop (workers included, none left behind), and the test fails saying so."""
    command = [sys.executable, "-m", "mimesisbench", *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGINT)
            try:
                out, err = child.communicate(timeout=60.0)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                out, err = child.communicate()
            pytest.fail(f"`mimesisbench {args[0]}` did not finish within {timeout_s:.0f} s: {err.strip()[-2000:]}")
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def audit_under(path: Path, start_ms: int, prefix: str, *, allowed_only: bool = True) -> pl.DataFrame:
    """The NameNode's audit events from ``start_ms`` on whose path lies under ``prefix`` (String
    columns), the allowed ones only unless ``allowed_only`` is false."""
    events, _ = read_audit_logs([path])
    events = events.with_columns([pl.col(c).cast(pl.String) for c in ("op", "path", "dst", "user")])
    keep = (pl.col("time_ms") >= start_ms) & pl.col("path").str.starts_with(prefix + "/")
    return events.filter(keep & pl.col("allowed") if allowed_only else keep)
