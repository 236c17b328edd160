"""Offline Image Viewer snapshots: hand-written Delimited and XML images with known answers."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from mimesisbench.errors import TraceError
from mimesisbench.trace.events import SNAPSHOT_COLUMNS
from mimesisbench.trace.oiv import SNAPSHOT_SCHEMA, detect_oiv_variant, read_oiv_snapshot

HEADER = "Path\tReplication\tModificationTime\tAccessTime\tPreferredBlockSize\tBlocksCount\tFileSize\tNSQUOTA\tDSQUOTA\tPermission\tUserName\tGroupName"  # noqa: E501
MIN = 60_000
T0 = 1_444_521_600_000  # 2015-10-11 00:00 UTC

DELIMITED = "\n".join([
    HEADER,
    "/\t0\t2015-10-11 00:00\t1970-01-01 00:00\t0\t0\t0\t9223372036854775807\t-1\tdrwxr-xr-x\thdfs\tsupergroup",
    "/user\t0\t2015-10-11 00:01\t1970-01-01 00:00\t0\t0\t0\t-1\t-1\tdrwxr-xr-x\thdfs\tsupergroup",
    "/user/alice/my file.txt\t3\t2015-10-11 00:02\t2015-10-11 00:03\t134217728\t2\t150000000\t0\t0\t-rw-r--r--\talice\tusers",
    "/user/alice/empty\t2\t2015-10-11 00:04\t2015-10-11 00:04\t134217728\t0\t0\t0\t0\t-rw-r--r--+\talice\tusers",
]) + "\n"  # fmt: skip

XML = """<?xml version="1.0"?>
<fsimage><version><layoutVersion>-66</layoutVersion></version>
<NameSection><genstampV1>1000</genstampV1><txid>42</txid></NameSection>
<INodeSection><lastInodeId>16390</lastInodeId><numInodes>6</numInodes>
<inode><id>16385</id><type>DIRECTORY</type><name></name><mtime>1444521600000</mtime><permission>hdfs:supergroup:0755</permission><nsquota>9223372036854775807</nsquota><dsquota>-1</dsquota></inode>
<inode><id>16386</id><type>DIRECTORY</type><name>user</name><mtime>1444521660000</mtime><permission>hdfs:supergroup:0755</permission></inode>
<inode><id>16387</id><type>DIRECTORY</type><name>alice</name><mtime>1444521720000</mtime><permission>alice:users:0755</permission></inode>
<inode><id>16388</id><type>FILE</type><name>part-00000</name><replication>3</replication><mtime>1444521780123</mtime><atime>1444521790456</atime><preferredBlockSize>134217728</preferredBlockSize><permission>alice:users:0644</permission><blocks><block><id>1073741825</id><genstamp>1001</genstamp><numBytes>134217728</numBytes></block>
<block><id>1073741826</id><genstamp>1002</genstamp><numBytes>1000</numBytes></block>
</blocks>
<storagePolicyId>0</storagePolicyId></inode>
<inode><id>16389</id><type>FILE</type><name>with space &amp; amp</name><replication>1</replication><mtime>1444521800000</mtime><atime>1444521800000</atime><preferredBlockSize>134217728</preferredBlockSize><permission>alice:users:0644</permission></inode>
<inode><id>16390</id><type>SYMLINK</type><name>link</name><permission>alice:users:0777</permission><target>/user</target><mtime>1444521900000</mtime><atime>1444521900000</atime></inode>
<inode><id>16391</id><type>FILE</type><name>only-in-snapshot</name><replication>3</replication><mtime>1</mtime><atime>1</atime></inode>
</INodeSection>
<FileUnderConstructionSection><inode><id>16389</id><path>/user/alice/with space &amp; amp</path></inode></FileUnderConstructionSection>
<INodeDirectorySection>
<directory><parent>16385</parent><child>16386</child><child>16390</child></directory>
<directory><parent>16386</parent><child>16387</child></directory>
<directory><parent>16387</parent><child>16388</child><child>16389</child></directory>
</INodeDirectorySection>
</fsimage>
"""


def test_delimited_dirs_files_times_and_sizes(tmp_path: Path) -> None:
    snap = tmp_path / "fsimage.tsv"
    snap.write_text(DELIMITED)
    assert detect_oiv_variant(snap) == "delimited"
    table = read_oiv_snapshot(snap)
    assert table.schema == pl.Schema(SNAPSHOT_SCHEMA)
    assert table.columns == list(SNAPSHOT_COLUMNS)
    assert table.rows() == [
        ("/", True, T0, None, 0, 0),
        ("/user", True, T0 + MIN, None, 0, 0),
        ("/user/alice/my file.txt", False, T0 + 2 * MIN, T0 + 3 * MIN, 150_000_000, 3),
        ("/user/alice/empty", False, T0 + 4 * MIN, T0 + 4 * MIN, 0, 2),
    ]


def test_delimited_gzip(tmp_path: Path) -> None:
    snap = tmp_path / "fsimage.txt"
    snap.write_bytes(gzip.compress(DELIMITED.encode()))
    assert read_oiv_snapshot(snap)["path"].to_list()[-1] == "/user/alice/empty"


def test_xml_tree_gives_full_paths(tmp_path: Path) -> None:
    snap = tmp_path / "fsimage.xml"
    snap.write_text(XML)
    assert detect_oiv_variant(snap) == "xml"
    table = read_oiv_snapshot(snap)
    assert table.schema == pl.Schema(SNAPSHOT_SCHEMA)
    assert table.rows() == [
        ("/", True, 1444521600000, None, 0, 0),
        ("/user", True, 1444521660000, None, 0, 0),
        ("/user/alice", True, 1444521720000, None, 0, 0),
        ("/user/alice/part-00000", False, 1444521780123, 1444521790456, 134218728, 3),
        ("/user/alice/with space & amp", False, 1444521800000, 1444521800000, 0, 1),
        ("/link", False, 1444521900000, 1444521900000, 0, 0),
    ]


def test_xml_hadoop2_children_named_inode(tmp_path: Path) -> None:
    snap = tmp_path / "old.xml"
    snap.write_text(XML.replace("<child>", "<inode>").replace("</child>", "</inode>"))
    assert read_oiv_snapshot(snap)["path"].to_list()[3] == "/user/alice/part-00000"


def test_xml_gzip(tmp_path: Path) -> None:
    snap = tmp_path / "image"
    snap.write_bytes(gzip.compress(XML.encode()))
    assert read_oiv_snapshot(snap).height == 6


def test_broken_xml_is_a_trace_error(tmp_path: Path) -> None:
    snap = tmp_path / "cut.xml"
    snap.write_text(XML[: len(XML) // 2])
    with pytest.raises(TraceError, match="cut.xml"):
        read_oiv_snapshot(snap)


@pytest.mark.parametrize("content", ["", "hello\tworld\n", "time_ms,op,path\n1,open,/a\n"])
def test_not_a_snapshot(tmp_path: Path, content: str) -> None:
    snap = tmp_path / "thing.txt"
    snap.write_text(content)
    with pytest.raises(TraceError, match="thing.txt"):
        read_oiv_snapshot(snap)


def test_missing_snapshot(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="absent.xml"):
        read_oiv_snapshot(tmp_path / "absent.xml")
