"""The sampling noise of ``validate --trace``'s KS figures, from the trace alone.

A KS distance between a trace and a schedule is never 0, even when the schedule's objects are
drawn from the very law the trace's were: with n objects on each side it is about
``0.87 * sqrt(2 / n)`` for a continuous law. A figure near that *noise floor* says nothing about
the model; the bars (0.04, 0.05) lie below it for a command seen on fewer than about 500 objects.

The floor is estimated from the trace by splitting its objects at random into two halves and
taking the KS distance between the halves, ``REPEATS`` times: halves of n/2 objects each differ by
``sqrt(2)`` times what two samples of n objects do, so the mean over the splits divided by
``sqrt(2)`` is the KS expected between the trace and an independent sample of its size from its
own law (objects are split, not accesses or gaps: an object's gaps are not independent draws).

    floors = noise_floors(Path("trace.audit.log"), ["getfileinfo", "setTimes"], seed=1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from mimesisbench.model.objects import build_view, popularity
from mimesisbench.synth.by_command import classify
from mimesisbench.synth.fidelity import read_trace_events
from mimesisbench.synth.kstats import ks_two

REPEATS = 20


def split_ks(values: NDArray[np.float64], owner: NDArray[np.int64], rng: np.random.Generator) -> float | None:
    """Mean KS over ``REPEATS`` random halvings of the owners of ``values``, scaled to two samples
    of the whole size (``/ sqrt(2)``); None with fewer than 4 owners."""
    owners = np.unique(owner)
    if owners.size < 4:
        return None
    distances = []
    for _ in range(REPEATS):
        half = rng.permutation(owners)[: owners.size // 2]
        in_a = np.isin(owner, half)
        a, b = values[in_a], values[~in_a]
        if a.size and b.size:
            distances.append(ks_two(a, b))
    valid = [d for d in distances if d is not None]
    return float(np.mean(valid)) / math.sqrt(2.0) if valid else None


def noise_floors(log: Path, commands: Sequence[str], seed: int = 1) -> dict[str, float | None]:
    """Noise floors of ``ks_popularity`` and ``ks_interarrival`` (all objects) and, per command in
    ``commands``, of its ``ks_popularity`` and ``ks_interarrival`` (``cmd:<name>:popularity``,
    ``cmd:<name>:interarrival``)."""
    rng = np.random.default_rng(seed)
    events = read_trace_events([log])
    view = build_view(events, event_tables=True)
    counts = popularity(view.objects).astype(np.float64)
    out: dict[str, float | None] = {
        "ks_popularity": split_ks(counts, np.arange(counts.size, dtype=np.int64), rng),
        "ks_interarrival": split_ks(
            view.gaps["gap_ms"].to_numpy().astype(np.float64), view.gaps["obj"].to_numpy().astype(np.int64), rng
        ),
    }
    classified = classify(events, view).filter(pl.col("key").is_not_null())
    for command in commands:
        sub = classified.filter(pl.col("cmd") == command).sort("key", "time_ms", maintain_order=True)
        per_object = sub.group_by("key").len()
        out[f"cmd:{command}:popularity"] = split_ks(
            per_object["len"].to_numpy().astype(np.float64), per_object["key"].to_numpy().astype(np.int64), rng
        )
        gaps = sub.select("key", pl.col("time_ms").diff().over("key").alias("gap")).drop_nulls("gap")
        out[f"cmd:{command}:interarrival"] = split_ks(
            gaps["gap"].to_numpy().astype(np.float64), gaps["key"].to_numpy().astype(np.int64), rng
        )
    return out
