"""``mimesisbench schedule-from-trace``: a trace's operations as a schedule, verbatim."""

from __future__ import annotations

import time
from pathlib import Path

import click

from mimesisbench.schedule.writer import check_destination


@click.command("schedule-from-trace")
@click.argument("audit", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--snapshot", type=click.Path(path_type=Path), default=None,
              help="Namespace snapshot (Offline Image Viewer, -p Delimited or -p XML) taken at the window's "
              "start: the namespace phase 1 builds (default: inferred from the trace).")
@click.option("--prefix", default=None,
              help="Replay only this subtree (e.g. /user/project): events and snapshot entries under it.")
@click.option("--anonymise-key-file", "key_file", type=click.Path(path_type=Path), default=None,
              help="Anonymise every path component by a keyed hash (HMAC-SHA256) with the key in this file "
              "(at least 16 bytes): the same name and key give the same name, the tree keeps its shape.")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), required=True,
              help="Schedule directory to write (replaced atomically if it is one).")
def schedule_from_trace_command(audit: tuple[Path, ...], snapshot: Path | None, prefix: str | None,
                                key_file: Path | None, output: Path) -> None:
    """Replay a trace verbatim: AUDIT log(s) -> a schedule of its operations as they were.

    Every operation keeps its path, command and time after the window's first event; the
    namespace it needs is the snapshot's plus what the trace's history implies. `run` replays
    it like a generated schedule (--time-scale, --workers, Ray, reports); `validate --trace` on
    it against the same trace reads 0 everywhere. Denied namespace changes are left out and
    counted; what else a schedule cannot hold is counted per command.
    """
    from mimesisbench.model.objects import restrict_to_subtree
    from mimesisbench.synth.verbatim import manifest_for, verbatim_schedule, write_verbatim
    from mimesisbench.trace.anonymise import read_key
    from mimesisbench.trace.oiv import read_oiv_snapshot
    from mimesisbench.trace.reader import read_trace

    check_destination(output)  # before the parse: a bad -o fails at once
    key = read_key(key_file) if key_file is not None else None
    started = time.perf_counter()
    events, report = read_trace(list(audit))
    click.echo(report.describe(), err=True)
    snap = read_oiv_snapshot(snapshot) if snapshot is not None else None
    if prefix is not None:
        events, snap = restrict_to_subtree(events, snap, prefix)
    verbatim = verbatim_schedule(events, snap, key=key)
    manifest = manifest_for(verbatim, sources=[str(p) for p in audit], snapshot=str(snapshot) if snapshot else None)
    written = write_verbatim(verbatim, output, manifest)
    r = verbatim.report
    click.echo(
        f"{r.events:,} operations over {verbatim.window_ms / 1000:,.1f} s in {time.perf_counter() - started:.1f} s; "
        f"namespace: {r.pre_existing_directories:,} directories and {r.pre_existing_files:,} files before the first "
        f"({r.from_snapshot:,} from the snapshot)" + ("; paths anonymised" if r.anonymised else ""),
        err=True,
    )
    for note in manifest["notes"]:
        click.echo(f"note: {note}", err=True)
    click.echo(str(written))


COMMANDS: list[click.Command] = [schedule_from_trace_command]
