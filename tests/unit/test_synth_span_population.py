"""Types whose spans describe only the files created in the trace (``span_population`` 'created',
the 2014 format): created files keep H_j exact (closing rule), pre-existing files follow the
renewal rule as a stopping time, which pools an unbiased sample of the law it draws from: F_j
itself (``balance_gaps`` off), or the law that puts the type's pooled gaps back on F_j
(``synth.balance``, the default)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from test_synth_helpers import exp_dist, make_profile

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.io import profile_hash, profile_to_json
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.fidelity import validate_profile
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.schedule import GeneratedSchedule, generate_schedule
from mimesisbench.synth.store import manifest_for, write_schedule
from mimesisbench.synth.streams import Sampler

#: interarrivals twice as long as the spans: the closing rule cannot keep F_j for these files
F_MEAN = 20_000.0
SPAN_MEAN = 10_000.0


def _profile(population: str, pre: int = 20_000, **overrides: object) -> WorkloadProfile:
    spec: dict[str, object] = dict(
        n=20_000,
        pre=(pre, pre, 0),
        window_ms=10**9,  # nothing is cut by the window
        f_mean=(F_MEAN, F_MEAN, F_MEAN),
        span_mean=SPAN_MEAN,
        delete_share=0.0,
        accessed_share=1.0,
        span_population=population,
    )
    spec.update(overrides)
    return make_profile(**spec)  # type: ignore[arg-type]


def _per_file(s: GeneratedSchedule, type_id: int) -> dict[str, np.ndarray]:
    """Gaps and spans (ms) of the type's pre-existing and created files."""
    mask = np.isin(s.op, [OpCode.OPEN, OpCode.LIST_FILE]) & (s.file_type[s.target] == type_id)
    target, times = s.target[mask].astype(np.int64), s.time_us[mask]
    order = np.lexsort((times, target))
    target, times = target[order], times[order]
    same = target[1:] == target[:-1]
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    ends = np.concatenate([starts[1:], [target.size]]) - 1
    file_pre = s.file_pre[target[starts]]
    gap_pre = s.file_pre[target[1:][same]]
    gaps = np.diff(times)[same] / 1000.0
    spans = (times[ends] - times[starts]) / 1000.0
    return {
        "pre_gaps": gaps[gap_pre],
        "created_gaps": gaps[~gap_pre],
        "pre_spans": spans[file_pre],
        "created_spans": spans[~file_pre],
        "pre_accesses": np.diff(np.append(starts, target.size))[file_pre],
    }


def _validate(s: GeneratedSchedule, profile: WorkloadProfile) -> dict:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        out = write_schedule(s, Path(tmp) / "s", manifest_for(s, profile_hash=profile_hash(profile), seed_source="given"))
        return validate_profile(read_schedule(out), profile)


