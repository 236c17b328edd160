"""The per-type renewal-process model, vectorised: creations, access streams and deletions.

All times are integer microseconds from t0. For one file type ``j``:

* ``round(w_j n)`` creation times are the cumulative sums of C_j draws, cut at the window's end;
* a share ``accessed_share`` of the files (pre-existing and created) is accessed: the first
  access comes G_j after creation (after t0 for pre-existing files), then

  - when the type carries its observed popularity (``observed["popularity"]``, as profiles
    fitted by ``mimesisbench model`` do): N accesses, N drawn from that popularity, separated
    by N - 1 interarrivals from F_j; popularity and F_j are reproduced by construction and the
    span follows from them (a fitted profile's popularity and F_j come from the same files,
    so its H_j is reproduced too, closely);
  - otherwise (the 2014 format has no popularity): the paper's renewal rule, accesses with F_j
    interarrivals as long as they lie within H_j of the first access, and a last access that
    closes the span at exactly first + H_j (H_j is first-to-last access, so the generated
    spans follow H_j exactly; only the closing interarrival is shorter than an F_j draw). A
    stopping-time rule would keep the pooled interarrivals exact instead, but no such rule
    keeps Yahoo's spans within 0.4 KS (docs/generate.md, bench/bench_access_rules.py). When
    the type has an ``access_gap_sampling`` table (computed at 2014 import,
    ``synth.calibration``) the interarrivals are drawn from it instead of F_j, so that the
    pooled interarrivals, closing gaps included, follow F_j as closely as the spans allow;
  - pre-existing files of a type whose H_j describes only the files created in the trace
    (``span_population`` 'created', the 2014 format): the same renewal rule read as a stopping
    time (the 2014 Java generator's crossing rule, which also drew again at exactly first + H_j):
    draws while the stream is before first + H_j, the first access at or past it being the
    last. Their pooled interarrivals are then an unbiased sample of the law they draw from, and
    their spans overshoot H_j, which does not describe them. That law is balanced
    (``synth.balance``): the one that puts the type's pooled interarrivals, the created files'
    included, back on F_j, which describes the pool (a pilot run per type measures the created
    files' gaps in the window).

  Nothing past the window's end. Each access is an OPEN with probability ``open_share``, else
  a LIST_FILE;
* a share ``delete_share`` is deleted D_j after the last access (``last_access``; after the
  creation for files never accessed) or at ``max(creation + D_j, last access + 1 ms)``
  (``creation``, the 2014 format). A file whose accesses are cut by the window end (for the
  renewal rule: whose span the window cuts) is not deleted inside the window.

Access streams are drawn for many files at once: each round draws an estimated number of
interarrivals per still-open file into one flat array, takes a segmented cumulative sum, keeps
the prefix of every segment inside its file's limit and sends the files whose limit was not yet
reached to the next round. Nothing loops per file or per event in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mimesisbench.errors import ScheduleError
from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.assign import fitting_assignment
from mimesisbench.synth.balance import balanced_pre_law
from mimesisbench.synth.chains import ChainLaw, cell_uniforms, gap_uniforms, stratified, stratified_within
from mimesisbench.synth.kstats import ks_distance, truncated_seen

I64 = NDArray[np.int64]
NEVER = np.iinfo(np.int64).max
#: events are ordered by ``time_us << RANK_BITS | rank``: at equal times creations (and mkdirs)
#: come first, then accesses, then renames, then deletions
RANK_BITS = 2
RANK = np.ones(max(OpCode) + 1, dtype=np.int64)  # indexed by OpCode; every access (chains' too) is 1
RANK[[OpCode.CREATE, OpCode.MKDIRS]] = 0
RANK[[OpCode.RENAME_FILE, OpCode.RENAME_DIR]] = 2
RANK[[OpCode.DELETE, OpCode.DELETE_DIR]] = 3
#: a chain type's stream longer than its room by at most this share is squeezed (its gaps shortened)
#: into it at once; a longer one is redrawn first (``_redraw_long_streams``)
SQUEEZE = 0.05
#: a type whose spans all lie within this share of the longest, itself this close to the window,
#: was seen for the whole window (``_whole_window``): its streams last a drawn span
WHOLE_WINDOW = 0.1
#: the most a whole-window stream's gaps are stretched or shortened to last its span
WHOLE_WINDOW_RATE = 1.5
#: types of at most this many creations keep them all in the window (``creation_times``)
FIT_CREATES = 1 << 16
#: draws of a type's creations tried before squeezing (``creation_times``)
FIT_TRIES = 16
#: the most a type's creation gaps are shortened to keep them in the window
CREATE_SQUEEZE = 0.25
#: interarrival draws per round and chunk of files (bounds the temporaries)
DRAWS_PER_ROUND = 1 << 21
#: files handled together (bounds the per-file temporaries)
FILES_PER_CHUNK = 1 << 20
#: interarrivals drawn per file and round, per mean interarrival of room left (then + 1)
WANT_FACTOR = 1.0
#: files of each population in the pilot that balances pre-existing files' interarrivals: the
#: created files' gaps give a distribution, the pre-existing files' only a count
PILOT_CREATED_FILES = 8192
PILOT_PRE_FILES = 4096
#: no balancing when the created files' gaps move the pool's KS distance to F_j by at most this
BALANCE_TOLERANCE = 0.002
#: pilot rounds (each re-estimates the pre-existing files' gap count under the law found so far)
BALANCE_ROUNDS = 2


class Sampler:
    """Fast inverse-CDF sampling of a ``Distribution`` into integer microseconds.

    The quantile function is tabulated on a uniform grid of ``GRID`` cells in ``u`` and
    interpolated linearly within a cell: one multiply, two gathers and a fused add per draw
    instead of a binary search. The tabulated function equals the distribution's own quantile
    function except inside the (at most one per stored value) cells holding a breakpoint, so
    the sampled CDF differs from the profile's by less than ``1 / GRID`` in probability.
    """

    GRID = 1 << 14

    def __init__(self, dist: Distribution) -> None:
        values, cdf = dist.arrays()
        grid = np.arange(self.GRID + 1, dtype=np.float64) / self.GRID
        # the piecewise-linear quantile function through (cdf[i], values[i]); below cdf[0] the
        # point mass at values[0]; + 0.5 so that truncating a draw rounds it to the nearest us
        table = np.interp(grid, cdf, values) * 1000.0 + 0.5
        self._table = table[:-1].copy()
        self._slope = np.diff(table)
        self._grid_points, self._grid_levels = table, grid  # for draw_at_least
        weights = np.diff(cdf, prepend=0.0)
        mids = np.concatenate([values[:1], (values[1:] + values[:-1]) / 2.0])
        self.mean_us = max(float((mids * weights).sum()) * 1000.0, 0.0)  # no BLAS (its threads spin)
        self.max_us = float(values[-1] * 1000.0)

    def draw(self, rng: np.random.Generator, size: int) -> I64:
        return self._at(rng.random(size))

    def at(self, u: NDArray[np.float64]) -> I64:
        """The draws at uniforms ``u`` in [0, 1) (for stratified draws; overwrites ``u``)."""
        return self._at(u)

    def draw_at_least(self, rng: np.random.Generator, lower_us: I64) -> I64:
        """One draw per entry of ``lower_us``, conditioned on being at least that (us): the
        uniform is drawn above the tabulated CDF's level there."""
        lower = np.asarray(lower_us, dtype=np.int64)
        # the tabulated quantile function is increasing and linear within a cell: invert it
        level = np.interp(lower, self._grid_points, self._grid_levels)
        u = rng.random(lower.size)
        u *= 1.0 - level
        u += level
        np.minimum(u, np.nextafter(1.0, 0.0), out=u)
        return np.maximum(self._at(u), lower)

    def draw_below(self, rng: np.random.Generator, upper_us: I64) -> I64:
        """One draw per entry of ``upper_us``, conditioned on being below that (us): the
        uniform is drawn under the tabulated CDF's level there (a bound at or below the law's
        least value gives ``upper_us - 1``)."""
        upper = np.asarray(upper_us, dtype=np.int64)
        level = np.interp(upper, self._grid_points, self._grid_levels)
        u = rng.random(upper.size)
        u *= level
        return np.minimum(self._at(u), upper - 1)

    def _at(self, u: NDArray[np.float64]) -> I64:
        """The tabulated quantile function at ``u`` in [0, 1) (overwrites ``u``)."""
        u *= self.GRID
        cell = u.astype(np.int64)
        u -= cell
        u *= self._slope[cell]
        u += self._table[cell]
        del cell
        return u.astype(np.int64)


