"""The namespace's shape: directories, directories per depth, subdirectories, files at depth."""

from __future__ import annotations

from typing import cast

import numpy as np
import polars as pl

from mimesisbench.model.objects import path_depth
from mimesisbench.profile import Distribution, NamespaceShape


def fit_namespace(directories: pl.Series, file_depths: pl.Series) -> NamespaceShape:
    """Shape of the tree formed by ``directories`` (root included) and the files' depths."""
    dirs = pl.concat([directories.cast(pl.String), pl.Series(["/"])]).unique().to_frame("path")
    dirs = dirs.with_columns(path_depth(pl.col("path")).alias("depth"))
    per_depth = dirs.group_by("depth").len().sort("depth")
    max_depth = int(cast("int | None", per_depth["depth"].max()) or 0)
    counts = np.zeros(max_depth + 1, dtype=np.int64)
    counts[per_depth["depth"].to_numpy()] = per_depth["len"].to_numpy()

    parents = dirs.filter(pl.col("path") != "/").select(
        pl.col("path").str.replace(r"/[^/]*$", "").replace("", "/").alias("parent")
    )
    children = parents.group_by("parent").len()
    per_dir = dirs.join(children, left_on="path", right_on="parent", how="left")["len"].fill_null(0)

    files_at_depth: dict[int, float] = {}
    depths = file_depths.filter(file_depths >= 1)
    if depths.len():
        tally = depths.value_counts().sort(depths.name)
        total = int(tally["count"].sum())
        files_at_depth = {int(d): int(c) / total for d, c in zip(tally[depths.name], tally["count"])}
        # absorb rounding so the shares sum to 1 exactly
        last = max(files_at_depth)
        files_at_depth[last] += 1.0 - sum(files_at_depth.values())
    return NamespaceShape(
        directories=int(dirs.height),
        dirs_per_depth=[int(c) for c in counts],
        subdirs_per_dir=Distribution.from_samples(per_dir.to_numpy()),
        files_at_depth=files_at_depth,
    )
