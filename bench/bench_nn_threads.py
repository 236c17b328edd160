"""Where a real NameNode spends its CPU, by thread: the RPC handlers, the socket reader, the edit
log's thread (``FSEditLogAsync``) and the rest, per operation, at several loads:

    .venv/bin/python bench/bench_nn_threads.py [--files 20000]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars), warmed up (each operation at
64 and 8 clients: a fresh JVM interprets before it compiles), then micro create and mkdirs at 1,
4, 8, 16 and 64 clients. Each line: throughput, the edit log's transactions and syncs (the
NameNode's ``NameNodeActivity``: ``TransactionsNumOps``, ``SyncsNumOps``), and each thread
class's CPU per operation (``/proc/PID/task/*/schedstat``: nanoseconds on a core; Linux only),
read before the micro batch and after it once the metrics have refreshed (the batch's untimed
preparation and cleanup, a few directories, are in both). Last, the edit log's thread's CPU
fitted as a cost per sync plus a cost per edit (least squares of the relative errors, numpy).

Why: the simulated NameNode (docs/simnn.md) spends a write's edit-log sync as a delay and its
CPU as the handler's; this is how much of a write's NameNode CPU is the edit log's own thread,
one thread for every write, which the model does not have.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.monitoring.edit_log import ACTIVITY_QUERY
from mimesisbench.monitoring.jmx import fetch_beans, managed_jmx_url

#: thread name prefixes (``/proc/PID/task/TID/comm``, at most 15 characters) and their class
CLASSES = (("IPC Server hand", "handlers"), ("Socket Reader", "reader"), ("FSEditLogAsync", "edit log"))
REFRESH_S = 2.5  # the managed NameNode's metrics period is 1 s: wait for the batch to show


def thread_cpu(pid: int) -> Counter[str]:
    """Nanoseconds on a core so far, summed by thread class."""
    out: Counter[str] = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            run_ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        out[next((c for prefix, c in CLASSES if name.startswith(prefix)), "other")] += run_ns
    return out


def edit_log_counts(jmx: str) -> tuple[int, int]:
    bean = fetch_beans(jmx, ACTIVITY_QUERY, 10.0)[0]
    return int(bean["TransactionsNumOps"]), int(bean["SyncsNumOps"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000, help="Operations per micro batch (a tenth at one client).")
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with fresh_cluster("mb-threads-", a.heap) as (hdfs_work, cluster):
        pid = next(p for role, p, _ in cluster.status().processes if role == "namenode")
        jmx = managed_jmx_url(cluster.url, hdfs_work / "hdfs")
        if jmx is None:
            raise SystemExit("bench_nn_threads: the managed NameNode shows no JMX servlet")
        ops = ("create", "mkdirs")
        for op in ops:
            for clients in (64, 8):
                run_micro(MicroConfig(op=op, files=10_000, backend=f"{cluster.url}/warm-{op}", concurrency=clients))
        rows: list[tuple[int, int, float]] = []  # syncs, edits, the edit log's CPU seconds
        for op in ops:
            for clients in (1, 4, 8, 16, 64):
                files = a.files // 10 if clients == 1 else a.files
                cpu0, (tx0, sync0) = thread_cpu(pid), edit_log_counts(jmx)
                result = run_micro(MicroConfig(op=op, files=files, backend=f"{cluster.url}/m-{op}-{clients}",
                                               concurrency=clients)).to_json()
                time.sleep(REFRESH_S)
                cpu1, (tx1, sync1) = thread_cpu(pid), edit_log_counts(jmx)
                tx, syncs = tx1 - tx0, sync1 - sync0
                used = {c: (cpu1[c] - cpu0[c]) / 1e3 / files for c in ("handlers", "reader", "edit log", "other")}
                rows.append((syncs, tx, (cpu1["edit log"] - cpu0["edit log"]) / 1e9))
                print(f"micro {op:6s} x {clients:2d}  {float(result['ops_per_s']):8,.0f} ops/s   edits {tx / files:4.2f}/op, "
                      f"{tx / max(syncs, 1):5.2f} a sync   CPU us/op: "
                      + ", ".join(f"{c} {v:6.1f}" for c, v in used.items()), flush=True)
        syncs_edits = np.array([[s, t] for s, t, _ in rows], dtype=float)
        cpu = np.array([c for *_, c in rows])
        (per_sync, per_edit), *_ = np.linalg.lstsq(syncs_edits / cpu[:, None], np.ones(len(rows)), rcond=None)
        misses = (syncs_edits @ [per_sync, per_edit] - cpu) / cpu * 100
        print(f"the edit log's thread: {per_sync * 1e6:.1f} us of CPU a sync + {per_edit * 1e6:.1f} us an edit "
              f"(the batches above within {np.abs(misses).max():.0f} %)", flush=True)


if __name__ == "__main__":
    main()