@dataclass
class TypeEvents:
    """One type's events (unsorted, in parts) and per-file lifetimes, indexed by the type's files.

    ``keys[i]`` is ``time_us << RANK_BITS | RANK[op]``, ``metas[i]`` is ``op | type_id << 16``
    (uint32) and ``targets[i]`` the file ids, in the schedule's target dtype: the parts are the
    final arrays' pieces, concatenated once for all types.
    """

    keys: list[I64]
    metas: list[NDArray[np.uint32]]
    targets: list[NDArray[np.integer]]
    delete_us: I64  # per file of the type, NEVER when not deleted in the window
    last_us: I64 | None = None  # per file: its last access, -1 when none (kept when asked for)


def creation_times(
    ft: FileType, count: int, window_us: int, rng: np.random.Generator, keep_count: bool = False
) -> I64:
    """The type's creation times: a renewal process of ``count`` C_j draws, cut at the window.

    With ``keep_count`` (a fitted profile: ``count`` is what the trace's window saw) a type of
    up to ``FIT_CREATES`` creations whose draws overshoot the window is drawn again (at most ``FIT_TRIES`` times: the draws are then
    conditioned on fitting, as the trace's gaps did); if none fits, the last draw without its
    first gap (the time to the first creation, which C_j does not describe) is placed where it
    fits, else squeezed into the window when that shortens its gaps by at most
    ``CREATE_SQUEEZE``; otherwise the tail is cut. Seen on
    a real NameNode's log: a type whose ``count`` C_j draws sum to about the window (bursts of
    jobs) lost a sixth of its creations to the cut. Without it (the 2014 profiles, whose n_j
    outruns their window by design) the cut stands."""
    if count <= 0 or ft.create_interarrival is None:
        if count > 0:
            raise ScheduleError(f"type {ft.id}: files are created but create_interarrival (C_j) is missing")
        return np.empty(0, dtype=np.int64)
    sampler = Sampler(ft.create_interarrival)
    if keep_count and count <= FIT_CREATES:
        times = np.cumsum(sampler.draw(rng, count))
        tries = 1
        while times[-1] >= window_us and tries < FIT_TRIES:
            times = np.cumsum(sampler.draw(rng, count))
            tries += 1
        if times[-1] >= window_us and times[-1] - times[0] < window_us:
            # C_j holds the gaps between the window's creations, not where the first fell: the
            # creations that fit as a block without their first draw start anywhere they fit (a
            # poller's two markers 20 s apart in a 29 s window lost the second to the cut)
            times -= times[0] - int(rng.integers(0, window_us - (times[-1] - times[0])))
        if times[-1] >= window_us and times[-1] * (1.0 - CREATE_SQUEEZE) < window_us:
            times = (times * ((window_us - 1) / times[-1])).astype(np.int64)
        return times[: int(np.searchsorted(times, window_us, side="left"))]
    parts: list[I64] = []
    start = 0
    left = count
    while left > 0:
        # about as many draws as the rest of the window needs (most of n may lie past its end)
        expected = (window_us - start) / max(sampler.mean_us, 1.0)
        size = int(min(left, DRAWS_PER_ROUND, max(64, int(expected * 1.05) + 64)))
        times = np.cumsum(sampler.draw(rng, size)) + start
        inside = int(np.searchsorted(times, window_us, side="left"))
        parts.append(times[:inside])
        if inside < size:
            break
        start = int(times[-1])
        left -= size
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def _needed(ft: FileType, key: str) -> Distribution:
    dist = getattr(ft, key)
    if dist is None:
        raise ScheduleError(f"type {ft.id}: {key} is missing but the type's files need it")
    return dist


