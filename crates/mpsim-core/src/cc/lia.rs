//! LIA, the Linked Increases Algorithm of MPTCP (RFC 6356).
//!
//! Each subflow runs Reno's slow start and loss response unchanged; only the congestion
//! avoidance increase is coupled. Per acknowledged byte, subflow i grows by
//!
//! ```text
//! min( alpha·MSS_i / cwnd_total , MSS_i / cwnd_i )
//! alpha = cwnd_total · max_k(cwnd_k / rtt_k²) / (Σ_k cwnd_k / rtt_k)²
//! ```
//!
//! The first term makes the connection as a whole no more aggressive than one TCP flow on its
//! best path; the second (the cap) keeps each subflow no more aggressive than a TCP flow on
//! its own path. Both terms are `MSS / threshold` for a byte threshold, so the rule is
//! written as Reno's byte counter with a larger threshold, as the Linux implementation does:
//! one MSS is added each time `max(cwnd_total / alpha, cwnd_i)` bytes have been acknowledged.
//! The byte counter is an integer, so many small ACKs add up exactly; only the threshold is
//! computed in floating point, in subflow order, so runs are reproducible.
//!
//! `cwnd_total / alpha = (Σ_k cwnd_k / rtt_k)² / max_k(cwnd_k / rtt_k²)` is what is
//! computed: it never divides by alpha, and it is at least the window of the path that
//! attains the maximum, so the threshold stays finite and positive. The coupled set is the
//! caller plus every active sibling with an RTT sample (see `Coupling`); alone in it, the
//! threshold is the caller's own window and LIA is Reno to the byte.

use super::{
    ceil_u64, coupled_on_ack, to_f64, loss_window, AckContext, CongestionControl, CongestionEvent, Coupling,
    LossContext, Window,
};

#[derive(Clone, Debug, Default)]
pub struct Lia {
    /// Bytes acknowledged in congestion avoidance since the last one-MSS increase.
    acked_in_ca: u64,
}

impl Lia {
    /// RFC 6356's alpha over the coupled paths (1 for a path on its own). `threshold` uses
    /// `cwnd_total / alpha` directly; this form is kept to check it against the RFC.
    #[cfg(test)]
    pub(crate) fn alpha(c: &Coupling) -> f64 {
        let (mut total, mut sum_rate, mut max_ratio) = (0.0f64, 0.0f64, 0.0f64);
        for p in c.paths() {
            let (cwnd, rtt) = (p.cwnd as f64, p.rtt_secs());
            total += cwnd;
            sum_rate += cwnd / rtt;
            max_ratio = max_ratio.max(cwnd / (rtt * rtt));
        }
        total * max_ratio / (sum_rate * sum_rate)
    }

    /// Bytes to acknowledge for one MSS of increase: `max(cwnd_total / alpha, cwnd_i)`.
    pub(crate) fn threshold(c: &Coupling) -> u64 {
        let own = c.own().cwnd;
        // Windows and RTTs converted as signed integers: one instruction each, where the
        // unsigned conversion takes six (the compiler turns `to_f64`'s test, inlined in this
        // loop, back into it). That is the same value below 2^63; a value of 2^63 or more
        // (never a window or an RTT in practice) comes out negative, and sets the top bit of
        // the or of every value converted: the sums are then worked out again exactly (inline:
        // out of line, that pass cost register saves on every ACK, benches/results/hot_path.md).
        let (seen, mut sums) = Lia::sums(c, |x| x as i64 as f64);
        if seen >> 63 != 0 {
            sums = Lia::sums(c, to_f64).1;
        }
        let (n, sum_rate, max_ratio) = sums;
        if n <= 1 {
            return own;
        }
        let total_over_alpha = sum_rate * sum_rate / max_ratio;
        if !total_over_alpha.is_finite() {
            return own;
        }
        // rounding up never makes the path more aggressive than the formula
        ceil_u64(total_over_alpha).max(own)
    }

