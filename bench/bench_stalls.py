"""Is a load's tail a pause of everything in flight, or calls slow one by one? NameNode against model.

    python bench/bench_stalls.py [--op create] [--loads 1,8,64] [--files 30000] [--unfair]
                                 [--calibration DIR] [--heap 2g] [--jvm-pauses] [--fsync-probe]

A fresh managed HDFS (NameNode and DataNode from Maven Central jars) is warmed as
``bench_sched_delays.py`` warms it (150,000 creates at 64 clients); then each load's micro batch
of ``--op`` runs, and the same batches run on ``simnn:`` (the built-in calibration, or
``--calibration DIR``) in virtual time. For each, from the calls' own start and end times:

- the latency's p50, p90 and p99;
- the **stalls**: gaps of 1, 2 and 5 ms or more between one call's end and the next's, every
  client together, a second, and their share of the batch's time. With N clients in flight a
  call ends every 1/throughput on average; a gap many times that long is a pause of every call in
  flight at once (a thread every call passes through, the lock's holder, the collector, the host);
- the share of the slow calls (beyond the p99) that span a stall of 2 ms or more: near 1 when the
  tail is such pauses, near 0 when calls are slow one by one (each in its own queue);
- on the NameNode, each core's busy and stolen share over the batch (``/proc/stat``): a host
  that steals much makes every figure slower.

With ``--jvm-pauses`` the NameNode's JVM logs its safepoints (``-Xlog:safepoint``: every pause of
all its Java threads at once, a garbage collection's or the VM's own), and each batch prints the
pauses logged since the batch before ended (its own preparation included): how many of 1, 2 and
5 ms or more a second, their share of the batch's time, and the kinds (``G1CollectForAllocation``, ...) of those of 1 ms or more. The stalls
the JVM's pauses do not account for are the rest of the server's or the host's.

With ``--fsync-probe`` a process beside the NameNode times an ``fdatasync`` of 128 bytes written
in place into a preallocated file (as the NameNode writes its edits) in the cluster's folder, on
the edit log's file system, every 2 ms while each batch runs and for 6 s before the warm-up
(idle): the disk's sync as the edit log meets it at each load, its p50, p90, p99, p99.9 and the
share of syncs of 1, 2 and 5 ms or more. The probe's own syncs slow the NameNode's writes (a third
of the creates at 8 clients here): its batches are not the others' to compare. Run with
``TMPDIR=/dev/shm`` the cluster (and the edit log) is in memory: the same batches without the disk.

What it is for: the model's tail at the middle load is a few times too short (docs/simnn.md,
"The middle load's tail: pauses of every call at once"); whether the NameNode's is pauses or
single slow calls says which kind of mechanism the model lacks. Prints figures, asserts none.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder
from bench_sched_delays import cpu_times, stolen, warm

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig
from mimesisbench.micro.runner import Timings

#: the gaps between two calls' ends counted as stalls (ms)
STALL_MS = (1.0, 2.0, 5.0)
#: the stall a slow call must span to count as paused (ms)
PAUSE_MS = 2.0


def stall_figures(t: Timings) -> str:
    """A batch's latency quantiles, its stalls and how many of its slow calls span one."""
    start, end = t.start_ns.astype(np.int64), t.end_ns.astype(np.int64)
    lat = (end - start) / 1e6
    seconds = (end.max() - start.min()) / 1e9
    ends = np.sort(end)
    gaps = np.diff(ends) / 1e6
    parts = [f"p50 {np.percentile(lat, 50):.2f} p90 {np.percentile(lat, 90):.2f} p99 {np.percentile(lat, 99):.2f} ms"]
    for ms in STALL_MS:
        big = gaps[gaps >= ms]
        parts.append(f"stalls >= {ms:g} ms {big.size / seconds:.1f}/s ({100 * big.sum() / 1e3 / seconds:.1f} %)")
    # the stalls of PAUSE_MS or more, as [from, to] in ns; a slow call spans one if it started before
    # the stall began and ended after it was over
    long = np.flatnonzero(gaps >= PAUSE_MS)
    frm, to = ends[long], ends[long + 1]
    slow = np.flatnonzero(lat > np.percentile(lat, 99))
    spans = 0
    for i in slow:
        k = np.searchsorted(frm, start[i], side="left")  # the first stall beginning at or after its start
        spans += bool(k < frm.size and to[k] <= end[i])
    parts.append(f"slow calls spanning a stall {spans} of {slow.size}")
    return "; ".join(parts)


#: a safepoint's line in JDK 17's ``-Xlog:safepoint``: its kind and its whole length
SAFEPOINT = re.compile(r'Safepoint "(\w+)".*Total: (\d+) ns')


