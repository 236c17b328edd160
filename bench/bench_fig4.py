"""The paper's Fig. 4 pair at c = 0 on a fresh managed HDFS: the read-mostly type against the
write-heavy one, as fast as possible, through the native HDFS lane and the Python one:

    .venv/bin/python bench/bench_fig4.py [--duration 3000s] [--repeat 2] [--lanes native,python]

Types 2 (read-mostly) and 1 (write-heavy) of the built-in profile (made from the paper's Table 4)
are generated apart (``--duration`` of the profile's time, seed 7) and each replayed with
``--as-fast-as-possible`` (one worker, 64 operations in flight), after a warm-up of the NameNode
(``micro open`` and ``micro create``: a cold JVM's first second is several times slower),
alternating the types. Prints each run's throughput, the NameNode's cores and CPU per operation
and the client's, then the read-mostly / write-heavy ratio per lane kind beside the paper's 8.2x
(53,233 vs 6,453 ops/s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import MicroConfig
from mimesisbench.native import ENV_SWITCH

PAPER = 53_233 / 6_453


def mimesis(*args: str, native: bool = True) -> None:
    env = {**os.environ, ENV_SWITCH: "1" if native else "0"}
    done = subprocess.run([sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"mimesisbench {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="3000s")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lanes", default="native,python")
    ap.add_argument("--heap", default="2g")
    a = ap.parse_args()
    profile = Path(__file__).resolve().parents[1] / "src" / "mimesisbench" / "data" / "demo_profile.json"
    with fresh_cluster("mb-fig4-", a.heap) as (work, cluster):
        for t in (1, 2):
            mimesis("generate", str(profile), "--types", str(t), "--duration", a.duration, "--seed", "7", "-o",
                    str(work / f"type{t}"))
        run_micro(MicroConfig(op="open", files=50_000, backend=f"{cluster.url}/warm-open", concurrency=64))
        run_micro(MicroConfig(op="create", files=20_000, backend=f"{cluster.url}/warm-create", concurrency=64))
        rates: dict[tuple[str, int], list[float]] = {}
        for r in range(a.repeat):
            for lanes in [x for x in a.lanes.split(",") if x]:
                for t in (2, 1) if r % 2 == 0 else (1, 2):
                    out = work / f"runs-{lanes}-{t}-{r}"
                    mimesis("run", str(work / f"type{t}"), "-b", f"{cluster.url}/fig4-{lanes}-{t}-{r}", "--workers", "1",
                            "--concurrency", "64", "--as-fast-as-possible", "--hdfs-workdir", str(cluster.workdir),
                            "-o", str(out), "-q", native=lanes == "native")
                    run_dir = next(out.iterdir())
                    s = json.loads((run_dir / "summary.json").read_text())
                    m = json.loads((run_dir / "manifest.json").read_text())
                    c = s["cost"]
                    nn = c["server"].get("namenode", {})
                    rate = float(s["throughput_ops_per_s"])
                    rates.setdefault((lanes, t), []).append(rate)
                    print(f"repeat {r + 1} {lanes:6s} ({m['lane_impl'][0]}) type {t}: {s['operations_issued']:,} ops, "
                          f"{rate:9,.0f} ops/s, {s['operations_failed']} failed; NameNode {nn.get('cores', 0):.2f} cores, "
                          f"{nn.get('cpu_us_per_op', 0):.0f} us/op; client {c['client_cpu_us_per_op']:.0f} us/op; "
                          f"host busy {c['host_busy']:.2f}; bottleneck {c['bottleneck']}", flush=True)
        for lanes in [x for x in a.lanes.split(",") if x]:
            ratios = [r2 / r1 for r2, r1 in zip(rates[(lanes, 2)], rates[(lanes, 1)])]
            print(f"{lanes}: read-mostly / write-heavy at c = 0: {min(ratios):.2f}-{max(ratios):.2f}x "
                  f"(paper {PAPER:.1f}x)")


if __name__ == "__main__":
    main()
