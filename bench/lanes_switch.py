"""``--lanes native|python|both|default`` for the replay benchmarks (bench_posix, bench_adherence).

The switch must be set before any worker process starts (the workers' forkserver keeps the
environment it started with), so ``both`` reruns the calling script once per mode in a fresh
process.
"""

from __future__ import annotations

import os
import subprocess
import sys

from mimesisbench.native import ENV_SWITCH

LANE_MODES = ("native", "python", "both", "default")


def lanes_mode(script: str, argv: list[str], mode: str) -> int | None:
    """``native``/``python``: set the switch and return None (carry on in this process);
    ``both``: run ``script`` once per mode and return the worst exit code; ``default``: None."""
    if mode == "both":
        rest = [a for i, a in enumerate(argv) if a != "--lanes" and (i == 0 or argv[i - 1] != "--lanes")]
        rest = [a for a in rest if not a.startswith("--lanes=")]
        codes = []
        for lanes in ("native", "python"):
            print(f"== lanes: {lanes}", flush=True)
            codes.append(subprocess.run([sys.executable, script, *rest, "--lanes", lanes]).returncode)
        return max(codes)
    if mode in ("native", "python"):
        os.environ[ENV_SWITCH] = "1" if mode == "native" else "0"
    return None
