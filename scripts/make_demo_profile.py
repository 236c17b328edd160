"""Build the packaged demo profile, ``src/mimesisbench/data/demo_profile.json`` (deterministic).

Two file types whose mean per-file access interarrival, mean create interarrival, mean active
span and read/write split are the ones the paper (Abad et al., ICAC'14, Table 4) publishes for
two of its Yahoo file types. The paper gives only those means; the shapes (log-normals and one
mixture) are chosen here, fitted as quantile tables from seeded samples and rescaled so each
table's mean is exactly the published figure. The sizes (window, n, pre-existing files) are
chosen so that a demo run issues a few tens of thousands of operations.

Usage: .venv/bin/python scripts/make_demo_profile.py [--check]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from mimesisbench import __version__
from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.io import profile_to_json
from mimesisbench.profile.schema import FileType, NamespaceShape, ProfileSource, WorkloadProfile
from mimesisbench.profile.summary import expected_accesses_per_file

OUT = Path(__file__).resolve().parent.parent / "src" / "mimesisbench" / "data" / "demo_profile.json"
SEED = 20140610
SAMPLES = 200_000
POINTS = 128
WINDOW_MS = 600_000
CREATED = {1: 6_000, 2: 4}  # files created in the window, per type
PRE_EXISTING = {1: 300, 2: 2}
READ_SHARE_WRITE_HEAVY = 0.69
READ_MOSTLY_SPAN_MS = 500_000.0  # 8.33 min
HOT_SHARE = 0.02  # read-mostly files that stay hot for hours


def _lognormal(rng: np.random.Generator, median: float, sigma: float, size: int = SAMPLES) -> np.ndarray:
    return rng.lognormal(math.log(median), sigma, size)


def _table(samples: np.ndarray, mean: float | None = None) -> Distribution:
    """A quantile table of the samples, rescaled so that its mean is exactly ``mean`` if given."""
    dist = Distribution.from_samples(samples, points=POINTS)
    return dist if mean is None else dist.scaled(mean / dist.mean())


def _solve_accessed_share(ftype: FileType, created: int, read_share: float) -> float:
    """accessed_share that gives ``read_share`` under the summary's model (profile/summary.py)."""
    files = created + ftype.pre_existing
    writes = created + ftype.delete_share * files
    reads_needed = writes * read_share / (1.0 - read_share)
    return reads_needed / (files * expected_accesses_per_file(ftype))


def build_demo_profile(seed: int = SEED) -> WorkloadProfile:
    rng = np.random.default_rng(seed)
    n = sum(CREATED.values())

    # Type 1, write-heavy: many short-lived files, most never read, a few read hard.
    write_heavy = FileType(
        id=1,
        label="write-heavy (paper Table 4)",
        weight=CREATED[1] / n,
        pre_existing=PRE_EXISTING[1],
        create_interarrival=_table(rng.weibull(0.7, SAMPLES), mean=40.64),
        activation_delay=_table(_lognormal(rng, 5_000, 1.0)),
        active_span=_table(_lognormal(rng, 1.0, 0.8), mean=200_000.0),
        access_interarrival=_table(_lognormal(rng, 1.0, 1.2), mean=179.61),
        delete_delay=_table(_lognormal(rng, 30_000, 1.0)),
        delete_delay_origin="last_access",
        delete_share=0.95,
        open_share=0.8,
    )
    write_heavy = write_heavy.model_copy(
        update={"accessed_share": _solve_accessed_share(write_heavy, CREATED[1], READ_SHARE_WRITE_HEAVY)}
    )
    # Type 2, read-mostly: rare creations, reads in bursts; most bursts are seconds long, 2% stay hot for hours.
    short = _lognormal(rng, 10_000, 0.8, int(SAMPLES * (1 - HOT_SHARE)))
    hot = _lognormal(rng, 1.0, 0.5, SAMPLES - short.size)
    hot *= (READ_MOSTLY_SPAN_MS * SAMPLES - short.sum()) / hot.sum()  # sample mean exactly 500 s
    span = _table(np.concatenate([short, hot]), mean=READ_MOSTLY_SPAN_MS)
    read_mostly = FileType(
        id=2,
        label="read-mostly (paper Table 4)",
        weight=CREATED[2] / n,
        pre_existing=PRE_EXISTING[2],
        create_interarrival=_table(_lognormal(rng, 1.0, 0.6), mean=87_355.0),
        activation_delay=_table(_lognormal(rng, 120_000, 0.7)),
        active_span=span,
        access_interarrival=_table(_lognormal(rng, 1.0, 1.0), mean=4.92),
        delete_share=0.0,
        open_share=0.9,
    )
    namespace = NamespaceShape(
        directories=31,
        dirs_per_depth=[1, 3, 9, 18],
        subdirs_per_dir=Distribution.from_samples([3] * 4 + [2] * 9 + [0] * 18),
        files_at_depth={2: 0.1, 3: 0.3, 4: 0.6},
    )
    source = ProfileSource(
        kind="builtin",
        tool_version=__version__,
        seed=seed,
        notes=[
            "built by scripts/make_demo_profile.py from the paper's published per-type figures "
            "(Abad et al., ICAC'14, Table 4): mean access interarrival, mean create interarrival, "
            "mean active span and read/write split of a write-heavy and a read-mostly Yahoo type",
            "only the means are published: the shapes (log-normal, Weibull, a two-part mixture for the "
            "read-mostly active span) are this script's choice, rescaled to the published means",
            "write-heavy accessed_share solved so that reads (1 + E[H]/E[F] per accessed file) are "
            "69% of reads + creates + deletes",
            "sizes (window, n, pre-existing files, delete delays, activation delays, namespace) are "
            "small on purpose: a demo run issues a few tens of thousands of operations",
        ],
    )
    return WorkloadProfile(
        name="demo",
        source=source,
        window_ms=WINDOW_MS,
        total_creates=n,
        types=[write_heavy, read_mostly],
        namespace=namespace,
    )


def estimate_operations(profile: WorkloadProfile, seed: int = 1) -> dict[str, int]:
    """Rough Monte-Carlo count of the operations in the window (creation, accesses, deletes)."""
    rng = np.random.default_rng(seed)
    out = {"creates": 0, "accesses": 0, "deletes": 0}
    end = profile.window_ms
    for t in profile.types:
        created = round(t.weight * profile.total_creates)
        births = np.cumsum(t.create_interarrival.sample(rng, created)) if created else np.empty(0)
        births = births[births < end]
        out["creates"] += births.size
        origin = np.concatenate([births, np.zeros(t.pre_existing)])
        accessed = rng.random(origin.size) < t.accessed_share
        first = origin + t.activation_delay.sample(rng, origin.size)
        last = first + t.active_span.sample(rng, origin.size)
        mean_f = t.access_interarrival.mean()
        in_window = accessed & (first < end)
        count = 1 + np.floor((np.minimum(last, end) - first) / mean_f)
        out["accesses"] += int(count[in_window].sum())
        if t.delete_share > 0:
            base = np.where(accessed, last, origin) if t.delete_delay_origin == "last_access" else origin
            gone = (rng.random(origin.size) < t.delete_share) & (base + t.delete_delay.sample(rng, origin.size) < end)
            out["deletes"] += int(gone.sum())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the packaged file differs from a rebuild")
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args(argv)
    profile = build_demo_profile()
    text = profile_to_json(profile)
    if args.check:
        same = args.output.is_file() and args.output.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{args.output} differs from a rebuild")
        return 0 if same else 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    for seed in (1, 2, 3):
        print(f"estimated operations in the window (seed {seed}): {estimate_operations(profile, seed)}")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
