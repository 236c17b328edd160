"""Distribution: sampling matches its own CDF, quantile/cdf are inverse, fitting keeps ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from scipy import stats

from mimesisbench.profile.distribution import Distribution


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def test_samples_follow_the_table_cdf(rng: np.random.Generator) -> None:
    dist = Distribution.from_samples(rng.lognormal(3.0, 1.2, 50_000), points=128)
    draws = dist.sample(np.random.default_rng(7), 20_000)
    result = stats.kstest(draws, dist.cdf)
    assert result.statistic < 0.015
    assert result.pvalue > 0.001


def test_samples_of_a_histogram_follow_its_cdf() -> None:
    dist = Distribution(values=[0.0, 10.0, 50.0, 200.0], weights=[0.0, 0.5, 0.3, 0.2])
    draws = dist.sample(np.random.default_rng(3), 20_000)
    assert stats.kstest(draws, dist.cdf).statistic < 0.015
    assert draws.min() >= 0.0 and draws.max() <= 200.0


def test_fitted_cdf_is_close_to_the_data(rng: np.random.Generator) -> None:
    data = rng.exponential(100.0, 20_000)
    dist = Distribution.from_samples(data)
    assert stats.kstest(data, dist.cdf).statistic < 0.01


def test_quantile_and_cdf_are_inverse(rng: np.random.Generator) -> None:
    dist = Distribution.from_samples(rng.gamma(2.0, 30.0, 10_000), points=64)
    u = np.linspace(0.001, 0.999, 500)
    np.testing.assert_allclose(dist.cdf(dist.quantile(u)), u, atol=1e-9)
    x = np.linspace(dist.values[0], dist.values[-1], 500)
    np.testing.assert_allclose(dist.quantile(dist.cdf(x)), x, rtol=1e-9, atol=1e-6)


def test_cdf_at_listed_values_is_the_cumulative_weight() -> None:
    dist = Distribution(values=[1.0, 2.0, 4.0, 8.0], weights=[0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(dist.cdf(np.array(dist.values)), [0.1, 0.3, 0.6, 1.0])
    assert dist.cdf(0.5) == 0.0 and dist.cdf(9.0) == 1.0
    assert dist.cdf(3.0) == pytest.approx(0.45)  # weight 0.3 spread uniformly over (2, 4]


def test_mean_matches_the_piecewise_linear_cdf() -> None:
    # 0.1 at 1, 0.2 uniform on (1, 2], 0.3 on (2, 4], 0.4 on (4, 8]
    dist = Distribution(values=[1.0, 2.0, 4.0, 8.0], weights=[0.1, 0.2, 0.3, 0.4])
    assert dist.mean() == pytest.approx(0.1 * 1 + 0.2 * 1.5 + 0.3 * 3 + 0.4 * 6)
    draws = dist.sample(np.random.default_rng(11), 200_000)
    assert draws.mean() == pytest.approx(dist.mean(), rel=0.01)


def test_mean_of_fitted_table_is_close_to_the_sample_mean(rng: np.random.Generator) -> None:
    # light tail: the top quantile interval (spread uniformly up to the maximum) biases little
    data = rng.gamma(4.0, 10.0, 100_000)
    assert Distribution.from_samples(data).mean() == pytest.approx(data.mean(), rel=0.005)


def test_from_samples_keeps_point_masses(rng: np.random.Generator) -> None:
    data = np.concatenate([rng.exponential(100.0, 5_000), np.full(5_000, 250.0)])
    dist = Distribution.from_samples(data)
    # the CDF jumps by the tie's share at the tied value ...
    jump = float(dist.cdf(250.0) - dist.cdf(np.nextafter(np.nextafter(250.0, 0.0), 0.0)))
    assert jump == pytest.approx(0.5, abs=1e-9)
    # ... and draws land on it with that probability
    draws = dist.sample(np.random.default_rng(5), 50_000)
    assert np.mean(np.abs(draws - 250.0) < 1e-9) == pytest.approx(0.5, abs=0.01)
    assert dist.mean() == pytest.approx(data.mean(), rel=0.01)


def test_from_samples_of_few_values_is_exact_and_discrete() -> None:
    data = [0] * 50 + [1000] * 30 + [3000] * 20
    dist = Distribution.from_samples(data)
    assert dist.mean() == pytest.approx(np.mean(data), rel=1e-9)
    draws = dist.sample(np.random.default_rng(1), 10_000)
    assert set(np.round(draws).astype(int)) == {0, 1000, 3000}
    np.testing.assert_allclose(dist.cdf([0.0, 1000.0, 3000.0]), [0.5, 0.8, 1.0])


def test_minimum_is_a_point_mass() -> None:
    dist = Distribution.from_samples([5.0] * 30 + list(np.linspace(6, 100, 70)))
    assert dist.values[0] == 5.0
    assert dist.weights[0] == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("values", "weights", "fragment"),
    [
        ([1.0, 2.0], [0.5, 0.6], "sum to"),
        ([2.0, 1.0], [0.5, 0.5], "ascending"),
        ([1.0, 3.0, 2.0], [0.2, 0.3, 0.5], "ascending"),
        ([1.0, 2.0], [1.5, -0.5], "negative"),
        ([1.0, float("nan")], [0.5, 0.5], "NaN"),
        ([1.0, 2.0], [1.0], "length"),
        ([], [], "at least 1"),
    ],
)
def test_invalid_tables_are_rejected(values: list[float], weights: list[float], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        Distribution(values=values, weights=weights)


def test_from_samples_rejects_empty_and_nan() -> None:
    with pytest.raises(ValueError):
        Distribution.from_samples([])
    with pytest.raises(ValueError):
        Distribution.from_samples([1.0, float("inf")])


def test_scaled_multiplies_values_and_mean() -> None:
    dist = Distribution(values=[1.0, 3.0], weights=[0.25, 0.75])
    assert dist.scaled(2.0).mean() == pytest.approx(2.0 * dist.mean())
    with pytest.raises(ValueError):
        dist.scaled(0.0)


def _tied_table() -> Distribution:
    """A fitted table full of ties (as fitted from audit logs: many equal gaps), plus the pairs
    ``(x - 1 ulp, x)`` that tables fitted by earlier versions hold before every tie."""
    rng = np.random.default_rng(3)
    data = np.concatenate([np.round(rng.exponential(300.0, 4_000)), np.full(900, 250.0), np.full(500, 1000.0)])
    return Distribution.from_samples(data, points=64)


def _legacy_table() -> Distribution:
    ties = [np.nextafter(250.0, 0.0), 250.0, np.nextafter(1000.0, 0.0), 1000.0]
    return Distribution(values=[1.0, *ties, 5000.0], weights=[0.1, 0.2, 0.2, 0.1, 0.3, 0.1])


def test_ties_are_listed_twice_and_are_point_masses() -> None:
    dist = _tied_table()
    values = np.asarray(dist.values)
    assert np.count_nonzero(np.diff(values) == 0) >= 2  # 250 and 1000 are listed twice
    jump = float(dist.cdf(250.0) - dist.cdf(np.nextafter(250.0, 0.0)))
    assert jump == pytest.approx(900 / 5400, abs=0.01)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(factor=st.floats(min_value=5e-324, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_scaling_by_any_positive_finite_factor_keeps_a_fitted_table_valid(factor: float) -> None:
    levels = np.linspace(0.0, 1.0, 41)
    for dist in (_tied_table(), _legacy_table()):
        if max(dist.values) * factor > np.finfo(np.float64).max:
            with pytest.raises(ValueError, match="overflows"):
                dist.scaled(factor)
            continue
        scaled = dist.scaled(factor)  # validated: ascending, weights unchanged
        assert scaled.weights == dist.weights
        np.testing.assert_allclose(scaled.quantile(levels), dist.quantile(levels) * factor, rtol=1e-9, atol=1e-300)
        assert scaled.mean() == pytest.approx(dist.mean() * factor, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("factor", [0.0, -1.0, float("nan"), float("inf")])
def test_scaling_by_a_non_positive_or_non_finite_factor_is_refused(factor: float) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        _legacy_table().scaled(factor)


def test_the_cdf_is_right_continuous_at_a_listed_twice_value() -> None:
    dist = Distribution(values=[0.0, 10.0, 10.0, 20.0], weights=[0.0, 0.5, 0.25, 0.25])
    np.testing.assert_allclose(dist.cdf([5.0, 10.0, 15.0, 20.0, 25.0, -1.0]), [0.25, 0.75, 0.875, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(dist.quantile([0.5, 0.75, 0.8]), [10.0, 10.0, 12.0])


def test_discrete_samples_of_few_values_are_point_masses() -> None:
    """Counts of a few objects: each value is a point mass, so stratified draws give them back
    (spread over the gaps to their neighbours, three pollers' counts drew 4 % fewer in all)."""
    data = [1166, 1513, 1538]
    dist = Distribution.from_samples(data, discrete=True)
    assert dist.mean() == pytest.approx(np.mean(data), rel=1e-9)
    u = (np.arange(3) + 0.5) / 3
    assert dist.quantile(u) == pytest.approx(data)
    spread = Distribution.from_samples(data)
    assert spread.quantile(u).sum() < 0.97 * sum(data)
