"""The host's other work on a core of its own, and the threads placed behind it: the simulated
NameNode's creates with and without it, on a kept calibration as it was fitted.

    python bench/bench_other_work.py [--calibration bench/simnn_sessions/session58] [--loads 1,4,8,16,64]
                                     [--share 0,0.05,0.10] [--place turn,0.01] [--mean-ms 2]
                                     [--op create] [--files 30000]

Why. ``simnn:``'s cores used to be one FIFO run queue: a burst waited only while every core was
busy, which at the middle loads (4-16 clients) is rare and brief, and the model's creates there
had no tail (session 58: p99 1.2-1.5 ms at 4 and 8 clients, measured 3.8 and 7.4). The kernel keeps
a run queue per core, and the scheduler's trace (``bench_sched_delays.py``) finds the NameNode's
serial threads waiting a millisecond or more behind another thread's run on their core (the
JVM's compiler, the kernel's workers) while the other core was idle more than half of that time.
The model's ``other_share`` and ``other_s`` settings (``sim.model``) put that in: the host's other
work in runs at Poisson times, each holding a core, and a burst that finds no core free while one
runs placed on the cores in turn, waiting behind the run when placed on its core; with
``other_place`` (``--place``) a burst woken while a run holds a core is placed behind it by chance
instead, another core free or not (the trace has the other core idle in about half of the serial
threads' long waits).

For each share, placement and load it prints the operation's throughput, p50, p90 and p99
(``--files`` calls from ``clients`` closed-loop clients, as ``micro`` runs them; creates unless
``--op``) and, first, what the kept validation measured at that load (its micro rows with the fair
lock). The calibration is the kept one as it was fitted, its NameNode's CPU with the host's other
work in it: a share above 0 here counts that work twice (the throughput drops), a trial of the
mechanism rather than a fitted model (``bench_simnn.py score --other-share`` refits with it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from mimesisbench.backends.simnn import calibration_file
from mimesisbench.micro.config import OPERATIONS
from mimesisbench.sim.model import Calibration
from mimesisbench.sim.ops import simulate_micro

Figure = tuple[float, float, float, float]  # ops/s, p50, p90, p99 (ms)


def modelled(op: str, cal: Calibration, clients: int, files: int, seed: int) -> Figure:
    """``files`` calls of ``op`` from ``clients`` closed-loop clients on the model: their figures."""
    sim = simulate_micro(OPERATIONS[op], files, clients, cal, seed=seed).times
    service = sim.service * 1e3
    p50, p90, p99 = (float(np.percentile(service, q)) for q in (50, 90, 99))
    return files / float(sim.end.max() - sim.start.min()), p50, p90, p99


def measured_rows(kept: Path, op: str) -> dict[int, Figure]:
    """The kept validation's micro rows of ``op`` with the fair lock, by load: ops/s, p50, p99
    (p90 not kept: nan)."""
    rows = json.loads((kept / "validation.json").read_text())["rows"]
    return {int(r["clients"]): (r["measured"][0], r["measured"][1], float("nan"), r["measured"][2])
            for r in rows if r.get("op") == op and r.get("fair")}


def line(what: str, f: Figure) -> str:
    return f"   {what:34s} {f[0]:9,.0f} {f[1]:7.2f} {f[2]:7.2f} {f[3]:7.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, default=Path("bench/simnn_sessions/session58"),
                    help="A kept validation's folder (its calibration.json and validation.json).")
    ap.add_argument("--loads", default="1,4,8,16,64", help="Closed-loop clients.")
    ap.add_argument("--share", default="0,0.05,0.10", help="The other work's share of one core, each tried.")
    ap.add_argument("--place", default="turn", help="The chance a woken thread is placed behind a run, a core "
                                                    "free or not (other_place; turn: none, the cores in turn), each "
                                                    "tried with each share above 0.")
    ap.add_argument("--mean-ms", type=float, default=2.0, help="The other work's mean run (ms).")
    ap.add_argument("--op", default="create", choices=sorted(OPERATIONS), help="The micro operation.")
    ap.add_argument("--files", type=int, default=30_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if not calibration_file(a.calibration).is_file():
        sys.exit(f"bench_other_work: no calibration in {a.calibration}")
    cal = Calibration.load(calibration_file(a.calibration))
    measured = measured_rows(a.calibration, a.op) if (a.calibration / "validation.json").is_file() else {}
    mean_s = a.mean_ms / 1e3
    places = [None if p == "turn" else float(p) for p in a.place.split(",")]
    print(f"{a.op}, fair lock, {a.files:,} per load; other work in runs of {a.mean_ms} ms on average")
    print(f"   {'':34s} {'ops/s':>9s} {'p50':>7s} {'p90':>7s} {'p99 ms':>7s}")
    for clients in (int(c) for c in a.loads.split(",")):
        print(f"x{clients}")
        if clients in measured:
            print(line("measured (the kept validation)", measured[clients]))
        for share in (float(s) for s in a.share.split(",")):
            for place in places if share else [None]:
                figure = modelled(a.op, cal.with_settings(other_share=share, other_s=mean_s, other_place=place),
                                  clients, a.files, a.seed)
                placed = "in turn" if place is None else f"{place:g}"
                what = f"model, other {100 * share:.0f} %, placed {placed}" if share else "model, no other work"
                print(line(what, figure))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
