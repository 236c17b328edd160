"""Fit a profile from what a real NameNode wrote: its audit log and its namespace image.

The workload is driven through the native HDFS client against a NameNode + DataNode started from
Maven Central jars (the ``local_hdfs`` fixture). Warehouse files are written before the modeled
window opens (so the snapshot must supply them as pre-existing files); inside the window a "job"
writes part files to ``_temporary`` and renames them into place, reads them and deletes some,
while readers open and list the warehouse files.

The NameNode's timing is the machine's: on a loaded machine every operation takes longer and the
gaps between them change. The assertions therefore hold for any timing: counts, identities and
invariants over the types (how k-means splits the job's files between two types may follow the
timing; what the types add up to may not), and the modeled window ends well after the last
operation, so no generated access stream is cut by a window that timing made tight.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mimesisbench.profile.io import load_profile
from mimesisbench.trace.hdfs_audit import read_audit_logs

pytestmark = pytest.mark.integration

WAREHOUSE_FILES = 24
JOB_FILES = 30
JOB_OPENS = 4
DELETED = 10
WAREHOUSE_OPENS = 3
BASE = "/mbtest-model"  # modeled with --prefix: other tests share the cluster's namespace


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mimesisbench", *args], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def real_trace(local_hdfs, tmp_path_factory):  # type: ignore[no-untyped-def]
    from hdfs_native import Client

    client = Client(local_hdfs.url)
    base = BASE
    for t in range(4):
        client.mkdirs(f"{base}/warehouse/t{t}", create_parent=True)
    for i in range(WAREHOUSE_FILES):
        with client.create(f"{base}/warehouse/t{i % 4}/data-{i:03d}.orc") as writer:
            writer.write(b"")
    time.sleep(0.1)
    # the window opens after everything logged so far (read from the log itself, so the
    # NameNode's time zone does not matter)
    logged, _ = read_audit_logs([local_hdfs.audit_log])
    window_start_ms = int(logged["time_ms"].max()) + 1
    time.sleep(0.1)
    client.mkdirs(f"{base}/jobs/j1/_temporary", create_parent=True)
    for i in range(JOB_FILES):
        tmp = f"{base}/jobs/j1/_temporary/part-{i:05d}"
        with client.create(tmp) as writer:
            writer.write(b"")
        client.rename(tmp, f"{base}/jobs/j1/part-{i:05d}")
    for _ in range(JOB_OPENS):
        for i in range(JOB_FILES):
            with client.read(f"{base}/jobs/j1/part-{i:05d}") as reader:
                reader.read()
    for i in range(DELETED):
        client.delete(f"{base}/jobs/j1/part-{i:05d}")
    for _ in range(WAREHOUSE_OPENS):
        for i in range(WAREHOUSE_FILES):
            with client.read(f"{base}/warehouse/t{i % 4}/data-{i:03d}.orc") as reader:
                reader.read()
    for i in range(WAREHOUSE_FILES):
        client.get_file_info(f"{base}/warehouse/t{i % 4}/data-{i:03d}.orc")
    for t in range(4):
        list(client.list_status(f"{base}/warehouse/t{t}"))
    # the window closes at three times the workload's own length after it opened: a margin that
    # a slow (loaded) NameNode stretches along with the workload, so it is never lost
    logged, _ = read_audit_logs([local_hdfs.audit_log])
    in_window = logged.filter(logged["time_ms"] >= window_start_ms)
    window_end_ms = window_start_ms + 3 * (int(in_window["time_ms"].max()) + 1 - window_start_ms)
    local_hdfs.save_namespace()
    out = tmp_path_factory.mktemp("oiv")
    delimited = out / "fsimage.tsv"
    xml = out / "fsimage.xml"
    local_hdfs.dump_image("Delimited", delimited)
    local_hdfs.dump_image("XML", xml)
    return {"audit": Path(local_hdfs.audit_log), "delimited": delimited, "xml": xml, "window_start": window_start_ms,
            "window_end": window_end_ms}


def _window(real_trace) -> list[str]:  # type: ignore[no-untyped-def]
    return ["--window-start", str(real_trace["window_start"]), "--window-end", str(real_trace["window_end"])]


def _fit(real_trace, tmp_path: Path, snapshot_key: str | None, types: str = "2"):  # type: ignore[no-untyped-def]
    out = tmp_path / f"profile-{snapshot_key}.json"
    args = ["model", "--audit", str(real_trace["audit"]), "--types", types, "--seed", "3", *_window(real_trace),
            "--prefix", BASE, "-o", str(out)]
    if snapshot_key:
        args += ["--snapshot", str(real_trace[snapshot_key])]
    done = _cli(*args)
    assert done.returncode == 0, done.stderr
    return load_profile(out), done


@pytest.mark.parametrize("snapshot_key", ["delimited", "xml"])
def test_fit_from_real_namenode_with_snapshot(real_trace, tmp_path, snapshot_key) -> None:  # type: ignore[no-untyped-def]
    profile, done = _fit(real_trace, tmp_path, snapshot_key)
    assert "malformed" not in done.stderr
    assert profile.source.pre_existing_inferred is False
    # created in the window: the job's part files (each created once, then renamed into place)
    assert profile.total_creates == JOB_FILES
    # the warehouse files were written before the window: the snapshot makes them pre-existing
    # (other tests' files in the same cluster lie outside --prefix)
    assert profile.pre_existing_total == WAREHOUSE_FILES
    counts = profile.op_mix.observed_counts
    assert counts["create"] == JOB_FILES
    assert counts["rename"] == JOB_FILES
    assert counts["delete"] == DELETED
    assert counts["open"] == JOB_FILES * JOB_OPENS + WAREHOUSE_FILES * WAREHOUSE_OPENS
    # format 2: the objects' command chains carry the renames (the op-mix ratios are 0)
    assert profile.op_mix.file_renames_per_create == 0.0
    files = profile.file_types
    assert any(t.commands is not None and "rename" in t.commands.commands for t in files)
    # whichever way k-means splits the files into types, the types add up to the trace: the job's
    # files (renamed, so identity must follow the rename) are every created file, a third of them
    # deleted; the warehouse files are every pre-existing one; every accessed file is opened
    assert sum(t.weight for t in files) == pytest.approx(1.0)
    assert sum(t.weight * t.delete_share for t in files) == pytest.approx(DELETED / JOB_FILES)
    assert sum(t.pre_existing for t in files) == WAREHOUSE_FILES
    assert all(t.commands is not None and "open" in t.commands.commands for t in files if t.accessed_share > 0)
    # a job file's accesses are its rename and its JOB_OPENS opens (its create and final delete are
    # not accesses); a warehouse file's its WAREHOUSE_OPENS opens and a getfileinfo: a type with
    # creates only (no pre-existing file in it) holds job files only, all equally popular (ties are
    # stored a few ulps apart: rounded)
    for t in files:
        if t.weight > 0 and t.pre_existing == 0:
            values = {round(v) for v in t.observed["popularity"].values}
            assert len(values) == 1 and min(values) >= JOB_OPENS + 1
    assert {t.kind for t in profile.directory_types} == {"directory"}
    assert profile.namespace.directories == 10  # /, base, warehouse, t0..t3, jobs, j1, _temporary
    assert max(profile.namespace.files_at_depth) >= 4


def test_fit_without_snapshot_infers_pre_existing(real_trace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    profile, _ = _fit(real_trace, tmp_path, None)
    assert profile.source.pre_existing_inferred is True
    assert profile.pre_existing_total == WAREHOUSE_FILES  # accessed but not created in the window
    assert profile.total_creates == JOB_FILES


def test_auto_k_and_show_on_a_real_profile(real_trace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    profile, _ = _fit(real_trace, tmp_path, "delimited", types="auto")
    assert profile.source.k_selection.startswith("files: auto")
    path = tmp_path / "profile-delimited.json"
    shown = _cli("profile", "show", str(path), "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert len(summary["types"]) == len(profile.types)


def test_round_trip_fit_generate_validate_against_the_real_trace(real_trace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Fit the NameNode's log, generate from the profile, compare the schedule with the log."""
    profile_path = tmp_path / "rt.json"
    done = _cli("model", "--audit", str(real_trace["audit"]), "--snapshot", str(real_trace["delimited"]),
                "--types", "2", "--seed", "3", *_window(real_trace), "--prefix", BASE, "-o", str(profile_path))
    assert done.returncode == 0, done.stderr
    schedule = tmp_path / "schedule"
    done = _cli("generate", str(profile_path), "--seed", "11", "-o", str(schedule))
    assert done.returncode == 0, done.stderr
    window_only = tmp_path / "window.csv"
    logged, _ = read_audit_logs([real_trace["audit"]])
    logged.with_columns([logged[c].cast(str) for c in ("op", "path", "dst", "user")]).filter(
        (logged["time_ms"] >= real_trace["window_start"]) & (logged["time_ms"] < real_trace["window_end"])
        & logged["path"].cast(str).str.starts_with(BASE + "/")
    ).write_csv(window_only)
    done = _cli("validate", str(schedule), "--trace", str(window_only), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    print("round trip on the real NameNode log:", {k: v for k, v in report.items() if k.startswith(("ks_", "opmix"))})
    assert report["ks_popularity"] is not None
    assert report["ks_popularity"] < 0.04  # the paper's bar
