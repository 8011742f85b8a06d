//! Read-only Python views of what a scheduler or a congestion controller sees, with the field
//! names and units of the core's types: sizes in bytes, times and durations in integer
//! nanoseconds, `None` where the core has no value yet (no RTT sample).

use mpsim_core::cc::{AckContext, LossContext, SubflowState, Window};
use mpsim_core::sched::{backups_in_use, CaState, SchedContext, SubflowView};
use mpsim_core::time::Dur;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn ns(d: Option<Dur>) -> Option<u64> {
    d.map(|d| d.0)
}

/// The name of a congestion-avoidance state, as Python sees it.
pub fn ca_state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

/// One subflow as a scheduler sees it (`mpsim_core::sched::SubflowView`). Read-only from
/// Python; the bridge refills an object nobody else holds instead of making a new one.
#[pyclass(module = "mpsim._core", name = "SubflowView")]
pub struct PySubflowView(pub SubflowView);

#[pymethods]
impl PySubflowView {
    /// Smoothed RTT, ns (None before the first sample).
    #[getter]
    fn srtt(&self) -> Option<u64> {
        ns(self.0.srtt)
    }
    #[getter]
    fn latest_rtt(&self) -> Option<u64> {
        ns(self.0.latest_rtt)
    }
    #[getter]
    fn rtt_samples(&self) -> u64 {
        self.0.rtt_samples
    }
    #[getter]
    fn rttvar(&self) -> u64 {
        self.0.rttvar.0
    }
    #[getter]
    fn min_rtt(&self) -> Option<u64> {
        ns(self.0.min_rtt)
    }
    #[getter]
    fn rto(&self) -> u64 {
        self.0.rto.0
    }
    #[getter]
    fn cwnd(&self) -> u64 {
        self.0.cwnd
    }
    #[getter]
    fn ssthresh(&self) -> u64 {
        self.0.ssthresh
    }
    #[getter]
    fn mss(&self) -> u64 {
        self.0.mss
    }
    #[getter]
    fn in_flight(&self) -> u64 {
        self.0.in_flight
    }
    #[getter]
    fn queued(&self) -> u64 {
        self.0.queued
    }
    /// "open", "cwr" (reducing after an ECN echo), "recovery" or "loss".
    #[getter]
    fn ca_state(&self) -> &'static str {
        ca_state_name(self.0.ca_state)
    }
    #[getter]
    fn backup(&self) -> bool {
        self.0.backup
    }
    #[getter]
    fn usable(&self) -> bool {
        self.0.usable
    }
    #[getter]
    fn segments_sent(&self) -> u64 {
        self.0.segments_sent
    }
    #[getter]
    fn retransmits(&self) -> u64 {
        self.0.retransmits
    }
    fn has_cwnd_room(&self) -> bool {
        self.0.has_cwnd_room()
    }
    fn available(&self) -> bool {
        self.0.available()
    }
    fn eligible(&self, backups: bool) -> bool {
        self.0.eligible(backups)
    }
    fn srtt_or_max(&self) -> u64 {
        self.0.srtt_or_max().0
    }
    fn loss_estimate(&self) -> f64 {
        self.0.loss_estimate()
    }
    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

/// What a scheduler sees of the connection (`mpsim_core::sched::SchedContext`). Read-only
/// from Python; the bridge refills one that nobody else holds (see `SchedViews`).
#[pyclass(module = "mpsim._core", name = "SchedContext")]
pub struct PySchedContext {
    views: Vec<SubflowView>,
    subflows: Py<PyTuple>,
    #[pyo3(get)]
    now: u64,
    #[pyo3(get)]
    unscheduled: u64,
    #[pyo3(get)]
    window_room: u64,
    #[pyo3(get)]
    next_len: u64,
    #[pyo3(get)]
    next_priority: u8,
    #[pyo3(get)]
    hol_subflow: Option<usize>,
    #[pyo3(get)]
    hol_sent_on: u64,
    #[pyo3(get)]
    send_window: u64,
}

