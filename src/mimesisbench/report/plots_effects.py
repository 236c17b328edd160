"""Figures of designed experiments: the effects of a two-level design with their 95 % intervals
(the thesis' Figs 6.5/6.6 draw them so), and a sweep's mean per level with its interval. Drawn
from what ``analysis.effects`` computed; nothing is computed here."""

from __future__ import annotations

import numpy as np

from mimesisbench.analysis.effects import SweepAnalysis, TwoLevelAnalysis
from mimesisbench.report.style import PALETTE, Rendered, new_figure, render

#: effects drawn at most (the largest by size; the table lists them all)
MAX_EFFECTS = 30


def effects_figure(analysis: TwoLevelAnalysis, name: str, title: str) -> Rendered:
    """Horizontal bars of each effect (2q, the mean change from -1 to +1), largest first, with
    its 95 % interval; an interval that excludes 0 is drawn dark, one that holds 0 light."""
    ranked = sorted(analysis.effects, key=lambda e: -abs(e.effect))[:MAX_EFFECTS]
    fig, ax = new_figure(height=max(2.0, 0.32 * len(ranked) + 1.0))
    y = np.arange(len(ranked))[::-1]
    values = np.array([e.effect for e in ranked])
    low = values - np.array([e.ci95[0] for e in ranked])
    high = np.array([e.ci95[1] for e in ranked]) - values
    colours = [PALETTE[0] if e.significant else "#b8c7d9" for e in ranked]
    ax.barh(y, values, color=colours, height=0.6)
    ax.errorbar(values, y, xerr=[low, high], fmt="none", ecolor="#222222", capsize=3, linewidth=1)
    ax.axvline(0, color="#555555", linewidth=0.8)
    ax.set_yticks(y, [f"{e.name} ({analysis.factors[e.name]})" if analysis.factors.get(e.name, e.name) != e.name
                      else e.name for e in ranked])
    ax.set_xlabel(f"effect on {analysis.response} (mean change from -1 to +1)")
    how = "Student t" if analysis.method == "t" else "Lenth's method"
    caption = (f"{title}: each effect with its 95 % interval ({how}, {analysis.dof} degrees of freedom); dark: the "
               "interval excludes 0")
    return render(fig, name, title, caption)


def sweep_figure(analysis: SweepAnalysis, name: str, title: str) -> Rendered:
    """The response's mean at each level, in the order run, with its 95 % interval."""
    fig, ax = new_figure()
    x = np.arange(len(analysis.levels))
    means = np.array([m.mean for m in analysis.levels])
    low = np.array([m.mean - m.ci95[0] if m.ci95 else 0.0 for m in analysis.levels])
    high = np.array([m.ci95[1] - m.mean if m.ci95 else 0.0 for m in analysis.levels])
    ax.errorbar(x, means, yerr=[low, high], fmt="o-", color=PALETTE[0], capsize=4)
    ax.set_xticks(x, [m.level for m in analysis.levels])
    ax.set_xlabel(analysis.factor)
    ax.set_ylabel(analysis.response)
    return render(fig, name, title, f"{title}: mean and 95 % interval per level")
