//! TCP New Jersey (Xu, Tian, Ansari, Computer Networks 47(2) 2005; ALGORITHMS.md §6.2):
//! the timestamp-based bandwidth estimate TABE (`tabe.rs`) and the routers' congestion
//! warning (CW).
//!
//! A link with `congestion_warning` marks every data packet while its average queue is above
//! a threshold (`net/link.rs`); the receiver echoes the mark in its ACKs (`cw_echo`). The
//! sender reads a loss by the echo on the acknowledgement that revealed it:
//!
//! * with the echo, **congestion**: the "rate control" procedure, `ssthresh = ownd` (TABE's
//!   `RTT · R_n`, at least two segments) and, in congestion avoidance, `cwnd = ownd`;
//! * without it, a **random** (wireless) loss: the segment is retransmitted and the window
//!   kept as it was.
//!
//! Growth is Reno's. Choices the papers leave open, made here:
//! * [RECONSTRUCTED] In slow start a congestion loss caps cwnd at the new ssthresh (the text
//!   sets `cwnd = ownd` only "in congestion avoidance").
//! * [RECONSTRUCTED] A timeout (the Jersey timeout rule is not confirmed from the paper, see
//!   ALGORITHMS.md) sets `ssthresh = ownd` and restarts from one segment, whatever the echo:
//!   a timeout means the ACK clock stopped, which the CW mark cannot explain away.
//! * [RECONSTRUCTED] The echo consulted for a timeout, or for a loss found by a timer (RACK's
//!   reordering timer), is the one of the latest ACK.
//! * [RECONSTRUCTED] Before TABE has a sample (no RTT or no ACK yet) a congestion loss halves
//!   the flight, as Reno.
//! * [RECONSTRUCTED] RTT in `ownd = RTT · R_n` is the smoothed RTT (ALGORITHMS.md: "the current
//!   RTT estimate"). With a standing queue Q on a link of rate C, `ownd = C·RTT_min + Q`, about
//!   the flight: the response then barely lowers the window and the queue does not drain
//!   (measured in docs/reports/westwood_new_jersey.md). With the minimum RTT it would drain; the
//!   papers do not say which they meant.

use super::tabe::Tabe;
use super::{AckContext, CongestionControl, CongestionEvent, LossContext, Reno, Window};

#[derive(Clone, Debug, Default)]
pub struct NewJersey {
    acked_in_ca: u64,
    tabe: Tabe,
    /// Losses taken for congestion (with the CW echo) and for random (without), fast
    /// retransmits only; timeouts are counted apart.
    pub congestion_losses: u64,
    pub random_losses: u64,
    pub timeouts: u64,
}

impl NewJersey {
    /// TABE's optimal window in bytes, at least two segments; before any estimate (no RTT
    /// or no acknowledgement yet), half the flight as Reno would.
    fn ownd(&self, w: Window, ctx: &LossContext) -> u64 {
        match ctx.srtt {
            Some(rtt) if self.tabe.samples() > 0 => self.tabe.ownd(rtt).max(2 * w.mss),
            _ => ctx.halved(w),
        }
    }

    /// The bandwidth estimate, bytes per second.
    pub fn bandwidth(&self) -> f64 {
        self.tabe.rate()
    }
}

