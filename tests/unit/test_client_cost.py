"""Which side set a run's pace (``run.client_cost``), from the CPU each used over the replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mimesisbench.run.client_cost import cost_warning, run_cost


def _workers(*shares: tuple[float, float]) -> list[dict[str, object]]:
    return [{"index": i, "extra": {"cpu_s": cpu, "replay_s": wall}} for i, (cpu, wall) in enumerate(shares)]


def test_a_run_that_kept_up_had_no_bottleneck() -> None:
    cost = run_cost(_workers((0.5, 10.0), (0.7, 10.0)), 10_000, paced=True, lateness_p99_ms=0.4)
    assert cost["bottleneck"] == "none" and cost_warning(cost) is None
    assert cost["client_cpu_s"] == pytest.approx(1.2)
    assert cost["client_cpu_us_per_op"] == pytest.approx(120.0)
    assert cost["client_cores_by_worker"] == {"0": 0.05, "1": 0.07}


def test_a_python_worker_on_a_full_core_behind_its_schedule_is_the_bottleneck() -> None:
    server = {"namenode": {"cpu_s": 1.18, "wall_s": 10.0}}
    cost = run_cost(_workers((9.6, 10.0), (4.0, 10.0)), 10_000, paced=True, lateness_p99_ms=250.0, server=server)
    assert cost["bottleneck"] == "client"
    assert cost["server"]["namenode"] == {"cpu_s": 1.18, "cpu_us_per_op": pytest.approx(118.0), "cores": 0.118}
    switched = run_cost(_workers((1.0, 10.0)), 10_000, paced=True, lateness_p99_ms=1.0,
                        server={"namenode": {**server["namenode"], "voluntary_switches": 15_000.0,
                                             "involuntary_switches": 2_000.0}})
    assert switched["server"]["namenode"]["voluntary_switches_per_op"] == pytest.approx(1.5)
    assert switched["server"]["namenode"]["involuntary_switches_per_op"] == pytest.approx(0.2)
    warning = cost_warning(cost)
    assert warning is not None and "worker 0 used 0.96 of a core" in warning and "1,360 us" in warning
    assert "against the server's 118" in warning


def test_native_lanes_saturate_only_when_they_take_the_host() -> None:
    workers = _workers((9.6, 10.0))
    assert run_cost(workers, 1000, paced=False, lateness_p99_ms=None, native_lanes=True, host_cores=2)["bottleneck"] == "server"
    assert run_cost(_workers((19.0, 10.0)), 1000, paced=False, lateness_p99_ms=None, native_lanes=True,
                    host_cores=2)["bottleneck"] == "client"


def test_a_busy_host_where_the_client_costs_more_than_the_server_blames_the_client() -> None:
    server = {"namenode": {"cpu_s": 2.0, "wall_s": 10.0}}
    busy = run_cost(_workers((5.0, 10.0), (5.0, 10.0)), 10_000, paced=False, lateness_p99_ms=None, server=server,
                    host_busy=0.97)
    assert busy["bottleneck"] == "client" and "97% busy" in busy["why"]
    # the same, with CPU to spare: the server (or the network) set the pace
    spare = run_cost(_workers((5.0, 10.0), (5.0, 10.0)), 10_000, paced=False, lateness_p99_ms=None, server=server,
                     host_busy=0.6)
    assert spare["bottleneck"] == "server" and cost_warning(spare) is None


def test_too_short_or_unmeasured_replays_are_not_judged() -> None:
    short = run_cost(_workers((0.001, 0.002)), 100, paced=False, lateness_p99_ms=None)
    assert short["bottleneck"] == "unknown" and "too short" in short["why"]
    assert run_cost([{"index": 0}], 100, paced=False, lateness_p99_ms=None)["bottleneck"] == "unknown"


def test_every_run_records_its_mode_and_cost(tmp_path: Path) -> None:
    """A real (memory backend) run: the summary says it was paced and what the client spent."""
    from mimesisbench.run.config import RunConfig
    from mimesisbench.run.coordinator import run_benchmark
    from mimesisbench.run.synthetic import write_phased_schedule
    from mimesisbench.schedule.format import OpCode

    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=300, phases=(OpCode.CREATE, OpCode.OPEN),
                                     rate_per_s=500.0)
    report = run_benchmark(RunConfig(schedule=str(schedule), backend="memory", out=str(tmp_path / "runs")),
                           console=None, show_progress=False)
    summary = json.loads((report.run_dir / "summary.json").read_text())
    assert summary["mode"] == "paced"
    cost = summary["cost"]
    assert cost["client_cpu_s"] > 0 and cost["client_cpu_us_per_op"] > 0 and cost["server"] == {}
    assert 0 <= cost["host_busy"] <= 1 and cost["bottleneck"] in ("none", "client", "server")
    fast = run_benchmark(RunConfig(schedule=str(schedule), backend="memory", out=str(tmp_path / "runs"), time_scale=0.0),
                         console=None, show_progress=False)
    assert json.loads((fast.run_dir / "summary.json").read_text())["mode"] == "as-fast-as-possible"
