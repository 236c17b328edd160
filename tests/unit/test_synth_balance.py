"""The pre-existing files' law that puts a type's pooled gaps back on F_j (``synth.balance``),
checked by sampling the pool it promises."""

from __future__ import annotations

import numpy as np
from test_synth_helpers import exp_dist

from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.balance import balanced_pre_law
from mimesisbench.synth.kstats import ks_distance, pool_floor

F = exp_dist(10_000.0, seed=3)


def _pool(law: Distribution, created: np.ndarray, n_pre: int, rng: np.random.Generator) -> np.ndarray:
    return np.concatenate([law.sample(rng, n_pre), created])


def test_an_absorbable_created_sample_gives_a_pool_on_f() -> None:
    rng = np.random.default_rng(1)
    # short gaps only, a quarter of the pool: their density stays below F_j's times 4
    created = rng.uniform(0.0, 5_000.0, 25_000)
    out = balanced_pre_law(F, created, None, n_created=25_000, n_pre=75_000)
    assert out.pool_ks == 0.0 and abs(out.created_share - 0.25) < 1e-12
    assert (ks_distance(_pool(F, created, 75_000, rng), F.cdf) or 0.0) > 0.1  # unbalanced
    assert (ks_distance(_pool(out.distribution, created, 75_000, rng), F.cdf) or 1.0) < 0.012
    # the law keeps F_j's stored values and is a distribution
    assert out.distribution.values == F.values
    assert abs(sum(out.distribution.weights) - 1.0) < 1e-9 and min(out.distribution.weights) >= 0.0
    # it holds fewer short gaps than F_j: the created files brought them
    assert out.distribution.cdf(np.array([5_000.0]))[0] < F.cdf(np.array([5_000.0]))[0] - 0.2


def test_too_many_created_gaps_give_the_closest_pool() -> None:
    """Created gaps that a law of the pre-existing files cannot offset (70% of the pool, all
    short): the linear program's best, better than F_j and as promised."""
    rng = np.random.default_rng(2)
    created = rng.uniform(0.0, 3_000.0, 70_000)
    out = balanced_pre_law(F, created, None, n_created=70_000, n_pre=30_000)
    # the pool's CDF at 3 s is at least 0.7 whatever the law: no pool comes closer than this
    bound = 0.7 - float(F.cdf(np.array([3_000.0]))[0])
    assert bound - 0.01 < out.pool_ks < bound + 0.01
    balanced = ks_distance(_pool(out.distribution, created, 30_000, rng), F.cdf) or 1.0
    unbalanced = ks_distance(_pool(F, created, 30_000, rng), F.cdf) or 0.0
    assert balanced < unbalanced - 0.05
    assert abs(balanced - out.pool_ks) < 0.02  # the LP's optimum is at bin edges
    assert min(out.distribution.weights) >= 0.0


def test_gaps_cut_by_the_window_are_compared_with_what_the_window_shows() -> None:
    """Created gaps that are F_j draws seen through a window (each kept only below its limit)
    lack long gaps only because of the window: against the truncated F_j they have no excess,
    so the law stays F_j. Taken against F_j itself, they would call for long gaps."""
    rng = np.random.default_rng(3)
    limits = rng.uniform(1_000.0, 30_000.0, 200_000)
    draws = F.sample(rng, limits.size)
    seen, their_limits = draws[draws < limits], limits[draws < limits]
    windowed = balanced_pre_law(F, seen, their_limits, n_created=40_000, n_pre=60_000)
    naive = balanced_pre_law(F, seen, None, n_created=40_000, n_pre=60_000)
    x = np.linspace(0.0, 60_000.0, 121)
    assert np.max(np.abs(windowed.distribution.cdf(x) - F.cdf(x))) < 0.01
    assert np.max(F.cdf(x) - naive.distribution.cdf(x)) > 0.05


def test_nothing_to_balance_returns_f() -> None:
    assert balanced_pre_law(F, np.empty(0), None, 0.0, 100.0).distribution is F
    assert balanced_pre_law(F, np.ones(10), None, 10.0, 0.0).distribution is F
    assert balanced_pre_law(Distribution.point(5.0), np.ones(10), None, 10.0, 10.0).distribution.values == [5.0]


def test_pool_floor_is_the_bound_of_a_fixed_part() -> None:
    uniform = Distribution(values=[0.0, 10.0], weights=[0.0, 1.0])  # U(0, 10)
    part = np.linspace(0.0, 1.0, 1001)
    # half the pool in [0, 1]: at x = 1 the pool's CDF is at least 0.5 where U's is 0.1
    assert abs((pool_floor(part, 0.5, uniform.cdf) or 0.0) - 0.4) < 1e-3
    # a tenth: the rest of the pool can match U exactly
    assert (pool_floor(part, 0.1, uniform.cdf) or 0.0) < 2e-4  # 0.1 / 1001 at x = 0: a point mass
    # the part all at 9-10 with share 0.95: below 9 the pool holds at most 0.05 of U's 0.9
    high = np.linspace(9.0, 10.0, 101)
    assert abs((pool_floor(high, 0.95, uniform.cdf) or 0.0) - 0.85) < 1e-3
    # a balanced pool of the same part never beats the floor
    rng = np.random.default_rng(4)
    created = rng.uniform(0.0, 3_000.0, 70_000)
    out = balanced_pre_law(F, created, None, n_created=70_000, n_pre=30_000)
    pool = _pool(out.distribution, created, 30_000, rng)
    assert (ks_distance(pool, F.cdf) or 0.0) >= (pool_floor(created, 0.7, F.cdf) or 1.0) - 0.005
    assert pool_floor(np.empty(0), 0.5, F.cdf) is None
