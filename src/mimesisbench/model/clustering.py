"""Object types: k-means over normalised per-object features (scikit-learn), files and directories apart.

scikit-learn is imported when first clustered (its import costs ~1.5 s of CPU, the size of a
whole parse): ``import_in_background`` lets a caller start that import on another thread while
it parses a trace (the native parse releases the GIL), as ``mimesisbench model`` does.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

#: the modules ``cluster_objects`` imports
_SKLEARN_MODULES = ("sklearn.cluster",)

#: objects used to fit the centroids; every object is then assigned to its nearest centroid
FIT_SAMPLE = 50_000
#: Lloyd iterations at most (k-means converges in a few dozen on most traces; a slow tail of
#: iterations moves centroids very little)
MAX_ITER = 60
#: objects scaled and assigned to a centroid at a time
PREDICT_ROWS = 262_144

FEATURES = (
    "log_accesses",
    "log_span",
    "log_activation",
    "log_mean_interarrival",
    "created",
    "deleted",
)
#: directories' own features, after ``FEATURES``
DIRECTORY_FEATURES = ("listing_share", "log_children_created")
#: the object table's columns that ``feature_matrix`` reads
FEATURE_COLUMNS = ("created_ms", "first_access_ms", "last_access_ms", "deleted_ms", "accesses", "lists", "children_created")


def feature_matrix(
    objects: pl.DataFrame,
    t0: int,
    window_ms: int,
    *,
    kind: str = "file",
    rows: NDArray[np.integer] | None = None,
    extra_columns: int = 0,
) -> NDArray[np.float64]:
    """Per-object features of the ``rows`` of ``objects`` (all by default): ``FEATURES``
    (heavy-tailed times enter as log1p(ms)), for directories ``DIRECTORY_FEATURES`` too, then
    ``extra_columns`` columns left for the caller to fill (uninitialised; ``mimesisbench.model.fit``
    puts the shares of the trace's most frequent access commands there).

    Reads ``FEATURE_COLUMNS`` a column at a time, each gathered to ``rows`` as numpy, so that
    beside the matrix only a few columns of the rows are alive at once."""

    def values(name: str) -> NDArray[Any]:
        col = objects[name]
        out: NDArray[Any] = (col.fill_null(0) if col.null_count() else col).to_numpy()
        return out if rows is None else out[rows]

    def present(name: str) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = objects[name].is_not_null().to_numpy()
        return out if rows is None else out[rows]

    n = objects.height if rows is None else rows.size
    extra = DIRECTORY_FEATURES if kind == "directory" else ()
    out = np.empty((n, len(FEATURES) + len(extra) + extra_columns), dtype=np.float64)
    acc = values("accesses")
    out[:, 0] = np.log1p(acc.astype(np.float64))
    created, accessed = present("created_ms"), present("first_access_ms")
    out[:, 4] = created
    out[:, 5] = present("deleted_ms")
    first = values("first_access_ms")
    origin = np.where(created, values("created_ms"), t0)
    del created
    out[:, 2] = np.log1p(np.where(accessed, np.maximum(first - origin, 0), max(window_ms, 0)).astype(np.float64))
    del origin
    span = np.where(accessed, values("last_access_ms") - first, 0)
    del first, accessed
    out[:, 1] = np.log1p(span.astype(np.float64))
    out[:, 3] = np.log1p(span / np.maximum(acc - 1, 1))
    del span
    if kind == "directory":
        col = len(FEATURES)
        out[:, col] = values("lists") / np.maximum(acc, 1)
        out[:, col + 1] = np.log1p(values("children_created").astype(np.float64))
    return out


def _import_sklearn() -> None:
    for name in _SKLEARN_MODULES:
        importlib.import_module(name)


def import_in_background() -> threading.Thread:
    """Start importing scikit-learn on a daemon thread and return it (joining is optional: an
    import of the same modules elsewhere waits for this one through Python's import locks).

    For a caller about to do long work that releases the GIL (the native audit-log parse), so
    the import uses the idle core instead of delaying ``cluster_objects``."""
    thread = threading.Thread(target=_import_sklearn, name="mimesisbench-import-sklearn", daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class Clustering:
    """A fitted assignment of objects to types 1..k (ordered by decreasing size)."""

    k: int
    labels: NDArray[np.int16]  # type id per object, 1-based
    inertia: float


@dataclass(frozen=True)
class _Standardiser:
    """Each feature less its mean, over its standard deviation (1 where a feature is constant):
    what scikit-learn's StandardScaler computes. Written here because the scaler's fit (a
    NaN-aware incremental variance) took 0.38 s of a 10 M-line fit's clustering where numpy's mean
    and std take a fifth of that; the features hold no NaN (``feature_matrix``)."""

    mean: NDArray[np.float64]
    scale: NDArray[np.float64]

    @classmethod
    def fit(cls, features: NDArray[np.float64]) -> _Standardiser:
        mean = features.mean(axis=0)
        # the squared deviations a slice at a time: no temporary as large as the features
        squares = sum(np.square(features[i : i + PREDICT_ROWS] - mean).sum(axis=0)
                      for i in range(0, features.shape[0], PREDICT_ROWS))
        scale = np.sqrt(np.asarray(squares, dtype=np.float64) / max(features.shape[0], 1))
        scale[scale < 10 * np.finfo(np.float64).eps] = 1.0  # a constant feature is left unscaled
        return cls(mean, scale)

    def scaled(self, rows: NDArray[np.float64]) -> NDArray[np.float32]:
        return ((rows - self.mean) / self.scale).astype(np.float32)


def cluster_objects(features: NDArray[np.float64], k: int, seed: int) -> Clustering:
    """k-means with k-means++ init on standardised features; fitted on a sample, applied to all."""
    from sklearn.cluster import KMeans

    n = features.shape[0]
    if n == 0:
        raise ValueError("no objects to cluster")
    scaler = _Standardiser.fit(features)
    rng = np.random.default_rng(seed)
    # standardised features in float32: k-means (Lloyd) runs a few times faster than in float64
    sample = scaler.scaled(features if n <= FIT_SAMPLE else features[rng.choice(n, FIT_SAMPLE, replace=False)])
    # distinct rows by polars' hashing (numpy's row-wise unique sorts the rows: several times slower)
    k_eff = max(1, min(k, pl.DataFrame(sample).n_unique()))
    model = KMeans(n_clusters=k_eff, n_init=1, max_iter=MAX_ITER, random_state=int(rng.integers(2**31 - 1)))
    model.fit(sample)
    # every object to its nearest centroid, a slice at a time: scaling and assigning are per row, so
    # this is the whole matrix's result without a scaled copy of it
    raw = np.concatenate(
        [model.predict(scaler.scaled(features[i : i + PREDICT_ROWS])) for i in range(0, n, PREDICT_ROWS)]
    )
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
