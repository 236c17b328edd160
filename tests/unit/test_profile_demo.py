"""The packaged demo profile: valid, rebuilt identically by its script, with the paper's figures."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from mimesisbench.cli.cmd_profile import demo_profile_path
from mimesisbench.profile.io import load_profile, profile_to_json
from mimesisbench.profile.summary import summarize

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_demo_profile.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_demo_profile", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_is_rebuilt_identically() -> None:
    rebuilt = _script().build_demo_profile()
    assert profile_to_json(rebuilt) == demo_profile_path().read_text(encoding="utf-8")


def test_demo_matches_the_papers_figures() -> None:
    profile = load_profile(demo_profile_path())
    assert profile.source.kind == "builtin"
    assert any("paper" in note for note in profile.source.notes)
    assert profile.namespace.tree_file is None
    heavy, mostly = summarize(profile).types
    assert heavy.mean_access_interarrival_ms == pytest.approx(179.61, abs=0.005)
    assert heavy.mean_create_interarrival_ms == pytest.approx(40.64, abs=0.005)
    assert heavy.mean_active_span_ms / 60_000 == pytest.approx(3.33, abs=0.005)
    assert heavy.read_share == pytest.approx(0.69, abs=0.005)
    assert mostly.mean_access_interarrival_ms == pytest.approx(4.92, abs=0.005)
    assert mostly.mean_create_interarrival_ms == pytest.approx(87_355, abs=0.5)
    assert mostly.mean_active_span_ms / 60_000 == pytest.approx(8.33, abs=0.005)
    assert mostly.read_share is not None and mostly.read_share > 0.999


def test_demo_is_small() -> None:
    profile = load_profile(demo_profile_path())
    counts = _script().estimate_operations(profile, seed=1)
    assert 10_000 < sum(counts.values()) < 200_000
    assert profile.total_creates + profile.pre_existing_total < 10_000
