"""Fidelity of fitted profiles to real audit logs: fit -> generate -> ``validate --trace``, per trace.

For every ``*.audit.log`` in the DIRs (or named directly), with its ``<name>.fsimage.tsv`` as the
snapshot when there is one, and the sandbox trace (``--sandbox``, no snapshot): runs the CLI as a
user would

    mimesisbench model --audit LOG [--snapshot TSV] --types auto --seed 1 -o PROFILE
    mimesisbench generate PROFILE --seed 1 -o SCHEDULE
    mimesisbench validate SCHEDULE --trace LOG --json

and prints one table, a row per trace, with the issue's bars and a pass/fail mark per cell:

==========================  ====  ==================================================================
figure                      bar   what
==========================  ====  ==================================================================
opmix_max_abs_error         0.01  largest |share in trace - share in schedule| over the commands
ks_popularity               0.04  accesses per object, over all objects (files and directories)
worst command popularity    0.04  largest per-command ``ks_popularity`` among commands with >= 1 %
                                  of the trace
ks_interarrival             0.05  gaps between consecutive accesses of one object, all objects
worst command interarrival  0.05  largest per-command ``ks_interarrival`` (same commands)
coverage                    0.99  share of the trace's operations whose command the profile models
==========================  ====  ==================================================================

Under each row, ``noise`` gives the KS figures' sampling noise floor, estimated from the trace
alone (``noise_floor.py``: the KS expected between the trace and an independent sample of its
size from its own law; for the worst commands, of that command). A figure near its floor says
nothing about the model, and no model can meet a bar below the floor.

A figure the report leaves empty (``null``: nothing to compare, e.g. a schedule without one
listing) fails its bar when the trace has something to compare. A step that fails (non-zero
exit) marks its row as an error with the step's last message; the script then exits 1.

Usage::

    python bench/bench_fidelity_traces.py DIR_OR_LOG... [--sandbox LOG | --no-sandbox] [--types auto]
        [--seed 1] [--generate-seeds 1] [--work DIR] [--json]

``--generate-seeds N`` fits each trace once and generates and validates N schedules (seeds
``--seed`` to ``--seed`` + N - 1): each figure is then the mean over them, the worst command
the first seed's, and the bars are judged on the means.

``--json`` prints the rows (figures, bars, passes, timings) as JSON instead of the table.
``--work DIR`` keeps the profiles, schedules and reports there (default: a temporary directory,
removed at the end).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SANDBOX = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "spark-hive-sandbox-audit.log"
COMMAND_SHARE_FLOOR = 0.01
# figure -> (bar, higher is better)
BARS: dict[str, tuple[float, bool]] = {
    "opmix_max_abs_error": (0.01, False),
    "ks_popularity": (0.04, False),
    "worst_command_ks_popularity": (0.04, False),
    "ks_interarrival": (0.05, False),
    "worst_command_ks_interarrival": (0.05, False),
    "coverage": (0.99, True),
}
STEP_TIMEOUT_S = 3600.0


@dataclass
class Row:
    """One trace's figures (``None``: not reported), which command is worst, and how each cell fares."""

    trace: str
    audit: str
    snapshot: str | None
    figures: dict[str, float | None] = field(default_factory=dict)
    worst_command: dict[str, str | None] = field(default_factory=dict)
    passes: dict[str, bool] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    noise: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Trace:
    name: str
    audit: Path
    snapshot: Path | None


def find_traces(inputs: Sequence[Path], sandbox: Path | None) -> list[Trace]:
    """The ``*.audit.log`` files named or found in the inputs (sorted), then the sandbox trace."""
    logs: list[Path] = []
    for item in inputs:
        if item.is_dir():
            logs += sorted(item.glob("*.audit.log"))
        elif item.is_file():
            logs.append(item)
        else:
            raise SystemExit(f"bench_fidelity_traces: no such file or directory: {item}")
    traces = []
    for log in logs:
        name = log.name.removesuffix(".audit.log")
        snapshot = log.with_name(f"{name}.fsimage.tsv")
        traces.append(Trace(name, log, snapshot if snapshot.is_file() else None))
    if sandbox is not None:
        if not sandbox.is_file():
            raise SystemExit(f"bench_fidelity_traces: no sandbox trace at {sandbox} (use --no-sandbox)")
        traces.append(Trace(sandbox.name.removesuffix(".log"), sandbox, None))
    return traces


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _coverage(report: dict[str, Any]) -> float | None:
    value = report.get("coverage")
    if isinstance(value, dict):
        return _number(value.get("modelled_share"))
    return _number(value)


def _has_trace_side(report: dict[str, Any], key: str) -> bool:
    counts = report.get(f"n_{key}")
    return not isinstance(counts, dict) or bool(counts.get("trace"))


