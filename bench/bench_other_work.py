"""The host's other work on a core of its own, and the threads woken behind it: a trial of the
simulated NameNode's cores on a kept calibration (the simpy reference; ``simnn:`` unchanged).

    python bench/bench_other_work.py [--calibration bench/simnn_sessions/session58] [--loads 1,4,8,16,64]
                                     [--share 0,0.05,0.10] [--mean-ms 2] [--behind 0.5] [--files 10000]

What it tries. ``simnn:``'s cores are one FIFO run queue: a burst waits only while every core is
busy, which at the middle loads (4-16 clients) is rare and brief, and the model's creates there
have no tail (session 58: p99 1.2-1.5 ms at 4 and 8 clients, measured 3.8 and 7.4). The kernel
keeps a run queue per core, and the scheduler's trace (``bench_sched_delays.py``) finds the
NameNode's serial threads waiting a millisecond or more behind another thread's run on their
core (the JVM's compiler, the kernel's workers) while the other core was idle more than half of
that time. Here the host's other work (threads the model leaves out, ``--share`` of one core
between them, measured 9-19 % by ``bench_sched_delays.py --no-trace``) comes at Poisson times in
runs of exponential length (mean ``--mean-ms``), each taking a core as any burst does and holding
it for its run; a burst of the model's that finds no core free while other work runs is placed
behind it with the chance ``--behind`` (the wake-up put it on that core's run queue) and waits for
that run to end, even if the other core is freed meanwhile; the rest wait in the shared queue.

For each share and load it prints the creates' throughput, p50, p90 and p99 (10,000 creates from
``clients`` closed-loop clients, as ``micro`` runs them) and, first, what the kept validation
measured at that load (its micro rows with the fair lock). The calibration is the kept one as it
was fitted: a share above 0 is a trial of the mechanism, not a fitted model (the fit would move
the stall and the costs with it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import simpy

from mimesisbench.backends.simnn import calibration_file
from mimesisbench.micro.config import OPERATIONS
from mimesisbench.sim.calls import make_calls
from mimesisbench.sim.model import Calibration, ServerSettings
from mimesisbench.sim.reference import Cores, simulate_reference


class PinnedOtherWork(Cores):
    """``Cores`` with the host's other work: runs at Poisson times (``rate`` a second, exponential
    lengths of mean ``mean_s``) until ``until`` (virtual s), each holding a core; a burst that finds
    no core free while one runs waits behind it with the chance ``behind``."""

    def __init__(self, env: simpy.Environment, settings: ServerSettings, *, rate: float, mean_s: float,
                 behind: float, until: float, seed: int) -> None:
        super().__init__(env, settings.cores, settings.dispatch_s)
        self.rng = np.random.default_rng(seed)
        self.behind_chance = behind
        self.running = 0  # cores running other work
        self.behind: deque[tuple[simpy.Event, float, float]] = deque()
        if rate > 0 and not self.unlimited:
            env.process(self._arrivals(rate, mean_s, until))

    def _arrivals(self, rate: float, mean_s: float, until: float) -> Generator[simpy.Event, Any, None]:
        while self.env.now < until:
            yield self.env.timeout(float(self.rng.exponential(1.0 / rate)))
            self.env.process(self._run(float(self.rng.exponential(mean_s))))

    def _run(self, length: float) -> Generator[simpy.Event, Any, None]:
        yield super().take()  # it waits for a core as any thread does
        self.running += 1
        yield self.env.timeout(length)
        self.running -= 1
        # its core runs the threads placed behind it next, in order, then the shared queue's
        while self.behind:
            self.queue.appendleft(self.behind.pop())
        super().give()

    @property
    def waiting(self) -> int:
        return len(self.queue) + len(self.behind)

    def take(self, *, handed: bool = False) -> simpy.Event:
        if self.unlimited or self.free > 0 or not self.running or self.rng.random() >= self.behind_chance:
            return super().take(handed=handed)
        got = self.env.event()
        self.behind.append((got, 0.0 if handed else self.dispatch_s, self.env.now))
        return got


Figure = tuple[float, float, float, float]  # ops/s, p50, p90, p99 (ms)


def creates(cal: Calibration, clients: int, files: int, seed: int, *, rate: float = 0.0, mean_s: float = 0.002,
            behind: float = 0.5, until: float = 0.0) -> tuple[Figure, float]:
    """``files`` creates from ``clients`` closed-loop clients on the reference with other work at
    ``rate``: their figures and the virtual time they took."""
    op = OPERATIONS["create"]
    calls, _ = make_calls(np.full(files, int(op), dtype=np.uint8), np.zeros(files), cal, seed)

    def cores(env: simpy.Environment, settings: ServerSettings) -> Cores:
        return PinnedOtherWork(env, settings, rate=rate, mean_s=mean_s, behind=behind, until=until, seed=seed + 1)

    start, end, *_ = simulate_reference(calls, cal.settings, clients, None, cores)
    service = (end - start) * 1e3
    took = float(end.max() - start.min())
    p50, p90, p99 = (float(np.percentile(service, q)) for q in (50, 90, 99))
    return (files / took, p50, p90, p99), took


def measured_creates(kept: Path) -> dict[int, Figure]:
    """The kept validation's micro creates with the fair lock, by load: ops/s, p50, p99 (p90 not
    kept: nan)."""
    rows = json.loads((kept / "validation.json").read_text())["rows"]
    return {int(r["clients"]): (r["measured"][0], r["measured"][1], float("nan"), r["measured"][2])
            for r in rows if r.get("op") == "create" and r.get("fair")}


def line(what: str, f: Figure) -> str:
    return f"   {what:34s} {f[0]:9,.0f} {f[1]:7.2f} {f[2]:7.2f} {f[3]:7.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, default=Path("bench/simnn_sessions/session58"),
                    help="A kept validation's folder (its calibration.json and validation.json).")
    ap.add_argument("--loads", default="1,4,8,16,64", help="Closed-loop clients.")
    ap.add_argument("--share", default="0,0.05,0.10", help="The other work's share of one core, each tried.")
    ap.add_argument("--mean-ms", type=float, default=2.0, help="The other work's mean run (ms).")
    ap.add_argument("--behind", type=float, default=0.5, help="The chance a burst that finds no core free waits behind it.")
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not calibration_file(a.calibration).is_file():
        sys.exit(f"bench_other_work: no calibration in {a.calibration}")
    cal = Calibration.load(calibration_file(a.calibration))
    measured = measured_creates(a.calibration) if (a.calibration / "validation.json").is_file() else {}
    mean_s = a.mean_ms / 1e3
    print(f"creates, fair lock, {a.files:,} per load; other work in runs of {a.mean_ms} ms on average,"
          f" a burst behind one with the chance {a.behind}")
    print(f"   {'':34s} {'ops/s':>9s} {'p50':>7s} {'p90':>7s} {'p99 ms':>7s}")
    for clients in (int(c) for c in a.loads.split(",")):
        print(f"x{clients}")
        if clients in measured:
            print(line("measured (the kept validation)", measured[clients]))
        alone, took = creates(cal, clients, a.files, a.seed)
        for share in (float(s) for s in a.share.split(",")):
            if share == 0:
                print(line("model, no other work", alone))
                continue
            figure, _ = creates(cal, clients, a.files, a.seed, rate=share / mean_s, mean_s=mean_s, behind=a.behind,
                                until=3 * took)
            print(line(f"model, other work {100 * share:.0f} % of a core", figure))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
