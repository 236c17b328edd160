"""Per-file features of a schedule, straight from its arrays (no paths): for fidelity checks.

All times are microseconds from t0; -1 means "none in the window".

A file's accesses are its OPEN and LIST_FILE events; for files of the types in ``chain_types``
(format 2, whose accesses a command chain labels) every event but its CREATE and a DELETE that
is its last event (docs/model.md: an object's accesses). ``command_shares`` gives, per type,
the share of each audit command among its objects' accesses, files' and directories' alike.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.schedule import Schedule
from mimesisbench.schedule.format import COMMANDS, OpCode

I64 = NDArray[np.int64]


@dataclass(frozen=True)
class FileFeatures:
    """One entry per file id."""

    ftype: NDArray[np.int16]
    pre: NDArray[np.bool_]
    depth: NDArray[np.int16]  # the file's depth (its directory's depth + 1)
    origin: I64  # creation time, 0 for pre-existing files
    created: NDArray[np.bool_]  # created inside the schedule
    first: I64
    last: I64
    accesses: I64
    opens: I64
    deleted: I64
    gaps_file: I64  # per-file access interarrivals: the file of each gap
    gaps: I64  # ... and the gap, us
    gaps_prev: I64  # ... and the time of the access that opens the gap, us

    def of_type(self, type_id: int) -> NDArray[np.bool_]:
        return self.ftype == type_id


def _first_time(targets: I64, times: I64, n: int, last: bool = False) -> I64:
    out = np.full(n, -1, dtype=np.int64)
    if targets.size == 0:
        return out
    if last:
        out[targets] = times  # later writes win: events are in time order
    else:
        out[targets[::-1]] = times[::-1]
    return out


def lifecycle_events(op: NDArray[np.uint8], target: I64, kinds: NDArray[np.uint8]) -> NDArray[np.bool_]:
    """Events that are not accesses: the making CREATE / MKDIRS, and a DELETE / DELETE_DIR that
    is its object's last event (events in time order)."""
    out = (op == OpCode.CREATE) | (op == OpCode.MKDIRS)
    dels = np.flatnonzero((op == OpCode.DELETE) | (op == OpCode.DELETE_DIR))
    if dels.size:
        obj = target * 3 + kinds  # one key per (object, kind)
        last = np.zeros(op.size, dtype=bool)
        _, first_rev = np.unique(obj[::-1], return_index=True)
        last[op.size - 1 - first_rev] = True
        out[dels[last[dels]]] = True
    return out


def _target_kinds(op: NDArray[np.uint8]) -> NDArray[np.uint8]:
    table = np.array([{"file": 0, "directory": 1, "none": 2}[COMMANDS[o].target] for o in OpCode], dtype=np.uint8)
    lookup = np.full(max(OpCode) + 1, 2, dtype=np.uint8)
    lookup[[int(o) for o in OpCode]] = table
    return lookup[op]


def command_shares(tables: Schedule) -> dict[int, dict[str, float]]:
    """Per type: each audit command's share among the accesses of the type's objects."""
    ev = tables.events
    op = ev.get_column("op").to_numpy()
    target = ev.get_column("target").to_numpy().astype(np.int64)
    etype = ev.get_column("type").to_numpy().astype(np.int64)
    kinds = _target_kinds(op)
    acc = ~lifecycle_events(op, target, kinds) & (kinds < 2) & (etype > 0)
    out: dict[int, dict[str, float]] = {}
    for t in np.unique(etype[acc]).tolist():
        ops = op[acc & (etype == t)]
        counts = np.bincount(ops, minlength=max(OpCode) + 1)
        by_cmd: dict[str, float] = {}
        for o in np.flatnonzero(counts).tolist():
            cmd = COMMANDS[OpCode(o)].audit_cmd or "namenode"
            by_cmd[cmd] = by_cmd.get(cmd, 0.0) + float(counts[o]) / ops.size
        out[int(t)] = by_cmd
    return out


def file_features(tables: Schedule, chain_types: Collection[int] = ()) -> FileFeatures:
    files = tables.files.sort("file_id")
    n = files.height
    ftype = files.get_column("type").to_numpy().astype(np.int16)
    pre = files.get_column("pre_existing").to_numpy().astype(bool)
    dir_depth = tables.directories.sort("dir_id").get_column("depth").to_numpy().astype(np.int16)
    depth = (dir_depth[files.get_column("dir_id").to_numpy()] + 1).astype(np.int16)
    ev = tables.events
    time = ev.get_column("time_us").to_numpy()
    op = ev.get_column("op").to_numpy()
    target = ev.get_column("target").to_numpy().astype(np.int64)
    file_op = ~np.isin(op, [OpCode.LIST_DIR, OpCode.MKDIRS, OpCode.RENAME_DIR])
    cr = op == OpCode.CREATE
    origin = np.zeros(n, dtype=np.int64)
    origin[target[cr]] = time[cr]
    created = np.zeros(n, dtype=bool)
    created[target[cr]] = True
    plain = ((op == OpCode.OPEN) | (op == OpCode.LIST_FILE)) & file_op
    if chain_types:
        kinds = _target_kinds(op)
        etype = ev.get_column("type").to_numpy()
        chained = (kinds == 0) & np.isin(etype, list(chain_types))
        plain = np.where(chained, ~lifecycle_events(op, target, kinds), plain)
    acc = np.flatnonzero(plain)
    a_t, a_f = time[acc], target[acc]
    first = _first_time(a_f, a_t, n)
    last = _first_time(a_f, a_t, n, last=True)
    accesses = np.bincount(a_f, minlength=n).astype(np.int64)
    opens = np.bincount(target[op == OpCode.OPEN], minlength=n).astype(np.int64)
    dl = op == OpCode.DELETE
    deleted = np.full(n, -1, dtype=np.int64)
    deleted[target[dl]] = time[dl]
    order = np.argsort(a_f, kind="stable")  # by file, then time (events are time-ordered)
    f_sorted, t_sorted = a_f[order], a_t[order]
    same = f_sorted[1:] == f_sorted[:-1]
    gaps = np.diff(t_sorted)[same]
    return FileFeatures(
        ftype=ftype,
        pre=pre,
        depth=depth,
        origin=origin,
        created=created,
        first=first,
        last=last,
        accesses=accesses,
        opens=opens,
        deleted=deleted,
        gaps_file=f_sorted[1:][same],
        gaps=gaps,
        gaps_prev=t_sorted[:-1][same],
    )


def op_counts(tables: Schedule) -> dict[str, int]:
    counts = tables.events.group_by("op").len()
    got = {int(o): int(c) for o, c in zip(counts.get_column("op").to_list(), counts.get_column("len").to_list())}
    return {op.label: got.get(int(op), 0) for op in OpCode}


def depth_shares_of(depth: NDArray[np.int16]) -> dict[int, float]:
    if depth.size == 0:
        return {}
    counts = np.bincount(depth.astype(np.int64))
    return {int(d): float(c / depth.size) for d, c in enumerate(counts) if c}

