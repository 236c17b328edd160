"""What each part of the format-2 model buys: fit once per trace, then take parts out of the
profile and see the ``validate --trace`` figures move.

Variants (each generated with the same seed and validated against the same trace):

===================  ===========================================================================
full                 the fitted profile as it is
no_transition_gaps   every chain's per-transition gap laws removed: each gap from F_j (a Markov
                     chain of commands on a plain renewal process, not a semi-Markov process)
iid_commands         no transition gaps, and each access's command drawn independently from the
                     type's command shares (no order: ``next`` rows set to ``share``, ``first`` too)
===================  ===========================================================================

Usage::

    python bench/bench_model_parts.py DIR_OR_LOG... [--sandbox LOG | --no-sandbox] [--seed 1] [--json]

Prints one row per (trace, variant) with the figures of ``bench_fidelity_traces.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fidelity_traces import SANDBOX, figures_of, find_traces  # noqa: E402

Edit = Callable[[dict[str, Any]], None]


def _chains(profile: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["commands"] for t in profile["types"] if t.get("commands")]


def _no_gaps(profile: dict[str, Any]) -> None:
    for chain in _chains(profile):
        chain["gaps"] = {}


def _iid(profile: dict[str, Any]) -> None:
    for chain in _chains(profile):
        chain["gaps"] = {}
        chain["first"] = list(chain["share"])
        chain["next"] = [list(chain["share"]) for _ in chain["commands"]]


VARIANTS: dict[str, Edit | None] = {"full": None, "no_transition_gaps": _no_gaps, "iid_commands": _iid}


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"bench_model_parts: mimesisbench {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--sandbox", type=Path, default=SANDBOX)
    parser.add_argument("--no-sandbox", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    traces = find_traces(args.inputs, None if args.no_sandbox else args.sandbox)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mb-parts-") as tmp:
        work = Path(tmp)
        for trace in traces:
            fitted = work / f"{trace.name}.profile.json"
            snapshot = ["--snapshot", str(trace.snapshot)] if trace.snapshot else []
            _cli("model", "--audit", str(trace.audit), *snapshot, "--types", "auto", "--seed", str(args.seed),
                 "-o", str(fitted))
            for variant, edit in VARIANTS.items():
                profile = json.loads(fitted.read_text())
                if edit is not None:
                    edit(profile)
                path = work / f"{trace.name}.{variant}.json"
                path.write_text(json.dumps(profile))
                schedule = work / f"{trace.name}.{variant}.sched"
                _cli("generate", str(path), "--seed", str(args.seed), "-o", str(schedule))
                report = _cli("validate", str(schedule), "--trace", str(trace.audit), "--json")
                figures, worst, _passes = figures_of(json.loads(report))
                rows.append({"trace": trace.name, "variant": variant, "figures": figures, "worst": worst})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    keys = ["opmix_max_abs_error", "ks_popularity", "worst_command_ks_popularity", "ks_interarrival",
            "worst_command_ks_interarrival"]
    print(f"{'trace':26}{'variant':20}" + "".join(f"{k[:22]:>24}" for k in keys))
    for row in rows:
        cells = "".join(
            f"{'-' if row['figures'].get(k) is None else format(row['figures'][k], '.4f'):>24}" for k in keys
        )
        print(f"{row['trace']:26}{row['variant']:20}{cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