class Laws:
    """A type's samplers, tabulated on first use and shared by its chunks and its pilot (a
    missing distribution is an error only once some file needs it)."""

    def __init__(self, ft: FileType) -> None:
        self.ft = ft

    @cached_property
    def activation(self) -> Sampler:
        return Sampler(_needed(self.ft, "activation_delay"))

    @cached_property
    def span(self) -> Sampler:
        return Sampler(_needed(self.ft, "active_span"))

    @cached_property
    def end_gap(self) -> Sampler | None:
        chain = self.ft.commands
        return None if chain is None or chain.end_gap is None else Sampler(chain.end_gap)

    @cached_property
    def access(self) -> Sampler:
        return Sampler(_needed(self.ft, "access_interarrival"))

    @cached_property
    def delete(self) -> Sampler:
        return Sampler(_needed(self.ft, "delete_delay"))

    @cached_property
    def chain(self) -> ChainLaw | None:
        """The type's command chain (format 2), None when accesses follow ``open_share``."""
        return None if self.ft.commands is None else ChainLaw(self.ft)

    @cached_property
    def gap_samplers(self) -> list[Sampler]:
        """One sampler per transition law of the chain (``ChainLaw.gap_laws``)."""
        chain = self.chain
        return [] if chain is None else [Sampler(d) for d in chain.gap_laws]

    @cached_property
    def other_gaps(self) -> Sampler | None:
        """The chain's law for transitions without one of their own (None: they draw F_j)."""
        chain = self.ft.commands
        return None if chain is None or chain.other_gaps is None else Sampler(chain.other_gaps)

    @cached_property
    def calibrated(self) -> Sampler | None:
        """The closing rule's ``access_gap_sampling`` table, None when the type has none."""
        table = self.ft.access_gap_sampling
        return None if table is None else Sampler(table.distribution)


def type_events(
    ft: FileType,
    origin_us: I64,
    created: int,
    first_id: int,
    window_us: int,
    rng: np.random.Generator,
    target_dtype: type = np.int64,
    balance: bool = True,
    keep_last: bool = False,
) -> TypeEvents:
    """Events of one type whose files have ids ``first_id + i`` and origins ``origin_us[i]``.

    The last ``created`` files are created at their origin; the others exist at t0 (origin 0).
    ``balance``: pre-existing files of a span-driven type whose H_j describes only created files
    draw their interarrivals so that the type's pooled interarrivals follow F_j (``synth.balance``).
    A directory type's objects are made by MKDIRS and removed by DELETE_DIR. ``keep_last``: also
    return each object's last access time (``TypeEvents.last_us``).
    """
    n = int(origin_us.size)
    out = TypeEvents([], [], [], np.full(n, NEVER, dtype=np.int64))
    if keep_last:
        out.last_us = np.full(n, -1, dtype=np.int64)
    laws = Laws(ft)
    pre_f = _balanced_pre_sampler(laws, origin_us, created, window_us, rng) if balance else None
    if created:
        make = OpCode.MKDIRS if ft.kind == "directory" else OpCode.CREATE
        out.keys.append((origin_us[n - created :] << RANK_BITS) | RANK[make])
        out.metas.append(np.full(created, _meta(ft, make), dtype=np.uint32))
        out.targets.append(np.arange(first_id + n - created, first_id + n, dtype=target_dtype))
    for lo in range(0, n, FILES_PER_CHUNK):
        hi = min(n, lo + FILES_PER_CHUNK)
        pre_count = max(0, min(hi, n - created) - lo)
        out.delete_us[lo:hi], last = _chunk(
            laws, origin_us[lo:hi], pre_count, window_us, rng, first_id + lo, target_dtype, out, pre_f
        )
        if out.last_us is not None:
            out.last_us[lo:hi] = last
    return out


def _balanced_pre_sampler(
    laws: Laws, origin_us: I64, created: int, window_us: int, rng: np.random.Generator
) -> Sampler | None:
    """The pre-existing files' interarrival sampler that keeps the type's pooled interarrivals on
    F_j (``synth.balance``), or None when F_j itself is right: the type is not span-driven with
    H_j describing created files, has no pre-existing or no created files, or its created files'
    gaps would move the pool's KS distance to F_j by at most ``BALANCE_TOLERANCE``.

    A pilot on evenly spaced files of each population (``PILOT_*_FILES``, with the type's own
    rules, window and origins) measures the created files' gaps and both populations' expected
    gap counts. The pre-existing files' count depends on the law they draw from, so it is
    measured again (``BALANCE_ROUNDS``) under the law found so far. The pilot draws from a child
    of the type's random stream (``spawn``): the type's own draws do not move.
    """
    ft = laws.ft
    pre = int(origin_us.size) - created
    f_dist = ft.access_interarrival
    if (
        ft.span_population != "created"
        or ft.observed.get("popularity") is not None
        or f_dist is None
        or pre <= 0
        or created <= 0
        or ft.accessed_share <= 0.0
    ):
        return None
    f = laws.access
    pilot = _Pilot(laws, window_us, rng.spawn(1)[0])
    created_files = pre + _evenly(created, PILOT_CREATED_FILES)
    made_us, limits_us = pilot.gaps(origin_us[created_files], _closing_streams, f)
    made, limits = made_us / 1000.0, limits_us / 1000.0
    n_created = made.size * created / created_files.size
    moved = n_created * (ks_distance(made, truncated_seen(f_dist.cdf, limits)) or 0.0)
    pre_files = _evenly(pre, PILOT_PRE_FILES)
    # a floor of the pre-existing files' gap count first: most types in short windows stop here
    if moved <= BALANCE_TOLERANCE * (n_created + pilot.gap_floor(origin_us[pre_files], f) * pre / pre_files.size):
        return None
    sampler = f
    for rnd in range(BALANCE_ROUNDS):
        n_pre = pilot.gap_count(origin_us[pre_files], _stopping_streams, sampler) * pre / pre_files.size
        if rnd == 0 and moved <= BALANCE_TOLERANCE * (n_created + n_pre):
            return None
        sampler = Sampler(balanced_pre_law(f_dist, made, limits, n_created, n_pre).distribution)
    return sampler


def _evenly(count: int, most: int) -> I64:
    """Up to ``most`` evenly spaced indices in [0, count)."""
    return np.linspace(0, count - 1, min(count, most)).astype(np.int64)  # distinct: steps >= 1


Rule = Callable[[Laws, Sampler, I64, I64, np.random.Generator, list[tuple[I64, I64]]], tuple[I64, Any]]


