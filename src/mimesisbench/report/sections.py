"""HTML fragments describing a run: status and warnings, key figures, tables, configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mimesisbench.analysis.data_calls import data_op_stats
from mimesisbench.analysis.interference import InterferenceRow, Interval
from mimesisbench.analysis.knee import LoadPoint
from mimesisbench.report.html import banner, esc, facts, flatten, fmt_num, fmt_time, kv_table, table
from mimesisbench.results.load import RunData
from mimesisbench.results.records import GroupStats

OP_HEADERS = ("", "issued", "failed", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max", "svc mean", "svc p99", "late p99")
DATA_HEADERS = ("job", "layout", "tasks", "op", "calls", "failed", "MiB", "MiB/s", "mean ms", "p50 ms", "p99 ms")


def status_html(run: RunData) -> str:
    if run.complete:
        return '<span class="status-complete">complete</span>'
    return f'<span class="status-incomplete">INCOMPLETE ({esc(run.status)})</span>'


def warnings_html(run: RunData) -> str:
    """A red banner for an incomplete run or failures, amber for other warnings, green otherwise."""
    warnings = run.warnings
    failed = run.summary.operations_failed
    if not run.complete:
        return banner("bad", f"Run {run.run_id} is incomplete: its figures cover part of the schedule only", warnings)
    if failed:
        issued = run.summary.operations_issued or 1
        kind = "bad" if failed / issued > 0.01 else "warn"
        return banner(kind, f"{failed:,} of {issued:,} operations failed ({failed / issued:.2%}) in run {run.run_id}", warnings)
    if warnings:
        return banner("warn", f"Warnings recorded by run {run.run_id}", warnings)
    return banner("ok", f"Run {run.run_id} completed without warnings")


def key_facts(run: RunData) -> str:
    summary = run.summary
    late = summary.lateness_ms
    lat = summary.latency_ms
    items = [
        ("status", status_html(run)),
        ("backend", esc(run.backend)),
        ("throughput", f"{fmt_num(run.throughput)} ops/s"),
        ("operations issued", f"{fmt_num(summary.operations_issued)} / {fmt_num(summary.operations_scheduled)}"),
        ("failed", fmt_num(summary.operations_failed)),
        ("skipped (backend cannot perform)", fmt_num(summary.operations_skipped)),
        ("active time", f"{fmt_num(summary.active_time_ms / 1000.0)} s"),
        ("latency p50 / p99", f"{fmt_num(lat.p50, ms=True)} / {fmt_num(lat.p99, ms=True)} ms"),
        ("lateness p99 / max", f"{fmt_num(late.p99, ms=True)} / {fmt_num(late.max, ms=True)} ms"),
        ("time scale", fmt_num(run.time_scale) + (f" ({esc(summary.mode)})" if summary.mode else "")),
        *_cost_facts(summary.cost),
        ("started", fmt_time(run.started_at)),
    ]
    return facts(items)


def _cost_facts(cost: dict[str, Any] | None) -> list[tuple[str, str]]:
    """CPU per operation of the client and of the managed server, and which set the pace."""
    if not cost:
        return []
    client = cost.get("client_cpu_us_per_op")
    items = [("client CPU per operation", f"{fmt_num(client)} us" if client is not None else "-")]
    for role, figures in sorted((cost.get("server") or {}).items()):
        items.append((f"{esc(role)} CPU per operation", f"{fmt_num(figures.get('cpu_us_per_op'))} us"))
    verdict = str(cost.get("bottleneck", "unknown"))
    why = cost.get("why")
    items.append(("bottleneck", esc(verdict + (f": {why}" if why else ""))))
    return items


def _row(name: str, s: GroupStats) -> list[str]:
    lat = s.latency_ms
    return [
        esc(name),
        fmt_num(s.issued),
        fmt_num(s.failed),
        fmt_num(s.throughput_ops_per_s),
        *(fmt_num(v, ms=True) for v in (lat.mean, lat.p50, lat.p90, lat.p99, lat.p999, lat.max, s.service_ms.mean, s.service_ms.p99)),
        fmt_num(s.lateness_ms.p99, ms=True),
    ]


def ops_table(run: RunData) -> str:
    rows = [_row("all operations", run.overall)]
    rows += [_row(op, stats) for op, stats in sorted(run.operations.items(), key=lambda kv: -kv[1].issued)]
    return table(OP_HEADERS, rows)


def commands_table(run: RunData) -> str:
    """The commands the backend did not perform as such: mapped to a nearest operation (issued,
    counted above under their own label) or skipped (not issued). Empty when there are none."""
    summary = run.summary
    rows = [
        [esc(op), fmt_num(stats.issued), f"performed as {esc(summary.mapped[op])}"]
        for op, stats in run.operations.items()
        if op in summary.mapped
    ]
    rows += [[esc(op), fmt_num(0), f"skipped: {fmt_num(n)} not issued"] for op, n in summary.skipped.items()]
    if not rows:
        return ""
    note = (
        f"<p>The backend cannot perform every command of the schedule: {fmt_num(summary.operations_skipped)} "
        "operations were skipped (not issued), and mapped commands ran as their nearest operation.</p>"
    )
    return note + table(("command", "issued", "what the backend did"), rows)


def types_table(run: RunData) -> str:
    rows = [_row(f"type {t}", stats) for t, stats in sorted(run.types.items(), key=lambda kv: -kv[1].issued)]
    return table(OP_HEADERS, rows)


def data_jobs_table(run: RunData) -> str:
    """One row per data job and op, as ``summary.json`` gives them; empty without data jobs.

    The bandwidth is the bytes over the time the op was under way, not over the run: a job that
    writes for one second of a ten-minute replay shows its disk's speed, as IOR would."""
    rows = [
        [
            esc(s.job),
            esc(s.layout),
            fmt_num(s.tasks),
            esc(s.op),
            fmt_num(s.calls),
            fmt_num(s.failed),
            fmt_num(s.mib if s.moves_bytes else None),
            fmt_num(s.bandwidth_mib_s if s.moves_bytes else None),
            *(fmt_num(v, ms=True) for v in (s.latency_mean_ms, s.latency_p50_ms, s.latency_p99_ms)),
        ]
        for s in data_op_stats(run)
    ]
    if not rows:
        return ""
    note = (
        "<p>Reads and writes of the data jobs run beside the replay. MiB/s: bytes moved over the time the op "
        "was under way (from the first call's start to the last call's end of each task's pass); latency: one "
        "call, from its start to its return.</p>"
    )
    return note + table(DATA_HEADERS, rows)


