"""Where Ray puts the worker actors: best-effort spread, or one per node (``--spread``).

``--spread`` reserves a ``STRICT_SPREAD`` placement group, one bundle per worker: never two
workers on one node. With fewer suitable nodes than workers the group would stay pending
forever, so the node count is checked first and ``pg.ready()`` is awaited with a timeout; both
fail with ``EnvironmentProblem`` saying what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mimesisbench.errors import EnvironmentProblem


@dataclass(frozen=True)
class ClusterView:
    """The alive nodes and their total CPUs (what Ray reports)."""

    nodes: int
    cpus_per_node: tuple[float, ...]

    def nodes_with(self, cpus: float) -> int:
        return sum(1 for c in self.cpus_per_node if c >= cpus)

    @property
    def total_cpus(self) -> float:
        return float(sum(self.cpus_per_node))

    def describe(self) -> str:
        cpus = ", ".join(f"{c:g}" for c in self.cpus_per_node)
        return f"{self.nodes} alive node(s) with CPUs [{cpus}]"


def cluster_view(ray: Any) -> ClusterView:
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return ClusterView(len(alive), tuple(float(n.get("Resources", {}).get("CPU", 0.0)) for n in alive))


def check_capacity(view: ClusterView, workers: int, cpus: float, spread: bool) -> None:
    """Fail at once when the cluster cannot hold the workers at all (waiting would hang)."""
    if spread and view.nodes_with(cpus) < workers:
        raise EnvironmentProblem(
            f"--spread needs {workers} nodes with at least {cpus:g} CPU each (one worker per node), "
            f"but the Ray cluster has {view.nodes_with(cpus)} such node(s) ({view.describe()}); "
            "add nodes (`ray start --address HEAD:PORT` on each client machine) or use fewer --workers"
        )
    if view.total_cpus < workers * cpus:
        raise EnvironmentProblem(
            f"{workers} workers need {workers * cpus:g} CPUs but the Ray cluster has {view.total_cpus:g} "
            f"({view.describe()}); add nodes or use fewer --workers"
        )


def strict_spread(ray: Any, workers: int, cpus: float, timeout_s: float) -> Any:
    """A ready ``STRICT_SPREAD`` placement group of ``workers`` bundles, or ``EnvironmentProblem``."""
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group([{"CPU": cpus}] * workers, strategy="STRICT_SPREAD")
    ready, _ = ray.wait([group.ready()], timeout=timeout_s)
    if not ready:
        remove_placement_group(group)
        view = cluster_view(ray)
        raise EnvironmentProblem(
            f"--spread: could not reserve {workers} nodes with {cpus:g} free CPU each within {timeout_s:g} s "
            f"({view.describe()}; other jobs may hold the CPUs); add nodes or use fewer --workers"
        )
    return group


def actor_options(index: int, cpus: float, group: Any | None) -> dict[str, Any]:
    """``.options(...)`` for worker ``index``: its bundle of the group, or Ray's SPREAD strategy."""
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    options: dict[str, Any] = {
        "num_cpus": cpus,
        "max_concurrency": 4,  # run + progress/clock/stop at the same time
        "max_restarts": 0,
        "max_task_retries": 0,
    }
    if group is not None:
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            placement_group=group, placement_group_bundle_index=index
        )
    else:
        options["scheduling_strategy"] = "SPREAD"
    return options
