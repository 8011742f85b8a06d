//! Congestion control: a small trait, one file per algorithm, static dispatch by enum.
//!
//! Controllers do not own the window: the sender passes the current `Window` and the
//! controller returns the new one. Loss detection, recovery and RTT estimation stay in the
//! sender; the controller only decides how the window moves. Hooks that a controller does not
//! need have default implementations.

pub mod reno;

use crate::time::{Dur, SimTime};
pub use reno::Reno;

/// Congestion window and slow-start threshold, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What a controller may see of one subflow of its connection (itself included). Coupled
/// controllers (LIA, OLIA, BALIA) read their siblings through this, never through back doors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubflowState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    pub srtt: Option<Dur>,
    /// Established and able to send: only these count in the coupling.
    pub active: bool,
    /// In fast recovery or after a timeout.
    pub in_recovery: bool,
    /// The controller's own per-path figure, shared with its siblings (OLIA: bytes between
    /// the last two losses or since the last one, whichever is larger).
    pub inter_loss_bytes: u64,
}

/// What the sender knows when an ACK acknowledges new data.
#[derive(Clone, Copy, Debug)]
pub struct AckContext<'a> {
    pub now: SimTime,
    /// Bytes newly acknowledged (cumulatively or by SACK) by this ACK.
    pub bytes_acked: u64,
    /// Bytes in flight (RFC 6675 pipe) before this ACK.
    pub in_flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    pub subflows: &'a [SubflowState],
    pub me: usize,
}

/// The kind of congestion signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by duplicate ACKs / SACK: fast retransmit and recovery.
    FastRetransmit,
    /// Retransmission timeout.
    Timeout,
}

/// What the sender knows when it detects congestion.
#[derive(Clone, Copy, Debug)]
pub struct LossContext<'a> {
    pub now: SimTime,
    /// Bytes in flight (RFC 6675 pipe) when the loss was detected.
    pub in_flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    pub subflows: &'a [SubflowState],
    pub me: usize,
}

/// A congestion controller.
pub trait CongestionControl {
    /// Short name, as used in scenario files.
    fn name(&self) -> &'static str;

    /// New data was acknowledged outside loss recovery; returns the new window.
    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window;

    /// Congestion was detected; returns the window to continue with.
    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window;

    /// A valid RTT sample was taken (Karn's rule applied).
    fn on_rtt_sample(&mut self, _rtt: Dur, _now: SimTime) {}

    /// Loss recovery ended (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, w: Window) -> Window {
        w
    }

    /// The figure this controller shares with its siblings (`SubflowState::inter_loss_bytes`).
    fn inter_loss_bytes(&self) -> u64 {
        0
    }
}

/// The controllers mpsim ships, plus one slot for a user implementation.
pub enum Controller {
    Reno(Reno),
    /// A user-supplied controller (for example one written in Python); slower, dynamic dispatch.
    Custom(Box<dyn CongestionControl + Send>),
}

/// Names and one-line descriptions of the built-in controllers.
pub const CONTROLLERS: &[(&str, &str)] = &[(
    "reno",
    "NewReno (RFC 5681/6582): slow start, +1 MSS per RTT, halve on loss; uncoupled per subflow",
)];

impl Controller {
    /// Builds a built-in controller by name.
    pub fn by_name(name: &str) -> Option<Controller> {
        match name {
            "reno" => Some(Controller::Reno(Reno::default())),
            _ => None,
        }
    }

    fn inner(&mut self) -> &mut dyn CongestionControl {
        match self {
            Controller::Reno(c) => c,
            Controller::Custom(c) => c.as_mut(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Controller::Reno(c) => c.name(),
            Controller::Custom(c) => c.name(),
        }
    }

    #[inline]
    pub fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        match self {
            Controller::Reno(c) => c.on_ack(w, ctx),
            Controller::Custom(c) => c.on_ack(w, ctx),
        }
    }

    pub fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        self.inner().on_congestion(w, ev, ctx)
    }

    #[inline]
    pub fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        match self {
            Controller::Reno(c) => c.on_rtt_sample(rtt, now),
            Controller::Custom(c) => c.on_rtt_sample(rtt, now),
        }
    }

    pub fn on_recovery_exit(&mut self, w: Window) -> Window {
        self.inner().on_recovery_exit(w)
    }

    pub fn inter_loss_bytes(&self) -> u64 {
        match self {
            Controller::Reno(c) => c.inter_loss_bytes(),
            Controller::Custom(c) => c.inter_loss_bytes(),
        }
    }
}

/// The standard RFC 5681 loss response: ssthresh = max(FlightSize/2, 2·MSS).
pub fn halved_ssthresh(in_flight: u64, mss: u64) -> u64 {
    (in_flight / 2).max(2 * mss)
}
