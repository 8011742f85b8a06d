//! Per-destination congestion control of an SCTP association.
//!
//! SCTP keeps cwnd, ssthresh and partial_bytes_acked per destination (RFC 4960 §7.2). The
//! association decides *when* a controller is asked (a SACK that advances the cumulative TSN
//! ack, or with CMT's CUC the destination's pseudo-cumack; fast recovery; "was the cwnd fully
//! used"); the controller decides *how* the window moves. The hooks are shaped for the
//! controllers the seed paper compares:
//!
//! * [`on_ack`](SctpController::on_ack): bytes newly acknowledged on this destination;
//! * [`on_loss`](SctpController::on_loss): a loss on this destination (fast retransmit or
//!   T3-rtx timeout) with the lost chunk's TSN and send time; the controller answers whether
//!   it treated it as a congestion loss (and reduced) or not, so a loss-differentiating
//!   controller (JSCTP) can keep its window on a wireless loss;
//! * [`on_timestamp`](SctpController::on_timestamp): with `sctp.timestamps`, every DATA
//!   packet carries its send time in a 12-byte chunk and SACKs echo receive times, which this
//!   hook receives per acknowledged packet (a jitter-ratio or receiver-timestamp bandwidth
//!   estimator feeds from it).
//!
//! Each controller is one file implementing [`SctpController`] and one entry of the
//! [`sctp_controllers!`] table below, as TCP's controllers (`cc/`) and the schedulers
//! (`sched/`) are: the table makes the [`SctpCc`] enum, [`SCTP_CONTROLLERS`] (what `mpsim
//! list` shows and the scenario reader accepts) and [`SctpCc::by_name`].

pub mod coupled;
pub mod jsctp;
pub mod newreno;
pub mod rfc4960;

use super::config::SctpConfig;
use crate::cc::SubflowState;
use crate::time::{Dur, SimTime};

/// One destination's window, in user-data bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DestWindow {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub partial_bytes_acked: u64,
    pub mtu: u64,
}

impl DestWindow {
    pub fn in_slow_start(&self) -> bool {
        // RFC 4960 §7.2.1: slow start while cwnd <= ssthresh
        self.cwnd <= self.ssthresh
    }
}

/// A SACK acknowledged new data sent to this destination.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent {
    pub now: SimTime,
    /// Bytes of chunks sent to this destination newly acknowledged (cumulatively or by gap
    /// blocks).
    pub bytes_acked: u64,
    /// The SACK advanced the cumulative TSN ack point (with CUC: this destination's
    /// pseudo-cumack): RFC 4960 grows cwnd only then.
    pub advanced: bool,
    /// Before the SACK, the destination had cwnd or more bytes outstanding.
    pub fully_used: bool,
    pub in_fast_recovery: bool,
    /// Bytes outstanding on this destination before the SACK.
    pub flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
}

/// How a loss was detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Missing reports reached the fast-retransmit threshold.
    FastRetransmit,
    /// The destination's T3-rtx timer expired.
    Timeout,
}

/// A loss on this destination.
#[derive(Clone, Copy, Debug)]
pub struct LossEvent {
    pub now: SimTime,
    pub kind: LossKind,
    /// The lost chunk (for a timeout: the earliest outstanding one) and when it was sent.
    pub tsn: u64,
    pub sent_at: SimTime,
    /// Bytes outstanding on this destination when the loss was detected.
    pub flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
}

/// What the controller made of a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossVerdict {
    /// Treated as congestion: the window was reduced.
    Congestion,
    /// Not treated as congestion (a wireless loss, or a second loss within one round trip):
    /// the chunk is retransmitted, the window stays.
    NotCongestion,
}

/// A packet's send time (from its timestamp chunk) and its receive time (echoed in a SACK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimestampSample {
    pub tsn: u64,
    pub sent_at: SimTime,
    pub received_at: SimTime,
    pub bytes: u32,
}

/// A destination's congestion controller. The association calls it; the window it moves is
/// the destination's ([`DestWindow`]).
pub trait SctpController {
    /// New data sent to this destination was acknowledged. `siblings` holds every
    /// destination's state (this one at `me`) for coupled controllers; empty otherwise.
    fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, siblings: &[SubflowState], me: usize);

    /// A loss on this destination; the answer says whether the window was reduced.
    fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, siblings: &[SubflowState], me: usize) -> LossVerdict;

    /// An echoed send/receive time pair of a packet sent to this destination; `srtt` is the
    /// destination's smoothed RTT. Only controllers declared `[timestamps]` in the table
    /// receive any (the association carries timestamp chunks for them).
    fn on_timestamp(&mut self, _s: &TimestampSample, _srtt: Option<Dur>) {}

    /// An RTT sample of this destination.
    fn on_rtt_sample(&mut self, _rtt: Dur, _now: SimTime) {}

    /// True if the controller reads its sibling destinations (the association then builds
    /// their states for it).
    fn is_coupled(&self) -> bool {
        false
    }

    /// The per-path figure a coupled controller shares with its siblings (OLIA's).
    fn inter_loss_bytes(&self) -> u64 {
        0
    }

    /// Retransmit the next missing chunk on a partial ack in fast recovery (NewReno's rule).
    fn partial_ack_retransmit(&self) -> bool {
        false
    }

    /// A loss-differentiating controller's smoothed jitter ratio and k/w threshold at window
    /// `w` (the flow series show them); None for others.
    fn jitter(&self, _w: &DestWindow) -> Option<(f64, f64)> {
        None
    }

    /// A loss-differentiating controller's jitter-ratio samples taken and ignored for being
    /// zero, and its losses taken for congestion and for wireless (the summary shows them);
    /// None for others.
    fn loss_counts(&self) -> Option<(u64, u64, u64, u64)> {
        None
    }
}

