"""How faithfully a schedule reproduces a profile (``--profile``) or a trace (``--trace``).

Every distance is named ``ks_*`` and lies in [0, 1]. Against a profile, generated samples are
compared with the profile's own distributions (one-sample KS, corrected for what the window
lets one see, see ``kstats``); against a trace, features of both event tables are computed by
``mimesisbench.model.objects`` and compared two-sample. The paper's bar: KS popularity < 0.04.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench.errors import TraceError
from mimesisbench.model.objects import ObjectView, build_view, popularity
from mimesisbench.profile.schema import FileType, WorkloadProfile
from mimesisbench.schedule import Schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.audit import schedule_to_events
from mimesisbench.synth.by_command import MIN_SAMPLES, by_command, classify, command_samples, without_ks
from mimesisbench.synth.coverage import coverage_of_events, coverage_of_profile
from mimesisbench.synth.features import (
    FileFeatures,
    command_shares,
    depth_shares_of,
    file_features,
    lifecycle_events,
    op_counts,
)
from mimesisbench.synth.kstats import (
    Cdf,
    censored,
    discrete_ks,
    ks_distance,
    ks_two,
    mixture,
    pool_floor,
    truncated,
    truncated_floor,
    truncated_seen,
)
from mimesisbench.synth.namespace import Namespace, depth_shares
from mimesisbench.synth.options import GenerateOptions, effective_profile

#: the paper's bar for the popularity distribution
POPULARITY_BAR = 0.04
#: validate notes the types whose spans the window is expected to cut more often than this
CUT_SPAN_NOTE = 0.05
#: validate notes the types whose ks_interarrival floor (``interarrival_by_population``) exceeds this
FLOOR_NOTE = 0.02
MS = 1000.0  # us per ms

FEATURES = ("ks_create_interarrival", "ks_activation", "ks_span", "ks_interarrival", "ks_delete", "ks_popularity")


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def _ks(samples: NDArray[np.float64], cdf: Cdf | None) -> float | None:
    if cdf is None or samples.size == 0:
        return None
    return ks_distance(samples, cdf)


class _TypeView:
    """The samples of one type and the window-corrected CDFs they should follow."""

    def __init__(self, t: FileType, f: FileFeatures, window_us: int, create_times: NDArray[np.int64]) -> None:
        self.t = t
        mask = f.of_type(t.id)
        self.n_files = int(mask.sum())
        origin, first, last, deleted = f.origin[mask], f.first[mask], f.last[mask], f.deleted[mask]
        seen = first >= 0
        self.creates = create_times
        self.activation = first[seen] - origin[seen]
        self.activation_limits = (window_us - origin) / MS
        # H_j of a profile whose spans describe created files only (the 2014 format) is compared
        # with the created files' spans; pre-existing files follow another rule (streams.py)
        spanned = seen & ~f.pre[mask] if t.span_population == "created" else seen
        self.span = last[spanned] - first[spanned]
        self.span_limits = (window_us - first[spanned]) / MS
        of_type = f.ftype[f.gaps_file] == t.id
        self.gaps = f.gaps[of_type]
        self.gap_limits = (window_us - f.gaps_prev[of_type]) / MS
        self.gap_pre = f.pre[f.gaps_file[of_type]]
        self.popularity = f.accesses[mask][seen]
        if t.delete_delay_origin == "last_access":
            del_origin = np.where(seen, last, origin)
            self.delete_floors = None
        else:  # 2014 rule: age at deletion max(D, last access + 1 ms - creation)
            del_origin = origin
            self.delete_floors = np.where(seen, last - origin + 1000, 0) / MS
        gone = deleted >= 0
        self.delete = deleted[gone] - del_origin[gone]
        self.delete_limits = (window_us - del_origin) / MS

    def cdfs(self) -> dict[str, Cdf | None]:
        t = self.t
        out: dict[str, Cdf | None] = {k: None for k in FEATURES}
        if t.create_interarrival is not None:
            out["ks_create_interarrival"] = t.create_interarrival.cdf
        if t.activation_delay is not None:
            out["ks_activation"] = truncated(t.activation_delay.cdf, self.activation_limits)
        if t.active_span is not None:
            out["ks_span"] = censored(t.active_span.cdf, self.span_limits)
        if t.access_interarrival is not None:
            # a gap is seen only when it ends inside the window
            out["ks_interarrival"] = truncated_seen(t.access_interarrival.cdf, self.gap_limits)
        if t.delete_delay is not None and t.delete_share > 0:
            if self.delete_floors is None:
                out["ks_delete"] = truncated(t.delete_delay.cdf, self.delete_limits)
            else:
                out["ks_delete"] = truncated_floor(t.delete_delay.cdf, self.delete_floors, self.delete_limits)
        if "popularity" in t.observed:
            out["ks_popularity"] = t.observed["popularity"].cdf
        return out

    def interarrival_by_population(self, pooled: Cdf | None) -> dict[str, Any]:
        """KS of F_j over the pre-existing and the created files' gaps apart (window-corrected):
        with ``span_population`` 'created' the two follow different rules (streams.py). Also
        ``floor``: the least ``ks_interarrival`` that any gaps of the pre-existing files could
        give with the created files' gaps as they are (their spans exact), a bound of the data's.
        ``pooled``: the window-corrected F_j of all the type's gaps (``cdfs()``)."""
        f = self.t.access_interarrival
        out: dict[str, Any] = {}
        for name, sel in (("pre_existing", self.gap_pre), ("created", ~self.gap_pre)):
            gaps = self.gaps[sel] / MS
            cdf = None if f is None else truncated_seen(f.cdf, self.gap_limits[sel])
            out[name] = {"ks": _round(_ks(gaps, cdf)), "n": int(gaps.size)}
        made = ~self.gap_pre
        floor = None
        if pooled is not None and self.gaps.size:
            share = float(np.count_nonzero(made)) / self.gaps.size
            floor = pool_floor(self.gaps[made] / MS, share, pooled)
        out["floor"] = _round(floor)
        return out

    def samples(self) -> dict[str, NDArray[np.float64]]:
        """Times in ms, popularity in accesses per file."""
        return {
            "ks_create_interarrival": np.diff(self.creates, prepend=0) / MS,
            "ks_activation": self.activation / MS,
            "ks_span": self.span / MS,
            "ks_interarrival": self.gaps / MS,
            "ks_delete": self.delete / MS,
            "ks_popularity": self.popularity.astype(np.float64),
        }


