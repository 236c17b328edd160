"""Wrapping backends: ``delay:``, ``rate:`` and ``fail:`` in front of any backend.

URLs compose with ``+``, outermost first: ``delay:2ms+posix:/dir``, ``rate:5000+null``,
``fail:0.01+memory``, ``delay:1ms+rate:2000+null`` (the grammar of a head: ``wrap_spec``). A
wrapper is the backend it wraps for everything but the measured operations:

* the replay and ``micro`` call ``sync_ops``/``async_ops``: each operation (a command the inner
  backend performs, maps or accepts as a no-op) goes through the wrapper first: a delay is
  slept before it, a rate-limit slot waited for, a failure raised instead of it;
* setup, phase 1 (the namespace build calls the operations directly), markers, locks, paths and
  capabilities are the inner backend's, unchanged: the wrappers shape the measured phase only;
* a wrapper offers no native lane (``native_lane_runner`` is None), so the posix native lane
  never bypasses it: its workers replay in Python lanes;
* the class attributes a run reads (``process_local``, ``is_async``, lanes, ...) are the inner
  class's (``wrapper_class`` makes the subclass that carries them).

An injected failure is an ``InjectedFailure`` (an ``OSError``, ``EIO``): a failed operation,
counted as ``other``, never fatal. Delays and failures are drawn from ``seed`` and the worker's
``stream`` (``worker_urls`` gives each worker its own). A rate is for the whole run: the run's
workers share one bucket file in the run directory (``pacer``).

Sleeping: a thread's sleep overshoots by the kernel's timer slack (~50-100 µs); each process
measures that once and sleeps that much less, so a delay's median is the one asked for. Async
backends (hdfs) sleep on the event loop, whose timer has a 1 ms granularity.
"""

from __future__ import annotations

import asyncio
import errno
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from mimesisbench.backends.base import (
    AsyncOp,
    Backend,
    Capabilities,
    Inspection,
    NativeLaneRunner,
    Outcome,
    SyncOp,
)
from mimesisbench.backends.pacer import Pacer, bucket_file_size
from mimesisbench.backends.wrap_spec import (
    RATE_CLASSES,
    DelaySpec,
    FailSpec,
    RateSpec,
    ServiceTimes,
    WrapSpec,
    parse_head,
    with_options,
)
from mimesisbench.errors import ConfigError
from mimesisbench.schedule.format import OpCode, op_class

#: the class attributes a run reads from a backend, taken from the wrapped backend's class
INHERITED = ("process_local", "stateless", "is_async", "default_concurrency", "phase1_concurrency", "thread_safe")
#: sleeps measured per process to learn the timer's overshoot
_CALIBRATION_SLEEPS = 7
_CALIBRATION_S = 0.001
#: the overshoot subtracted at most (a busier machine wakes later still; that is its latency)
_MAX_OVERSHOOT_S = 0.0005


class InjectedFailure(OSError):
    """A failure ``fail:`` injected (counted as ``other``)."""


def split_head(url: str) -> tuple[str, str]:
    """``delay:2ms+posix:/d`` -> (``delay:2ms``, ``posix:/d``): the head ends at the first ``+``
    outside parentheses (``delay:run(/runs/a+b)+null``)."""
    depth = 0
    for i, ch in enumerate(url):
        depth += (ch == "(") - (ch == ")")
        if ch == "+" and depth == 0:
            head, rest = url[:i].strip(), url[i + 1:].strip()
            if rest:
                return head, rest
            break
    raise ConfigError(f"backend {url!r}: a wrapper needs a backend to wrap, e.g. {url.split('+')[0]}+posix:/dir")


def _overshoot_s() -> float:
    """How much longer than asked a 1 ms sleep takes here (the median of a few)."""
    over = []
    for _ in range(_CALIBRATION_SLEEPS):
        t0 = time.perf_counter()
        time.sleep(_CALIBRATION_S)
        over.append(time.perf_counter() - t0 - _CALIBRATION_S)
    return min(max(float(np.median(over)), 0.0), _MAX_OVERSHOOT_S)


