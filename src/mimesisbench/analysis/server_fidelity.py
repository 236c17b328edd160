"""Does the server respond to the synthetic workload as it responds to the real one?

The end of a model's fidelity (issue 18): the same server and settings replay the trace
verbatim (``schedule-from-trace``) in one run and a schedule generated from the profile fitted
on that trace in another; this compares the two runs per audit command (the NameNode's ``cmd``
of each operation: ``mkdirs_parents`` and ``mkdirs_existing`` are both ``mkdirs``):

* **throughput**: the command's operations per second of the replay's span on each side, and
  the ratio synthetic / verbatim;
* **latency**: the service time of each operation (its actual start to its end: what the
  server took, without the client's queueing behind the schedule). The two-sample KS distance of
  the distributions (``scipy.stats.ks_2samp``), and the p50 and p99 of each side with the ratio
  synthetic / verbatim and its bootstrap confidence interval (``scipy.stats.bootstrap``,
  percentile method, operations resampled within each side; at most ``max_samples`` of a side's
  operations are used, a seeded random subset past that);
* **server**: the NameNode's own series (``server_timeseries.parquet``, JMX) averaged over each
  run: RPC queue time, processing time, lock wait, call and lock queue lengths, side by side;
* **the verbatim replay itself**: how closely it kept to the trace's times (lateness p99) and
  the share of its operations whose outcome was the trace's (succeeded where the trace says
  ``allowed=true``; a denied read succeeds when one user replays it) and the one its schedule
  predicted from the trace's history (``expect_ok``).

Operations of one run are not independent repetitions (they share the server's state), so the
intervals say how precisely a run pins the figure, not how it varies from run to run: repeat the
runs for that (``compare``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray
from scipy import stats

from mimesisbench.errors import MimesisError
from mimesisbench.monitoring.jmx import TIMESERIES_FILE
from mimesisbench.results.load import COL_END, COL_OP, COL_OUTCOME, COL_SCHEDULED, COL_START, RunData
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import COMMANDS, OpCode

#: the latency quantiles compared, by name
QUANTILES: dict[str, float] = {"p50": 0.5, "p99": 0.99}
#: JMX series averaged over each run (``monitoring.jmx`` columns), by name in the output
SERVER_SERIES: dict[str, str] = {
    "rpc_queue_time_avg_ms": "jmx_rpc_queue_time_avg_ms",
    "rpc_processing_time_avg_ms": "jmx_rpc_processing_time_avg_ms",
    "rpc_lock_wait_time_avg_ms": "jmx_rpc_lock_wait_time_avg_ms",
    "call_queue_length": "jmx_call_queue_length",
    "lock_queue_length": "jmx_lock_queue_length",
    "rpc_ops_per_s": "jmx_rpc_ops_per_s",
}
ALL = "all"


@dataclass(frozen=True)
class FidelityOptions:
    """How the intervals are computed."""

    resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    max_samples: int = 100_000

    def __post_init__(self) -> None:
        if self.resamples < 100:
            raise ValueError(f"resamples: at least 100 (got {self.resamples})")
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"confidence: in [0.5, 1) (got {self.confidence})")
        if self.max_samples < 10:
            raise ValueError(f"max_samples: at least 10 (got {self.max_samples})")


@dataclass(frozen=True)
class Side:
    """One run's operations: the audit command and service time (ms) of each, and its span (s)."""

    command: NDArray[np.str_]
    service_ms: NDArray[np.float64]
    span_s: float


def _command_of_label() -> dict[str, str]:
    return {op.label: (COMMANDS[op].audit_cmd or op.label) for op in OpCode}


def side_of(samples: pl.DataFrame) -> Side:
    """A run's samples (``results.samples`` columns) as a ``Side``."""
    if samples.height == 0:
        return Side(np.array([], dtype=str), np.array([], dtype=np.float64), 0.0)
    labels = samples.get_column(COL_OP).cast(pl.String)
    command = labels.replace_strict(_command_of_label(), default=labels).to_numpy().astype(str)
    service = ((samples.get_column(COL_END) - samples.get_column(COL_START)) / 1000.0).to_numpy()
    span_us = float(samples.get_column(COL_END).max()) - float(samples.get_column(COL_SCHEDULED).min())  # type: ignore[arg-type]
    return Side(command, np.asarray(service, dtype=np.float64), max(span_us, 1.0) / 1e6)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a <= 0 or not math.isfinite(a) or not math.isfinite(b):
        return None
    return b / a


def _subset(x: NDArray[np.float64], limit: int, rng: np.random.Generator) -> NDArray[np.float64]:
    return x if x.size <= limit else rng.choice(x, size=limit, replace=False)


