//! TCP Westwood+ (Grieco & Mascolo, CCR 34(2) 2004; ALGORITHMS.md §6.1) with Linux's
//! bandwidth filter (`net/ipv4/tcp_westwood.c`).
//!
//! Growth is Reno's. The sender's acknowledgement stream is cut into windows of at least one
//! RTT (the latest RTT sample, and never less than 50 ms); at the end of each window the
//! bytes acknowledged in it over its length are one bandwidth sample `b_k`, filtered by two
//! cascaded 7/8 EWMAs as Linux does:
//!
//! ```text
//! bw_ns  = 7/8 · bw_ns  + 1/8 · b_k
//! bw_est = 7/8 · bw_est + 1/8 · bw_ns      (the first sample initialises both)
//! ```
//!
//! On loss the window goes to the bandwidth-delay product the path sustained, instead of
//! half: `ssthresh = max(2, BWE · RTT_min / MSS)` segments (whole segments, as Linux), with
//! `cwnd = min(cwnd, ssthresh)` after duplicate ACKs and one segment after a timeout. When
//! fast recovery ends, `cwnd = ssthresh =` the same figure with the estimate of that moment
//! (Linux's `CA_EVENT_COMPLETE_CWR`). After a timeout the minimum RTT restarts from the next
//! sample (Linux's `reset_rtt_min`).
//!
//! Where this departs from Linux, and why:
//! * Linux counts a duplicate ACK as one MSS delivered and takes it back when the cumulative
//!   ACK moves (`cumul_ack`/`accounted`); here the sender's exact delivered bytes are used
//!   (cumulative plus newly SACKed), which sums to the same over a window without the guess.
//! * Linux keeps its `ssthresh` callback at Reno's halving while in fast recovery and only
//!   applies the estimate when recovery completes; here the estimate is applied on entering
//!   recovery as well (the paper's rule, and ALGORITHMS.md's), so PRR steers towards it.
//! * Rates are kept in bytes per second as floating point, not bytes per jiffy.

use super::{AckContext, CongestionControl, CongestionEvent, LossContext, Reno, Window};
use crate::time::{Dur, SimTime};

/// Shortest bandwidth-sampling window (Linux `TCP_WESTWOOD_RTT_MIN`, HZ/20).
pub const RTT_WINDOW_MIN: Dur = Dur::from_millis(50);

#[derive(Clone, Debug, Default)]
pub struct Westwood {
    acked_in_ca: u64,
    /// Bytes acknowledged in the current sampling window (Linux `bk`).
    bk: u64,
    /// Start of the current sampling window (Linux `rtt_win_sx`).
    win_start: Option<SimTime>,
    /// First and second filter stages, bytes per second.
    bw_ns: f64,
    bw_est: f64,
    /// Latest RTT sample and the minimum RTT.
    rtt: Option<Dur>,
    rtt_min: Option<Dur>,
    reset_rtt_min: bool,
    /// The last congestion event was a fast retransmit (recovery exit applies the estimate).
    in_fast_recovery: bool,
}

impl Westwood {
    /// The bandwidth estimate, bytes per second.
    pub fn bandwidth(&self) -> f64 {
        self.bw_est
    }

    /// Linux `tcp_westwood_bw_rttmin`: BWE · RTT_min in whole segments, at least two; bytes.
    pub fn bw_rtt_min(&self, mss: u64) -> u64 {
        let rtt_min = self.rtt_min.map_or(0.0, |r| r.as_secs_f64());
        let segs = (self.bw_est * rtt_min / mss as f64) as u64;
        segs.max(2) * mss
    }

    /// Linux `westwood_update_window`: closes the sampling window if it is long enough.
    fn update_window(&mut self, now: SimTime) {
        let Some(start) = self.win_start else {
            self.win_start = Some(now);
            return;
        };
        let Some(rtt) = self.rtt else { return };
        let delta = now.since(start);
        if delta > rtt.max(RTT_WINDOW_MIN) {
            let sample = self.bk as f64 / delta.as_secs_f64();
            if self.bw_ns == 0.0 && self.bw_est == 0.0 {
                self.bw_ns = sample;
                self.bw_est = sample;
            } else {
                self.bw_ns = (7.0 * self.bw_ns + sample) / 8.0;
                self.bw_est = (7.0 * self.bw_est + self.bw_ns) / 8.0;
            }
            self.bk = 0;
            self.win_start = Some(now);
        }
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        Reno::increase(&mut self.acked_in_ca, w, ctx.bytes_acked)
    }

