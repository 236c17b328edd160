"""Removing a micro-benchmark's directory again, only below the backend's base."""

from __future__ import annotations

import os
import shutil
import stat

from mimesisbench.backends import safety
from mimesisbench.backends.base import Backend
from mimesisbench.errors import SafetyError


def remove_tree(backend: Backend, native_root: str | bytes) -> bool:
    """Delete ``native_root`` and everything in it; returns False when the backend keeps nothing
    beyond its process (memory, null) and there is nothing to delete.

    Backends with a ``remove_tree`` method (hdfs) do it themselves; a posix tree is removed with
    ``shutil.rmtree`` after checking that the path is a real directory strictly below the base.
    """
    hook = getattr(backend, "remove_tree", None)
    if callable(hook):
        hook(native_root)
        return True
    if backend.process_local or backend.stateless:
        return False
    base = getattr(backend, "base", None)
    if not isinstance(base, str):
        raise SafetyError(f"do not know how to clean up on a {backend.scheme} backend")
    path = os.fsdecode(native_root)
    real_base = os.path.realpath(base)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise SafetyError(f"refusing to remove {path}: not a real directory")
    if not safety.is_under(path, real_base) or os.path.realpath(path) == real_base:
        raise SafetyError(f"refusing to remove {path}: not strictly below the base directory {real_base}")
    shutil.rmtree(path)
    return True
