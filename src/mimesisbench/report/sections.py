"""HTML fragments describing a run: status and warnings, key figures, tables, configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mimesisbench.analysis.knee import LoadPoint
from mimesisbench.report.html import banner, esc, facts, flatten, fmt_num, fmt_time, kv_table, table
from mimesisbench.results.load import RunData

OP_HEADERS = ("", "issued", "failed", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max", "svc mean", "svc p99", "late p99")


def status_html(run: RunData) -> str:
    if run.complete:
        return '<span class="status-complete">complete</span>'
    return f'<span class="status-incomplete">INCOMPLETE ({esc(run.status)})</span>'


def warnings_html(run: RunData) -> str:
    """A red banner for an incomplete run or failures, amber for other warnings, green otherwise."""
    warnings = run.warnings
    failed = int(run.summary.get("operations_failed") or 0)
    if not run.complete:
        return banner("bad", f"Run {run.run_id} is incomplete: its figures cover part of the schedule only", warnings)
    if failed:
        issued = int(run.summary.get("operations_issued") or 0) or 1
        kind = "bad" if failed / issued > 0.01 else "warn"
        return banner(kind, f"{failed:,} of {issued:,} operations failed ({failed / issued:.2%}) in run {run.run_id}", warnings)
    if warnings:
        return banner("warn", f"Warnings recorded by run {run.run_id}", warnings)
    return banner("ok", f"Run {run.run_id} completed without warnings")


def key_facts(run: RunData) -> str:
    summary = run.summary
    late = summary.get("lateness_ms") or {}
    lat = summary.get("latency_ms") or {}
    items = [
        ("status", status_html(run)),
        ("backend", esc(run.backend)),
        ("throughput", f"{fmt_num(run.throughput)} ops/s"),
        ("operations issued", f"{fmt_num(summary.get('operations_issued'))} / {fmt_num(summary.get('operations_scheduled'))}"),
        ("failed", fmt_num(summary.get("operations_failed"))),
        ("active time", f"{fmt_num((summary.get('active_time_ms') or 0) / 1000.0)} s"),
        ("latency p50 / p99", f"{fmt_num(lat.get('p50_ms'), ms=True)} / {fmt_num(lat.get('p99_ms'), ms=True)} ms"),
        ("lateness p99 / max", f"{fmt_num(late.get('p99'), ms=True)} / {fmt_num(late.get('max'), ms=True)} ms"),
        ("time scale", fmt_num(run.time_scale)),
        ("started", fmt_time(run.started_at)),
    ]
    return facts(items)


def _row(name: str, s: dict[str, Any]) -> list[str]:
    late = s.get("lateness_ms") or {}
    return [
        esc(name),
        fmt_num(s.get("issued")),
        fmt_num(s.get("failed")),
        fmt_num(s.get("throughput_ops_per_s")),
        *(fmt_num(s.get(k), ms=True) for k in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "service_mean_ms", "service_p99_ms")),
        fmt_num(late.get("p99"), ms=True),
    ]


def ops_table(run: RunData) -> str:
    rows = [_row("all operations", run.overall)]
    rows += [_row(op, stats) for op, stats in sorted(run.operations.items(), key=lambda kv: -int(kv[1].get("issued") or 0))]
    return table(OP_HEADERS, rows)


def types_table(run: RunData) -> str:
    rows = [_row(f"type {t}", stats) for t, stats in sorted(run.types.items(), key=lambda kv: -int(kv[1].get("issued") or 0))]
    return table(OP_HEADERS, rows)


def profile_html(run: RunData) -> str:
    sched = run.manifest.get("schedule") or {}
    smf = sched.get("manifest") or {}
    counts = smf.get("counts") or {}
    items: list[tuple[str, Any]] = [
        ("profile", run.profile_name or "-"),
        ("profile hash", run.profile_hash or "-"),
        ("schedule", sched.get("path") or "-"),
        ("namespace hash", run.schedule_hash or "-"),
        ("seed", run.seed),
        ("window (ms, as generated)", smf.get("window_ms")),
        ("events", counts.get("events", sched.get("events"))),
        ("files / pre-existing", f"{fmt_num(counts.get('files'))} / {fmt_num(counts.get('pre_existing_files'))}"),
        ("directories / pre-existing", f"{fmt_num(counts.get('directories'))} / {fmt_num(counts.get('pre_existing_directories'))}"),
        ("generation options", smf.get("options")),
    ]
    per_op = counts.get("per_op") if isinstance(counts.get("per_op"), dict) else {}
    out = kv_table(items)
    if per_op:
        out += table(("scheduled operations", "count"), [[esc(op), fmt_num(n)] for op, n in per_op.items() if n])
    return out


def config_html(run: RunData) -> str:
    return kv_table(flatten(run.config))


def host_html(run: RunData) -> str:
    host = dict(run.host)
    mem = host.get("memory_bytes")
    if isinstance(mem, (int, float)):
        host["memory_bytes"] = f"{mem / 2**30:.1f} GiB"
    items = list(flatten(host, depth=0)) + [(f"version {k}", v) for k, v in run.versions.items()]
    items += [(k, run.manifest.get(k)) for k in ("started_at", "start_barrier_utc", "ended_at", "status") if run.manifest.get(k)]
    return kv_table(items)


def runs_overview(runs: Sequence[RunData], points: Sequence[LoadPoint]) -> str:
    offered = {p.run_id: p.offered_ops_per_s for p in points}
    headers = ("run", "started", "backend", "status", "issued", "failed", "offered ops/s", "ops/s", "p50 ms", "p99 ms", "warnings")
    rows = []
    for run in runs:
        lat = run.summary.get("latency_ms") or {}
        rows.append(
            [
                f'<a href="#run-{esc(run.run_id)}">{esc(run.run_id)}</a>',
                fmt_time(run.started_at),
                esc(run.backend),
                status_html(run),
                fmt_num(run.summary.get("operations_issued")),
                fmt_num(run.summary.get("operations_failed")),
                fmt_num(offered.get(run.run_id)),
                fmt_num(run.throughput),
                fmt_num(lat.get("p50_ms"), ms=True),
                fmt_num(lat.get("p99_ms"), ms=True),
                fmt_num(len(run.warnings)),
            ]
        )
    return table(headers, rows)
