"""The capacity search on servers whose capacity is known: ``rate:R+null`` (a token bucket of R
operations per second in front of the null backend) for a few R, with a steady schedule (a
verbatim trace of evenly spaced getfileinfo calls). Prints, per R, the capacity found, its ratio
to R and the trials it took::

    python bench/bench_capacity.py [--rates 500,2000] [--operations 4000] [--tolerance 0.05]

The issue's bar: the capacity found within 10 % of R. Above a few thousand operations per second
on this 2-core machine the Python client's own pacing becomes the limit (see ``micro``), so the
figure is about the search, not the client, at the rates printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

from mimesisbench.cli.main import main as cli_main


def steady_log(path: Path, operations: int, gap_ms: int, op: str = "getfileinfo") -> Path:
    """An audit log of ``op`` on 200 files, one every ``gap_ms``: a steady load."""
    lines = []
    for i in range(operations):
        ms = i * gap_ms
        stamp = f"2026-01-01 {ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
        lines.append(f"{stamp} INFO FSNamesystem.audit: allowed=true\tugi=u (auth:SIMPLE)\tip=/10.0.0.1"
                     f"\tcmd={op}\tsrc=/data/f{i % 200}\tdst=null\tperm=null\tproto=rpc")
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli_main(argv)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="500,2000")
    ap.add_argument("--operations", type=int, default=4000)
    ap.add_argument("--tolerance", type=float, default=0.05)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        schedule = work / "schedule"
        cli(["schedule-from-trace", str(steady_log(work / "audit.log", a.operations, 10)), "-o", str(schedule)])
        for rate in (float(r) for r in a.rates.split(",")):
            result = json.loads(cli(["capacity", str(schedule), "-b", f"rate:{rate:g}+null", "--start", f"{rate / 4:g}/s",
                                     "--tolerance", str(a.tolerance), "--output", str(work / f"runs-{rate:g}"), "--json"]))
            q = result["capacity_ops_s"]
            trials = ", ".join(f"{t['rate']:,.0f}{'' if t['sustained'] else 'x'}" for t in result["trials"])
            print(f"rate:{rate:g}+null: capacity {q:,.0f} ops/s = {q / rate:.3f} x R; "
                  f"first unsustained {result['first_unsustained_ops_s']:,.0f}; trials {trials} (x: not sustained)")


if __name__ == "__main__":
    main()
