"""What a run cost the client and the server, and which of them set its pace.

On one machine a benchmark can measure its own client rather than the server: NNThroughputBenchmark
runs in the NameNode's process for that reason. Every run therefore records the CPU its workers
used during the replay (each worker measures its own process, lanes and native threads included),
the managed server's daemons' CPU over the same window (``run.probes.ServerCpuProbe``), and the
host's busy share; from those, per operation, the CPU each side spent, and a verdict:

``none``
    the run kept up with its schedule (paced, lateness p99 under ``BEHIND_MS``): nothing limited it;
``client``
    it fell behind (or ran as fast as possible) and the client could not do more: a worker's process
    used at least ``SATURATED`` of a core with Python lanes (one Python process issues from one core
    at a time; native lanes: of every core of the host), or the host's CPUs were ``SATURATED`` busy
    and the client spent more CPU per operation than the server;
``server``
    it fell behind while the client had CPU to spare: the server (or what lies between) set the pace.

A ``client`` verdict comes with a warning in the summary and the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: a process using this share of a core (or a host this share busy) is saturated
SATURATED = 0.9
#: a paced run whose lateness p99 exceeds this fell behind its schedule (ms)
BEHIND_MS = 10.0
#: a replay shorter than this is too short to judge a worker's CPU share (s)
MIN_REPLAY_S = 1.0


def _per_op_us(cpu_s: float, ops: int) -> float | None:
    return cpu_s / ops * 1e6 if ops > 0 else None


def _server_cost(v: dict[str, float], issued: int) -> dict[str, Any]:
    """One daemon's CPU per operation and cores over the replay, and its threads' context switches
    per operation where they were read (a thread parked and woken: a voluntary one)."""
    out: dict[str, Any] = {"cpu_s": round(v["cpu_s"], 4), "cpu_us_per_op": _per_op_us(v["cpu_s"], issued),
                           "cores": round(v["cpu_s"] / v["wall_s"], 3) if v.get("wall_s") else None}
    for kind in ("voluntary", "involuntary"):
        if f"{kind}_switches" in v and issued > 0:
            out[f"{kind}_switches_per_op"] = round(v[f"{kind}_switches"] / issued, 3)
    return out


def run_cost(workers: Sequence[dict[str, Any]], issued: int, *, paced: bool, lateness_p99_ms: float | None,
             server: dict[str, dict[str, float]] | None = None, host_busy: float | None = None,
             native_lanes: bool = False, host_cores: int = 1) -> dict[str, Any]:
    """The ``cost`` of a run's summary. ``workers``: each worker's end (its ``extra`` holding
    ``cpu_s`` and ``replay_s``); ``server``: per daemon role its ``cpu_s`` and ``wall_s`` over
    the replay; ``host_busy``: the share of the host's CPU time busy over the replay;
    ``native_lanes``: the workers issued from native threads (not bound to one core by the GIL)."""
    measured = [w for w in workers if isinstance(w.get("extra"), dict) and "cpu_s" in w["extra"]]
    client_cpu = sum(float(w["extra"]["cpu_s"]) for w in measured)
    cores = {int(w["index"]): float(w["extra"]["cpu_s"]) / float(w["extra"]["replay_s"])
             for w in measured if float(w["extra"].get("replay_s", 0.0)) >= MIN_REPLAY_S}
    core_limit = SATURATED * (max(1, host_cores) if native_lanes else 1)
    out: dict[str, Any] = {
        "client_cpu_s": round(client_cpu, 4), "client_cpu_us_per_op": _per_op_us(client_cpu, issued),
        "client_cores_by_worker": {str(k): round(v, 3) for k, v in sorted(cores.items())},
        "server": {role: _server_cost(v, issued) for role, v in (server or {}).items()},
        "host_busy": None if host_busy is None else round(host_busy, 3),
    }
    behind = not paced or (lateness_p99_ms is not None and lateness_p99_ms > BEHIND_MS)
    server_cpu = sum(v["cpu_s"] for v in (server or {}).values())
    client_us_op = _per_op_us(client_cpu, issued)
    server_us_op = _per_op_us(server_cpu, issued) if server else None
    busiest = max(cores.items(), key=lambda kv: kv[1]) if cores else None
    why = ""
    if not measured:
        verdict = "unknown"
    elif not behind:
        verdict = "none"
    elif not cores:
        verdict = "unknown"
        why = f"the replay was too short to judge (under {MIN_REPLAY_S:g} s)"
    elif busiest is not None and busiest[1] >= core_limit:
        verdict = "client"
        why = f"worker {busiest[0]} used {busiest[1]:.2f} of a core"
    elif host_busy is not None and host_busy >= SATURATED and (server_us_op is None or (client_us_op or 0) > server_us_op):
        verdict = "client"
        why = f"the host's CPUs were {host_busy:.0%} busy and the client spent more CPU per operation than the server"
    else:
        verdict = "server"
    if verdict == "client" and client_us_op is not None:
        why += f"; client {client_us_op:,.0f} us of CPU per operation" + (
            f" against the server's {server_us_op:,.0f}" if server_us_op is not None else "")
    out["bottleneck"] = verdict
    out["why"] = why
    return out


def cost_warning(cost: dict[str, Any]) -> str | None:
    """The summary's warning when the client, not the server, set the pace (None otherwise)."""
    if cost.get("bottleneck") != "client":
        return None
    return (f"the client, not the server, was the bottleneck ({cost.get('why', '')}): the throughput and latency "
            "measure this client on this machine; more workers, a faster lane or a client on another machine")
