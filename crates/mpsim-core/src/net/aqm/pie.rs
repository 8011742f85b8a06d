//! PIE, "Proportional Integral controller Enhanced" (RFC 8033), as Linux 6.x runs it
//! (net/sched/sch_pie.c and net/sched/pie.c with its default, timestamp-based delay).
//!
//! Arrivals are dropped at random with probability `p`. Every `tupdate` the probability moves
//! by `alpha (qdelay - target) + beta (qdelay - qdelay_old)`, `qdelay` the sojourn time of the
//! latest packet to leave (zero once the queue is empty); alpha and beta are scaled down while
//! `p` is small (by 2 below 10%, and by 4 more per decade below 1%, down to 1/2048), the step
//! is capped at 2% once `p` is above 10%, a delay above 250 ms adds 2%, and two updates with no
//! delay shrink `p` by 1/64. A burst allowance (`max_burst`) lets a new burst through without
//! drops; it is restored once delay has stayed below half the target for two updates with
//! `p` at zero. No drop either while the delay is below half the target with `p` under 20%,
//! or while fewer than two full packets wait. Linux's de-randomisation is kept: drop
//! probabilities are summed over arrivals since the last drop, no drop while the sum is below
//! 0.85, a certain drop once it reaches 8.5 (`derandomize = false` turns this off, as RFC
//! 8033's basic algorithm and ns-3's default have it).
//!
//! The probability is a real number here, not Linux's 64-bit fixed point; the updates run
//! at multiples of `tupdate` from time zero, applied when the queue is next touched (between
//! two arrivals or departures nothing they read changes, so the result is the same as a timer's).

use super::{Admit, Aqm, DropReason, Fifo, Queued};
use crate::net::{PacketId, QueueLimit};
use crate::rng::Rng;
use crate::time::{Dur, SimTime};

/// PIE's parameters (scenario table `aqm = { kind = "pie", ... }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieParams {
    /// Target queueing delay (RFC 8033 and Linux: 15 ms).
    pub target: Dur,
    /// Time between probability updates (15 ms).
    pub tupdate: Dur,
    /// Weight of the delay's distance from target, per second (0.125).
    pub alpha: f64,
    /// Weight of the delay's change since the last update, per second (1.25).
    pub beta: f64,
    /// Burst allowance (150 ms).
    pub max_burst: Dur,
    /// A full packet: fewer than two of them waiting are never dropped from (bytes).
    pub mtu: u32,
    /// Linux's de-randomised drops (on by default, as in Linux).
    pub derandomize: bool,
    /// Mark ECN-capable packets instead of dropping them while the drop probability is at
    /// most 10% (RFC 8033 §5.1, Linux's `ecn`); above it they are dropped too.
    pub ecn: bool,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Dur::from_millis(150),
            mtu: 1500,
            derandomize: true,
            ecn: false,
        }
    }
}

/// PIE marks instead of dropping only up to this probability (RFC 8033 §5.1: 10%).
const MARK_PROB_MAX: f64 = 0.1;

pub struct Pie {
    params: PieParams,
    limit: QueueLimit,
    q: Fifo,
    rng: Rng,
    prob: f64,
    /// Seconds.
    qdelay: f64,
    qdelay_old: f64,
    burst_left: Dur,
    /// When the latest packet left, if any since the measurement cycle restarted.
    dq_tstamp: Option<SimTime>,
    accu_prob: f64,
    /// The next probability update.
    next_update: SimTime,
}

impl Pie {
    pub fn new(params: PieParams, limit: QueueLimit, rng: Rng) -> Pie {
        let next_update = SimTime(params.tupdate.0.max(1));
        Pie {
            params,
            limit,
            q: Fifo::default(),
            rng,
            prob: 0.0,
            qdelay: 0.0,
            qdelay_old: 0.0,
            burst_left: params.max_burst,
            dq_tstamp: None,
            accu_prob: 0.0,
            next_update,
        }
    }

    /// The current drop probability.
    pub fn probability(&self) -> f64 {
        self.prob
    }