impl CongestionControl for NewJersey {
    fn name(&self) -> &'static str {
        "new_jersey"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        Reno::increase(&mut self.acked_in_ca, w, ctx.bytes_acked)
    }

    fn wants_deliveries(&self) -> bool {
        true
    }

    fn on_delivery(&mut self, ctx: &AckContext) {
        if let Some(rtt) = ctx.srtt {
            self.tabe.on_ack(ctx.received_at, ctx.bytes_acked, rtt);
        }
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        match ev {
            CongestionEvent::FastRetransmit if !ctx.cw_echo => {
                self.random_losses += 1;
                w
            }
            CongestionEvent::FastRetransmit => {
                self.congestion_losses += 1;
                self.acked_in_ca = 0;
                let ssthresh = self.ownd(w, ctx);
                let cwnd = if w.in_slow_start() { w.cwnd.min(ssthresh) } else { ssthresh };
                Window { cwnd: cwnd.max(w.mss), ssthresh, mss: w.mss }
            }
            CongestionEvent::Timeout => {
                self.timeouts += 1;
                self.acked_in_ca = 0;
                Window { cwnd: w.mss, ssthresh: self.ownd(w, ctx), mss: w.mss }
            }
        }
    }

    fn loss_classes(&self) -> Option<(u64, u64)> {
        Some((self.congestion_losses, self.random_losses))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::{self, *};
    use crate::time::{Dur, SimTime};
    use proptest::prelude::*;

    /// A controller that has seen 1000-byte deliveries every ms at the receiver (1 MB/s)
    /// with a 50 ms RTT: ownd = 50 000 bytes.
    fn measured() -> NewJersey {
        let mut c = NewJersey::default();
        let subs = [sf(10, 50)];
        for i in 0..5000u64 {
            c.on_delivery(&AckContext { received_at: SimTime(i * 1_000_000), ..ack(1000, &subs, 0) });
        }
        c
    }

    #[test]
    fn a_loss_without_the_echo_keeps_the_window() {
        let mut c = measured();
        let subs = [sf(80, 50)];
        let w = Window { cwnd: 80 * MSS, ssthresh: 40 * MSS, mss: MSS };
        assert_eq!(c.on_congestion(w, CongestionEvent::FastRetransmit, &loss(80 * MSS, &subs, 0)), w);
        assert_eq!(c.loss_classes(), Some((0, 1)));
    }

    #[test]
    fn a_loss_with_the_echo_moves_to_the_optimal_window() {
        let mut c = measured();
        assert!((c.bandwidth() / 1e6 - 1.0).abs() < 0.01, "{}", c.bandwidth());
        let subs = [sf(80, 50)];
        let ctx = LossContext { cw_echo: true, ..loss(80 * MSS, &subs, 0) };
        let ownd = c.tabe.ownd(Dur::from_millis(50));
        assert!(ownd.abs_diff(50_000) < 500, "{ownd}");
        // congestion avoidance: cwnd = ssthresh = ownd
        let w = Window { cwnd: 80 * MSS, ssthresh: 40 * MSS, mss: MSS };
        let out = c.on_congestion(w, CongestionEvent::FastRetransmit, &ctx);
        assert_eq!((out.cwnd, out.ssthresh), (ownd, ownd));
        // slow start: capped only
        let ss = Window { cwnd: 30 * MSS, ssthresh: u64::MAX, mss: MSS };
        let out = c.on_congestion(ss, CongestionEvent::FastRetransmit, &ctx);
        assert_eq!((out.cwnd, out.ssthresh), (30 * MSS, ownd));
        assert_eq!(c.loss_classes(), Some((2, 0)));
        // a timeout restarts from one segment whatever the echo
        for echo in [false, true] {
            let out = c.on_congestion(w, CongestionEvent::Timeout, &LossContext { cw_echo: echo, ..ctx });
            assert_eq!((out.cwnd, out.ssthresh), (MSS, ownd));
        }
        assert_eq!(c.timeouts, 2);
    }

    #[test]
    fn before_any_estimate_congestion_halves_the_flight() {
        let mut c = NewJersey::default();
        let subs = [sf(20, 50)];
        let w = Window { cwnd: 20 * MSS, ssthresh: 10 * MSS, mss: MSS };
        let out = c.on_congestion(w, CongestionEvent::FastRetransmit, &LossContext { cw_echo: true, ..loss(20 * MSS, &subs, 0) });
        assert_eq!((out.cwnd, out.ssthresh), (10 * MSS, 10 * MSS));
    }

    #[test]
    fn the_estimate_uses_receiver_timestamps_not_ack_arrivals() {
        // the same receiver timestamps, ACKs delivered to the sender at other times: the
        // controller's estimate depends only on the timestamps
        let subs = [sf(10, 50)];
        let (mut a, mut b) = (NewJersey::default(), NewJersey::default());
        for i in 0..3000u64 {
            let rx = SimTime(i * 2_000_000);
            a.on_delivery(&AckContext { received_at: rx, now: SimTime(i * 2_000_000 + 25_000_000), ..ack(1460, &subs, 0) });
            b.on_delivery(&AckContext { received_at: rx, now: SimTime((i / 8) * 16_000_000 + 40_000_000), ..ack(1460, &subs, 0) });
        }
        assert_eq!(a.bandwidth(), b.bandwidth());
        assert!((a.bandwidth() - 730_000.0).abs() / 730_000.0 < 0.01);
    }

    #[test]
    fn grows_as_reno() {
        let (mut c, mut r) = (NewJersey::default(), Reno::default());
        let mut w = Window { cwnd: 3 * MSS, ssthresh: 20 * MSS, mss: MSS };
        let mut wr = w;
        for i in 0..800 {
            let ctx = ack(1 + (i * 53) % 3000, &[], 0);
            w = c.on_ack(w, &ctx);
            wr = r.on_ack(wr, &ctx);
            assert_eq!(w, wr);
        }
    }

    proptest! {
        #[test]
        fn window_invariants((subs, me) in connection(), in_ss in any::<bool>(), events in events(200), echo in any::<bool>()) {
            // drive it as the other controllers, then once more with every loss echoed
            test_support::check_invariants(&mut NewJersey::default(), subs.clone(), me, in_ss, &events);
            let mut c = NewJersey::default();
            let mss = subs[me].mss;
            let mut w = Window { cwnd: subs[me].cwnd, ssthresh: if in_ss { u64::MAX } else { 2 * mss }, mss };
            for (step, ev) in events.iter().enumerate() {
                let srtt = subs[me].srtt;
                let t = SimTime(step as u64 * 1_000_000);
                match *ev {
                    Event::Ack(b) => {
                        let ctx = AckContext { srtt, now: t, received_at: t, ..ack(b, &subs, me) };
                        c.on_delivery(&ctx);
                        w = c.on_ack(w, &ctx);
                    }
                    Event::FastRetransmit { in_flight } | Event::Timeout { in_flight } => {
                        let kind = if matches!(ev, Event::Timeout { .. }) { CongestionEvent::Timeout } else { CongestionEvent::FastRetransmit };
                        let before = w;
                        w = c.on_congestion(w, kind, &LossContext { srtt, cw_echo: echo, ..loss(in_flight, &subs, me) });
                        if kind == CongestionEvent::FastRetransmit && !echo {
                            prop_assert_eq!(w, before, "a random loss keeps the window");
                        }
                    }
                }
                prop_assert!(w.cwnd >= mss && w.mss == mss);
                prop_assert!(w.ssthresh >= 2 * mss, "ssthresh {} at step {}", w.ssthresh, step);
            }
        }
    }
}
