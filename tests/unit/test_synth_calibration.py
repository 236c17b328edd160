"""The calibrated interarrival sampling of span-driven types (``access_gap_sampling``)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from test_synth_access_rule import _accesses
from test_synth_helpers import make_profile

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType, GapSampling
from mimesisbench.synth.calibration import calibrate_gaps, closing_gaps
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.scaling import scale_span, scale_time
from mimesisbench.synth.schedule import generate_schedule
from mimesisbench.synth.streams import Sampler


def _dist(samples: np.ndarray) -> Distribution:
    return Distribution.from_samples(samples, points=128)


RNG = np.random.default_rng(1)
#: F_j not much shorter than H_j: about four interarrivals per file, the closing rule biases F
F = _dist(RNG.exponential(3000.0, 20_000))
H = _dist(RNG.uniform(5000.0, 20_000.0, 20_000))


def _table(cal_dist: Distribution, ks: float = 0.01, raw: float = 0.07) -> GapSampling:
    return GapSampling(distribution=cal_dist, ks=ks, ks_uncalibrated=raw, seed=2014, spans=1000, rounds=3)


def test_closing_gaps_sum_to_the_spans() -> None:
    span = np.array([0, 1, 5_000_000, 12_345_678, 40_000_000], dtype=np.int64)
    gaps = closing_gaps(span, Sampler(F), np.random.default_rng(0))
    assert gaps.min() >= 0
    assert gaps.sum() == span.sum()  # accepted draws plus closing gaps fill every span exactly


def test_calibration_brings_pooled_gaps_to_f() -> None:
    cal = calibrate_gaps(F, H, seed=7)
    assert cal is not None and cal.rounds > 0
    assert cal.ks_uncalibrated > 0.05  # the closing rule's bias without calibration
    assert cal.ks < 0.015
    assert cal.distribution.values == F.values  # F's support, reweighted
    assert cal.distribution.mean() > F.mean()  # long draws made likelier: they rarely fit
    again = calibrate_gaps(F, H, seed=7)
    assert again is not None and again.distribution == cal.distribution  # deterministic


def test_generated_gaps_follow_f_and_spans_stay_exact() -> None:
    cal = calibrate_gaps(F, H)
    assert cal is not None
    kw = dict(n=2000, pre=(30_000, 30_000, 100), window_ms=10**9, active_span=H, access_interarrival=F)
    kw.update(delete_share=0.0, accessed_share=1.0)
    plain = make_profile(**kw)
    calibrated = make_profile(**kw, access_gap_sampling=_table(cal.distribution))
    ks: dict[str, tuple[float, float]] = {}
    for name, profile in (("plain", plain), ("calibrated", calibrated)):
        s = generate_schedule(profile, GenerateOptions(), 5)
        target, times = _accesses(s, 1)
        same = target[1:] == target[:-1]
        gaps_ms = np.diff(times)[same] / 1000.0
        starts = np.flatnonzero(np.concatenate([[True], ~same]))
        ends = np.concatenate([starts[1:], [target.size]]) - 1
        spans_ms = (times[ends] - times[starts]) / 1000.0
        ks[name] = (ks_distance(gaps_ms, F.cdf) or 1.0, ks_distance(spans_ms, H.cdf) or 1.0)
        assert gaps_ms.size > 100_000
    assert ks["plain"][0] > 0.05, ks
    assert ks["calibrated"][0] < 0.015, ks  # within noise of F (about 120,000 gaps)
    assert ks["calibrated"][1] < 0.01, ks  # spans exact: H draws (noise at 30,000 files 0.008)


def test_calibration_never_worse_when_f_cannot_be_reached() -> None:
    """28.7 % of F lies above the largest span: no gap can be that long."""
    rng = np.random.default_rng(2)
    f = _dist(rng.exponential(8000.0, 20_000))
    h = _dist(rng.uniform(1000.0, 10_000.0, 20_000))
    cal = calibrate_gaps(f, h)
    assert cal is not None
    unreachable = 1.0 - float(f.cdf(h.values[-1]))
    assert cal.ks <= cal.ks_uncalibrated
    assert cal.ks >= unreachable - 0.01  # the bound: KS at least the mass above the largest span
    assert cal.ks < unreachable + 0.02  # and the calibration gets close to it


def test_nothing_to_calibrate() -> None:
    assert calibrate_gaps(F, Distribution.point(0.0)) is None  # single accesses: no gaps
    short = _dist(np.random.default_rng(3).exponential(10.0, 20_000))
    cal = calibrate_gaps(short, H)  # F far shorter than H: already unbiased, round 0 kept
    assert cal is not None and cal.rounds == 0 and cal.ks == cal.ks_uncalibrated < 0.01


def _type(**kw: object) -> FileType:
    spec: dict[str, object] = dict(id=1, weight=0.0, pre_existing=10, activation_delay=H, active_span=H)
    spec.update(kw)
    return FileType(**spec)  # type: ignore[arg-type]


def test_schema_validates_the_table_and_names_the_key() -> None:
    ok = _type(access_interarrival=F, access_gap_sampling=_table(F))
    assert ok.access_gap_sampling is not None
    assert FileType.model_validate_json(ok.model_dump_json()) == ok
    with pytest.raises(ValidationError, match="access_gap_sampling"):
        FileType(id=1, weight=0.0, pre_existing=0, accessed_share=0.0, access_gap_sampling=_table(F))
    with pytest.raises(ValidationError, match="access_gap_sampling"):
        _type(access_interarrival=F, access_gap_sampling=_table(Distribution(values=[-1.0, 5.0], weights=[0.5, 0.5])))
    with pytest.raises(ValidationError, match="access_gap_sampling"):
        _type(access_interarrival=F, access_gap_sampling={"distribution": F.model_dump(), "ks": 0.1})
    with pytest.raises(ValidationError, match="access_gap_sampling"):
        _type(access_interarrival=F, access_gap_sampling={**_table(F).model_dump(), "extra": 1})


def test_scaling_keeps_or_drops_the_table() -> None:
    profile = make_profile(access_gap_sampling=_table(F))
    faster = scale_time(profile, 0.5)
    table = faster.types[0].access_gap_sampling
    assert table is not None and table.distribution.values[-1] == pytest.approx(F.values[-1] * 0.5)
    assert all(t.access_gap_sampling is None for t in scale_span(profile, 2.0).types)


def test_only_files_closed_inside_the_window_use_the_table() -> None:
    """The table is for streams that end with their closing access; a file whose span the window
    cuts draws from F_j (the window's truncation of F_j is what validate expects there)."""
    odd = _table(Distribution.point(50.0))  # an obviously different sampling law: 50 ms gaps
    kw = dict(n=200, pre=(3000, 3000, 10), delete_share=0.0, accessed_share=1.0, access_interarrival=F)
    cut = make_profile(**kw, window_ms=60_000, active_span=Distribution.point(3_600_000.0), access_gap_sampling=odd)
    target, times = _accesses(generate_schedule(cut, GenerateOptions(), 3), 1)
    gaps_ms = np.diff(times)[target[1:] == target[:-1]] / 1000.0
    assert gaps_ms.size > 1000 and np.mean(gaps_ms == 50.0) < 0.01
    closed = make_profile(**kw, window_ms=10**9, active_span=Distribution.point(1000.0), access_gap_sampling=odd)
    target, times = _accesses(generate_schedule(closed, GenerateOptions(), 3), 1)
    gaps_ms = np.diff(times)[target[1:] == target[:-1]] / 1000.0
    assert np.mean(gaps_ms == 50.0) > 0.99  # 20 draws of 50 ms fill each 1 s span
