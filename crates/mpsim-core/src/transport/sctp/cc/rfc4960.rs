//! RFC 4960's per-destination congestion control (§7.2) as written: slow start and
//! congestion avoidance with partial_bytes_acked, halving (with a floor of four MTUs) on a
//! fast retransmit and collapsing to one MTU on a T3-rtx timeout. The other controllers reuse
//! its growth and reduction.

use super::{AckEvent, DestWindow, LossEvent, LossKind, LossVerdict, SctpController};
use crate::cc::SubflowState;

/// RFC 4960 §7.2.
pub struct Rfc4960;

impl SctpController for Rfc4960 {
    fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, _siblings: &[SubflowState], _me: usize) {
        rfc4960_growth(w, a);
    }

    fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, _siblings: &[SubflowState], _me: usize) -> LossVerdict {
        rfc4960_reduce(w, l.kind);
        LossVerdict::Congestion
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
    use crate::time::SimTime;

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
        let mut cc = Rfc4960;
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
        let mut cc = Rfc4960;
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
}
