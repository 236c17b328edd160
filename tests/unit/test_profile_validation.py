"""Invalid profiles are rejected with a message naming the key."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mimesisbench.cli.cmd_profile import demo_profile_path
from mimesisbench.errors import ProfileError
from mimesisbench.profile.io import load_profile

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def demo_doc() -> Doc:
    return json.loads(demo_profile_path().read_text())


def _set(path: list[Any], value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


CASES = [
    (_set(["bogus"], 1), "bogus: Extra inputs are not permitted"),
    (_set(["types", 1, "colour"], "red"), "types[1].colour: Extra inputs"),
    (_set(["types", 1, "weight"], float("nan")), "types[1].weight: Input should be a finite number"),
    (_set(["types", 0, "access_interarrival", "values", 2], float("nan")), "types[0].access_interarrival.values"),
    (_set(["types", 0, "create_interarrival", "values", 0], -5.0), "types[0].create_interarrival.values"),
    (_set(["types", 1, "weight"], 0.5), "types[*].weight: weights sum to"),
    (_set(["types", 0, "active_span", "weights", 0], 0.5), "types[0].active_span.weights: weights sum to"),
    (_set(["types", 0, "pre_existing"], -1), "types[0].pre_existing"),
    (_set(["window_ms"], -10), "window_ms"),
    (_set(["namespace", "files_at_depth", "2"], 0.7), "namespace.files_at_depth"),
    (_set(["types", 0, "create_interarrival"], None), "types[0].create_interarrival"),
    (_set(["types", 1, "id"], 1), "types[*].id"),
    (_set(["types", 0, "span_population"], "some"), "types[0].span_population"),
]


@pytest.mark.parametrize(("mutate", "fragment"), CASES)
def test_error_names_the_key(demo_doc: Doc, tmp_path: Path, mutate: Callable[[Doc], None], fragment: str) -> None:
    doc = copy.deepcopy(demo_doc)
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))  # NaN is written as the NaN token
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    message = str(info.value)
    assert fragment in message
    assert str(path) in message


def test_not_json_and_missing(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_profile(tmp_path / "x.json")
    with pytest.raises(ProfileError, match="profile not found"):
        load_profile(tmp_path / "missing.json")
