//! The HDFS replay lane: a worker's whole dispatch against a NameNode, outside the interpreter.
//!
//! The twin of `run_async_dispatch` in `mimesisbench/run/lanes.py` driving the hdfs backend's
//! `aio_*` operations (`mimesisbench/backends/hdfs.py`): the same NameNode calls per operation,
//! sent by this lane's own RPC client (`namenode.rs`) from one thread with the GIL released, no
//! runtime and no thread hand-off per operation. The Python dispatcher (over `hdfs-native`)
//! stays the reference; the tests compare the two on the real NameNode.
//!
//! Semantics (as the Python dispatcher): every event is issued at its due time (or back to back
//! when not paced) whatever else is in flight on its object, unless it depends on an earlier one:
//! an operation of `ordered` waits for every earlier operation on its object (`keys`), and any
//! later operation on the object waits for it. At most `outstanding` operations are in flight,
//! waiting ones included; a dispatch held back by that bound is late, and more than
//! `max_drift_ns` late stops the run (drift). Recorded per operation in place: the actual start
//! (when its first call is queued) and end (when its last reply is read), CLOCK_MONOTONIC ns, and
//! the outcome code; the published count is the prefix of events that ended. Stopped,
//! operations in flight end and are recorded, waiting ones are not issued (the prefix ends at the
//! first of them).
//!
//! Outcomes, as `classify_hdfs(translate_error(...))` on what `hdfs-native` raises: a status or
//! location the NameNode does not return, `FileNotFoundException`, `ParentNotDirectoryException`
//! (and an `AccessControlException` saying "is not a directory") -> not_found;
//! `FileAlreadyExistsException`, `AlreadyBeingCreatedException`,
//! `PathIsNotEmptyDirectoryException` -> exists; `AccessControlException`,
//! `AuthorizationException`, `SafeModeException` -> permission; another server exception ->
//! other; `StandbyException`, `RetriableException`, a fatal reply and a broken connection mean
//! the backend is broken: the operation counts as other and the run stops.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::lane::{now_ns, LaneProgress, Outputs, Paths, StopFlag};
use crate::namenode::{
    address, simple_user, AppendRequest, AppendResponse, BoolResult, CompleteRequest, Connection, CreateRequest,
    DeleteRequest, DirectoryListing, Empty, FileStatus, FirstField, FsPermission, GetBlockLocationsRequest,
    GetListingRequest, LocatedBlock, MkdirsRequest, PathRequest, Rename2Request, Reply, ServerDefaults,
    SetOwnerRequest, SetPermissionRequest, SetReplicationRequest, SetTimesRequest,
};

// Op codes (`mimesisbench.schedule.format.OpCode`) this lane performs: `HDFS_CAPABILITIES`'
// commands (the Python side maps the others to these first).
const CREATE: u8 = 1;
const OPEN: u8 = 2;
const LIST_FILE: u8 = 3;
const LIST_DIR: u8 = 4;
const DELETE: u8 = 5;
const MKDIRS: u8 = 6;
const RENAME_FILE: u8 = 7;
const RENAME_DIR: u8 = 8;
const GETFILEINFO: u8 = 9;
const GETFILEINFO_DIR: u8 = 10;
const CONTENT_SUMMARY: u8 = 11;
const CONTENT_SUMMARY_DIR: u8 = 12;
const SET_PERMISSION: u8 = 13;
const SET_PERMISSION_DIR: u8 = 14;
const SET_OWNER: u8 = 15;
const SET_OWNER_DIR: u8 = 16;
const SET_TIMES: u8 = 17;
const SET_TIMES_DIR: u8 = 18;
const SET_REPLICATION: u8 = 19;
const APPEND: u8 = 22;
const CREATE_OVERWRITE: u8 = 25;
const MKDIRS_EXISTING: u8 = 26;
const DELETE_DIR: u8 = 27;
const GET_ACL_STATUS: u8 = 28;
const GET_ACL_STATUS_DIR: u8 = 29;
const GETFILEINFO_ABSENT: u8 = 41;
const GETFILEINFO_ABSENT_DIR: u8 = 42;
const MKDIRS_PARENTS: u8 = 43;

/// Every op code above (`HdfsLane.ops`).
const OPS: [u8; 28] = [
    CREATE, OPEN, LIST_FILE, LIST_DIR, DELETE, MKDIRS, RENAME_FILE, RENAME_DIR, GETFILEINFO, GETFILEINFO_DIR,
    CONTENT_SUMMARY, CONTENT_SUMMARY_DIR, SET_PERMISSION, SET_PERMISSION_DIR, SET_OWNER, SET_OWNER_DIR, SET_TIMES,
    SET_TIMES_DIR, SET_REPLICATION, APPEND, CREATE_OVERWRITE, MKDIRS_EXISTING, DELETE_DIR, GET_ACL_STATUS,
    GET_ACL_STATUS_DIR, GETFILEINFO_ABSENT, GETFILEINFO_ABSENT_DIR, MKDIRS_PARENTS,
];

