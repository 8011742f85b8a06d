//! Schedulers, congestion controllers and receiver-side logic written in Python, seen by the
//! core as `Sched::Custom`, `Controller::Custom` and `RxLogic::Custom`.
//!
//! The simulation runs without the GIL; each hook takes it only for its call into Python.
//! Nothing raised or returned by user code may reach the core unchecked: an exception, or a
//! value the core could not act on (an index out of range, a window below one segment), is
//! kept in the run's [`Fault`] together with where it happened, the hook answers something
//! harmless (wait, the window unchanged), later hooks no longer call Python, and the run stops
//! at its next progress check and raises the kept error.

use crate::views::{PyAckContext, PyLossContext, PyWindow, SchedViews};
use mpsim_core::cc::{AckContext, CongestionControl, CongestionEvent, LossContext, Window};
use mpsim_core::feedback::ReceiverLogic;
use mpsim_core::net::{DataHeader, Feedback};
use mpsim_core::sched::{AckInfo, BlockedAction, Decision, SchedContext, Scheduler};
use mpsim_core::time::{Dur, SimTime};
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{intern, PyTypeInfo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

create_exception!(
    mpsim._core,
    PluginError,
    PyRuntimeError,
    "A scheduler or congestion controller written in Python returned a value the simulator cannot use."
);

/// The first error raised or caused by user code during a run.
#[derive(Default)]
pub struct Fault {
    set: AtomicBool,
    err: Mutex<Option<PyErr>>,
}

impl Fault {
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }

    /// Keeps `e` unless an earlier error is kept already (a later one must not hide it).
    pub fn put(&self, e: PyErr) {
        let mut g = self.err.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.set.store(true, Ordering::Relaxed);
    }

    pub fn take(&self) -> Option<PyErr> {
        self.err.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Where a hook ran, for error messages: "scheduler 'x', pick() at t=1.5s".
fn place(kind: &str, name: &str, hook: &str, now: SimTime) -> String {
    format!("{kind} '{name}', {hook}() at t={now}")
}

/// An exception from user code, kept with a note saying where it was raised (the traceback
/// already points into the user's file).
fn user_error(py: Python<'_>, fault: &Fault, e: PyErr, at: String) {
    let _ = e.value_bound(py).call_method1(intern!(py, "add_note"), (format!("raised in {at}"),));
    fault.put(e);
}

fn bad_value(fault: &Fault, at: String, v: &Bound<'_, PyAny>, expected: String) {
    let shown = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".into());
    fault.put(PluginError::new_err(format!("{at} returned {shown}: expected {expected}")));
}

/// A name for the core's `&'static str` names: each distinct name is leaked once.
pub fn static_name(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut m = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = m.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_owned().into_boxed_str());
    m.insert(name.to_owned(), s);
    s
}

fn has(obj: &Bound<'_, PyAny>, attr: &str) -> bool {
    obj.hasattr(attr).unwrap_or(false)
}

/// A subflow index as returned by user code: a Python int (not a bool).
fn as_index(v: &Bound<'_, PyAny>) -> Option<i64> {
    if pyo3::types::PyBool::is_type_of_bound(v) {
        return None;
    }
    v.extract::<i64>().ok()
}

/// A scheduler implemented by a Python object with `pick(ctx)` and optionally
/// `copies(ctx, chosen)`, `on_window_blocked(ctx)`, `on_ack_info(now, sub, window, feedback)`
/// and `wake_at()`.
pub struct PyScheduler {
    obj: Py<PyAny>,
    /// The bound method `obj.pick`, looked up once.
    pick: Py<PyAny>,
    views: SchedViews,
    name: &'static str,
    has_copies: bool,
    has_blocked: bool,
    has_ack_info: bool,
    has_wake: bool,
    /// What `wake_at()` answered after the last `pick` or `on_ack_info`.
    wake: Option<SimTime>,
    fault: Arc<Fault>,
}

impl PyScheduler {
    pub fn new(obj: Bound<'_, PyAny>, name: &str, fault: Arc<Fault>) -> PyResult<PyScheduler> {
        if !has(&obj, "pick") {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!("scheduler '{name}' has no pick(ctx) method")));
        }
        Ok(PyScheduler {
            has_copies: has(&obj, "copies"),
            has_blocked: has(&obj, "on_window_blocked"),
            has_ack_info: has(&obj, "on_ack_info"),
            has_wake: has(&obj, "wake_at"),
            wake: None,
            pick: obj.getattr("pick")?.unbind(),
            views: SchedViews::default(),
            obj: obj.unbind(),
            name: static_name(name),
            fault,
        })
    }

    fn at(&self, hook: &str, now: SimTime) -> String {
        place("scheduler", self.name, hook, now)
    }

    /// Asks `wake_at()` again (the core reads it right after `pick` and `on_ack_info`).
    fn refresh_wake(&mut self, py: Python<'_>, now: SimTime) {
        if !self.has_wake || self.fault.is_set() {
            return;
        }
        self.wake = match self.obj.bind(py).call_method0(intern!(py, "wake_at")) {
            Err(e) => {
                user_error(py, &self.fault, e, self.at("wake_at", now));
                None
            }
            Ok(v) if v.is_none() => None,
            Ok(v) => match as_index(&v).filter(|&t| t >= 0) {
                Some(t) => Some(SimTime(t as u64)),
                None => {
                    bad_value(&self.fault, self.at("wake_at", now), &v, "a time in integer nanoseconds or None".into());
                    None
                }
            },
        };
    }

    /// Index `v` must name a usable subflow of `ctx`.
    fn subflow(&self, v: &Bound<'_, PyAny>, ctx: &SchedContext<'_>, hook: &str) -> Option<usize> {
        let n = ctx.subflows.len();
        match as_index(v) {
            Some(i) if i >= 0 && (i as usize) < n && ctx.subflows[i as usize].usable => Some(i as usize),
            Some(i) if i >= 0 && (i as usize) < n => {
                bad_value(
                    &self.fault,
                    self.at(hook, ctx.now),
                    v,
                    format!("a usable subflow (subflow {i} is not usable: it failed or is not established)"),
                );
                None
            }
            _ => {
                bad_value(&self.fault, self.at(hook, ctx.now), v, format!("a subflow index from 0 to {} or None", n.saturating_sub(1)));
                None
            }
        }
    }
}

