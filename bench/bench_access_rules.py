"""Candidate access rules for span-driven types (no observed popularity), per type of a profile.

For each type, draws ``--files`` spans from H_j (fewer when a file holds many interarrivals) and per-file access streams by each rule, then
prints the KS distance of the pooled per-file interarrivals to F_j and of the realised spans
(last minus first access) to H_j, with no window (what ``bench_fidelity_yahoo.py --duration 30d``
measures on full schedules). Rules:

* ``closing``: the generator's rule: F_j interarrivals while they stay within H_j of the first
  access, then a closing access at exactly first + H_j (spans exact; the closing interarrival
  is shorter than an F_j draw);
* ``calibrated``: the closing rule drawing from the type's ``access_gap_sampling`` table (the
  calibrated F'_j stored at import, ``mimesisbench.synth.calibration``; F_j when it has none);
* ``crossing``: the 2014 Java generator: another F_j interarrival while the current access is
  at or before first + H_j (a stopping time: pooled gaps are F_j by Wald's identity; the last
  one overshoots the span);
* ``mean``: stop when the next interarrival's mean would carry the stream past the span;
* ``nearest``: stop when another interarrival is expected to end farther from first + H_j than
  the current access (remaining r with E[min(r, X)] <= E[X] / 2);
* ``randomised``: with remaining r > 0, go on with probability F_j(2r) (the chance that the next
  access lands nearer to first + H_j).

    .venv/bin/python bench/bench_access_rules.py [--profile ZIP] [--files 20000] [--rules closing,crossing]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.legacy2014 import import_2014
from mimesisbench.synth.streams import Sampler

YAHOO = Path(__file__).resolve().parents[2] / "shared" / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"
RULES = ("closing", "calibrated", "crossing", "mean", "nearest", "randomised")
#: fewer files for types with many interarrivals per file (spans / F means up to 4,700 on Yahoo)
MAX_DRAWS = 4_000_000
MIN_FILES = 500
Go = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def _closing(span: np.ndarray, f: Sampler, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    total = np.zeros(span.size, dtype=np.int64)
    gaps: list[np.ndarray] = []
    active = np.arange(span.size)
    while active.size:
        x = f.draw(rng, active.size)
        ok = total[active] + x <= span[active]
        gaps.append(x[ok])
        total[active[ok]] += x[ok]
        active = active[ok]
    short = total < span
    gaps.append((span - total)[short])
    total[short] = span[short]
    return np.concatenate(gaps), total


def _stopping(span: np.ndarray, f: Sampler, go: Go, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw another interarrival while ``go(remaining)``: a stopping time (no look at the draw)."""
    total = np.zeros(span.size, dtype=np.int64)
    gaps: list[np.ndarray] = []
    active = np.arange(span.size)
    while active.size:
        active = active[go(span[active] - total[active], rng)]
        x = f.draw(rng, active.size)
        gaps.append(x)
        total[active] += x
    return np.concatenate(gaps), total


def _nearest_threshold(dist: Distribution, mean_us: float) -> float:
    """r* with E[min(r*, X)] = E[X] / 2, in us."""
    values, cdf = dist.arrays()
    grid = np.linspace(0.0, values[-1] * 1000.0, 200_001)
    survival = 1.0 - np.interp(grid, values * 1000.0, cdf, left=0.0)
    e_min = np.concatenate([[0.0], np.cumsum((survival[1:] + survival[:-1]) / 2 * np.diff(grid))])
    return float(np.interp(mean_us / 2.0, e_min, grid))


def _stopping_rules(f_dist: Distribution, mean: float) -> dict[str, Go]:
    """The ``go`` predicates of the stopping-time rules for one type (F_j and its mean in us)."""
    th = _nearest_threshold(f_dist, mean)
    return {
        "crossing": lambda r, g: r >= 0,
        "mean": lambda r, g: r > mean,
        "nearest": lambda r, g: r > th,
        "randomised": lambda r, g: (r > 0) & (g.random(r.size) < f_dist.cdf(2.0 * r / 1000.0)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", type=Path, default=YAHOO)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rules = args.rules.split(",")
    profile, _dirs = import_2014(args.profile)
    print(f"{'type':>4} {'H/F':>7} {'files':>7} " + " ".join(f"{r:>18}" for r in rules))
    worst = {r: [0.0, 0.0, 0, 0] for r in rules}
    for t in profile.types:
        if t.active_span is None or t.access_interarrival is None:
            continue
        f_dist, h_dist = t.access_interarrival, t.active_span
        f = Sampler(f_dist)
        ratio = h_dist.mean() / max(f_dist.mean(), 1e-9)  # interarrivals per file
        files = min(args.files, max(MIN_FILES, int(MAX_DRAWS / max(ratio, 1.0))))
        span = Sampler(h_dist).draw(np.random.default_rng([args.seed, t.id]), files)
        gos = _stopping_rules(f_dist, f.mean_us)
        cells = []
        for rule in rules:
            rng = np.random.default_rng([args.seed, t.id, 1])
            if rule == "closing":
                gaps, spans = _closing(span, f, rng)
            elif rule == "calibrated":
                table = t.access_gap_sampling
                gaps, spans = _closing(span, Sampler(table.distribution) if table else f, rng)
            else:
                gaps, spans = _stopping(span, f, gos[rule], rng)
            ks_f = ks_distance(gaps / 1000.0, f_dist.cdf) or 0.0
            ks_h = ks_distance(spans / 1000.0, h_dist.cdf) or 0.0
            w = worst[rule]
            w[0], w[1] = max(w[0], ks_f), max(w[1], ks_h)
            w[2] += ks_f > 0.02
            w[3] += ks_h > 0.02
            cells.append(f"F {ks_f:.3f} H {ks_h:.3f}")
        print(f"{t.id:>4} {ratio:7.1f} {files:>7} " + " ".join(f"{c:>18}" for c in cells), flush=True)
    print(f"noise (95 %) of a span KS: 1.36 / sqrt(files), {1.36 / np.sqrt(args.files):.4f} at {args.files} files")
    for rule, (wf, wh, nf, nh) in worst.items():
        print(f"{rule:>11}: worst KS F {wf:.3f} H {wh:.3f}; types over 0.02: F {nf}, H {nh}")


if __name__ == "__main__":
    main()
