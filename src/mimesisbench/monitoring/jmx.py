"""Sampling a NameNode's JMX JSON servlet (``http://host:http_port/jmx``) during a run.

``JmxSampler(url, interval_s=1.0).start()`` polls a few bean queries in a background thread;
``stop()`` ends it and returns the warnings; ``frame()`` turns the samples into a polars
DataFrame with ``t_s`` (seconds since the origin the caller set with ``set_origin``, normally
the run's start barrier) and one ``jmx_*`` column per metric; ``write(run_dir)`` stores it as
``server_timeseries.parquet``.

Counters (``kind="counter"``) become rates (``..._per_s``). Hadoop's metrics system refreshes
what JMX shows for its beans only about once per metrics period (10 s by default, 1 s on the
cluster ``hdfs up`` manages; ``*.period`` in ``hadoop-metrics2.properties``), so a counter stays
flat for several samples and then jumps. The rate is therefore computed between *refreshes* of its bean (samples where any of the bean's
values changed) and spread evenly over the samples of that window: an average over at least one
period (longer after an idle stretch), and null after the last refresh. ``java.lang`` beans
(heap, GC) are live: a rate per sample. Gauges are reported as sampled.

An endpoint that is missing, unreachable or answers garbage is never an error: the sampler
records a warning (``warnings``, also logged) and keeps trying; the frame then has fewer rows.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

LOG = logging.getLogger(__name__)

TIMESERIES_FILE = "server_timeseries.parquet"
DEFAULT_HTTP_PORT = 9870
#: how long one fetch may take by default (at least the interval): a busy NameNode's servlet can
#: answer seconds late; a late answer is a late sample (the loop skips the ticks it missed), not
#: a failure, which a timeout tied to a short interval made it on a loaded host
FETCH_TIMEOUT_S = 5.0
NN = "Hadoop:service=NameNode,name="

Kind = Literal["gauge", "counter"]


@dataclass(frozen=True)
class MetricSpec:
    """One column: ``attribute`` of the bean(s) answering ``query``.

    ``path`` walks into a composite value (``HeapMemoryUsage`` -> ``used``); ``scale``
    multiplies the value (bytes -> MiB); beans matching several names are summed.
    """

    column: str
    query: str
    attribute: str
    kind: Kind = "gauge"
    path: tuple[str, ...] = ()
    scale: float = 1.0

    @property
    def output(self) -> str:
        return f"jmx_{self.column}_per_s" if self.kind == "counter" else f"jmx_{self.column}"


def _rpc(column: str, attribute: str, kind: Kind = "gauge") -> MetricSpec:
    return MetricSpec(column, NN + "RpcActivityForPort*", attribute, kind)


def _act(column: str, attribute: str, kind: Kind = "counter") -> MetricSpec:
    return MetricSpec(column, NN + "NameNodeActivity", attribute, kind)


DEFAULT_METRICS: tuple[MetricSpec, ...] = (
    # the client RPC server
    _rpc("rpc_ops", "RpcQueueTimeNumOps", "counter"),
    _rpc("rpc_queue_time_avg_ms", "RpcQueueTimeAvgTime"),
    _rpc("rpc_processing_time_avg_ms", "RpcProcessingTimeAvgTime"),
    _rpc("rpc_lock_wait_time_avg_ms", "RpcLockWaitTimeAvgTime"),
    _rpc("call_queue_length", "CallQueueLength"),
    _rpc("open_connections", "NumOpenConnections"),
    _rpc("rpc_slow_calls", "RpcSlowCalls", "counter"),
    # namespace operations (NameNodeActivity)
    _act("create_file_ops", "CreateFileOps"),
    _act("files_created", "FilesCreated"),
    _act("get_block_locations", "GetBlockLocations"),
    _act("file_info_ops", "FileInfoOps"),
    _act("get_listing_ops", "GetListingOps"),
    _act("delete_file_ops", "DeleteFileOps"),
    _act("files_deleted", "FilesDeleted"),
    _act("files_renamed", "FilesRenamed"),
    _act("total_file_ops", "TotalFileOps"),
    _act("transactions", "TransactionsNumOps"),
    _act("syncs", "SyncsNumOps"),
    _act("syncs_avg_ms", "SyncsAvgTime", "gauge"),
    # namespace size and lock
    MetricSpec("files_total", NN + "FSNamesystem", "FilesTotal"),
    MetricSpec("blocks_total", NN + "FSNamesystem", "BlocksTotal"),
    MetricSpec("lock_queue_length", NN + "FSNamesystem", "LockQueueLength"),
    # the JVM (live beans)
    MetricSpec("heap_used_mb", "java.lang:type=Memory", "HeapMemoryUsage", path=("used",), scale=1 / 2**20),
    MetricSpec("gc_count", "java.lang:type=GarbageCollector,*", "CollectionCount", "counter"),
    MetricSpec("gc_time_ms", "java.lang:type=GarbageCollector,*", "CollectionTime", "counter"),
    # Hadoop's JVM view (refreshed with the metrics period)
    MetricSpec("jvm_threads_runnable", NN + "JvmMetrics", "ThreadsRunnable"),
    MetricSpec("jvm_threads_blocked", NN + "JvmMetrics", "ThreadsBlocked"),
    MetricSpec("jvm_gc_extra_sleep_ms", NN + "JvmMetrics", "GcTotalExtraSleepTime", "counter"),
)


def jmx_base_url(url: str) -> str:
    """``http://h:p``, ``http://h:p/jmx`` or ``http://h:p/jmx?qry=...`` -> ``http://h:p/jmx``."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) JMX URL: {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/jmx"):
        path = path + "/jmx"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def jmx_url_for_backend(backend_url: str, http_port: int = DEFAULT_HTTP_PORT) -> str | None:
    """The NameNode JMX URL for an ``hdfs://host:port/...`` backend (None for other schemes)."""
    parts = urllib.parse.urlsplit(backend_url.strip())
    if parts.scheme.lower() != "hdfs" or not parts.hostname:
        return None
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{http_port}/jmx"