    /// Runs the updates due by `now`.
    fn catch_up(&mut self, now: SimTime) {
        let step = self.params.tupdate.0.max(1);
        while self.next_update <= now {
            if self.q.is_empty() && self.prob == 0.0 && self.qdelay == 0.0 && self.qdelay_old == 0.0 {
                // nothing can change until the queue is touched: skip the idle updates
                self.burst_left = self.params.max_burst;
                self.dq_tstamp = None;
                self.accu_prob = 0.0;
                self.next_update = SimTime((now.0 / step + 1) * step);
                return;
            }
            self.update();
            self.next_update += Dur(step);
        }
    }

    /// One probability update (Linux's pie_calculate_probability).
    fn update(&mut self) {
        let p = &self.params;
        let target = p.target.as_secs_f64();
        let (qdelay, qdelay_old) = (self.qdelay, self.qdelay_old);
        let backlog = self.q.bytes();
        // a zero delay with packets waiting: the queue is short; no decay this round
        let mut decay = !(qdelay == 0.0 && backlog != 0);
        let (mut alpha, mut beta) = (p.alpha, p.beta);
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while self.prob < 1.0 / power && power <= 1e6 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let mut delta = alpha * (qdelay - target) + beta * (qdelay - qdelay_old);
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > 0.25 {
            delta += 0.02;
        }
        self.prob += delta;
        if self.prob >= 1.0 {
            self.prob = 1.0;
            decay = false;
        } else if self.prob < 0.0 {
            self.prob = 0.0;
        }
        if qdelay == 0.0 && qdelay_old == 0.0 && decay {
            self.prob -= self.prob / 64.0;
        }
        if qdelay < target / 2.0 && qdelay_old < target / 2.0 && self.prob == 0.0 {
            // restart the measurement cycle
            self.burst_left = p.max_burst;
            self.dq_tstamp = None;
            self.accu_prob = 0.0;
        }
        self.qdelay_old = qdelay;
    }

    /// Whether the arrival is dropped early (Linux's pie_drop_early).
    fn drop_early(&mut self) -> bool {
        let p = &self.params;
        if self.burst_left > Dur::ZERO {
            return false;
        }
        if self.qdelay < p.target.as_secs_f64() / 2.0 && self.prob < 0.2 {
            return false;
        }
        if self.q.bytes() < 2 * p.mtu as u64 {
            return false;
        }
        let prob = self.prob;
        if !p.derandomize {
            return self.rng.next_f64() < prob;
        }
        if prob == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += prob;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if self.rng.next_f64() < prob {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }
}

impl Aqm for Pie {
    fn enqueue(&mut self, now: SimTime, mut p: Queued, _dropped: &mut Vec<(PacketId, DropReason)>) -> Admit {
        self.catch_up(now);
        if self.q.full_for(self.limit, p.size) {
            self.accu_prob = 0.0;
            return Admit::Dropped(DropReason::Overflow);
        }
        // (a mark leaves the de-randomisation's sum alone, as Linux's pie_qdisc_enqueue does)
        if self.drop_early() && !(self.params.ecn && self.prob <= MARK_PROB_MAX && p.mark()) {
            self.accu_prob = 0.0;
            return Admit::Dropped(DropReason::Aqm);
        }
        self.q.push(p);
        Admit::Queued
    }

    fn dequeue(&mut self, now: SimTime, _dropped: &mut Vec<(PacketId, DropReason)>) -> Option<Queued> {
        self.catch_up(now);
        let p = self.q.pop()?;
        self.qdelay = now.since(p.enqueued).as_secs_f64();
        let dtime = self.dq_tstamp.map_or(Dur::ZERO, |t| now.since(t));
        self.dq_tstamp = Some(now);
        if self.q.is_empty() {
            self.qdelay = 0.0;
        }
        self.burst_left = self.burst_left.saturating_sub(dtime);
        Some(p)
    }

    fn backlog(&self) -> (u64, u64) {
        (self.q.len() as u64, self.q.bytes())
    }

