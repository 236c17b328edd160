"""Scaling and isolation of a workload profile (the paper's sections 3.1-3.2), as pure functions.

Each function returns a new, validated ``WorkloadProfile`` and never modifies its input:

* ``scale_files(p, x)``: ``n`` and every type's pre-existing files times ``x``;
* ``scale_type(p, j, x)``: the files of type ``j`` times ``x``, per the paper's equations (1)-(3):
  ``n' = n + (x - 1) w_j n``, ``w_j' n' = x w_j n`` and ``w_k' n' = w_k n`` for ``k != j``
  (the weights use the unrounded ``n'`` so that they sum to 1 exactly; ``total_creates`` is
  ``round(n')``); pre-existing files of type ``j`` are scaled by ``x`` too;
* ``scale_time(p, c)``: every interarrival and delay (C, G, H, F, D) and the window times ``c``
  (``c > 0``: the same workload ``1/c`` times faster). ``c = 0`` (as fast as possible, order
  kept) cannot be expressed as a profile: the generator handles it (``GenerateOptions``);
* ``scale_span(p, s)``: the active spans H times ``s`` (a type's ``access_gap_sampling`` table,
  calibrated for the unscaled spans, is dropped: F_j is sampled again);
* ``isolate(p, ids)``: only the chosen types; weights renormalised, ``n`` times their weight.

Directory types (format 2) scale alike: their weights are shares of ``created_directories``,
which ``scale_files`` scales with the files (and the pathless commands' counts with them);
``scale_type`` of a directory type scales the created directories; ``scale_time`` scales the
chains' per-transition gap laws and the pathless commands' interarrivals too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from mimesisbench.errors import ConfigError, ProfileError
from mimesisbench.profile.io import profile_from_dict
from mimesisbench.profile.schema import WorkloadProfile

_TIME_KEYS = ("create_interarrival", "activation_delay", "active_span", "access_interarrival", "delete_delay")


def _positive(value: float, option: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{option}: the scale must be a finite number > 0, got {value!r}")
    return float(value)


def _rebuild(profile: WorkloadProfile, data: dict[str, Any], what: str, option: str) -> WorkloadProfile:
    """The scaled document validated; a scaled profile outside the format's limits is the
    option's fault (``ConfigError`` naming it, exit 2), not the profile's."""
    try:
        return profile_from_dict(data, f"({what} of {profile.name or 'profile'})")
    except ProfileError as exc:
        raise ConfigError(f"{option}: the scaled profile is out of bounds: {exc}") from None


def _scaled(dist: Any, factor: float, option: str) -> dict[str, Any]:
    try:
        return dict(dist.scaled(factor).model_dump())
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None


def _known_ids(profile: WorkloadProfile, ids: Iterable[int], option: str) -> list[int]:
    known = {t.id for t in profile.types}
    wanted = [int(i) for i in ids]
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise ConfigError(
            f"{option}: unknown type id(s) {', '.join(map(str, unknown))} (the profile has {sorted(known)})"
        )
    return wanted


def scale_files(profile: WorkloadProfile, x: float) -> WorkloadProfile:
    """``n``, the created directories, every type's pre-existing objects and every pathless
    command's count multiplied by ``x`` (> 0)."""
    x = _positive(x, "--scale-files")
    data = profile.model_dump()
    data["total_creates"] = int(round(profile.total_creates * x))
    if profile.created_directories:
        data["created_directories"] = int(round(profile.created_directories * x))
    for t in data["types"]:
        t["pre_existing"] = int(round(t["pre_existing"] * x))
    for pc in data.get("pathless", []):
        pc["count"] = int(round(pc["count"] * x))
    return _rebuild(profile, data, f"scale_files x{x:g}", "--scale-files")


