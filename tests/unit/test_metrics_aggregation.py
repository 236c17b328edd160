"""Live metrics, worker side and coordinator side, without processes: buckets, deltas, totals,
and the exposition text of the collector."""

from __future__ import annotations

import numpy as np
import polars as pl
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mimesisbench.monitoring.live_stats import BOUNDS_NS, N_BUCKETS, LiveTap, aggregate, bucket_index
from mimesisbench.monitoring.live_totals import LiveTotals
from mimesisbench.monitoring.prometheus import LE_LABELS, MetricsEndpoint
from mimesisbench.run.lanes import Lane
from mimesisbench.schedule.format import OpCode


def _reference_bucket(values: np.ndarray) -> np.ndarray:
    """Prometheus semantics by binary search: first bound >= value."""
    return np.searchsorted(np.array(BOUNDS_NS, dtype=np.int64), values, side="left")


def test_bucket_index_matches_binary_search_at_every_edge() -> None:
    edges = np.array(BOUNDS_NS, dtype=np.int64)
    values = np.concatenate([edges - 1, edges, edges + 1, [-5, 0, 1, 1 << 40, 1 << 60]])
    assert np.array_equal(bucket_index(values), _reference_bucket(values))
    rng = np.random.default_rng(3)
    random = rng.lognormal(12, 4, 100_000).astype(np.int64)
    assert np.array_equal(bucket_index(random), _reference_bucket(random))
    assert bucket_index(np.array([1 << 45])).item() == N_BUCKETS - 1  # +Inf


def test_aggregate_counts_and_sums() -> None:
    keys = np.array([[int(OpCode.OPEN), 1], [int(OpCode.CREATE), 2], [int(OpCode.DELETE), 2]])
    codes = np.array([0, 0, 1, 1, 1])  # key 2 has no sample: it is dropped
    sched = np.array([0, 0, 100, 100, 100])
    start = np.array([10, 5_000, 200, 300, 400])
    end = np.array([2_000, 9_000, 300_000, 400, 500])
    outcome = np.array([0, 1, 0, 0, 4])
    d = aggregate(codes, keys, sched, start, end, outcome, in_flight=7)
    assert d.keys.tolist() == [[int(OpCode.OPEN), 1], [int(OpCode.CREATE), 2]]
    assert d.outcomes[0].tolist() == [1, 1, 0, 0, 0]
    assert d.outcomes[1].tolist() == [2, 0, 0, 0, 1]
    assert d.buckets.shape == (3, 2, N_BUCKETS)
    assert d.buckets.sum(axis=2).tolist() == [[2, 3]] * 3
    assert d.sums_ns[0].tolist() == [11_000.0, 299_900.0 + 300 + 400]  # latency: end - scheduled
    assert d.sums_ns[1].tolist() == [1_990.0 + 4_000.0, 299_800.0 + 100 + 100]  # service: end - start
    assert d.sums_ns[2].tolist() == [5_010.0, 100.0 + 200 + 300]  # lateness: start - scheduled
    assert d.buckets[0, 0].tolist() == np.bincount(_reference_bucket(np.array([2_000, 9_000])), minlength=N_BUCKETS).tolist()
    assert d.in_flight == 7 and d.operations == 5


def _lane(ops: list[OpCode], due: list[int], rows: list[int]) -> Lane:
    n = len(ops)
    return Lane(
        rows=np.array(rows, dtype=np.int64),
        ops=np.array([int(o) for o in ops], dtype=np.uint8),
        due_ns=np.array(due, dtype=np.int64),
        paths=pl.Series([f"/f{i}" for i in range(n)]),
        paths2=None,
    )


