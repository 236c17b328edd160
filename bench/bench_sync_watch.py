"""How much reading the NameNode's JMX servlet while a micro-benchmark runs changes what it measures:

    .venv/bin/python bench/bench_sync_watch.py [--rounds 6] [--files 10000] [--clients 8]
                                               [--ops create,mkdirs,fileStatus]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars). After a warm-up, each
operation runs at ``--clients`` clients, round after round, once with a thread of this process
reading ``NameNodeActivity`` every 0.2 s (what ``simnn calibrate``'s sync watch did until it read
the bean only at each measurement's edges: ``monitoring.edit_log``) and once without, in
alternating order. It prints each run, then per operation and way the medians of the throughput,
p50 and p99, and the ratio of the watched medians to the unwatched ones: the cost of the
polling, measured against the same NameNode in the same minutes. Measured here (2 cores, six
rounds; two fresh clusters, the first with the watch's own thread rather than this one's
poller): create 0.96 and 0.96 times the throughput, 1.69 and 1.61 times the p99; mkdirs 0.97 and
0.94, 1.18 and 1.25; getfileinfo 0.79 and 0.98, 1.50 and 1.07.
"""

from __future__ import annotations

import argparse
import statistics

from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder
from bench_rpc_phases import BeanPoller  # a thread reading a bean while entered

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.monitoring.edit_log import ACTIVITY_QUERY

#: how often the old watch read the bean while a measurement ran (its poll interval then; the
#: watch's POLL_INTERVAL_S now only paces the wait at a measurement's end, and may change)
OLD_WATCH_POLL_S = 0.2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--ops", default="create,mkdirs,fileStatus")
    ap.add_argument("--heap", default="2g")
    a = ap.parse_args()
    ops = a.ops.split(",")
    with fresh_cluster("mb-syncwatch-", a.heap) as (_, cluster):
        jmx = f"http://127.0.0.1:{cluster.http_port}/jmx"

        def micro(op: str, clients: int, tag: str) -> tuple[float, float, float]:
            result = run_micro(MicroConfig(op=op, files=a.files, backend=f"{cluster.url}/{tag}-{op}-{clients}",
                                           concurrency=clients)).to_json()
            lat = result["latency_ms"]
            return float(result["ops_per_s"]), float(lat["p50"]), float(lat["p99"])

        for op in ("create", *ops):  # a warm-up: a fresh JVM interprets before it compiles
            micro(op, 64 if op == "create" else a.clients, "warm")
        runs: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
        for r in range(a.rounds):
            for op in ops:
                for watched in (True, False) if r % 2 == 0 else (False, True):
                    if watched:
                        with BeanPoller(jmx, ACTIVITY_QUERY, OLD_WATCH_POLL_S):  # the old watch
                            got = micro(op, a.clients, f"r{r}w")
                    else:
                        got = micro(op, a.clients, f"r{r}n")
                    runs.setdefault((op, watched), []).append(got)
                    print(f"round {r} {op:10s} x {a.clients} {'polled' if watched else 'quiet ':6s} {got[0]:9,.0f} "
                          f"ops/s  p50 {got[1] * 1e3:6.0f}  p99 {got[2] * 1e3:6.0f} us", flush=True)
        for op in ops:
            medians = {watched: [statistics.median(x[k] for x in runs[(op, watched)]) for k in range(3)]
                       for watched in (True, False)}
            polled, quiet = medians[True], medians[False]
            print(f"# {op:10s} x {a.clients}: polled / quiet medians: throughput {polled[0]:,.0f} / {quiet[0]:,.0f} "
                  f"({polled[0] / quiet[0]:.2f}x), p50 {polled[1] * 1e3:.0f} / {quiet[1] * 1e3:.0f} us "
                  f"({polled[1] / quiet[1]:.2f}x), p99 {polled[2] * 1e3:.0f} / {quiet[2] * 1e3:.0f} us "
                  f"({polled[2] / quiet[2]:.2f}x)")


if __name__ == "__main__":
    main()
