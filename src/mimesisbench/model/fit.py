"""Fit a workload profile (the paper's Table 1) from a canonical event table and a snapshot."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import cast

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench import __version__
from mimesisbench.errors import ConfigError, TraceError
from mimesisbench.model.clustering import cluster_objects, feature_matrix
from mimesisbench.model.namespace_shape import fit_namespace
from mimesisbench.model.objects import GETFILEINFO, LIST, MKDIRS, RENAME, ObjectView, build_view, popularity
from mimesisbench.profile import Distribution, FileType, NamespaceShape, OpMix, ProfileSource, WorkloadProfile
from mimesisbench.profile.distribution import DEFAULT_POINTS

#: at most this many threads fit the per-type distributions (numpy sorts release the GIL)
MAX_THREADS = 4
#: ``source.trace_stats`` keys: the allowed events without a path (``src=null``), in all and per
#: command (``WITHOUT_PATH_PREFIX`` + cmd, commands with some only), so that the share of the
#: operations naming a path that the profile models can be told from ``op_mix.observed_counts``
EVENTS_WITHOUT_PATH = "events_without_path"
WITHOUT_PATH_PREFIX = "without_path."


@dataclass(frozen=True)
class FitConfig:
    """How to fit. ``types`` is K, or ``"auto"`` for the paper's smallest-K-within-KS rule."""

    types: int | str = 30
    seed: int = 0
    points: int = DEFAULT_POINTS
    window_start_ms: int | None = None
    window_end_ms: int | None = None
    auto_ks_target: float = 0.04
    auto_candidates: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)
    name: str = ""
    inputs: tuple[str, ...] = ()
    trace_stats: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.seed < 0:
            raise ConfigError(f"--seed: must be >= 0, got {self.seed}")
        start, end = self.window_start_ms, self.window_end_ms
        if start is not None and end is not None and start >= end:
            raise ConfigError(f"--window-start ({start} ms) must be before --window-end ({end} ms)")


@dataclass(frozen=True)
class FittedObjects:
    """The per-object view of a trace, with the window it was cut to (reused across K)."""

    view: ObjectView  # without the event tables (see ``build_view``)
    objects: pl.DataFrame  # object table restricted to the window
    gaps: pl.DataFrame  # obj, gap_ms
    t0: int
    window_ms: int
    has_snapshot: bool
    op_counts: dict[str, int]  # operations per audit cmd (allowed events in the window)
    namespace: NamespaceShape  # independent of the clustering: fitted once, shared by every K
    gap_obj: NDArray[np.int32]  # ``gaps`` as numpy
    gap_ms: NDArray[np.int64]
    dir_op_counts: dict[str, int]  # allowed events on directories per operation
    pathless_counts: dict[str, int] = field(default_factory=dict)  # allowed events without a path per cmd

    @cached_property
    def columns(self) -> ObjectColumns:
        """The object table's columns as numpy, for the per-type reductions: made on first use
        (after the clustering, whose peak memory then does not hold them too)."""
        return ObjectColumns.of(self.objects)


@dataclass(frozen=True)
class ObjectColumns:
    """The object table's columns as numpy arrays (times with a presence mask for the nulls)."""

    created: NDArray[np.int64]
    has_created: NDArray[np.bool_]
    first_access: NDArray[np.int64]
    last_access: NDArray[np.int64]
    accessed: NDArray[np.bool_]
    deleted: NDArray[np.int64]
    has_deleted: NDArray[np.bool_]
    accesses: NDArray[np.int64]
    opens: NDArray[np.int64]

    @classmethod
    def of(cls, objects: pl.DataFrame) -> ObjectColumns:
        def times(name: str) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
            col = objects[name]
            return col.fill_null(0).to_numpy(), col.is_not_null().to_numpy()

        created, has_created = times("created_ms")
        first_access, accessed = times("first_access_ms")
        last_access, _ = times("last_access_ms")
        deleted, has_deleted = times("deleted_ms")
        return cls(created=created, has_created=has_created, first_access=first_access, last_access=last_access,
                   accessed=accessed, deleted=deleted, has_deleted=has_deleted,
                   accesses=objects["accesses"].to_numpy(), opens=objects["opens"].to_numpy())


