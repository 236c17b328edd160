"""The packaged demo profile: valid, rebuilt identically by its script, with the paper's figures."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from mimesisbench.profile.io import demo_profile_path, load_profile, profile_to_json
from mimesisbench.profile.summary import summarize

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_demo_profile.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_demo_profile", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: how far a rebuilt number may stray from the shipped one: numpy/scipy releases and CPUs differ in
#: the last bits of their transcendental functions (a few ulps), never by this much
REL_TOL = 1e-9


def _differences(rebuilt: object, shipped: object, where: str = "$") -> list[str]:
    """Every place where two JSON trees differ: structure, strings and integers exactly, floats
    to ``REL_TOL``."""
    if isinstance(shipped, float) or isinstance(rebuilt, float):
        both_numbers = isinstance(rebuilt, (int, float)) and isinstance(shipped, (int, float))
        if both_numbers and math.isclose(float(rebuilt), float(shipped), rel_tol=REL_TOL, abs_tol=1e-300):  # type: ignore[arg-type]
            return []
        return [f"{where}: {rebuilt!r} != {shipped!r}"]
    if isinstance(shipped, dict) and isinstance(rebuilt, dict):
        if rebuilt.keys() != shipped.keys():
            return [f"{where}: keys {sorted(rebuilt)} != {sorted(shipped)}"]
        return [d for key in shipped for d in _differences(rebuilt[key], shipped[key], f"{where}.{key}")]
    if isinstance(shipped, list) and isinstance(rebuilt, list):
        if len(rebuilt) != len(shipped):
            return [f"{where}: {len(rebuilt)} items != {len(shipped)}"]
        return [d for i, (a, b) in enumerate(zip(rebuilt, shipped)) for d in _differences(a, b, f"{where}[{i}]")]
    return [] if type(rebuilt) is type(shipped) and rebuilt == shipped else [f"{where}: {rebuilt!r} != {shipped!r}"]


def test_demo_is_rebuilt_by_its_script() -> None:
    """The shipped demo profile is what its script builds, to floating-point noise."""
    rebuilt = json.loads(profile_to_json(_script().build_demo_profile()))
    shipped = json.loads(demo_profile_path().read_text(encoding="utf-8"))
    differences = _differences(rebuilt, shipped)
    assert not differences, "\n".join(differences[:20])


def test_the_comparison_sees_a_real_change() -> None:
    shipped = json.loads(demo_profile_path().read_text(encoding="utf-8"))
    changed = json.loads(demo_profile_path().read_text(encoding="utf-8"))
    changed["types"][0]["weight"] *= 1 + 1e-6
    changed["types"][1]["access_interarrival"]["values"].pop()
    assert _differences(shipped, shipped) == []
    assert len(_differences(changed, shipped)) == 2


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
