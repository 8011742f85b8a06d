//! The jitter ratio of JTCP and JSCTP (ALGORITHMS.md §6.3-6.4; seed 003 §3.1-3.2, eq. 7-8,
//! Algorithms 1-2), as building blocks independent of any transport: a per-path estimator
//! fed with (packet number, send time, receive time) samples, and the loss response that
//! decides from it whether a loss is congestion or wireless.
//!
//! Inter-arrival jitter of packets i < j, S the send and R the receive times:
//! `D(i, j) = (R_j − R_i) − (S_j − S_i)`, the growth of the one-way delay between them, i.e.
//! of the queue they met. The average jitter ratio over the last window,
//!
//! ```text
//! Jr = D(n − m·w/s, n) / (R_n − R_{n − m·w/s})
//! ```
//!
//! (n the latest packet with a known receive time, w/s the window in packets, m = 1) estimates
//! the share of arrivals that queued. It is sampled once per round trip and smoothed,
//! `smooth = (1 − α)·smooth + α·Jr` with α = 0.05, and samples of exactly zero are ignored
//! (JSCTP's fix for the "ineffective jitter ratio": when the first and the last packet of the
//! window met the same queue the sample says nothing). A loss is congestion when
//! `smooth ≥ k/w` (k in bytes, k = one MSS in the paper; w the window in bytes).
//!
//! Choices the paper leaves open, made here:
//! * [RECONSTRUCTED] Packets are numbered by the caller (SCTP: the TSN; one number per
//!   packet). When the packet `n − w/s` has no receive time (it was lost, or is not yet
//!   acknowledged), the oldest known packet numbered at least `n − w/s` stands for it; a
//!   window with fewer than two known packets, or no receive-time spread, gives no sample.
//! * [RECONSTRUCTED] "Once per RTT": a sample is taken when at least one smoothed RTT has
//!   passed since the previous one (the first as soon as two packets are known).
//! * [RECONSTRUCTED] Before any sample the smoothed ratio is 0, so every loss reads as
//!   wireless until the path has been measured for one round trip.
//! * [RECONSTRUCTED] Algorithm 2's congestion branch lost its window value in the text
//!   ("cwnd = Retransmit lost packet"); it is one MSS, SCTP's T3-rtx rule (RFC 4960 §7.2.3).
//! * [RECONSTRUCTED] Algorithm 1 sets cwnd to the new ssthresh "if in congestion avoidance";
//!   in slow start the window is only capped at the new ssthresh.
//! * The decision uses `≥` as the pseudocode does (the flow chart writes `>`).
//! * [RECONSTRUCTED] The "Next RTT" check: a loss within one smoothed RTT of the last window
//!   adjustment retransmits without touching the window, as NewReno's one reduction per window.
//! * ssthresh never goes below two MSS, as every other controller here.

use super::Window;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// JSCTP's smoothing gain.
pub const ALPHA: f64 = 0.05;
/// Most packets remembered per path: more than any window the estimator is asked about.
pub const MAX_SAMPLES: usize = 1 << 16;

/// One packet whose receive time is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    n: u64,
    sent: SimTime,
    received: SimTime,
}

/// The per-path jitter-ratio estimator.
#[derive(Clone, Debug)]
pub struct JitterRatio {
    /// Known packets, in increasing number.
    samples: VecDeque<Sample>,
    smooth: f64,
    alpha: f64,
    /// Ignore samples of exactly zero (JSCTP's fix); off reproduces plain JTCP smoothing.
    ignore_zero: bool,
    /// Windows measured over `m` round trips (m = 1 in the paper).
    m: u64,
    last_sample_at: Option<SimTime>,
    last: Option<f64>,
    taken: u64,
    ignored: u64,
}

impl Default for JitterRatio {
    fn default() -> Self {
        JitterRatio::new(ALPHA, true)
    }
}

impl JitterRatio {
    /// An estimator with smoothing gain `alpha` and the zero-sample fix on or off.
    pub fn new(alpha: f64, ignore_zero: bool) -> JitterRatio {
        JitterRatio {
            samples: VecDeque::new(),
            smooth: 0.0,
            alpha,
            ignore_zero,
            m: 1,
            last_sample_at: None,
            last: None,
            taken: 0,
            ignored: 0,
        }
    }

    /// Measures over `m` windows instead of one (the paper's m; at least 1).
    pub fn with_windows(mut self, m: u64) -> JitterRatio {
        self.m = m.max(1);
        self
    }

