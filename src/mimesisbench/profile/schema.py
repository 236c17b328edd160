"""The profile format (version 2; version 1 is read too): typed, strict (unknown keys are errors), validated.

A profile is a JSON document. Times are milliseconds. Symbols follow the paper's Table 1:

* global: window length ``t_end`` (``window_ms``), ``n`` (``total_creates``, files created in
  the window), the operation mix, the namespace's shape;
* per type j: weight ``w_j`` (share of the ``n`` created files), ``pre_j`` (pre-existing files),
  ``C_j`` create interarrivals, ``G_j`` delay to first access (from creation, or from t0 for
  pre-existing files), ``H_j`` active span (first to last access), ``F_j`` per-file access
  interarrivals, ``D_j`` delete delay, ``p_j`` share of accesses that are opens (the rest list
  the file); optionally a generator table ``access_gap_sampling`` (``GapSampling``: the
  calibrated distribution span-driven types sample instead of F_j, docs/generate.md) and
  ``span_population`` (which files H_j describes: all, or only those created in the trace's
  window, as in the 2014 format).

The generator creates ``round(w_j * n)`` files of type j by a renewal process with
interarrivals from ``C_j``, cut at the window's end (as the 2014 generator did).

Limits (checked when a profile is read, so that a hostile or corrupt profile is refused naming
its key instead of overflowing a table or exhausting memory; docs/model.md): type ids
``1..MAX_TYPE_ID`` (Int16 in schedules), at most ``MAX_TYPES`` types, at most ``MAX_FILES``
files created and pre-existing (each and in all), times (window, every time distribution) at
most ``MAX_TIME_MS``, op-mix ratios at most ``MAX_RATIO``, observed popularity at most
``MAX_ACCESSES_PER_FILE``, namespace at most ``MAX_DIRECTORIES`` directories.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from mimesisbench.profile.distribution import Distribution

PROFILE_FORMAT: Final = "mimesisbench-profile"
PROFILE_VERSION: Final = 2
#: versions this tool reads: 1 (no command chains, no directory types) is read as it is
READABLE_PROFILE_VERSIONS: Final = (1, 2)

#: type ids are Int16 in schedules
MAX_TYPE_ID = 32767
MAX_TYPES = 1000
#: files created in the window, pre-existing files of a type, and both in all
MAX_FILES = 10**9
#: the window and every time distribution, ms (10**12 ms, about 31.7 years: the schedule
#: format's ``MAX_TIME_US``)
MAX_TIME_MS = 10**12
#: each op-mix ratio (operations per create or per access)
MAX_RATIO = 1000.0
#: accesses per file in an observed popularity distribution
MAX_ACCESSES_PER_FILE = 10**7
MAX_DIRECTORIES = 10**8
MAX_DEPTH = 10_000
#: commands in one type's chain
MAX_COMMANDS = 64
#: the longest command sequence a chain keeps whole (``CommandChain.sequences``)
MAX_SEQUENCE_LENGTH = 10
#: one character per access of a kept stream (``CommandChain.streams``): command i is STREAM_ALPHABET[i]
#: (the URL-safe base64 digits, one for each of at most MAX_COMMANDS commands)
STREAM_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#: the accesses a type's kept streams hold at most, all streams together
MAX_KEPT_STREAM_ACCESSES = 2**17
#: a kept stream's gap is ``GAP_CODE_CHARS`` STREAM_ALPHABET digits (``CommandChain.stream_gaps``):
#: its quantile in its transition's law, in one of ``GAP_CODE_LEVELS`` equal cells
GAP_CODE_CHARS = 2
GAP_CODE_LEVELS = len(STREAM_ALPHABET) ** GAP_CODE_CHARS
#: a kept stream's end code of ``GAP_CODE_CHARS`` of these: its object was not deleted in the window
NO_CODE = "."

Share = Annotated[float, Field(ge=0.0, le=1.0)]
Ratio = Annotated[float, Field(ge=0.0, le=MAX_RATIO)]
FileCount = Annotated[int, Field(ge=0, le=MAX_FILES)]

_TIME_KEYS = ("create_interarrival", "activation_delay", "active_span", "access_interarrival", "delete_delay")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GapSampling(_Strict):
    """A generator table for span-driven types: the distribution the closing rule draws access
    interarrivals from instead of F_j, calibrated so that the pooled generated interarrivals
    (accepted draws plus closing gaps) follow F_j (``mimesisbench.synth.calibration``).

    Only used for types without observed popularity; spans stay exact (H_j). Computed when a
    2014 profile is imported; the KS figures are of pooled closing-rule gaps against F_j on a
    fresh simulated sample, with this table (``ks``) and with F_j itself (``ks_uncalibrated``).
    """

    distribution: Distribution = Field(description="F'_j, ms: what the closing rule samples")
    ks: NonNegativeFloat = Field(description="KS of pooled generated interarrivals to F_j with this table")
    ks_uncalibrated: NonNegativeFloat = Field(description="the same KS when sampling F_j itself")
    seed: int = Field(description="seed of the calibration's simulation")
    spans: PositiveInt = Field(description="spans simulated per round")
    rounds: NonNegativeInt = Field(description="fixed-point round of the kept table")
    note: str = ""


def _check_walk(where: str, n: int, first: list[float], nxt: list[list[float]], last: list[float] | None) -> None:
    """A chain's walk law: ``first`` and ``last`` laws over its ``n`` commands, ``next`` a
    stochastic matrix; raises ValueError naming the bad key (prefixed by ``where``)."""
    rows: list[tuple[str, list[float]]] = [("first", first)] + ([("last", last)] if last is not None else [])
    for key, row in rows:
        if len(row) != n:
            raise ValueError(f"{where}{key}: has {len(row)} entries for {n} commands")
        if not math.isclose(sum(row), 1.0, abs_tol=1e-6):
            raise ValueError(f"{where}{key}: sums to {sum(row):.9g}, not 1")
    if len(nxt) != n:
        raise ValueError(f"{where}next: has {len(nxt)} rows for {n} commands")
    for i, row in enumerate(nxt):
        if len(row) != n:
            raise ValueError(f"{where}next[{i}]: has {len(row)} entries for {n} commands")
        if not math.isclose(sum(row), 1.0, abs_tol=1e-6):
            raise ValueError(f"{where}next[{i}]: sums to {sum(row):.9g}, not 1")


def _check_streams(streams: list[str], n: int) -> None:
    """Kept streams: non-empty strings of the first ``n`` characters of ``STREAM_ALPHABET``, at most
    ``MAX_KEPT_STREAM_ACCESSES`` characters in all; raises ValueError naming the bad entry."""
    allowed = set(STREAM_ALPHABET[:n])
    total = sum(map(len, streams))
    if total <= MAX_KEPT_STREAM_ACCESSES and all(streams) and set("".join(streams)) <= allowed:
        return  # the common case at one pass over the text; else name the bad entry
    total = 0
    for i, stream in enumerate(streams):
        if not stream or not set(stream) <= allowed:
            raise ValueError(
                f"streams[{i}]: not a stream of the chain's commands (one of {STREAM_ALPHABET[:n]!r} per access)"
            )
        total += len(stream)
    if total > MAX_KEPT_STREAM_ACCESSES:
        raise ValueError(f"streams: hold {total} accesses, more than {MAX_KEPT_STREAM_ACCESSES}")


def _check_codes(key: str, codes: str, want: int, per: str, absent: str = "") -> None:
    """A kept streams' code string (``stream_gaps``, ``stream_starts``, ``stream_ends``): none, or
    ``want`` characters, ``GAP_CODE_CHARS`` ``STREAM_ALPHABET`` digits per ``per`` (or the whole
    code ``absent``, where one is allowed); raises ValueError naming the bad key."""
    if not codes:
        return
    if len(codes) != want:
        raise ValueError(f"{key}: has {len(codes)} characters, not {want} ({GAP_CODE_CHARS} per {per})")
    bad = set(codes) - set(STREAM_ALPHABET)  # the common case at one pass over the text (a profile
    # holds millions of digits: a list of them cost a second of the fit, holding the GIL)
    if bad and absent and bad <= set(absent):  # only now split into codes: a whole ``absent`` is allowed
        digits = [codes[i : i + GAP_CODE_CHARS] for i in range(0, want, GAP_CODE_CHARS)]
        bad = set("".join(c for c in digits if c != absent)) - set(STREAM_ALPHABET)
    if bad:
        raise ValueError(f"{key}: holds {sorted(bad)[0]!r}, not one of {STREAM_ALPHABET!r}"
                         + (f" (nor the whole code {absent!r})" if absent else ""))


def _check_stream_codes(chain: CommandChain) -> None:
    """The kept streams' gap, start and end codes of ``chain``; raises ValueError naming the bad key."""
    streams = chain.streams
    _check_codes("stream_gaps", chain.stream_gaps, GAP_CODE_CHARS * (sum(map(len, streams)) - len(streams)),
                 "gap of the kept streams")
    _check_codes("stream_starts", chain.stream_starts, GAP_CODE_CHARS * len(streams), "kept stream")
    _check_codes("stream_ends", chain.stream_ends, GAP_CODE_CHARS * len(streams), "kept stream",
                 absent=NO_CODE * GAP_CODE_CHARS)
    if chain.stream_ends and chain.end_gap is None:
        raise ValueError("end_gap: missing, and stream_ends codes quantiles in it")


