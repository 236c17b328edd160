"""The run directory: one per run, named ``<UTC timestamp>-<id>`` under the output folder.

Files: ``config.json`` (resolved configuration), ``manifest.json`` (versions, host, schedule,
times, complete flag, warnings), ``samples.parquet`` (raw samples), ``timeseries.parquet`` (per
second and op), ``summary.json``; ``parts/`` holds the workers' raw part files while a run is
under way (removed once merged into ``samples.parquet``).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import time
from pathlib import Path
from typing import Any

from mimesisbench.errors import ConfigError

CONFIG = "config.json"
MANIFEST = "manifest.json"
SAMPLES = "samples.parquet"
TIMESERIES = "timeseries.parquet"
SUMMARY = "summary.json"
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


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_json(path: Path, data: Any) -> Path:
    """Atomic, readable JSON (NaN and infinity become null)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_clean(data), indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
