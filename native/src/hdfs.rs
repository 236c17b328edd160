//! The HDFS replay lane: a worker's whole dispatch against a NameNode, outside the interpreter.
//!
//! The twin of `run_async_dispatch` in `mimesisbench/run/lanes.py` driving the hdfs backend's
//! `aio_*` operations (`mimesisbench/backends/hdfs.py`), through the same `hdfs-native` crate
//! the Python package wraps; the Python dispatcher stays the reference and the tests compare the
//! two on the real NameNode. The whole lane runs with the GIL released on a single-threaded
//! tokio runtime made for the call: the dispatcher, the operations and the client's connection
//! tasks share one thread, so no operation costs a thread hand-off.
//!
//! Semantics (as the Python dispatcher): every event is issued at its due time (or back to back
//! when not paced) whatever else is in flight on its object, unless it depends on an earlier one:
//! an operation of `ORDERED` waits for every earlier operation on its object (`keys`), and any
//! later operation on the object waits for it. At most `outstanding` operations are in flight,
//! waiting ones included; a dispatch held back by that bound is late, and more than
//! `max_drift_ns` late stops the run (drift). Recorded per operation in place: the actual start
//! and end (CLOCK_MONOTONIC ns) and the outcome code; the published count is the prefix of
//! events that ended. Stopped, operations in flight end and are recorded, waiting ones are not
//! issued (the prefix ends at the first of them).
//!
//! Outcomes, as `classify_hdfs(translate_error(...))`: `FileNotFound` and the server's
//! `FileNotFoundException`, `ParentNotDirectoryException` (and an `AccessControlException`
//! saying "is not a directory") -> not_found; `AlreadyExists`, `FileAlreadyExistsException`,
//! `PathIsNotEmptyDirectoryException` -> exists; `AccessControlException`,
//! `AuthorizationException`, `SafeModeException` -> permission; another server exception ->
//! other; `StandbyException`, `RetriableException` and any client-side error (connection lost,
//! a bad response) mean the backend is broken: the operation counts as other and the run stops.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::lane::{now_ns, LaneProgress, Paths, StopFlag};

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
/// Longest single sleep: a stop request is noticed within this long while waiting.
const MAX_SLEEP_NS: i64 = 1_000_000;

/// An operation's end: its outcome code, or the backend is broken (the message says why).
type Done = Result<u8, String>;
/// An operation that ended: its position, start and end (ns), and how it went.
type Ended = (usize, i64, i64, Done);

/// The outcome of a failed call, or `Err` when the failure means the backend is broken.
fn classify(err: &HdfsError) -> Done {
    match err {
        HdfsError::FileNotFound(_) => Ok(NOT_FOUND),
        HdfsError::AlreadyExists(_) => Ok(EXISTS),
        HdfsError::IsADirectoryError(_) => Ok(OTHER),
        HdfsError::RPCError(class, message) => {
            let short = class.rsplit('.').next().unwrap_or(class);
            let first = message.split('\n').next().unwrap_or("");
            match short {
                "FileNotFoundException" | "ParentNotDirectoryException" => Ok(NOT_FOUND),
                "FileAlreadyExistsException" | "PathIsNotEmptyDirectoryException" => Ok(EXISTS),
                "AccessControlException" if first.contains("is not a directory") => Ok(NOT_FOUND),
                "AccessControlException" | "AuthorizationException" | "SafeModeException" => Ok(PERMISSION),
                "StandbyException" | "RetriableException" => {
                    Err(format!("the NameNode cannot serve ({short}: {first})"))
                }
                _ => Ok(OTHER),
            }
        }
        other => Err(format!("{other}")),
    }
}

/// `Ok` -> ok, a failure -> its classification.
#[inline]
fn outcome<T>(r: hdfs_native::Result<T>) -> Done {
    match r {
        Ok(_) => Ok(OK),
        Err(e) => classify(&e),
    }
}

/// What the backend read at `connect` and the URL's options.
struct Settings {
    strict_mkdirs: bool,
    owner: String,
    group: String,
    replication: Option<u32>,
}

