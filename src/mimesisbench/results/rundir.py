"""The run directory: one per run, named ``<UTC timestamp>-<id>`` under the output folder.

Files: ``config.json`` (resolved configuration), ``manifest.json`` (versions, host, schedule,
times, complete flag, warnings), ``samples.parquet`` (raw samples), ``timeseries.parquet`` (per
second and op), ``summary.json``, ``data_calls.parquet`` (the data jobs' calls, when a run has
data jobs: ``datajobs.trace``); the three JSON files are the versioned records of
``mimesisbench.results.records``; ``parts/`` holds the workers' raw part files while a run is
under way (removed once merged into ``samples.parquet``).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from mimesisbench.errors import ConfigError
from mimesisbench.results.records import CONFIG, MANIFEST, SUMMARY

__all__ = ["CONFIG", "DATA_CALLS", "MANIFEST", "PARTS", "SAMPLES", "SUMMARY", "TIMESERIES", "new_run_dir"]

SAMPLES = "samples.parquet"
TIMESERIES = "timeseries.parquet"
DATA_CALLS = "data_calls.parquet"
PARTS = "parts"


def new_run_dir(out: str | Path) -> Path:
    """Create ``<out>/<YYYYmmddTHHMMSSZ>-<6 hex>`` and return it."""
    parent = Path(out)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for _ in range(10):
        run_dir = parent / f"{stamp}-{secrets.token_hex(3)}"
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"--out: cannot create a run directory in {parent}: {exc.strerror}") from None
    raise ConfigError(f"--out: cannot find a free run directory name in {parent}")