class WrappingBackend(Backend):
    """A backend in front of another (see the module's docstring). Subclasses implement
    ``_before`` (blocking) and ``_abefore`` (async): what happens before each operation."""

    kind: ClassVar[str] = ""
    #: the wrapped backend's class (``wrapper_class`` sets it; the registry resolved it from the URL)
    inner_class: ClassVar[type[Backend]]

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.head, inner_url = split_head(url)
        self.spec: WrapSpec = parse_head(self.head)
        self.inner = self.inner_class(inner_url)

    # ------------------------------------------------------------------ the inner backend's
    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def default_lanes(self) -> int:
        return self.inner.default_lanes()

    def setup(self, *, reuse: bool) -> None:
        self.inner.setup(reuse=reuse)

    def connect(self) -> None:
        self.inner.connect()

    def close(self) -> None:
        self.inner.close()

    def read_marker(self) -> str | None:
        return self.inner.read_marker()

    def write_marker(self, text: str) -> None:
        self.inner.write_marker(text)

    def lock_path(self) -> str | None:
        return self.inner.lock_path()

    def verify_namespace(self, rel_dirs: list[str]) -> None:
        self.inner.verify_namespace(rel_dirs)

    def native_paths(self, rel: Any) -> Any:
        return self.inner.native_paths(rel)

    def classify(self, exc: BaseException) -> Outcome:
        return Outcome.OTHER if isinstance(exc, InjectedFailure) else self.inner.classify(exc)

    def native_lane_runner(self) -> NativeLaneRunner | None:
        return None  # the native lane would bypass the wrapper

    def inspect(self, path: Any) -> Inspection | None:
        return self.inner.inspect(path)

    def describe(self) -> dict[str, Any]:
        inner = self.inner.describe()
        chain = [self.head, *(inner.get("chain") or [self.inner.url])]
        return {"scheme": self.kind, "url": self.url, "chain": chain, "wrapper": self.spec.describe(), "wraps": inner}

    def worker_urls(self, n: int, state_dir: Path) -> list[str]:
        inner = self.inner.worker_urls(n, state_dir)
        return [f"{self._worker_head(i, state_dir)}+{inner[i]}" for i in range(n)]

    def _worker_head(self, index: int, state_dir: Path) -> str:
        return with_options(self.head, stream=str(index + 1))

    # phase 1 and setup: straight to the inner backend
    def create(self, path: str) -> None:
        self.inner.create(path)

    def open(self, path: str) -> None:
        self.inner.open(path)

    def list_file(self, path: str) -> None:
        self.inner.list_file(path)

    def list_dir(self, path: str) -> list[str] | None:
        return self.inner.list_dir(path)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def mkdirs(self, path: str) -> None:
        self.inner.mkdirs(path)

    def rename(self, src: str, dst: str) -> None:
        self.inner.rename(src, dst)

    def getfileinfo(self, path: str) -> None:
        self.inner.getfileinfo(path)

    # ------------------------------------------------------------------ the measured operations
    def operation_table(self) -> dict[OpCode, SyncOp]:
        return {op: self._wrap(op, fn) for op, fn in self.inner.operation_table().items()}

    def sync_ops(self) -> dict[OpCode, SyncOp]:
        return {op: self._wrap(op, fn) for op, fn in self.inner.sync_ops().items()}

    def async_operation_table(self) -> dict[OpCode, AsyncOp]:
        return {op: self._awrap(op, fn) for op, fn in self.inner.async_operation_table().items()}

    def async_ops(self) -> dict[OpCode, AsyncOp]:
        return {op: self._awrap(op, fn) for op, fn in self.inner.async_ops().items()}

    def _wrap(self, op: OpCode, fn: SyncOp) -> SyncOp:
        before = self._before

        def call(arg: Any) -> object:
            before(op)
            return fn(arg)

        return call

    def _awrap(self, op: OpCode, fn: AsyncOp) -> AsyncOp:
        before = self._abefore

        async def call(arg: Any) -> object:
            await before(op)
            return await fn(arg)

        return call

    def _before(self, op: OpCode) -> None:
        raise NotImplementedError

    async def _abefore(self, op: OpCode) -> None:
        raise NotImplementedError


class DelayBackend(WrappingBackend):
    """``delay:LAW``: each operation is preceded by a delay drawn from LAW."""

    kind: ClassVar[str] = "delay"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        assert isinstance(self.spec, DelaySpec)
        self._delay: DelaySpec = self.spec
        self._rng = np.random.default_rng([self._delay.seed, self._delay.stream])
        self._times = ServiceTimes.load(self._delay.run_dir) if self._delay.run_dir is not None else None
        self._overshoot: float | None = None
        self._draw = self._sampler()

    def _sampler(self) -> Callable[[OpCode], float]:
        rng, p, law = self._rng, self._delay.params, self._delay.law
        if law == "fixed":
            return lambda _op: p[0]
        if law == "uniform":
            return lambda _op: float(rng.uniform(p[0], p[1]))
        if law == "exponential":
            return lambda _op: float(rng.exponential(p[0]))
        if law == "lognormal":
            mu, sigma = float(np.log(p[0])), p[1]
            return lambda _op: float(rng.lognormal(mu, sigma))
        times = self._times
        assert times is not None

        def empirical(op: OpCode) -> float:
            values = times.for_op(op)
            return float(values[rng.integers(values.size)])

        return empirical

    def connect(self) -> None:
        super().connect()
        self._overshoot = _overshoot_s()

    def draw(self, op: OpCode) -> float:
        """One delay (s) for ``op``."""
        return self._draw(op)

    def _sleep_s(self, op: OpCode) -> float:
        if self._overshoot is None:  # used without connect (the coordinator's instance)
            self._overshoot = _overshoot_s()
        return max(self._draw(op) - self._overshoot, 0.0)

    def _before(self, op: OpCode) -> None:
        time.sleep(self._sleep_s(op))

    async def _abefore(self, op: OpCode) -> None:
        await asyncio.sleep(self._sleep_s(op))

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["wrapper"]["mean_s"] = self._delay.mean_s(self._times)
        return out


