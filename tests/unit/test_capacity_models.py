"""Capacity models against answers known by construction: the trend test of a run's response,
Wu's a x ln x fit and peak formulas, the USL fit with bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mimesisbench.analysis.capacity import p_max, peak_delay, trend, usl, usl_fit, wu_fit
from mimesisbench.errors import ConfigError


def _near(truth: float, lo: float, hi: float) -> bool:
    """``truth`` within the interval widened by half its width each side: a fixed seed's 95 %
    interval misses the truth one time in twenty, and a library update may move its ends."""
    return lo - (hi - lo) / 2 <= truth <= hi + (hi - lo) / 2


def test_trend_tells_a_growing_backlog_from_a_steady_queue() -> None:
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 30, 6_000))
    steady = trend(t, rng.exponential(2.0, t.size), max_slope=10)  # ms of lateness around a fixed level
    growing = trend(t, 2.0 + 50.0 * t + rng.exponential(2.0, t.size), max_slope=10)  # a backlog: +50 ms per s
    assert steady.stationary and abs(steady.growth) < 0.25
    assert not growing.stationary and growing.ci95[0] > 0 and growing.slope == pytest.approx(50, rel=0.05)


def test_trend_tolerates_a_small_drift_that_a_long_run_resolves() -> None:
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 100, 50_000))
    drift = trend(t, 10.0 + 0.005 * t + rng.normal(0, 0.1, t.size), max_slope=10)  # +0.5 ms over 100 s
    assert drift.ci95[0] > 0 and drift.stationary and drift.growth < 0.1
    assert not trend(t, 10.0 + 0.005 * t + rng.normal(0, 0.1, t.size), max_slope=0.001).stationary


def test_trend_refuses_too_few_samples() -> None:
    with pytest.raises(ConfigError, match="at least"):
        trend(np.arange(10.0), np.ones(10), max_slope=1)


def test_wu_fit_recovers_a() -> None:
    x = np.array([2, 4, 8, 16, 32, 64, 128], dtype=float)
    exact = wu_fit(x, 0.003 * x * np.log(x))
    assert exact.a == pytest.approx(0.003, rel=1e-9) and exact.r2 == pytest.approx(1.0, abs=1e-9)
    rng = np.random.default_rng(5)
    xs = np.repeat(x, 5)
    noisy = wu_fit(xs, 0.003 * xs * np.log(xs) + rng.normal(0, 0.02, xs.size))
    lo, hi = noisy.ci95
    assert lo < noisy.a < hi and _near(0.003, lo, hi) and noisy.r2 > 0.95
    assert noisy.predict(10.0) == pytest.approx(noisy.a * 10 * math.log(10))


def test_peak_formulas_close_the_loop() -> None:
    q, bound, network, length = 8_000.0, 0.050, 0.002, 30.0
    p = p_max(q, bound, network, length)
    assert p == pytest.approx(2 * q * (bound - network) / length + q)
    # a peak at p_max for T adds exactly B - C to the mean response time
    assert peak_delay(length, p, q) + network == pytest.approx(bound)
    assert peak_delay(length, q / 2, q) == 0.0
    with pytest.raises(ConfigError, match="must exceed the network latency"):
        p_max(q, 0.001, 0.002, length)


def test_usl_fit_recovers_its_parameters_with_intervals() -> None:
    n = np.repeat([1, 2, 4, 8, 16, 32, 64], 3).astype(float)
    rng = np.random.default_rng(7)
    x = usl(n, 1_000.0, 0.04, 0.0005) * rng.normal(1, 0.01, n.size)
    fit = usl_fit(n, x, seed=1, resamples=200)
    assert fit.lam == pytest.approx(1_000, rel=0.03) and fit.sigma == pytest.approx(0.04, abs=0.01)
    assert fit.kappa == pytest.approx(0.0005, rel=0.3) and fit.r2 > 0.99
    for name, truth in (("lambda", 1_000.0), ("sigma", 0.04), ("kappa", 0.0005)):
        lo, hi = fit.intervals[name]
        assert _near(truth, lo, hi), name
    assert fit.peak_concurrency == pytest.approx(math.sqrt((1 - fit.sigma) / fit.kappa))
    assert fit.ceiling == pytest.approx(float(usl(np.array([fit.peak_concurrency]), fit.lam, fit.sigma, fit.kappa)[0]))


def test_usl_needs_three_concurrencies() -> None:
    with pytest.raises(ConfigError, match="three or more"):
        usl_fit(np.array([1.0, 2.0, 1.0, 2.0]), np.array([10.0, 19.0, 10.0, 19.0]))
