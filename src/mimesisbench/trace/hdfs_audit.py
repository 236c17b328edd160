"""Parse HDFS NameNode audit logs into the canonical event table (see ``events``).

A NameNode audit line looks like::

    2015-10-11 00:00:00,062 INFO FSNamesystem.audit: allowed=true<TAB>ugi=user1 (auth:KERBEROS)
    <TAB>ip=/10.10.10.10<TAB>cmd=getfileinfo<TAB>src=/dir1/part-00000<TAB>dst=null<TAB>perm=null
    [<TAB>proto=rpc][<TAB>callerContext=...]

How lines are read
------------------
* A line belongs to the audit log when it contains ``FSNamesystem.audit: `` (which also matches
  the fully qualified ``org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit: ``). Any other
  line (another logger, a blank line) is counted in ``ParseReport.other_lines`` and skipped.
* An audit line is an event when its first 23 characters are a ``yyyy-MM-dd HH:mm:ss,SSS``
  timestamp (read as UTC) and it has ``allowed=true|false`` and the fields ``ugi=``, ``cmd=``
  (non-empty), ``src=`` (non-empty) and ``dst=``. Fields after ``dst`` (``perm``, ``proto``,
  ``callerContext``) are not used, so a line cut inside them still counts. Any other audit line is
  malformed: counted, the first ten kept with their 1-based line number.
* ``cmd`` is kept verbatim except ``rename (options=[...])`` (the rename of native clients),
  which becomes ``rename``. ``src=null`` (NameNode-wide commands such as ``datanodeReport``) and
  ``dst=null`` become null.
* ``user`` is the text of ``ugi`` before its first space, verbatim. Hadoop writes
  ``UserGroupInformation.toString()``: ``alice (auth:PROXY) via hue/gw@REALM (auth:KERBEROS)``
  for a proxied call, so this is the *effective* user the operation ran as (``alice``); a
  Kerberos principal is kept whole (``hue/gw@REALM``, not shortened to ``hue``).
* Lines whose fields are out of the usual order or whose path holds a TAB fail the fast check
  and are re-read one by one by a key-based parser, so they are kept when they carry the needed
  fields.
* One CR right before a TAB or before the newline is dropped (it ends the field); a byte-order
  mark is dropped at the start of a file only.
* ``src=null`` events (``saveNamespace``, ``safemode_enter`` ... of ``hdfs dfsadmin``) are kept
  with a null path and counted in ``ParseReport.pathless``: the fit counts them in the operation
  mix only.

Speed and memory
----------------
When the native core is installed (``mimesisbench.native``; ``MIMESISBENCH_NATIVE=0`` turns it
off) ``read_audit_logs`` uses its parser (``native/src/audit.rs``): Rust, blocks parsed in
parallel, paths/users/commands dictionary-encoded to integer codes, the GIL released. It reads
the lines of the usual layout itself and hands every other audit line back to the code of this
module (see "the native parser" below), so both give the same table and report, which
``tests/unit/test_trace_audit_native.py`` checks. The rest of this section is the Python parser.

Files are read in 16 MiB blocks (gzip, recognised by its magic bytes, is decompressed as a
stream), two blocks at a time by worker threads. Each block is split into TAB-separated columns by
polars' CSV reader, checked and extracted with vectorised expressions, and sorted by time (so the
final sort only merges block seams). Paths are the costly column: casting every row to
``Categorical`` costs ~400 ns per row in polars 2.1 once millions of paths are known, so a block
keeps a 64-bit hash per row plus its distinct (hash, path) pairs; the collecting thread casts each
path never seen before to ``Categorical`` once (``PathDictionary``, overlapping the workers), and
the hashes are joined back to paths at the end. (Two distinct paths sharing a 64-bit hash would be
merged; for a million paths the odds are about 1 in 30 million.) ``cmd``, ``ugi`` and ``dst`` are
cast to a per-parse ``Categorical`` as read (few distinct values) and mapped to ``op``, ``user``
and ``dst`` once per distinct value.

The result's dtypes (``EVENT_SCHEMA``): ``time_ms`` Int64, ``op``/``path``/``dst``/``user``
Categorical with polars' global categories (so ``path`` and ``dst`` share one dictionary and
compare directly; ``dst``, ``user`` and, for ``src=null``, ``path`` are nullable), ``allowed``
Boolean.
"""

