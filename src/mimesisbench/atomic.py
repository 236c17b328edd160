"""Write an output file atomically: into a temporary file beside it, renamed over it when complete.

* Only a regular file is ever replaced: an output path that is a directory, a symbolic link, a
  device (``/dev/full``), a FIFO or a socket is refused (``ConfigError``, exit 2), so a
  command's ``-o`` never turns a device or a link into a regular file.
* The temporary file (``.<name>.<pid>-<random>.tmp`` in the target's directory, so the rename
  stays on one file system) is flushed and synced before the rename; if anything fails, it is
  removed and the target is left as it was. A failed write (no space left, no permission, an I/O
  error) raises ``OutputError`` (exit 3) naming the file.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from mimesisbench.errors import ConfigError, OutputError


def check_output_path(path: str | Path, option: str = "-o") -> Path:
    """``path`` when a regular file may be written there (it does not exist or is a regular
    file); ``ConfigError`` naming ``option`` otherwise."""
    p = Path(path)
    if str(path).endswith(("/", os.sep)):
        raise ConfigError(f"{option}: {path} names a directory; give a file name")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as e:
        raise ConfigError(f"{option}: cannot use {p}: {e.strerror or e}") from None
    if stat.S_ISREG(st.st_mode):
        return p
    kind = (
        "a directory" if stat.S_ISDIR(st.st_mode)
        else "a symbolic link" if stat.S_ISLNK(st.st_mode)
        else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
        else "a FIFO" if stat.S_ISFIFO(st.st_mode)
        else "a socket" if stat.S_ISSOCK(st.st_mode)
        else "not a regular file"
    )  # fmt: skip
    raise ConfigError(f"{option}: {p} is {kind}; refusing to replace it (give the path of a regular file)")


def _describe(e: OSError) -> str:
    return e.strerror or str(e)


@contextmanager
def atomic_output(path: str | Path, *, option: str = "-o") -> Iterator[IO[str]]:
    """A text file (UTF-8) to write ``path``'s new content to; it replaces ``path`` when the
    block ends without an exception (see the module comment). Creates missing parent directories.
    ``option`` names the command-line option the path came from, for the messages."""
    target = check_output_path(path, option)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create the directory of {target}: {_describe(e)}") from None
    tmp = parent / f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        f = open(tmp, "x", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as e:
        raise OutputError(f"cannot write {target}: {_describe(e)}") from None
    try:
        try:
            with f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            check_output_path(target, option)  # not a device or a link (one may have appeared meanwhile)
            os.replace(tmp, target)
        except OSError as e:
            raise OutputError(f"cannot write {target}: {_describe(e)}; nothing was written") from None
    except BaseException:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str, *, option: str = "-o") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns ``path`` as a ``Path``."""
    with atomic_output(path, option=option) as f:
        f.write(text)
    return Path(path)
