"""Schedule generation: determinism, validity, counts, distributions, time scale, flat, isolation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_synth_helpers import exp_dist, make_profile

from mimesisbench.errors import ConfigError, ScheduleError
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import DIRECTORIES, EVENTS, FILES, OpCode
from mimesisbench.synth.check import check_schedule
from mimesisbench.synth.fidelity import validate_profile
from mimesisbench.synth.kstats import ks_distance
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to
from mimesisbench.synth.schedule import generate_schedule
from mimesisbench.synth.streams import Sampler


def _gen(tmp_path: Path, name: str, seed: int = 7, options: GenerateOptions | None = None, **kw: object) -> Path:
    path, _s, _m = generate_to(make_profile(**kw), tmp_path / name, options or GenerateOptions(), seed)  # type: ignore[arg-type]
    return path


def test_same_seed_gives_byte_identical_files_and_another_seed_differs(tmp_path: Path) -> None:
    a, b, c = _gen(tmp_path, "a", 11), _gen(tmp_path, "b", 11), _gen(tmp_path, "c", 12)
    for name in (EVENTS, FILES, DIRECTORIES):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / EVENTS).read_bytes() != (c / EVENTS).read_bytes()
    ea, ec = read_schedule(a).events, read_schedule(c).events
    assert ea.height != ec.height or not ea.equals(ec)


@pytest.mark.parametrize("origin", ["last_access", "creation"])
def test_generated_schedules_are_valid(tmp_path: Path, origin: str) -> None:
    path = _gen(tmp_path, origin, origin=origin)
    tables = read_schedule(path)
    result = check_schedule(tables)
    assert result.ok, result.message
    ops = set(tables.events.get_column("op").unique().to_list())
    # every kind of operation of the paper's model shows up (codes 1-9), so the checker exercised them all
    assert ops == set(range(1, 10))
    times = tables.events.get_column("time_us").to_numpy()
    assert np.all(np.diff(times) >= 0) and times.max() < 60_000 * 1000
    assert np.array_equal(tables.events.get_column("seq").to_numpy(), np.arange(tables.events.height))


def test_renamed_files_use_their_new_generation_afterwards(tmp_path: Path) -> None:
    ev = read_schedule(_gen(tmp_path, "r", mix={"file_renames_per_create": 0.5})).events
    renames = ev.filter(pl.col("op") == int(OpCode.RENAME_FILE))
    assert renames.height > 100
    target = renames.get_column("target")[0]
    rows = ev.filter(pl.col("target") == target, pl.col("op") != int(OpCode.LIST_DIR))
    gens = rows.get_column("generation").to_numpy()
    ops = rows.get_column("op").to_numpy()
    first_rename = int(np.flatnonzero(ops == OpCode.RENAME_FILE)[0])
    assert gens[first_rename] == 0
    assert np.all(gens[first_rename + 1 :] >= 1)


def test_create_counts_are_round_w_n_when_the_window_holds_them(tmp_path: Path) -> None:
    s = generate_schedule(make_profile(n=3001, window_ms=10**7), GenerateOptions(), 3)
    counts = s.type_counts()
    assert counts["1"]["create"] == round(0.6 * 3001)
    assert counts["2"]["create"] == round(0.4 * 3001)
    assert counts["3"]["create"] == 0
    assert counts["1"]["pre_existing"] == 300 and counts["3"]["pre_existing"] == 50


def test_window_cut_keeps_creates_inside_the_window(tmp_path: Path) -> None:
    full = generate_schedule(make_profile(n=3000), GenerateOptions(), 3)
    short = generate_schedule(make_profile(n=3000), GenerateOptions(duration_ms=20_000), 3)
    c_full = full.type_counts()["1"]["create"]
    c_short = short.type_counts()["1"]["create"]
    assert c_full == 1800  # interarrivals average 0.6 of the window's share: all fit in 60 s
    assert 0 < c_short < c_full
    assert short.time_us.max() < 20_000 * 1000
    # the renewal process is the same stream, only cut earlier
    creates_short = short.time_us[(short.op == OpCode.CREATE) & (short.etype == 1)]
    creates_full = full.time_us[(full.op == OpCode.CREATE) & (full.etype == 1)]
    assert np.array_equal(creates_short, creates_full[: creates_short.size])


def test_sampler_follows_the_distribution() -> None:
    dist = exp_dist(1234.0)
    draws = Sampler(dist).draw(np.random.default_rng(1), 200_000) / 1000.0
    assert ks_distance(draws, dist.cdf) < 0.006


@pytest.mark.parametrize("origin", ["last_access", "creation"])
def test_generated_distributions_follow_the_profile(origin: str) -> None:
    profile = make_profile(n=20_000, pre=(3000, 2000, 1000), f_mean=(100.0, 150.0, 120.0), origin=origin)
    s = generate_schedule(profile, GenerateOptions(), 21)
    import tempfile

    from mimesisbench.profile.io import profile_hash
    from mimesisbench.synth.store import manifest_for, write_schedule

    with tempfile.TemporaryDirectory() as tmp:
        out = write_schedule(s, Path(tmp) / "s", manifest_for(s, profile_hash=profile_hash(profile), seed_source="given"))
        report = validate_profile(read_schedule(out), profile)
    for tid in ("1", "2"):
        row = report["types"][tid]
        for key in ("ks_create_interarrival", "ks_activation", "ks_span", "ks_interarrival", "ks_delete"):
            assert row[key] is not None and row[key] < 0.04, (tid, key, row[key])
    assert report["types"]["3"]["ks_create_interarrival"] is None  # type 3 creates nothing
    assert report["type_weight_max_abs_error_pp"] < 0.1
    assert report["depth_share_max_abs_error_pp"] < 0.1
    assert report["opmix_max_abs_error"] < 0.01


def test_time_scale_zero_keeps_order_and_sets_every_time_to_zero(tmp_path: Path) -> None:
    one = generate_schedule(make_profile(), GenerateOptions(), 5)
    zero = generate_schedule(make_profile(), GenerateOptions(time_scale=0.0), 5)
    assert zero.events == one.events and zero.window_ms == 0
    assert not zero.time_us.any()
    assert np.array_equal(zero.meta, one.meta)
    assert np.array_equal(zero.target, one.target)
    path = _gen(tmp_path, "zero", options=GenerateOptions(time_scale=0.0))
    assert check_schedule(path).ok


def test_time_scale_half_compresses_the_window() -> None:
    half = generate_schedule(make_profile(), GenerateOptions(time_scale=0.5), 5)
    assert half.window_ms == 30_000
    assert half.time_us.max() < 30_000 * 1000
    assert half.type_counts()["1"]["create"] == 1200  # round(0.6 * 2000), all inside


def test_isolation_keeps_only_the_chosen_types(tmp_path: Path) -> None:
    s = generate_schedule(make_profile(n=3000), GenerateOptions(types=(2,)), 4)
    assert set(np.unique(s.file_type).tolist()) == {2}
    assert set(np.unique(s.etype).tolist()) <= {0, 2}
    assert s.type_counts()["2"]["create"] == 1200
    assert check_schedule(_gen(tmp_path, "iso", options=GenerateOptions(types=(2, 3)))).ok


def test_flat_mode_puts_every_file_in_the_root(tmp_path: Path) -> None:
    tables = read_schedule(_gen(tmp_path, "flat", options=GenerateOptions(flat=True)))
    pre_dirs = tables.directories.filter(pl.col("pre_existing"))
    assert pre_dirs.get_column("path").to_list() == ["/"]
    assert set(tables.files.get_column("dir_id").unique().to_list()) == {0}
    assert check_schedule(tables).ok


def test_bad_options_raise_naming_the_option() -> None:
    with pytest.raises(ConfigError, match="--time-scale"):
        GenerateOptions(time_scale=-1.0)
    with pytest.raises(ConfigError, match="--duration"):
        GenerateOptions(duration_ms=0)
    with pytest.raises(ConfigError, match="--scale-files"):
        GenerateOptions(scale_files=0.0)
    with pytest.raises(ConfigError, match="--span-scale"):
        GenerateOptions(span_scale=-2.0)
    with pytest.raises(ConfigError, match="--types"):
        generate_schedule(make_profile(), GenerateOptions(types=(9,)), 1)
    with pytest.raises(ConfigError, match="--scale-type"):
        generate_schedule(make_profile(), GenerateOptions(scale_types=((9, 2.0),)), 1)


def test_a_distribution_that_never_ends_is_a_schedule_error() -> None:
    from mimesisbench.profile.distribution import Distribution

    profile = make_profile(access_interarrival=Distribution.point(0.0))
    with pytest.raises(ScheduleError, match="access_interarrival"):
        generate_schedule(profile, GenerateOptions(), 1)


def test_types_with_observed_popularity_reproduce_it_and_their_interarrivals() -> None:
    """Fitted profiles carry each type's popularity: N accesses from it, N - 1 gaps from F_j."""
    from mimesisbench.profile import Distribution

    counts = np.repeat([1.0, 2.0, 5.0, 12.0], [2000, 5000, 2000, 1000])
    popularity = Distribution.from_samples(counts)
    profile = make_profile(n=20_000, pre=(3000, 2000, 1000), window_ms=10**9, f_mean=(100.0, 150.0, 120.0),
                           observed={"popularity": popularity}, delete_share=0.0)
    s = generate_schedule(profile, GenerateOptions(), 5)
    access = np.isin(s.op, [OpCode.OPEN, OpCode.LIST_FILE])
    per_file = np.bincount(s.target[access])
    per_file = per_file[per_file > 0]
    share = {k: float(np.mean(per_file == k)) for k in (1, 2, 5, 12)}
    assert set(np.unique(per_file).tolist()) == {1, 2, 5, 12}
    for k, expected in ((1, 0.2), (2, 0.5), (5, 0.2), (12, 0.1)):
        assert abs(share[k] - expected) < 0.02, (k, share)
    # per-file gaps of type 1 against F_1
    t1 = access & (s.file_type[s.target] == 1)
    target, times = s.target[t1], s.time_us[t1]
    order = np.lexsort((times, target))
    target, times = target[order], times[order]
    gaps_ms = np.diff(times)[target[1:] == target[:-1]] / 1000.0
    f1 = profile.type_by_id(1).access_interarrival
    assert f1 is not None
    assert (ks_distance(gaps_ms, f1.cdf) or 1.0) < 0.02
