"""The atomic output helper: only regular files are replaced, failures leave nothing behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from mimesisbench import atomic
from mimesisbench.atomic import atomic_output, atomic_write_text, check_output_path
from mimesisbench.errors import ConfigError, OutputError


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_writes_and_replaces_a_regular_file_leaving_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.json"
    assert atomic_write_text(target, "one") == target
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert names(tmp_path / "sub") == ["out.json"]


def not_regular_outputs(folder: Path) -> list[tuple[Path | str, str]]:
    """Output paths in ``folder`` that are not regular files (and what the message calls them):
    a link to ``kept.json``, a FIFO, a directory, a path ending in ``/``."""
    kept = folder / "kept.json"
    kept.write_text("kept")
    link = folder / "link.json"
    link.symlink_to(kept)
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    directory = folder / "folder"
    directory.mkdir()
    return [(link, "symbolic link"), (fifo, "FIFO"), (directory, "directory"), (f"{folder}/new/", "directory")]


def test_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    for path, kind in not_regular_outputs(tmp_path):
        with pytest.raises(ConfigError, match=f"-o: .*{kind}"):
            atomic_write_text(path, "x")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "kept.json").read_text() == "kept"
    assert (tmp_path / "fifo").is_fifo()
    assert names(tmp_path) == ["fifo", "folder", "kept.json", "link.json"]


def test_a_device_is_refused_without_being_touched() -> None:
    # only the check, which never writes: a regression here must not turn /dev/null into a file
    with pytest.raises(ConfigError, match="device"):
        check_output_path("/dev/null")


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_no_space_left_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    target = tmp_path / "out.log"
    target.write_text("old")
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise full

    if where == "fsync":
        monkeypatch.setattr(atomic.os, "fsync", fail)
    elif where == "replace":
        monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(OutputError, match=f"cannot write {target}: No space left on device") as info, \
            atomic_output(target) as f:  # fmt: skip
        f.write("new " * 1000)
        if where == "write":
            raise full  # what the file's write raises on a full disk
    assert info.value.exit_code == 3
    assert target.read_text() == "old"
    assert names(tmp_path) == ["out.log"]


def test_an_exception_of_the_caller_removes_the_temporary_and_propagates(tmp_path: Path) -> None:
    with pytest.raises(KeyError), atomic_output(tmp_path / "out") as f:
        f.write("partial")
        raise KeyError("boom")
    assert names(tmp_path) == []
