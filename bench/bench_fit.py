"""Measure the fit alone: from a saved canonical event table to the written profile, stage by stage.

The event table is parsed once from the synthetic audit log (``bench_parse.py``'s) and saved as
Arrow IPC under ``bench/out/``; each repetition then loads it in a fresh process and times::

    python bench/bench_fit.py [--lines 10000000] [--types 30] [--repeat 2] [--profile]

Printed per repetition: wall and CPU seconds of every stage (build_view, gaps, op counts,
namespace, features, k-means, per-type distributions, write) and of the whole fit
(``fit_profile`` + ``save_profile``, timed apart from the stages), the peak RSS above the loaded
table and bytes per distinct path. ``--profile`` prints a cProfile of one whole fit instead.
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing as mp
import pstats
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_parse import log_files  # noqa: E402

from mimesisbench.model.clustering import import_in_background  # noqa: E402
from mimesisbench.model.fit import FitConfig, fit_profile, prepare, profile_from_labels  # noqa: E402
from mimesisbench.profile.io import save_profile  # noqa: E402


def event_table(lines: int) -> Path:
    """The saved event table of the synthetic log with ``lines`` lines, parsed on first use."""
    out = HERE / "out" / f"events-{lines}-s1-r1.arrow"
    if not out.exists():
        from mimesisbench.trace.hdfs_audit import read_audit_logs

        table, _ = read_audit_logs(log_files(lines, False, 1), workers=2)
        table.write_ipc(out)
    return out


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextmanager
def _timed(name: str, into: dict[str, tuple[float, float]]) -> Iterator[None]:
    t0, c0 = time.perf_counter(), time.process_time()
    yield
    into[name] = (time.perf_counter() - t0, time.process_time() - c0)


def staged_fit(table: pl.DataFrame, config: FitConfig, out: Path) -> dict[str, tuple[float, float]]:
    """The fit of ``fit_profile`` (fixed K) cut into its stages, each timed (wall s, CPU s)."""
    from mimesisbench.model.fit import cluster_kinds, operation_counts
    from mimesisbench.model.namespace_shape import fit_namespace
    from mimesisbench.model.objects import access_gaps, build_view

    stages: dict[str, tuple[float, float]] = {}
    with _timed("build_view", stages):
        view = build_view(table, None)
    with _timed("gaps", stages):
        access_gaps(view.accesses)  # done inside build_view since; here for comparison
    with _timed("op_counts", stages):
        operation_counts(table)
    with _timed("namespace", stages):
        fit_namespace(view.directories, view.objects["depth"])
    with _timed("prepare (all of the above)", stages):
        fo = prepare(table, None, config)
    with _timed("features", stages):
        fo.features()
    with _timed("features + k-means per kind", stages):
        labels, _note = cluster_kinds(fo, config)
    with _timed("per-type distributions", stages):
        profile = profile_from_labels(fo, labels, config, "bench")
    with _timed("write", stages):
        save_profile(profile, out)
    return stages


def _child(table_path: str, types: int, do_profile: bool, conn: Connection) -> None:
    table = pl.read_ipc(table_path)
    paths = table["path"].n_unique()
    import_in_background().join()  # scikit-learn is imported on first use: load it before the timings
    base = _peak_rss()
    config = FitConfig(types=types, seed=1)
    result: dict[str, Any] = {"paths": paths, "events": table.height}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.json"
        if do_profile:
            prof = cProfile.Profile()
            prof.enable()
            save_profile(fit_profile(table, None, config), out)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
            conn.send(result)
            return
        t0, c0 = time.perf_counter(), time.process_time()
        save_profile(fit_profile(table, None, config), out)
        result["total"] = (time.perf_counter() - t0, time.process_time() - c0)
        result["peak_above_table"] = _peak_rss() - base
        result["stages"] = staged_fit(table, config, out)
    conn.send(result)


def run_in_child(table: Path, types: int, do_profile: bool) -> dict[str, Any]:
    ctx = mp.get_context("forkserver")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(str(table), types, do_profile, send))
    proc.start()
    send.close()  # so that a child that dies makes recv() raise instead of waiting forever
    result: dict[str, Any] = recv.recv()
    proc.join()
    return result


def describe(r: dict[str, Any], show: Callable[[str], None] = print) -> None:
    wall, cpu = r["total"]
    show(f"fit + write, K from --types: {wall:.2f} s wall, {cpu:.2f} s CPU; "
         f"peak RSS above the table {r['peak_above_table'] / 2**20:,.0f} MiB = "
         f"{r['peak_above_table'] / max(r['paths'], 1):,.0f} B per distinct path "
         f"({r['events']:,} events, {r['paths']:,} paths)")
    for name, (w, c) in r["stages"].items():
        show(f"  {name:<28} {w:6.2f} s wall {c:6.2f} s CPU")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Benchmark the fit on a saved event table.")
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--types", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one fit")
    a = ap.parse_args(argv)
    table = event_table(a.lines)
    for _ in range(1 if a.profile else a.repeat):
        r = run_in_child(table, a.types, a.profile)
        if not a.profile:
            describe(r)


if __name__ == "__main__":
    main()