def rpc_port_of(backend_url: str) -> int | None:
    """The RPC port of an ``hdfs://host:port`` URL (picks the matching RpcActivity bean)."""
    parts = urllib.parse.urlsplit(backend_url.strip())
    try:
        return parts.port if parts.scheme.lower() == "hdfs" else None
    except ValueError:
        return None


def fetch_beans(base_url: str, query: str, timeout_s: float) -> list[dict[str, Any]]:
    """The beans answering ``query`` (raises ``OSError``/``ValueError`` on any failure)."""
    url = f"{base_url}?qry={urllib.parse.quote(query, safe=':=,*')}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    with opener.open(url, timeout=timeout_s) as response:
        body = json.loads(response.read().decode("utf-8"))
    beans = body.get("beans") if isinstance(body, dict) else None
    if not isinstance(beans, list):
        raise ValueError(f"{url}: no 'beans' list in the answer")
    return [b for b in beans if isinstance(b, dict)]


def _number(value: Any, path: Sequence[str]) -> float | None:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def extract(
    answers: Mapping[str, list[dict[str, Any]]], metrics: Sequence[MetricSpec], rpc_port: int | None = None
) -> dict[str, float | None]:
    """One sample: metric column -> value (None when the bean or attribute is absent)."""
    row: dict[str, float | None] = {}
    for spec in metrics:
        beans = answers.get(spec.query)
        if not beans:
            row[spec.column] = None
            continue
        if rpc_port is not None and "RpcActivityForPort" in spec.query:
            chosen = [b for b in beans if str(b.get("tag.port")) == str(rpc_port)] or beans[:1]
        elif "*" in spec.query and "GarbageCollector" not in spec.query:
            chosen = beans[:1]
        else:
            chosen = beans
        values = [_number(b.get(spec.attribute), spec.path) for b in chosen]
        present = [v for v in values if v is not None]
        row[spec.column] = sum(present) * spec.scale if present else None
    return row


