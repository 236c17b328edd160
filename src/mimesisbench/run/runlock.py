"""One run at a time per base: an exclusive ``flock`` held for the whole run.

Two runs replaying on one base directory would each see the other's creates, renames and
deletes as hundreds of failed operations, and both would look complete. The coordinator takes
``RunLock(path)`` before it looks at the namespace and keeps it until the run directory is
written; a second run finds the lock held and is refused (``SafetyError``, exit 5). The kernel
drops the lock when the holder's process ends, however it ends, so a crashed run never leaves a
stale lock behind (the file itself stays; it holds the holder's pid, for the message only).
``RunLock(directory, what, directory=True)`` locks a directory itself (no file is made).
"""

from __future__ import annotations

import fcntl
import os
from types import TracebackType

from mimesisbench.errors import SafetyError


class RunLock:
    """``with RunLock(path, what):`` holds an exclusive lock on ``path`` (a file, created if
    missing, or with ``directory=True`` an existing directory)."""

    def __init__(self, path: str, what: str, *, directory: bool = False) -> None:
        self.path = path
        self.what = what
        self.directory = directory
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            if self.directory:
                fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            else:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise SafetyError(f"cannot open the run lock {self.path} ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise SafetyError(
                f"another mimesisbench run is using {self.what}{holder} (lock {self.path}); "
                "wait for it to end, or give this run another base directory"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise SafetyError(f"cannot lock {self.path} ({exc.strerror})") from None
        if not self.directory:
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            except OSError:
                pass  # the pid is only for the message; the lock is what counts
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> RunLock:  # noqa: PYI034 - Python 3.10 has no typing.Self
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""
