//! CUBIC (RFC 9438), computed the way Linux's `tcp_cubic.c` computes it, with HyStart.
//!
//! The window follows `W(t) = C·(t − K)³ + W_max` from the start of the congestion epoch (the
//! first ACK after a loss), with `C = 0.4`, `K = ∛(W_max·(1 − β)/C)` and `β = 0.7`. As in
//! Linux:
//! - the window is counted in segments and the epoch clock in 1/1024 s, with integer
//!   arithmetic (`bic_scale` = 41, `cube_factor` = 2⁴⁰/410), and the target is taken one
//!   minimum RTT ahead (`t + delay_min`);
//! - growth towards the target is "one segment per `cnt` segments acknowledged", with `cnt`
//!   at least 2 (at most 1.5 × per RTT) and at most 20 before the first loss;
//! - the Reno-friendly estimate grows one segment per `cwnd·15/8` segments acknowledged
//!   (`beta_scale` = 8·(1024+717)/3/(1024−717) = 15) and caps `cnt` when it is ahead;
//! - fast convergence: a loss below the previous maximum remembers `W_max·(1 + β)/2`;
//! - the new ssthresh is `0.7·cwnd` (the window, not the flight), at least 2 segments; a
//!   timeout also forgets the epoch, `W_max` and the minimum delay, as `bictcp_reset` does;
//! - slow start adds every acknowledged segment (no byte-counting cap), up to ssthresh;
//! - HyStart (`hystart_detect` = both): from a window of 16 segments, slow start ends when
//!   the ACKs of one round keep arriving closer than 2 ms to each other for longer than half
//!   the minimum delay (ACK train), or when the smallest of the first 8 RTT samples of a
//!   round exceeds the minimum delay by `clamp(delay_min/8, 4 ms, 16 ms)` (delay increase).
//!   It runs on the RTT sample of every ACK (`on_every_ack`, Linux's `pkts_acked` hook
//!   `cubictcp_acked`), also when the window may not grow on it (a receive window, the
//!   application or a Multipath TCP scheduler holding the sender below its window), and its
//!   exit sets ssthresh = cwnd there. A round ends once the data sent when it started is
//!   acknowledged.
//!   Linux adds an allowance to the ACK-train threshold, min(1 ms, 4 · gso_max_size /
//!   pacing_rate), before halving it; it is zero only for a socket that cannot segment (no
//!   GSO), which is what mpsim models, so it is zero here (docs/kernel.md: the kernel's
//!   sockets in `mpsim kernel` do use software GSO, so theirs is 1 ms).
//!
//! Differences that remain: Linux's jiffies are taken as milliseconds (HZ = 1000); Linux
//! restarts a round only inside `hystart_update`, so only from the low window on, which
//! puts its rounds' starts part-way into a flight (from the first ACK at a window of 16),
//! while mpsim restarts them on every ACK of slow start, so that they start with a flight:
//! measured against Linux 6.18 (benches/results/slow_start_exit.md), the former makes
//! mpsim's delay test fire at a window of 72 on `tcp_long_deep` where the kernel's ACK train
//! fires at 487 (mpsim: 486 with rounds from the first ACK); a round of HyStart ends when
//! more bytes have been delivered (cumulatively or by SACK) than were delivered and in flight
//! before the ACK that started it (Linux compares the ACK number with the `snd_nxt` of then,
//! which the controller does not see; the two agree without losses); and Linux's cube root
//! is a table lookup plus one Newton step (within 0.2 %), here an exact integer cube root.

use super::{AckContext, CongestionControl, CongestionEvent, LossContext, Window};
use crate::time::{Dur, SimTime};

