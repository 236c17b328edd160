"""Memory of ``mimesisbench model`` per event and per path: what the fit's stages hold and their
temporaries, measured with ``tracemalloc`` (numpy reports its arrays to it; the counts are exact,
so the bounds hold on any machine and under any load). Each bound sits between the figure of the
code and the figure it had before a stage was made leaner (noted per test)."""

from __future__ import annotations

import gc
import hashlib
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import polars as pl
import pytest

from mimesisbench.model import fit as fit_module
from mimesisbench.model import objects as objects_module
from mimesisbench.model.fit import FitConfig, fit_types, prepare
from mimesisbench.model.objects import _relative_kept_times, build_view

T0 = 1_700_000_000_000
PATHS = 400
EVENTS = 200_000
OPS = ("open", "getfileinfo", "listStatus", "open", "setPermission", "getfileinfo", "open")


def synthetic_events(paths: int = PATHS, events: int = EVENTS, seed: int = 7) -> pl.DataFrame:
    """``events`` events (1 % of them denied) over ``paths`` pre-existing files, in time order:
    many accesses per path, so per-access memory shows apart from per-path memory."""
    rng = np.random.default_rng(seed)
    names = pl.Series([f"/data/p{i % 7}/f{i:05d}" for i in range(paths)])
    ops = pl.Series(OPS)
    return pl.DataFrame(
        {
            "time_ms": T0 + np.cumsum(rng.integers(0, 40, events)),
            "op": ops.gather(rng.integers(0, ops.len(), events)).cast(pl.Categorical),
            "path": names.gather(rng.integers(0, paths, events)).cast(pl.Categorical),
            "dst": pl.Series([None] * events, dtype=pl.String).cast(pl.Categorical),
            "user": pl.Series(["alice"] * events).cast(pl.Categorical),
            "allowed": rng.random(events) > 0.01,  # a few denied: the kept rows are copied out
        }
    )


@pytest.fixture(scope="module")
def events() -> pl.DataFrame:
    return synthetic_events()


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def held_and_peak(step: Callable[[], Any]) -> tuple[Any, int, int]:
    """``step()``'s result, the traced bytes it leaves allocated (its result included) and its
    peak of traced bytes, both above what was allocated before it."""
    gc.collect()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    out = step()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    return out, current - before, peak - before


def test_view_without_event_tables_holds_no_event_column(events: pl.DataFrame, traced: None) -> None:
    # the view holds its access table (obj 4 + time 8 + cmd 1 bytes per access) and the objects;
    # an empty event table made of ``[:0]`` views kept the time (8) and object (4) columns of every
    # event alive beside them: 25 bytes per event
    view, held, _ = held_and_peak(lambda: build_view(events, event_tables=False))
    assert view.events.height == 0 and view.accesses.height == events["allowed"].sum()
    assert held < 16 * events.height


