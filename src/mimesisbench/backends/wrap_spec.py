"""What a wrapping backend's URL head says (``delay:...``, ``rate:...``, ``fail:...``): parsed
into typed, frozen specs. No I/O here except ``ServiceTimes.load`` (a measured run's samples).

Grammar (the head is what comes before the first ``+``; options follow a ``?``, ``&``-separated)::

    delay:2ms                     a fixed delay (units ns, us, µs, ms, s)
    delay:uniform(1ms,3ms)        uniform between two durations
    delay:exponential(2ms)        exponential with that mean
    delay:lognormal(2ms,0.5)      log-normal with median 2 ms and shape sigma 0.5
    delay:run(RUN_DIR)            a measured run's service times (per command; all of them for a
                                  command the run did not have)
    rate:5000  rate:5000/s        one token bucket for every operation, ops/s for the whole run
    rate:read=4000,write=500      one bucket per class (write: the commands that change the namespace)
    fail:0.01                     each operation fails (counted as ``other``) with this probability

Options: ``seed=N`` (delay, fail: the draws; default 0), ``burst=N`` (rate: operations that may
go at once after an idle spell; default 1). ``stream`` and ``shared`` are set by the run for
its workers (a worker's draws, and the bucket file all of a run's workers share).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench.errors import ConfigError, InputError
from mimesisbench.schedule.format import OpCode
from mimesisbench.units import scaled

WRAPPER_KINDS = ("delay", "rate", "fail")
RATE_CLASSES = ("read", "write")

_UNITS = MappingProxyType({"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0})
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)\s*$")
_CALL = re.compile(r"^\s*([a-z]+)\s*\((.*)\)\s*$", re.DOTALL)


def parse_duration(text: str, what: str) -> float:
    """Seconds from ``2ms``, ``150us``, ``1.5s`` (a unit is required: ``2`` is ambiguous)."""
    value = scaled(_DURATION, _UNITS, text)
    if value is None:
        raise ConfigError(f"{what}: {text.strip()!r} is not a duration (write e.g. 2ms, 150us, 1.5s)")
    return value


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{what}: {text.strip()!r} is not a finite number")
    return value


def _options(text: str, allowed: tuple[str, ...], head: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split("&"))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise ConfigError(f"{head}: unknown option {item!r} (options: {', '.join(allowed)})")
        out[key] = value.strip()
    return out


def _int_option(options: Mapping[str, str], key: str, default: int, head: str, minimum: int = 0) -> int:
    if key not in options:
        return default
    try:
        value = int(options[key])
    except ValueError:
        raise ConfigError(f"{head}: {key}={options[key]!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{head}: {key} must be >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class ServiceTimes:
    """A measured run's service times (s) of its successful operations, per command label."""

    run_dir: str
    by_command: Mapping[str, NDArray[np.float64]]
    pooled: NDArray[np.float64]

    @classmethod
    def load(cls, run_dir: str) -> ServiceTimes:
        path = Path(run_dir) / "samples.parquet"
        try:
            frame = pl.read_parquet(path, columns=["op", "start_us", "end_us", "outcome"])
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise InputError(f"delay:run({run_dir}): cannot read {path} ({exc})") from None
        ok = frame.filter(pl.col("outcome").cast(pl.String) == "ok").select(
            pl.col("op").cast(pl.String), ((pl.col("end_us") - pl.col("start_us")) * 1e-6).clip(0.0).alias("s")
        )
        if ok.height == 0:
            raise InputError(f"delay:run({run_dir}): the run has no successful operation to take service times from")
        groups = {str(k[0]): np.sort(g["s"].to_numpy()) for k, g in ok.group_by("op")}
        return cls(run_dir, MappingProxyType(groups), np.sort(ok["s"].to_numpy()))

    def for_op(self, op: OpCode) -> NDArray[np.float64]:
        return self.by_command.get(op.label, self.pooled)


@dataclass(frozen=True)
class DelaySpec:
    """``delay:``: a law of added latency (s)."""

    law: str  # fixed, uniform, exponential, lognormal, run
    params: tuple[float, ...] = ()
    run_dir: str | None = None
    seed: int = 0
    stream: int = 0

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": "delay", "law": self.law, "params_s_or_shape": list(self.params),
                                  "seed": self.seed, "stream": self.stream}
        if self.run_dir is not None:
            out["run_dir"] = self.run_dir
        return out

    def mean_s(self, times: ServiceTimes | None = None) -> float:
        """The law's mean (s): what the conformance suite and a reader expect on average."""
        p = self.params
        if self.law == "fixed":
            return p[0]
        if self.law == "uniform":
            return (p[0] + p[1]) / 2
        if self.law == "exponential":
            return p[0]
        if self.law == "lognormal":
            return p[0] * math.exp(p[1] ** 2 / 2)
        return float(times.pooled.mean()) if times is not None else float("nan")


@dataclass(frozen=True)
class RateSpec:
    """``rate:``: ops/s per class (``all`` or ``read``/``write``), shared by a whole run."""

    rates: Mapping[str, float] = field(default_factory=dict)
    burst: int = 1
    shared: str | None = None

    def describe(self) -> dict[str, object]:
        return {"kind": "rate", "ops_per_s": dict(self.rates), "burst": self.burst,
                "shared_by": "every worker of a run (one bucket file in its parts/); one process outside a run"}


