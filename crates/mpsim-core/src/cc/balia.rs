//! BALIA, Balanced Linked Adaptation (Peng, Walid, Hwang, Low, "Multipath TCP: Analysis,
//! Design and Implementation", IEEE/ACM ToN 2016).
//!
//! With x_k = w_k / rtt_k the rate of path k (windows in segments) and
//! alpha_r = max_k x_k / x_r (≥ 1: how far path r lags behind the fastest path),
//!
//! ```text
//! per segment ACKed on r:  w_r += x_r / (rtt_r · (Σ_k x_k)²) · (1 + alpha_r)/2 · (4 + alpha_r)/5
//! per loss on r:           w_r -= (w_r / 2) · min(alpha_r, 3/2)
//! ```
//!
//! The increase balances LIA's friendliness against OLIA's responsiveness: a lagging path
//! (large alpha) grows faster and, on loss, backs off more, up to three quarters of its
//! window. With one path alpha = 1 and both rules are Reno's.
//!
//! Increase, implemented like Reno's byte counter: substituting alpha = x_max / x_r, the
//! per-segment increase is `(x_r + x_max)(4 x_r + x_max) / (10 · w_r · S²)` with S = Σ x_k,
//! so one MSS is added each time
//!
//! ```text
//! threshold = 10 · cwnd_r · S² / ((x_r + x_max)(4 x_r + x_max))   bytes
//! ```
//!
//! have been acknowledged (the Linux kernel's form). With one path the threshold is cwnd_r,
//! exactly Reno's. With several it is always more than cwnd_r (the per-segment increase is at
//! most 0.4/w_r when another path exists), so BALIA never grows a path faster than Reno would.
//! The counter is an integer; only the threshold is computed in floating point, in subflow
//! order.
//!
//! Decrease: the window that is cut is the flight size, as in Reno (RFC 5681), so that one
//! path reduces to Reno exactly: `ssthresh = max(flight · (1 − min(alpha_r, 3/2)/2), 2 MSS)`,
//! cwnd = ssthresh after a fast retransmit and one MSS after a timeout. alpha_r is taken from
//! the windows at the moment of the loss, before the cut.

use super::{
    ceil_u64, coupled_on_ack, loss_window, AckContext, CongestionControl, CongestionEvent, Coupling, LossContext,
    Window,
};

#[derive(Clone, Debug, Default)]
pub struct Balia {
    /// Bytes acknowledged in congestion avoidance since the last one-MSS increase.
    acked_in_ca: u64,
}

/// Rates of the caller, of the fastest path and their sum, in segments per second.
fn rates(c: &Coupling) -> (f64, f64, f64) {
    let (mut sum, mut max) = (0.0f64, 0.0f64);
    for p in c.paths() {
        let x = p.segments() / p.rtt_secs();
        sum += x;
        max = max.max(x);
    }
    let own = c.own();
    (own.segments() / own.rtt_secs(), max, sum)
}

impl Balia {
    /// alpha_r = max_k x_k / x_r of the caller (1 when it is alone or the fastest).
    pub(crate) fn alpha(c: &Coupling) -> f64 {
        let (x_r, x_max, _) = rates(c);
        let a = x_max / x_r;
        if a.is_finite() {
            a.max(1.0)
        } else {
            1.0
        }
    }

