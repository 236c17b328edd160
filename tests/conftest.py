"""Shared test configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
YAHOO_ZIP = SHARED / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"


@pytest.fixture(scope="session")
def yahoo_zip() -> Path:
    """The real 2014 Yahoo profile (read from ../shared, never copied into the repository)."""
    if not YAHOO_ZIP.is_file():
        pytest.fail(f"the Yahoo profile is expected at {YAHOO_ZIP} (../shared beside the checkout)")
    return YAHOO_ZIP