    /// Packet `n` (numbered by the caller, one number per packet) was sent at `sent` and
    /// received at `received`. Packets may be reported in any order; a number already known
    /// is ignored (the first report stands).
    pub fn record(&mut self, n: u64, sent: SimTime, received: SimTime) {
        let s = Sample { n, sent, received };
        match self.samples.back() {
            Some(b) if b.n >= n => {
                let i = self.samples.partition_point(|x| x.n < n);
                if self.samples.get(i).is_some_and(|x| x.n == n) {
                    return;
                }
                self.samples.insert(i, s);
            }
            _ => self.samples.push_back(s),
        }
        if self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// The average jitter ratio over the last `m` windows of `window_pkts` packets ending at
    /// the newest known packet (eq. 7), without smoothing; None when it cannot be computed.
    pub fn window_ratio(&self, window_pkts: u64) -> Option<f64> {
        let last = *self.samples.back()?;
        let from = last.n.saturating_sub(self.m * window_pkts.max(1));
        let i = self.samples.partition_point(|x| x.n < from);
        let first = *self.samples.get(i)?;
        if first.n >= last.n || last.received <= first.received {
            return None;
        }
        let dr = last.received.0 as i128 - first.received.0 as i128;
        let ds = last.sent.0 as i128 - first.sent.0 as i128;
        Some((dr - ds) as f64 / dr as f64)
    }

    /// Takes a sample if one smoothed RTT (`rtt`) has passed since the last one, and folds it
    /// into the smoothed ratio (eq. 8; zero samples skipped with the fix on). Returns the raw
    /// sample when one was taken.
    pub fn maybe_sample(&mut self, now: SimTime, rtt: Dur, window_pkts: u64) -> Option<f64> {
        if self.last_sample_at.is_some_and(|t| now < t + rtt) {
            return None;
        }
        let jr = self.window_ratio(window_pkts)?;
        self.last_sample_at = Some(now);
        self.last = Some(jr);
        self.taken += 1;
        if jr == 0.0 && self.ignore_zero {
            self.ignored += 1;
        } else {
            self.smooth = (1.0 - self.alpha) * self.smooth + self.alpha * jr;
        }
        Some(jr)
    }

    /// The smoothed jitter ratio.
    pub fn smoothed(&self) -> f64 {
        self.smooth
    }

    /// The latest raw sample.
    pub fn last_sample(&self) -> Option<f64> {
        self.last
    }

    /// Samples taken, and of those ignored for being zero.
    pub fn counts(&self) -> (u64, u64) {
        (self.taken, self.ignored)
    }

    /// The k/w threshold: `k_bytes / cwnd_bytes`.
    pub fn threshold(k_bytes: u64, cwnd_bytes: u64) -> f64 {
        k_bytes as f64 / cwnd_bytes.max(1) as f64
    }

    /// The loss differentiation: congestion when the smoothed ratio reaches k/w.
    pub fn is_congestion(&self, k_bytes: u64, cwnd_bytes: u64) -> bool {
        self.smooth >= JitterRatio::threshold(k_bytes, cwnd_bytes)
    }
}

/// What a loss was taken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossClass {
    /// Congestion: the window moves to the bandwidth estimate.
    Congestion,
    /// Wireless (random) loss: retransmit, the window is kept (Algorithm 1) or resumed at
    /// the estimate (Algorithm 2).
    Wireless,
    /// The window was already adjusted in this round trip: retransmit only.
    SameRtt,
}

/// JSCTP's loss response (Algorithms 1 and 2), with k configurable.
#[derive(Clone, Debug, PartialEq)]
pub struct JsctpResponse {
    /// The k of the k/w threshold, bytes (the paper's best: one MSS).
    pub k_bytes: u64,
    /// Who decides the class of a loss: the jitter ratio (JSCTP), or a control that takes
    /// every loss for one class.
    pub rule: LossRule,
    /// When the window was last adjusted (the "Next RTT" check).
    adjusted_at: Option<SimTime>,
}

/// How JSCTP classes a loss (`sctp.jsctp_losses`). The two controls switch the jitter-ratio
/// differentiation off and keep everything else of JSCTP (its responses, TABE for JSCTP-ABE,
/// the Next-RTT check): they tell what the differentiation itself contributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossRule {
    /// The paper's: congestion when the smoothed jitter ratio reaches k/w.
    #[default]
    Jitter,
    /// Control: every loss is taken for a wireless loss.
    Wireless,
    /// Control: every loss is taken for congestion.
    Congestion,
}

impl LossRule {
    pub const NAMES: [(&'static str, LossRule); 3] =
        [("jitter", LossRule::Jitter), ("wireless", LossRule::Wireless), ("congestion", LossRule::Congestion)];

    pub fn by_name(name: &str) -> Option<LossRule> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, r)| r)
    }
}