/// Operations that depend on every earlier operation on their object (`schedule.format.ORDERED_OPS`
/// less the ones mapped before they get here: truncate, concat).
#[inline]
fn ordered(op: u8) -> bool {
    matches!(
        op,
        CREATE | DELETE | MKDIRS | RENAME_FILE | RENAME_DIR | CREATE_OVERWRITE | MKDIRS_EXISTING | DELETE_DIR | APPEND
            | MKDIRS_PARENTS
    )
}

// Outcome codes (`mimesisbench.backends.base.Outcome`).
const OK: u8 = 0;
const NOT_FOUND: u8 = 1;
const EXISTS: u8 = 2;
const PERMISSION: u8 = 3;
const OTHER: u8 = 4;

/// Modes `set_permission` sets (the backend's `FILE_MODE`, `DIR_MODE`) and `mkdirs` makes.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;
/// `set_times`' instant in ms (`backends.base.SET_TIMES_NS`: 2000-01-01).
const SET_TIMES_MS: u64 = 946_684_800_000;
/// Longest single wait: a stop request is noticed within this long.
const MAX_SLEEP_NS: i64 = 1_000_000;
/// How long connecting, and the one call before the replay, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// An operation's end: its outcome code, or the backend is broken (the message says why).
type Done = Result<u8, String>;
/// An operation that ended: its position, start and end (ns), and how it went.
type Ended = (usize, i64, i64, Done);

/// The outcome of a call the server refused (`RemoteException` class and message, as
/// `translate_error` + `classify_hdfs`), or `Err` when the refusal means the backend is broken.
fn classify(class: &str, message: &str) -> Done {
    let short = class.rsplit('.').next().unwrap_or(class);
    let first = message.split('\n').next().unwrap_or("");
    match short {
        "FileNotFoundException" | "ParentNotDirectoryException" => Ok(NOT_FOUND),
        "FileAlreadyExistsException" | "AlreadyBeingCreatedException" | "PathIsNotEmptyDirectoryException" => Ok(EXISTS),
        "AccessControlException" if first.contains("is not a directory") => Ok(NOT_FOUND),
        "AccessControlException" | "AuthorizationException" | "SafeModeException" => Ok(PERMISSION),
        "StandbyException" | "RetriableException" => Err(format!("the NameNode cannot serve ({short}: {first})")),
        _ => Ok(OTHER),
    }
}

/// What the backend read at `connect` and the URL's options.
struct Settings {
    strict_mkdirs: bool,
    owner: String,
    group: String,
    replication: Option<u32>,
}

/// Where an operation of several calls stands (the call it waits for).
enum Stage {
    /// ok when the reply carries its first field (getFileInfo's status, getBlockLocations'
    /// locations), not_found otherwise
    Present,
    /// `Present`, a miss being ok (getfileinfo of an object its stream deleted)
    Absent,
    /// ok whatever the reply holds
    Plain,
    /// a `result` of false is not_found (delete, setReplication)
    Result,
    /// create's reply: complete the file it made
    Created,
    /// append's reply: complete the file
    Appended,
    /// complete, tried this many times
    Complete(u8),
    /// strict mkdirs: does the directory exist?
    MkdirsProbe,
    /// a rename refused as "under source": is the destination there? (the refusal's outcome)
    RenameProbe(Done),
    /// setReplication without a known replication: the file's own
    ReplicationProbe,
    /// a listing page
    Listing,
    /// rename2's reply
    Renamed,
}

/// An operation in flight: its event, when it started, the call it waits for.
struct Flight {
    event: usize,
    t0: i64,
    stage: Stage,
    file_id: u64,
    last: Option<Vec<u8>>,
}

/// After a reply: the operation ended, or it made its next call.
enum Next {
    Done(Done),
    Sent(i32),
}

/// `complete` is asked again this many times when it answers false (an empty file completes at once)
const COMPLETE_TRIES: u8 = 5;
const APPEND_FLAG: u32 = 0x04;
const CREATE_FLAG: u32 = 0x01;
const OVERWRITE_FLAG: u32 = 0x02;
/// `CryptoProtocolVersionProto.ENCRYPTION_ZONES`, as every Hadoop 3 client declares
const ENCRYPTION_ZONES: i32 = 2;

/// The lane's connection and what its calls need.
struct Rpc<'s> {
    conn: Connection,
    s: &'s Settings,
    replication: u32,
    block_size: u64,
}

fn decode<M: prost::Message + Default>(body: &[u8]) -> Result<M, String> {
    M::decode(body).map_err(|e| format!("a bad response: {e}"))
}

