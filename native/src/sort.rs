//! Sorting the schedule's event keys: one LSD radix sort (the `radsort` crate) in place, with the
//! GIL released. The generator packs each event's time, rank and position into distinct
//! non-negative 64-bit keys, so any correct sort gives the same order (`synth.schedule`).

use numpy::PyReadwriteArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Sort a contiguous int64 array in place.
#[pyfunction]
fn sort_keys(py: Python<'_>, mut keys: PyReadwriteArray1<'_, i64>) -> PyResult<()> {
    let slice = keys
        .as_slice_mut()
        .map_err(|_| PyValueError::new_err("sort_keys needs a contiguous int64 array"))?;
    py.detach(|| radsort::sort(slice));
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort_keys, m)?)?;
    Ok(())
}
