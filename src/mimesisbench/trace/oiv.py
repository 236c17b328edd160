"""Read namespace snapshots written by Hadoop's Offline Image Viewer (``hdfs oiv``).

Two variants are recognised by their first bytes (plain or gzip'd):

* ``-p Delimited``: TAB-separated text with the header ``Path, Replication, ModificationTime,
  AccessTime, PreferredBlockSize, BlocksCount, FileSize, NSQUOTA, DSQUOTA, Permission,
  UserName, GroupName``. Directories are the rows whose ``Permission`` starts with ``d``. Times
  are ``yyyy-MM-dd HH:mm`` (minute resolution), written in the time zone of the machine that ran
  ``oiv``; they are read as UTC.
* ``-p XML``: ``<fsimage>`` with ``<INodeSection>`` (``<inode>`` with ``id``, ``type``
  FILE/DIRECTORY/SYMLINK, ``name``, ``mtime``/``atime`` in ms, ``replication`` and
  ``<blocks><block><numBytes>``) and ``<INodeDirectorySection>`` (``<directory>`` with a
  ``parent`` id and ``child`` ids; Hadoop 2 writes ``inode`` for the children). The root inode
  has an empty name. The document is streamed with ``iterparse`` and elements are cleared as
  they are read. Inodes not reachable from the root (kept only by snapshots) are left out.

Both give the snapshot table of ``events``: ``path`` String, ``is_dir`` Boolean, ``mtime_ms``
Int64, ``atime_ms`` Int64 (null for directories, which have no access time), ``size`` Int64
(bytes; 0 for directories), ``replication`` Int32 (0 for directories and symlinks).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from mimesisbench.errors import TraceError
from mimesisbench.trace.events import SNAPSHOT_COLUMNS
from mimesisbench.trace.hdfs_audit import open_decompressed

DELIMITED_HEADER: tuple[str, ...] = (
    "Path",
    "Replication",
    "ModificationTime",
    "AccessTime",
    "PreferredBlockSize",
    "BlocksCount",
    "FileSize",
    "NSQUOTA",
    "DSQUOTA",
    "Permission",
    "UserName",
    "GroupName",
)
SNAPSHOT_SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String(),
    "is_dir": pl.Boolean(),
    "mtime_ms": pl.Int64(),
    "atime_ms": pl.Int64(),
    "size": pl.Int64(),
    "replication": pl.Int32(),
}
_SNIFF_BYTES = 4096


def detect_oiv_variant(path: str | Path) -> str:
    """``"delimited"`` or ``"xml"`` from the file's first bytes; ``TraceError`` otherwise."""
    with open_decompressed(path) as f:
        try:
            head = f.read(_SNIFF_BYTES)
        except OSError as e:
            raise TraceError(f"cannot read snapshot {path}: {e}") from None
    if not head.strip():
        raise TraceError(f"snapshot {path} is empty")
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if text.startswith((b"<?xml", b"<fsimage")):
        return "xml"
    first = text.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    if first.split("\t")[:2] == list(DELIMITED_HEADER[:2]):
        return "delimited"
    raise TraceError(
        f"{path} is not an Offline Image Viewer snapshot (expected -p XML or -p Delimited output, "
        f"whose header starts with 'Path<TAB>Replication')"
    )


def read_oiv_snapshot(path: str | Path) -> pl.DataFrame:
    """Read an ``hdfs oiv`` snapshot (Delimited or XML, detected) into the snapshot table."""
    variant = detect_oiv_variant(path)
    table = read_oiv_xml(path) if variant == "xml" else read_oiv_delimited(path)
    if table.height == 0:
        raise TraceError(f"snapshot {path} lists no inode")
    return table


# --------------------------------------------------------------------------------------------
# Delimited


def read_oiv_delimited(path: str | Path) -> pl.DataFrame:
    """Read ``hdfs oiv -p Delimited`` output (TAB-separated, with its header line)."""
    with open_decompressed(path) as f:
        try:
            data = f.read()
        except (OSError, EOFError) as e:
            raise TraceError(f"cannot read snapshot {path}: {e}") from None
    try:
        raw = pl.read_csv(
            data,
            separator="\t",
            has_header=True,
            quote_char=None,
            infer_schema=False,
            truncate_ragged_lines=True,
            encoding="utf8-lossy",
        )
    except pl.exceptions.PolarsError as e:
        raise TraceError(f"cannot read Delimited snapshot {path}: {e}") from None
    missing = [c for c in ("Path", "Replication", "ModificationTime", "AccessTime", "FileSize", "Permission")
               if c not in raw.columns]  # fmt: skip
    if missing:
        raise TraceError(f"Delimited snapshot {path} lacks the column(s) {', '.join(missing)}")
    minute = "%Y-%m-%d %H:%M"
    is_dir = pl.col("Permission").str.starts_with("d")
    table = raw.select(
        path=pl.col("Path"),
        is_dir=is_dir,
        mtime_ms=pl.col("ModificationTime").str.strptime(pl.Datetime("ms"), minute, strict=False).cast(pl.Int64),
        atime_ms=pl.when(~is_dir).then(
            pl.col("AccessTime").str.strptime(pl.Datetime("ms"), minute, strict=False).cast(pl.Int64)
        ),
        size=pl.col("FileSize").cast(pl.Int64, strict=False).fill_null(0),
        replication=pl.col("Replication").cast(pl.Int32, strict=False).fill_null(0),
    )
    bad = table.filter(pl.col("path").is_null() | pl.col("is_dir").is_null() | pl.col("mtime_ms").is_null())
    if bad.height:
        first = int(table.with_row_index().filter(pl.col("path").is_null() | pl.col("is_dir").is_null()
                                                  | pl.col("mtime_ms").is_null())["index"][0])  # fmt: skip
        raise TraceError(
            f"Delimited snapshot {path}: {bad.height:,} row(s) lack a path, permission or "
            f"modification time, the first at line {first + 2}"
        )
    return table.select(SNAPSHOT_COLUMNS)