impl Rpc<'_> {
    fn path_call(&mut self, method: &str, path: &str) -> i32 {
        self.conn.queue(method, &PathRequest { src: path.to_string() })
    }

    fn complete(&mut self, path: &str, f: &Flight) -> i32 {
        let request = CompleteRequest {
            src: path.to_string(),
            client_name: self.conn.client_name.clone(),
            last: f.last.clone(),
            file_id: Some(f.file_id),
        };
        self.conn.queue("complete", &request)
    }

    fn mkdirs(&mut self, path: &str, create_parent: bool) -> i32 {
        self.conn.queue("mkdirs", &MkdirsRequest { src: path.to_string(), masked: FsPermission { perm: DIR_MODE }, create_parent })
    }

    fn set_replication(&mut self, path: &str, replication: u32) -> i32 {
        self.conn.queue("setReplication", &SetReplicationRequest { src: path.to_string(), replication })
    }

    fn listing(&mut self, path: &str, after: Vec<u8>) -> i32 {
        self.conn.queue("getListing", &GetListingRequest { src: path.to_string(), start_after: after, need_location: false })
    }

    /// The first call of operation `op` (as the hdfs backend's `aio_*` method of that op code)
    /// and the stage it waits in.
    fn start(&mut self, op: u8, path: &str, target: Option<&str>) -> Result<(i32, Stage), String> {
        let src = path.to_string();
        Ok(match op {
            CREATE | CREATE_OVERWRITE => {
                // create: parents made, no overwrite (FileSystem.create); overwrite: no parents
                let (flag, create_parent) = if op == CREATE { (CREATE_FLAG, true) } else { (CREATE_FLAG | OVERWRITE_FLAG, false) };
                let request = CreateRequest {
                    src,
                    masked: FsPermission { perm: FILE_MODE },
                    client_name: self.conn.client_name.clone(),
                    create_flag: flag,
                    create_parent,
                    replication: self.replication,
                    block_size: self.block_size,
                    crypto_protocol_version: vec![ENCRYPTION_ZONES],
                };
                (self.conn.queue("create", &request), Stage::Created)
            }
            APPEND => {
                let request = AppendRequest { src, client_name: self.conn.client_name.clone(), flag: Some(APPEND_FLAG) };
                (self.conn.queue("append", &request), Stage::Appended)
            }
            OPEN => {
                let request = GetBlockLocationsRequest { src, offset: 0, length: i64::MAX as u64 };
                (self.conn.queue("getBlockLocations", &request), Stage::Present)
            }
            LIST_FILE | LIST_DIR => (self.listing(path, Vec::new()), Stage::Listing),
            GETFILEINFO | GETFILEINFO_DIR => (self.path_call("getFileInfo", path), Stage::Present),
            GETFILEINFO_ABSENT | GETFILEINFO_ABSENT_DIR => (self.path_call("getFileInfo", path), Stage::Absent),
            DELETE | DELETE_DIR => {
                (self.conn.queue("delete", &DeleteRequest { src, recursive: op == DELETE_DIR }), Stage::Result)
            }
            MKDIRS if self.s.strict_mkdirs => (self.path_call("getFileInfo", path), Stage::MkdirsProbe),
            MKDIRS | MKDIRS_EXISTING => (self.mkdirs(path, false), Stage::Plain),
            MKDIRS_PARENTS => (self.mkdirs(path, true), Stage::Plain),
            RENAME_FILE | RENAME_DIR => {
                let dst = match target {
                    Some(t) if !t.is_empty() => t.to_string(),
                    _ => return Err(format!("rename (op {op}) without a target path")),
                };
                (self.conn.queue("rename2", &Rename2Request { src, dst, overwrite_dest: false }), Stage::Renamed)
            }
            CONTENT_SUMMARY | CONTENT_SUMMARY_DIR => {
                (self.conn.queue("getContentSummary", &PathRequest { src }), Stage::Plain)
            }
            SET_PERMISSION | SET_PERMISSION_DIR => {
                let perm = if op == SET_PERMISSION { FILE_MODE } else { DIR_MODE };
                (self.conn.queue("setPermission", &SetPermissionRequest { src, permission: FsPermission { perm } }), Stage::Plain)
            }
            SET_OWNER | SET_OWNER_DIR => {
                let request = SetOwnerRequest { src, username: Some(self.s.owner.clone()), groupname: Some(self.s.group.clone()) };
                (self.conn.queue("setOwner", &request), Stage::Plain)
            }
            SET_TIMES | SET_TIMES_DIR => {
                (self.conn.queue("setTimes", &SetTimesRequest { src, mtime: SET_TIMES_MS, atime: SET_TIMES_MS }), Stage::Plain)
            }
            SET_REPLICATION => match self.s.replication {
                Some(r) => (self.set_replication(path, r), Stage::Result),
                None => (self.path_call("getFileInfo", path), Stage::ReplicationProbe),
            },
            GET_ACL_STATUS | GET_ACL_STATUS_DIR => (self.path_call("getAclStatus", path), Stage::Plain),
            _ => return Err(format!("no operation for op code {op}")),
        })
    }

    /// Take the reply to `f`'s call: the operation's end, or its next call (`f.stage` updated).
    fn step(&mut self, f: &mut Flight, reply: Reply, path: &str, target: Option<&str>) -> Result<Next, String> {
        let body = match reply {
            Reply::Fatal(msg) => return Err(format!("the NameNode closed the call: {msg}")),
            Reply::Error(class, msg) => {
                return Ok(match std::mem::replace(&mut f.stage, Stage::Plain) {
                    Stage::RenameProbe(refused) => Next::Done(refused),
                    Stage::Renamed if msg.split('\n').next().unwrap_or("").contains("under source") => {
                        // HDFS refuses a move below the source before it checks the destination;
                        // the contract says `exists` when the destination is there
                        f.stage = Stage::RenameProbe(classify(&class, &msg));
                        Next::Sent(self.path_call("getFileInfo", target.unwrap_or_default()))
                    }
                    Stage::Absent => Next::Done(match classify(&class, &msg) {
                        Ok(NOT_FOUND) => Ok(OK), // a miss is the expected answer
                        other => other,
                    }),
                    _ => Next::Done(classify(&class, &msg)),
                });
            }
            Reply::Ok(body) => body,
        };
        let present = |body: &[u8]| -> Result<Option<Vec<u8>>, String> { Ok(decode::<FirstField>(body)?.first) };
        Ok(match std::mem::replace(&mut f.stage, Stage::Plain) {
            Stage::Plain | Stage::Renamed => Next::Done(Ok(OK)),
            Stage::Present => Next::Done(Ok(if present(&body)?.is_some() { OK } else { NOT_FOUND })),
            Stage::Absent => Next::Done(Ok(OK)),
            Stage::Result => Next::Done(Ok(if decode::<BoolResult>(&body)?.result == Some(false) { NOT_FOUND } else { OK })),
            Stage::RenameProbe(refused) => Next::Done(if present(&body)?.is_some() { Ok(EXISTS) } else { refused }),
            Stage::MkdirsProbe => {
                if present(&body)?.is_some() {
                    Next::Done(Ok(EXISTS))
                } else {
                    Next::Sent(self.mkdirs(path, false))
                }
            }
            Stage::ReplicationProbe => match present(&body)? {
                None => Next::Done(Ok(NOT_FOUND)),
                Some(status) => {
                    let replication = decode::<FileStatus>(&status)?.block_replication.filter(|&r| r > 0).unwrap_or(1);
                    f.stage = Stage::Result;
                    Next::Sent(self.set_replication(path, replication))
                }
            },
            Stage::Created => match present(&body)? {
                None => Next::Done(Ok(NOT_FOUND)),
                Some(status) => {
                    f.file_id = decode::<FileStatus>(&status)?.file_id.unwrap_or(0);
                    f.last = None;
                    f.stage = Stage::Complete(1);
                    Next::Sent(self.complete(path, f))
                }
            },
            Stage::Appended => {
                let reply = decode::<AppendResponse>(&body)?;
                match reply.stat {
                    None => Next::Done(Ok(NOT_FOUND)),
                    Some(status) => {
                        f.file_id = decode::<FileStatus>(&status)?.file_id.unwrap_or(0);
                        f.last = match reply.block {
                            Some(block) => decode::<LocatedBlock>(&block)?.b,
                            None => None,
                        };
                        f.stage = Stage::Complete(1);
                        Next::Sent(self.complete(path, f))
                    }
                }
            }
            Stage::Complete(tries) => {
                if decode::<BoolResult>(&body)?.result == Some(true) {
                    Next::Done(Ok(OK))
                } else if tries < COMPLETE_TRIES {
                    f.stage = Stage::Complete(tries + 1);
                    Next::Sent(self.complete(path, f))
                } else {
                    return Err(format!("complete of {path} did not succeed in {COMPLETE_TRIES} tries"));
                }
            }
            Stage::Listing => match present(&body)? {
                None => Next::Done(Ok(NOT_FOUND)),
                Some(list) => {
                    let list = decode::<DirectoryListing>(&list)?;
                    let more = list.remaining_entries.unwrap_or(0) > 0;
                    match list.partial_listing.last() {
                        Some(last) if more => {
                            let after = decode::<FileStatus>(last)?.path.unwrap_or_default();
                            f.stage = Stage::Listing;
                            Next::Sent(self.listing(path, after))
                        }
                        _ => Next::Done(Ok(OK)),
                    }
                }
            },
        })
    }
}

