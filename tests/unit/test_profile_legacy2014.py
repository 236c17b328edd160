"""Import of the 2014 MimesisBench format, on the real Yahoo profile and on small synthetic ones."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mimesisbench.cli.main import main
from mimesisbench.errors import InputError, ProfileError
from mimesisbench.profile.io import load_profile, profile_to_json, tree_file_path
from mimesisbench.profile.schema import WorkloadProfile
from mimesisbench.synth.legacy2014 import NOT_DELETED_MS, import_2014, parse_properties, save_imported

# PRE_EXISTING_FILES1..30 as listed in nnmetadata.properties.common
YAHOO_PRE_EXISTING = [
    18112, 18339, 517, 17184, 145465, 11234, 33264, 13159, 14972, 49730,
    9249, 59477, 63775, 17656, 459398, 4499, 17923, 11849, 78, 8952,
    8844, 16190, 30056, 1430, 133, 11437, 18204, 897, 4299, 27094,
]  # fmt: skip


@pytest.fixture(scope="module")
def yahoo(yahoo_zip: Path) -> tuple[WorkloadProfile, list[str]]:
    return import_2014(yahoo_zip)


# ------------------------------------------------------------------------------ the real profile
def test_yahoo_globals(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    profile, dirs = yahoo
    assert profile.source.kind == "imported-2014"
    assert len(profile.types) == 30
    assert [t.id for t in profile.types] == list(range(1, 31))
    assert sum(t.weight for t in profile.types) == pytest.approx(1.0, abs=1e-12)
    assert profile.window_ms == 600_000
    assert profile.total_creates == 3_025_026
    assert [t.pre_existing for t in profile.types] == YAHOO_PRE_EXISTING
    # the brief expected "about 1.4 million"; the file's 30 counts add up to 1,093,416
    assert profile.pre_existing_total == sum(YAHOO_PRE_EXISTING) == 1_093_416
    assert profile.types[14].weight == pytest.approx(0.8062729808554783, rel=1e-6)
    assert all(t.open_share == 1.0 for t in profile.types)  # no RATIO_OF_FILE_LS_TO_OPENS
    assert profile.op_mix.mkdirs_per_create == 0.0


def test_yahoo_namespace(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    profile, dirs = yahoo
    ns = profile.namespace
    assert len(dirs) == ns.directories == 112_792
    assert dirs[:3] == ["/", "/1/", "/1/1/"]
    assert ns.dirs_per_depth[:4] == [1, 3, 3, 28]
    assert len(ns.dirs_per_depth) == 26 and sum(ns.dirs_per_depth) == 112_792
    # FILES_AT_DEPTH keys 2..20 become file depths 3..21 (a file in a depth-d directory is at d+1)
    assert min(ns.files_at_depth) == 3 and max(ns.files_at_depth) == 21
    assert sum(ns.files_at_depth.values()) == pytest.approx(1.0)
    assert ns.files_at_depth[11] == pytest.approx(0.2606301865380524 / 0.999867012, rel=1e-6)
    assert ns.subdirs_per_dir is not None
    # leaves: directories that are no other directory's parent
    parents = {d[: d.rstrip("/").rfind("/") + 1] for d in dirs if d != "/"}
    leaf_share = 1 - len(parents) / len(dirs)
    assert float(ns.subdirs_per_dir.cdf(0.0)) == pytest.approx(leaf_share, abs=1e-12)
    # every directory but the root is someone's subdirectory: mean subdirs = (dirs - 1) / dirs
    assert ns.subdirs_per_dir.mean() == pytest.approx((112_792 - 1) / 112_792, rel=0.01)


def test_yahoo_type_1_distributions(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    t1 = yahoo[0].types[0]
    # AOD_CLUSTER1: 59, 71, 80, 337 at 0.25 each, no "not deleted" key -> every file deleted
    assert t1.delete_share == 1.0
    assert t1.delete_delay_origin == "creation"
    assert t1.delete_delay is not None
    assert t1.delete_delay.values == [59.0, 71.0, 80.0, 337.0]
    assert t1.delete_delay.weights == pytest.approx([0.25] * 4)
    assert t1.create_interarrival is not None and t1.create_interarrival.values[:3] == [0.0, 1.0, 2.0]
    assert t1.create_interarrival.weights[0] == pytest.approx(0.0073359073359073)
    assert t1.activation_delay is not None and t1.activation_delay.values[:3] == [102.0, 145.0, 184.0]
    assert t1.active_span is not None and t1.active_span.values[0] == 308.0
    assert t1.active_span.weights[0] == pytest.approx(0.0011578541103821)
    assert t1.access_interarrival is not None and len(t1.access_interarrival.values) == 8027
    assert set(t1.observed) == {"type_access_interarrival", "age_at_access"}
    assert t1.observed["age_at_access"].values[:2] == [3.0, 1410.0]


def test_yahoo_not_deleted_types(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    t2 = yahoo[0].types[1]  # AOD_CLUSTER2 is only the "not deleted" key
    assert t2.delete_share == 0.0 and t2.delete_delay is None
    t15 = yahoo[0].types[14]
    assert t15.delete_share == 1.0 and t15.delete_delay is not None
    assert len(t15.delete_delay.values) == 3649
    assert max(t.delete_delay.values[-1] for t in yahoo[0].types if t.delete_delay) < NOT_DELETED_MS


def test_yahoo_notes_say_how(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    notes = "\n".join(yahoo[0].source.notes)
    for fragment in ("CREATE_INTERARRIVAL", "AOD", "not deleted", "FILES_AT_DEPTH_WEIGHTS", "RATIO_OF_FILE_LS"):
        assert fragment in notes


def test_yahoo_gap_sampling_tables(yahoo: tuple[WorkloadProfile, list[str]]) -> None:
    """Import calibrates the closing rule's interarrival sampling where it helps (seeded, recorded)."""
    tables = {t.id: t.access_gap_sampling for t in yahoo[0].types if t.access_gap_sampling is not None}
    assert len(tables) >= 20
    for table in tables.values():
        assert table.ks < table.ks_uncalibrated and table.seed == 2014 and table.rounds > 0
        assert "generator table" in table.note
    assert tables[4].ks < 0.02 < tables[4].ks_uncalibrated
    assert "seed 2014" in "\n".join(yahoo[0].source.notes)


