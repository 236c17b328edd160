"""ruff and mypy, configured in pyproject.toml, are part of the test suite: the README's test
command runs them, so a green suite means a lint-clean, type-checked tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=900,
                          check=False)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-cache", "src", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    done = _run("mypy")  # files and settings: [tool.mypy] in pyproject.toml
    assert done.returncode == 0, done.stdout + done.stderr
