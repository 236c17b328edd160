"""A hot-file schedule against ``micro open`` on the same managed NameNode, at the same number of
operations in flight:

    .venv/bin/python bench/bench_hot_file.py [--opens 50000] [--files 6] [--in-flight 64] [--repeat 2]

The schedule (a verbatim trace) makes ``--files`` files, then opens them round robin, all due at
once: replayed as fast as possible with one worker and ``--in-flight`` operations in flight. With
one lane per file (the replay before the open loop for real) at most ``--files`` operations were
ever in flight, whatever ``--concurrency`` said; now only the namespace's dependencies order them
(each open follows its file's create). ``micro open`` opens ``--opens`` distinct files with as many
closed-loop clients. Prints both rates and their ratio per repetition, alternating the tools (the
issue's bar: the replay at least 0.9x micro).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl
from bench_capacity import cli  # the in-process CLI of the capacity bench
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig


def hot_trace(path: Path, files: int, opens: int) -> Path:
    rows = [(0, "create", f"/hot/f{i}") for i in range(files)] + [(1, "open", f"/hot/f{i % files}") for i in range(opens)]
    pl.DataFrame({"time_ms": [1_700_000_000_000 + t for t, _, _ in rows], "op": [op for _, op, _ in rows],
                  "path": [p for _, _, p in rows], "dst": None, "user": "u", "allowed": True}).write_csv(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opens", type=int, default=50_000)
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with fresh_cluster("mb-hot-", a.heap) as (work, cluster):
        schedule = work / "schedule"
        cli(["schedule-from-trace", str(hot_trace(work / "trace.csv", a.files, a.opens)), "-o", str(schedule)])
        ratios = []
        for r in range(a.repeat):
            micro = run_micro(MicroConfig(op="open", files=a.opens, backend=f"{cluster.url}/micro-{r}",
                                          concurrency=a.in_flight))
            micro_rate = float(micro.to_json()["ops_per_s"])
            out = work / f"runs-{r}"
            cli(["run", str(schedule), "-b", f"{cluster.url}/hot-{r}", "--workers", "1", "--concurrency",
                 str(a.in_flight), "--as-fast-as-possible", "--hdfs-workdir", str(cluster.workdir), "-o", str(out), "-q"])
            summary = json.loads(next(out.iterdir()).joinpath("summary.json").read_text())
            opens = summary["operations"]["open"]
            replay_rate = float(opens["throughput_ops_per_s"])
            ratios.append(replay_rate / micro_rate)
            cost = summary["cost"]
            print(f"repeat {r + 1}: micro open x {a.in_flight}: {micro_rate:,.0f} ops/s; hot-file replay ({a.files} files, "
                  f"{a.in_flight} in flight): {replay_rate:,.0f} opens/s ({opens['failed']} failed) = {ratios[-1]:.2f}x; "
                  f"client {cost['client_cpu_us_per_op']:.0f} us/op, NameNode "
                  f"{cost['server'].get('namenode', {}).get('cpu_us_per_op', float('nan')):.0f} us/op, "
                  f"bottleneck {cost['bottleneck']}", flush=True)
        print(f"replay / micro: {min(ratios):.2f}-{max(ratios):.2f}x")


if __name__ == "__main__":
    main()
