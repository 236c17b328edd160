"""Is a write's tail at the middle load in the edit log's sync? The NameNode's own sync percentiles
beside the client's, per load:

    .venv/bin/python bench/bench_sync_tail.py [--ops create,mkdirs] [--loads 1,8,16] [--seconds 30]
                                              [--window 10] [--repeat 1] [--lock-report-ms 2]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars) started with the NameNode's
quantiles on (``dfs.metrics.percentiles.intervals``: one window of ``--window`` seconds). The
NameNode then exports, per window, the percentiles of its edit log's syncs (``Syncs<W>s...``: each
sync timed around its flush, the write, the ``fdatasync`` and its thread's wake-up, with a
millisecond clock, so a sync of 0.3 ms reads 0 or 1 ms). For each operation and load, micro runs a
batch of about ``--seconds`` (its size from a short probe at that load), and the bean is read once,
as the batch ends: its last complete window then lies inside the batch (the batch is longer than
two windows), and nothing polls the NameNode while it runs (polling its JMX servlet slowed a
create's p99 1.6 times, ``monitoring/edit_log.py``).

``--lock-report-ms N``: the NameNode also logs every hold of its namesystem lock of N ms or more
(``dfs.namenode.write-lock-reporting-threshold-ms`` and the read lock's, with
``dfs.lock.suppress.warning.interval`` 0 so that none is folded into a later report); each batch's
line then gives how many write and read holds so long its NameNode log gained over the batch, a
second of its timed part, and the longest (micro's own preparation and clean-up included, so an
upper bound: a batch of reads creates its files first): whether a write's long waits come with the
write lock held (under the fair lock one such hold holds every call).

Why. ``simnn:``'s creates at 4-16 clients have a tail far shorter than the NameNode's (session 58,
8 clients: p99 1.5 ms against 7.4 measured), while its reads at 8 clients have none the model lacks
(their p99.9, 2.5 ms, under the creates' p99): pauses of every call at once would put the reads'
tail there too, so the creates' is on the write path. Trials on the simpy reference (session 68,
docs/simnn.md) found that slow syncs at a fixed chance per sync come as often at one client as at
8 (the sync rate hardly grows: each sync takes more edits), so they lengthen the one-client tail
first. If the syncs' own p99 grows with the load to several milliseconds, the write's tail is the
sync's, and its length (not only its chance) grows with the writes on the disk.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.monitoring.jmx import FETCH_TIMEOUT_S, NN, fetch_beans

#: a probe's operations, to size each batch to ``--seconds``
PROBE = 3000
#: the NameNode's report of a long hold of its lock (FSNamesystemLock): "... write lock held for 3 ms"
#: in some versions, "Longest write-lock held at ... for 3 ms" in others
HOLD = re.compile(r"(read|write)[ -]lock held.*?for (\d+) ?ms", re.IGNORECASE)


def sync_quantiles(jmx: str, window: int) -> dict[str, float]:
    """The NameNodeActivity bean's sync figures of the last complete window (every key that starts
    with ``Syncs<window>s``, as the NameNode names them)."""
    beans = fetch_beans(jmx, NN + "NameNodeActivity", FETCH_TIMEOUT_S)
    prefix = f"Syncs{window}s"
    return {k[len(prefix):]: float(v) for bean in beans for k, v in bean.items()
            if k.startswith(prefix) and isinstance(v, int | float)}


def lock_holds(log: Path, start: int) -> dict[str, list[int]]:
    """The long holds the NameNode's log reports after byte ``start`` (ms, by lock)."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode("utf-8", errors="replace")
    holds: dict[str, list[int]] = {"write": [], "read": []}
    for match in HOLD.finditer(text):
        holds[match.group(1).lower()].append(int(match.group(2)))
    return holds


def holds_text(holds: dict[str, list[int]], seconds: float) -> str:
    return "   lock holds reported: " + ", ".join(
        f"{kind} {len(ms) / seconds:.1f} a second (longest {max(ms, default=0)} ms)" for kind, ms in holds.items())


def line(op: str, clients: int, result: dict[str, Any], syncs: dict[str, float]) -> str:
    lat = result["latency_ms"]
    shown = "  ".join(f"{k.replace('thPercentileLatency', '')} {v:g}" for k, v in syncs.items()
                      if "Percentile" in k)
    return (f"{op:8s} x {clients:2d} {float(result['ops_per_s']):8,.0f} ops/s  client p50 {float(lat['p50']):6.2f} "
            f"p99 {float(lat['p99']):6.2f} p99.9 {float(lat['p999']):6.2f} ms   syncs in the window "
            f"{syncs.get('NumOps', float('nan')):,.0f}, ms: {shown or 'none exported'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="create,mkdirs", help="micro's operations (writes).")
    ap.add_argument("--loads", default="1,8,16", help="Closed-loop clients.")
    ap.add_argument("--seconds", type=float, default=30.0, help="Each batch's length, about.")
    ap.add_argument("--window", type=int, default=10, help="The NameNode's quantile window (s).")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--heap", default="1g")
    ap.add_argument("--lock-report-ms", type=int, default=0,
                    help="Have the NameNode log every hold of its lock this long or longer (0: off).")
    a = ap.parse_args()
    if a.seconds < 2.5 * a.window:
        ap.error("--seconds must be at least 2.5 windows, so that a whole window lies inside each batch")
    settings = {"dfs.metrics.percentiles.intervals": str(a.window)}
    if a.lock_report_ms > 0:
        settings |= {"dfs.namenode.write-lock-reporting-threshold-ms": str(a.lock_report_ms),
                     "dfs.namenode.read-lock-reporting-threshold-ms": str(a.lock_report_ms),
                     "dfs.lock.suppress.warning.interval": "0s"}
    with fresh_cluster("mb-synctail-", a.heap, extra=settings) as (_, cluster):
        jmx = f"http://127.0.0.1:{cluster.http_port}/jmx"
        # a warm-up: a fresh JVM interprets before it compiles
        run_micro(MicroConfig(op="create", files=50_000, backend=f"{cluster.url}/warm", concurrency=64))
        for r in range(a.repeat):
            for op in a.ops.split(","):
                for clients in (int(c) for c in a.loads.split(",")):
                    probe = run_micro(MicroConfig(op=op, files=PROBE, concurrency=clients,
                                                  backend=f"{cluster.url}/p{r}-{op}-{clients}")).to_json()
                    files = int(float(probe["ops_per_s"]) * a.seconds)
                    log = cluster.layout.logs / "namenode.log"
                    start = log.stat().st_size if log.is_file() else 0
                    result = run_micro(MicroConfig(op=op, files=files, concurrency=clients,
                                                   backend=f"{cluster.url}/r{r}-{op}-{clients}")).to_json()
                    # the last complete window ended at most one window before now and began at most
                    # two before: inside the timed part, unless micro's clean-up (one recursive
                    # delete: its time is printed) took longer than the batch's margin
                    syncs = sync_quantiles(jmx, a.window)
                    shown = line(op, clients, result, syncs) + f"   clean-up {float(result['cleanup_s']):.1f} s"
                    if a.lock_report_ms > 0 and log.is_file():
                        shown += holds_text(lock_holds(log, start), float(result["elapsed_s"]))
                    print(shown, flush=True)


if __name__ == "__main__":
    main()
