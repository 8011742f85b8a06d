//! NewReno-SCTP: RFC 4960's growth, at most one window reduction per round trip (a loss of a
//! chunk sent before the last reduction does not reduce again, in or out of fast recovery),
//! and NewReno's partial-ack rule (RFC 6582): in fast recovery, a SACK that advances the
//! cumulative ack but not past the recovery point retransmits the next missing chunk at once.

use super::{rfc4960_growth, rfc4960_reduce, AckEvent, DestWindow, LossEvent, LossKind, LossVerdict, SctpController};
use crate::cc::SubflowState;
use crate::time::SimTime;

/// NewReno-SCTP.
#[derive(Default)]
pub struct NewReno {
    /// When the window was last reduced.
    last_reduction: Option<SimTime>,
}

impl SctpController for NewReno {
    fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, _siblings: &[SubflowState], _me: usize) {
        rfc4960_growth(w, a);
    }

    fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, _siblings: &[SubflowState], _me: usize) -> LossVerdict {
        // a timeout always collapses the window (RFC 4960 §7.2.3)
        if l.kind == LossKind::FastRetransmit && self.last_reduction.is_some_and(|t| l.sent_at < t) {
            return LossVerdict::NotCongestion;
        }
        self.last_reduction = Some(l.now);
        rfc4960_reduce(w, l.kind);
        LossVerdict::Congestion
    }

    fn partial_ack_retransmit(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sctp::cc::Rfc4960;

    fn win(cwnd: u64, ssthresh: u64) -> DestWindow {
        DestWindow { cwnd, ssthresh, partial_bytes_acked: 0, mtu: 1500 }
    }

    #[test]
    fn newreno_reduces_once_per_round_trip() {
        let mut cc = NewReno::default();
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
        let mut std = Rfc4960;
        assert_eq!(std.on_loss(&mut w, &loss(310, 90), &[], 0), LossVerdict::Congestion);
        assert_eq!(w.cwnd, 6000);
    }
}
