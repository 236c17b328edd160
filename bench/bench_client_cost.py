"""The client's CPU per operation beside the NameNode's, per client kind, on a fresh managed HDFS:

    .venv/bin/python bench/bench_client_cost.py [--files 20000] [--clients 8] [--kinds native,threads]
        [--lingers auto,off] [--repeat 2]

For each operation (open, fileStatus = getfileinfo, create, delete) and client kind, ``micro``
times ``--files`` operations with ``--clients`` closed-loop clients; the client's CPU is this
process's CPU time over the timed batch (every thread, the native lane's included), the
NameNode's is its process's CPU time over the same batch (``/proc``, through psutil). Prints
both per operation and their ratio (the issue's bar for the native lane: the client at most 1/4
of the NameNode), alternating the kinds. The native client runs once per ``--lingers`` value
(the hdfs URL's ``linger=``: how it reads replies; ``auto`` is the default).
"""

from __future__ import annotations

import argparse

import psutil
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig

OPS = ("open", "fileStatus", "create", "delete")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--kinds", default="native,threads")
    ap.add_argument("--lingers", default="auto,off", help="the native client's linger= values")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    lingers = [v for v in a.lingers.split(",") if v]
    kinds = [(k, v) for k in a.kinds.split(",") if k for v in (lingers if k == "native" else [""])]
    with fresh_cluster("mb-cost-", a.heap) as (_, cluster):
        namenode = psutil.Process(next(pid for role, pid, _ in cluster.status().processes if role == "namenode"))

        def namenode_cpu_s() -> float:
            t = namenode.cpu_times()
            return float(t.user + t.system)

        print(f"# {a.files} operations per batch, {a.clients} clients, NameNode pid {namenode.pid}", flush=True)
        for op in [o for o in a.ops.split(",") if o]:
            for r in range(a.repeat):
                for kind, linger in kinds if r % 2 == 0 else kinds[::-1]:
                    query = f"?linger={linger}" if linger else ""
                    result = run_micro(
                        MicroConfig(op=op, files=a.files, backend=f"{cluster.url}/cost-{op}-{kind}{linger}-{r}{query}",
                                    concurrency=a.clients, client=kind),
                        server_cpu=namenode_cpu_s,
                    ).to_json()
                    client, server = result["client_cpu_us_per_op"], result["server_cpu_us_per_op"]
                    label = f"{kind}:{linger}" if linger else kind
                    print(f"{op:10s} {label:12s} repeat {r + 1}: {result['ops_per_s']:9,.0f} ops/s  client "
                          f"{client:6.1f} us/op  NameNode {server:6.1f} us/op  client/NameNode {client / server:.2f}"
                          f"  errors {result['errors']}", flush=True)


if __name__ == "__main__":
    main()