@dataclass
class _Pilot:
    """A small run of a type's access rules (``_balanced_pre_sampler``)."""

    laws: Laws
    window_us: int
    rng: np.random.Generator

    def streams(self, origin: I64, rule: Rule, f: Sampler) -> tuple[list[tuple[I64, I64]], I64]:
        """Access offsets inside the window (``_chunk``'s parts) of files with the given origins
        whose streams follow ``rule`` (``_closing_streams`` or ``_stopping_streams``) drawing
        from ``f``, and the first access time of each file with an access."""
        laws = self.laws
        accessed = np.flatnonzero(_bernoulli(self.rng, origin.size, laws.ft.accessed_share))
        first = origin[accessed] + laws.activation.draw(self.rng, accessed.size)
        span = laws.span.draw(self.rng, accessed.size)
        inside = first < self.window_us
        first, span = first[inside], span[inside]
        parts: list[tuple[I64, I64]] = []
        rule(laws, f, span, self.window_us - 1 - first, self.rng, parts)
        return parts, first

    def gaps(self, origin: I64, rule: Rule, f: Sampler) -> tuple[I64, I64]:
        """The pooled access interarrivals of ``streams``, and each one's limit: the time from
        the access that opens it to the window's end (a gap is seen only below it); both us."""
        parts, first = self.streams(origin, rule, f)
        if not first.size:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        file_of = np.concatenate([p[0] for p in parts])
        offset = np.concatenate([p[1] for p in parts])
        order = np.lexsort((offset, file_of))
        file_of, offset = file_of[order], offset[order]
        same = file_of[1:] == file_of[:-1]
        opens = (first[file_of] + offset)[:-1][same]
        return np.diff(offset)[same], self.window_us - opens

    def gap_floor(self, origin: I64, f: Sampler) -> float:
        """A floor of ``gap_count`` under ``_stopping_streams``, without drawing the streams: by
        Wald's identity a file draws at least limit / mean interarrivals to pass its limit
        (the span, or the window's end), and keeps all of them but perhaps the last."""
        laws = self.laws
        accessed = origin[_bernoulli(self.rng, origin.size, laws.ft.accessed_share)]
        first = accessed + laws.activation.draw(self.rng, accessed.size)
        limit = np.minimum(laws.span.draw(self.rng, accessed.size), self.window_us - 1 - first)
        return float(np.clip(limit / max(f.mean_us, 1.0) - 1.0, 0.0, None).sum())

    def gap_count(self, origin: I64, rule: Rule, f: Sampler) -> int:
        """The number of access interarrivals of ``streams``: accesses less accessed files."""
        parts, first = self.streams(origin, rule, f)
        return sum(int(p[1].size) for p in parts) - int(first.size)


def _meta(ft: FileType, op: OpCode) -> np.uint32:
    return np.uint32(int(op) | ft.id << 16)


def _bernoulli(rng: np.random.Generator, size: int, share: float) -> NDArray[np.bool_]:
    if share >= 1.0:
        return np.ones(size, dtype=bool)
    if share <= 0.0:
        return np.zeros(size, dtype=bool)
    return rng.random(size) < share


def _chunk(
    laws: Laws,
    origin: I64,
    pre_count: int,
    window_us: int,
    rng: np.random.Generator,
    first_id: int,
    target_dtype: type,
    out: TypeEvents,
    pre_f: Sampler | None = None,
) -> tuple[I64, I64]:
    """Accesses and deletions of a chunk of files with ids ``first_id + i`` (the first
    ``pre_count`` of them pre-existing), appended to ``out``; returns the chunk's deletion times
    (NEVER when not deleted; for an object whose last access deleted it, that access's time) and
    last access times (-1 when none). ``pre_f``: the pre-existing files' interarrival sampler
    under the stopping rule (F_j's when None)."""
    ft = laws.ft
    n = origin.size
    chain = laws.chain
    # per access of the parts (one part) for chain types: op | implicit re-creation's command << 8
    ops: NDArray[np.uint16] | None = None
    gone = np.empty(0, dtype=np.int64)  # files (indices into the chunk) their last access deleted
    accessed = _bernoulli(rng, n, ft.accessed_share)
    acc_idx = np.flatnonzero(accessed)
    last_abs = np.full(n, -1, dtype=np.int64)  # last access in the window, -1 when none
    end_cells = np.full(n, -1, dtype=np.int32)  # the kept stream's end (``ChainLaw.states``), -1: none
    beyond = np.zeros(n, dtype=bool)  # accesses (would) continue past the window end
    parts: list[tuple[I64, I64]] = []  # (file index into idx, offset from its first access)
    idx = acc_idx
    first = np.empty(0, dtype=np.int64)
    if acc_idx.size:
        first = origin[acc_idx] + laws.activation.draw(rng, acc_idx.size)
        span = laws.span.draw(rng, acc_idx.size)
        if ft.observed.get("popularity") is not None:
            # A fitted type's popularity counts what the trace's window saw: each of its objects
            # was accessed in the window (late ones soon after being made: the delays the trace
            # shows are censored by its end). An object whose delay falls past the window draws
            # it again below the room it has, else a late object loses its whole stream (on a
            # real trace 8 % of a reader type's accesses, 1.3 points of getfileinfo).
            late = np.flatnonzero((first >= window_us) & (origin[acc_idx] < window_us))
            if late.size:
                room = window_us - origin[acc_idx[late]]
                first[late] = origin[acc_idx[late]] + laws.activation.draw_below(rng, room)
        inside = first < window_us
        beyond[acc_idx[~inside]] = True
        idx = acc_idx[inside]
        first = first[inside]
        span = span[inside]
        popularity = ft.observed.get("popularity")
        if popularity is not None and chain is not None:
            first, f_rel, rel, ops, last_rel, cut, ended, stream_ends = _chain_counted_streams(
                laws, chain, popularity, first, origin[idx], window_us, rng
            )
            end_cells[idx] = stream_ends
            beyond[idx] = cut
            gone = idx[ended]
            parts.append((f_rel, rel))
        elif popularity is not None:
            f_rel, rel, last_rel, cut = _counted_streams(laws, popularity, first, window_us, rng)
            beyond[idx] = cut
            parts.append((f_rel, rel))
        else:
            room = window_us - 1 - first  # offsets from the first access that lie in the window
            # pre-existing files come first (idx is ascending): they are the prefix [0, k)
            k = int(np.searchsorted(idx, pre_count)) if ft.span_population == "created" else 0
            last_rel = np.empty(idx.size, dtype=np.int64)
            f = laws.access
            for lo, hi, rule, law in ((0, k, _stopping_streams, pre_f or f), (k, idx.size, _closing_streams, f)):
                if hi <= lo:
                    continue
                sub: list[tuple[I64, I64]] = []
                last_rel[lo:hi], beyond[idx[lo:hi]] = rule(laws, law, span[lo:hi], room[lo:hi], rng, sub)
                for f_rel, _rel in sub:
                    f_rel += lo  # indices into the slice -> into idx
                parts.extend(sub)
            if chain is not None:
                ops, ended = _label_parts(chain, parts, idx.size, rng)
                gone = idx[ended]
        last_abs[idx] = first + last_rel
    # per accessed file: its first access as a key, and its id
    first_key = (first << RANK_BITS) | RANK[OpCode.OPEN]
    file_id: NDArray[np.integer] = (idx + first_id).astype(target_dtype)
    sizes = [int(f.size) for f, _ in parts]
    plain = ops is None and ft.kind == "file"
    opens = _bernoulli(rng, sum(sizes), ft.open_share) if plain and ft.open_share < 1.0 else None
    start = 0
    for (f_rel, rel), size in zip(parts, sizes):
        rel <<= RANK_BITS
        rel += np.take(first_key, f_rel)
        out.keys.append(rel)
        out.targets.append(np.take(file_id, f_rel))
        if ops is not None:
            out.metas.append(ops.astype(np.uint32) | np.uint32(ft.id << 16))
        elif not plain:
            out.metas.append(np.full(size, _meta(ft, OpCode.LIST_DIR), dtype=np.uint32))
        elif opens is None:
            out.metas.append(np.full(size, _meta(ft, OpCode.OPEN), dtype=np.uint32))
        else:
            out.metas.append(
                np.where(opens[start : start + size], _meta(ft, OpCode.OPEN), _meta(ft, OpCode.LIST_FILE))
            )
        start += size
    parts.clear()
    delete_us = _deletions(laws, origin, last_abs, beyond, window_us, rng, end_cells)
    delete_us[gone] = NEVER  # deleted by their last access already
    dels = np.flatnonzero(delete_us != NEVER)
    remove = OpCode.DELETE_DIR if ft.kind == "directory" else OpCode.DELETE
    out.keys.append((delete_us[dels] << RANK_BITS) | RANK[remove])
    out.metas.append(np.full(dels.size, _meta(ft, remove), dtype=np.uint32))
    out.targets.append((dels + first_id).astype(target_dtype))
    delete_us[gone] = last_abs[gone]
    return delete_us, last_abs


