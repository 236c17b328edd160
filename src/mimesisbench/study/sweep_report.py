"""``client-sweep --report DIR``: one HTML page of a client sweep: its points, Wu's a x ln x and
the Universal Scalability Law fitted to them (figure and parameters with their intervals)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mimesisbench import __version__
from mimesisbench.report.html import Page, banner, esc, facts, figure, table
from mimesisbench.report.plots_load import client_sweep_figure
from mimesisbench.report.style import plotting, write_files
from mimesisbench.study.client_sweep import ClientSweep

FIGURES_DIR = "figures"


def _interval(values: Any) -> str:
    return "-" if not values else f"[{values[0]:.4g}, {values[1]:.4g}]"


def build_sweep_report(sweep: ClientSweep, facts_: dict[str, str], out: Path) -> Path:
    """Write ``out/index.html`` (and its figure) for ``sweep``; returns the page's path."""
    page = Page(title="Client sweep", subtitle=f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())} "
                f"by MimesisBench {__version__}")
    page.add(facts([(k, esc(v)) for k, v in facts_.items()]))
    points = sorted(sweep.points, key=lambda p: (p.clients, p.repeat))
    usl = (sweep.usl.lam, sweep.usl.sigma, sweep.usl.kappa) if sweep.usl else None
    with plotting():
        fig = client_sweep_figure([p.clients for p in points], [p.ops_per_s for p in points],
                                  [p.mean_latency_ms for p in points], usl, sweep.wu.a if sweep.wu else None,
                                  "client-sweep", "Throughput and latency against clients")
        page.add(figure(fig, FIGURES_DIR))
        write_files(fig, out / FIGURES_DIR)
    rows = []
    if sweep.wu:
        rows.append(["Wu: a (ms)", f"{sweep.wu.a:.4g}", _interval(sweep.wu.ci95), f"R^2 {sweep.wu.r2:.3f}"])
    if sweep.usl:
        u = sweep.usl
        for key, value in (("lambda", u.lam), ("sigma", u.sigma), ("kappa", u.kappa)):
            rows.append([f"USL: {key}", f"{value:.4g}", _interval(u.intervals.get(key)), ""])
        rows.append(["USL: peak concurrency, ceiling", f"{u.peak_concurrency:.4g}", "", f"{u.ceiling:,.0f} ops/s"])
    page.add(table(["model", "value", "95 % interval", ""], [[esc(c) for c in r] for r in rows]))
    if sweep.notes:
        page.add(banner("warn", "Notes", list(sweep.notes)))
    page.add(table(["clients", "repeat", "ops/s", "mean latency (ms)", "errors"],
                   [[str(p.clients), str(p.repeat), f"{p.ops_per_s:,.0f}", f"{p.mean_latency_ms:.4g}", str(p.errors)]
                    for p in points]))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(page.render(), encoding="utf-8")
    return path
