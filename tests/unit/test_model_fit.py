"""Fitting on small traces whose answers are known by construction."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mimesisbench.errors import TraceError
from mimesisbench.model.fit import FitConfig, fit_profile
from mimesisbench.model.objects import access_interarrivals, build_view, object_table, popularity

T0 = 1_000_000


#: an event of a hand-written trace: (ms after t0, cmd, path or None, dst or None)
Row = tuple[int, str, str | None, str | None]
EVENT_SCHEMA = {"time_ms": pl.Int64, "op": pl.String, "path": pl.String, "dst": pl.String, "user": pl.String,
                "allowed": pl.Boolean}


def events_table(rows: list[Row], t0: int = T0) -> pl.DataFrame:
    """The event table of ``rows`` (allowed events of one user, in time order)."""
    rows = sorted(rows, key=lambda r: r[0])
    return pl.DataFrame(
        {
            "time_ms": [t0 + r[0] for r in rows],
            "op": [r[1] for r in rows],
            "path": [r[2] for r in rows],
            "dst": [r[3] for r in rows],
            "user": ["alice"] * len(rows),
            "allowed": [True] * len(rows),
        },
        schema=EVENT_SCHEMA,
    )


def two_type_trace() -> pl.DataFrame:
    """Type "hot": 40 files created every 100 ms under /jobs/out, first opened 50 ms later,
    accessed 20 times 10 ms apart (3 of 4 accesses are opens, 1 of 4 a listStatus), deleted 1000 ms
    after creation. Type "cold": 30 pre-existing files under /data/a/b, opened twice 5000 ms apart,
    the first time 200 ms after t0."""
    rows: list[tuple[int, str, str, str | None]] = [(0, "mkdirs", "/jobs/out", None)]
    for i in range(40):
        path = f"/jobs/out/part-{i:05d}"
        created = 100 * (i + 1)
        rows.append((created, "create", path, None))
        for a in range(20):
            rows.append((created + 50 + 10 * a, "listStatus" if a % 4 == 3 else "open", path, None))
        rows.append((created + 1000, "delete", path, None))
        rows.append((created + 1, "getfileinfo", path, None))
    for i in range(30):
        path = f"/data/a/b/f{i}"
        rows.append((200, "open", path, None))
        rows.append((5200, "open", path, None))
    rows.append((7000, "listStatus", "/data/a", None))
    return events_table(rows)


def test_object_table_has_known_features() -> None:
    objects = object_table(two_type_trace())
    assert objects.height == 72  # 70 files and the two directories with events (/jobs/out, /data/a)
    hot = objects.filter(pl.col("path") == "/jobs/out/part-00003").row(0, named=True)
    assert hot["created_ms"] == T0 + 400 and not hot["is_dir"]
    assert hot["first_access_ms"] == T0 + 401  # the getfileinfo is an access too
    assert hot["last_access_ms"] == T0 + 450 + 190
    assert hot["deleted_ms"] == T0 + 1400
    assert (hot["accesses"], hot["opens"], hot["lists"]) == (21, 15, 5)
    assert hot["depth"] == 3 and hot["parent_made"]  # /jobs/out was made by mkdirs in the window
    cold = objects.filter(pl.col("path") == "/data/a/b/f7").row(0, named=True)
    assert cold["created_ms"] is None and cold["accesses"] == 2 and cold["depth"] == 4 and not cold["parent_made"]
    made = objects.filter(pl.col("path") == "/jobs/out").row(0, named=True)
    assert made["is_dir"] and made["created_ms"] == T0 and made["accesses"] == 0 and made["children_created"] == 40
    listed = objects.filter(pl.col("path") == "/data/a").row(0, named=True)
    assert listed["is_dir"] and listed["created_ms"] is None and (listed["accesses"], listed["lists"]) == (1, 1)


def test_access_interarrivals_and_popularity() -> None:
    events = two_type_trace()
    gaps = access_interarrivals(events)
    assert gaps.size == 40 * 20 + 30
    assert set(np.unique(gaps).tolist()) == {10, 49, 5000}
    assert sorted(set(popularity(object_table(events)).tolist())) == [1, 2, 21]


def test_directories_come_from_ancestors_and_mkdirs() -> None:
    view = build_view(two_type_trace())
    assert set(view.directories.to_list()) == {"/", "/jobs", "/jobs/out", "/data", "/data/a", "/data/a/b"}
    dirs = view.objects.filter(pl.col("is_dir"))
    assert sorted(dirs["path"].to_list()) == ["/data/a", "/jobs/out"] and dirs["lists"].sum() == 1


def test_renamed_file_keeps_its_identity() -> None:
    events = events_table(
        [
            (0, "create", "/out/_temporary/0/part-0", None),
            (5, "rename", "/out/_temporary/0/part-0", "/out/part-0"),
            (10, "open", "/out/part-0", None),
            (30, "open", "/out/part-0", None),
        ]
    )
    objects = object_table(events)
    assert objects.height == 1
    row = objects.row(0, named=True)
    # the rename is an access of the file (with the two opens)
    assert row["created_ms"] == T0 and row["accesses"] == 3 and row["renames"] == 1 and row["depth"] == 2


def test_fit_two_types_recovers_the_model() -> None:
    profile = fit_profile(two_type_trace(), None, FitConfig(types=2, seed=1))
    assert profile.version == 2
    assert len(profile.file_types) == 2 and len(profile.directory_types) == 2
    assert [t.id for t in profile.types] == [1, 2, 3, 4]  # file types first, then directory types
    hot, cold = sorted(profile.file_types, key=lambda t: -t.weight)
    assert profile.total_creates == 40 and profile.created_directories == 1
    assert hot.weight == pytest.approx(1.0) and cold.weight == 0.0
    assert hot.pre_existing == 0 and cold.pre_existing == 30
    assert hot.create_interarrival is not None and hot.create_interarrival.values == [100.0]
    assert hot.activation_delay is not None and hot.activation_delay.values == [1.0]  # the getfileinfo
    assert hot.active_span is not None and hot.active_span.values == [239.0]
    assert hot.access_interarrival is not None and set(hot.access_interarrival.values) == {10.0, 49.0}
    assert hot.delete_delay is not None and hot.delete_delay.values == [1000.0]
    assert hot.delete_share == 1.0 and hot.open_share == pytest.approx(15 / 21) and hot.new_dir_share == 1.0
    assert hot.commands is not None and hot.commands.commands == ["open", "listStatus", "getfileinfo"]
    assert hot.commands.first == pytest.approx([0.0, 0.0, 1.0])
    assert hot.commands.next[2] == pytest.approx([1.0, 0.0, 0.0])  # getfileinfo is followed by an open
    assert hot.commands.share == pytest.approx([15 / 21, 5 / 21, 1 / 21])
    # 19 open>open... per file: the transitions with >= 30 gaps keep their own law
    assert set(hot.commands.gaps) == {"open>open", "open>listStatus", "listStatus>open", "getfileinfo>open"}
    assert hot.commands.gaps["getfileinfo>open"].values == [49.0]
    assert cold.activation_delay is not None and cold.activation_delay.values == [200.0]
    assert cold.access_interarrival is not None and cold.access_interarrival.values == [5000.0]
    assert cold.delete_share == 0.0 and cold.create_interarrival is None and cold.new_dir_share == 0.0
    assert profile.source.pre_existing_inferred is True
    made, listed = sorted(profile.directory_types, key=lambda t: -t.weight)
    assert made.weight == pytest.approx(1.0) and made.pre_existing == 0 and made.accessed_share == 0.0
    assert listed.pre_existing == 1 and listed.commands is not None and listed.commands.commands == ["listStatus"]
    # op mix: the objects' streams carry every command; the trace's counts are kept
    mix = profile.op_mix
    assert (mix.getfileinfo_per_access, mix.mkdirs_per_create, mix.dir_list_per_access) == (0.0, 0.0, 0.0)
    assert mix.observed_counts["getfileinfo"] == 40 and mix.observed_counts["mkdirs"] == 1
    ns = profile.namespace
    assert ns.directories == 6 and ns.dirs_per_depth == [1, 2, 2, 1]
    assert ns.files_at_depth == pytest.approx({3: 40 / 70, 4: 30 / 70})
    assert profile.window_ms == 7001  # first event (mkdirs) at t0, last (dir listing) at t0 + 7000


def test_snapshot_adds_cold_pre_existing_files() -> None:
    snapshot = pl.DataFrame(
        {
            "path": ["/", "/data", "/data/a", "/data/a/b", "/data/a/b/f1", "/archive", "/archive/old.gz"],
            "is_dir": [True, True, True, True, False, True, False],
            "mtime_ms": [0] * 7,
            "atime_ms": [0] * 7,
            "size": [0, 0, 0, 0, 10, 0, 99],
            "replication": [0, 0, 0, 0, 3, 0, 3],
        }
    )
    profile = fit_profile(two_type_trace(), snapshot, FitConfig(types=3, seed=0))
    assert profile.source.pre_existing_inferred is False
    assert profile.pre_existing_total == 31  # 30 accessed + /archive/old.gz never touched
    cold = [t for t in profile.file_types if t.accessed_share == 0.0]
    assert len(cold) == 1 and cold[0].pre_existing == 1
    assert profile.namespace.directories == 7


def test_fit_is_deterministic_for_a_seed() -> None:
    a = fit_profile(two_type_trace(), None, FitConfig(types=2, seed=5))
    b = fit_profile(two_type_trace(), None, FitConfig(types=2, seed=5))
    assert a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


def test_auto_k_stops_at_the_smallest_k_within_target() -> None:
    profile = fit_profile(two_type_trace(), None, FitConfig(types="auto", seed=0))
    assert len(profile.file_types) == 2
    assert profile.source.k_selection.startswith("files: auto")
    assert "K=1:" in profile.source.k_selection


def test_empty_window_is_a_clear_error() -> None:
    with pytest.raises(TraceError, match="window"):
        fit_profile(two_type_trace(), None, FitConfig(types=2, window_start_ms=T0 + 10**9))


def test_events_without_a_path_and_denied_events_are_ignored() -> None:
    events = two_type_trace()
    extra = pl.DataFrame(
        {
            "time_ms": [T0 + 10, T0 + 20],
            "op": ["saveNamespace", "open"],
            "path": [None, "/jobs/out/part-00000"],
            "dst": [None, None],
            "user": ["hdfs", "mallory"],
            "allowed": [True, False],
        }
    )
    merged = pl.concat([events, extra]).sort("time_ms", maintain_order=True)
    assert object_table(merged).equals(object_table(events))


def test_restricting_to_a_subtree_keeps_only_its_events_and_snapshot_entries() -> None:
    from mimesisbench.model.objects import restrict_to_subtree

    snapshot = pl.DataFrame({"path": ["/", "/data", "/data/a", "/database/x", "/jobs/out"],
                             "is_dir": [True, True, True, False, True]})
    events, snap = restrict_to_subtree(two_type_trace(), snapshot, "/data/")
    assert events.height == 61  # 30 files opened twice + the listing of /data/a
    assert set(events["path"].unique().to_list()) <= {f"/data/a/b/f{i}" for i in range(30)} | {"/data/a"}
    assert snap is not None and snap["path"].to_list() == ["/data", "/data/a"]  # not /database/x


def test_paths_spelled_with_a_trailing_slash_and_destinations_only_seen_in_renames() -> None:
    events = events_table(
        [
            (0, "create", "/d/tmp/a", None),
            (1, "open", "/d/x/", None),
            (2, "open", "/d/x", None),
            (3, "rename", "/d/tmp/a", "/d/out/a"),
            (4, "open", "/d/out/a", None),
            (9, "open", "/d/out/a", None),
        ]
    )
    view = build_view(events)
    assert set(view.directories.to_list()) == {"/", "/d", "/d/tmp", "/d/out"}
    objects = view.objects.sort("path")
    assert objects["path"].to_list() == ["/d/tmp/a", "/d/x"]
    assert objects["accesses"].to_list() == [3, 2] and objects["renames"].to_list() == [1, 0]
    assert objects["depth"].to_list() == [3, 2]  # /d/tmp/a ends at /d/out/a
    assert sorted(view.gaps["gap_ms"].to_list()) == [1, 1, 5]  # rename -> open, open -> open; /d/x


def test_events_out_of_time_order_give_the_same_objects_and_gaps() -> None:
    events = two_type_trace()
    shuffled = events.sample(fraction=1.0, shuffle=True, seed=3)
    a, b = build_view(events), build_view(shuffled)
    assert a.objects.equals(b.objects)
    assert a.gaps.sort("obj", "gap_ms").equals(b.gaps.sort("obj", "gap_ms"))


def test_categorical_and_string_event_tables_fit_alike() -> None:
    events = two_type_trace()
    categorical = events.with_columns(pl.col(c).cast(pl.Categorical) for c in ("op", "path", "dst", "user"))
    assert object_table(categorical).equals(object_table(events))
    a = fit_profile(events, None, FitConfig(types=2, seed=5)).model_dump(exclude={"source"})
    b = fit_profile(categorical, None, FitConfig(types=2, seed=5)).model_dump(exclude={"source"})
    assert a == b


def test_pathless_admin_events_are_in_the_operation_mix_only() -> None:
    # hdfs save-namespace logs safemode_enter/saveNamespace/safemode_leave with src=null (the
    # crash they caused depends on polars' global category codes: test_model_cli.py runs it in a
    # fresh process)
    events = pl.DataFrame({
        "time_ms": [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5],
        "op": ["create", "open", "safemode_enter", "saveNamespace", "open", "safemode_leave"],
        "path": ["/d/f", "/d/f", None, None, "/d/g", None],
        "dst": [None] * 6,
        "user": ["hdfs"] * 6,
        "allowed": [True] * 6,
    })  # fmt: skip
    objects = object_table(events).sort("path")
    assert objects["path"].to_list() == ["/d/f", "/d/g"] and objects["accesses"].to_list() == [1, 1]
    profile = fit_profile(events, None, FitConfig(types=2))
    counts = profile.op_mix.observed_counts
    assert counts["saveNamespace"] == 1 and counts["safemode_enter"] == 1 and counts["open"] == 2


def test_null_operations_are_left_out() -> None:
    events = pl.DataFrame({
        "time_ms": [T0, T0 + 1, T0 + 2, T0 + 3],
        "op": ["open", "open", None, "create"],
        "path": ["/d/f", "/d/f", "/d/f", "/d/g"],
        "dst": [None] * 4,
        "user": ["u"] * 4,
        "allowed": [True] * 4,
    })  # fmt: skip
    objects = object_table(events).sort("path")
    assert objects["accesses"].to_list() == [2, 0] and objects["created_ms"].to_list() == [None, T0 + 3]
    assert fit_profile(events, None, FitConfig(types=1)).op_mix.observed_counts == {"open": 2, "create": 1}


def test_an_operation_seen_only_in_denied_events_does_not_crash_the_fit() -> None:
    events = events_table([(0, "open", "/a/f", None), (1, "create", "/a/g", None), (2, "delete", "/a/g", None)])
    events = events.with_columns(allowed=pl.Series([True, True, False]))
    profile = fit_profile(events, None, FitConfig(types=2))
    assert profile.op_mix.observed_counts == {"open": 1, "create": 1}


@pytest.mark.parametrize(
    ("allowed", "path", "match"),
    [
        ([False, False], ["/a", "/b"], r"denied \(allowed=false: 2\)"),
        ([True, True], [None, None], r"no path \(src=null.*: 2\)"),
        ([False, True], ["/a", None], r"allowed=false: 1\).*: 1\)"),
    ],
)
def test_a_trace_with_no_usable_event_is_a_clear_trace_error(
    allowed: list[bool], path: list[str | None], match: str
) -> None:
    events = pl.DataFrame({"time_ms": [T0, T0 + 1], "op": ["open", "saveNamespace"], "path": path,
                           "dst": [None, None], "user": ["u", "u"], "allowed": allowed})  # fmt: skip
    with pytest.raises(TraceError, match=match):
        fit_profile(events, None, FitConfig(types=2))


def test_bad_seed_and_reversed_window_are_option_errors() -> None:
    from mimesisbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--seed"):
        FitConfig(seed=-1)
    with pytest.raises(ConfigError, match="--window-start"):
        FitConfig(window_start_ms=T0 + 10, window_end_ms=T0)
    with pytest.raises(ConfigError, match="--window-start"):
        FitConfig(window_start_ms=T0, window_end_ms=T0)


def test_a_handed_over_table_is_freed_before_the_types_are_fitted(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fit_profile(Handover(table))`` holds the only reference and drops it once read: by the
    clustering the table is gone (a 10 M-event table is a third of a fit's peak memory), and the
    profile is the one fitted from the table itself."""
    import weakref

    from mimesisbench.handover import Handover
    from mimesisbench.model import fit as fit_module

    config = FitConfig(types=2, seed=3)
    kept = fit_profile(two_type_trace(), None, config)
    table = two_type_trace()
    alive: list[bool] = []
    ref = weakref.ref(table)
    real = fit_module.cluster_kinds

    def spy(*args: object, **kwargs: object) -> object:
        alive.append(ref() is not None)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fit_module, "cluster_kinds", spy)
    handed = Handover(table)
    del table
    freed = fit_profile(handed, None, config)
    assert alive == [False]
    assert freed.model_dump(exclude={"source"}) == kept.model_dump(exclude={"source"})
    with pytest.raises(RuntimeError, match="taken twice"):
        handed.take()
