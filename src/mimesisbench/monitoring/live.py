"""Live monitoring of one run: the coordinator's only entry point (``--metrics-port``).

``LiveMonitor`` owns the totals and the endpoint. The coordinator starts it once the run
directory exists, tells it the phase, hands it every engine event (``observe``) and finally
calls ``finish`` (keeps serving ``linger_s`` so a last scrape sees the final counts) or
``close``. Workers only attach a ``LiveDelta`` to their progress messages when the run asks for
it (``WorkerSpec.live_metrics``).
"""

from __future__ import annotations

import time

from mimesisbench.jobs import EngineEvent, Progress, WorkerResult
from mimesisbench.monitoring.live_totals import LiveTotals
from mimesisbench.monitoring.prometheus import MetricsEndpoint


class LiveMonitor:
    """Totals plus their ``/metrics`` endpoint for one run."""

    def __init__(self, *, addr: str, port: int, linger_s: float = 0.0) -> None:
        self.addr = addr
        self.port = port
        self.linger_s = float(linger_s)
        self.totals: LiveTotals | None = None
        self.endpoint: MetricsEndpoint | None = None
        self.url = ""
        self._ended: set[int] = set()

    def start(self, run_id: str, scheduled: int = 0, info: dict[str, str] | None = None) -> str:
        """Serve the run ``run_id`` from now on; returns the endpoint's URL."""
        self.totals = LiveTotals(run_id, scheduled=scheduled, info=info)
        self.endpoint = MetricsEndpoint(self.totals, addr=self.addr, port=self.port)
        self.url = self.endpoint.start()
        return self.url

    def set_phase(self, phase: str) -> None:
        if self.totals is not None:
            self.totals.set_phase(phase)

    def observe(self, event: EngineEvent) -> None:
        """Take what an engine event carries: a worker's delta, lag, or its end (each worker's
        end counts once, however often it is shown)."""
        if self.totals is None or event.index in self._ended:
            return
        if isinstance(event, (Progress, WorkerResult)) and event.live is not None:
            self.totals.add(event.index, event.live)
        if isinstance(event, Progress):
            self.totals.set_lag(event.index, event.lag_ns)
        else:
            self._ended.add(event.index)
            self.totals.worker_ended(event.index)

    def finish(self, complete: bool) -> None:
        """Mark the run done (or incomplete), serve ``linger_s`` more, then stop serving."""
        if self.totals is None:
            return
        self.totals.set_phase("done" if complete else "incomplete")
        if self.linger_s > 0:
            time.sleep(self.linger_s)
        self.close()

    def close(self) -> None:
        """Stop serving (idempotent)."""
        if self.endpoint is not None:
            self.endpoint.close()
