"""``validate --trace`` per audited command: how far a schedule is from a trace, command by command.

Every allowed event with a command counts. Its *target* is ``directory`` when its path is a
directory (as ``model.objects`` classifies paths: mkdirs-ed, an ancestor of another path, and
also the destination of a directory's rename), ``file`` for any other path, ``none`` for
NameNode-wide commands without a path (``src=null``). An *object* is a directory's path, or a
file followed across renames (events on a rename's destination are the source's object, chains
followed in time order, as ``model.objects`` does).

Per command (and per target): the share of all events it has on each side, its number of
events, ``ks_popularity`` (two-sample KS of the number of its events per object, over the
objects that saw it) and ``ks_interarrival`` (KS of the gaps between consecutive events of the
command on one object). A KS is None when either side has fewer than two samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench.schedule.format import MODELLED_CMDS
from mimesisbench.synth.kstats import ks_two

TARGETS = ("file", "directory", "none")
#: fewer samples than this on either side: no KS
MIN_SAMPLES = 2
_RENAME = "rename"


def _normalised(col: str) -> pl.Expr:
    text = pl.col(col).cast(pl.String)
    stripped = text.str.strip_chars_end("/")
    return pl.when(text.is_null()).then(None).when(stripped == "").then(pl.lit("/")).otherwise(stripped)


def _rename_pairs(ev: pl.DataFrame) -> list[tuple[str, str]]:
    ren = ev.filter((pl.col("cmd") == _RENAME) & pl.col("path").is_not_null() & pl.col("dst").is_not_null())
    return list(zip(ren.get_column("path").to_list(), ren.get_column("dst").to_list()))


def classify(events: pl.DataFrame, directories: pl.Series) -> pl.DataFrame:
    """The allowed events with a command as ``time_ms``, ``cmd`` (String), ``target`` (``TARGETS``)
    and ``key`` (the object: a directory's path or a file's first path; null without a path)."""
    allowed = pl.col("allowed").fill_null(False) if "allowed" in events.columns else pl.lit(True)
    has_dst = "dst" in events.columns
    ev = events.filter(allowed & pl.col("op").is_not_null()).select(
        pl.col("time_ms").cast(pl.Int64),
        pl.col("op").cast(pl.String).alias("cmd"),
        _normalised("path").alias("path"),
        (_normalised("dst") if has_dst else pl.lit(None, dtype=pl.String)).alias("dst"),
    )
    dirs = set(directories.cast(pl.String).to_list())
    pairs = _rename_pairs(ev)
    root: dict[str, str] = {}
    for src, dst in pairs:  # renames are few next to accesses: a walk in time order
        if src in dirs:
            dirs.add(dst)
        else:
            root[dst] = root.get(src, src)
    is_dir = pl.col("path").is_in(pl.Series(sorted(dirs), dtype=pl.String).implode())
    key = pl.col("path")
    if root:
        key = pl.col("path").replace(pl.Series(list(root), dtype=pl.String), pl.Series(list(root.values()), dtype=pl.String))
    return ev.select(
        "time_ms",
        "cmd",
        pl.when(pl.col("path").is_null())
        .then(pl.lit("none"))
        .when(is_dir)
        .then(pl.lit("directory"))
        .otherwise(pl.lit("file"))
        .alias("target"),
        pl.when(is_dir).then(pl.col("path")).otherwise(key).alias("key"),
    )


@dataclass(frozen=True)
class CommandSamples:
    """Per (cmd, target): events, events per object and gaps between an object's events."""

    total: int
    events: dict[tuple[str, str], int]
    popularity: dict[tuple[str, str], NDArray[np.float64]]
    gaps: dict[tuple[str, str], NDArray[np.float64]]

    def pooled(self, cmd: str, samples: dict[tuple[str, str], NDArray[np.float64]]) -> NDArray[np.float64]:
        parts = [v for (c, _t), v in samples.items() if c == cmd]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)

    def commands(self) -> set[str]:
        return {c for c, _t in self.events}


def _arrays(frame: pl.DataFrame, column: str) -> dict[tuple[str, str], NDArray[np.float64]]:
    out: dict[tuple[str, str], NDArray[np.float64]] = {}
    for (cmd, target), part in frame.partition_by(["cmd", "target"], as_dict=True).items():
        out[(str(cmd), str(target))] = part.get_column(column).to_numpy().astype(np.float64)
    return out


