"""A reference checker: replay a schedule against a set-based namespace model.

The model holds the set of existing directory paths and file paths (strings, built the way the
replay engine builds them: directory path + ``file_name(id, type, generation)``). Phase 1 adds
the pre-existing directories and files; then every event must be valid at its time: its path
exists (or, for creations, does not exist and its parent does: CREATE makes a missing parent,
and the missing directories above it, as ``FileSystem.create`` does), times do not go backwards,
``seq`` increases and nothing lies past the window. Meant for tests and debugging (one Python
step per event), not for Yahoo-scale schedules.

Format 2's operations: every access of a file or directory (getfileinfo, contentSummary,
setPermission, ...) needs its object; CREATE_OVERWRITE needs the parent and (re)creates the
file; MKDIRS_EXISTING needs the parent (re)makes the directory; DELETE_DIR removes a directory
and everything under it; GETFILEINFO_ABSENT(_DIR) is valid whether its object exists or not; NAMENODE (no path) needs its target to index the manifest's
``pathless_commands``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mimesisbench.errors import ScheduleError
from mimesisbench.schedule import Schedule, read_schedule
from mimesisbench.schedule.format import OpCode, dir_rename_name, file_name


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    events_checked: int
    first_invalid: int | None = None  # row index into events.parquet
    message: str = ""


def _join(parent: str, name: str) -> str:
    return ("" if parent == "/" else parent) + "/" + name


@dataclass
class _Model:
    """The set-based namespace: what exists now, and how many entries each directory holds."""

    dir_path: list[str]
    dir_parent: list[int]
    dir_pre: list[bool]
    dir_gen: list[int]
    f_type: list[int]
    f_dir: list[int]
    f_pre: list[bool]
    live_dirs: set[str]
    live_files: set[str]
    children: dict[str, int]

    pathless: int = 0

    def apply(self, op: OpCode, ty: int, target: int, gen: int) -> str | None:
        """Apply one event; the reason it is invalid, or None when it is valid."""
        if op == OpCode.NAMENODE:
            return None if 0 <= target < self.pathless else "not an index into pathless_commands"
        if op.on_directory:
            return self._apply_dir(op, target, gen)
        return self._apply_file(op, ty, target, gen)

    def _apply_dir(self, op: OpCode, target: int, gen: int) -> str | None:
        dir_path, dir_gen, live_dirs, children = self.dir_path, self.dir_gen, self.live_dirs, self.children
        if not 0 <= target < len(dir_path):
            return "unknown directory id"
        path = dir_rename_name(dir_path[target], dir_gen[target])
        if gen != dir_gen[target]:
            return f"generation {gen}, but the directory is at generation {dir_gen[target]}"
        parent = dir_path[self.dir_parent[target]] if target else ""
        if op == OpCode.MKDIRS:
            if self.dir_pre[target]:
                return "mkdirs of a pre-existing directory"
            if parent not in live_dirs:
                return f"parent {parent} does not exist"
            if path in live_dirs:
                return f"directory {path} exists already"
            self._add(live_dirs, path, parent)
        elif op == OpCode.MKDIRS_EXISTING:
            if target and parent not in live_dirs:
                return f"parent {parent} does not exist"
            self._add(live_dirs, path, parent)
        elif op == OpCode.RENAME_DIR:
            new = dir_rename_name(dir_path[target], gen + 1)
            if path not in live_dirs:
                return f"directory {path} does not exist"
            if new in live_dirs:
                return f"rename destination {new} exists"
            if children.get(path, 0):
                return f"directory {path} is not empty"
            live_dirs.discard(path)
            live_dirs.add(new)
            dir_gen[target] += 1
        elif op == OpCode.GETFILEINFO_ABSENT_DIR:
            return None  # a lookup that may miss
        elif path not in live_dirs:  # DELETE_DIR and every access need the directory
            return f"directory {path} does not exist"
        elif op == OpCode.DELETE_DIR:
            self._remove_tree(path)
            children[parent] -= 1
        return None

    def _add(self, live: set[str], path: str, parent: str) -> None:
        """``path`` (a directory in ``live_dirs`` or a file in ``live_files``) exists now, one more
        entry of ``parent``; nothing changes when it existed already."""
        if path not in live:
            live.add(path)
            self.children[parent] = self.children.get(parent, 0) + 1

    def _make_parents(self, d: int) -> None:
        """CREATE makes its directory and the missing ones above it (``FileSystem.create``)."""
        missing: list[int] = []
        while self.dir_path[d] not in self.live_dirs:
            missing.append(d)
            d = self.dir_parent[d]
        for m in reversed(missing):
            self._add(self.live_dirs, self.dir_path[m], self.dir_path[self.dir_parent[m]])

    def _remove_tree(self, path: str) -> None:
        """A recursive delete: the directory, its subdirectories and their files."""
        prefix = path + "/"
        for d in [d for d in self.live_dirs if d == path or d.startswith(prefix)]:
            self.live_dirs.discard(d)
            self.children.pop(d, None)
        for f in [f for f in self.live_files if f.startswith(prefix)]:
            self.live_files.discard(f)

    def _apply_file(self, op: OpCode, ty: int, target: int, gen: int) -> str | None:
        f_type, live_files, children = self.f_type, self.live_files, self.children
        if not 0 <= target < len(f_type):
            return "unknown file id"
        if ty != f_type[target]:
            return f"type {ty}, but the file is of type {f_type[target]}"
        parent = self.dir_path[self.f_dir[target]]
        path = _join(parent, file_name(target, f_type[target], gen))
        if op == OpCode.CREATE:
            if self.f_pre[target]:
                return "create of a pre-existing file"
            self._make_parents(self.f_dir[target])
            if path in live_files:
                return f"file {path} exists already"
            self._add(live_files, path, parent)
        elif op == OpCode.CREATE_OVERWRITE:
            if parent not in self.live_dirs:
                return f"directory {parent} does not exist"
            self._add(live_files, path, parent)
        elif op == OpCode.DELETE:
            if path not in live_files:
                return f"file {path} does not exist"
            live_files.discard(path)
            children[parent] -= 1
        elif op == OpCode.RENAME_FILE:
            new = _join(parent, file_name(target, f_type[target], gen + 1))
            if path not in live_files:
                return f"file {path} does not exist"
            if new in live_files:
                return f"rename destination {new} exists"
            live_files.discard(path)
            live_files.add(new)
        elif op == OpCode.GETFILEINFO_ABSENT:
            return None  # a lookup that may miss
        elif path not in live_files:  # every other operation reads or changes the file in place
            return f"file {path} does not exist"
        return None


def check_schedule(schedule: Schedule | str | Path) -> CheckResult:
    """Replay ``schedule`` and report the first invalid event, if any (a generated schedule: a
    verbatim one names its own paths and says what each operation does, ``expect_ok``)."""
    tables = schedule if isinstance(schedule, Schedule) else read_schedule(schedule)
    if tables.explicit_paths:
        raise ScheduleError(
            f"schedule {tables.root}: a verbatim schedule (explicit paths) is not checked here; "
            "its expect_ok column says which operations succeed"
        )
    dirs = tables.directories.sort("dir_id")
    dir_path: list[str] = dirs.get_column("path").to_list()
    dir_parent: list[int] = dirs.get_column("parent_id").to_list()
    dir_pre: list[bool] = dirs.get_column("pre_existing").to_list()
    files = tables.files.sort("file_id")
    f_type: list[int] = files.get_column("type").to_list()
    f_dir: list[int] = files.get_column("dir_id").to_list()
    f_pre: list[bool] = files.get_column("pre_existing").to_list()

    live_dirs = {p for p, pre in zip(dir_path, dir_pre) if pre}
    children: dict[str, int] = {}
    for p in live_dirs:
        if p != "/":
            parent = p.rsplit("/", 1)[0] or "/"
            children[parent] = children.get(parent, 0) + 1
    live_files: set[str] = set()
    for fid, (ty, d, pre) in enumerate(zip(f_type, f_dir, f_pre)):
        if pre:
            live_files.add(_join(dir_path[d], file_name(fid, ty, 0)))
            children[dir_path[d]] = children.get(dir_path[d], 0) + 1
    pathless = tables.manifest.get("pathless_commands", [])
    model = _Model(
        dir_path,
        dir_parent,
        dir_pre,
        [0] * len(dir_path),
        f_type,
        f_dir,
        f_pre,
        live_dirs,
        live_files,
        children,
        len(pathless) if isinstance(pathless, list) else 0,
    )

    window_us = int(tables.manifest.get("window_ms", 0)) * 1000
    ev = tables.events
    cols = [ev.get_column(c).to_list() for c in ("time_us", "op", "type", "target", "generation", "seq")]
    last_time, last_seq = -1, -1
    for i, (t, op_raw, ty, target, gen, seq) in enumerate(zip(*cols)):
        op = OpCode(op_raw)
        why: str | None
        if t < last_time or seq <= last_seq:
            why = "out of order"
        elif t < 0 or (window_us > 0 and t >= window_us):
            why = f"outside the window [0, {window_us}) us"
        else:
            why = model.apply(op, ty, target, gen)
        if why is not None:
            return CheckResult(False, i, i, f"event {i} ({op.label} at {t} us, target {target}): {why}")
        last_time, last_seq = t, seq
    return CheckResult(True, len(cols[0]))