def validate_profile(tables: Schedule, profile: WorkloadProfile) -> dict[str, Any]:
    """Fidelity of a schedule to the profile it was generated from (options re-applied)."""
    options = GenerateOptions.from_manifest(tables.manifest.get("options", {}))
    eff = effective_profile(profile, options)
    window_us = int(tables.manifest.get("window_ms", 0)) * 1000
    f = file_features(tables, [t.id for t in eff.file_types if t.commands is not None])
    cmd_shares = command_shares(tables) if any(t.commands is not None or t.kind == "directory" for t in eff.types) else {}
    notes: list[str] = []
    timing = window_us > 0
    if not timing:
        notes.append("time scale 0: every time is 0, so timing distributions are not compared")
    ev = tables.events
    cr = ev.filter(pl.col("op") == 1)
    cr_time = cr.get_column("time_us").to_numpy()
    cr_type = cr.get_column("type").to_numpy()

    types: dict[str, dict[str, Any]] = {}
    cut_spans: list[tuple[int, float]] = []  # (type, expected share of spans the window cuts)
    pooled: dict[str, list[tuple[NDArray[np.float64], Cdf | None]]] = {k: [] for k in FEATURES}
    total_created = max(int(cr_time.size), 1)
    drawn = sum(int(round(t.weight * eff.total_creates)) for t in eff.file_types)
    for t in eff.file_types:
        view = _TypeView(t, f, window_us, cr_time[cr_type == t.id])
        cdfs, samples = view.cdfs(), view.samples()
        if t.active_span is not None and view.span_limits.size:
            cut_spans.append((t.id, float(np.mean(1.0 - t.active_span.cdf(view.span_limits)))))
        row: dict[str, Any] = {}
        for key in FEATURES:
            use = timing or key == "ks_popularity"
            row[key] = _round(_ks(samples[key], cdfs[key])) if use else None
            row["n_" + key.removeprefix("ks_")] = int(samples[key].size)
            if use:
                pooled[key].append((samples[key], cdfs[key]))
        if t.span_population == "created" and timing:
            row["interarrival_by_population"] = view.interarrival_by_population(cdfs["ks_interarrival"])
        row["weight_profile"] = round(t.weight, 6)
        row["weight_generated"] = round(view.creates.size / total_created, 6)
        row["creates"] = int(view.creates.size)
        row["creates_target"] = int(round(t.weight * eff.total_creates))
        row["files"] = view.n_files
        if t.commands is not None:
            row["commands"] = _command_rows(t, cmd_shares.get(t.id, {}))
        types[str(t.id)] = row
    for t in eff.directory_types:
        types[str(t.id)] = _directory_row(t, tables, cmd_shares.get(t.id, {}), eff.created_directories)

    cut = [f"{tid} ({share:.0%})" for tid, share in cut_spans if share > CUT_SPAN_NOTE]
    if timing and cut:
        notes.append(
            f"the window's end cuts many access streams of type(s) {', '.join(cut)}: the shares of spans "
            "expected to be longer than the time left after their first access; ks_span counts a cut span as lasting "
            "to the window's end while the schedule shows the last access before it, so ks_span (and "
            "ks_delete) are not meaningful there: generate with a --duration longer than the spans to "
            "measure H_j and D_j"
        )
    bound = [
        f"{tid} ({row['interarrival_by_population']['floor']:.3f})"
        for tid, row in types.items()
        if (row.get("interarrival_by_population", {}).get("floor") or 0.0) > FLOOR_NOTE
    ]
    if bound:
        notes.append(
            f"ks_interarrival of type(s) {', '.join(bound)} cannot come nearer F_j than these floors: the created "
            "files' gaps, bound by their exact spans (H_j), are more of the pool than any gaps of the pre-existing "
            "files can offset (docs/generate.md, balanced pre-existing gaps)"
        )
    result: dict[str, Any] = {"mode": "profile", "profile": eff.name}
    for key in ("ks_popularity", "ks_interarrival", "ks_span", "ks_activation", "ks_delete", "ks_create_interarrival"):
        parts = [(s, c) for s, c in pooled[key] if c is not None and s.size]
        cdf = mixture([c for _, c in parts], [s.size for s, _ in parts])
        result[key] = _round(_ks(np.concatenate([s for s, _ in parts]), cdf)) if parts else None
    if result["ks_popularity"] is None:
        notes.append("ks_popularity: the profile has no observed popularity distribution")
    # depths deeper than the schedule's tree allows are folded into its deepest, as generated
    depths, shares = depth_shares(eff.namespace, _depth_only(tables))
    expected = {int(d): float(s) for d, s in zip(depths, shares)}
    observed = depth_shares_of(f.depth)
    if options.flat:
        notes.append("flat namespace: every file is at depth 1")
    if observed:
        result["ks_depth"] = _round(discrete_ks(observed, expected))
        result["depth_share_max_abs_error_pp"] = _round(
            100 * max(abs(observed.get(d, 0.0) - expected.get(d, 0.0)) for d in set(observed) | set(expected))
        )
    else:
        result["ks_depth"] = result["depth_share_max_abs_error_pp"] = None
        notes.append("the schedule names no file")
    result["type_weight_max_abs_error_pp"] = _round(
        100 * max(abs(r["weight_profile"] - r["weight_generated"]) for r in types.values() if "weight_profile" in r)
    ) if cr_time.size and eff.file_types else None
    kept = cr_time.size / drawn if drawn else 1.0
    result["creates_in_window_share"] = _round(kept)
    if drawn and kept < 0.99:
        notes.append(
            f"only {kept:.1%} of the round(w_j n) creates fit in the window (renewal process cut at its end): "
            "type weights among the created files follow the C_j rates, not w_j"
        )
    result["opmix_max_abs_error"] = _round(_opmix_error(eff, op_counts(tables), f))
    per_type = [v for row in types.values() for k, v in row.items() if k.startswith("ks_") and v is not None]
    result["max_type_ks"] = _round(max(per_type)) if per_type else None
    result["popularity_bar"] = POPULARITY_BAR
    result["coverage"], coverage_line = profile_coverage(profile)
    notes.append(coverage_line)
    result["types"] = types
    result["notes"] = notes
    return result


