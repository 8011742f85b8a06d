#![allow(unexpected_cfgs)] // pyo3 0.22 macros test a cfg newer compilers do not know
#![allow(clippy::useless_conversion)] // in the expansion of pyo3 0.22's #[pyfunction] returning PyResult
//! Python bindings for mpsim-core: converts types and errors, nothing else.
//!
//! The Python package (`python/mpsim`) does everything user-facing; this module only parses a
//! scenario, runs it (with schedulers and controllers written in Python, see `bridge`) and
//! hands back plain Python objects.

mod bridge;
mod columns;
mod views;

use bridge::{Fault, PluginError, PyController, PyReceiverLogic, PyScheduler};
use mpsim_core::cc::Controller;
use mpsim_core::metrics::{Column, Summary, Table};

/// Flows a summary file holds at most (`summary_brief`); the rest are in the flows table.
const SUMMARY_FLOWS: usize = 1_000;
use mpsim_core::sched::Sched;
use mpsim_core::{Scenario, ScenarioError as CoreScenarioError, Simulation};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

create_exception!(mpsim._core, ScenarioError, PyValueError, "A scenario is invalid: args are (origin, key, message).");

fn scenario_error(e: CoreScenarioError) -> PyErr {
    ScenarioError::new_err((e.origin, e.key, e.message))
}

/// A scenario the core has read and validated (`parse`): `check` and `run` take it instead of
/// the JSON text, so a scenario checked before its run is read once.
#[pyclass(frozen, module = "mpsim._core", name = "Scenario")]
struct ParsedScenario(Scenario);

/// Reads and validates a scenario given as JSON; *origin* names it in errors.
#[pyfunction]
fn parse(scenario_json: &str, origin: &str) -> PyResult<ParsedScenario> {
    Scenario::from_json(scenario_json, origin).map(ParsedScenario).map_err(scenario_error)
}

/// A scenario argument: one `parse` made, or JSON text read here.
enum ScenarioArg<'a> {
    Parsed(&'a Scenario),
    Read(Box<Scenario>),
}

impl std::ops::Deref for ScenarioArg<'_> {
    type Target = Scenario;
    fn deref(&self) -> &Scenario {
        match self {
            ScenarioArg::Parsed(s) => s,
            ScenarioArg::Read(s) => s,
        }
    }
}

fn scenario_arg<'a>(arg: &'a Bound<'_, PyAny>, origin: &str) -> PyResult<ScenarioArg<'a>> {
    if let Ok(parsed) = arg.downcast::<ParsedScenario>() {
        return Ok(ScenarioArg::Parsed(&parsed.get().0));
    }
    let text = arg.downcast::<pyo3::types::PyString>()?.to_str()?;
    Ok(ScenarioArg::Read(Box::new(Scenario::from_json(text, origin).map_err(scenario_error)?)))
}

/// The summary of a run, kept in the core until asked for: its JSON text, the short summary
/// of a run of many flows and the flows as Arrow columns are each made when asked for (a run
/// of 100,000 flows saved as tables needs the last two only; a sweep, the text only).
#[pyclass(frozen, module = "mpsim._core", name = "RunSummary")]
struct RunSummary(Summary);

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl RunSummary {
    /// The summary as JSON text: only what the scenario and seed determine.
    fn json(&self) -> PyResult<String> {
        to_json(&self.0)
    }

    /// With more than 1,000 flows, the summary as JSON text with the first 1,000 flows and
    /// `flows_omitted`, how many more there are; None with fewer.
    fn brief(&self) -> PyResult<Option<String>> {
        let sum = &self.0;
        if sum.flows.len() <= SUMMARY_FLOWS {
            return Ok(None);
        }
        let brief = Summary {
            scenario: sum.scenario.clone(),
            seed: sum.seed,
            duration_s: sum.duration_s,
            warmup_s: sum.warmup_s,
            flows: sum.flows[..SUMMARY_FLOWS].to_vec(),
            flows_omitted: Some((sum.flows.len() - SUMMARY_FLOWS) as u64),
            links: sum.links.clone(),
            jain_index: sum.jain_index,
            events: sum.events,
            packets_delivered: sum.packets_delivered,
            wall_s: sum.wall_s,
        };
        to_json(&brief).map(Some)
    }

    /// The flows as Arrow columns (see `columns`).
    fn flows_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        columns::flows_columns(py, &self.0.flows)
    }

    /// The number of flows.
    fn __len__(&self) -> usize {
        self.0.flows.len()
    }
}

