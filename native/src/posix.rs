//! The POSIX replay lane: one lane of a worker, issued from native code with the GIL released.
//!
//! The twin of `run_sync_lane` in `mimesisbench/run/lanes.py` with the posix backend's operation
//! table (`mimesisbench/backends/posix.py`); the Python lane stays the reference and the tests
//! compare the two on the same schedules. Per operation the lane records the actual start and end
//! (CLOCK_MONOTONIC ns, the clock of Python's `time.monotonic_ns`) and the outcome code (0 = ok)
//! into the lane's numpy arrays, in place, and publishes how many operations are fully recorded
//! through a `LaneProgress` (the worker's progress reports and live metrics read it while the lane
//! runs). A `StopFlag` shared by the lanes of a worker carries the worker's `StopSignal` into
//! native code: it is polled between operations and at least every millisecond while waiting.
//!
//! Outcomes (as `backends/base.py` maps errno): ENOENT, ENOTDIR -> not_found (1); EEXIST,
//! ENOTEMPTY -> exists (2); EACCES, EPERM, EROFS -> permission (3); anything else -> other (4).
//!
//! `unsafe` appears only around libc calls (clock_gettime, clock_nanosleep, open, close, lstat,
//! unlink, mkdir, rename), each with the reason it is sound.

use std::ffi::CStr;
use std::fs;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;

use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::key_gate::KeyGate;
use crate::lane::{now_ns, LaneProgress, Outputs, Paths, StopFlag};

// Op codes (`mimesisbench.synth.format.OpCode`).
const CREATE: u8 = 1;
const OPEN: u8 = 2;
const LIST_FILE: u8 = 3;
const LIST_DIR: u8 = 4;
const DELETE: u8 = 5;
const MKDIRS: u8 = 6;
const RENAME_FILE: u8 = 7;
const RENAME_DIR: u8 = 8;
const GETFILEINFO: u8 = 9;

// Outcome codes (`mimesisbench.backends.base.Outcome`).
const OK: u8 = 0;
const NOT_FOUND: u8 = 1;
const EXISTS: u8 = 2;
const PERMISSION: u8 = 3;
const OTHER: u8 = 4;

/// Longest single sleep: a stop request is noticed within this long while waiting.
const MAX_SLEEP_NS: i64 = 1_000_000;
/// A lane waiting for a dependency sleeps this long between looks (after a few yields).
const GATE_NAP_NS: i64 = 20_000;

const CREATE_FLAGS: libc::c_int = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
const OPEN_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// A reusable NUL-terminated copy of a path (no allocation per operation once grown).
struct PathBuf0 {
    buf: Vec<u8>,
}

impl PathBuf0 {
    fn new() -> Self {
        PathBuf0 { buf: Vec::with_capacity(512) }
    }

    /// The path as a C string; None when it holds a NUL byte (Python raises ValueError there).
    #[inline]
    fn c_str(&mut self, path: &[u8]) -> Option<&CStr> {
        self.buf.clear();
        self.buf.extend_from_slice(path);
        self.buf.push(0);
        CStr::from_bytes_with_nul(&self.buf).ok()
    }
}

