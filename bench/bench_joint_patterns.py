"""How close can created files' gaps come to F_j while their spans follow H_j exactly?

For the Yahoo types whose created files miss F_j (docs/generate.md, "Which files H_j describes"),
fits a joint model of spans and gaps by linear programming and compares it with the generator's
calibrated closing rule:

* gaps: ``--gap-bins`` bins of equal F_j probability; spans: ``--span-bins`` bins of equal
  probability over H_j's positive part;
* candidate access patterns: multisets of up to ``--max-gaps`` gap bins; a pattern serves the span
  bins that its range of sums covers entirely; plus, per span bin, a one-gap pattern whose gap is
  the span itself (always feasible);
* the LP (scipy's HiGHS) chooses pattern shares so that every span bin gets exactly its H_j mass
  and minimises the largest gap in the pooled gaps' CDF at the bin edges (the KS distance at bin
  resolution; the mean gaps per file is fixed by iteration);
* sampling: ``--files`` spans from H_j, a pattern drawn within each span's bin, gap values drawn
  within their bins and shifted together so that they sum to the span (scaled when they cannot).

Prints per type: the LP optimum, the KS of the sampled gaps to F_j (spans exact by construction)
and the calibrated closing rule's KS (``access_gap_sampling.ks`` of the imported profile, the
same created-files-only measure). A prototype, not the generator.

    .venv/bin/python bench/bench_joint_patterns.py [--types 5,7,10,...] [--gap-bins 40]
        [--span-bins 80] [--max-gaps 3] [--files 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.legacy2014 import import_2014

YAHOO = Path(__file__).resolve().parents[2] / "shared" / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"
#: the types whose created files miss F_j over 30 days (bench_fidelity_yahoo.py --duration 30d)
DEFAULT_TYPES = "5,7,10,12,13,14,15,17,20,23,27,29,30"
SPAN = -1  # the one-gap pattern whose gap is the span itself


@dataclass
class Patterns:
    gap_edges: NDArray[np.float64]  # ms, gap bins' edges (F_j quantiles)
    span_edges: NDArray[np.float64]  # ms, span bins' edges (H_j quantiles over its positive part)
    zero_share: float  # H_j's mass at 0 (files accessed once)
    patterns: list[tuple[int, ...]]
    span_bin: NDArray[np.int64]
    weight: NDArray[np.float64]
    lp_ks: float


def fit(f: Distribution, h: Distribution, gap_bins: int, span_bins: int, max_gaps: int) -> Patterns:
    levels = np.linspace(0.0, 1.0, gap_bins + 1)
    gap_edges = f.quantile(levels)
    zero = float(h.weights[0]) if h.values[0] <= 0 else 0.0
    span_levels = zero + (1.0 - zero) * np.linspace(0.0, 1.0, span_bins + 1)
    span_edges = h.quantile(span_levels)
    span_edges[0] = max(span_edges[0], 0.0)
    combos = [c for k in range(1, max_gaps + 1) for c in itertools.combinations_with_replacement(range(gap_bins), k)]
    lo = np.array([gap_edges[list(c)].sum() for c in combos])
    hi = np.array([gap_edges[[b + 1 for b in c]].sum() for c in combos])
    first = np.searchsorted(span_edges, lo, side="left")  # first span bin whose left edge >= lo
    last = np.searchsorted(span_edges, hi, side="right") - 2  # last span bin whose right edge <= hi
    patterns: list[tuple[int, ...]] = []
    span_bin: list[int] = []
    for c, a, b in zip(combos, first, last):
        for s in range(max(int(a), 0), min(int(b), span_bins - 1) + 1):
            patterns.append(c)
            span_bin.append(s)
    counts = np.zeros((len(patterns) + span_bins, gap_bins))
    for i, c in enumerate(patterns):
        np.add.at(counts[i], list(c), 1.0)
    for s in range(span_bins):  # the span's own gap: where H_j's values in the bin fall among F's bins
        q = h.quantile(span_levels[s] + (span_levels[s + 1] - span_levels[s]) * (np.arange(64) + 0.5) / 64)
        counts[len(patterns) + s] = np.bincount(np.clip(np.searchsorted(gap_edges, q, side="right") - 1, 0, gap_bins - 1), minlength=gap_bins) / 64
    patterns += [(SPAN,)] * span_bins
    bins = np.array(span_bin + list(range(span_bins)))
    n = len(patterns)
    size = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)[:, :-1]  # gaps in bins <= k, k < gap_bins - 1
    gaps_per_file = 1.0
    res = None
    for _ in range(3):  # the KS constraint scales with the mean gaps per file: fixed point
        below = (cum - size[:, None] * levels[None, 1:-1]).T  # rows: bin edges; columns: patterns
        a_ub = np.vstack([np.hstack([below, -gaps_per_file * np.ones((below.shape[0], 1))]),
                          np.hstack([-below, -gaps_per_file * np.ones((below.shape[0], 1))])])  # fmt: skip
        a_eq = np.zeros((span_bins, n + 1))
        a_eq[bins, np.arange(n)] = 1.0
        c = np.zeros(n + 1)
        c[-1] = 1.0
        res = linprog(c, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=np.full(span_bins, 1.0 / span_bins),
                      bounds=[(0, None)] * (n + 1), method="highs")  # fmt: skip
        if res.status != 0:
            raise RuntimeError(res.message)
        gaps_per_file = float(res.x[:n] @ size)
    assert res is not None
    return Patterns(gap_edges, span_edges, zero, patterns, bins, res.x[:n], float(res.x[n]))


def sample(
    m: Patterns, f: Distribution, h: Distribution, files: int, rng: np.random.Generator
) -> tuple[NDArray[np.float64], int]:
    """Pooled gaps (ms) of ``files`` created files whose spans are H_j draws, and how many of
    those files have a positive span."""
    gap_bins = m.gap_edges.size - 1
    span = h.quantile(rng.random(files))
    span = span[span > 0]
    s = np.clip(np.searchsorted(m.span_edges, span, side="right") - 1, 0, m.span_edges.size - 2)
    live = np.flatnonzero(m.weight > 1e-12)
    choice = np.empty(span.size, dtype=np.int64)
    for b in np.unique(s):
        mine = np.flatnonzero(s == b)
        cand = live[m.span_bin[live] == b]
        choice[mine] = rng.choice(cand, size=mine.size, p=m.weight[cand] / m.weight[cand].sum())
    whole = np.array([m.patterns[c] == (SPAN,) for c in choice])
    lens = np.array([0 if w else len(m.patterns[c]) for c, w in zip(choice, whole)])
    file_of = np.repeat(np.arange(span.size), lens)
    bins = np.concatenate([np.array(m.patterns[c], dtype=np.float64) for c, w in zip(choice, whole) if not w])
    theta = rng.random(bins.size)
    lo, hi = np.full(span.size, -1.0), np.full(span.size, 1.0)
    for _ in range(30):  # a common shift of the within-bin positions makes each file's gaps sum to its span
        mid = (lo + hi) / 2
        total = np.bincount(file_of, weights=f.quantile((bins + np.clip(theta + mid[file_of], 0, 1)) / gap_bins), minlength=span.size)
        over = total > span
        hi, lo = np.where(over, mid, hi), np.where(over, lo, mid)
    gaps = f.quantile((bins + np.clip(theta + ((lo + hi) / 2)[file_of], 0, 1)) / gap_bins)
    total = np.bincount(file_of, weights=gaps, minlength=span.size)
    gaps *= (span / np.where(total > 0, total, 1.0))[file_of]  # where no shift reaches the span
    return np.concatenate([gaps, span[whole]]), int(span.size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", type=Path, default=YAHOO)
    ap.add_argument("--types", default=DEFAULT_TYPES)
    ap.add_argument("--gap-bins", type=int, default=40)
    ap.add_argument("--span-bins", type=int, default=80)
    ap.add_argument("--max-gaps", type=int, default=3)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    profile, _ = import_2014(args.profile)
    wanted = {int(t) for t in args.types.split(",")}
    print(f"{'type':>4} {'gaps/file':>9} {'LP optimum':>10} {'sampled':>8} {'closing':>8} {'seconds':>7}")
    for ft in profile.types:
        if ft.id not in wanted or ft.access_interarrival is None or ft.active_span is None:
            continue
        f, h = ft.access_interarrival, ft.active_span
        t0 = time.perf_counter()
        m = fit(f, h, args.gap_bins, args.span_bins, args.max_gaps)
        gaps, spanned = sample(m, f, h, args.files, np.random.default_rng([args.seed, ft.id]))
        seconds = time.perf_counter() - t0
        closing = ft.access_gap_sampling.ks if ft.access_gap_sampling is not None else float("nan")
        per_file = gaps.size / max(1, spanned)
        print(f"{ft.id:>4} {per_file:>9.2f} {m.lp_ks:>10.4f} {ks_distance(gaps, f.cdf) or 0.0:>8.4f} {closing:>8.4f} {seconds:>7.1f}")


if __name__ == "__main__":
    main()
