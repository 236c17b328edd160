"""``mimesisbench profile show|import``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mimesisbench.profile.io import load_profile, resolve_profile_arg
from mimesisbench.profile.summary import TOP_COMMANDS, ProfileSummary, summarize, summary_to_dict


# ------------------------------------------------------------------------------ formatting
def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 1000 else f"{value:,.0f}"


def _minutes(value_ms: float | None) -> str:
    return "-" if value_ms is None else f"{value_ms / 60_000:,.2f}"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:.3g} h"


def _weight(w: float) -> str:
    return f"{w:.4f}" if w == 0 or w >= 0.001 else f"{w:.1e}"


def _header(s: ProfileSummary) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    inputs = ", ".join(s.source_inputs) if s.source_inputs else "-"
    grid.add_row("name", Text(s.name or "-"))
    grid.add_row("source", Text(f"{s.source_kind}  {inputs}" + (f"  ({s.created_at})" if s.created_at else "")))
    grid.add_row("window", f"{s.window_ms:,} ms ({_duration(s.window_ms)})")
    grid.add_row("files created (n)", f"{s.total_creates:,}")
    inferred = "inferred from the trace" if s.pre_existing_inferred else "given"
    grid.add_row("pre-existing files", f"{s.pre_existing_total:,} ({inferred})")
    dir_types = s.directory_type_count
    grid.add_row("file types (K)", str(s.type_count - dir_types))
    if dir_types or s.created_directories:
        grid.add_row("directory types", f"{dir_types} ({s.created_directories:,} directories created)")
    if s.pathless:
        grid.add_row("pathless commands", Text(", ".join(f"{c} {n:,}" for c, n in s.pathless)))
    depth = "-" if s.max_dir_depth is None else str(s.max_dir_depth)
    tree = f", tree file {s.tree_file}" if s.tree_file else ""
    grid.add_row("namespace", Text(f"{s.directories:,} directories, max depth {depth}{tree}"))
    lo, hi = s.open_share_range
    shares = f"{lo:.3g}" if math.isclose(lo, hi) else f"{lo:.3g}..{hi:.3g}"
    mix = ", ".join(f"{k} {v:.4g}" for k, v in s.op_mix.items() if v > 0) or "no directory ops or renames"
    grid.add_row("op mix", f"open share {shares}; {mix}")
    grid.add_row("reads / writes", f"{_pct(s.read_share)} / {_pct(None if s.read_share is None else 1 - s.read_share)}")
    return grid


def _types_table(s: ProfileSummary) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), header_style="bold")
    chains = any(r.commands is not None for r in s.types)
    kinds = chains or any(r.kind != "file" for r in s.types)
    titles = ["type"] + (["kind"] if kinds else []) + ["weight", "created", "pre-exist.", "acc. int.", "cre. int."]
    for title in titles + ["span", "reads", "writes"]:
        table.add_column(title, justify="right", no_wrap=True)
    units = [""] * (len(titles) - 2) + ["ms", "ms", "min", "", ""]
    table.add_row(*units, style="dim")
    for r in s.types:
        kind = [("dir" if r.kind == "directory" else "file")] if kinds else []
        table.add_row(
            str(r.id),
            *kind,
            _weight(r.weight),
            f"{r.created:,}",
            f"{r.pre_existing:,}",
            _ms(r.mean_access_interarrival_ms),
            _ms(r.mean_create_interarrival_ms),
            _minutes(r.mean_active_span_ms),
            _pct(r.read_share),
            _pct(r.write_share),
        )
    return table


def _mix_table(s: ProfileSummary) -> Table | None:
    """Per type with a command chain: its kind and top commands with their shares."""
    rows = [r for r in s.types if r.commands is not None]
    if not rows:
        return None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), header_style="bold")
    table.add_column("type", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("command mix (share of accesses)")
    for r in rows:
        table.add_row(str(r.id), r.kind, Text(_mix(r.commands, r.new_dir_share)))
    return table


def _mix(commands: list[tuple[str, float]] | None, new_dir_share: float) -> str:
    """A type's top commands with their shares (``TOP_COMMANDS`` of them)."""
    if commands is None:
        return "-"
    top = ", ".join(f"{c} {v:.0%}" for c, v in commands[:TOP_COMMANDS])
    more = f", +{len(commands) - TOP_COMMANDS}" if len(commands) > TOP_COMMANDS else ""
    new_dirs = f"; {new_dir_share:.0%} in new dirs" if new_dir_share > 0 else ""
    return top + more + new_dirs


def _print_summary(s: ProfileSummary, console: Console) -> None:
    console.print(_header(s))
    console.print()
    console.print(_types_table(s))
    mix = _mix_table(s)
    if mix is not None:
        console.print(mix)
    console.print(
        "[dim]acc. int. = mean per-file access interarrival (F), cre. int. = mean create interarrival (C), "
        "span = mean active span (H); reads = expected opens + file listings (1 + E[H]/E[F] per accessed "
        "file), writes = creates + deletes.[/dim]"
    )
    if s.notes:
        notes = Table.grid(padding=(0, 1))
        notes.add_column(no_wrap=True)
        notes.add_column()
        for note in s.notes:
            notes.add_row("  -", Text(note))
        console.print(Text("notes", style="bold"))
        console.print(notes)


# ------------------------------------------------------------------------------ commands
@click.group("profile")
def profile_group() -> None:
    """Inspect and convert workload profiles."""


@profile_group.command("show")
@click.argument("profile", metavar="PROFILE")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def show(profile: str, as_json: bool) -> None:
    """Summarise PROFILE (a profile JSON file, or 'demo'): globals and one row per file type."""
    from mimesisbench.synth.coverage import coverage_of_profile

    loaded = load_profile(resolve_profile_arg(profile))
    summary = summarize(loaded)
    coverage = coverage_of_profile(loaded)  # None when the profile records no operation counts
    if as_json:
        click.echo(json.dumps({**summary_to_dict(summary), "coverage": coverage and coverage.to_dict()}, indent=2))
        return
    console = Console(width=None if Console().is_terminal else 100, highlight=False)
    _print_summary(summary, console)
    if coverage is not None:
        console.print(Text(coverage.line()))


@profile_group.command("import")
@click.argument("old_profile", metavar="OLD_PROFILE", type=click.Path(path_type=Path))
@click.option(
    "-o", "--output", "output", required=True, type=click.Path(path_type=Path), help="Profile to write (JSON)."
)
def import_cmd(old_profile: Path, output: Path) -> None:
    """Convert a 2014 MimesisBench profile (nnmetadata.properties zip or folder) into PROFILE."""
    from mimesisbench.synth.legacy2014 import import_2014, save_imported

    profile, dirs = import_2014(old_profile)
    written = save_imported(profile, dirs, output)
    tree = written.with_name(written.stem + ".dirs.txt")
    click.echo(f"wrote {written} ({len(profile.types)} types) and {tree.name} ({len(dirs):,} directories)")


COMMANDS: list[click.Command] = [profile_group]