/// A table's columns as Arrow buffers, without a Python object per value: a dict of column
/// name to `(kind, values, offsets)`. Kinds: "f64" (little-endian doubles), "u64" (64-bit
/// integers, read as int64), "str" (UTF-8 bytes and n + 1 int32 offsets, Arrow's `string`
/// layout) or "large_str" (int64 offsets, for more than 2 GiB of text); offsets is None for
/// numbers. `mpsim.stream.arrow_table` makes a pyarrow table of it.
fn table_to_arrow<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyDict>> {
    fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.len() * N);
        for &x in v {
            out.extend_from_slice(&f(x));
        }
        out
    }
    let d = PyDict::new_bound(py);
    for (name, col) in &t.columns {
        let bytes = |b: &[u8]| PyBytes::new_bound(py, b);
        let entry = match col {
            Column::F64(v) => ("f64", bytes(&le_bytes(v, f64::to_le_bytes)), None),
            Column::U64(v) => ("u64", bytes(&le_bytes(v, u64::to_le_bytes)), None),
            Column::Str(v) => {
                let total: usize = v.iter().map(String::len).sum();
                let mut data = Vec::with_capacity(total);
                for s in v {
                    data.extend_from_slice(s.as_bytes());
                }
                let mut at = 0u64;
                let ends = std::iter::once(0).chain(v.iter().map(|s| {
                    at += s.len() as u64;
                    at
                }));
                if total <= i32::MAX as usize {
                    let offsets: Vec<i32> = ends.map(|e| e as i32).collect();
                    ("str", bytes(&data), Some(bytes(&le_bytes(&offsets, i32::to_le_bytes))))
                } else {
                    let offsets: Vec<i64> = ends.map(|e| e as i64).collect();
                    ("large_str", bytes(&data), Some(bytes(&le_bytes(&offsets, i64::to_le_bytes))))
                }
            }
        };
        d.set_item(name, entry)?;
    }
    Ok(d)
}

/// Validates a scenario given as JSON (or made by `parse`); returns a short description of it
/// and the estimated cost of running it (with its series and trace streamed if `stream`).
#[pyfunction]
#[pyo3(signature = (scenario, origin, stream=false))]
fn check(py: Python<'_>, scenario: &Bound<'_, PyAny>, origin: &str, stream: bool) -> PyResult<PyObject> {
    let s = scenario_arg(scenario, origin)?;
    let d = PyDict::new_bound(py);
    d.set_item("name", &s.name)?;
    d.set_item("duration_s", s.duration.as_secs_f64())?;
    d.set_item("seed", s.seed)?;
    d.set_item("links", s.links.iter().map(|l| l.name.clone()).collect::<Vec<_>>())?;
    d.set_item("paths", s.paths.iter().map(|p| p.name.clone()).collect::<Vec<_>>())?;
    d.set_item("flows", s.flows.iter().map(|f| f.name.clone()).collect::<Vec<_>>())?;
    let e = mpsim_core::estimate::estimate_with(&s, stream);
    let est = PyDict::new_bound(py);
    for (k, v) in [
        ("events", e.events),
        ("packets", e.packets),
        ("memory_bytes", e.memory_bytes),
        ("state_bytes", e.state_bytes),
        ("series_bytes", e.series_bytes),
        ("trace_bytes", e.trace_bytes),
        ("series_rows", e.series_rows),
        ("trace_rows", e.trace_rows),
        ("series_values", e.series_values),
        ("trace_values", e.trace_values),
        ("top_flow_events", e.top_flow_events),
        ("top_link_events", e.top_link_events),
        ("sample_events", e.sample_events),
    ] {
        est.set_item(k, v)?;
    }
    est.set_item("top_flow", &e.top_flow)?;
    est.set_item("top_link", &e.top_link)?;
    d.set_item("estimate", est)?;
    Ok(d.into())
}

/// A scheduler or controller written in Python for one flow: (flow name, "scheduler" or
/// "cc", the name it goes by, a callable that makes one instance).
type Plugin = (String, String, String, PyObject);