impl PySchedContext {
    fn fill(&mut self, c: &SchedContext<'_>) {
        self.views.clear();
        self.views.extend_from_slice(c.subflows);
        self.now = c.now.0;
        self.unscheduled = c.unscheduled;
        self.window_room = c.window_room;
        self.next_len = c.next_len;
        self.next_priority = c.next_priority;
        self.hol_subflow = c.hol_subflow;
        self.hol_sent_on = c.hol_sent_on;
        self.send_window = c.send_window;
    }
}

#[pymethods]
impl PySchedContext {
    /// The subflows, in the order of the flow's `paths`.
    #[getter]
    fn subflows(&self, py: Python<'_>) -> Py<PyTuple> {
        self.subflows.clone_ref(py)
    }
    /// The backup rule: True when no regular subflow is usable, so backups may carry data.
    fn backups_in_use(&self) -> bool {
        backups_in_use(&self.views)
    }
}

/// The context objects a scheduler is handed, kept between calls: when user code kept no
/// reference to them (reference counts show it), they are refilled in place, which spares
/// four allocations per call; otherwise new ones are made, so a view user code kept never
/// changes under it.
#[derive(Default)]
pub struct SchedViews {
    cached: Option<(Py<PySchedContext>, Vec<Py<PySubflowView>>)>,
}

impl SchedViews {
    pub fn get<'py>(&mut self, py: Python<'py>, c: &SchedContext<'_>) -> PyResult<Bound<'py, PySchedContext>> {
        if let Some((ctx, views)) = &self.cached {
            let b = ctx.bind(py);
            // held only by this cache; the tuple only by the context; each view by the
            // tuple and this cache
            if ctx.get_refcnt(py) == 1 && views.len() == c.subflows.len() {
                let mut m = b.borrow_mut();
                if m.subflows.get_refcnt(py) == 1 && views.iter().all(|v| v.get_refcnt(py) == 2) {
                    for (v, x) in views.iter().zip(c.subflows) {
                        v.bind(py).borrow_mut().0 = *x;
                    }
                    m.fill(c);
                    drop(m);
                    return Ok(b.clone());
                }
            }
        }
        let views = c.subflows.iter().map(|v| Py::new(py, PySubflowView(*v))).collect::<PyResult<Vec<_>>>()?;
        let tuple = PyTuple::new_bound(py, views.iter().map(|v| v.clone_ref(py))).unbind();
        let mut ctx = PySchedContext {
            views: Vec::with_capacity(c.subflows.len()),
            subflows: tuple,
            now: 0,
            unscheduled: 0,
            window_room: 0,
            next_len: 0,
            next_priority: 0,
            hol_subflow: None,
            hol_sent_on: 0,
            send_window: 0,
        };
        ctx.fill(c);
        let b = Bound::new(py, ctx)?;
        self.cached = Some((b.clone().unbind(), views));
        Ok(b)
    }
}

/// Congestion window, slow-start threshold and segment size, bytes (`mpsim_core::cc::Window`).
#[pyclass(module = "mpsim._core", name = "Window")]
#[derive(Clone, Copy)]
pub struct PyWindow {
    pub w: Window,
}