class ChainWalk(_Strict):
    """The walk law of a type's short streams (``CommandChain.short_walk``): ``first``, ``next``
    and ``last`` as in ``CommandChain``, fitted on the streams of at most
    ``MAX_SEQUENCE_LENGTH`` accesses that no kept sequence covers."""

    first: list[Share] = Field(description="P(a short walk's first access is commands[i])")
    next: list[list[Share]] = Field(description="next[i][k] = P(commands[k] follows commands[i]) in a short walk")
    last: list[Share] | None = Field(default=None, description="P(a short walk of two or more ends with commands[i])")


class CommandChain(_Strict):
    """Which audited command each access of a type's objects is, and in what order (format 2).

    A first-order Markov chain over the audit ``cmd`` names of the type's accesses (every event
    on an object but the one that made it in the window and the one that removed it: ``open``,
    ``getfileinfo``, ``listStatus``, ``setPermission``, a ``create`` that overwrites, a ``mkdirs``
    of an existing directory, a ``rename``, ...): ``first[i]`` is the chance that an object's
    first access is ``commands[i]``, ``next[i][k]`` that ``commands[k]`` follows ``commands[i]``.
    ``sequences`` keeps the short streams whole: an object with n accesses takes one of the
    sequences of n commands with its share (the chain cannot say "renamed exactly once"). The
    others take one of the type's ``streams`` of their length (the kept streams: the command
    sequences of the streams no kept sequence covers, or a seeded sample of them), so that how
    often each command comes back on one object is the trace's: a chain gives a long stream its
    rare commands in proportion to its length, where a real workload touches each file's owner
    or replication once whatever its reads. An object with no kept stream of its length (nor one
    a little longer to cut down to it) walks the chain: with ``short_walk``, an object of at most
    ``MAX_SEQUENCE_LENGTH`` accesses walks that law (fitted on the short streams no sequence
    covers: the rare ones, richer in rare commands than the long streams the chain's own
    ``first``, ``next`` and ``last`` are then fitted on). ``last[i]`` is the chance that a walked stream of two or more
    accesses ends with ``commands[i]``: a walk of n accesses is then a Markov bridge, the chain
    conditioned on ending as the trace's streams do (a reader's stream ends with the ``open``
    its ``getfileinfo`` led to, not wherever its length cuts the chain).
    With ``gaps`` it is a semi-Markov (Markov renewal) process: the interarrival after a
    transition ``a>b`` listed there is drawn from its own law; the others draw ``other_gaps``
    (the gaps of those transitions pooled), or F_j (``access_interarrival``) without it. An
    object that takes a kept stream draws each gap in the cell of its law that ``stream_gaps``
    gives: the trace's stream's own gap there, so that how its gaps go together (a job loop that
    deletes its output directory every 5-6 s through a varying cycle of commands) is the trace's,
    where independent draws of each gap spread the cycle's length. ``share`` is the observed
    share of each command among the type's accesses (descriptive: ``profile show``,
    ``validate --profile``).
    """

    commands: list[str] = Field(min_length=1, max_length=MAX_COMMANDS, description="audit cmd names (states)")
    share: list[Share] = Field(description="observed share of each command among the type's accesses")
    first: list[Share] = Field(description="P(an object's first access is commands[i])")
    next: list[list[Share]] = Field(description="next[i][k] = P(commands[k] follows commands[i]); rows sum to 1")
    gaps: dict[str, Distribution] = Field(
        default_factory=dict, description="'a>b' -> interarrival law (ms) after that transition; others draw F_j"
    )
    sequences: dict[str, Share] = Field(
        default_factory=dict,
        description="'a>b>c' -> the share of the objects with that many accesses whose commands are that "
        "sequence (short streams seen more than once); the rest walk the chain",
    )
    other_gaps: Distribution | None = Field(
        default=None,
        description="interarrival law (ms) after the transitions without a law in gaps (their gaps pooled); "
        "None: they draw F_j",
    )
    last: list[Share] | None = Field(
        default=None,
        description="P(a walked stream of two or more accesses ends with commands[i]); None: a walk ends "
        "wherever its length stops it",
    )
    short_walk: ChainWalk | None = Field(
        default=None,
        description="the walk law of objects of at most MAX_SEQUENCE_LENGTH accesses that take no kept "
        "sequence; None: they walk first/next/last",
    )
    streams: list[str] = Field(
        default_factory=list,
        description="kept streams: the command sequences of (a seeded sample of) the type's streams that no "
        "kept sequence covers (with stream_gaps: of all its streams of two or more accesses), one character "
        "per access (command i is STREAM_ALPHABET[i]); an object that takes no kept sequence takes one of "
        "these of its length (with stream_gaps: before the sequences); [] : it walks the chain",
    )
    stream_gaps: str = Field(
        default="",
        description="the kept streams' gaps, stream after stream: each gap's quantile in the law its "
        "transition draws from (gaps, other_gaps or F_j), in GAP_CODE_LEVELS cells, GAP_CODE_CHARS "
        "STREAM_ALPHABET digits per gap (most significant first); an object that takes a kept stream draws "
        "its gaps in those cells, and the kept streams are then a sample of all the type's streams; "
        "'' : kept streams' gaps are drawn like the others'",
    )
    stream_starts: str = Field(
        default="",
        description="the kept streams' first-access delays, one per stream: the delay's quantile in the "
        "type's activation_delay (from the object's creation, or the window's start for one made before "
        "it), coded as stream_gaps' gaps are; an object that takes a kept stream is first accessed at "
        "that quantile, so that when a stream begins goes with how it goes on (a benchmark's files read "
        "7 s after their creation, deleted and made again on one schedule); '' : drawn like the others'",
    )
    end_gap: Distribution | None = Field(
        default=None,
        description="the law of the time (ms) from an object's last access to its deletion, over the type's "
        "accessed objects deleted in the window (for stream_ends); None: no stream_ends",
    )
    stream_ends: str = Field(
        default="",
        description="the kept streams' ends, one per stream: whether its object was deleted in the window "
        "and when: the time from its last access to the deletion as a quantile of end_gap, coded as "
        "stream_gaps' gaps are, or NO_CODE * GAP_CODE_CHARS ('..') when it was not; an object that takes a "
        "kept stream is deleted (or not) as its stream's was, that long after its last access, so that a job "
        "loop's output directory is removed one cycle after its last mkdirs as the trace's was, not at an age "
        "drawn apart from its stream; the other objects are deleted at the rest of delete_share; '' : all "
        "objects are deleted at delete_share",
    )

    @model_validator(mode="after")
    def _stochastic(self) -> CommandChain:
        n = len(self.commands)
        if len(set(self.commands)) != n:
            raise ValueError("commands: names must be unique")
        for name in self.commands:
            if not name or ">" in name or len(name) > 64:
                raise ValueError(f"commands: {name!r} is not an audit command name")
        if len(self.share) != n:
            raise ValueError(f"share: has {len(self.share)} entries for {n} commands")
        if not math.isclose(sum(self.share), 1.0, abs_tol=1e-6):
            raise ValueError(f"share: sums to {sum(self.share):.9g}, not 1")
        _check_walk("", n, self.first, self.next, self.last)
        if self.short_walk is not None:
            w = self.short_walk
            _check_walk("short_walk.", n, w.first, w.next, w.last)
        known = set(self.commands)
        for key, dist in self.gaps.items():
            a, sep, b = key.partition(">")
            if not sep or a not in known or b not in known:
                raise ValueError(f"gaps.{key}: not a transition 'a>b' between the chain's commands")
            if dist.values[0] < 0 or dist.values[-1] > MAX_TIME_MS:
                raise ValueError(f"gaps.{key}.values: must lie in [0, {MAX_TIME_MS:.0e}] ms")
        by_length: dict[int, float] = {}
        for key, p in self.sequences.items():
            seq = key.split(">")
            if len(seq) > MAX_SEQUENCE_LENGTH or any(c not in known for c in seq):
                raise ValueError(
                    f"sequences.{key}: not a sequence of at most {MAX_SEQUENCE_LENGTH} of the chain's commands"
                )
            by_length[len(seq)] = by_length.get(len(seq), 0.0) + p
        for n, total in by_length.items():
            if total > 1.0 + 1e-6:
                raise ValueError(f"sequences: the shares of the sequences of {n} commands sum to {total:.9g} > 1")
        _check_streams(self.streams, len(self.commands))
        _check_stream_codes(self)
        if self.end_gap is not None and (self.end_gap.values[0] < 0 or self.end_gap.values[-1] > MAX_TIME_MS):
            raise ValueError(f"end_gap.values: must lie in [0, {MAX_TIME_MS:.0e}] ms")
        other = self.other_gaps
        if other is not None and (other.values[0] < 0 or other.values[-1] > MAX_TIME_MS):
            raise ValueError(f"other_gaps.values: must lie in [0, {MAX_TIME_MS:.0e}] ms")
        return self