/// Sleep until the absolute CLOCK_MONOTONIC time `t_ns` (may return early on a signal).
fn sleep_until(t_ns: i64) {
    let ts = libc::timespec { tv_sec: (t_ns / 1_000_000_000) as libc::time_t, tv_nsec: (t_ns % 1_000_000_000) as _ };
    // SAFETY: `ts` is a valid timespec; a null `remain` is allowed with TIMER_ABSTIME.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

/// Sleep (in slices of at most 1 ms) until `spin_ns` before `due`, then spin yielding the core
/// (`sched_yield`: another lane of the worker that is due runs first); false when a stop was
/// requested meanwhile.
fn wait_until(due: i64, stop: &StopFlag, spin_ns: i64) -> bool {
    loop {
        if stop.stopped() {
            return false;
        }
        let now = now_ns();
        let remaining = due - now;
        if remaining <= 0 {
            return true;
        }
        if remaining <= spin_ns {
            break;
        }
        sleep_until((due - spin_ns).min(now + MAX_SLEEP_NS));
    }
    while now_ns() < due {
        if stop.stopped() {
            return false;
        }
        // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
        unsafe { libc::sched_yield() };
    }
    true
}

#[inline]
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// errno -> outcome, exactly as `backends/base.py` (`_ERRNO_OUTCOME`).
#[inline]
fn classify(err: i32) -> u8 {
    match err {
        libc::ENOENT | libc::ENOTDIR => NOT_FOUND,
        libc::EEXIST | libc::ENOTEMPTY => EXISTS,
        libc::EACCES | libc::EPERM | libc::EROFS => PERMISSION,
        _ => OTHER,
    }
}

/// An operation that cannot be issued: the backend is broken (Python raises, not OSError).
struct Broken(String);

/// `open(path, flags, mode)` + `close` (create and open).
#[inline]
fn open_close(p: &CStr, flags: libc::c_int, mode: libc::mode_t) -> u8 {
    // SAFETY: `p` is a valid NUL-terminated string that outlives the call.
    let fd = unsafe { libc::open(p.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return classify(errno());
    }
    // SAFETY: `fd` was just opened by this thread and is closed exactly once.
    if unsafe { libc::close(fd) } != 0 {
        return classify(errno());
    }
    OK
}

/// `create`: `open(O_CREAT | O_EXCL)` + `close`; on ENOENT the missing parents are made
/// (`mkdir -p`, mode 0755, as the posix backend's `os.makedirs`) and the open retried: HDFS's
/// create makes them too (a workload makes a directory it deleted again by creating a file in it).
fn create(p: &CStr, path: &[u8]) -> u8 {
    let first = open_close(p, CREATE_FLAGS, 0o644);
    if first != NOT_FOUND || errno() != libc::ENOENT {
        return first;
    }
    let parent = match path.iter().rposition(|&c| c == b'/') {
        Some(i) if i > 0 => &path[..i],
        _ => return first,
    };
    let made = fs::DirBuilder::new().recursive(true).mode(0o755).create(std::ffi::OsStr::from_bytes(parent));
    if let Err(e) = made {
        return classify(e.raw_os_error().unwrap_or(0));
    }
    open_close(p, CREATE_FLAGS, 0o644)
}

/// `lstat(path)`: Ok(()) when it exists, the errno otherwise.
#[inline]
fn lstat(p: &CStr) -> Result<(), i32> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `p` is NUL-terminated; `st` is writable storage for one `struct stat` (its
    // contents are never read).
    if unsafe { libc::lstat(p.as_ptr(), st.as_mut_ptr()) } == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

#[inline]
fn status(rc: libc::c_int) -> u8 {
    if rc == 0 {
        OK
    } else {
        classify(errno())
    }
}

/// `opendir`, `readdir` to the end, `closedir` (what `os.listdir` does; entries not stat'ed).
fn list_dir(path: &[u8]) -> u8 {
    match fs::read_dir(std::ffi::OsStr::from_bytes(path)) {
        Err(e) => classify(e.raw_os_error().unwrap_or(0)),
        Ok(entries) => {
            for entry in entries {
                if let Err(e) = entry {
                    return classify(e.raw_os_error().unwrap_or(0));
                }
            }
            OK
        }
    }
}

/// One operation; the outcome code, or `Broken` when it cannot be issued at all.
#[inline]
fn issue(op: u8, path: &[u8], target: Option<&[u8]>, a: &mut PathBuf0, b: &mut PathBuf0) -> Result<u8, Broken> {
    if op == LIST_DIR {
        if path.contains(&0) {
            return Err(Broken("ValueError: embedded null byte".into()));
        }
        return Ok(list_dir(path));
    }
    let p = a.c_str(path).ok_or_else(|| Broken("ValueError: embedded null byte".into()))?;
    Ok(match op {
        CREATE => create(p, path),
        OPEN => open_close(p, OPEN_FLAGS, 0),
        LIST_FILE | GETFILEINFO => match lstat(p) {
            Ok(()) => OK,
            Err(e) => classify(e),
        },
        // SAFETY: `p` is a valid NUL-terminated string that outlives the call.
        DELETE => status(unsafe { libc::unlink(p.as_ptr()) }),
        // SAFETY: as above.
        MKDIRS => status(unsafe { libc::mkdir(p.as_ptr(), 0o755) }),
        RENAME_FILE | RENAME_DIR => {
            let target = match target {
                Some(t) if !t.is_empty() => t,
                _ => return Err(Broken(format!("TypeError: rename (op {op}) without a target path"))),
            };
            let q = b.c_str(target).ok_or_else(|| Broken("ValueError: embedded null byte".into()))?;
            // as `PosixBackend.rename`: rename(2) would replace an existing target silently
            if lstat(q).is_ok() {
                if lstat(p).is_err() {
                    NOT_FOUND
                } else {
                    EXISTS
                }
            } else {
                // SAFETY: `p` and `q` are valid NUL-terminated strings that outlive the call.
                status(unsafe { libc::rename(p.as_ptr(), q.as_ptr()) })
            }
        }
        _ => return Err(Broken(format!("TypeError: no operation for op code {op}"))),
    })
}

/// How a lane ended.
enum End {
    Done,
    Stopped,
    Drift(i64),
    Failed(String),
}

struct Inputs<'a> {
    ops: &'a [u8],
    due: &'a [i64],
    paths: Paths<'a>,
    targets: Option<Paths<'a>>,
    /// the worker's gate and each event's position in it (lanes sharing hot objects' events)
    gate: Option<(&'a KeyGate, &'a [i64])>,
}

/// Wait until event `i`'s dependencies ended (`run.key_gate`); false when stopped meanwhile.
fn wait_gate(inp: &Inputs, i: usize, stop: &StopFlag) -> bool {
    let Some((gate, rows)) = inp.gate else { return true };
    let e = rows[i] as usize;
    let mut spins = 0u32;
    while !gate.ready(e) {
        if stop.stopped() {
            return false;
        }
        spins += 1;
        if spins < 64 {
            // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
            unsafe { libc::sched_yield() };
        } else {
            sleep_until(now_ns() + GATE_NAP_NS);
        }
    }
    true
}

#[inline]
fn end_gate(inp: &Inputs, i: usize) {
    if let Some((gate, rows)) = inp.gate {
        gate.end(rows[i] as usize);
    }
}

struct Pacing {
    origin_ns: i64,
    max_drift_ns: i64,
    paced: bool,
    spin_ns: i64,
}

/// Records operation `i` (started at `t0`, ended now) and publishes it; a broken backend ends
/// the lane (the operation counts as `other`, the other lanes are stopped).
#[inline]
fn record(
    out: &mut Outputs,
    progress: &LaneProgress,
    stop: &StopFlag,
    i: usize,
    t0: i64,
    r: Result<u8, Broken>,
) -> Option<End> {
    out.end[i] = now_ns();
    out.start[i] = t0;
    let end = match r {
        Ok(code) => {
            out.outcome[i] = code;
            None
        }
        Err(Broken(msg)) => {
            out.outcome[i] = OTHER;
            stop.set();
            Some(End::Failed(msg))
        }
    };
    progress.publish(i + 1);
    end
}

/// The lane (GIL released): returns how it ended and how many operations it recorded.
fn run(inp: &Inputs, out: &mut Outputs, pace: &Pacing, stop: &StopFlag, progress: &LaneProgress) -> (End, usize) {
    let n = inp.ops.len();
    let mut a = PathBuf0::new();
    let mut b = PathBuf0::new();
    let target = |i: usize| inp.targets.as_ref().map(|t| t.get(i));
    if !pace.paced {
        // time scale 0: wait for the barrier once, then back to back
        if now_ns() < pace.origin_ns && !wait_until(pace.origin_ns, stop, pace.spin_ns) {
            return (End::Stopped, 0);
        }
        for i in 0..n {
            if stop.stopped() || !wait_gate(inp, i, stop) {
                return (End::Stopped, i);
            }
            let t0 = now_ns();
            let r = issue(inp.ops[i], inp.paths.get(i), target(i), &mut a, &mut b);
            if let Some(end) = record(out, progress, stop, i, t0, r) {
                return (end, i + 1);
            }
            end_gate(inp, i);
        }
        return (End::Done, n);
    }
    for i in 0..n {
        if stop.stopped() {
            return (End::Stopped, i);
        }
        let due = pace.origin_ns + inp.due[i];
        let mut t0 = now_ns();
        if t0 < due {
            if !wait_until(due, stop, pace.spin_ns) {
                return (End::Stopped, i);
            }
            t0 = now_ns();
        } else if t0 - due > pace.max_drift_ns {
            stop.set(); // the other lanes stop too; nothing is recorded for this operation
            return (End::Drift(t0 - due), i);
        }
        if inp.gate.is_some_and(|(g, rows)| !g.ready(rows[i] as usize)) {
            if !wait_gate(inp, i, stop) {
                return (End::Stopped, i);
            }
            t0 = now_ns();
            if t0 - due > pace.max_drift_ns {
                stop.set();
                return (End::Drift(t0 - due), i);
            }
        }
        let r = issue(inp.ops[i], inp.paths.get(i), target(i), &mut a, &mut b);
        if let Some(end) = record(out, progress, stop, i, t0, r) {
            return (end, i + 1);
        }
        end_gate(inp, i);
    }
    (End::Done, n)
}

/// Replay one lane against the file system with the GIL released.
///
/// Inputs: `ops` (u8 op codes), `due_ns` (i64, relative to the barrier, time scale applied),
/// the lane's native paths (`offsets` i64 with n + 1 entries, `data` u8) and, when the lane has
/// renames, their targets (`offsets2`, `data2`; an empty target is a missing one). Outputs,
/// written in place: `start_ns`, `end_ns` (CLOCK_MONOTONIC ns) and `outcome` (0 = ok; only
/// entries below the returned count are meaningful; outcomes are always written).
///
/// Returns `(status, count, behind_ns, message)`: status `done`, `stopped` (the stop flag was
/// set), `drift` (more than `max_drift_ns` behind: `behind_ns`; nothing recorded for that
/// operation; the stop flag is set) or `failed` (an operation could not be issued: recorded as
/// `other`, the stop flag is set, `message` says why).
#[pyfunction]
#[pyo3(signature = (
    ops, due_ns, offsets, data, offsets2, data2, start_ns, end_ns, outcome, *,
    origin_ns, max_drift_ns, paced, spin_ns, stop, progress, gate=None, rows=None
))]
#[allow(clippy::too_many_arguments)]
fn run_posix_lane<'py>(
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
    origin_ns: i64,
    max_drift_ns: i64,
    paced: bool,
    spin_ns: i64,
    stop: &Bound<'py, StopFlag>,
    progress: &Bound<'py, LaneProgress>,
    gate: Option<&Bound<'py, KeyGate>>,
    rows: Option<PyReadonlyArray1<'py, i64>>,
) -> PyResult<(&'static str, usize, i64, String)> {
    let ops_s = ops.as_slice()?;
    let n = ops_s.len();
    let due_s = due_ns.as_slice()?;
    let (paths, targets) = Paths::lane(&offsets, &data, &offsets2, &data2, n)?;
    let mut out = Outputs { start: start_ns.as_slice_mut()?, end: end_ns.as_slice_mut()?, outcome: outcome.as_slice_mut()? };
    if due_s.len() != n || out.start.len() != n || out.end.len() != n || out.outcome.len() != n {
        return Err(PyValueError::new_err("ops, due_ns, start_ns, end_ns and outcome must have one entry per operation"));
    }
    let gate = match (gate, &rows) {
        (Some(g), Some(r)) => {
            let (g, r): (&KeyGate, &[i64]) = (g.get(), r.as_slice()?);
            if r.len() != n || r.iter().any(|&e| e < 0 || e as usize >= g.len()) {
                return Err(PyValueError::new_err("rows: one position in the gate per operation"));
            }
            Some((g, r))
        }
        (None, None) => None,
        _ => return Err(PyValueError::new_err("give both gate and rows, or neither")),
    };
    let inp = Inputs { ops: ops_s, due: due_s, paths, targets, gate };
    let pace = Pacing { origin_ns, max_drift_ns: max_drift_ns.max(0), paced, spin_ns: spin_ns.max(0) };
    let stop: &StopFlag = stop.get();
    let progress: &LaneProgress = progress.get();
    progress.publish(0);
    let (end, count) = py.detach(|| run(&inp, &mut out, &pace, stop, progress));
    progress.publish(count);
    Ok(match end {
        End::Done => ("done", count, 0, String::new()),
        End::Stopped => ("stopped", count, 0, String::new()),
        End::Drift(behind) => ("drift", count, behind, String::new()),
        End::Failed(msg) => ("failed", count, 0, msg),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_posix_lane, m)?)?;
    Ok(())
}
