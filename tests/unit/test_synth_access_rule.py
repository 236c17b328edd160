"""The access rule of span-driven types (no observed popularity) and how validate measures it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from test_synth_helpers import exp_dist, make_profile

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.io import profile_hash
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.fidelity import validate_profile
from mimesisbench.synth.kstats import ks_distance, truncated_seen
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.schedule import GeneratedSchedule, generate_schedule
from mimesisbench.synth.store import manifest_for, write_schedule


def _validate(s: GeneratedSchedule, profile: WorkloadProfile) -> dict:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        out = write_schedule(s, Path(tmp) / "s", manifest_for(s, profile_hash=profile_hash(profile), seed_source="given"))
        return validate_profile(read_schedule(out), profile)


def _accesses(s: GeneratedSchedule, type_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(file, time_us) of the type's accesses, sorted by file then time."""
    mask = np.isin(s.op, [OpCode.OPEN, OpCode.LIST_FILE]) & (s.file_type[s.target] == type_id)
    target, times = s.target[mask].astype(np.int64), s.time_us[mask]
    order = np.lexsort((times, target))
    return target[order], times[order]


def test_truncated_seen_is_the_law_of_gaps_that_end_inside_the_window() -> None:
    rng = np.random.default_rng(3)
    window = 60.0
    dist = exp_dist(20.0, seed=9)
    prev = rng.uniform(0.0, window, 200_000)  # access times that open a gap
    gaps = dist.sample(rng, prev.size)
    seen = prev + gaps < window
    assert (ks_distance(gaps[seen], dist.cdf) or 0.0) > 0.15  # long gaps rarely fit: biased short
    corrected = truncated_seen(dist.cdf, window - prev[seen])
    assert (ks_distance(gaps[seen], corrected) or 1.0) < 0.01
    # limits beyond the support: the profile's CDF itself
    x = np.linspace(0.0, 200.0, 50)
    assert np.allclose(truncated_seen(dist.cdf, np.full(10, 1e9))(x), dist.cdf(x))


def test_validate_corrects_per_file_interarrivals_for_the_window() -> None:
    """Spans (1 h) longer than the window (60 s): every gap is an F draw that the window cuts."""
    profile = make_profile(
        n=2000,
        pre=(3000, 3000, 3000),
        f_mean=(20_000.0, 15_000.0, 25_000.0),
        active_span=Distribution.point(3_600_000.0),
        delete_share=0.0,
        accessed_share=1.0,
    )
    s = generate_schedule(profile, GenerateOptions(), 4)
    report = _validate(s, profile)
    for tid in (1, 2, 3):
        target, times = _accesses(s, tid)
        gaps_ms = np.diff(times)[target[1:] == target[:-1]] / 1000.0
        f = profile.type_by_id(tid).access_interarrival
        assert f is not None and gaps_ms.size > 3000
        assert (ks_distance(gaps_ms, f.cdf) or 0.0) > 0.1  # the uncorrected measure blames the window
        assert report["types"][str(tid)]["ks_interarrival"] < 0.03, (tid, report["types"][str(tid)])


def test_spans_follow_h_exactly_and_gaps_follow_f_when_f_is_short() -> None:
    """No window cut: the stream closes at first + H, so spans are H draws; with F much shorter
    than H only one interarrival per file (the closing one) is cut short."""
    profile = make_profile(
        n=5000,
        pre=(20_000, 20_000, 1000),
        window_ms=10**9,
        f_mean=(100.0, 150.0, 120.0),
        span_mean=20_000.0,
        delete_share=0.0,
        accessed_share=1.0,
    )
    s = generate_schedule(profile, GenerateOptions(), 8)
    for tid in (1, 2):
        target, times = _accesses(s, tid)
        same = target[1:] == target[:-1]
        gaps_ms = np.diff(times)[same] / 1000.0
        starts = np.flatnonzero(np.concatenate([[True], ~same]))
        ends = np.concatenate([starts[1:], [target.size]]) - 1
        spans_ms = (times[ends] - times[starts]) / 1000.0
        t = profile.type_by_id(tid)
        assert t.active_span is not None and t.access_interarrival is not None
        assert (ks_distance(spans_ms, t.active_span.cdf) or 1.0) < 0.015
        assert (ks_distance(gaps_ms, t.access_interarrival.cdf) or 1.0) < 0.02


def test_files_whose_span_the_window_cuts_are_not_deleted_inside_it() -> None:
    """Their closing access lies past the window, so they live on past it (even when the next
    interarrival drawn would have overshot the span)."""
    profile = make_profile(
        n=500,
        pre=(1000, 1000, 1000),
        f_mean=(7_200_000.0, 7_200_000.0, 7_200_000.0),
        active_span=Distribution.point(3_600_000.0),
        delete_delay=Distribution.point(1.0),
        delete_delay_origin="creation",
        delete_share=1.0,
        accessed_share=1.0,
    )
    s = generate_schedule(profile, GenerateOptions(), 2)
    assert np.count_nonzero(s.op == OpCode.OPEN) + np.count_nonzero(s.op == OpCode.LIST_FILE) > 1000
    assert np.count_nonzero(s.op == OpCode.DELETE) == 0
