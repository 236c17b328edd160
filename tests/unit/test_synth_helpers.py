"""Small profiles built in code for the synth tests (no tests here; imported by test_synth_*)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType, NamespaceShape, OpMix, ProfileSource, WorkloadProfile


def exp_dist(mean_ms: float, seed: int = 5, points: int = 128) -> Distribution:
    """An exponential-looking quantile table (deterministic)."""
    return Distribution.from_samples(np.random.default_rng(seed).exponential(mean_ms, 20000), points=points)


def make_profile(
    n: int = 2000,
    pre: tuple[int, int, int] = (300, 200, 50),
    window_ms: int = 60_000,
    origin: str = "last_access",
    mix: dict[str, float] | None = None,
    f_mean: tuple[float, float, float] = (1500.0, 3000.0, 2000.0),
    span_mean: float = 10_000.0,
    **type_overrides: Any,
) -> WorkloadProfile:
    """Three types: weights 0.6 / 0.4 / 0 (type 3 only has pre-existing files)."""
    weights = (0.6, 0.4, 0.0)
    types = []
    for i, (w, p, fm) in enumerate(zip(weights, pre, f_mean), start=1):
        spec: dict[str, Any] = dict(
            id=i,
            weight=w,
            pre_existing=p,
            create_interarrival=exp_dist(window_ms / max(w * n, 1) * 0.6, seed=i) if w > 0 else None,
            activation_delay=exp_dist(2000.0 * i, seed=10 + i),
            active_span=exp_dist(span_mean, seed=20 + i),
            access_interarrival=exp_dist(fm, seed=30 + i),
            delete_delay=exp_dist(5000.0, seed=40 + i),
            delete_delay_origin=origin,
            delete_share=0.5,
            open_share=0.7,
            accessed_share=0.9,
        )
        spec.update(type_overrides)
        types.append(FileType(**spec))
    op_mix = OpMix(
        **(
            mix
            if mix is not None
            else dict(
                dir_list_per_access=0.05,
                mkdirs_per_create=0.05,
                file_renames_per_create=0.05,
                dir_renames_per_create=0.03,
                getfileinfo_per_access=0.1,
            )
        )
    )
    return WorkloadProfile(
        name="synth-test",
        source=ProfileSource(kind="builtin"),
        window_ms=window_ms,
        total_creates=n,
        types=types,
        op_mix=op_mix,
        namespace=NamespaceShape(
            directories=31,
            dirs_per_depth=[1, 5, 10, 15],
            subdirs_per_dir=Distribution(values=[0, 2, 6], weights=[0.3, 0.4, 0.3]),
            files_at_depth={1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4},
        ),
    )
