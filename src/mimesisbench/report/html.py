"""The self-contained HTML page: inline CSS, inline SVG figures, tables; no script, no external URL.

Pure serialisation: every number shown comes from the run directory's JSON documents or from
figures already rendered.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from mimesisbench.report.numbers import short_float
from mimesisbench.report.style import Rendered

CSS = """
:root { --fg:#1b1f24; --muted:#5b6570; --line:#d8dde3; --bg:#ffffff; --panel:#f6f8fa;
        --bad:#b42318; --badbg:#fef3f2; --warn:#8a5a00; --warnbg:#fffaeb; --ok:#067647; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1120px; padding: 24px 28px 64px; }
h1 { font-size: 1.6em; margin: 0 0 4px; } h2 { font-size: 1.3em; margin: 36px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 1.08em; margin: 22px 0 8px; }
.sub { color: var(--muted); margin: 0 0 16px; }
.banner { border-radius: 6px; padding: 10px 14px; margin: 10px 0; border: 1px solid; }
.banner.bad { color: var(--bad); background: var(--badbg); border-color: #fda29b; }
.banner.warn { color: var(--warn); background: var(--warnbg); border-color: #fedf89; }
.banner.ok { color: var(--ok); background: #ecfdf3; border-color: #abefc6; }
.banner ul { margin: 4px 0 0 18px; padding: 0; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; margin: 12px 0; }
.fact { background: var(--panel); border-radius: 6px; padding: 8px 10px; }
.fact .k { color: var(--muted); font-size: .82em; } .fact .v { font-size: 1.15em; font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: .9em; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: var(--panel); font-weight: 600; }
table.kv td { text-align: left; white-space: normal; } table.kv td:first-child { color: var(--muted); }
figure { margin: 18px 0 26px; } figure svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: .88em; margin-top: 4px; }
figcaption a { color: var(--muted); }
.scroll { overflow-x: auto; max-width: 100%; }
details { margin: 8px 0; } summary { cursor: pointer; color: var(--muted); }
code { font-size: .92em; } .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .85em; }
.status-complete { color: var(--ok); font-weight: 600; } .status-incomplete { color: var(--bad); font-weight: 700; }
"""

_METADATA = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)
_XMLNS = re.compile(r'\s+xmlns(:xlink)?="[^"]*"')


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def inline_svg(svg: str) -> str:
    """An SVG document made fit for inline use in HTML5 (no metadata, no namespace URIs)."""
    return _XMLNS.sub("", _METADATA.sub("", svg))


def fmt_num(value: Any, *, ms: bool = False) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else esc(value)
    if isinstance(value, int) and not ms:
        return f"{value:,}"
    return short_float(float(value))


def fmt_time(text: str | None) -> str:
    """An ISO timestamp as ``YYYY-MM-DD HH:MM:SS UTC`` (as given when it cannot be read)."""
    if not text:
        return "-"
    from datetime import datetime

    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return esc(text)
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return esc(value.strftime("%Y-%m-%d %H:%M:%S UTC"))


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """A table from already escaped cells."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{cls}"' if cls else ""
    return f'<div class="scroll"><table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def kv_table(items: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{_value(v)}</td></tr>" for k, v in items)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def _value(v: Any) -> str:
    if isinstance(v, (dict, list)):
        import json

        text = json.dumps(v, sort_keys=False)
        if len(text) > 400:
            text = text[:400] + " ..."
        return f'<span class="mono">{esc(text)}</span>'
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_num(v)
    return esc("-" if v is None else v)


def flatten(data: dict[str, Any], prefix: str = "", depth: int = 2) -> list[tuple[str, Any]]:
    """Nested dicts as dotted keys (down to ``depth`` levels)."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth > 0 and value:
            out.extend(flatten(value, f"{name}.", depth - 1))
        else:
            out.append((name, value))
    return out


def banner(kind: str, title: str, items: Sequence[str] = ()) -> str:
    lis = "".join(f"<li>{esc(i)}</li>" for i in items)
    listing = f"<ul>{lis}</ul>" if lis else ""
    return f'<div class="banner {esc(kind)}" role="status"><strong>{esc(title)}</strong>{listing}</div>'


def facts(items: Iterable[tuple[str, str]]) -> str:
    cells = "".join(f'<div class="fact"><div class="k">{esc(k)}</div><div class="v">{v}</div></div>' for k, v in items)
    return f'<div class="facts">{cells}</div>'


def figure(fig: Rendered, files_dir: str) -> str:
    links = f'<a href="{esc(files_dir)}/{esc(fig.name)}.svg">SVG</a> · <a href="{esc(files_dir)}/{esc(fig.name)}.png">PNG</a>'
    caption = f"{esc(fig.caption)} ({links})" if fig.caption else f"({links})"
    return f'<figure id="fig-{esc(fig.name)}" data-figure="{esc(fig.name)}">{inline_svg(fig.svg)}<figcaption>{caption}</figcaption></figure>'


@dataclass
class Page:
    """The page being assembled: a title and HTML fragments in order."""

    title: str
    subtitle: str = ""
    parts: list[str] = field(default_factory=list)

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def heading(self, text: str, level: int = 2, anchor: str | None = None) -> None:
        ident = f' id="{esc(anchor)}"' if anchor else ""
        self.parts.append(f"<h{level}{ident}>{esc(text)}</h{level}>")

    def render(self) -> str:
        sub = f'<p class="sub">{esc(self.subtitle)}</p>' if self.subtitle else ""
        body = "\n".join(self.parts)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(self.title)}</title><style>{CSS}</style></head>"
            f"<body><h1>{esc(self.title)}</h1>{sub}\n{body}\n</body></html>\n"
        )
