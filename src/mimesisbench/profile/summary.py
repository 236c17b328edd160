"""Per-type and whole-profile figures derived from a profile (the paper's Table 4), as plain data.

Expected operations per type follow the model directly, without simulating a schedule and
without cutting at the window's end:

* files: ``created = round(w_j * n)`` plus ``pre_j`` pre-existing files;
* accesses per accessed file: ``1 + E[H_j] / E[F_j]`` - the first access, then on average one
  access every ``E[F_j]`` during an active span of mean ``E[H_j]`` (renewal-reward: a renewal
  process with mean interarrival ``m`` has about ``t / m`` renewals in ``t``);
* reads: ``files * accessed_share * accesses per file`` (opens are ``open_share`` of them, file
  listings the rest; both are reads);
* writes: ``created + delete_share * files`` (creations and deletions).

Operations driven by the op mix (directory listings, mkdirs, renames) are not per type and are
left out of the read/write shares.

Format 2: a directory type's objects are directories (``created`` is ``round(w_j *
created_directories)``); a type with a command chain lists its command mix (``commands``: the
chain's observed shares, largest first), and its opens and file listings are the shares of
``open`` and ``listStatus`` among its accesses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType, WorkloadProfile

#: a mean access interarrival below this (ms) is taken as this, so a span never gives infinite accesses
MIN_INTERARRIVAL_MS = 1e-3
#: commands of a type's mix that ``profile show`` prints (the largest shares)
TOP_COMMANDS = 4


@dataclass(frozen=True)
class TypeSummary:
    """One row of the per-type table; times in milliseconds, counts are expectations."""

    id: int
    label: str
    weight: float
    created: int
    pre_existing: int
    files: int
    mean_access_interarrival_ms: float | None
    mean_create_interarrival_ms: float | None
    mean_active_span_ms: float | None
    mean_activation_delay_ms: float | None
    accesses_per_accessed_file: float
    opens: float
    file_listings: float
    creates: float
    deletes: float
    reads: float
    writes: float
    read_share: float | None
    write_share: float | None
    kind: str = "file"
    commands: list[tuple[str, float]] | None = None  # the chain's (command, share), largest first
    new_dir_share: float = 0.0


@dataclass(frozen=True)
class ProfileSummary:
    """Whole-profile figures, then one ``TypeSummary`` per type."""

    name: str
    source_kind: str
    source_inputs: list[str]
    created_at: str
    window_ms: int
    total_creates: int
    pre_existing_total: int
    pre_existing_inferred: bool
    type_count: int
    directories: int
    max_dir_depth: int | None
    max_file_depth: int | None
    tree_file: str | None
    op_mix: dict[str, float]
    open_share_range: tuple[float, float]
    reads: float
    writes: float
    read_share: float | None
    types: list[TypeSummary]
    notes: list[str]
    created_directories: int = 0
    directory_type_count: int = 0
    pathless: list[tuple[str, int]] | None = None  # (command, events per window)


def _mean(dist: Distribution | None) -> float | None:
    return None if dist is None else dist.mean()


def expected_accesses_per_file(ftype: FileType) -> float:
    """Accesses to one accessed file of this type: ``1 + E[H] / E[F]`` (0 if never accessed)."""
    if ftype.active_span is None or ftype.access_interarrival is None:
        return 0.0
    span = ftype.active_span.mean()
    interarrival = max(ftype.access_interarrival.mean(), MIN_INTERARRIVAL_MS)
    return 1.0 + span / interarrival


def _share(part: float, total: float) -> float | None:
    return part / total if total > 0 else None


def command_mix(ftype: FileType) -> list[tuple[str, float]] | None:
    """The type's (command, share) pairs, largest share first; None without a chain."""
    chain = ftype.commands
    if chain is None:
        return None
    return sorted(zip(chain.commands, chain.share), key=lambda cs: (-cs[1], cs[0]))


def summarize_type(ftype: FileType, total_creates: int, created_directories: int = 0) -> TypeSummary:
    """The per-type figures for a type in a profile with ``total_creates`` files created (and
    ``created_directories`` directories, for a directory type)."""
    created = round(ftype.weight * (created_directories if ftype.kind == "directory" else total_creates))
    files = created + ftype.pre_existing
    per_file = expected_accesses_per_file(ftype)
    accesses = files * ftype.accessed_share * per_file
    mix = command_mix(ftype)
    if mix is None:
        opens = accesses * ftype.open_share if ftype.kind == "file" else 0.0
        listings = accesses - opens
    else:
        shares = dict(mix)
        opens = accesses * shares.get("open", 0.0)
        listings = accesses * shares.get("listStatus", 0.0)
    deletes = files * ftype.delete_share
    reads = accesses
    writes = created + deletes
    return TypeSummary(
        id=ftype.id,
        label=ftype.label,
        weight=ftype.weight,
        created=created,
        pre_existing=ftype.pre_existing,
        files=files,
        mean_access_interarrival_ms=_mean(ftype.access_interarrival),
        mean_create_interarrival_ms=_mean(ftype.create_interarrival),
        mean_active_span_ms=_mean(ftype.active_span),
        mean_activation_delay_ms=_mean(ftype.activation_delay),
        accesses_per_accessed_file=per_file,
        opens=opens,
        file_listings=listings,
        creates=float(created),
        deletes=deletes,
        reads=reads,
        writes=writes,
        read_share=_share(reads, reads + writes),
        write_share=_share(writes, reads + writes),
        kind=ftype.kind,
        commands=mix,
        new_dir_share=ftype.new_dir_share,
    )


def summarize(profile: WorkloadProfile) -> ProfileSummary:
    """Everything ``mimesisbench profile show`` prints, computed from the profile alone."""
    rows = [summarize_type(t, profile.total_creates, profile.created_directories) for t in profile.types]
    reads = sum(r.reads for r in rows)
    writes = sum(r.writes for r in rows)
    ns = profile.namespace
    mix = profile.op_mix.model_dump(exclude={"observed_counts"})
    shares = [t.open_share for t in profile.file_types] or [t.open_share for t in profile.types]
    return ProfileSummary(
        name=profile.name,
        source_kind=profile.source.kind,
        source_inputs=list(profile.source.inputs),
        created_at=profile.source.created_at,
        window_ms=profile.window_ms,
        total_creates=profile.total_creates,
        pre_existing_total=profile.pre_existing_total,
        pre_existing_inferred=profile.source.pre_existing_inferred,
        type_count=len(profile.types),
        directories=ns.directories,
        max_dir_depth=len(ns.dirs_per_depth) - 1 if ns.dirs_per_depth else None,
        max_file_depth=max(ns.files_at_depth) if ns.files_at_depth else None,
        tree_file=ns.tree_file,
        op_mix={k: float(v) for k, v in mix.items()},
        open_share_range=(min(shares), max(shares)),
        reads=reads,
        writes=writes,
        read_share=_share(reads, reads + writes),
        types=rows,
        notes=list(profile.source.notes),
        created_directories=profile.created_directories,
        directory_type_count=len(profile.directory_types),
        pathless=[(p.command, p.count) for p in profile.pathless] or None,
    )


def summary_to_dict(summary: ProfileSummary) -> dict[str, Any]:
    """A JSON-ready dict (tuples become lists)."""
    data = asdict(summary)
    data["open_share_range"] = list(summary.open_share_range)
    for row in data["types"]:
        if row["commands"] is not None:
            row["commands"] = [{"command": c, "share": v} for c, v in row["commands"]]
    if summary.pathless is not None:
        data["pathless"] = [{"command": c, "count": n} for c, n in summary.pathless]
    return data
