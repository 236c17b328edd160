"""Latency distributions (HDR-style percentile curves, CDFs) and the throughput-latency knee.

Percentile curves put the percentile q on an axis of -log10(1 - q), so 90, 99, 99.9 ... are
evenly spaced and the tail is as visible as the median; latency is on a log axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mimesisbench.analysis.histogram import Histogram
from mimesisbench.analysis.knee import LoadPoint
from mimesisbench.report.style import PALETTE, Rendered, log_axis, new_figure, op_colour, render

MAX_CURVES = 10


def _nines(pct: np.ndarray) -> np.ndarray:
    return -np.log10(np.clip(1.0 - pct / 100.0, 1e-9, 1.0))


def _percentile_axis(ax: Any, max_nines: float) -> None:
    labels = ["50", "90", "99", "99.9", "99.99", "99.999", "99.9999"]
    ticks = [float(_nines(np.array([50.0]))[0]), 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    keep = [i for i, t in enumerate(ticks) if t <= max(max_nines, 2.0) + 0.01]
    ax.set_xticks([ticks[i] for i in keep], [labels[i] for i in keep])
    ax.set_xlim(0, max(ticks[keep[-1]], max_nines))
    ax.set_xlabel("percentile (%)")


def _colour(i: int, group: str, by_op: bool) -> str:
    if by_op or group == "all":
        return op_colour(group)
    return PALETTE[i % len(PALETTE)]


def percentile_figure(hists: Sequence[Histogram], name: str, title: str, *, what: str, label_prefix: str = "", colour_by_op: bool = True) -> Rendered:
    """One percentile curve per histogram (the first ``MAX_CURVES``)."""
    fig, ax = new_figure(height=3.9)
    max_nines = 0.0
    for i, hist in enumerate(hists[:MAX_CURVES]):
        pct, ms = hist.percentile_curve()
        if pct.size == 0:
            continue
        x = _nines(pct)
        max_nines = max(max_nines, float(x.max()))
        lw = 2.0 if hist.group == "all" else 1.3
        ax.plot(x, ms, color=_colour(i, hist.group, colour_by_op), lw=lw, label=f"{label_prefix}{hist.group} (n={hist.total:,})")
    _percentile_axis(ax, max_nines)
    log_axis(ax)
    ax.set_ylabel(f"{what} (ms, log)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    more = f" The {MAX_CURVES} largest groups are drawn." if len(hists) > MAX_CURVES else ""
    caption = f"{what.capitalize()} at each percentile, from log-spaced histograms (about 12% bins).{more}"
    return render(fig, name, title, caption)


def cdf_figure(latency: Histogram | None, service: Histogram | None, name: str, title: str) -> Rendered:
    """CDF of latency and of service time, all operations."""
    fig, ax = new_figure(height=3.2)
    for hist, label, colour in ((latency, "latency (from scheduled time)", PALETTE[0]), (service, "service time (from actual start)", PALETTE[1])):
        if hist is None:
            continue
        x, frac = hist.cdf()
        if x.size:
            ax.step(np.concatenate(([hist.lower_ms[0]], x)), np.concatenate(([0.0], frac)), where="post", color=colour, label=label)
    log_axis(ax, "x")
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("time (ms, log)")
    ax.set_ylabel("fraction of operations")
    ax.set_title(title)
    ax.legend(loc="lower right", frameon=False)
    return render(fig, name, title, "Cumulative distribution over all operations; the gap between the curves is time spent waiting behind the schedule.")


def knee_figure(points: Sequence[LoadPoint], name: str, title: str) -> Rendered:
    """Latency against achieved throughput (left) and achieved against offered load (right)."""
    fig, (left, right) = new_figure(1, 2, height=3.8, width=9.0)
    tput = np.array([p.throughput_ops_per_s for p in points], dtype=np.float64)
    p50 = np.array([np.nan if p.p50_ms is None else p.p50_ms for p in points], dtype=np.float64)
    p99 = np.array([np.nan if p.p99_ms is None else p.p99_ms for p in points], dtype=np.float64)
    left.plot(tput, p50, "o-", color=PALETTE[0], label="p50")
    left.plot(tput, p99, "s-", color=PALETTE[1], label="p99")
    incomplete = [i for i, p in enumerate(points) if not p.complete]
    if incomplete:
        left.plot(tput[incomplete], p99[incomplete], "x", color="#cc0000", ms=10, mew=2, label="incomplete run")
    log_axis(left)
    left.set_xlabel("achieved throughput (ops/s)")
    left.set_ylabel("latency (ms, log)")
    left.set_title("latency vs throughput")
    left.legend(frameon=False)
    offered = np.array([np.nan if p.offered_ops_per_s is None else p.offered_ops_per_s for p in points], dtype=np.float64)
    if np.isfinite(offered).any():
        right.plot(offered, tput, "o-", color=PALETTE[2], label="achieved")
        top = float(np.nanmax(np.concatenate((offered, tput))))
        right.plot([0, top], [0, top], ls="--", color="#888888", lw=1.0, label="achieved = offered")
        right.set_xlabel("offered load (scheduled ops/s)")
        right.legend(frameon=False)
    else:
        right.text(0.5, 0.5, "offered load unknown\n(as-fast-as-possible replays)", ha="center", va="center", transform=right.transAxes)
        right.set_xlabel("offered load (scheduled ops/s)")
    right.set_ylabel("achieved throughput (ops/s)")
    right.set_title("saturation")
    fig.suptitle(title)
    return render(fig, name, title, "One point per run, ordered by offered load: latency climbs at the knee where throughput stops following the load.")


def overlay_throughput_figure(series: Sequence[tuple[str, np.ndarray, np.ndarray]], name: str, title: str) -> Rendered:
    """Throughput over time of several runs (all operations), one line per run."""
    fig, ax = new_figure()
    t_max = max((float(t.max()) for _, t, _ in series if t.size), default=0.0)
    div = 60.0 if t_max > 1800 else 1.0
    for i, (label, t, v) in enumerate(series[: MAX_CURVES]):
        ax.plot(t / div, v, color=PALETTE[i % len(PALETTE)], label=label)
    ax.set_xlabel(f"time since start ({'min' if div == 60 else 's'})")
    ax.set_ylabel("throughput (ops/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return render(fig, name, title, "All operations, one line per run.")