impl Scheduler for PyScheduler {
    fn name(&self) -> &'static str {
        self.name
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        if self.fault.is_set() {
            return Decision::Wait;
        }
        Python::with_gil(|py| {
            let r = self.views.get(py, ctx).and_then(|c| self.pick.bind(py).call1((c,)));
            let d = match r {
                Err(e) => {
                    user_error(py, &self.fault, e, self.at("pick", ctx.now));
                    Decision::Wait
                }
                Ok(v) if v.is_none() => Decision::Wait,
                Ok(v) => self.subflow(&v, ctx, "pick").map_or(Decision::Wait, Decision::Send),
            };
            self.refresh_wake(py, ctx.now);
            d
        })
    }

    fn on_ack_info(&mut self, info: &AckInfo) {
        if !self.has_ack_info || self.fault.is_set() {
            return;
        }
        Python::with_gil(|py| {
            let fb = info.feedback.map(|f| (f.stamp.0, f.path, f.rate_bps));
            let r = self.obj.bind(py).call_method1(intern!(py, "on_ack_info"), (info.now.0, info.sub, info.window, fb));
            if let Err(e) = r {
                user_error(py, &self.fault, e, self.at("on_ack_info", info.now));
            }
            self.refresh_wake(py, info.now);
        })
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.wake
    }

    /// A scheduler that asks to be woken paces: it is asked again as soon as a chunk it
    /// handed out has left.
    fn paced(&self) -> bool {
        self.has_wake
    }

    fn copies(&mut self, ctx: &SchedContext<'_>, chosen: usize) -> u64 {
        if !self.has_copies || self.fault.is_set() {
            return 0;
        }
        Python::with_gil(|py| {
            let r = self.views.get(py, ctx).and_then(|c| self.obj.bind(py).call_method1(intern!(py, "copies"), (c, chosen)));
            let n = ctx.subflows.len().min(64);
            let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            match r {
                Err(e) => {
                    user_error(py, &self.fault, e, self.at("copies", ctx.now));
                    0
                }
                Ok(v) if v.is_none() => 0,
                Ok(v) => match as_index(&v).filter(|&m| m >= 0).map(|m| m as u64).filter(|m| m & !all == 0) {
                    Some(m) => m,
                    None => {
                        let want = format!("a bit mask of subflows (an int from 0 to {all}: bit i for subflow i) or None");
                        bad_value(&self.fault, self.at("copies", ctx.now), &v, want);
                        0
                    }
                },
            }
        })
    }

    fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        if !self.has_blocked || self.fault.is_set() {
            return BlockedAction::default();
        }
        Python::with_gil(|py| {
            let r = self.views.get(py, ctx).and_then(|c| self.obj.bind(py).call_method1(intern!(py, "on_window_blocked"), (c,)));
            let v = match r {
                Err(e) => {
                    user_error(py, &self.fault, e, self.at("on_window_blocked", ctx.now));
                    return BlockedAction::default();
                }
                Ok(v) => v,
            };
            if v.is_none() {
                return BlockedAction::default();
            }
            let pair = v.downcast::<PyTuple>().ok().filter(|t| t.len() == 2);
            let Some(pair) = pair else {
                let want = "None or a pair (reinject_on, penalize), each a subflow index or None".to_string();
                bad_value(&self.fault, self.at("on_window_blocked", ctx.now), &v, want);
                return BlockedAction::default();
            };
            let mut act = BlockedAction::default();
            for (k, slot) in [&mut act.reinject_on, &mut act.penalize].into_iter().enumerate() {
                let x = pair.get_item(k).expect("pair");
                if !x.is_none() {
                    *slot = self.subflow(&x, ctx, "on_window_blocked");
                    if slot.is_none() {
                        return BlockedAction::default();
                    }
                }
            }
            act
        })
    }
}