def profile_html(run: RunData) -> str:
    sched = run.manifest.schedule
    smf = sched.manifest
    counts: dict[str, Any] = smf["counts"] if isinstance(smf.get("counts"), dict) else {}
    items: list[tuple[str, Any]] = [
        ("profile", run.profile_name or "-"),
        ("profile hash", run.profile_hash or "-"),
        ("schedule", sched.path or "-"),
        ("namespace hash", run.schedule_hash or "-"),
        ("seed", run.seed),
        ("window (ms, as generated)", smf.get("window_ms")),
        ("events", counts.get("events", sched.events)),
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
    return kv_table(flatten(run.config.model_dump(mode="json")))


def host_html(run: RunData) -> str:
    host = dict(run.host)
    mem = host.get("memory_bytes")
    if isinstance(mem, (int, float)):
        host["memory_bytes"] = f"{mem / 2**30:.1f} GiB"
    items = list(flatten(host, depth=0)) + [(f"version {k}", v) for k, v in run.versions.items()]
    manifest = run.manifest
    items += [(k, v) for k, v in (("started_at", manifest.started_at), ("start_barrier_utc", manifest.start_barrier_utc),
                                  ("ended_at", manifest.ended_at), ("status", manifest.status)) if v]
    return kv_table(items)


def runs_overview(runs: Sequence[RunData], points: Sequence[LoadPoint]) -> str:
    offered = {p.run_id: p.offered_ops_per_s for p in points}
    headers = ("run", "started", "backend", "status", "issued", "failed", "offered ops/s", "ops/s", "p50 ms", "p99 ms", "warnings")
    rows = []
    for run in runs:
        lat = run.summary.latency_ms
        rows.append(
            [
                f'<a href="#run-{esc(run.run_id)}">{esc(run.run_id)}</a>',
                fmt_time(run.started_at),
                esc(run.backend),
                status_html(run),
                fmt_num(run.summary.operations_issued),
                fmt_num(run.summary.operations_failed),
                fmt_num(offered.get(run.run_id)),
                fmt_num(run.throughput),
                fmt_num(lat.p50, ms=True),
                fmt_num(lat.p99, ms=True),
                fmt_num(len(run.warnings)),
            ]
        )
    return table(headers, rows)


INTERFERENCE_HEADERS = ["side", "figure", "unit", "alone (95 % CI)", "together (95 % CI)", "change % (95 % CI)", ""]


def _with_ci(iv: Interval, *, pct: bool = False) -> str:
    fmt = (lambda v: f"{v:+.1f}") if pct else fmt_num
    if iv.ci95 is None:
        return esc(fmt(iv.mean))
    return f"{esc(fmt(iv.mean))} <small>[{esc(fmt(iv.ci95[0]))}, {esc(fmt(iv.ci95[1]))}]</small>"


def interference_html(rows: Sequence[InterferenceRow]) -> str:
    """The interference study's table (``mimesisbench interfere``), as printed."""
    if not rows:
        return "<p>The study has no figures yet (no run of some kind completed).</p>"
    note = (
        "<p>Each figure alone (its kind run by itself) and together (replay and data jobs from one barrier), the "
        "mean and Student-t 95 % interval over the repetitions, and the change together vs alone with Welch's 95 % "
        "interval of the difference of the means over the mean alone. <strong>worse</strong>: a change beyond its "
        "interval, for the worse.</p>"
    )
    body = [
        [esc(r.side), esc(r.figure), esc(r.unit), _with_ci(r.alone), _with_ci(r.together), _with_ci(r.change_pct, pct=True),
         "<strong>worse</strong>" if r.worse else ""]
        for r in rows
    ]
    return note + table(INTERFERENCE_HEADERS, body)
