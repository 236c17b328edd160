"""Every command of format 2 through a whole run: what each backend performs, maps or skips is
counted per command in the summary, said at start, and never dropped silently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.unit.test_run_schedules import Dir, Event, File, write_schedule

from mimesisbench.backends.base import NOTHING, V1_COMMANDS, Capabilities, NativeLaneRunner
from mimesisbench.backends.commands import command_plan
from mimesisbench.backends.conformance import CASES, ConformanceError, run_case
from mimesisbench.backends.memory import MEMORY_CAPABILITIES, MemoryBackend
from mimesisbench.results import rundir
from mimesisbench.results.records import RunSummary
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.run.worker import native_can_run
from mimesisbench.schedule import format as fmt
from mimesisbench.schedule.format import OpCode

Op = OpCode


def _schedule(root: Path) -> Path:
    dirs: list[Dir] = [(0, -1, 0, 0, "/", True), (1, 0, 1, 1, "/d1", True), (2, 0, 1, 0, "/m", False)]
    files: list[File] = [(0, 1, 1, True), (1, 1, 1, True), (2, 1, 2, False)]
    events: list[Event] = [
        (1_000, Op.SET_TIMES, 1, 0, 0),
        (2_000, Op.TRUNCATE, 1, 0, 0),
        (3_000, Op.CONCAT, 1, 0, 0),
        (4_000, Op.SET_STORAGE_POLICY, 1, 1, 0),
        (4_500, Op.SET_PERMISSION, 1, 1, 0),
        (5_000, Op.GETFILEINFO_DIR, 0, 1, 0),
        (6_000, Op.CONTENT_SUMMARY_DIR, 0, 1, 0),
        (7_000, Op.MKDIRS, 0, 2, 0),
        (8_000, Op.CREATE, 1, 2, 0),
        (8_500, Op.APPEND, 1, 2, 0),
        (9_000, Op.DELETE_DIR, 0, 2, 0),
        (9_500, Op.NAMENODE, 0, 0, 0),
        (9_600, Op.CREATE_OVERWRITE, 1, 1, 0),
        (9_700, Op.MKDIRS_EXISTING, 0, 1, 0),
        (9_800, Op.CHECK_ACCESS_DIR, 0, 1, 0),
    ]
    write_schedule(root, dirs, files, events)
    manifest = json.loads((root / fmt.MANIFEST).read_text(encoding="utf-8"))
    manifest["pathless_commands"] = ["getServerDefaults"]
    (root / fmt.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _run(tmp_path: Path, backend: str) -> tuple[dict, dict]:  # type: ignore[type-arg]
    config = RunConfig(schedule=str(_schedule(tmp_path / "s")), backend=backend, out=str(tmp_path / "runs"),
                       time_scale=0.0, workers=1)
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text(encoding="utf-8"))
    manifest = json.loads((report.run_dir / rundir.MANIFEST).read_text(encoding="utf-8"))
    RunSummary.model_validate(summary)
    return summary, manifest


@pytest.mark.parametrize("name", ["posix", "memory", "null"])
def test_a_run_counts_performed_mapped_and_skipped_commands(tmp_path: Path, name: str) -> None:
    url = f"posix:{tmp_path / 'base'}" if name == "posix" else name
    summary, manifest = _run(tmp_path, url)
    expected_skipped = {
        "posix": {"set_storage_policy": 1, "namenode": 1},
        "memory": {"namenode": 1},
        "null": {},
    }[name]
    assert summary["skipped"] == expected_skipped
    assert summary["operations_skipped"] == sum(expected_skipped.values())
    assert summary["mapped"] == ({} if name == "null" else {"concat": "append"})
    assert summary["operations_scheduled"] == 15
    assert summary["operations_issued"] == 15 - summary["operations_skipped"]
    assert summary["operations_failed"] == 0, summary["outcomes"]
    for label in ("set_times", "truncate", "concat", "content_summary_dir", "delete_dir", "mkdirs_existing"):
        assert summary["operations"][label]["succeeded"] == 1, label
    assert not set(expected_skipped) & set(summary["operations"])
    said = [w for w in manifest["warnings"] if "skipped" in w or "nearest" in w]
    assert bool(said) == (name != "null")
    assert manifest["commands"]["skipped"] == expected_skipped
    if name == "posix":
        assert "set_storage_policy 1" in said[0] and "concat as append" in said[0]
        assert all(impl == "python" for impl in manifest["lane_impl"])  # format-2 ops: not the native lane


def test_the_native_lane_runs_only_the_operations_it_knows() -> None:
    runner = NativeLaneRunner(name="x", version="0", run=lambda *a, **k: ("done", 0, 0, ""),
                              stop_flag=object, progress=object)
    assert runner.ops == V1_COMMANDS
    assert native_can_run(runner, np.array([1, 2, 9], dtype=np.uint8))
    assert not native_can_run(runner, np.array([1, int(Op.SET_TIMES)], dtype=np.uint8))


def test_command_plan_and_its_announcement() -> None:
    ops = np.array([int(Op.OPEN)] * 3 + [int(Op.TRUNCATE)] * 2 + [int(Op.NAMENODE)], dtype=np.uint8)
    plan = command_plan(MEMORY_CAPABILITIES, ops)
    assert plan.skipped == {"namenode": 1} and plan.operations_skipped == 1 and plan.mapped == {}
    said = plan.announcement("memory")
    assert said is not None and "namenode 1" in said
    assert command_plan(NOTHING, ops).announcement("null") is None


def test_capabilities_are_consistent() -> None:
    with pytest.raises(ValueError, match="mapped operations must map"):
        Capabilities(mapped={Op.TRUNCATE: Op.SET_TIMES})  # set_times is not performed
    with pytest.raises(ValueError, match="both skipped and performed"):
        Capabilities(skipped=frozenset({Op.OPEN}))
    caps = Capabilities(commands=V1_COMMANDS | {Op.APPEND}, mapped={Op.CONCAT: Op.APPEND})
    assert caps.performed_as(Op.CONCAT) is Op.APPEND and caps.skips(Op.TRUNCATE) and not caps.skips(Op.CONCAT)


class _TimelessMemory(MemoryBackend):
    """Claims set_times but leaves the time as it was."""

    def set_times(self, path: str) -> None:
        self.getfileinfo(path)


class _ShallowDelete(MemoryBackend):
    """Claims delete_dir but refuses a directory that is not empty."""

    def delete_dir(self, path: str) -> None:
        if self.list_dir(path):
            raise OSError(39, "Directory not empty", path)
        super().delete_dir(path)


@pytest.mark.parametrize(
    ("cls", "case", "message"),
    [
        (_TimelessMemory, "command_set_times", "set_times: mtime"),
        (_ShallowDelete, "command_delete_dir", r"delete_dir\('/d',\): expected ok"),
    ],
)
def test_the_command_table_finds_a_command_that_does_not_happen(cls: type, case: str, message: str) -> None:
    found = next(c for c in CASES if c.name == case)
    with pytest.raises(ConformanceError, match=message):
        run_case(lambda: (cls(), lambda: None), found)


def test_the_terminal_and_html_reports_show_skipped_and_mapped_commands(tmp_path: Path) -> None:
    from rich.console import Console

    from mimesisbench.report.build import build_report
    from mimesisbench.results.table import summary_table

    summary, _ = _run(tmp_path, f"posix:{tmp_path / 'base'}")
    console = Console(record=True, width=200)
    console.print(summary_table(summary))
    text = console.export_text()
    assert "concat (as append)" in text and "set_storage_policy (skipped)" in text and "namenode (skipped)" in text
    assert "2 skipped (the backend cannot perform them)" in text
    run_dir = next((tmp_path / "runs").iterdir())
    html = build_report([run_dir], tmp_path / "report").html_path.read_text(encoding="utf-8")
    assert "Commands mapped or skipped by the backend" in html and "performed as append" in html
    assert "skipped: 1 not issued" in html
