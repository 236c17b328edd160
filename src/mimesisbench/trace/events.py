"""The canonical event table and the parse report shared by every trace parser.

An event table is a ``polars.DataFrame`` with these columns, sorted by ``time_ms`` (ties keep
input order):

Parsers produce Categorical string columns (compact for millions of repeated paths); code
that builds event tables by hand may use String: consumers cast as they need.

============  =========================  =================================================
column        dtype                      meaning
============  =========================  =================================================
time_ms       Int64                      event time, ms since the Unix epoch (or since any
                                         fixed origin: only differences are used)
op            Categorical (or String)    the operation as the NameNode audits it (``cmd``):
                                         create, open, getfileinfo, listStatus, delete,
                                         rename, mkdirs, append, setPermission, ...
                                         (``rename (options=[...])`` becomes ``rename``)
path          Categorical (or String)    the source path (``src``); null for NameNode-wide
                                         commands that log ``src=null`` (datanodeReport ...)
dst           Categorical (or String)    the destination (``dst``) of rename/concat, else null
user          Categorical (or String)    the user of ``ugi`` (text before the first space),
                                         null when unknown
allowed       Boolean                    false for ``allowed=false`` (denied or failed) lines
============  =========================  =================================================

A snapshot table (from the Offline Image Viewer) has ``path`` (String), ``is_dir`` (Boolean),
``mtime_ms`` (Int64), ``atime_ms`` (Int64), ``size`` (Int64), ``replication`` (Int32).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EVENT_COLUMNS: tuple[str, ...] = ("time_ms", "op", "path", "dst", "user", "allowed")
SNAPSHOT_COLUMNS: tuple[str, ...] = ("path", "is_dir", "mtime_ms", "atime_ms", "size", "replication")

#: how many malformed lines a report keeps verbatim (all are counted)
MAX_REPORTED_MALFORMED = 10


@dataclass(frozen=True)
class MalformedLine:
    source: str
    line_number: int  # 1-based, within ``source``
    text: str


@dataclass
class ParseReport:
    """What a parse read, kept and rejected. Parsers never raise on a malformed line."""

    sources: list[str] = field(default_factory=list)
    lines: int = 0
    events: int = 0
    malformed: int = 0
    other_lines: int = 0  # lines of other loggers interleaved with the audit log: skipped, not malformed
    # events without a path (``src=null``: NameNode-wide commands such as saveNamespace, safemode):
    # among ``events``, counted in the operation mix but naming no file
    pathless: int = 0
    malformed_examples: list[MalformedLine] = field(default_factory=list)

    def add_malformed(self, source: str, line_number: int, text: str) -> None:
        self.malformed += 1
        if len(self.malformed_examples) < MAX_REPORTED_MALFORMED:
            self.malformed_examples.append(MalformedLine(source, line_number, text[:300]))

    def merge(self, other: ParseReport) -> None:
        self.sources.extend(other.sources)
        self.lines += other.lines
        self.events += other.events
        self.malformed += other.malformed
        self.other_lines += other.other_lines
        self.pathless += other.pathless
        room = MAX_REPORTED_MALFORMED - len(self.malformed_examples)
        self.malformed_examples.extend(other.malformed_examples[: max(room, 0)])

    def describe(self) -> str:
        text = f"read {self.lines:,} lines from {len(self.sources)} file(s): {self.events:,} events"
        if self.pathless:
            text += f" ({self.pathless:,} without a path: NameNode-wide commands such as saveNamespace)"
        if self.other_lines:
            text += f", {self.other_lines:,} lines of other loggers skipped"
        if self.malformed:
            text += f", {self.malformed:,} malformed lines skipped"
            for m in self.malformed_examples:
                text += f"\n  {m.source}:{m.line_number}: {m.text!r}"
            if self.malformed > len(self.malformed_examples):
                text += f"\n  ... and {self.malformed - len(self.malformed_examples):,} more"
        return text

