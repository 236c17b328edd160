"""Fit a workload profile (the paper's Table 1, format 2) from a canonical event table and a snapshot.

Objects are files and directories (``model.objects``); each kind is clustered apart into types
(file types 1..Kf, directory types Kf+1..Kf+Kd). Per type: the paper's distributions over the
objects' accesses (every event but the one that made an object and the one that removed it), and
a ``CommandChain``: which command each access is, in Markov order, with per-transition gap laws
where a transition has at least ``MIN_TRANSITION_GAPS`` samples. Commands without a path become
``pathless`` renewal streams. The op-mix ratios are 0 (the objects' streams carry every command);
the observed counts are kept.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench import __version__
from mimesisbench.errors import ConfigError, TraceError
from mimesisbench.handover import Handover, owned
from mimesisbench.model.clustering import Clustering, cluster_objects, feature_matrix
from mimesisbench.model.covisits import fit_covisits
from mimesisbench.model.namespace_shape import fit_namespace
from mimesisbench.model.objects import ObjectView, build_view
from mimesisbench.profile import Distribution, FileType, NamespaceShape, OpMix, ProfileSource, WorkloadProfile
from mimesisbench.profile.distribution import DEFAULT_POINTS
from mimesisbench.profile.schema import (
    GAP_CODE_CHARS,
    GAP_CODE_LEVELS,
    MAX_COMMANDS,
    MAX_KEPT_STREAM_ACCESSES,
    MAX_SEQUENCE_LENGTH,
    NO_CODE,
    STREAM_ALPHABET,
    ChainWalk,
    CommandChain,
    PathlessCommand,
)

#: at most this many threads fit the per-type distributions (numpy sorts release the GIL)
MAX_THREADS = 4
#: ``source.trace_stats`` keys: the allowed events without a path (``src=null``), in all and per
#: command (``WITHOUT_PATH_PREFIX`` + cmd, commands with some only), so that the share of the
#: operations naming a path that the profile models can be told from ``op_mix.observed_counts``
EVENTS_WITHOUT_PATH = "events_without_path"
WITHOUT_PATH_PREFIX = "without_path."
#: ``source.trace_stats`` keys: accesses left out of the model per command (``NOT_MODELLED_PREFIX`` +
#: cmd: a command a schedule cannot hold for its object's kind, see ``schedule.format.opcode_for``)
NOT_MODELLED_PREFIX = "not_modelled."
#: a transition of a type's chain keeps its own gap law from this many gaps on
MIN_TRANSITION_GAPS = 30
#: transitions each of a type's long and short walked streams need for a walk law of their own
MIN_WALK_TRANSITIONS = 100
#: a command index + 1 is one digit of a short stream's code (``_sequences``): RADIX**10 < 2**63
_SEQUENCE_RADIX = MAX_COMMANDS + 1
#: a type keeps the short streams' command sequences (``_sequences``) seen on at least this many
#: objects, at most this many per type
MIN_SEQUENCE_OBJECTS = 2
MAX_SEQUENCES = 64
#: kept streams' gaps coded at a time (``_stream_gap_codes``: bounds its float temporaries)
CODE_CHUNK = 1 << 13
#: a chain's command i as one byte of a kept stream (``_kept_streams``)
_STREAM_CHARS = np.frombuffer(STREAM_ALPHABET.encode("ascii"), dtype=np.uint8)
#: the trace's most frequent access commands (per kind) whose shares are clustering features
TOP_COMMANDS = 6
KINDS = ("file", "directory")
#: object columns the fit does not read once the namespace is fitted (dropped from its table)
UNREAD_COLUMNS = ("renames", "depth")


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

    view: ObjectView  # without the event table (see ``build_view``)
    objects: pl.DataFrame  # object table restricted to the window
    t0: int
    window_ms: int
    has_snapshot: bool
    op_counts: dict[str, int]  # operations per audit cmd (allowed events in the window)
    namespace: NamespaceShape  # independent of the clustering: fitted once, shared by every K
    # the access table as numpy, grouped by object (the object table's row order), time order within
    # one: object row r's accesses are rows acc_start[r] to acc_start[r + 1] (its ``accesses`` count)
    acc_start: NDArray[np.int64]
    acc_time: NDArray[np.signedinteger]  # ms since an origin (int32 for a trace under 2**31 ms): only differences are read
    acc_cmd: NDArray[np.integer]  # index into ``view.commands``
    pathless: list[PathlessCommand] = field(default_factory=list)
    pathless_counts: dict[str, int] = field(default_factory=dict)  # allowed events without a path per cmd

    @cached_property
    def columns(self) -> ObjectColumns:
        """The object table's columns as numpy, for the per-type reductions: made on first use
        (after the clustering, whose peak memory then does not hold them too)."""
        return ObjectColumns.of(self.objects)

    @cached_property
    def is_dir(self) -> NDArray[np.bool_]:
        return self.objects["is_dir"].to_numpy()

    def rows(self, kind: str) -> NDArray[np.intp]:
        """Rows of the object table of one kind ("file" or "directory")."""
        return np.flatnonzero(self.is_dir if kind == "directory" else ~self.is_dir)

    def access_object_rows(self, at: slice) -> NDArray[np.int32]:
        """The object row of each access of the rows ``at`` (a slice of the access table)."""
        start, stop = at.start or 0, min(at.stop, int(self.acc_start[-1]))
        if stop <= start:
            return np.empty(0, dtype=np.int32)
        first = int(np.searchsorted(self.acc_start, start, "right")) - 1
        last = int(np.searchsorted(self.acc_start, stop - 1, "right")) - 1
        bounds = np.clip(self.acc_start[first : last + 2], start, stop)
        return np.repeat(np.arange(first, last + 1, dtype=np.int32), np.diff(bounds))

    def access_rows(self, rows: NDArray[np.intp]) -> NDArray[np.signedinteger]:
        """The access rows of the objects of ``rows`` (object rows, ascending), in the table's
        order: each object's run of accesses, one after the other."""
        starts, lengths = self.acc_start[rows], self.acc_start[rows + 1] - self.acc_start[rows]
        total = int(lengths.sum())
        dtype = np.int32 if self.acc_time.size < 2**31 else np.int64
        # each row's offset from its run's start, plus the start: a run at a time without a loop
        shift = (starts - (np.cumsum(lengths) - lengths)).astype(dtype)
        return np.arange(total, dtype=dtype) + np.repeat(shift, lengths)

    @cached_property
    def top_commands(self) -> dict[str, list[int]]:
        """Per kind, its most frequent access commands (indices into ``view.commands``), at most
        ``TOP_COMMANDS``, most frequent first."""
        n_cmds = len(self.view.commands)
        per_kind = np.zeros((n_cmds, 2), dtype=np.int64)
        for at in _chunks(self.acc_cmd.size):  # a chunk's keys at a time, not 8 bytes per access at once
            keys = self.acc_cmd[at].astype(np.int64) * 2 + self.is_dir[self.access_object_rows(at)]
            per_kind += np.bincount(keys, minlength=2 * n_cmds).reshape(n_cmds, 2)

        def top(col: int) -> list[int]:
            counts = per_kind[:, col]
            order = np.lexsort((np.arange(n_cmds), -counts))
            return [int(c) for c in order[:TOP_COMMANDS] if counts[c] > 0]

        return {"file": top(0), "directory": top(1)}

    def features(self) -> dict[str, NDArray[np.float64]]:
        """The clustering features of each kind's objects (rows ``rows(kind)``; kinds without
        objects left out). The last columns, the shares of the kind's top commands in each
        object's accesses, are counted into the matrix itself a chunk of accesses at a time (no
        count per object and command beside it), then divided by the object's accesses."""
        tops = self.top_commands
        union = sorted(set(tops["file"]) | set(tops["directory"]))
        slot = np.full(len(self.view.commands), len(union), dtype=np.int64)  # the last slot: every other command
        slot[union] = np.arange(len(union))
        width = len(union) + 1
        out: dict[str, NDArray[np.float64]] = {}
        position = np.zeros(self.objects.height, dtype=np.int64)  # each object row's row in its kind's matrix
        for kind in KINDS:
            rows = self.rows(kind)
            if rows.size:
                out[kind] = feature_matrix(self.objects, self.t0, self.window_ms, kind=kind, rows=rows,
                                           extra_columns=len(tops[kind]))
                out[kind][:, out[kind].shape[1] - len(tops[kind]) :] = 0.0
                position[rows] = np.arange(rows.size)
        for at in _chunks(self.acc_cmd.size):
            obj = self.access_object_rows(at)  # ascending
            lo, hi = int(obj[0]), int(obj[-1])
            keys = (obj - lo).astype(np.int64) * width + slot[self.acc_cmd[at]]
            block = np.bincount(keys, minlength=(hi - lo + 1) * width).reshape(hi - lo + 1, width)
            for kind, matrix in out.items():
                sel = np.flatnonzero(self.is_dir[lo : hi + 1] == (kind == "directory"))
                first = matrix.shape[1] - len(tops[kind])
                for j, c in enumerate(tops[kind]):  # counts are exact in float64
                    matrix[position[lo + sel], first + j] += block[sel, union.index(c)]
        accesses = self.objects["accesses"].to_numpy()
        for kind, matrix in out.items():
            first = matrix.shape[1] - len(tops[kind])
            matrix[:, first:] /= np.maximum(accesses[self.rows(kind)], 1).astype(np.float64)[:, None]
        return out