def _command_rows(t: FileType, generated: dict[str, float]) -> dict[str, dict[str, float | None]]:
    """Per command of the type's chain (and any other the schedule holds): the chain's observed
    share and the generated share among the type's accesses."""
    chain = dict(zip(t.commands.commands, t.commands.share)) if t.commands is not None else {}
    out: dict[str, dict[str, float | None]] = {}
    for cmd in sorted(set(chain) | set(generated)):
        want, got = chain.get(cmd), generated.get(cmd, 0.0)
        out[cmd] = {"profile_share": _round(want), "schedule_share": _round(got)}
    return out


def _directory_row(t: FileType, tables: Schedule, generated: dict[str, float], made_total: int) -> dict[str, Any]:
    """A directory type's figures: objects, created ones against round(w_j * created_directories),
    popularity (accesses per object) against the observed one, and the command shares."""
    ev = tables.events.filter(pl.col("type") == t.id)
    op = ev.get_column("op").to_numpy()
    target = ev.get_column("target").to_numpy().astype(np.int64)
    dir_ev = np.isin(op, [int(o) for o in OpCode if o.on_directory])
    made = int(np.count_nonzero(op == OpCode.MKDIRS))
    kinds = np.where(dir_ev, 1, 0).astype(np.uint8)
    acc = dir_ev & ~lifecycle_events(op, target, kinds)
    _, per_object = np.unique(target[acc], return_counts=True)
    pop = t.observed.get("popularity")
    row: dict[str, Any] = {
        "kind": "directory",
        "objects": int(np.unique(target[dir_ev]).size),
        "creates": made,
        "creates_target": int(round(t.weight * made_total)),
        "accesses": int(np.count_nonzero(acc)),
        "ks_popularity": _round(_ks(per_object.astype(np.float64), pop.cdf)) if pop is not None else None,
        "n_popularity": int(per_object.size),
    }
    if t.commands is not None or generated:
        row["commands"] = _command_rows(t, generated)
    return row