    fn clear(&mut self) -> Vec<PacketId> {
        self.q.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pie(derandomize: bool) -> Pie {
        Pie::new(PieParams { derandomize, ..PieParams::default() }, QueueLimit::Packets(100_000), Rng::from_seed(5))
    }

    fn pkt(id: u32, at: SimTime) -> Queued {
        Queued { id, size: 1500, enqueued: at, flow: 0, ect: false, marked: false }
    }

    /// A queue fed `per_ms` packets a millisecond and served one a millisecond for `ms`
    /// milliseconds: returns the fraction dropped in the last half and the final probability.
    fn overload(per_ms: u32, ms: u64) -> (f64, f64, Pie) {
        let mut q = pie(true);
        let mut d = Vec::new();
        let (mut id, mut drops, mut arrivals) = (0, 0, 0);
        for t in 0..ms {
            let now = SimTime(t * 1_000_000);
            for _ in 0..per_ms {
                let dropped = q.enqueue(now, pkt(id, now), &mut d) != Admit::Queued;
                if t >= ms / 2 {
                    arrivals += 1;
                    drops += dropped as u32;
                }
                id += 1;
            }
            q.dequeue(now, &mut d);
        }
        (drops as f64 / arrivals as f64, q.probability(), q)
    }

    #[test]
    fn no_drop_while_the_delay_is_low() {
        // as many arrivals as departures: the delay stays near zero
        let (f, p, _) = overload(1, 3_000);
        assert_eq!(f, 0.0);
        assert_eq!(p, 0.0);
    }

    #[test]
    fn twice_the_capacity_drives_the_drop_rate_to_one_half_and_holds_the_delay_near_target() {
        let (f, p, q) = overload(2, 20_000);
        assert!((f - 0.5).abs() < 0.05, "drop fraction {f}, probability {p}");
        // at 1 ms per packet, target 15 ms is about 15 packets waiting
        let waiting = q.backlog().0;
        assert!((5..=40).contains(&waiting), "{waiting} packets waiting");
    }

    #[test]
    fn the_burst_allowance_lets_the_first_150_ms_through() {
        let mut q = pie(true);
        let mut d = Vec::new();
        let mut dropped_early = false;
        for t in 0..140u64 {
            let now = SimTime(t * 1_000_000);
            for i in 0..3 {
                dropped_early |= q.enqueue(now, pkt((t * 3 + i) as u32, now), &mut d) != Admit::Queued;
            }
            q.dequeue(now, &mut d);
        }
        assert!(!dropped_early);
    }

    #[test]
    fn small_probabilities_move_slowly() {
        // one update with the delay 10 ms above target from p = 0: alpha and beta are scaled
        // by 1/2 and then 1/4 for each decade below 1% (five of them, to 1/2048)
        let mut q = pie(false);
        q.qdelay = 0.025;
        q.qdelay_old = 0.025;
        q.q.push(pkt(0, SimTime::ZERO));
        q.update();
        let expect = 0.125 / 2048.0 * 0.010;
        assert!((q.probability() - expect).abs() < 1e-12, "{}", q.probability());
    }

    #[test]
    fn ecn_marks_only_while_the_probability_is_at_most_ten_percent() {
        // the same overload, ECN-capable arrivals: with p near 50% they are dropped, and at a
        // probability up to 10% the same decision marks them instead
        let mut q = Pie::new(PieParams { ecn: true, ..PieParams::default() }, QueueLimit::Packets(100_000), Rng::from_seed(5));
        let mut d = Vec::new();
        let (mut marks_low, mut drops_low, mut marks_high, mut drops_high) = (0, 0, 0, 0);
        for t in 0..20_000u64 {
            let now = SimTime(t * 1_000_000);
            for i in 0..2 {
                let p = Queued { ect: true, ..pkt((t * 2 + i) as u32, now) };
                let before = q.q.len();
                let admit = q.enqueue(now, p, &mut d);
                // (the probability changes only in `catch_up`, before the decision)
                let low = q.probability() <= 0.1;
                match admit {
                    Admit::Dropped(DropReason::Aqm) if low => drops_low += 1,
                    Admit::Dropped(DropReason::Aqm) => drops_high += 1,
                    Admit::Queued if q.q.len() > before && q.q.q.back().unwrap().marked => {
                        if low {
                            marks_low += 1
                        } else {
                            marks_high += 1
                        }
                    }
                    _ => {}
                }
            }
            q.dequeue(now, &mut d);
        }
        assert!(marks_low > 0, "marks while p <= 10%");
        assert_eq!(drops_low, 0, "no early drop of an ECN-capable packet while p <= 10%");
        assert!(drops_high > 1000, "drops above 10%: {drops_high}");
        assert_eq!(marks_high, 0, "no mark above 10%");
    }
}
