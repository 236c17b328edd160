"""What a micro-benchmark runs: a frozen, validated value (no runtime state)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

from mimesisbench.errors import ConfigError
from mimesisbench.schedule.format import OpCode

#: operation name (NNThroughputBenchmark's spelling where it has one) -> backend op code
OPERATIONS = MappingProxyType(
    {
        "create": OpCode.CREATE,
        "open": OpCode.OPEN,
        "fileStatus": OpCode.GETFILEINFO,
        "listStatus": OpCode.LIST_FILE,
        "listDir": OpCode.LIST_DIR,
        "delete": OpCode.DELETE,
        "mkdirs": OpCode.MKDIRS,
        "rename": OpCode.RENAME_FILE,
    }
)
#: operations that need the N files to exist before the timed part
NEEDS_FILES = frozenset({"open", "fileStatus", "listStatus", "delete", "rename", "listDir"})
#: files per directory when ``dirs`` is not given
FILES_PER_DIR = 1000
MAX_CONCURRENCY = 100_000


@dataclass(frozen=True)
class MicroConfig:
    """One micro-benchmark.

    ``files``: operations timed (and files prepared where the operation needs them); ``listDir``
    lists the ``dirs`` directories round robin ``files`` times. ``dirs``: directories the files
    are spread over (None: one per ``FILES_PER_DIR`` files). ``concurrency``: closed-loop clients
    (``client``: ``threads``, ``asyncio`` for async backends, ``native`` (hdfs with the native
    extension), or ``auto``: native where there is one, else asyncio above 256 clients on async
    backends, threads otherwise). ``prepare_concurrency``: clients for
    the untimed preparation (None: at least 16, or 64 on async backends).
    """

    op: str
    files: int
    backend: str
    concurrency: int = 8
    dirs: int | None = None
    reuse: bool = False
    keep: bool = False
    prepare_concurrency: int | None = None
    client: str = "auto"

    def __post_init__(self) -> None:
        if self.op not in OPERATIONS:
            wanted = {name.lower(): name for name in OPERATIONS}
            hint = wanted.get(self.op.lower())
            extra = f" (did you mean {hint}?)" if hint else ""
            raise ConfigError(f"unknown micro operation {self.op!r}{extra}; choose from {', '.join(OPERATIONS)}")
        if self.files < 1:
            raise ConfigError(f"--files must be at least 1 (got {self.files})")
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"--concurrency must be between 1 and {MAX_CONCURRENCY} (got {self.concurrency})")
        if self.dirs is not None and not 1 <= self.dirs <= self.files:
            raise ConfigError(f"--dirs must be between 1 and --files ({self.files}) (got {self.dirs})")
        if self.prepare_concurrency is not None and not 1 <= self.prepare_concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"prepare concurrency must be between 1 and {MAX_CONCURRENCY}")
        if self.client not in ("auto", "native", "asyncio", "threads"):
            raise ConfigError(f"--client must be auto, native, asyncio or threads (got {self.client!r})")
        if not self.backend.strip():
            raise ConfigError("--backend is required (posix:/dir, memory, null or hdfs://host:port/dir)")

    @property
    def op_code(self) -> OpCode:
        return OPERATIONS[self.op]

    @property
    def n_dirs(self) -> int:
        return self.dirs if self.dirs is not None else max(1, math.ceil(self.files / FILES_PER_DIR))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["dirs"] = self.n_dirs
        return data
