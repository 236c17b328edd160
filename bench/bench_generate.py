"""Schedule generation rate and memory on the full Yahoo profile (or any profile).

Prints operations per CPU-second (per core: generation is single-threaded numpy), the peak
Python-tracked memory (numpy buffers included) per scheduled operation, and the write rate.

    .venv/bin/python bench/bench_generate.py [--profile PATH] [--repeat 3] [--seed 1]
        [--scale-files X] [--write DIR] [--op-mix JSON] [--no-calibration] [--duration D] [--no-gap-balance]

PATH is a profile JSON or a 2014 zip (default: ../shared/data/mimesisbench-yahoo-2011/...).
With the native core (``native_core`` in the output; ``MIMESISBENCH_NATIVE=0`` turns it off) the
event keys are sorted by a Rust radix sort whose scratch buffer (8 bytes per operation, while it
sorts) lies outside what tracemalloc sees: add it to ``peak_bytes_per_op`` for a bound.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from mimesisbench.native import native_version
from mimesisbench.profile.io import load_profile, profile_hash
from mimesisbench.synth.namespace import Namespace, tree_from_paths
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import load_tree
from mimesisbench.synth.schedule import generate_schedule
from mimesisbench.synth.store import manifest_for, write_schedule
from mimesisbench.units import parse_duration_ms

YAHOO = Path(__file__).resolve().parents[2] / "shared" / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"


def load(path: Path, calibrate: bool = True):  # type: ignore[no-untyped-def]
    if path.suffix == ".zip":
        from mimesisbench.synth.legacy2014 import import_2014

        profile, dirs = import_2014(path, calibrate=calibrate)
        return profile, tree_from_paths(dirs)
    profile = load_profile(path)
    return profile, load_tree(path, profile)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", type=Path, default=YAHOO)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale-files", type=float, default=1.0)
    ap.add_argument("--write", type=Path, default=None, help="also time writing the schedule here")
    ap.add_argument("--op-mix", default=None, help='override op_mix, JSON, e.g. {"getfileinfo_per_access": 0.5}')
    ap.add_argument("--no-calibration", action="store_true", help="2014 zip: import without access_gap_sampling")
    ap.add_argument("--duration", default=None, help="window (20s, 10m, 1d...); default the profile's")
    ap.add_argument("--no-gap-balance", action="store_true", help="pre-existing files draw from F_j (synth.balance)")
    args = ap.parse_args()

    profile, tree = load(args.profile, calibrate=not args.no_calibration)
    if args.op_mix:
        data = profile.model_dump()
        data["op_mix"].update(json.loads(args.op_mix))
        profile = type(profile).model_validate(data)
    options = GenerateOptions(
        scale_files=args.scale_files,
        duration_ms=None if args.duration is None else parse_duration_ms(args.duration),
        balance_gaps=not args.no_gap_balance,
    )
    tree_: Namespace | None = tree

    cpu, wall, rates = [], [], []
    for i in range(args.repeat):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        s = generate_schedule(profile, options, args.seed + i, tree_)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        rates.append(s.events / cpu[-1])
        print(f"run {i}: {s.events:,} ops, cpu {cpu[-1]:.3f} s, wall {wall[-1]:.3f} s, {s.events / cpu[-1] / 1e6:.2f} M ops/cpu-s")
        del s

    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    s = generate_schedule(profile, options, args.seed, tree_)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak_bytes = peak - base
    result = {
        "profile": str(args.profile),
        "native_core": native_version(),  # the event-key sort is native when present
        "events": s.events,
        "files": int(s.file_type.size),
        "ops_per_cpu_second_best": round(max(rates)),
        "ops_per_cpu_second_median": round(sorted(rates)[len(rates) // 2]),
        "cpu_seconds": [round(c, 3) for c in cpu],
        "wall_seconds": [round(w, 3) for w in wall],
        "peak_traced_bytes": peak_bytes,
        "peak_bytes_per_op": round(peak_bytes / max(s.events, 1), 1),
        "final_bytes_per_op": round(
            (s.time_us.nbytes + s.meta.nbytes + s.target.nbytes) / max(s.events, 1), 1
        ),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "maxrss_before_mb": round(rss_before / 1024, 1),
        "per_op": s.op_counts(),
    }
    with tempfile.TemporaryDirectory(prefix="mimesis-bench-") as tmp:
        out = args.write or Path(tmp)
        c0, w0 = time.process_time(), time.perf_counter()
        write_schedule(s, out / "schedule", manifest_for(s, profile_hash=profile_hash(profile), seed_source="given"))
        result["write_cpu_seconds"] = round(time.process_time() - c0, 3)
        result["write_wall_seconds"] = round(time.perf_counter() - w0, 3)
        result["events_parquet_bytes"] = (out / "schedule" / "events.parquet").stat().st_size
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
