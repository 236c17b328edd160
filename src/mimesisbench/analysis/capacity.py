"""Capacity of a metadata server: whether a load is sustainable, and the models of Wu et al.
(TPDS'13) and Gunther's Universal Scalability Law fitted to measurements.

- **Sustainable** (``trend``): under an open-loop load a server below its capacity keeps latency
  and lateness stationary; above it a backlog grows and so do they, linearly in time: offered
  rho times its capacity, the lateness grows by (rho - 1) s per s. The test is the slope of the
  response over the run (least squares on per-bin means, statsmodels) with its 95 % interval:
  growing when the interval excludes 0 and the slope exceeds a bound (a backlog growing by more
  than a set share of the elapsed time). A bound relative to the response's own level would not
  do: on a fast server a latency of 50 us that wanders by 0.1 ms is not a backlog.
- **Wu's response time model**: with x clients, the NameNode's response time grows like a x ln x
  (their Table 6 fits it with R^2 near 1); ``wu_fit`` fits a by least squares.
- **A peak above capacity**: a peak of rate p above the capacity q lasting t adds t (p - q) / 2q
  to the mean response time, so the largest peak of length T that keeps the mean under B, with a
  network latency C, is p_max = 2 q (B - C) / T + q (``peak_delay``, ``p_max``).
- **USL**: throughput X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)) over concurrency N
  (contention sigma, coherency kappa), fitted by scipy's bounded least squares with bootstrap
  intervals; its peak concurrency sqrt((1 - sigma) / kappa) and the throughput there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mimesisbench.errors import ConfigError

#: the confidence level of every interval
LEVEL = 0.95
#: time bins of a run whose means the trend is fitted on (per-sample least squares would read the
#: autocorrelation of a queue as evidence)
TREND_BINS = 20
@dataclass(frozen=True)
class Trend:
    """The slope of a response over a run (its units per second), its 95 % interval, what it
    adds over the run as a share of the response's median (``growth``, for the reader), and
    the verdict."""

    slope: float
    ci95: tuple[float, float]
    growth: float
    stationary: bool

    def to_json(self) -> dict[str, Any]:
        return {"slope_per_s": self.slope, "ci95": list(self.ci95), "growth": self.growth, "stationary": self.stationary}


def trend(times_s: NDArray[np.floating], values: NDArray[np.floating], *, max_slope: float,
          bins: int = TREND_BINS) -> Trend:
    """Whether ``values`` (latency or lateness of each operation, at ``times_s`` into the run) stay
    stationary: the slope of their per-bin means over time, stationary when its interval holds 0
    or the slope stays under ``max_slope`` (the values' units per second)."""
    import statsmodels.api as sm

    t = np.asarray(times_s, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.size != v.size or t.size < 2 * bins:
        raise ConfigError(f"a trend needs at least {2 * bins} samples with their times (got {v.size})")
    span = float(t.max() - t.min())
    if span <= 0:
        raise ConfigError("a trend needs samples spread over time")
    edges = np.linspace(float(t.min()), float(t.max()), bins + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    filled = counts > 0
    means = np.bincount(which, weights=v, minlength=bins)[filled] / counts[filled]
    centres = ((edges[:-1] + edges[1:]) / 2)[filled]
    fit = sm.OLS(means, sm.add_constant(centres)).fit()
    slope = float(fit.params[1])
    lo, hi = (float(b) for b in np.asarray(fit.conf_int(alpha=1 - LEVEL))[1])
    level = float(np.median(v))
    growth = slope * span / level if level > 0 else (math.inf if slope > 0 else 0.0)
    return Trend(slope=slope, ci95=(lo, hi), growth=growth, stationary=lo <= 0 <= hi or slope < max_slope)


@dataclass(frozen=True)
class WuFit:
    """R(x) = a x ln x: ``a`` with its 95 % interval and R^2 (centred: against the mean)."""

    a: float
    ci95: tuple[float, float]
    r2: float

    def predict(self, clients: NDArray[np.floating] | float) -> NDArray[np.float64]:
        x = np.asarray(clients, dtype=np.float64)
        return np.asarray(self.a * x * np.log(x), dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "ci95": list(self.ci95), "r2": self.r2}


def wu_fit(clients: NDArray[np.floating], response: NDArray[np.floating]) -> WuFit:
    """Fit Wu's R = a x ln x to response times at ``clients`` (at least two levels above 1)."""
    import statsmodels.api as sm

    x = np.asarray(clients, dtype=np.float64)
    r = np.asarray(response, dtype=np.float64)
    if x.size != r.size or np.unique(x[x > 1]).size < 2:
        raise ConfigError("Wu's model needs response times at two or more client counts above 1")
    if np.any(x < 1) or not np.all(np.isfinite(r)):
        raise ConfigError("Wu's model needs client counts of at least 1 and finite response times")
    regressor = x * np.log(x)
    fit = sm.OLS(r, regressor).fit()
    a = float(fit.params[0])
    lo, hi = (float(b) for b in np.asarray(fit.conf_int(alpha=1 - LEVEL))[0])
    sst = float(np.sum((r - r.mean()) ** 2))
    r2 = 1.0 - float(fit.ssr) / sst if sst > 0 else 1.0
    return WuFit(a=a, ci95=(lo, hi), r2=r2)


def peak_delay(length_s: float, peak_rate: float, capacity: float) -> float:
    """Wu's added mean response time of a peak of ``peak_rate`` lasting ``length_s`` on a server of
    ``capacity`` (same rate unit): t (p - q) / 2q, 0 for a peak within capacity."""
    if capacity <= 0 or length_s < 0 or peak_rate < 0:
        raise ConfigError("a peak needs a positive capacity and a non-negative rate and length")
    return length_s * max(peak_rate - capacity, 0.0) / (2 * capacity)


def p_max(capacity: float, bound_s: float, network_s: float, length_s: float) -> float:
    """Wu's largest peak rate of length ``length_s`` whose mean response time stays under
    ``bound_s`` with a network latency ``network_s``: 2 q (B - C) / T + q."""
    if capacity <= 0 or length_s <= 0:
        raise ConfigError("p_max needs a positive capacity and peak length")
    if bound_s <= network_s:
        raise ConfigError(f"p_max: the bound B ({bound_s} s) must exceed the network latency C ({network_s} s)")
    return 2 * capacity * (bound_s - network_s) / length_s + capacity


def usl(n: NDArray[np.floating], lam: float, sigma: float, kappa: float) -> NDArray[np.float64]:
    """Gunther's USL throughput at concurrency ``n``."""
    x = np.asarray(n, dtype=np.float64)
    return np.asarray(lam * x / (1 + sigma * (x - 1) + kappa * x * (x - 1)), dtype=np.float64)


@dataclass(frozen=True)
class UslFit:
    """The USL's parameters, each with a bootstrap 95 % interval, and what they imply: the
    concurrency of peak throughput (inf without coherency cost) and that peak (the ceiling)."""

    lam: float
    sigma: float
    kappa: float
    intervals: dict[str, tuple[float, float]]
    peak_concurrency: float
    ceiling: float
    r2: float

    def to_json(self) -> dict[str, Any]:
        return {"lambda": self.lam, "sigma": self.sigma, "kappa": self.kappa,
                "ci95": {k: list(v) for k, v in self.intervals.items()},
                "peak_concurrency": self.peak_concurrency, "ceiling": self.ceiling, "r2": self.r2}


def _fit_usl_once(n: NDArray[np.float64], x: NDArray[np.float64]) -> tuple[float, float, float]:
    from scipy.optimize import curve_fit

    lam0 = float(np.max(x / n))
    params, _ = curve_fit(usl, n, x, p0=(lam0, 0.05, 0.001), bounds=([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf]),
                          maxfev=20_000)
    return float(params[0]), float(params[1]), float(params[2])


def _peak(lam: float, sigma: float, kappa: float) -> tuple[float, float]:
    """The concurrency of the USL's peak throughput (at least 1: with full contention, sigma = 1,
    throughput never grows past one client's) and that throughput."""
    if kappa <= 0:
        if sigma >= 1:
            return 1.0, lam
        return math.inf, lam / sigma if sigma > 0 else math.inf
    peak_n = max(1.0, math.sqrt(max(1 - sigma, 0.0) / kappa))
    return peak_n, float(usl(np.array([peak_n]), lam, sigma, kappa)[0])


def usl_fit(concurrency: NDArray[np.floating], throughput: NDArray[np.floating], seed: int = 1,
            resamples: int = 500) -> UslFit:
    """Fit the USL to throughput measured at several concurrencies (three or more distinct), with
    intervals from ``resamples`` pairs-bootstrap refits drawn from ``seed``."""
    n = np.asarray(concurrency, dtype=np.float64)
    x = np.asarray(throughput, dtype=np.float64)
    if n.size != x.size or np.unique(n).size < 3 or np.any(n < 1) or np.any(x <= 0):
        raise ConfigError("the USL needs positive throughputs at three or more concurrencies of at least 1")
    lam, sigma, kappa = _fit_usl_once(n, x)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        pick = rng.integers(0, n.size, n.size)
        if np.unique(n[pick]).size < 3:
            continue
        try:
            draws.append(_fit_usl_once(n[pick], x[pick]))
        except RuntimeError:  # a resample the optimiser cannot fit: left out
            continue
    if len(draws) < resamples // 2:
        raise ConfigError("the USL could not be fitted to most bootstrap resamples: measure more concurrencies")
    boot = np.array(draws)
    tail = (1 - LEVEL) / 2 * 100
    intervals = {name: (float(np.percentile(boot[:, i], tail)), float(np.percentile(boot[:, i], 100 - tail)))
                 for i, name in enumerate(("lambda", "sigma", "kappa"))}
    peak_n, ceiling = _peak(lam, sigma, kappa)
    fitted = usl(n, lam, sigma, kappa)
    sst = float(np.sum((x - x.mean()) ** 2))
    r2 = 1.0 - float(np.sum((x - fitted) ** 2)) / sst if sst > 0 else 1.0
    return UslFit(lam=lam, sigma=sigma, kappa=kappa, intervals=intervals, peak_concurrency=peak_n, ceiling=ceiling, r2=r2)
