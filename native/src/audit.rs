//! The HDFS NameNode audit-log parser: files to dictionary-encoded columns.
//!
//! This is the fast path of `mimesisbench.trace.hdfs_audit.read_audit_logs`; the Python parser
//! there is the reference, and this one must give the same events and the same report.
//!
//! What a line is (the same rules as the Python parser's vectorised pass):
//!
//! * A file is split at `\n`; one `\r` before a `\n` (or at the end of the file) is dropped. The
//!   last piece counts as a line when it is not empty. One `\r` before a TAB is dropped too (it
//!   ends its column's text).
//! * The first column (the text up to the first TAB) holds `FSNamesystem.audit: ` or the line is
//!   another logger's (or blank): counted in `other_lines`, skipped.
//! * An audit line is *accepted here* when it is valid UTF-8, starts with a well-formed UTC
//!   `yyyy-MM-dd HH:mm:ss,SSS ` timestamp (a real date of years 1..9999, seconds 0..59), its
//!   first column ends with `allowed=true` or `allowed=false`, and its TAB-separated columns 2, 4,
//!   5 and 6 are `ugi=...`, `cmd=<non-empty>`, `src=<non-empty>`, `dst=...` (column 3, `ip=`, and
//!   columns after `dst` are not read).
//! * Every other audit line (a timestamp the vectorised Python pass reads leniently, fields out
//!   of order, a TAB inside a path, invalid UTF-8, a malformed line) is *deferred*: handed back
//!   verbatim with its line number, so the Python reference decides on it exactly as it would
//!   (an event or a malformed line), and its event, if any, is put back in its place by
//!   `AuditParser.resolve`. Such lines are rare in real logs; all of them are counted by the
//!   caller.
//!
//! Values: `op` is `cmd` verbatim except `rename (options=[...])`, which becomes `rename`;
//! `user` is `ugi` up to its first space (null when empty); `src=null` and `dst=null` are null.
//!
//! Speed: a file is read in line-aligned blocks (gzip, recognised by its magic bytes, is
//! decompressed as a stream); a batch of blocks (one per worker) is parsed in parallel by a
//! rayon pool while the calling thread reads the next batch. Each block dictionary-encodes its
//! paths, commands and users into *local* codes (a hash table over slices of the block, no
//! allocation per line) and looks each distinct local value up in the global dictionaries
//! (read-only, in parallel); then the calling thread adds the values never seen before (few) and
//! maps the rows' codes. Values are identified by a 128-bit hash (see `Id`), so lookups never
//! compare text. Global dictionaries are Arrow-style (one byte buffer plus offsets), so the paths
//! cost no Python object each. `finish` sorts by time with a radix sort. The GIL is released
//! while parsing and sorting.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ahash::RandomState;
use flate2::bufread::GzDecoder;
use hashbrown::HashTable;
use memchr::{memchr, memmem};
use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rayon::prelude::*;

const AUDIT_MARK: &[u8] = b"FSNamesystem.audit: ";
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Code of a null value inside the parser (`finish` turns it into the dictionary's length).
const NULL: u32 = u32::MAX;
const DEFAULT_BLOCK_BYTES: usize = 16 << 20;


// ------------------------------------------------------------------------------------------
// timestamps

/// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 31,
    }
}

/// The number written by ASCII digits `b`, or None when one is not a digit.
fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, &c| if c.is_ascii_digit() { Some(acc * 10 + i64::from(c - b'0')) } else { None })
}

