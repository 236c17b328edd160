//! What every native replay lane shares: the stop flag of a worker, a lane's published count,
//! the Arrow-layout path buffers, the output arrays and the clock (CLOCK_MONOTONIC, Python's `time.monotonic_ns`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A stop request shared by the lanes of one worker (set by Python's `StopSignal`, or by a lane
/// that fell too far behind).
#[pyclass(frozen, module = "mimesisbench_native")]
pub struct StopFlag {
    flag: AtomicBool,
}

#[pymethods]
impl StopFlag {
    #[new]
    fn new() -> Self {
        StopFlag { flag: AtomicBool::new(false) }
    }

    /// Ask every lane using this flag to stop (idempotent).
    pub(crate) fn set(&self) {
        self.flag.store(true, Ordering::Release);
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

impl StopFlag {
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// How many operations of one lane are fully recorded (a prefix of the lane), readable while
/// the lane runs.
#[pyclass(frozen, module = "mimesisbench_native")]
pub struct LaneProgress {
    count: AtomicUsize,
}

#[pymethods]
impl LaneProgress {
    #[new]
    fn new() -> Self {
        LaneProgress { count: AtomicUsize::new(0) }
    }

    /// Operations issued and recorded so far.
    #[getter]
    fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

impl LaneProgress {
    #[inline]
    pub(crate) fn count_now(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn publish(&self, n: usize) {
        // Release: the samples below `n` were written before the count that exposes them
        self.count.store(n, Ordering::Release);
    }
}

/// Paths in the Arrow binary layout: `bytes[offsets[i]..offsets[i + 1]]` is path `i`.
pub(crate) struct Paths<'a> {
    offsets: &'a [i64],
    bytes: &'a [u8],
}

impl<'a> Paths<'a> {
    pub(crate) fn new(offsets: &'a [i64], bytes: &'a [u8], n: usize, what: &str) -> PyResult<Self> {
        if offsets.len() != n + 1 {
            return Err(PyValueError::new_err(format!("{what}: {} offsets for {n} paths", offsets.len())));
        }
        let mut prev = 0i64;
        for &o in offsets {
            if o < prev || o as u64 > bytes.len() as u64 {
                return Err(PyValueError::new_err(format!("{what}: offsets out of order or out of range")));
            }
            prev = o;
        }
        Ok(Paths { offsets, bytes })
    }

    /// A lane's paths and, when it has renames, their targets (both arrays or neither).
    #[allow(clippy::type_complexity)]
    pub(crate) fn lane(
        offsets: &'a PyReadonlyArray1<'_, i64>,
        data: &'a PyReadonlyArray1<'_, u8>,
        offsets2: &'a Option<PyReadonlyArray1<'_, i64>>,
        data2: &'a Option<PyReadonlyArray1<'_, u8>>,
        n: usize,
    ) -> PyResult<(Paths<'a>, Option<Paths<'a>>)> {
        let paths = Paths::new(offsets.as_slice()?, data.as_slice()?, n, "paths")?;
        let targets = match (offsets2, data2) {
            (Some(o), Some(d)) => Some(Paths::new(o.as_slice()?, d.as_slice()?, n, "rename targets")?),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("give both offsets2 and data2, or neither")),
        };
        Ok((paths, targets))
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> &'a [u8] {
        // checked in `new`: monotonic offsets within `bytes`
        &self.bytes[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// What a lane records per operation, in the lane's numpy arrays (written in place).
pub(crate) struct Outputs<'a> {
    pub(crate) start: &'a mut [i64],
    pub(crate) end: &'a mut [i64],
    pub(crate) outcome: &'a mut [u8],
}

/// CLOCK_MONOTONIC in ns (Python's `time.monotonic_ns`).
#[inline]
#[allow(clippy::unnecessary_cast)] // time_t and c_long are 32-bit on some targets
pub(crate) fn now_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StopFlag>()?;
    m.add_class::<LaneProgress>()?;
    Ok(())
}
