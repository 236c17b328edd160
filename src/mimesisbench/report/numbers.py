"""How reports round a number for display: about three significant digits, thousands grouped."""

from __future__ import annotations


def short_float(value: float) -> str:
    """``12,345`` / ``123.4`` / ``1.23`` / ``0.123``."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"
