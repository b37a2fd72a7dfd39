//! Python bindings (`pfstune._pfsim`): a thin face over `Sim`; Python owns validation and units.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::config::Config;
use crate::engine::Sim;
use crate::forest::{NodeRecord, RowSplits};
use crate::parse::strerror;
use crate::probe::{Reader, Scalar, StatsRows};

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

    /// `reader.read()` with this simulation's parameter files for files: each device's "path"
    /// is `CLIENT:lctl name` (`3:osc.<device>.rpc_stats`). The text is what `get_param` gives
    /// and is parsed by the same code as a real client's files, without a string per file.
    fn read_stats<'py>(&self, py: Python<'py>, mut reader: PyRefMut<'py, StatsReader>) -> PyResult<Bound<'py, PyDict>> {
        let sim = &self.sim;
        let got = reader.reader.read_with(|path, buffer| {
            let not_found = || std::io::Error::from_raw_os_error(2);
            let (client, name) = path.split_once(':').ok_or_else(not_found)?;
            let client: usize = client.parse().map_err(|_| not_found())?;
            let text = sim.get_param(client, name).map_err(std::io::Error::from_raw_os_error)?;
            if buffer.len() < text.len() {
                buffer.resize(text.len(), 0);
            }
            buffer[..text.len()].copy_from_slice(text.as_bytes());
            Ok(text.len())
        });
        reading_dict(py, got, &reader.reader)
    }

    /// Write a value into one parameter file; OSError(errno) as write(2) would fail, whose
    /// strerror also says what the parameter accepts.
    fn set_param(&mut self, client: usize, name: &str, value: &str) -> PyResult<()> {
        let done = self.sim.set_param(client, name, value);
        done.map_err(|e| PyOSError::new_err((e, self.sim.refusal(client, name, e))))
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

    /// Per job, the simulated times (ns) at which all its ranks had passed each barrier (IOR).
    fn barrier_times(&self) -> Vec<Vec<u64>> {
        self.sim.barrier_times().to_vec()
    }

    /// Per job: the training steps each DLIO loader thread has ended (empty for other jobs).
    fn dlio_steps(&self) -> Vec<Vec<u64>> {
        self.sim.dlio_steps()
    }

    /// Per job: (bytes per timestep, times (ns) at which all ranks had finished each timestep)
    /// for h5bench jobs, `(0, [])` for the others.
    fn h5_timesteps(&self) -> Vec<(u64, Vec<u64>)> {
        self.sim.h5_timesteps()
    }

    /// Check internal invariants (for tests); raises ValueError naming the first violation.
    fn check_invariants(&self) -> PyResult<()> {
        self.sim.check_invariants().map_err(PyValueError::new_err)
    }
}

/// Reads and parses the statistics files of a client's devices in one call (`pfsim::probe`).
///
/// `StatsReader(devices, tunables)`: `devices` is `[(is_osc, [(param, path), ...]), ...]`,
/// `tunables` the one-line files that fill the table's tunables columns.  `read()` returns a
/// dict of plain lists and of native-endian arrays as bytes (`numpy.frombuffer`), laid out as
/// `pfstune.lustre.table` wants them; `pfstune.lustre.snapshot.Prober.probe_table` documents it.
#[pyclass(module = "pfstune._pfsim", unsendable)]
struct StatsReader {
    reader: Reader,
}

/// Native-endian bytes of numbers, for `numpy.frombuffer` (no unsafe casts: one copy).
fn ne_bytes<const N: usize, T: Copy>(values: &[T], to_bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * N);
    for &value in values {
        bytes.extend_from_slice(&to_bytes(value));
    }
    bytes
}

fn f64_bytes<'py>(py: Python<'py>, values: &[f64]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &ne_bytes(values, f64::to_ne_bytes))
}

fn i64_bytes<'py>(py: Python<'py>, values: &[i64]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &ne_bytes(values, i64::to_ne_bytes))
}

/// (present, start_time, line, samples, valued, min, max, sum) of one kind of stats file.
fn stats_tuple<'py>(py: Python<'py>, rows: &StatsRows, width: usize) -> PyResult<Bound<'py, PyTuple>> {
    let (line, samples, valued, lo, hi, sum) = rows.dense(width);
    let items: Vec<Bound<'py, PyAny>> = vec![
        PyBytes::new(py, &rows.present).into_any(),
        f64_bytes(py, &rows.start_time).into_any(),
        PyBytes::new(py, &line).into_any(),
        i64_bytes(py, &samples).into_any(),
        PyBytes::new(py, &valued).into_any(),
        i64_bytes(py, &lo).into_any(),
        i64_bytes(py, &hi).into_any(),
        i64_bytes(py, &sum).into_any(),
    ];
    PyTuple::new(py, items)
}

