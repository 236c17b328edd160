"""Server-level fidelity of fitted profiles on the managed HDFS: verbatim vs synthetic, per trace.

One script run starts a fresh managed HDFS (``LocalHdfs``). For every ``*.audit.log`` in the DIRs
(or named directly), with its ``<name>.fsimage.tsv`` as the snapshot when there is one, and the
sandbox trace (``--sandbox``), it runs the CLI as a user would::

    mimesisbench schedule-from-trace LOG [--snapshot TSV] -o VERBATIM
    mimesisbench model --audit LOG [--snapshot TSV] --types auto --seed 1 -o PROFILE
    mimesisbench generate PROFILE --seed 1 -o SYNTHETIC
    mimesisbench run VERBATIM  --backend hdfs://.../fid/NAME/verbatim?mkdirs=native --time-scale C --max-drift off --workers W
    mimesisbench run SYNTHETIC --backend hdfs://.../fid/NAME/synthetic?mkdirs=native --time-scale C --max-drift off --workers W
    mimesisbench fidelity VERBATIM_RUN SYNTHETIC_RUN --json

(each run's tree is deleted after it, so the next one meets the same namespace size; both runs
sample the NameNode's JMX and use ``--workers`` processes: the same client) and prints, per
trace and command with at least ``--min-share`` of the trace's operations: the throughput ratio (synthetic / verbatim), the service-time KS and the
p50 and p99 ratios with their 95 % bootstrap intervals; per trace: the verbatim replay's
lateness p99 and the shares of its outcomes that match the trace and the schedule's prediction,
and the NameNode's mean RPC queue and processing times on both sides.

Usage::

    python bench/bench_server_fidelity.py DIR_OR_LOG... [--sandbox LOG | --no-sandbox] [--time-scale 0.5]
        [--min-share 0.01] [--workers 2] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig

SANDBOX = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "spark-hive-sandbox-audit.log"
BASE = "/fid"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"mimesisbench {' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    return done


def traces(paths: list[str], sandbox: str | None) -> list[tuple[str, Path, Path | None]]:
    out: list[tuple[str, Path, Path | None]] = []
    for text in paths:
        p = Path(text)
        logs = sorted(p.glob("*.audit.log")) if p.is_dir() else [p]
        for log in logs:
            name = log.name.removesuffix(".audit.log").removesuffix(".log")
            snap = log.with_name(f"{name}.fsimage.tsv")
            out.append((f"{p.name}/{name}" if p.is_dir() else name, log, snap if snap.is_file() else None))
    if sandbox:
        out.append(("sandbox", Path(sandbox), None))
    return out


def run(schedule: Path, backend: str, jmx: str, out: Path, time_scale: float, workers: int) -> Path:
    cli("run", str(schedule), "--backend", backend, "--time-scale", str(time_scale), "--max-drift", "off",
        "--workers", str(workers), "--jmx", jmx, "--output", str(out), "-q")  # fmt: skip
    return next(out.iterdir())


def one_trace(name: str, log: Path, snap: Path | None, cluster: LocalHdfs, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from hdfs_native import Client

    tag = name.replace("/", "-")
    here = work / tag
    here.mkdir(parents=True, exist_ok=True)
    snap_args = ["--snapshot", str(snap)] if snap else []
    cli("schedule-from-trace", str(log), *snap_args, "-o", str(here / "verbatim"))
    cli("model", "--audit", str(log), *snap_args, "--types", "auto", "--seed", "1", "-o", str(here / "profile.json"))
    cli("generate", str(here / "profile.json"), "--seed", "1", "-o", str(here / "synthetic"))
    client = Client(cluster.url)
    runs = {}
    for side in ("verbatim", "synthetic"):
        base = f"{BASE}/{tag}/{side}"
        runs[side] = run(here / side, f"{cluster.url}{base}?mkdirs=native", cluster.jmx_servlet_url, here / f"runs-{side}",
                         args.time_scale, args.workers)  # fmt: skip
        client.delete(base, recursive=True)
    done = cli("fidelity", str(runs["verbatim"]), str(runs["synthetic"]), "--json")
    result = json.loads(done.stdout)
    total = max(result["all"]["n_verbatim"], 1)
    result["by_command"] = {
        c: row for c, row in result["by_command"].items() if row["n_verbatim"] / total >= args.min_share
    }
    result["trace"] = name
    return result


def fmt(x: float | None, d: int = 3) -> str:
    return "-" if x is None else f"{x:.{d}g}"


def ci(row: dict[str, Any], key: str) -> str:
    got = row.get(f"{key}_ci")
    return fmt(row.get(key)) + ("" if not got else f" [{got[0]:.2f},{got[1]:.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--sandbox", default=str(SANDBOX))
    parser.add_argument("--no-sandbox", action="store_true")
    parser.add_argument("--time-scale", type=float, default=0.5)
    parser.add_argument("--min-share", type=float, default=0.01)
    parser.add_argument("--workers", type=int, default=2, help="worker processes of both runs (the same client)")
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-fid-"))
    cluster = LocalHdfs(LocalHdfsConfig(workdir=work / "hdfs", heap=args.heap, startup_timeout_s=300.0))
    print(f"# starting a managed HDFS in {work / 'hdfs'}; load average {os.getloadavg()[0]:.2f}", flush=True)
    cluster.up()
    results = []
    try:
        for name, log, snap in traces(args.paths, None if args.no_sandbox else args.sandbox):
            t0 = time.monotonic()
            results.append(one_trace(name, log, snap, cluster, work, args))
            print(f"# {name}: {time.monotonic() - t0:.0f} s", flush=True)
    finally:
        cluster.down()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        rep, server = r["verbatim_replay"], r["server"]
        print(f"\n{r['trace']}: verbatim lateness p99 {fmt(rep['lateness_p99_ms'])} ms, outcomes as in the trace "
              f"{fmt(rep['outcome_matches_trace'], 4)}, as predicted {fmt(rep['outcome_matches_prediction'], 4)}; "
              + "; ".join(f"{k} {fmt(v['verbatim'])} vs {fmt(v['synthetic'])}" for k, v in server.items()
                          if k.startswith("rpc_") and k.endswith("_ms")))  # fmt: skip
        print(f"  {'command':16s} {'n verb':>7s} {'n syn':>7s} {'thr ratio':>9s} {'KS':>6s} {'p50 ratio [95% CI]':>22s} "
              f"{'p99 ratio [95% CI]':>22s}")  # fmt: skip
        for c, row in [*sorted(r["by_command"].items()), ("all", r["all"])]:
            print(f"  {c:16s} {row['n_verbatim']:7d} {row['n_synthetic']:7d} {fmt(row['throughput_ratio']):>9s} "
                  f"{fmt(row['ks_service'], 2):>6s} {ci(row, 'service_p50_ratio'):>22s} {ci(row, 'service_p99_ratio'):>22s}")


if __name__ == "__main__":
    main()
