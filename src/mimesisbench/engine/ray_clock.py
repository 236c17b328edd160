"""The driver's estimate of each node's wall-clock offset (a few round trips, the tightest wins).

For a round trip that left at ``t0`` and came back at ``t1`` (driver's clock) carrying the
actor's reading ``ta``, the offset is ``ta - (t0 + t1) / 2``, uncertain by half the round trip.
The barrier sent to a worker is corrected by the offset only when the offset is larger than the
round trip (then it is certainly real): NTP-synchronised nodes keep the common barrier as is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ROUNDS = 5


@dataclass(frozen=True)
class ClockSample:
    offset_ns: int  # node clock minus driver clock
    rtt_ns: int

    @property
    def corrected(self) -> bool:
        """Whether the barrier is shifted for this node (the offset exceeds its uncertainty)."""
        return abs(self.offset_ns) > self.rtt_ns

    def local_barrier(self, wall_ns: int) -> int:
        """The driver's barrier ``wall_ns`` in the node's wall clock."""
        return wall_ns + self.offset_ns if self.corrected else wall_ns


def measure(ray: Any, actor: Any, timeout_s: float, rounds: int = ROUNDS) -> ClockSample:
    """``rounds`` calls of the actor's ``clock()``; the sample with the shortest round trip."""
    best: ClockSample | None = None
    for _ in range(rounds):
        t0 = time.time_ns()
        theirs = int(ray.get(actor.clock.remote(), timeout=timeout_s))
        t1 = time.time_ns()
        sample = ClockSample(offset_ns=theirs - (t0 + t1) // 2, rtt_ns=t1 - t0)
        if best is None or sample.rtt_ns < best.rtt_ns:
            best = sample
    assert best is not None
    return best
