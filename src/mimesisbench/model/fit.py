"""Fit a workload profile (the paper's Table 1) from a canonical event table and a snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import polars as pl

from mimesisbench import __version__
from mimesisbench.errors import TraceError
from mimesisbench.model.clustering import cluster_objects, feature_matrix
from mimesisbench.model.namespace_shape import fit_namespace
from mimesisbench.model.objects import GETFILEINFO, LIST, MKDIRS, RENAME, ObjectView, build_view
from mimesisbench.profile import Distribution, FileType, NamespaceShape, OpMix, ProfileSource, WorkloadProfile
from mimesisbench.profile.distribution import DEFAULT_POINTS


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


@dataclass(frozen=True)
class FittedObjects:
    """The per-object view of a trace, with the window it was cut to (reused across K)."""

    view: ObjectView
    objects: pl.DataFrame  # object table restricted to the window
    gaps: pl.DataFrame  # obj, gap_ms
    t0: int
    window_ms: int
    has_snapshot: bool
    op_counts: dict[str, int]  # operations per audit cmd (allowed events in the window)
    namespace: NamespaceShape  # independent of the clustering: fitted once, shared by every K


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
    view = build_view(events, snapshot)
    if view.objects.height == 0:
        raise TraceError("the trace names no files (only directories or unknown operations)")
    return FittedObjects(
        op_counts=operation_counts(events),
        view=view,
        objects=view.objects,
        gaps=view.gaps,
        t0=t0,
        window_ms=t_end - t0,
        has_snapshot=snapshot is not None and snapshot.height > 0,
        namespace=fit_namespace(view.directories, view.objects["depth"]),
    )


def operation_counts(events: pl.DataFrame) -> dict[str, int]:
    """Allowed events per audited ``cmd``."""
    ops = events.filter(pl.col("allowed"))["op"].cast(pl.Categorical).value_counts()
    return {str(op): int(c) for op, c in zip(ops["op"].cast(pl.String), ops["count"])}


def _dist(values: np.ndarray, points: int) -> Distribution | None:
    return Distribution.from_samples(values, points) if values.size else None


def _fit_type(type_id: int, objs: pl.DataFrame, gaps: np.ndarray, t0: int, n_total: int, points: int) -> FileType:
    created = objs.filter(pl.col("created_ms").is_not_null())
    accessed = objs.filter(pl.col("first_access_ms").is_not_null())
    deleted = objs.filter(pl.col("deleted_ms").is_not_null())
    create_times = np.sort(created["created_ms"].to_numpy())
    create_gaps = np.diff(create_times, prepend=t0) if create_times.size else np.empty(0)
    if create_times.size > 1:
        create_gaps = create_gaps[1:]  # the renewal's interarrivals; the first one only when alone
    origin = accessed["created_ms"].fill_null(t0)
    activation = (accessed["first_access_ms"] - origin).clip(lower_bound=0).to_numpy()
    span = (accessed["last_access_ms"] - accessed["first_access_ms"]).to_numpy()
    delete_age = (deleted["deleted_ms"] - deleted["created_ms"].fill_null(t0)).clip(lower_bound=0).to_numpy()
    accesses = int(objs["accesses"].sum())
    opens = int(objs["opens"].sum())
    weight = created.height / n_total if n_total else 0.0
    files = objs.height
    observed: dict[str, Distribution] = {}
    if accessed.height:
        observed["popularity"] = Distribution.from_samples(accessed["accesses"].to_numpy(), points)
    return FileType(
        id=type_id,
        weight=weight,
        pre_existing=objs.height - created.height,
        create_interarrival=_dist(create_gaps, points) if weight > 0 else None,
        activation_delay=_dist(activation, points),
        active_span=_dist(span, points),
        access_interarrival=_dist(gaps, points) if gaps.size else (Distribution.point(0.0) if accessed.height else None),
        delete_delay=_dist(delete_age, points),
        delete_delay_origin="creation",
        delete_share=deleted.height / files if files else 0.0,
        open_share=opens / accesses if accesses else 1.0,
        accessed_share=accessed.height / files if files else 0.0,
        observed=observed,
    )


def _op_mix(view: ObjectView, objects: pl.DataFrame, counts: dict[str, int]) -> OpMix:
    creates = int(objects["created_ms"].is_not_null().sum())
    accesses = int(objects["accesses"].sum())
    dir_ops = view.dir_events["op"].value_counts()
    dir_counts = dict(zip(dir_ops["op"].to_list(), dir_ops["count"].to_list()))
    file_renames = int(objects["renames"].sum())

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
    objects = fo.objects.with_columns(pl.Series("type", labels))
    type_of_obj = np.zeros(int(objects["obj"].max()) + 1, dtype=np.int16)
    type_of_obj[objects["obj"].to_numpy()] = labels
    gap_types = type_of_obj[fo.gaps["obj"].to_numpy()]
    gap_values = fo.gaps["gap_ms"].to_numpy()
    gap_order = np.argsort(gap_types, kind="stable")
    gap_bounds = np.searchsorted(gap_types[gap_order], np.arange(1, int(labels.max()) + 2))
    by_type = objects.partition_by("type", as_dict=True)
    n_total = int(objects["created_ms"].is_not_null().sum())
    types: list[FileType] = []
    for type_id in range(1, int(labels.max()) + 1):
        objs = by_type[(type_id,)]
        type_gaps = gap_values[gap_order[gap_bounds[type_id - 1] : gap_bounds[type_id]]]
        types.append(_fit_type(type_id, objs, type_gaps, fo.t0, n_total, config.points))
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
        trace_stats={**config.trace_stats, "objects": float(objects.height), "directories": float(fo.view.directories.len())},
    )
    return WorkloadProfile(
        name=config.name,
        source=source,
        window_ms=fo.window_ms,
        total_creates=n_total,
        types=types,
        op_mix=_op_mix(fo.view, objects, counts),
        namespace=fo.namespace,
    )


def fit_profile(events: pl.DataFrame, snapshot: pl.DataFrame | None, config: FitConfig) -> WorkloadProfile:
    """Fit a profile with K types, or choose K automatically (``config.types == "auto"``)."""
    fo = prepare(events, snapshot, config)
    features = feature_matrix(fo.objects, fo.t0, fo.window_ms)
    if config.types == "auto":
        from mimesisbench.model.selection import choose_k

        choice = choose_k(fo, features, config)
        return profile_from_labels(fo, choice.labels, config, choice.describe())
    k = int(config.types)
    clustering = cluster_objects(features, k, config.seed)
    note = f"K={k} requested" + (f", {clustering.k} distinct behaviours found" if clustering.k < k else "")
    return profile_from_labels(fo, clustering.labels, config, note)
