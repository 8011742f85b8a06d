//! Per-destination congestion control of an SCTP association.
//!
//! SCTP keeps cwnd, ssthresh and partial_bytes_acked per destination (RFC 4960 §7.2). The
//! association decides *when* a controller is asked (a SACK that advances the cumulative TSN
//! ack, or with CMT's CUC the destination's pseudo-cumack; fast recovery; "was the cwnd fully
//! used"); the controller decides *how* the window moves. The hooks are shaped for the
//! controllers the seed paper compares:
//!
//! * [`on_ack`](SctpCc::on_ack): bytes newly acknowledged on this destination;
//! * [`on_loss`](SctpCc::on_loss): a loss on this destination (fast retransmit or T3-rtx
//!   timeout) with the lost chunk's TSN and send time; the controller answers whether it
//!   treated it as a congestion loss (and reduced) or not, so a loss-differentiating
//!   controller (JSCTP) can keep its window on a wireless loss;
//! * [`on_timestamp`](SctpCc::on_timestamp): with `sctp.timestamps`, every DATA packet
//!   carries its send time in a 12-byte chunk and SACKs echo receive times, which this hook
//!   receives per acknowledged packet (a jitter-ratio or receiver-timestamp bandwidth
//!   estimator feeds from it).

use super::config::{SctpCcKind, SctpConfig};
use super::jsctp::Jsctp;
use crate::cc::{AckContext, CongestionEvent, Controller, LossContext, SubflowState, Window};
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

/// A destination's controller.
pub enum SctpCc {
    Rfc4960,
    NewReno {
        /// When the window was last reduced.
        last_reduction: Option<SimTime>,
    },
    /// A coupled controller of `cc/`, fed with the association's destinations as subflows.
    Coupled(Controller),
    /// JSCTP or JSCTP-ABE.
    Jsctp(Box<Jsctp>),
}

impl SctpCc {
    pub fn new(kind: SctpCcKind) -> SctpCc {
        match kind {
            SctpCcKind::Rfc4960 => SctpCc::Rfc4960,
            SctpCcKind::NewReno => SctpCc::NewReno { last_reduction: None },
            SctpCcKind::Lia => SctpCc::Coupled(Controller::by_name("lia").expect("built in")),
            SctpCcKind::Olia => SctpCc::Coupled(Controller::by_name("olia").expect("built in")),
            SctpCcKind::Jsctp | SctpCcKind::JsctpAbe => SctpCc::with_config(&SctpConfig { cc: kind, ..SctpConfig::default() }),
        }
    }

    /// The controller of `c.cc` with the association's settings (JSCTP's k, chunk size and
    /// zero-sample fix).
    pub fn with_config(c: &SctpConfig) -> SctpCc {
        match c.cc {
            SctpCcKind::Jsctp | SctpCcKind::JsctpAbe => {
                let k = c.jsctp_k.unwrap_or(c.chunk as u64);
                SctpCc::Jsctp(Box::new(Jsctp::with_rule(k, c.chunk, c.cc == SctpCcKind::JsctpAbe, c.jsctp_ignore_zero, c.jsctp_losses)))
            }
            kind => SctpCc::new(kind),
        }
    }

    /// JSCTP's smoothed jitter ratio and k/w threshold at window `w`; None for other controllers.
    pub fn jitter(&self, w: &DestWindow) -> Option<(f64, f64)> {
        match self {
            SctpCc::Jsctp(j) => Some(j.jitter(w)),
            _ => None,
        }
    }

    /// JSCTP's jitter-ratio samples taken and ignored for being zero, and its losses taken
    /// for congestion and for wireless; None for other controllers.
    pub fn jsctp_counts(&self) -> Option<(u64, u64, u64, u64)> {
        match self {
            SctpCc::Jsctp(j) => {
                let (taken, ignored) = j.jr.counts();
                Some((taken, ignored, j.congestion, j.wireless))
            }
            _ => None,
        }
    }

    /// True if the controller reads its sibling destinations.
    pub fn is_coupled(&self) -> bool {
        matches!(self, SctpCc::Coupled(_))
    }

    /// The per-path figure a coupled controller shares with its siblings (OLIA's).
    pub fn inter_loss_bytes(&self) -> u64 {
        match self {
            SctpCc::Coupled(c) => c.inter_loss_bytes(),
            _ => 0,
        }
    }

