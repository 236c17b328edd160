"""The optional native core (``mimesisbench_native``, a Rust extension built from ``native/``).

Nothing is imported at module import; ``native_module()`` loads the extension on first use. The
environment variable ``MIMESISBENCH_NATIVE=0`` turns it off (the pure-Python paths, which are
the reference the native ones are tested against, are then used everywhere). ``binary_buffers``
makes the native lanes' path inputs.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np
import polars as pl
import pyarrow as pa

ENV_SWITCH = "MIMESISBENCH_NATIVE"


def native_module() -> ModuleType | None:
    """The extension module, or None when it is not installed or turned off."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in {"0", "false", "no", "off"}:
        return None
    try:
        return importlib.import_module("mimesisbench_native")
    except ImportError:
        return None


def native_version() -> str | None:
    """The installed extension's version (for run manifests), None when absent or turned off."""
    module = native_module()
    return None if module is None else str(getattr(module, "__version__", "unknown"))


def binary_buffers(paths: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a binary (or string) series: path ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``; nulls become empty paths."""
    arr = paths.cast(pl.Binary).fill_null(b"").to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    _, off_buf, data_buf = arr.buffers()
    n = len(arr)
    if off_buf is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + n + 1].copy()
    data = np.zeros(0, dtype=np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    return offsets, data