/// Days since the epoch of a strict `yyyy-MM-dd` (a real date, years 1..9999).
fn parse_date(b: &[u8]) -> Option<i64> {
    if b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    if y < 1 || !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// ms since the epoch (UTC) of a strict `yyyy-MM-dd HH:mm:ss,SSS` (`b` has 23 bytes). The date
/// part is cached: consecutive lines almost always share it.
fn parse_time(b: &[u8], cache: &mut Option<([u8; 10], i64)>) -> Option<i64> {
    let days = match cache {
        Some((date, days)) if date[..] == b[..10] => *days,
        _ => {
            let days = parse_date(&b[..10])?;
            let mut date = [0u8; 10];
            date.copy_from_slice(&b[..10]);
            *cache = Some((date, days));
            days
        }
    };
    if b[10] != b' ' || b[13] != b':' || b[16] != b':' || b[19] != b',' {
        return None;
    }
    let (h, mi, s, ms) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?, digits(&b[20..23])?);
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

// ------------------------------------------------------------------------------------------
// dictionaries

/// A value's identity: a 128-bit keyed hash of its bytes (two 64-bit ahash values with
/// different keys). Dictionaries compare identities, not bytes, so a lookup touches no stored
/// text (the costly cache misses of a byte comparison are the bulk of a parse otherwise). Two
/// distinct values with the same identity would be merged: for 10^7 distinct values the odds are
/// about 10^-25 (the Python reference identifies paths by one 64-bit hash: 1 in 10^5 there).
type Id = (u64, u64);

/// The hashers of every dictionary: local (per block) and global tables must agree, since a
/// local entry's identity is reused when it is merged into the global table.
#[derive(Clone)]
struct Hashers(RandomState, RandomState);

impl Hashers {
    fn new() -> Self {
        Hashers(
            RandomState::with_seeds(0x6d69_6d65, 0x7369_7362, 0x656e_6368, 0x6175_6469),
            RandomState::with_seeds(0x7061_7468, 0x6469_6374, 0x636f_6465, 0x3132_3862),
        )
    }

    fn id(&self, key: &[u8]) -> Id {
        (self.0.hash_one(key), self.1.hash_one(key))
    }
}

/// A dictionary of byte strings to dense codes, stored Arrow-style (`bytes` + `offsets`).
struct Dictionary {
    bytes: Vec<u8>,
    offsets: Vec<i64>,
    table: HashTable<(u64, u64, u32)>, // (identity, code)
    hashers: Hashers,
}

impl Dictionary {
    fn new() -> Self {
        Dictionary { bytes: Vec::new(), offsets: vec![0], table: HashTable::new(), hashers: Hashers::new() }
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn value<'a>(bytes: &'a [u8], offsets: &[i64], code: u32) -> &'a [u8] {
        &bytes[offsets[code as usize] as usize..offsets[code as usize + 1] as usize]
    }

    /// The code of the value of identity `id` when known.
    fn find(&self, id: Id) -> Option<u32> {
        self.table.find(id.0, |&(a, b, _)| (a, b) == id).map(|&(_, _, c)| c)
    }

    /// The code of `key` (of identity `id`), added when new.
    fn intern(&mut self, id: Id, key: &[u8]) -> PyResult<u32> {
        if let Some(code) = self.find(id) {
            return Ok(code);
        }
        let code = u32::try_from(self.len()).ok().filter(|&c| c < NULL).ok_or_else(|| {
            PyValueError::new_err("more than 4 billion distinct values in the audit logs")
        })?;
        self.bytes.extend_from_slice(key);
        self.offsets.push(self.bytes.len() as i64);
        self.table.insert_unique(id.0, (id.0, id.1, code), |&(a, _, _)| a);
        Ok(code)
    }

    fn intern_str(&mut self, key: &str) -> PyResult<u32> {
        let id = self.hashers.id(key.as_bytes());
        self.intern(id, key.as_bytes())
    }

    fn strings(&self) -> Vec<String> {
        (0..self.len() as u32)
            .map(|c| String::from_utf8_lossy(Self::value(&self.bytes, &self.offsets, c)).into_owned())
            .collect()
    }
}

/// A block's own dictionary: values are slices of the block (start, length), no copies.
#[derive(Default)]
struct LocalDictionary {
    entries: Vec<(Id, u32, u32)>, // (identity, start, length) per local code
    table: HashTable<u32>,
    /// for values of at most 16 bytes (commands, users): a direct-mapped cache of
    /// (value as two words, length, code), which spares hashing and the table
    short: Vec<(u64, u64, u32, u32)>,
}

const SHORT_SLOTS: usize = 256;

/// A value of at most 16 bytes as two little-endian words (zero-padded).
fn short_key(key: &[u8]) -> (u64, u64) {
    let mut b = [0u8; 16];
    b[..key.len()].copy_from_slice(key);
    let (lo, hi) = b.split_at(8);
    (u64::from_le_bytes(lo.try_into().unwrap_or_default()), u64::from_le_bytes(hi.try_into().unwrap_or_default()))
}

impl LocalDictionary {
    fn with_capacity(values: usize) -> Self {
        LocalDictionary { entries: Vec::with_capacity(values), table: HashTable::with_capacity(values), short: Vec::new() }
    }