class RateBackend(WrappingBackend):
    """``rate:R`` or ``rate:read=R1,write=R2``: operations wait for a slot of their class's bucket."""

    kind: ClassVar[str] = "rate"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        assert isinstance(self.spec, RateSpec)
        self._rate: RateSpec = self.spec
        names = ["all"] if "all" in self._rate.rates else [c for c in RATE_CLASSES if c in self._rate.rates]
        self._bucket_of: dict[str, int] = {name: i for i, name in enumerate(names)}
        self._pacer: Pacer | None = None
        self._pacer_lock = threading.Lock()  # lanes may ask for the first slot at once
        self._names = names

    def _bucket(self, op: OpCode) -> int | None:
        return self._bucket_of.get("all", self._bucket_of.get(op_class(op)))

    def _slot_wait_s(self, op: OpCode) -> float:
        bucket = self._bucket(op)
        if bucket is None:  # a class without a rate goes at once
            return 0.0
        pacer = self._pacer
        if pacer is None:
            with self._pacer_lock:
                if self._pacer is None:
                    self._pacer = Pacer([self._rate.rates[n] for n in self._names], self._rate.burst, self._rate.shared)
                pacer = self._pacer
        return max(pacer.reserve(bucket) - time.monotonic_ns(), 0) / 1e9

    def _before(self, op: OpCode) -> None:
        wait = self._slot_wait_s(op)
        if wait > 0:
            time.sleep(wait)

    async def _abefore(self, op: OpCode) -> None:
        wait = self._slot_wait_s(op)
        if wait > 0:
            await asyncio.sleep(wait)

    def _worker_head(self, index: int, state_dir: Path) -> str:
        if self._rate.shared is None:
            state_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=state_dir, prefix="rate-", suffix=".bucket", delete=False) as f:
                f.write(b"\0" * bucket_file_size(len(self._names)))
            self._rate = RateSpec(self._rate.rates, self._rate.burst, f.name)
        return with_options(self.head, shared=self._rate.shared or "")

    def close(self) -> None:
        if self._pacer is not None:
            self._pacer.close()
            self._pacer = None
        super().close()


class FailBackend(WrappingBackend):
    """``fail:P``: each operation fails with probability P instead of running."""

    kind: ClassVar[str] = "fail"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        assert isinstance(self.spec, FailSpec)
        self._p = self.spec.probability
        self._rng = np.random.default_rng([self.spec.seed, self.spec.stream])

    def _fails(self) -> bool:
        return self._p > 0 and float(self._rng.random()) < self._p

    def _raise(self, op: OpCode) -> None:
        raise InjectedFailure(errno.EIO, f"injected failure (fail:{self._p:g}) of {op.label}")

    def _before(self, op: OpCode) -> None:
        if self._fails():
            self._raise(op)

    async def _abefore(self, op: OpCode) -> None:
        if self._fails():
            self._raise(op)


WRAPPERS: Mapping[str, type[WrappingBackend]] = MappingProxyType(
    {"delay": DelayBackend, "rate": RateBackend, "fail": FailBackend}
)


def wrapper_class(kind: str, inner: type[Backend]) -> type[WrappingBackend]:
    """The wrapper class for ``kind`` in front of a backend of class ``inner``: a subclass carrying
    ``inner``'s class attributes (``INHERITED``) and its operation errors plus ``InjectedFailure``."""
    base = WRAPPERS[kind]
    attrs: dict[str, Any] = {name: getattr(inner, name) for name in INHERITED}
    attrs["op_errors"] = (*inner.op_errors, InjectedFailure)
    attrs["scheme"] = kind
    attrs["inner_class"] = inner
    attrs["__module__"] = __name__
    return type(f"{base.__name__}Over{inner.__name__}", (base,), attrs)