    /// One pass over the coupled paths, each window and RTT converted by `convert`: the or of
    /// every value converted, and the number of paths, `Σ cwnd_k / rtt_k` and
    /// `max cwnd_k / rtt_k²` (RTT in seconds), added and compared in subflow order.
    #[inline(always)]
    fn sums(c: &Coupling, convert: impl Fn(u64) -> f64) -> (u64, (usize, f64, f64)) {
        // (no ratio is NaN, the RTT being at least a nanosecond: a comparison is `f64::max`)
        let (mut seen, mut n, mut sum_rate, mut max_ratio) = (0u64, 0usize, 0.0f64, 0.0f64);
        c.for_each_window_and_rtt(|cwnd, rtt_ns| {
            seen |= cwnd | rtt_ns;
            let (cwnd, rtt) = (convert(cwnd), convert(rtt_ns) * 1e-9);
            let ratio = cwnd / (rtt * rtt);
            n += 1;
            sum_rate += cwnd / rtt;
            if ratio > max_ratio {
                max_ratio = ratio;
            }
        });
        (seen, (n, sum_rate, max_ratio))
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        // The threshold is never below the subflow's own window, so while the bytes counted
        // stay under that window no increase can be due: the coupled sums (a division per
        // path) are computed only on the ACK that may reach the threshold.
        if !w.in_slow_start() && self.acked_in_ca + ctx.bytes_acked < w.cwnd {
            self.acked_in_ca += ctx.bytes_acked;
            return w;
        }
        coupled_on_ack(&mut self.acked_in_ca, w, ctx, Lia::threshold)
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        // RFC 6356 §3: the decrease is TCP's, on the subflow that saw the loss only
        self.acked_in_ca = 0;
        loss_window(w, ev, ctx.halved(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;
    use crate::cc::test_support::*;
    use crate::cc::SubflowState;
    use crate::time::Dur;
    use proptest::prelude::*;


    #[test]
    fn alpha_of_two_equal_subflows_is_one_half() {
        // cwnd_total = 2c, max = c/r², sum = 2c/r: alpha = 2c·(c/r²) / (4c²/r²) = 1/2
        let subs = [sf(10, 50), sf(10, 50)];
        assert!((Lia::alpha(&coupling(&subs, 0)) - 0.5).abs() < 1e-12);
        // n equal subflows: alpha = 1/n
        let subs = [sf(8, 20), sf(8, 20), sf(8, 20), sf(8, 20)];
        assert!((Lia::alpha(&coupling(&subs, 2)) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn alpha_and_threshold_on_hand_examples() {
        // 10 segments at 10 ms and 20 segments at 20 ms (in segments and ms):
        // cwnd_total = 30, max(10/100, 20/400) = 0.1, sum = 10/10 + 20/20 = 2
        // alpha = 30·0.1/4 = 0.75; cwnd_total/alpha = 40 segments
        let subs = [sf(10, 10), sf(20, 20)];
        assert!((Lia::alpha(&coupling(&subs, 0)) - 0.75).abs() < 1e-12);
        assert_eq!(Lia::threshold(&coupling(&subs, 0)), 40 * MSS);
        assert_eq!(Lia::threshold(&coupling(&subs, 1)), 40 * MSS);

        // 10 segments at 10 ms and 10 at 20 ms: cwnd_total = 20, max = 0.1, sum = 1.5
        // alpha = 20·0.1/2.25 = 8/9; cwnd_total/alpha = 22.5 segments
        let subs = [sf(10, 10), sf(10, 20)];
        assert!((Lia::alpha(&coupling(&subs, 1)) - 8.0 / 9.0).abs() < 1e-12);
        assert_eq!(Lia::threshold(&coupling(&subs, 1)), 22_500);
    }

    #[test]
    fn cap_limits_the_large_slow_path_to_reno() {
        // 1 segment at 10 ms and 100 segments at 1 s: sum = 0.1 + 0.1 = 0.2 seg/ms,
        // max = 1/100 seg/ms², cwnd_total/alpha = 0.04/0.01 = 4 segments
        let subs = [sf(1, 10), sf(100, 1000)];
        assert!((Lia::alpha(&coupling(&subs, 0)) - 101.0 * 0.01 / 0.04).abs() < 1e-9);
        // the small fast path is paced by the coupled term
        assert_eq!(Lia::threshold(&coupling(&subs, 0)), 4 * MSS);
        // the coupled term would let the big path grow by 1 MSS per 4 segments acknowledged:
        // the cap holds it to Reno's one per window
        assert_eq!(Lia::threshold(&coupling(&subs, 1)), 100 * MSS);
    }

    /// The threshold worked out over `paths()` with the unsigned conversion, as RFC 6356 reads.
    fn threshold_with_the_unsigned_conversion(c: &Coupling) -> u64 {
        let own = c.own().cwnd;
        let (mut n, mut sum_rate, mut max_ratio) = (0, 0.0f64, 0.0f64);
        for p in c.paths() {
            let (cwnd, rtt) = (p.cwnd as f64, p.rtt_ns as f64 * 1e-9);
            n += 1;
            sum_rate += cwnd / rtt;
            max_ratio = max_ratio.max(cwnd / (rtt * rtt));
        }
        let total_over_alpha = sum_rate * sum_rate / max_ratio;
        if n <= 1 || !total_over_alpha.is_finite() {
            return own;
        }
        (total_over_alpha.ceil() as u64).max(own)
    }

    #[test]
    fn the_signed_conversion_gives_the_threshold_of_the_unsigned_one() {
        // windows and RTTs of 2^63 or more (converted wrongly by the signed conversion, then
        // again exactly) among ordinary ones, on callers inside the snapshot and beyond it
        let mut rng = crate::rng::Rng::from_seed(63);
        let value = |rng: &mut crate::rng::Rng, ordinary: u64| match rng.below(6) {
            0 => (1 << 63) + rng.below(1 << 63),
            1 => rng.next_u64(),
            _ => 1 + rng.below(ordinary),
        };
        let mut large = 0;
        for _ in 0..20_000 {
            let n = 1 + rng.below(8) as usize;
            let subs: Vec<SubflowState> = (0..n)
                .map(|_| SubflowState {
                    cwnd: value(&mut rng, 1 << 30),
                    ssthresh: 0,
                    mss: MSS,
                    srtt: (rng.below(8) > 0).then(|| Dur(value(&mut rng, 1 << 33))),
                    active: rng.below(8) > 0,
                    in_recovery: false,
                    inter_loss_bytes: 0,
                })
                .collect();
            let me = rng.below(n as u64 + 1) as usize;
            let w = Window { cwnd: value(&mut rng, 1 << 30), ssthresh: 0, mss: MSS };
            let c = Coupling::new(w, Some(Dur(value(&mut rng, 1 << 33))), 0, &subs, me).unwrap();
            large += c.paths().any(|p| (p.cwnd | p.rtt_ns) >> 63 != 0) as u32;
            assert_eq!(Lia::threshold(&c), threshold_with_the_unsigned_conversion(&c), "me {me}: {subs:?}, {w:?}");
        }
        assert!(large > 10_000, "{large} couplings with a value of 2^63 or more");
    }

    #[test]
    fn many_small_acks_add_up_exactly() {
        // threshold 40 000 bytes: 40 000 one-byte ACKs make exactly one MSS
        let subs = [sf(10, 10), sf(20, 20)];
        let mut lia = Lia::default();
        let mut w = window_of(&subs[0]);
        for i in 0..40_000 {
            w = lia.on_ack(w, &ack(1, &subs, 0));
            assert_eq!(w.cwnd, if i < 39_999 { 10 * MSS } else { 11 * MSS });
        }
    }

    #[test]
    fn slow_start_and_loss_are_reno() {
        let subs = [sf(10, 10), sf(20, 20)];
        let mut lia = Lia::default();
        let w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        assert_eq!(lia.on_ack(w, &ack(5 * MSS, &subs, 0)).cwnd, 12 * MSS);
        let fr = lia.on_congestion(w, CongestionEvent::FastRetransmit, &loss(9 * MSS, &subs, 0));
        assert_eq!((fr.cwnd, fr.ssthresh), (4500, 4500));
        let to = lia.on_congestion(w, CongestionEvent::Timeout, &loss(MSS, &subs, 0));
        assert_eq!((to.cwnd, to.ssthresh), (MSS, 2 * MSS));
    }

    /// Each of two equal-RTT subflows acknowledges its whole window once per round.
    fn lia_pair_round(lias: &mut [Lia; 2], subs: &mut [SubflowState; 2], loss_every: Option<u64>, acked: &mut [u64; 2]) {
        let acks = [subs[0].cwnd / MSS, subs[1].cwnd / MSS];
        for k in 0..acks[0].max(acks[1]) {
            for i in 0..2 {
                if k >= acks[i] {
                    continue;
                }
                let w = window_of(&subs[i]);
                let w = lias[i].on_ack(w, &ack(MSS, subs, i));
                subs[i].cwnd = w.cwnd;
                acked[i] += 1;
                if loss_every.is_some_and(|n| acked[i].is_multiple_of(n)) {
                    let w = lias[i].on_congestion(w, CongestionEvent::FastRetransmit, &loss(w.cwnd, subs, i));
                    subs[i].cwnd = w.cwnd;
                }
            }
        }
    }

    #[test]
    fn equal_rtt_pair_grows_by_alpha_mss_per_round() {
        // Per round each subflow acknowledges cwnd_i bytes and gains cwnd_i·alpha·MSS/cwnd_total,
        // so the pair gains alpha·MSS = MSS/2 per round in total: half of what one Reno flow
        // with the same total window gains. (Equal-share fairness comes with the decrease:
        // a loss halves one subflow, a quarter of the total; see the next test.)
        let mut subs = [sf(20, 30), sf(20, 30)];
        let mut lias = [Lia::default(), Lia::default()];
        let mut acked = [0, 0];
        let rounds = 200;
        for _ in 0..rounds {
            lia_pair_round(&mut lias, &mut subs, None, &mut acked);
        }
        let lia_gain = (subs[0].cwnd + subs[1].cwnd - 40 * MSS) as f64;
        let mut reno = Reno::default();
        let mut w = Window { cwnd: 40 * MSS, ssthresh: 0, mss: MSS };
        for _ in 0..rounds {
            for _ in 0..w.cwnd / MSS {
                w = reno.on_ack(w, &ack(MSS, &[], 0));
            }
        }
        let reno_gain = (w.cwnd - 40 * MSS) as f64;
        assert_eq!(reno_gain, (rounds * MSS) as f64);
        let ratio = lia_gain / reno_gain;
        assert!((0.45..=0.55).contains(&ratio), "LIA pair gained {lia_gain}, Reno {reno_gain}");
        // and the two subflows stay within one MSS of each other
        assert!(subs[0].cwnd.abs_diff(subs[1].cwnd) <= MSS);
    }

    #[test]
    fn equal_rtt_pair_with_equal_loss_takes_one_reno_share() {
        // A loss every 500 segments on each path: the pair's mean total window is about that
        // of one Reno flow with a loss every 500 segments (RFC 6356 goal 1, equal RTTs).
        let every = 500;
        let rounds = 3000;
        let mut subs = [sf(10, 30), sf(10, 30)];
        let mut lias = [Lia::default(), Lia::default()];
        let mut acked = [0, 0];
        let mut lia_sum = 0u64;
        for r in 0..rounds {
            lia_pair_round(&mut lias, &mut subs, Some(every), &mut acked);
            if r >= rounds / 3 {
                lia_sum += subs[0].cwnd + subs[1].cwnd;
            }
        }
        let mut reno = Reno::default();
        let mut w = Window { cwnd: 10 * MSS, ssthresh: 0, mss: MSS };
        let (mut n, mut reno_sum) = (0u64, 0u64);
        for r in 0..rounds {
            for _ in 0..w.cwnd / MSS {
                w = reno.on_ack(w, &ack(MSS, &[], 0));
                n += 1;
                if n.is_multiple_of(every) {
                    w = reno.on_congestion(w, CongestionEvent::FastRetransmit, &loss(w.cwnd, &[], 0));
                }
            }
            if r >= rounds / 3 {
                reno_sum += w.cwnd;
            }
        }
        let ratio = lia_sum as f64 / reno_sum as f64;
        assert!((0.85..=1.15).contains(&ratio), "LIA pair / Reno mean window = {ratio}");
    }

    proptest! {
        #[test]
        fn alone_it_is_reno(variant in 0u8..5, cwnd in 1u64..200, ssthresh in 2u64..200, evs in events(300)) {
            let start = Window { cwnd: cwnd * MSS, ssthresh: ssthresh * MSS, mss: MSS };
            assert_matches_reno(&mut Lia::default(), start, variant, &evs);
        }

        #[test]
        fn skipping_the_sums_below_the_own_window_changes_nothing((subs, me) in connection(), acks in prop::collection::vec(1u64..=3000, 1..2000)) {
            // `on_ack` computes the coupled threshold only when the counter may reach it; the
            // full rule, computed on every ACK, must give the same windows and counter
            let mss = subs[me].mss;
            let start = Window { cwnd: subs[me].cwnd, ssthresh: mss, mss };
            let (mut lia, mut full) = (Lia::default(), 0u64);
            let (mut w, mut wf) = (start, start);
            let mut subs = subs;
            for b in acks {
                subs[me].cwnd = w.cwnd;
                let ctx = ack(b, &subs, me);
                w = lia.on_ack(w, &ctx);
                wf = coupled_on_ack(&mut full, wf, &ctx, Lia::threshold);
                prop_assert_eq!(w, wf);
                prop_assert_eq!(lia.acked_in_ca, full);
            }
        }

        #[test]
        fn never_grows_faster_than_reno_on_the_same_path((subs, me) in connection(), acks in prop::collection::vec(1u64..=536, 1..2000)) {
            // from the same window and counter, with ACKs of at most one MSS, LIA's window
            // never overtakes Reno's
            let mss = subs[me].mss;
            let start = Window { cwnd: subs[me].cwnd, ssthresh: mss, mss };
            let (mut lia, mut reno) = (Lia::default(), Reno::default());
            let (mut w, mut wr) = (start, start);
            let mut subs = subs;
            for b in acks {
                subs[me].cwnd = w.cwnd;
                w = lia.on_ack(w, &ack(b, &subs, me));
                wr = reno.on_ack(wr, &ack(b, &[], 0));
                prop_assert!(w.cwnd <= wr.cwnd, "LIA {} > Reno {}", w.cwnd, wr.cwnd);
            }
        }

        #[test]
        fn window_invariants_hold((subs, me) in connection(), in_ss: bool, evs in events(400)) {
            check_invariants(&mut Lia::default(), subs, me, in_ss, &evs);
        }
    }
}
