"""The Prometheus view of a running benchmark: a collector over ``LiveTotals`` and its endpoint.

The collector builds every metric at scrape time from a snapshot of what the coordinator summed
(no ``prometheus_client`` call happens per operation, nor in the workers). It is registered in a
private ``CollectorRegistry`` (never the library's global one) served by ``MetricsEndpoint``.

Series (every one labelled ``run_id``):

``mimesisbench_operations_total{op,type,outcome}``
    operations completed, by outcome (``ok``, ``not_found``, ``exists``, ``permission``,
    ``other``): issued = sum over outcomes, succeeded = ``outcome="ok"``.
``mimesisbench_latency_seconds{op,type}``
    histogram of end - scheduled time (what the client saw, coordinated omission included).
``mimesisbench_service_seconds{op,type}``
    histogram of end - actual start (what the server took).
``mimesisbench_lateness_seconds{op,type}``
    histogram of actual start - scheduled time (how late the harness issued).
``mimesisbench_operations_scheduled``, ``mimesisbench_in_flight``, ``mimesisbench_lag_seconds{worker}``,
``mimesisbench_phase{phase}`` (1 for the current phase, 0 for the others), ``mimesisbench_run_info{...}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from threading import Thread
from types import MappingProxyType
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from mimesisbench.backends.base import OUTCOME_LABELS
from mimesisbench.errors import ConfigError
from mimesisbench.monitoring.live_stats import BOUNDS_NS, TIMINGS
from mimesisbench.monitoring.live_totals import PHASES, LiveSnapshot, LiveTotals
from mimesisbench.schedule.format import OpCode

PREFIX = "mimesisbench"
#: the ``le`` label of each finite bucket (seconds, as Prometheus prints floats)
LE_LABELS: tuple[str, ...] = tuple(floatToGoString(b / 1e9) for b in BOUNDS_NS)
_TIMING_HELP: Mapping[str, str] = MappingProxyType({
    "latency": "Operation latency from its scheduled time (end - scheduled), seconds.",
    "service": "Operation service time (end - actual start), seconds.",
    "lateness": "How late an operation was issued (actual start - scheduled), seconds.",
})


def _op_label(code: int) -> str:
    try:
        return OpCode(code).label
    except ValueError:
        return str(code)


class MimesisCollector(Collector):
    """Turns ``LiveTotals`` into metric families at each scrape."""

    def __init__(self, totals: LiveTotals) -> None:
        self._totals = totals

    def describe(self) -> Iterable[Metric]:
        return []  # the families are only known at scrape time; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        snap = self._totals.snapshot()
        yield from _run_families(snap)
        yield from _operation_families(snap)


def _run_families(snap: LiveSnapshot) -> Iterator[Metric]:
    run = [snap.run_id]
    info_keys = sorted(snap.info)
    info = GaugeMetricFamily(f"{PREFIX}_run_info", "The run being replayed (value 1).", labels=["run_id", *info_keys])
    info.add_metric(run + [snap.info[k] for k in info_keys], 1.0)
    yield info
    phase = GaugeMetricFamily(f"{PREFIX}_phase", "1 for the run's current phase, 0 for the others.", labels=["run_id", "phase"])
    for name in PHASES:
        phase.add_metric(run + [name], 1.0 if name == snap.phase else 0.0)
    yield phase
    scheduled = GaugeMetricFamily(f"{PREFIX}_operations_scheduled", "Operations in the schedule.", labels=["run_id"])
    scheduled.add_metric(run, float(snap.scheduled))
    yield scheduled
    in_flight = GaugeMetricFamily(
        f"{PREFIX}_in_flight", "Operations due by now and not completed yet (outstanding or waiting).", labels=["run_id"]
    )
    in_flight.add_metric(run, float(snap.in_flight))
    yield in_flight
    lag = GaugeMetricFamily(f"{PREFIX}_lag_seconds", "How far each worker is behind schedule.", labels=["run_id", "worker"])
    for worker, lag_ns in sorted(snap.lag_ns.items()):
        lag.add_metric(run + [str(worker)], lag_ns / 1e9)
    yield lag


def _operation_families(snap: LiveSnapshot) -> Iterator[Metric]:
    ops = CounterMetricFamily(
        f"{PREFIX}_operations", "Operations completed, by outcome (ok or an error class).",
        labels=["run_id", "op", "type", "outcome"],
    )
    hists = {
        t: HistogramMetricFamily(f"{PREFIX}_{t}_seconds", _TIMING_HELP[t], labels=["run_id", "op", "type"]) for t in TIMINGS
    }
    for (op, ftype), totals in sorted(snap.per_key.items()):
        labels = [snap.run_id, _op_label(op), str(ftype)]
        for code, label in enumerate(OUTCOME_LABELS):
            ops.add_metric(labels + [label], float(totals.outcomes[code]))
        for t, name in enumerate(TIMINGS):
            cumulative = np.cumsum(totals.buckets[t]).tolist()
            buckets: list[tuple[str, Any]] = list(zip(LE_LABELS, cumulative[:-1]))
            buckets.append(("+Inf", cumulative[-1]))
            hists[name].add_metric(labels, buckets, float(totals.sums_ns[t]) / 1e9)
    yield ops
    yield from hists.values()


class MetricsEndpoint:
    """An HTTP server for ``/metrics`` on its own thread, serving one private registry."""

    def __init__(self, totals: LiveTotals, addr: str = "127.0.0.1", port: int = 0) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(MimesisCollector(totals))
        self._addr = addr
        self._port = port
        self._server: Any = None
        self._thread: Thread | None = None

    def start(self) -> str:
        """Start serving; returns the URL (``port=0`` picks a free port)."""
        try:
            self._server, self._thread = start_http_server(self._port, addr=self._addr, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"--metrics-port: cannot listen on {self._addr}:{self._port}: {exc.strerror or exc}") from None
        return self.url

    @property
    def port(self) -> int:
        if self._server is None:
            return self._port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self._addr}]" if ":" in self._addr else self._addr
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