def _depth_only(tables: Schedule) -> Namespace:
    """A stand-in namespace with the schedule's own pre-existing depths (for folding deep shares)."""
    dirs = tables.directories.filter(pl.col("pre_existing"))
    depth = dirs.get_column("depth").to_numpy().astype(np.int16)
    zeros = np.zeros(depth.size, dtype=np.int32)
    return Namespace(zeros, depth, zeros.astype(np.int16), dirs.get_column("path"))


def _opmix_error(p: WorkloadProfile, counts: dict[str, int], f: FileFeatures) -> float:
    creates = counts["create"]
    accesses = counts["open"] + counts["list_file"]
    mix = p.op_mix
    errors = []
    if creates:
        errors += [
            abs(counts["mkdirs"] / creates - mix.mkdirs_per_create),
            abs(counts["rename_file"] / creates - mix.file_renames_per_create),
            abs(counts["rename_dir"] / creates - mix.dir_renames_per_create),
        ]
    if accesses:
        errors += [
            abs(counts["getfileinfo"] / accesses - mix.getfileinfo_per_access),
            abs(counts["list_dir"] / accesses - mix.dir_list_per_access),
        ]
        per_type_acc = {t.id: int(f.accesses[f.ftype == t.id].sum()) for t in p.types}
        expected_open = sum(t.open_share * per_type_acc[t.id] for t in p.types) / accesses
        errors.append(abs(counts["open"] / accesses - expected_open))
    return max(errors) if errors else 0.0


# ---------------------------------------------------------------------------- against a trace
def read_trace_events(paths: Sequence[str | Path]) -> pl.DataFrame:
    """Audit logs (or event files) -> one canonical event table, via ``trace.reader.read_trace``."""
    from mimesisbench.trace.reader import read_trace

    for p in paths:
        if not Path(p).exists():
            raise TraceError(f"--trace: {p} does not exist")
    events, _report = read_trace([Path(p) for p in paths])
    return events


def _trace_features(view: ObjectView) -> dict[str, NDArray[np.float64]]:
    obj = view.objects
    accessed = obj.filter(pl.col("accesses") > 0)
    created = obj.filter(pl.col("created_ms").is_not_null())
    created_first = created.filter(pl.col("first_access_ms").is_not_null())
    deleted = obj.filter(pl.col("deleted_ms").is_not_null() & pl.col("created_ms").is_not_null())
    create_times = np.sort(created.get_column("created_ms").to_numpy())
    return {
        "ks_popularity": popularity(obj).astype(np.float64),
        "ks_interarrival": view.gaps["gap_ms"].to_numpy().astype(np.float64),
        "ks_span": (accessed["last_access_ms"] - accessed["first_access_ms"]).to_numpy().astype(np.float64),
        "ks_activation": (created_first["first_access_ms"] - created_first["created_ms"]).to_numpy().astype(np.float64),
        "ks_delete": (deleted["deleted_ms"] - deleted["created_ms"]).to_numpy().astype(np.float64),
        "ks_create_interarrival": np.diff(create_times).astype(np.float64),
        "ks_depth": obj.get_column("depth").to_numpy().astype(np.float64),
    }