    fn wants_deliveries(&self) -> bool {
        true
    }

    fn on_delivery(&mut self, ctx: &AckContext) {
        self.update_window(ctx.now);
        self.bk += ctx.bytes_acked;
    }

    fn wants_rtt_samples(&self) -> bool {
        true
    }

    fn on_rtt_sample(&mut self, rtt: Dur, _now: SimTime) {
        self.rtt = Some(rtt);
        self.rtt_min = match self.rtt_min {
            Some(m) if !self.reset_rtt_min => Some(m.min(rtt)),
            _ => Some(rtt),
        };
        self.reset_rtt_min = false;
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, _ctx: &LossContext) -> Window {
        self.acked_in_ca = 0;
        let ssthresh = self.bw_rtt_min(w.mss);
        match ev {
            CongestionEvent::FastRetransmit => {
                self.in_fast_recovery = true;
                Window { cwnd: w.cwnd.min(ssthresh).max(w.mss), ssthresh, mss: w.mss }
            }
            CongestionEvent::Timeout => {
                self.in_fast_recovery = false;
                self.reset_rtt_min = true;
                Window { cwnd: w.mss, ssthresh, mss: w.mss }
            }
        }
    }

    fn on_recovery_exit(&mut self, w: Window) -> Window {
        if !std::mem::take(&mut self.in_fast_recovery) {
            return w;
        }
        let ssthresh = self.bw_rtt_min(w.mss);
        Window { cwnd: ssthresh, ssthresh, mss: w.mss }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::{self, *};
    use proptest::prelude::*;

    fn at(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }

    fn deliver(c: &mut Westwood, now: SimTime, bytes: u64) {
        c.on_delivery(&AckContext { now, ..ack(bytes, &[], 0) });
    }

    #[test]
    fn filter_is_two_cascaded_eighth_ewmas() {
        let mut c = Westwood::default();
        c.on_rtt_sample(Dur::from_millis(100), at(0));
        deliver(&mut c, at(0), 0); // opens the first window
        // 1000 bytes every 10 ms for 101 ms: the window closes at the ACK after 100 ms
        for i in 1..=11 {
            deliver(&mut c, at(10 * i), 1000);
        }
        // the ACK at 110 ms closes [0, 110) holding the ten earlier ACKs: 10000 B / 0.11 s
        let b1 = 10_000.0 / 0.11;
        assert!((c.bandwidth() - b1).abs() < 1e-6, "{} vs {b1}", c.bandwidth());
        for i in 12..=22 {
            deliver(&mut c, at(10 * i), 2000);
        }
        // second window [110, 220): 1000 (the 110 ms ACK) + 10 x 2000 over 0.11 s
        let b2 = 21_000.0 / 0.11;
        let ns = (7.0 * b1 + b2) / 8.0;
        let est = (7.0 * b1 + ns) / 8.0;
        assert!((c.bandwidth() - est).abs() < 1e-6, "{} vs {est}", c.bandwidth());
    }

    #[test]
    fn windows_are_at_least_50_ms() {
        let mut c = Westwood::default();
        c.on_rtt_sample(Dur::from_millis(5), at(0));
        deliver(&mut c, at(0), 0);
        for i in 1..=50 {
            deliver(&mut c, at(i), 1000);
        }
        assert_eq!(c.bandwidth(), 0.0, "no sample before 50 ms");
        deliver(&mut c, at(51), 1000);
        assert!((c.bandwidth() - 50_000.0 / 0.051).abs() < 1e-6);
    }

    #[test]
    fn loss_sets_ssthresh_to_bandwidth_times_min_rtt() {
        let mut c = Westwood::default();
        c.on_rtt_sample(Dur::from_millis(80), at(0));
        c.on_rtt_sample(Dur::from_millis(40), at(1));
        c.on_rtt_sample(Dur::from_millis(60), at(2));
        // a steady 1 MB/s for 2 s
        deliver(&mut c, at(0), 0);
        for i in 1..=2000 {
            deliver(&mut c, at(i), 1000);
        }
        let bw = c.bandwidth();
        assert!((bw / 1e6 - 1.0).abs() < 0.02, "{bw}");
        // BWE · RTT_min = ~40 000 B = 40 segments of 1000
        let w = Window { cwnd: 100 * MSS, ssthresh: u64::MAX, mss: MSS };
        let fr = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss(100 * MSS, &[], 0));
        let expect = ((bw * 0.04 / MSS as f64) as u64) * MSS;
        assert_eq!((fr.cwnd, fr.ssthresh), (expect, expect));
        // a small window is not raised by a fast retransmit
        let small = Window { cwnd: 10 * MSS, ..w };
        assert_eq!(c.on_congestion(small, CongestionEvent::FastRetransmit, &loss(0, &[], 0)).cwnd, 10 * MSS);
        // recovery end: cwnd = ssthresh = the estimate (Linux COMPLETE_CWR), even upwards
        assert_eq!(c.on_recovery_exit(Window { cwnd: 3 * MSS, ssthresh: 3 * MSS, mss: MSS }).cwnd, expect);
        // but not at the end of a timeout's Loss state
        let to = c.on_congestion(w, CongestionEvent::Timeout, &loss(100 * MSS, &[], 0));
        assert_eq!((to.cwnd, to.ssthresh), (MSS, expect));
        assert_eq!(c.on_recovery_exit(to), to);
        // after a timeout the minimum RTT restarts from the next sample
        c.on_rtt_sample(Dur::from_millis(70), at(3000));
        assert_eq!(c.rtt_min, Some(Dur::from_millis(70)));
    }

