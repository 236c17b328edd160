"""The managed local HDFS, end to end with real processes: operations, audit log, images, CLI.

Tests run in file order on the one session cluster; the last one stops it through the CLI and
starts it again, so the cluster is running for other modules that use ``local_hdfs``.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest
from hdfs_native import Client

from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.hdfs.processes import ProcessRecord
from mimesisbench.hdfs.state import read_state

pytestmark = pytest.mark.integration

AUDIT_LINE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO FSNamesystem\.audit: (?P<body>allowed=.*)$"
)


def audit_records(path: Path) -> list[dict[str, str]]:
    """Every audit line as ``{"allowed": ..., "ugi": ..., "cmd": ..., "src": ..., ...}``."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = AUDIT_LINE.match(line)
        assert match, f"unexpected audit line format: {line!r}"
        fields = dict(part.split("=", 1) for part in match["body"].split("\t"))
        fields["ts"] = match["ts"]
        records.append(fields)
    return records


def wait_for_audit(
    path: Path, wanted: list[tuple[str, str]], timeout_s: float = 10.0
) -> list[dict[str, str]]:
    """Poll the audit log until every (cmd prefix, src) pair appears; fail listing what is missing."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = audit_records(path) if path.is_file() else []
        seen = {(r["cmd"].split(" ")[0], r["src"]) for r in records}
        missing = [pair for pair in wanted if pair not in seen]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not missing, f"audit lines missing for {missing}; log has {sorted(seen)}"
    return records


def cli() -> Path:
    exe = Path(sys.executable).parent / "mimesisbench"
    assert exe.is_file(), f"the mimesisbench console script is expected beside {sys.executable}"
    return exe


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(cli()), *args], capture_output=True, text=True, timeout=120, check=False)


def test_cluster_is_ready_and_listens_on_loopback_only(local_hdfs: LocalHdfs) -> None:
    status = local_hdfs.status()
    assert status.running, status
    assert local_hdfs.url == f"hdfs://127.0.0.1:{local_hdfs.rpc_port}"
    assert status.health is not None and status.health.fs_state == "Operational"
    assert status.health.live_datanodes == 1
    state = read_state(local_hdfs.layout.state_file)
    assert state is not None and {r.role for r in state.processes} == {"namenode", "datanode"}
    for record in state.processes:
        proc = record.process()
        assert proc is not None, f"{record.role} is not running"
        listening = [c.laddr for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening, f"{record.role} listens on nothing"
        assert all(addr.ip == "127.0.0.1" for addr in listening), f"{record.role} listens on {listening}"
    ports = {c.laddr.port for r in state.processes for c in r.process().net_connections(kind="inet")}  # type: ignore[union-attr]
    assert {local_hdfs.rpc_port, local_hdfs.http_port} <= ports


def test_client_operations_are_in_the_audit_log(local_hdfs: LocalHdfs) -> None:
    client = Client(local_hdfs.url)
    base = "/mb/audit"
    client.mkdirs(f"{base}/dir", create_parent=True)
    with client.create(f"{base}/dir/data.bin") as writer:
        writer.write(b"mimesis" * 100)
    with client.create(f"{base}/dir/empty"):
        pass
    with client.read(f"{base}/dir/data.bin") as reader:
        assert reader.read() == b"mimesis" * 100
    assert sorted(s.path for s in client.list_status(f"{base}/dir")) == [
        f"{base}/dir/data.bin",
        f"{base}/dir/empty",
    ]
    assert client.get_file_info(f"{base}/dir/data.bin").length == 700
    client.rename(f"{base}/dir/data.bin", f"{base}/moved.bin")
    assert client.delete(f"{base}/dir/empty")

    records = wait_for_audit(
        local_hdfs.audit_log,
        [
            ("mkdirs", f"{base}/dir"),
            ("create", f"{base}/dir/data.bin"),
            ("create", f"{base}/dir/empty"),
            ("open", f"{base}/dir/data.bin"),
            ("listStatus", f"{base}/dir"),
            ("getfileinfo", f"{base}/dir/data.bin"),
            ("rename", f"{base}/dir/data.bin"),
            ("delete", f"{base}/dir/empty"),
        ],
    )
    ours = [r for r in records if r["src"].startswith(base)]
    assert all(r["allowed"] == "true" and r["proto"] == "rpc" for r in ours)
    assert all(r["ip"] == "/127.0.0.1" and r["ugi"].endswith("(auth:SIMPLE)") for r in ours)
    rename = next(r for r in ours if r["cmd"].startswith("rename"))
    assert rename["dst"] == f"{base}/moved.bin"
    # In file order: the audit logger writes each call as it completes.
    order = [r["cmd"].split(" ")[0] for r in ours]
    assert order.index("mkdirs") < order.index("create") < order.index("open") < order.index("delete")


def test_save_namespace_and_dump_images(local_hdfs: LocalHdfs, tmp_path: Path) -> None:
    client = Client(local_hdfs.url)
    base = "/mb/image"
    expected = {f"{base}/d{i}/f{j}" for i in range(3) for j in range(2)}
    for path in sorted(expected):
        client.mkdirs(path.rsplit("/", 1)[0], create_parent=True)
        with client.create(path) as writer:
            if path.endswith("d0/f0"):  # one file with a block; empty ones close without waiting
                writer.write(path.encode())
    before = local_hdfs.newest_fsimage()
    image = local_hdfs.save_namespace()
    assert int(image.name.split("_")[1]) > int(before.name.split("_")[1])
    status = local_hdfs.status()
    assert status.health is not None and status.health.fs_state == "Operational", "still in safe mode"

    tsv = local_hdfs.dump_image("Delimited", tmp_path / "image.tsv")
    with open(tsv, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    by_path = {row["Path"]: row for row in rows}
    assert expected <= by_path.keys(), sorted(by_path)
    assert {f"{base}/d0", "/mb/audit/moved.bin"} <= by_path.keys()
    assert by_path[f"{base}/d0/f0"]["Replication"] == "1"
    assert int(by_path[f"{base}/d0/f0"]["FileSize"]) == len(f"{base}/d0/f0")
    assert by_path[f"{base}/d0/f0"]["BlocksCount"] == "1"
    assert by_path[f"{base}/d2/f1"]["BlocksCount"] == "0"

    xml = local_hdfs.dump_image("XML", tmp_path / "image.xml")
    assert expected <= xml_paths(xml)


def xml_paths(xml: Path) -> set[str]:
    """Full paths from an offline image viewer XML dump (inode names + directory section)."""
    root = ET.parse(xml).getroot()
    names = {node.findtext("id"): node.findtext("name") or "" for node in root.iter("inode")}
    parent: dict[str, str] = {}
    for directory in root.iter("directory"):
        dir_id = directory.findtext("parent")
        for child in directory.findall("child"):
            parent[child.text or ""] = dir_id or ""
    paths = set()
    for inode_id in names:
        parts, node = [], inode_id
        while node in parent:
            parts.append(names[node])
            node = parent[node]
        if parts:
            paths.add("/" + "/".join(reversed(parts)))
    return paths


def test_cli_rejects_a_taken_port_without_traceback(local_hdfs: LocalHdfs, tmp_path: Path) -> None:
    result = run_cli("hdfs", "up", "--workdir", str(tmp_path / "other"), "--port", str(local_hdfs.rpc_port))
    assert result.returncode == 7, result
    assert "already in use" in result.stderr and "Traceback" not in result.stderr


def test_cli_down_leaves_no_process_and_up_restarts_without_reformatting(
    local_hdfs: LocalHdfs, tmp_path: Path
) -> None:
    """Stops the session cluster through the CLI, then starts it again (other modules use it)."""
    workdir = str(local_hdfs.workdir)
    status = run_cli("hdfs", "status", "--workdir", workdir, "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["running"] is True and report["url"] == local_hdfs.url
    assert report["live_datanodes"] == 1

    out = tmp_path / "cli.xml"
    dumped = run_cli("hdfs", "dump-image", "--workdir", workdir, "--format", "xml", "-o", str(out))
    assert dumped.returncode == 0, dumped.stderr
    assert "/mb/image/d1/f1" in xml_paths(out)

    state = read_state(local_hdfs.layout.state_file)
    assert state is not None
    records: tuple[ProcessRecord, ...] = state.processes
    version_file = local_hdfs.layout.name_dir / "current" / "VERSION"
    version_before = version_file.read_text(encoding="utf-8")
    url = local_hdfs.url
    try:
        down = run_cli("hdfs", "down", "--workdir", workdir)
        assert down.returncode == 0, down.stderr
        assert "stopped namenode" in down.stdout and "stopped datanode" in down.stdout
        assert not any(r.is_running() for r in records)
        conf = str(local_hdfs.layout.conf)
        leftovers = [
            p.info
            for p in psutil.process_iter(["pid", "cmdline"])
            if conf in " ".join(p.info["cmdline"] or [])
        ]
        assert not leftovers, f"processes still using {conf}: {leftovers}"
        after = json.loads(run_cli("hdfs", "status", "--workdir", workdir, "--json").stdout)
        assert after["running"] is False
    finally:
        local_hdfs.up()  # the session fixture promises a running cluster to later tests

    assert local_hdfs.url == url, "the free ports of the first start are reused"
    id_lines = re.compile(r"^(namespaceID|clusterID)=.*$", re.M)
    after_version = version_file.read_text(encoding="utf-8")
    assert id_lines.findall(after_version) == id_lines.findall(version_before), "reformatted"
    with Client(local_hdfs.url).read("/mb/audit/moved.bin") as reader:
        assert reader.read() == b"mimesis" * 100