#: access rows whose keys are made at a time when counting (a few bytes of temporaries per row of
#: one chunk, not per access of the trace)
COUNT_ROWS = 1 << 20


def _chunks(n: int) -> list[slice]:
    """``n`` rows as consecutive slices of at most ``COUNT_ROWS``."""
    return [slice(i, min(i + COUNT_ROWS, n)) for i in range(0, n, COUNT_ROWS)]


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
    parent_made: NDArray[np.bool_]

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
                   accesses=objects["accesses"].to_numpy(), opens=objects["opens"].to_numpy(),
                   parent_made=objects["parent_made"].to_numpy())


def prepare(events: pl.DataFrame | Handover[pl.DataFrame], snapshot: pl.DataFrame | None, config: FitConfig) -> FittedObjects:
    """Classify the trace into objects once; the result is shared by every K tried. ``events``
    handed over (``Handover``) is dropped once read: the fit's peak memory is then without it."""
    events = owned(events)
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
    pathless_counts: dict[str, int] = {}
    pathless: list[PathlessCommand] = []
    if events["path"].null_count():
        without = events.filter(pl.col("path").is_null())
        pathless_counts = operation_counts(without)
        pathless = pathless_commands(without, config.points)
        del without
    with ThreadPoolExecutor(max_workers=1) as pool:
        op_counts = pool.submit(operation_counts, events)  # on the other core, beside build_view
        handed = Handover(events)  # build_view holds the table alone (with the count, while it runs)
        del events
        # the fit reads objects and accesses only; accesses a schedule cannot hold are left out
        view = build_view(handed, snapshot, event_tables=False, modelled_only=True, object_paths=False,
                          relative_times=True)
        counted = op_counts.result()
    if view.objects.height == 0:
        raise TraceError("the trace names no object (only unknown operations)")
    acc = view.accesses
    acc_time, acc_cmd = acc["time_ms"].to_numpy(), acc["cmd"].to_numpy()
    # the accesses' objects as each object row's run (the objects' ``accesses``), not an id per access
    acc_start = np.concatenate([[0], np.cumsum(view.objects["accesses"].to_numpy())])
    del acc
    namespace = fit_namespace(view.directories, view.objects.filter(~pl.col("is_dir"))["depth"])
    # the fit keeps the accesses as these arrays only, and the object columns it reads
    view = replace(view, accesses=view.accesses.clear(), objects=view.objects.drop(UNREAD_COLUMNS))
    return FittedObjects(
        op_counts=counted,
        pathless_counts=pathless_counts,
        pathless=pathless,
        view=view,
        objects=view.objects,
        acc_start=acc_start,
        acc_time=acc_time,
        acc_cmd=acc_cmd,
        t0=t0,
        window_ms=t_end - t0,
        has_snapshot=snapshot is not None and snapshot.height > 0,
        namespace=namespace,
    )


