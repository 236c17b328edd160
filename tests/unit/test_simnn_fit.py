"""The fit of the simulated NameNode (``sim.fit``) on measurements whose answer is known: they are
made by the model itself from given costs, at three loads, as ``simnn calibrate`` makes them on a
real NameNode (throughput, mean, p50, p99, each side's CPU per operation). The fit must find costs
that reproduce what it was given, and recover the ones the measurements pin down.

Everything is seeded: the same answer on any machine, whatever its speed."""

from __future__ import annotations

import numpy as np
import pytest

from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.fit import OpMeasurement, calibrate, simulate_measurement
from mimesisbench.sim.model import Calibration, OpCost, ServerSettings
from mimesisbench.sim.ops import simulate_micro

SETTINGS = ServerSettings(handlers=10, cores=2, colocated=True, fair=True, sync_s=150e-6, wake_s=20e-6)
LOADS = (1, 4, 32)
CALLS = 4000


def measured(op: OpCode, cost: OpCost, clients: int) -> OpMeasurement:
    """What a micro-benchmark of the model with ``cost`` shows, as calibrate records it."""
    times = simulate_micro(op, CALLS, clients, Calibration({op: cost}, SETTINGS), seed=11).times
    service = times.service
    client = cost.client_cpu_s + cost.client_wake_s * float(times.client_wakes.mean())
    server = (cost.server_cpu_s + cost.server_wake_s * float(times.server_wakes.mean())
              + cost.handler_wake_s * float(times.handler_wakes.mean()))
    return OpMeasurement(op=op, operations=CALLS, concurrency=clients,
                         ops_per_s=CALLS / float(times.end.max() - times.start.min()),
                         mean_s=float(service.mean()), p50_s=float(np.percentile(service, 50)),
                         p99_s=float(np.percentile(service, 99)), client_cpu_s=client, server_cpu_s=server)


@pytest.mark.parametrize(("op", "truth"), [
    (OpCode.GETFILEINFO, OpCost(15e-6, 25e-6, 40e-6, delay_sigma=0.5, cpu_cv=0.5, client_wake_s=15e-6,
                                server_wake_s=40e-6, handler_wake_s=10e-6)),
    (OpCode.CREATE, OpCost(25e-6, 80e-6, 60e-6, delay_sigma=0.5, cpu_cv=0.5, lock_share=0.4, client_wake_s=40e-6,
                           server_wake_s=200e-6, handler_wake_s=60e-6)),
])
def test_the_fit_reproduces_measurements_made_by_the_model(op: OpCode, truth: OpCost) -> None:
    loads = tuple(measured(op, truth, clients) for clients in LOADS)
    cal, report = calibrate([(loads[0], loads[1], loads[2])], SETTINGS, {"test": True})
    fitted = cal.costs[op]
    light, middle, heavy = loads
    at = [simulate_measurement(m, fitted, SETTINGS) for m in loads]
    # what the fit matches by construction: the light load's mean, the heavy load's p99
    assert at[0].mean_s == pytest.approx(light.mean_s, rel=0.03)
    assert at[2].p99_s == pytest.approx(heavy.p99_s, rel=0.10)
    # what it does not match directly, but the costs it found must give: every load's throughput
    for m, sim in zip(loads, at):
        assert sim.ops_per_s == pytest.approx(m.ops_per_s, rel=0.10), m.concurrency
    # the work and the wake-ups the three loads' CPU pins down
    assert fitted.server_cpu_s + fitted.server_wake_s + fitted.handler_wake_s == pytest.approx(
        truth.server_cpu_s + truth.server_wake_s + truth.handler_wake_s, rel=0.10)
    assert fitted.server_cpu_s == pytest.approx(truth.server_cpu_s, rel=0.25)
    assert report[op.label]["middle_clients"] == LOADS[1]


def test_the_fit_refuses_loads_out_of_order() -> None:
    m = OpMeasurement(OpCode.GETFILEINFO, 100, 8, 1000.0, 1e-3, 1e-3, 2e-3, 1e-5, 1e-5)
    with pytest.raises(ValueError, match="three loads, light to heavy"):
        calibrate([(m, m, m)], SETTINGS, {})