/// How the dispatch ended.
enum End {
    Done,
    Stopped,
    Drift(i64),
    Failed(String),
}

/// One object's operations: whether an ordered one is in flight, how many others are in
/// flight since it, and the events waiting for them (in schedule order).
#[derive(Default)]
struct Object {
    barrier: bool,
    readers: u32,
    waiting: VecDeque<usize>,
}

struct Inputs<'a> {
    ops: &'a [u8],
    due: &'a [i64],
    keys: &'a [i64],
    paths: Paths<'a>,
    targets: Option<Paths<'a>>,
}

struct Pacing {
    origin_ns: i64,
    max_drift_ns: i64,
    paced: bool,
    spin_ns: i64,
    outstanding: usize,
    /// Read replies in batches (see `Linger`).
    linger: Linger,
}

/// When the lane, with calls in flight and nothing it may issue, sleeps without watching the
/// socket (so one wake-up reads several replies) rather than waking on each reply. Each reply's
/// end time is then the time it was read: at most the nap after it arrived.
///
/// On one machine the client's wake-up per reply is most of its CPU per call (about 12 of 15 us
/// per getfileinfo at 64 in flight against the NameNode's 21-28 us, docs/hdfs-backend.md); a nap
/// of 100-200 us there read 5-10 replies per wake-up and brought the client to 4-6 us per call.
#[derive(Clone, Copy)]
enum Linger {
    /// Wake on every reply.
    Off,
    /// Nap this long whenever calls are in flight and nothing may be issued, paced or not.
    Fixed(i64),
    /// Only with at least `AUTO_MIN_CALLS` calls in flight (so a nap leaves the server a queue),
    /// and in a paced run only while the lane is behind its schedule (an event is due that no
    /// slot is free for): nap an eighth of the recent mean latency (from issue to reply), at
    /// most this long. An eighth keeps a reply's end time within 1/8 of the mean latency while
    /// reading about `calls / 8` replies per wake-up. A paced lane behind its schedule is a
    /// server that cannot keep up (a burst's backlog): there the client's CPU, on a host it may
    /// share with the server, is what it takes from the server, and a reply's end time late by
    /// a fraction of the service time is small beside the backlog's wait, which the latency (from
    /// the due time) is made of; a lane on schedule waits on the socket, so its replies are
    /// timed as they come.
    Auto(i64),
}