impl JsctpResponse {
    pub fn new(k_bytes: u64) -> JsctpResponse {
        JsctpResponse { k_bytes, rule: LossRule::Jitter, adjusted_at: None }
    }

    /// The same response with the losses classed by `rule`.
    pub fn with_rule(k_bytes: u64, rule: LossRule) -> JsctpResponse {
        JsctpResponse { rule, ..JsctpResponse::new(k_bytes) }
    }

    /// Whether a loss at window `cwnd_bytes` is taken for congestion.
    pub fn is_congestion(&self, jr: &JitterRatio, cwnd_bytes: u64) -> bool {
        match self.rule {
            LossRule::Jitter => jr.is_congestion(self.k_bytes, cwnd_bytes),
            LossRule::Wireless => false,
            LossRule::Congestion => true,
        }
    }

    /// Algorithm 1: the fast-retransmit threshold of missing reports was reached. `ownd` is
    /// the bandwidth estimate's window (TABE: RTT·R_n, bytes), `rtt` the smoothed RTT.
    pub fn on_fast_retransmit(&mut self, now: SimTime, rtt: Dur, w: Window, jr: &JitterRatio, ownd: u64) -> (Window, LossClass) {
        if self.adjusted_at.is_some_and(|t| now < t + rtt) {
            return (w, LossClass::SameRtt);
        }
        if !self.is_congestion(jr, w.cwnd) {
            return (w, LossClass::Wireless);
        }
        self.adjusted_at = Some(now);
        let ssthresh = ownd.max(2 * w.mss);
        let cwnd = if w.in_slow_start() { w.cwnd.min(ssthresh) } else { ssthresh };
        (Window { cwnd: cwnd.max(w.mss), ssthresh, mss: w.mss }, LossClass::Congestion)
    }

