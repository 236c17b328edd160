"""The wrapping backends ``delay:``, ``rate:`` and ``fail:`` (``mimesisbench.backends.wrappers``).

Timing is asserted one way only: a delay or a rate limit may make a loaded machine slower still,
never faster, so the tests check lower bounds (a wrapper that did nothing would fail them), and
the law of the draws on the draws themselves. The figures (p50 of a 2 ms delay, a shared rate
held within 2 %) are measured by ``bench/bench_wrappers.py``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from tests.unit.test_run_schedules import workload

from mimesisbench.backends.base import Outcome
from mimesisbench.backends.memory import MemoryBackend
from mimesisbench.backends.registry import backend_class, innermost_url, open_backend
from mimesisbench.backends.wrap_spec import DelaySpec, FailSpec, RateSpec, parse_head
from mimesisbench.backends.wrappers import DelayBackend, InjectedFailure, RateBackend
from mimesisbench.errors import ConfigError
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.schedule.format import OpCode, op_class

# ------------------------------------------------------------------------------------------ grammar


def test_heads_parse_into_their_specs() -> None:
    assert parse_head("delay:2ms") == DelaySpec("fixed", (0.002,))
    assert parse_head("delay:150us?seed=3") == DelaySpec("fixed", (150e-6,), seed=3)
    assert parse_head("delay:uniform(1ms, 3ms)") == DelaySpec("uniform", (0.001, 0.003))
    assert parse_head("delay:exponential(2ms)") == DelaySpec("exponential", (0.002,))
    assert parse_head("delay:lognormal(2ms,0.5)") == DelaySpec("lognormal", (0.002, 0.5))
    assert parse_head("delay:run(/runs/a?b)?seed=1") == DelaySpec("run", (), run_dir="/runs/a?b", seed=1)
    rate = parse_head("rate:5000/s?burst=10")
    assert isinstance(rate, RateSpec) and dict(rate.rates) == {"all": 5000.0} and rate.burst == 10
    rate = parse_head("rate:read=4000,write=500")
    assert isinstance(rate, RateSpec) and dict(rate.rates) == {"read": 4000.0, "write": 500.0}
    assert parse_head("fail:0.01") == FailSpec(0.01)


@pytest.mark.parametrize(
    ("head", "says"),
    [
        ("delay:2", "not a duration"),
        ("delay:", "say how much"),
        ("delay:gamma(1ms)", "unknown law"),
        ("delay:uniform(3ms,1ms)", "a <= b"),
        ("delay:lognormal(2ms)", "takes 2"),
        ("delay:2ms?sed=1", "unknown option"),
        ("rate:0", "> 0"),
        ("rate:fast", "not a number"),
        ("rate:5000,read=1", "one rate"),
        ("rate:5000?burst=0", "burst must be >= 1"),
        ("fail:1.5", "between 0 and 1"),
        ("fail:nan", "finite"),
    ],
)
def test_a_bad_head_is_a_config_error_naming_it(head: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as info:
        open_backend(f"{head}+null")
    assert head.split("?")[0].split("(")[0] in str(info.value)


def test_a_wrapper_needs_something_to_wrap() -> None:
    for url in ("delay:2ms", "delay:2ms+", "rate:10+"):
        with pytest.raises(ConfigError, match="needs a backend to wrap"):
            open_backend(url)


def test_the_chain_resolves_outermost_first(tmp_path: Path) -> None:
    url = f"delay:1ms+rate:2000+fail:0+posix:{tmp_path / 'a+b'}"
    backend = open_backend(url)
    described = backend.describe()
    assert described["chain"] == ["delay:1ms", "rate:2000", "fail:0", f"posix:{tmp_path / 'a+b'}"]
    assert described["wrapper"]["kind"] == "delay" and described["wraps"]["wrapper"]["kind"] == "rate"
    assert innermost_url(url) == f"posix:{tmp_path / 'a+b'}"
    json.dumps(described)  # goes into the manifest as it is


def test_a_wrapper_class_carries_what_a_run_reads_of_the_inner_one() -> None:
    memory = backend_class("delay:1ms+memory")
    assert memory.process_local and not memory.is_async and memory.scheme == "delay"
    hdfs = backend_class("rate:100+hdfs://127.0.0.1:9/base")  # the class only: nothing is contacted
    assert hdfs.is_async and not hdfs.process_local and hdfs.default_concurrency == 64
    assert InjectedFailure in hdfs.op_errors


def test_operations_are_classed_read_or_write() -> None:
    assert {op for op in (OpCode.CREATE, OpCode.DELETE, OpCode.RENAME_DIR, OpCode.SET_TIMES) if op_class(op) == "write"} == {
        OpCode.CREATE, OpCode.DELETE, OpCode.RENAME_DIR, OpCode.SET_TIMES}
    assert op_class(OpCode.OPEN) == op_class(OpCode.LIST_DIR) == op_class(OpCode.GETFILEINFO) == "read"


# ------------------------------------------------------------------------------------------- delay


def test_delay_laws_draw_what_they_say() -> None:
    n = 20_000
    for head, median, mean in (
        ("delay:lognormal(2ms,0.5)?seed=4", 0.002, 0.002 * np.exp(0.125)),
        ("delay:exponential(2ms)?seed=4", 0.002 * np.log(2), 0.002),
        ("delay:uniform(1ms,3ms)?seed=4", 0.002, 0.002),
    ):
        backend = open_backend(f"{head}+null")
        assert isinstance(backend, DelayBackend)
        draws = np.array([backend.draw(OpCode.OPEN) for _ in range(n)])
        assert abs(np.median(draws) / median - 1) < 0.04, head
        assert abs(draws.mean() / mean - 1) < 0.04, head
        assert abs(backend.describe()["wrapper"]["mean_s"] / mean - 1) < 1e-9


def test_delay_streams_repeat_with_their_seed_and_differ_between_workers(tmp_path: Path) -> None:
    def draws(url: str) -> list[float]:
        b = open_backend(url)
        assert isinstance(b, DelayBackend)
        return [b.draw(OpCode.OPEN) for _ in range(5)]

    urls = open_backend("delay:exponential(1ms)?seed=9+null").worker_urls(2, tmp_path)
    assert draws(urls[0]) == draws(urls[0]) != draws(urls[1])


def test_every_operation_waits_its_delay() -> None:
    backend = open_backend("delay:2ms+null")
    backend.connect()
    ops = backend.sync_ops()
    t0 = time.perf_counter()
    for _ in range(40):
        ops[OpCode.OPEN]("/x")
        ops[OpCode.SET_XATTR]("/x")  # an operation null accepts as a no-op is delayed too
    per_op = (time.perf_counter() - t0) / 80
    # the sleep is shortened by the timer's measured overshoot (at most 0.5 ms)
    assert per_op >= 0.0015


def test_delay_from_a_measured_run(tmp_path: Path) -> None:
    import polars as pl

    from mimesisbench.results.samples import OP_ENUM, OUTCOME_ENUM

    run = tmp_path / "run"
    run.mkdir()
    pl.DataFrame({
        "op": pl.Series(["open"] * 3 + ["create"] * 2, dtype=OP_ENUM),
        "start_us": [0.0, 0.0, 0.0, 0.0, 0.0],
        "end_us": [100.0, 100.0, 100.0, 5000.0, 9e9],
        "outcome": pl.Series(["ok", "ok", "ok", "ok", "other"], dtype=OUTCOME_ENUM),
    }).write_parquet(run / "samples.parquet")
    backend = open_backend(f"delay:run({run})+null")
    assert isinstance(backend, DelayBackend)

    def drawn_us(op: OpCode, n: int) -> set[int]:
        return {round(backend.draw(op) * 1e6) for _ in range(n)}

    assert drawn_us(OpCode.OPEN, 50) == {100}
    assert drawn_us(OpCode.CREATE, 50) == {5000}  # the failed one is not a service time
    assert drawn_us(OpCode.DELETE, 200) == {100, 5000}  # no delete in the run: all of them
    with pytest.raises(Exception, match="cannot read"):
        open_backend(f"delay:run({tmp_path / 'none'})+null")


# -------------------------------------------------------------------------------------------- rate


def _issue(url: str, n: int, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    backend = open_backend(url)
    backend.connect()
    op = backend.sync_ops()[OpCode.GETFILEINFO]
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.monotonic()
    for _ in range(n):
        op("/x")
    out.put((t0, time.monotonic()))
    backend.close()


def test_a_rate_is_shared_by_the_processes_of_a_run(tmp_path: Path) -> None:
    rate, per_worker = 400.0, 100
    urls = open_backend(f"rate:{rate:g}+null").worker_urls(2, tmp_path / "parts")
    assert len({u.split("shared=")[1] for u in urls}) == 1  # one bucket file for both
    assert Path(urls[0].split("shared=")[1].split("+")[0]).parent == tmp_path / "parts"
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    start_at = time.time() + 2.0
    procs = [ctx.Process(target=_issue, args=(u, per_worker, start_at, out)) for u in urls]
    for p in procs:
        p.start()
    spans = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    elapsed = max(e for _, e in spans) - min(s for s, _ in spans)
    # 200 operations at 400/s take at least 199/400 s together; a bucket per process would let
    # each worker's 100 go in 99/400 s
    assert elapsed >= 0.95 * (2 * per_worker - 1) / rate


def test_rate_classes_limit_only_their_own_operations() -> None:
    backend = open_backend("rate:write=50+null")
    assert isinstance(backend, RateBackend)
    ops = backend.sync_ops()
    t0 = time.perf_counter()
    for _ in range(200):
        ops[OpCode.OPEN]("/x")  # reads have no rate: at once
    reads = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(11):
        ops[OpCode.CREATE]("/x")
    writes = time.perf_counter() - t0
    assert writes >= 0.95 * 10 / 50 and writes > reads


def test_a_burst_goes_at_once_then_the_rate_holds() -> None:
    backend = open_backend("rate:20?burst=5+null")
    ops = backend.sync_ops()
    t0 = time.perf_counter()
    for _ in range(5):
        ops[OpCode.OPEN]("/x")
    burst = time.perf_counter() - t0
    for _ in range(4):
        ops[OpCode.OPEN]("/x")
    assert time.perf_counter() - t0 >= 0.95 * 4 / 20
    assert burst < 4 / 20  # the five went without waiting for their slots (0.2 s apart from the first)


# -------------------------------------------------------------------------------------------- fail


def test_failures_are_injected_at_their_rate_and_counted_as_other() -> None:
    backend = open_backend("fail:0.1?seed=2+memory")
    backend.connect()
    backend.mkdirs("/d")  # phase 1 goes to the inner backend: never failed
    ops = backend.sync_ops()
    failed = 0
    for _ in range(4000):
        try:
            ops[OpCode.GETFILEINFO_DIR]("/d")
        except backend.op_errors as exc:
            assert isinstance(exc, InjectedFailure) and backend.classify(exc) is Outcome.OTHER
            failed += 1
    assert 0.085 < failed / 4000 < 0.115
    assert backend.classify(FileNotFoundError(2, "x")) is Outcome.NOT_FOUND  # the inner backend's own


class AsyncMemory(MemoryBackend):
    """The memory backend driven through the async path, as a run drives hdfs."""

    is_async: ClassVar[bool] = True

    def async_operation_table(self) -> dict[OpCode, Any]:
        def lift(fn: Any) -> Any:
            async def call(arg: Any) -> object:
                return fn(arg)

            return call

        return {op: lift(fn) for op, fn in self.operation_table().items()}


def _run(tmp_path: Path, backend: str, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    schedule = workload(tmp_path / "s", files_per_type=30, span_us=1_000_000)
    config = RunConfig(schedule=str(schedule), backend=backend, out=str(tmp_path / "runs"), workers=2, **kw)
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text())
    assert not (report.run_dir / rundir.PARTS).exists()  # the bucket file went with the parts
    return summary, manifest


def test_a_run_through_the_async_path_counts_the_injected_failures(tmp_path: Path) -> None:
    summary, manifest = _run(tmp_path, f"fail:0.3?seed=5+py:{__name__}:AsyncMemory")
    issued, other = summary["operations_issued"], summary["outcomes"]["other"]
    assert issued == summary["operations_scheduled"] and 0.15 * issued < other < 0.45 * issued
    # what a failed create leaves behind fails later (not_found): counted under its own outcome
    assert summary["operations_failed"] == issued - summary["outcomes"]["ok"] >= other
    assert manifest["backend"]["chain"] == ["fail:0.3?seed=5", f"py:{__name__}:AsyncMemory"]


def test_a_run_on_posix_keeps_the_wrappers_in_its_lanes(tmp_path: Path) -> None:
    """The posix native lane would bypass a wrapper: the workers replay in Python lanes, and each
    operation still waits its delay."""
    summary, manifest = _run(tmp_path, f"delay:3ms+rate:100000+posix:{tmp_path / 'base'}")
    assert manifest["lane_impl"] == ["python"] and manifest["native_lane"] is False
    assert summary["operations_failed"] == 0
    assert summary["service_ms"]["p50"] >= 2.5
    assert manifest["backend"]["wrapper"]["mean_s"] == pytest.approx(0.003)
