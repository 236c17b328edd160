"""The capacity search on the managed HDFS against ``micro``'s closed-loop maximum for the same
operation, measured in the same script run on the same NameNode:

    .venv/bin/python bench/bench_capacity_hdfs.py [--op getfileinfo] [--operations 20000] [--clients 8,32,64]

1. starts a fresh managed HDFS (``LocalHdfs``, NameNode and DataNode from Maven Central jars);
2. ``micro`` (fileStatus for getfileinfo, open for open) at each ``--clients``, closed loop: the
   largest rate is the reference (what the client stack can get out of this NameNode when it
   never waits for a schedule);
3. ``capacity`` of a steady schedule of the same operation on 200 files (a verbatim trace of
   evenly spaced calls: the offered load has no bursts), open loop, doubling then bisecting to
   ``--tolerance``, with ``--workers`` x ``--concurrency`` lanes;
4. prints q, micro's maximum, and their ratio; then the closing check at Wu's p_max for a bound.

An open-loop replay paces every operation and records its timing, which a closed loop does not:
on a 2-core machine where client and NameNode share the CPU the ratio says how much of the
NameNode's closed-loop throughput the open-loop client can offer and still stay stationary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bench_capacity import cli, steady_log  # the steady schedule and the in-process CLI of the null-server bench

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig

MICRO_OP = {"getfileinfo": "fileStatus", "open": "open"}


@contextmanager
def fresh_cluster(prefix: str, heap: str, fslock_fair: bool | None = None,
                  extra: Mapping[str, str] | None = None,
                  jvm_options: tuple[str, ...] = ()) -> Iterator[tuple[Path, LocalHdfs]]:
    """A temporary folder with a managed HDFS started in it (``extra``: more NameNode settings;
    ``jvm_options``: more options of the NameNode's JVM); both gone afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = LocalHdfs(LocalHdfsConfig(workdir=work / "hdfs", heap=heap, startup_timeout_s=300.0,
                                        fslock_fair=fslock_fair, extra=dict(extra or {}),
                                        jvm_options=jvm_options))
    try:
        cluster.up()
        yield work, cluster
    finally:
        cluster.down()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", choices=sorted(MICRO_OP), default="getfileinfo")
    ap.add_argument("--operations", type=int, default=20_000, help="Operations in the steady schedule and per micro run.")
    ap.add_argument("--clients", default="8,32,64", help="micro's closed-loop client counts.")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32, help="Lanes per worker of the open-loop trials.")
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument("--bound", default="20ms", help="B for p_max and the closing check.")
    ap.add_argument("--peak-length", default="2s", help="T for p_max and the closing check.")
    ap.add_argument("--heap", default="1g")
    a = ap.parse_args()
    with fresh_cluster("mb-caphdfs-", a.heap) as (work, cluster):
        micro = {}
        for clients in (int(c) for c in a.clients.split(",")):
            result = run_micro(MicroConfig(op=MICRO_OP[a.op], files=a.operations, backend=f"{cluster.url}/micro",
                                           concurrency=clients))
            micro[clients] = float(result.to_json()["ops_per_s"])
            print(f"micro {MICRO_OP[a.op]} x {clients} clients: {micro[clients]:,.0f} ops/s", flush=True)
        best = max(micro.values())
        schedule = work / "schedule"
        cli(["schedule-from-trace", str(steady_log(work / "audit.log", a.operations, 1, a.op)), "-o", str(schedule)])
        found = json.loads(cli(["capacity", str(schedule), "-b", f"{cluster.url}/bench", "--start", f"{best / 8:.0f}/s",
                                "--tolerance", str(a.tolerance), "--workers", str(a.workers), "--concurrency",
                                str(a.concurrency), "--bound", a.bound, "--peak-length", a.peak_length, "--check",
                                "--hdfs-workdir", str(cluster.workdir),
                                "--output", str(work / "capacity"), "--json"]))
        q = found["capacity_ops_s"]
        trials = ", ".join(f"{t['rate']:,.0f}{'' if t['sustained'] else 'x'}" for t in found["trials"])
        print(f"capacity ({a.workers} workers x {a.concurrency} in flight, open loop): q = {q:,.0f} ops/s; trials {trials} "
              "(x: not sustained)")
        for t in found["trials"]:
            late, lat = t.get("lateness") or {}, t.get("latency") or {}
            print(f"  {t['rate']:>10,.0f} offered, {t['served']:>10,.0f} served; lateness slope {late.get('slope_per_s', 0):.3g}"
                  f" ms/s, latency slope {lat.get('slope_per_s', 0):.3g} ms/s; {t['note'] or 'sustained'}")
        print(f"q / micro's closed-loop maximum ({best:,.0f} ops/s at {max(micro, key=micro.__getitem__)} clients): "
              f"{q / best:.2f}")
        check = found.get("peak_check")
        if check:
            mean = check["latency_mean_s"]
            print(f"closing check: a {check['length_s']:.3g} s peak (asked {a.peak_length}) at p_max = "
                  f"{found['p_max_ops_s']:,.0f} ops/s "
                  f"({check['offered_ops_s']:,.0f} offered): mean response time "
                  f"{'-' if mean is None else f'{mean * 1000:.1f} ms'} against B = {a.bound}")


if __name__ == "__main__":
    main()