    #[test]
    fn without_an_estimate_ssthresh_is_two_segments() {
        let mut c = Westwood::default();
        let w = Window { cwnd: 30 * MSS, ssthresh: u64::MAX, mss: MSS };
        let fr = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss(30 * MSS, &[], 0));
        assert_eq!((fr.cwnd, fr.ssthresh), (2 * MSS, 2 * MSS));
    }

    #[test]
    fn grows_as_reno() {
        let (mut c, mut r) = (Westwood::default(), Reno::default());
        let mut w = Window { cwnd: 10 * MSS, ssthresh: 20 * MSS, mss: MSS };
        let mut wr = w;
        for i in 0..500 {
            let ctx = ack(100 + (i * 37) % 2000, &[], 0);
            w = c.on_ack(w, &ctx);
            wr = r.on_ack(wr, &ctx);
            assert_eq!(w, wr);
        }
    }

    proptest! {
        #[test]
        fn window_invariants((subs, me) in connection(), in_ss in any::<bool>(), events in events(200)) {
            test_support::check_invariants(&mut Westwood::default(), subs, me, in_ss, &events);
        }

        #[test]
        fn estimate_never_exceeds_the_delivery_rate(gaps in proptest::collection::vec((1u64..30, 0u64..5000), 10..400)) {
            // whatever the pattern, the filter averages samples, so it stays below the
            // largest sample and is never negative
            let mut c = Westwood::default();
            c.on_rtt_sample(Dur::from_millis(20), at(0));
            deliver(&mut c, at(0), 0);
            let (mut t, mut max_rate) = (0u64, 0f64);
            let (mut bytes_in_win, mut win_start) = (0u64, 0u64);
            for (g, b) in gaps {
                t += g;
                if t - win_start > 50 {
                    max_rate = max_rate.max(bytes_in_win as f64 / ((t - win_start) as f64 / 1000.0));
                    bytes_in_win = 0;
                    win_start = t;
                }
                deliver(&mut c, at(t), b);
                bytes_in_win += b;
            }
            prop_assert!(c.bandwidth() >= 0.0 && c.bandwidth() <= max_rate * (1.0 + 1e-9), "{} > {max_rate}", c.bandwidth());
        }
    }
}