/// Calls in flight from which `Linger::Auto` naps: with fewer, an eighth of the latency brings
/// under two replies per wake-up, and the client's CPU is small beside the server's.
const AUTO_MIN_CALLS: usize = 16;

impl Linger {
    /// How long to nap now (0: wait on the socket). `behind`: an event is due that the lane may
    /// not issue yet; `mean_ns`: the recent mean latency.
    fn nap_ns(self, paced: bool, behind: bool, in_flight: usize, mean_ns: i64) -> i64 {
        match self {
            Linger::Off => 0,
            Linger::Fixed(ns) => ns,
            Linger::Auto(cap) if (!paced || behind) && in_flight >= AUTO_MIN_CALLS => (mean_ns / 8).min(cap),
            Linger::Auto(_) => 0,
        }
    }
}

/// The dispatcher's bookkeeping: objects, the bound, the completed prefix.
struct Book {
    objects: HashMap<i64, Object>,
    used: usize, // in flight or waiting
    ended: Vec<bool>,
    prefix: usize,
    failure: Option<String>,
}

impl Book {
    /// Event `i` may go now (true) or waits behind its object's earlier operations (false).
    fn admit(&mut self, i: usize, key: i64, op: u8) -> bool {
        let o = self.objects.entry(key).or_default();
        let go = o.waiting.is_empty() && !o.barrier && !(ordered(op) && o.readers > 0);
        if !go {
            o.waiting.push_back(i);
        } else if ordered(op) {
            o.barrier = true;
        } else {
            o.readers += 1;
        }
        self.used += 1;
        go
    }

    /// Event `i` ended: record it, advance the prefix, and return the waiting events it frees
    /// (none once stopped: those are dropped unissued).
    fn finish(&mut self, inp: &Inputs, out: &mut Outputs, (i, t0, t1, r): Ended, stopped: bool) -> Vec<usize> {
        out.start[i] = t0;
        out.end[i] = t1;
        out.outcome[i] = match r {
            Ok(code) => code,
            Err(msg) => {
                self.failure.get_or_insert(msg);
                OTHER
            }
        };
        self.used -= 1;
        self.ended[i] = true;
        while self.prefix < self.ended.len() && self.ended[self.prefix] {
            self.prefix += 1;
        }
        let key = inp.keys[i];
        let mut freed = Vec::new();
        let Some(o) = self.objects.get_mut(&key) else { return freed };
        if ordered(inp.ops[i]) {
            o.barrier = false;
        } else {
            o.readers -= 1;
        }
        if stopped {
            self.used -= o.waiting.len();
            o.waiting.clear();
        }
        while let Some(&j) = o.waiting.front() {
            if o.barrier || (ordered(inp.ops[j]) && o.readers > 0) {
                break;
            }
            o.waiting.pop_front();
            if ordered(inp.ops[j]) {
                o.barrier = true;
            } else {
                o.readers += 1;
            }
            freed.push(j);
        }
        if !o.barrier && o.readers == 0 && o.waiting.is_empty() {
            self.objects.remove(&key);
        }
        freed
    }
}

/// Path bytes as text (HDFS paths are UTF-8: the Python side made them from `str`).
fn text<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|_| format!("{what} is not UTF-8"))
}

