"""Which command each access of a format-2 type is: its ``CommandChain`` (a first-order Markov
chain), sampled for many objects at once, and the per-transition gap laws (semi-Markov).

Accesses are handled in *object-major* order: the accesses of one object are contiguous and in
time order, ``counts[i]`` of them for object ``i``. The chain is walked one step index at a
time over the objects that still have accesses at that step (the objects sorted by decreasing
count, so they are a shrinking prefix): one vectorised draw per step, nothing per event.

Op codes come from ``opcode_for(cmd, kind)`` (an access is never the event that made the
object: ``create`` is CREATE_OVERWRITE, ``mkdirs`` MKDIRS_EXISTING). Two fix-ups keep a stream
replayable: after a mid-stream ``delete`` the ``getfileinfo`` accesses that follow are lookups that
miss (GETFILEINFO_ABSENT, as in a trace, where a job checks that its output is gone), and the first
other access re-creates the object (CREATE_OVERWRITE on a file, MKDIRS_EXISTING on a directory)
unless it does already (on a directory the access's own command is kept beside, for
``synth.recreation``: ``with_origins``); an object whose last access in the window is a
``delete``, or a lookup that misses after one, is gone (``ends_deleted``: no lifecycle deletion
follows).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from mimesisbench.errors import ScheduleError
from mimesisbench.profile.schema import (
    GAP_CODE_CHARS,
    GAP_CODE_LEVELS,
    MAX_SEQUENCE_LENGTH,
    NO_CODE,
    STREAM_ALPHABET,
    FileType,
)
from mimesisbench.schedule.format import OpCode, opcode_for
from mimesisbench.synth.bridge import BRIDGE_STEPS, bridge_rows, end_weights

I64 = NDArray[np.int64]
#: the op an access after a mid-stream delete becomes, per kind
RECREATE = MappingProxyType({"file": OpCode.CREATE_OVERWRITE, "directory": OpCode.MKDIRS_EXISTING})
REMOVE = MappingProxyType({"file": OpCode.DELETE, "directory": OpCode.DELETE_DIR})
#: a lookup of the object, and the same lookup once its stream deleted it (a miss), per kind
LOOKUP = MappingProxyType({"file": OpCode.GETFILEINFO, "directory": OpCode.GETFILEINFO_DIR})
ABSENT = MappingProxyType({"file": OpCode.GETFILEINFO_ABSENT, "directory": OpCode.GETFILEINFO_ABSENT_DIR})
#: where ``ChainLaw.with_origins`` keeps an implicit re-creation's command (the meta's generation byte)
ORIGIN_SHIFT = 8
#: an object's end cell (``ChainLaw.states``) when its kept stream's object was not deleted
NOT_DELETED = -2
#: STREAM_ALPHABET character (byte) -> its index
_DECODE = np.zeros(256, dtype=np.int16)
_DECODE[np.frombuffer(STREAM_ALPHABET.encode("ascii"), dtype=np.uint8)] = np.arange(len(STREAM_ALPHABET))
_DECODE.flags.writeable = False


def stratified(rng: np.random.Generator, size: int) -> NDArray[np.float64]:
    """``size`` uniforms on [0, 1), one in each of ``size`` equal strata, in random order (Latin
    hypercube sampling in one dimension): their empirical law is within 1 / size of the uniform
    everywhere, so the few objects of a small type follow its distributions as closely as their
    number allows, and many objects as i.i.d. draws would."""
    u = rng.permutation(size).astype(np.float64)
    u += rng.random(size)
    u /= max(size, 1)
    return u


def stratified_within(rng: np.random.Generator, group: NDArray[np.int64]) -> NDArray[np.float64]:
    """One uniform on [0, 1) per entry of ``group``, stratified (``stratified``) within each group:
    the k entries of a group fall one in each of k equal strata, in random order. Used for an
    object's gaps: a daemon's k polls then follow the gap law within 1 / k, where k i.i.d. draws
    are off by about 0.9 / sqrt(k), and objects that share one daemon's times (co-visits) carry
    that noise into every member."""
    size = group.size
    order = np.lexsort((rng.random(size), group))
    sorted_group = group[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_group[1:] != sorted_group[:-1]]))
    counts = np.diff(np.concatenate([starts, [size]]))
    rank = np.arange(size, dtype=np.float64) - np.repeat(starts, counts)
    rank += rng.random(size)
    rank /= np.repeat(counts, counts)
    u = np.empty(size, dtype=np.float64)
    u[order] = rank
    return u


class ChainLaw:
    """A type's command chain, ready to sample (op codes per state, row CDFs laid end to end)."""

    def __init__(self, ft: FileType) -> None:
        chain = ft.commands
        if chain is None:
            raise ValueError("ChainLaw needs a type with commands")
        self.kind = ft.kind
        k = len(chain.commands)
        self.k = k
        ops = []
        for cmd in chain.commands:
            op = opcode_for(cmd, ft.kind)
            if op is None:
                raise ScheduleError(
                    f"type {ft.id}: command {cmd!r} on a {ft.kind} cannot be held by a schedule; "
                    "leave it out of the type's commands"
                )
            ops.append(int(op))
        self.ops = np.array(ops, dtype=np.uint8)
        self._walker = _Walker(chain.first, chain.next, chain.last)
        short = chain.short_walk
        self._short = None if short is None else _Walker(short.first, short.next, short.last)
        index = {c: i for i, c in enumerate(chain.commands)}
        # per length n: the kept sequences of n commands (rows of states) and their shares' CDF
        by_length: dict[int, list[tuple[list[int], float]]] = {}
        for key, p in chain.sequences.items():
            seq = [index[c] for c in key.split(">")]
            by_length.setdefault(len(seq), []).append((seq, p))
        self._sequences = {
            n: (np.array([s for s, _ in rows], dtype=np.int16), np.cumsum([p for _, p in rows]))
            for n, rows in sorted(by_length.items())
        }
        self._kept = _KeptStreams(chain.streams, chain.stream_gaps, chain.stream_starts, chain.stream_ends)
        self.gap_keys: list[tuple[int, int]] = []
        self.gap_laws = []
        for key, dist in sorted(chain.gaps.items()):
            a, _, b = key.partition(">")
            self.gap_keys.append((index[a], index[b]))
            self.gap_laws.append(dist)

    def states(self, counts: I64, rng: np.random.Generator, cells: NDArray[np.int32] | None = None,
               ends: NDArray[np.int32] | None = None) -> NDArray[np.int16]:
        """Chain states of ``counts[i]`` accesses per object, object-major: an object with n
        accesses takes one of the type's kept sequences of n commands (``CommandChain.sequences``)
        with its share, else one of its kept streams of that length (``CommandChain.streams``), else
        walks the chain (a bridge to the type's ``last`` law when it has one: ``synth.bridge``).
        When the kept streams have gap codes (``CommandChain.stream_gaps``: those of two or more
        accesses are then a sample of all the type's streams of that length) a kept stream of
        exactly n > 1 accesses comes before the sequences.
        ``cells`` (one per access, all -1) gets the gap cells of the kept streams taken
        (``gap_uniforms``) and at each one's first access its start's cell; ``ends`` (one per
        object, all -1) their end cells (``NOT_DELETED`` for a stream whose object was not deleted)."""
        counts = np.asarray(counts, dtype=np.int64)
        total = int(counts.sum())
        out = np.empty(total, dtype=np.int16)
        if total == 0:
            return out
        start = np.cumsum(counts) - counts
        walked = counts > 0
        if self._kept.coded:
            # kept streams with their gaps are a sample of all the type's streams of two or more
            # accesses: one of n accesses stands for an object of n accesses, whatever sequence it
            # has. Not of single accesses: the fit keeps only those no kept sequence covers (the
            # rare commands), so they come after the sequences, as without codes; taken first, a
            # type's one kept single access (a setReplication seen once) went to every object of
            # one access (on a round trip, 107 of them where the trace had 1)
            multi = walked & (counts > 1)
            self._kept.take(out, counts, start, multi, rng, cells, ends, exact=True)
            walked = np.where(counts > 1, multi, walked)
        # an object with n accesses takes a kept sequence of n commands with its share
        for n, (table, cdf) in self._sequences.items():
            objs = np.flatnonzero((counts == n) & walked)
            if objs.size == 0:
                continue
            pick = np.searchsorted(cdf, rng.random(objs.size), side="right")
            use = pick < table.shape[0]
            out[start[objs[use], None] + np.arange(n)] = table[pick[use]]
            walked[objs[use]] = False
        self._kept.take(out, counts, start, walked, rng, cells, ends)
        if self._short is not None:
            for walker, part in ((self._short, walked & (counts <= MAX_SEQUENCE_LENGTH)),
                                 (self._walker, walked & (counts > MAX_SEQUENCE_LENGTH))):
                _walk_objects(walker, out, counts, start, part, rng)
        else:
            _walk_objects(self._walker, out, counts, start, walked, rng)
        return out

    def labels(self, states: NDArray[np.int16], counts: I64) -> NDArray[np.uint8]:
        """Op codes of object-major states, with the re-create fix-up (module docstring)."""
        ops = self.ops[states]
        counts = np.asarray(counts, dtype=np.int64)
        ends = np.cumsum(counts)
        last = np.zeros(ops.size, dtype=bool)
        last[ends[counts > 0] - 1] = True
        deletes = np.flatnonzero((ops == REMOVE[self.kind]) & ~last)
        if deletes.size == 0:
            return ops
        # After a mid-stream delete the lookups that follow it miss (ABSENT); the first other
        # access (the *stop*) re-creates the object unless it does already. A delete that is the
        # stop of the delete before it becomes that re-creation, so it starts no run of its own:
        # along a chain of deletes with only lookups between them every other one is kept.
        n = ops.size
        look = ops == LOOKUP[self.kind]
        other = np.flatnonzero(~look)
        prev_other = np.full(n, -1, dtype=np.int64)  # the last non-lookup at or before each access
        prev_other[other] = other
        np.maximum.accumulate(prev_other, out=prev_other)
        next_other = np.full(n + 1, n, dtype=np.int64)  # the first non-lookup at or after it
        next_other[other] = other
        next_other = np.minimum.accumulate(next_other[::-1])[::-1]
        owner = np.repeat(np.arange(counts.size), counts)  # the object of each access
        obj_start = (ends - counts)[owner]
        before = np.where(deletes > 0, prev_other[np.maximum(deletes - 1, 0)], -1)
        linked = (before >= obj_start[deletes]) & (ops[np.maximum(before, 0)] == REMOVE[self.kind])
        if self.kind == "directory":
            # every delete of a directory starts a run: one that follows a delete (only lookups
            # between) is itself the stop that re-creates the directory, implicitly (its own
            # command kept by ``with_origins``): ``synth.recreation`` puts a file made between
            # the two into it and gives it its delete back. A job's control directory is deleted
            # every 6 s and made again by the files created in it: with every other delete made a
            # mkdirs, a real jobs trace's directories came out with half their deletes, 11-12 s apart
            kept = deletes
        else:
            k = np.arange(deletes.size)
            chain_start = np.maximum.accumulate(np.where(linked, 0, k))
            kept = deletes[(k - chain_start) % 2 == 0]
        starts_run = np.zeros(n, dtype=bool)
        starts_run[kept] = True
        ops[look & (prev_other >= obj_start) & starts_run[np.maximum(prev_other, 0)]] = ABSENT[self.kind]
        stop = next_other[kept + 1]
        stop = stop[stop < ends[owner[kept]]]
        ops[stop] = RECREATE[self.kind]
        return ops

    def with_origins(self, states: NDArray[np.int16], ops: NDArray[np.uint8]) -> NDArray[np.uint16]:
        """``ops`` (``labels``' of ``states``) as uint16, with the command of each access the
        re-create fix-up made a directory's MKDIRS_EXISTING in the high byte (``ORIGIN_SHIFT``),
        0 elsewhere: the accesses after a mid-stream delete that a real workload re-creates
        implicitly (``synth.recreation``). A ``mkdirs`` is no implicit re-creation; a ``delete``
        is (the directory made again by a file, then deleted again); a file is never re-created
        implicitly."""
        out = ops.astype(np.uint16)
        if self.kind != "directory":
            return out
        was = self.ops[states]
        implicit = (ops != was) & (ops == RECREATE[self.kind])
        out[implicit] |= was[implicit].astype(np.uint16) << ORIGIN_SHIFT
        return out

    def ends_deleted(self, ops: NDArray[np.uint8], counts: I64, kept: I64, states: NDArray[np.int16]) -> NDArray[np.bool_]:
        """Per object: whether the last of its ``kept`` first accesses (of ``counts``, object-major
        ``ops``, ``labels``' of ``states``) deletes it, so that it is gone afterwards: a delete, a
        lookup that misses after one, or a directory's delete that waits for its re-creation
        (``labels``; no lifecycle deletion may follow it, in case ``synth.recreation`` gives it its
        delete back)."""
        start = np.cumsum(counts) - counts
        out = np.zeros(counts.size, dtype=bool)
        has = np.flatnonzero(kept > 0)
        at = start[has] + kept[has] - 1
        last = ops[at]
        out[has] = (last == REMOVE[self.kind]) | (last == ABSENT[self.kind])
        if self.kind == "directory":  # a file's delete after a delete is an explicit re-creation
            out[has] |= self.ops[states[at]] == REMOVE[self.kind]
        return out

    def transition_law(self, states: NDArray[np.int16], counts: I64) -> tuple[NDArray[np.int64], I64]:
        """For each gap (object-major, one per access but the first of each object): the index
        of its transition's law in ``gap_laws``, -1 for F_j; and the access index each gap ends at."""
        counts = np.asarray(counts, dtype=np.int64)
        not_first = np.ones(states.size, dtype=bool)
        starts = (np.cumsum(counts) - counts)[counts > 0]
        not_first[starts] = False
        at = np.flatnonzero(not_first)
        which = np.full(at.size, -1, dtype=np.int64)
        if self.gap_keys:
            table = np.full(self.k * self.k, -1, dtype=np.int64)
            for i, (a, b) in enumerate(self.gap_keys):
                table[a * self.k + b] = i
            which = table[states[at - 1].astype(np.int64) * self.k + states[at]]
        return which, at


