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

Then, for every wait of ``BLOCKED_MS`` or more of a thread every call passes through (``SERIAL``:
the edit log's, the socket reader, the client), what ran on the core it then ran on meanwhile
(per group, its share of those waits' time and its longest run) and how long the other core stood
idle meanwhile: a wait a run queue shared by the cores (``simnn:``'s) would not have had. Session
67 found the other core idle more than half that time at 1 and 8 clients, and the JVM's compiler
and the kernel's workers on the thread's own core (``bench_other_work.py`` tries that on the
model). ``--no-trace`` also gives, per batch, the share of one core the threads ``simnn:`` leaves
out used (every thread's CPU from ``/proc``), the trace's figure without its cost.

Needs ``perf`` with the scheduler's tracepoints allowed (root, or ``perf_event_paranoid`` at -1);
says so and exits 2 otherwise.
"""

from __future__ import annotations

import argparse
import bisect
import os
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
LINE = re.compile(r"\s*([\d.]+)\s+\[(\d+)\]\s+(.+?)(?:\[\d+(?:/\d+)?\])?\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
#: the threads every call passes through, one of each (by the start of their group's name): a long
#: wait of one of them delays every call in flight
SERIAL = ("FSEditLogAsync", "Socket Reader", "python")
#: a serial thread's scheduling delay (ms) at least this long is looked into: what ran on its core
BLOCKED_MS = 1.0


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


Switch = tuple[float, int, str, float, float]


def group_of(name: str) -> str:
    """A thread's group: its name without its digits (handlers, the JVM's compiler threads...)."""
    return re.sub(r"\d+", "#", name.strip())


def left_out(group: str) -> bool:
    """Whether a group of threads is the host's other work: neither modelled by ``simnn:`` nor the
    trace itself."""
    return not group.startswith(MODELLED) and not group.startswith("perf")


def switches(timehist: str) -> list[Switch]:
    """Each switch away from a thread: (time on the trace's clock in s, its core, its group: the
    thread's name without its digits, "<idle>" for the idle task, its scheduling delay before it
    ran in ms, its run time in ms, which ended at that time)."""
    rows = []
    for line in timehist.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), int(m.group(2)), group_of(m.group(3)),
                         float(m.group(5)), float(m.group(6))))
    return rows


def delays(seen: list[Switch], start: float, end: float) -> dict[str, np.ndarray]:
    """Per group of threads, the (scheduling delay, run time) in ms of each switch to one of them
    between ``start`` and ``end`` (the trace's clock, s)."""
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t, _, group, delay, run in seen:
        if start <= t <= end:
            rows[group].append((delay, run))
    return {name: np.array(v) for name, v in rows.items()}


def blockers(seen: list[Switch], start: float, end: float) -> None:
    """What kept a serial thread (``SERIAL``) from running for ``BLOCKED_MS`` or more between
    ``start`` and ``end``: over all such waits, the share of their time each group ran on the
    core the thread then ran on (where it waited, unless it was moved), the longest run of each
    that overlapped one, and the share of their time the other cores were idle meanwhile (a wait
    a run queue shared by the cores would not have had)."""
    runs: dict[int, list[tuple[float, float, str]]] = defaultdict(list)  # per core: (from, to, group) in s
    for t, cpu, group, _, run in seen:
        runs[cpu].append((t - run / 1e3, t, group))
    waits = [(t - (run + delay) / 1e3, t - run / 1e3, cpu, group) for t, cpu, group, delay, run in seen
             if start <= t <= end and delay >= BLOCKED_MS and group.startswith(SERIAL)]
    if not waits:
        print(f"   no serial thread waited {BLOCKED_MS} ms or more")
        return
    held: dict[str, float] = defaultdict(float)
    longest: dict[str, float] = defaultdict(float)
    idle_elsewhere = 0.0
    ends = {cpu: [b for _, b, _ in spans] for cpu, spans in runs.items()}  # in order: one core runs one at a time
    for lo, hi, cpu, _ in waits:
        for other, spans in runs.items():
            for a, b, group in spans[bisect.bisect_right(ends[other], lo):]:
                if a >= hi:
                    break
                overlap = min(b, hi) - max(a, lo)
                if other == cpu:
                    held[group] += overlap
                    longest[group] = max(longest[group], (b - a) * 1e3)
                elif group == "<idle>":
                    idle_elsewhere += overlap / max(1, len(runs) - 1)
    total = sum(hi - lo for lo, hi, _, _ in waits)
    per_thread = defaultdict(int)
    for *_, group in waits:
        per_thread[group.strip()] += 1
    print(f"   serial threads' waits of {BLOCKED_MS} ms or more: {len(waits) / (end - start):.1f} a second"
          f" ({', '.join(f'{g} {n}' for g, n in sorted(per_thread.items()))}), mean {1e3 * total / len(waits):.2f} ms;"
          f" the other cores idle {100 * idle_elsewhere / total:.0f} % of that time")
    top = sorted(held.items(), key=lambda kv: -kv[1])[:TOP]
    print("   on their cores meanwhile: " + ", ".join(
        f"{g.strip()} {100 * v / total:.0f} % (longest run {longest[g]:.1f} ms)" for g, v in top))


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
            if left_out(name)}
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


def thread_cpu() -> dict[int, tuple[str, float]]:
    """Per thread on the host (every process's), its group (its name without digits, as
    ``switches`` groups them) and the CPU seconds it has used (``/proc/PID/task/TID/stat``: user
    and system time, in clock ticks). The CPU of threads that end between two readings is
    missed: a reading of the long-lived ones, the trace's figures without the trace."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {}
    for stat in Path("/proc").glob("[0-9]*/task/[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        # utime, stime; a kernel worker's name changes with its work queue: its group is "kworker"
        used[int(stat.parent.name)] = (group_of(name.split("/")[0] if name.startswith("kworker") else name),
                                       (int(rest[11]) + int(rest[12])) / tick)
    return used


def other_cpu(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], seconds: float) -> str:
    """The share of one core the threads ``simnn:`` leaves out used between two ``thread_cpu``
    readings ``seconds`` apart, and the groups that used most of it."""
    spent: dict[str, float] = defaultdict(float)
    for tid, (name, used) in after.items():
        if left_out(name):
            spent[name] += used - before.get(tid, (name, 0.0))[1]
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:4]
    return (f"{100 * sum(spent.values()) / seconds:.1f} % of one core; most from "
            + ", ".join(f"{name.strip()} {100 * v / seconds:.1f} %" for name, v in top if v > 0))


def measure_untraced(a: argparse.Namespace) -> None:
    """The warm-up and the loads as ``measure`` runs them, without the trace; each batch with the
    host's steal over it (the guest's per-thread times leave stolen time out) and the other
    threads' CPU (``thread_cpu``)."""
    with fresh_cluster("mb-sched-delays-", a.heap, fslock_fair=not a.unfair) as (_, cluster):
        warm(cluster.url)
        time.sleep(LEAD_S)  # as long as ``measure`` gives perf to start
        for clients in (int(c) for c in a.loads.split(",")):
            before, threads_before, started = cpu_times(), thread_cpu(), time.monotonic()
            result = batch(a, cluster.url, clients)
            seconds = time.monotonic() - started
            print(headline(a, clients, result) + " (no trace)")
            print(f"   the whole batch (its preparation too): {stolen(before, cpu_times())}")
            print(f"   the threads simnn: leaves out, over the whole batch: {other_cpu(threads_before, thread_cpu(), seconds)}")
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
            blockers(seen, start, end)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