def figures_of(report: dict[str, Any]) -> tuple[dict[str, float | None], dict[str, str | None], dict[str, bool]]:
    """The table's figures from a ``validate --json`` report, the worst commands, and the pass marks."""
    figures: dict[str, float | None] = {
        "opmix_max_abs_error": _number(report.get("opmix_max_abs_error")),
        "ks_popularity": _number(report.get("ks_popularity")),
        "ks_interarrival": _number(report.get("ks_interarrival")),
        "coverage": _coverage(report),
    }
    expected = {  # a None figure fails when the trace side had something to compare
        "opmix_max_abs_error": True,
        "ks_popularity": _has_trace_side(report, "popularity"),
        "ks_interarrival": _has_trace_side(report, "interarrival"),
        "coverage": True,
    }
    worst: dict[str, str | None] = {}
    missing: dict[str, bool] = {}
    by_command = report.get("by_command") or {}
    for figure, key, count_key in (
        ("worst_command_ks_popularity", "ks_popularity", "n_objects"),
        ("worst_command_ks_interarrival", "ks_interarrival", "n_gaps"),
    ):
        scored: list[tuple[float, str]] = []
        unscored: list[str] = []  # commands the trace has but the report could not compare
        for command, entry in sorted(by_command.items()):
            if (_number(entry.get("trace_share")) or 0.0) < COMMAND_SHARE_FLOOR:
                continue
            value = _number(entry.get(key))
            counts = entry.get(count_key)
            if value is not None:
                scored.append((value, command))
            elif not isinstance(counts, dict) or counts.get("trace", 0) >= 2:
                # the trace had enough to compare (a KS needs two samples a side) and the
                # schedule did not: the model lost it. One gap in the trace is no figure at all
                unscored.append(command)
        top = max(scored, default=None)
        figures[figure] = None if top is None or unscored else top[0]
        worst[figure] = unscored[0] if unscored else (None if top is None else top[1])
        missing[figure] = bool(unscored)
        expected[figure] = bool(unscored) or top is not None
    passes: dict[str, bool] = {}
    for figure in BARS:
        value = figures.get(figure)
        if missing.get(figure):
            passes[figure] = False
        elif value is None:
            passes[figure] = not expected[figure]
        else:
            passes[figure] = meets_bar(figure, value)
    return figures, worst, passes


def meets_bar(figure: str, value: float) -> bool:
    """Whether ``value`` meets ``figure``'s bar (``BARS``)."""
    bar, higher_is_better = BARS[figure]
    return value >= bar if higher_is_better else value <= bar + 1e-12


