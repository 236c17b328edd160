"""Speed of ``schedule-from-trace``: the namespace model's conversion against the parse of the
same trace, measured in the same run (this machine's speed varies from hour to hour; the ratio
does not).

For each LOG (a real trace, or ``bench/make_audit_log.py``'s synthetic one for millions of lines):
the parse (``read_trace``, the reference), the conversion (``synth.verbatim.verbatim_schedule``:
hints, namespace model passes, tables) and the write, each timed on its own, with the events per
second of the conversion and its time as a multiple of the parse's.

Usage::

    python bench/bench_verbatim.py LOG... [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from mimesisbench.synth.verbatim import manifest_for, verbatim_schedule, write_verbatim
from mimesisbench.trace.reader import read_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3, help="timings per step (the median is shown)")
    args = parser.parse_args()
    print(f"{'trace':28s} {'events':>10s} {'parse s':>8s} {'convert s':>9s} {'write s':>8s} {'k events/s':>10s} "
          f"{'convert/parse':>13s} {'passes':>6s}")  # fmt: skip
    for log in args.logs:
        parse, convert, write = [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            events, _ = read_trace([log])
            t1 = time.perf_counter()
            v = verbatim_schedule(events)
            t2 = time.perf_counter()
            out = Path(tempfile.mkdtemp(prefix="bench-verbatim-")) / "s"
            write_verbatim(v, out, manifest_for(v, sources=[str(log)], snapshot=None))
            t3 = time.perf_counter()
            shutil.rmtree(out.parent, ignore_errors=True)
            parse.append(t1 - t0)
            convert.append(t2 - t1)
            write.append(t3 - t2)
        p, c, w = statistics.median(parse), statistics.median(convert), statistics.median(write)
        print(f"{log.name[:28]:28s} {events.height:10,d} {p:8.2f} {c:9.2f} {w:8.2f} {events.height / c / 1e3:10.0f} "
              f"{c / p:13.1f} {v.report.passes:6d}")  # fmt: skip


if __name__ == "__main__":
    main()