/// Declares the SCTP controllers from one table: module (one file per controller) and type,
/// the hooks it needs in brackets (`timestamps`: the association carries timestamp chunks
/// for it), then each scenario name with its constructor (from the association's settings)
/// and the one-line description `mpsim list` shows. Dispatch is static.
macro_rules! sctp_controllers {
    ($($module:ident :: $ty:ident $([$($hook:ident),+])? { $($name:literal => $make:expr, $desc:literal;)+ })+) => {
        /// A destination's controller: one of the table's types.
        pub enum SctpCc {
            $($ty($ty),)+
        }

        /// Scenario names and one-line descriptions of the SCTP controllers.
        pub const SCTP_CONTROLLERS: &[(&str, &str)] = &[$($(($name, $desc),)+)+];

        impl SctpCc {
            /// The controller called `name`, with the association's settings `c`.
            pub fn by_name(name: &str, c: &SctpConfig) -> Option<SctpCc> {
                let make: fn(&SctpConfig) -> SctpCc = match name {
                    $($($name => |c| SctpCc::$ty(($make)(c)),)+)+
                    _ => return None,
                };
                Some(make(c))
            }

            /// Whether the controller called `name` reads the timestamp chunks.
            pub fn reads_timestamps(name: &str) -> bool {
                $(if [$($name),+].contains(&name) {
                    return reads_timestamps!($($($hook)+)?);
                })+
                false
            }

            fn inner(&self) -> &dyn SctpController {
                match self {
                    $(SctpCc::$ty(c) => c,)+
                }
            }

            fn inner_mut(&mut self) -> &mut dyn SctpController {
                match self {
                    $(SctpCc::$ty(c) => c,)+
                }
            }
        }
    };
}

/// Whether a controller's hooks in the [`sctp_controllers!`] table name `timestamps`.
macro_rules! reads_timestamps {
    (timestamps $($rest:ident)*) => { true };
    ($other:ident $($rest:ident)*) => { reads_timestamps!($($rest)*) };
    () => { false };
}

sctp_controllers! {
    rfc4960::Rfc4960 {
        "rfc4960" => |_| Rfc4960, "SCTP's standard per-destination congestion control (RFC 4960 §7.2)";
    }
    newreno::NewReno {
        "newreno" => |_| NewReno::default(), "NewReno-SCTP: one window reduction per round trip, partial-ack retransmission";
    }
    coupled::Coupled {
        "lia" => |_| Coupled::new("lia"), "LIA coupling across destinations (CMT): coupled increase, RFC 4960's decrease and gates";
        "olia" => |_| Coupled::new("olia"), "OLIA coupling across destinations (CMT): coupled increase, RFC 4960's decrease and gates";
    }
    jsctp::Jsctp [timestamps] {
        "jsctp" => |c| Jsctp::from_config(c, false),
            "JSCTP: per-path jitter ratio vs k/w tells congestion from wireless loss; wireless losses keep the window";
        "jsctp_abe" => |c| Jsctp::from_config(c, true),
            "JSCTP-ABE: JSCTP with ssthresh from the receiver-timestamp bandwidth estimate (TABE)";
    }
}

pub use coupled::Coupled;
pub use jsctp::Jsctp;
pub use newreno::NewReno;
pub use rfc4960::{rfc4960_growth, rfc4960_reduce, Rfc4960};

impl SctpCc {
    pub fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, siblings: &[SubflowState], me: usize) {
        self.inner_mut().on_ack(w, a, siblings, me)
    }
    pub fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, siblings: &[SubflowState], me: usize) -> LossVerdict {
        self.inner_mut().on_loss(w, l, siblings, me)
    }
    pub fn on_timestamp(&mut self, s: &TimestampSample, srtt: Option<Dur>) {
        self.inner_mut().on_timestamp(s, srtt)
    }
    pub fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        self.inner_mut().on_rtt_sample(rtt, now)
    }
    pub fn is_coupled(&self) -> bool {
        self.inner().is_coupled()
    }
    pub fn inter_loss_bytes(&self) -> u64 {
        self.inner().inter_loss_bytes()
    }
    pub fn partial_ack_retransmit(&self) -> bool {
        self.inner().partial_ack_retransmit()
    }
    pub fn jitter(&self, w: &DestWindow) -> Option<(f64, f64)> {
        self.inner().jitter(w)
    }
    pub fn loss_counts(&self) -> Option<(u64, u64, u64, u64)> {
        self.inner().loss_counts()
    }
}