    pub fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        if let SctpCc::Coupled(c) = self {
            c.on_rtt_sample(rtt, now);
        }
    }

    /// Retransmit the next missing chunk on a partial ack in fast recovery.
    pub fn partial_ack_retransmit(&self) -> bool {
        matches!(self, SctpCc::NewReno { .. })
    }

    /// New data sent to this destination was acknowledged. `siblings` holds every
    /// destination's state (this one at `me`) for coupled controllers; empty otherwise.
    pub fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, siblings: &[SubflowState], me: usize) {
        let ctl = match self {
            SctpCc::Coupled(ctl) => ctl,
            SctpCc::Jsctp(j) => return j.on_ack(w, a),
            _ => return rfc4960_growth(w, a),
        };
        if !a.advanced || a.in_fast_recovery || a.bytes_acked == 0 || !a.fully_used {
            return;
        }
        if w.in_slow_start() {
            w.cwnd += a.bytes_acked.min(w.mtu);
            return;
        }
        let ctx = AckContext {
            now: a.now,
            bytes_acked: a.bytes_acked,
            in_flight: a.flight,
            srtt: a.srtt,
            min_rtt: a.min_rtt,
            subflows: siblings,
            me,
            received_at: a.now,
            cw_echo: false,
        };
        let nw = ctl.on_ack(Window { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mtu }, &ctx);
        w.cwnd = nw.cwnd.max(w.mtu);
    }

    pub fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, siblings: &[SubflowState], me: usize) -> LossVerdict {
        match self {
            SctpCc::Coupled(ctl) => {
                // the controller keeps its own books (OLIA's inter-loss bytes, LIA's byte
                // counter); the window follows RFC 4960's decrease
                let ev = match l.kind {
                    LossKind::FastRetransmit => CongestionEvent::FastRetransmit,
                    LossKind::Timeout => CongestionEvent::Timeout,
                };
                let ctx = LossContext {
                    now: l.now,
                    in_flight: l.flight,
                    srtt: l.srtt,
                    min_rtt: l.min_rtt,
                    subflows: siblings,
                    me,
                    cw_echo: false,
                };
                ctl.on_congestion(Window { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mtu }, ev, &ctx);
                rfc4960_reduce(w, l.kind);
                LossVerdict::Congestion
            }
            SctpCc::Rfc4960 => {
                rfc4960_reduce(w, l.kind);
                LossVerdict::Congestion
            }
            SctpCc::Jsctp(j) => j.on_loss(w, l),
            SctpCc::NewReno { last_reduction } => {
                // a timeout always collapses the window (RFC 4960 §7.2.3)
                if l.kind == LossKind::FastRetransmit && last_reduction.is_some_and(|t| l.sent_at < t) {
                    return LossVerdict::NotCongestion;
                }
                *last_reduction = Some(l.now);
                rfc4960_reduce(w, l.kind);
                LossVerdict::Congestion
            }
        }
    }

    /// An echoed send/receive time pair of a packet sent to this destination; `srtt` is the
    /// destination's smoothed RTT.
    pub fn on_timestamp(&mut self, s: &TimestampSample, srtt: Option<Dur>) {
        if let SctpCc::Jsctp(j) = self {
            j.on_timestamp(s, srtt);
        }
    }
}

/// RFC 4960 §7.2.1-7.2.2: slow start and congestion avoidance with partial_bytes_acked, both
/// only when the SACK advanced the ack point, outside fast recovery, with a fully used cwnd.
pub fn rfc4960_growth(w: &mut DestWindow, a: &AckEvent) {
    if !a.advanced || a.in_fast_recovery || a.bytes_acked == 0 {
        return;
    }
    if w.in_slow_start() {
        if a.fully_used {
            w.cwnd += a.bytes_acked.min(w.mtu);
        }
        return;
    }
    w.partial_bytes_acked += a.bytes_acked;
    if w.partial_bytes_acked >= w.cwnd && a.fully_used {
        w.partial_bytes_acked -= w.cwnd;
        w.cwnd += w.mtu;
    }
}

