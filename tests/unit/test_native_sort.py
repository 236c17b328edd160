"""The native sort of the schedule's event keys against numpy's: same order, same schedules.

The native core is required by the test suite (``scripts/setup.sh --dev`` builds it)."""

from __future__ import annotations

import numpy as np
import pytest
from test_synth_helpers import make_profile

from mimesisbench.native import ENV_SWITCH, native_module
from mimesisbench.synth import schedule as schedule_module
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.schedule import generate_schedule


def _native() -> object:
    module = native_module()
    assert module is not None, "the native core is not installed: run scripts/setup.sh --dev"
    return module


@pytest.mark.parametrize("bits", [20, 40, 62])
def test_sort_keys_sorts_like_numpy(bits: int) -> None:
    rng = np.random.default_rng(bits)
    keys = np.unique(rng.integers(0, 1 << bits, 300_000, dtype=np.int64))
    rng.shuffle(keys)
    expected = np.sort(keys)
    _native().sort_keys(keys)  # type: ignore[attr-defined]
    assert np.array_equal(keys, expected)


def test_sort_keys_refuses_a_strided_array() -> None:
    keys = np.arange(20, dtype=np.int64)[::-2]
    with pytest.raises(ValueError, match="contiguous"):
        _native().sort_keys(keys)  # type: ignore[attr-defined]


def test_sort_unique_takes_the_native_path_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 1 << 50, 200_000, dtype=np.int64))
    rng.shuffle(keys)
    calls: list[int] = []
    real = _native().sort_keys  # type: ignore[attr-defined]

    class Spy:
        def sort_keys(self, k: np.ndarray) -> None:
            calls.append(k.size)
            real(k)

    with monkeypatch.context() as m:
        m.setattr(schedule_module, "native_module", lambda: Spy())
        native_sorted = schedule_module._sort_unique(keys.copy())
    with monkeypatch.context() as m:
        m.setenv(ENV_SWITCH, "0")
        numpy_sorted = schedule_module._sort_unique(keys.copy())
    assert calls == [keys.size]
    assert np.array_equal(native_sorted, numpy_sorted) and np.array_equal(numpy_sorted, np.sort(keys))


def test_schedules_are_identical_with_and_without_the_native_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = make_profile(n=60_000, pre=(40_000, 30_000, 20_000), window_ms=600_000)
    with_native = generate_schedule(profile, GenerateOptions(), 7)
    assert with_native.time_us.size > schedule_module.BUCKET_MIN  # the sort that differs runs
    with monkeypatch.context() as m:
        m.setenv(ENV_SWITCH, "0")
        without = generate_schedule(profile, GenerateOptions(), 7)
    for name in ("time_us", "op", "target"):
        assert np.array_equal(getattr(with_native, name), getattr(without, name)), name


@pytest.mark.parametrize("objects", [7, 300, 100_000])
def test_group_order_groups_stably_like_numpy(objects: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The native counting sort and the numpy digit passes (``MIMESISBENCH_NATIVE=0``) give the
    stable order by key: keys of one and two 16-bit digits, events in time order."""
    from mimesisbench.model import objects as objects_module

    rng = np.random.default_rng(objects)
    keys = rng.integers(0, objects, 400_000).astype(np.int32)
    times = np.sort(rng.integers(0, 10**6, keys.size))
    expected = np.argsort(keys, kind="stable")
    native_order = objects_module._group_order(keys, times)
    with monkeypatch.context() as m:
        m.setenv(ENV_SWITCH, "0")
        numpy_order = objects_module._group_order(keys, times)
    assert np.array_equal(native_order, expected) and np.array_equal(numpy_order, expected)
    assert native_order.dtype == np.uint32  # the native path ran (numpy's gives intp or int32)


def test_group_order_refuses_a_key_out_of_range() -> None:
    with pytest.raises(ValueError, match="outside"):
        _native().group_order(np.array([0, 5, 2], dtype=np.int32), 3)  # type: ignore[attr-defined]


def test_sorted_floats_native_and_numpy_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit's sort of gaps (``profile.distribution.sorted_floats``): the native radix sort and
    numpy's give the same array, signed zeros and infinities included; the samples are not sorted in place."""
    from mimesisbench.profile import distribution

    rng = np.random.default_rng(8)
    samples = np.concatenate([rng.lognormal(6, 3, 50_000).round(), -rng.lognormal(1, 2, 5_000),
                              [0.0, -0.0, np.inf, -np.inf, -0.0]])
    rng.shuffle(samples)
    kept = samples.copy()
    calls: list[int] = []
    real = _native().sort_floats  # type: ignore[attr-defined]

    class Spy:
        def sort_floats(self, values: np.ndarray) -> None:
            calls.append(values.size)
            real(values)

    with monkeypatch.context() as m:
        m.setattr(distribution, "native_module", lambda: Spy())
        native_sorted = distribution.sorted_floats(samples)
    with monkeypatch.context() as m:
        m.setenv(ENV_SWITCH, "0")
        numpy_sorted = distribution.sorted_floats(samples)
    assert calls == [samples.size]
    assert np.array_equal(native_sorted, numpy_sorted) and np.array_equal(samples, kept)
    assert not np.signbit(native_sorted[native_sorted == 0]).any()  # -0.0 came out as 0.0
