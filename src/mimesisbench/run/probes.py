"""Probes: everything that watches a run from the side (server metrics, live metrics).

Like the telemetry devices of rally, a probe has a small lifecycle the coordinator drives in a
loop over all probes, so a new probe needs no new branch in the coordinator:

* ``start(run_id, scheduled)`` once the run directory exists (before phase 1); returns entries
  for ``manifest.json``;
* ``phase(name)`` when the run enters ``replay`` or ``writing``; ``observe(event)`` for every
  engine event of phase 2;
* ``stop()`` once the replay ended: stop collecting, return warnings;
* ``results(run_dir, origin_wall_ns)`` writes the probe's files into the run directory and
  returns manifest entries;
* ``close(complete)`` at the very end, on every path (idempotent; a probe may keep serving until
  then, e.g. the live endpoint's linger).

``probes_for_run(config)`` makes the probes a configuration asks for.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mimesisbench.backends.registry import innermost_url
from mimesisbench.hdfs.cgroups import LimitGroup
from mimesisbench.hdfs.config import DEFAULT_WORKDIR as DEFAULT_HDFS_WORKDIR
from mimesisbench.hdfs.processes import ProcessRecord
from mimesisbench.hdfs.site import Layout
from mimesisbench.hdfs.state import managed_state
from mimesisbench.monitoring.jmx import JmxSampler, sampler_for_run
from mimesisbench.netproxy.latency import DEFAULT_WORKDIR as PROXY_WORKDIR
from mimesisbench.netproxy.latency import ProxyState, proxy_for_backend
from mimesisbench.run.config import RunConfig

if TYPE_CHECKING:
    from mimesisbench.engine.base import EngineEvent
    from mimesisbench.monitoring.live import LiveMonitor


class Probe:
    """The probe lifecycle (every hook does nothing by default)."""

    name = "probe"

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        return {}

    def phase(self, name: str) -> None:
        return None

    def observe(self, event: EngineEvent) -> None:
        return None

    def stop(self) -> list[str]:
        return []

    def results(self, run_dir: Path, origin_wall_ns: int | None) -> dict[str, Any]:
        return {}

    def close(self, complete: bool) -> None:
        return None


class JmxProbe(Probe):
    """Samples the NameNode's JMX servlet into ``server_timeseries.parquet`` (from phase 1 on:
    samples before the start barrier have ``t_s < 0``)."""

    name = "jmx"

    def __init__(self, sampler: JmxSampler) -> None:
        self.sampler = sampler
        self._stopped = False

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        self.sampler.start()
        return {"server_metrics": {"jmx": self.sampler.url, "interval_s": self.sampler.interval_s}}

    def stop(self) -> list[str]:
        if self._stopped:
            return []
        self._stopped = True
        return self.sampler.stop()

    def results(self, run_dir: Path, origin_wall_ns: int | None) -> dict[str, Any]:
        if origin_wall_ns is not None:
            self.sampler.set_origin(origin_wall_ns)
        path = self.sampler.write(run_dir)
        return {
            "server_metrics": {
                "jmx": self.sampler.url,
                "interval_s": self.sampler.interval_s,
                "file": path.name,
                "samples": self.sampler.samples,
            }
        }

    def close(self, complete: bool) -> None:
        self.sampler.stop()  # idempotent: ends the sampling thread on every early exit too


class LiveProbe(Probe):
    """Serves the run to Prometheus while it runs (``--metrics-port``; ``monitoring.live``)."""

    name = "live"

    def __init__(self, monitor: LiveMonitor, info: dict[str, str], announce: Any = None) -> None:
        self.monitor = monitor
        self.info = info
        self.announce = announce  # called with the endpoint's URL and the run id (console output)
        self._closed = False

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        url = self.monitor.start(run_id, scheduled, self.info)
        if self.announce is not None:
            self.announce(f"live metrics: {self.monitor.url} (run_id {run_id})")
        return {"metrics_url": url}

    def phase(self, name: str) -> None:
        self.monitor.set_phase(name)

    def observe(self, event: EngineEvent) -> None:
        self.monitor.observe(event)

    def close(self, complete: bool) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.monitor.finish(complete)  # serves the linger, then stops
        finally:
            self.monitor.close()


class NetworkProxyProbe(Probe):
    """Records the managed latency proxy the backend goes through (requested and measured)."""

    name = "network_proxy"

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        return {"network_proxy": self.state.manifest_entry()}


def daemon_cpu_s(record: ProcessRecord) -> float | None:
    """The CPU seconds (user + system) a managed daemon has used; None when it is gone."""
    import psutil

    proc = record.process()
    if proc is None:
        return None
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def daemon_switches(record: ProcessRecord) -> tuple[int, int] | None:
    """The voluntary and involuntary context switches of every thread of a managed daemon so far
    (Linux: ``/proc/PID/task/*/status``; psutil reads the main thread's only); None elsewhere or
    when it is gone. A thread that parks (for a lock, an empty queue, a sync) and is woken is a
    voluntary switch."""
    if record.process() is None:
        return None
    return thread_switches(record.pid)


def _threads(pid: int) -> list[Path] | None:
    """The ``/proc/PID/task/TID`` directories of process ``pid``; None where there are none."""
    try:
        return list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None


def thread_switches(pid: int) -> tuple[int, int] | None:
    """Every thread of process ``pid``: its voluntary and involuntary context switches so far,
    summed (``/proc/PID/task/*/status``); None where there is no such file."""
    threads = _threads(pid)
    if threads is None:
        return None
    voluntary = involuntary = 0
    for task in threads:
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:  # the thread ended meanwhile
            continue
        for line in lines:
            if line.startswith("voluntary_ctxt_switches:"):
                voluntary += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                involuntary += int(line.split()[1])
    return voluntary, involuntary


def thread_groups(pid: int) -> dict[str, tuple[float, float]] | None:
    """Every thread of process ``pid`` grouped by its name with its digits as ``#`` (a JVM's
    ``IPC Server handler 3 on default port 8020`` and its peers are one group; Linux keeps the
    first 15 characters), each group's seconds on a core and seconds runnable without one so far
    (``/proc/PID/task/*/schedstat``); None where there is no such file. Threads that ended are
    not counted."""
    groups: dict[str, tuple[float, float]] = {}
    for task in _threads(pid) or []:
        try:
            name = (task / "comm").read_text().strip()
            on_core_ns, waiting_ns = (task / "schedstat").read_text().split()[:2]
        except (OSError, ValueError):  # the thread ended meanwhile, or no scheduler statistics
            continue
        key = re.sub(r"\d+", "#", name)
        cpu, runnable = groups.get(key, (0.0, 0.0))
        groups[key] = (cpu + int(on_core_ns) / 1e9, runnable + int(waiting_ns) / 1e9)
    return groups or None


class ServerLimitsProbe(Probe):
    """Records the managed cluster's cgroup limits (``hdfs up --cpu-quota``...) and what its
    daemons achieved during phase 2: CPU cores used (CPU time over wall time) and the share of
    CFS periods in which the quota throttled them."""

    name = "server_limits"

    def __init__(self, daemons: list[tuple[ProcessRecord, LimitGroup]]) -> None:
        self.daemons = daemons
        self._begin: dict[str, tuple[float, float, dict[str, int]]] = {}
        self._end: dict[str, tuple[float, float, dict[str, int]]] = {}

    def _reading(self) -> dict[str, tuple[float, float, dict[str, int]]]:
        out = {}
        for record, group in self.daemons:
            cpu_s = daemon_cpu_s(record)
            if cpu_s is not None:
                out[record.role] = (time.monotonic(), cpu_s, group.cpu_stat())
        return out

    def start(self, run_id: str, scheduled: int) -> dict[str, Any]:
        return {"server_limits": {r.role: {"requested": g.limits.to_json(), "cgroup": g.to_json()} for r, g in self.daemons}}

    def phase(self, name: str) -> None:
        if name == "replay":
            self._begin = self._reading()

    def stop(self) -> list[str]:
        if self._begin and not self._end:
            self._end = self._reading()
        return []

    def results(self, run_dir: Path, origin_wall_ns: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for record, group in self.daemons:
            entry: dict[str, Any] = {"requested": group.limits.to_json(), "cgroup": group.to_json()}
            b, e = self._begin.get(record.role), self._end.get(record.role)
            if b is not None and e is not None and e[0] > b[0]:
                entry["achieved_cpu_cores"] = round((e[1] - b[1]) / (e[0] - b[0]), 4)
                periods = e[2].get("nr_periods", 0) - b[2].get("nr_periods", 0)
                if periods > 0:
                    entry["throttled_share"] = round((e[2].get("nr_throttled", 0) - b[2].get("nr_throttled", 0)) / periods, 4)
            out[record.role] = entry
        return {"server_limits": out}


class CpuProbe(Probe):
    """The CPU the host and the managed server's daemons used over the replay (from the barrier's
    phase to the end): ``cpu`` in the manifest, ``{"host_busy": share, "server": {role: {cpu_s,
    wall_s, voluntary_switches, involuntary_switches}}}``, which ``run.client_cost`` weighs
    against the client's own (the switches where the system has them: Linux)."""

    name = "cpu"

    def __init__(self, daemons: list[ProcessRecord]) -> None:
        self.daemons = daemons
        self._begin: tuple[float, Any, dict[str, float], dict[str, tuple[int, int]]] | None = None
        self._end: tuple[float, Any, dict[str, float], dict[str, tuple[int, int]]] | None = None

    def _reading(self) -> tuple[float, Any, dict[str, float], dict[str, tuple[int, int]]]:
        import psutil

        daemons = {r.role: cpu_s for r in self.daemons if (cpu_s := daemon_cpu_s(r)) is not None}
        switches = {r.role: s for r in self.daemons if (s := daemon_switches(r)) is not None}
        return time.monotonic(), psutil.cpu_times(), daemons, switches

    def phase(self, name: str) -> None:
        if name == "replay":
            self._begin = self._reading()

    def stop(self) -> list[str]:
        if self._begin is not None and self._end is None:
            self._end = self._reading()
        return []

    def results(self, run_dir: Path, origin_wall_ns: int | None) -> dict[str, Any]:
        if self._begin is None or self._end is None or self._end[0] <= self._begin[0]:
            return {}
        (t0, host0, d0, s0), (t1, host1, d1, s1) = self._begin, self._end
        total = sum(host1) - sum(host0)
        idle = (host1.idle + getattr(host1, "iowait", 0.0)) - (host0.idle + getattr(host0, "iowait", 0.0))
        server: dict[str, dict[str, float]] = {
            role: {"cpu_s": d1[role] - d0[role], "wall_s": t1 - t0} for role in d0 if role in d1}
        for role, entry in server.items():
            if role in s0 and role in s1:
                entry["voluntary_switches"] = s1[role][0] - s0[role][0]
                entry["involuntary_switches"] = s1[role][1] - s0[role][1]
        return {"cpu": {"host_busy": (total - idle) / total if total > 0 else None, "server": server}}


def managed_daemons(backend_url: str, hdfs_workdir: str | None) -> list[ProcessRecord]:
    """The daemons of the cluster ``mimesisbench hdfs up`` started in ``hdfs_workdir``, when
    ``backend_url`` names that cluster (none otherwise)."""
    state = managed_state(backend_url, Layout(Path(hdfs_workdir or DEFAULT_HDFS_WORKDIR).resolve()).state_file)
    return [] if state is None else list(state.processes)


def managed_limit_groups(backend_url: str, hdfs_workdir: str | None) -> list[tuple[ProcessRecord, LimitGroup]]:
    """The daemons of the cluster ``mimesisbench hdfs up`` started in ``hdfs_workdir`` with their
    cgroups, when ``backend_url`` names that cluster and it was started with limits."""
    state = managed_state(backend_url, Layout(Path(hdfs_workdir or DEFAULT_HDFS_WORKDIR).resolve()).state_file)
    if state is None:
        return []
    groups = [LimitGroup.from_json(g) for g in state.extra.get("cgroups", [])]
    return [(r, g) for r in state.processes for g in groups if g.name.startswith(f"mimesisbench-{r.role}-")]


def probes_for_run(config: RunConfig, announce: Any = None) -> list[Probe]:
    """The probes ``config`` asks for: live metrics (``metrics_port``), then JMX sampling."""
    probes: list[Probe] = []
    if config.metrics_port is not None:
        from mimesisbench.monitoring.live import LiveMonitor

        monitor = LiveMonitor(addr=config.metrics_addr, port=config.metrics_port, linger_s=config.metrics_linger_s)
        info = {"backend": config.backend, "engine": config.engine, "time_scale": f"{config.time_scale:g}"}
        probes.append(LiveProbe(monitor, info, announce))
    url = innermost_url(config.backend)
    proxy = proxy_for_backend(url, Path(config.proxy_workdir) if config.proxy_workdir else PROXY_WORKDIR)
    if proxy is not None:
        probes.append(NetworkProxyProbe(proxy))
        url = urllib.parse.urlsplit(url)._replace(netloc=proxy.upstream).geturl()  # the server's own JMX
    probes.append(CpuProbe(managed_daemons(url, config.hdfs_workdir)))
    limited = managed_limit_groups(url, config.hdfs_workdir)
    if limited:
        probes.append(ServerLimitsProbe(limited))
    sampler = sampler_for_run(url, config.jmx, config.jmx_interval_s, config.hdfs_workdir)
    if sampler is not None:
        probes.append(JmxProbe(sampler))
    return probes
