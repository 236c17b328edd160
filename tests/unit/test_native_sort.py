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