def _label_parts(
    chain: ChainLaw, parts: list[tuple[I64, I64]], n: int, rng: np.random.Generator
) -> tuple[NDArray[np.uint16], NDArray[np.bool_]]:
    """Label the span-driven path's accesses by the chain (their gaps stay F_j's): ``parts`` is
    replaced by one part in object-major order; returns its op codes (``ChainLaw.with_origins``)
    and, per object, whether its last access deleted it."""
    f_rel = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, dtype=np.int64)
    rel = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, dtype=np.int64)
    order = np.lexsort((rel, f_rel))
    f_rel, rel = f_rel[order], rel[order]
    parts.clear()
    parts.append((f_rel, rel))
    counts = np.bincount(f_rel, minlength=n).astype(np.int64)
    states = chain.states(counts, rng)
    ops = chain.labels(states, counts)
    return chain.with_origins(states, ops), chain.ends_deleted(ops, counts, counts, states)


def _match_streams_to_room(
    counts: I64, per_access: tuple[NDArray[Any], ...], per_object: tuple[NDArray[Any], ...], length: I64, room: I64,
    rng: np.random.Generator,
) -> tuple[I64, tuple[NDArray[Any], ...], tuple[NDArray[Any], ...], I64]:
    """Give the streams to the objects at random, each one a stream that fits its room where
    that can be done (``synth.assign``). The streams are drawn independently of when their
    objects appear, but in a trace an object made late had only the rest of the window for its
    accesses: without this, a long stream drawn for a late object loses its tail to the window's
    end (seen: a fifth of the accesses of a MapReduce trace's job files). Sorted instead (the
    longest to the most room), an object's accesses were tied to its birth: on a real mixed trace
    the files made first lived 330 s and those made last 17 s, the live files piled up mid-window
    and the offered load per minute rose and fell 4.4-fold where the trace's varied 1.2-fold. The
    streams (counts, commands, gaps; ``per_object``: the streams' ends) are only permuted:
    popularity and gap laws are unchanged."""
    stream_of = fitting_assignment(length, room, rng)
    start = np.cumsum(counts) - counts
    new_counts = counts[stream_of]
    new_start = np.cumsum(new_counts) - new_counts
    gather = np.arange(int(new_counts.sum()), dtype=np.int64) + np.repeat(start[stream_of] - new_start, new_counts)
    return new_counts, tuple(a[gather] for a in per_access), tuple(a[stream_of] for a in per_object), length[stream_of]


