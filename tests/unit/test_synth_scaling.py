"""Scaling and isolation: the paper's equations (1)-(3), time and span scaling, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synth_helpers import make_profile

from mimesisbench.errors import ConfigError
from mimesisbench.profile.distribution import Distribution
from mimesisbench.synth.scaling import isolate, scale_files, scale_span, scale_time, scale_type


def test_scale_type_follows_equations_1_to_3() -> None:
    p = make_profile(n=1000)  # w1 = 0.6, w2 = 0.4
    q = scale_type(p, 1, 2.0)
    n, w1, w2 = p.total_creates, 0.6, 0.4
    n_new = n + w1 * n  # (1)
    assert q.total_creates == round(n_new) == 1600
    assert math.isclose(q.type_by_id(1).weight * n_new, 2 * w1 * n, rel_tol=1e-12)  # (2)
    assert math.isclose(q.type_by_id(2).weight * n_new, w2 * n, rel_tol=1e-12)  # (3)
    assert math.isclose(sum(t.weight for t in q.types), 1.0, rel_tol=1e-12)
    assert q.type_by_id(1).pre_existing == 600 and q.type_by_id(2).pre_existing == 200
    assert p.total_creates == 1000  # the input is untouched


def test_scale_type_halving() -> None:
    q = scale_type(make_profile(n=1000), 2, 0.5)
    assert q.total_creates == 800
    assert math.isclose(q.type_by_id(2).weight * 800, 200, rel_tol=1e-12)


def test_scale_files_scales_n_and_pre_existing() -> None:
    q = scale_files(make_profile(n=1000, pre=(300, 200, 51)), 3.0)
    assert q.total_creates == 3000
    assert [t.pre_existing for t in q.types] == [900, 600, 153]
    assert [t.weight for t in q.types] == [0.6, 0.4, 0.0]


def test_scale_time_multiplies_every_time_and_the_window() -> None:
    p = make_profile()
    q = scale_time(p, 0.25)
    assert q.window_ms == p.window_ms // 4
    for key in ("create_interarrival", "activation_delay", "active_span", "access_interarrival", "delete_delay"):
        a, b = getattr(p.type_by_id(1), key), getattr(q.type_by_id(1), key)
        assert [v * 0.25 for v in a.values] == b.values and a.weights == b.weights


def test_scale_span_only_touches_spans() -> None:
    p = make_profile()
    q = scale_span(p, 3.0)
    assert q.type_by_id(2).active_span.values == [v * 3.0 for v in p.type_by_id(2).active_span.values]
    assert q.type_by_id(2).access_interarrival == p.type_by_id(2).access_interarrival


def test_isolate_renormalises_weights() -> None:
    q = isolate(make_profile(n=1000), [2, 3])
    assert [t.id for t in q.types] == [2, 3]
    assert q.type_by_id(2).weight == 1.0 and q.total_creates == 400
    only_pre = isolate(make_profile(n=1000), [3])
    assert only_pre.total_creates == 0 and only_pre.type_by_id(3).pre_existing == 50


@pytest.mark.parametrize(
    ("call", "option"),
    [
        (lambda p: scale_files(p, 0.0), "--scale-files"),
        (lambda p: scale_type(p, 1, -1.0), "--scale-type"),
        (lambda p: scale_type(p, 99, 2.0), "--scale-type"),
        (lambda p: scale_time(p, -0.5), "--time-scale"),
        (lambda p: scale_span(p, 0.0), "--span-scale"),
        (lambda p: isolate(p, [4]), "--types"),
        (lambda p: isolate(p, []), "--types"),
    ],
)
def test_bad_scales_name_the_option(call, option: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=option):
        call(make_profile())


def _fitted_like() -> object:
    """A profile whose distributions are fitted from tie-heavy samples, as fitted from audit logs
    (millisecond timestamps give many equal gaps), plus a table with the ``(x - 1 ulp, x)``
    pairs that profiles fitted by earlier versions hold."""
    rng = np.random.default_rng(8)

    def tied(mean: float) -> Distribution:
        return Distribution.from_samples(np.round(rng.exponential(mean, 3000)), points=64)

    legacy = Distribution(
        values=[0.0, float(np.nextafter(250.0, 0.0)), 250.0, 4000.0], weights=[0.1, 0.3, 0.3, 0.3]
    )
    p = make_profile(f_mean=(15.0, 30.0, 20.0))
    types = [
        t.model_copy(
            update={"active_span": tied(20.0), "access_interarrival": legacy if t.id == 2 else tied(3.0),
                    "activation_delay": tied(5.0)}
        )
        for t in p.types
    ]
    return p.model_copy(update={"types": types})


@settings(max_examples=60, deadline=None, derandomize=True)
@given(factor=st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_time_and_span_scaling_of_fitted_profiles_work_for_any_factor(factor: float) -> None:
    p = _fitted_like()
    q = scale_time(p, factor)  # validated on the way out: no "values must be ascending"
    r = scale_span(p, factor)
    for t, tq, tr in zip(p.types, q.types, r.types):
        assert tq.access_interarrival.mean() == pytest.approx(t.access_interarrival.mean() * factor, rel=1e-9)
        assert tr.active_span.mean() == pytest.approx(t.active_span.mean() * factor, rel=1e-9)
