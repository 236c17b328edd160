"""The experiment file (TOML): what to run, against what, which factors at which levels, in which
design, and which responses to keep. Validated like a profile: unknown keys are errors, and a
bad value names its key.

```toml
name = "rate-and-workers"
seed = 7                 # the randomized run order
replications = 2
responses = ["throughput_ops_per_s", "latency_p99_ms"]
profile = "demo"         # or schedule = "path/to/schedule"
backend = "memory"

[generate]               # generate options of every run (profile only; types = "1,3": those types alone)
duration = "60s"
seed = 3

[run]                    # run options of every run
workers = 2

[[factors]]
name = "rate"
kind = "run"             # a run option...
option = "rate"
levels = ["1000/s", "2000/s"]

[[factors]]
name = "scale"
kind = "generate"        # ...or a generate option
option = "scale_files"
levels = [0.5, 1.0]

[design]
kind = "full"            # full | fractional (generators = "D=AB") | resolution (resolution = 4) | sweep

[prometheus]             # optional: archive what a Prometheus stored during each run
url = "http://127.0.0.1:9090"
metrics_port = 9464      # each run serves /metrics here (for that Prometheus to scrape)
linger = "2s"            # ... and keeps serving it this long after it ends (the last scrapes)
match = ['{__name__=~".+"}']
```
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from mimesisbench.backends.registry import scheme_of
from mimesisbench.backends.simnn import FACTOR_OPTIONS as SIMNN_FACTOR_OPTIONS
from mimesisbench.errors import ConfigError, InputError

#: run options a factor (or the ``[run]`` table) may set
RUN_OPTIONS = ("rate", "time_scale", "workers", "concurrency")
#: generate options a factor (or the ``[generate]`` table) may set
GENERATE_OPTIONS = ("seed", "scale_files", "time_scale", "span_scale", "duration", "flat", "types")
#: managed-HDFS settings a factor (or the ``[managed_hdfs]`` table) may set by name; any Hadoop key
#: (``dfs.namenode.handler.count``...) may be set too
HDFS_OPTIONS = ("handler_count", "fslock_fair", "audit")
_HADOOP_KEY = re.compile(r"^[a-z][a-z0-9_-]*(\.[A-Za-z0-9_-]+)+$")
#: the responses a run gives (its summary's overall figures)
RESPONSES = ("throughput_ops_per_s", "issued", "succeeded", "failed",
             *(f"{g}_{s}_ms" for g in ("latency", "service", "lateness") for s in ("mean", "p50", "p90", "p99", "p999", "max")))
#: the responses of a capacity search (``[capacity]``): q, Wu's p_max, and the closing check's
#: measured mean response time over a peak at p_max
CAPACITY_RESPONSES = ("capacity_ops_per_s", "p_max_ops_per_s", "peak_latency_mean_ms")

Level = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Factor(_Strict):
    """One factor: a run or generate option and its levels (two for a two-level design)."""

    name: str = Field(min_length=1)
    kind: Literal["run", "generate", "hdfs", "simnn"]
    option: str
    levels: list[Level] = Field(min_length=2)

    @model_validator(mode="after")
    def _known_option(self) -> Factor:
        if self.kind == "hdfs":
            if self.option not in HDFS_OPTIONS and not _HADOOP_KEY.match(self.option):
                raise ValueError(f"option: {self.option!r} is neither one of {', '.join(HDFS_OPTIONS)} nor a Hadoop key "
                                 "(dfs.namenode.handler.count...)")
        elif self.kind == "simnn":
            if self.option not in SIMNN_FACTOR_OPTIONS:
                raise ValueError(f"option: {self.option!r} is not a simnn option a factor can set "
                                 f"({', '.join(SIMNN_FACTOR_OPTIONS)})")
        else:
            known = RUN_OPTIONS if self.kind == "run" else GENERATE_OPTIONS
            if self.option not in known:
                raise ValueError(f"option: {self.option!r} is not a {self.kind} option a factor can set ({', '.join(known)})")
        if len({str(v) for v in self.levels}) != len(self.levels):
            raise ValueError("levels: a level is listed twice")
        return self


class Design(_Strict):
    kind: Literal["full", "fractional", "resolution", "sweep"] = "full"
    generators: str | None = None
    resolution: int | None = None

    @model_validator(mode="after")
    def _complete(self) -> Design:
        if self.kind == "fractional" and not self.generators:
            raise ValueError("generators: a fractional design needs them (e.g. \"D=AB E=AC\")")
        if self.kind == "resolution" and self.resolution is None:
            raise ValueError("resolution: a design by resolution needs it (3, 4, 5...)")
        return self


class ManagedHdfs(_Strict):
    """The system under test as a managed single-node HDFS (``mimesisbench hdfs``): started here,
    its namespace built once per schedule and checkpointed, and every run started from that
    checkpoint with the run's own settings."""

    #: the cluster's working directory (None: ``hdfs`` in the experiment directory; relative: to the file's folder)
    workdir: str | None = None
    base: str = "/bench"
    heap: str = "1g"
    handler_count: int | None = Field(default=None, ge=1)
    fslock_fair: bool | None = None
    audit: bool = True
    settings: dict[str, str] = Field(default_factory=dict)