def command_samples(classified: pl.DataFrame) -> CommandSamples:
    """Popularity and interarrival samples per (cmd, target) of ``classify``'s table."""
    counts = classified.group_by("cmd", "target").len()
    events = {(str(c), str(t)): int(n) for c, t, n in counts.iter_rows()}
    with_key = classified.filter(pl.col("key").is_not_null())
    per_object = with_key.group_by("cmd", "target", "key").len()
    groups = ["cmd", "target", "key"]
    gaps = (
        with_key.sort([*groups, "time_ms"], maintain_order=True)
        .select(*groups, pl.col("time_ms").diff().over(groups).alias("gap_ms"))
        .drop_nulls("gap_ms")
    )
    return CommandSamples(
        total=classified.height,
        events=events,
        popularity=_arrays(per_object, "len"),
        gaps=_arrays(gaps, "gap_ms"),
    )


def _ks(a: NDArray[np.float64], b: NDArray[np.float64]) -> float | None:
    if a.size < MIN_SAMPLES or b.size < MIN_SAMPLES:
        return None
    value = ks_two(a, b)
    return None if value is None else round(value, 6)


def _share(n: int, total: int) -> float:
    return round(n / total, 6) if total else 0.0


def _row(
    n_trace: int,
    n_schedule: int,
    totals: tuple[int, int],
    pop: tuple[NDArray[np.float64], NDArray[np.float64]],
    gaps: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> dict[str, Any]:
    return {
        "trace_share": _share(n_trace, totals[0]),
        "schedule_share": _share(n_schedule, totals[1]),
        "ks_popularity": _ks(pop[0], pop[1]),
        "ks_interarrival": _ks(gaps[0], gaps[1]),
        "n_trace": n_trace,
        "n_schedule": n_schedule,
        "n_objects": {"trace": int(pop[0].size), "schedule": int(pop[1].size)},
        "n_gaps": {"trace": int(gaps[0].size), "schedule": int(gaps[1].size)},
    }


def by_command(trace: CommandSamples, schedule: CommandSamples) -> dict[str, dict[str, Any]]:
    """``{cmd: {trace_share, schedule_share, ks_popularity, ks_interarrival, n_trace, n_schedule,
    n_objects, n_gaps, modelled, targets: {target: {the same keys but modelled}}}}`` for every
    command on either side, most frequent in the trace first."""
    totals = (trace.total, schedule.total)
    empty = np.empty(0, dtype=np.float64)
    cmds = sorted(trace.commands() | schedule.commands(), key=lambda c: (-_count(trace, c), -_count(schedule, c), c))
    out: dict[str, dict[str, Any]] = {}
    for cmd in cmds:
        row = _row(
            _count(trace, cmd),
            _count(schedule, cmd),
            totals,
            (trace.pooled(cmd, trace.popularity), schedule.pooled(cmd, schedule.popularity)),
            (trace.pooled(cmd, trace.gaps), schedule.pooled(cmd, schedule.gaps)),
        )
        row["modelled"] = cmd in MODELLED_CMDS
        targets: dict[str, Any] = {}
        for target in TARGETS:
            k = (cmd, target)
            if k not in trace.events and k not in schedule.events:
                continue
            targets[target] = _row(
                trace.events.get(k, 0),
                schedule.events.get(k, 0),
                totals,
                (trace.popularity.get(k, empty), schedule.popularity.get(k, empty)),
                (trace.gaps.get(k, empty), schedule.gaps.get(k, empty)),
            )
        row["targets"] = targets
        out[cmd] = row
    return out


def _count(samples: CommandSamples, cmd: str) -> int:
    return sum(n for (c, _t), n in samples.events.items() if c == cmd)


def without_ks(table: dict[str, dict[str, Any]]) -> list[str]:
    """The commands whose ``ks_popularity`` or ``ks_interarrival`` is None (pooled over targets)."""
    return [cmd for cmd, row in table.items() if row["ks_popularity"] is None or row["ks_interarrival"] is None]


__all__ = ["MIN_SAMPLES", "CommandSamples", "by_command", "classify", "command_samples", "without_ks"]
