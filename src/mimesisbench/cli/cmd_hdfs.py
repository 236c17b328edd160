"""CLI verbs of the hdfs area (filled in by its issue)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
