"""Parsing of human-friendly quantities given on the command line."""

from __future__ import annotations

import re

from mimesisbench.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_FACTORS_MS = {None: 1.0, "ms": 1.0, "s": 1e3, "m": 60e3, "min": 60e3, "h": 3600e3, "d": 86400e3}


def parse_duration_ms(text: str, *, option: str = "duration") -> int:
    """``"20s"``, ``"10m"``, ``"1h"``, ``"1500ms"`` or a bare number of milliseconds -> ms."""
    match = _DURATION.match(str(text))
    if not match:
        raise ConfigError(f"{option}: cannot read {text!r} as a duration (use e.g. 20s, 10m, 1h or milliseconds)")
    value = float(match.group(1)) * _FACTORS_MS[match.group(2)]
    return int(round(value))