def counter_rates(t_s: np.ndarray, values: np.ndarray, refreshed: np.ndarray) -> np.ndarray:
    """Per-sample rates of a cumulative counter, spread evenly over each refresh window.

    ``refreshed[i]`` says sample ``i`` shows new data for the counter's bean. For a refresh at
    ``j`` after the previous refresh at ``i``, every sample in ``(i, j]`` gets
    ``(v[j] - v[i]) / (t[j] - t[i])``. Samples before the first refresh window, after the last
    refresh, and windows with a missing value or a counter reset are NaN.
    """
    n = len(values)
    out = np.full(n, np.nan)
    last: int | None = None
    for j in range(n):
        if np.isnan(values[j]):
            last = None
            continue
        if last is None:
            last = j
            continue
        if not refreshed[j]:
            continue
        dt = t_s[j] - t_s[last]
        dv = values[j] - values[last]
        if dt > 0 and dv >= 0:
            out[last + 1 : j + 1] = dv / dt
        last = j
    return out


def refresh_mask(changed: np.ndarray, *, live: bool) -> np.ndarray:
    """Samples at which a bean shows fresh data: every sample of a live bean (``java.lang``);
    for a Hadoop metrics bean the first sample and every sample where any of its values changed.

    An idle bean does not change at its refresh, so a window can span several metrics periods;
    the rate is then the average over that longer window (never a made-up zero).
    """
    if live:
        return np.ones(len(changed), dtype=bool)
    out = np.asarray(changed, dtype=bool).copy()
    if len(out):
        out[0] = True
    return out


