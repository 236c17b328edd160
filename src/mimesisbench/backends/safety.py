"""Keeping every action below the base directory.

Rules (for backends on a local or mounted file system):

* relative paths from a schedule start with ``/``, have no empty, ``.`` or ``..`` components,
  no NUL and no backslash (``check_relative`` / ``check_relative_series``);
* the base directory is resolved once (``os.path.realpath``); a base that exists, is not empty
  and does not hold our ownership marker is refused unless ``reuse`` is given;
* after phase 1 every directory of the tree is checked with ``lstat`` to be a real directory
  (not a symlink) whose resolved path is under the base (``verify_tree``); operations never
  follow a symlink in their final component (``O_NOFOLLOW``, ``lstat``, ``unlink``, ``rename``).

A symlink planted inside the tree *during* a run by another user of the same account is out of
scope (the base directory must be private to the benchmark's user).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl

from mimesisbench.errors import SafetyError

#: written into a base directory that MimesisBench created (it may then reuse and clean it)
OWNER_MARKER = ".mimesisbench-base"
#: written after phase 1 completed: holds the schedule's namespace hash
NAMESPACE_MARKER = ".mimesisbench-namespace.json"
#: held (``flock``) by the run working in the base directory (``run.runlock``)
LOCK_FILE = ".mimesisbench-lock"

_BAD_COMPONENT = r"(^|/)(\.|\.\.)?(/|$)"


def check_relative(rel: str) -> str:
    """Validate one relative path (``/`` or ``/a/b``); returns it or raises ``SafetyError``."""
    if not rel.startswith("/"):
        raise SafetyError(f"schedule path {rel!r} does not start with '/'")
    if "\x00" in rel or "\\" in rel:
        raise SafetyError(f"schedule path {rel!r} holds a NUL or a backslash")
    if rel == "/":
        return rel
    for part in rel[1:].split("/"):
        if part in ("", ".", ".."):
            raise SafetyError(f"schedule path {rel!r} has an empty, '.' or '..' component")
    return rel


def check_relative_series(rel: pl.Series) -> None:
    """Vectorised ``check_relative`` over a column of paths (nulls are allowed and skipped)."""
    values = rel.drop_nulls()
    if values.len() == 0:
        return
    bad = ~values.str.starts_with("/")
    bad = bad | values.str.contains("\x00", literal=True) | values.str.contains("\\", literal=True)
    bad = bad | (values.str.slice(1).str.contains(_BAD_COMPONENT) & (values != "/"))
    if bad.any():
        first = values.filter(bad)[0]
        raise SafetyError(f"schedule path {first!r} is not a plain path below the base (empty, '.' or '..')")


def under_base(rel: pl.Series, base: str) -> pl.Series:
    """The schedule's relative paths (checked: no ``..``, start with ``/``) placed under ``base``;
    ``/`` is the base itself."""
    check_relative_series(rel)
    frame = pl.DataFrame({"rel": rel})
    return frame.select(
        pl.when(pl.col("rel") == "/").then(pl.lit(base)).otherwise(pl.lit(base) + pl.col("rel")).alias(rel.name)
    ).to_series()


def is_under(path: str | Path, base_real: str) -> bool:
    """True when ``path`` resolves (following every symlink) to ``base_real`` or below it."""
    real = os.path.realpath(path)
    return real == base_real or real.startswith(base_real.rstrip("/") + "/")


def resolve_base(base: str | Path) -> str:
    """The absolute, symlink-free path of a base directory (it need not exist yet)."""
    text = str(base)
    if not text:
        raise SafetyError("the base directory is empty")
    real = os.path.realpath(os.path.abspath(text))
    if real == "/":
        raise SafetyError("refusing to use '/' as the base directory")
    return real


def prepare_base(base_real: str, *, reuse: bool) -> bool:
    """Make sure ``base_real`` is a directory we may work in; returns True when we created it.

    * missing: created (with parents) and marked as ours;
    * empty: adopted and marked as ours;
    * not empty: accepted when it holds our ownership marker (a previous run, resumable) or when
      ``reuse`` is given; refused otherwise.
    """
    path = Path(base_real)
    if os.path.islink(base_real):
        raise SafetyError(f"the base directory {base_real} is a symlink")
    if not path.exists():
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise SafetyError(f"cannot create the base directory {base_real}: {exc.strerror}") from None
        _mark_owner(path)
        return True
    if not path.is_dir():
        raise SafetyError(f"the base {base_real} exists and is not a directory")
    try:
        names = set(os.listdir(base_real))
    except OSError as exc:
        raise SafetyError(f"cannot list the base directory {base_real}: {exc.strerror}") from None
    if not names:
        _mark_owner(path)
        return True
    if OWNER_MARKER in names or reuse:
        check_writable(base_real)
        return False
    raise SafetyError(
        f"the base directory {base_real} is not empty and was not created by mimesisbench "
        f"(found e.g. {sorted(names)[0]!r}); give an empty or new directory, or --reuse to work in it anyway"
    )


def check_writable(base_real: str) -> None:
    """Refuse a base directory this process cannot write into (read-only mount, permissions):
    every run writes its markers there, and phase 2 creates, renames and deletes below it."""
    if not os.access(base_real, os.W_OK | os.X_OK):
        raise SafetyError(
            f"the base directory {base_real} is not writable (read-only file system or permissions); "
            "a run writes its markers there and creates files below it"
        )


def _mark_owner(path: Path) -> None:
    try:
        (path / OWNER_MARKER).write_text(json.dumps({"created_by": "mimesisbench"}) + "\n", encoding="utf-8")
    except OSError as exc:
        raise SafetyError(f"cannot write into the base directory {path}: {exc.strerror}") from None


def verify_tree(base_real: str, rel_dirs: list[str]) -> None:
    """Check that every existing directory of the tree is a real directory under the base.

    Missing directories are fine (phase 2 may create them); a symlink, a non-directory, or a
    directory whose resolved path leaves the base is a ``SafetyError``.
    """
    import stat

    prefix = base_real.rstrip("/") + "/"
    for rel in rel_dirs:
        if rel == "/":
            continue
        full = base_real + rel
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SafetyError(f"cannot check {full}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise SafetyError(f"{full} is a symlink; refusing to follow it out of the base directory")
        if not stat.S_ISDIR(st.st_mode):
            raise SafetyError(f"{full} is expected to be a directory")
        real = os.path.realpath(full)
        if not real.startswith(prefix):
            raise SafetyError(f"{full} resolves to {real}, outside the base directory {base_real}")
