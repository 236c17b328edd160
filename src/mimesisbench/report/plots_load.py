"""Figures of load studies: latency against the load served (every run of an experiment, a line
per design point), and a capacity search (each trial's served rate and latency against the rate
offered, the capacity q, Wu's p_max and the closing check's peak). Drawn from figures the caller
read from the runs; nothing is computed here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mimesisbench.report.style import PALETTE, Rendered, log_axis, new_figure, render

SUSTAINED = "#2e7d32"
NOT_SUSTAINED = "#c62828"


@dataclass(frozen=True)
class LoadPoint:
    """One run: its group (a design point), the rate offered (None: as the schedule gave it), the
    rate served, its mean and p99 latency (ms), and whether a capacity search judged it sustained."""

    group: str
    offered: float | None
    served: float
    latency_mean_ms: float | None
    latency_p99_ms: float | None
    sustained: bool | None = None


def latency_load_figure(points: Sequence[LoadPoint], name: str, title: str) -> Rendered:
    """p99 (filled) and mean (hollow) latency against the throughput served, a colour per group."""
    fig, ax = new_figure()
    groups = list(dict.fromkeys(p.group for p in points))
    for i, group in enumerate(groups):
        mine = sorted((p for p in points if p.group == group), key=lambda p: p.served)
        colour = PALETTE[i % len(PALETTE)]
        x = np.array([p.served for p in mine])
        for values, style, label in (([p.latency_p99_ms for p in mine], "o-", f"{group} p99"),
                                     ([p.latency_mean_ms for p in mine], "o--", f"{group} mean")):
            y = np.array([np.nan if v is None else v for v in values], dtype=float)
            ax.plot(x, y, style, color=colour, label=label,
                    markerfacecolor=colour if "p99" in label else "white", linewidth=1)
    ax.set_xlabel("throughput served (ops/s)")
    ax.set_ylabel("latency from the scheduled time (ms)")
    log_axis(ax, "y")
    if len(groups) <= 8:
        ax.legend(fontsize=7, ncol=2)
    return render(fig, name, title, f"{title}: each run's latency (p99 filled, mean hollow) against the rate it served")


def capacity_figure(points: Sequence[LoadPoint], capacity: float | None, p_max: float | None,
                    check: LoadPoint | None, bound_ms: float | None, name: str, title: str) -> Rendered:
    """Two panels against the rate offered: the rate served (sustained trials green, the others
    red; the diagonal is a server that keeps up), and the latency; q solid, p_max dashed, the
    check's peak as a star beside the bound B."""
    fig, (left, right) = new_figure(1, 2, width=9.0)
    trials = sorted(points, key=lambda p: p.offered or 0.0)
    offered = np.array([p.offered or 0.0 for p in trials])
    colours = [SUSTAINED if p.sustained else NOT_SUSTAINED for p in trials]
    left.scatter(offered, [p.served for p in trials], c=colours, zorder=3)
    top = max([*offered, *(p.served for p in trials), p_max or 0.0, 1.0]) * 1.1
    left.plot([0, top], [0, top], color="#999999", linewidth=0.8, label="served = offered")
    for ax in (left, right):
        if capacity is not None:
            ax.axvline(capacity, color=PALETTE[0], linewidth=1.2, label=f"q = {capacity:,.0f} ops/s")
        if p_max is not None:
            ax.axvline(p_max, color=PALETTE[1], linestyle="--", linewidth=1.2, label=f"p_max = {p_max:,.0f} ops/s")
        ax.set_xlabel("rate offered (ops/s)")
    left.set_ylabel("rate served (ops/s)")
    left.legend(fontsize=7)
    for values, marker in (([p.latency_p99_ms for p in trials], "o"), ([p.latency_mean_ms for p in trials], "s")):
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        right.scatter(offered, y, c=colours, marker=marker, zorder=3)
    if check is not None and check.latency_mean_ms is not None:
        right.scatter([check.offered or 0.0], [check.latency_mean_ms], marker="*", s=160, color=PALETTE[1], zorder=4,
                      label=f"peak at p_max: mean {check.latency_mean_ms:,.1f} ms")
    if bound_ms is not None:
        right.axhline(bound_ms, color="#555555", linestyle=":", label=f"bound B = {bound_ms:,.1f} ms")
    right.set_ylabel("latency (ms): p99 circles, mean squares")
    log_axis(right, "y")
    right.legend(fontsize=7)
    caption = (f"{title}: every trial of the search (green: sustained, red: not), its served rate and latency "
               "against the rate offered")
    return render(fig, name, title, caption)


def client_sweep_figure(clients: Sequence[float], ops_per_s: Sequence[float], latency_ms: Sequence[float],
                        usl: tuple[float, float, float] | None, wu_a: float | None, name: str, title: str) -> Rendered:
    """A client sweep and its models: throughput against clients with the USL's curve
    (``usl``: lambda, sigma, kappa), mean latency against clients with Wu's a x ln x."""
    fig, (left, right) = new_figure(1, 2, width=9.0)
    x = np.asarray(clients, dtype=float)
    grid = np.linspace(max(1.0, float(x.min())), float(x.max()), 200)
    left.scatter(x, ops_per_s, color=PALETTE[0], zorder=3, label="measured")
    if usl is not None:
        lam, sigma, kappa = usl
        left.plot(grid, lam * grid / (1 + sigma * (grid - 1) + kappa * grid * (grid - 1)), color=PALETTE[1],
                  label=f"USL: sigma {sigma:.3g}, kappa {kappa:.3g}")
    left.set_xlabel("clients")
    left.set_ylabel("throughput (ops/s)")
    left.legend(fontsize=7)
    right.scatter(x, latency_ms, color=PALETTE[0], zorder=3, label="measured")
    if wu_a is not None:
        right.plot(grid, wu_a * grid * np.log(grid), color=PALETTE[1], label=f"Wu: {wu_a:.3g} x ln x")
    right.set_xlabel("clients")
    right.set_ylabel("mean latency (ms)")
    right.legend(fontsize=7)
    return render(fig, name, title, f"{title}: every point of the sweep and the models fitted to them")
