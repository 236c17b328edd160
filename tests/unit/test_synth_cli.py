"""The generate / export-audit / validate verbs: outputs, manifest, errors naming the option."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import polars as pl
import pytest
from test_synth_helpers import make_profile
from tests.unit.cli_run import run_cli

from mimesisbench.profile.io import profile_hash, save_profile
from mimesisbench.schedule.format import DIRECTORIES, EVENTS, FILES, MANIFEST


@pytest.fixture()
def profile_file(tmp_path: Path) -> Path:
    return save_profile(make_profile(n=600, pre=(60, 40, 10)), tmp_path / "profile.json")


def test_generate_writes_the_schedule_and_manifest(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sched"
    code, stdout, _ = run_cli(
        ["generate", str(profile_file), "--seed", "5", "--duration", "40s", "--scale-type", "1=2", "-o", str(out)], capsys
    )
    assert code == 0 and "wrote" in stdout
    assert {p.name for p in out.iterdir()} == {MANIFEST, EVENTS, FILES, DIRECTORIES}
    m = json.loads((out / MANIFEST).read_text())
    assert m["format"] == "mimesisbench-schedule" and m["version"] == 2 and m["seed"] == 5
    assert m["profile"]["hash"] == profile_hash(make_profile(n=600, pre=(60, 40, 10)))
    assert m["window_ms"] == 40_000 and m["options"]["duration_ms"] == 40_000
    assert m["options"]["scale_types"] == [[1, 2.0]]
    assert m["counts"]["per_type"]["1"]["pre_existing"] == 120
    assert sum(m["counts"]["per_op"].values()) == m["counts"]["events"]
    assert m["tool_version"] and m["created_at"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_random_seed_is_drawn_and_recorded(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(["generate", str(profile_file), "-o", str(tmp_path / "a")], capsys)
    m = json.loads((tmp_path / "a" / MANIFEST).read_text())
    assert isinstance(m["seed"], int) and m["seed_source"] == "random"
    # the recorded seed reproduces the schedule
    run_cli(["generate", str(profile_file), "--seed", str(m["seed"]), "-o", str(tmp_path / "b")], capsys)
    assert (tmp_path / "a" / EVENTS).read_bytes() == (tmp_path / "b" / EVENTS).read_bytes()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--types", "3,99"], "--types"),
        (["--types", "x"], "--types"),
        (["--scale-type", "7=2"], "--scale-type"),
        (["--scale-type", "1:2"], "--scale-type"),
        (["--time-scale", "-1"], "--time-scale"),
        (["--duration", "0"], "--duration"),
        (["--duration", "soon"], "--duration"),
        (["--scale-files", "0"], "--scale-files"),
        (["--span-scale", "-3"], "--span-scale"),
        (["--time-scale", "nan"], "--time-scale"),
        (["--time-scale", "inf"], "--time-scale"),
        (["--time-scale", "1e300"], "--time-scale"),
        (["--span-scale", "nan"], "--span-scale"),
        (["--span-scale", "inf"], "--span-scale"),
        (["--scale-files", "1e12"], "--scale-files"),
        (["--scale-files", "nan"], "--scale-files"),
        (["--scale-type", "1=1e12"], "--scale-type"),
        (["--scale-type", "1=inf"], "--scale-type"),
        (["--duration", "1000000000d"], "--duration"),
    ],
)
def test_bad_options_fail_naming_the_option_and_write_nothing(
    profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], option: str
) -> None:
    out = tmp_path / "never"
    code, _, err = run_cli(["generate", str(profile_file), *args, "-o", str(out)], capsys)
    assert code == 2 and option in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["profile.json"]


def test_a_full_disk_exits_3_with_a_message_and_leaves_nothing(
    profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mimesisbench.synth import store

    def boom(*_a: object, **_k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    out = tmp_path / "half"
    monkeypatch.setattr(store, "_write_events", boom)
    code, _, err = run_cli(["generate", str(profile_file), "--seed", "1", "-o", str(out)], capsys)
    assert code == 3 and "no space left" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]
    # a schedule already there stays whole and valid when replacing it fails
    monkeypatch.undo()
    assert run_cli(["generate", str(profile_file), "--seed", "1", "-o", str(out)], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(store, "_write_events", boom)
    code, _, err = run_cli(["generate", str(profile_file), "--seed", "2", "-o", str(out)], capsys)
    assert code == 3 and "no space left" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half", "profile.json"]


def test_a_profile_missing_a_distribution_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(make_profile().model_dump_json())
    data["types"][0]["active_span"] = None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    code, _, err = run_cli(["generate", str(bad), "-o", str(tmp_path / "s")], capsys)
    assert code == 4 and "active_span" in err
    assert not (tmp_path / "s").exists()


def test_validate_json_and_export_audit(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    run_cli(["generate", str(profile_file), "--seed", "3", "-o", str(out)], capsys)
    code, stdout, _ = run_cli(["validate", str(out), "--profile", str(profile_file), "--json"], capsys)
    report = json.loads(stdout)
    assert code == 0
    for key in ("ks_popularity", "ks_interarrival", "ks_span", "ks_depth", "opmix_max_abs_error", "types"):
        assert key in report
    assert report["ks_popularity"] is None and any("popularity" in n for n in report["notes"])
    assert set(report["types"]["1"]) >= {"ks_create_interarrival", "ks_activation", "ks_span", "ks_interarrival", "ks_delete"}
    log = tmp_path / "audit.log"
    code, _, _ = run_cli(["export-audit", str(out), "-o", str(log), "--base", "/b", "--start", "2021-01-02T03:04:05"], capsys)
    assert code == 0 and log.read_text().startswith("2021-01-02 03:04:")
    code, stdout, _ = run_cli(["validate", str(out), "--trace", str(log), "--json"], capsys)
    assert code == 0 and json.loads(stdout)["mode"] == "trace"
    code, _, err = run_cli(["validate", str(out)], capsys)
    assert code == 2 and "--profile" in err
    code, _, err = run_cli(["export-audit", str(out), "--start", "yesterday"], capsys)
    assert code == 2 and "--start" in err


def test_no_gap_balance_is_recorded_and_changes_the_pre_existing_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = make_profile(
        n=4000,
        pre=(4000, 4000, 0),
        window_ms=10**9,
        f_mean=(20_000.0, 20_000.0, 20_000.0),
        span_mean=10_000.0,
        delete_share=0.0,
        accessed_share=1.0,
        span_population="created",
    )
    path = save_profile(profile, tmp_path / "created.json")
    for name, extra in (("on", []), ("off", ["--no-gap-balance"])):
        code, _, _ = run_cli(["generate", str(path), "--seed", "3", *extra, "-o", str(tmp_path / name)], capsys)
        assert code == 0
    on, off = (json.loads((tmp_path / n / MANIFEST).read_text()) for n in ("on", "off"))
    assert on["options"]["balance_gaps"] is True and off["options"]["balance_gaps"] is False
    assert (tmp_path / "on" / EVENTS).read_bytes() != (tmp_path / "off" / EVENTS).read_bytes()
    # validate re-applies the recorded options: the balanced pool is the nearer to F_j
    reports = {}
    for name in ("on", "off"):
        code, stdout, _ = run_cli(["validate", str(tmp_path / name), "--profile", str(path), "--json"], capsys)
        assert code == 0
        reports[name] = json.loads(stdout)
    assert reports["on"]["types"]["1"]["ks_interarrival"] < reports["off"]["types"]["1"]["ks_interarrival"] - 0.02


def _with_tree(tmp_path: Path, lines: list[str], tree_name: str = "p.dirs.txt") -> Path:
    profile = make_profile(n=600, pre=(60, 40, 10))
    ns = profile.namespace.model_copy(update={"tree_file": tree_name})
    path = save_profile(profile.model_copy(update={"namespace": ns}), tmp_path / "p.json")
    if not tree_name.startswith(".."):
        (tmp_path / tree_name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_a_tree_file_outside_the_profiles_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "secret.txt").write_text("/a\n/b\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    path = _with_tree(inner, [], tree_name="../secret.txt")
    for name in ("../secret.txt", "../../../../etc/passwd", "/etc/passwd"):
        data = json.loads(path.read_text())
        data["namespace"]["tree_file"] = name
        path.write_text(json.dumps(data))
        code, _, err = run_cli(["generate", str(path), "--seed", "1", "-o", str(tmp_path / "s")], capsys)
        assert code == 4 and "namespace.tree_file" in err and "outside the profile's directory" in err, err
        assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("bad", ["/a/../../etc", "/a//b", "/a/./b", "/a/b\x00c", ".."])
def test_unsafe_tree_entries_are_refused_by_generate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    path = _with_tree(tmp_path, ["/", "/a", bad, "/c"])
    code, _, err = run_cli(["generate", str(path), "--seed", "1", "-o", str(tmp_path / "s")], capsys)
    assert code == 4 and "namespace.tree_file" in err and "entry 3" in err, err
    assert not (tmp_path / "s").exists()


def test_types_prune_the_namespace_to_the_directories_their_files_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mimesisbench.schedule import read_schedule
    from mimesisbench.synth.check import check_schedule

    lines = ["/"] + [f"/p{i}" for i in range(40)] + [f"/p{i}/q{k}" for i in range(40) for k in range(5)]
    path = _with_tree(tmp_path, lines)
    full_count = len(lines)
    runs = {
        "all": [],
        "pruned": ["--types", "3"],  # 10 pre-existing files
        "full": ["--types", "3", "--full-namespace"],
    }
    for name, extra in runs.items():
        code, out, err = run_cli(["generate", str(path), "--seed", "4", *extra, "-o", str(tmp_path / name)], capsys)
        assert code == 0, err
    manifests = {n: json.loads((tmp_path / n / MANIFEST).read_text()) for n in runs}
    assert manifests["all"]["namespace"] == {
        "pruned": False, "tree_directories": full_count, "pre_existing_directories": full_count
    }
    assert manifests["full"]["namespace"]["pre_existing_directories"] == full_count
    assert manifests["full"]["options"]["full_namespace"] is True
    pruned = manifests["pruned"]["namespace"]
    assert pruned["pruned"] is True and pruned["tree_directories"] == full_count
    assert pruned["pre_existing_directories"] <= 1 + 2 * 10  # the root, <= 10 used and their parents
    tables = read_schedule(tmp_path / "pruned")
    dirs = tables.directories.filter(pl.col("pre_existing"))
    assert dirs.height == pruned["pre_existing_directories"]
    used = set(tables.files.get_column("dir_id").to_list())
    parent = dict(zip(dirs.get_column("dir_id").to_list(), dirs.get_column("parent_id").to_list()))
    needed = set()
    for d in used:
        while d >= 0 and d not in needed:
            needed.add(d)
            d = parent[d]
    assert set(parent) == needed  # exactly the used directories and their ancestors
    assert check_schedule(tables).ok


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        (("types", 2, "id"), 70000, "types[2].id"),
        (("types", 0, "pre_existing"), 10**12, "types[0].pre_existing"),
        (("op_mix", "mkdirs_per_create"), 1e12, "op_mix.mkdirs_per_create"),
        (("types", 1, "observed"), {"popularity": {"values": [1.0, 1e15], "weights": [0.5, 0.5]}},
         "types[1].observed.popularity.values"),
    ],
)
def test_hostile_profiles_exit_4_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: tuple[object, ...], value: object, named: str
) -> None:
    data = json.loads(make_profile().model_dump_json())
    target = data
    for part in key[:-1]:
        target = target[part]
    target[key[-1]] = value
    bad = tmp_path / "hostile.json"
    bad.write_text(json.dumps(data))
    code, out, err = run_cli(["generate", str(bad), "-o", str(tmp_path / "s")], capsys)
    assert code == 4 and named in err and "Traceback" not in out + err
    assert not (tmp_path / "s").exists()


def test_running_out_of_memory_is_a_clear_error(
    profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mimesisbench.synth import pipeline

    def greedy(*_a: object, **_k: object) -> None:
        raise MemoryError

    monkeypatch.setattr(pipeline, "generate_schedule", greedy)
    code, out, err = run_cli(["generate", str(profile_file), "-o", str(tmp_path / "s")], capsys)
    assert code == 7 and "not enough memory" in err and "Traceback" not in out + err
    assert not (tmp_path / "s").exists()