fn bytes_arg(field: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    v.extract::<u64>().map_err(|_| {
        PyValueError::new_err(format!(
            "Window.{field} must be a whole number of bytes >= 0, got {}",
            v.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

#[pymethods]
impl PyWindow {
    #[new]
    fn new(cwnd: &Bound<'_, PyAny>, ssthresh: &Bound<'_, PyAny>, mss: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyWindow {
            w: Window { cwnd: bytes_arg("cwnd", cwnd)?, ssthresh: bytes_arg("ssthresh", ssthresh)?, mss: bytes_arg("mss", mss)? },
        })
    }
    #[getter]
    fn cwnd(&self) -> u64 {
        self.w.cwnd
    }
    #[setter]
    fn set_cwnd(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.w.cwnd = bytes_arg("cwnd", v)?;
        Ok(())
    }
    #[getter]
    fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }
    #[setter]
    fn set_ssthresh(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        self.w.ssthresh = bytes_arg("ssthresh", v)?;
        Ok(())
    }
    #[getter]
    fn mss(&self) -> u64 {
        self.w.mss
    }
    fn in_slow_start(&self) -> bool {
        self.w.in_slow_start()
    }
    fn __repr__(&self) -> String {
        format!("Window(cwnd={}, ssthresh={}, mss={})", self.w.cwnd, self.w.ssthresh, self.w.mss)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<PyWindow>().is_ok_and(|o| o.w == self.w)
    }
}

/// One subflow of the connection as a controller sees it (`mpsim_core::cc::SubflowState`).
#[pyclass(frozen, module = "mpsim._core", name = "SubflowState")]
pub struct PySubflowState(pub SubflowState);

#[pymethods]
impl PySubflowState {
    #[getter]
    fn cwnd(&self) -> u64 {
        self.0.cwnd
    }
    #[getter]
    fn ssthresh(&self) -> u64 {
        self.0.ssthresh
    }
    #[getter]
    fn mss(&self) -> u64 {
        self.0.mss
    }
    #[getter]
    fn srtt(&self) -> Option<u64> {
        ns(self.0.srtt)
    }
    #[getter]
    fn active(&self) -> bool {
        self.0.active
    }
    #[getter]
    fn in_recovery(&self) -> bool {
        self.0.in_recovery
    }
    #[getter]
    fn inter_loss_bytes(&self) -> u64 {
        self.0.inter_loss_bytes
    }
    fn __repr__(&self) -> String {
        format!("{:?}", self.0)
    }
}

fn states<'py>(py: Python<'py>, s: &[SubflowState]) -> PyResult<Bound<'py, PyTuple>> {
    let items = s.iter().map(|v| Bound::new(py, PySubflowState(*v))).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new_bound(py, items))
}

/// What the sender knows when an ACK acknowledges new data (`mpsim_core::cc::AckContext`).
#[pyclass(frozen, module = "mpsim._core", name = "AckContext")]
pub struct PyAckContext {
    #[pyo3(get)]
    now: u64,
    #[pyo3(get)]
    bytes_acked: u64,
    #[pyo3(get)]
    in_flight: u64,
    #[pyo3(get)]
    srtt: Option<u64>,
    #[pyo3(get)]
    min_rtt: Option<u64>,
    #[pyo3(get)]
    me: usize,
    sibs: Vec<SubflowState>,
    #[pyo3(get)]
    received_at: u64,
    #[pyo3(get)]
    cw_echo: bool,
}

impl PyAckContext {
    pub fn new(c: &AckContext<'_>) -> Self {
        PyAckContext {
            now: c.now.0,
            bytes_acked: c.bytes_acked,
            in_flight: c.in_flight,
            srtt: ns(c.srtt),
            min_rtt: ns(c.min_rtt),
            me: c.me,
            sibs: c.subflows.to_vec(),
            received_at: c.received_at.0,
            cw_echo: c.cw_echo,
        }
    }
}

#[pymethods]
impl PyAckContext {
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    #[getter]
    fn subflows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        states(py, &self.sibs)
    }
}

/// What the sender knows when it detects congestion (`mpsim_core::cc::LossContext`).
#[pyclass(frozen, module = "mpsim._core", name = "LossContext")]
pub struct PyLossContext {
    #[pyo3(get)]
    now: u64,
    #[pyo3(get)]
    in_flight: u64,
    #[pyo3(get)]
    srtt: Option<u64>,
    #[pyo3(get)]
    min_rtt: Option<u64>,
    #[pyo3(get)]
    me: usize,
    sibs: Vec<SubflowState>,
    #[pyo3(get)]
    cw_echo: bool,
}

impl PyLossContext {
    pub fn new(c: &LossContext<'_>) -> Self {
        PyLossContext {
            now: c.now.0,
            in_flight: c.in_flight,
            srtt: ns(c.srtt),
            min_rtt: ns(c.min_rtt),
            me: c.me,
            sibs: c.subflows.to_vec(),
            cw_echo: c.cw_echo,
        }
    }
}

#[pymethods]
impl PyLossContext {
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    #[getter]
    fn subflows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        states(py, &self.sibs)
    }
}

/// Registers the view classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySubflowView>()?;
    m.add_class::<PySchedContext>()?;
    m.add_class::<PyWindow>()?;
    m.add_class::<PySubflowState>()?;
    m.add_class::<PyAckContext>()?;
    m.add_class::<PyLossContext>()?;
    Ok(())
}