def _chain_counted_streams(
    laws: Laws,
    chain: ChainLaw,
    popularity: Distribution,
    first: I64,
    origin: I64,
    window_us: int,
    rng: np.random.Generator,
) -> tuple[I64, I64, I64, NDArray[np.uint16], I64, NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int32]]:
    """``_counted_streams`` for a type with a command chain: N accesses per object, labelled by
    the chain, and each gap drawn from its transition's law (``gaps["a>b"]``) or F_j (a
    semi-Markov process). Object-major order.

    The popularity a profile holds is what its trace's window saw, so the N accesses are kept in
    the window: an object whose stream would end past the window's end starts earlier, just
    enough (not before its origin: its creation, or t0); a stream longer than the room from the
    origin is redrawn (``_redraw_long_streams``); one still too long is squeezed when a little
    too long, else cut. Without this a periodic poller seen for the whole window would lose its
    last polls to the sum of its gaps' noise, and every object near the end a few accesses.

    Returns (first access per object, object index per access, offset, op code per access
    (``ChainLaw.with_origins``), last kept offset per object, whether the window cut the
    object's accesses, whether its last kept access deleted it, its kept stream's end cell:
    ``ChainLaw.states``)."""
    n = first.size
    counts = np.maximum(np.rint(popularity.quantile(stratified(rng, n))), 1).astype(np.int64)
    cells = np.full(int(counts.sum()), -1, dtype=np.int32)
    ends = np.full(n, -1, dtype=np.int32)
    states = chain.states(counts, rng, cells, ends)
    ops = chain.labels(states, counts)
    which, at = chain.transition_law(states, counts)
    start = np.cumsum(counts) - counts
    step = np.zeros(states.size, dtype=np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)[at]
    step[at] = _transition_gaps(laws, which, owner, rng, cells[at])
    offsets = _stream_offsets(step, counts, start)
    length = offsets[start + counts - 1]
    if _whole_window(laws.ft, window_us):
        # daemons seen for the whole window (every span within a tenth of the longest, which
        # is about the window): each stream lasts a drawn span, its count kept, so each polls at
        # its own rate from the window's start to its end. The gap laws are pooled over the
        # type's daemons: a slow one drew a fast one's gaps and fell silent a sixth of the
        # window early (the trace's last minute had twice its polls). Only by at most a half:
        # further off, the counts and the gaps disagree and the gaps (the daemon's period) win
        target = laws.span.draw(rng, n)
        scale = np.divide(target, length, out=np.ones(n, dtype=np.float64), where=length > 0)
        scale[(scale < 1.0 / WHOLE_WINDOW_RATE) | (scale > WHOLE_WINDOW_RATE)] = 1.0
        step = (step * np.repeat(scale, counts)).astype(np.int64)
        offsets = _stream_offsets(step, counts, start)
        length = offsets[start + counts - 1]
    room = window_us - 1 - origin
    if (length > room).any():
        counts, (ops, states, step, cells), (ends,), length = _match_streams_to_room(
            counts, (ops, states, step, cells), (ends,), length, room, rng
        )
        start = np.cumsum(counts) - counts
        offsets, length = _redraw_long_streams(laws, chain, states, step, counts, start, room, rng)
    first = _coded_starts(laws, cells[start], first, origin, window_us, rng)  # every object has an access
    f_rel = np.repeat(np.arange(n, dtype=np.int64), counts)
    first = np.where(first + length < window_us, first, np.maximum(window_us - 1 - length, origin))
    # a stream a little longer than the room from its origin (by at most ``SQUEEZE``) is squeezed
    # into it: the sum of many noisy gaps of a poller seen for the whole window overshoots the
    # window about every other time. One that no redraw fitted is cut: squeezing it would change
    # its gaps (a 10 s poller of a profile generated for a shorter ``--duration`` would poll faster)
    #
    # A stream too long for a room that holds the longest stream the trace saw (H_j's largest
    # span) is squeezed into it however much too long: the gap laws are pooled over a type's
    # objects, and a poller that listed its directory 1,538 times in a 600 s window drew the gaps
    # of pollers that polled 1,166 times in it, overshooting by a tenth (cut, it lost a tenth of
    # its polls). Squeezed, it keeps its count and polls at its own rate, as the trace's did.
    # (A shorter ``--duration`` leaves less room than that span: those are cut as before.)
    squeeze = (length > room) & ((room >= (1.0 - SQUEEZE) * length) | (room >= laws.span.max_us)) & (length > 0)
    if squeeze.any():
        factor = np.ones(n, dtype=np.float64)
        factor[squeeze] = room[squeeze] / length[squeeze]
        offsets = (offsets * np.repeat(factor, counts)).astype(np.int64)
    keep = first[f_rel] + offsets < window_us
    kept = np.bincount(f_rel[keep], minlength=n).astype(np.int64)
    cut = kept < counts
    ended = chain.ends_deleted(ops, counts, kept, states)
    last_rel = np.zeros(n, dtype=np.int64)
    has = kept > 0
    last_rel[has] = offsets[start[has] + kept[has] - 1]
    return first, f_rel[keep], offsets[keep], chain.with_origins(states, ops)[keep], last_rel, cut, ended, ends


def _coded_starts(laws: Laws, start_cells: NDArray[np.int32], first: I64, origin: I64, window_us: int,
                  rng: np.random.Generator) -> I64:
    """``first`` with the first access of each object that took a kept stream with a start code
    (``start_cells``, one per object; -1: none) drawn in that cell of the activation
    law instead, where that falls in the window (``CommandChain.stream_starts``). Why: drawn apart
    from its stream, a file whose benchmark reads it 7 s after its creation and makes it again
    14 s later was read anywhere from 0.2 to 7 s after it in a type of job files, and its
    create-to-create gaps spread over 7-21 s where the trace's were all 21 s (per-command
    interarrival KS 0.6 on a real MapReduce trace)."""
    objs = np.flatnonzero(start_cells >= 0)
    if objs.size == 0:
        return first
    coded = origin[objs] + laws.activation.at(cell_uniforms(start_cells[objs], rng))
    inside = coded < window_us
    out = first.copy()
    out[objs[inside]] = coded[inside]
    return out


def _whole_window(ft: FileType, window_us: int) -> bool:
    """Whether a type's objects were all accessed from about the window's start to its end:
    every span within ``WHOLE_WINDOW`` of the longest, itself within it of the window (a
    ``--duration`` longer than the trace's window leaves these types as they were)."""
    span = ft.active_span
    if span is None or not span.values or span.values[-1] <= 0:
        return False
    low, high = span.values[0] * 1000.0, span.values[-1] * 1000.0
    return low >= (1.0 - WHOLE_WINDOW) * high and high >= (1.0 - WHOLE_WINDOW) * window_us


def _transition_gaps(
    laws: Laws, which: NDArray[np.int64], owner: I64, rng: np.random.Generator, cells: NDArray[np.int32] | None = None
) -> I64:
    """One gap per entry of ``which`` (a transition's index into ``laws.gap_samplers``, -1: a
    transition without its own law: ``other_gaps``, else F_j), ``owner`` the object of each.
    A gap with a cell (``cells``: a kept stream's, ``chains.gap_uniforms``) is drawn in it. The
    others of an object's gaps of one law are stratified draws (``stratified_within``): on the
    real 120 s poller trace a daemon's 60 polls drawn i.i.d. put its per-object interarrival KS
    at 0.05-0.11, and the directories it lists with it (co-visits) share those gaps."""
    gaps = np.empty(which.size, dtype=np.int64)
    for i, sampler in enumerate((*laws.gap_samplers, laws.other_gaps or laws.access)):
        sel = np.flatnonzero(which == (i if i < len(laws.gap_samplers) else -1))
        u = stratified_within(rng, owner[sel])
        gaps[sel] = sampler.at(u if cells is None else gap_uniforms(cells[sel], u, rng))
    return gaps


