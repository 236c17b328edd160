"""``mimesisbench profile show|import``: output, JSON, exit codes, no tracebacks.

The Yahoo profile's ``show`` output is checked in test_profile_legacy2014.py (it reuses the import).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.cli_run import run_cli


def _table_rows(out: str) -> list[list[str]]:
    """The per-type rows of ``profile show``: 9 cells, an id first and a percentage last."""
    cells = (line.split() for line in out.splitlines())
    return [c for c in cells if len(c) == 9 and c[0].isdigit() and c[-1].endswith("%")]




def test_show_demo_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["profile", "show", "demo", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert [t["id"] for t in data["types"]] == [1, 2]
    assert data["types"][0]["mean_access_interarrival_ms"] == pytest.approx(179.61)


def test_show_demo_prints_the_papers_means(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["profile", "show", "demo"], capsys)
    assert code == 0
    rows = _table_rows(out)
    assert [r[0] for r in rows] == ["1", "2"]
    assert rows[0][4:9] == ["179.61", "40.64", "3.33", "69.0%", "31.0%"]
    assert rows[1][4:9] == ["4.92", "87,355", "8.33", "100.0%", "0.0%"]


@pytest.mark.parametrize(
    ("content", "fragment", "code"),
    [
        ('{"bogus": 1}', "error: invalid profile", 4),
        ("{not json", "not valid JSON", 4),
        (None, "profile not found", 3),
    ],
)
def test_errors_exit_non_zero_without_traceback(tmp_path: Path, content: str | None, fragment: str, code: int) -> None:
    path = tmp_path / "p.json"
    if content is not None:
        path.write_text(content)
    proc = subprocess.run(
        [sys.executable, "-m", "mimesisbench", "profile", "show", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == code
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_import_of_bad_source_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.zip").write_text("junk")
    code, out, err = run_cli(["profile", "import", str(tmp_path / "junk.zip"), "-o", str(tmp_path / "p.json")], capsys)
    assert code == 4
    assert err.startswith("error: ") and "Traceback" not in out + err
    assert not (tmp_path / "p.json").exists()


def test_import_needs_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["profile", "import", str(tmp_path)], capsys)
    assert code == 2 and "-o" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "show", "{missing}"],
        ["generate", "{missing}", "-o", "{out}"],
        ["generate", "{missing_zip}", "-o", "{out}"],
        ["profile", "import", "{missing_zip}", "-o", "{out}"],
    ],
)
def test_a_missing_profile_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    names = {"missing": str(tmp_path / "nope.json"), "missing_zip": str(tmp_path / "nope.zip")}
    names["out"] = str(tmp_path / "o")
    code, out, err = run_cli([a.format(**names) for a in argv], capsys)
    assert code == 3, err
    assert "not found" in err and "Traceback" not in out + err
    assert not (tmp_path / "o").exists()


def test_validate_with_a_missing_profile_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sched = tmp_path / "s"
    assert run_cli(["generate", "demo", "--seed", "1", "--duration", "2s", "-o", str(sched)], capsys)[0] == 0
    code, _, err = run_cli(["validate", str(sched), "--profile", str(tmp_path / "nope.json")], capsys)
    assert code == 3 and "profile not found" in err
