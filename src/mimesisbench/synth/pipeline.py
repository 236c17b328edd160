"""Profile file -> schedule directory, the whole ``generate`` verb as a library call."""

from __future__ import annotations

import secrets
from pathlib import Path

from mimesisbench.errors import EnvironmentProblem
from mimesisbench.profile.io import load_profile, profile_hash, tree_file_path
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.synth.namespace import Namespace, read_tree_file
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.schedule import GeneratedSchedule, generate_schedule
from mimesisbench.synth.store import manifest_for, write_schedule


def draw_seed() -> int:
    """A fresh random seed (63 bits), recorded in the manifest when the user gave none."""
    return secrets.randbits(63)


def load_tree(profile_path: str | Path, profile: WorkloadProfile) -> Namespace | None:
    """The profile's explicit directory tree, if it names one."""
    found = tree_file_path(profile_path, profile)
    return None if found is None else read_tree_file(found)


def generate_to(
    profile: WorkloadProfile,
    out: str | Path,
    options: GenerateOptions,
    seed: int | None = None,
    tree: Namespace | None = None,
) -> tuple[Path, GeneratedSchedule, dict[str, object]]:
    """Generate and write a schedule directory; returns (path, schedule, manifest)."""
    seed_source = "given"
    if seed is None:
        seed, seed_source = draw_seed(), "random"
    try:
        schedule = generate_schedule(profile, options, seed, tree)
    except MemoryError:
        files = profile.total_creates + profile.pre_existing_total
        raise EnvironmentProblem(
            f"not enough memory to generate this schedule (the profile has {files:,} files before options); "
            "generate fewer with --scale-files below 1, --types or a shorter --duration"
        ) from None
    manifest = manifest_for(schedule, profile_hash=profile_hash(profile), seed_source=seed_source)
    return write_schedule(schedule, out, manifest), schedule, manifest


def generate_from_file(
    profile_path: str | Path, out: str | Path, options: GenerateOptions, seed: int | None = None
) -> tuple[Path, GeneratedSchedule, dict[str, object]]:
    profile = load_profile(profile_path)
    tree = None if options.flat else load_tree(profile_path, profile)
    return generate_to(profile, out, options, seed, tree)