/// A congestion controller implemented by a Python object with `on_ack(w, ctx)` and
/// `on_congestion(w, event, ctx)`, and optionally `on_rtt_sample(rtt, now)`,
/// `on_recovery_exit(w)` and `inter_loss_bytes()`. One object per subflow.
pub struct PyController {
    obj: Py<PyAny>,
    name: &'static str,
    has_rtt: bool,
    has_exit: bool,
    has_delivery: bool,
    has_ilb: bool,
    fault: Arc<Fault>,
}

impl PyController {
    pub fn new(obj: Bound<'_, PyAny>, name: &str, fault: Arc<Fault>) -> PyResult<PyController> {
        for hook in ["on_ack", "on_congestion"] {
            if !has(&obj, hook) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("congestion controller '{name}' has no {hook}() method")));
            }
        }
        Ok(PyController {
            has_rtt: has(&obj, "on_rtt_sample"),
            has_exit: has(&obj, "on_recovery_exit"),
            has_delivery: has(&obj, "on_delivery"),
            has_ilb: has(&obj, "inter_loss_bytes"),
            obj: obj.unbind(),
            name: static_name(name),
            fault,
        })
    }

    fn at(&self, hook: &str, now: Option<SimTime>) -> String {
        match now {
            Some(t) => place("congestion controller", self.name, hook, t),
            None => format!("congestion controller '{}', {hook}()", self.name),
        }
    }

    /// The window returned by a hook, checked: a `Window` with the same MSS, cwnd of at least
    /// one segment and ssthresh of at least two (the invariants every built-in keeps).
    fn window(&self, py: Python<'_>, r: PyResult<Bound<'_, PyAny>>, w: Window, hook: &str, now: Option<SimTime>) -> Window {
        let v = match r {
            Err(e) => {
                user_error(py, &self.fault, e, self.at(hook, now));
                return w;
            }
            Ok(v) => v,
        };
        let nw = v.downcast::<PyWindow>().ok().map(|b| b.borrow().w);
        match nw {
            Some(nw) if nw.mss == w.mss && nw.cwnd >= nw.mss && nw.ssthresh >= 2 * nw.mss => nw,
            _ => {
                let want = format!("a Window with mss {} (unchanged), cwnd >= 1 MSS and ssthresh >= 2 MSS", w.mss);
                bad_value(&self.fault, self.at(hook, now), &v, want);
                w
            }
        }
    }
}