def jvm_pauses(log: Path, offset: int, seconds: float) -> tuple[int, str]:
    """The safepoints logged in ``log`` past ``offset`` (a batch's, ``seconds`` long): the new
    offset and the figures."""
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    pauses = [(m[1], int(m[2]) / 1e6) for m in SAFEPOINT.finditer(text)]
    ms = np.array([p for _, p in pauses], dtype=float)
    parts = [f"JVM safepoints {ms.size / seconds:.1f}/s"]
    for limit in STALL_MS:
        big = ms[ms >= limit]
        parts.append(f">= {limit:g} ms {big.size / seconds:.1f}/s ({100 * big.sum() / 1e3 / seconds:.1f} %)")
    kinds = Counter(kind for kind, p in pauses if p >= STALL_MS[0])
    parts.append("of 1 ms or more: " + (", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "none"))
    return offset + len(text.encode()), "; ".join(parts)


#: the probe beside the NameNode (its own process: its syncs wait on the disk, not on the client's
#: threads): 128 bytes written in place into a preallocated 4 MiB file and synced, every PAUSE s,
#: until SIGTERM; prints each sync's µs
FSYNC_PROBE = """
import os, signal, sys, time
path, pause = sys.argv[1], float(sys.argv[2])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
size, block = 4 << 20, b"x" * 128
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, bytes(size))
os.fsync(fd)
offset, out = 0, []
while not stop:
    t = time.perf_counter_ns()
    os.pwrite(fd, block, offset)
    os.fdatasync(fd)
    out.append(time.perf_counter_ns() - t)
    offset = (offset + len(block)) % size
    time.sleep(pause)
os.close(fd)
os.unlink(path)
sys.stdout.write(" ".join(str(d // 1000) for d in out))
"""
#: the probe's pause between two syncs (s)
PROBE_PAUSE_S = 0.002
#: how long the probe times the idle cluster's disk (s)
IDLE_S = 6.0


class FsyncProbe:
    """The probe's process, started on entry and stopped (its syncs read) by ``stop``."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", FSYNC_PROBE, str(path), str(PROBE_PAUSE_S)],
                                        stdout=subprocess.PIPE, text=True)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        out, _ = self.process.communicate(timeout=60)
        us = np.array([float(v) for v in out.split()])
        if not us.size:
            return "fsync probe: no sync"
        q = np.percentile(us, [50, 90, 99, 99.9]) / 1e3
        shares = ", ".join(f">= {ms:g} ms {100 * np.mean(us >= ms * 1e3):.2f} %" for ms in STALL_MS)
        return (f"fsync probe: {us.size} syncs, p50 {q[0]:.2f} p90 {q[1]:.2f} p99 {q[2]:.2f} p99.9 {q[3]:.2f}"
                f" max {us.max() / 1e3:.2f} ms; {shares}")


def micro(op: str, files: int, clients: int, backend: str) -> tuple[float, Timings]:
    result = run_micro(MicroConfig(op=op, files=files, concurrency=clients, backend=backend))
    return float(result.summary["ops_per_s"]), result.timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", default="create", choices=sorted(OPERATIONS))
    ap.add_argument("--loads", default="1,8,64")
    ap.add_argument("--files", type=int, default=30_000)
    ap.add_argument("--unfair", action="store_true", help="The namesystem lock not fair (both sides).")
    ap.add_argument("--calibration", default=None, help="simnn's calibration directory (default: the built-in).")
    ap.add_argument("--heap", default="2g")
    ap.add_argument("--jvm-pauses", action="store_true", help="Log the NameNode's safepoints and print each batch's.")
    ap.add_argument("--fsync-probe", action="store_true", help="Time fdatasync beside the NameNode, idle and in each batch.")
    a = ap.parse_args()
    loads = [int(c) for c in a.loads.split(",")]
    logs = Path(tempfile.mkdtemp(prefix="mb-stalls-jvm-"))
    log = logs / "safepoint.log"
    options = (f"-Xlog:safepoint:file={log}:uptime",) if a.jvm_pauses else ()
    try:
        with fresh_cluster("mb-stalls-", a.heap, fslock_fair=not a.unfair, jvm_options=options) as (work, cluster):
            if a.fsync_probe:
                probe = FsyncProbe(work / "fsync-probe")
                time.sleep(IDLE_S)
                print(f"idle: {probe.stop()}")
            warm(cluster.url)
            offset = log.stat().st_size if a.jvm_pauses else 0
            for clients in loads:
                probe = FsyncProbe(work / "fsync-probe") if a.fsync_probe else None
                before = cpu_times()
                ops, timings = micro(a.op, a.files, clients, f"{cluster.url}/c{clients}")
                print(f"NameNode {a.op} x {clients}: {ops:,.0f} ops/s; {stall_figures(timings)}")
                print(f"    {stolen(before, cpu_times())}")
                if probe is not None:
                    print(f"    {probe.stop()}")
                if a.jvm_pauses:
                    seconds = float(timings.end_ns.max() - timings.start_ns.min()) / 1e9
                    offset, figures = jvm_pauses(log, offset, seconds)
                    print(f"    {figures}")
                sys.stdout.flush()
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    query = "&".join(q for q in (f"calibration={a.calibration}" if a.calibration else "",
                                 "fair=false" if a.unfair else "") if q)
    for clients in loads:
        ops, timings = micro(a.op, a.files, clients, "simnn:" + (f"?{query}" if query else ""))
        print(f"model    {a.op} x {clients}: {ops:,.0f} ops/s; {stall_figures(timings)}")


if __name__ == "__main__":
    main()
