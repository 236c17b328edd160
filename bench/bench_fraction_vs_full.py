"""Does a 2^(6-3) fraction find the factors a full 2^6 finds? The thesis' comparison (Saif, ch. 6),
on six factors of our own, as two experiments run one after the other on the same system:

    python bench/bench_fraction_vs_full.py [--base /dev/shm/mb-frac] [--hdfs] [--response latency_mean_ms]

The six factors (the first level is -1):

    A rate        run option       1000/s, 3000/s     (the absolute offered rate)
    B workers     run option       1, 2
    C concurrency run option       2, 16              (lanes per worker)
    D flat        generate option  false, true        (a flat namespace instead of the profile's tree)
    E scale_files generate option  0.5, 1.0           (the namespace's size)
    F span_scale  generate option  0.5, 1.0           (the files' access spans)

Every schedule is the built-in profile (both types) generated at c = 0.1 for 10 s (about 7,000
operations), then run at the absolute rate A.

The full design has 64 runs, the fraction (D=AB, E=AC, F=BC: resolution III, each main effect
aliased with two-factor interactions) 8; both unreplicated (Lenth's method for significance), in
random orders from their seeds. On a posix base (default: below /dev/shm) every run starts from a
copy of phase 1's tree; with --hdfs on a managed HDFS, every run from its schedule's checkpoint.
Prints both designs' main effects ranked by the share of variation they explain, the fraction's
alias of each, and whether the top three agree; the wall time of each experiment.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path

from mimesisbench.analysis.effects import TwoLevelAnalysis
from mimesisbench.analysis.runs_table import analyze_runs, read_runs_csv
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.study.experiment_run import RESULTS, run_experiment

FACTORS = """
[[factors]]
name = "rate"
kind = "run"
option = "rate"
levels = ["1000/s", "3000/s"]

[[factors]]
name = "workers"
kind = "run"
option = "workers"
levels = [1, 2]

[[factors]]
name = "concurrency"
kind = "run"
option = "concurrency"
levels = [2, 16]

[[factors]]
name = "flat"
kind = "generate"
option = "flat"
levels = [false, true]

[[factors]]
name = "scale_files"
kind = "generate"
option = "scale_files"
levels = [0.5, 1.0]

[[factors]]
name = "span_scale"
kind = "generate"
option = "span_scale"
levels = [0.5, 1.0]
"""
NAMES = ("rate", "workers", "concurrency", "flat", "scale_files", "span_scale")


def experiment_text(name: str, system: str, design: str, response: str, seed: int, duration: str) -> str:
    return f"""
name = "{name}"
seed = {seed}
responses = ["{response}", "throughput_ops_per_s"]
profile = "demo"
{system}

[generate]
duration = "{duration}"
time_scale = 0.1
seed = 4
{FACTORS}
[design]
{design}
"""


def main_effects(analysis: TwoLevelAnalysis) -> list[tuple[str, float, float, bool, tuple[str, ...]]]:
    """The six main effects: factor, 2q, share of variation, significant, aliases."""
    by_factor = {analysis.factors[e.name]: e for e in analysis.effects if e.name in analysis.factors}
    rows = [(f, by_factor[f].effect, by_factor[f].variation_explained, by_factor[f].significant, by_factor[f].aliases)
            for f in NAMES if f in by_factor]
    return sorted(rows, key=lambda r: -r[2])


def say(name: str, text: str) -> None:
    print(f"  [{name}] {text}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, default=None, help="The posix base (default: a new folder in /dev/shm).")
    ap.add_argument("--hdfs", action="store_true", help="On a managed HDFS instead of a posix base.")
    ap.add_argument("--response", default="latency_mean_ms")
    ap.add_argument("--duration", default="10s", help="Generate duration of each schedule.")
    ap.add_argument("--out", type=Path, default=None, help="Where the two experiment directories go (default: a temp dir).")
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="mb-frac-"))
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    base = args.base or Path(tempfile.mkdtemp(prefix="mb-frac-base-", dir=shm))
    system = f'[managed_hdfs]\nworkdir = "{root / "hdfs"}"\nheap = "1g"' if args.hdfs else f'backend = "posix:{base / "tree"}"'

    def run(config: RunConfig) -> Path:
        return run_benchmark(config, console=None, show_progress=False).run_dir

    analyses: dict[str, TwoLevelAnalysis] = {}
    walls: dict[str, float] = {}
    try:
        for name, design, seed in (("full", 'kind = "full"', 11), ("fraction", 'kind = "fractional"\ngenerators = "D=AB E=AC F=BC"', 12)):
            folder = root / name
            folder.mkdir(parents=True, exist_ok=True)
            file = folder / "experiment.toml"
            file.write_text(experiment_text(name, system.replace(str(base / "tree"), str(base / name)), design,
                                            args.response, seed, args.duration))
            t0 = time.perf_counter()
            run_experiment(file, folder / "exp", run, partial(say, name))
            walls[name] = time.perf_counter() - t0
            result = analyze_runs(read_runs_csv(folder / "exp" / RESULTS), args.response, list(NAMES))
            assert isinstance(result, TwoLevelAnalysis)
            analyses[name] = result
    finally:
        if args.base is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\nresponse: {args.response}; experiments in {root}")
    tops = {}
    for name, analysis in analyses.items():
        print(f"\n{name}: {len(read_runs_csv(root / name / 'exp' / RESULTS))} runs in {walls[name]:.0f} s; main effects "
              "by share of variation")
        print(f"  {'factor':<12} {'effect (2q)':>12} {'variation':>10}  significant  aliases")
        rows = main_effects(analysis)
        for f, effect, share, significant, aliases in rows:
            print(f"  {f:<12} {effect:>12.4g} {share:>10.1%}  {'yes' if significant else 'no':<11}  {' '.join(aliases[:3])}")
        tops[name] = [r[0] for r in rows[:3]]
    same = tops["full"] == tops["fraction"]
    same_set = set(tops["full"]) == set(tops["fraction"])
    print(f"\ntop three: full {tops['full']}, fraction {tops['fraction']}: "
          + ("the same, in the same order" if same else "the same factors" if same_set else "they differ"))
    print(json.dumps({"response": args.response, "top3": tops, "same_order": same, "same_set": same_set,
                      "wall_s": walls, "runs": {"full": 64, "fraction": 8}}))


if __name__ == "__main__":
    main()
