"""Kolmogorov-Smirnov distances, and the CDFs that a window makes observable.

A schedule only shows what happens inside its window, so a delay ``X`` measured from an origin
``o`` is seen only when ``o + X < W``. Comparing the seen values with the profile's CDF ``F``
directly would blame the generator for the window. Three corrections, all exact and vectorised
over units with limits ``L_i = W - o_i``:

* truncation (a value is seen only below its limit; first access, deletion):
  ``F_T(x) = sum_i F(min(x, L_i)) / sum_i F(L_i)`` over every unit at risk, seen or not;
* truncation known only through the seen values (per-file access interarrivals: a gap opened
  by an access at ``t`` is seen only when it ends before ``W``, and the schedule does not say
  which files would have gone on): ``F_S(x) = mean_i F(min(x, L_i)) / F(L_i)`` over the seen
  values, each given its own limit (a seen value is an F draw conditioned on being below it);
* censoring (a value is cut at its limit; active span): ``F_C(x) = mean_i [F(x) if x < L_i else 1]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Cdf = Callable[[FloatArray], FloatArray]


def _ecdf_steps(samples: NDArray[np.number]) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """The distinct sample values and the ECDF just before and at each; None without samples."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        return None
    values, counts = np.unique(x, return_counts=True)
    cum = np.cumsum(counts) / x.size
    return values, cum - counts / x.size, cum


def ks_distance(samples: NDArray[np.number], cdf: Cdf) -> float | None:
    """sup |ECDF - F| for a CDF that may have point masses (left limits taken at the samples)."""
    steps = _ecdf_steps(samples)
    if steps is None:
        return None
    values, left, cum = steps
    f_at = cdf(values)
    f_before = cdf(np.nextafter(values, -np.inf))
    return float(max(np.max(np.abs(cum - f_at)), np.max(np.abs(left - f_before))))


def pool_floor(part: NDArray[np.number], share: float, cdf: Cdf) -> float | None:
    """The least KS distance to ``cdf`` (F) of any pool in which the values ``part`` make up the
    share ``s`` (``share``) and the rest may be anything.

    The rest's share of the pool's CDF, G = pool - s P (P: the part's ECDF), must be
    nondecreasing and within [0, 1 - s]. A nondecreasing G within z of D = F - s P exists
    exactly when z >= s P - F, z >= F - s P - (1 - s) and z >= (D(x) - D(y)) / 2 for all x <= y
    (D drops where the part is denser than F). Between the part's values D only rises, so
    D at each value and just before it is enough.
    """
    steps = _ecdf_steps(part)
    if steps is None:
        return None
    values, left, cum = steps
    d = np.empty(2 * values.size)
    d[0::2] = cdf(np.nextafter(values, -np.inf)) - share * left
    d[1::2] = cdf(values) - share * cum
    drop = float(np.max(np.maximum.accumulate(d) - d)) / 2.0
    return max(float(-d.min()), float(d.max()) - (1.0 - share), drop, 0.0)


def ks_two(a: NDArray[np.number], b: NDArray[np.number]) -> float | None:
    """Two-sample KS distance."""
    x = np.sort(np.asarray(a, dtype=np.float64))
    y = np.sort(np.asarray(b, dtype=np.float64))
    if x.size == 0 or y.size == 0:
        return None
    grid = np.unique(np.concatenate([x, y]))
    fx = np.searchsorted(x, grid, side="right") / x.size
    fy = np.searchsorted(y, grid, side="right") / y.size
    return float(np.max(np.abs(fx - fy)))


def discrete_ks(observed: dict[int, float], expected: dict[int, float]) -> float:
    """KS distance between two distributions on integers given as shares."""
    keys = sorted(set(observed) | set(expected))
    o = np.cumsum([observed.get(k, 0.0) for k in keys])
    e = np.cumsum([expected.get(k, 0.0) for k in keys])
    return float(np.max(np.abs(o - e))) if keys else 0.0