def pathless_commands(without_path: pl.DataFrame, points: int) -> list[PathlessCommand]:
    """Per command without a path (allowed events): its count and interarrival law (None for a
    command seen once), most frequent first."""
    ok = without_path.filter(pl.col("allowed").fill_null(False) & pl.col("op").is_not_null()).select(
        pl.col("op").cast(pl.String).alias("cmd"), pl.col("time_ms").cast(pl.Int64)
    )
    out: list[PathlessCommand] = []
    for (cmd,), part in sorted(ok.partition_by("cmd", as_dict=True).items(), key=lambda kv: (-kv[1].height, str(kv[0][0]))):
        times = np.sort(part["time_ms"].to_numpy())
        gaps = np.diff(times)
        out.append(PathlessCommand(command=str(cmd), count=int(times.size),
                                   interarrival=Distribution.from_samples(gaps, points) if gaps.size else None))
    return out


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
    counted: NDArray[np.bool_] | None = None  # the rows counted (None: all)
    if op.null_count() or not allowed.all():
        counted = allowed.to_numpy() & op.is_not_null().to_numpy()
    if codes.size == 0 or (counted is not None and not counted.any()):
        return {}
    size = int(codes.max()) + 1
    counts = np.zeros(size, dtype=np.int64)
    # one counted row holding each counted code, for its text (a code has one text); a chunk of
    # rows at a time (no index or intp copy of every row)
    row_of = np.full(size, -1, dtype=np.int64)
    for at in _chunks(codes.size):
        part, rows = codes[at], np.arange(at.start, at.stop)
        if counted is not None:
            part, rows = part[counted[at]], rows[counted[at]]
        counts += np.bincount(part, minlength=size)
        row_of[part] = rows
    present = np.flatnonzero(counts)
    names = op.gather(row_of[present]).cast(pl.String).to_list()
    return {str(name): int(c) for name, c in zip(names, counts[present].tolist())}


def _dist(values: np.ndarray, points: int) -> Distribution | None:
    return Distribution.from_samples(values, points) if values.size else None


def _bincount(values: NDArray[np.integer], minlength: int) -> NDArray[np.int64]:
    """``np.bincount`` of non-negative ``values`` below ``minlength``, a chunk at a time (numpy
    counts from an intp copy of its input: 8 bytes per value of a chunk, not of all)."""
    out = np.zeros(minlength, dtype=np.int64)
    for at in _chunks(values.size):
        out += np.bincount(values[at], minlength=minlength)
    return out


@dataclass(frozen=True)
class _StreamBounds:
    """When a type's accessed objects' streams begin and end (``rows``: their object rows,
    ascending): ``start_ms``, the first access's delay from the object's creation (or the
    window's start for one that existed before it), with its law ``start_law``
    (``FileType.activation_delay``); ``end_ms``, the time from the last access to the object's
    deletion (-1: not deleted in the window), with its law ``end_law`` (None: none deleted).
    For the kept streams' start and end codes."""

    rows: NDArray[np.intp]
    start_ms: NDArray[np.int64]
    start_law: Distribution
    end_ms: NDArray[np.int64]
    end_law: Distribution | None

    def _at(self, rows: NDArray[np.integer]) -> NDArray[np.intp]:
        return np.minimum(np.searchsorted(self.rows, rows), max(self.rows.size - 1, 0))

    def codes(self, rows: NDArray[np.integer], rng: np.random.Generator) -> tuple[str, str]:
        """``CommandChain.stream_starts`` and ``stream_ends`` of kept streams of the objects ``rows``."""
        at = self._at(rows)
        starts = _quantile_codes(self.start_ms[at].astype(np.float64), self.start_law, rng)
        if self.end_law is None:
            return starts, ""
        end = self.end_ms[at]
        digits = np.full((at.size, GAP_CODE_CHARS), ord(NO_CODE), dtype=np.uint8)
        deleted = np.flatnonzero(end >= 0)
        if deleted.size:
            coded = _quantile_codes(end[deleted].astype(np.float64), self.end_law, rng)
            digits[deleted] = np.frombuffer(coded.encode("ascii"), dtype=np.uint8).reshape(-1, GAP_CODE_CHARS)
        return starts, digits.tobytes().decode("ascii")


