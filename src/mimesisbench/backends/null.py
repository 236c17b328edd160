"""``null``: every operation succeeds at once; measures the harness's own ceiling.

It performs nothing and skips nothing (``NOTHING``): every operation of a schedule, whatever its
command (``NAMENODE`` too), is issued, returns at once and is timed, so the figures are the
harness's cost per operation.
"""

from __future__ import annotations

from typing import ClassVar

from mimesisbench.backends.base import NOTHING, Backend, Capabilities


class NullBackend(Backend):
    """Does nothing. Samples are still recorded for every operation."""

    scheme: ClassVar[str] = "null"
    process_local: ClassVar[bool] = True
    stateless: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 1

    def __init__(self, url: str = "null") -> None:
        super().__init__(url)
        self._marker: str | None = None

    @property
    def capabilities(self) -> Capabilities:
        return NOTHING

    def read_marker(self) -> str | None:
        return self._marker

    def write_marker(self, text: str) -> None:
        self._marker = text

    def create(self, path: str) -> None:
        pass

    def open(self, path: str) -> None:
        pass

    def list_file(self, path: str) -> None:
        pass

    def list_dir(self, path: str) -> list[str] | None:
        return None

    def delete(self, path: str) -> None:
        pass

    def mkdirs(self, path: str) -> None:
        pass

    def rename(self, src: str, dst: str) -> None:
        pass

    def getfileinfo(self, path: str) -> None:
        pass