/// Installs the Python schedulers (one instance per connection) and controllers (one per
/// subflow) in `sim`.
fn install(
    py: Python<'_>,
    s: &Scenario,
    origin: &str,
    mut sim: Simulation,
    plugins: Vec<Plugin>,
    fault: &Arc<Fault>,
) -> PyResult<Simulation> {
    for (flow, kind, name, make) in plugins {
        let spec = s.flows.iter().find(|f| f.name == flow).ok_or_else(|| PyValueError::new_err(format!("no flow named '{flow}'")))?;
        sim = match kind.as_str() {
            "scheduler" => {
                let sched = PyScheduler::new(make.bind(py).call0()?, &name, fault.clone())?;
                sim.with_scheduler(&flow, Sched::Custom(Box::new(sched)))
            }
            "cc" => {
                let mut ccs = (0..spec.paths.len())
                    .map(|_| PyController::new(make.bind(py).call0()?, &name, fault.clone()))
                    .collect::<PyResult<Vec<_>>>()?;
                ccs.reverse();
                sim.with_controller(&flow, || match ccs.pop() {
                    Some(c) => Controller::Custom(Box::new(c)),
                    // one object per path was made: more subflows than paths cannot happen
                    None => Controller::by_name("reno").expect("built-in"),
                })
            }
            "receiver" => {
                let logic = PyReceiverLogic::new(make.bind(py).call0()?, &name, spec.paths.len(), fault.clone())?;
                sim.with_receiver_logic(&flow, mpsim_core::feedback::RxLogic::Custom(Box::new(logic)))
            }
            other => return Err(PyValueError::new_err(format!("unknown plug-in kind '{other}'"))),
        }
        .map_err(PyValueError::new_err)?;
    }
    // a "module:Class" name left without its implementation: the core refuses to run it
    if let Some((flow, kind, name)) = sim.pending_components().first() {
        let i = s.flows.iter().position(|f| &f.name == flow).unwrap_or(0);
        let msg = format!("'{name}' is written in Python: run the scenario through mpsim.run, which imports it");
        return Err(ScenarioError::new_err((origin.to_string(), format!("flow[{i}].{kind}"), msg)));
    }
    Ok(sim)
}

/// Runs a scenario given as JSON (or made by `parse`). `progress`, if given, is called with the fraction done;
/// `plugins` are schedulers and controllers written in Python, installed before the run.
/// `sink`, if given, receives the series and the trace while the run goes on, as
/// `sink(table_name, columns, kinds)` with chunks of `chunk_rows` rows or more (columns: a
/// dict of lists; kinds: "f64", "u64" or "str" per column); an exception it raises stops the
/// run and propagates.
/// Returns a dict: summary (a `RunSummary`), run_info (wall time), flow_series, link_series,
/// trace (dicts of lists, or None for the trace when not recorded and for every one streamed).
#[pyfunction]
#[pyo3(signature = (scenario, origin, progress=None, plugins=None, sink=None, chunk_rows=mpsim_core::metrics::CHUNK_ROWS))]
fn run(
    py: Python<'_>,
    scenario: &Bound<'_, PyAny>,
    origin: &str,
    progress: Option<PyObject>,
    plugins: Option<Vec<Plugin>>,
    sink: Option<PyObject>,
    chunk_rows: usize,
) -> PyResult<PyObject> {
    let s = scenario_arg(scenario, origin)?;
    let fault = Arc::new(Fault::default());
    let mut sim = install(py, &s, origin, Simulation::new(&s), plugins.unwrap_or_default(), &fault)?;
    // the first error of the sink; later chunks are dropped and the run stops at its next
    // progress step
    let sink_error: Arc<std::sync::Mutex<Option<PyErr>>> = Arc::default();
    if let Some(sink) = sink {
        let failed = sink_error.clone();
        sim = sim.stream(
            Box::new(move |which, table| {
                let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                if failed.is_some() {
                    return;
                }
                Python::with_gil(|py| {
                    let called = table_to_arrow(py, &table).and_then(|cols| sink.call1(py, (which.name(), cols)));
                    if let Err(e) = called {
                        *failed = Some(e);
                    }
                })
            }),
            chunk_rows,
        );
    }
    let mut interrupted: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        sim.run_with_progress(|frac| {
            // an error in user code, or in writing a streamed table, stops the run here
            if fault.is_set() || sink_error.lock().map_or(true, |e| e.is_some()) {
                return false;
            }
            Python::with_gil(|py| {
                // keep the first error: a later one must not hide it
                if interrupted.is_some() {
                    return false;
                }
                if let Err(e) = py.check_signals() {
                    interrupted = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    if let Err(e) = cb.call1(py, (frac,)) {
                        interrupted = Some(e);
                        return false;
                    }
                }
                true
            })
        })
    });
    if let Some(e) = fault.take() {
        return Err(e);
    }
    if let Some(e) = interrupted {
        return Err(e);
    }
    if let Some(e) = sink_error.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(e);
    }
    let d = PyDict::new_bound(py);
    let wall_s = out.summary.wall_s;
    // what the machine, not the scenario, determines: kept out of the summary
    let run_info = PyDict::new_bound(py);
    run_info.set_item("wall_s", wall_s)?;
    d.set_item("run_info", run_info)?;
    let tables = [
        ("flow_series", Some(&out.flow_series)),
        ("subflow_series", Some(&out.subflow_series)),
        ("link_series", Some(&out.link_series)),
        ("trace", out.trace.as_ref()),
    ];
    for (name, table) in tables {
        match table.filter(|_| !out.streamed) {
            Some(t) => d.set_item(name, table_to_arrow(py, t)?)?,
            None => d.set_item(name, py.None())?,
        }
    }
    d.set_item("streamed", out.streamed)?;
    let pcap = pyo3::types::PyList::empty_bound(py);
    for f in &out.pcap {
        pcap.append((f.flow.as_str(), pyo3::types::PyBytes::new_bound(py, &f.bytes), f.packets, f.dropped))?;
    }
    d.set_item("pcap", pcap)?;
    let qlog = pyo3::types::PyList::empty_bound(py);
    for (flow, text) in &out.qlog {
        qlog.append((flow.as_str(), text.as_str()))?;
    }
    d.set_item("qlog", qlog)?;
    d.set_item("summary", Bound::new(py, RunSummary(out.summary))?)?;
    Ok(d.into())
}