from __future__ import annotations

import calendar
import gzip
import re
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, cast

import numpy as np
import polars as pl

from mimesisbench.errors import TraceError
from mimesisbench.native import native_module
from mimesisbench.trace.events import EVENT_COLUMNS, MAX_REPORTED_MALFORMED, ParseReport

#: bytes read per block
BLOCK_BYTES = 16 << 20  # larger blocks are slower: glibc serves them by fresh mmaps
#: blocks parsed at the same time, one thread each (polars releases the GIL)
WORKERS = 2
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"

AUDIT_MARK = "FSNamesystem.audit: "
SECONDS_FORMAT = "%Y-%m-%d %H:%M:%S"
#: rows per slice when path hashes are joined to the path dictionary
JOIN_ROWS = 4_000_000
#: the ``first_ms`` of a file without events (files are ordered by their earliest event)
NO_EVENT_MS = 2**63 - 1
#: seed of the 64-bit path hash (any fixed value; hashes never leave the process)
PATH_HASH_SEED = 0x6D696D65

#: dtypes of the event table every reader in this package returns
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "time_ms": pl.Int64(),
    "op": pl.Categorical(),
    "path": pl.Categorical(),
    "dst": pl.Categorical(),
    "user": pl.Categorical(),
    "allowed": pl.Boolean(),
}

# the columns the CSV reader yields: c0 = "<time> <level> <logger>: allowed=..", c1 = ugi,
# c2 = ip (not read), c3 = cmd, c4 = src, c5 = dst; later fields are ignored
_RAW_SCHEMA = {f"c{i}": pl.String() for i in range(6)}
_RAW_COLUMNS = [0, 1, 3, 4, 5]

_SLOW_HEAD = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?FSNamesystem\.audit: allowed=(true|false)(?:\t(.*))?$", re.DOTALL
)
_SLOW_KEYS = ("ugi", "ip", "cmd", "src", "dst", "perm", "proto", "callerContext")


# --------------------------------------------------------------------------------------------
# byte-level input, shared by every reader of this package


def open_decompressed(path: str | Path) -> BinaryIO:
    """Open ``path`` for binary reading, decompressing gzip (detected by magic bytes) as a stream.

    Raises ``TraceError`` naming the file when it is missing or unreadable.
    """
    p = Path(path)
    try:
        f = open(p, "rb")  # noqa: SIM115 - returned to the caller, who closes it
        magic = f.read(2)
        f.seek(0)
    except OSError as e:
        raise TraceError(f"cannot read trace file {p}: {e.strerror or e}") from None
    if magic == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


@dataclass(frozen=True)
class Block:
    """Lines of a file. When ``partial_tail`` the last line is cut and must be dropped: it is
    yielded again, completed, as the next block (keeping it avoids copying the block). ``first``
    when the block starts the file (only there is a byte-order mark dropped)."""

    data: bytes
    partial_tail: bool = False
    first: bool = True


def iter_blocks(path: str | Path, block_bytes: int = BLOCK_BYTES) -> Iterator[Block]:
    """Yield a file's (decompressed) content as blocks of lines, without copying a block.

    Raises ``TraceError`` naming the file when it cannot be opened or read (a corrupt or
    truncated gzip stream included).
    """
    with open_decompressed(path) as f:
        try:
            first = True
            while True:
                chunk = f.read(block_bytes)
                if not chunk:
                    return
                if chunk.endswith(b"\n"):
                    yield Block(chunk, first=first)
                elif (cut := chunk.rfind(b"\n")) < 0:  # one line longer than a block (or the unterminated end)
                    yield Block(chunk + f.readline(), first=first)
                else:
                    tail = chunk[cut + 1 :]
                    yield Block(chunk, partial_tail=True, first=first)
                    del chunk
                    yield Block(tail + f.readline(), first=False)
                first = False
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"cannot read trace file {path}: {e}") from None


