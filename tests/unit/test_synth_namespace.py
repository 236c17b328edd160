"""Namespace generation: the tree's shape, explicit trees, type parts and file depths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from test_synth_helpers import make_profile

from mimesisbench.profile.io import save_profile
from mimesisbench.profile.schema import NamespaceShape
from mimesisbench.schedule import read_schedule
from mimesisbench.synth.namespace import assign_types, largest_remainder, synthetic_tree, tree_from_paths
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_from_file
from mimesisbench.synth.schedule import generate_schedule


def test_largest_remainder_sums_and_is_proportional() -> None:
    got = largest_remainder(10, np.array([0.55, 0.3, 0.15]))
    assert got.sum() == 10 and got.tolist() == [6, 3, 1]


def test_synthetic_tree_keeps_dirs_per_depth() -> None:
    s = generate_schedule(make_profile(mix={}), GenerateOptions(), 2)
    assert s.pre_dirs == 31
    depths = s.namespace.depth[: s.pre_dirs]
    assert np.bincount(depths).tolist() == [1, 5, 10, 15]
    parents = s.namespace.parent[1 : s.pre_dirs]
    assert np.all(s.namespace.depth[parents] == depths[1:] - 1)


def test_subdirs_follow_the_distribution_roughly() -> None:
    from mimesisbench.profile.distribution import Distribution

    shape = NamespaceShape(
        directories=1 + 2000 + 6000,
        dirs_per_depth=[1, 2000, 6000],
        subdirs_per_dir=Distribution(values=[0, 1, 10], weights=[0.5, 0.0, 0.5]),
    )
    ns = synthetic_tree(shape, np.random.default_rng(3))
    children = np.bincount(ns.parent[ns.depth == 2], minlength=2001)[1:2001]
    # half the depth-1 directories are leaves, as the distribution says
    assert abs(float(np.mean(children == 0)) - 0.5) < 0.05


def test_explicit_tree_is_kept_exactly(tmp_path: Path) -> None:
    dirs = ["/", "/a/", "/a/b/", "/a/c/", "/d/", "/d/e/", "/d/e/f/"]
    (tmp_path / "tree.txt").write_text("\n".join(dirs) + "\n")
    profile = make_profile(mix={})
    data = json.loads(profile.model_dump_json())
    data["namespace"] = {
        "directories": 7,
        "dirs_per_depth": [1, 2, 3, 1],
        "files_at_depth": {"1": 0.2, "2": 0.3, "3": 0.3, "4": 0.2},
        "tree_file": "tree.txt",
    }
    (tmp_path / "p.json").write_text(json.dumps(data))
    out, _s, _m = generate_from_file(tmp_path / "p.json", tmp_path / "s", GenerateOptions(), 1)
    got = read_schedule(out).directories.filter(pl.col("pre_existing")).get_column("path").to_list()
    assert sorted(got) == sorted(["/", "/a", "/a/b", "/a/c", "/d", "/d/e", "/d/e/f"])


def test_tree_from_paths_adds_missing_parents() -> None:
    ns = tree_from_paths(["/x/y/z/"])
    assert ns.paths.to_list() == ["/", "/x", "/x/y", "/x/y/z"]
    assert ns.parent.tolist() == [-1, 0, 1, 2]


def test_types_own_directory_blocks_in_proportion_to_weight() -> None:
    shape = NamespaceShape(directories=101, dirs_per_depth=[1, 100])
    ns = assign_types(synthetic_tree(shape, np.random.default_rng(0)), {1: 0.7, 2: 0.3, 3: 0.0})
    owners = ns.dtype[ns.depth == 1]
    assert np.bincount(owners, minlength=4).tolist() == [0, 70, 30, 0]
    assert np.all(np.diff(owners) >= 0)  # contiguous blocks


def test_files_sit_at_their_depth_shares_in_their_types_part() -> None:
    profile = make_profile(n=6000, pre=(1000, 1000, 500), mix={})
    s = generate_schedule(profile, GenerateOptions(), 9)
    depth = s.namespace.depth[s.file_dir] + 1
    shares = np.bincount(depth, minlength=5)[1:] / depth.size
    assert np.allclose(shares, [0.1, 0.2, 0.3, 0.4], atol=3 / depth.size)
    deep = depth > 1  # files in the root are shared; deeper ones live in their type's part
    assert np.all(s.namespace.dtype[s.file_dir[deep]] == s.file_type[deep])
    # type 3 has weight 0 but pre-existing files: it still owns a part of the tree
    assert np.any(s.namespace.dtype == 3)


def test_tree_deeper_shares_fold_into_the_deepest_depth(tmp_path: Path) -> None:
    profile = make_profile(mix={})
    data = json.loads(profile.model_dump_json())
    data["namespace"]["files_at_depth"] = {"1": 0.5, "9": 0.5}
    p = tmp_path / "p.json"
    p.write_text(json.dumps(data))
    from mimesisbench.profile.io import load_profile

    s = generate_schedule(load_profile(p), GenerateOptions(), 1)
    depth = s.namespace.depth[s.file_dir] + 1
    assert set(np.unique(depth).tolist()) == {1, 4}
    save_profile(load_profile(p), tmp_path / "again.json")
