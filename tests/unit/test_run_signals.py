"""Signals to a real ``mimesisbench run`` process: SIGTERM ends it like Ctrl-C (partial results,
exit 6), SIGKILL of the coordinator leaves no worker behind and no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.results import rundir

#: generous: a loaded 2-core machine may be slow to start the workers
WAIT_S = 120.0


def _src_path() -> str:
    import mimesisbench

    return str(Path(mimesisbench.__file__).resolve().parent.parent)


def _start_run(tmp_path: Path, time_scale: float) -> tuple[subprocess.Popen[str], Path]:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    runs = tmp_path / "runs"
    argv = [sys.executable, "-m", "mimesisbench", "run", str(schedule), "-b", f"posix:{tmp_path / 'base'}", "-q",
            "-o", str(runs), "--time-scale", str(time_scale), "--max-drift", "off"]
    env = {**os.environ, "PYTHONPATH": _src_path()}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return proc, runs


def _wait_for_replay(proc: subprocess.Popen[str], runs: Path) -> Path:
    """The run directory, once its manifest says phase 2 is under way."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for manifest in runs.glob(f"*/{rundir.MANIFEST}"):
            try:
                if json.loads(manifest.read_text())["status"] == "replay":
                    return manifest.parent
            except (ValueError, OSError):
                pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"the run did not reach phase 2 within {WAIT_S:.0f} s: {proc.communicate()}")


def _let_it_replay(proc: subprocess.Popen[str]) -> None:
    """Give the workers time to issue some operations (a wait, not an assertion: the schedule
    runs for many seconds more)."""
    time.sleep(1.5)
    assert proc.poll() is None


def test_sigterm_in_phase2_ends_the_run_like_ctrl_c(tmp_path: Path) -> None:
    proc, runs = _start_run(tmp_path, time_scale=10.0)  # a 10 s replay
    run_dir = _wait_for_replay(proc, runs)
    _let_it_replay(proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 6, (out, err)
    assert "Traceback" not in out + err and "BrokenPipe" not in err
    assert "SIGTERM" in err and "partial results" in err
    manifest = json.loads((run_dir / rundir.MANIFEST).read_text())
    assert manifest["status"] == "interrupted" and manifest["complete"] is False
    assert "SIGTERM" in manifest["message"]
    samples = pl.read_parquet(run_dir / rundir.SAMPLES)
    assert samples.height > 0  # what was measured is kept
    assert set(samples["worker"].unique().to_list()) == {0, 1}


def test_sigkill_of_the_coordinator_leaves_no_worker_and_no_traceback(tmp_path: Path) -> None:
    proc, runs = _start_run(tmp_path, time_scale=30.0)  # a 30 s replay
    _wait_for_replay(proc, runs)
    descendants = psutil.Process(proc.pid).children(recursive=True)
    assert descendants  # the workers (and the forkserver)
    proc.send_signal(signal.SIGKILL)
    # the pipes reach end of file only once every process holding them (all workers) has ended
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == -signal.SIGKILL
    assert "Traceback" not in out + err and "BrokenPipe" not in err, err
    _, alive = psutil.wait_procs(descendants, timeout=WAIT_S)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]