    /// Window increase of the caller per segment acknowledged, in segments: the formula as
    /// published, kept to check `threshold` (what `on_ack` uses) against it.
    #[cfg(test)]
    pub(crate) fn increase_per_segment(c: &Coupling) -> f64 {
        let (x_r, _, sum) = rates(c);
        let a = Balia::alpha(c);
        x_r / (c.own().rtt_secs() * sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0
    }

    /// Bytes to acknowledge per one-MSS increase.
    pub(crate) fn threshold(c: &Coupling) -> u64 {
        let own = c.own().cwnd;
        if c.len() <= 1 {
            return own;
        }
        let (x_r, x_max, sum) = rates(c);
        let t = 10.0 * own as f64 * sum * sum / ((x_r + x_max) * (4.0 * x_r + x_max));
        if !t.is_finite() {
            return own;
        }
        // t ≥ cwnd holds exactly; the max only absorbs rounding
        ceil_u64(t).max(own)
    }

    /// ssthresh after a loss: `flight − (flight/2)·min(alpha, 3/2)`, at least 2 MSS.
    pub(crate) fn reduced(flight: u64, alpha: f64, mss: u64) -> u64 {
        // keep = flight·(2 − m)/2 with m = min(alpha, 3/2) in 32-bit fixed point, so that
        // alpha = 1 gives flight/2 rounded down, Reno's ssthresh to the byte
        const ONE: u128 = 1 << 32;
        let m = (alpha.clamp(1.0, 1.5) * ONE as f64).round() as u128;
        let keep = (flight as u128 * (2 * ONE - m)) / (2 * ONE);
        (keep as u64).max(2 * mss)
    }
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        coupled_on_ack(&mut self.acked_in_ca, w, ctx, Balia::threshold)
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        self.acked_in_ca = 0;
        let alpha = match Coupling::new(w, ctx.srtt, 0, ctx.subflows, ctx.me) {
            Some(c) => Balia::alpha(&c),
            None => 1.0,
        };
        loss_window(w, ev, Balia::reduced(ctx.in_flight, alpha, w.mss))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::*;
    use crate::cc::halved_ssthresh;
    use proptest::prelude::*;


    #[test]
    fn increase_on_a_hand_example() {
        // 10 segments at 10 ms (x = 1000 seg/s) and 10 at 20 ms (x = 500): S = 1500.
        let subs = [sf(10, 10), sf(10, 20)];
        // slow path: alpha = 2; 500/(0.02·1500²)·(3/2)·(6/5) = 1/90·1.8 = 0.02 segment per
        // segment: one MSS per 50 segments; kernel form 10·10·1500²/(1500·3000) = 50
        let slow = coupling(&subs, 1);
        assert_eq!(Balia::alpha(&slow), 2.0);
        assert!((Balia::increase_per_segment(&slow) - 0.02).abs() < 1e-12);
        assert_eq!(Balia::threshold(&slow), 50 * MSS);
        // fast path: alpha = 1; 1000/(0.01·1500²)·1·1 = 2/45: one MSS per 22.5 segments
        let fast = coupling(&subs, 0);
        assert_eq!(Balia::alpha(&fast), 1.0);
        assert!((Balia::increase_per_segment(&fast) - 2.0 / 45.0).abs() < 1e-12);
        assert_eq!(Balia::threshold(&fast), 22_500);
    }

    #[test]
    fn threshold_is_the_published_increase_inverted() {
        let subs = [sf(7, 13), sf(31, 45), sf(12, 80)];
        for me in 0..3 {
            let c = coupling(&subs, me);
            let from_formula = MSS as f64 / Balia::increase_per_segment(&c);
            assert!((Balia::threshold(&c) as f64 - from_formula).abs() <= 1.0, "path {me}");
            assert!(Balia::threshold(&c) > subs[me].cwnd, "never faster than Reno");
        }
    }

    #[test]
    fn equal_paths_grow_at_a_quarter_of_reno_each() {
        // two equal paths: alpha = 1, S = 2x: x/(rtt·4x²) = 1/(4w)
        let subs = [sf(10, 25), sf(10, 25)];
        assert_eq!(Balia::threshold(&coupling(&subs, 0)), 40 * MSS);
        let mut balia = Balia::default();
        let mut w = window_of(&subs[0]);
        for _ in 0..40 * MSS {
            w = balia.on_ack(w, &ack(1, &subs, 0));
        }
        assert_eq!(w.cwnd, 11 * MSS, "40 000 one-byte ACKs make one MSS");
    }

    #[test]
    fn decrease_factor_is_min_alpha_three_halves() {
        // flight 20 segments
        let f = 20 * MSS;
        // alpha = 1: halve, like Reno
        assert_eq!(Balia::reduced(f, 1.0, MSS), 10 * MSS);
        // alpha = 1.2: lose 0.6 of the window
        assert_eq!(Balia::reduced(f, 1.2, MSS), 8 * MSS);
        // alpha = 2 or more: capped at 1.5, lose three quarters
        assert_eq!(Balia::reduced(f, 2.0, MSS), 5 * MSS);
        assert_eq!(Balia::reduced(f, 40.0, MSS), 5 * MSS);
        // never below 2 MSS
        assert_eq!(Balia::reduced(4 * MSS, 1.5, MSS), 2 * MSS);
        // Reno's rounding for odd flights
        for flight in [0, 1, 999, 4001, 123_457] {
            assert_eq!(Balia::reduced(flight, 1.0, MSS), halved_ssthresh(flight, MSS));
        }
    }

    #[test]
    fn loss_on_a_lagging_path_cuts_deeper() {
        // x = 1000 and 600 seg/s: the slow path has alpha = 5/3 → factor 1.5
        // and a path at x = 1000 vs 800 has alpha = 1.25 → keep 1 − 0.625 = 0.375
        let mut balia = Balia::default();
        let subs = [sf(10, 10), sf(12, 20)];
        let w = window_of(&subs[1]);
        let fr = balia.on_congestion(w, CongestionEvent::FastRetransmit, &loss(12 * MSS, &subs, 1));
        assert_eq!((fr.cwnd, fr.ssthresh), (3 * MSS, 3 * MSS));
        let to = balia.on_congestion(w, CongestionEvent::Timeout, &loss(12 * MSS, &subs, 1));
        assert_eq!((to.cwnd, to.ssthresh), (MSS, 3 * MSS));
        let subs = [sf(10, 10), sf(16, 20)];
        let fr = balia.on_congestion(window_of(&subs[1]), CongestionEvent::FastRetransmit, &loss(16 * MSS, &subs, 1));
        assert_eq!(fr.ssthresh, 6 * MSS);
        // the fastest path halves
        let fr = balia.on_congestion(window_of(&subs[0]), CongestionEvent::FastRetransmit, &loss(10 * MSS, &subs, 0));
        assert_eq!(fr.ssthresh, 5 * MSS);
    }

    proptest! {
        #[test]
        fn alone_it_is_reno(variant in 0u8..5, cwnd in 1u64..200, ssthresh in 2u64..200, evs in events(300)) {
            let start = Window { cwnd: cwnd * MSS, ssthresh: ssthresh * MSS, mss: MSS };
            assert_matches_reno(&mut Balia::default(), start, variant, &evs);
        }

        #[test]
        fn window_invariants_hold((subs, me) in connection(), in_ss: bool, evs in events(400)) {
            check_invariants(&mut Balia::default(), subs, me, in_ss, &evs);
        }

        #[test]
        fn alpha_is_at_least_one_and_finite((subs, me) in connection()) {
            if let Some(c) = Coupling::new(window_of(&subs[me]), subs[me].srtt, 0, &subs, me) {
                let a = Balia::alpha(&c);
                prop_assert!(a.is_finite() && a >= 1.0);
                prop_assert!(Balia::threshold(&c) >= subs[me].cwnd);
            }
        }
    }
}