def prepare(events: pl.DataFrame, snapshot: pl.DataFrame | None, config: FitConfig) -> FittedObjects:
    """Classify the trace into objects once; the result is shared by every K tried."""
    if events.height == 0:
        raise TraceError("the trace has no events to fit a profile from")
    t0 = config.window_start_ms if config.window_start_ms is not None else int(events["time_ms"].min())  # type: ignore[arg-type]
    t_end = config.window_end_ms if config.window_end_ms is not None else int(events["time_ms"].max()) + 1  # type: ignore[arg-type]
    if t_end <= t0:
        raise TraceError(f"empty window: start {t0} ms is not before end {t_end} ms")
    first, last = int(events["time_ms"].min()), int(events["time_ms"].max())  # type: ignore[arg-type]
    if first < t0 or last >= t_end:  # copy only when the window really cuts something
        events = events.filter((pl.col("time_ms") >= t0) & (pl.col("time_ms") < t_end))
    if events.height == 0:
        raise TraceError("no events fall inside the requested window")
    usable = events.select(
        (pl.col("allowed").fill_null(False) & pl.col("path").is_not_null() & pl.col("op").is_not_null()).sum()
    ).item()
    if not usable:
        denied = events.height - int(events["allowed"].fill_null(False).sum())
        raise TraceError(
            f"no event to fit a profile from: each of the {events.height:,} events in the window is denied "
            f"(allowed=false: {denied:,}) or names no path (src=null, NameNode-wide commands such as "
            f"saveNamespace: {events['path'].null_count():,})"
        )
    with ThreadPoolExecutor(max_workers=1) as pool:
        op_counts = pool.submit(operation_counts, events)  # on the other core, beside build_view
        view = build_view(events, snapshot, event_tables=False)  # the fit reads objects, gaps and counts only
        counted = op_counts.result()
    pathless = operation_counts(events.filter(pl.col("path").is_null())) if events["path"].null_count() else {}
    if view.objects.height == 0:
        raise TraceError("the trace names no files (only directories or unknown operations)")
    return FittedObjects(
        op_counts=counted,
        pathless_counts=pathless,
        view=view,
        objects=view.objects,
        gaps=view.gaps,
        gap_obj=view.gaps["obj"].to_numpy(),
        gap_ms=view.gaps["gap_ms"].to_numpy(),
        dir_op_counts=view.dir_op_counts,
        t0=t0,
        window_ms=t_end - t0,
        has_snapshot=snapshot is not None and snapshot.height > 0,
        namespace=fit_namespace(view.directories, view.objects["depth"]),
    )


def pathless_stats(counts_without_path: dict[str, int]) -> dict[str, float]:
    """The ``source.trace_stats`` entries that record the allowed events without a path."""
    out = {EVENTS_WITHOUT_PATH: float(sum(counts_without_path.values()))}
    out.update({WITHOUT_PATH_PREFIX + cmd: float(c) for cmd, c in sorted(counts_without_path.items()) if c})
    return out


def operation_counts(events: pl.DataFrame) -> dict[str, int]:
    """Allowed events per audited ``cmd`` (a count per Categorical code, then one text per code).

    Denied events and events without an operation are left out; an operation seen only in them
    does not appear.
    """
    op = events["op"] if events["op"].dtype == pl.Categorical else events["op"].cast(pl.String).cast(pl.Categorical)
    allowed = events["allowed"].fill_null(False)
    codes = op.to_physical().fill_null(0).to_numpy() if op.null_count() else op.to_physical().to_numpy()
    rows: NDArray[np.intp] | None = None  # the rows counted (None: all)
    if op.null_count() or not allowed.all():
        rows = np.flatnonzero(allowed.to_numpy() & op.is_not_null().to_numpy())
        codes = codes[rows]
    if codes.size == 0:
        return {}
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    # one counted row holding each counted code, for its text (a code has one text)
    row_of = np.full(counts.size, -1, dtype=np.int64)
    row_of[codes] = np.arange(codes.size) if rows is None else rows
    names = op.gather(row_of[present]).cast(pl.String).to_list()
    return {str(name): int(c) for name, c in zip(names, counts[present].tolist())}


def _dist(values: np.ndarray, points: int) -> Distribution | None:
    return Distribution.from_samples(values, points) if values.size else None


def _fit_type(type_id: int, cols: ObjectColumns, idx: NDArray[np.intp], gaps: NDArray[np.int64], t0: int,
              n_total: int, points: int) -> FileType:
    """One type's distributions from its objects (``idx``, rows of ``cols``) and access gaps."""
    has_created, accessed, has_deleted = cols.has_created[idx], cols.accessed[idx], cols.has_deleted[idx]
    created = cols.created[idx]
    n_created, n_accessed, n_deleted = int(has_created.sum()), int(accessed.sum()), int(has_deleted.sum())
    create_times = np.sort(created[has_created])
    create_gaps = np.diff(create_times, prepend=t0) if create_times.size else np.empty(0)
    if create_times.size > 1:
        create_gaps = create_gaps[1:]  # the renewal's interarrivals; the first one only when alone
    origin = np.where(has_created, created, t0)
    first_access = cols.first_access[idx][accessed]
    activation = np.maximum(first_access - origin[accessed], 0)
    span = cols.last_access[idx][accessed] - first_access
    delete_age = np.maximum(cols.deleted[idx][has_deleted] - origin[has_deleted], 0)
    type_accesses = cols.accesses[idx]
    accesses = int(type_accesses.sum())
    opens = int(cols.opens[idx].sum())
    weight = n_created / n_total if n_total else 0.0
    files = idx.size
    observed: dict[str, Distribution] = {}
    if n_accessed:
        observed["popularity"] = Distribution.from_samples(type_accesses[accessed], points)
    return FileType(
        id=type_id,
        weight=weight,
        pre_existing=files - n_created,
        create_interarrival=_dist(create_gaps, points) if weight > 0 else None,
        activation_delay=_dist(activation, points),
        active_span=_dist(span, points),
        access_interarrival=_dist(gaps, points) if gaps.size else (Distribution.point(0.0) if n_accessed else None),
        delete_delay=_dist(delete_age, points),
        delete_delay_origin="creation",
        delete_share=n_deleted / files if files else 0.0,
        open_share=opens / accesses if accesses else 1.0,
        accessed_share=n_accessed / files if files else 0.0,
        observed=observed,
    )


