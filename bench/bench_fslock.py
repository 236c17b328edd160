"""What the namesystem lock's fairness costs a real NameNode: throughput, its CPU and its
threads' context switches per operation, fair against unfair (``dfs.namenode.fslock.fair``):

    .venv/bin/python bench/bench_fslock.py [--files 20000] [--repeat 2]

For each lock, a fresh managed HDFS (NameNode and DataNode from Maven Central jars), warmed up
(micro fileStatus and create at 64 clients: a fresh JVM interprets before it compiles), then
``--repeat`` rounds of: micro create at 64 and 8 clients, micro fileStatus at 64, and the built-in
profile's two mixes (both types, the write-heavy type; 6,000 s at c = 0.01) as fast as possible
(2 workers x 32 lanes). Each line: throughput, the NameNode's CPU per operation (its process) and
its threads' voluntary and involuntary context switches per operation (every thread's
``/proc/PID/task/*/status``; Linux only): read just before and after micro's timed batch, and for a
run the replay's own figures (its summary's ``cost.server.namenode``, without the namespace's
creation before the barrier).

A thread that parks for the lock and is woken again is a voluntary switch each time; what the
unfair lock saves shows there first. The simulated NameNode (docs/simnn.md) counts the same
parks; this is what to hold it against.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from functools import partial
from pathlib import Path

import psutil
from bench_capacity import cli  # the in-process CLI
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.run.probes import thread_switches

PROFILE = Path(__file__).resolve().parents[1] / "src" / "mimesisbench" / "data" / "demo_profile.json"
Counts = tuple[int, int, float]  # voluntary switches, involuntary switches, CPU seconds


def namenode_counts(pid: int) -> Counts:
    """Every thread's context switches, and the process's CPU seconds (user + system)."""
    switches = thread_switches(pid)
    if switches is None:
        raise SystemExit("bench_fslock: no /proc/PID/task here (Linux only)")
    times = psutil.Process(pid).cpu_times()
    return switches[0], switches[1], float(times.user + times.system)


def mark(marks: list[Counts], pid: int) -> float:
    """micro's reading of the server's CPU, just before and after its timed batch: the counts too."""
    marks.append(namenode_counts(pid))
    return marks[-1][2]


def line(what: str, ops_per_s: float, cpu_us: float, voluntary: float, involuntary: float) -> str:
    """One printed figure: throughput, then the NameNode's CPU and switches per operation."""
    return (f"{what:34s} {ops_per_s:9,.0f} ops/s   NameNode {cpu_us:6.1f} us/op   "
            f"voluntary switches {voluntary:5.2f}/op   involuntary {involuntary:5.2f}/op")


def micro_line(what: str, ops_per_s: float, operations: int, before: Counts, after: Counts) -> str:
    n = max(operations, 1)
    return line(what, ops_per_s, (after[2] - before[2]) / n * 1e6, (after[0] - before[0]) / n,
                (after[1] - before[1]) / n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000, help="Operations per micro batch.")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        schedules = {}
        for name, types in (("both types", []), ("write-heavy type", ["--types", "1"])):
            schedules[name] = work / name.replace(" ", "-")
            cli(["generate", str(PROFILE), *types, "--time-scale", "0.01", "--duration", "6000s", "--seed", "7",
                 "-o", str(schedules[name])])
        for fair in (True, False):
            lock = "fair" if fair else "unfair"
            with fresh_cluster("mb-fslock-", a.heap, fslock_fair=fair) as (hdfs_work, cluster):
                pid = next(p for role, p, _ in cluster.status().processes if role == "namenode")
                for op in ("fileStatus", "create"):
                    run_micro(MicroConfig(op=op, files=10_000, backend=f"{cluster.url}/warm-{op}", concurrency=64))
                for r in range(a.repeat):
                    for op, clients in (("create", 64), ("create", 8), ("fileStatus", 64)):
                        marks: list[Counts] = []
                        result = run_micro(MicroConfig(op=op, files=a.files, backend=f"{cluster.url}/m{r}-{op}-{clients}",
                                                       concurrency=clients),
                                           server_cpu=partial(mark, marks, pid)).to_json()
                        print(micro_line(f"{lock} micro {op} x {clients}", float(result["ops_per_s"]), a.files,
                                         *marks), flush=True)
                    for name, schedule in schedules.items():
                        out = work / "runs" / f"{lock}-{name[:5]}-{r}"
                        cli(["run", str(schedule), "-b", f"{cluster.url}/{lock}-{name[:5]}-{r}", "--concurrency", "32",
                             "--as-fast-as-possible", "--out", str(out), "-q", "--hdfs-workdir", str(hdfs_work / "hdfs")])
                        summary = json.loads((next(out.iterdir()) / "summary.json").read_text())
                        nn = summary["cost"]["server"]["namenode"]
                        print(line(f"{lock} {name}, as fast as possible", summary["throughput_ops_per_s"],
                                   nn["cpu_us_per_op"], nn["voluntary_switches_per_op"],
                                   nn["involuntary_switches_per_op"]), flush=True)


if __name__ == "__main__":
    main()
