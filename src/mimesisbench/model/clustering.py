"""File types: k-means over normalised per-object features (scikit-learn)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray
from sklearn.cluster import KMeans
from sklearn.preprocessing import StandardScaler

#: objects used to fit the centroids; every object is then assigned to its nearest centroid
FIT_SAMPLE = 50_000

FEATURES = (
    "log_accesses",
    "log_span",
    "log_activation",
    "log_mean_interarrival",
    "created",
    "deleted",
    "open_share",
)


def feature_matrix(objects: pl.DataFrame, t0: int, window_ms: int) -> NDArray[np.float64]:
    """Per-object features (see ``FEATURES``); heavy-tailed times enter as log1p(ms)."""
    created = objects["created_ms"].is_not_null()
    origin = objects["created_ms"].fill_null(t0)
    accessed = objects["first_access_ms"].is_not_null()
    activation = (objects["first_access_ms"] - origin).fill_null(window_ms).clip(lower_bound=0)
    span = (objects["last_access_ms"] - objects["first_access_ms"]).fill_null(0)
    acc = objects["accesses"]
    mean_gap = (span / (acc - 1).clip(lower_bound=1)).fill_null(0)
    open_share = (objects["opens"] / acc.clip(lower_bound=1)).fill_null(1.0)
    open_share = pl.Series(np.where(accessed.to_numpy(), open_share.to_numpy(), 1.0))
    columns = [
        np.log1p(acc.to_numpy().astype(np.float64)),
        np.log1p(span.to_numpy().astype(np.float64)),
        np.log1p(activation.to_numpy().astype(np.float64)),
        np.log1p(mean_gap.to_numpy().astype(np.float64)),
        created.to_numpy().astype(np.float64),
        objects["deleted_ms"].is_not_null().to_numpy().astype(np.float64),
        open_share.to_numpy().astype(np.float64),
    ]
    return np.column_stack(columns)


@dataclass(frozen=True)
class Clustering:
    """A fitted assignment of objects to types 1..k (ordered by decreasing size)."""

    k: int
    labels: NDArray[np.int16]  # type id per object, 1-based
    inertia: float


def cluster_objects(features: NDArray[np.float64], k: int, seed: int) -> Clustering:
    """k-means with k-means++ init on standardised features; fitted on a sample, applied to all."""
    n = features.shape[0]
    if n == 0:
        raise ValueError("no objects to cluster")
    scaled = StandardScaler().fit_transform(features)
    rng = np.random.default_rng(seed)
    sample = scaled if n <= FIT_SAMPLE else scaled[rng.choice(n, FIT_SAMPLE, replace=False)]
    k_eff = max(1, min(k, np.unique(sample, axis=0).shape[0]))
    model = KMeans(n_clusters=k_eff, n_init=1, random_state=int(rng.integers(2**31 - 1)))
    model.fit(sample)
    raw = model.predict(scaled)
    # renumber by decreasing cluster size so type 1 is the largest (stable, seed-independent order)
    sizes = np.bincount(raw, minlength=k_eff)
    order = np.lexsort((np.arange(k_eff), -sizes))
    rank = np.empty(k_eff, dtype=np.int16)
    rank[order] = np.arange(1, k_eff + 1, dtype=np.int16)
    labels = rank[raw]
    used = np.unique(labels)
    if used.size != k_eff:  # an empty cluster after prediction: compact the ids
        remap = np.zeros(k_eff + 1, dtype=np.int16)
        remap[used] = np.arange(1, used.size + 1, dtype=np.int16)
        labels = remap[labels]
    return Clustering(k=int(np.unique(labels).size), labels=labels, inertia=float(model.inertia_))
