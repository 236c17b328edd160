"""A readable rich table of a run's summary (a pure rendering of ``summary.json``)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from mimesisbench.results.records import GroupStats, RunSummary


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _row(name: str, s: GroupStats, skipped: int = 0) -> list[str]:
    lat = s.latency_ms
    return [
        name,
        f"{s.issued:,}",
        f"{s.failed:,}",
        f"{skipped:,}" if skipped else "-",
        f"{s.throughput_ops_per_s:,.0f}" if s.throughput_ops_per_s else "-",
        *(_ms(v) for v in (lat.mean, lat.p50, lat.p90, lat.p99, lat.p999, lat.max)),
        _ms(s.service_ms.p99),
        _ms(s.lateness_ms.p99),
    ]


def summary_table(summary: RunSummary | dict[str, Any], title: str = "phase 2") -> Group:
    """Per operation and per type: counts, throughput, latency (from schedule), service, lateness."""
    record = summary if isinstance(summary, RunSummary) else RunSummary.model_validate(summary)
    columns = ["", "issued", "failed", "skipped", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max", "svc p99", "late p99"]
    table = Table(title=f"{title}: latency from the scheduled time, ms", title_justify="left", box=box.SIMPLE_HEAD)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    for op, stats in record.operations.items():
        mapped = record.mapped.get(op)
        table.add_row(*_row(op if mapped is None else f"{op} (as {mapped})", stats, record.skipped.get(op, 0)))
    for op, n in record.skipped.items():  # skipped commands: not issued at all
        if op not in record.operations:
            table.add_row(*_row(f"{op} (skipped)", GroupStats(), n))
    if record.types:
        table.add_section()
        for type_id, stats in record.types.items():
            table.add_row(*_row(f"type {type_id}", stats))
    state = Text("complete", style="bold green") if record.complete else Text("INCOMPLETE", style="bold red")
    late = record.lateness_ms
    head = Text.assemble(
        state,
        f"  {record.operations_issued:,} of {record.operations_scheduled:,} operations issued, ",
        f"{record.operations_failed:,} failed; ",
        f"{record.operations_skipped:,} skipped (the backend cannot perform them); " if record.operations_skipped else "",
        f"{record.throughput_ops_per_s:,.0f} ops/s over {record.active_time_ms / 1000:.2f} s; ",
        f"lateness p99 {_ms(late.p99)} ms, max {_ms(late.max)} ms",
    )
    return Group(head, table)


def data_table(summary: RunSummary | dict[str, Any]) -> Table | None:
    """The data jobs of a run (None without): per job and op, calls, MiB/s and call latency."""
    record = summary if isinstance(summary, RunSummary) else RunSummary.model_validate(summary)
    if not record.data:
        return None
    table = Table(title="data jobs: bandwidth over each op's span, call latency in ms", title_justify="left",
                  box=box.SIMPLE_HEAD)
    for i, col in enumerate(["", "layout", "tasks", "calls", "failed", "MiB", "MiB/s", "mean", "p50", "p99"]):
        table.add_column(col, justify="left" if i < 2 else "right", no_wrap=True)
    for name, entry in record.data.get("jobs", {}).items():
        job = entry.get("job", {})
        for op, figures in entry.get("ops", {}).items():
            latency = figures.get("latency_ms") or {}
            table.add_row(
                f"{name} {op}", str(job.get("layout", "")), str(job.get("tasks", "")), f"{figures['calls']:,}",
                f"{figures.get('failed', 0):,}", f"{figures['bytes'] / 1024**2:,.1f}", f"{figures['bandwidth_mib_s']:,.1f}",
                *(_ms(latency.get(k)) for k in ("mean", "p50", "p99")),
            )
    return table