def test_tap_deltas_over_ticks_sum_to_everything_recorded() -> None:
    origin = 1_000_000_000
    lane_a = _lane([OpCode.OPEN, OpCode.OPEN, OpCode.GETFILEINFO, OpCode.OPEN], [0, 1000, 2000, 50_000], [0, 2, 4, 6])
    lane_b = _lane([OpCode.CREATE, OpCode.DELETE], [500, 1500], [1, 3])
    types = np.array([1, 2, 1, 2, 1, 0, 1])
    tap = LiveTap([lane_a, lane_b], types)
    for lane in (lane_a, lane_b):
        lane.start_ns[:] = origin + lane.due_ns + 100
        lane.end_ns[:] = lane.start_ns + 3_000
    lane_a.outcome[1] = 1
    lane_a.count, lane_b.count = 2, 1
    first = tap.delta(origin, origin + 10_000)
    assert first.operations == 3
    assert first.in_flight == (3 - 2) + (2 - 1)  # due by 10 us and not recorded
    lane_a.count, lane_b.count = 4, 2
    second = tap.delta(origin, origin + 100_000)
    third = tap.delta(origin, origin + 200_000)
    assert second.operations == 3 and third.operations == 0 and third.in_flight == 0
    totals = LiveTotals("r1", scheduled=6)
    for d in (first, second, third):
        totals.add(0, d)
    snap = totals.snapshot()
    per_op = {(op, t): v.outcomes.sum() for (op, t), v in snap.per_key.items()}
    assert per_op == {(int(OpCode.OPEN), 1): 3, (int(OpCode.GETFILEINFO), 1): 1,
                      (int(OpCode.CREATE), 2): 1, (int(OpCode.DELETE), 2): 1}
    assert sum(int(v.outcomes[1]) for v in snap.per_key.values()) == 1
    # service time is 3 us for everything: one bucket
    for v in snap.per_key.values():
        assert v.buckets[1].sum() == v.outcomes.sum()
        assert v.buckets[1][bucket_index(np.array([3_000]))[0]] == v.outcomes.sum()


def test_exposition_parses_and_histograms_are_cumulative() -> None:
    totals = LiveTotals("run-x", scheduled=10, info={"backend": "memory"})
    keys = np.array([[int(OpCode.OPEN), 1]])
    d = aggregate(np.zeros(4, np.int64), keys, np.zeros(4, np.int64), np.array([0, 0, 0, 0]),
                  np.array([500, 5_000, 50_000, 10**12]), np.array([0, 0, 2, 0]), in_flight=3)
    totals.add(0, d)
    totals.set_lag(0, 1_500_000_000)
    totals.set_phase("replay")
    endpoint = MetricsEndpoint(totals)  # not started: render the private registry directly
    text = generate_latest(endpoint.registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    ops = {(s.labels["op"], s.labels["outcome"]): s.value for s in families["mimesisbench_operations"].samples
           if s.name == "mimesisbench_operations_total"}
    assert ops[("open", "ok")] == 3 and ops[("open", "exists")] == 1 and sum(ops.values()) == 4
    lat = [s for s in families["mimesisbench_latency_seconds"].samples if s.name.endswith("_bucket")]
    assert [s.labels["le"] for s in lat] == [*LE_LABELS, "+Inf"]
    counts = [s.value for s in lat]
    assert counts == sorted(counts) and counts[-1] == 4 and counts[-2] == 3  # 1000 s is above the last bound
    count = next(s.value for s in families["mimesisbench_latency_seconds"].samples if s.name.endswith("_count"))
    assert count == 4
    phase = {s.labels["phase"]: s.value for s in families["mimesisbench_phase"].samples}
    assert phase["replay"] == 1 and sum(phase.values()) == 1
    assert next(iter(families["mimesisbench_in_flight"].samples)).value == 3
    assert next(iter(families["mimesisbench_lag_seconds"].samples)).value == 1.5
    assert all(s.labels["run_id"] == "run-x" for f in families.values() for s in f.samples)


def test_accumulator_buckets_every_edge_like_binary_search() -> None:
    edges = np.array(BOUNDS_NS, dtype=np.int64)
    values = np.concatenate([edges - 1, edges, edges + 1, [-5, -1, 0, 1, 2, 1 << 40]])
    n = len(values)
    keys = np.array([[int(OpCode.OPEN), 1]])
    zeros = np.zeros(n, np.int64)
    # service = end - start = values; lateness = start - scheduled = values too; latency = 2 * values
    d = aggregate(zeros, keys, -values, zeros, values, np.zeros(n, np.uint8))
    expected = np.bincount(_reference_bucket(values), minlength=N_BUCKETS)
    assert d.buckets[1, 0].tolist() == expected.tolist()
    assert d.buckets[2, 0].tolist() == expected.tolist()
    assert d.buckets[0, 0].tolist() == np.bincount(_reference_bucket(2 * values), minlength=N_BUCKETS).tolist()
    assert d.sums_ns[:, 0].tolist() == [2.0 * values.sum(), float(values.sum()), float(values.sum())]