/// The dispatch: one thread, one connection, no runtime. Each turn issues what is due (and has
/// a slot and no dependency outstanding), sends every call queued in one write, waits for replies
/// or the next due time, and takes every reply that arrived. Returns how it ended.
fn dispatch(rpc: &mut Rpc, inp: &Inputs, out: &mut Outputs, pace: &Pacing, stop: &StopFlag, progress: &LaneProgress) -> End {
    let n = inp.ops.len();
    let mut book = Book { objects: HashMap::new(), used: 0, ended: vec![false; n], prefix: 0, failure: None };
    let mut calls: HashMap<i32, Flight> = HashMap::new();
    let path = |i: usize| text(inp.paths.get(i), "a path");
    let target = |i: usize| -> Result<Option<&str>, String> {
        match inp.targets.as_ref() {
            Some(t) => text(t.get(i), "a rename target").map(Some),
            None => Ok(None),
        }
    };
    // an operation begins: its first call is queued, or it ends at once (it cannot be issued)
    let begin = |rpc: &mut Rpc, calls: &mut HashMap<i32, Flight>, i: usize| -> Option<Ended> {
        let t0 = now_ns();
        let started = path(i).and_then(|p| target(i).and_then(|t| rpc.start(inp.ops[i], p, t)));
        match started {
            Ok((call, stage)) => {
                calls.insert(call, Flight { event: i, t0, stage, file_id: 0, last: None });
                None
            }
            Err(msg) => Some((i, t0, now_ns(), Err(msg))),
        }
    };
    // when event `i` may be issued (as fast as possible: at once)
    let due_at = |i: usize| pace.origin_ns + if pace.paced { inp.due[i] } else { 0 };
    let mut ended: Vec<Ended> = Vec::new();
    let mut end = End::Done;
    let mut next = 0usize; // the next event to dispatch
    let mut dispatching = true;
    let mut mean_ns: i64 = 0;
    if !pace.paced {
        while now_ns() < pace.origin_ns && !stop.stopped() {
            std::thread::sleep(Duration::from_nanos((pace.origin_ns - now_ns()).clamp(0, MAX_SLEEP_NS) as u64));
        }
    }
    loop {
        // 1. record what ended, issue what waited for it
        while let Some(d) = ended.pop() {
            if d.3.is_err() {
                stop.set();
            }
            for j in book.finish(inp, out, d, stop.stopped()) {
                if let Some(e) = begin(rpc, &mut calls, j) {
                    ended.push(e);
                }
            }
        }
        // 2. dispatch what is due
        while dispatching && next < n {
            if stop.stopped() {
                end = End::Stopped;
                dispatching = false;
                break;
            }
            let due = due_at(next);
            let now = now_ns();
            if now < due || book.used >= pace.outstanding {
                break;
            }
            if pace.paced && now - due > pace.max_drift_ns {
                stop.set(); // the other lanes stop too; nothing is recorded for this operation
                end = End::Drift(now - due);
                dispatching = false;
                break;
            }
            if book.admit(next, inp.keys[next], inp.ops[next]) {
                if let Some(e) = begin(rpc, &mut calls, next) {
                    ended.push(e);
                }
            }
            next += 1;
        }
        if next == n {
            dispatching = false;
        }
        // 3. send every call queued this turn
        if let Err(e) = rpc.conn.flush() {
            return fail_all(&mut book, &mut calls, inp, out, progress, stop, format!("sending to the NameNode failed: {e}"));
        }
        progress.publish(book.prefix);
        if !dispatching && calls.is_empty() && ended.is_empty() {
            break;
        }
        // 4. wait for replies, or until the next event is due
        let mut timeout = MAX_SLEEP_NS;
        let mut until_due = i64::MAX; // until the next event may be issued (less the spin)
        // paced, an event due and not issued (as fast as possible the linger does not ask)
        let behind = pace.paced && dispatching && next < n && due_at(next) <= now_ns();
        if !ended.is_empty() {
            timeout = 0;
        } else if dispatching && next < n && book.used < pace.outstanding {
            let left = due_at(next) - now_ns();
            until_due = if left <= pace.spin_ns { 0 } else { left - pace.spin_ns };
            timeout = until_due.min(MAX_SLEEP_NS);
        }
        let nap_ns = if calls.is_empty() || rpc.conn.pending() { 0 } else { pace.linger.nap_ns(pace.paced, behind, calls.len(), mean_ns) };
        if timeout > 0 && nap_ns > 0 {
            nap(nap_ns.min(until_due)); // a nap (at most 10 ms) may outlast MAX_SLEEP_NS
        } else if timeout > 0 || rpc.conn.pending() {
            rpc.conn.wait(timeout);
        }
        // 5. take every reply that arrived (its end time: now)
        if let Err(e) = rpc.conn.flush().and_then(|_| rpc.conn.fill()) {
            return fail_all(&mut book, &mut calls, inp, out, progress, stop, format!("the NameNode connection failed: {e}"));
        }
        let t1 = now_ns();
        while let Some(r) = rpc.conn.next_response() {
            let (call, reply) = match r {
                Ok(x) => x,
                Err(msg) => return fail_all(&mut book, &mut calls, inp, out, progress, stop, msg),
            };
            let Some(mut f) = calls.remove(&call) else { continue }; // not ours (cannot happen)
            let i = f.event;
            let stepped = path(i).and_then(|p| target(i).and_then(|t| rpc.step(&mut f, reply, p, t)));
            match stepped {
                Ok(Next::Sent(next_call)) => {
                    calls.insert(next_call, f);
                }
                Ok(Next::Done(done)) => {
                    // the recent mean latency (for Linger::Auto): the last ~32 operations
                    mean_ns = if mean_ns == 0 { t1 - f.t0 } else { mean_ns + (t1 - f.t0 - mean_ns) / 32 };
                    ended.push((i, f.t0, t1, done))
                }
                Err(msg) => ended.push((i, f.t0, t1, Err(msg))),
            }
        }
    }
    progress.publish(book.prefix);
    if let Some(msg) = book.failure.take() {
        return End::Failed(msg);
    }
    if matches!(end, End::Done) && book.prefix < n {
        end = End::Stopped; // a stop while draining dropped waiting events
    }
    end
}

