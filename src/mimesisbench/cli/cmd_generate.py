"""``mimesisbench generate``, ``export-audit`` and ``validate``: profile -> schedule, and back."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table

from mimesisbench.atomic import atomic_output, check_output_path
from mimesisbench.errors import ConfigError
from mimesisbench.units import parse_duration_ms


def _parse_scale_types(values: tuple[str, ...]) -> tuple[tuple[int, float], ...]:
    out = []
    for text in values:
        left, sep, right = text.partition("=")
        try:
            if not sep:
                raise ValueError
            out.append((int(left), float(right)))
        except ValueError:
            raise ConfigError(f"--scale-type: cannot read {text!r}; use TYPE=FACTOR, e.g. 3=2") from None
    return tuple(out)


def _parse_types(text: str | None) -> tuple[int, ...] | None:
    from mimesisbench.synth.options import parse_types

    return None if text is None else parse_types(text)


def _load(profile_arg: str, flat: bool) -> tuple[Any, Any]:
    """(profile, explicit tree or None) from a profile file/directory, ``demo`` or a 2014 zip."""
    from mimesisbench.profile.io import load_profile, resolve_profile_arg
    from mimesisbench.synth.namespace import tree_from_paths
    from mimesisbench.synth.pipeline import load_tree

    path = resolve_profile_arg(profile_arg)
    if path.suffix == ".zip" or (path.is_dir() and not (path / "profile.json").exists()):
        from mimesisbench.synth.legacy2014 import import_2014

        profile, dirs = import_2014(path)
        return profile, (None if flat or not dirs else tree_from_paths(dirs))
    profile = load_profile(path)
    return profile, (None if flat else load_tree(path, profile))


@click.command("generate")
@click.argument("profile")
@click.option("--scale-files", type=float, default=1.0, show_default=True, help="Files (n and pre-existing) times X.")
@click.option("--scale-type", "scale_type", multiple=True, metavar="J=X", help="Files of type J times X (repeatable).")
@click.option("--time-scale", type=float, default=1.0, show_default=True, help="Times x C; 0: as fast as possible.")
@click.option("--span-scale", type=float, default=1.0, show_default=True, help="Active spans times S.")
@click.option("--types", default=None, metavar="3,17", help="Keep only these file types.")
@click.option("--duration", default=None, metavar="D", help="Window: 20s, 10m, 1h or ms (default: the profile's).")
@click.option("--flat", is_flag=True, help="All files in one directory (the root).")
@click.option(
    "--full-namespace",
    "full_namespace",
    is_flag=True,
    help="Keep every directory of the tree; by default --types and --scale-files < 1 keep only the "
    "directories the schedule's files use and their ancestors.",
)
@click.option(
    "--no-gap-balance",
    "no_gap_balance",
    is_flag=True,
    help="Draw pre-existing files' interarrivals from F_j even where created files pull the pool off it.",
)
@click.option("--seed", type=int, default=None, help="Random seed (default: a random one, recorded in the manifest).")
@click.option("-o", "--output", "output", required=True, type=click.Path(path_type=Path), help="Schedule directory.")
def generate_cmd(
    profile: str,
    scale_files: float,
    scale_type: tuple[str, ...],
    time_scale: float,
    span_scale: float,
    types: str | None,
    duration: str | None,
    flat: bool,
    full_namespace: bool,
    no_gap_balance: bool,
    seed: int | None,
    output: Path,
) -> None:
    """Generate a namespace and a schedule of operations from PROFILE."""
    from mimesisbench.synth.options import GenerateOptions
    from mimesisbench.synth.pipeline import generate_to

    duration_ms = None if duration is None else parse_duration_ms(duration, option="--duration")
    if duration_ms is not None and duration_ms <= 0:
        raise ConfigError(f"--duration: must be > 0, got {duration!r}")
    if seed is not None and seed < 0:
        raise ConfigError(f"--seed: must be >= 0, got {seed}")
    options = GenerateOptions(
        scale_files=scale_files,
        scale_types=_parse_scale_types(scale_type),
        time_scale=time_scale,
        span_scale=span_scale,
        types=_parse_types(types),
        duration_ms=duration_ms,
        flat=flat,
        balance_gaps=not no_gap_balance,
        full_namespace=full_namespace,
    )
    prof, tree = _load(profile, flat)
    path, schedule, manifest = generate_to(prof, output, options, seed, tree)
    counts = manifest["counts"]
    ns_info = manifest["namespace"]
    assert isinstance(counts, dict) and isinstance(ns_info, dict)
    pruned = (
        f" (pruned from {ns_info['tree_directories']:,}; --full-namespace keeps them all)"
        if ns_info["pruned"] and ns_info["tree_directories"] != ns_info["pre_existing_directories"]
        else ""
    )
    click.echo(
        f"wrote {path}: {counts['events']:,} operations on {counts['files']:,} files "
        f"({counts['pre_existing_files']:,} pre-existing) in {counts['directories']:,} directories{pruned}, "
        f"window {schedule.window_ms:,} ms, seed {schedule.seed}"
    )


@click.command("export-audit")
@click.argument("schedule", type=click.Path(path_type=Path))
@click.option("-o", "--output", "output_text", type=click.Path(), default=None,
              help="File (default: stdout; a regular file, replaced atomically).")
@click.option("--base", default="", help="Directory prefixed to every path, e.g. /bench.")
@click.option("--start", default=None, metavar="ISO", help="Wall-clock time of t0 (default 2011-12-01T00:00:00).")
@click.option("--with-namespace", is_flag=True, help="Also write phase 1 (mkdirs and creates) at t0.")
def export_audit_cmd(schedule: Path, output_text: str | None, base: str, start: str | None, with_namespace: bool) -> None:
    """Write SCHEDULE as an HDFS NameNode audit log."""
    from mimesisbench.schedule import read_schedule
    from mimesisbench.synth.audit import DEFAULT_START, export_audit

    if base and not base.startswith("/"):
        raise ConfigError(f"--base: must be an absolute path, got {base!r}")
    try:
        t0 = DEFAULT_START if start is None else dt.datetime.fromisoformat(start)
    except ValueError:
        raise ConfigError(f"--start: cannot read {start!r} as an ISO date-time, e.g. 2011-12-01T00:00:00") from None
    # before reading the schedule: a bad -o fails at once
    output = None if output_text is None else check_output_path(output_text)
    tables = read_schedule(schedule)
    if output is None:
        export_audit(tables, sys.stdout, base=base, start=t0, with_namespace=with_namespace)
        return
    with atomic_output(output) as out:  # only a regular file is replaced; no partial file on failure
        lines = export_audit(tables, out, base=base, start=t0, with_namespace=with_namespace)
    click.echo(f"wrote {lines:,} audit lines to {output}", err=True)


def _by_command_table(rows: dict[str, dict[str, Any]]) -> Table:
    def cell(value: float | None, pct: bool = False) -> str:
        if value is None:
            return "-"
        return f"{100 * value:.1f} %" if pct else f"{value:.4f}"

    table = Table(title="per audited command (* not modelled)", box=box.SIMPLE)
    for name in ("command", "target", "trace share", "schedule share", "ks popularity", "ks interarrival",
                 "n trace", "n schedule"):
        table.add_column(name, justify="left" if name in ("command", "target") else "right", no_wrap=True)
    for cmd, row in rows.items():
        label = cmd if row["modelled"] else f"{cmd} *"
        for target, part in [("all", row), *row["targets"].items()]:
            table.add_row(
                label if target == "all" else "", target, cell(part["trace_share"], True),
                cell(part["schedule_share"], True), cell(part["ks_popularity"]), cell(part["ks_interarrival"]),
                f"{part['n_trace']:,}", f"{part['n_schedule']:,}",
            )
    return table


def _render(result: dict[str, Any]) -> None:
    console = Console(width=None if Console().is_terminal else 120)
    table = Table(title=f"fidelity ({result['mode']})", box=box.SIMPLE)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key in ("types", "notes", "mode") or isinstance(value, dict):
            continue
        table.add_row(key, "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value)))
    console.print(table)
    if result.get("types"):
        per = Table(title="per type", box=box.SIMPLE)
        keys = ["ks_create_interarrival", "ks_activation", "ks_span", "ks_interarrival", "ks_delete", "ks_popularity"]
        per.add_column("type", justify="right")
        for k in keys:
            per.add_column(k.removeprefix("ks_"), justify="right")
        per.add_column("weight gen/prof", justify="right")
        for tid, row in result["types"].items():
            cells = ["-" if row.get(k) is None else f"{row[k]:.4f}" for k in keys]
            per.add_row(tid, *cells, f"{row['weight_generated']:.4f}/{row['weight_profile']:.4f}")
        console.print(per)
    if result.get("by_command"):
        console.print(_by_command_table(result["by_command"]))
    for note in result.get("notes", []):
        console.print(f"note: {note}")


@click.command("validate")
@click.argument("schedule", type=click.Path(path_type=Path))
@click.argument("more_traces", nargs=-1, type=click.Path(path_type=Path))
@click.option("--profile", "profile", default=None, help="Compare with this profile.")
@click.option("--trace", "traces", multiple=True, type=click.Path(path_type=Path), help="Compare with audit log(s).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def validate_cmd(
    schedule: Path, more_traces: tuple[Path, ...], profile: str | None, traces: tuple[Path, ...], as_json: bool
) -> None:
    """Report how faithfully SCHEDULE reproduces a profile or a trace (KS distances)."""
    from mimesisbench.schedule import read_schedule
    from mimesisbench.synth.fidelity import read_trace_events, validate_profile, validate_trace

    all_traces = list(traces) + list(more_traces)
    if more_traces and not traces:
        raise ConfigError("validate: extra arguments are trace files; give them after --trace")
    if (profile is None) == (not all_traces):
        raise ConfigError("validate: give exactly one of --profile PROFILE or --trace AUDIT_LOG...")
    tables = read_schedule(schedule)
    if profile is not None:
        prof, _tree = _load(profile, True)
        result = validate_profile(tables, prof)
    else:
        result = validate_trace(tables, read_trace_events(all_traces))
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        _render(result)


COMMANDS: list[click.Command] = [generate_cmd, export_audit_cmd, validate_cmd]

__all__ = ["COMMANDS"]
