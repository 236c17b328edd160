"""Invalid profiles are rejected with a message naming the key."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mimesisbench.errors import InputError, ProfileError
from mimesisbench.profile.io import demo_profile_path, load_profile

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
    (_set(["types", 1, "weight"], 0.5), "types[*].weight: the file types' weights sum to"),
    (_set(["types", 0, "active_span", "weights", 0], 0.5), "types[0].active_span.weights: weights sum to"),
    (_set(["types", 0, "pre_existing"], -1), "types[0].pre_existing"),
    (_set(["window_ms"], -10), "window_ms"),
    (_set(["namespace", "files_at_depth", "2"], 0.7), "namespace.files_at_depth"),
    (_set(["types", 0, "create_interarrival"], None), "types[0].create_interarrival"),
    (_set(["types", 1, "id"], 1), "types[*].id"),
    (_set(["types", 0, "span_population"], "some"), "types[0].span_population"),
    # limits: hostile values are refused naming the key, never overflow a table or exhaust memory
    (_set(["types", 1, "id"], 70000), "types[1].id: Input should be less than or equal to 32767"),
    (_set(["types", 0, "pre_existing"], 10**12), "types[0].pre_existing: Input should be less than or equal to"),
    (_set(["total_creates"], 10**12), "total_creates: Input should be less than or equal to"),
    (_set(["window_ms"], 10**18), "window_ms: Input should be less than or equal to"),
    (_set(["op_mix", "mkdirs_per_create"], 1e9), "op_mix.mkdirs_per_create: Input should be less than or equal"),
    (_set(["op_mix", "getfileinfo_per_access"], 1e12), "op_mix.getfileinfo_per_access"),
    (_set(["op_mix", "dir_list_per_access"], 1e10), "op_mix.dir_list_per_access"),
    (_set(["types", 0, "observed"], {"popularity": {"values": [1.0, 1e15], "weights": [0.5, 0.5]}}),
     "types[0].observed.popularity.values"),
    (_set(["types", 0, "access_interarrival"], {"values": [1.0, 1e300], "weights": [0.5, 0.5]}),
     "types[0].access_interarrival.values"),
    (_set(["namespace", "directories"], 10**15), "namespace.directories"),
]

#: a format-2 type's command chain with a law of last commands and a short walk
CHAIN = {"commands": ["getfileinfo", "open"], "share": [0.5, 0.5], "first": [1.0, 0.0],
         "next": [[0.1, 0.9], [0.8, 0.2]], "last": [0.1, 0.9],
         "short_walk": {"first": [1.0, 0.0], "next": [[0.0, 1.0], [1.0, 0.0]], "last": [0.0, 1.0]}}


def _chain(**over: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        chain = json.loads(json.dumps(CHAIN))
        for key, value in over.items():
            if "." in key:
                outer, inner = key.split(".")
                chain[outer][inner] = value
            else:
                chain[key] = value
        doc["types"][0]["commands"] = chain

    return mutate


CASES += [
    (_chain(last=[0.5]), "types[0].commands.last: has 1 entries for 2 commands"),
    (_chain(last=[0.5, 0.6]), "types[0].commands.last: sums to 1.1"),
    (_chain(**{"short_walk.next": [[0.5, 0.4], [1.0, 0.0]]}), "types[0].commands.short_walk.next[0]: sums to 0.9"),
    (_chain(**{"short_walk.last": [1.0]}), "types[0].commands.short_walk.last: has 1 entries for 2 commands"),
    # kept streams: one of the chain's 2 commands ("A", "B") per access
    (_chain(streams=["ABAB", "ABC"]), "types[0].commands.streams[1]: not a stream of the chain's commands"),
    (_chain(streams=["AB", ""]), "types[0].commands.streams[1]: not a stream"),
    (_chain(streams=["AB" * 40_000, "AB" * 40_000]), "types[0].commands.streams: hold 160000 accesses, more than 131072"),
    # kept streams' gap codes: two digits per gap, one string per kept stream
    (_chain(streams=["ABA", "AB"], stream_gaps="AAAA"), "types[0].commands.stream_gaps: has 4 characters, not 6"),
    (_chain(streams=["ABA"], stream_gaps="AA*A"), "types[0].commands.stream_gaps: holds '*'"),
    # kept streams' start codes: two digits per kept stream
    (_chain(streams=["ABA", "AB"], stream_starts="AAA"), "types[0].commands.stream_starts: has 3 characters, not 4"),
    (_chain(streams=["ABA"], stream_starts="A*"), "types[0].commands.stream_starts: holds '*'"),
    (_chain(streams=["ABA", "AB"], stream_ends="..A."), "types[0].commands.stream_ends: holds '.'"),
    (_chain(streams=["ABA"], stream_ends=".."), "types[0].commands.end_gap: missing"),
]


def _covisits(
    groups: list[dict[str, Any]], first_delay: float = 0.0, nested: list[dict[str, Any]] | None = None, nested_offset: bool = True
) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        doc["covisits"] = {"window_ms": 100, "groups": groups,
                           "offset": {"values": [first_delay, 10.0], "weights": [0.5, 0.5]}}
        if nested is not None:
            doc["covisits"]["nested"] = nested
            if nested_offset:
                doc["covisits"]["nested_offset"] = {"values": [1.0, 10.0], "weights": [0.5, 0.5]}

    return mutate


CASES += [
    (_covisits([{"visits": 5, "size": 2, "share": 0.6}, {"visits": 5, "size": 3, "share": 0.6}]),
     "covisits.groups[1]: the shares of the objects of 5 visits sum to more than 1"),
    (_covisits([{"visits": 5, "size": 2, "share": 0.2}, {"visits": 5, "size": 2, "share": 0.2}]),
     "covisits.groups[1]: a second row for 5 visits in groups of 2"),
    (_covisits([{"visits": 1, "size": 2, "share": 0.5}]), "covisits.groups[0].visits"),
    (_covisits([{"visits": 4, "size": 2, "share": 0.5}], first_delay=-3.0), "covisits.offset: a delay"),
    (_covisits([], nested=[{"visits": 4, "host_visits": 4, "share": 0.5}]), "covisits.nested[0]: host_visits must exceed visits"),
    (_covisits([], nested=[{"visits": 4, "host_visits": 9, "share": 0.5}], nested_offset=False), "covisits.nested_offset: nested rows need"),
    (_covisits([]), "covisits.groups: no group and no nested row"),
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
    with pytest.raises(InputError, match="profile not found") as info:
        load_profile(tmp_path / "missing.json")
    assert info.value.exit_code == 3 and not isinstance(info.value, ProfileError)


def test_deeply_nested_json_is_an_invalid_profile(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ProfileError, match="nested too deeply"):
        load_profile(path)


def test_the_total_number_of_files_is_bounded(demo_doc: Doc, tmp_path: Path) -> None:
    doc = copy.deepcopy(demo_doc)
    doc["total_creates"] = 6 * 10**8
    doc["types"][0]["pre_existing"] = 6 * 10**8
    path = tmp_path / "many.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match="total_creates: 1,200,000,0.. files created and pre-existing in all"):
        load_profile(path)
