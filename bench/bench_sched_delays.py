"""Which threads wait to run, and how long, while micro batches run against a managed NameNode.

    python bench/bench_sched_delays.py [--unfair] [--op create] [--loads 16,32,64] [--files 30000]
                                       [--heap 2g] [--no-trace]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars) is warmed with 150,000 creates
at 64 clients; then each load's batch of ``--op`` (creates by default) runs back to back, as ``simnn
calibrate`` runs its batches, while the kernel's scheduler trace records every switch on every core
(``perf sched record -a`` on the monotonic clock, one recording for all of them). ``perf sched
timehist`` gives, for each switch to a thread, how long it waited to run from its wake-up (the
scheduling delay); each batch keeps the switches inside its timed part (not its preparation or
clean-up). Per group of threads (the NameNode's handlers, its edit log's thread, its socket reader,
the client's lane...; the thread names with their numbers removed) a line gives the switches, the
delay's p50, p99 and maximum, how many delays exceeded 1 and 2 ms, and the group's time on a core: a
thread every call passes through (the edit log's, the reader, the client's lane) delays every call
in flight when it waits that long.

What it is for: ``simnn:`` puts a call's tail in a handler's stall, fitted on one load with the
fair lock (docs/simnn.md, "Where a create's tail is, by lock and load"). The trace costs the host
CPU on every switch and slows the NameNode: the rates printed are not the validation's, and the
figures are for who waits and how often, not for the model's costs.

``--no-trace``: the same cluster, warm-up and batches without the trace, their throughput and
latency alone: what the trace costs, against a run with it. Each batch's line gives the share of
each core the host stole (``/proc/stat``: the virtual CPU runnable while the hypervisor ran
something else), which the guest's per-thread times, and so ``simnn calibrate``, leave out.

Apart from the NameNode's and the client's threads, a line per batch gives the other threads' runs
of 0.5 ms or more (the JVM's compiler and collector, the DataNode, the kernel's workers): how often,
how long, and the share of one core; ``simnn:`` leaves that work out.

Needs ``perf`` with the scheduler's tracepoints allowed (root, or ``perf_event_paranoid`` at -1);
says so and exits 2 otherwise.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig

#: seconds the trace records before the first batch starts (perf's own start-up)
LEAD_S = 1.0
#: the groups printed, busiest first
TOP = 8
#: the threads ``simnn:`` models (the NameNode's handlers, edit log, socket reader, responder, and
#: the client), by the start of their group's name; every other thread's long runs are the host's
#: other work, printed apart. perf is the trace itself, and left out of it
MODELLED = ("IPC Server hand", "FSEditLogAsync", "Socket Reader", "IPC Server Resp", "IPC Server list", "python")
#: a run on a core at least this long (ms) counts as one of the host's other bursts
LONG_RUN_MS = 0.5
#: one ``perf sched timehist`` line: time (s), [cpu], name[tid(/pid)], wait, scheduling delay, run (ms)
LINE = re.compile(r"\s*([\d.]+)\s+\[\d+\]\s+(.+?)\[\d+(?:/\d+)?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def perf_allowed(scratch: Path) -> str | None:
    """None if ``perf sched record -a`` can trace the scheduler of every core here (tried once,
    its data in ``scratch``), else why not."""
    if shutil.which("perf") is None:
        return "perf is not installed (Debian: apt-get install linux-perf)"
    probe = subprocess.run(["perf", "sched", "record", "-a", "-o", str(scratch / "probe.data"), "--", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "perf may not trace the scheduler here (run as root, or set kernel.perf_event_paranoid to -1)"
    return None


def switches(timehist: str) -> list[tuple[float, str, float, float]]:
    """Each switch to a thread: (time on the trace's clock in s, its group: the thread's name
    without its digits, its scheduling delay in ms, its run time in ms)."""
    rows = []
    for line in timehist.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), re.sub(r"\d+", "#", m.group(2).strip()), float(m.group(4)),
                         float(m.group(5))))
    return rows


def delays(seen: list[tuple[float, str, float, float]], start: float, end: float) -> dict[str, np.ndarray]:
    """Per group of threads, the (scheduling delay, run time) in ms of each switch to one of them
    between ``start`` and ``end`` (the trace's clock, s)."""
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t, group, delay, run in seen:
        if start <= t <= end:
            rows[group].append((delay, run))
    return {name: np.array(v) for name, v in rows.items()}


def report(groups: dict[str, np.ndarray]) -> None:
    print(f"   {'threads':24s} {'switches':>8s} {'delay p50':>9s} {'p99':>6s} {'max':>6s} {'>1 ms':>6s} {'>2 ms':>6s}"
          f" {'busy ms':>8s}")
    busiest = sorted(groups.items(), key=lambda kv: -float(kv[1][:, 1].sum()))[:TOP]
    for name, a in busiest:
        d = a[:, 0]
        print(f"   {name[:24]:24s} {len(a):8d} {np.percentile(d, 50):9.3f} {np.percentile(d, 99):6.3f} {d.max():6.3f}"
              f" {int((d > 1).sum()):6d} {int((d > 2).sum()):6d} {a[:, 1].sum():8.0f}")


def other_work(groups: dict[str, np.ndarray], seconds: float) -> None:
    """The runs of at least ``LONG_RUN_MS`` of every thread the model leaves out (the JVM's
    compiler and collector, the DataNode, the kernel's workers...): how often, how long, and the
    share of one core they took, with the groups that had most of them."""
    runs = {name: a[:, 1][a[:, 1] >= LONG_RUN_MS] for name, a in groups.items()
            if not name.startswith(MODELLED) and not name.startswith("perf")}
    every = np.concatenate(list(runs.values()) or [np.zeros(0)])
    if not every.size:
        print(f"   other threads: no run of {LONG_RUN_MS} ms or more")
        return
    top = sorted(runs.items(), key=lambda kv: -float(kv[1].sum()))[:3]
    print(f"   other threads' runs of {LONG_RUN_MS} ms or more: {every.size / seconds:.1f} a second, mean"
          f" {every.mean():.2f} ms (p50 {np.percentile(every, 50):.2f}, p90 {np.percentile(every, 90):.2f}),"
          f" {every.sum() / seconds / 10:.1f} % of one core; most from "
          + ", ".join(f"{name.strip()} ({r.sum():.0f} ms)" for name, r in top if r.size))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unfair", action="store_true", help="The namesystem lock not fair (dfs.namenode.fslock.fair false).")
    ap.add_argument("--op", default="create", choices=sorted(OPERATIONS), help="micro's operation.")
    ap.add_argument("--loads", default="16,32,64", help="micro's closed-loop clients.")
    ap.add_argument("--files", type=int, default=30_000, help="Operations per load.")
    ap.add_argument("--heap", default="2g")
    ap.add_argument("--no-trace", action="store_true", help="The same batches without the trace (its cost).")
    a = ap.parse_args()
    if a.no_trace:
        measure_untraced(a)
        return
    with tempfile.TemporaryDirectory(prefix="mb-sched-") as traces:
        why = perf_allowed(Path(traces))
        if why is not None:
            print(f"bench_sched_delays: {why}", file=sys.stderr)
            sys.exit(2)
        measure(a, Path(traces))


def warm(url: str) -> None:
    """The warm-up: a fresh JVM interprets before it compiles."""
    run_micro(MicroConfig(op="create", files=150_000, backend=f"{url}/warm", concurrency=64))


def batch(a: argparse.Namespace, url: str, clients: int) -> dict[str, Any]:
    """One load's batch of ``--op``, as both ways run it: its micro result."""
    return run_micro(MicroConfig(op=a.op, files=a.files, concurrency=clients, backend=f"{url}/c{clients}")).to_json()


def cpu_times() -> np.ndarray:
    """Per core, the kernel's (busy, idle, stolen) seconds since boot (psutil's per-core
    ``cpu_times``; busy is user, nice, system, irq and softirq; idle counts iowait)."""
    import psutil

    return np.array([(t.user + t.nice + t.system + t.irq + t.softirq, t.idle + t.iowait, t.steal)
                     for t in psutil.cpu_times(percpu=True)], dtype=float)


def stolen(before: np.ndarray, after: np.ndarray) -> str:
    """The host's share of each core between two ``cpu_times``: the time its virtual CPU was
    runnable and the hypervisor ran something else (steal), against its busy and idle time."""
    d = after - before
    total = d.sum(axis=1)
    total[total == 0] = 1
    return "; ".join(f"core {i}: busy {100 * b / t:.0f} %, stolen {100 * s / t:.1f} %"
                     for i, (b, s, t) in enumerate(zip(d[:, 0], d[:, 2], total)))


def measure_untraced(a: argparse.Namespace) -> None:
    """The warm-up and the loads as ``measure`` runs them, without the trace; each batch with the
    host's steal over it (the guest's per-thread times leave stolen time out)."""
    with fresh_cluster("mb-sched-delays-", a.heap, fslock_fair=not a.unfair) as (_, cluster):
        warm(cluster.url)
        time.sleep(LEAD_S)  # as long as ``measure`` gives perf to start
        for clients in (int(c) for c in a.loads.split(",")):
            before = cpu_times()
            result = batch(a, cluster.url, clients)
            print(headline(a, clients, result) + " (no trace)")
            print(f"   the whole batch (its preparation too): {stolen(before, cpu_times())}")
            sys.stdout.flush()


def headline(a: argparse.Namespace, clients: int, result: dict[str, Any]) -> str:
    """A batch's operation, load, lock, throughput and latency."""
    lat = result["latency_ms"]
    return (f"{a.op} x {clients} ({'unfair' if a.unfair else 'fair'} lock): {float(result['ops_per_s']):,.0f} ops/s"
            f"  p50 {float(lat['p50']):.2f}  p99 {float(lat['p99']):.2f} ms")


def measure(a: argparse.Namespace, traces: Path) -> None:
    """The warm-up, the loads back to back in one trace (its data in ``traces``), and the report."""
    with fresh_cluster("mb-sched-delays-", a.heap, fslock_fair=not a.unfair) as (_, cluster):
        warm(cluster.url)
        data = traces / "sched.data"
        perf = subprocess.Popen(["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-a", "-o", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(LEAD_S)
        batches = []
        try:
            for clients in (int(c) for c in a.loads.split(",")):
                result = batch(a, cluster.url, clients)
                # the timed part: it ended before the clean-up, which ended now
                end = time.monotonic() - float(result["cleanup_s"])
                batches.append((clients, result, end - float(result["elapsed_s"]), end))
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        seen = switches(subprocess.run(["perf", "sched", "timehist", "-i", str(data)], capture_output=True,
                                       text=True, check=True).stdout)
        for clients, result, start, end in batches:
            print(f"{headline(a, clients, result)}; its timed part's scheduling delays (ms), {end - start:.2f} s:")
            groups = delays(seen, start, end)
            report(groups)
            other_work(groups, end - start)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
