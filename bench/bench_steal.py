"""How the host takes this virtual machine's cores away: the gaps a busy loop sees, by length.

    python bench/bench_steal.py [--seconds 10] [--threshold-us 50] [--idle]

``bench/c/gap_probe.c`` (compiled here with gcc) runs one busy loop pinned to each core; each loop
records every gap between two reads of the monotonic clock longer than the threshold. A gap during
which the loop's thread was not switched out by the guest's scheduler (its involuntary context
switches unchanged) is the host's: an interrupt, or the hypervisor running something else on this
virtual CPU (stolen time). Printed per core: the host's gaps a second, their share of the time, their
p50 and p99, and the gaps of 1 ms or more by length in half-milliseconds (on a host whose scheduler
ticks every millisecond they come in steps of it); and the kernel's own steal count over the same
seconds (``/proc/stat``, through psutil), the reference measured in the same run.

Interrupted (SIGINT or SIGTERM), the loops stop and their gaps so far are printed. ``--idle``
runs the loops under ``SCHED_IDLE``: only when nothing else wants the core, so they can sit beside
a load (``bench_sched_delays.py --no-trace`` in another shell) and see the host's gaps while it
runs, without taking a core from it. They keep the virtual CPUs from halting, which changes the
load itself (docs/simnn.md, "The middle load's tail: pauses of every call at once"): a probe,
not a setting to measure under.

Needs gcc and two cores the process may pin to; prints figures, asserts none.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_sched_delays import cpu_times  # per core: busy, idle, stolen seconds

HERE = Path(__file__).resolve().parent


def gaps(output: str) -> tuple[np.ndarray, np.ndarray, float]:
    """The probe's gaps: their lengths in µs, whether the guest switched threads in each, and the
    seconds it ran."""
    lengths, switched, seconds = [], [], 0.0
    for line in output.splitlines():
        fields = line.split()
        if fields[0] == "busy_s":
            seconds = float(fields[1])
        else:
            lengths.append(float(fields[1]))
            switched.append(fields[2] == "1")
    return np.array(lengths), np.array(switched, dtype=bool), seconds


def report(core: int, lengths: np.ndarray, switched: np.ndarray, seconds: float, stolen_s: float) -> None:
    host = lengths[~switched]
    print(f"core {core}: {seconds:.1f} s, the guest's switches {int(switched.sum())} ({lengths[switched].sum() / 1e3:.1f}"
          f" ms), /proc/stat steal {100 * stolen_s / seconds:.2f} %")
    if not host.size:
        print("   no gap of the host's")
        return
    print(f"   the host's gaps: {host.size / seconds:.1f} a second, {100 * host.sum() / 1e6 / seconds:.2f} % of the time,"
          f" p50 {np.percentile(host, 50):.0f} µs, p99 {np.percentile(host, 99):.0f} µs, max {host.max():.0f} µs")
    long = host[host >= 1000]
    if long.size:
        counts, edges = np.histogram(long, bins=np.arange(1000, max(2000, long.max() + 500), 500))
        steps = ", ".join(f"{edges[i] / 1e3:.1f}-{edges[i + 1] / 1e3:.1f} ms: {c}" for i, c in enumerate(counts) if c)
        print(f"   of 1 ms or more: {long.size} ({long.size / seconds:.2f} a second, mean {long.mean() / 1e3:.2f} ms); {steps}")


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--threshold-us", type=float, default=50.0)
    ap.add_argument("--idle", action="store_true", help="The loops under SCHED_IDLE (beside a load).")
    a = ap.parse_args()
    if shutil.which("gcc") is None:
        print("bench_steal: gcc is not installed", file=sys.stderr)
        sys.exit(2)
    cores = sorted(os.sched_getaffinity(0))
    for signum in (signal.SIGINT, signal.SIGTERM):  # either ends the probes early (a shell's ``&`` ignores SIGINT)
        signal.signal(signum, _interrupted)
    with tempfile.TemporaryDirectory(prefix="mb-steal-") as tmp:
        exe = Path(tmp) / "gap_probe"
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(HERE / "c" / "gap_probe.c")], check=True)
        before = cpu_times()[:, 2]
        # each probe writes to a file: a read interrupted by the signal would lose what it had read
        files = [Path(tmp) / f"gaps{c}.txt" for c in cores]
        probes = []
        for c, path in zip(cores, files):
            with path.open("w") as out:
                probes.append(subprocess.Popen([str(exe), str(c), str(a.seconds), str(a.threshold_us)]
                                               + (["idle"] if a.idle else []), stdout=out))
        try:
            for p in probes:
                p.wait()
        except KeyboardInterrupt:  # the load beside it is done: the probes end early, their gaps kept
            for p in probes:
                p.send_signal(signal.SIGINT)
            for p in probes:
                p.wait()
        if any(p.returncode for p in probes):
            print("bench_steal: a probe failed (see above)", file=sys.stderr)
            sys.exit(2)
        outputs = [path.read_text() for path in files]
        stolen = cpu_times()[:, 2] - before
    for core, out in zip(cores, outputs):
        report(core, *gaps(out), float(stolen[core]))


if __name__ == "__main__":
    main()
