"""Generation options and their application to a profile (scaling, isolation, time scale)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mimesisbench.errors import ConfigError
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.synth.scaling import isolate, scale_files, scale_span, scale_time, scale_type


@dataclass(frozen=True)
class GenerateOptions:
    """Everything besides the profile and the seed that shapes a schedule.

    ``time_scale`` 0 means "as fast as possible": the schedule is generated at scale 1 and every
    time is then set to 0, keeping the order. ``duration_ms`` None means the (scaled) profile's
    window. ``scale_types`` is a tuple of ``(type_id, factor)`` applied in order.
    ``balance_gaps`` False draws every file's interarrivals from F_j (or the closing rule's
    calibrated table) even where the pool then leaves F_j (``synth.balance``).
    """

    scale_files: float = 1.0
    scale_types: tuple[tuple[int, float], ...] = ()
    time_scale: float = 1.0
    span_scale: float = 1.0
    types: tuple[int, ...] | None = None
    duration_ms: int | None = None
    flat: bool = False
    balance_gaps: bool = True

    def __post_init__(self) -> None:
        if not self.scale_files > 0:
            raise ConfigError(f"--scale-files: must be > 0, got {self.scale_files!r}")
        for type_id, factor in self.scale_types:
            if not factor > 0:
                raise ConfigError(f"--scale-type: factor for type {type_id} must be > 0, got {factor!r}")
        if self.time_scale < 0:
            raise ConfigError(f"--time-scale: must be >= 0, got {self.time_scale!r}")
        if not self.span_scale > 0:
            raise ConfigError(f"--span-scale: must be > 0, got {self.span_scale!r}")
        if self.duration_ms is not None and self.duration_ms <= 0:
            raise ConfigError(f"--duration: must be > 0, got {self.duration_ms!r} ms")
        if self.types is not None and not self.types:
            raise ConfigError("--types: no type chosen")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scale_types"] = [[int(j), float(x)] for j, x in self.scale_types]
        data["types"] = None if self.types is None else [int(t) for t in self.types]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GenerateOptions:
        return cls(
            scale_files=float(data.get("scale_files", 1.0)),
            scale_types=tuple((int(j), float(x)) for j, x in data.get("scale_types", [])),
            time_scale=float(data.get("time_scale", 1.0)),
            span_scale=float(data.get("span_scale", 1.0)),
            types=None if data.get("types") is None else tuple(int(t) for t in data["types"]),
            duration_ms=None if data.get("duration_ms") is None else int(data["duration_ms"]),
            flat=bool(data.get("flat", False)),
            balance_gaps=bool(data.get("balance_gaps", True)),
        )


def effective_profile(profile: WorkloadProfile, options: GenerateOptions) -> WorkloadProfile:
    """The profile the generator samples: isolation, file and type scaling, span and time scale.

    A time scale of 0 is not applied here (see ``GenerateOptions``); the result is the profile
    at time scale 1 in that case.
    """
    p = profile
    if options.types is not None:
        p = isolate(p, options.types)
    if options.scale_files != 1.0:
        p = scale_files(p, options.scale_files)
    for type_id, factor in options.scale_types:
        p = scale_type(p, type_id, factor)
    if options.span_scale != 1.0:
        p = scale_span(p, options.span_scale)
    if options.time_scale not in (0.0, 1.0):
        p = scale_time(p, options.time_scale)
    return p


def window_ms(profile: WorkloadProfile, options: GenerateOptions) -> int:
    """The length of the generated window (before collapsing times for time scale 0)."""
    return int(options.duration_ms) if options.duration_ms is not None else int(profile.window_ms)
