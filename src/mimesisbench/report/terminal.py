"""Terminal renderings (rich) of a comparison and of the runs catalog: pure formatting."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mimesisbench.analysis.compare import Comparison, MetricComparison, OpComparison
from mimesisbench.report.numbers import short_float
from mimesisbench.results.catalog import QueryResult


def num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return short_float(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _side(mean: float | None, cv: float | None) -> str:
    if mean is None:
        return "-"
    text = num(mean)
    if cv is not None:
        text += f" ±{cv * 100:.1f}%"
    return text


def _change(m: MetricComparison) -> Text:
    if m.relative_change is None:
        return Text("-")
    text = f"{m.relative_change * 100:+.1f}%"
    if m.significant:
        better = (m.relative_change > 0) == m.higher_is_better
        return Text(text, style="bold green" if better else "bold red")
    return Text(text, style="dim" if m.significant is False else "")


def _verdict(m: MetricComparison) -> Text:
    if m.significant:
        better = m.relative_change is not None and (m.relative_change > 0) == m.higher_is_better
        return Text(m.verdict, style="green" if better else "red")
    if m.significant is None:
        return Text(m.verdict, style="yellow")
    return Text(m.verdict, style="dim")


def _op_table(oc: OpComparison, n_base: int, n_cont: int, alpha: float) -> Table:
    title = "all operations" if oc.op == "all" else f"operation {oc.op}"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, title_style="bold")
    table.add_column("figure", no_wrap=True)
    table.add_column(f"baseline ({n_base} run{'s' if n_base != 1 else ''})", justify="right", no_wrap=True)
    table.add_column(f"contender ({n_cont} run{'s' if n_cont != 1 else ''})", justify="right", no_wrap=True)
    table.add_column("change", justify="right", no_wrap=True)
    table.add_column("CI of difference", justify="right", no_wrap=True)
    table.add_column("verdict", overflow="fold")
    for m in oc.metrics:
        ci = "-" if m.ci_low is None else f"[{num(m.ci_low)}, {num(m.ci_high)}]"
        table.add_row(
            m.label,
            _side(m.baseline_mean, m.baseline_cv),
            _side(m.contender_mean, m.contender_cv),
            _change(m),
            ci,
            _verdict(m),
        )
    d = oc.distribution
    if d is not None and d.p_value is not None:
        prob = d.prob_contender_slower if d.prob_contender_slower is not None else 0.5
        differ = "differ" if d.p_value < alpha else "do not differ detectably"
        table.caption = (
            f"raw latency samples {differ}: Mann-Whitney U p={d.p_value:.3g} over {d.n_baseline:,} vs {d.n_contender:,} samples; "
            f"a contender operation is slower than a baseline one with probability {prob:.2f} "
            "(samples of one run are not independent repetitions: the per-run verdicts above decide)"
        )
        table.caption_justify = "left"
    return table


def comparison_renderable(comparison: Comparison, *, ops: Sequence[str] | None = None) -> RenderableType:
    """Notes first (in words), then one table per operation."""
    parts: list[RenderableType] = []
    head = Text.assemble(
        ("baseline: ", "bold"), ", ".join(comparison.baseline_runs), "\n",
        ("contender: ", "bold"), ", ".join(comparison.contender_runs), "\n",
        f"±x% is the coefficient of variation between runs; significance: Welch's t-test on per-run figures "
        f"(alpha {comparison.alpha:g}) and a {comparison.confidence * 100:g}% bootstrap interval of the difference of means",
    )
    parts.append(head)
    for note in comparison.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    n_base, n_cont = len(comparison.baseline_runs), len(comparison.contender_runs)
    for oc in comparison.ops:
        if ops and oc.op not in ops:
            continue
        parts.append(_op_table(oc, n_base, n_cont, comparison.alpha))
    return Group(*parts)


def runs_renderable(result: QueryResult, p99_by_op: dict[str, dict[str, float | None]]) -> RenderableType:
    """The runs listing: key figures and p99 latency per operation; below it, what is wrong with
    each damaged run (or run without results)."""
    ops: list[str] = []
    for per_op in p99_by_op.values():
        ops.extend(op for op in per_op if op not in ops)
    table = Table(box=box.SIMPLE_HEAD, title=f"{len(result.rows)} run(s)", title_justify="left")
    table.add_column("run", no_wrap=True, min_width=23)
    table.add_column("started (UTC)", no_wrap=True, min_width=19)
    table.add_column("backend", overflow="fold", max_width=30)
    table.add_column("status", no_wrap=True, min_width=11)
    table.add_column("schedule", no_wrap=True, min_width=10)
    table.add_column("profile", no_wrap=True, min_width=10)
    for col in ("issued", "ops/s", "p99 ms", *(f"p99 {op}" for op in ops)):
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for record in result.records():
        status = Text("complete", style="green") if record.get("complete") else Text(str(record.get("status") or "incomplete").upper(), style="bold red")
        per_op = p99_by_op.get(str(record.get("run_id")), {})
        table.add_row(
            str(record.get("run_id")),
            num(record.get("started_at")),
            str(record.get("backend") or "-"),
            status,
            str(record.get("schedule_hash") or "-")[:10],
            str(record.get("profile_hash") or "-")[:10],
            num(record.get("operations_issued")),
            num(record.get("throughput_ops_per_s")),
            num(record.get("latency_p99_ms")),
            *(num(per_op.get(op)) for op in ops),
        )
    parts: list[RenderableType] = [table]
    for record in result.records():
        if record.get("problem"):
            parts.append(Text(f"{record.get('run_id')} ({record.get('status')}): {record['problem']}", style="yellow"))
    return Group(*parts)


def query_renderable(result: QueryResult) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD)
    for col in result.columns:
        table.add_column(col, no_wrap=True)
    for row in result.rows:
        table.add_row(*(num(v) for v in row))
    return table