class PathlessCommand(_Strict):
    """A NameNode-wide command without a path (``src=null``: ``getDatanodeReport``,
    ``saveNamespace``, ...), generated as a renewal stream of ``count`` events per window."""

    command: str = Field(min_length=1, max_length=64)
    count: FileCount = Field(description="events in the window")
    interarrival: Distribution | None = Field(default=None, description="ms between events; absent: uniform times")


class FileType(_Strict):
    """One object type (a k-means cluster of files, or of directories, that behave alike)."""

    id: Annotated[int, Field(ge=1, le=MAX_TYPE_ID)]
    weight: Share = Field(description="w_j: share of the files created in the window")
    pre_existing: FileCount = Field(default=0, description="pre_j: files of this type that exist at t0")
    create_interarrival: Distribution | None = Field(default=None, description="C_j, ms")
    activation_delay: Distribution | None = Field(
        default=None, description="G_j, ms from creation (or t0) to first access"
    )
    active_span: Distribution | None = Field(default=None, description="H_j, ms from first to last access")
    access_interarrival: Distribution | None = Field(default=None, description="F_j, ms between accesses to one file")
    delete_delay: Distribution | None = Field(default=None, description="D_j, ms; origin given by delete_delay_origin")
    delete_delay_origin: Literal["creation", "last_access"] = "last_access"
    delete_share: Share = Field(default=0.0, description="share of files that are deleted (after D_j)")
    open_share: Share = Field(default=1.0, description="p_j: share of accesses that are opens; the rest list the file")
    accessed_share: Share = Field(default=1.0, description="share of files that are accessed at all")
    span_population: Literal["all", "created"] = Field(
        default="all",
        description="the files whose spans H_j describes: every accessed file ('all'), or only the files "
        "created in the trace's window ('created': the 2014 format, whose F_j pools the gaps of every "
        "accessed file, mostly pre-existing ones); with 'created' a span-driven type's pre-existing files "
        "follow the paper's renewal rule as a stopping time, which keeps F_j exact, and validate compares "
        "H_j with the created files' spans",
    )
    access_gap_sampling: GapSampling | None = Field(
        default=None,
        description="optional generator table: F'_j sampled by the closing rule (span-driven types) so that "
        "the generated interarrivals follow F_j; absent: F_j is sampled",
    )
    observed: dict[str, Distribution] = Field(
        default_factory=dict,
        description="descriptive distributions for validation (popularity, type_access_interarrival, age_at_access)",
    )
    label: str = ""
    kind: Literal["file", "directory"] = Field(
        default="file",
        description="what the type's objects are; a directory type's weight is a share of created_directories",
    )
    commands: CommandChain | None = Field(
        default=None,
        description="format 2: the command of each access and their order; absent: opens and file listings "
        "split by open_share (the paper's model)",
    )
    new_dir_share: Share = Field(
        default=0.0,
        description="share of the type's created files whose directory was made in the window (placed in a "
        "directory made by a directory type, alive for the file's whole life)",
    )

    @model_validator(mode="after")
    def _needs(self) -> FileType:
        if self.weight > 0 and self.create_interarrival is None:
            raise ValueError(f"create_interarrival: type {self.id} has weight > 0 and needs C_j")
        if self.accessed_share > 0 and (self.weight > 0 or self.pre_existing > 0):
            for key in ("activation_delay", "active_span", "access_interarrival"):
                if getattr(self, key) is None:
                    raise ValueError(f"{key}: type {self.id}: files are accessed but {key} is missing")
        if self.delete_share > 0 and self.delete_delay is None:
            raise ValueError(f"delete_delay: type {self.id}: delete_share > 0 needs delete_delay (D_j)")
        for key in _TIME_KEYS:
            dist = getattr(self, key)
            if dist is not None and dist.values[0] < 0:
                raise ValueError(f"{key}.values: type {self.id}: {key} has negative times")
            if dist is not None and dist.values[-1] > MAX_TIME_MS:
                raise ValueError(f"{key}.values: type {self.id}: {key} exceeds {MAX_TIME_MS:.0e} ms")
        for name, dist in self.observed.items():
            if dist.values[0] < 0:
                raise ValueError(f"observed.{name}.values: type {self.id}: negative values")
            limit = MAX_ACCESSES_PER_FILE if name == "popularity" else MAX_TIME_MS
            if dist.values[-1] > limit:
                raise ValueError(f"observed.{name}.values: type {self.id}: values exceed {limit:.0e}")
        if self.access_gap_sampling is not None:
            key = "access_gap_sampling"
            if self.access_interarrival is None:
                raise ValueError(f"{key}: type {self.id}: a gap sampling table needs access_interarrival (F_j)")
            if self.access_gap_sampling.distribution.values[0] < 0:
                raise ValueError(f"{key}.distribution.values: type {self.id}: {key} has negative times")
            if self.access_gap_sampling.distribution.values[-1] > MAX_TIME_MS:
                raise ValueError(f"{key}.distribution.values: type {self.id}: {key} exceeds {MAX_TIME_MS:.0e} ms")
        return self

    @model_serializer(mode="wrap")
    def _omit_defaults_added_later(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Keys added after format 1 are left out at their defaults, so a profile that does not
        use them serialises (and hashes) as before they existed."""
        data: dict[str, Any] = handler(self)
        if self.access_gap_sampling is None:
            data.pop("access_gap_sampling", None)
        if self.span_population == "all":
            data.pop("span_population", None)
        if self.kind == "file":
            data.pop("kind", None)
        if self.commands is None:
            data.pop("commands", None)
        if self.new_dir_share == 0.0:
            data.pop("new_dir_share", None)
        return data


class OpMix(_Strict):
    """Ratios of the operations that the per-file model does not drive (absent means 0).

    Listings of a file itself are not here: they are per-file accesses, split from opens by each
    type's ``open_share`` (the 2014 format's global RATIO_OF_FILE_LS_TO_OPENS r maps to
    ``open_share = 1 / (1 + r)``).
    """

    dir_list_per_access: Ratio = 0.0
    mkdirs_per_create: Ratio = 0.0
    file_renames_per_create: Ratio = 0.0
    dir_renames_per_create: Ratio = 0.0
    getfileinfo_per_access: Ratio = 0.0
    observed_counts: dict[str, NonNegativeInt] = Field(
        default_factory=dict, description="operation counts in the source trace, per audit cmd"
    )


class NamespaceShape(_Strict):
    """The shape of the directory tree. Depth 0 is the root; a file in the root is at depth 1."""

    directories: Annotated[int, Field(ge=0, le=MAX_DIRECTORIES)] = Field(
        description="number of directories, root included"
    )
    dirs_per_depth: list[NonNegativeInt] = Field(
        default_factory=list, max_length=MAX_DEPTH + 1, description="directories at depth 0, 1, ..."
    )
    subdirs_per_dir: Distribution | None = Field(
        default=None, description="distribution of subdirectories per directory"
    )
    files_at_depth: dict[int, Share] = Field(default_factory=dict, description="share of files at each depth")
    tree_file: str | None = Field(
        default=None, description="optional file (relative to the profile) listing every directory, one per line"
    )

    @model_validator(mode="after")
    def _shares(self) -> NamespaceShape:
        sub = self.subdirs_per_dir
        if sub is not None and (sub.values[0] < 0 or sub.values[-1] > MAX_DIRECTORIES):
            raise ValueError(f"subdirs_per_dir.values: must lie in [0, {MAX_DIRECTORIES:.0e}]")
        if self.files_at_depth and max(self.files_at_depth) > MAX_DEPTH + 1:
            raise ValueError(f"files_at_depth: depths go up to {MAX_DEPTH + 1}")
        if self.files_at_depth:
            total = sum(self.files_at_depth.values())
            if not math.isclose(total, 1.0, abs_tol=1e-6):
                raise ValueError(f"files_at_depth: files_at_depth shares sum to {total:.9g}, not 1")
            if min(self.files_at_depth) < 1:
                raise ValueError("files_at_depth: depths start at 1 (a file in the root)")
        if self.dirs_per_depth and sum(self.dirs_per_depth) != self.directories:
            raise ValueError(
                f"dirs_per_depth: dirs_per_depth sums to {sum(self.dirs_per_depth)}, "
                f"but directories is {self.directories}"
            )
        return self


class ProfileSource(_Strict):
    """Where a profile came from (provenance, for reports and reproducibility)."""

    kind: Literal["fitted", "imported-2014", "builtin", "edited"]
    inputs: list[str] = Field(default_factory=list)
    tool_version: str = ""
    created_at: str = ""
    seed: int | None = None
    k_selection: str = ""
    pre_existing_inferred: bool = Field(
        default=False, description="true when pre-existing files were inferred from the trace, not read from a snapshot"
    )
    notes: list[str] = Field(default_factory=list)
    trace_stats: dict[str, float] = Field(default_factory=dict)


#: the most (visits, size) rows a profile's co-visit law holds
MAX_COVISIT_ROWS = 256


class CoVisitRow(_Strict):
    """Objects of ``visits`` visits that the trace visits together in groups of ``size``: their
    ``share`` of the objects of that many visits."""

    visits: Annotated[int, Field(ge=2, le=MAX_ACCESSES_PER_FILE)]
    size: Annotated[int, Field(ge=2, le=MAX_FILES)]
    share: Share


def _check_rows(key: str, rows: list[tuple[int, int, float]], of: str) -> None:
    """A law's rows (visits, size or host visits, share): one row per pair, shares per number of
    visits summing to at most 1; errors name ``key[i]``."""
    seen: dict[int, float] = {}
    keys: set[tuple[int, int]] = set()
    for i, (visits, other, share) in enumerate(rows):
        if (visits, other) in keys:
            raise ValueError(f"{key}[{i}]: a second row for {visits} visits in {of} of {other}")
        keys.add((visits, other))
        seen[visits] = seen.get(visits, 0.0) + share
        if seen[visits] > 1.0 + 1e-6:
            raise ValueError(f"{key}[{i}]: the shares of the objects of {visits} visits sum to more than 1")


class NestedRow(_Strict):
    """Objects of ``visits`` visits each made within a visit of one object of ``host_visits``
    visits (a partition listed on some of the queries that list its table): their ``share`` of the
    objects of that many visits that lead no co-visit group or lead one."""

    visits: Annotated[int, Field(ge=2, le=MAX_ACCESSES_PER_FILE)]
    host_visits: Annotated[int, Field(ge=3, le=MAX_ACCESSES_PER_FILE)]
    share: Share


class CoVisits(_Strict):
    """Objects visited together (format 2; ``model.covisits``): a daemon's directories listed in
    each of its rounds, a query's partitions. A visit is a run of one object's accesses each at most
    ``window_ms`` after the one before; objects with the same number of visits whose visits all
    start within ``window_ms`` of each other's are co-visited. ``groups`` is the law of the groups'
    sizes per number of visits, ``offset`` the law of a group member's delay (ms) from the group's
    first object. The generator gives each group's members its first object's visit times, each
    member delayed by one draw of ``offset`` (``synth.covisits``). ``nested`` (optional) is the law
    of objects whose visits are a subset of another's (``NestedRow``), ``nested_offset`` that of
    their delay (ms) from their host's visits. ``jitter`` (optional) is the law of a member's delay
    at each of its visits less its median delay (ms, of either sign): the generator adds to each
    later visit's delay one draw less the first visit's."""

    window_ms: Annotated[int, Field(ge=1, le=MAX_TIME_MS)]
    groups: list[CoVisitRow] = Field(default_factory=list, max_length=MAX_COVISIT_ROWS)
    offset: Distribution
    nested: list[NestedRow] = Field(default_factory=list, max_length=MAX_COVISIT_ROWS)
    nested_offset: Distribution | None = None
    jitter: Distribution | None = None

    @model_validator(mode="after")
    def _shares(self) -> CoVisits:
        _check_rows("groups", [(row.visits, row.size, row.share) for row in self.groups], "groups")
        if self.offset.values[0] < 0:
            raise ValueError("offset: a delay from the group's first object is never negative")
        if not self.groups and not self.nested:
            raise ValueError("groups: no group and no nested row (omit covisits instead)")
        for i, nested in enumerate(self.nested):
            if nested.host_visits <= nested.visits:
                raise ValueError(f"nested[{i}]: host_visits must exceed visits")
        _check_rows("nested", [(row.visits, row.host_visits, row.share) for row in self.nested], "hosts")
        if self.nested and self.nested_offset is None:
            raise ValueError("nested_offset: nested rows need the law of their delay")
        if self.nested_offset is not None and self.nested_offset.values[0] < 0:
            raise ValueError("nested_offset: a delay from the host's visit is never negative")
        return self

    @model_serializer(mode="wrap")
    def _omit_nested_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.nested:
            data.pop("nested", None)
            data.pop("nested_offset", None)
        if self.jitter is None:
            data.pop("jitter", None)
        return data


class WorkloadProfile(_Strict):
    """A complete workload profile."""

    format: Literal["mimesisbench-profile"] = PROFILE_FORMAT
    version: Literal[1, 2] = PROFILE_VERSION
    name: str = ""
    source: ProfileSource
    window_ms: Annotated[int, Field(ge=1, le=MAX_TIME_MS)] = Field(description="t_end: length of the modeled window")
    total_creates: FileCount = Field(description="n: files created in the window")
    created_directories: FileCount = Field(
        default=0, description="format 2: directories made in the window (directory types' weights are shares of it)"
    )
    types: list[FileType] = Field(min_length=1, max_length=MAX_TYPES)
    op_mix: OpMix = Field(default_factory=OpMix)
    namespace: NamespaceShape
    pathless: list[PathlessCommand] = Field(
        default_factory=list, description="format 2: NameNode-wide commands without a path, per command"
    )
    covisits: CoVisits | None = Field(default=None, description="format 2: objects visited together")

    @model_validator(mode="after")
    def _types(self) -> WorkloadProfile:
        ids = [t.id for t in self.types]
        if len(set(ids)) != len(ids):
            raise ValueError("types[*].id: ids must be unique")
        files = self.total_creates + sum(t.pre_existing for t in self.types)
        if files > MAX_FILES:
            raise ValueError(f"total_creates: {files:,} files created and pre-existing in all; at most {MAX_FILES:,}")
        for kind, made in (("file", self.total_creates), ("directory", self.created_directories)):
            total = sum(t.weight for t in self.types if t.kind == kind)
            if made > 0 and not math.isclose(total, 1.0, abs_tol=1e-6):
                raise ValueError(f"types[*].weight: the {kind} types' weights sum to {total:.9g}, not 1")
        if self.version < 2:
            for t in self.types:
                if t.kind != "file" or t.commands is not None or t.new_dir_share:
                    raise ValueError(f"version: format 1 has no directory types or command chains (type {t.id})")
            if self.created_directories or self.pathless or self.covisits is not None:
                raise ValueError("version: format 1 has no created_directories, pathless commands or covisits")
        return self

    @model_serializer(mode="wrap")
    def _omit_defaults_added_later(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.created_directories:
            data.pop("created_directories", None)
        if not self.pathless:
            data.pop("pathless", None)
        if self.covisits is None:
            data.pop("covisits", None)
        return data

    @property
    def file_types(self) -> list[FileType]:
        return [t for t in self.types if t.kind == "file"]

    @property
    def directory_types(self) -> list[FileType]:
        return [t for t in self.types if t.kind == "directory"]

    def type_by_id(self, type_id: int) -> FileType:
        for t in self.types:
            if t.id == type_id:
                return t
        raise KeyError(type_id)

    @property
    def pre_existing_total(self) -> int:
        """Pre-existing files (directory types' pre-existing directories are not counted)."""
        return sum(t.pre_existing for t in self.types if t.kind == "file")