/// Sleep `ns` without watching any socket (the lane's linger).
fn nap(ns: i64) {
    let ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
    // SAFETY: no pollfd (nfds 0), a valid timespec, no signal mask.
    unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
}

/// This thread's timer slack at 1 us while it lives (the kernel's default, 50 us, would stretch
/// every linger by up to that), restored when dropped.
struct TimerSlack(libc::c_ulong);

impl TimerSlack {
    fn fine() -> TimerSlack {
        // SAFETY: PR_GET_TIMERSLACK / PR_SET_TIMERSLACK take no pointers.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
        TimerSlack(old.max(1) as libc::c_ulong)
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, self.0, 0, 0, 0) };
    }
}

/// The connection broke: every operation in flight ends as `other`, the run stops.
fn fail_all(
    book: &mut Book,
    calls: &mut HashMap<i32, Flight>,
    inp: &Inputs,
    out: &mut Outputs,
    progress: &LaneProgress,
    stop: &StopFlag,
    msg: String,
) -> End {
    stop.set();
    let t1 = now_ns();
    let mut flights: Vec<Flight> = calls.drain().map(|(_, f)| f).collect();
    flights.sort_by_key(|f| f.event);
    for f in flights {
        book.finish(inp, out, (f.event, f.t0, t1, Err(msg.clone())), true);
    }
    progress.publish(book.prefix);
    End::Failed(msg)
}

/// A NameNode client for native replay lanes: `run` replays a worker's events (see the module).
#[pyclass(frozen, module = "mimesisbench_native")]
pub struct HdfsLane {
    url: String,
    settings: Settings,
    linger: Linger,
}

impl HdfsLane {
    /// A connection for one call, and the server's defaults for creates (asked before the
    /// replay, so it does not time them).
    fn connect(&self) -> Result<(Connection, u32, u64), String> {
        let addr = address(&self.url).ok_or_else(|| format!("the native hdfs lane needs hdfs://host:port, not {}", self.url))?;
        let fail = |e: String| format!("HDFS at {} failed: {e}", self.url);
        let mut conn = Connection::open(&addr, &simple_user(), CONNECT_TIMEOUT).map_err(|e| fail(e.to_string()))?;
        let defaults = match conn.call_now("getServerDefaults", &Empty {}, CALL_TIMEOUT).map_err(fail)? {
            Reply::Ok(body) => decode::<FirstField>(&body)
                .and_then(|f| decode::<ServerDefaults>(&f.first.unwrap_or_default()))
                .map_err(fail)?,
            Reply::Error(class, msg) => return Err(fail(format!("{class}: {msg}"))),
            Reply::Fatal(msg) => return Err(fail(msg)),
        };
        Ok((conn, defaults.replication.unwrap_or(3), defaults.block_size.unwrap_or(128 << 20)))
    }
}

