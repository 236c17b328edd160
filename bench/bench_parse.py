"""Measure audit-log parsing, or parsing and fitting end to end (``--fit K``, what
``mimesisbench model`` does): lines per second, peak RSS and bytes per distinct path.

Generates (or reuses) a synthetic audit log under ``bench/out/`` with ``make_audit_log.py`` and
parses it once per repetition in a fresh process each (so peak RSS is the parse's own)::

    python bench/bench_parse.py [--lines 10000000] [--gzip] [--rotate 1] [--repeat 2] [--workers 2]
    python bench/bench_parse.py --fit 30      # parse + fit 30 types + write the profile

With ``--fit`` each repetition also measures the parse alone, as a same-run reference: the end
to end time is printed as a multiple of it (this machine's speed varies by a factor of two from
hour to hour; the ratio does not).

The parse is the native one when the native core is installed (``scripts/setup.sh`` builds it);
``MIMESISBENCH_NATIVE=0 python bench/bench_parse.py`` measures the pure-Python parser.

``parse_only(paths)`` is the measured unit: it parses and returns the table and report. The
figures are taken around it by ``measure`` (wall time, CPU time, peak RSS from
``resource.getrusage``, which covers the whole child process); a fitting stage can be added as
another measured unit beside it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_audit_log import AuditLogSpec, write_audit_log  # noqa: E402

from mimesisbench.trace.events import ParseReport  # noqa: E402
from mimesisbench.trace.hdfs_audit import read_audit_logs  # noqa: E402


@dataclass(frozen=True)
class Measurement:
    lines: int
    events: int
    distinct_paths: int
    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    baseline_rss_bytes: int

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.wall_s

    @property
    def bytes_per_path(self) -> float:
        return self.peak_rss_bytes / max(self.distinct_paths, 1)

    def describe(self) -> str:
        return (
            f"{self.lines:,} lines, {self.events:,} events, {self.distinct_paths:,} distinct paths: "
            f"{self.wall_s:.2f} s wall ({self.cpu_s:.2f} s CPU), {self.lines_per_s / 1e6:.2f} M lines/s; "
            f"peak RSS {self.peak_rss_bytes / 2**20:,.0f} MiB (baseline {self.baseline_rss_bytes / 2**20:,.0f} MiB), "
            f"{self.bytes_per_path:,.0f} bytes per distinct path"
        )


def log_files(lines: int, compress: bool, rotate: int, seed: int = 1) -> list[Path]:
    """The synthetic log for these options under bench/out/, generated on first use."""
    out = HERE / "out" / f"audit-{lines}-s{seed}-r{rotate}{'-gz' if compress else ''}"
    done = out / "DONE"
    if not done.exists():
        files = write_audit_log(out, AuditLogSpec(lines=lines, seed=seed), compress=compress, rotate=rotate)
        done.write_text("\n".join(p.name for p in files))
    return [out / name for name in done.read_text().split("\n")]


def parse_only(paths: Sequence[Path], workers: int = 2) -> tuple[ParseReport, int]:
    """The measured unit: parse the audit logs into the event table (its report, distinct paths)."""
    table, report = read_audit_logs(paths, workers=workers)
    return report, table["path"].n_unique()


def parse_and_fit(paths: Sequence[Path], types: int, workers: int = 2) -> tuple[ParseReport, int]:
    """The end-to-end unit: parse, fit a profile with ``types`` types and write it, as ``mimesisbench
    model`` does (the table handed over to the fit, which frees it once read)."""
    import tempfile

    from mimesisbench.handover import Handover
    from mimesisbench.model.clustering import import_in_background
    from mimesisbench.model.fit import FitConfig, fit_profile
    from mimesisbench.profile.io import save_profile

    import_in_background()  # as the CLI does: scikit-learn is imported while the log is parsed
    table, report = read_audit_logs(paths, workers=workers)
    distinct = table["path"].n_unique()  # counted in the measured time: a few tens of ms
    handed = Handover(table)
    del table
    profile = fit_profile(handed, None, FitConfig(types=types, seed=1))
    with tempfile.TemporaryDirectory() as tmp:
        save_profile(profile, Path(tmp) / "profile.json")
    return report, distinct


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def measure(paths: Sequence[Path], unit: Callable[[Sequence[Path]], tuple[ParseReport, int]]) -> Measurement:
    """Run ``unit`` once in this process and take wall, CPU and peak RSS around it."""
    base = _peak_rss()
    t0, c0 = time.perf_counter(), time.process_time()
    report, distinct = unit(paths)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _peak_rss()
    return Measurement(report.lines, report.events, distinct, wall, cpu, peak, base)


def _child(paths: list[str], workers: int, fit: int | None, conn: Connection) -> None:
    if fit is None:
        m = measure([Path(p) for p in paths], lambda ps: parse_only(ps, workers))
    else:
        m = measure([Path(p) for p in paths], lambda ps: parse_and_fit(ps, fit, workers))
    conn.send(asdict(m))


def measure_in_child(paths: Sequence[Path], workers: int, fit: int | None = None) -> Measurement:
    """``measure`` in a fresh process, so peak RSS is not inflated by earlier runs (forkserver:
    Linux's ``ru_maxrss`` survives fork+exec, so a child of this process would inherit its peak)."""
    ctx = mp.get_context("forkserver")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=([str(p) for p in paths], workers, fit, send))
    proc.start()
    result = recv.recv()
    proc.join()
    return Measurement(**result)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Benchmark audit-log parsing.")
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--rotate", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print one JSON object per repetition")
    ap.add_argument("--fit", type=int, default=None, metavar="K",
                    help="measure parse + fit with K types + profile write, end to end")
    a = ap.parse_args(argv)
    paths = log_files(a.lines, a.gzip, a.rotate)
    size = sum(p.stat().st_size for p in paths)
    print(f"log: {len(paths)} file(s), {size / 2**20:,.0f} MiB, {paths[0].parent}"
          + (f"; measuring parse + fit (K={a.fit}) + write" if a.fit else "; measuring parse only"))
    for _ in range(a.repeat):
        m = measure_in_child(paths, a.workers, a.fit)
        row: dict[str, object] = {**asdict(m), "lines_per_s": m.lines_per_s, "bytes_per_path": m.bytes_per_path}
        text = m.describe()
        if a.fit:  # the same-run reference: the parse alone, so a figure survives the machine's speed
            ref = measure_in_child(paths, a.workers, None)
            row["parse_only_wall_s"] = ref.wall_s
            row["wall_over_parse_only"] = m.wall_s / ref.wall_s
            text += f"; {m.wall_s / ref.wall_s:.2f}x the parse alone ({ref.wall_s:.2f} s, {ref.lines_per_s / 1e6:.2f} M lines/s)"
        print(json.dumps(row) if a.json else text)


if __name__ == "__main__":
    main()