def _command_chain(obj: NDArray[np.int32], time: NDArray[np.integer], cmd: NDArray[np.integer],
                   names: tuple[str, ...], points: int, gaps: NDArray[np.integer] | None = None,
                   rng: np.random.Generator | None = None,
                   pooled: Distribution | None = None, bounds_of: _StreamBounds | None = None) -> CommandChain | None:
    """The first-order Markov chain of a type's accesses (grouped by object, time order within
    one), with a gap law per transition seen ``MIN_TRANSITION_GAPS`` times or more, its kept
    sequences and kept streams. ``gaps``: the accesses' gaps within an object
    (``_Accesses.gaps``), when the caller has them already; ``rng`` draws the sample of kept
    streams when they are too many to keep all and the kept streams' gap codes (seed 0 without
    it); ``pooled``: F_j, the law of the gaps of transitions without one of their own when no
    transition has one (without it the kept streams' gaps get no codes then); ``bounds_of``: when
    the objects' streams begin and end, for the kept streams' start and end codes (none without it)."""
    if cmd.size == 0:
        return None
    counts = _bincount(cmd, len(names))
    present = np.flatnonzero(counts)
    # most frequent first; ties by name (``names`` are sorted, so by index)
    ranked = present[np.lexsort((present, -counts[present]))][:MAX_COMMANDS]
    m = ranked.size
    # local command ids as narrow as a transition's key (m * m) allows: 16 bits for 64 commands
    narrow = np.int16 if m * m < 2**15 else np.int32
    local = np.full(len(names), -1, dtype=narrow)
    local[ranked] = np.arange(m)
    lc = local[cmd]
    if (lc < 0).any():  # more commands than a chain holds: the rarest are left out
        keep = lc >= 0
        obj, time, lc = obj[keep], time[keep], lc[keep]
        gaps = None  # the gaps of the accesses kept differ
    share = _bincount(lc, m) / lc.size
    starts = np.concatenate(([True], obj[1:] != obj[:-1]))
    sequences, covered = _sequences(starts, lc, [names[i] for i in ranked])
    # the chain is walked by the objects no kept sequence covers: its first, next and last are
    # theirs; the short ones among them (the rare streams, richer in rare commands than the long
    # ones: pooled, a reader type's long walks came out 2.5 % short of opens) get a walk law of
    # their own when both parts have enough transitions to fit one
    bounds = np.append(np.flatnonzero(starts), lc.size)
    del starts
    length = np.diff(bounds)
    uncovered = ~covered[bounds[:-1]]  # per stream
    del covered
    rng = rng if rng is not None else np.random.default_rng(0)
    # kept: every stream with a gap (the covered ones too, so that the objects that take a kept
    # stream's gaps are a sample of all: ``_stream_gap_codes``) and the uncovered single accesses
    streams, kept_at = _kept_streams(bounds, lc, uncovered | (length > 1), rng)
    # the kept streams' gaps: the access each ends at, and its transition
    gap_at = _gap_ends(streams, kept_at)
    gap_key = lc[gap_at - 1] * narrow(m) + lc[gap_at]
    walked = uncovered if uncovered.any() else np.ones(length.size, dtype=bool)
    del uncovered
    long = length > MAX_SEQUENCE_LENGTH
    hops = length - 1
    split = min(int(hops[walked & long].sum()), int(hops[walked & ~long].sum())) >= MIN_WALK_TRANSITIONS
    # per stream: 0 covered by a kept sequence, 1 walked (long when split), 2 walked short
    part = np.where(walked, np.where(long | (not split), 1, 2), 0).astype(np.int8)
    del walked, long, hops
    same = np.ones(lc.size - 1, dtype=bool)
    same[bounds[1:-1] - 1] = False  # no transition across two objects' streams
    key = lc[:-1][same] * narrow(m) + lc[1:][same]
    transition_part = np.repeat(part, length)[1:][same]
    pairs = _bincount(key, m * m).reshape(m, m)
    # a part that holds every stream has the type's own transition counts
    fitted = [_walk_law(lc, bounds, transition_part, key, part, which, share, pairs if (part == which).all() else None)
              for which in ((1, 2) if split else (1,))]  # fmt: skip
    del part, length, transition_part
    first, nxt, last = fitted[0]
    short_walk = None
    if len(fitted) == 2:
        s_first, s_next, s_last = fitted[1]
        short_walk = ChainWalk(first=s_first.tolist(), next=s_next.tolist(),
                               last=None if s_last is None else s_last.tolist())
    del lc
    if gaps is None:
        gaps = np.diff(time)[same]
    del same
    laws: dict[str, Distribution] = {}
    other: Distribution | None = None
    frequent = np.flatnonzero(pairs.ravel() >= MIN_TRANSITION_GAPS)
    law_list: list[Distribution] = []
    if frequent.size:
        # the rare transitions share one law of their own gaps: drawn from F_j they would take
        # the frequent ones' too (seen: a reader type's getfileinfo>open gaps, 97 % under 2 ms,
        # put a quarter of its rare transitions' gaps under 2 ms, where the trace had none)
        rare = ~np.isin(key, frequent)
        if rare.any():
            other = Distribution.from_samples(gaps[rare], points)
        order = np.argsort(key, kind="stable")  # a radix sort of 16-bit keys
        bounds = np.searchsorted(key[order], np.stack([frequent, frequent + 1]))
        for t, lo, hi in zip(frequent.tolist(), bounds[0].tolist(), bounds[1].tolist()):
            a, b = names[ranked[t // m]], names[ranked[t % m]]
            law_list.append(Distribution.from_samples(gaps[order[lo:hi]], points))
            laws[f"{a}>{b}"] = law_list[-1]
    stream_gaps = ""
    rest = other if other is not None else pooled  # what a transition without a law of its own draws
    if streams and rest is not None:
        # which law each kept gap draws from, as the generator picks it: its transition's own
        # (its index in ``frequent``), else ``rest``
        law_of = np.full(m * m, frequent.size, dtype=np.int16)
        law_of[frequent] = np.arange(frequent.size)
        stream_gaps = _stream_gap_codes(gap_at, time, law_of[gap_key], [*law_list, rest], rng)
    stream_starts = stream_ends = ""
    end_gap = None
    if stream_gaps and bounds_of is not None:
        lengths = np.fromiter(map(len, streams), dtype=np.int64, count=len(streams))
        stream_starts, stream_ends = bounds_of.codes(obj[kept_at[np.cumsum(lengths) - lengths]], rng)
        end_gap = bounds_of.end_law
    del kept_at
    return CommandChain(
        commands=[names[i] for i in ranked],
        share=share.tolist(),
        first=first.tolist(),
        next=nxt.tolist(),
        gaps=laws,
        other_gaps=other,
        sequences=sequences,
        last=None if last is None else last.tolist(),
        short_walk=short_walk,
        streams=streams,
        stream_gaps=stream_gaps,
        stream_starts=stream_starts,
        end_gap=end_gap if stream_ends else None,
        stream_ends=stream_ends,
    )


def _kept_streams(
    bounds: NDArray[np.intp], lc: NDArray[np.integer], chosen: NDArray[np.bool_], rng: np.random.Generator
) -> tuple[list[str], NDArray[np.intp]]:
    """The command sequences of the ``chosen`` streams (``bounds`` where each stream of ``lc``
    starts, and the end), one ``STREAM_ALPHABET`` character per access (with the index into
    ``lc`` of each of their accesses, stream after stream):
    all of them when they hold at most ``MAX_KEPT_STREAM_ACCESSES`` accesses, else a uniform
    random sample of the streams that fills that many (a stream longer than a quarter of it is
    left to the chain, so that one poller's stream does not crowd out a type's others).

    Why keep them: how often each command comes back on one object is not a first-order chain's
    to say. On the real 600 s mixed trace the files' setOwner, append and setReplication come once
    per file whatever its reads; the chain gives a long stream rare commands in proportion to its
    length, so 15-30 % of the files with one got two or more where the trace had 12-25 %, and the
    per-command popularity KS reached 0.03-0.05 (0.01 with every stream kept). The streams a kept
    sequence covers were left out until the streams kept their gaps too (``_stream_gap_codes``)."""
    lengths = np.diff(bounds)
    which = np.flatnonzero(chosen & (lengths <= MAX_KEPT_STREAM_ACCESSES // 4))
    if which.size == 0:
        return [], np.empty(0, dtype=np.intp)
    which = which[rng.permutation(which.size)]
    which = np.sort(which[np.cumsum(lengths[which]) <= MAX_KEPT_STREAM_ACCESSES])
    length = lengths[which]
    ends = np.cumsum(length)
    at = np.repeat(bounds[which] - (ends - length), length) + np.arange(int(ends[-1]) if ends.size else 0)
    text = _STREAM_CHARS[lc[at]].tobytes().decode("ascii")
    # equal streams share one string: a type's many short streams repeat a few sequences, and a
    # string each cost about 55 bytes per stream kept
    same: dict[str, str] = {}
    return [same.setdefault(text[a:b], text[a:b]) for a, b in zip((ends - length).tolist(), ends.tolist())], at


def _gap_ends(streams: list[str], at: NDArray[np.intp]) -> NDArray[np.signedinteger]:
    """The accesses (of ``at``: the index of each access of the kept ``streams``, stream after
    stream) that end a gap: all but each stream's first, as int32 where the indices allow."""
    lengths = np.fromiter(map(len, streams), dtype=np.int64, count=len(streams))
    not_first = np.ones(at.size, dtype=bool)
    not_first[np.cumsum(lengths) - lengths] = False
    ends = at[not_first]
    return ends.astype(np.int32) if ends.size and int(ends[-1]) < 2**31 else ends


def _stream_gap_codes(
    gap_at: NDArray[np.signedinteger],
    time: NDArray[np.integer],
    which: NDArray[np.int16],
    laws: list[Distribution],
    rng: np.random.Generator,
) -> str:
    """``CommandChain.stream_gaps`` of the kept streams (``gap_at``: the access that ends each of
    their gaps, stream after stream, an index into ``time``): each gap's quantile in the law it
    draws from (``which``: its index into ``laws``), as a ``GAP_CODE_LEVELS`` cell. A gap of g ms
    stands for the times in [g - 0.5, g + 0.5] that round to it, so its quantile is drawn
    uniformly between the law's CDF there: a gap at a point mass (a poller's 10,000 ms) falls
    anywhere in the mass, not always at its top.

    Why: a chain draws each gap of a stream apart from the others, so a cycle of commands lasts
    the sum of independent draws. On the real 600 s jobs trace a job loop deletes its output
    directories every 4.8-6.0 s through a cycle of lookups, listings and mkdirs whose own gaps
    vary; drawn apart, the delete-to-delete gaps spread over 2.1-11.3 s (per-command
    interarrival KS 0.39). The codes hold only quantiles: no time, path or name of the trace."""
    digits = np.empty((gap_at.size, GAP_CODE_CHARS), dtype=np.uint8)
    by_law = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[by_law], np.arange(len(laws) + 1))
    for i, law in enumerate(laws):
        # a chunk at a time: the CDF's float temporaries are per chunk, not per kept gap
        for lo_at in range(int(bounds[i]), int(bounds[i + 1]), CODE_CHUNK):
            rows = by_law[lo_at : min(lo_at + CODE_CHUNK, int(bounds[i + 1]))]
            ends = gap_at[rows]
            _code_digits((time[ends] - time[ends - 1]).astype(np.float64), law, rng, digits, rows)
    return digits.tobytes().decode("ascii")


def _quantile_codes(values: NDArray[np.float64], law: Distribution, rng: np.random.Generator) -> str:
    """``values`` (ms) as ``GAP_CODE_CHARS`` digits each, their quantiles in ``law``
    (``_code_digits``), one after the other."""
    digits = np.empty((values.size, GAP_CODE_CHARS), dtype=np.uint8)
    for lo in range(0, values.size, CODE_CHUNK):
        rows = np.arange(lo, min(lo + CODE_CHUNK, values.size))
        _code_digits(values[rows], law, rng, digits, rows)
    return digits.tobytes().decode("ascii")


def _code_digits(values: NDArray[np.float64], law: Distribution, rng: np.random.Generator,
                 digits: NDArray[np.uint8], rows: NDArray[np.integer]) -> None:
    """Write into ``digits[rows]`` each of ``values``' quantile in ``law`` as a
    ``GAP_CODE_LEVELS`` cell, ``GAP_CODE_CHARS`` STREAM_ALPHABET digits, most significant first.
    A value of g ms stands for the times in [g - 0.5, g + 0.5] that round to it, so its quantile
    is drawn uniformly between the law's CDF there."""
    low, high = law.cdf(values - 0.5), law.cdf(values + 0.5)
    code = np.minimum(((low + (high - low) * rng.random(values.size)) * GAP_CODE_LEVELS).astype(np.int64),
                      GAP_CODE_LEVELS - 1)
    radix = len(STREAM_ALPHABET)
    for d in range(GAP_CODE_CHARS - 1, -1, -1):
        digits[rows, d] = _STREAM_CHARS[code % radix]
        code //= radix


def _walk_law(
    lc: NDArray[np.integer],
    bounds: NDArray[np.intp],
    transition_part: NDArray[np.int8],
    key: NDArray[np.integer],
    stream_part: NDArray[np.int8],
    which: int,
    share: NDArray[np.float64],
    pairs: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
    """``first``, ``next`` and ``last`` of the streams of part ``which``: ``lc`` the local command
    ids (object-major), ``bounds`` where each stream starts (and the end), ``stream_part`` each
    stream's part, ``key`` the transitions and ``transition_part`` theirs (``pairs``: their counts
    when the part holds every transition, not counted again); a command never followed in them
    takes ``share`` as its row."""
    m = share.size
    chosen = stream_part == which
    first = np.bincount(lc[bounds[:-1][chosen]], minlength=m) / max(int(chosen.sum()), 1)
    # the last access of each stream of two or more: where the trace's streams end
    ending = chosen & (np.diff(bounds) > 1)
    last = np.bincount(lc[bounds[1:][ending] - 1], minlength=m) / int(ending.sum()) if ending.any() else None
    if pairs is None:
        pairs = _bincount(key[transition_part == which], m * m).reshape(m, m)
    followed = pairs.sum(axis=1)
    nxt = np.where(followed[:, None] > 0, pairs / np.maximum(followed, 1)[:, None], share[None, :])
    return first, nxt, last


def _sequences(
    starts: NDArray[np.bool_], lc: NDArray[np.integer], commands: list[str]
) -> tuple[dict[str, float], NDArray[np.bool_]]:
    """The command sequences of the type's short streams (at most ``MAX_SEQUENCE_LENGTH``
    accesses) seen at least ``MIN_SEQUENCE_OBJECTS`` times, the ``MAX_SEQUENCES`` most frequent:
    ``{"a>b>c": share of the objects with that many accesses whose stream it is}``. A first-order
    chain cannot say "exactly once": a committer's file is created, stat-ed, renamed and deleted,
    each once, but the chain renames some twice and others never (seen on a real MapReduce trace:
    4x the trace's rename-to-rename gaps, and a fifth fewer renamed files). Also returns, per
    access, whether its stream is one of the kept sequences."""
    bounds = np.append(np.flatnonzero(starts), lc.size)
    length = np.diff(bounds)
    short = np.flatnonzero(length <= MAX_SEQUENCE_LENGTH)
    covered = np.zeros(lc.size, dtype=bool)
    if short.size == 0:
        return {}, covered
    # each short stream as one int64: sum of (command + 1) * RADIX**position (RADIX**10 < 2**63)
    lens = length[short]
    col = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    digits = lc[np.repeat(bounds[short], lens) + col].astype(np.int64) + 1
    codes = np.add.reduceat(digits * _SEQUENCE_RADIX**col, np.cumsum(lens) - lens)
    uniq, counts = np.unique(codes, return_counts=True)
    per_length = np.bincount(lens, minlength=MAX_SEQUENCE_LENGTH + 1)
    keep = np.flatnonzero(counts >= MIN_SEQUENCE_OBJECTS)
    keep = keep[np.lexsort((uniq[keep], -counts[keep]))][:MAX_SEQUENCES]
    stream_kept = np.zeros(length.size, dtype=bool)
    stream_kept[short] = np.isin(codes, uniq[keep])
    covered = np.repeat(stream_kept, length)
    out: dict[str, float] = {}
    for i in keep.tolist():
        code, seq = int(uniq[i]), []
        while code:
            code, digit = divmod(code, _SEQUENCE_RADIX)
            seq.append(commands[digit - 1])
        out[">".join(seq)] = float(counts[i] / per_length[len(seq)])
    return out, covered


@dataclass(frozen=True)
class _Accesses:
    """One type's accesses: grouped by object, time order within one."""

    obj: NDArray[np.int32]
    time: NDArray[np.signedinteger]  # ms since an origin (int32 or int64): only differences are read
    cmd: NDArray[np.integer]

    def gaps(self) -> NDArray[np.signedinteger]:
        same = self.obj[1:] == self.obj[:-1]
        return np.diff(self.time)[same]


def _fit_type(type_id: int, kind: str, cols: ObjectColumns, idx: NDArray[np.intp], acc: _Accesses, t0: int,
              n_total: int, points: int, names: tuple[str, ...], seed: int) -> FileType:
    """One type's distributions from its objects (``idx``, rows of ``cols``) and accesses (``seed``:
    the fit's, for the sample of kept streams)."""
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
    activation_law = _dist(activation, points)
    gone = has_deleted[accessed]
    end_gap = np.full(activation.size, -1, dtype=np.int64)
    end_gap[gone] = np.maximum(cols.deleted[idx][accessed][gone] - cols.last_access[idx][accessed][gone], 0)
    order = np.argsort(idx[accessed], kind="stable")
    bounds_of = None if activation_law is None else _StreamBounds(
        rows=idx[accessed][order], start_ms=activation[order].astype(np.int64), start_law=activation_law,
        end_ms=end_gap[order], end_law=_dist(end_gap[gone], points) if gone.any() else None)
    span = cols.last_access[idx][accessed] - first_access
    delete_age = np.maximum(cols.deleted[idx][has_deleted] - origin[has_deleted], 0)
    type_accesses = cols.accesses[idx]
    accesses = int(type_accesses.sum())
    opens = int(cols.opens[idx].sum())
    weight = n_created / n_total if n_total else 0.0
    objects = idx.size
    gaps = acc.gaps()
    pooled = _dist(gaps, points) if gaps.size else (Distribution.point(0.0) if n_accessed else None)
    observed: dict[str, Distribution] = {}
    if n_accessed:
        observed["popularity"] = Distribution.from_samples(type_accesses[accessed], points, discrete=True)
    new_dir = int((cols.parent_made[idx] & has_created).sum()) / n_created if kind == "file" and n_created else 0.0
    return FileType(
        id=type_id,
        kind=kind,  # type: ignore[arg-type]
        weight=weight,
        pre_existing=objects - n_created,
        create_interarrival=_dist(create_gaps, points) if weight > 0 else None,
        activation_delay=activation_law,
        active_span=_dist(span, points),
        access_interarrival=pooled,
        delete_delay=_dist(delete_age, points),
        delete_delay_origin="creation",
        delete_share=n_deleted / objects if objects else 0.0,
        open_share=opens / accesses if accesses else 1.0,
        accessed_share=n_accessed / objects if objects else 0.0,
        observed=observed,
        commands=_command_chain(acc.obj, acc.time, acc.cmd, names, points, gaps, np.random.default_rng([seed, type_id]),
                                pooled, bounds_of),
        new_dir_share=new_dir,
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
    """Rows grouped by key 1..k (a stable radix sort; key 0 rows first, outside every group) and
    each group's bounds in that order."""
    order = np.argsort(keys, kind="stable")
    return order, np.searchsorted(keys[order], np.arange(1, k + 2))


def fit_types(fo: FittedObjects, labels: NDArray[np.int16], config: FitConfig) -> list[FileType]:
    """The types of a labelling of the object rows (type ids 1..K; 0: a row left out). Each
    type's kind is its objects'; weights are shares of the files, or directories, created."""
    k = int(labels.max(initial=0))
    if k == 0:
        return []
    obj_order, obj_bounds = _groups(labels, k)
    cols = fo.columns
    n_created = {kind: int((cols.has_created & (fo.is_dir == (kind == "directory"))).sum()) for kind in KINDS}

    def fit_one(type_id: int) -> FileType | None:
        rows = obj_order[obj_bounds[type_id - 1] : obj_bounds[type_id]]
        if rows.size == 0:
            return None
        kind = "directory" if fo.is_dir[rows[0]] else "file"
        at = fo.access_rows(rows)
        lengths = fo.acc_start[rows + 1] - fo.acc_start[rows]
        # each access's object (its row: only where it changes is read)
        acc = _Accesses(obj=np.repeat(rows.astype(np.int32), lengths), time=fo.acc_time[at], cmd=fo.acc_cmd[at])
        del at, lengths
        return _fit_type(type_id, kind, cols, rows, acc, fo.t0, n_created[kind], config.points, fo.view.commands,
                         config.seed)

    # the types are independent and their sorts release the GIL: two threads use both cores
    with ThreadPoolExecutor(max_workers=_threads()) as pool:
        types = [t for t in pool.map(fit_one, range(1, k + 1)) if t is not None]
    for kind in KINDS:  # exact normalisation: the weights are shares of one integer total
        total = sum(t.weight for t in types if t.kind == kind)
        if n_created[kind] and total > 0:
            types = [t.model_copy(update={"weight": t.weight / total}) if t.kind == kind else t for t in types]
    return types


def profile_from_labels(fo: FittedObjects, labels: np.ndarray, config: FitConfig, k_selection: str) -> WorkloadProfile:
    """Build the profile for a given assignment of objects to types 1..K (file types first)."""
    types = fit_types(fo, labels.astype(np.int16), config)
    counts = fo.op_counts
    inferred = not fo.has_snapshot
    notes = []
    if inferred:
        notes.append("no snapshot: pre-existing files inferred as files accessed but not created in the window")
    unmodelled = {NOT_MODELLED_PREFIX + cmd: float(c) for cmd, c in sorted(fo.view.unmodelled.items()) if c}
    source = ProfileSource(
        kind="fitted",
        inputs=list(config.inputs),
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=config.seed,
        k_selection=k_selection,
        pre_existing_inferred=inferred,
        notes=notes,
        trace_stats={**config.trace_stats, "objects": float(fo.objects.height), "directories": float(fo.view.directories.len()),
                     **pathless_stats(fo.pathless_counts), **unmodelled},
    )
    cols = fo.columns
    return WorkloadProfile(
        name=config.name,
        version=2,
        source=source,
        window_ms=fo.window_ms,
        total_creates=int((cols.has_created & ~fo.is_dir).sum()),
        created_directories=int((cols.has_created & fo.is_dir).sum()),
        types=types,
        op_mix=OpMix(observed_counts=counts),  # the ratios are 0: the objects' streams carry every command
        namespace=fo.namespace,
        pathless=fo.pathless,
        covisits=fit_covisits(fo.acc_start, fo.acc_time, ~(cols.has_created | cols.has_deleted), config.points),
    )


def _plural(kind: str) -> str:
    return "directories" if kind == "directory" else "files"


def _embed(rows: NDArray[np.intp], kind_labels: NDArray[np.int16], n: int) -> NDArray[np.int16]:
    out = np.zeros(n, dtype=np.int16)
    out[rows] = kind_labels
    return out


def cluster_kinds(fo: FittedObjects, config: FitConfig) -> tuple[NDArray[np.int16], str]:
    """Types per kind (their own k-means, their own features; K per kind, or ``auto`` per kind):
    labels of the object rows, file types 1..Kf then directory types Kf+1..Kf+Kd, and a note."""
    n = fo.objects.height
    labels = np.zeros(n, dtype=np.int16)
    notes: list[str] = []
    offset = 0
    by_kind = fo.features()
    for kind in KINDS:
        rows = fo.rows(kind)
        if rows.size == 0:
            continue
        features = by_kind.pop(kind)
        if config.types == "auto":
            from mimesisbench.model.selection import choose_k  # scipy.stats is loaded only for auto K

            accesses = fo.objects["accesses"].to_numpy()[rows]

            def types_for(kind_labels: NDArray[np.int16], note: str, rows: NDArray[np.intp] = rows) -> list[FileType]:
                del note
                return fit_types(fo, _embed(rows, kind_labels, n), config)

            choice = choose_k(
                accesses[accesses > 0],
                features,
                types_for,
                candidates=config.auto_candidates,
                ks_target=config.auto_ks_target,
                seed=config.seed,
            )
            kind_labels, k_used = choice.labels, choice.k
            notes.append(f"{_plural(kind)}: {choice.describe()}")
        else:
            k = int(config.types)
            clustering: Clustering = cluster_objects(features, k, config.seed)
            kind_labels, k_used = clustering.labels, clustering.k
            found = f", {clustering.k} distinct behaviours found" if clustering.k < k else ""
            notes.append(f"{_plural(kind)}: K={k} requested{found}")
        labels[rows] = kind_labels + offset
        offset += k_used
    return labels, "; ".join(notes)


def fit_profile(events: pl.DataFrame | Handover[pl.DataFrame], snapshot: pl.DataFrame | None,
                config: FitConfig) -> WorkloadProfile:
    """Fit a profile with K types per kind, or choose K automatically (``config.types == "auto"``).
    ``events`` handed over (``Handover``) is freed once read (``prepare``)."""
    fo = prepare(events, snapshot, config)
    labels, note = cluster_kinds(fo, config)
    return profile_from_labels(fo, labels, config, note)
