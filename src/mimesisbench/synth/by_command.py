"""``validate --trace`` per audited command: how far a schedule is from a trace, command by command.

Every allowed event with a command counts. Its object and *target* are those of the object view
(``model.objects.build_view``, the one classification of the fit): ``directory`` or ``file``
(objects followed across renames), ``none`` for NameNode-wide commands without a path
(``src=null``).

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

from mimesisbench.model.objects import ObjectView, build_view
from mimesisbench.schedule.format import MODELLED_CMDS
from mimesisbench.synth.kstats import ks_two

TARGETS = ("file", "directory", "none")
#: fewer samples than this on either side: no KS
MIN_SAMPLES = 2


def classify(events: pl.DataFrame, view: ObjectView | None = None) -> pl.DataFrame:
    """The allowed events with a command as ``time_ms``, ``cmd`` (String), ``target`` (``TARGETS``)
    and ``key`` (the object id of ``model.objects``'s view; null without a path). ``view``: that
    of ``events`` built with its event table (made here when not given)."""
    if view is None or (view.events.height == 0 and view.objects.height > 0):
        view = build_view(events, event_tables=True)
    allowed = pl.col("allowed").fill_null(False) if "allowed" in events.columns else pl.lit(True)
    ids = view.objects["obj"].to_numpy()
    dir_of = np.zeros(int(ids.max(initial=0)) + 1, dtype=bool)
    dir_of[ids] = view.objects["is_dir"].to_numpy()
    obj = view.events["obj"].to_numpy()
    with_path = pl.DataFrame({
        "time_ms": view.events["time_ms"],
        "cmd": view.events["op"].cast(pl.String),
        "target": pl.Series(np.where(dir_of[obj], "directory", "file") if obj.size else np.empty(0, dtype=str),
                            dtype=pl.String),
        "key": view.events["obj"],
    })  # fmt: skip
    pathless = events.filter(allowed & pl.col("op").is_not_null() & pl.col("path").is_null()).select(
        pl.col("time_ms").cast(pl.Int64),
        pl.col("op").cast(pl.String).alias("cmd"),
        pl.lit("none").alias("target"),
        pl.lit(None, dtype=pl.Int32).alias("key"),
    )
    return pl.concat([with_path, pathless]).sort("time_ms", maintain_order=True)


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