def truncated(cdf: Cdf, limits: NDArray[np.number]) -> Cdf:
    """The CDF of values seen only when below their unit's limit."""
    lim = np.sort(np.asarray(limits, dtype=np.float64))
    f_lim = cdf(lim)
    prefix = np.concatenate([[0.0], np.cumsum(f_lim)])
    total = prefix[-1]

    def f(x: FloatArray) -> FloatArray:
        xs = np.asarray(x, dtype=np.float64)
        if total <= 0:
            return cdf(xs)
        k = np.searchsorted(lim, xs, side="right")
        return (prefix[k] + (lim.size - k) * cdf(xs)) / total

    return f


def truncated_seen(cdf: Cdf, limits: NDArray[np.number]) -> Cdf:
    """The CDF of seen values, each an F draw seen because it fell below its limit ``L_i``.

    ``F_S(x) = mean_i F(min(x, L_i)) / F(L_i)``: a unit whose limit is at most ``x`` counts 1,
    the others ``F(x) / F(L_i)``. Limits where ``F(L_i) = 0`` cannot hold a seen value and are
    ignored. With limits beyond the distribution's support this is ``F`` itself.
    """
    lim = np.sort(np.asarray(limits, dtype=np.float64))
    f_lim = cdf(lim)
    lim = lim[f_lim > 0]
    inv = 1.0 / f_lim[f_lim > 0]
    suffix = np.concatenate([np.cumsum(inv[::-1])[::-1], [0.0]])  # sum of 1/F(L_j) for j >= i

    def f(x: FloatArray) -> FloatArray:
        xs = np.asarray(x, dtype=np.float64)
        if lim.size == 0:
            return cdf(xs)
        k = np.searchsorted(lim, xs, side="right")  # units whose limit is <= x: fully counted
        return np.minimum((k + cdf(xs) * suffix[k]) / lim.size, 1.0)

    return f


def censored(cdf: Cdf, limits: NDArray[np.number]) -> Cdf:
    """The CDF of values cut at their unit's limit."""
    lim = np.sort(np.asarray(limits, dtype=np.float64))

    def f(x: FloatArray) -> FloatArray:
        xs = np.asarray(x, dtype=np.float64)
        if lim.size == 0:
            return cdf(xs)
        k = np.searchsorted(lim, xs, side="right")  # units whose limit is <= x: fully counted
        return (k + (lim.size - k) * cdf(xs)) / lim.size

    return f


def mixture(cdfs: Sequence[Cdf], weights: Sequence[float]) -> Cdf | None:
    """A weighted mixture of CDFs (weights need not sum to 1); None when all weights are 0."""
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0 or w.sum() <= 0:
        return None
    w = w / w.sum()

    def f(x: FloatArray) -> FloatArray:
        xs = np.asarray(x, dtype=np.float64)
        out = np.zeros_like(xs)
        for cdf, wi in zip(cdfs, w):
            if wi > 0:
                out += wi * cdf(xs)
        return out

    return f


def truncated_floor(cdf: Cdf, floors: NDArray[np.number], limits: NDArray[np.number]) -> Cdf:
    """The CDF of ``max(X, a_i)`` seen only below ``L_i`` (X ~ ``cdf``; floor ``a_i`` per unit).

    The 2014 delete rule: a file goes at ``max(creation + D, last access + 1 ms)``, so its age
    at deletion is ``max(D, a_i)`` and the window shows it only when it is below ``L_i``:
    ``F(x) = sum_{i: a_i <= x} F_D(min(x, L_i)) / sum_{i: a_i < L_i} F_D(L_i)``.
    """
    a = np.asarray(floors, dtype=np.float64)
    lim = np.asarray(limits, dtype=np.float64)
    m = np.maximum(a, lim)
    order_m = np.argsort(m, kind="stable")
    m_sorted = m[order_m]
    prefix_m = np.concatenate([[0.0], np.cumsum(cdf(lim[order_m]))])
    a_sorted = np.sort(a)
    total = float(np.sum(np.where(a < lim, cdf(lim), 0.0)))

    def f(x: FloatArray) -> FloatArray:
        xs = np.asarray(x, dtype=np.float64)
        if total <= 0:
            return cdf(xs)
        k_m = np.searchsorted(m_sorted, xs, side="right")  # a_i <= x and L_i <= x
        k_a = np.searchsorted(a_sorted, xs, side="right")  # a_i <= x
        return np.minimum((prefix_m[k_m] + (k_a - k_m) * cdf(xs)) / total, 1.0)

    return f
