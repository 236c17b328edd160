"""Fidelity of a generated Yahoo schedule to the Yahoo profile, per type and distribution.

For each type and each generated distribution (C, G, H, F, D) prints the KS distance to the
profile's (window-corrected, see ``mimesisbench.synth.kstats``), the sample size and the 95%
sampling noise of a KS distance at that size (1.36 / sqrt(n)); then type weights and
files-at-depth shares as absolute errors in percentage points. Bars: KS 0.02, 0.5 pp.

    .venv/bin/python bench/bench_fidelity_yahoo.py [--profile ZIP] [--seed 1] [--duration 30d] [--json OUT]
        [--no-calibration] [--no-gap-balance] [--types 3,19] [--scale-type J=X]...

``--types`` and ``--scale-type`` (as in ``generate``) give the rare types samples large enough
for their sampling noise to fall below the bar, e.g. ``--types 3,19,25 --scale-type 3=10
--scale-type 19=50 --scale-type 25=40 --duration 30d`` (type 19 creates 112 files otherwise).

With the profile's own 10-minute window most of Yahoo's creates (C_j means of 0.06-70 s for
round(w_j n) files each) and long spans (H_j means up to 45 min) lie past the window's end;
``--duration 30d`` generates a window long enough for the generator's fidelity to show free
of that cut.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

from mimesisbench.profile.io import profile_hash
from mimesisbench.schedule import read_schedule
from mimesisbench.synth.fidelity import FEATURES, validate_profile
from mimesisbench.synth.legacy2014 import import_2014
from mimesisbench.synth.namespace import tree_from_paths
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.schedule import generate_schedule
from mimesisbench.synth.store import manifest_for, write_schedule
from mimesisbench.units import parse_duration_ms

YAHOO = Path(__file__).resolve().parents[2] / "shared" / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"
KS_BAR = 0.02
PP_BAR = 0.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", type=Path, default=YAHOO)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", default=None, help="window length (20s, 10m, 30d...); default the profile's")
    ap.add_argument("--json", type=Path, default=None, help="write the full report here")
    ap.add_argument("--no-calibration", action="store_true", help="import without access_gap_sampling tables")
    ap.add_argument("--no-gap-balance", action="store_true", help="pre-existing files draw from F_j (synth.balance)")
    ap.add_argument("--types", default=None, help="keep only these types, e.g. 3,19")
    ap.add_argument("--scale-type", action="append", default=[], metavar="J=X", help="files of type J times X")
    args = ap.parse_args()

    profile, dirs = import_2014(args.profile, calibrate=not args.no_calibration)
    t0 = time.perf_counter()
    duration = None if args.duration is None else parse_duration_ms(args.duration)
    s = generate_schedule(profile, GenerateOptions(
        duration_ms=duration,
        balance_gaps=not args.no_gap_balance,
        types=None if args.types is None else tuple(int(t) for t in args.types.split(",")),
        scale_types=tuple((int(j), float(x)) for j, x in (item.split("=") for item in args.scale_type)),
    ), args.seed, tree_from_paths(dirs))
    print(f"{s.events:,} operations, window {s.window_ms:,} ms")
    with tempfile.TemporaryDirectory() as tmp:
        out = write_schedule(s, Path(tmp) / "s", manifest_for(s, profile_hash=profile_hash(profile), seed_source="given"))
        del s
        report = validate_profile(read_schedule(out), profile)
    print(f"generated and validated in {time.perf_counter() - t0:.1f} s")

    keys = [k for k in FEATURES if k != "ks_popularity"]
    header = f"{'type':>4} " + " ".join(f"{k.removeprefix('ks_')[:16]:>30}" for k in keys)
    print(header)
    over: list[tuple[str, str, float, int, float]] = []
    worst = 0.0
    for tid, row in report["types"].items():
        cells = []
        for k in keys:
            v, n = row[k], row["n_" + k.removeprefix("ks_")]
            if v is None:
                cells.append(f"{'-':>30}")
                continue
            noise = 1.36 / math.sqrt(n) if n else float("inf")
            worst = max(worst, v)
            mark = "*" if v > KS_BAR else " "
            cells.append(f"{v:7.4f}{mark} n={n:>9,} ±{noise:.4f}".rjust(30))
            if v > KS_BAR:
                over.append((tid, k, v, n, noise))
        print(f"{tid:>4} " + " ".join(cells))
    print()
    print(f"max per-type KS: {worst:.4f} (bar {KS_BAR}); {len(over)} of the per-type distances exceed the bar")
    beyond_noise = [o for o in over if o[2] > KS_BAR + o[4]]
    print(f"  of which {len(beyond_noise)} exceed bar + sampling noise")
    for tid, k, v, n, noise in sorted(over, key=lambda o: -o[2])[:15]:
        print(f"    type {tid:>2} {k:<24} {v:.4f}  n={n:,}  noise ±{noise:.4f}")
    split = [(tid, row) for tid, row in report["types"].items() if "interarrival_by_population" in row]
    if split:
        print(
            "F_j by population (pre-existing files: stopping-time rule, drawing from the balanced law unless"
            " --no-gap-balance; created files: closing rule, spans exact; floor: the least KS any pre-existing"
            " gaps could give the pool):"
        )
        bound = []
        for tid, row in split:
            by_pop = row["interarrival_by_population"]
            pre, cre = by_pop["pre_existing"], by_pop["created"]
            share = cre["n"] / max(pre["n"] + cre["n"], 1)
            flag = "*" if (row["ks_interarrival"] or 0.0) > KS_BAR else " "
            if (by_pop["floor"] or 0.0) > KS_BAR:
                bound.append(tid)
            print(
                f"  type {tid:>2}{flag} all {row['ks_interarrival']}  floor {by_pop['floor']}  pre-existing {pre['ks']}"
                f" (n={pre['n']:,})  created {cre['ks']} (n={cre['n']:,}, {share:.0%} of the gaps)"
            )
        reach = bound or "none"
        print(f"types whose floor exceeds the bar (out of reach while created files keep exact spans): {reach}")
    for key in ("ks_popularity", "ks_interarrival", "ks_span", "ks_activation", "ks_delete", "ks_create_interarrival", "ks_depth"):
        print(f"pooled {key}: {report.get(key)}")
    tw, dp = report["type_weight_max_abs_error_pp"], report["depth_share_max_abs_error_pp"]
    print(f"type weights: max abs error {tw} pp (bar {PP_BAR}) {'PASS' if tw is not None and tw <= PP_BAR else 'FAIL'}")
    print(f"files at depth: max abs error {dp} pp (bar {PP_BAR}) {'PASS' if dp <= PP_BAR else 'FAIL'}")
    print(f"creates inside the window: {report['creates_in_window_share']}")
    for note in report["notes"]:
        print(f"note: {note}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
