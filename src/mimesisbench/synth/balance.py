"""The pre-existing files' interarrival law that keeps a type's pooled interarrivals on F_j.

In the 2014 format, F_j pools the gaps of every file accessed during the trace, and most of
those files existed before it. H_j, by contrast, describes only the files created in it
(``span_population`` 'created'). The generator gives created files their exact spans (the closing
rule), which bends their gaps away from F_j. The longer the window, the larger their share of
the pool (up to three quarters over 30 days), and the further the pool strays from F_j.

Pre-existing files have no span in the profile, and their stopping rule pools an unbiased sample
of whatever law it draws from. So they can take up the difference: they draw from F^pre_j with

    N_pre F^pre_j + N_created C_j  ~  (N_pre + N_created) F_j,

where C_j is the created files' gap law in the window and the N's are the expected gap counts
(``synth.streams`` estimates all three from a pilot simulation). F^pre_j keeps F_j's stored values
and F_j's shape within bins of equal F_j probability; the bins' masses solve the equation bin by
bin. When no law can absorb the created files' gaps (some bin holds more of them than the pool
may), a small linear program sets the masses instead: it minimises the pool's KS distance to F_j
at the bin edges, with a tie-break towards F_j, which is the best pool there is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.kstats import truncated_seen

FloatArray = NDArray[np.float64]

#: bins of equal F_j probability whose masses are set (calibration)
BINS = 100
#: the same for balancing (300 gave the same Yahoo figures: where the pool misses F_j, the
#: created files' gaps sit inside F_j's first bin, which no binning splits finely enough)
BALANCE_BINS = 100
#: weight of the L1 distance to F_j's bin masses in the objective (a tie-break: a KS point is
#: worth 1 / TIE_BREAK units of L1 distance)
TIE_BREAK = 1e-4


@dataclass(frozen=True)
class Balance:
    """The pre-existing files' law and what the pool is expected to reach."""

    distribution: Distribution
    created_share: float  # expected share of the created files' gaps in the pool
    pool_ks: float  # the LP's optimum: the pool's KS distance to F_j at the bin edges


def equal_mass_bins(values: FloatArray, cdf: FloatArray, bins: int = BINS) -> FloatArray:
    """Right edges of up to ``bins`` bins of about equal probability. Every edge is a stored
    value, so each stored value's mass (spread over the interval below it) lies in one bin."""
    levels = np.arange(1, bins, dtype=np.float64) / bins
    idx = np.searchsorted(cdf, levels - 1e-12, side="left")
    return np.unique(np.append(values[np.clip(idx, 0, values.size - 1)], values[-1]))


def reweighted(values: FloatArray, weights: FloatArray) -> Distribution:
    """A distribution on ``values`` with the given (unnormalised) weights."""
    w = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    w[-1] = max(0.0, 1.0 - float(w[:-1].sum()))
    return Distribution(values=values.tolist(), weights=w.tolist())


def balanced_pre_law(
    f: Distribution, created_gaps_ms: FloatArray, created_limits_ms: FloatArray | None, n_created: float, n_pre: float
) -> Balance:
    """F^pre_j for interarrivals F_j (``f``, ms), given a sample of the created files' gaps (ms)
    seen in the window, each gap's limit (ms from the access that opens it to the window's end;
    None: no window), and the expected numbers of created and pre-existing gaps in the window.

    The window shows a gap only below its limit, and ``validate`` compares seen gaps with F_j so
    truncated (``kstats.truncated_seen``). So the created files' excess is taken against what
    F_j draws would show with the same limits (E), and the pre-existing files' law offsets that:
    a (P - F_j) = c (E - M) in bin masses (M: the created gaps'; a, c: the two shares). Without
    a window E = F_j, and this is N_pre P + N_created M = N F_j."""
    values, cdf = f.arrays()
    total = n_created + n_pre
    if values.size < 2 or n_pre <= 0 or total <= 0 or created_gaps_ms.size == 0:
        return Balance(f, 0.0, 0.0)
    weights = np.diff(cdf, prepend=0.0)
    edges = equal_mass_bins(values, cdf, BALANCE_BINS)
    key_bin = np.searchsorted(edges, values, side="left")
    nb = edges.size
    # float64 already (weighted); numpy's stubs type every bincount as an integer array
    target = np.bincount(key_bin, weights=weights, minlength=nb).astype(np.float64, copy=False)
    made_counts = np.bincount(np.minimum(np.searchsorted(edges, created_gaps_ms, side="left"), nb - 1), minlength=nb)
    made = made_counts / created_gaps_ms.size
    expected = target
    if created_limits_ms is not None:
        seen = truncated_seen(f.cdf, created_limits_ms)(edges)
        expected = np.diff(seen, prepend=0.0)
        expected[-1] += 1.0 - seen[-1]
    a, c = n_pre / total, n_created / total
    pool = a * target + c * expected  # what the window should show of the whole pool
    exact = (pool - c * made) / a  # the pool equation solved bin by bin
    if exact.min() >= 0.0:
        p, ks = exact / exact.sum(), 0.0
    else:  # some bins hold more created gaps than the pool may: the closest pool instead
        shares = _pool_lp(target, pool, made, a, c)
        if shares is None:
            return Balance(f, c, float("nan"))
        p, ks = shares
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(target > 0, p / target, 0.0)
    law = reweighted(values, weights * factor[key_bin])
    return Balance(law, c, ks)


def _pool_lp(
    target: FloatArray, pool: FloatArray, made: FloatArray, a: float, c: float
) -> tuple[FloatArray, float] | None:
    """Bin masses ``p`` (>= 0, summing to 1) minimising max_k |a P_k + c M_k - Q_k| over the
    inner bin edges k (capitals: cumulative sums; Q: ``pool``), plus ``TIE_BREAK`` times
    sum |p - target|. Variables: p (nb), d (nb, the L1 terms), z. Returns (p, z), or None if
    HiGHS fails."""
    # imported here: every generation imports this module, and scipy.optimize is slow to load
    from scipy.optimize import linprog

    nb = target.size
    inner = nb - 1
    lower = np.tril(np.ones((inner, nb)))  # row k sums bins 0..k
    gap = c * np.cumsum(made)[:inner] - np.cumsum(pool)[:inner]  # the pool's CDF error without p
    zeros = np.zeros((inner, nb))
    ones = np.ones((inner, 1))
    eye = np.eye(nb)
    a_ub = np.vstack(
        [
            np.hstack([a * lower, zeros, -ones]),  # a P_k + gap_k <= z
            np.hstack([-a * lower, zeros, -ones]),  # -(a P_k + gap_k) <= z
            np.hstack([eye, -eye, np.zeros((nb, 1))]),  # p - target <= d
            np.hstack([-eye, -eye, np.zeros((nb, 1))]),  # target - p <= d
        ]
    )
    b_ub = np.concatenate([-gap, gap, target, -target])
    a_eq = np.concatenate([np.ones(nb), np.zeros(nb + 1)])[None, :]
    cost = np.concatenate([np.zeros(nb), np.full(nb, TIE_BREAK), [1.0]])
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    p = np.clip(res.x[:nb], 0.0, None)
    return p / p.sum(), float(res.x[-1])
