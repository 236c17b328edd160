"""Matplotlib set-up and serialisation of figures (SVG for the page and files, PNG beside them).

Nothing here runs at import: the Agg backend and the report's style are applied inside
:func:`plotting`, a context manager around all drawing, so importing this module never touches
matplotlib's global state.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: colour-blind friendly first (Okabe-Ito without black and yellow), then distinct extras; black is
#: kept for "all operations"
PALETTE: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#8C564B", "#7F3C8D",
    "#BCBD22", "#17BECF", "#999933", "#882255",
)
ALL_COLOUR = "#222222"
#: operations in a fixed order so that an operation has the same colour in every figure
OP_ORDER: tuple[str, ...] = (
    "open", "create", "getfileinfo", "list_file", "delete", "rename_file", "mkdirs", "list_dir", "rename_dir",
)


def op_colour(op: str) -> str:
    """The colour of an operation (``all`` is near-black), the same in every figure."""
    if op == "all":
        return ALL_COLOUR
    if op in OP_ORDER:
        return PALETTE[OP_ORDER.index(op)]
    return PALETTE[(len(OP_ORDER) + sum(map(ord, op))) % len(PALETTE)]


WIDTH_IN = 8.0
HEIGHT_IN = 3.6
PNG_DPI = 130

STYLE: dict[str, Any] = {
    "font.size": 10.5,
    "axes.titlesize": 11.5,
    "axes.labelsize": 10.5,
    "legend.fontsize": 9,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.4,
    "figure.dpi": 100,
    "svg.fonttype": "none",  # text stays text: small, selectable, crisp
    "svg.hashsalt": "mimesisbench",  # deterministic ids
    "path.simplify": True,
    "path.simplify_threshold": 0.5,
    "agg.path.chunksize": 20000,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
}


@dataclass(frozen=True)
class Rendered:
    """A figure serialised: its name (file stem), caption, inline SVG and PNG bytes."""

    name: str
    title: str
    caption: str
    svg: str
    png: bytes


@contextmanager
def plotting() -> Iterator[None]:
    """Agg backend and the report style for the duration of the block."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from cycler import cycler

    style = dict(STYLE)
    style["axes.prop_cycle"] = cycler(color=list(PALETTE))
    with matplotlib.rc_context(style):  # type: ignore[arg-type]
        yield


def new_figure(nrows: int = 1, ncols: int = 1, *, height: float = HEIGHT_IN, width: float = WIDTH_IN, **kw: Any) -> tuple[Figure, Any]:
    """A figure (not registered with pyplot, so nothing leaks) and its axes."""
    from matplotlib.figure import Figure as _Figure

    fig = _Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **kw)
    return fig, axes


_ID = re.compile(r'id="([^"]+)"')


def _scoped_svg(svg: str, prefix: str) -> str:
    """Strip the XML prologue and make every id unique to this figure (several SVGs in one page)."""
    start = svg.find("<svg")
    body = svg[start:] if start >= 0 else svg
    ids = set(_ID.findall(body))
    if not ids:
        return body
    pattern = re.compile(r'(id="|url\(#|href="#)(' + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) + r')(?=["\)])')
    return pattern.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", body)


def render(fig: Figure, name: str, title: str, caption: str = "") -> Rendered:
    """Serialise ``fig`` to SVG (ids scoped by ``name``) and PNG."""
    svg_buf = io.StringIO()
    fig.savefig(svg_buf, format="svg", metadata={"Date": None, "Creator": "MimesisBench"})
    fig.set_layout_engine("none")  # the layout is done: do not solve it again for the PNG
    png_buf = io.BytesIO()
    fig.savefig(png_buf, format="png", dpi=PNG_DPI)
    fig.clear()
    return Rendered(name=name, title=title, caption=caption, svg=_scoped_svg(svg_buf.getvalue(), name), png=png_buf.getvalue())


def write_files(figure: Rendered, directory: Path) -> tuple[Path, Path]:
    """``<name>.svg`` and ``<name>.png`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    svg_path = directory / f"{figure.name}.svg"
    png_path = directory / f"{figure.name}.png"
    svg_path.write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + figure.svg, encoding="utf-8")
    png_path.write_bytes(figure.png)
    return svg_path, png_path


def _plain(value: float, _pos: object = None) -> str:
    if value <= 0:
        return ""
    if value >= 1:
        return f"{value:,.0f}" if value >= 1000 else f"{value:g}"
    return f"{value:.6f}".rstrip("0").rstrip(".")


def log_axis(ax: Any, which: str = "y", *, min_decades: float = 1.2) -> None:
    """A log axis with plain decimal labels, widened to span at least ``min_decades``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    get_lim, set_lim = (ax.get_ylim, ax.set_ylim) if which == "y" else (ax.get_xlim, ax.set_xlim)
    low, high = get_lim()
    if low > 0 and high > 0:
        import math

        span = math.log10(high / low)
        if span < min_decades:
            mid = (math.log10(high) + math.log10(low)) / 2.0
            set_lim(10 ** (mid - min_decades / 2.0), 10 ** (mid + min_decades / 2.0))
    axis.set_major_locator(LogLocator(base=10.0))
    axis.set_major_formatter(FuncFormatter(_plain))
    axis.set_minor_formatter(NullFormatter())