impl CongestionControl for PyController {
    fn name(&self) -> &'static str {
        self.name
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        if self.fault.is_set() {
            return w;
        }
        Python::with_gil(|py| {
            let r = (|| {
                let (pw, c) = (Bound::new(py, PyWindow { w })?, Bound::new(py, PyAckContext::new(ctx))?);
                self.obj.bind(py).call_method1(intern!(py, "on_ack"), (pw, c))
            })();
            self.window(py, r, w, "on_ack", Some(ctx.now))
        })
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        if self.fault.is_set() {
            return w;
        }
        Python::with_gil(|py| {
            let event = match ev {
                CongestionEvent::FastRetransmit => intern!(py, "fast_retransmit"),
                CongestionEvent::Timeout => intern!(py, "timeout"),
            };
            let r = (|| {
                let (pw, c) = (Bound::new(py, PyWindow { w })?, Bound::new(py, PyLossContext::new(ctx))?);
                self.obj.bind(py).call_method1(intern!(py, "on_congestion"), (pw, event, c))
            })();
            self.window(py, r, w, "on_congestion", Some(ctx.now))
        })
    }

    fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        if !self.has_rtt || self.fault.is_set() {
            return;
        }
        Python::with_gil(|py| {
            if let Err(e) = self.obj.bind(py).call_method1(intern!(py, "on_rtt_sample"), (rtt.0, now.0)) {
                user_error(py, &self.fault, e, self.at("on_rtt_sample", Some(now)));
            }
        })
    }

    /// Only a class that defines `on_rtt_sample` is handed the samples.
    fn wants_rtt_samples(&self) -> bool {
        self.has_rtt
    }

    fn wants_deliveries(&self) -> bool {
        self.has_delivery
    }

    fn on_delivery(&mut self, ctx: &AckContext) {
        if !self.has_delivery || self.fault.is_set() {
            return;
        }
        Python::with_gil(|py| {
            let r = Bound::new(py, PyAckContext::new(ctx)).and_then(|c| self.obj.bind(py).call_method1(intern!(py, "on_delivery"), (c,)));
            if let Err(e) = r {
                user_error(py, &self.fault, e, self.at("on_delivery", Some(ctx.now)));
            }
        })
    }

    fn on_recovery_exit(&mut self, w: Window) -> Window {
        if !self.has_exit || self.fault.is_set() {
            return w;
        }
        Python::with_gil(|py| {
            let r = Bound::new(py, PyWindow { w }).and_then(|pw| self.obj.bind(py).call_method1(intern!(py, "on_recovery_exit"), (pw,)));
            self.window(py, r, w, "on_recovery_exit", None)
        })
    }

    /// Only a class that defines `inter_loss_bytes` is asked for it.
    fn shares_inter_loss_bytes(&self) -> bool {
        self.has_ilb
    }

    fn inter_loss_bytes(&self) -> u64 {
        if !self.has_ilb || self.fault.is_set() {
            return 0;
        }
        Python::with_gil(|py| match self.obj.bind(py).call_method0(intern!(py, "inter_loss_bytes")) {
            Err(e) => {
                user_error(py, &self.fault, e, self.at("inter_loss_bytes", None));
                0
            }
            Ok(v) => match v.extract::<u64>() {
                Ok(x) if !pyo3::types::PyBool::is_type_of_bound(&v) => x,
                _ => {
                    bad_value(&self.fault, self.at("inter_loss_bytes", None), &v, "a whole number of bytes >= 0".into());
                    0
                }
            },
        })
    }
}

/// Receiver-side logic implemented by a Python object with `on_data(now, path, seq, length,
/// dsn, echo)` and `feedback(now, path)`, and optionally `deadline(path)`, `on_timer(now,
/// path)` and `on_window(now, room)`. Times are integer nanoseconds; `feedback` returns None
/// (a plain ACK) or the rate in bit/s the receiver asks for on that path.
pub struct PyReceiverLogic {
    obj: Py<PyAny>,
    name: &'static str,
    has_deadline: bool,
    has_timer: bool,
    has_window: bool,
    /// What `deadline(path)` answered, per path, after the last call that may change it.
    deadlines: Vec<Option<SimTime>>,
    fault: Arc<Fault>,
}