/// RFC 4960 §7.2.3 (fast retransmit) and §7.2.3/§6.3.3 E1 (T3-rtx expiry).
pub fn rfc4960_reduce(w: &mut DestWindow, kind: LossKind) {
    w.ssthresh = (w.cwnd / 2).max(4 * w.mtu);
    w.cwnd = match kind {
        LossKind::FastRetransmit => w.ssthresh,
        LossKind::Timeout => w.mtu,
    };
    w.partial_bytes_acked = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(cwnd: u64, ssthresh: u64) -> DestWindow {
        DestWindow { cwnd, ssthresh, partial_bytes_acked: 0, mtu: 1500 }
    }

    fn ack(bytes: u64, fully_used: bool) -> AckEvent {
        AckEvent {
            now: SimTime::ZERO,
            bytes_acked: bytes,
            advanced: true,
            fully_used,
            in_fast_recovery: false,
            flight: 0,
            srtt: None,
            min_rtt: None,
        }
    }

    #[test]
    fn slow_start_grows_by_at_most_one_mtu_and_only_when_fully_used() {
        let mut cc = SctpCc::new(SctpCcKind::Rfc4960);
        let mut w = win(4380, u64::MAX);
        cc.on_ack(&mut w, &ack(2912, true), &[], 0);
        assert_eq!(w.cwnd, 4380 + 1500);
        cc.on_ack(&mut w, &ack(1456, true), &[], 0);
        assert_eq!(w.cwnd, 4380 + 1500 + 1456);
        let before = w;
        cc.on_ack(&mut w, &ack(2912, false), &[], 0);
        assert_eq!(w, before, "no growth when the window was not fully used");
        cc.on_ack(&mut w, &AckEvent { advanced: false, ..ack(2912, true) }, &[], 0);
        assert_eq!(w, before, "no growth without an advancing ack point");
        cc.on_ack(&mut w, &AckEvent { in_fast_recovery: true, ..ack(2912, true) }, &[], 0);
        assert_eq!(w, before, "no growth in fast recovery");
    }

    #[test]
    fn congestion_avoidance_counts_partial_bytes_acked() {
        let mut cc = SctpCc::new(SctpCcKind::Rfc4960);
        let mut w = win(6000, 3000);
        cc.on_ack(&mut w, &ack(4000, true), &[], 0);
        assert_eq!((w.cwnd, w.partial_bytes_acked), (6000, 4000));
        cc.on_ack(&mut w, &ack(2500, true), &[], 0);
        assert_eq!((w.cwnd, w.partial_bytes_acked), (7500, 500));
        // partial_bytes_acked grows, but cwnd waits for a fully used window
        cc.on_ack(&mut w, &ack(7500, false), &[], 0);
        assert_eq!((w.cwnd, w.partial_bytes_acked), (7500, 8000));
        cc.on_ack(&mut w, &ack(1, true), &[], 0);
        assert_eq!((w.cwnd, w.partial_bytes_acked), (9000, 501));
    }

    #[test]
    fn losses_halve_with_a_floor_of_four_mtus() {
        let mut w = win(20_000, u64::MAX);
        rfc4960_reduce(&mut w, LossKind::FastRetransmit);
        assert_eq!((w.cwnd, w.ssthresh), (10_000, 10_000));
        rfc4960_reduce(&mut w, LossKind::FastRetransmit);
        assert_eq!((w.cwnd, w.ssthresh), (6000, 6000));
        rfc4960_reduce(&mut w, LossKind::Timeout);
        assert_eq!((w.cwnd, w.ssthresh), (1500, 6000));
    }

    #[test]
    fn newreno_reduces_once_per_round_trip() {
        let mut cc = SctpCc::new(SctpCcKind::NewReno);
        let mut w = win(40_000, u64::MAX);
        let loss = |now: u64, sent: u64| LossEvent {
            now: SimTime(now),
            kind: LossKind::FastRetransmit,
            tsn: 1,
            sent_at: SimTime(sent),
            flight: 0,
            srtt: None,
            min_rtt: None,
        };
        assert_eq!(cc.on_loss(&mut w, &loss(100, 50), &[], 0), LossVerdict::Congestion);
        assert_eq!(w.cwnd, 20_000);
        // a chunk sent before that reduction: same window, no second reduction
        assert_eq!(cc.on_loss(&mut w, &loss(150, 90), &[], 0), LossVerdict::NotCongestion);
        assert_eq!(w.cwnd, 20_000);
        // a chunk sent after it: a new round trip
        assert_eq!(cc.on_loss(&mut w, &loss(300, 120), &[], 0), LossVerdict::Congestion);
        assert_eq!(w.cwnd, 10_000);
        let mut std = SctpCc::new(SctpCcKind::Rfc4960);
        assert_eq!(std.on_loss(&mut w, &loss(310, 90), &[], 0), LossVerdict::Congestion);
        assert_eq!(w.cwnd, 6000);
    }
}
