"""Choosing K: the paper's rule, the smallest K whose synthetic file popularity comes within a
KS distance target (4%) of the real one.

Synthetic popularity is drawn from each candidate type's span-driven model (the paper's rule, and
the generator's for types without an observed popularity): a file is accessed with probability
``accessed_share``; an accessed file gets a first access, then further accesses at interarrivals
from F_j until its active span H_j has elapsed. (Fitted profiles also carry each type's observed
popularity, which the generator then uses; drawing from it here would make every K pass, so K is
chosen by how well H_j and F_j alone explain popularity.)

This module sits below ``fit``: ``choose_k`` is handed the real popularity and a callable that
builds a candidate's types from a labelling, so it never imports ``fit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import ks_2samp

from mimesisbench.model.clustering import cluster_objects
from mimesisbench.profile import FileType

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: the types of a candidate labelling (objects -> types 1..K), built by the caller (``fit``)
TypesForLabels = Callable[["NDArray[np.int16]", str], Sequence[FileType]]

#: renewal steps simulated exactly per file; beyond that the renewal-theorem mean is used
EXACT_STEPS = 256
#: files simulated per type at most
SIM_FILES = 20_000


def simulate_popularity(ftype: FileType, files: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Accesses per *accessed* file of one type, drawn from its model (vectorised)."""
    if ftype.active_span is None or ftype.access_interarrival is None or files <= 0:
        return np.empty(0, dtype=np.int64)
    accessed = int(rng.binomial(files, ftype.accessed_share))
    if accessed == 0:
        return np.empty(0, dtype=np.int64)
    span = ftype.active_span.sample(rng, accessed)
    counts = np.ones(accessed, dtype=np.int64)
    elapsed = np.zeros(accessed)
    live = np.flatnonzero(span > 0)  # a zero span holds one access (else zero gaps would never end it)
    for _ in range(EXACT_STEPS):
        if live.size == 0:
            break
        elapsed[live] += ftype.access_interarrival.sample(rng, live.size)
        inside = elapsed[live] <= span[live]
        counts[live[inside]] += 1
        live = live[inside]
    if live.size:
        mean_gap = max(ftype.access_interarrival.mean(), 1e-3)
        counts[live] += np.floor((span[live] - elapsed[live]) / mean_gap).astype(np.int64)
    return counts


@dataclass(frozen=True)
class KChoice:
    k: int
    labels: NDArray[np.int16]
    ks: float
    tried: tuple[tuple[int, float], ...]
    target: float

    def describe(self) -> str:
        trail = ", ".join(f"K={k}: {d:.4f}" for k, d in self.tried)
        verdict = "met" if self.ks <= self.target else "not met (best K kept)"
        return f"auto: smallest K with popularity KS <= {self.target} ({verdict}); K={self.k}, KS={self.ks:.4f}; tried {trail}"


def choose_k(
    real: NDArray[np.int64],
    features: NDArray[np.float64],
    types_for: TypesForLabels,
    *,
    candidates: Iterable[int],
    ks_target: float,
    seed: int,
) -> KChoice:
    """Try K in ``candidates`` in increasing order; stop at the first whose synthetic popularity
    is within ``ks_target`` of ``real`` (accesses per accessed file, observed).

    ``types_for(labels, note)`` builds the candidate's file types (``fit`` passes its profile
    builder); clustering and the popularity simulation are this module's."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4B]))
    tried: list[tuple[int, float]] = []
    best: tuple[float, int, NDArray[np.int16]] | None = None
    for k in sorted(set(candidates)):
        clustering = cluster_objects(features, k, seed)
        types = types_for(clustering.labels, f"auto candidate K={k}")
        sizes = np.bincount(clustering.labels, minlength=clustering.k + 1)[1:]
        scale = min(1.0, SIM_FILES * len(sizes) / max(int(sizes.sum()), 1))
        synthetic = np.concatenate(
            [simulate_popularity(t, int(np.ceil(s * scale)), rng) for t, s in zip(types, sizes)]
        )
        distance = float(ks_2samp(real, synthetic).statistic) if real.size and synthetic.size else 1.0
        tried.append((clustering.k, distance))
        if best is None or distance < best[0]:
            best = (distance, clustering.k, clustering.labels)
        if distance <= ks_target or clustering.k < k:
            break  # within target, or no more distinct behaviours to split
    assert best is not None
    return KChoice(k=best[1], labels=best[2], ks=best[0], tried=tuple(tried), target=ks_target)