def _cli(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mimesisbench", *args],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _mean(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None) / len(values)


def mean_figures(
    reports: Sequence[dict[str, Any]],
) -> tuple[dict[str, float | None], dict[str, str | None], dict[str, bool]]:
    """``figures_of`` over several generation seeds' reports: each figure's mean (None when a seed
    has none), the first seed's worst commands, and the bars judged on the means."""
    per_seed = [figures_of(report) for report in reports]
    figures = {key: _mean([f[key] for f, _, _ in per_seed]) for key in per_seed[0][0]}
    passes: dict[str, bool] = {}
    for figure in BARS:
        value = figures.get(figure)
        if value is None:
            passes[figure] = all(p.get(figure, False) for _, _, p in per_seed)
        else:
            passes[figure] = meets_bar(figure, value)
    return figures, per_seed[0][1], passes


def _step(row: Row, step: str, args: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
    """One CLI step, timed into ``row``; None (and ``row.error`` set) when it fails."""
    started = time.perf_counter()
    try:
        done = _cli(args)
    except subprocess.TimeoutExpired:
        row.error = f"{step}: no answer within {STEP_TIMEOUT_S:.0f} s"
        return None
    row.seconds[step] = round(row.seconds.get(step, 0.0) + time.perf_counter() - started, 3)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        row.error = f"{step} exit {done.returncode}: {last}"
        return None
    return done


def measure(trace: Trace, work: Path, types: str, seed: int, generate_seeds: int = 1) -> Row:
    """Fit ``trace`` once, then generate and validate with ``generate_seeds`` seeds from ``seed``
    on: the row holds the figures' means over them."""
    row = Row(trace.name, str(trace.audit), None if trace.snapshot is None else str(trace.snapshot))
    profile = work / f"{trace.name}.profile.json"
    model = ["model", "--audit", str(trace.audit), "--types", types, "--seed", str(seed), "-o", str(profile)]
    if trace.snapshot is not None:
        model += ["--snapshot", str(trace.snapshot)]
    if _step(row, "model", model) is None:
        return row
    reports = []
    for k in range(generate_seeds):
        suffix = "" if k == 0 else f".seed{seed + k}"
        schedule = work / f"{trace.name}.sched{suffix}"
        if _step(row, "generate", ["generate", str(profile), "--seed", str(seed + k), "-o", str(schedule)]) is None:
            return row
        done = _step(row, "validate", ["validate", str(schedule), "--trace", str(trace.audit), "--json"])
        if done is None:
            return row
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError as exc:
            row.error = f"validate printed no JSON: {exc}"
            return row
        (work / f"{trace.name}.validate{suffix}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        reports.append(report)
    row.figures, row.worst_command, row.passes = mean_figures(reports)
    row.noise = _noise(trace.audit, row.worst_command, seed)
    return row


#: figure -> the noise floor's key (``noise_floor.noise_floors``; the worst command's, per command)
NOISE_OF = {
    "ks_popularity": "ks_popularity",
    "ks_interarrival": "ks_interarrival",
    "worst_command_ks_popularity": "popularity",
    "worst_command_ks_interarrival": "interarrival",
}


def _noise(log: Path, worst: dict[str, str | None], seed: int) -> dict[str, float | None]:
    from noise_floor import noise_floors

    commands = sorted({c for f, c in worst.items() if c and f.startswith("worst_command")})
    floors = noise_floors(log, commands, seed)
    out: dict[str, float | None] = {}
    for figure, key in NOISE_OF.items():
        command = worst.get(figure)
        if figure.startswith("worst_command"):
            out[figure] = floors.get(f"cmd:{command}:{key}") if command else None
        else:
            out[figure] = floors.get(key)
    return out


COLUMNS = (
    ("opmix_max_abs_error", "opmix"),
    ("ks_popularity", "ks_pop"),
    ("worst_command_ks_popularity", "cmd_pop(worst)"),
    ("ks_interarrival", "ks_ia"),
    ("worst_command_ks_interarrival", "cmd_ia(worst)"),
    ("coverage", "coverage"),
)


def _cell(row: Row, figure: str) -> str:
    value = row.figures.get(figure)
    mark = "ok" if row.passes.get(figure) else "FAIL"
    text = "-" if value is None else f"{value:.4f}"
    worst = row.worst_command.get(figure)
    if worst:
        text += f" {worst}"
    return f"{text} {mark}"


def _noise_cell(row: Row, figure: str) -> str:
    value = row.noise.get(figure)
    return "" if value is None else f"{value:.4f}"


def render(rows: Sequence[Row]) -> str:
    name_width = max([len("trace"), *(len(r.trace) for r in rows)])
    cells = [[_cell(r, figure) for figure, _ in COLUMNS] if r.error is None else [] for r in rows]
    noise = [[_noise_cell(r, figure) for figure, _ in COLUMNS] for r in rows]
    widths = [max([len(title), *(len(c[i]) for c in cells if c)]) for i, (_, title) in enumerate(COLUMNS)]
    head = "  ".join([f"{'trace':<{name_width}}", *(f"{t:<{w}}" for (_, t), w in zip(COLUMNS, widths, strict=True))])
    bars = "  ".join(
        [f"{'bar':<{name_width}}"]
        + [
            f"{('>= ' if BARS[f][1] else '<= ') + format(BARS[f][0], 'g'):<{w}}"
            for (f, _), w in zip(COLUMNS, widths, strict=True)
        ]
    )
    lines = [head, bars]
    for row, cell, floor in zip(rows, cells, noise, strict=True):
        if row.error is not None:
            lines.append(f"{row.trace:<{name_width}}  ERROR {row.error}")
            continue
        lines.append("  ".join([f"{row.trace:<{name_width}}", *(f"{c:<{w}}" for c, w in zip(cell, widths, strict=True))]))
        if any(floor):
            lines.append("  ".join([f"{'  noise':<{name_width}}", *(f"{c:<{w}}" for c, w in zip(floor, widths, strict=True))]))
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", type=Path, help="directories with *.audit.log (+ .fsimage.tsv) or logs")
    ap.add_argument("--sandbox", type=Path, default=SANDBOX, help="the sandbox trace (no snapshot)")
    ap.add_argument("--no-sandbox", action="store_true", help="leave the sandbox trace out")
    ap.add_argument("--types", default="auto", help="model --types (default auto)")
    ap.add_argument("--seed", type=int, default=1, help="model and (first) generate --seed")
    ap.add_argument("--generate-seeds", type=int, default=1,
                    help="generate and validate with this many seeds from --seed on; the table gives the means")
    ap.add_argument("--work", type=Path, default=None, help="keep profiles, schedules and reports here")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    traces = find_traces(args.inputs, None if args.no_sandbox else args.sandbox)
    if not traces:
        print("bench_fidelity_traces: no traces (give directories with *.audit.log)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fidelity-traces-") as scratch:
        work = args.work.resolve() if args.work is not None else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        rows = []
        for trace in traces:
            print(f"== {trace.name}", file=sys.stderr, flush=True)
            rows.append(measure(trace, work, args.types, args.seed, args.generate_seeds))
    if args.json:
        print(json.dumps({"bars": {k: v[0] for k, v in BARS.items()}, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(render(rows))
    return 1 if any(r.error is not None for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