    /// `intern` through the cache of short values (for dictionaries of few, short values).
    fn intern_short(&mut self, block: &[u8], start: usize, len: usize, hashers: &Hashers) -> u32 {
        if len > 16 {
            return self.intern(block, start, len, hashers);
        }
        let (k0, k1) = short_key(&block[start..start + len]);
        let slot = ((k0 ^ k1.rotate_left(29) ^ len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
        if self.short.is_empty() {
            self.short = vec![(0, 0, u32::MAX, 0); SHORT_SLOTS];
        }
        let (a, b, l, code) = self.short[slot];
        if l as usize == len && a == k0 && b == k1 {
            return code;
        }
        let code = self.intern(block, start, len, hashers);
        self.short[slot] = (k0, k1, len as u32, code);
        code
    }

    fn intern(&mut self, block: &[u8], start: usize, len: usize, hashers: &Hashers) -> u32 {
        let id = hashers.id(&block[start..start + len]);
        let LocalDictionary { entries, table, .. } = self;
        if let Some(&code) = table.find(id.0, |&c| entries[c as usize].0 == id) {
            return code;
        }
        let code = entries.len() as u32;
        // blocks are far below 4 GiB (checked when reading), so start and length fit in u32
        entries.push((id, start as u32, len as u32));
        table.insert_unique(id.0, code, |&c| entries[c as usize].0 .0);
        code
    }

    /// Global codes of the local values already in `global`, NULL for the others (read-only,
    /// so the blocks of a batch look up in parallel).
    fn known_codes(&self, global: &Dictionary) -> Vec<u32> {
        self.entries.iter().map(|&(id, _, _)| global.find(id).unwrap_or(NULL)).collect()
    }

    /// Complete `codes` (from `known_codes`) by adding the values still missing to `global`.
    fn add_missing(&self, block: &[u8], codes: &mut [u32], global: &mut Dictionary) -> PyResult<()> {
        for (code, &(id, s, l)) in codes.iter_mut().zip(&self.entries) {
            if *code == NULL {
                *code = global.intern(id, &block[s as usize..(s + l) as usize])?;
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// rows

#[derive(Clone, Copy)]
struct Row {
    time: i64,
    op: u32,
    path: u32,
    dst: u32,
    user: u32,
    allowed: bool,
}

/// Events as columns (codes are local to a block until merged, then global).
#[derive(Default)]
struct Rows {
    time: Vec<i64>,
    op: Vec<u32>,
    path: Vec<u32>,
    dst: Vec<u32>,
    user: Vec<u32>,
    allowed: Vec<bool>,
}

impl Rows {
    fn with_capacity(n: usize) -> Self {
        Rows {
            time: Vec::with_capacity(n),
            op: Vec::with_capacity(n),
            path: Vec::with_capacity(n),
            dst: Vec::with_capacity(n),
            user: Vec::with_capacity(n),
            allowed: Vec::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        self.time.len()
    }

    fn append(&mut self, other: &mut Rows) {
        self.time.append(&mut other.time);
        self.op.append(&mut other.op);
        self.path.append(&mut other.path);
        self.dst.append(&mut other.dst);
        self.user.append(&mut other.user);
        self.allowed.append(&mut other.allowed);
    }

    fn push(&mut self, r: Row) {
        self.time.push(r.time);
        self.op.push(r.op);
        self.path.push(r.path);
        self.dst.push(r.dst);
        self.user.push(r.user);
        self.allowed.push(r.allowed);
    }

    fn get(&self, i: usize) -> Row {
        Row {
            time: self.time[i],
            op: self.op[i],
            path: self.path[i],
            dst: self.dst[i],
            user: self.user[i],
            allowed: self.allowed[i],
        }
    }

    /// These rows with `inserts` (offset, row) put before the row at each offset (offsets
    /// ascending; equal offsets keep their order).
    fn with_inserted(&self, inserts: &[(usize, Row)]) -> Rows {
        let mut out = Rows::default();
        let mut k = 0;
        for i in 0..=self.len() {
            while k < inserts.len() && inserts[k].0 == i {
                out.push(inserts[k].1);
                k += 1;
            }
            if i < self.len() {
                out.push(self.get(i));
            }
        }
        out
    }
}

fn remap(codes: &mut [u32], lut: &[u32]) {
    for c in codes.iter_mut() {
        if *c != NULL {
            *c = lut[*c as usize];
        }
    }
}

// ------------------------------------------------------------------------------------------
// one block

/// A parsed block: rows in local codes, its dictionaries, counts and deferred lines.
#[derive(Default)]
struct BlockOut {
    rows: Rows,
    paths: LocalDictionary, // src and dst values
    ops: LocalDictionary,
    users: LocalDictionary,
    lines: u64,
    other_lines: u64,
    /// (0-based line within the block, rows of the block before it, start, end) of each audit
    /// line not accepted here (see the module comment); `start..end` excludes the `\n`
    deferred: Vec<(u64, usize, usize, usize)>,
    /// global codes of the local dictionaries' values (NULL until known)
    path_codes: Vec<u32>,
    op_codes: Vec<u32>,
    user_codes: Vec<u32>,
}

impl BlockOut {
    /// Look the block's values up in the global dictionaries (read-only; see `merge_block`).
    fn look_up(&mut self, dicts: &Dictionaries) {
        self.path_codes = self.paths.known_codes(&dicts.paths);
        self.op_codes = self.ops.known_codes(&dicts.ops);
        self.user_codes = self.users.known_codes(&dicts.users);
    }
}

/// The TAB-separated column starting at `from` in `line`: (its text, start of the next one or
/// None when it is the last). One `\r` right before the TAB is not part of the text (as the
/// Python reference's CSV reader reads it).
fn column(line: &[u8], from: usize) -> (&[u8], Option<usize>) {
    match memchr(b'\t', &line[from..]) {
        Some(i) => (strip_cr(&line[from..from + i]), Some(from + i + 1)),
        None => (&line[from..], None),
    }
}

/// `b` without one trailing `\r`.
fn strip_cr(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r").unwrap_or(b)
}

fn parse_block(block: &[u8], mark: &memmem::Finder<'_>, hashers: &Hashers) -> BlockOut {
    let mut out = BlockOut::default();
    let guess = block.len() / 160 + 16; // lines (audit lines are ~200 bytes)
    out.rows = Rows::with_capacity(guess);
    out.paths = LocalDictionary::with_capacity(guess);
    let valid_utf8 = std::str::from_utf8(block).is_ok(); // else each audit line is checked
    let mut date_cache = None;
    let mut pos = 0;
    while pos < block.len() {
        let end = memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
        let start = pos;
        pos = end + 1;
        let index = out.lines;
        out.lines += 1;
        let mut line_end = end;
        if line_end > start && block[line_end - 1] == b'\r' {
            line_end -= 1;
        }
        let line = &block[start..line_end];
        let first_tab = memchr(b'\t', line);
        let c0 = &line[..first_tab.unwrap_or(line.len())];
        if mark.find(c0).is_none() {
            out.other_lines += 1;
            continue;
        }
        let accepted = (valid_utf8 || std::str::from_utf8(line).is_ok())
            .then(|| accept_line(block, start, line.len(), c0, first_tab, &mut date_cache, &mut out, hashers))
            .flatten();
        match accepted {
            Some(row) => out.rows.push(row),
            None => out.deferred.push((index, out.rows.len(), start, end)),
        }
    }
    out
}

/// The event of an audit line when it has the usual layout (see the module comment), with
/// values interned in `out`'s local dictionaries; None to defer the line. The line is
/// `block[base..base + len]` (without its `\n` and `\r`), `c0` its first column.
#[allow(clippy::too_many_arguments)]
fn accept_line(
    block: &[u8],
    base: usize,
    len: usize,
    c0: &[u8],
    first_tab: Option<usize>,
    date_cache: &mut Option<([u8; 10], i64)>,
    out: &mut BlockOut,
    hashers: &Hashers,
) -> Option<Row> {
    let line = &block[base..base + len];
    if c0.len() < 24 || line[23] != b' ' {
        return None;
    }
    let time = parse_time(&line[..23], date_cache)?;
    let c0 = if first_tab.is_some() { strip_cr(c0) } else { c0 };
    let allowed = if c0.ends_with(b"allowed=true") {
        true
    } else if c0.ends_with(b"allowed=false") {
        false
    } else {
        return None;
    };
    // columns 1 (ugi) .. 5 (dst), each but the last followed by a TAB
    let ugi_at = first_tab? + 1;
    let (ugi, next) = column(line, ugi_at);
    let (_ip, next) = column(line, next?);
    let cmd_at = next?;
    let (cmd, next) = column(line, cmd_at);
    let src_at = next?;
    let (src, next) = column(line, src_at);
    let dst_at = next?;
    let (dst, _) = column(line, dst_at);
    if !ugi.starts_with(b"ugi=")
        || !cmd.starts_with(b"cmd=")
        || cmd.len() == 4
        || !src.starts_with(b"src=")
        || src.len() == 4
        || !dst.starts_with(b"dst=")
    {
        return None;
    }
    // "rename (options=[...])" is "rename": the first six bytes of the value
    let op_len = if cmd[4..].starts_with(b"rename (") { 6 } else { cmd.len() - 4 };
    let op = out.ops.intern_short(block, base + cmd_at + 4, op_len, hashers);
    let user_len = memchr(b' ', &ugi[4..]).unwrap_or(ugi.len() - 4);
    let user = if user_len == 0 { NULL } else { out.users.intern_short(block, base + ugi_at + 4, user_len, hashers) };
    let path = if &src[4..] == b"null" { NULL } else { out.paths.intern(block, base + src_at + 4, src.len() - 4, hashers) };
    let dst = if &dst[4..] == b"null" { NULL } else { out.paths.intern(block, base + dst_at + 4, dst.len() - 4, hashers) };
    Some(Row { time, op, path, dst, user, allowed })
}

// ------------------------------------------------------------------------------------------
// files

/// Why a parse failed: the file could not be read, or a limit of the encoding was passed.
enum Failure {
    Io(io::Error),
    Limit(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

impl Failure {
    fn into_py(self, path: &Path) -> PyErr {
        match self {
            Failure::Io(e) => PyOSError::new_err(format!("cannot read trace file {}: {e}", path.display())),
            Failure::Limit(m) => PyValueError::new_err(format!("cannot parse trace file {}: {m}", path.display())),
        }
    }
}

/// The members of a gzip stream one after the other, as Python's `gzip` reads them: zero bytes
/// between or after members are padding; anything else must be another member.
struct GzMembers {
    current: Option<GzDecoder<BufReader<File>>>,
}

impl Read for GzMembers {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = self.current.as_mut() else { return Ok(0) };
            let n = decoder.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // the member is complete: skip zero padding, then start the next member, if any
            let Some(decoder) = self.current.take() else { return Ok(0) };
            let mut inner = decoder.into_inner();
            loop {
                let available = inner.fill_buf()?;
                if available.is_empty() {
                    return Ok(0);
                }
                let zeros = available.iter().take_while(|&&b| b == 0).count();
                let more = zeros < available.len();
                inner.consume(zeros);
                if more {
                    break;
                }
            }
            self.current = Some(GzDecoder::new(inner));
        }
    }
}

/// The file's bytes, decompressed when it starts with gzip's magic bytes (see `GzMembers`).
fn open_reader(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        let n = f.read(&mut magic[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    f.seek(SeekFrom::Start(0))?;
    if got == 2 && magic == GZIP_MAGIC {
        Ok(Box::new(GzMembers { current: Some(GzDecoder::new(BufReader::with_capacity(1 << 20, f))) }))
    } else {
        Ok(Box::new(f))
    }
}

/// Reads a stream as blocks of whole lines (the last block may end without `\n`), reusing the
/// buffers given back by `recycle`.
struct BlockReader {
    inner: Box<dyn Read + Send>,
    block_bytes: usize,
    carry: Vec<u8>, // the start of a line cut by the previous block
    eof: bool,
    spare: Vec<Vec<u8>>,
}

impl BlockReader {
    fn new(inner: Box<dyn Read + Send>, block_bytes: usize) -> Self {
        BlockReader { inner, block_bytes, carry: Vec::new(), eof: false, spare: Vec::new() }
    }

    fn recycle(&mut self, buffers: Vec<Vec<u8>>) {
        self.spare.extend(buffers);
    }

    fn next_block(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.reserve(self.block_bytes + 1);
        buf.append(&mut self.carry);
        let mut target = self.block_bytes;
        loop {
            while !self.eof && buf.len() < target {
                let want = (target - buf.len()) as u64;
                let got = Read::by_ref(&mut self.inner).take(want).read_to_end(&mut buf)?;
                if (got as u64) < want {
                    self.eof = true;
                }
            }
            if buf.len() >= u32::MAX as usize {
                return Err(Failure::Limit("a line longer than 4 GiB".into()));
            }
            if self.eof {
                return Ok(if buf.is_empty() { None } else { Some(buf) });
            }
            if let Some(cut) = memchr::memrchr(b'\n', &buf) {
                self.carry.extend_from_slice(&buf[cut + 1..]);
                buf.truncate(cut + 1);
                return Ok(Some(buf));
            }
            target = buf.len() + self.block_bytes; // one line longer than a block: read on
        }
    }

    fn next_batch(&mut self, blocks: usize) -> Result<Vec<Vec<u8>>, Failure> {
        let mut batch = Vec::with_capacity(blocks);
        while batch.len() < blocks {
            match self.next_block()? {
                Some(b) => batch.push(b),
                None => break,
            }
        }
        Ok(batch)
    }
}

/// The global dictionaries: paths (sources and destinations share one), commands, users.
struct Dictionaries {
    paths: Dictionary,
    ops: Dictionary,
    users: Dictionary,
}

/// A parsed file's rows and where its deferred lines were. (One set of columns per file, grown
/// block by block: large allocations, which the allocator maps and unmaps directly, so their
/// memory goes back to the system as soon as `finish` drops them.)
#[derive(Default)]
struct FileRows {
    rows: Rows,
    /// (0-based line in the file, rows of the file before the line)
    deferred_at: Vec<(u64, usize)>,
    min_time: Option<i64>,
}

/// What a file's parse tells the caller.
#[derive(Default)]
struct Summary {
    lines: u64,
    other_lines: u64,
    deferred: Vec<(u64, Vec<u8>)>, // (0-based line in the file, text without its "\n")
}

/// Map a parsed block's local codes to global ones and keep its rows.
fn merge_block(
    dicts: &mut Dictionaries,
    file: &mut FileRows,
    summary: &mut Summary,
    block: &[u8],
    mut out: BlockOut,
) -> Result<(), Failure> {
    let limit = |e: PyErr| Failure::Limit(e.to_string());
    let (mut paths, mut ops, mut users) =
        (std::mem::take(&mut out.path_codes), std::mem::take(&mut out.op_codes), std::mem::take(&mut out.user_codes));
    out.paths.add_missing(block, &mut paths, &mut dicts.paths).map_err(limit)?;
    out.ops.add_missing(block, &mut ops, &mut dicts.ops).map_err(limit)?;
    out.users.add_missing(block, &mut users, &mut dicts.users).map_err(limit)?;
    remap(&mut out.rows.path, &paths);
    remap(&mut out.rows.dst, &paths);
    remap(&mut out.rows.op, &ops);
    remap(&mut out.rows.user, &users);
    let before_block = file.rows.len();
    for &(index, before, start, end) in &out.deferred {
        let line = summary.lines + index;
        file.deferred_at.push((line, before_block + before));
        summary.deferred.push((line, block[start..end].to_vec()));
    }
    summary.lines += out.lines;
    summary.other_lines += out.other_lines;
    if let Some(&m) = out.rows.time.iter().min() {
        file.min_time = Some(file.min_time.map_or(m, |t| t.min(m)));
    }
    file.rows.append(&mut out.rows);
    Ok(())
}

/// Parse one file. A batch of `workers` blocks is parsed by the pool (each block also looks its
/// values up in the global dictionaries, read-only) while this thread reads the next batch;
/// then this thread adds the values seen for the first time to the dictionaries (few: most
/// values of a block were met before) and keeps the rows.
fn parse_path(
    pool: &rayon::ThreadPool,
    dicts: &mut Dictionaries,
    workers: usize,
    block_bytes: usize,
    path: &Path,
) -> Result<(FileRows, Summary), Failure> {
    let mut reader = BlockReader::new(open_reader(path)?, block_bytes);
    let mark = memmem::Finder::new(AUDIT_MARK);
    let hashers = Hashers::new();
    let mut file = FileRows::default();
    let mut summary = Summary::default();
    let mut batch = reader.next_batch(workers)?;
    while !batch.is_empty() {
        let shared: &Dictionaries = dicts;
        let (outs, next) = std::thread::scope(|s| {
            let parsing = s.spawn(|| {
                pool.install(|| {
                    batch
                        .par_iter()
                        .map(|b| {
                            let mut out = parse_block(b, &mark, &hashers);
                            out.look_up(shared);
                            out
                        })
                        .collect::<Vec<_>>()
                })
            });
            let next = reader.next_batch(workers);
            (parsing.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), next)
        });
        for (block, out) in batch.iter().zip(outs) {
            merge_block(dicts, &mut file, &mut summary, block, out)?;
        }
        reader.recycle(batch);
        batch = next?;
    }
    Ok((file, summary))
}

// ------------------------------------------------------------------------------------------
// the whole parse

/// `time` sorted, and the permutation that sorts it stably (None when it was sorted already).
/// Consumes `time`, so that sorting needs two more columns of 64-bit keys, not three.
fn sort_time(time: Vec<i64>) -> (Vec<i64>, Option<Vec<u32>>) {
    if time.par_windows(2).all(|w| w[0] <= w[1]) {
        return (time, None);
    }
    let n = time.len(); // < u32::MAX (checked by the caller)
    let (lo, hi) = time
        .par_iter()
        .fold(|| (i64::MAX, i64::MIN), |(a, b), &t| (a.min(t), b.max(t)))
        .reduce(|| (i64::MAX, i64::MIN), |(a, b), (c, d)| (a.min(c), b.max(d)));
    let range = (i128::from(hi) - i128::from(lo)) as u128;
    if range >= 1 << 32 {
        // times more than 49 days apart: a stable comparison sort
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.par_sort_by_key(|&i| time[i as usize]);
        let sorted = order.par_iter().map(|&i| time[i as usize]).collect();
        return (sorted, Some(order));
    }
    // a stable LSD radix sort of (time - lo) << 32 | row, on the time bits only, in passes of
    // at most 16 bits (two passes for a day of milliseconds)
    let bits = (128 - range.leading_zeros()).max(1) as usize;
    let passes = bits.div_ceil(16);
    let digit = bits.div_ceil(passes);
    let mask = (1u64 << digit) - 1;
    let mut keys: Vec<u64> = time.par_iter().enumerate().map(|(i, &t)| (((t - lo) as u64) << 32) | i as u64).collect();
    drop(time); // the keys hold the times
    let mut scratch = vec![0u64; n];
    let mut counts = vec![0usize; 1 << digit];
    for pass in 0..passes {
        let shift = 32 + pass * digit;
        counts.iter_mut().for_each(|c| *c = 0);
        for &k in &keys {
            counts[((k >> shift) & mask) as usize] += 1;
        }
        let mut sum = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for &k in &keys {
            let d = ((k >> shift) & mask) as usize;
            scratch[counts[d]] = k;
            counts[d] += 1;
        }
        std::mem::swap(&mut keys, &mut scratch);
    }
    drop(scratch);
    let order = keys.par_iter().map(|&k| k as u32).collect();
    let sorted = keys.par_iter().map(|&k| (k >> 32) as i64 + lo).collect();
    (sorted, Some(order))
}

/// One column of every file (taken out of them, so each is freed as soon as it is copied),
/// concatenated and put in `order`.
fn assemble<T: Copy + Send + Sync>(files: &mut [Rows], take: impl Fn(&mut Rows) -> Vec<T>, order: Option<&[u32]>) -> Vec<T> {
    let flat = if files.len() == 1 {
        take(&mut files[0]) // no copy
    } else {
        let mut flat: Vec<T> = Vec::with_capacity(files.iter().map(|c| c.len()).sum());
        for c in files.iter_mut() {
            flat.extend_from_slice(&take(c));
        }
        flat
    };
    match order {
        None => flat,
        Some(order) => order.par_iter().map(|&i| flat[i as usize]).collect(),
    }
}

/// Codes with the null code replaced by `null` (the dictionary's length).
fn with_nulls(mut codes: Vec<u32>, null: usize) -> Vec<u32> {
    let null = null as u32; // dictionaries hold fewer than u32::MAX values (see `intern`)
    codes.par_iter_mut().for_each(|c| {
        if *c == NULL {
            *c = null;
        }
    });
    codes
}

/// Parses HDFS audit logs into dictionary-encoded columns (see the module comment).
///
/// Use: `parse_file` each file (in any order; each returns its counts and deferred lines),
/// `resolve` the deferred lines that the Python reference reads as events, then `finish`.
#[pyclass(module = "mimesisbench_native")]
pub struct AuditParser {
    pool: rayon::ThreadPool,
    workers: usize,
    block_bytes: usize,
    dicts: Dictionaries,
    files: Vec<FileRows>,
    /// the number of paths once `take_paths` has handed the path dictionary out
    paths_taken: Option<usize>,
}

#[pymethods]
impl AuditParser {
    #[new]
    #[pyo3(signature = (workers = 2, block_bytes = DEFAULT_BLOCK_BYTES))]
    fn new(workers: usize, block_bytes: usize) -> PyResult<Self> {
        if workers == 0 || block_bytes == 0 || block_bytes > (1 << 30) {
            return Err(PyValueError::new_err("workers must be >= 1 and block_bytes in 1..=1 GiB"));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|i| format!("audit-parse-{i}"))
            .build()
            .map_err(|e| PyOSError::new_err(format!("cannot start parser threads: {e}")))?;
        let dicts = Dictionaries { paths: Dictionary::new(), ops: Dictionary::new(), users: Dictionary::new() };
        Ok(AuditParser { pool, workers, block_bytes, dicts, files: Vec::new(), paths_taken: None })
    }

    /// Parse one file (without the GIL). Returns `(lines, other_lines, events, min_time_ms,
    /// deferred)`: `events` counts the lines accepted here, `min_time_ms` is their earliest
    /// time (None without any) and `deferred` lists `(0-based line, bytes)` of the audit lines
    /// left to the Python reference. Raises OSError (unreadable file, corrupt gzip) or
    /// ValueError (a limit passed), naming the file.
    fn parse_file<'py>(&mut self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        self.check_paths_kept()?;
        let AuditParser { pool, workers, block_bytes, dicts, .. } = self;
        let (file, summary) =
            py.detach(|| parse_path(pool, dicts, *workers, *block_bytes, &path)).map_err(|f| f.into_py(&path))?;
        let events = file.rows.len();
        let min_time = file.min_time;
        self.files.push(file);
        let deferred = PyList::empty(py);
        for (line, text) in summary.deferred {
            deferred.append((line, PyBytes::new(py, &text)))?;
        }
        Ok((summary.lines, summary.other_lines, events, min_time, deferred).into_pyobject(py)?.into_any())
    }

    /// Put events read by the Python reference from deferred lines of file `file` (the index
    /// of its `parse_file` call) in their places. `lines` are the deferred lines' numbers, in
    /// increasing order; `path`/`dst`/`user` may be None.
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &mut self,
        file: usize,
        lines: Vec<u64>,
        time_ms: Vec<i64>,
        op: Vec<String>,
        path: Vec<Option<String>>,
        dst: Vec<Option<String>>,
        user: Vec<Option<String>>,
        allowed: Vec<bool>,
    ) -> PyResult<()> {
        self.check_paths_kept()?;
        let n = lines.len();
        if [time_ms.len(), op.len(), path.len(), dst.len(), user.len(), allowed.len()].iter().any(|&l| l != n) {
            return Err(PyValueError::new_err("resolve: columns of different lengths"));
        }
        let rows = self.files.get_mut(file).ok_or_else(|| PyValueError::new_err("resolve: no such file"))?;
        let dicts = &mut self.dicts;
        let code = |d: &mut Dictionary, v: &Option<String>| v.as_ref().map_or(Ok(NULL), |s| d.intern_str(s));
        // (rows of the file before, row), in line order
        let mut inserts: Vec<(usize, Row)> = Vec::with_capacity(n);
        for i in 0..n {
            let at = rows
                .deferred_at
                .binary_search_by_key(&lines[i], |&(line, _)| line)
                .map_err(|_| PyValueError::new_err(format!("resolve: line {} was not deferred", lines[i])))?;
            let (_, offset) = rows.deferred_at[at];
            let row = Row {
                time: time_ms[i],
                op: dicts.ops.intern_str(&op[i])?,
                path: code(&mut dicts.paths, &path[i])?,
                dst: code(&mut dicts.paths, &dst[i])?,
                user: code(&mut dicts.users, &user[i])?,
                allowed: allowed[i],
            };
            if i > 0 && lines[i] <= lines[i - 1] {
                return Err(PyValueError::new_err("resolve: lines must be increasing"));
            }
            inserts.push((offset, row));
            rows.min_time = Some(rows.min_time.map_or(row.time, |t| t.min(row.time)));
        }
        if !inserts.is_empty() {
            rows.rows = rows.rows.with_inserted(&inserts);
        }
        Ok(())
    }

    /// The path dictionary, handed out (so it can be turned into categories while `finish`
    /// runs): `(offsets, bytes)` as in `finish`. No file can be parsed or resolved afterwards.
    fn take_paths<'py>(&mut self, py: Python<'py>) -> (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u8>>) {
        let paths = std::mem::replace(&mut self.dicts.paths, Dictionary::new());
        self.paths_taken = Some(self.paths_taken.unwrap_or(paths.len()));
        let Dictionary { bytes, offsets, .. } = paths; // the hash table is dropped here
        (offsets.into_pyarray(py), bytes.into_pyarray(py))
    }

    /// The events of the files taken in `order` (indices of `parse_file` calls), sorted by time
    /// (ties in that order), as a dict of numpy arrays: `time_ms` (int64), `op`, `path`, `dst`,
    /// `user` (uint32 codes; a code equal to its dictionary's length is null), `allowed` (bool);
    /// and the dictionaries: `path_offsets` (int64, n + 1) and `path_bytes` (uint8) of the
    /// paths (UTF-8, shared by `path` and `dst`; absent after `take_paths`), `ops` and `users`
    /// (lists of str). Consumes the parser's rows.
    fn finish<'py>(&mut self, py: Python<'py>, order: Vec<usize>) -> PyResult<Bound<'py, PyDict>> {
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != order.len() || sorted.len() != self.files.len() {
            return Err(PyValueError::new_err("finish: order must list every parsed file once"));
        }
        let mut files = std::mem::take(&mut self.files);
        let mut chunks: Vec<Rows> = order.iter().map(|&i| std::mem::take(&mut files[i].rows)).collect();
        let total: usize = chunks.iter().map(|c| c.len()).sum();
        if total >= u32::MAX as usize {
            return Err(PyValueError::new_err("more than 4 billion events"));
        }
        let n_paths = self.paths_taken.unwrap_or(self.dicts.paths.len());
        let n_users = self.dicts.users.len();
        let pool = &self.pool;
        let (time, op, path, dst, user, allowed) = py.detach(|| {
            pool.install(|| {
                let (time, order) = sort_time(assemble(&mut chunks, |c| std::mem::take(&mut c.time), None));
                let order = order.as_deref();
                let op = assemble(&mut chunks, |c| std::mem::take(&mut c.op), order);
                let path = with_nulls(assemble(&mut chunks, |c| std::mem::take(&mut c.path), order), n_paths);
                let dst = with_nulls(assemble(&mut chunks, |c| std::mem::take(&mut c.dst), order), n_paths);
                let user = with_nulls(assemble(&mut chunks, |c| std::mem::take(&mut c.user), order), n_users);
                let allowed = assemble(&mut chunks, |c| std::mem::take(&mut c.allowed), order);
                (time, op, path, dst, user, allowed)
            })
        });
        let out = PyDict::new(py);
        out.set_item("time_ms", time.into_pyarray(py))?;
        out.set_item("op", op.into_pyarray(py))?;
        out.set_item("path", path.into_pyarray(py))?;
        out.set_item("dst", dst.into_pyarray(py))?;
        out.set_item("user", user.into_pyarray(py))?;
        out.set_item("allowed", allowed.into_pyarray(py))?;
        if self.paths_taken.is_none() {
            let (offsets, bytes) = self.take_paths(py);
            out.set_item("path_offsets", offsets)?;
            out.set_item("path_bytes", bytes)?;
        }
        out.set_item("ops", self.dicts.ops.strings())?;
        out.set_item("users", self.dicts.users.strings())?;
        Ok(out)
    }
}

impl AuditParser {
    fn check_paths_kept(&self) -> PyResult<()> {
        match self.paths_taken {
            Some(_) => Err(PyValueError::new_err("the path dictionary was taken: the parse is over")),
            None => Ok(()),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AuditParser>()?;
    Ok(())
}