def gap_uniforms(cells: NDArray[np.int32], fresh: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """The uniforms a stream's gaps draw their laws at: uniform within its cell (of
    ``GAP_CODE_LEVELS``) where a gap has one (a kept stream's: ``CommandChain.stream_gaps``),
    ``fresh`` (updated in place) where it has none (-1)."""
    coded = np.flatnonzero(cells >= 0)
    fresh[coded] = cell_uniforms(cells[coded], rng)
    return fresh


def cell_uniforms(cells: NDArray[np.int32], rng: np.random.Generator) -> NDArray[np.float64]:
    """One uniform within each of ``cells`` (of ``GAP_CODE_LEVELS``, all >= 0): where a kept
    stream's code (gap, start or end) puts its quantile."""
    return (cells + rng.random(cells.size)) / GAP_CODE_LEVELS


def volatile(ft: FileType) -> bool:
    """A directory type whose objects are renamed or deleted (its pre-existing objects are extra
    empty directories, never the tree's)."""
    chain = ft.commands
    moved = chain is not None and any(c in ("rename", "delete") for c in chain.commands)
    return moved or ft.delete_share > 0


class _KeptStreams:
    """A type's kept streams (``CommandChain.streams``) by length, ready to hand out, with their
    cells: per access, the gap's before it (``CommandChain.stream_gaps``), and at a stream's first
    access its start's (``CommandChain.stream_starts``); -1 where there is none."""

    def __init__(self, streams: list[str], stream_gaps: str, stream_starts: str = "", stream_ends: str = "") -> None:
        by_length: dict[int, list[int]] = {}
        for i, stream in enumerate(streams):
            by_length.setdefault(len(stream), []).append(i)
        self.lengths = np.array(sorted(by_length), dtype=np.int64)
        self.coded = bool(stream_gaps)
        # every gap's cell, stream after stream, and where each stream's gaps begin
        gap_cells = _decode_cells(stream_gaps)
        start_cells = _decode_cells(stream_starts)
        end_cells = _decode_cells(stream_ends)
        if end_cells.size:
            gone = np.frombuffer(stream_ends.encode("ascii"), dtype=np.uint8)[::GAP_CODE_CHARS] == ord(NO_CODE)
            end_cells[gone] = NOT_DELETED
        n_gaps = np.fromiter((len(stream) - 1 for stream in streams), dtype=np.int64, count=len(streams))
        gap_start = np.cumsum(n_gaps) - n_gaps
        self.tables: dict[int, NDArray[np.int16]] = {}
        self.cells: dict[int, NDArray[np.int32]] = {}
        self.ends: dict[int, NDArray[np.int32]] = {}
        for n, rows in by_length.items():
            text = b"".join(streams[i].encode("ascii") for i in rows)
            self.tables[n] = _DECODE[np.frombuffer(text, dtype=np.uint8)].reshape(len(rows), n)
            cells = np.full((len(rows), n), -1, dtype=np.int32)
            if self.coded and n > 1:
                cells[:, 1:] = gap_cells[gap_start[rows][:, None] + np.arange(n - 1)]
            if start_cells.size:
                cells[:, 0] = start_cells[rows]
            self.cells[n] = cells
            self.ends[n] = end_cells[rows] if end_cells.size else np.full(len(rows), -1, dtype=np.int32)

    def take(self, out: NDArray[np.int16], counts: I64, start: I64, chosen: NDArray[np.bool_],
             rng: np.random.Generator, cells: NDArray[np.int32] | None = None,
             ends: NDArray[np.int32] | None = None, exact: bool = False) -> None:
        """Each ``chosen`` object with n accesses takes a kept stream of n accesses drawn at random
        (each stream as often as the others, give or take one: ``_balanced``), or, with none of
        that length, one of the shortest longer ones (at most a quarter longer, two accesses for
        the shortest) cut to its first and last accesses (its head and its end, as the trace's
        streams begin and end); it is then no longer ``chosen``. The others are left to the chain.
        ``cells`` (per access, like ``out``) gets the stream's gap cells; the gap where a cut
        stream's head meets its end has none (-1); ``ends`` (per object) the stream's end cell.
        ``exact``: only streams of exactly n accesses."""
        if self.lengths.size == 0:
            return
        objs = np.flatnonzero(chosen)
        if objs.size == 0:
            return
        want = counts[objs]
        for n in np.unique(want).tolist():
            at = int(np.searchsorted(self.lengths, n))
            if at == self.lengths.size or int(self.lengths[at]) > (n if exact else n + max(2, n // 4)):
                continue
            m = int(self.lengths[at])
            table = self.tables[m]
            these = objs[want == n]
            pick = _balanced(rng, table.shape[0], these.size)
            rows, row_cells = table[pick], self.cells[m][pick]
            if m != n:
                head = (n + 1) // 2
                rows = np.concatenate([rows[:, :head], rows[:, m - (n - head):]], axis=1)
                row_cells = np.concatenate([row_cells[:, :head], row_cells[:, m - (n - head):]], axis=1)
                row_cells[:, head] = -1
            where = start[these, None] + np.arange(n)
            out[where] = rows
            if cells is not None:
                cells[where] = row_cells
            if ends is not None:
                ends[these] = self.ends[m][pick]
            chosen[these] = False


def _decode_cells(codes: str) -> NDArray[np.int32]:
    """The cells of a code string (``GAP_CODE_CHARS`` STREAM_ALPHABET digits each, most
    significant first)."""
    digits = _DECODE[np.frombuffer(codes.encode("ascii"), dtype=np.uint8)].astype(np.int32)
    digits = digits.reshape(-1, GAP_CODE_CHARS)
    cells = np.zeros(digits.shape[0], dtype=np.int32)
    for d in range(GAP_CODE_CHARS):
        cells = cells * len(STREAM_ALPHABET) + digits[:, d]
    return cells


def _balanced(rng: np.random.Generator, population: int, size: int) -> NDArray[np.int64]:
    """``size`` indices into ``population`` items in random order, each item ``size //
    population`` times and a random ``size % population`` of them once more (stratified, as
    ``stratified``'s draws): the 8 directories of a poller type, 5 listed and 3 stat-ed, take the 8
    kept streams, where drawing with replacement gave 7 listings and one lookup as often as not."""
    whole, rest = divmod(size, population)
    out = np.concatenate([np.repeat(np.arange(population), whole), rng.choice(population, rest, replace=False)])
    return rng.permutation(out)


class _Walker:
    """One walk law of a chain (``first``, ``next``, ``last``), ready to sample."""

    def __init__(self, first: list[float], nxt: list[list[float]], last: list[float] | None) -> None:
        self.first_law = np.asarray(first, dtype=np.float64)
        cdf = np.cumsum(self.first_law)
        cdf[-1] = 1.0
        self.first_cdf = cdf
        self.p = np.asarray(nxt, dtype=np.float64)
        self.k = self.p.shape[0]
        rows = np.cumsum(self.p, axis=1)
        rows[:, -1] = 1.0
        # row i's CDF shifted by i: one sorted array, one searchsorted per step for every object
        self.rows = (rows + np.arange(self.k, dtype=np.float64)[:, None]).ravel()
        self.last = None if last is None else np.asarray(last, dtype=np.float64)

    def walk(self, out: NDArray[np.int16], desc: I64, pos: I64, rng: np.random.Generator) -> None:
        """Walk for objects with ``desc`` accesses (descending, all > 0) from ``pos`` in ``out``:
        the first states stratified (``stratified``: a type with a few objects gets each first
        command in its share, not a binomial draw of it; the chain may be reducible: a poller
        directory is listed and never stat-ed, so the first state fixes the object's mix), then one
        vectorised step at a time over the objects that still have accesses (a shrinking prefix),
        bridged to ``last`` when the law has one (``synth.bridge``)."""
        m = desc.size
        if m == 0:
            return
        k = self.k
        out[pos] = np.minimum(np.searchsorted(self.first_cdf, stratified(rng, m), side="right"), k - 1)
        e = None if self.last is None else end_weights(self.p, self.first_law, self.last, desc)
        steps = 0 if e is None else int(min(desc[0] - 1, BRIDGE_STEPS))
        bridged = bridge_rows(self.p, e, steps) if e is not None and steps > 0 else None
        neg = -desc  # ascending: objects with more than s accesses are a prefix
        step = 1
        while True:
            m = int(np.searchsorted(neg, -step, side="left"))
            if m == 0:
                break
            idx = pos[:m] + step
            prev = out[idx - 1].astype(np.int64)
            u = rng.random(m)
            at = np.searchsorted(self.rows, prev + u, side="right") - prev * k
            if bridged is not None:
                left = desc[:m] - 1 - step  # steps after this one
                near = np.flatnonzero(left < steps)
                row = left[near] * k + prev[near]
                at[near] = np.searchsorted(bridged, row + u[near], side="right") - row * k
            out[idx] = np.clip(at, 0, k - 1)
            step += 1


def _walk_objects(
    walker: _Walker, out: NDArray[np.int16], counts: I64, start: I64, chosen: NDArray[np.bool_], rng: np.random.Generator
) -> None:
    """Walk ``walker`` for the ``chosen`` objects (object-major ``out``, ``start`` per object)."""
    objs = np.flatnonzero(chosen)
    order = np.argsort(-counts[objs], kind="stable")
    walker.walk(out, counts[objs][order], start[objs][order], rng)