/// β in 1/1024 (Linux `beta` = 717, about 0.7).
const BETA: u64 = 717;
/// Linux `bic_scale`: C = bic_scale·10/1024 = 0.4.
const BIC_SCALE: u64 = 41;
/// 2^BICTCP_HZ clock units per second.
const BICTCP_HZ: u32 = 10;
/// `cube_rtt_scale` = bic_scale·10.
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// `beta_scale`: the Reno-friendly increase, in 1/8 of the window, per segment.
const BETA_SCALE: u64 = 8 * (1024 + BETA) / 3 / (1024 - BETA);
/// `cube_factor` = 2^(10 + 3·BICTCP_HZ) / cube_rtt_scale.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;
/// HyStart runs from this window (segments).
const HYSTART_LOW_WINDOW: u64 = 16;
/// RTT samples taken per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// ACKs closer than this belong to one train.
const HYSTART_ACK_DELTA_NS: u64 = 2_000_000;
/// Linux's `HZ / 32` (jiffies at HZ = 1000): how long the target is kept when the window has not moved.
const RECOMPUTE_NS: u64 = 1_000_000_000 / 32;
/// RTT samples this soon after a congestion epoch starts are ignored (Linux: one second).
const SAMPLE_HOLDOFF_NS: u64 = 1_000_000_000;

/// Floor of the cube root of `a`.
pub fn cube_root(a: u64) -> u64 {
    if a == 0 {
        return 0;
    }
    let mut x = (a as f64).cbrt() as u64;
    // correct the floating-point guess to the exact floor
    while x > 0 && x.checked_pow(3).is_none_or(|c| c > a) {
        x -= 1;
    }
    while (x + 1).checked_pow(3).is_some_and(|c| c <= a) {
        x += 1;
    }
    x
}

#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// Segments to acknowledge per one-segment increase.
    cnt: u64,
    /// W_max, segments (0: no loss yet).
    last_max_cwnd: u64,
    /// The window and time of the last target computation.
    last_cwnd: u64,
    last_time: Option<SimTime>,
    /// The target's plateau (W_max, or the window at the epoch start if above it).
    origin_point: u64,
    /// K, in 1/1024 s.
    k: u64,
    /// Minimum RTT seen (0: none), nanoseconds.
    delay_min: u64,
    epoch_start: Option<SimTime>,
    /// Segments acknowledged since the Reno-friendly estimate last grew.
    ack_cnt: u64,
    /// The Reno-friendly window estimate, segments.
    tcp_cwnd: u64,
    /// Segments acknowledged in congestion avoidance since the last increase
    /// (Linux `snd_cwnd_cnt`).
    cwnd_cnt: u64,
    /// Bytes acknowledged not yet counted as a whole segment.
    byte_rest: u64,
    hystart: HyStart,
    /// The RTT sample of the ACK being processed (kept by `on_rtt_sample`): Linux runs HyStart
    /// on it in `pkts_acked`, which knows the window; here `on_every_ack`, called next for the
    /// same ACK, does.
    pending_rtt: Option<u64>,
}

/// HyStart's per-round state.
#[derive(Clone, Debug, Default)]
struct HyStart {
    /// Slow start has been ended by HyStart.
    found: bool,
    round_start: SimTime,
    last_ack: SimTime,
    /// Smallest RTT sample of this round (ns; `u64::MAX`: none).
    curr_rtt: u64,
    sample_cnt: u32,
    /// The round ends once `delivered` passes this: the data sent when it started (Linux's
    /// `end_seq`, the `snd_nxt` of then).
    round_end: u64,
    /// Bytes acknowledged so far (cumulatively or by SACK), counted on every ACK.
    delivered: u64,
}

impl HyStart {
    /// A new round from `now`, to end once the data sent so far, `sent` bytes, is acknowledged
    /// (Linux `bictcp_hystart_reset`).
    fn reset(&mut self, now: SimTime, sent: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.round_end = sent;
        self.curr_rtt = u64::MAX;
        self.sample_cnt = 0;
    }
}

