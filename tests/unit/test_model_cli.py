"""``mimesisbench model`` and ``export-audit`` on awkward inputs and outputs: exit codes and
one-line messages, never a traceback, never a device, link or partial file written."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_atomic import not_regular_outputs
from test_synth_helpers import make_profile
from test_trace_audit import line
from tests.unit.cli_run import run_cli

from mimesisbench import atomic
from mimesisbench.native import ENV_SWITCH
from mimesisbench.profile.io import save_profile


def _real(ts: str, ugi: str, ip: str, cmd: str, src: str, perm: str = "null") -> str:
    return (f"2019-04-10 {ts} INFO FSNamesystem.audit: allowed=true\tugi={ugi} (auth:SIMPLE)\tip=/{ip}\tcmd={cmd}"
            f"\tsrc={src}\tdst=null\tperm={perm}\tproto=rpc")  # fmt: skip


#: real NameNode lines (spark-hive-sandbox-audit.log) and what `hdfs dfsadmin -saveNamespace`
#: logs among them: src=null lines
SAVE_NAMESPACE_LOG = [
    _real("18:01:45,622", "root", "10.211.55.101", "mkdirs", "/var/hadoop/mr-history/done", "root:supergroup:rwxrwx---"),
    _real("18:01:45,653", "root", "10.211.55.101", "getfileinfo", "/var/hadoop/mr-history/done"),
    _real("18:02:00,000", "hdfs", "127.0.0.1", "safemode_enter", "null"),
    _real("18:02:00,100", "hdfs", "127.0.0.1", "saveNamespace", "null"),
    _real("18:02:00,200", "hdfs", "127.0.0.1", "safemode_leave", "null"),
    _real("18:02:33,946", "root", "10.211.55.101", "create", "/user/spark/applicationHistory/.619b0c4b",
          "root:supergroup:rw-r--r--"),
    _real("18:02:34,006", "root", "10.211.55.101", "delete", "/user/spark/applicationHistory/.619b0c4b"),
]  # fmt: skip




def _log(tmp_path: Path, lines: list[str], name: str = "audit.log") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("native", ["0", "1"])
def test_save_namespace_lines_are_modelled_as_admin_ops(tmp_path: Path, native: str) -> None:
    # a fresh process: the crash depended on polars' global category codes (the first path cast
    # gets code 0, which the null paths of src=null lines were filled with)
    log = _log(tmp_path, SAVE_NAMESPACE_LOG)
    out = tmp_path / "p.json"
    proc = subprocess.run(
        [sys.executable, "-m", "mimesisbench", "model", "--audit", str(log), "--types", "2", "-o", str(out)],
        capture_output=True, text=True, env={**os.environ, ENV_SWITCH: native}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "7 events (3 without a path: NameNode-wide commands such as saveNamespace)" in proc.stderr
    counts = json.loads(out.read_text())["op_mix"]["observed_counts"]
    assert counts["saveNamespace"] == 1 and counts["safemode_enter"] == 1 and counts["create"] == 1


@pytest.mark.parametrize("native", ["0", "1"])
def test_no_usable_event_is_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], native: str) -> None:  # fmt: skip
    monkeypatch.setenv(ENV_SWITCH, native)
    log = _log(tmp_path, [
        line("2015-10-11 00:00:00,000", "open", "/a", allowed="false"),
        line("2015-10-11 00:00:01,000", "saveNamespace", "null"),
    ])  # fmt: skip
    code, _, err = run_cli(["model", "--audit", str(log), "-o", str(tmp_path / "p.json")], capsys)
    assert code == 3 and "denied (allowed=false: 1)" in err and "src=null" in err
    assert not (tmp_path / "p.json").exists()


def test_a_command_seen_only_in_denied_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _log(tmp_path, [
        line("2015-10-11 00:00:00,000", "create", "/a/f"),
        line("2015-10-11 00:00:01,000", "open", "/a/f"),
        line("2015-10-11 00:00:02,000", "delete", "/a/f", allowed="false"),
    ])  # fmt: skip
    code, out, _ = run_cli(["model", "--audit", str(log), "-o", str(tmp_path / "p.json")], capsys)
    assert code == 0 and out.strip() == str(tmp_path / "p.json")


def test_malformed_lines_and_rows_are_counted_with_line_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = "2015-10-11 00:00:00,000 INFO FSNamesystem.audit: allowed=true\tugi=x"
    lines = [line(f"2015-10-11 00:00:{i:02d},000", "open", f"/a/f{i % 3}") for i in range(20)]
    for i in (2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17):
        lines[i] = bad
    log = _log(tmp_path, lines)
    code, _, err = run_cli(["model", "--audit", str(log), "--types", "1", "-o", str(tmp_path / "p.json")], capsys)
    assert code == 0 and "12 malformed lines skipped" in err
    assert [f"{log}:{n}:" in err for n in (3, 6, 14, 15, 18)] == [True, True, True, False, False]  # the first ten
    assert "... and 2 more" in err
    csv = tmp_path / "t.csv"
    csv.write_text("time_ms,op,path\n1,create,/a\ninf,open,/a\nnan,open,/a\n1e30,open,/a\n5,open,/a\n")
    code, _, err = run_cli(["model", "--audit", str(csv), "--types", "1", "-o", str(tmp_path / "q.json")], capsys)
    assert code == 0 and "3 malformed lines skipped" in err
    assert all(f"{csv}:{n}:" in err for n in (3, 4, 5))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "--seed: must be >= 0"),
        (["--window-start", "2000", "--window-end", "1000"], "--window-start (2000 ms) must be before --window-end"),
        (["--window-start", "1000", "--window-end", "1000"], "must be before --window-end"),
    ],
)
def test_bad_options_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    log = _log(tmp_path, [line("2015-10-11 00:00:00,000", "open", "/a")])
    code, _, err = run_cli(["model", "--audit", str(log), *args, "-o", str(tmp_path / "p.json")], capsys)
    assert code == 2 and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log"]


def _untouched(tmp_path: Path, *inputs: str) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["fifo", "folder", "kept.json", "link.json", *inputs])
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "kept.json").read_text() == "kept"
    assert (tmp_path / "fifo").is_fifo() and not any((tmp_path / "folder").iterdir())


def test_model_output_must_be_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _log(tmp_path, [line("2015-10-11 00:00:00,000", "open", "/a")])
    for output, kind in not_regular_outputs(tmp_path):
        code, _, err = run_cli(["model", "--audit", str(log), "-o", str(output)], capsys)
        assert code == 2 and f"-o: {str(output).rstrip('/')}" in err and kind in err
    _untouched(tmp_path, "audit.log")


def _no_space(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)


def test_model_on_a_full_disk_is_exit_3_and_leaves_the_old_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path, [line("2015-10-11 00:00:00,000", "create", "/a"), line("2015-10-11 00:00:01,000", "open", "/a")])
    out = tmp_path / "p.json"
    out.write_text("old")
    _no_space(monkeypatch)
    code, _, err = run_cli(["model", "--audit", str(log), "--types", "1", "-o", str(out)], capsys)
    assert code == 3 and f"cannot write {out}: No space left on device" in err
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "p.json"]


@pytest.fixture()
def schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    profile = save_profile(make_profile(n=200, pre=(20, 10, 5)), tmp_path / "profile.json")
    code, _, _ = run_cli(["generate", str(profile), "--seed", "1", "--duration", "10s", "-o", str(tmp_path / "s")], capsys)
    assert code == 0
    return tmp_path / "s"


def test_export_audit_output(schedule: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    work = tmp_path / "out"
    work.mkdir()
    for output, kind in not_regular_outputs(work):
        code, _, err = run_cli(["export-audit", str(schedule), "-o", str(output)], capsys)
        assert code == 2 and kind in err
    _untouched(work)
    log = work / "audit.log"
    code, _, err = run_cli(["export-audit", str(schedule), "-o", str(log)], capsys)
    assert code == 0 and "audit lines" in err
    written = log.read_bytes()
    assert written.count(b"\n") > 10
    _untouched(work, "audit.log")
    _no_space(monkeypatch)
    code, _, err = run_cli(["export-audit", str(schedule), "-o", str(log), "--base", "/other"], capsys)
    assert code == 3 and "No space left on device" in err
    assert log.read_bytes() == written  # the old file stands, and no temporary is left beside it
    _untouched(work, "audit.log")


def test_model_writes_through_the_helper_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    calls: list[Any] = []
    real = atomic.atomic_output

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(atomic, "atomic_output", spy)
    log = _log(tmp_path, [line("2015-10-11 00:00:00,000", "create", "/a")])
    code, _, _ = run_cli(["model", "--audit", str(log), "--types", "1", "-o", str(tmp_path / "p")], capsys)
    assert code == 0 and calls == [(tmp_path / "p.json",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "p.json"]
