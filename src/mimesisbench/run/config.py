"""The run's configuration: a frozen, validated value, saved as ``config.json`` in every run."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from mimesisbench.datajobs.spec import parse_data_jobs
from mimesisbench.engine.ray_address import parse_engine
from mimesisbench.errors import ConfigError

#: most worker processes (or actors) one run starts: each is a process with its own share of the
#: schedule, so far beyond the machines' cores it only costs memory (and 10**9 would never start)
MAX_WORKERS = 4096
#: most lanes (threads or asyncio tasks) per worker
MAX_CONCURRENCY = 4096


@dataclass(frozen=True)
class RunConfig:
    """What to replay, against what, and how.

    ``time_scale`` multiplies the schedule's times: 1 replays in real time, 0.5 twice as fast,
    0 issues everything as fast as possible (no pacing; drift control is then off).
    ``max_drift_s`` is how far any worker may fall behind before the run stops (None: never).
    ``workers`` None means one worker per file type (the paper's default).
    ``concurrency`` None means the backend's default number of lanes per worker.
    """

    schedule: str
    backend: str
    out: str = "runs"
    workers: int | None = None
    concurrency: int | None = None
    max_drift_s: float | None = 2.0
    time_scale: float = 1.0
    #: an absolute target rate (operations per second): the schedule's times are scaled so that its
    #: mean offered rate is this (``with_rate``: sets ``time_scale``); None: ``time_scale`` as given
    rate: float | None = None
    reuse: bool = False
    skip_phase1: bool = False
    phase1_threads: int | None = None  # None: the backend's phase1_concurrency
    start_margin_s: float = 0.5
    ready_timeout_s: float = 600.0
    engine: str = "local"
    spread: bool = False
    #: live monitoring: serve Prometheus ``/metrics`` on this port during the run (None: off; 0: any free port)
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    #: keep serving this long after the run ended (so a last scrape sees the final counts)
    metrics_linger_s: float = 0.0
    #: server-side metrics: the NameNode's JMX URL (None: derived from an hdfs:// backend: the
    #: cluster ``mimesisbench hdfs up`` started in ``hdfs_workdir`` when the backend names it, else
    #: port 9870; "off": none)
    jmx: str | None = None
    jmx_interval_s: float = 1.0
    #: working directory of a cluster started by ``mimesisbench hdfs up`` (None: its default)
    hdfs_workdir: str | None = None
    #: working directory of a latency proxy started by ``mimesisbench proxy up`` (None: its
    #: default); a run whose backend goes through it records it (``network_proxy``)
    proxy_workdir: str | None = None
    #: data jobs run beside the replay from the same barrier (``--data-job``; ``datajobs.spec``)
    data_jobs: tuple[str, ...] = ()
    #: replay the schedule (False: the data jobs alone, for as long as the replay would last)
    replay: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_jobs", tuple(self.data_jobs))
        parse_data_jobs(self.data_jobs)  # ConfigError naming the bad part
        if not self.replay and not self.data_jobs:
            raise ConfigError("--no-replay runs the data jobs alone: give at least one --data-job")
        if not math.isfinite(self.time_scale) or self.time_scale < 0:
            raise ConfigError(f"--time-scale must be 0 or more (got {self.time_scale})")
        if self.rate is not None and not (math.isfinite(self.rate) and self.rate > 0):
            raise ConfigError(f"--rate must be a positive number of operations per second (got {self.rate})")
        if self.max_drift_s is not None and (not math.isfinite(self.max_drift_s) or self.max_drift_s <= 0):
            raise ConfigError(f"--max-drift must be positive (got {self.max_drift_s})")
        if self.workers is not None and not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"--workers must be 1..{MAX_WORKERS} (got {self.workers})")
        if self.concurrency is not None and not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"--concurrency must be 1..{MAX_CONCURRENCY} lanes per worker (got {self.concurrency})")
        if self.phase1_threads is not None and self.phase1_threads < 1:
            raise ConfigError(f"phase 1 threads must be at least 1 (got {self.phase1_threads})")
        if not (math.isfinite(self.jmx_interval_s) and self.jmx_interval_s > 0):
            raise ConfigError(f"--jmx-interval must be positive (got {self.jmx_interval_s})")
        if self.start_margin_s < 0:
            raise ConfigError("the start margin must not be negative")
        engine = parse_engine(self.engine)  # ConfigError for an unknown engine
        if self.spread and engine.kind != "ray":
            raise ConfigError("--spread puts each worker on its own Ray node: it needs --engine ray (or ray:ADDRESS)")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ConfigError(f"--metrics-port must be 0..65535 (got {self.metrics_port})")
        if not math.isfinite(self.metrics_linger_s) or self.metrics_linger_s < 0:
            raise ConfigError(f"--metrics-linger must not be negative (got {self.metrics_linger_s})")

    def with_rate(self, events: int, last_us: int) -> RunConfig:
        """This config with ``time_scale`` set from ``rate`` for a schedule of ``events``
        operations whose last is due at ``last_us``: the mean offered rate (events over that
        span) scaled to the target. Unchanged without a rate."""
        if self.rate is None:
            return self
        if events < 2 or last_us <= 0:
            raise ConfigError(
                "--rate: the schedule's operations are all due at once (or there is only one); "
                "use --time-scale 0 to issue them as fast as possible"
            )
        offered = events / (last_us / 1e6)
        return replace(self, time_scale=offered / self.rate)

    def resolved(self) -> dict[str, Any]:
        data = asdict(self)
        data["schedule"] = str(Path(self.schedule).resolve())
        return data