#[pymethods]
impl StatsReader {
    #[new]
    fn new(devices: Vec<(bool, Vec<(String, String)>)>, tunables: Vec<String>) -> Self {
        StatsReader { reader: Reader::new(devices, tunables) }
    }

    /// Read every file of every device now (the GIL is released while reading).
    fn read<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reader = &mut self.reader;
        let got = py.allow_threads(|| reader.read());
        reading_dict(py, got, &self.reader)
    }
}

/// What `StatsReader.read()` returns, from one reading of `reader`'s devices.
fn reading_dict<'py>(py: Python<'py>, got: crate::probe::Reading, reader: &Reader) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("status", PyBytes::new(py, &got.status))?;
    out.set_item("refused", got.refused)?;
    // One Python string per file name, shared by every device's dict.
    let names: Vec<Bound<'py, PyString>> = reader.param_names().iter().map(|name| PyString::new(py, name)).collect();
    let scalars = PyList::empty(py);
    for (status, values) in got.status.iter().zip(&got.scalars) {
        if *status != 0 {
            scalars.append(py.None())?;
            continue;
        }
        let d = PyDict::new(py);
        for (name, value) in values {
            match value {
                Scalar::Int(v) => d.set_item(&names[*name], *v)?,
                Scalar::Text(t) => d.set_item(&names[*name], t)?,
            }
        }
        scalars.append(d)?;
    }
    out.set_item("scalars", scalars)?;
    out.set_item("tunables", f64_bytes(py, &got.tunables))?;
    out.set_item("text_cells", got.text_cells)?;
    out.set_item("rpc_present", PyBytes::new(py, &got.rpc_present))?;
    out.set_item("rpc_start", f64_bytes(py, &got.rpc_start))?;
    out.set_item("rpc_lines", f64_bytes(py, &got.rpc_lines))?;
    out.set_item("hist", f64_bytes(py, &got.hist))?;
    let osc_names = &reader.osc_vocabulary.names;
    let llite_names = &reader.llite_vocabulary.names;
    out.set_item("osc_names", osc_names.clone())?;
    out.set_item("osc_stats", stats_tuple(py, &got.osc_stats, osc_names.len())?)?;
    out.set_item("llite_names", llite_names.clone())?;
    out.set_item("llite_stats", stats_tuple(py, &got.llite_stats, llite_names.len())?)?;
    Ok(out)
}

/// The leaves a row's own splits leave open in every tree of a compiled forest (`pfsim::forest`).
///
/// Built once per model from `pfstune.models.forest.CandidateForest`'s row splits;
/// `open_leaves(rows)` takes rows as native-endian float64 bytes (row-major, `columns` per row)
/// and returns the CSR arrays (indptr int64, indices int32, data float64) as bytes.
#[pyclass(module = "pfstune._pfsim", unsendable)]
struct LeafFinder {
    splits: RowSplits,
    columns: usize,
}

#[pymethods]
impl LeafFinder {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        leaves: usize,
        bits: usize,
        columns: usize,
        column: Vec<usize>,
        rank: Vec<i64>,
        default_left: Vec<bool>,
        zero: Vec<bool>,
        nan: Vec<bool>,
        cuts: Vec<(usize, Vec<f64>)>,
        trees: Vec<Vec<NodeRecord>>,
        values: Vec<f64>,
        zero_threshold: f64,
    ) -> PyResult<Self> {
        if trees.len().saturating_mul(leaves) >= i32::MAX as usize {
            return Err(PyValueError::new_err("too many leaves for int32 indices"));
        }
        let splits = RowSplits::new(
            leaves,
            bits,
            columns,
            column,
            rank,
            default_left,
            zero,
            nan,
            cuts,
            trees,
            values,
            zero_threshold,
        )
        .map_err(PyValueError::new_err)?;
        Ok(LeafFinder { splits, columns })
    }

    /// (indptr, indices, data) of the open leaves of each row in `rows`.
    fn open_leaves<'py>(
        &self,
        py: Python<'py>,
        rows: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        if !rows.len().is_multiple_of(8 * self.columns.max(1)) {
            return Err(PyValueError::new_err("rows are not whole rows of float64 values"));
        }
        let values: Vec<f64> = rows.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap_or([0; 8]))).collect();
        let open = self.splits.open_leaves(&values, self.columns);
        let indices = PyBytes::new(py, &ne_bytes(&open.indices, i32::to_ne_bytes));
        Ok((i64_bytes(py, &open.indptr), indices, f64_bytes(py, &open.data)))
    }
}

#[pymodule]
fn _pfsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<StatsReader>()?;
    m.add_class::<LeafFinder>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // the most grant an OSC asks for, which scenario validation checks `client_grant` against
    m.add("MAX_UNDIRTY", crate::model::MAX_UNDIRTY)?;
    Ok(())
}
