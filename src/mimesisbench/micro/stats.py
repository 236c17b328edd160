"""Summaries of a batch's raw samples (derived, never stored instead of them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mimesisbench.backends.base import Outcome
from mimesisbench.micro.runner import Timings

#: the latency percentiles of a batch, by their keys (``p999``: the 99.9th, as a run's summary names it)
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}


def latency_summary_ms(latency_ns: np.ndarray) -> dict[str, float]:
    """mean, p50, p90, p99, p99.9 (``p999``) and max in milliseconds (zeros for an empty batch)."""
    if len(latency_ns) == 0:
        return {"mean": 0.0, **{key: 0.0 for key in PERCENTILES}, "max": 0.0}
    ms = latency_ns.astype(np.float64) / 1e6
    points = np.percentile(ms, list(PERCENTILES.values()))
    out = {"mean": float(ms.mean())}
    out.update({key: float(v) for key, v in zip(PERCENTILES, points, strict=True)})
    out["max"] = float(ms.max())
    return out


def error_counts(outcome: np.ndarray) -> dict[str, int]:
    """Failed operations by outcome label (only the non-zero ones)."""
    counts = np.bincount(outcome.astype(np.int64), minlength=len(Outcome))
    return {o.label: int(counts[o.value]) for o in Outcome if o is not Outcome.OK and counts[o.value]}


def summarize(timings: Timings) -> dict[str, Any]:
    """Throughput, latency percentiles and errors of a batch."""
    n = len(timings.start_ns)
    elapsed_s = timings.elapsed_ns / 1e9
    errors = error_counts(timings.outcome)
    return {
        "operations": n,
        "ops_per_s": (n / elapsed_s) if elapsed_s > 0 else 0.0,
        "elapsed_s": elapsed_s,
        "latency_ms": latency_summary_ms(timings.latency_ns),
        "errors": int(sum(errors.values())),
        "errors_by_outcome": errors,
        "client": timings.client,
        "client_cpu_s": timings.cpu_s,
        "client_cpu_us_per_op": (timings.cpu_s / n * 1e6) if n else None,
    }
