"""Parsing of human-friendly quantities given on the command line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mimesisbench.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_FACTORS_MS = {None: 1.0, "ms": 1.0, "s": 1e3, "m": 60e3, "min": 60e3, "h": 3600e3, "d": 86400e3}
_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|K|M|G|k)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "K": 1024, "k": 1024, "KiB": 1024, "M": 1024**2, "MiB": 1024**2, "G": 1024**3, "GiB": 1024**3}


def scaled(pattern: re.Pattern[str], factors: Mapping[Any, float], text: str) -> float | None:
    """A number and its unit (``pattern``'s groups 1 and 2) times the unit's factor; None when
    ``text`` does not match (the caller says what it expected)."""
    match = pattern.match(str(text))
    if match is None:
        return None
    return float(match.group(1)) * factors[match.group(2)]


def _duration_ms(text: str, option: str) -> float:
    """A duration in ms, unrounded; a ``ConfigError`` naming ``option`` when it cannot be read."""
    value = scaled(_DURATION, _FACTORS_MS, text)
    if value is None:
        raise ConfigError(f"{option}: cannot read {text!r} as a duration (use e.g. 20s, 10m, 1h or milliseconds)")
    return value


def parse_duration_ms(text: str, *, option: str = "duration") -> int:
    """``"20s"``, ``"10m"``, ``"1h"``, ``"1500ms"`` or a bare number of milliseconds -> ms."""
    return int(round(_duration_ms(text, option)))


def parse_duration_s(text: str, *, option: str = "duration") -> float:
    """As ``parse_duration_ms``, in seconds and unrounded (``"0.2ms"`` -> 0.0002)."""
    return _duration_ms(text, option) / 1000.0


def parse_rate(text: str, *, option: str = "--rate") -> float:
    """Operations per second from ``5000``, ``5000/s`` or ``2.5k/s``."""
    value = text.strip().lower().removesuffix("/s").strip()
    factor = 1000.0 if value.endswith("k") else 1.0
    try:
        rate = float(value.removesuffix("k")) * factor
    except ValueError:
        raise ConfigError(f"{option}: cannot read {text!r}; give operations per second, e.g. 5000/s or 2.5k/s") from None
    if not rate > 0 or rate == float("inf"):
        raise ConfigError(f"{option} must be a positive number of operations per second (got {text!r})")
    return rate


def parse_size(text: str, what: str) -> int:
    """Bytes from ``4MiB``, ``64KiB``, ``512`` (K, M, G are binary too, as in IOR)."""
    value = scaled(_SIZE, _SIZE_UNITS, text)
    if value is None:
        raise ConfigError(f"{what}: {text.strip()!r} is not a size (write e.g. 4MiB, 64KiB or bytes)")
    return int(value)


def parse_flag(text: str, what: str) -> bool:
    """true/yes/1/on or false/no/0/off (any case); ``ConfigError`` naming ``what`` otherwise."""
    value = text.strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise ConfigError(f"{what}: {text.strip()!r} is not true or false")