class JmxSampler:
    """Polls a JMX servlet every ``interval_s`` in a daemon thread (see the module docstring)."""

    def __init__(
        self,
        url: str,
        interval_s: float = 1.0,
        *,
        rpc_port: int | None = None,
        metrics: Sequence[MetricSpec] = DEFAULT_METRICS,
        timeout_s: float | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive (got {interval_s})")
        self.url = url
        self.interval_s = float(interval_s)
        self.rpc_port = rpc_port
        self.metrics = tuple(metrics)
        self.timeout_s = float(timeout_s) if timeout_s is not None else max(FETCH_TIMEOUT_S, self.interval_s)
        self.warnings: list[str] = []
        self.origin_wall_ns: int | None = None
        self._times: list[int] = []
        self._rows: list[dict[str, float | None]] = []
        self._raw: list[dict[str, str]] = []
        self._failures = 0
        self._seen_errors: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        try:
            self._base: str | None = jmx_base_url(url)
        except ValueError as exc:
            self._base = None
            self._warn(f"JMX sampling disabled: {exc}")

    # ------------------------------------------------------------------ control

    def set_origin(self, wall_ns: int) -> None:
        """Where ``t_s`` is 0: the run's start barrier (``time.time_ns()`` clock)."""
        self.origin_wall_ns = int(wall_ns)

    def start(self) -> JmxSampler:
        if self._thread is not None or self._base is None:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="jmx-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        """End sampling (takes at most one fetch timeout); returns the warnings so far."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s * 8 + self.interval_s + 1.0)
            self._thread = None
        if self._base is not None and not self._times:
            self._warn(f"no JMX sample could be read from {self._base}: no server metrics recorded")
        return list(self.warnings)

    @property
    def samples(self) -> int:
        return len(self._times)

    @property
    def failures(self) -> int:
        return self._failures

    def _warn(self, message: str) -> None:
        if message not in self._seen_errors:
            self._seen_errors.add(message)
            self.warnings.append(message)
            LOG.warning("%s", message)

    def _loop(self) -> None:
        next_due = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_due += self.interval_s
            delay = next_due - time.monotonic()
            if delay < 0:  # fell behind (slow server): skip the missed ticks
                next_due = time.monotonic()
                delay = 0.0
            if self._stop.wait(delay):
                break

    def sample_once(self) -> bool:
        """Take one sample now; False (and a warning) when the endpoint did not answer."""
        if self._base is None:
            return False
        wall = time.time_ns()
        answers: dict[str, list[dict[str, Any]]] = {}
        raw: dict[str, str] = {}
        for query in dict.fromkeys(spec.query for spec in self.metrics):
            try:
                beans = fetch_beans(self._base, query, self.timeout_s)
            except (OSError, ValueError, urllib.error.URLError) as exc:
                self._failures += 1
                self._warn(f"JMX endpoint {self._base} did not answer ({type(exc).__name__}: {exc})")
                return False
            answers[query] = beans
            # what identifies a refresh of the bean(s): every numeric value, serialised
            raw[query] = json.dumps(
                [{k: v for k, v in b.items() if isinstance(v, int | float)} for b in beans], sort_keys=True
            )
        row = extract(answers, self.metrics, self.rpc_port)
        with self._lock:
            self._times.append(wall)
            self._rows.append(row)
            self._raw.append(raw)
        return True

    # ------------------------------------------------------------------ results

    def frame(self) -> pl.DataFrame:
        """The samples: ``t_s``, ``wall_ns`` and one ``jmx_*`` column per metric."""
        with self._lock:
            times = list(self._times)
            rows = list(self._rows)
            raw = list(self._raw)
        columns: dict[str, Any] = {}
        origin = self.origin_wall_ns if self.origin_wall_ns is not None else (times[0] if times else 0)
        t_s = (np.asarray(times, dtype=np.int64) - origin) / 1e9 if times else np.zeros(0)
        columns["t_s"] = t_s
        columns["wall_ns"] = np.asarray(times, dtype=np.int64)
        refresh_masks: dict[str, np.ndarray] = {}
        for spec in self.metrics:
            values = np.array([np.nan if r.get(spec.column) is None else r[spec.column] for r in rows], dtype=float)
            if spec.kind == "counter":
                if spec.query not in refresh_masks:
                    refresh_masks[spec.query] = self._refreshes(spec.query, raw)
                values = counter_rates(t_s, values, refresh_masks[spec.query])
            columns[spec.output] = values
        schema = {"t_s": pl.Float64, "wall_ns": pl.Int64, **{s.output: pl.Float64 for s in self.metrics}}
        frame = pl.DataFrame(columns, schema=schema)
        return frame.with_columns(pl.col(pl.Float64).fill_nan(None))

    def _refreshes(self, query: str, raw: list[dict[str, str]]) -> np.ndarray:
        """Which samples show fresh data for ``query``'s beans (see ``refresh_mask``)."""
        changed = [i == 0 or raw[i].get(query) != raw[i - 1].get(query) for i in range(len(raw))]
        live = query.startswith("java.lang:")
        return refresh_mask(np.array(changed, dtype=bool), live=live)

    def write(self, run_dir: str | Path) -> Path:
        """Write ``server_timeseries.parquet`` into ``run_dir`` (also when there are no samples)."""
        path = Path(run_dir) / TIMESERIES_FILE
        self.frame().write_parquet(path)
        return path


#: values of ``--jmx`` that turn sampling off
JMX_OFF = frozenset({"off", "none", "no", ""})


def managed_jmx_url(backend_url: str, workdir: str | Path | None = None) -> str | None:
    """The JMX URL of the cluster ``mimesisbench hdfs up`` started in ``workdir`` (default
    ``.mimesisbench/hdfs``) when ``backend_url`` names it (a loopback host and the RPC port its
    state file records); None otherwise (no such cluster, another NameNode, not hdfs://)."""
    from mimesisbench.hdfs.config import DEFAULT_WORKDIR
    from mimesisbench.hdfs.site import HOST, Layout
    from mimesisbench.hdfs.state import managed_state

    state = managed_state(backend_url, Layout(Path(workdir if workdir is not None else DEFAULT_WORKDIR).resolve()).state_file)
    if state is None:
        return None
    return f"http://{HOST}:{state.ports.http}/jmx"


def sampler_for_run(
    backend_url: str, jmx: str | None = None, interval_s: float = 1.0, hdfs_workdir: str | Path | None = None
) -> JmxSampler | None:
    """The sampler a run should use: ``jmx`` (a URL, or ``off``) overrides the derived URL; for
    an ``hdfs://`` backend that is the cluster ``mimesisbench hdfs up`` started in
    ``hdfs_workdir`` (its HTTP port, from the state file) when the backend names it, else
    ``http://host:9870/jmx``; None when there is nothing to sample (sampling off, or not an
    HDFS backend and no URL given)."""
    if jmx is not None and jmx.strip().lower() in JMX_OFF:
        return None
    url = jmx if jmx is not None else (managed_jmx_url(backend_url, hdfs_workdir) or jmx_url_for_backend(backend_url))
    if url is None:
        return None
    return JmxSampler(url, interval_s=interval_s, rpc_port=rpc_port_of(backend_url))