impl PyReceiverLogic {
    pub fn new(obj: Bound<'_, PyAny>, name: &str, paths: usize, fault: Arc<Fault>) -> PyResult<PyReceiverLogic> {
        for m in ["on_data", "feedback"] {
            if !has(&obj, m) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("receiver logic '{name}' has no {m}() method")));
            }
        }
        Ok(PyReceiverLogic {
            has_deadline: has(&obj, "deadline"),
            has_timer: has(&obj, "on_timer"),
            has_window: has(&obj, "on_window"),
            deadlines: vec![None; paths],
            obj: obj.unbind(),
            name: static_name(name),
            fault,
        })
    }

    fn at(&self, hook: &str, now: SimTime) -> String {
        place("receiver logic", self.name, hook, now)
    }

    /// A yes/no answer: None or a bool.
    fn flag(&self, v: PyResult<Bound<'_, PyAny>>, py: Python<'_>, hook: &str, now: SimTime) -> bool {
        match v {
            Err(e) => {
                user_error(py, &self.fault, e, self.at(hook, now));
                false
            }
            Ok(v) if v.is_none() => false,
            Ok(v) => match v.extract::<bool>() {
                Ok(b) => b,
                Err(_) => {
                    bad_value(&self.fault, self.at(hook, now), &v, "True (send an ACK with feedback now), False or None".into());
                    false
                }
            },
        }
    }

    fn refresh_deadlines(&mut self, py: Python<'_>, now: SimTime) {
        if !self.has_deadline {
            return;
        }
        for path in 0..self.deadlines.len() {
            if self.fault.is_set() {
                self.deadlines[path] = None;
                continue;
            }
            self.deadlines[path] = match self.obj.bind(py).call_method1(intern!(py, "deadline"), (path,)) {
                Err(e) => {
                    user_error(py, &self.fault, e, self.at("deadline", now));
                    None
                }
                Ok(v) if v.is_none() => None,
                Ok(v) => match as_index(&v).filter(|&t| t >= 0) {
                    Some(t) => Some(SimTime(t as u64)),
                    None => {
                        bad_value(&self.fault, self.at("deadline", now), &v, "a time in integer nanoseconds or None".into());
                        None
                    }
                },
            };
        }
    }
}

impl ReceiverLogic for PyReceiverLogic {
    fn name(&self) -> &'static str {
        self.name
    }

    fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool {
        if self.fault.is_set() {
            return false;
        }
        Python::with_gil(|py| {
            let r = self.obj.bind(py).call_method1(intern!(py, "on_data"), (now.0, path, seg.seq, seg.len, seg.dsn, seg.echo.0));
            let ack = self.flag(r, py, "on_data", now);
            self.refresh_deadlines(py, now);
            ack
        })
    }

    fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback> {
        if self.fault.is_set() {
            return None;
        }
        Python::with_gil(|py| match self.obj.bind(py).call_method1(intern!(py, "feedback"), (now.0, path)) {
            Err(e) => {
                user_error(py, &self.fault, e, self.at("feedback", now));
                None
            }
            Ok(v) if v.is_none() => None,
            Ok(v) => match v.extract::<f64>().ok().filter(|r| r.is_finite() && *r >= 0.0) {
                Some(rate_bps) => Some(Feedback { stamp: now, path: path.min(u8::MAX as usize) as u8, rate_bps }),
                None => {
                    bad_value(&self.fault, self.at("feedback", now), &v, "None or a rate in bit/s (a finite number at least 0)".into());
                    None
                }
            },
        })
    }

    fn deadline(&self, path: usize) -> Option<SimTime> {
        self.deadlines.get(path).copied().flatten()
    }

    fn on_timer(&mut self, now: SimTime, path: usize) -> bool {
        if !self.has_timer || self.fault.is_set() {
            return false;
        }
        Python::with_gil(|py| {
            let r = self.obj.bind(py).call_method1(intern!(py, "on_timer"), (now.0, path));
            let ack = self.flag(r, py, "on_timer", now);
            self.refresh_deadlines(py, now);
            ack
        })
    }

    fn on_window(&mut self, now: SimTime, room: u64) {
        if !self.has_window || self.fault.is_set() {
            return;
        }
        Python::with_gil(|py| {
            if let Err(e) = self.obj.bind(py).call_method1(intern!(py, "on_window"), (now.0, room)) {
                user_error(py, &self.fault, e, self.at("on_window", now));
            }
            self.refresh_deadlines(py, now);
        })
    }
}
