"""``mimesisbench model``: fit a workload profile from traces."""

from __future__ import annotations

import time
from pathlib import Path

import click

from mimesisbench.atomic import check_output_path
from mimesisbench.errors import ConfigError


def _parse_types(text: str) -> int | str:
    if text == "auto":
        return "auto"
    try:
        k = int(text)
    except ValueError:
        raise ConfigError(f"--types: expected a number of types or 'auto', got {text!r}") from None
    if k < 1:
        raise ConfigError("--types: the number of types must be at least 1")
    return k


@click.command("model")
@click.option("--audit", "audit", multiple=True, required=True, type=click.Path(path_type=Path),
              help="Audit log(s): plain or gzip'd, rotated sets in any order; also CSV/Parquet event files.")
@click.option("--snapshot", type=click.Path(path_type=Path), default=None,
              help="Namespace snapshot from the Offline Image Viewer (-p Delimited or -p XML).")
@click.option("--types", "types_text", default="30", show_default=True,
              help="Number of file types K, or 'auto' (smallest K with popularity KS <= 0.04).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of k-means and of auto-K's simulation.")
@click.option("--window-start", type=int, default=None, help="Start of the modeled window, ms since epoch (default: first event).")
@click.option("--window-end", type=int, default=None, help="End of the modeled window, ms since epoch (default: last event + 1).")
@click.option("--prefix", default=None,
              help="Model only this subtree (e.g. /user/project): events and snapshot entries under it.")
@click.option("--points", type=click.IntRange(8, 100_000), default=256, show_default=True,
              help="Quantile points kept per distribution.")
@click.option("--name", default="", help="A name for the profile.")
@click.option("-o", "--output", "output_text", type=click.Path(), required=True,
              help="Profile file to write (JSON; a regular file, replaced atomically).")
def model_command(audit: tuple[Path, ...], snapshot: Path | None, types_text: str, seed: int,
                  window_start: int | None, window_end: int | None, prefix: str | None, points: int, name: str,
                  output_text: str) -> None:
    """Fit a workload profile (file types, per-type distributions, op mix, namespace shape)."""
    from mimesisbench.handover import Handover
    from mimesisbench.model.clustering import import_in_background
    from mimesisbench.model.fit import FitConfig, fit_profile
    from mimesisbench.model.objects import restrict_to_subtree
    from mimesisbench.profile.io import save_profile
    from mimesisbench.synth.coverage import coverage_of_profile
    from mimesisbench.trace.oiv import read_oiv_snapshot
    from mimesisbench.trace.reader import read_trace

    types = _parse_types(types_text)
    output = check_output_path(output_text)  # before the parse: a bad -o fails at once
    if seed < 0:
        raise ConfigError(f"--seed: must be >= 0, got {seed}")
    if window_start is not None and window_end is not None and window_start >= window_end:
        raise ConfigError(f"--window-start ({window_start} ms) must be before --window-end ({window_end} ms)")
    started = time.perf_counter()
    import_in_background()  # scikit-learn (~1.5 s CPU) on the idle core while the trace is parsed
    events, report = read_trace(list(audit))
    click.echo(report.describe(), err=True)
    snap = read_oiv_snapshot(snapshot) if snapshot is not None else None
    if prefix is not None:
        events, snap = restrict_to_subtree(events, snap, prefix)
    parsed = time.perf_counter()
    config = FitConfig(
        types=types, seed=seed, points=points, window_start_ms=window_start, window_end_ms=window_end,
        name=name or output.stem, inputs=tuple(str(p) for p in audit) + ((str(snapshot),) if snapshot else ()),
        trace_stats={"lines": float(report.lines), "events": float(report.events), "malformed": float(report.malformed)},
    )
    handed = Handover(events)  # the fit frees the event table once read (a third of its peak memory)
    del events
    profile = fit_profile(handed, snap, config)
    written = save_profile(profile, output)
    done = time.perf_counter()
    click.echo(
        f"fitted {len(profile.types)} types ({len(profile.file_types)} file, {len(profile.directory_types)} directory) "
        f"from {report.events:,} events in {done - started:.1f} s "
        f"(parse {parsed - started:.1f} s, fit {done - parsed:.1f} s); {profile.source.k_selection}",
        err=True,
    )
    coverage = coverage_of_profile(profile)
    if coverage is not None:
        click.echo(coverage.line(), err=True)
    click.echo(str(written))


COMMANDS: list[click.Command] = [model_command]
