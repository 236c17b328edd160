"""An interference study: the replay alone, the data jobs alone and both together, repeated, in a
random order (seeded), each run on a fresh namespace of its own below the base (``<base>/<run>``:
a replay changes its namespace, so two runs never share one). The table is made by the
``analyze`` callable the caller passes (``analysis.interference``, a peer layer of ``run``).

The study directory holds ``runs/`` (every run directory), ``interference.json`` (the order, the
runs and the table) and is written after every run, so an interrupted study keeps what it ran.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import ConfigError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import RunReport, run_benchmark

STUDY_FILE = "interference.json"
#: the kinds of run of a study, as ``analysis.interference`` names them
KINDS = ("metadata", "data", "both")
#: makes the table from the complete runs' (kind, summary)
Analyze = Callable[[list[tuple[str, dict[str, Any]]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class InterferenceConfig:
    """The runs' common configuration (with its data jobs), repetitions and the order's seed."""

    run: RunConfig
    repeat: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.run.data_jobs:
            raise ConfigError("interfere: give at least one --data-job (the data side of the study)")
        if not 1 <= self.repeat <= 100:
            raise ConfigError(f"--repeat must be 1..100 (got {self.repeat})")


def sub_backend(url: str, name: str) -> str:
    """``url`` with its base directory one level deeper (``posix:/d`` -> ``posix:/d/name``; the
    wrappers in front and an hdfs URL's options are kept)."""
    head, plus, inner = url.rpartition("+")
    path, question, query = inner.partition("?")
    return f"{head}{plus}{path.rstrip('/')}/{name}{question}{query}"


def run_order(repeat: int, seed: int) -> list[tuple[str, int]]:
    """Every (kind, repetition), shuffled with ``seed`` (a drift of the machine over the study
    then spreads over the kinds instead of biasing one)."""
    order = [(kind, rep) for rep in range(repeat) for kind in KINDS]
    permutation = np.random.default_rng(seed).permutation(len(order))
    return [order[i] for i in permutation]


def run_interference(
    config: InterferenceConfig,
    out: Path,
    analyze: Analyze,
    on_run: Callable[[int, int, str, RunReport], None] | None = None,
) -> dict[str, Any]:
    """Run the study into ``out`` (created; must not exist) and return what ``interference.json`` holds."""
    try:
        out.mkdir(parents=True)
    except FileExistsError:
        raise ConfigError(f"interfere: {out} exists; give a new study directory") from None
    except OSError as exc:
        raise ConfigError(f"interfere: cannot create {out}: {exc.strerror}") from None
    order = run_order(config.repeat, config.seed)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    study: dict[str, Any] = {
        "format": "mimesisbench-interference", "version": 1, "repeat": config.repeat, "seed": config.seed,
        "schedule": config.run.schedule, "backend": config.run.backend, "data_jobs": list(config.run.data_jobs),
        "order": [f"{kind}/{rep}" for kind, rep in order], "runs": [], "table": [],
    }
    for i, (kind, rep) in enumerate(order):
        run = replace(
            config.run,
            backend=sub_backend(config.run.backend, f"interfere-{stamp}-{i:03d}-{kind}"),
            out=str(out / "runs"),
            data_jobs=() if kind == "metadata" else config.run.data_jobs,
            replay=kind != "data",
        )
        report = run_benchmark(run, show_progress=False)
        study["runs"].append({"kind": kind, "repetition": rep, "run_dir": str(report.run_dir),
                              "complete": report.complete, "status": report.status})
        if on_run is not None:
            on_run(i, len(order), kind, report)
        complete = [(r["kind"], _summary(Path(r["run_dir"]))) for r in study["runs"] if r["complete"]]
        study["table"] = analyze(complete)
        atomic_write_text(out / STUDY_FILE, json.dumps(study, indent=2) + "\n")
    return study


def _summary(run_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return loaded
