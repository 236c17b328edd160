"""How much of a trace a profile models: the share of its operations whose audited command the
profile models.

A fitted format-2 profile models the lifecycle commands it generates (``create`` when it creates
files, ``mkdirs`` when it makes directories, ``delete`` when a type deletes), every command in some
type's ``CommandChain``, and the ``pathless`` commands; accesses the fit left out because a schedule
cannot hold the command for the object's kind (``source.trace_stats`` ``not_modelled.<cmd>``) are not
modelled. A profile without chains (format 1, the paper's model) models opens, listings, creates,
deletes, renames, mkdirs and getfileinfo. Against a schedule (``validate --trace``), the modelled
commands are those the schedule contains.

Operations are the trace's allowed events with a command (denied events are left out, as by
``model``); the share is given over all of them and over those that name a path (NameNode-wide
commands such as ``saveNamespace`` log ``src=null``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mimesisbench.model.fit import EVENTS_WITHOUT_PATH, NOT_MODELLED_PREFIX, WITHOUT_PATH_PREFIX
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.schedule.format import MODELLED_CMDS

#: what the paper's model (types without command chains) generates
PAPER_MODEL_CMDS: frozenset[str] = frozenset({"create", "open", "listStatus", "delete", "rename", "mkdirs", "getfileinfo"})


@dataclass(frozen=True)
class Coverage:
    """Operations per audited command, in all and with a path (None when not recorded), and
    which of them are modelled: the commands in ``modelled`` (None: every command a schedule can
    hold), less the operations ``left_out`` of each (not modelled for their object's kind)."""

    counts: Mapping[str, int]
    with_path: Mapping[str, int] | None
    modelled: frozenset[str] | None = None
    left_out: Mapping[str, int] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(self.counts.values())

    def _modelled_count(self, cmd: str, count: int) -> int:
        commands = MODELLED_CMDS if self.modelled is None else self.modelled
        if cmd not in commands:
            return 0
        return max(count - int(self.left_out.get(cmd, 0)), 0)

    def _modelled_share(self, counts: Mapping[str, int]) -> float | None:
        total = sum(counts.values())
        return sum(self._modelled_count(cmd, c) for cmd, c in counts.items()) / total if total else None

    @property
    def modelled_share(self) -> float | None:
        """Share of the operations whose command is modelled (None without operations)."""
        return self._modelled_share(self.counts)

    @property
    def modelled_share_with_path(self) -> float | None:
        return None if self.with_path is None else self._modelled_share(self.with_path)

    def not_modelled(self) -> dict[str, float]:
        """Share of all operations of each command not modelled, largest first."""
        total = self.events
        if not total:
            return {}
        left = ((c - self._modelled_count(cmd, c), cmd) for cmd, c in self.counts.items())
        rest = sorted(((n, cmd) for n, cmd in left if n > 0), key=lambda x: (-x[0], x[1]))
        return {cmd: n / total for n, cmd in rest}

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        return {
            "modelled_share": r(self.modelled_share),
            "modelled_share_with_path": r(self.modelled_share_with_path),
            "events": self.events,
            "events_with_path": None if self.with_path is None else sum(self.with_path.values()),
            "not_modelled": {cmd: r(s) for cmd, s in self.not_modelled().items()},
            "modelled_commands": sorted(MODELLED_CMDS if self.modelled is None else self.modelled),
        }

    def line(self) -> str:
        """One line: ``coverage: 71.3 % of the trace's operations are modelled (not modelled: ...)``."""
        share = self.modelled_share
        if share is None:
            return "coverage: the trace has no allowed operation"
        rest = self.not_modelled()
        detail = ", ".join(f"{cmd} {100 * s:.1f} %" for cmd, s in rest.items()) if rest else "none"
        text = f"coverage: {100 * share:.1f} % of the trace's operations are modelled (not modelled: {detail})"
        with_path = self.modelled_share_with_path
        if with_path is not None and self.with_path is not None and sum(self.with_path.values()) != self.events:
            text += f"; {100 * with_path:.1f} % of those naming a path"
        return text


def coverage_of_events(events: pl.DataFrame, modelled: frozenset[str] | None = None) -> Coverage:
    """The coverage of an event table (``trace.events``): its allowed events with a command, of
    which those whose command is in ``modelled`` are modelled (None: every command a schedule can
    hold)."""
    allowed = pl.col("allowed").fill_null(False) if "allowed" in events.columns else pl.lit(True)
    ok = events.filter(allowed & pl.col("op").is_not_null()).select(
        pl.col("op").cast(pl.String).alias("cmd"), pl.col("path").is_not_null().alias("has_path")
    )
    grouped = ok.group_by("cmd").agg(pl.len().alias("n"), pl.col("has_path").sum().alias("with_path"))
    rows = grouped.iter_rows(named=True)
    table = [(str(r["cmd"]), int(r["n"]), int(r["with_path"])) for r in rows]
    return Coverage(
        counts={cmd: n for cmd, n, _ in table},
        with_path={cmd: w for cmd, _, w in table if w},
        modelled=modelled,
    )


def modelled_commands(profile: WorkloadProfile) -> frozenset[str]:
    """The audited commands a profile generates (see the module's docstring)."""
    chains = [t.commands for t in profile.types if t.commands is not None]
    if not chains and not profile.pathless:
        return PAPER_MODEL_CMDS
    out: set[str] = {cmd for chain in chains for cmd in chain.commands}
    out.update(p.command for p in profile.pathless)
    if profile.total_creates:
        out.add("create")
    if profile.created_directories:
        out.add("mkdirs")
    if any(t.delete_share > 0 for t in profile.types):
        out.add("delete")
    return frozenset(out)


def coverage_of_profile(profile: WorkloadProfile) -> Coverage | None:
    """The coverage of the trace a profile was fitted from (``op_mix.observed_counts``), None when
    the profile records no counts (the 2014 import, hand-made profiles). The share with a path is
    known when ``model`` recorded the operations without one (``source.trace_stats``)."""
    counts = dict(profile.op_mix.observed_counts)
    if not counts or not sum(counts.values()):
        return None
    stats = profile.source.trace_stats
    with_path: dict[str, int] | None = None
    if EVENTS_WITHOUT_PATH in stats:
        with_path = {}
        for cmd, c in counts.items():
            left = c - int(stats.get(WITHOUT_PATH_PREFIX + cmd, 0.0))
            if left > 0:
                with_path[cmd] = left
    left_out = {key.removeprefix(NOT_MODELLED_PREFIX): int(v) for key, v in stats.items() if key.startswith(NOT_MODELLED_PREFIX)}
    return Coverage(counts=counts, with_path=with_path, modelled=modelled_commands(profile), left_out=left_out)


__all__ = ["PAPER_MODEL_CMDS", "Coverage", "coverage_of_events", "coverage_of_profile", "modelled_commands"]
