"""Starting runs from the same state on a posix base: each schedule's namespace built once by
phase 1 and copied aside inside the base, and copied back before every run (an experiment's runs,
a capacity search's trials)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from mimesisbench.run.config import RunConfig

#: where a posix experiment keeps each schedule's namespace as phase 1 left it, inside its base
POSIX_CHECKPOINTS = ".mimesisbench-checkpoints"


class PosixReset:
    """A plain ``posix:`` base: each schedule's namespace built once below ``base/<hash>`` and
    copied to ``base/.mimesisbench-checkpoints/<hash>``; before every run the working tree is
    removed and copied back, so every run starts from the tree phase 1 made. Everything made or
    removed lies inside the base the experiment was given."""

    def __init__(self, backend: str, announce: Callable[[str], None]) -> None:
        from mimesisbench.backends.safety import prepare_base

        self.root = Path(os.path.abspath(backend.removeprefix("posix:")))  # a symlink stays one: refused below
        prepare_base(str(self.root), reuse=False)  # a foreign non-empty directory is refused, as run refuses it
        self.announce = announce

    def start_run(self, schedule: Path, key: str) -> str:
        from mimesisbench.run.coordinator import prepare_namespace

        work = self.root / key
        saved = self.root / POSIX_CHECKPOINTS / key
        if not saved.is_dir():
            self.announce(f"building the namespace of schedule {key} once, then a copy of it")
            prepare_namespace(RunConfig(schedule=str(schedule), backend=f"posix:{work}"))
            partial = saved.with_name(key + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(work, partial, symlinks=True)
            partial.rename(saved)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(saved, work, symlinks=True)
        return f"posix:{work}"


def resets_by_copy(backend: str | None) -> bool:
    """Whether runs on ``backend`` can start from a copy of phase 1's tree: a plain posix base
    (a wrapped one, ``delay:2ms+posix:...``, replays on what the earlier runs left)."""
    return backend is not None and backend.startswith("posix:") and "+" not in backend
