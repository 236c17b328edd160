"""Generation options and their application to a profile (scaling, isolation, time scale)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from mimesisbench.errors import ConfigError, ScheduleError
from mimesisbench.profile.schema import MAX_TIME_MS, WorkloadProfile
from mimesisbench.synth.scaling import isolate, scale_files, scale_span, scale_time, scale_type


def parse_types(text: str, option: str = "--types") -> tuple[int, ...]:
    """Type ids from ``"3,17"``; a ``ConfigError`` naming ``option`` for a bad or empty list."""
    try:
        ids = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"{option}: cannot read {text!r}; use type ids separated by commas, e.g. 3,17") from None
    if not ids:
        raise ConfigError(f"{option}: no type chosen")
    return ids


@dataclass(frozen=True)
class GenerateOptions:
    """Everything besides the profile and the seed that shapes a schedule.

    ``time_scale`` 0 means "as fast as possible": the schedule is generated at scale 1 and every
    time is then set to 0, keeping the order. ``duration_ms`` None means the (scaled) profile's
    window. ``scale_types`` is a tuple of ``(type_id, factor)`` applied in order.
    ``balance_gaps`` False draws every file's interarrivals from F_j (or the closing rule's
    calibrated table) even where the pool then leaves F_j (``synth.balance``).
    ``full_namespace`` keeps every directory of the tree even when ``prunes_namespace`` would
    drop those that no kept file uses.

    Scale factors must be finite and at most ``MAX_SCALE`` (``--time-scale`` may be 0); the
    scaled profile must stay within the profile format's limits (docs/model.md), else the
    option is refused naming it (``ConfigError``, exit 2).
    """

    scale_files: float = 1.0
    scale_types: tuple[tuple[int, float], ...] = ()
    time_scale: float = 1.0
    span_scale: float = 1.0
    types: tuple[int, ...] | None = None
    duration_ms: int | None = None
    flat: bool = False
    balance_gaps: bool = True
    full_namespace: bool = False

    def __post_init__(self) -> None:
        _factor(self.scale_files, "--scale-files")
        for type_id, factor in self.scale_types:
            _factor(factor, f"--scale-type (type {type_id})")
        _factor(self.time_scale, "--time-scale", zero=True)
        _factor(self.span_scale, "--span-scale")
        if self.duration_ms is not None and not 0 < self.duration_ms <= MAX_TIME_MS:
            raise ConfigError(f"--duration: must be > 0 and at most {MAX_TIME_MS:,} ms, got {self.duration_ms!r} ms")
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
            full_namespace=bool(data.get("full_namespace", False)),
        )

    @classmethod
    def from_manifest(cls, data: object) -> GenerateOptions:
        """The options a schedule's manifest records; ``ScheduleError`` (exit 4) when they are not
        options (a corrupt or hand-edited manifest)."""
        if not isinstance(data, dict):
            raise ScheduleError(f"manifest.json key 'options': expected an object, got {type(data).__name__}")
        try:
            return cls.from_json(data)
        except (TypeError, ValueError, ConfigError) as exc:
            raise ScheduleError(f"manifest.json key 'options' is not valid: {exc}") from None

    @property
    def prunes_namespace(self) -> bool:
        """Whether the tree is cut to the directories the schedule's files use (and their
        ancestors): with ``--types`` or fewer files (``--scale-files`` below 1), unless
        ``--full-namespace``."""
        return not self.full_namespace and not self.flat and (self.types is not None or self.scale_files < 1.0)


#: the largest scale factor an option accepts
MAX_SCALE = 1e6


def _factor(value: float, option: str, zero: bool = False) -> None:
    """A scale factor: finite, positive (or 0 when ``zero``), at most ``MAX_SCALE``."""
    low_ok = value >= 0 if zero else value > 0
    if not (isinstance(value, (int, float)) and math.isfinite(value) and low_ok and value <= MAX_SCALE):
        bound = ">= 0" if zero else "> 0"
        raise ConfigError(f"{option}: must be a finite number {bound} and at most {MAX_SCALE:g}, got {value!r}")


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
