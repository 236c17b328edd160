"""``mimesisbench profile show|import``."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
