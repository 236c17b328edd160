"""Where a call's time goes inside a real NameNode, as the NameNode itself times each RPC:

    .venv/bin/python bench/bench_rpc_phases.py [--files 100000] [--ops create,mkdirs,fileStatus]
                                               [--loads 1,8,64] [--repeat 1] [--unfair]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars) started with the RPC
server's quantiles on (``rpc.metrics.quantile.enable``, ``rpc.metrics.percentiles.intervals`` 1 s,
``rpc.metrics.timeunit`` microseconds). The NameNode then exports, per one-second window, the
50th/90th/99th percentiles of each RPC's time in the call queue (``RpcQueueTime``: from the
socket reader's put to a handler's take), waiting for the namesystem lock (``RpcLockWaitTime``),
processing it (``RpcProcessingTime``: the handler's work, lock wait included) and sending its
answer (``RpcResponseTime``: from the end of processing until the answer is written; a write's
answer under asynchronous edit logging is sent by the edit log's thread after its sync, and that
wait is not in any of these).

For each operation and load, micro runs a batch while a thread polls the bean four times a second;
the windows wholly inside the timed part (not its preparation or clean-up) are kept, and each
percentile is their median. A line gives the client's throughput, p50 and p99 (one operation: a
create is two RPCs) beside the NameNode's per-RPC percentiles, and ``outside``: the client's p99
minus the sum of the RPC's queue, processing and response p99 (times the RPCs per operation):
roughly the least of the tail that the handlers' side does not hold (the sync, the edit log's
thread, the socket reader before the queue, the network, the client).

What it is for: ``simnn:`` puts a call's tail in its handler (a stall as it wakes for the lock or
after its work; docs/simnn.md, "The model"). The quantiles cost the NameNode some CPU per RPC
(each RPC's times go through a sampling estimator): the figures are for where the time goes, not
for the model's costs.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.monitoring.jmx import FETCH_TIMEOUT_S, NN, fetch_beans

PHASES = ("RpcQueueTime", "RpcLockWaitTime", "RpcProcessingTime", "RpcResponseTime")
QUANTILES = ("50th", "90th", "99th")
#: seconds between polls of the RPC bean: several per one-second window, so that none is missed
POLL_S = 0.25
#: RPCs per operation of micro (a create is its ``create`` and its ``complete``)
RPCS = {"create": 2}
SETTINGS = {"rpc.metrics.quantile.enable": "true", "rpc.metrics.percentiles.intervals": "1",
            "rpc.metrics.timeunit": "MICROSECONDS"}


class BeanPoller:
    """Reads the beans matching ``query`` every ``interval_s`` from a thread while entered, and
    hands each answer to ``seen`` (a servlet that does not answer is skipped)."""

    def __init__(self, jmx_url: str, query: str, interval_s: float) -> None:
        self.jmx_url = jmx_url
        self.query = query
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> BeanPoller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                beans = fetch_beans(self.jmx_url, self.query, FETCH_TIMEOUT_S)
            except (OSError, ValueError):
                continue
            self.seen(beans)

    def seen(self, beans: list[dict[str, Any]]) -> None:
        """One answer (nothing kept by default)."""


class WindowPoller(BeanPoller):
    """Polls the busiest ``RpcActivityForPort*`` bean; keeps (seen at, window) for each new window."""

    def __init__(self, jmx_url: str) -> None:
        super().__init__(jmx_url, NN + "RpcActivityForPort*", POLL_S)
        self.windows: list[tuple[float, dict[str, Any]]] = []
        self._last: tuple[Any, ...] | None = None

    def seen(self, beans: list[dict[str, Any]]) -> None:
        bean = max(beans, key=lambda b: float(b.get("RpcQueueTimeNumOps", 0) or 0), default=None)
        if bean is None:
            return
        key = tuple(bean.get(f"{p}1s{q}PercentileLatency") for p in PHASES for q in QUANTILES) + (
            bean.get("RpcQueueTime1sNumOps"),)
        if key != self._last:  # a new window rolled over
            self._last = key
            self.windows.append((time.monotonic(), bean))


def phase_percentiles(windows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each phase's p50/p90/p99 (us): the median over the windows."""
    return {p: [statistics.median(float(w[f"{p}1s{q}PercentileLatency"]) for w in windows) for q in QUANTILES]
            for p in PHASES}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000, help="Operations per micro batch (a quarter at one client).")
    ap.add_argument("--ops", default="create,mkdirs,fileStatus", help="micro's operations.")
    ap.add_argument("--loads", default="1,8,64", help="Closed-loop clients.")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--heap", default="1g")
    ap.add_argument("--unfair", action="store_true", help="The namesystem lock not fair (dfs.namenode.fslock.fair false).")
    a = ap.parse_args()
    with fresh_cluster("mb-rpcphases-", a.heap, fslock_fair=not a.unfair, extra=SETTINGS) as (_, cluster):
        jmx = f"http://127.0.0.1:{cluster.http_port}/jmx"
        # a warm-up: a fresh JVM interprets before it compiles
        run_micro(MicroConfig(op="create", files=a.files, backend=f"{cluster.url}/warm", concurrency=64))
        for r in range(a.repeat):
            for op in a.ops.split(","):
                for clients in (int(c) for c in a.loads.split(",")):
                    files = a.files if clients > 1 else max(1, a.files // 4)
                    with WindowPoller(jmx) as poller:
                        called = time.monotonic()
                        result = run_micro(MicroConfig(op=op, files=files, concurrency=clients,
                                                       backend=f"{cluster.url}/r{r}-{op}-{clients}")).to_json()
                        returned = time.monotonic()
                    timed_end = returned - float(result["cleanup_s"])
                    timed_start = timed_end - float(result["elapsed_s"])
                    # a window seen at t rolled over at most POLL_S before, and covers the second before that
                    inside = [w for t, w in poller.windows if t - 1.0 - POLL_S >= timed_start and t <= timed_end]
                    lat = result["latency_ms"]
                    head = (f"round {r} {op:10s} x {clients:2d} {float(result['ops_per_s']):8,.0f} ops/s  "
                            f"p50 {float(lat['p50']) * 1e3:6.0f}  p99 {float(lat['p99']) * 1e3:6.0f} us")
                    if not inside:
                        print(f"{head}   no one-second window inside the timed part ({returned - called:.1f} s)",
                              flush=True)
                        continue
                    phases = phase_percentiles(inside)
                    held = RPCS.get(op, 1) * sum(phases[p][2] for p in PHASES if p != "RpcLockWaitTime")
                    shown = "  ".join(f"{p[3:-4].lower()} {'/'.join(f'{v:.0f}' for v in phases[p])}" for p in PHASES)
                    print(f"{head}   per RPC p50/p90/p99 us ({len(inside)} windows): {shown}   "
                          f"outside ~ {float(lat['p99']) * 1e3 - held:.0f} us", flush=True)


if __name__ == "__main__":
    main()
