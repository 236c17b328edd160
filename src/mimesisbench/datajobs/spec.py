"""What a data job is (IOR-like writers and readers beside the metadata replay): a frozen,
validated config parsed from the ``run --data-job`` text. No I/O here.

Grammar: ``LAYOUT[:key=value,...]``, for example::

    n-n:tasks=2,block=4MiB,transfer=256KiB,segments=4,ops=write+read
    n-1-strided:tasks=4,block=64KiB,transfer=64KiB,segments=64
    n-1-segmented:tasks=2,block=8MiB,transfer=1MiB

Layouts, as IOR and Molina-Estolano et al. name them (``datajobs.layout`` computes the offsets):

* ``n-n``: a file per task; task t writes its file from offset 0, ``segments * block`` bytes;
* ``n-1-segmented``: one shared file, task t owns one contiguous region of ``segments * block``
  bytes (checkpoint writers that each dump their memory to their own part of one file);
* ``n-1-strided``: one shared file, segment s holds one block of every task in task order (IOR's
  layout with ``-s`` segments): the tasks' blocks interleave through the file.

Keys: ``tasks`` (processes, default 2), ``block`` (contiguous bytes of one task per segment,
default 1MiB), ``transfer`` (bytes per call, default 64KiB; divides ``block``), ``segments``
(default 1), ``ops`` (``write``, ``read`` or ``write+read``: a pass writes the whole layout, then
reads it back; default ``write``), ``fsync`` (``true``: fsync each task's file after a pass of
writes, counted as a call of its own; default false), ``keep`` (``true``: leave the files after
the run; default false), ``name`` (default ``data<N>``, N its place on the command line). A data
job repeats whole passes until the replay's last operation is due (at least one pass), unless
``passes=N`` fixes the number. Each task makes its passes on its own: unlike IOR's MPI barrier
between the write and the read phase, no task waits for the others (they may run on other
hosts, as a run's workers do), so on a shared file one task may read while another writes.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from mimesisbench.errors import ConfigError
from mimesisbench.units import parse_flag, parse_size

LAYOUTS = ("n-n", "n-1-segmented", "n-1-strided")
OPS = ("write", "read")
MAX_TASKS = 1024
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_KEYS = ("tasks", "block", "transfer", "segments", "ops", "fsync", "keep", "name", "passes")


@dataclass(frozen=True)
class DataJob:
    """One data job: its layout and sizes (see the module docstring)."""

    name: str
    layout: str = "n-n"
    tasks: int = 2
    block: int = 1024**2
    transfer: int = 64 * 1024
    segments: int = 1
    ops: tuple[str, ...] = ("write",)
    fsync: bool = False
    keep: bool = False
    #: whole passes to make (None: repeat until the replay's last operation is due, at least one)
    passes: int | None = None

    def __post_init__(self) -> None:
        where = f"--data-job {self.name}"
        if self.layout not in LAYOUTS:
            raise ConfigError(f"{where}: unknown layout {self.layout!r} (one of {', '.join(LAYOUTS)})")
        if not 1 <= self.tasks <= MAX_TASKS:
            raise ConfigError(f"{where}: tasks must be 1..{MAX_TASKS} (got {self.tasks})")
        if self.transfer < 1 or self.block < 1 or self.segments < 1:
            raise ConfigError(f"{where}: block, transfer and segments must be positive")
        if self.block % self.transfer:
            raise ConfigError(f"{where}: transfer ({self.transfer} B) must divide block ({self.block} B), as in IOR")
        if not self.ops or any(op not in OPS for op in self.ops) or len(set(self.ops)) != len(self.ops):
            raise ConfigError(f"{where}: ops must be write, read or write+read (got {'+'.join(self.ops)})")
        if self.passes is not None and self.passes < 1:
            raise ConfigError(f"{where}: passes must be at least 1 (got {self.passes})")

    @property
    def shared(self) -> bool:
        """One file for every task (N-1)."""
        return self.layout != "n-n"

    @property
    def bytes_per_task(self) -> int:
        return self.segments * self.block

    @property
    def calls_per_task(self) -> int:
        """Transfers of one task in one pass of one op."""
        return self.bytes_per_task // self.transfer

    def describe(self) -> dict[str, Any]:
        out = asdict(self)
        out["ops"] = list(self.ops)
        return out


def parse_data_job(text: str, position: int = 1) -> DataJob:
    """A ``DataJob`` from its ``--data-job`` text (``ConfigError`` naming the bad part)."""
    head, _, rest = text.strip().partition(":")
    layout = head.strip().lower()
    if layout not in LAYOUTS:
        raise ConfigError(f"--data-job {text!r}: unknown layout {head.strip()!r} (one of {', '.join(LAYOUTS)})")
    values: dict[str, Any] = {"name": f"data{position}", "layout": layout}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS:
            raise ConfigError(f"--data-job {text!r}: {item!r} is not one of {', '.join(k + '=...' for k in _KEYS)}")
        what = f"--data-job {text!r}: {key}"
        if key in ("tasks", "segments", "passes"):
            if not value.strip().isdigit():
                raise ConfigError(f"{what}: {value.strip()!r} is not a whole number")
            values[key] = int(value)
        elif key in ("block", "transfer"):
            values[key] = parse_size(value, what)
        elif key == "ops":
            values[key] = tuple(op.strip().lower() for op in value.split("+"))
        elif key in ("fsync", "keep"):
            values[key] = parse_flag(value, what)
        else:
            if not _NAME.match(value.strip()):
                raise ConfigError(f"{what}: {value.strip()!r} is not a name (letters, digits, . _ -)")
            values[key] = value.strip()
    return DataJob(**values)


def parse_data_jobs(texts: tuple[str, ...] | list[str]) -> tuple[DataJob, ...]:
    """Every ``--data-job`` of a run, with distinct names."""
    jobs = tuple(parse_data_job(text, i + 1) for i, text in enumerate(texts))
    names = [job.name for job in jobs]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"--data-job: two data jobs are named {name!r} (give each its own name=...)")
    return jobs