@pytest.fixture(scope="module")
def yahoo_saved(yahoo: tuple[WorkloadProfile, list[str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_imported(yahoo[0], yahoo[1], tmp_path_factory.mktemp("yahoo") / "yahoo")


def test_save_load_round_trip(yahoo: tuple[WorkloadProfile, list[str]], yahoo_saved: Path) -> None:
    profile, dirs = yahoo
    assert yahoo_saved.name == "yahoo.json"
    loaded = load_profile(yahoo_saved)
    assert loaded.namespace.tree_file == "yahoo.dirs.txt"
    assert loaded == profile.model_copy(update={"namespace": loaded.namespace})
    assert loaded.namespace.model_copy(update={"tree_file": None}) == profile.namespace
    tree = tree_file_path(yahoo_saved, loaded)
    assert tree is not None and tree.read_text().splitlines() == dirs


# ------------------------------------------------------------------------------ profile show on it

def _table_rows(out: str) -> list[list[str]]:
    """The per-type rows of ``profile show``: 9 cells, an id first and a percentage last."""
    cells = (line.split() for line in out.splitlines())
    return [c for c in cells if len(c) == 9 and c[0].isdigit() and c[-1].endswith("%")]


def _show(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(["profile", "show", *argv])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    return out


def test_show_yahoo_lists_30_types(yahoo_saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _show([str(yahoo_saved)], capsys)
    rows = _table_rows(out)
    assert [int(r[0]) for r in rows] == list(range(1, 31))
    assert all(len(r) == 9 for r in rows)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "3,025,026" in out and "1,093,416" in out and "112,792 directories" in out
    # type 15: created round(0.80627 * 3,025,026), 459,398 pre-existing, mean C 59.64 ms
    assert rows[14][2:4] == ["2,438,997", "459,398"]
    assert rows[14][5] == "59.64"


def test_show_yahoo_json(yahoo_saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_show([str(yahoo_saved), "--json"], capsys))
    assert data["type_count"] == 30 and len(data["types"]) == 30
    assert data["window_ms"] == 600_000 and data["directories"] == 112_792
    t1 = data["types"][0]
    assert t1["pre_existing"] == 18_112 and t1["files"] == t1["created"] + 18_112
    assert 0 < t1["read_share"] < 1 and t1["read_share"] + t1["write_share"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------ small synthetic sources
def _type_file(j: int, aod: str = "59, 71", aod_w: str = "0.5, 0.5", **override: str) -> str:
    keys = {
        f"AOD_CLUSTER{j}_KEYS": aod,
        f"AOD_CLUSTER{j}_WEIGHTS": aod_w,
        f"OPEN_INTERARRIVAL_CLUSTER{j}_KEYS": "0, 1",
        f"OPEN_INTERARRIVAL_CLUSTER{j}_WEIGHTS": "0.5, 0.5",
        f"OPEN_INTERARRIVAL_CLUSTER{j}_PER_FILE_KEYS": "10, 20",
        f"OPEN_INTERARRIVAL_CLUSTER{j}_PER_FILE_WEIGHTS": "0.5, 0.5",
        f"ACTIVATION_TIME_CLUSTER{j}_KEYS": "100",
        f"ACTIVATION_TIME_CLUSTER{j}_WEIGHTS": "1.0",
        f"DEACTIVATION_TIME_CLUSTER{j}_KEYS": "1000, 2000",
        f"DEACTIVATION_TIME_CLUSTER{j}_WEIGHTS": "0.25, 0.75",
        f"AOA_CLUSTER{j}_KEYS": "5",
        f"AOA_CLUSTER{j}_WEIGHTS": "1",
        f"CREATE_INTERARRIVAL_CLUSTER{j}_KEYS": "0, 3, 3, 7",
        f"CREATE_INTERARRIVAL_CLUSTER{j}_WEIGHTS": "0.1, 0.2, 0.3, 0.4",
    }
    keys.update(override)
    # like the real files: some keys listed first empty, then filled
    return "".join(f"{k} =\n" for k in list(keys)[:2]) + "".join(f"{k} = {v}\n\n" for k, v in keys.items())


def _write_source(root: Path, common_extra: str = "", weights: str = "0.75, 0.25", **type_files: str) -> Path:
    folder = root / "old.properties"
    folder.mkdir(parents=True)
    common = (
        "FILE_TYPES = 2\nCLUSTER_WEIGHTS = " + weights + "\nPRE_EXISTING_FILES1 = 10\nPRE_EXISTING_FILES2 = 0\n"
        "TARGET_CREATES = 100\nMAX_TIME = 60000\nFILES_AT_DEPTH_KEYS = 1, 2\nFILES_AT_DEPTH_WEIGHTS = 0.4, 0.6\n"
        "CREATES_INTERARRIVAL_KEYS = 0, 5\nCREATES_INTERARRIVAL_WEIGHTS = 0.5, 0.5\n" + common_extra
    )
    (folder / "old.properties.common").write_text(common)
    for j in (1, 2):
        (folder / f"old.properties.{j}").write_text(type_files.get(f"t{j}", _type_file(j)))
    (folder / "old.properties.namespace").write_text("/\n/a/\n/a/b/\n/c/\n")
    return folder


def test_synthetic_mapping(tmp_path: Path) -> None:
    folder = _write_source(
        tmp_path,
        common_extra="RATIO_OF_FILE_LS_TO_OPENS = 0.25\nRATIO_OF_MKDIRS_TO_CREATES = 0.1\n",
        t2=_type_file(2, aod=f"500, {NOT_DELETED_MS}", aod_w="0.2, 0.8"),
    )
    profile, dirs = import_2014(folder)
    t1, t2 = profile.types
    assert (t1.weight, t2.weight, t1.pre_existing) == (0.75, 0.25, 10)
    assert t1.open_share == pytest.approx(0.8)  # 1 / (1 + 0.25)
    assert profile.op_mix.mkdirs_per_create == pytest.approx(0.1)
    assert profile.op_mix.dir_list_per_access == 0.0
    # duplicate key 3 merged
    assert t1.create_interarrival is not None
    assert t1.create_interarrival.values == [0.0, 3.0, 7.0]
    assert t1.create_interarrival.weights == pytest.approx([0.1, 0.5, 0.4])
    assert t1.delete_share == 1.0
    assert t2.delete_share == pytest.approx(0.2)
    assert t2.delete_delay is not None and t2.delete_delay.values == [500.0]
    assert dirs == ["/", "/a/", "/a/b/", "/c/"]
    # the format's spans describe the files created in the trace's window
    assert all(t.span_population == "created" for t in profile.types)
    assert '"span_population": "created"' in profile_to_json(profile)
    assert "span_population 'created'" in "\n".join(profile.source.notes)
    assert profile.namespace.dirs_per_depth == [1, 2, 1]
    assert profile.namespace.files_at_depth == pytest.approx({2: 0.4, 3: 0.6})


def test_import_without_calibration_has_no_tables(tmp_path: Path) -> None:
    profile, _ = import_2014(_write_source(tmp_path), calibrate=False)
    assert all(t.access_gap_sampling is None for t in profile.types)
    assert "access_gap_sampling" not in profile_to_json(profile)  # absent tables are not written


def test_zip_and_folder_give_the_same_profile(tmp_path: Path) -> None:
    folder = _write_source(tmp_path)
    archive = tmp_path / "old.properties.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in sorted(folder.iterdir()):
            zf.write(f, f"old.properties/{f.name}")
    from_zip, dirs_zip = import_2014(archive)
    from_dir, dirs_dir = import_2014(folder)
    assert from_zip.types == from_dir.types and dirs_zip == dirs_dir
    assert any("sha256" in note for note in from_zip.source.notes)


def test_cli_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _write_source(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["profile", "import", str(folder), "-o", str(tmp_path / "out" / "p.json")])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    assert "4 directories" in out
    loaded = load_profile(tmp_path / "out" / "p.json")
    assert loaded.namespace.tree_file == "p.dirs.txt"
    assert (tmp_path / "out" / "p.dirs.txt").read_text() == "/\n/a/\n/a/b/\n/c/\n"


def test_zero_weight_type_with_empty_histograms(tmp_path: Path) -> None:
    prefixes = [f"{name}_CLUSTER2" for name in ("CREATE_INTERARRIVAL", "ACTIVATION_TIME", "DEACTIVATION_TIME", "AOA")]
    prefixes += ["OPEN_INTERARRIVAL_CLUSTER2", "OPEN_INTERARRIVAL_CLUSTER2_PER_FILE"]
    empty = {f"{prefix}_{part}": "" for prefix in prefixes for part in ("KEYS", "WEIGHTS")}
    folder = _write_source(tmp_path, weights="1.0, 0.0", t2=_type_file(2, aod="", aod_w="", **empty))
    profile, _ = import_2014(folder)
    t2 = profile.types[1]
    assert t2.weight == 0.0 and t2.create_interarrival is None
    assert t2.accessed_share == 0.0 and t2.delete_share == 0.0 and t2.observed == {}
    assert any("type 2" in note for note in profile.source.notes)


def test_weights_renormalised_within_rounding(tmp_path: Path) -> None:
    folder = _write_source(tmp_path, weights="0.7500004, 0.2500001")
    profile, _ = import_2014(folder)
    assert sum(t.weight for t in profile.types) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        ({"common_extra": "", "weights": "0.5, 0.2"}, "old.properties.common: key CLUSTER_WEIGHTS"),
        ({"weights": "0.75, x"}, "old.properties.common: key CLUSTER_WEIGHTS"),
        ({"weights": "1.0"}, "key CLUSTER_WEIGHTS has 1 values"),
        ({"t1": _type_file(1, aod="1, 2, 3")}, "old.properties.1: key AOD_CLUSTER1_KEYS has 3 values"),
        ({"t1": _type_file(1, aod="-5, 2")}, "old.properties.1: key AOD_CLUSTER1_KEYS"),
        ({"t2": _type_file(2, AOA_CLUSTER2_WEIGHTS="0.5")}, "old.properties.2: key AOA_CLUSTER2_WEIGHTS"),
        ({"t2": _type_file(2).replace("CREATE_INTERARRIVAL_CLUSTER2_KEYS", "X")},
         "old.properties.2: key CREATE_INTERARRIVAL_CLUSTER2_KEYS is missing"),
    ],
)
def test_bad_sources_name_file_and_key(tmp_path: Path, mutate: dict[str, str], fragment: str) -> None:
    folder = _write_source(tmp_path, **mutate)
    with pytest.raises(ProfileError, match=fragment):
        import_2014(folder)


def test_missing_common_key_is_named(tmp_path: Path) -> None:
    folder = _write_source(tmp_path)
    common = folder / "old.properties.common"
    common.write_text(common.read_text().replace("MAX_TIME = 60000\n", ""))
    with pytest.raises(ProfileError, match="old.properties.common: key MAX_TIME is missing"):
        import_2014(folder)


def test_missing_source_and_not_a_profile(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        import_2014(tmp_path / "nope.zip")
    (tmp_path / "junk.zip").write_text("not a zip")
    with pytest.raises(ProfileError, match="not a zip"):
        import_2014(tmp_path / "junk.zip")


def test_parse_properties_duplicates() -> None:
    props = parse_properties("A =\nB = 1\nA = 2, 3\n# comment\nC = 4, \\\n 5\n", "f")
    assert props == {"A": "2, 3", "B": "1", "C": "4, 5"}
    with pytest.raises(ProfileError, match="key A is given twice"):
        parse_properties("A = 1\nA = 2\n", "f")


def test_histogram_values_are_the_keys(tmp_path: Path) -> None:
    profile, _ = import_2014(_write_source(tmp_path))
    span = profile.types[0].active_span
    assert span is not None
    np.testing.assert_allclose(span.cdf([1000.0, 2000.0]), [0.25, 1.0])


def test_a_zip_bomb_is_refused_unpacked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mimesisbench.synth.legacy2014 as legacy

    folder = _write_source(tmp_path)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.iterdir()):
            data = f.read_bytes()
            if f.name.endswith(".namespace"):
                data += b"/a/\n" * (1 << 20)  # 4 MiB of directories, a few kB packed
            zf.writestr(f"old.properties/{f.name}", data)
    monkeypatch.setattr(legacy, "MAX_MEMBER_BYTES", 1 << 20)
    with pytest.raises(ProfileError, match="unpacks to more than 1 MiB"):
        import_2014(archive)
    monkeypatch.setattr(legacy, "MAX_MEMBER_BYTES", 256 << 20)
    monkeypatch.setattr(legacy, "MAX_TOTAL_BYTES", 2 << 20)
    with pytest.raises(ProfileError, match="unpacks to more than"):
        import_2014(archive)


def test_a_missing_2014_profile_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found") as info:
        import_2014(tmp_path / "nope.zip")
    assert info.value.exit_code == 3


def test_too_many_types_are_refused(tmp_path: Path) -> None:
    folder = _write_source(tmp_path)
    common = folder / "old.properties.common"
    common.write_text(common.read_text().replace("FILE_TYPES = 2", "FILE_TYPES = 100000"))
    with pytest.raises(ProfileError, match="FILE_TYPES must lie in 1..1000"):
        import_2014(folder)