def _readable(text: str, info: ValidationInfo, kind: str) -> str:
    """``text`` when ``units`` reads it as a ``kind`` (duration or rate); else the reason, for
    pydantic to name the key."""
    from mimesisbench.units import parse_duration_s, parse_rate

    name = str(info.field_name)
    try:
        (parse_rate if kind == "rate" else parse_duration_s)(text, option=name)
    except ConfigError as e:
        raise ValueError(str(e).removeprefix(f"{name}: ")) from None
    return text


class Prometheus(_Strict):
    """A Prometheus server whose samples during each run are archived with it (``prometheus.parquet``
    in the run directory), and the port each run serves its own series on for that server to scrape."""

    url: str = Field(pattern=r"^https?://")
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    linger: str = "0s"
    match: list[str] = Field(default_factory=lambda: ['{__name__=~".+"}'], min_length=1)

    @field_validator("linger")
    @classmethod
    def _duration(cls, text: str, info: ValidationInfo) -> str:
        return _readable(text, info, "duration")


class Capacity(_Strict):
    """Each design point's capacity instead of one run (``study.capacity_search``): runs at target
    rates, doubling from ``start`` then bisecting to ``tolerance``; with ``bound`` and
    ``peak_length``, Wu's p_max, and with ``check`` a peak of that length at p_max, run."""

    start: str = "1000/s"
    tolerance: float = Field(default=0.05, gt=0, lt=1)
    max_trials: int = Field(default=16, ge=2)
    bound: str | None = None
    peak_length: str | None = None
    network: str = "0ms"
    check: bool = False

    @field_validator("start")
    @classmethod
    def _rate(cls, text: str, info: ValidationInfo) -> str:
        return _readable(text, info, "rate")

    @field_validator("bound", "peak_length", "network")
    @classmethod
    def _duration(cls, text: str | None, info: ValidationInfo) -> str | None:
        return None if text is None else _readable(text, info, "duration")

    @model_validator(mode="after")
    def _peak(self) -> Capacity:
        if (self.bound is None) != (self.peak_length is None):
            raise ValueError("bound, peak_length: give both (Wu's p_max needs the bound B and the peak's length T)")
        if self.check and self.bound is None:
            raise ValueError("check: the closing check runs a peak at p_max: give bound and peak_length")
        return self


class PaperFigure(_Strict):
    """A published figure to set ours beside: the ratio of the mean ``response`` of the runs at
    the levels ``of`` to that of the runs at ``over`` (factor name -> level), which ``source``
    gave as ``value`` (e.g. flat over hierarchical throughput, 0.52)."""

    source: str = Field(min_length=1)
    says: str = Field(min_length=1)
    response: str
    of: dict[str, Level] = Field(min_length=1)
    over: dict[str, Level] = Field(min_length=1)
    value: float = Field(gt=0)


