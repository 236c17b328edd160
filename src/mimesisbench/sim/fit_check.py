"""Where a calibration's fit misses its own measurements: the first check of a prediction.

The fit (``sim.fit``) reproduces some figures of each operation's three loads by construction (the
light load's throughput, a write's heavy one, every heavy load's p99, the NameNode's CPU where its
split into work and wake-ups has a solution) and leaves the others to the model. A figure that the
model misses on the very loads it was fitted to is one that no prediction from the calibration can
be trusted on: ``simnn calibrate``, ``merge`` and ``show`` list them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the validation bar (issue 17): a prediction within this share of the measurement
FIT_BAR = 0.15
#: the figures checked: a load's throughput and its p99, what the bar is about, and the NameNode's
#: CPU per operation, which the fit splits into work, wake-ups and parks (calibrations made before
#: the report had it lack it)
CHECKED = (("ops_per_s", "throughput"), ("p99_ms", "p99"), ("server_cpu_us", "NameNode CPU"))
LOADS = ("light", "middle", "heavy")


@dataclass(frozen=True)
class FitMiss:
    """One figure of one calibration load that the fitted model misses by more than the bar."""

    op: str
    load: str  # light, middle or heavy
    clients: int
    figure: str  # throughput, p99 or NameNode CPU
    measured: float
    fitted: float

    @property
    def error(self) -> float:
        """The model's relative error against the measurement (+0.26: 26 % over)."""
        return self.fitted / self.measured - 1.0

    def describe(self) -> str:
        return f"{self.op} at {self.clients} client{'' if self.clients == 1 else 's'}: {self.figure} {self.error:+.0%}"


def fit_misses(report: Mapping[str, Mapping[str, Any]], bar: float = FIT_BAR) -> list[FitMiss]:
    """Every checked figure of the fit's report (``source["fit"]`` of a calibration: per operation,
    ``{load}_measured_{key}`` and ``{load}_fitted_{key}``) whose fitted value is off its
    measurement by more than ``bar``, in the report's order. Loads or figures a report lacks (older
    calibrations, a merge's) are skipped, as are measurements that are not positive."""
    misses = []
    for op, row in report.items():
        for load in LOADS:
            if f"{load}_clients" not in row:
                continue
            for key, figure in CHECKED:
                measured, fitted = row.get(f"{load}_measured_{key}"), row.get(f"{load}_fitted_{key}")
                if not isinstance(measured, int | float) or not isinstance(fitted, int | float) or measured <= 0:
                    continue
                miss = FitMiss(op, load, int(row[f"{load}_clients"]), figure, float(measured), float(fitted))
                if abs(miss.error) > bar:
                    misses.append(miss)
    return misses