/// One operation (as the hdfs backend's `aio_*` method of that op code).
async fn perform(client: &Client, s: &Settings, op: u8, path: &str, target: Option<&str>) -> Done {
    match op {
        CREATE | CREATE_OVERWRITE => {
            let opts = if op == CREATE {
                WriteOptions::default() // create_parent, no overwrite: FileSystem.create
            } else {
                WriteOptions::default().overwrite(true).create_parent(false)
            };
            match client.create(path, opts).await {
                Ok(mut w) => outcome(w.close().await),
                Err(e) => classify(&e),
            }
        }
        APPEND => match client.append(path).await {
            Ok(mut w) => outcome(w.close().await),
            Err(e) => classify(&e),
        },
        OPEN => outcome(client.read(path).await),
        LIST_FILE | LIST_DIR => outcome(client.list_status(path, false).await),
        GETFILEINFO | GETFILEINFO_DIR => outcome(client.get_file_info(path).await),
        GETFILEINFO_ABSENT | GETFILEINFO_ABSENT_DIR => match outcome(client.get_file_info(path).await) {
            Ok(NOT_FOUND) => Ok(OK), // a miss is the expected answer
            other => other,
        },
        DELETE | DELETE_DIR => match client.delete(path, op == DELETE_DIR).await {
            Ok(true) => Ok(OK),
            Ok(false) => Ok(NOT_FOUND),
            Err(e) => classify(&e),
        },
        MKDIRS => {
            if s.strict_mkdirs {
                match client.get_file_info(path).await {
                    Ok(_) => return Ok(EXISTS),
                    Err(HdfsError::FileNotFound(_)) => {}
                    Err(e) => match classify(&e) {
                        Ok(NOT_FOUND) => {}
                        other => return other,
                    },
                }
            }
            outcome(client.mkdirs(path, DIR_MODE, false).await)
        }
        MKDIRS_EXISTING | MKDIRS_PARENTS => outcome(client.mkdirs(path, DIR_MODE, op == MKDIRS_PARENTS).await),
        RENAME_FILE | RENAME_DIR => {
            let dst = match target {
                Some(t) if !t.is_empty() => t,
                _ => return Err(format!("rename (op {op}) without a target path")),
            };
            match client.rename(path, dst, false).await {
                Ok(()) => Ok(OK),
                Err(e) => {
                    let under_source = matches!(&e, HdfsError::RPCError(_, m) if m.contains("under source"));
                    // HDFS refuses a move below the source before it checks the destination;
                    // the contract says `exists` when the destination is there
                    if under_source && client.get_file_info(dst).await.is_ok() {
                        return Ok(EXISTS);
                    }
                    classify(&e)
                }
            }
        }
        CONTENT_SUMMARY | CONTENT_SUMMARY_DIR => outcome(client.get_content_summary(path).await),
        SET_PERMISSION => outcome(client.set_permission(path, FILE_MODE).await),
        SET_PERMISSION_DIR => outcome(client.set_permission(path, DIR_MODE).await),
        SET_OWNER | SET_OWNER_DIR => outcome(client.set_owner(path, Some(&s.owner), Some(&s.group)).await),
        SET_TIMES | SET_TIMES_DIR => outcome(client.set_times(path, SET_TIMES_MS, SET_TIMES_MS).await),
        SET_REPLICATION => {
            let replication = match s.replication {
                Some(r) => r,
                None => match client.get_file_info(path).await {
                    Ok(st) => st.replication.unwrap_or(1),
                    Err(e) => return classify(&e),
                },
            };
            match client.set_replication(path, replication).await {
                Ok(true) => Ok(OK),
                Ok(false) => Ok(NOT_FOUND), // HDFS answers false for a missing file
                Err(e) => classify(&e),
            }
        }
        GET_ACL_STATUS | GET_ACL_STATUS_DIR => outcome(client.get_acl_status(path).await),
        _ => Err(format!("no operation for op code {op}")),
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

struct Outputs<'a> {
    start: &'a mut [i64],
    end: &'a mut [i64],
    outcome: &'a mut [u8],
}

struct Pacing {
    origin_ns: i64,
    max_drift_ns: i64,
    paced: bool,
    spin_ns: i64,
    outstanding: usize,
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

/// Path `i` as text (HDFS paths are UTF-8: the Python side made them from `str`).
fn text<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|_| format!("{what} is not UTF-8"))
}

