"""Simulate calls on the simulated NameNode: the native event loop where the native core is
installed, else the simpy reference (the same model, about a hundred times slower)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.native import native_module
from mimesisbench.sim.calls import Calls
from mimesisbench.sim.model import STALL_QUEUE_POWER, ServerSettings
from mimesisbench.sim.reference import simulate_reference

#: client numbers from this one up are refused (``native/src/simnn.rs`` has the same bound)
MAX_CLIENTS = 1 << 20


@dataclass(frozen=True)
class SimTimes:
    """Per call, in virtual seconds: when it left the client's queue (took a slot), when its
    answer was received, and how long its handler waited for the namesystem lock."""

    start: NDArray[np.float64]
    end: NDArray[np.float64]
    lock_wait: NDArray[np.float64]
    client_wakes: NDArray[np.uint8]  # the client's wake-ups each call paid (its send, its receive)
    server_wakes: NDArray[np.uint8]  # whether the call woke the NameNode
    handler_wakes: NDArray[np.uint8]  # whether the call woke a parked handler
    lock_parks: NDArray[np.uint8]  # times its handler parked for the namesystem lock (paying park_s)
    run_queue: NDArray[np.uint32]  # bursts waiting for a core as its handler was done under the lock
    engine: str  # native or simpy
    core_wait_s: float = 0.0  # how long bursts waited for a core in all (the switch to their threads included)

    @property
    def service(self) -> NDArray[np.float64]:
        return self.end - self.start


def simulate(calls: Calls, settings: ServerSettings, outstanding: int, *, client: NDArray[np.uint32] | None = None,
             engine: str = "auto") -> SimTimes:
    """``outstanding``: each client's slots (0: unbounded); ``client``: the client of each call
    (a run's worker; all one client when None). ``engine``: ``auto`` (native when installed),
    ``native`` or ``simpy``."""
    if client is not None:
        client = np.ascontiguousarray(client, dtype=np.uint32)
        if client.shape != calls.arrive.shape:
            raise ValueError(f"simulate: {len(calls)} calls but {client.size} clients")
        if client.size and int(client.max()) >= MAX_CLIENTS:  # each client has a queue of its own
            raise ValueError(f"simulate: client must be below {MAX_CLIENTS}")
    module = native_module() if engine in ("auto", "native") else None
    if engine == "native" and module is None:
        raise RuntimeError("the native core is not installed (or MIMESISBENCH_NATIVE=0)")
    if module is not None:
        start, end, wait, c_woke, s_woke, h_woke, parks, queue, core_wait = module.simulate_namenode(
            calls.arrive, calls.c_send, calls.c_recv, calls.c_wake, calls.c_spin, calls.s_wake, calls.h_wake,
            calls.stall, calls.net, calls.lock, calls.s_lock, calls.s_post, calls.sync, calls.rpcs,
            outstanding=max(0, outstanding), handlers=settings.handlers, cores=settings.cores,
            colocated=settings.colocated, sync_s=settings.sync_s, fair=settings.fair, wake_s=settings.wake_s,
            park_s=settings.park_s, async_edits=settings.async_edits, dispatch_s=settings.dispatch_s,
            edit_s=settings.edit_s, client=client, stall_wake=calls.stall_wake, stall_queue=calls.stall_queue,
            stall_power=STALL_QUEUE_POWER, s_spin=calls.s_spin, stall_gate=calls.stall_gate,
            stall_gate_wake=calls.stall_gate_wake,
            **({"other_gap": calls.other_gap, "other_run": calls.other_run,
                "other_place": -1.0 if settings.other_place is None else settings.other_place}  # below 0: none
               if calls.other_gap.size else {}),
            **({"sync_slow": calls.sync_slow} if calls.sync_slow.size else {}),
        )
        return SimTimes(start, end, wait, c_woke, s_woke, h_woke, parks, queue, "native", float(core_wait))
    start, end, wait, c_woke, s_woke, h_woke, parks, queue, core_wait = simulate_reference(
        calls, settings, max(0, outstanding), client)
    return SimTimes(start, end, wait, c_woke, s_woke, h_woke, parks, queue, "simpy", core_wait)