class Experiment(_Strict):
    """A whole experiment file."""

    name: str = Field(min_length=1)
    seed: int = 1
    replications: int = Field(default=1, ge=1)
    responses: list[str] = Field(default_factory=lambda: ["throughput_ops_per_s", "latency_p99_ms"], min_length=1)
    profile: str | None = None
    schedule: str | None = None
    backend: str | None = None
    managed_hdfs: ManagedHdfs | None = None
    generate: dict[str, Level] = Field(default_factory=dict)
    run: dict[str, Level] = Field(default_factory=dict)
    factors: list[Factor] = Field(min_length=1)
    design: Design = Field(default_factory=Design)
    prometheus: Prometheus | None = None
    capacity: Capacity | None = None
    paper: list[PaperFigure] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> Experiment:
        if (self.backend is None) == (self.managed_hdfs is None):
            raise ValueError("backend, managed_hdfs: give exactly one (a backend URL, or a managed HDFS to start)")
        if self.managed_hdfs is None and any(f.kind == "hdfs" for f in self.factors):
            raise ValueError("factors: an hdfs factor needs [managed_hdfs] (the settings of a cluster it starts)")
        if any(f.kind == "simnn" for f in self.factors) and scheme_of(self.backend or "") != "simnn":
            raise ValueError('factors: a simnn factor needs backend = "simnn:..." (the simulated NameNode it sets)')
        if (self.profile is None) == (self.schedule is None):
            raise ValueError("profile, schedule: give exactly one (a profile is generated per design point)")
        known = RESPONSES if self.capacity is None else CAPACITY_RESPONSES
        unknown = [r for r in self.responses if r not in known]
        if unknown:
            what = "one of" if self.capacity is None else "one of a capacity search's"
            raise ValueError(f"responses: {unknown[0]!r} is not {what} {', '.join(known)}")
        if self.capacity is not None and ("rate" in self.run or any(f.option == "rate" for f in self.factors
                                                                    if f.kind == "run")):
            raise ValueError("capacity: the search sets the rate of every trial; no rate in [run] nor as a factor")
        for table, known in (("generate", GENERATE_OPTIONS), ("run", RUN_OPTIONS)):
            bad = [k for k in getattr(self, table) if k not in known]
            if bad:
                raise ValueError(f"{table}.{bad[0]}: not an option this table takes ({', '.join(known)})")
        names = [f.name for f in self.factors]
        if len(set(names)) != len(names):
            raise ValueError("factors: two factors share a name")
        if self.schedule is not None and any(f.kind == "generate" for f in self.factors):
            raise ValueError("factors: a generate factor needs a profile, not a schedule")
        for i, fig in enumerate(self.paper):
            if fig.response not in self.responses:
                raise ValueError(f"paper.{i}.response: {fig.response!r} is not one of the experiment's responses")
            for side in ("of", "over"):
                for name, level in getattr(fig, side).items():
                    factor = next((f for f in self.factors if f.name == name), None)
                    if factor is None:
                        raise ValueError(f"paper.{i}.{side}: {name!r} is not a factor")
                    if str(level) not in {str(v) for v in factor.levels}:
                        raise ValueError(f"paper.{i}.{side}.{name}: {level!r} is not one of its levels")
        if self.design.kind == "sweep":
            if len(self.factors) != 1:
                raise ValueError("design: a sweep has one factor")
        else:
            odd = [factor for factor in self.factors if len(factor.levels) != 2]
            if odd:
                raise ValueError(f"factors: {odd[0].name!r} has {len(odd[0].levels)} levels; a two-level design "
                                 "takes two (a sweep, one factor at many)")
        return self


def load_experiment(path: Path) -> Experiment:
    """Read and validate an experiment file; a bad key is named (exit 2), an unreadable file exits 3."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"cannot read experiment file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read experiment file {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"experiment file {path}: not TOML: {e}") from None
    try:
        return Experiment.model_validate(data)
    except ValidationError as e:
        keys, message = first_error(e)
        raise ConfigError(f"experiment file {path}: {'.'.join(keys) + ': ' if keys else ''}{message}") from None


def first_error(e: ValidationError) -> tuple[list[str], str]:
    """The first problem pydantic found: the keys leading to it (empty: the whole table) and what
    is wrong, without pydantic's "Value error, " prefix."""
    first = e.errors()[0]
    return [str(part) for part in first["loc"]], str(first["msg"]).removeprefix("Value error, ")
