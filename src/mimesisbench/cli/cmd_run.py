"""CLI verbs of the run area (filled in by its issue)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
