//! The receiver as a place where logic runs: a [`ReceiverLogic`] sees every data packet that
//! arrives on each path and attaches [`Feedback`] fields to the acknowledgements the receiver
//! sends; the sender's scheduler reads them back ([`crate::sched::Scheduler::on_ack_info`]).
//! Any receiver-driven scheme (MPTCP-rec's DSRor, a user's own in Python or Rust) plugs in
//! here, without touching the TCP code.
//!
//! The connection drives it: after each data packet it asks whether an ACK must go out at
//! once ([`ReceiverLogic::on_data`]), it asks for the fields of every ACK it builds
//! ([`ReceiverLogic::feedback`]), and it keeps one timer per path at
//! [`ReceiverLogic::deadline`], calling [`ReceiverLogic::on_timer`] when it fires (an ACK
//! carrying feedback follows if the logic asks for one).

pub mod tear;

use crate::net::{DataHeader, Feedback};
use crate::time::{Dur, SimTime};
use tear::{Tear, TearConfig, TearState, TearStats};

/// Receiver-side logic of a connection, over its paths (subflow indices).
pub trait ReceiverLogic {
    /// Short name.
    fn name(&self) -> &'static str;

    /// A data segment arrived on `path` at `now`. True if an ACK carrying feedback must be
    /// sent on that path now (rather than whenever the next ACK goes).
    fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool;

    /// The fields to attach to the ACK about to leave on `path`, if any.
    fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback>;

    /// When `on_timer` must next run for `path`.
    fn deadline(&self, _path: usize) -> Option<SimTime> {
        None
    }

    /// The timer of `path` fired; true if an ACK carrying feedback must be sent on it now.
    fn on_timer(&mut self, _now: SimTime, _path: usize) -> bool {
        false
    }

    /// After each data packet: the receive window the receiver will advertise leaves `room`
    /// bytes above the highest byte received on any path (0: the sender may send nothing new).
    /// The connection asks for every path's [`deadline`](Self::deadline) again afterwards.
    fn on_window(&mut self, _now: SimTime, _room: u64) {}
}

/// MPTCP-rec's DSRor: one [`Tear`] emulation per path; the extended NR-SACK (stamp, path id,
/// smoothed DSR) goes on the ACK that follows the end of a round timer or a rate mismatch.
pub struct Dsror {
    paths: Vec<Tear>,
    /// Feedback is due on the next ACK of the path.
    due: Vec<bool>,
}

impl Dsror {
    /// One emulation per path, each seeded with that path's handshake RTT.
    pub fn new(cfg: &TearConfig, mss: u32, rtts: &[Dur]) -> Dsror {
        Dsror { paths: rtts.iter().map(|&r| Tear::new(cfg.clone(), mss, r)).collect(), due: vec![false; rtts.len()] }
    }

    pub fn path(&self, i: usize) -> &Tear {
        &self.paths[i]
    }

    pub fn paths(&self) -> &[Tear] {
        &self.paths
    }
}

impl ReceiverLogic for Dsror {
    fn name(&self) -> &'static str {
        "mptcp_rec"
    }

    fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool {
        let Some(t) = self.paths.get_mut(path) else { return false };
        t.on_packet(now, seg.seq, seg.len, seg.echo);
        let due = t.take_feedback_due();
        self.due[path] |= due;
        due
    }

    /// Only the ACK that follows a round timer or a rate mismatch is extended; the others
    /// are plain (cumulative ACK, SACK blocks, DATA_ACK and window).
    fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback> {
        let t = self.paths.get(path)?;
        std::mem::take(&mut self.due[path]).then(|| Feedback { stamp: now, path: path as u8, rate_bps: t.advertised() })
    }

    fn deadline(&self, path: usize) -> Option<SimTime> {
        self.paths.get(path)?.deadline()
    }

    fn on_window(&mut self, now: SimTime, room: u64) {
        for t in &mut self.paths {
            t.on_window(now, room);
        }
    }

    fn on_timer(&mut self, now: SimTime, path: usize) -> bool {
        let Some(t) = self.paths.get_mut(path) else { return false };
        t.on_timer(now);
        let due = t.take_feedback_due();
        self.due[path] |= due;
        due
    }
}

/// The receiver logic a connection runs: built-in (static dispatch) or a boxed user
/// implementation.
pub enum RxLogic {
    Dsror(Dsror),
    Custom(Box<dyn ReceiverLogic + Send>),
}

impl RxLogic {
    fn inner(&mut self) -> &mut dyn ReceiverLogic {
        match self {
            RxLogic::Dsror(d) => d,
            RxLogic::Custom(c) => c.as_mut(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            RxLogic::Dsror(d) => d.name(),
            RxLogic::Custom(c) => c.name(),
        }
    }

    pub fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool {
        self.inner().on_data(now, path, seg)
    }

    pub fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback> {
        self.inner().feedback(now, path)
    }

    pub fn deadline(&self, path: usize) -> Option<SimTime> {
        match self {
            RxLogic::Dsror(d) => d.deadline(path),
            RxLogic::Custom(c) => c.deadline(path),
        }
    }

    pub fn on_timer(&mut self, now: SimTime, path: usize) -> bool {
        self.inner().on_timer(now, path)
    }

    pub fn on_window(&mut self, now: SimTime, room: u64) {
        self.inner().on_window(now, room)
    }

    /// Per path: the emulation's state, window (packets), advertised rate (bit/s) and
    /// counters, for the summary and the series (built-in DSRor only).
    pub fn tear_paths(&self) -> Option<Vec<(TearState, f64, f64, TearStats)>> {
        match self {
            RxLogic::Dsror(d) => Some(d.paths().iter().map(|t| (t.state(), t.rwnd(), t.advertised(), t.stats.clone())).collect()),
            RxLogic::Custom(_) => None,
        }
    }
}
