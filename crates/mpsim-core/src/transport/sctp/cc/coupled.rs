//! LIA (RFC 6356) or OLIA (Khalili et al.) across the association's destinations, as INET's
//! `cmtCCVariant = "lia"` / `"olia"`: the congestion-avoidance increase is coupled (mpsim's
//! `cc::Lia` and `cc::Olia`, the destinations as subflows); slow start, the decrease and every
//! RFC 4960 gate (advancing ack point, fully used cwnd, fast recovery) stay SCTP's.

use super::{rfc4960_reduce, AckEvent, DestWindow, LossEvent, LossKind, LossVerdict, SctpController};
use crate::cc::{AckContext, CongestionEvent, Controller, LossContext, SubflowState, Window};
use crate::time::{Dur, SimTime};

/// A coupled controller of `cc/`, fed with the association's destinations as subflows.
pub struct Coupled(Controller);

impl Coupled {
    /// The coupling of the TCP controller `name` ("lia" or "olia").
    pub fn new(name: &str) -> Coupled {
        Coupled(Controller::by_name(name).expect("a built-in controller"))
    }
}

impl SctpController for Coupled {
    fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, siblings: &[SubflowState], me: usize) {
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
        let nw = self.0.on_ack(Window { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mtu }, &ctx);
        w.cwnd = nw.cwnd.max(w.mtu);
    }

    fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, siblings: &[SubflowState], me: usize) -> LossVerdict {
        // the controller keeps its own books (OLIA's inter-loss bytes, LIA's byte counter);
        // the window follows RFC 4960's decrease
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
            halve_cwnd: false,
        };
        self.0.on_congestion(Window { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mtu }, ev, &ctx);
        rfc4960_reduce(w, l.kind);
        LossVerdict::Congestion
    }

    fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        self.0.on_rtt_sample(rtt, now);
    }

    fn is_coupled(&self) -> bool {
        true
    }

    fn inter_loss_bytes(&self) -> u64 {
        self.0.inter_loss_bytes()
    }
}