def test_features_count_commands_a_chunk_at_a_time(
    events: pl.DataFrame, traced: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the counts per object and command were keyed by one int64 array of every access and its
    # temporaries (about 32 bytes per access at once); now a mask of the accesses per command
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    reference = {kind: m.copy() for kind, m in fo.features().items()}  # with the default chunk
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    monkeypatch.setattr(fit_module, "COUNT_ROWS", 4096, raising=False)
    features, _, peak = held_and_peak(fo.features)
    assert peak < 8 * events.height
    assert features.keys() == reference.keys()
    for kind, matrix in features.items():
        np.testing.assert_array_equal(matrix, reference[kind])


def test_feature_shares_are_each_objects_shares_of_its_top_commands(
    events: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    monkeypatch.setattr(fit_module, "COUNT_ROWS", 777)  # objects' runs straddle chunks
    features = fo.features()
    rows = fo.access_object_rows(slice(0, fo.acc_time.size))
    accesses = np.maximum(fo.objects["accesses"].to_numpy(), 1)
    for kind, matrix in features.items():
        tops = fo.top_commands[kind]
        kind_rows = fo.rows(kind)
        for j, cmd in enumerate(tops):
            counts = np.bincount(rows[fo.acc_cmd == cmd], minlength=fo.objects.height)
            np.testing.assert_array_equal(matrix[:, matrix.shape[1] - len(tops) + j],
                                          counts[kind_rows] / accesses[kind_rows].astype(np.float64))


def test_types_gather_their_accesses_without_an_order_of_all(
    events: pl.DataFrame, traced: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an argsort of every access by type (8 bytes per access) and its keys (2 + 2) were held while
    # the types were fitted; now each type gathers its objects' runs of accesses. Measured around
    # the grouping alone: each type's fit is replaced by a record of the accesses it was given.
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    fo.columns, fo.is_dir  # noqa: B018 (cached per fit, not per labelling)
    given: dict[int, tuple[np.ndarray, str]] = {}

    def digest(obj: np.ndarray, time: np.ndarray, cmd: np.ndarray) -> str:
        return hashlib.sha256(obj.tobytes() + time.tobytes() + cmd.tobytes()).hexdigest()

    def record(type_id: int, kind: str, cols: Any, rows: np.ndarray, acc: Any, *args: Any) -> None:
        given[type_id] = (rows, digest(acc.obj, acc.time, acc.cmd))  # not the accesses: traced memory

    monkeypatch.setattr(fit_module, "_fit_type", record)
    labels = (np.arange(fo.objects.height) % 37 + 1).astype(np.int16)
    _, _, peak = held_and_peak(lambda: fit_types(fo, labels, FitConfig(types=2, seed=1)))
    assert peak < 4 * events.height
    # each type's accesses are its objects' accesses, in the access table's order
    obj_ids = fo.objects["obj"].to_numpy()
    acc_obj = build_view(events, event_tables=False, modelled_only=True).accesses["obj"].to_numpy()
    acc_rows = np.searchsorted(obj_ids, acc_obj).astype(np.int32)  # each access's object row
    assert sorted(given) == list(range(1, 38))
    for type_id, (rows, seen) in given.items():
        np.testing.assert_array_equal(rows, np.flatnonzero(labels == type_id))
        at = np.isin(acc_obj, obj_ids[rows])
        assert seen == digest(acc_rows[at], fo.acc_time[at], fo.acc_cmd[at])


def test_operation_counts_a_chunk_of_rows_at_a_time(
    events: pl.DataFrame, traced: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an index of every counted row (8 bytes), its codes (4) and numpy's intp copy of them (8)
    # were made at once: about 20 bytes per event
    expected = fit_module.operation_counts(events)
    monkeypatch.setattr(fit_module, "COUNT_ROWS", 4096, raising=False)
    counts, _, peak = held_and_peak(lambda: fit_module.operation_counts(events))
    assert peak < 8 * events.height
    allowed = events.filter(pl.col("allowed"))
    assert counts == expected == {str(k): int(v) for k, v in allowed["op"].cast(pl.String).value_counts().iter_rows()}


def test_view_peak_per_event(events: pl.DataFrame, traced: None) -> None:
    # grouping the events by object made a grouped copy of every time (8 bytes per event) and
    # per-object arrays over every path id: about 40 bytes per event at the peak, now about 34
    view, _, peak = held_and_peak(lambda: build_view(events, event_tables=False, modelled_only=True))
    assert view.accesses.height > 0
    assert peak < 37 * events.height


def test_fit_keeps_accesses_in_five_bytes(events: pl.DataFrame) -> None:
    # time as int32 ms since an origin (4, was the absolute int64) and command (1); each object's
    # accesses are a run (8 bytes per object), not an object id per access (4); the view's own
    # access table is not kept beside the arrays
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    n = fo.acc_time.size
    assert fo.acc_time.nbytes + fo.acc_cmd.nbytes <= 5 * n and fo.acc_start.size == fo.objects.height + 1
    assert fo.view.accesses.height == 0
    accesses = build_view(events, event_tables=False, modelled_only=True).accesses
    absolute = accesses["time_ms"].to_numpy()
    assert absolute.dtype == np.int64  # relative times only when asked for
    np.testing.assert_array_equal(absolute - fo.acc_time, np.full(n, int(events["time_ms"].min())))
    rows = np.searchsorted(fo.objects["obj"].to_numpy(), accesses["obj"].to_numpy())
    for start, stop in ((0, n), (0, 1), (5, 6), (17, 4000), (n - 3, n), (n - 1, n + 10), (n, n)):
        np.testing.assert_array_equal(fo.access_object_rows(slice(start, stop)), rows[start:stop])


def test_relative_kept_times_keep_int64_past_int32(monkeypatch: pytest.MonkeyPatch) -> None:
    times = np.array([0, 5, 2**31 + 7], dtype=np.int64) + T0
    out, base = _relative_kept_times(times, None)
    assert out.dtype == np.int64 and base == 0 and (out == times).all()
    short, base = _relative_kept_times(times[:2], np.array([False, True]))
    assert short.dtype == np.int32 and base == T0 and short.tolist() == [5]
    monkeypatch.setattr(objects_module, "EVENT_ROWS", 2)  # chunks of rows give the same
    chunked, _ = _relative_kept_times(np.arange(9, dtype=np.int64) + T0, np.arange(9) % 3 > 0)
    assert chunked.tolist() == [1, 2, 4, 5, 7, 8]


def test_features_of_many_objects_a_column_at_a_time(traced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # a copy of each kind's object table, a list of share arrays and the counts per object and
    # command were alive beside the matrix: about 200 bytes per object at the peak, now about 125
    many = synthetic_events(paths=50_000, events=200_000)
    fo = prepare(many, None, FitConfig(types=2, seed=1))
    fo.top_commands  # noqa: B018 (cached)
    monkeypatch.setattr(fit_module, "COUNT_ROWS", 4096, raising=False)  # what a chunk adds: per access
    features, _, peak = held_and_peak(fo.features)
    assert sum(m.shape[0] for m in features.values()) == fo.objects.height
    assert peak < 150 * fo.objects.height


def test_command_chain_peak_per_access(events: pl.DataFrame, traced: None) -> None:
    # local command ids and transition keys were int64 and the gaps made twice: about 42 bytes
    # per access, now 16-bit keys and the type's gaps: about 24
    fo = prepare(events, None, FitConfig(types=2, seed=1))
    acc_obj = fo.access_object_rows(slice(0, fo.acc_time.size))
    gaps = np.diff(fo.acc_time)[acc_obj[1:] == acc_obj[:-1]]
    reference = fit_module._command_chain(acc_obj, fo.acc_time, fo.acc_cmd, fo.view.commands, 64)
    chain, _, peak = held_and_peak(
        lambda: fit_module._command_chain(acc_obj, fo.acc_time, fo.acc_cmd, fo.view.commands, 64, gaps)
    )
    assert peak < 32 * acc_obj.size
    assert chain == reference
