//! NewReno window rules (RFC 5681 §3.1, RFC 3465 byte counting, RFC 6582 response).
//!
//! Slow start grows by the bytes acknowledged, at most 2·MSS per ACK (ABC with L = 2), so a
//! delayed ACK covering two segments grows the window as two ACKs would. Congestion avoidance
//! adds one MSS each time a full window of bytes has been acknowledged: +1 MSS per RTT, with
//! integer arithmetic only.

use super::{AckContext, CongestionControl, CongestionEvent, LossContext, Window};

#[derive(Clone, Debug, Default)]
pub struct Reno {
    /// Bytes acknowledged in congestion avoidance since the last one-MSS increase.
    acked_in_ca: u64,
}

impl Reno {
    /// The Reno increase, shared with controllers that fall back to it.
    pub fn increase(acked_in_ca: &mut u64, w: Window, bytes_acked: u64) -> Window {
        let mut w = w;
        if w.in_slow_start() {
            w.cwnd += bytes_acked.min(2 * w.mss);
            *acked_in_ca = 0;
        } else {
            *acked_in_ca += bytes_acked;
            if *acked_in_ca >= w.cwnd {
                *acked_in_ca -= w.cwnd;
                w.cwnd += w.mss;
            }
        }
        w
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        Reno::increase(&mut self.acked_in_ca, w, ctx.bytes_acked)
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        self.acked_in_ca = 0;
        let ssthresh = ctx.halved(w);
        let cwnd = match ev {
            CongestionEvent::FastRetransmit => ssthresh,
            // RFC 5681: the loss window is one segment
            CongestionEvent::Timeout => w.mss,
        };
        Window { cwnd, ssthresh, mss: w.mss }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    const MSS: u64 = 1000;

    fn ack(bytes: u64) -> AckContext<'static> {
        AckContext { now: SimTime::ZERO, bytes_acked: bytes, in_flight: 0, srtt: None, min_rtt: None, subflows: &[], me: 0, received_at: SimTime::ZERO, cw_echo: false }
    }

    #[test]
    fn slow_start_doubles_per_window() {
        let mut r = Reno::default();
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        for _ in 0..10 {
            w = r.on_ack(w, &ack(MSS));
        }
        assert_eq!(w.cwnd, 20 * MSS);
    }

    #[test]
    fn slow_start_counts_at_most_two_segments_per_ack() {
        let mut r = Reno::default();
        let w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        assert_eq!(r.on_ack(w, &ack(5 * MSS)).cwnd, 12 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut r = Reno::default();
        let mut w = Window { cwnd: 10 * MSS, ssthresh: 5 * MSS, mss: MSS };
        for _ in 0..10 {
            w = r.on_ack(w, &ack(MSS));
        }
        assert_eq!(w.cwnd, 11 * MSS);
        for _ in 0..10 {
            w = r.on_ack(w, &ack(MSS));
        }
        assert_eq!(w.cwnd, 11 * MSS, "needs 11 more segments at cwnd 11");
        w = r.on_ack(w, &ack(MSS));
        assert_eq!(w.cwnd, 12 * MSS);
    }

    #[test]
    fn loss_halves_flight_and_timeout_resets_to_one_segment() {
        let mut r = Reno::default();
        let w = Window { cwnd: 20 * MSS, ssthresh: u64::MAX, mss: MSS };
        let ctx = LossContext { now: SimTime::ZERO, in_flight: 20 * MSS, srtt: None, min_rtt: None, subflows: &[], me: 0, cw_echo: false, halve_cwnd: false };
        let fr = r.on_congestion(w, CongestionEvent::FastRetransmit, &ctx);
        assert_eq!((fr.cwnd, fr.ssthresh), (10 * MSS, 10 * MSS));
        let to = r.on_congestion(w, CongestionEvent::Timeout, &ctx);
        assert_eq!((to.cwnd, to.ssthresh), (MSS, 10 * MSS));
        let small = LossContext { in_flight: MSS, ..ctx };
        assert_eq!(r.on_congestion(w, CongestionEvent::FastRetransmit, &small).ssthresh, 2 * MSS);
    }

    #[test]
    fn linux_halves_the_window_not_the_flight() {
        // a window of 20 segments of which 6 were in flight (the receive window held the
        // sender back): RFC 5681 halves the flight, Linux's tcp_reno_ssthresh the window
        let mut r = Reno::default();
        let w = Window { cwnd: 20 * MSS, ssthresh: u64::MAX, mss: MSS };
        let ctx = LossContext { now: SimTime::ZERO, in_flight: 6 * MSS, srtt: None, min_rtt: None, subflows: &[], me: 0, cw_echo: false, halve_cwnd: false };
        assert_eq!(r.on_congestion(w, CongestionEvent::Timeout, &ctx).ssthresh, 3 * MSS);
        let linux = LossContext { halve_cwnd: true, ..ctx };
        let to = r.on_congestion(w, CongestionEvent::Timeout, &linux);
        assert_eq!((to.cwnd, to.ssthresh), (MSS, 10 * MSS));
        assert_eq!(r.on_congestion(w, CongestionEvent::FastRetransmit, &linux).ssthresh, 10 * MSS);
        let tiny = Window { cwnd: 3 * MSS, ..w };
        assert_eq!(r.on_congestion(tiny, CongestionEvent::FastRetransmit, &linux).ssthresh, 2 * MSS);
    }
}