def _threads() -> int:
    """Threads for fitting types: ``MAX_THREADS``, or fewer cores when this process has fewer
    (asked when fitting, not at import)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def _groups(keys: NDArray[np.int16], k: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Rows grouped by key 1..k (a stable radix sort) and each group's bounds in that order."""
    order = np.argsort(keys, kind="stable")
    return order, np.searchsorted(keys[order], np.arange(1, k + 2))


def _op_mix(fo: FittedObjects, counts: dict[str, int]) -> OpMix:
    creates = int(fo.columns.has_created.sum())
    accesses = int(fo.columns.accesses.sum())
    dir_counts = fo.dir_op_counts
    file_renames = int(fo.objects["renames"].sum())

    def per(count: int, base: int) -> float:
        return count / base if base else 0.0

    return OpMix(
        dir_list_per_access=per(int(dir_counts.get(LIST, 0)), accesses),
        mkdirs_per_create=per(int(dir_counts.get(MKDIRS, 0)), creates),
        file_renames_per_create=per(file_renames, creates),
        dir_renames_per_create=per(int(dir_counts.get(RENAME, 0)), creates),
        getfileinfo_per_access=per(counts.get(GETFILEINFO, 0), accesses),
        observed_counts=counts,
    )


def profile_from_labels(fo: FittedObjects, labels: np.ndarray, config: FitConfig, k_selection: str) -> WorkloadProfile:
    """Build the profile for a given assignment of objects to types 1..K."""
    k = int(labels.max())
    type_of_obj = np.zeros(int(cast(int, fo.objects["obj"].max())) + 1, dtype=np.int16)
    type_of_obj[fo.objects["obj"].to_numpy()] = labels
    obj_order, obj_bounds = _groups(labels, k)
    gap_order, gap_bounds = _groups(type_of_obj[fo.gap_obj], k)
    n_total = int(fo.columns.has_created.sum())

    def fit_one(type_id: int) -> FileType:
        rows = obj_order[obj_bounds[type_id - 1] : obj_bounds[type_id]]
        type_gaps = fo.gap_ms[gap_order[gap_bounds[type_id - 1] : gap_bounds[type_id]]]
        return _fit_type(type_id, fo.columns, rows, type_gaps, fo.t0, n_total, config.points)

    # the types are independent and their sorts release the GIL: two threads use both cores
    with ThreadPoolExecutor(max_workers=_threads()) as pool:
        types = list(pool.map(fit_one, range(1, k + 1)))
    if n_total:  # exact normalisation: the weights are shares of one integer total
        total = sum(t.weight for t in types)
        types = [t.model_copy(update={"weight": t.weight / total}) for t in types]
    counts = fo.op_counts
    inferred = not fo.has_snapshot
    notes = []
    if inferred:
        notes.append("no snapshot: pre-existing files inferred as files accessed but not created in the window")
    source = ProfileSource(
        kind="fitted",
        inputs=list(config.inputs),
        tool_version=__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seed=config.seed,
        k_selection=k_selection,
        pre_existing_inferred=inferred,
        notes=notes,
        trace_stats={**config.trace_stats, "objects": float(fo.objects.height), "directories": float(fo.view.directories.len()),
                     **pathless_stats(fo.pathless_counts)},
    )
    return WorkloadProfile(
        name=config.name,
        source=source,
        window_ms=fo.window_ms,
        total_creates=n_total,
        types=types,
        op_mix=_op_mix(fo, counts),
        namespace=fo.namespace,
    )


def fit_profile(events: pl.DataFrame, snapshot: pl.DataFrame | None, config: FitConfig) -> WorkloadProfile:
    """Fit a profile with K types, or choose K automatically (``config.types == "auto"``)."""
    fo = prepare(events, snapshot, config)
    features = feature_matrix(fo.objects, fo.t0, fo.window_ms)
    if config.types == "auto":
        from mimesisbench.model.selection import choose_k  # scipy.stats is loaded only for auto K

        choice = choose_k(
            popularity(fo.objects),
            features,
            lambda labels, note: profile_from_labels(fo, labels, config, note).types,
            candidates=config.auto_candidates,
            ks_target=config.auto_ks_target,
            seed=config.seed,
        )
        return profile_from_labels(fo, choice.labels, config, choice.describe())
    k = int(config.types)
    clustering = cluster_objects(features, k, config.seed)
    note = f"K={k} requested" + (f", {clustering.k} distinct behaviours found" if clustering.k < k else "")
    return profile_from_labels(fo, clustering.labels, config, note)