# --------------------------------------------------------------------------------------------
# XML


@dataclass
class _Inodes:
    """Inode attributes in parallel lists, in document order, and the directory tree."""

    ids: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    is_dir: list[bool] = field(default_factory=list)
    mtime: list[int | None] = field(default_factory=list)
    atime: list[int | None] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    replication: list[int] = field(default_factory=list)
    parent_of: dict[int, int] = field(default_factory=dict)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _read_inode(elem: ET.Element, inodes: _Inodes, source: str) -> None:
    inode_id = _int(elem.findtext("id"))
    kind = (elem.findtext("type") or "").strip()
    if inode_id is None or kind not in ("FILE", "DIRECTORY", "SYMLINK"):
        raise TraceError(f"XML snapshot {source}: an <inode> lacks a valid <id> or <type>")
    is_dir = kind == "DIRECTORY"
    size = 0
    blocks = elem.find("blocks")
    if blocks is not None:
        size = sum(_int(b.findtext("numBytes")) or 0 for b in blocks.iter("block"))
    inodes.ids.append(inode_id)
    inodes.names.append(elem.findtext("name") or "")
    inodes.is_dir.append(is_dir)
    inodes.mtime.append(_int(elem.findtext("mtime")))
    inodes.atime.append(None if is_dir else _int(elem.findtext("atime")))
    inodes.size.append(size)
    inodes.replication.append(_int(elem.findtext("replication")) or 0)


def _read_directory(elem: ET.Element, inodes: _Inodes) -> None:
    parent = _int(elem.findtext("parent"))
    if parent is None:
        return
    for child in elem:
        if child.tag in ("child", "inode"):
            cid = _int(child.text)
            if cid is not None:
                inodes.parent_of[cid] = parent


def _scan_xml(path: str | Path) -> _Inodes:
    inodes = _Inodes()
    source = str(path)
    section: str | None = None
    depth = 0
    with open_decompressed(path) as f:
        try:
            for event, elem in ET.iterparse(f, events=("start", "end")):
                if event == "start":
                    depth += 1
                    if depth == 2:
                        section = elem.tag
                    continue
                depth -= 1
                if depth == 2 and section == "INodeSection" and elem.tag == "inode":
                    _read_inode(elem, inodes, source)
                    elem.clear()
                elif depth == 2 and section == "INodeDirectorySection" and elem.tag == "directory":
                    _read_directory(elem, inodes)
                    elem.clear()
                elif depth == 1:
                    section = None
                    elem.clear()
        except ET.ParseError as e:
            raise TraceError(f"XML snapshot {source} is not well-formed: {e}") from None
        except (OSError, EOFError) as e:
            raise TraceError(f"cannot read snapshot {source}: {e}") from None
    return inodes


def _full_paths(inodes: _Inodes) -> list[str | None]:
    """Each inode's absolute path (None when it does not hang off the root)."""
    index = {inode_id: i for i, inode_id in enumerate(inodes.ids)}
    roots = [i for i, inode_id in enumerate(inodes.ids) if inodes.names[i] == "" and inode_id not in inodes.parent_of]
    paths: list[str | None] = [None] * len(inodes.ids)
    for r in roots:
        paths[r] = "/"
    resolving: set[int] = set()
    for i in range(len(inodes.ids)):
        if paths[i] is not None or i in resolving:
            continue
        chain: list[int] = []
        j: int | None = i
        while j is not None and paths[j] is None and j not in resolving:  # walk up to a known path
            resolving.add(j)
            chain.append(j)
            parent = inodes.parent_of.get(inodes.ids[j])
            j = index.get(parent) if parent is not None else None
        base = paths[j] if j is not None else None
        for k in reversed(chain):
            if base is not None:
                base = (base.rstrip("/") + "/" + inodes.names[k]) if base != "/" else "/" + inodes.names[k]
            paths[k] = base
            resolving.discard(k)
    return paths


def read_oiv_xml(path: str | Path) -> pl.DataFrame:
    """Read ``hdfs oiv -p XML`` output, streaming, into the snapshot table (document order)."""
    inodes = _scan_xml(path)
    if not inodes.ids:
        raise TraceError(f"XML snapshot {path} has no <INodeSection> inode")
    table = pl.DataFrame(
        {
            "path": _full_paths(inodes),
            "is_dir": inodes.is_dir,
            "mtime_ms": inodes.mtime,
            "atime_ms": inodes.atime,
            "size": inodes.size,
            "replication": inodes.replication,
        },
        schema=SNAPSHOT_SCHEMA,
    )
    return table.filter(pl.col("path").is_not_null())
