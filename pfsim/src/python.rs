//! Python bindings (`pfstune._pfsim`): a thin face over `Sim`; Python owns validation and units.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::config::Config;
use crate::engine::Sim;
use crate::parse::strerror;

/// A simulated Lustre cluster built from a resolved scenario (JSON).
#[pyclass(module = "pfstune._pfsim")]
struct Simulation {
    sim: Sim,
}

fn os_error(errno: i32) -> PyErr {
    PyOSError::new_err((errno, strerror(errno)))
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let cfg = Config::from_json(config_json).map_err(PyValueError::new_err)?;
        let sim = Sim::new(cfg).map_err(PyValueError::new_err)?;
        Ok(Simulation { sim })
    }

    /// Advance simulated time to `t_ns`, processing every event on the way.
    fn run_until(&mut self, py: Python<'_>, t_ns: u64) {
        let sim = &mut self.sim;
        py.allow_threads(|| sim.run_until(t_ns));
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.sim.now
    }

    #[getter]
    fn events(&self) -> u64 {
        self.sim.events
    }

    /// The client nodes and their device names.
    fn clients<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for c in &self.sim.clients {
            let d = PyDict::new(py);
            d.set_item("index", c.index)?;
            d.set_item("hostname", format!("client{}", c.index))?;
            d.set_item("llite", self.sim.llite_name(c.index as usize))?;
            let oscs: Vec<String> = c.oscs.iter().map(|&o| self.sim.oscs[o as usize].name.clone()).collect();
            d.set_item("osc", oscs)?;
            d.set_item("mdc", vec![format!("{}-MDT0000-mdc-{:016x}", self.sim.cfg.cluster.fsname, c.instance)])?;
            out.push(d);
        }
        Ok(out)
    }

    /// (relative path, lctl name, writable) of every parameter file of one client.
    fn list_params(&self, client: usize) -> PyResult<Vec<(String, String, bool)>> {
        if client >= self.sim.clients.len() {
            return Err(PyValueError::new_err(format!("no client {client}")));
        }
        Ok(self.sim.list_params(client).into_iter().map(|p| (p.path, p.name, p.writable)).collect())
    }

    /// The text of one parameter file (exact device name, no globs).
    fn get_param(&self, client: usize, name: &str) -> PyResult<String> {
        self.sim.get_param(client, name).map_err(os_error)
    }

    /// Write a value into one parameter file; OSError(errno) as write(2) would fail.
    fn set_param(&mut self, client: usize, name: &str, value: &str) -> PyResult<()> {
        self.sim.set_param(client, name, value).map_err(os_error)
    }

    /// Whole-run byte and event counts over all clients.
    fn totals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.sim.totals();
        let d = PyDict::new(py);
        d.set_item("sim_ns", t.sim_ns)?;
        d.set_item("events", t.events)?;
        d.set_item("app_read_bytes", t.app_read_bytes)?;
        d.set_item("app_write_bytes", t.app_write_bytes)?;
        d.set_item("osc_read_bytes", t.osc_read_bytes)?;
        d.set_item("osc_write_bytes", t.osc_write_bytes)?;
        Ok(d)
    }

    /// Check internal invariants (for tests); raises ValueError naming the first violation.
    fn check_invariants(&self) -> PyResult<()> {
        self.sim.check_invariants().map_err(PyValueError::new_err)
    }
}

#[pymodule]
fn _pfsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