def _quantile_ratio_ci(
    v: NDArray[np.float64], s: NDArray[np.float64], q: float, options: FidelityOptions, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """Bootstrap interval of quantile(s, q) / quantile(v, q) (None when a side is too small)."""
    if v.size < 2 or s.size < 2 or float(np.quantile(v, q)) <= 0:
        return None, None

    def statistic(a: NDArray[np.float64], b: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
        top = np.quantile(a, q, axis=axis)
        return np.quantile(b, q, axis=axis) / np.where(top > 0, top, np.nan)

    result = stats.bootstrap(
        (v, s), statistic, n_resamples=options.resamples, confidence_level=options.confidence, method="percentile",
        vectorized=True, paired=False, batch=max(1, int(2e7 // max(v.size + s.size, 1))), random_state=rng,
    )  # fmt: skip
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return (low if math.isfinite(low) else None), (high if math.isfinite(high) else None)


def _row(v: NDArray[np.float64], s: NDArray[np.float64], v_span: float, s_span: float,
         options: FidelityOptions, rng: np.random.Generator) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "n_verbatim": int(v.size),
        "n_synthetic": int(s.size),
        "throughput_verbatim_ops_per_s": v.size / v_span if v_span > 0 else None,
        "throughput_synthetic_ops_per_s": s.size / s_span if s_span > 0 else None,
    }
    row["throughput_ratio"] = _ratio(row["throughput_verbatim_ops_per_s"], row["throughput_synthetic_ops_per_s"])
    v_use, s_use = _subset(v, options.max_samples, rng), _subset(s, options.max_samples, rng)
    row["ks_service"] = float(stats.ks_2samp(v_use, s_use).statistic) if v.size and s.size else None
    for name, q in QUANTILES.items():
        a = float(np.quantile(v, q)) if v.size else None
        b = float(np.quantile(s, q)) if s.size else None
        low, high = _quantile_ratio_ci(v_use, s_use, q, options, rng)
        row[f"service_{name}_verbatim_ms"] = a
        row[f"service_{name}_synthetic_ms"] = b
        row[f"service_{name}_ratio"] = _ratio(a, b)
        row[f"service_{name}_ratio_ci"] = [low, high] if low is not None and high is not None else None
    return row


def fidelity_of_sides(verbatim: Side, synthetic: Side, options: FidelityOptions | None = None) -> dict[str, Any]:
    """Per command (and ``all``): throughput, service-time KS and quantile ratios with intervals."""
    options = options or FidelityOptions()
    rng = np.random.default_rng(options.seed)
    commands = sorted(set(verbatim.command.tolist()) | set(synthetic.command.tolist()))
    by_command = {
        c: _row(verbatim.service_ms[verbatim.command == c], synthetic.service_ms[synthetic.command == c],
                verbatim.span_s, synthetic.span_s, options, rng)  # fmt: skip
        for c in commands
    }
    overall = _row(verbatim.service_ms, synthetic.service_ms, verbatim.span_s, synthetic.span_s, options, rng)
    return {ALL: overall, "by_command": by_command}


def _server_means(run: RunData) -> dict[str, float | None]:
    path = run.path / TIMESERIES_FILE
    if not path.is_file():
        return {}
    frame = pl.read_parquet(path)
    out: dict[str, float | None] = {}
    for name, column in SERVER_SERIES.items():
        if column in frame.columns:
            values = frame.get_column(column).cast(pl.Float64).drop_nulls()
            out[name] = float(values.mean()) if values.len() else None  # type: ignore[arg-type]
    return out


def verbatim_adherence(run: RunData, samples: pl.DataFrame) -> dict[str, Any]:
    """The verbatim run's lateness p99 and the shares of its outcomes (``samples``: its ``seq``
    and ``outcome``) that match the trace's and the schedule's prediction (None when its schedule
    is gone or is not a verbatim one)."""
    out: dict[str, Any] = {
        "lateness_p99_ms": run.summary.lateness_ms.p99,
        "outcome_matches_trace": None,
        "outcome_matches_prediction": None,
    }
    path = run.manifest.schedule.path
    try:
        schedule = read_schedule(path) if path else None
    except MimesisError:
        schedule = None
    if schedule is None or not {"allowed", "expect_ok"} <= set(schedule.events.columns):
        return out
    joined = samples.select("seq", COL_OUTCOME).join(schedule.events.select("seq", "allowed", "expect_ok"), on="seq")
    if joined.height:
        ok = pl.col(COL_OUTCOME).cast(pl.String) == "ok"
        out["outcome_matches_trace"] = float(joined.select((ok == pl.col("allowed")).mean()).item())
        out["outcome_matches_prediction"] = float(joined.select((ok == pl.col("expect_ok")).mean()).item())
    return out


def server_fidelity(verbatim: RunData, synthetic: RunData, options: FidelityOptions | None = None) -> dict[str, Any]:
    """The comparison of a verbatim run and a synthetic run (module docstring), as JSON-ready data."""
    columns = [COL_OP, COL_SCHEDULED, COL_START, COL_END]
    v_samples = pl.read_parquet(verbatim.samples_path, columns=[*columns, "seq", COL_OUTCOME])
    s_samples = pl.read_parquet(synthetic.samples_path, columns=columns)
    result = fidelity_of_sides(side_of(v_samples), side_of(s_samples), options)
    v_server, s_server = _server_means(verbatim), _server_means(synthetic)
    result["server"] = {
        name: {"verbatim": v_server.get(name), "synthetic": s_server.get(name),
               "ratio": _ratio(v_server.get(name), s_server.get(name))}  # fmt: skip
        for name in SERVER_SERIES
        if name in v_server or name in s_server
    }
    result["verbatim_replay"] = verbatim_adherence(verbatim, v_samples)
    result["runs"] = {"verbatim": str(verbatim.path), "synthetic": str(synthetic.path)}
    used = options or FidelityOptions()
    result["options"] = {"resamples": used.resamples, "confidence": used.confidence, "seed": used.seed}
    return result


__all__ = ["ALL", "FidelityOptions", "Side", "fidelity_of_sides", "server_fidelity", "side_of", "verbatim_adherence"]