def _stream_offsets(step: I64, counts: I64, start: I64) -> I64:
    """Offsets from each object's first access, from the gaps before each access (object-major,
    0 at an object's first access)."""
    offsets = np.cumsum(step)
    offsets -= np.repeat(offsets[start], counts)
    return offsets


def _redraw_long_streams(
    laws: Laws,
    chain: ChainLaw,
    states: NDArray[np.int16],
    step: I64,
    counts: I64,
    start: I64,
    room: I64,
    rng: np.random.Generator,
) -> tuple[I64, I64]:
    """Redraw the gaps of each stream longer than its object's room (by more than ``SQUEEZE``:
    a squeeze fits those), up to ``FIT_TRIES`` times, keeping the first draw that fits.

    This is rejection sampling: the gaps are conditioned on the stream fitting, as every stream
    of the trace's window did. N gaps drawn from the law overshoot the window by their noise
    alone: the real readers trace lost reads of 9 of the 26 files of one type to the cut.
    Returns (offsets, length per object); ``step`` (the gaps, object-major) is updated in place."""
    offsets = _stream_offsets(step, counts, start)
    length = offsets[start + counts - 1]
    for _ in range(FIT_TRIES):
        long = np.flatnonzero((length * (1.0 - SQUEEZE) > room) & (counts > 1))
        if long.size == 0:
            break
        sub_counts = counts[long]
        rows = np.repeat(start[long] - (np.cumsum(sub_counts) - sub_counts), sub_counts) + np.arange(
            int(sub_counts.sum()), dtype=np.int64
        )
        which, at = chain.transition_law(states[rows], sub_counts)
        trial = np.zeros(rows.size, dtype=np.int64)
        trial[at] = _transition_gaps(laws, which, np.repeat(np.arange(long.size, dtype=np.int64), sub_counts)[at], rng)
        sub_start = np.cumsum(sub_counts) - sub_counts
        sub_len = _stream_offsets(trial, sub_counts, sub_start)[sub_start + sub_counts - 1]
        fits = sub_len <= room[long]
        if fits.any():
            sel = np.repeat(fits, sub_counts)
            step[rows[sel]] = trial[sel]
            length[long[fits]] = sub_len[fits]
    return _stream_offsets(step, counts, start), length


def _closing_streams(
    laws: Laws, f: Sampler, span: I64, room: I64, rng: np.random.Generator, parts: list[tuple[I64, I64]]
) -> tuple[I64, NDArray[np.bool_]]:
    """The closing rule (spans exact): accesses with interarrivals drawn while they lie within
    ``span`` of the first access, then a last access at exactly first + span. Only offsets up to
    ``room`` (the window) are produced. Returns the last offset per file and whether the window
    cut the file's span (its closing access lies past the window's end)."""
    limit = np.minimum(span, room)
    cut = limit < span
    last_rel = _streams(laws, f, limit, ~cut, rng, parts)
    # the span is first-to-last access: a stream that ends inside the window ends with an
    # access exactly at first + H (unless an interarrival landed there already)
    closing = np.flatnonzero(~cut & (last_rel < span))
    parts.append((closing, span[closing]))
    last_rel[closing] = span[closing]
    return last_rel, cut


def _stopping_streams(
    laws: Laws, f: Sampler, span: I64, room: I64, rng: np.random.Generator, parts: list[tuple[I64, I64]]
) -> tuple[I64, NDArray[np.bool_]]:
    """The paper's renewal rule as a stopping time, for pre-existing files of a type whose H_j
    describes only created files (``span_population`` 'created'): draws from ``f`` (F_j, or the
    balanced law of ``_balanced_pre_sampler``) while the stream is before first + span; the first
    access at or past it is the last (none more when the span is 0). Whether to draw again
    depends only on the draws so far, so the pooled interarrivals are an unbiased sample of
    ``f``; the spans overshoot H_j. Offsets up to ``room`` only. Returns the last offset per file
    and whether the stream goes on past the window's end."""
    last_rel = _renewal(laws.ft, f, np.clip(np.minimum(span - 1, room), 0, None), rng, parts)
    cut = span - 1 > room
    ends = np.flatnonzero(~cut & (span > 0))
    # the draw that reaches first + span: f conditioned on reaching it (the renewal stopped at the
    # last offset before it and discarded the draw that went past, which had exactly this law)
    cross = last_rel[ends] + f.draw_at_least(rng, span[ends] - last_rel[ends])
    inside = cross <= room[ends]
    parts.append((ends[inside], cross[inside]))
    last_rel[ends[inside]] = cross[inside]
    cut[ends[~inside]] = True
    return last_rel, cut


def _streams(
    laws: Laws,
    f: Sampler,
    limit: I64,
    closed: NDArray[np.bool_],
    rng: np.random.Generator,
    parts: list[tuple[I64, I64]],
) -> I64:
    """Access offsets from each file's first access, within ``limit`` (>= 0) of it.

    Appends (file index per access, offset per access) parts to ``parts`` and returns the last
    offset per file. Files whose stream the closing access ends (``closed``: the window does not
    cut their span) draw from the type's ``access_gap_sampling`` table when it has one, so that
    their pooled interarrivals, closing gaps included, follow F_j; the others (and every file of
    a type without a table) draw from F_j, which the window then truncates.
    """
    ft = laws.ft
    calibrated = laws.calibrated if closed.any() else None
    if calibrated is None:
        return _renewal(ft, f, limit, rng, parts)
    if closed.all():
        return _renewal(ft, calibrated, limit, rng, parts)
    last = np.empty(limit.size, dtype=np.int64)
    for sel, sampler in ((np.flatnonzero(closed), calibrated), (np.flatnonzero(~closed), f)):
        sub: list[tuple[I64, I64]] = []
        last[sel] = _renewal(ft, sampler, limit[sel], rng, sub)
        parts.extend((sel[f_rel], rel) for f_rel, rel in sub)
    return last