def _load_per_second(events: pl.DataFrame) -> NDArray[np.float64]:
    """Operations (allowed) in each second from the first to the last: the offered load, whose
    law over the window (``ks_load``) shows what per-object figures cannot, how the load
    clumps in time (bursts, a trend over the window)."""
    ok = events.filter(pl.col("allowed")) if "allowed" in events.columns else events
    times = ok.get_column("time_ms").to_numpy().astype(np.int64)
    if times.size == 0:
        return np.empty(0, dtype=np.float64)
    return np.bincount((times - times.min()) // 1000).astype(np.float64)


def _op_shares(events: pl.DataFrame) -> dict[str, float]:
    ok = events.filter(pl.col("allowed")) if "allowed" in events.columns else events
    counts = ok.group_by(pl.col("op").cast(pl.String)).len()
    total = max(int(counts.get_column("len").sum()), 1)
    ops, lens = counts.get_column("op").to_list(), counts.get_column("len").to_list()
    return {str(o): int(c) / total for o, c in zip(ops, lens)}


def _commands_of(events: pl.DataFrame) -> frozenset[str]:
    """The audited commands an event table holds."""
    names = events.get_column("op").drop_nulls().cast(pl.String).unique().to_list()
    return frozenset(str(n) for n in names)


def validate_trace(tables: Schedule, trace_events: pl.DataFrame) -> dict[str, Any]:
    """Fidelity of a schedule to a trace: two-sample KS between per-file features of both, the
    same per audited command (``by_command``), and the share of the trace's operations whose
    command the schedule holds (``coverage``)."""
    mine_events = schedule_to_events(tables)
    # the schedule's directories are known: a leaf directory deleted untouched (a job's output
    # tree, made and removed) shows no child in its events and would otherwise pass for a file
    mine_view = build_view(mine_events, known_directories=tables.directories.get_column("path"))
    their_view = build_view(trace_events)
    mine = _trace_features(mine_view)
    theirs = _trace_features(their_view)
    result: dict[str, Any] = {"mode": "trace"}
    for key in mine:
        result[key] = _round(ks_two(mine[key], theirs[key]))
        result["n_" + key.removeprefix("ks_")] = {"schedule": int(mine[key].size), "trace": int(theirs[key].size)}
    load_mine, load_theirs = _load_per_second(mine_events), _load_per_second(trace_events)
    result["ks_load"] = _round(ks_two(load_mine, load_theirs))
    result["n_load"] = {"schedule": int(load_mine.size), "trace": int(load_theirs.size)}
    a, b = _op_shares(mine_events), _op_shares(trace_events)
    diffs = [abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b)]
    result["opmix_max_abs_error"] = _round(max(diffs, default=0.0))
    result["popularity_bar"] = POPULARITY_BAR
    # the schedule's manifest names its profile by hash only: the commands it models are those it holds
    coverage = coverage_of_events(trace_events, modelled=_commands_of(mine_events))
    result["coverage"] = coverage.to_dict()
    table = by_command(
        command_samples(classify(trace_events, their_view)),
        command_samples(classify(mine_events, mine_view)),
    )
    result["by_command"] = table
    result["types"] = {}
    notes = ["a trace has no file types: no per-type breakdown", coverage.line()]
    missing = without_ks(table)
    if missing:
        notes.append(
            f"by_command: ks_popularity or ks_interarrival is null for {', '.join(missing)}: fewer than "
            f"{MIN_SAMPLES} samples (objects, or gaps between one object's events) on one side"
        )
    result["notes"] = notes
    return result


def profile_coverage(profile: WorkloadProfile) -> tuple[dict[str, Any] | None, str]:
    """``validate --profile``'s ``coverage`` (None when the profile records no operation counts)
    and a line saying it."""
    coverage = coverage_of_profile(profile)
    if coverage is None:
        return None, (
            "coverage: the profile records no operation counts of its trace (op_mix.observed_counts; "
            "a 2014 import or a hand-made profile), so the share of the trace it models is unknown"
        )
    return coverage.to_dict(), coverage.line()