/// The dispatch (on the lane's runtime): returns how it ended and the recorded prefix.
async fn dispatch(
    client: &Client,
    s: &Settings,
    inp: &Inputs<'_>,
    out: &mut Outputs<'_>,
    pace: &Pacing,
    stop: &StopFlag,
    progress: &LaneProgress,
) -> End {
    let n = inp.ops.len();
    let mut book = Book { objects: HashMap::new(), used: 0, ended: vec![false; n], prefix: 0, failure: None };
    let launch = |i: usize| async move {
        let t0 = now_ns();
        let r = match text(inp.paths.get(i), "a path") {
            Ok(path) => {
                let target = match inp.targets.as_ref().map(|t| text(t.get(i), "a rename target")) {
                    Some(Ok(t)) => Some(t),
                    Some(Err(e)) => return (i, t0, now_ns(), Err(e)),
                    None => None,
                };
                perform(client, s, inp.ops[i], path, target).await
            }
            Err(e) => Err(e),
        };
        (i, t0, now_ns(), r)
    };
    let mut inflight = FuturesUnordered::new();
    // an ended operation: record it, publish, issue what it frees; a failure stops the run
    macro_rules! ended {
        ($d:expr) => {{
            let d: Ended = $d;
            if d.3.is_err() {
                stop.set();
            }
            for j in book.finish(inp, out, d, stop.stopped()) {
                inflight.push(launch(j));
            }
            progress.publish(book.prefix);
        }};
    }
    if !pace.paced {
        // back to back from the barrier
        while now_ns() < pace.origin_ns && !stop.stopped() {
            tokio::time::sleep(Duration::from_nanos((pace.origin_ns - now_ns()).clamp(0, MAX_SLEEP_NS) as u64)).await;
        }
    }
    let mut end = End::Done;
    'events: for i in 0..n {
        let due = pace.origin_ns + if pace.paced { inp.due[i] } else { 0 };
        // until due: sleep (or, the last spin_ns, yield) while ended operations are recorded
        loop {
            if stop.stopped() {
                end = End::Stopped;
                break 'events;
            }
            let now = now_ns();
            if now >= due {
                break;
            }
            let remaining = due - now;
            if remaining > pace.spin_ns {
                let nap = Duration::from_nanos((remaining - pace.spin_ns).min(MAX_SLEEP_NS) as u64);
                tokio::select! {
                    _ = tokio::time::sleep(nap) => {}
                    Some(d) = inflight.next(), if !inflight.is_empty() => ended!(d),
                }
            } else {
                while let Some(Some(d)) = inflight.next().now_or_never() {
                    ended!(d);
                }
                tokio::task::yield_now().await;
            }
        }
        // a free slot
        while book.used >= pace.outstanding {
            match inflight.next().await {
                Some(d) => ended!(d),
                None => break, // only waiting events hold slots: cannot happen (a waiting event waits for one in flight)
            }
        }
        if stop.stopped() {
            end = End::Stopped;
            break;
        }
        let late = now_ns() - due;
        if pace.paced && late > pace.max_drift_ns {
            stop.set(); // the other lanes stop too; nothing is recorded for this operation
            end = End::Drift(late);
            break;
        }
        if book.admit(i, inp.keys[i], inp.ops[i]) {
            inflight.push(launch(i));
        }
        // take what already ended without waiting (keeps the published count moving)
        while let Some(Some(d)) = inflight.next().now_or_never() {
            ended!(d);
        }
    }
    while let Some(d) = inflight.next().await {
        ended!(d);
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

/// A NameNode client for native replay lanes: `run` replays a worker's events (see the module).
#[pyclass(frozen, module = "mimesisbench_native")]
pub struct HdfsLane {
    url: String,
    config: HashMap<String, String>,
    settings: Settings,
}

impl HdfsLane {
    /// A runtime for one call and a client on it (connected by a first RPC, so the replay does
    /// not time the connection).
    fn connect(&self) -> Result<(tokio::runtime::Runtime, Client), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot make a runtime: {e}"))?;
        let client = ClientBuilder::new()
            .with_url(self.url.clone())
            .with_config(self.config.clone())
            .with_io_runtime(rt.handle().clone())
            .build()
            .map_err(|e| format!("cannot open an HDFS client for {}: {e}", self.url))?;
        rt.block_on(client.get_file_info("/")).map_err(|e| format!("HDFS at {} failed: {e}", self.url))?;
        Ok((rt, client))
    }
}

#[pymethods]
impl HdfsLane {
    /// `url` (`hdfs://host:port`), the client's Hadoop configuration, and what the hdfs backend
    /// knows after `connect`: the mkdirs mode, the base's owner and group (`set_owner`), the
    /// replication files are made with (None: asked per file, as the backend does).
    #[new]
    #[pyo3(signature = (url, config, *, strict_mkdirs, owner, group, replication))]
    fn new(url: String, config: HashMap<String, String>, strict_mkdirs: bool, owner: String, group: String, replication: Option<u32>) -> Self {
        HdfsLane { url, config, settings: Settings { strict_mkdirs, owner, group, replication } }
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
        let paths = Paths::new(offsets.as_slice()?, data.as_slice()?, n, "paths")?;
        let targets = match (&offsets2, &data2) {
            (Some(o), Some(d)) => Some(Paths::new(o.as_slice()?, d.as_slice()?, n, "rename targets")?),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("give both offsets2 and data2, or neither")),
        };
        let inp = Inputs { ops: ops_s, due: due_ns.as_slice()?, keys: keys.as_slice()?, paths, targets };
        let mut out = Outputs { start: start_ns.as_slice_mut()?, end: end_ns.as_slice_mut()?, outcome: outcome.as_slice_mut()? };
        if inp.due.len() != n || inp.keys.len() != n || out.start.len() != n || out.end.len() != n || out.outcome.len() != n {
            return Err(PyValueError::new_err("ops, due_ns, keys, start_ns, end_ns and outcome must have one entry per operation"));
        }
        if let Some(&op) = ops_s.iter().find(|op| !OPS.contains(op)) {
            return Err(PyValueError::new_err(format!("the native hdfs lane has no operation for op code {op}")));
        }
        let pace = Pacing { origin_ns, max_drift_ns: max_drift_ns.max(0), paced, spin_ns: spin_ns.max(0), outstanding: outstanding.max(1) };
        let stop: &StopFlag = stop.get();
        let progress: &LaneProgress = progress.get();
        progress.publish(0);
        let ended = py.detach(|| -> Result<End, String> {
            let (rt, client) = self.connect()?;
            let end = rt.block_on(dispatch(&client, &self.settings, &inp, &mut out, &pace, stop, progress));
            drop(client);
            drop(rt);
            Ok(end)
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
