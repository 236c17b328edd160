"""Figures of the data jobs' calls: bandwidth over time, offset in the file over time (the
access-pattern view IOScope gives), the calls' latency distribution, and an interference
study's changes (replay and data jobs together vs alone).

Every function takes what ``mimesisbench.analysis.data_calls`` computed and only draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from mimesisbench.analysis.data_calls import OffsetSample, RunDataCalls
from mimesisbench.analysis.histogram import Histogram
from mimesisbench.analysis.interference import InterferenceRow
from mimesisbench.report.style import PALETTE, Rendered, log_axis, new_figure, render

MAX_LINES = 10
#: tasks named in the offset figure's legend (one colour each); beyond, colours cycle and the
#: caption says so
MAX_TASK_LEGEND = len(PALETTE)
#: above this many points a scatter is embedded as a bitmap inside the SVG (a vector per call
#: would make a figure of megabytes)
RASTER_ABOVE = 5_000
OP_LINE: dict[str, Any] = {"write": "-", "read": (0, (4, 2))}
OP_MARKER: dict[str, str] = {"write": "o", "read": "x"}


def _time_axis(ax: Any, t_max: float) -> float:
    """Seconds, or minutes for long runs (as the other time figures): the divisor."""
    div = 60.0 if t_max > 1800 else 1.0
    ax.set_xlabel(f"time since start ({'min' if div == 60 else 's'})")
    return div


def _task_colour(task: int) -> str:
    return PALETTE[task % len(PALETTE)]


def bandwidth_figure(data: RunDataCalls, name: str, title: str) -> Rendered:
    """MiB/s per bin as steps, one line per job and op (reads dashed)."""
    fig, ax = new_figure()
    frame = data.bandwidth
    t_max = float(frame["t_s"].to_numpy().max()) + data.bin_s if frame.height else 0.0
    div = _time_axis(ax, t_max)
    pairs = frame.select("job", "op").unique(maintain_order=True).rows()
    for i, (job, op) in enumerate(pairs[:MAX_LINES]):
        part = frame.filter((pl.col("job") == job) & (pl.col("op") == op))
        t = part["t_s"].to_numpy()
        mib_s = part["mib_s"].to_numpy()
        # a step per bin, closed at the last bin's end, so that a single bin is a visible level
        x = np.concatenate((t, t[-1:] + data.bin_s)) / div
        y = np.concatenate((mib_s, mib_s[-1:]))
        ax.step(x, y, where="post", color=PALETTE[i % len(PALETTE)], ls=OP_LINE.get(op, "-"), label=f"{job} {op}")
    ax.set_ylabel("bandwidth (MiB/s)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    if pairs:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    more = f" The first {MAX_LINES} job/op pairs are drawn." if len(pairs) > MAX_LINES else ""
    caption = f"Bytes moved by the data jobs' calls, per {data.bin_s:g} s bin of the run (a call counted in the bin it ended).{more}"
    return render(fig, name, title, caption)


def _legend(ax: Any, sample: OffsetSample, ops: Sequence[str]) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="none", marker=OP_MARKER.get(op, "."), color="#444444", label=op) for op in ops]
    if sample.fsync_t_s.size:
        handles.append(Line2D([], [], ls="-", color="#666666", label="fsync"))
    if sample.tasks <= MAX_TASK_LEGEND:
        handles += [Line2D([], [], ls="none", marker="s", color=_task_colour(t), label=f"task {t}") for t in range(sample.tasks)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _offset_caption(sample: OffsetSample) -> str:
    where = "each task's own file" if sample.layout == "n-n" else "the file all tasks share"
    text = f"Each read and write at its start time and offset in {where} ({sample.layout}); colour: task."
    if sample.sampled:
        shown = sample.moves.height
        text += f" A sample: one call in {sample.every:,} in time order ({shown:,} of {sample.calls:,})."
    else:
        text += f" All {sample.calls:,} calls."
    if sample.fsync_t_s.size:
        text += " fsync calls: ticks at the bottom."
    if sample.tasks > MAX_TASK_LEGEND:
        text += f" Colours repeat every {MAX_TASK_LEGEND} tasks."
    return text


def offsets_figure(sample: OffsetSample, name: str, title: str) -> Rendered:
    """Offset in the file (MiB) against time, a marker per call (write o, read x), colour by task;
    fsync calls as short ticks along the time axis."""
    fig, ax = new_figure(height=3.9)
    moves = sample.moves
    t_max = float(np.concatenate((moves["t_s"].to_numpy(), sample.fsync_t_s, [0.0])).max())
    div = _time_axis(ax, t_max)
    raster = moves.height > RASTER_ABOVE
    ops = [op for op in ("write", "read") if moves.height and (moves["op"] == op).any()]
    for op in ops:
        part = moves.filter(pl.col("op") == op)
        colours = np.asarray(PALETTE)[part["task"].to_numpy() % len(PALETTE)]
        ax.scatter(part["t_s"].to_numpy() / div, part["offset_mib"].to_numpy(), c=colours, marker=OP_MARKER[op],
                   s=10 if op == "write" else 14, linewidths=0.8 if op == "read" else 0.0, rasterized=raster, zorder=2)
    if sample.fsync_t_s.size:
        ax.vlines(sample.fsync_t_s / div, 0.0, 0.05, transform=ax.get_xaxis_transform(), colors="#666666", lw=1.0, zorder=3)
    ax.set_ylabel("offset in the file (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    _legend(ax, sample, ops)
    return render(fig, name, title, _offset_caption(sample))


def _ccdf(hist: Histogram) -> tuple[np.ndarray, np.ndarray]:
    """(latency in ms, fraction of calls at least that slow) for a ``pre`` step: each bin's upper
    edge with the fraction at or above its lower edge, from 1 at the first bin's lower edge. It
    never reaches 0 (which a log axis cannot show), so a group of one bin is still a line."""
    upper, frac = hist.cdf()
    if upper.size == 0:
        return np.empty(0), np.empty(0)
    at_least = 1.0 - np.concatenate(([0.0], frac[:-1]))
    return np.concatenate((hist.lower_ms[:1], upper)), np.concatenate(([1.0], at_least))


def latency_figure(hists: Sequence[Histogram], name: str, title: str) -> Rendered:
    """The CCDF of the calls' latency, one curve per job and op, both axes log."""
    fig, ax = new_figure(height=3.9)
    for i, hist in enumerate(hists[:MAX_LINES]):
        x, y = _ccdf(hist)
        if x.size:
            op = hist.group.rsplit(" ", 1)[-1]
            ax.step(x, y, where="pre", color=PALETTE[i % len(PALETTE)], ls=OP_LINE.get(op, "-"), label=f"{hist.group} (n={hist.total:,})")
    log_axis(ax, "x")
    log_axis(ax)
    ax.set_xlabel("call latency (ms, log)")
    ax.set_ylabel("fraction of calls at least as slow (log)")
    ax.set_title(title)
    if hists:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    more = f" The first {MAX_LINES} job/op pairs are drawn." if len(hists) > MAX_LINES else ""
    caption = ("Fraction of each job's calls of an op that took at least a given time (start to return of the call), "
               f"from log-spaced histograms (about 12% bins, from 1 µs); the tail is on the right.{more}")
    return render(fig, name, title, caption)


def interference_figure(rows: Sequence[InterferenceRow], name: str, title: str) -> Rendered:
    """Each figure's change together vs alone (%) with its 95 % interval, one row per figure;
    red where the change is beyond its interval for the worse."""
    fig, ax = new_figure(height=max(2.4, 0.32 * len(rows) + 1.2))
    labels = [f"{r.side}: {r.figure}" for r in rows]
    y = np.arange(len(rows))[::-1]
    for yi, r in zip(y, rows):
        colour = "#c0392b" if r.worse else PALETTE[0]
        ci = r.change_pct.ci95
        if ci is not None:
            ax.plot([ci[0], ci[1]], [yi, yi], color=colour, lw=2)
        ax.plot([r.change_pct.mean], [yi], "o", color=colour)
    ax.axvline(0.0, color="#888888", lw=1, ls=":")
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.set_xlabel("change together vs alone (%)")
    ax.set_title(title)
    return render(fig, name, title, "Dots: the change of each figure's mean when the replay and the data jobs run together; "
                  "bars: Welch's 95 % interval; red: worse beyond the interval.")
