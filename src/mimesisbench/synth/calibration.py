"""Calibrated interarrival sampling for span-driven types (the closing rule).

A span-driven type (no observed popularity; the 2014 format) gets its accesses by the closing
rule of ``streams``: interarrivals drawn while they fit within first access + H_j, then a
closing access at exactly first + H_j. Spans are exact, but the pooled interarrivals (accepted
draws plus closing gaps) are shorter than F_j: a long draw rarely fits, and the closing gap is
a remainder.

``calibrate_gaps`` finds a sampling distribution F'_j such that the closing rule drawing from
F'_j yields pooled interarrivals that follow F_j (as closely as the marginals allow: a gap can
never exceed its file's span, so F_j mass above the largest span cannot be reached). F'_j has
F_j's stored values and F_j's shape within each of ``balance.BINS`` bins of equal F_j probability; only
the bins' masses change. Fixed point, per type:

1. draw ``spans`` spans from H_j once (seeded);
2. simulate the closing rule on them with the current F'_j (``closing_gaps``, vectorised, with
   the same random stream every round: common random numbers make rounds comparable);
3. histogram the pooled gaps over the bins; multiply each bin's mass by
   ``clip((target / output) ** alpha, 1 / CLIP, CLIP)`` (alpha starts at ``ALPHA``; a bin's
   total factor stays within ``1 / MAX_FACTOR .. MAX_FACTOR``), renormalise;
4. keep the F'_j whose pooled gaps have the smallest KS distance to F_j; a round that does not
   improve restarts from the best table with alpha halved; stop when alpha falls below
   ``ALPHA / MIN_STEP_DIVISOR``, after ``MAX_ROUNDS`` rounds, or at KS ``GOOD_KS``.

Round 0 is F_j itself, so the result is never worse than no calibration on the calibration
sample; the KS figures returned are measured again on a fresh sample (another seed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.balance import equal_mass_bins, reweighted
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.streams import Sampler

I64 = NDArray[np.int64]

MAX_ROUNDS = 20
#: damping exponent and per-round clip of the bin-mass update
ALPHA = 0.8
CLIP = 2.0
#: a pooled KS this small needs no (further) calibration
GOOD_KS = 0.004
#: bound of a bin's total mass change
MAX_FACTOR = 50.0
#: stop when a failed round has halved the step below ALPHA / this
MIN_STEP_DIVISOR = 16
#: interarrival draws per simulated round (sets the number of spans for each type)
DRAW_BUDGET = 300_000
MIN_SPANS = 200
MAX_SPANS = 100_000
#: default seed of the calibration (recorded in the profile with each table)
DEFAULT_SEED = 2014
#: at most this many interarrivals drawn for one file in one pass
_MAX_WANT = 1 << 16


@dataclass(frozen=True)
class GapCalibration:
    """A calibrated sampling distribution and what it reached (KS on a fresh sample)."""

    distribution: Distribution
    ks: float  # pooled closing-rule gaps drawn from ``distribution`` vs F_j
    ks_uncalibrated: float  # pooled closing-rule gaps drawn from F_j itself vs F_j
    rounds: int  # round of the kept table (0: F_j itself)
    spans: int
    seed: int


def closing_gaps(span_us: I64, sampler: Sampler, rng: np.random.Generator) -> I64:
    """Pooled interarrivals (us) of the closing rule on files with spans ``span_us`` (us, >= 0):
    draws from ``sampler`` while the running total stays within the span, then the closing gap
    (span minus the last access offset, when positive). Vectorised over files."""
    span = np.asarray(span_us, dtype=np.int64)
    cur = np.zeros(span.size, dtype=np.int64)
    gaps: list[I64] = []
    active = np.flatnonzero(span > 0)
    mean = max(sampler.mean_us, 1.0)
    while active.size:
        room = span[active] - cur[active]
        want = np.minimum((room / mean).astype(np.int64) + 1, _MAX_WANT)
        starts = np.cumsum(want) - want
        raw = sampler.draw(rng, int(want.sum()))
        total = np.cumsum(raw)
        base = total[starts] - raw[starts] - cur[active]
        total -= np.repeat(base, want)  # offset from the file's first access
        ok = total <= np.repeat(span[active], want)  # a prefix of each file's draws (draws >= 0)
        gaps.append(raw[ok])
        cnt = np.add.reduceat(ok.astype(np.int64), starts)
        got = cnt > 0
        cur[active[got]] = total[(starts + cnt - 1)[got]]
        active = active[cnt == want]
    closing = span - cur
    gaps.append(closing[closing > 0])
    return np.concatenate(gaps)


def calibrate_gaps(
    f: Distribution, h: Distribution, seed: int = DEFAULT_SEED, stream: int = 0, trace: list[float] | None = None
) -> GapCalibration | None:
    """Calibrate the closing rule's sampling distribution for interarrivals F_j (``f``) and spans
    H_j (``h``), both in ms. ``stream`` (e.g. the type id) separates types' random streams.
    None when there is nothing to calibrate (no positive span or a single F_j value).
    ``trace``, when given, receives the KS of every round (diagnostics)."""
    values, cdf = f.arrays()
    if h.values[-1] <= 0 or values.size < 2 or values[-1] <= 0:
        return None
    weights = np.diff(cdf, prepend=0.0)
    edges = equal_mass_bins(values, cdf)
    key_bin = np.searchsorted(edges, values, side="left")
    nb = edges.size
    target = np.bincount(key_bin, weights=weights, minlength=nb)
    ratio = h.mean() / max(f.mean(), 1e-9)
    spans = int(np.clip(DRAW_BUDGET / (ratio + 1.0), MIN_SPANS, MAX_SPANS))
    span_us = Sampler(h).draw(np.random.default_rng([seed, stream, 0]), spans)
    edges_us = edges * 1000.0

    def pooled(w: NDArray[np.float64], run: int) -> I64:
        return closing_gaps(span_us, Sampler(reweighted(values, w)), np.random.default_rng([seed, stream, run]))

    factor = np.ones(nb)
    best_factor, best_gaps, best_ks, best_round = factor, np.empty(0, dtype=np.int64), np.inf, 0
    alpha = ALPHA
    for rnd in range(MAX_ROUNDS + 1):
        w = weights * factor[key_bin]
        gaps = pooled(w, 1)
        ks = ks_distance(gaps / 1000.0, f.cdf) or 0.0
        if trace is not None:
            trace.append(ks)
        if ks < best_ks - 1e-6:
            best_factor, best_gaps, best_ks, best_round = factor, gaps, ks, rnd
            if ks <= GOOD_KS:
                break
        else:
            # worse: step again from the best table, with a smaller step
            alpha *= 0.5
            if alpha < ALPHA / MIN_STEP_DIVISOR:
                break
            factor, gaps = best_factor, best_gaps
        out_counts = np.bincount(np.minimum(np.searchsorted(edges_us, gaps, side="left"), nb - 1), minlength=nb)
        out = out_counts / max(gaps.size, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(out > 0, target / out, CLIP) ** alpha
        factor = np.clip(factor * np.clip(step, 1.0 / CLIP, CLIP), 1.0 / MAX_FACTOR, MAX_FACTOR)
    best_w = weights * best_factor[key_bin]
    dist = reweighted(values, best_w)
    # figures on a fresh sample (another random stream), not the one the weights were fitted on
    ks_cal = ks_distance(pooled(best_w, 2) / 1000.0, f.cdf) or 0.0
    ks_raw = ks_distance(pooled(weights, 2) / 1000.0, f.cdf) or 0.0
    return GapCalibration(dist, round(ks_cal, 4), round(ks_raw, 4), best_round, spans, seed)
