"""A readable rich table of a run's summary (a pure rendering of ``summary.json``)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _row(name: str, s: dict[str, Any]) -> list[str]:
    return [
        name,
        f"{s['issued']:,}",
        f"{s['failed']:,}",
        f"{s['throughput_ops_per_s']:,.0f}" if s.get("throughput_ops_per_s") else "-",
        _ms(s["mean_ms"]),
        _ms(s["p50_ms"]),
        _ms(s["p90_ms"]),
        _ms(s["p99_ms"]),
        _ms(s["p999_ms"]),
        _ms(s["max_ms"]),
        _ms(s["service_p99_ms"]),
        _ms(s["lateness_ms"]["p99"]),
    ]


def summary_table(summary: dict[str, Any], title: str = "phase 2") -> Group:
    """Per operation and per type: counts, throughput, latency (from schedule), service, lateness."""
    columns = ["", "issued", "failed", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max", "svc p99", "late p99"]
    table = Table(title=f"{title}: latency from the scheduled time, ms", title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    for op, stats in summary.get("operations", {}).items():
        table.add_row(*_row(op, stats))
    if summary.get("types"):
        table.add_section()
        for type_id, stats in summary["types"].items():
            table.add_row(*_row(f"type {type_id}", stats))
    state = Text("complete", style="bold green") if summary.get("complete") else Text("INCOMPLETE", style="bold red")
    late = summary.get("lateness_ms", {})
    head = Text.assemble(
        state,
        f"  {summary.get('operations_issued', 0):,} of {summary.get('operations_scheduled', 0):,} operations issued, ",
        f"{summary.get('operations_failed', 0):,} failed; ",
        f"{summary.get('throughput_ops_per_s', 0.0):,.0f} ops/s over {summary.get('active_time_ms', 0.0) / 1000:.2f} s; ",
        f"lateness p99 {_ms(late.get('p99'))} ms, max {_ms(late.get('max'))} ms",
    )
    return Group(head, table)


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(summary_table(summary))