impl Cubic {
    /// The window target and `cnt` for a window of `cwnd` segments at `now`
    /// (Linux `bictcp_update`).
    fn update(&mut self, cwnd: u64, acked: u64, now: SimTime) {
        self.ack_cnt += acked;
        let fresh = self.last_time.is_some_and(|t| now.since(t).as_nanos() <= RECOMPUTE_NS);
        if !(self.last_cwnd == cwnd && fresh) {
            let same_tick = self.epoch_start.is_some() && self.last_time.is_some_and(|t| now.as_nanos() / 1_000_000 == t.as_nanos() / 1_000_000);
            if !same_tick {
                self.last_cwnd = cwnd;
                self.last_time = Some(now);
                let epoch = match self.epoch_start {
                    Some(e) => e,
                    None => {
                        self.epoch_start = Some(now);
                        self.ack_cnt = acked;
                        self.tcp_cwnd = cwnd;
                        if self.last_max_cwnd <= cwnd {
                            self.k = 0;
                            self.origin_point = cwnd;
                        } else {
                            self.k = cube_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd));
                            self.origin_point = self.last_max_cwnd;
                        }
                        now
                    }
                };
                // time since the epoch started, plus one minimum RTT, in 1/1024 s
                let elapsed_ns = now.since(epoch).as_nanos() + self.delay_min;
                let t = ((elapsed_ns as u128) << BICTCP_HZ) / 1_000_000_000;
                let t = t as u64;
                let offs = t.abs_diff(self.k) as u128;
                let delta = ((CUBE_RTT_SCALE as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u64;
                let target = if t < self.k { self.origin_point.saturating_sub(delta) } else { self.origin_point + delta };
                self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
                // before the first loss, grow at most 1 segment per 20 acknowledged
                if self.last_max_cwnd == 0 && self.cnt > 20 {
                    self.cnt = 20;
                }
            }
        }
        // the Reno-friendly region: never grow more slowly than Reno would (RFC 9438 §4.3)
        let delta = (cwnd * BETA_SCALE) >> 3;
        if delta > 0 {
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }

    /// Linux `tcp_cong_avoid_ai`: one segment per `w` acknowledged.
    fn cong_avoid_ai(&mut self, cwnd: &mut u64, w: u64, acked: u64) {
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            *cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            *cwnd += delta;
        }
    }

    /// The ssthresh after a congestion signal at `cwnd` segments (Linux `bictcp_recalc_ssthresh`).
    fn recalc_ssthresh(&mut self, cwnd: u64) -> u64 {
        self.epoch_start = None;
        // fast convergence: release bandwidth to newer flows
        self.last_max_cwnd = if cwnd < self.last_max_cwnd { cwnd * (1024 + BETA) / (2 * 1024) } else { cwnd };
        ((cwnd * BETA) >> 10).max(2)
    }

    /// HyStart's tests on one RTT sample (Linux `hystart_update`): the ACK train and the delay
    /// increase. True if slow start ends here.
    fn hystart_update(&mut self, delay: u64, now: SimTime) -> bool {
        let h = &mut self.hystart;
        if now.since(h.last_ack).as_nanos() <= HYSTART_ACK_DELTA_NS {
            h.last_ack = now;
            // without pacing, half the minimum delay
            let threshold = self.delay_min >> 1;
            if now.since(h.round_start).as_nanos() > threshold {
                h.found = true;
                return true;
            }
        }
        h.curr_rtt = h.curr_rtt.min(delay);
        if h.sample_cnt < HYSTART_MIN_SAMPLES {
            h.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(4_000_000, 16_000_000);
            if h.curr_rtt > self.delay_min + thresh {
                h.found = true;
                return true;
            }
        }
        false
    }

    /// The RFC 9438 window function W_cubic(t), in segments, for a given W_max (segments) and
    /// t (seconds since the epoch started): C·(t − K)³ + W_max with C = 0.4 and β = 0.7.
    pub fn rfc_window(w_max: f64, t: f64) -> f64 {
        let c = 0.4;
        let beta = 0.7;
        let k = (w_max * (1.0 - beta) / c).cbrt();
        c * (t - k).powi(3) + w_max
    }

