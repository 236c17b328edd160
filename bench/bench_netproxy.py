"""The latency proxy's figure (issue 17): latency requested against latency measured, on an
echo server (the proxy's own probe) and on the managed NameNode's RPC (getfileinfo through the
proxy minus direct, p50 of many calls, the same client in the same run).

Starts a managed HDFS in a temporary directory (or uses ``--hdfs-workdir``'s running one)::

    .venv/bin/python bench/bench_netproxy.py [--latencies 0,1,5,20] [--calls 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hdfs_native import Client

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.netproxy.latency import LatencyProxyConfig, proxy_down, proxy_up


def _p50_ms(url: str, calls: int) -> float:
    client = Client(url)
    client.get_file_info("/")  # connect first
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        client.get_file_info("/")
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latencies", default="0,1,5,20", help="requested latencies, ms (0: the proxy hop alone)")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--hdfs-workdir", type=Path, default=None, help="a running `mimesisbench hdfs up` cluster")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-netproxy-") as tmp:
        root = Path(tmp)
        cluster = LocalHdfs(LocalHdfsConfig(workdir=args.hdfs_workdir or root / "hdfs", heap="512m"))
        started = args.hdfs_workdir is None
        cluster.up()
        try:
            direct = _p50_ms(cluster.url, args.calls)
            print(f"getfileinfo / direct: p50 {direct:.3f} ms ({args.calls} calls)")
            print("requested ms | echo probe: measured ms | NameNode RPC: p50 through the proxy, added ms, added/requested")
            for latency in (int(x) for x in args.latencies.split(",")):
                workdir = root / f"proxy-{latency}"
                state = proxy_up(LatencyProxyConfig(upstream=f"127.0.0.1:{cluster.rpc_port}", latency_ms=latency,
                                                    workdir=workdir))
                try:
                    proxied = _p50_ms(f"hdfs://{state.listen}", args.calls)
                finally:
                    proxy_down(workdir)
                added = proxied - direct
                ratio = f"{added / latency:.3f}" if latency else "-"
                print(f"{latency:>12} | {state.measured_ms:>23.3f} | {proxied:.3f} ms, {added:.3f} ms, {ratio}")
        finally:
            if started:
                cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
