"""Option helpers shared by the commands: one spelling per meaning, old spellings kept hidden.

Every command that writes somewhere takes ``-o/--output``; a few used to say ``--out``, which
still works but no longer shows in ``--help`` (``HiddenAliasOption``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console

from mimesisbench.units import parse_duration_ms


class HiddenAliasOption(click.Option):
    """An option with extra names that are accepted but not shown in ``--help``."""

    def __init__(self, param_decls: Sequence[str], hidden_aliases: Sequence[str] = (), **attrs: Any) -> None:
        super().__init__([*param_decls, *hidden_aliases], **attrs)
        self.hidden_aliases = frozenset(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        saved = self.opts
        self.opts = [name for name in saved if name not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved


def output_option(dest: str = "output", **attrs: Any) -> Any:
    """``-o/--output`` (``--out`` accepted as a hidden alias), stored in ``dest``."""
    return click.option("-o", "--output", dest, cls=HiddenAliasOption, hidden_aliases=("--out",), **attrs)


def max_drift_seconds(text: str) -> float | None:
    """``--max-drift``: a duration in seconds, or None for ``off`` (also ``none``, ``0``)."""
    if text.strip().lower() in ("off", "none", "0"):
        return None
    return parse_duration_ms(text, option="--max-drift") / 1000.0


def table_console(min_width: int = 132) -> Console:
    """A console; when output goes to a file or pipe, at least ``min_width`` wide for tables."""
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, min_width))