def _pooled(got: dict[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([got["pre_gaps"], got["created_gaps"]])


def test_pre_existing_files_keep_f_and_created_files_keep_h() -> None:
    profile = _profile("created")
    s = generate_schedule(profile, GenerateOptions(balance_gaps=False), 5)
    for tid in (1, 2):
        t = profile.type_by_id(tid)
        assert t.access_interarrival is not None and t.active_span is not None
        got = _per_file(s, tid)
        assert got["pre_gaps"].size > 10_000 and got["created_spans"].size > 5_000
        assert (ks_distance(got["pre_gaps"], t.access_interarrival.cdf) or 1.0) < 0.015
        assert (ks_distance(got["created_spans"], t.active_span.cdf) or 1.0) < 0.02
        # the stopping time overshoots: pre-existing spans are longer than H_j's
        assert np.median(got["pre_spans"]) > 1.5 * float(t.active_span.quantile(0.5))
        # the created files' closing gaps are what the profile's F_j cannot describe, and they
        # pull the pool off F_j
        assert (ks_distance(got["created_gaps"], t.access_interarrival.cdf) or 0.0) > 0.1
        assert (ks_distance(_pooled(got), t.access_interarrival.cdf) or 0.0) > 0.04

    report = _validate(s, profile)
    for tid in ("1", "2"):
        row = report["types"][tid]
        by_pop = row["interarrival_by_population"]
        assert by_pop["pre_existing"]["ks"] < 0.015 and by_pop["created"]["ks"] > 0.1
        assert row["ks_interarrival"] > 0.04
        assert by_pop["pre_existing"]["n"] + by_pop["created"]["n"] == row["n_interarrival"]
        # validate compares H_j with the created files' spans only
        assert row["n_span"] == _per_file(s, int(tid))["created_spans"].size
        assert row["ks_span"] < 0.02
    assert not any("window's end cuts" in note for note in report["notes"])  # spans well inside the window


def test_balanced_pre_existing_gaps_put_the_pool_back_on_f() -> None:
    """The default: pre-existing files draw from the law that offsets the created files' gaps,
    so the type's pooled gaps (what the profile's F_j describes) follow F_j while created files
    keep their exact spans and pre-existing files leave F_j. (With 20,000 pre-existing files
    the created files' short gaps are more than any law of theirs can offset: 0.016 at best.)"""
    profile = _profile("created", pre=40_000)
    s = generate_schedule(profile, GenerateOptions(), 5)
    report = _validate(s, profile)
    for tid in (1, 2):
        t = profile.type_by_id(tid)
        assert t.access_interarrival is not None and t.active_span is not None
        got = _per_file(s, tid)
        f = t.access_interarrival.cdf
        assert (ks_distance(_pooled(got), f) or 1.0) < 0.015
        assert (ks_distance(got["pre_gaps"], f) or 0.0) > 0.04
        assert (ks_distance(got["created_gaps"], f) or 0.0) > 0.1
        assert (ks_distance(got["created_spans"], t.active_span.cdf) or 1.0) < 0.02
        row = report["types"][str(tid)]
        assert row["ks_interarrival"] < 0.015 and row["ks_span"] < 0.02
        assert row["interarrival_by_population"]["floor"] <= row["ks_interarrival"]


def test_the_floor_shows_what_no_balancing_can_reach() -> None:
    """Type 1 with as many pre-existing as created files: the created files' short gaps (43% of
    the pool) are more than any law of the pre-existing files can offset. Validate's floor says
    so, and balancing gets near it (from 0.07 unbalanced). Type 2 (a third of the pool) can be
    offset: its floor is about 0 and its pool on F_j."""
    profile = _profile("created")
    report = _validate(generate_schedule(profile, GenerateOptions(), 5), profile)
    one, two = report["types"]["1"], report["types"]["2"]
    floor = one["interarrival_by_population"]["floor"]
    assert 0.01 < floor <= one["ks_interarrival"] < floor + 0.01
    assert two["interarrival_by_population"]["floor"] < 0.005 and two["ks_interarrival"] < 0.015
    # below validate's note threshold (0.02): no note
    assert not any("cannot come nearer" in note for note in report["notes"])


def test_validate_notes_types_whose_floor_exceeds_the_bar() -> None:
    """Only a few pre-existing files against many created ones with short gaps: the floor
    passes 0.02 and validate names the type."""
    profile = _profile("created", pre=2_000)
    report = _validate(generate_schedule(profile, GenerateOptions(), 5), profile)
    one = report["types"]["1"]
    assert one["interarrival_by_population"]["floor"] > 0.02
    assert one["ks_interarrival"] >= one["interarrival_by_population"]["floor"]
    notes = [note for note in report["notes"] if "cannot come nearer" in note]
    assert len(notes) == 1 and "type(s) 1 (" in notes[0]


def test_balancing_leaves_other_types_and_pools_already_on_f_alone() -> None:
    """Types whose H_j describes every file, and types without created files, give the same
    schedule with and without balancing."""
    for profile in (_profile("all"), _profile("created", n=0)):
        on = generate_schedule(profile, GenerateOptions(), 5)
        off = generate_schedule(profile, GenerateOptions(balance_gaps=False), 5)
        assert on.events == off.events > 0
        assert np.array_equal(on.time_us, off.time_us) and np.array_equal(on.target, off.target)


def test_with_population_all_every_file_closes_its_span() -> None:
    """The same profile read as spans of every file: pre-existing files keep H_j, so their
    gaps cannot keep F_j (the contrast that makes the rule above necessary)."""
    profile = _profile("all")
    s = generate_schedule(profile, GenerateOptions(), 5)
    t = profile.type_by_id(1)
    assert t.access_interarrival is not None and t.active_span is not None
    got = _per_file(s, 1)
    assert (ks_distance(got["pre_spans"], t.active_span.cdf) or 1.0) < 0.02
    assert (ks_distance(got["pre_gaps"], t.access_interarrival.cdf) or 0.0) > 0.1
    report = _validate(s, profile)
    assert "interarrival_by_population" not in report["types"]["1"]
    assert report["types"]["1"]["n_span"] == got["pre_spans"].size + got["created_spans"].size
    assert "span_population" not in profile_to_json(profile)  # the default is not written


def test_zero_spans_give_pre_existing_files_one_access() -> None:
    profile = _profile("created", pre=3000, n=1000, active_span=Distribution.point(0.0))
    s = generate_schedule(profile, GenerateOptions(), 3)
    got = _per_file(s, 1)
    assert got["pre_accesses"].size == 3000
    assert np.all(got["pre_accesses"] == 1)


def test_stopping_rule_respects_the_window() -> None:
    """Spans longer than the window: nothing past its end, and files whose stream goes on past it
    are not deleted inside it."""
    profile = _profile(
        "created",
        pre=5000,
        n=500,
        window_ms=60_000,
        f_mean=(5_000.0, 5_000.0, 5_000.0),
        active_span=Distribution.point(3_600_000.0),
        delete_delay=Distribution.point(1.0),
        delete_delay_origin="creation",
        delete_share=1.0,
    )
    s = generate_schedule(profile, GenerateOptions(), 9)
    assert s.time_us.max() < 60_000 * 1000
    assert np.count_nonzero(s.op == OpCode.DELETE) == 0
    assert np.count_nonzero(s.op == OpCode.OPEN) + np.count_nonzero(s.op == OpCode.LIST_FILE) > 20_000
    # validate says that spans longer than the window cannot be measured in it
    notes = [n for n in _validate(s, profile)["notes"] if "window's end cuts" in n]
    assert len(notes) == 1 and "type(s) 1 (100%), 2 (100%):" in notes[0]


def test_draw_at_least_is_the_conditional_law() -> None:
    dist = exp_dist(1000.0, seed=4)
    sampler = Sampler(dist)
    rng = np.random.default_rng(11)
    lower_ms = 700.0
    draws = sampler.draw_at_least(rng, np.full(200_000, int(lower_ms * 1000), dtype=np.int64))
    assert draws.min() >= lower_ms * 1000
    f_low = float(dist.cdf(lower_ms))

    def conditional(x: np.ndarray) -> np.ndarray:
        return np.clip((dist.cdf(x) - f_low) / (1.0 - f_low), 0.0, 1.0)

    assert (ks_distance(draws / 1000.0, conditional) or 1.0) < 0.01
    # plain draws are not conditioned (the test can tell the difference)
    assert (ks_distance(sampler.draw(rng, 50_000) / 1000.0, conditional) or 0.0) > 0.3
    # a bound above the largest value gives the bound itself
    top = int(dist.values[-1] * 1000) + 5
    assert np.all(sampler.draw_at_least(rng, np.full(10, top, dtype=np.int64)) == top)
