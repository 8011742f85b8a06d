//! No window control of its own: the rate is the receiver's. With `scheduler = "mptcp_rec"`
//! the receiver emulates TCP per path and advertises a desired sending rate; the scheduler
//! paces new data on each path at that rate (seed 000's PCDer is rate-based, not
//! cwnd-based). The window this controller keeps is only a safety bound on the flight:
//! * it opens fast (by twice the bytes acknowledged per ACK, up to [`CAP`]), so that pacing,
//!   not the window, sets the rate;
//! * fast retransmit leaves it open: the receiver's emulation already halves its window, and
//!   the rate it advertises follows;
//! * a retransmission timeout shrinks it to one segment, so what the sender retransmits after
//!   a timeout leaves in a slow start instead of a burst of the whole flight.

use super::{AckContext, CongestionControl, CongestionEvent, LossContext, Window};

/// The largest window, bytes (far above any flight the receive buffer allows).
pub const CAP: u64 = 1 << 30;

#[derive(Clone, Debug, Default)]
pub struct ReceiverRate;

impl CongestionControl for ReceiverRate {
    fn name(&self) -> &'static str {
        "receiver_rate"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        Window { cwnd: (w.cwnd + 2 * ctx.bytes_acked).min(CAP), ssthresh: CAP, mss: w.mss }
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, _ctx: &LossContext) -> Window {
        match ev {
            CongestionEvent::FastRetransmit => Window { ssthresh: CAP, ..w },
            CongestionEvent::Timeout => Window { cwnd: w.mss, ssthresh: CAP, mss: w.mss },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    fn ack(bytes: u64) -> AckContext<'static> {
        AckContext { now: SimTime::ZERO, bytes_acked: bytes, in_flight: 0, srtt: None, min_rtt: None, subflows: &[], me: 0, received_at: SimTime::ZERO, cw_echo: false }
    }

    fn loss() -> LossContext<'static> {
        LossContext { now: SimTime::ZERO, in_flight: 50_000, srtt: None, min_rtt: None, subflows: &[], me: 0, cw_echo: false, halve_cwnd: false }
    }

    #[test]
    fn opens_fast_keeps_the_window_on_fast_retransmit_and_shrinks_on_timeout() {
        let mut c = ReceiverRate;
        let w = Window { cwnd: 10_000, ssthresh: u64::MAX, mss: 1000 };
        let w = c.on_ack(w, &ack(1000));
        assert_eq!(w.cwnd, 12_000);
        let w2 = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss());
        assert_eq!(w2.cwnd, 12_000);
        let w3 = c.on_congestion(w, CongestionEvent::Timeout, &loss());
        assert_eq!(w3.cwnd, 1000);
        let big = Window { cwnd: CAP - 10, ssthresh: CAP, mss: 1000 };
        assert_eq!(c.on_ack(big, &ack(1000)).cwnd, CAP);
    }
}
