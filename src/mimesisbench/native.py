"""The optional native core (``mimesisbench_native``, a Rust extension built from ``native/``).

Nothing is imported at module import; ``native_module()`` loads the extension on first use. The
environment variable ``MIMESISBENCH_NATIVE=0`` turns it off (the pure-Python paths, which are
the reference the native ones are tested against, are then used everywhere).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

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
