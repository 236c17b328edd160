"""Figures over the time of a run: throughput, latency percentiles, lateness, server-side series.

Every function takes what ``mimesisbench.analysis`` computed and only draws it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.analysis.series import RunSeries
from mimesisbench.analysis.server import ServerSeries
from mimesisbench.report.style import PALETTE, Rendered, log_axis, new_figure, op_colour, render

MAX_OPS_GRID = 9


def _bin_text(series: RunSeries) -> str:
    width = series.bin_s
    return f"{width:g} s bins" if width < 60 else f"{width / 60:g} min bins"


def _t_max(frame: pl.DataFrame) -> float:
    return float(frame["t_s"].to_numpy().max()) if frame.height else 0.0


def _time_axis(ax: Any, t_max: float) -> tuple[float, str]:
    """Seconds, or minutes for long runs: (divisor, label)."""
    if t_max > 1800:
        ax.set_xlabel("time since start (min)")
        return 60.0, "min"
    ax.set_xlabel("time since start (s)")
    return 1.0, "s"


def _op_colour(ops: list[str]) -> dict[str, str]:
    return {op: op_colour(op) for op in ops}


def _log_if_wide(ax: Any, values: np.ndarray) -> None:
    finite = values[np.isfinite(values) & (values > 0)]
    if finite.size and finite.max() / max(finite.min(), 1e-9) > 50:
        log_axis(ax)


def throughput_figure(series: RunSeries, name: str, title: str) -> Rendered:
    """Throughput per op and for all ops, with the offered load (scheduled ops/s) dashed."""
    fig, ax = new_figure()
    frame = series.completion
    ops = series.ops
    colours = _op_colour(ops)
    t_max = _t_max(frame)
    div, _ = _time_axis(ax, t_max)
    issue = series.issue
    if issue.height and issue["offered_ops_per_s"].null_count() < issue.height:
        ax.plot(issue["t_s"].to_numpy() / div, issue["offered_ops_per_s"].to_numpy(), ls=(0, (4, 2)), lw=1.6,
                color="#E0A0A0", label="offered (scheduled)", zorder=3)
    for op in ops:
        part = frame.filter(pl.col("op") == op)
        width = 1.6 if op == "all" else 1.2
        ax.plot(part["t_s"].to_numpy() / div, part["throughput_ops_per_s"].to_numpy(), label=op, color=colours[op], lw=width, zorder=2)
    ax.set_ylabel("throughput (ops/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    if ops:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return render(fig, name, title, f"Completed operations per second ({_bin_text(series)}); dashed: operations scheduled per second.")


def latency_all_figure(series: RunSeries, name: str, title: str) -> Rendered:
    """All ops: p50, p90, p99, p99.9 and max latency over time (log scale)."""
    fig, ax = new_figure()
    part = series.completion.filter(pl.col("op") == "all")
    t_max = _t_max(part)
    div, _ = _time_axis(ax, t_max)
    t = part["t_s"].to_numpy() / div
    styles = (("latency_p50_ms", "p50", PALETTE[0]), ("latency_p90_ms", "p90", PALETTE[2]),
              ("latency_p99_ms", "p99", PALETTE[1]), ("latency_p999_ms", "p99.9", PALETTE[3]),
              ("latency_max_ms", "max", "#999999"))
    for col, label, colour in styles:
        values = part[col].to_numpy() if col in part.columns else np.empty(0)
        if values.size and np.isfinite(values.astype(np.float64)).any():
            ax.plot(t, values, label=label, color=colour, lw=1.0 if label == "max" else 1.4)
    log_axis(ax)
    ax.set_ylabel("latency (ms, log)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return render(fig, name, title, f"Latency from the scheduled time, percentiles per bin from the raw samples ({_bin_text(series)}).")


def latency_ops_figure(series: RunSeries, name: str, title: str) -> Rendered:
    """Small multiples, one per op: p50, p99 and max latency over time (log scale)."""
    ops = [o for o in series.ops if o != "all"][:MAX_OPS_GRID]
    n = max(len(ops), 1)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(nrows, ncols, height=max(2.4, 2.2 * nrows + 0.4), sharex=True)
    flat = np.atleast_1d(axes).ravel()
    frame = series.completion
    t_max = _t_max(frame)
    div = 60.0 if t_max > 1800 else 1.0
    for ax, op in zip(flat, ops):
        part = frame.filter(pl.col("op") == op)
        t = part["t_s"].to_numpy() / div
        ax.plot(t, part["latency_p50_ms"].to_numpy(), color=PALETTE[0], label="p50")
        ax.plot(t, part["latency_p99_ms"].to_numpy(), color=PALETTE[1], label="p99")
        ax.plot(t, part["latency_max_ms"].to_numpy(), color="#999999", lw=0.9, label="max")
        log_axis(ax)
        ax.set_title(op, fontsize=10)
    for ax in flat[len(ops):]:
        ax.set_visible(False)
    for ax in flat[: len(ops)]:
        ax.set_ylabel("ms (log)")
    for ax in flat[max(0, len(ops) - ncols): len(ops)]:
        ax.set_xlabel(f"time since start ({'min' if div == 60 else 's'})")
    if ops:
        flat[0].legend(loc="best", frameon=False, fontsize=8)
    fig.suptitle(title)
    return render(fig, name, title, f"Per operation: p50, p99 and max latency from the scheduled time ({_bin_text(series)}).")


def lateness_figure(series: RunSeries, name: str, title: str) -> Rendered:
    """How far behind the schedule operations were issued: p50, p99 and max per bin."""
    fig, ax = new_figure(height=3.0)
    issue = series.issue
    t_max = _t_max(issue)
    div, _ = _time_axis(ax, t_max)
    t = issue["t_s"].to_numpy() / div
    stacked = []
    for col, label, colour in (("lateness_p50_ms", "p50", PALETTE[0]), ("lateness_p99_ms", "p99", PALETTE[1]), ("lateness_max_ms", "max", "#999999")):
        values = issue[col].cast(pl.Float64).to_numpy() if issue.height else np.empty(0)
        if values.size and np.isfinite(values).any():
            ax.plot(t, values, label=label, color=colour)
            stacked.append(values)
    if stacked:
        _log_if_wide(ax, np.concatenate(stacked))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_ylabel("lateness (ms)")
    ax.set_title(title)
    return render(fig, name, title, f"Actual start minus scheduled time, by scheduled time ({_bin_text(series)}): the harness's own delay.")


def server_figure(series: list[ServerSeries], name: str, title: str) -> Rendered:
    """Small multiples of server-side series, one panel each."""
    n = len(series)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig, axes = new_figure(nrows, ncols, height=max(2.3, 2.0 * nrows + 0.4))
    flat = np.atleast_1d(axes).ravel()
    t_max = max((float(np.nanmax(s.t_s)) for s in series if s.t_s.size), default=0.0)
    div = 60.0 if t_max > 1800 else 1.0
    for i, (ax, s) in enumerate(zip(flat, series)):
        ax.plot(s.t_s / div, s.values, color=PALETTE[i % len(PALETTE)], lw=1.1)
        label = s.name if len(s.name) <= 40 else s.name[:37] + "..."
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(f"time since start ({'min' if div == 60 else 's'})", fontsize=8.5)
    for ax in flat[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
    sources = ", ".join(sorted({s.source for s in series}))
    return render(fig, name, title, f"Server-side series found in the run directory ({sources}), as recorded (units as in the source).")
