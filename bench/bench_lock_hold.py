"""How long each operation holds the namesystem lock on a real NameNode, as the NameNode times it:

    .venv/bin/python bench/bench_lock_hold.py [--files 10000] [--repeat 2]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars) started with
``dfs.namenode.lock.detailed-metrics.enabled``: the NameNode then times every hold of its lock by
the operation that took it and exports, per operation, ``FSN{Read,Write}Lock<Op>NanosNumOps``
and ``...NanosAvgTime`` (the mean of the last metrics interval that had any; ``hdfs up`` sets
the period to 1 s). For each round and each of the simulated NameNode's calibration operations
at 64 and 8 clients (micro), the line gives the throughput and the mean hold of each lock the
operation's RPCs took over the batch's last second (a create takes it twice: its ``create`` and
its ``complete``). The first round runs on a JVM still compiling.

What it is for: ``simnn:`` holds the lock for ``lock_share`` of an operation's NameNode work; a
read's share is a setting (0.5 by default) and a write's is fitted (docs/simnn.md says how these
holds compare, and what using them did).
"""

from __future__ import annotations

import argparse
import time

from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.monitoring.jmx import FETCH_TIMEOUT_S, NN, fetch_beans

#: micro's operation -> the lock operations its RPCs time (Hadoop 3.4's names)
HOLDS = {
    "fileStatus": ("ReadLockGetfileinfo",),
    "open": ("ReadLockOpen", "ReadLockGetBlockLocations"),
    "listStatus": ("ReadLockListStatus",),
    "create": ("WriteLockCreate", "WriteLockCompleteFile"),
    "mkdirs": ("WriteLockMkdirs",),
    "rename": ("WriteLockRename",),
    "delete": ("WriteLockDelete",),
}
#: after a batch, long enough for a metrics refresh that shows its last second
REFRESH_S = 2.5


def hold_means_us(jmx_url: str) -> dict[str, float]:
    """Each lock operation's mean hold (us) in the last interval that had one."""
    out: dict[str, float] = {}
    for bean in fetch_beans(jmx_url, NN + "FSNamesystem", FETCH_TIMEOUT_S):
        for key, value in bean.items():
            if key.startswith("FSN") and key.endswith("NanosAvgTime") and isinstance(value, int | float):
                out[key[len("FSN"):-len("NanosAvgTime")]] = float(value) / 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000, help="Operations per micro batch.")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with fresh_cluster("mb-lockhold-", a.heap, extra={"dfs.namenode.lock.detailed-metrics.enabled": "true"}) as (
            _, cluster):
        jmx = f"http://127.0.0.1:{cluster.http_port}/jmx"
        for r in range(a.repeat):
            for op, names in HOLDS.items():
                for clients in (64, 8):
                    result = run_micro(MicroConfig(op=op, files=a.files, backend=f"{cluster.url}/r{r}-{op}-{clients}",
                                                   concurrency=clients)).to_json()
                    time.sleep(REFRESH_S)
                    holds = hold_means_us(jmx)
                    shown = "   ".join(f"{n} {holds[n]:6.1f} us" for n in names if n in holds) or "no hold timed"
                    print(f"round {r} micro {op:10s} x {clients:2d} {float(result['ops_per_s']):9,.0f} ops/s   {shown}",
                          flush=True)


if __name__ == "__main__":
    main()