def _renewal(ft: FileType, sampler: Sampler, limit: I64, rng: np.random.Generator, parts: list[tuple[I64, I64]]) -> I64:
    """``_streams`` for files that all draw from ``sampler``."""
    n = limit.size
    parts.append((np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)))  # first accesses
    cur = np.zeros(n, dtype=np.int64)
    active = np.flatnonzero(limit > 0)
    if active.size and sampler.max_us <= 0:
        raise ScheduleError(f"type {ft.id}: access_interarrival is 0 everywhere, so accesses never end")
    mean = max(sampler.mean_us, 1.0)
    while active.size:
        room = limit[active] - cur[active]
        want = np.minimum((room * (WANT_FACTOR / mean)).astype(np.int64) + 1, DRAWS_PER_ROUND)
        ends = np.cumsum(want)
        # bound one round's draws: files beyond the budget wait for the next round
        take = max(1, int(np.searchsorted(ends, DRAWS_PER_ROUND, side="right")))
        batch, later = active[:take], active[take:]
        k = want[:take]
        starts = ends[:take] - k
        draws = sampler.draw(rng, int(ends[take - 1]))
        np.cumsum(draws, out=draws)
        shift = -cur[batch]
        shift[1:] += draws[starts[1:] - 1]
        draws -= np.repeat(shift, k)
        # draws now holds cur + partial sums of each file's interarrivals
        ok = draws <= np.repeat(limit[batch], k)
        cnt = np.add.reduceat(ok.astype(np.int64), starts)
        parts.append((np.repeat(batch, cnt), draws[ok]))
        done = cnt < k
        cur[batch[~done]] = draws[(starts + k - 1)[~done]]
        got = done & (cnt > 0)
        cur[batch[got]] = draws[(starts + cnt - 1)[got]]
        active = np.concatenate([batch[~done], later])
    return cur


def _counted_streams(
    laws: Laws, popularity: Distribution, first: I64, window_us: int, rng: np.random.Generator
) -> tuple[I64, I64, I64, NDArray[np.bool_]]:
    """Access offsets when the type carries its observed popularity: each file gets N accesses,
    N drawn from the popularity distribution, the first at offset 0 and the others after N - 1
    interarrivals drawn from F_j. Popularity and F_j are then reproduced by construction and the
    span is their consequence. Accesses at or past the window's end are cut.

    Returns (file index per access, offset per access, last kept offset per file, whether the
    file's accesses were cut by the window).
    """
    n = first.size
    counts = np.maximum(np.rint(popularity.sample(rng, n)), 1).astype(np.int64)
    gaps = counts - 1
    draws = laws.access.draw(rng, int(gaps.sum()))
    prefix = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(draws)])
    seg_start = np.cumsum(gaps) - gaps
    file_of = np.repeat(np.arange(n, dtype=np.int64), gaps)
    offsets = prefix[1:] - prefix[seg_start[file_of]]
    f_rel = np.concatenate([np.arange(n, dtype=np.int64), file_of])
    rel = np.concatenate([np.zeros(n, dtype=np.int64), offsets])
    keep = first[f_rel] + rel < window_us
    total = prefix[seg_start + gaps] - prefix[seg_start]
    cut = first + total >= window_us
    f_rel, rel = f_rel[keep], rel[keep]
    last_rel = np.zeros(n, dtype=np.int64)
    np.maximum.at(last_rel, f_rel, rel)
    return f_rel, rel, last_rel, cut


def _match_delays_to_room(delay: I64, base: I64, window_us: int, rng: np.random.Generator) -> I64:
    """The deletion delays given to the objects at random, each one a delay that ends in the
    window where a swap can make it so (``synth.assign``). The delays are drawn independently of
    when their objects appear, but the trace's deleted objects were deleted inside its window:
    one created late had only the rest of it. Drawn blindly, the delays of late objects fall past
    the window's end (a mixed trace's reader files, every one created and deleted in the window:
    13 % of their deletions lost). Only permuted, the delays keep their law. Format-2 (fitted)
    types only: the paper's model draws them independently, as it did."""
    return delay[fitting_assignment(delay, window_us - 1 - base, rng)]


def _deletions(
    laws: Laws, origin: I64, last_abs: I64, beyond: NDArray[np.bool_], window_us: int, rng: np.random.Generator,
    end_cells: NDArray[np.int32],
) -> I64:
    """When each object is deleted (NEVER: not in the window). An object with a kept stream's end
    (``end_cells``: ``CommandChain.stream_ends``) is deleted as its stream's object was, that long
    after its last access; the others at the rest of ``delete_share``, at an age of D_j."""
    ft = laws.ft
    n = origin.size
    out = np.full(n, NEVER, dtype=np.int64)
    share = ft.delete_share
    free = np.ones(n, dtype=bool)
    end_law = laws.end_gap
    if end_law is not None:
        coded = np.flatnonzero(end_cells >= 0)
        free = end_cells == -1
        if coded.size:
            last = last_abs[coded]
            # at least 1 ms after the last access, as D_j's deletions (below)
            gap = end_law.at(cell_uniforms(end_cells[coded], rng))
            when = np.where(last >= 0, last + np.maximum(gap, 1000), origin[coded] + gap)
            keep = (when < window_us) & ~beyond[coded]
            out[coded[keep]] = when[keep]
        # the others make up the rest of the type's deletions
        share = min(max((share * n - coded.size) / max(int(free.sum()), 1), 0.0), 1.0)
    flagged = np.flatnonzero(free & _bernoulli(rng, n, share))
    if flagged.size == 0:
        return out
    delay = laws.delete.draw(rng, flagged.size)
    last = last_abs[flagged]
    if laws.chain is not None:
        delay = _match_delays_to_room(delay, origin[flagged] if ft.delete_delay_origin != "last_access"
                                      else np.where(last >= 0, last, origin[flagged]), window_us, rng)
    if ft.delete_delay_origin == "last_access":
        when = np.where(last >= 0, last, origin[flagged]) + delay
    else:
        when = np.where(last >= 0, np.maximum(origin[flagged] + delay, last + 1000), origin[flagged] + delay)
    keep = (when < window_us) & ~beyond[flagged]
    out[flagged[keep]] = when[keep]
    return out
