"""What Ray costs on one machine: the same schedule through the local and the Ray engine.

Null backend, time scale 0 (no pacing), recording on, 2 workers, ``--repeats`` interleaved
runs of each engine (best run counted: this is a ceiling, and a shared machine only adds noise).
Prints per engine:

* the issued-operations rate of the whole run (all workers' samples: operations / (last end -
  first start)) and per worker (a worker's operations / its own active time): with one worker
  per node, N nodes reach about N times the per-worker rate until the backend saturates;
* start-up: Ray's cold ``ray.init`` (embedded, once) and, per run, prepare -> every worker ready;
* the driver's merge: part files -> one samples table (``merge_parts``), and the whole finish
  (merge + samples.parquet + time series + summary), in merged samples per second.

Target: Ray's issued-operations rate >= 95% of local's.

    .venv/bin/python bench/bench_engine_overhead.py [--events 1000000] [--workers 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mimesisbench.engine.base import Crashed
from mimesisbench.engine.local import LocalEngine
from mimesisbench.engine.ray_address import parse_engine
from mimesisbench.engine.ray_engine import RayEngine
from mimesisbench.engine.ray_session import connect
from mimesisbench.jobs import ReadyInfo, WorkerResult
from mimesisbench.results.samples import merge_parts
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.synthetic import write_phased_schedule
from mimesisbench.run.worker import Worker
from mimesisbench.schedule import load_schedule
from mimesisbench.schedule.format import OpCode

TARGET = 0.95


class _Timing:
    """Mixed into an engine: stamps prepare, ready and close; keeps a copy of the part files."""

    keep_parts: Path

    def prepare(self, specs: Any) -> None:
        self.t_prepare = time.perf_counter()
        super().prepare(specs)  # type: ignore[misc]

    def wait_ready(self, timeout_s: float) -> list[ReadyInfo]:
        ready = super().wait_ready(timeout_s)  # type: ignore[misc]
        self.t_ready = time.perf_counter()
        return ready  # type: ignore[no-any-return]

    def collect(self, timeout_s: float) -> list[WorkerResult | Crashed]:
        results = super().collect(timeout_s)  # type: ignore[misc]
        self.parts = []
        for r in results:
            if isinstance(r, WorkerResult) and r.part_path:
                kept = self.keep_parts / Path(r.part_path).name
                shutil.copyfile(r.part_path, kept)
                self.parts.append((r.index, kept))
        return results  # type: ignore[no-any-return]

    def close(self) -> None:
        super().close()  # type: ignore[misc]
        self.t_closed = time.perf_counter()  # the coordinator merges after closing the engine


class TimedLocal(_Timing, LocalEngine):
    pass


class TimedRay(_Timing, RayEngine):
    pass


@dataclass(frozen=True)
class Measure:
    engine: str
    complete: bool
    ops: int
    rate: float
    worker_rates: tuple[float, ...]
    startup_s: float
    finish_s: float
    merge_s: float


def _run(engine: Any, name: str, schedule: Path, out: Path, workers: int, events: pl.DataFrame) -> Measure:
    keep = Path(tempfile.mkdtemp(prefix="parts-", dir=out.parent))
    engine.keep_parts = keep
    config = RunConfig(schedule=str(schedule), backend="null", out=str(out), workers=workers, time_scale=0.0,
                       concurrency=1)
    report = run_benchmark(config, show_progress=False, engine=engine)
    t_done = time.perf_counter()
    samples = pl.read_parquet(report.run_dir / "samples.parquet")
    t0 = time.perf_counter()
    merged = merge_parts(engine.parts, events, 0.0)
    merge_s = time.perf_counter() - t0
    assert merged.height == samples.height
    per = samples.group_by("worker").agg(pl.len().alias("n"), (pl.col("end_us").max() - pl.col("start_us").min()).alias("us"))
    span_us = float(samples["end_us"].max() - samples["start_us"].min())  # type: ignore[operator]
    shutil.rmtree(keep, ignore_errors=True)
    shutil.rmtree(report.run_dir, ignore_errors=True)
    return Measure(
        engine=name,
        complete=report.complete,
        ops=samples.height,
        rate=samples.height / (span_us / 1e6),
        worker_rates=tuple(n / (us / 1e6) for n, us in per.sort("worker").select("n", "us").iter_rows()),
        startup_s=engine.t_ready - engine.t_prepare,
        finish_s=t_done - engine.t_closed,
        merge_s=merge_s,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events per worker")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs per engine (best counted)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        root = Path(tmp)
        schedule = write_phased_schedule(
            root / "schedule", types=args.workers, files_per_type=args.events // 2,
            phases=(OpCode.OPEN, OpCode.GETFILEINFO),
        )
        events = load_schedule(schedule).events
        t0 = time.perf_counter()
        session = connect(parse_engine("ray"), embedded_cpus=args.workers)
        cold_init_s = time.perf_counter() - t0
        try:
            runs: list[Measure] = []
            for _ in range(args.repeats):
                runs.append(_run(TimedLocal(Worker), "local", schedule, root / "runs", args.workers, events))
                runs.append(_run(TimedRay(Worker, "ray"), "ray", schedule, root / "runs", args.workers, events))
        finally:
            session.close()
    print(f"null backend, time scale 0, {args.workers} workers x {args.events:,} events, 1 lane, recording on; "
          f"best of {args.repeats} interleaved runs")
    print(f"Ray cold start (embedded ray.init, once): {cold_init_s:.2f} s")
    print(f"{'engine':<7}{'run ops/s':>13}{'per-worker ops/s':>28}{'start-up s':>12}"
          f"{'merge samples/s':>17}{'finish samples/s':>18}")
    best: dict[str, Measure] = {}
    for name in ("local", "ray"):
        mine = [m for m in runs if m.engine == name]
        assert all(m.complete for m in mine), f"an incomplete {name} run"
        b = max(mine, key=lambda m: m.rate)
        best[name] = b
        workers = " / ".join(f"{r:,.0f}" for r in b.worker_rates)
        print(f"{name:<7}{b.rate:>13,.0f}{workers:>28}{min(m.startup_s for m in mine):>12.2f}"
              f"{b.ops / b.merge_s:>17,.0f}{b.ops / b.finish_s:>18,.0f}")
        for m in mine:
            print(f"    run: {m.rate:,.0f} ops/s, start-up {m.startup_s:.2f} s, finish {m.finish_s:.2f} s")
    ratio = best["ray"].rate / best["local"].rate
    med = {n: statistics.median(m.rate for m in runs if m.engine == n) for n in ("local", "ray")}
    print(f"median run ops/s: local {med['local']:,.0f}, ray {med['ray']:,.0f} ({med['ray'] / med['local']:.1%})")
    print(f"Ray / local issued-operations rate, best runs: {ratio:.1%} (target >= {TARGET:.0%}): "
          f"{'PASS' if ratio >= TARGET else 'FAIL'}")
    print(f"Ray start-up to ready: cold {cold_init_s + best['ray'].startup_s:.2f} s (ray.init + actors), "
          f"warm {min(m.startup_s for m in runs if m.engine == 'ray'):.2f} s (actors + prepare); "
          f"local {min(m.startup_s for m in runs if m.engine == 'local'):.2f} s")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
