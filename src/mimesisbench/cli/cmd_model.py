"""``mimesisbench model``: fit a workload profile from traces."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