#[pymethods]
impl HdfsLane {
    /// `url` (`hdfs://host:port`), the client's Hadoop configuration, and what the hdfs backend
    /// knows after `connect`: the mkdirs mode, the base's owner and group (`set_owner`), the
    /// replication files are made with (None: asked per file, as the backend does).
    /// `linger_ns` and `linger_auto`: how replies are read (the module's `Linger`): 0 wakes on
    /// every reply; with `linger_auto`, the longest automatic nap; else a fixed nap.
    #[new]
    #[pyo3(signature = (url, *, strict_mkdirs, owner, group, replication, linger_ns=0, linger_auto=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        url: String,
        strict_mkdirs: bool,
        owner: String,
        group: String,
        replication: Option<u32>,
        linger_ns: i64,
        linger_auto: bool,
    ) -> Self {
        let linger = match (linger_ns.max(0), linger_auto) {
            (0, _) => Linger::Off,
            (ns, true) => Linger::Auto(ns),
            (ns, false) => Linger::Fixed(ns),
        };
        HdfsLane { url, settings: Settings { strict_mkdirs, owner, group, replication }, linger }
    }

    /// How long the lane naps before reading replies (0: it waits on the socket) when it has
    /// `in_flight` calls out, nothing it may issue (`behind`: though an event is due), and
    /// `mean_ns` as its recent mean latency.
    #[pyo3(signature = (paced, in_flight, mean_ns, *, behind=false))]
    fn nap_ns(&self, paced: bool, in_flight: usize, mean_ns: i64, behind: bool) -> i64 {
        self.linger.nap_ns(paced, behind, in_flight, mean_ns)
    }

    /// The op codes this lane performs.
    #[getter]
    fn ops(&self) -> Vec<u8> {
        OPS.to_vec()
    }

    /// Replay events with the GIL released (see the module for the semantics).
    ///
    /// Inputs: `ops` (u8), `due_ns` (i64, relative to the barrier, time scale applied), `keys`
    /// (keyword; i64, each event's object), the native paths (`offsets` i64 with n + 1 entries, `data`
    /// u8) and, when there are renames, their targets (`offsets2`, `data2`; empty = none).
    /// Outputs, in place: `start_ns`, `end_ns` (CLOCK_MONOTONIC ns), `outcome` (0 = ok).
    /// Returns `(status, count, behind_ns, message)` as `run_posix_lane`.
    #[pyo3(signature = (
        ops, due_ns, offsets, data, offsets2, data2, start_ns, end_ns, outcome, *,
        keys, origin_ns, max_drift_ns, paced, spin_ns, outstanding, stop, progress
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        ops: PyReadonlyArray1<'py, u8>,
        due_ns: PyReadonlyArray1<'py, i64>,
        offsets: PyReadonlyArray1<'py, i64>,
        data: PyReadonlyArray1<'py, u8>,
        offsets2: Option<PyReadonlyArray1<'py, i64>>,
        data2: Option<PyReadonlyArray1<'py, u8>>,
        mut start_ns: PyReadwriteArray1<'py, i64>,
        mut end_ns: PyReadwriteArray1<'py, i64>,
        mut outcome: PyReadwriteArray1<'py, u8>,
        keys: PyReadonlyArray1<'py, i64>,
        origin_ns: i64,
        max_drift_ns: i64,
        paced: bool,
        spin_ns: i64,
        outstanding: usize,
        stop: &Bound<'py, StopFlag>,
        progress: &Bound<'py, LaneProgress>,
    ) -> PyResult<(&'static str, usize, i64, String)> {
        let ops_s = ops.as_slice()?;
        let n = ops_s.len();
        let (paths, targets) = Paths::lane(&offsets, &data, &offsets2, &data2, n)?;
        let inp = Inputs { ops: ops_s, due: due_ns.as_slice()?, keys: keys.as_slice()?, paths, targets };
        let mut out = Outputs { start: start_ns.as_slice_mut()?, end: end_ns.as_slice_mut()?, outcome: outcome.as_slice_mut()? };
        if inp.due.len() != n || inp.keys.len() != n || out.start.len() != n || out.end.len() != n || out.outcome.len() != n {
            return Err(PyValueError::new_err("ops, due_ns, keys, start_ns, end_ns and outcome must have one entry per operation"));
        }
        if let Some(&op) = ops_s.iter().find(|op| !OPS.contains(op)) {
            return Err(PyValueError::new_err(format!("the native hdfs lane has no operation for op code {op}")));
        }
        let pace = Pacing { origin_ns, max_drift_ns: max_drift_ns.max(0), paced, spin_ns: spin_ns.max(0), outstanding: outstanding.max(1), linger: self.linger };
        let stop: &StopFlag = stop.get();
        let progress: &LaneProgress = progress.get();
        progress.publish(0);
        let ended = py.detach(|| -> Result<End, String> {
            let (conn, replication, block_size) = self.connect()?;
            let mut rpc = Rpc { conn, s: &self.settings, replication, block_size };
            let _slack = (!matches!(pace.linger, Linger::Off)).then(TimerSlack::fine);
            Ok(dispatch(&mut rpc, &inp, &mut out, &pace, stop, progress))
        });
        let count = progress.count_now();
        match ended {
            Err(msg) => {
                stop.set();
                Err(PyRuntimeError::new_err(msg))
            }
            Ok(End::Done) => Ok(("done", count, 0, String::new())),
            Ok(End::Stopped) => Ok(("stopped", count, 0, String::new())),
            Ok(End::Drift(behind)) => Ok(("drift", count, behind, String::new())),
            Ok(End::Failed(msg)) => Ok(("failed", count, 0, msg)),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HdfsLane>()?;
    Ok(())
}