def scale_type(profile: WorkloadProfile, type_id: int, x: float) -> WorkloadProfile:
    """The number of files of type ``type_id`` multiplied by ``x`` (> 0), equations (1)-(3)."""
    x = _positive(x, "--scale-type")
    _known_ids(profile, [type_id], "--scale-type")
    target = profile.type_by_id(type_id)
    # a directory type's weight is a share of the created directories: they scale instead of n
    count_key = "created_directories" if target.kind == "directory" else "total_creates"
    n = float(getattr(profile, count_key))
    n_new = n + (x - 1.0) * target.weight * n
    data = profile.model_dump()
    if n_new > 0:
        for t in data["types"]:
            if t.get("kind", "file") != target.kind:
                continue
            factor = x if t["id"] == type_id else 1.0
            t["weight"] = factor * t["weight"] * n / n_new
    for t in data["types"]:
        if t["id"] == type_id:
            t["pre_existing"] = int(round(t["pre_existing"] * x))
    data[count_key] = int(round(n_new))
    return _rebuild(profile, data, f"scale_type {type_id} x{x:g}", "--scale-type")


def scale_time(profile: WorkloadProfile, c: float) -> WorkloadProfile:
    """Every interarrival, delay and span, and the window, multiplied by ``c`` (> 0)."""
    if not (math.isfinite(c) and c >= 0):
        raise ConfigError(f"--time-scale: must be a finite number >= 0, got {c!r}")
    if c == 0:
        raise ConfigError("--time-scale: 0 cannot be expressed as a profile; the generator handles it")
    data = profile.model_dump()
    for t in data["types"]:
        ft = profile.type_by_id(t["id"])
        for key in _TIME_KEYS:
            dist = getattr(ft, key)
            if dist is not None:
                t[key] = _scaled(dist, c, "--time-scale")
        if ft.access_gap_sampling is not None:  # F and H scale alike: the calibration holds
            t["access_gap_sampling"]["distribution"] = _scaled(ft.access_gap_sampling.distribution, c, "--time-scale")
        if ft.commands is not None:  # the chain's per-transition gap laws are interarrivals too
            t["commands"]["gaps"] = {k: _scaled(d, c, "--time-scale") for k, d in ft.commands.gaps.items()}
            if ft.commands.other_gaps is not None:
                t["commands"]["other_gaps"] = _scaled(ft.commands.other_gaps, c, "--time-scale")
    for pc, src in zip(data.get("pathless", []), profile.pathless):
        if src.interarrival is not None:
            pc["interarrival"] = _scaled(src.interarrival, c, "--time-scale")
    data["window_ms"] = max(1, int(round(profile.window_ms * c)))
    return _rebuild(profile, data, f"scale_time x{c:g}", "--time-scale")


def scale_span(profile: WorkloadProfile, s: float) -> WorkloadProfile:
    """Every type's active span H multiplied by ``s`` (> 0)."""
    s = _positive(s, "--span-scale")
    data = profile.model_dump()
    for t in data["types"]:
        dist = profile.type_by_id(t["id"]).active_span
        if dist is not None:
            t["active_span"] = _scaled(dist, s, "--span-scale")
        # a gap sampling table is calibrated for the unscaled spans: F_j is sampled again
        t["access_gap_sampling"] = None
    return _rebuild(profile, data, f"scale_span x{s:g}", "--span-scale")


def isolate(profile: WorkloadProfile, type_ids: Iterable[int]) -> WorkloadProfile:
    """Only the types ``type_ids``; their weights renormalised, ``n`` times their total weight."""
    wanted = set(_known_ids(profile, type_ids, "--types"))
    if not wanted:
        raise ConfigError("--types: no type chosen")
    data = profile.model_dump()
    data["types"] = [t for t in data["types"] if t["id"] in wanted]
    # file types' weights are shares of n, directory types' of the created directories
    for kind, count_key in (("file", "total_creates"), ("directory", "created_directories")):
        kept = [t for t in data["types"] if t.get("kind", "file") == kind]
        total = sum(t["weight"] for t in kept)
        for t in kept:
            t["weight"] = t["weight"] / total if total > 0 else 0.0
        data[count_key] = int(round(getattr(profile, count_key) * total)) if total > 0 else 0
    return _rebuild(profile, data, f"isolate {sorted(wanted)}", "--types")
