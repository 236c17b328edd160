"""Format-2 fits on small hand-written traces: command chains, directory types, pathless commands,
what the profile models (coverage), and the profile's round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_model_fit import Row, events_table

from mimesisbench.model.fit import NOT_MODELLED_PREFIX, FitConfig, fit_profile
from mimesisbench.model.objects import build_view
from mimesisbench.profile.io import load_profile, save_profile
from mimesisbench.synth.by_command import classify
from mimesisbench.synth.coverage import coverage_of_profile

T0 = 5_000_000


def _events(rows: list[Row]) -> pl.DataFrame:
    return events_table(rows, T0)


def readers_and_poller() -> pl.DataFrame:
    """60 pre-existing files under /warehouse/t, each read 5 times as getfileinfo then open (5 ms
    later), reads 700 ms apart; the directory /spool (empty: a directory by the snapshot only)
    listed every 10 s for 300 s by a poller; and a saveNamespace every 60 s (no path)."""
    rows: list[Row] = []
    for i in range(60):
        path = f"/warehouse/t/part-{i:04d}"
        for r in range(5):
            at = 13 * i + 700 * r
            rows.append((at, "getfileinfo", path, None))
            rows.append((at + 5, "open", path, None))
    for k in range(30):
        rows.append((10_000 * k + 2, "listStatus", "/spool", None))
    for k in range(5):
        rows.append((60_000 * k + 7, "saveNamespace", None, None))
    return _events(rows)


@pytest.fixture(scope="module")
def fitted() -> object:
    snapshot = pl.DataFrame({"path": ["/", "/spool", "/warehouse", "/warehouse/t"], "is_dir": [True] * 4})
    return fit_profile(readers_and_poller(), snapshot, FitConfig(types=1, seed=0))


def test_a_getfileinfo_then_open_chain_is_recovered(fitted: object) -> None:
    from mimesisbench.profile.schema import WorkloadProfile

    assert isinstance(fitted, WorkloadProfile)
    files = [t for t in fitted.file_types if t.accessed_share > 0]
    assert len(files) == 1
    chain = files[0].commands
    assert chain is not None and set(chain.commands) == {"getfileinfo", "open"}
    gfi, op = chain.commands.index("getfileinfo"), chain.commands.index("open")
    assert chain.next[gfi][op] == pytest.approx(1.0, abs=1e-9)
    assert chain.next[op][gfi] == pytest.approx(1.0, abs=1e-9)  # every open is followed by the next read
    assert chain.first[gfi] == pytest.approx(1.0, abs=1e-9)
    assert chain.share[gfi] == pytest.approx(0.5, abs=1e-9)
    # 60 files x 5 reads: 300 getfileinfo>open gaps of 5 ms, 240 open>getfileinfo gaps of 695 ms
    assert chain.gaps["getfileinfo>open"].values == [5.0]
    assert chain.gaps["open>getfileinfo"].values == [695.0]
    observed = files[0].observed["popularity"]
    assert observed.values == [10.0]


def test_a_polled_directory_gets_a_periodic_directory_type(fitted: object) -> None:
    from mimesisbench.profile.schema import WorkloadProfile

    assert isinstance(fitted, WorkloadProfile)
    assert [t.kind for t in fitted.types] == ["file"] * len(fitted.file_types) + ["directory"] * len(fitted.directory_types)
    polled = [t for t in fitted.directory_types if t.commands is not None and "listStatus" in t.commands.commands]
    assert len(polled) == 1
    poller = polled[0]
    assert poller.id > max(t.id for t in fitted.file_types)  # directory ids follow the file types'
    assert poller.commands is not None and poller.commands.commands == ["listStatus"]
    assert poller.commands.next == [[1.0]]
    assert poller.access_interarrival is not None
    values = np.asarray(poller.access_interarrival.values)
    assert values.min() == pytest.approx(10_000.0) and values.max() == pytest.approx(10_000.0)
    assert poller.pre_existing == 1 and poller.weight == 0.0 and poller.observed["popularity"].values == [30.0]
    assert fitted.created_directories == 0 and fitted.total_creates == 0


def test_pathless_commands_are_renewal_streams(fitted: object) -> None:
    from mimesisbench.profile.schema import WorkloadProfile

    assert isinstance(fitted, WorkloadProfile)
    assert [(p.command, p.count) for p in fitted.pathless] == [("saveNamespace", 5)]
    gaps = fitted.pathless[0].interarrival
    assert gaps is not None and gaps.values == [60_000.0]


def test_a_format_2_profile_round_trips(fitted: object, tmp_path: Path) -> None:
    from mimesisbench.profile.schema import WorkloadProfile

    assert isinstance(fitted, WorkloadProfile)
    path = save_profile(fitted, tmp_path / "p.json")
    loaded = load_profile(path)
    assert loaded.version == 2
    assert loaded == fitted


def test_coverage_of_the_fit_counts_chains_and_pathless(fitted: object) -> None:
    from mimesisbench.profile.schema import WorkloadProfile

    assert isinstance(fitted, WorkloadProfile)
    cov = coverage_of_profile(fitted)
    assert cov is not None and cov.modelled_share == pytest.approx(1.0, abs=1e-9)
    assert cov.not_modelled() == {}


def test_commands_a_schedule_cannot_hold_are_left_out_and_counted() -> None:
    # concat of a directory and an unknown command on a file: no op code for them
    rows: list[Row] = [(10 * i, "open", "/d/f", None) for i in range(8)]
    rows += [(3, "concat", "/d", None), (4, "getEZForPath", "/d/f", None), (5, "listStatus", "/d", None)]
    profile = fit_profile(_events(rows), None, FitConfig(types=1))
    assert profile.source.trace_stats[NOT_MODELLED_PREFIX + "concat"] == 1.0
    assert profile.source.trace_stats[NOT_MODELLED_PREFIX + "getEZForPath"] == 1.0
    for t in profile.types:
        assert t.commands is None or not {"concat", "getEZForPath"} & set(t.commands.commands)
    cov = coverage_of_profile(profile)
    assert cov is not None and cov.modelled_share == pytest.approx(9 / 11, abs=1e-9)
    assert cov.not_modelled() == pytest.approx({"concat": 1 / 11, "getEZForPath": 1 / 11}, abs=1e-9)


def test_a_directory_rename_continues_the_directory_object() -> None:
    rows: list[Row] = [
        (0, "mkdirs", "/out/_temporary/0", None),
        (1, "create", "/out/_temporary/0/part-0", None),
        (2, "listStatus", "/out/_temporary/0", None),
        (3, "rename", "/out/_temporary/0", "/out/final"),
        (4, "listStatus", "/out/final", None),
        (9, "delete", "/out/final", None),
    ]
    view = build_view(_events(rows))
    dirs = view.objects.filter(pl.col("is_dir") & (pl.col("path") == "/out/_temporary/0")).row(0, named=True)
    assert dirs["created_ms"] == T0 and dirs["deleted_ms"] == T0 + 9
    assert (dirs["accesses"], dirs["lists"], dirs["renames"], dirs["children_created"]) == (3, 2, 1, 1)
    assert "/out/final" in view.directories.to_list()
    part = view.objects.filter(pl.col("path") == "/out/_temporary/0/part-0").row(0, named=True)
    assert part["parent_made"] and part["accesses"] == 0
    classified = classify(_events(rows), build_view(_events(rows)))
    on_dir = classified.filter(pl.col("target") == "directory")
    assert on_dir.height == 5 and on_dir["key"].n_unique() == 1


def test_creates_of_paths_in_the_snapshot_are_overwrites() -> None:
    rows: list[Row] = [(0, "create", "/d/f", None), (5, "open", "/d/f", None), (9, "create", "/d/g", None)]
    snapshot = pl.DataFrame({"path": ["/", "/d", "/d/f"], "is_dir": [True, True, False]})
    objects = build_view(_events(rows), snapshot).objects.sort("path")
    f, g = objects.filter(pl.col("path") == "/d/f").row(0, named=True), objects.filter(pl.col("path") == "/d/g").row(0, named=True)
    assert f["created_ms"] is None and f["accesses"] == 2  # the create overwrote a pre-existing file
    assert g["created_ms"] == T0 + 9 and g["accesses"] == 0


def test_auto_k_simulation_of_single_access_objects_gives_one_access_each() -> None:
    from mimesisbench.model.selection import simulate_popularity
    from mimesisbench.profile import Distribution, FileType

    single = FileType(id=1, weight=0.0, pre_existing=10, activation_delay=Distribution.point(5.0),
                      active_span=Distribution.point(0.0), access_interarrival=Distribution.point(0.0))
    counts = simulate_popularity(single, 50, np.random.default_rng(0))
    assert counts.size == 50 and set(counts.tolist()) == {1}


def test_access_gaps_of_an_access_table_and_of_unordered_rows_agree() -> None:
    from mimesisbench.model.objects import access_gaps

    view = build_view(readers_and_poller())
    direct = access_gaps(view.accesses)
    shuffled = access_gaps(view.accesses.sample(fraction=1.0, shuffle=True, seed=4))
    assert direct.equals(view.gaps)
    assert direct.sort("obj", "gap_ms").equals(shuffled.sort("obj", "gap_ms"))
