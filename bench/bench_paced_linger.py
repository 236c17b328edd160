"""A paced run's backlog, and what the native HDFS lane's ``linger=`` does to it:

    .venv/bin/python bench/bench_paced_linger.py [--repeat 3] [--heap 1g]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars, the fair lock), warmed up
(micro create, fileStatus and mkdirs at 64 and 8 clients: a fresh JVM interprets before it
compiles), then the built-in profile's write-heavy type (6,000 s at c = 0.01, seed 7: about 41 k
operations) as fast as possible three times (32 lanes, one worker; the first untimed), then
paced at half the median of the last two (``--rate``, ``--max-drift off``) ``--repeat`` rounds of
``linger=off`` (the lane wakes on every reply: what ``auto`` did in every paced run before) and
``linger=auto`` (it naps while behind its schedule), alternately, so the JVM's warming and the
namespace's growth fall on both. Each line: throughput, the latency's p50 and p99 (from each
operation's due time), and the replay's own CPU per operation (its summary's ``cost``: the
client's, the lane; the NameNode's, its process). Last, the medians of each and ``auto``'s over
``off``'s: the reference measured in the same run.

The schedule is bursty: paced so, three quarters of its operations come faster than the
maximum, so the lane falls behind in the bursts and an operation's latency is mostly the backlog
ahead of it. There, on a host the client shares with the NameNode, every CPU second the client
spends is one the NameNode does not get (docs/hdfs-backend.md, "How the native lane reads
replies").
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from bench_capacity import cli  # the in-process CLI
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig

PROFILE = Path(__file__).resolve().parents[1] / "src" / "mimesisbench" / "data" / "demo_profile.json"
#: throughput, p50 ms, p99 ms, client us/op, NameNode us/op
Figures = tuple[float, float, float, float, float]


def _run(schedule: Path, backend: str, out: Path, hdfs_workdir: Path, *extra: str) -> Figures:
    cli(["run", str(schedule), "-b", backend, "--concurrency", "32", "--out", str(out), "-q",
         "--hdfs-workdir", str(hdfs_workdir), *extra])
    s = json.loads((next(out.iterdir()) / "summary.json").read_text())
    cost = s["cost"]
    return (float(s["throughput_ops_per_s"]), float(s["latency_ms"]["p50"]), float(s["latency_ms"]["p99"]),
            float(cost["client_cpu_us_per_op"]), float(cost["server"]["namenode"]["cpu_us_per_op"]))


def _line(what: str, f: Figures) -> str:
    return (f"{what:28s} {f[0]:9,.0f} ops/s   p50 {f[1]:8.1f} ms   p99 {f[2]:8.1f} ms   "
            f"client {f[3]:5.1f} us/op   NameNode {f[4]:5.1f} us/op")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="Rounds of paced runs (one of each linger= a round).")
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        schedule = work / "write-heavy"
        cli(["generate", str(PROFILE), "--types", "1", "--time-scale", "0.01", "--duration", "6000s", "--seed", "7",
             "-o", str(schedule)])
        with fresh_cluster("mb-paced-", a.heap, fslock_fair=True) as (hdfs_work, cluster):
            hdfs = hdfs_work / "hdfs"
            for op in ("create", "fileStatus", "mkdirs"):
                for clients in (64, 8):
                    run_micro(MicroConfig(op=op, files=10_000, backend=f"{cluster.url}/warm-{op}-{clients}",
                                          concurrency=clients))
            fast = [_run(schedule, f"{cluster.url}/fast{r}", work / f"fast{r}", hdfs, "--as-fast-as-possible")
                    for r in range(3)]
            for r, f in enumerate(fast):
                print(_line(f"as fast as possible{' (warm-up)' if r == 0 else ''}", f), flush=True)
            rate = f"{np.median([f[0] for f in fast[1:]]) / 2:.0f}/s"
            paced: dict[str, list[Figures]] = {"off": [], "auto": []}
            for r in range(a.repeat):
                for linger in paced:
                    f = _run(schedule, f"{cluster.url}/{linger}{r}?linger={linger}", work / f"{linger}{r}", hdfs,
                             "--rate", rate, "--max-drift", "off")
                    paced[linger].append(f)
                    print(_line(f"paced at {rate}, linger={linger}", f), flush=True)
    medians = {k: np.median(np.array(v), axis=0) for k, v in paced.items()}
    for k, m in medians.items():
        print(_line(f"median, linger={k}", tuple(float(x) for x in m)), flush=True)  # type: ignore[arg-type]
    ratio = medians["auto"] / medians["off"]
    print(f"auto / off: p50 {ratio[1]:.2f}, p99 {ratio[2]:.2f}, client CPU {ratio[3]:.2f}, NameNode CPU {ratio[4]:.2f}")


if __name__ == "__main__":
    main()