@dataclass(frozen=True)
class FailSpec:
    """``fail:``: the probability that an operation fails (counted as ``other``)."""

    probability: float
    seed: int = 0
    stream: int = 0

    def describe(self) -> dict[str, object]:
        return {"kind": "fail", "probability": self.probability, "seed": self.seed, "stream": self.stream}


WrapSpec = DelaySpec | RateSpec | FailSpec


def _args(inner: str) -> list[str]:
    return [a.strip() for a in inner.split(",")] if inner.strip() else []


def parse_delay(arg: str, options: Mapping[str, str], head: str) -> DelaySpec:
    seed = _int_option(options, "seed", 0, head)
    stream = _int_option(options, "stream", 0, head)
    call = _CALL.match(arg)
    if call is None:
        value = parse_duration(arg, head)
        return DelaySpec("fixed", (value,), seed=seed, stream=stream)
    name, args = call.group(1), _args(call.group(2))
    if name == "run":
        if not call.group(2).strip():
            raise ConfigError(f"{head}: write delay:run(RUN_DIR)")
        return DelaySpec("run", (), run_dir=call.group(2).strip(), seed=seed, stream=stream)
    shapes = {"uniform": 2, "exponential": 1, "lognormal": 2}
    if name not in shapes:
        raise ConfigError(f"{head}: unknown law {name!r} (laws: a duration, uniform(a,b), exponential(mean), "
                          "lognormal(median,sigma), run(RUN_DIR))")
    if len(args) != shapes[name]:
        raise ConfigError(f"{head}: {name} takes {shapes[name]} argument(s), got {len(args)}")
    if name == "lognormal":
        params: tuple[float, ...] = (parse_duration(args[0], head), _number(args[1], head))
        if params[1] < 0:
            raise ConfigError(f"{head}: sigma must be >= 0")
    else:
        params = tuple(parse_duration(a, head) for a in args)
    if name == "uniform" and params[1] < params[0]:
        raise ConfigError(f"{head}: uniform(a,b) needs a <= b")
    return DelaySpec(name, params, seed=seed, stream=stream)


def parse_rate(arg: str, options: Mapping[str, str], head: str) -> RateSpec:
    rates: dict[str, float] = {}
    for item in _args(arg):
        key, sep, value = item.partition("=")
        cls, text = (key.strip(), value) if sep else ("all", key)
        if cls not in ("all", *RATE_CLASSES) or cls in rates:
            raise ConfigError(f"{head}: {item!r}: give one rate (rate:5000) or one per class (rate:read=4000,write=500)")
        text = text.strip().removesuffix("/s")
        rate = _number(text, head)
        if rate <= 0:
            raise ConfigError(f"{head}: a rate must be > 0 ops/s, got {text}")
        rates[cls] = rate
    if not rates or ("all" in rates and len(rates) > 1):
        raise ConfigError(f"{head}: give one rate (rate:5000) or one per class (rate:read=4000,write=500)")
    burst = _int_option(options, "burst", 1, head, minimum=1)
    shared = options.get("shared") or None
    return RateSpec(MappingProxyType(rates), burst, shared)


def parse_fail(arg: str, options: Mapping[str, str], head: str) -> FailSpec:
    p = _number(arg, head)
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"{head}: a failure probability is between 0 and 1, got {arg.strip()}")
    return FailSpec(p, _int_option(options, "seed", 0, head), _int_option(options, "stream", 0, head))


_OPTIONS = MappingProxyType({"delay": ("seed", "stream"), "rate": ("burst", "shared"), "fail": ("seed", "stream")})


def _split_head(head: str) -> tuple[str, str, dict[str, str]]:
    """``delay:lognormal(2ms,0.5)?seed=3`` -> ("delay", "lognormal(2ms,0.5)", {"seed": "3"})."""
    kind, _, rest = head.partition(":")
    kind = kind.strip().lower()
    if kind not in WRAPPER_KINDS:
        raise ConfigError(f"{head!r} is not a wrapper (wrappers: {', '.join(WRAPPER_KINDS)})")
    # options follow the last "?" outside parentheses (a run directory may hold one)
    depth, cut = 0, -1
    for i, ch in enumerate(rest):
        depth += (ch == "(") - (ch == ")")
        if ch == "?" and depth == 0:
            cut = i
    arg, opts = (rest[:cut], rest[cut + 1:]) if cut >= 0 else (rest, "")
    if not arg.strip():
        raise ConfigError(f"{head!r}: say how much (e.g. delay:2ms, rate:5000, fail:0.01)")
    return kind, arg, _options(opts, _OPTIONS[kind], head)


def with_options(head: str, **options: str) -> str:
    """``head`` with these options set (replacing any it had)."""
    kind, arg, opts = _split_head(head)
    opts.update(options)
    return f"{kind}:{arg}?" + "&".join(f"{k}={v}" for k, v in opts.items())


def parse_head(head: str) -> WrapSpec:
    """The spec of one wrapper head (``delay:2ms?seed=3``); raises ``ConfigError`` naming it."""
    kind, arg, options = _split_head(head)
    if kind == "delay":
        return parse_delay(arg, options, head)
    if kind == "rate":
        return parse_rate(arg, options, head)
    return parse_fail(arg, options, head)
