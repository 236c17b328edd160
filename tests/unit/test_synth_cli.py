"""The generate / export-audit / validate verbs: outputs, manifest, errors naming the option."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from test_synth_helpers import make_profile

from mimesisbench.cli.main import main
from mimesisbench.profile.io import profile_hash, save_profile
from mimesisbench.schedule.format import DIRECTORIES, EVENTS, FILES, MANIFEST


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture()
def profile_file(tmp_path: Path) -> Path:
    return save_profile(make_profile(n=600, pre=(60, 40, 10)), tmp_path / "profile.json")


def test_generate_writes_the_schedule_and_manifest(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sched"
    code, stdout, _ = _run(
        ["generate", str(profile_file), "--seed", "5", "--duration", "40s", "--scale-type", "1=2", "-o", str(out)], capsys
    )
    assert code == 0 and "wrote" in stdout
    assert {p.name for p in out.iterdir()} == {MANIFEST, EVENTS, FILES, DIRECTORIES}
    m = json.loads((out / MANIFEST).read_text())
    assert m["format"] == "mimesisbench-schedule" and m["version"] == 1 and m["seed"] == 5
    assert m["profile"]["hash"] == profile_hash(make_profile(n=600, pre=(60, 40, 10)))
    assert m["window_ms"] == 40_000 and m["options"]["duration_ms"] == 40_000
    assert m["options"]["scale_types"] == [[1, 2.0]]
    assert m["counts"]["per_type"]["1"]["pre_existing"] == 120
    assert sum(m["counts"]["per_op"].values()) == m["counts"]["events"]
    assert m["tool_version"] and m["created_at"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_random_seed_is_drawn_and_recorded(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(["generate", str(profile_file), "-o", str(tmp_path / "a")], capsys)
    m = json.loads((tmp_path / "a" / MANIFEST).read_text())
    assert isinstance(m["seed"], int) and m["seed_source"] == "random"
    # the recorded seed reproduces the schedule
    _run(["generate", str(profile_file), "--seed", str(m["seed"]), "-o", str(tmp_path / "b")], capsys)
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
    ],
)
def test_bad_options_fail_naming_the_option_and_write_nothing(
    profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], option: str
) -> None:
    out = tmp_path / "never"
    code, _, err = _run(["generate", str(profile_file), *args, "-o", str(out)], capsys)
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
    code, _, err = _run(["generate", str(profile_file), "--seed", "1", "-o", str(out)], capsys)
    assert code == 3 and "no space left" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]
    # a schedule already there stays whole and valid when replacing it fails
    monkeypatch.undo()
    assert _run(["generate", str(profile_file), "--seed", "1", "-o", str(out)], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(store, "_write_events", boom)
    code, _, err = _run(["generate", str(profile_file), "--seed", "2", "-o", str(out)], capsys)
    assert code == 3 and "no space left" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half", "profile.json"]


def test_a_profile_missing_a_distribution_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(make_profile().model_dump_json())
    data["types"][0]["active_span"] = None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    code, _, err = _run(["generate", str(bad), "-o", str(tmp_path / "s")], capsys)
    assert code == 4 and "active_span" in err
    assert not (tmp_path / "s").exists()


def test_validate_json_and_export_audit(profile_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    _run(["generate", str(profile_file), "--seed", "3", "-o", str(out)], capsys)
    code, stdout, _ = _run(["validate", str(out), "--profile", str(profile_file), "--json"], capsys)
    report = json.loads(stdout)
    assert code == 0
    for key in ("ks_popularity", "ks_interarrival", "ks_span", "ks_depth", "opmix_max_abs_error", "types"):
        assert key in report
    assert report["ks_popularity"] is None and any("popularity" in n for n in report["notes"])
    assert set(report["types"]["1"]) >= {"ks_create_interarrival", "ks_activation", "ks_span", "ks_interarrival", "ks_delete"}
    log = tmp_path / "audit.log"
    code, _, _ = _run(["export-audit", str(out), "-o", str(log), "--base", "/b", "--start", "2021-01-02T03:04:05"], capsys)
    assert code == 0 and log.read_text().startswith("2021-01-02 03:04:")
    code, stdout, _ = _run(["validate", str(out), "--trace", str(log), "--json"], capsys)
    assert code == 0 and json.loads(stdout)["mode"] == "trace"
    code, _, err = _run(["validate", str(out)], capsys)
    assert code == 2 and "--profile" in err
    code, _, err = _run(["export-audit", str(out), "--start", "yesterday"], capsys)
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
        code, _, _ = _run(["generate", str(path), "--seed", "3", *extra, "-o", str(tmp_path / name)], capsys)
        assert code == 0
    on, off = (json.loads((tmp_path / n / MANIFEST).read_text()) for n in ("on", "off"))
    assert on["options"]["balance_gaps"] is True and off["options"]["balance_gaps"] is False
    assert (tmp_path / "on" / EVENTS).read_bytes() != (tmp_path / "off" / EVENTS).read_bytes()
    # validate re-applies the recorded options: the balanced pool is the nearer to F_j
    reports = {}
    for name in ("on", "off"):
        code, stdout, _ = _run(["validate", str(tmp_path / name), "--profile", str(path), "--json"], capsys)
        assert code == 0
        reports[name] = json.loads(stdout)
    assert reports["on"]["types"]["1"]["ks_interarrival"] < reports["off"]["types"]["1"]["ks_interarrival"] - 0.02
