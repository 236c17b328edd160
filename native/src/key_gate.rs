//! Dependency-only ordering across the native lanes of one worker: the twin of
//! `mimesisbench/run/key_gate.py` (which computes the requirements this gate is built from and
//! documents the rule). Per object, the count of its events (in schedule order) that have ended
//! (the done prefix), advanced without a lock: an event marks itself ended, then whoever finds the
//! next event of the prefix ended moves the prefix on (compare-and-swap, so two lanes never skip
//! or repeat a step).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The gate shared by a worker's native lanes (built once, before the barrier).
#[pyclass(frozen, module = "mimesisbench_native")]
pub struct KeyGate {
    key: Vec<u32>,
    need: Vec<u32>,
    offsets: Vec<u32>,
    events: Vec<u32>,
    done: Vec<AtomicU32>,
    ended: Vec<AtomicBool>,
}

#[pymethods]
impl KeyGate {
    /// From `run.key_gate.requirements`: each event's object and needed done prefix, and each
    /// object's events in order (`events[offsets[k]:offsets[k + 1]]`).
    #[new]
    fn new(
        key: PyReadonlyArray1<'_, i64>,
        need: PyReadonlyArray1<'_, i64>,
        offsets: PyReadonlyArray1<'_, i64>,
        events: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Self> {
        let as_u32 = |a: &[i64], what: &str| -> PyResult<Vec<u32>> {
            a.iter()
                .map(|&v| u32::try_from(v).map_err(|_| PyValueError::new_err(format!("{what}: {v} out of range"))))
                .collect()
        };
        let key = as_u32(key.as_slice()?, "key")?;
        let need = as_u32(need.as_slice()?, "need")?;
        let offsets = as_u32(offsets.as_slice()?, "offsets")?;
        let events = as_u32(events.as_slice()?, "events")?;
        let objects = offsets.len().saturating_sub(1);
        let n = key.len();
        let valid = need.len() == n
            && events.len() == n
            && offsets.first() == Some(&0)
            && offsets.last().map(|&o| o as usize) == Some(n)
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && key.iter().all(|&k| (k as usize) < objects)
            && events.iter().all(|&e| (e as usize) < n);
        if !valid {
            return Err(PyValueError::new_err("key, need, offsets and events do not describe one worker's events"));
        }
        Ok(KeyGate {
            key,
            need,
            offsets,
            events,
            done: (0..objects).map(|_| AtomicU32::new(0)).collect(),
            ended: (0..n).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// Events the gate orders.
    fn __len__(&self) -> usize {
        self.key.len()
    }
}

impl KeyGate {
    /// True when event `e` may go (`e` < len: checked by the lane before the replay).
    #[inline]
    pub(crate) fn ready(&self, e: usize) -> bool {
        self.done[self.key[e] as usize].load(Ordering::Acquire) >= self.need[e]
    }

    pub(crate) fn len(&self) -> usize {
        self.key.len()
    }

    /// Event `e` ended: move its object's done prefix over every ended event. Sequentially
    /// consistent throughout: a lane that marks its event ended and then reads the prefix, and a
    /// lane that moves the prefix and then reads that mark, cannot both miss the other (with
    /// acquire/release alone both could, and the prefix would stop short of an ended event).
    pub(crate) fn end(&self, e: usize) {
        self.ended[e].store(true, Ordering::SeqCst);
        let k = self.key[e] as usize;
        let base = self.offsets[k] as usize;
        let size = self.offsets[k + 1] - self.offsets[k];
        let done = &self.done[k];
        let mut p = done.load(Ordering::SeqCst);
        while p < size && self.ended[self.events[base + p as usize] as usize].load(Ordering::SeqCst) {
            match done.compare_exchange(p, p + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => p += 1,
                Err(now) => p = now, // another lane moved it: go on from there
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KeyGate>()?;
    Ok(())
}