    /// K in seconds for the current epoch (for tests and diagnostics).
    pub fn k_secs(&self) -> f64 {
        self.k as f64 / 1024.0
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
        let mss = w.mss.max(1);
        let total = self.byte_rest + ctx.bytes_acked;
        let mut acked = total / mss;
        self.byte_rest = total % mss;
        let mut cwnd = (w.cwnd / mss).max(1);
        let ssthresh_segs = w.ssthresh.div_ceil(mss);
        let mut w = w;
        if acked == 0 {
            return w;
        }
        if w.in_slow_start() {
            // Linux tcp_slow_start: every acknowledged segment, up to ssthresh
            let grown = (cwnd + acked).min(ssthresh_segs.max(cwnd));
            acked -= grown - cwnd;
            cwnd = grown;
            if acked == 0 {
                w.cwnd = cwnd * mss;
                return w;
            }
        }
        self.update(cwnd, acked, ctx.now);
        let cnt = self.cnt;
        self.cong_avoid_ai(&mut cwnd, cnt, acked);
        w.cwnd = cwnd * mss;
        w
    }

    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        let mss = w.mss.max(1);
        let cwnd = (w.cwnd / mss).max(1);
        let ssthresh = self.recalc_ssthresh(cwnd) * mss;
        self.cwnd_cnt = 0;
        match ev {
            CongestionEvent::FastRetransmit => Window { cwnd: ssthresh, ssthresh, mss: w.mss },
            CongestionEvent::Timeout => {
                // Linux enters the Loss state: bictcp_reset and a new HyStart round
                let delivered = self.hystart.delivered;
                *self = Cubic::default();
                self.hystart.delivered = delivered;
                self.hystart.reset(ctx.now, delivered + ctx.in_flight);
                Window { cwnd: mss, ssthresh, mss: w.mss }
            }
        }
    }

    fn wants_every_ack(&self) -> bool {
        true
    }

    /// HyStart on every ACK with an RTT sample, whether or not the window may grow on it
    /// (Linux `cubictcp_acked`): in slow start, before HyStart found its exit, from a window
    /// of `HYSTART_LOW_WINDOW` segments. Its exit sets ssthresh = cwnd; `on_ack` for the same
    /// ACK, if the window may grow, then grows it in congestion avoidance. Its rounds follow
    /// every ACK of slow start, also below the low window (see the module's differences).
    fn on_every_ack(&mut self, mut w: Window, ctx: &AckContext) -> Window {
        // the data sent so far, as delivered and in flight before this ACK (`snd_nxt`)
        let sent = self.hystart.delivered + ctx.in_flight;
        self.hystart.delivered += ctx.bytes_acked;
        let sample = self.pending_rtt.take();
        if self.hystart.found || !w.in_slow_start() {
            return w;
        }
        if self.hystart.delivered > self.hystart.round_end {
            // a new round once the data sent at the start of this one is acknowledged
            self.hystart.reset(ctx.now, sent);
        }
        let Some(delay) = sample else { return w };
        let cwnd = w.cwnd / w.mss.max(1);
        if cwnd >= HYSTART_LOW_WINDOW && self.hystart_update(delay, ctx.now) {
            w.ssthresh = cwnd * w.mss;
        }
        w
    }

    fn wants_rtt_samples(&self) -> bool {
        true
    }

    fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
        // samples right after a loss are skewed by the recovery
        if self.epoch_start.is_some_and(|e| now.since(e).as_nanos() < SAMPLE_HOLDOFF_NS) {
            return;
        }
        let delay = rtt.as_nanos().max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        self.pending_rtt = Some(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::{self, MSS};
    use proptest::prelude::*;

    fn ack_at(now: SimTime, bytes: u64, in_flight: u64) -> AckContext<'static> {
        AckContext { now, bytes_acked: bytes, in_flight, srtt: None, min_rtt: None, subflows: &[], me: 0, received_at: now, cw_echo: false }
    }

    fn loss_at(now: SimTime, in_flight: u64) -> LossContext<'static> {
        LossContext { now, in_flight, srtt: None, min_rtt: None, subflows: &[], me: 0, cw_echo: false, halve_cwnd: false }
    }

    fn ms(t: u64) -> SimTime {
        SimTime(Dur::from_millis(t).as_nanos())
    }

    /// Runs congestion avoidance from a loss at `w_max` segments, one RTT at a time: each RTT
    /// delivers one ACK per segment of the window, evenly spread. Returns (seconds since the
    /// epoch, window in segments) at the end of every RTT.
    fn epoch_after_loss(w_max: u64, rtt_ms: u64, rtts: u64) -> Vec<(f64, f64)> {
        let mut c = Cubic::default();
        let rtt = Dur::from_millis(rtt_ms);
        c.on_rtt_sample(rtt, SimTime::ZERO);
        let w = Window { cwnd: w_max * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut w = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss_at(SimTime::ZERO, w_max * MSS));
        let start = ms(1);
        let mut now = start;
        let mut out = Vec::new();
        for _ in 0..rtts {
            let segs = w.cwnd / MSS;
            let step = rtt.as_nanos() / segs;
            for _ in 0..segs {
                now = SimTime(now.as_nanos() + step);
                w = c.on_ack(w, &ack_at(now, MSS, w.cwnd));
            }
            out.push((now.since(start).as_secs_f64(), (w.cwnd / MSS) as f64));
        }
        out
    }

    #[test]
    fn cube_root_is_the_exact_floor() {
        for a in [0u64, 1, 7, 8, 26, 27, 28, 999, 1000, 1001, u64::MAX] {
            let r = cube_root(a);
            assert!(r.pow(3) <= a, "{a}");
            assert!((r + 1).checked_pow(3).is_none_or(|c| c > a), "{a}");
        }
    }

    #[test]
    fn k_is_the_rfc_time_to_return_to_w_max() {
        // RFC 9438 eq. 2: K = cbrt(W_max (1 - beta) / C)
        for w_max in [20u64, 100, 1000, 10_000] {
            let mut c = Cubic::default();
            let w = Window { cwnd: w_max * MSS, ssthresh: u64::MAX, mss: MSS };
            let w = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss_at(SimTime::ZERO, w.cwnd));
            // Linux's beta is 717/1024, not exactly 0.7: K uses the window it really left
            let reduced = (w.cwnd / MSS) as f64;
            assert_eq!(reduced as u64, w_max * 717 / 1024);
            c.on_ack(w, &ack_at(ms(1), MSS, w.cwnd));
            // and C is 410/1024 = 0.4004 (bic_scale 41)
            let k_rfc = ((w_max as f64 - reduced) / (410.0 / 1024.0)).cbrt();
            assert!((c.k_secs() - k_rfc).abs() < 0.002, "W_max {w_max}: K {} s, RFC {k_rfc} s", c.k_secs());
            let k_exact = (w_max as f64 * 0.3 / 0.4).cbrt();
            assert!((c.k_secs() - k_exact).abs() / k_exact < 0.01, "W_max {w_max}: K {} s, RFC with beta 0.7 {k_exact} s", c.k_secs());
        }
    }

    #[test]
    fn window_follows_the_rfc_window_function() {
        // a large window and RTT, where the cubic function dominates the Reno-friendly one
        let (w_max, rtt) = (1000u64, 100u64);
        let k = (w_max as f64 * 0.3 / 0.4).cbrt();
        let curve = epoch_after_loss(w_max, rtt, (2.0 * k * 1000.0 / rtt as f64) as u64);
        let mut worst: f64 = 0.0;
        for &(t, cwnd) in &curve[5..] {
            // Linux aims one minimum RTT ahead, and the window reaches the aim within an RTT
            let expect = Cubic::rfc_window(w_max as f64, t);
            let err = (cwnd - expect).abs() / expect;
            worst = worst.max(err);
            assert!(err < 0.02, "t = {t:.2} s: cwnd {cwnd} segments, W_cubic {expect:.1}");
        }
        // concave below W_max before K, convex above it after
        let at = |t: f64| curve.iter().find(|p| p.0 >= t).unwrap().1;
        assert!(at(k * 0.5) < w_max as f64 - 10.0 && at(k * 0.9) <= w_max as f64);
        assert!(at(k * 1.5) > w_max as f64);
        assert!(worst > 0.0);
    }

    #[test]
    fn small_windows_grow_at_least_as_reno_would() {
        // RFC 9438 §4.3: W_est = W_max·beta + 3(1−beta)/(1+beta) · t/RTT; with a short RTT the
        // cubic target barely moves while the Reno-friendly estimate grows ~0.53 segment per RTT
        let (w_max, rtt, rtts) = (20u64, 1u64, 200u64);
        let curve = epoch_after_loss(w_max, rtt, rtts);
        let (t, cwnd) = *curve.last().unwrap();
        let reduced = (w_max * 717 / 1024) as f64;
        let w_est = reduced + 3.0 * 0.3 / 1.7 * rtts as f64;
        assert!(Cubic::rfc_window(w_max as f64, t) < 0.2 * w_est, "the cubic term must not be what grows");
        assert!((cwnd - w_est).abs() / w_est < 0.05, "cwnd {cwnd} segments, Reno-friendly estimate {w_est:.1}");
    }

    #[test]
    fn loss_response_beta_and_fast_convergence() {
        let mut c = Cubic::default();
        let w = Window { cwnd: 100 * MSS, ssthresh: u64::MAX, mss: MSS };
        let w1 = c.on_congestion(w, CongestionEvent::FastRetransmit, &loss_at(SimTime::ZERO, 100 * MSS));
        assert_eq!((w1.cwnd, w1.ssthresh), (70 * MSS, 70 * MSS));
        assert_eq!(c.last_max_cwnd, 100);
        // a second loss below the previous maximum: W_max = cwnd (1 + beta) / 2
        let w2 = c.on_congestion(Window { cwnd: 80 * MSS, ..w1 }, CongestionEvent::FastRetransmit, &loss_at(ms(10), 80 * MSS));
        assert_eq!(c.last_max_cwnd, 80 * 1741 / 2048);
        assert_eq!(w2.ssthresh, 56 * MSS);
        // the ssthresh follows the window, not the flight
        let w3 = c.on_congestion(Window { cwnd: 40 * MSS, ..w1 }, CongestionEvent::FastRetransmit, &loss_at(ms(20), 2 * MSS));
        assert_eq!(w3.ssthresh, 28 * MSS);
        // never below two segments
        let w4 = c.on_congestion(Window { cwnd: 2 * MSS, ..w1 }, CongestionEvent::FastRetransmit, &loss_at(ms(30), MSS));
        assert_eq!(w4.ssthresh, 2 * MSS);
    }

    #[test]
    fn timeout_restarts_from_one_segment_and_forgets_the_epoch() {
        let mut c = Cubic::default();
        let w = Window { cwnd: 100 * MSS, ssthresh: 50 * MSS, mss: MSS };
        let w = c.on_ack(w, &ack_at(ms(1), MSS, w.cwnd));
        let w = c.on_congestion(w, CongestionEvent::Timeout, &loss_at(ms(2), 100 * MSS));
        assert_eq!((w.cwnd, w.ssthresh), (MSS, 70 * MSS));
        assert_eq!((c.last_max_cwnd, c.delay_min), (0, 0));
        assert!(c.epoch_start.is_none());
    }

    /// Slow start with `rtt(round)` as every RTT sample of a round, ACKs 3 ms apart (no ACK
    /// train), one ACK per segment, each sending two (the flight grows by one per ACK). Returns the window when slow start ended (if it did) and
    /// the final window.
    fn slow_start(rtt: impl Fn(u64) -> u64, rounds: u64) -> (Option<u64>, Window) {
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut now = ms(0);
        let mut exit = None;
        for round in 0..rounds {
            let segs = w.cwnd / MSS;
            for i in 0..segs {
                now = SimTime(now.as_nanos() + 3_000_000);
                c.on_rtt_sample(Dur::from_millis(rtt(round)), now);
                let before = w.in_slow_start();
                let ctx = ack_at(now, MSS, (segs + i) * MSS);
                w = c.on_every_ack(w, &ctx);
                w = c.on_ack(w, &ctx);
                if before && !w.in_slow_start() && exit.is_none() {
                    exit = Some(w.ssthresh / MSS);
                }
            }
        }
        (exit, w)
    }

    #[test]
    fn hystart_leaves_slow_start_when_the_delay_rises() {
        // constant delay: slow start goes on (doubling per round)
        let (exit, w) = slow_start(|_| 100, 5);
        assert_eq!(exit, None);
        assert_eq!(w.cwnd, 320 * MSS);
        // the delay rises by more than clamp(100/8 ms, 4, 16) = 12.5 ms in round 3 (ACKs 71 to
        // 150), which is also HyStart's round from ACK 71 (past the 70 segments sent when the
        // previous one started): 8 samples of 115 ms, and ACK 79 tests them at a window of 88
        let (exit, w) = slow_start(|r| if r >= 3 { 115 } else { 100 }, 5);
        let at = exit.expect("HyStart must end slow start");
        assert_eq!(at, 88, "exit at {at} segments");
        assert_eq!(w.ssthresh, at * MSS);
        assert!(w.cwnd < 2 * at * MSS, "no more doubling after the exit");
        // a rise below the threshold does not end it
        let (exit, _) = slow_start(|r| if r >= 3 { 110 } else { 100 }, 5);
        assert_eq!(exit, None);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        // ACKs 0.5 ms apart for longer than half the 20 ms minimum delay
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 16 * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut now = ms(0);
        let mut n = 0;
        while w.in_slow_start() && n < 100 {
            now = SimTime(now.as_nanos() + 500_000);
            c.on_rtt_sample(Dur::from_millis(20), now);
            let ctx = ack_at(now, MSS, 1000 * MSS);
            w = c.on_every_ack(w, &ctx);
            w = c.on_ack(w, &ctx);
            n += 1;
        }
        assert!(!w.in_slow_start());
        assert!((20..=22).contains(&n), "train of {n} ACKs (10 ms at 0.5 ms spacing)");
        // below the low window HyStart does not run
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 2 * MSS, ssthresh: u64::MAX, mss: MSS };
        for i in 0..10 {
            let now = SimTime(500_000 * (i + 1));
            c.on_rtt_sample(Dur::from_millis(20), now);
            let ctx = ack_at(now, MSS, 1000 * MSS);
            w = c.on_every_ack(w, &ctx);
            w = c.on_ack(w, &ctx);
        }
        assert!(w.in_slow_start() && w.cwnd == 12 * MSS);
    }

    #[test]
    fn hystart_runs_on_acks_that_do_not_grow_the_window() {
        // a window of 64 segments that the sender does not fill: only `on_every_ack` hears the
        // ACKs (the sender calls `on_ack` only when the window may grow); 3 ms apart, so no
        // ACK train, and the delay rises by 20 ms (threshold 12.5 ms) from the third round on
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 64 * MSS, ssthresh: u64::MAX, mss: MSS };
        let mut now = ms(0);
        let mut exit = None;
        for round in 0..5u64 {
            for _ in 0..20 {
                now = SimTime(now.as_nanos() + 3_000_000);
                c.on_rtt_sample(Dur::from_millis(if round >= 2 { 120 } else { 100 }), now);
                w = c.on_every_ack(w, &ack_at(now, MSS, 20 * MSS));
                if exit.is_none() && !w.in_slow_start() {
                    exit = Some(round);
                }
            }
        }
        assert_eq!(exit, Some(2), "the delay test fires in the round the delay rose");
        assert_eq!((w.cwnd, w.ssthresh), (64 * MSS, 64 * MSS), "the exit sets ssthresh = cwnd and grows nothing");
        // an ACK without an RTT sample runs no test; below the low window none runs either
        let mut c = Cubic::default();
        c.on_rtt_sample(Dur::from_millis(100), ms(0));
        let small = Window { cwnd: 15 * MSS, ssthresh: u64::MAX, mss: MSS };
        for i in 1..100 {
            c.on_rtt_sample(Dur::from_millis(200), ms(3 * i));
            assert_eq!(c.on_every_ack(small, &ack_at(ms(3 * i), MSS, 20 * MSS)), small);
        }
        assert_eq!(c.hystart.sample_cnt, 0);
    }

    #[test]
    fn is_listed_and_built_by_name() {
        assert_eq!(crate::cc::Controller::by_name("cubic").map(|c| c.name()), Some("cubic"));
    }

    proptest! {
        #[test]
        fn window_invariants_hold((subs, me) in test_support::connection(), in_ss: bool, events in test_support::events(200)) {
            test_support::check_invariants(&mut Cubic::default(), subs, me, in_ss, &events);
        }
    }
}