# --------------------------------------------------------------------------------------------
# whole tables: sorting, category mapping, the path dictionary


def merge_events(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate event frames (in list order) and sort by ``time_ms``, ties in input order.

    Consumes ``frames`` (the list is emptied) so each unsorted column is freed as soon as its
    sorted copy exists: peak memory stays near one table plus one column.
    """
    columns = _sorted_columns(frames)
    return pl.DataFrame(columns) if columns else pl.DataFrame(schema=EVENT_SCHEMA)


def _sorted_columns(frames: list[pl.DataFrame]) -> list[pl.Series]:
    kept = [f for f in frames if f.height]
    frames.clear()
    if not kept:
        return []
    table = pl.concat(kept, how="vertical", rechunk=False) if len(kept) > 1 else kept[0]
    kept.clear()
    order = None
    if not table["time_ms"].is_sorted():
        order = table.select(pl.arg_sort_by("time_ms", maintain_order=True)).to_series()
    columns = table.get_columns()
    del table
    for i in range(len(columns)):
        columns[i] = columns[i].rechunk() if order is None else columns[i].gather(order)
    return columns


def remap_categories(col: pl.Series, transform: pl.Expr) -> pl.Series:
    """Apply a string ``transform`` (an expression of ``pl.col("v")``) to a Categorical column
    (of any categories); the result is Categorical in the global categories.

    The transform runs once per distinct value and rows are mapped by a gather on the physical
    codes, so this costs a few ns per row.
    """
    distinct = col.unique().drop_nulls()
    if distinct.len() == 0:
        return pl.Series(col.name, [], dtype=pl.Categorical).extend_constant(None, col.len())
    codes = distinct.to_physical()
    new = pl.DataFrame({"v": distinct.cast(pl.String)}).select(transform.cast(pl.Categorical)).to_series()
    lut = pl.Series(col.name, [None], dtype=pl.Categorical).extend_constant(None, int(cast(int, codes.max())))
    return lut.scatter(codes, new).gather(col.to_physical())


def _op_of_cmd() -> pl.Expr:
    op = pl.col("v").str.strip_prefix("cmd=")
    return pl.when(op.str.starts_with("rename (")).then(pl.lit("rename")).otherwise(op)


def _user_of_ugi() -> pl.Expr:
    # (not ``slice(0, find(" "))``: ``find`` counts bytes and ``slice`` characters)
    user = pl.col("v").str.strip_prefix("ugi=").str.split(" ").list.first()
    return pl.when(user != "").then(user)


def _path_of_dst() -> pl.Expr:
    dst = pl.col("v").str.strip_prefix("dst=")
    return pl.when(dst != "null").then(dst)


class PathDictionary:
    """The distinct paths of a parse as ``Categorical`` values, keyed by their 64-bit hash.

    Blocks ``add`` their distinct (hash, raw ``src=...``) pairs. Pending pairs are merged in
    batches: those whose hash is already known are dropped and only new paths are cast to
    ``Categorical``, once each. Merging runs in the thread that collects block results, while
    worker threads parse, and the known paths cost 12 bytes each beyond the categories' copy.
    """

    def __init__(self, batch_rows: int = 1_000_000) -> None:
        self._batch_rows = batch_rows
        self._known = pl.DataFrame(schema={"h": pl.UInt64(), "path": pl.Categorical()})
        self._pending: list[pl.DataFrame] = []
        self._pending_rows = 0

    def add(self, pairs: pl.DataFrame) -> None:
        self._pending.append(pairs)
        self._pending_rows += pairs.height
        if self._pending_rows > max(self._known.height // 2, self._batch_rows):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        pending = pl.concat(self._pending, rechunk=False).lazy()
        self._pending, self._pending_rows = [], 0
        fresh = pl.col("h").is_first_distinct()
        if self._known.height:
            fresh = fresh & ~pl.col("h").is_in(self._known["h"].implode())
        new = pending.filter(fresh).select("h", path=pl.col("p").str.slice(4).cast(pl.Categorical)).collect()
        self._known = pl.concat([self._known, new], rechunk=False)

    def categorical(self) -> pl.DataFrame:
        """Columns ``h`` (UInt64) and ``path`` (Categorical), one row per distinct path.

        Consumes the dictionary (it is empty afterwards).
        """
        self._merge()
        known, self._known = self._known, self._known.clear()
        return known


def finish_events(frames: list[pl.DataFrame], paths: PathDictionary) -> pl.DataFrame:
    """Turn block events into the event table, consuming ``frames`` and ``paths``.

    Rows are sorted by time (``merge_events``), path hashes become paths (by a join on the hash,
    in slices to bound its scratch memory) and the raw ``cmd=``/``ugi=``/``dst=`` categories
    become ``op``/``user``/``dst``. The steps run one after the other and replace one column at a
    time, so peak memory stays near one table plus one column plus the path dictionary.
    """
    names = paths.categorical()
    columns = _sorted_columns(frames)
    if not columns:
        return pl.DataFrame(schema=EVENT_SCHEMA)
    index = {c.name: i for i, c in enumerate(columns)}
    for name, transform in (("op", _op_of_cmd()), ("user", _user_of_ugi()), ("dst", _path_of_dst())):
        columns[index[name]] = remap_categories(columns[index[name]], transform)
    hashes = columns[index["path"]]
    columns[index["path"]] = pl.Series("path", [], dtype=pl.Categorical)
    parts = [
        hashes.slice(start, JOIN_ROWS).to_frame("h").join(names, on="h", how="left", maintain_order="left")["path"]
        for start in range(0, hashes.len(), JOIN_ROWS)
    ]
    del hashes, names
    columns[index["path"]] = pl.concat(parts, rechunk=True)
    del parts
    return pl.DataFrame(columns).select(EVENT_COLUMNS)


# --------------------------------------------------------------------------------------------
# one block of lines


@dataclass
class BlockResult:
    """A parsed block: its events (``EVENT_COLUMNS``, with ``path`` a UInt64 hash and op/user/dst
    raw categories, see ``parse_block``), its distinct (hash, raw ``src=``) pairs, its counts."""

    events: pl.DataFrame
    paths: pl.DataFrame
    lines: int
    other_lines: int
    malformed: int
    # (0-based line within the block, text) of the first malformed lines
    examples: list[tuple[int, str]] = field(default_factory=list)


def _time_expr() -> pl.Expr:
    """ms since the epoch (UTC) of the line's ``yyyy-MM-dd HH:mm:ss,SSS`` start; null if not one.

    The seconds are parsed with polars' cache (lines of a block share few distinct seconds) and
    the milliseconds added as an integer: ~30% cheaper than parsing all 23 characters. (The
    character between them is not checked, so ``.062`` passes as well as ``,062``.)
    """
    head = pl.col("c0")
    seconds = head.str.slice(0, 19).str.strptime(pl.Datetime("ms"), SECONDS_FORMAT, strict=False, cache=True)
    return seconds.cast(pl.Int64) + head.str.slice(20, 3).cast(pl.Int64, strict=False)


def _flag_exprs() -> dict[str, pl.Expr]:
    """Per line, once ``time_ms`` is computed: ``allowed``, is it an audit line (``audit``), is it
    a good event (``ok``), its index in the block (``_row``)."""
    head, ugi, cmd, src, dst = pl.col("c0"), pl.col("c1"), pl.col("c3"), pl.col("c4"), pl.col("c5")
    allowed = head.str.ends_with("allowed=true")
    ok = (
        pl.col("time_ms").is_not_null()
        & (allowed | head.str.ends_with("allowed=false"))
        & ugi.str.starts_with("ugi=")
        & cmd.str.starts_with("cmd=")
        & (cmd != "cmd=")
        & src.str.starts_with("src=")
        & (src != "src=")
        & dst.str.starts_with("dst=")
    )
    audit = head.str.contains(AUDIT_MARK, literal=True).fill_null(False)
    return {
        "allowed": allowed,
        "audit": audit,
        "ok": (audit & ok).fill_null(False),
        "_row": pl.int_range(pl.len(), dtype=pl.UInt32),
    }


def parse_audit_line(text: str) -> tuple[int, str, str | None, str | None, str | None, bool] | None:
    """Parse one audit line by its keys (the slow path); None when it lacks what an event needs.

    Returns ``(time_ms, op, path, dst, user, allowed)``. A TAB inside a value (a path holding a
    TAB) is kept: a piece that does not start with a known ``key=`` continues the previous value.
    One CR right before a TAB is dropped, as the vectorised pass (polars' CSV reader) drops it.
    """
    m = _SLOW_HEAD.match(text.replace("\r\t", "\t"))
    if m is None or m.group(3) is None:
        return None
    try:
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None
    time_ms = calendar.timegm(t.timetuple()) * 1000 + t.microsecond // 1000
    values: dict[str, str] = {}
    last: str | None = None
    for piece in m.group(3).split("\t"):
        key, sep, value = piece.partition("=")
        if sep and key in _SLOW_KEYS and key not in values:
            values[key] = value
            last = key
        elif last is not None:
            values[last] += "\t" + piece
    cmd, src = values.get("cmd", ""), values.get("src", "")
    if not cmd or not src or "ugi" not in values or "dst" not in values:
        return None
    op = "rename" if cmd.startswith("rename (") else cmd
    user = values["ugi"].split(" ", 1)[0] or None
    dst = values["dst"]
    return (time_ms, op, None if src == "null" else src, None if dst == "null" else dst, user, m.group(2) == "true")


_GOOD_COLUMNS = ("time_ms", "c1", "c3", "c4", "c5", "allowed", "_row")


def _recover(block: Block, rows: list[int]) -> tuple[pl.DataFrame, list[tuple[int, str]]]:
    """Re-read the rejected audit lines ``rows`` one by one: (recovered rows, malformed lines).

    Recovered rows have the raw field columns of the fast path (``_GOOD_COLUMNS``).
    """
    lines = block.data.split(b"\n")
    recovered: list[tuple[int, str, str, str, str, bool, int]] = []
    bad: list[tuple[int, str]] = []
    for r in rows:
        text = lines[r].decode("utf-8", "replace")
        text = text.removesuffix("\r")  # one CR before the newline, as polars drops it
        parsed = parse_audit_line(text)
        if parsed is None:
            bad.append((r, text))
            continue
        time_ms, op, path, dst, user, allowed = parsed
        recovered.append(
            (time_ms, f"ugi={user or ''}", f"cmd={op}", f"src={path or 'null'}", f"dst={'null' if dst is None else dst}", allowed, r)
        )
    schema: dict[str, pl.DataType] = {c: pl.String() for c in _GOOD_COLUMNS}
    schema.update(time_ms=pl.Int64(), allowed=pl.Boolean(), _row=pl.UInt32())
    return pl.DataFrame(recovered, schema=schema, orient="row"), bad


@dataclass
class _Scan:
    """A block's lines read by the vectorised pass and, for the audit lines it rejects, by
    ``parse_audit_line``: the events as raw fields (``_GOOD_COLUMNS``, in line order) and every
    malformed line as (0-based line within the block, text)."""

    good: pl.DataFrame
    lines: int
    audit_lines: int
    bad: list[tuple[int, str]]


def _scan_block(block: Block) -> _Scan:
    # polars drops a byte-order mark at the start of the data it reads: only the file's own
    # start may lose one, so a later block starting with one is read after a blank line
    pad = int(not block.first and block.data.startswith(BOM))
    fields = pl.read_csv(
        b"\n" + block.data if pad else block.data,
        separator="\t",
        has_header=False,
        quote_char=None,
        schema=_RAW_SCHEMA,
        columns=_RAW_COLUMNS,
        truncate_ragged_lines=True,
        extra_columns="ignore",
        missing_columns="insert",
        encoding="utf8-lossy",
        raise_if_empty=False,
    )
    if pad or block.partial_tail:
        fields = fields.slice(pad, fields.height - pad - int(block.partial_tail))
    flagged = fields.with_columns(time_ms=_time_expr()).with_columns(**_flag_exprs())
    del fields
    n_lines = flagged.height
    n_audit, n_ok = (int(v or 0) for v in flagged.select(pl.col("audit").sum(), pl.col("ok").sum()).row(0))
    good = (flagged if n_ok == n_lines else flagged.filter(pl.col("ok"))).select(_GOOD_COLUMNS)
    bad: list[tuple[int, str]] = []
    if n_ok < n_audit:
        rows = flagged.filter(pl.col("audit") & ~pl.col("ok"))["_row"].to_list()
        recovered, bad = _recover(block, rows)
        if recovered.height:
            good = pl.concat([good, recovered]).sort("_row")
    return _Scan(good, n_lines, n_audit, bad)


def parse_block(block: Block, raw: pl.Categories) -> BlockResult:
    """Parse a block of audit-log lines: vectorised, with rejected audit lines re-read one by one.

    Returns events with ``path`` as the hash of the raw ``src=`` field and ``op``/``user``/``dst``
    as categories (in ``raw``, one per parse, freed with its last column) of the raw
    ``cmd=``/``ugi=``/``dst=`` fields; ``finish_events`` maps them into the global categories.
    """
    scan = _scan_block(block)
    good, n_lines, n_audit = scan.good, scan.lines, scan.audit_lines
    n_bad = len(scan.bad)
    examples = scan.bad[:MAX_REPORTED_MALFORMED]
    src = pl.col("c4")
    good = good.with_columns(h=pl.when(src != "src=null").then(src.hash(PATH_HASH_SEED)))
    # "+ ''" copies the distinct values out of the block's buffers, which can then be freed
    firsts = good.lazy().filter(pl.col("h").is_first_distinct() & pl.col("h").is_not_null())
    paths = firsts.select("h", p=src + "").collect()
    events = good.select(
        "time_ms",
        op=pl.col("c3").cast(pl.Categorical(raw)),
        path="h",
        dst=pl.col("c5").cast(pl.Categorical(raw)),
        user=pl.col("c1").cast(pl.Categorical(raw)),
        allowed="allowed",
    )
    if not events["time_ms"].is_sorted():
        # a stable sort here (in the worker) leaves the final sort only the block seams to merge
        events = events.sort("time_ms", maintain_order=True)
    return BlockResult(events, paths, n_lines, n_lines - n_audit, n_bad, examples)


# --------------------------------------------------------------------------------------------
# files


def _parse_blocks(blocks: Iterator[Block], raw: pl.Categories, workers: int) -> Iterator[BlockResult]:
    """Parse blocks with ``workers`` threads, yielding results in input order."""
    if workers <= 1:
        yield from (parse_block(b, raw) for b in blocks)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[BlockResult]] = []
        for block in blocks:
            pending.append(pool.submit(parse_block, block, raw))
            del block
            if len(pending) > workers:
                yield pending.pop(0).result()
        for fut in pending:
            yield fut.result()


@dataclass
class _FileParse:
    frames: list[pl.DataFrame]
    report: ParseReport
    first_ms: int  # time of the file's earliest event (for ordering files), NO_EVENT_MS if none


def _parse_file(
    path: str | Path, paths: PathDictionary, raw: pl.Categories, workers: int, block_bytes: int
) -> _FileParse:
    source = str(path)
    report = ParseReport(sources=[source])
    frames: list[pl.DataFrame] = []
    for res in _parse_blocks(iter_blocks(path, block_bytes), raw, workers):
        for line, text in res.examples:
            report.add_malformed(source, report.lines + line + 1, text)
        report.malformed += res.malformed - len(res.examples)
        report.lines += res.lines
        report.other_lines += res.other_lines
        report.events += res.events.height
        if res.events.height:
            frames.append(res.events)
        paths.add(res.paths)
    first = min((int(f["time_ms"][0]) for f in frames), default=NO_EVENT_MS)  # frames are sorted
    return _FileParse(frames, report, first)


def read_audit_logs(
    paths: Sequence[str | Path], *, workers: int = WORKERS, block_bytes: int = BLOCK_BYTES
) -> tuple[pl.DataFrame, ParseReport]:
    """Parse audit logs (one file, or e.g. a rotated set ``hdfs-audit.log``, ``.1``, ...) into one
    event table (``EVENT_SCHEMA``) sorted by time, and a report of what was read.

    Plain and gzip'd files may be mixed. Ties in time keep input order: files are taken in the
    order of their earliest event (so a rotated set merges chronologically however it is listed),
    lines in file order. Raises ``TraceError`` naming the file for a missing, unreadable or empty
    file, and when the files hold no parseable audit event at all. ``workers`` and
    ``block_bytes`` tune the parse (threads, bytes read per block); results do not depend on them.

    Uses the native parser (``mimesisbench.native``) when it is installed, else the Python one
    below; both give the same table and report (``MIMESISBENCH_NATIVE=0`` selects Python).
    """
    if not paths:
        raise TraceError("no audit log given")
    native = native_module()
    if native is not None:
        table, total = _read_native(native, paths, workers, block_bytes)
        total.pathless = table["path"].null_count()
        return table, total
    dictionary = PathDictionary()
    raw = pl.Categories.random()  # raw cmd=/ugi=/dst= values; freed with the last raw column
    files: list[_FileParse] = []
    for p in paths:
        files.append(_parse_file(p, dictionary, raw, workers, block_bytes))
        if files[-1].report.lines == 0:
            raise TraceError(f"audit log {p} is empty")
    total = ParseReport()
    for f in files:
        total.merge(f.report)
    if total.events == 0:
        names = ", ".join(str(p) for p in paths)
        raise TraceError(f"no parseable audit event in {names}: {total.describe()}")
    files.sort(key=lambda f: f.first_ms)  # stable: equal starts keep the given order
    frames = [frame for f in files for frame in f.frames]
    files.clear()  # ``frames`` now holds the only references, which finish_events drops as it goes
    table = finish_events(frames, dictionary)
    total.pathless = table["path"].null_count()
    return table, total


# --------------------------------------------------------------------------------------------
# the native parser (``mimesisbench_native.AuditParser``, native/src/audit.rs)
#
# It reads every line of the usual layout itself and hands back the other audit lines
# ("deferred": odd timestamps, fields out of order, a TAB in a path, invalid UTF-8, malformed
# lines) with their line numbers; they are read here by the code above (``_scan_block``), so
# they give exactly the Python parser's events and malformed lines, and their events are put
# back in place. The result: int codes per row plus dictionaries, turned into Categoricals by
# casting each distinct value once and gathering.


@dataclass
class _DeferredEvents:
    """Events read from deferred lines, as columns in line order, and the malformed lines."""

    lines: list[int] = field(default_factory=list)
    time_ms: list[int] = field(default_factory=list)
    op: list[str] = field(default_factory=list)
    path: list[str | None] = field(default_factory=list)
    dst: list[str | None] = field(default_factory=list)
    user: list[str | None] = field(default_factory=list)
    allowed: list[bool] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (0-based line, text)


def _read_deferred_lines(deferred: Sequence[tuple[int, bytes]]) -> _DeferredEvents:
    """Read audit lines (``(0-based line in its file, bytes without the newline)``, in file
    order) exactly as ``parse_block`` reads them within their file."""
    out = _DeferredEvents()
    if not deferred:
        return out
    data = b"\n".join(text for _, text in deferred) + b"\n"
    scan = _scan_block(Block(data, first=deferred[0][0] == 0))  # a byte-order mark is dropped on line 1 only
    out.malformed = [(deferred[r][0], text) for r, text in scan.bad]
    good = scan.good
    if not good.height:
        return out
    values = good.select(
        "time_ms",
        "allowed",
        "_row",
        pl.col("c3").alias("v"),
        pl.col("c1").alias("u"),
        pl.col("c4").alias("s"),
        pl.col("c5").alias("d"),
    )
    out.lines = [deferred[r][0] for r in values["_row"].to_list()]
    out.time_ms = values["time_ms"].to_list()
    out.allowed = values["allowed"].to_list()
    out.op = values.select(_op_of_cmd()).to_series().to_list()
    out.user = values.select(pl.col("u").alias("v")).select(_user_of_ugi()).to_series().to_list()
    src = pl.col("s")
    out.path = values.select(pl.when(src != "src=null").then(src.str.slice(4))).to_series().to_list()
    out.dst = values.select(pl.col("d").alias("v")).select(_path_of_dst()).to_series().to_list()
    return out


def _categorical(values: pl.Series, codes: np.ndarray, name: str) -> pl.Series:
    """``codes`` (a code equal to ``len(values)`` is null) as a Categorical column: each distinct
    value is cast once, rows are a gather."""
    lut = values.cast(pl.Categorical).extend_constant(None, 1)
    return lut.gather(pl.Series(codes)).alias(name)


def _read_native(
    native: ModuleType, paths: Sequence[str | Path], workers: int, block_bytes: int
) -> tuple[pl.DataFrame, ParseReport]:
    # results do not depend on these; the native parser takes 1 to 2**30 bytes per block
    parser = native.AuditParser(max(workers, 1), min(max(block_bytes, 1), 1 << 30))
    total = ParseReport()
    first: list[int] = []
    for index, p in enumerate(paths):
        source = str(p)
        try:
            lines, other_lines, events, min_ms, deferred = parser.parse_file(source)
        except (OSError, ValueError) as e:
            raise TraceError(str(e)) from None
        if lines == 0:
            raise TraceError(f"audit log {p} is empty")
        recovered = _read_deferred_lines(deferred)
        del deferred
        if recovered.lines:
            parser.resolve(index, recovered.lines, recovered.time_ms, recovered.op, recovered.path,
                           recovered.dst, recovered.user, recovered.allowed)  # fmt: skip
            min_ms = min(recovered.time_ms + ([] if min_ms is None else [min_ms]))
        report = ParseReport(sources=[source], lines=lines, other_lines=other_lines,
                             events=events + len(recovered.lines))  # fmt: skip
        for line, text in recovered.malformed:
            report.add_malformed(source, line + 1, text)
        total.merge(report)
        first.append(NO_EVENT_MS if min_ms is None else min_ms)
    if total.events == 0:
        names = ", ".join(str(p) for p in paths)
        raise TraceError(f"no parseable audit event in {names}: {total.describe()}")
    order = sorted(range(len(first)), key=first.__getitem__)  # stable: equal starts keep the given order
    # the paths become categories (polars, without the GIL) while the rows are sorted (native)
    with ThreadPoolExecutor(max_workers=1) as pool:
        path_lut = pool.submit(_path_categories, *parser.take_paths())
        out = parser.finish(order)
        del parser
        return _native_table(out, path_lut.result()), total


def _path_categories(offsets: np.ndarray, data: np.ndarray) -> pl.Series:
    """The path dictionary (Arrow-style buffers) as Categorical values, plus a null at the end."""
    import pyarrow as pa

    values = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
    return pl.Series("path", values).cast(pl.Categorical).extend_constant(None, 1)


def _native_table(out: dict[str, Any], path_lut: pl.Series) -> pl.DataFrame:
    """The event table of ``AuditParser.finish``'s arrays, consuming them; ``path_lut`` is
    ``_path_categories`` of the path dictionary."""
    columns = {
        "time_ms": pl.Series("time_ms", out.pop("time_ms")),
        "op": _categorical(pl.Series(out.pop("ops"), dtype=pl.String), out.pop("op"), "op"),
        "path": path_lut.gather(pl.Series(out.pop("path"))).alias("path"),
        "dst": path_lut.gather(pl.Series(out.pop("dst"))).alias("dst"),
        "user": _categorical(pl.Series(out.pop("users"), dtype=pl.String), out.pop("user"), "user"),
        "allowed": pl.Series("allowed", out.pop("allowed")),
    }
    return pl.DataFrame([columns[c] for c in EVENT_COLUMNS])