    /// Algorithm 2: the retransmission timer expired. Both branches set ssthresh to the
    /// estimate; congestion restarts from one MSS, a wireless loss resumes at ssthresh.
    pub fn on_timeout(&mut self, now: SimTime, w: Window, jr: &JitterRatio, ownd: u64) -> (Window, LossClass) {
        self.adjusted_at = Some(now);
        let ssthresh = ownd.max(2 * w.mss);
        if self.is_congestion(jr, w.cwnd) {
            (Window { cwnd: w.mss, ssthresh, mss: w.mss }, LossClass::Congestion)
        } else {
            (Window { cwnd: ssthresh, ssthresh, mss: w.mss }, LossClass::Wireless)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MSS: u64 = 1456;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// Packets sent every 10 ms; each meets a queue of `queue(i)` ms on the way.
    fn feed(jr: &mut JitterRatio, range: std::ops::Range<u64>, queue: impl Fn(u64) -> u64) {
        for i in range {
            jr.record(i, ms(10 * i), ms(10 * i + 40 + queue(i)));
        }
    }

    #[test]
    fn the_ratio_is_the_queue_growth_over_the_receive_span() {
        let mut jr = JitterRatio::default();
        // the queue grows by 1 ms per packet: over 10 packets D = 10 ms, receive span 110 ms
        feed(&mut jr, 0..21, |i| i);
        let r = jr.window_ratio(10).unwrap();
        assert!((r - 10.0 / 110.0).abs() < 1e-12, "{r}");
        // a steady queue gives exactly zero
        let mut flat = JitterRatio::default();
        feed(&mut flat, 0..21, |_| 5);
        assert_eq!(flat.window_ratio(10), Some(0.0));
    }

    #[test]
    fn missing_packets_and_out_of_order_reports() {
        let mut a = JitterRatio::default();
        let mut b = JitterRatio::default();
        let q = |i: u64| (i * 7) % 13;
        feed(&mut a, 0..30, q);
        // b learns the same receive times in reverse order (gap reports arrive late), and
        // twice; packet 20 (the window's first) is lost
        for i in (0..30).rev() {
            if i != 20 {
                b.record(i, ms(10 * i), ms(10 * i + 40 + q(i)));
                b.record(i, ms(10 * i), ms(999_999));
            }
        }
        assert_eq!(b.samples.len(), 29);
        assert!(b.samples.iter().zip(b.samples.iter().skip(1)).all(|(x, y)| x.n < y.n));
        // with packet 20 missing the window starts at 21
        let expect = {
            let (f, l) = (21u64, 29u64);
            let d = (q(l) as f64 - q(f) as f64) * 1e6;
            d / ((10.0 * (l - f) as f64 + q(l) as f64 - q(f) as f64) * 1e6)
        };
        assert!((b.window_ratio(9).unwrap() - expect).abs() < 1e-12);
        assert_eq!(a.window_ratio(5), b.window_ratio(5));
        assert_eq!(JitterRatio::default().window_ratio(4), None);
    }

    #[test]
    fn zero_samples_are_ignored_by_the_fix_only() {
        let mut fixed = JitterRatio::new(ALPHA, true);
        let mut plain = JitterRatio::new(ALPHA, false);
        // a rising queue, then a flat one: the flat window gives zero
        for jr in [&mut fixed, &mut plain] {
            feed(jr, 0..11, |i| i);
            assert!(jr.maybe_sample(ms(200), Dur::from_millis(100), 10).unwrap() > 0.0);
        }
        assert_eq!(fixed.smoothed(), plain.smoothed());
        let before = fixed.smoothed();
        for jr in [&mut fixed, &mut plain] {
            feed(jr, 11..30, |_| 10);
            assert_eq!(jr.maybe_sample(ms(400), Dur::from_millis(100), 10), Some(0.0));
        }
        assert_eq!(fixed.smoothed(), before, "a zero sample must not move the smoothed ratio");
        assert!((plain.smoothed() - (1.0 - ALPHA) * before).abs() < 1e-15);
        assert_eq!(fixed.counts(), (2, 1));
        assert_eq!(plain.counts(), (2, 0));
    }

    #[test]
    fn one_sample_per_rtt() {
        let mut jr = JitterRatio::default();
        feed(&mut jr, 0..50, |i| i % 4);
        assert!(jr.maybe_sample(ms(500), Dur::from_millis(100), 8).is_some());
        assert!(jr.maybe_sample(ms(599), Dur::from_millis(100), 8).is_none());
        assert!(jr.maybe_sample(ms(600), Dur::from_millis(100), 8).is_some());
        assert_eq!(jr.counts().0, 2);
    }

    #[test]
    fn the_k_over_w_decision() {
        let mut jr = JitterRatio::new(1.0, true); // no smoothing: the sample is the state
        feed(&mut jr, 0..11, |i| i); // ratio 10/110 = 0.0909
        jr.maybe_sample(ms(200), Dur::from_millis(100), 10);
        // k = 1 MSS: threshold 1/cwnd_pkts
        assert!(jr.is_congestion(MSS, 11 * MSS)); // 0.0909 ≥ 1/11 (equal counts, the pseudocode's ≥)
        assert!(jr.is_congestion(MSS, 12 * MSS)); // 1/12
        assert!(!jr.is_congestion(MSS, 10 * MSS)); // 1/10 = 0.1
                                                   // a larger k raises the bar
        assert!(!jr.is_congestion(2 * MSS, 12 * MSS));
        assert!(JitterRatio::default().is_congestion(0, 10), "k = 0 makes every loss congestion");
    }

    /// A ratio well above k/w: a queue that grows by 9 ms per packet, sampled once.
    fn congested(rtt: Dur) -> JitterRatio {
        let mut jr = JitterRatio::new(1.0, true);
        feed(&mut jr, 0..11, |i| 9 * i);
        jr.maybe_sample(ms(200), rtt, 10);
        jr
    }

    #[test]
    fn algorithm_1_congestion_wireless_and_next_rtt() {
        let rtt = Dur::from_millis(100);
        let congested = congested(rtt);
        let quiet = JitterRatio::default();
        let w = Window { cwnd: 40 * MSS, ssthresh: 20 * MSS, mss: MSS };
        let mut r = JsctpResponse::new(MSS);
        // wireless: the window is kept
        assert_eq!(r.on_fast_retransmit(ms(1000), rtt, w, &quiet, 25 * MSS), (w, LossClass::Wireless));
        // congestion in congestion avoidance: ssthresh = cwnd = ownd
        let (w2, c) = r.on_fast_retransmit(ms(1000), rtt, w, &congested, 25 * MSS);
        assert_eq!((w2.cwnd, w2.ssthresh, c), (25 * MSS, 25 * MSS, LossClass::Congestion));
        // within the same RTT: retransmit only
        assert_eq!(r.on_fast_retransmit(ms(1099), rtt, w2, &congested, 5 * MSS), (w2, LossClass::SameRtt));
        let (w3, c) = r.on_fast_retransmit(ms(1100), rtt, w2, &congested, 5 * MSS);
        assert_eq!((w3.cwnd, w3.ssthresh, c), (5 * MSS, 5 * MSS, LossClass::Congestion));
        // slow start: capped, never raised; ssthresh at least 2 MSS
        let ss = Window { cwnd: 4 * MSS, ssthresh: u64::MAX, mss: MSS };
        let (w4, _) = JsctpResponse::new(MSS).on_fast_retransmit(ms(0), rtt, ss, &congested, 100);
        assert_eq!((w4.cwnd, w4.ssthresh), (2 * MSS, 2 * MSS));
        let (w5, _) = JsctpResponse::new(MSS).on_fast_retransmit(ms(0), rtt, ss, &congested, 9 * MSS);
        assert_eq!((w5.cwnd, w5.ssthresh), (4 * MSS, 9 * MSS));
    }

    #[test]
    fn algorithm_2_timeouts() {
        let rtt = Dur::from_millis(100);
        let congested = congested(rtt);
        let w = Window { cwnd: 40 * MSS, ssthresh: 20 * MSS, mss: MSS };
        let mut r = JsctpResponse::new(MSS);
        let (a, c) = r.on_timeout(ms(5), w, &congested, 25 * MSS);
        assert_eq!((a.cwnd, a.ssthresh, c), (MSS, 25 * MSS, LossClass::Congestion));
        let (b, c) = r.on_timeout(ms(5), w, &JitterRatio::default(), 25 * MSS);
        assert_eq!((b.cwnd, b.ssthresh, c), (25 * MSS, 25 * MSS, LossClass::Wireless));
        // a timeout counts as an adjustment for the Next-RTT check
        assert_eq!(r.on_fast_retransmit(ms(50), rtt, b, &congested, MSS).1, LossClass::SameRtt);
    }

    #[test]
    fn the_controls_take_every_loss_for_one_class() {
        let rtt = Dur::from_millis(100);
        let congested = congested(rtt);
        let quiet = JitterRatio::default();
        let w = Window { cwnd: 40 * MSS, ssthresh: 20 * MSS, mss: MSS };
        for jr in [&congested, &quiet] {
            let mut wl = JsctpResponse::with_rule(MSS, LossRule::Wireless);
            assert_eq!(wl.on_fast_retransmit(ms(1000), rtt, w, jr, 25 * MSS), (w, LossClass::Wireless));
            assert_eq!(wl.on_timeout(ms(2000), w, jr, 25 * MSS).1, LossClass::Wireless);
            let mut cg = JsctpResponse::with_rule(MSS, LossRule::Congestion);
            assert_eq!(cg.on_fast_retransmit(ms(1000), rtt, w, jr, 25 * MSS).1, LossClass::Congestion);
            assert_eq!(cg.on_timeout(ms(2000), w, jr, 25 * MSS).1, LossClass::Congestion);
        }
        // the default asks the jitter ratio
        assert_eq!(JsctpResponse::new(MSS).rule, LossRule::Jitter);
        assert_eq!(JsctpResponse::new(MSS).on_fast_retransmit(ms(1000), rtt, w, &quiet, MSS).1, LossClass::Wireless);
        assert_eq!(LossRule::by_name("congestion"), Some(LossRule::Congestion));
        assert_eq!(LossRule::by_name("all"), None);
    }

    proptest! {
        #[test]
        fn ratio_is_bounded_and_the_window_sane(
            queues in proptest::collection::vec(0u64..200, 2..200),
            window in 1u64..100,
            cwnd_pkts in 1u64..500,
            ownd in 0u64..1_000_000,
            k in 0u64..3000,
        ) {
            let mut jr = JitterRatio::new(ALPHA, true);
            // FIFO queue: a packet leaves no earlier than the one before it
            let mut prev = SimTime::ZERO;
            for (i, q) in queues.iter().enumerate() {
                let rx = (ms(10 * i as u64 + 40 + q)).max(prev);
                prev = rx;
                jr.record(i as u64, ms(10 * i as u64), rx);
                jr.maybe_sample(rx, Dur::from_millis(30), window);
            }
            if let Some(r) = jr.window_ratio(window) {
                // the receive span is the send span plus the queue growth, so r < 1
                prop_assert!(r < 1.0 && r.is_finite(), "{r}");
            }
            let w = Window { cwnd: cwnd_pkts * MSS, ssthresh: 10 * MSS, mss: MSS };
            let mut resp = JsctpResponse::new(k);
            for (out, _) in [resp.on_fast_retransmit(ms(10_000), Dur::from_millis(30), w, &jr, ownd), resp.on_timeout(ms(20_000), w, &jr, ownd)] {
                prop_assert!(out.cwnd >= MSS && out.ssthresh >= 2 * MSS && out.mss == MSS);
            }
        }
    }
}
