"""How long this host takes to wake a thread on an idle core, against a wake on the same core.

Two processes ping-pong one byte through two pipes, pinned to the same core, then to two
different cores, with a pause between rounds (0 and 100 us: the idle core's sleep). The same-core
round trip is the reference measured in the same run: two switches and four system calls. The
cross-core one adds two wake-ups of an idle core; half the difference is what one such wake-up
costs beyond a switch. On a virtual machine whose idle cores halt (cpuidle ``haltpoll`` with its
poll state unused, as here) that is the hypervisor waking the virtual CPU: the woken thread is
runnable, and its core idle, for that long (``docs/simnn.md``: the loads between the
calibration's).

    python bench/bench_wake.py [--rounds 3000]

Needs two cores the process may run on (``os.sched_setaffinity``); prints figures, asserts none.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _echo(read_fd: int, write_fd: int, cpu: int, rounds: int) -> None:
    os.sched_setaffinity(0, {cpu})
    for _ in range(rounds):
        os.write(write_fd, os.read(read_fd, 1))


def round_trips(here: int, there: int, rounds: int, pause_s: float) -> list[float]:
    """Round trips (seconds) of one byte to a process pinned to core ``there`` and back."""
    ping_r, ping_w = os.pipe()
    pong_r, pong_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo
        try:
            _echo(ping_r, pong_w, there, rounds)
        finally:
            os._exit(0)
    try:
        os.sched_setaffinity(0, {here})
        times = []
        for _ in range(rounds):
            if pause_s > 0:
                time.sleep(pause_s)
            t0 = time.perf_counter()
            os.write(ping_w, b"x")
            os.read(pong_r, 1)
            times.append(time.perf_counter() - t0)
        return times
    finally:
        os.waitpid(pid, 0)
        for fd in (ping_r, ping_w, pong_r, pong_w):
            os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3000)
    a = ap.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise SystemExit("bench_wake: needs two cores this process may run on")
    here, there = allowed[0], allowed[1]
    print(f"cores {here} and {there}; {a.rounds} round trips each; medians (us)")
    try:
        for pause_us in (0, 100):
            same = statistics.median(round_trips(here, here, a.rounds, pause_us * 1e-6))
            cross = statistics.median(round_trips(here, there, a.rounds, pause_us * 1e-6))
            print(f"pause {pause_us:3d} us: same core {same * 1e6:6.1f}, across cores {cross * 1e6:6.1f} "
                  f"({cross / same:.1f}x); one wake of an idle core beyond a switch: "
                  f"{(cross - same) / 2 * 1e6:5.1f} us")
    finally:
        os.sched_setaffinity(0, set(allowed))


if __name__ == "__main__":
    main()
