//! The native core of MimesisBench, an optional Python extension (`mimesisbench_native`):
//! the audit-log parser, the POSIX and HDFS replay lanes, the sort of the schedule's event keys and the
//! simulated NameNode's event loop.
//!
//! Each module owns one job and registers its functions here; the Python package works without
//! this extension (pure-Python paths stay as the reference) and uses it when it is installed.

use pyo3::prelude::*;

mod audit;
mod hdfs;
mod key_gate;
mod lane;
mod namenode;
mod posix;
mod simnn;
mod sort;

#[pymodule]
fn mimesisbench_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    audit::register(m)?;
    lane::register(m)?;
    key_gate::register(m)?;
    posix::register(m)?;
    hdfs::register(m)?;
    sort::register(m)?;
    simnn::register(m)?;
    Ok(())
}