/// The built-in components: (kind, name, one-line description).
#[pyfunction]
fn components() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for (n, d) in mpsim_core::cc::CONTROLLERS {
        v.push(("cc", *n, *d));
    }
    for (n, d) in mpsim_core::sched::SCHEDULERS {
        v.push(("scheduler", *n, *d));
    }
    for (n, d) in mpsim_core::feedback::RECEIVER_LOGICS {
        v.push(("receiver", *n, *d));
    }
    for (n, d) in mpsim_core::transport::sctp::SCTP_CONTROLLERS {
        v.push(("sctp_cc", *n, *d));
    }
    for n in mpsim_core::transport::sctp::SCTP_SCHEDULERS {
        let d = mpsim_core::sched::SCHEDULERS.iter().find(|(m, _)| m == n).map_or("", |(_, d)| *d);
        v.push(("sctp_scheduler", *n, d));
    }
    for (n, _, d) in mpsim_core::transport::sctp::RTX_POLICIES {
        v.push(("rtx_policy", *n, *d));
    }
    for (n, d) in mpsim_core::scenario::LOSS_MODELS {
        v.push(("loss", *n, *d));
    }
    for (n, d) in mpsim_core::scenario::APPS {
        v.push(("app", *n, *d));
    }
    for (n, d) in mpsim_core::net::aqm::AQMS {
        v.push(("aqm", *n, *d));
    }
    for (n, _, d) in mpsim_core::scenario::TOPOLOGIES {
        v.push(("topology", *n, *d));
    }
    for (n, d) in mpsim_core::scenario::MATRICES {
        v.push(("matrix", *n, *d));
    }
    v
}

/// Reads a Mahimahi delivery trace with the simulator's own reader: its timestamps in
/// milliseconds. Raises ValueError naming the file and, for a bad line, its number.
#[pyfunction]
fn read_link_trace(path: &str) -> PyResult<Vec<u64>> {
    mpsim_core::net::LinkTrace::read(std::path::Path::new(path), path)
        .map(|t| t.millis().collect())
        .map_err(|e| PyValueError::new_err(format!("{path}: {e}")))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_class::<ParsedScenario>()?;
    m.add_class::<RunSummary>()?;
    m.add_function(wrap_pyfunction!(read_link_trace, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    m.add("ScenarioError", m.py().get_type_bound::<ScenarioError>())?;
    m.add("PluginError", m.py().get_type_bound::<PluginError>())?;
    views::register(m)?;
    m.add("CHUNK_ROWS", mpsim_core::metrics::CHUNK_ROWS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
