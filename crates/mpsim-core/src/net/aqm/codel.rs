//! CoDel, "Controlled Delay" (RFC 8289), as Linux 6.x runs it (include/net/codel_impl.h).
//!
//! At every dequeue CoDel looks at the sojourn time of the packet leaving. While sojourns stay
//! below `target`, or the queue holds at most one full-sized packet (`mtu`) behind it, nothing
//! happens. Once they have stayed above target for a whole `interval`, CoDel enters its
//! dropping state: it drops that packet, then one more each time the control law's next drop
//! time comes, `interval / sqrt(count)` after the previous one, until a packet leaves with a
//! sojourn below target. Re-entering the dropping state soon (within 16 intervals) after
//! leaving it starts again from the drop rate that last controlled the queue.
//!
//! Details followed from Linux rather than the RFC's pseudo-code, where the two differ only in
//! form: `1/sqrt(count)` is kept in 16-bit fixed point and refined by one Newton step per count
//! change (so the drop times are Linux's to the nanosecond scale, not the exact square root's);
//! "above for an interval" means strictly later than `first_above_time + interval`; the
//! backlog compared with `mtu` is the queue's total after the packet left. FQ-CoDel runs the
//! same state machine on each of its flow queues ([`CodelVars::dequeue`]).
//!
//! With `ecn` (off by default, as in Linux's codel; FQ-CoDel turns it on), a drop due to an
//! ECN-capable packet marks it instead and sends it: the count and the next drop time move
//! on exactly as for a drop, but the dequeue does not go on to the next packet (Linux's
//! `codel_dequeue` with `params->ecn`).

use super::{Admit, Aqm, DropReason, Fifo, Queued};
use crate::net::{PacketId, QueueLimit};
use crate::time::{Dur, SimTime};

/// CoDel's parameters (scenario table `aqm = { kind = "codel", ... }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queueing delay (RFC 8289: 5 ms).
    pub target: Dur,
    /// The window over which the delay must stay above target before a drop (100 ms).
    pub interval: Dur,
    /// A queue of at most this many bytes behind the leaving packet is never dropped from
    /// (one full-sized packet, 1,500 bytes here; Linux uses the device's MTU plus its
    /// link-layer header).
    pub mtu: u32,
    /// Mark ECN-capable packets instead of dropping them (Linux's `ecn` flag).
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: Dur::from_millis(5), interval: Dur::from_millis(100), mtu: 1500, ecn: false }
    }
}

/// Bits of the fixed-point `1/sqrt(count)`.
const REC_INV_SQRT_BITS: u32 = 16;
const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;
/// `1/sqrt(1)` in that fixed point (just below 1.0).
const REC_INV_SQRT_ONE: u16 = (u32::MAX >> REC_INV_SQRT_SHIFT) as u16;

/// The state CoDel keeps for one queue.
#[derive(Clone, Copy, Debug)]
pub struct CodelVars {
    /// Drops since entering the dropping state (and the control law's count).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// `1/sqrt(count)` in Q0.16.
    rec_inv_sqrt: u16,
    /// When the sojourn time will have been above target for an interval; None while below.
    first_above_time: Option<SimTime>,
    /// When the next drop is due in the dropping state.
    drop_next: SimTime,
}

impl Default for CodelVars {
    fn default() -> Self {
        CodelVars { count: 0, lastcount: 0, dropping: false, rec_inv_sqrt: 0, first_above_time: None, drop_next: SimTime::ZERO }
    }
}

/// A queue CoDel takes packets from: its own FIFO, or one flow's queue of FQ-CoDel.
pub trait CodelQueue {
    /// Takes the head packet; `backlog` then tells the bytes left in the whole discipline.
    fn pop_head(&mut self) -> Option<Queued>;
    fn backlog_bytes(&self) -> u64;
}

impl CodelVars {
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// One Newton-Raphson step towards `1/sqrt(count)`: x' = x (3 - count x²) / 2.
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = (invsqrt * invsqrt) >> 32;
        let mut val = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2);
        val >>= 2; // keeps the product below 2^64
        val = (val * invsqrt) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// `t + interval / sqrt(count)`, with the fixed-point reciprocal.
    fn control_law(&self, t: SimTime, interval: Dur) -> SimTime {
        let scale = (self.rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
        t + Dur((interval.0 * scale) >> 32)
    }

    /// Whether `p` (just taken from the queue, `backlog` bytes left behind it) may be dropped.
    fn should_drop(&mut self, p: Option<&Queued>, now: SimTime, params: &CodelParams, backlog: u64) -> bool {
        let Some(p) = p else {
            self.first_above_time = None;
            return false;
        };
        let sojourn = now.since(p.enqueued);
        if sojourn < params.target || backlog <= params.mtu as u64 {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + params.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// The packet to send at `now` from queue `q`, dropping (into `dropped`) what CoDel drops.
    pub fn dequeue(
        &mut self,
        now: SimTime,
        params: &CodelParams,
        q: &mut impl CodelQueue,
        dropped: &mut Vec<(PacketId, DropReason)>,
    ) -> Option<Queued> {
        let mut p = q.pop_head();
        if p.is_none() {
            self.dropping = false;
            return None;
        }
        let drop = self.should_drop(p.as_ref(), now, params, q.backlog_bytes());
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.wrapping_add(1);
                    self.newton_step();
                    let head = p.as_mut().expect("a packet in hand");
                    if params.ecn && head.mark() {
                        self.drop_next = self.control_law(self.drop_next, params.interval);
                        return p;
                    }
                    dropped.push((head.id, DropReason::Aqm));
                    p = q.pop_head();
                    if !self.should_drop(p.as_ref(), now, params, q.backlog_bytes()) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, params.interval);
                    }
                }
            }
        } else if drop {
            let head = p.as_mut().expect("a packet in hand");
            if !(params.ecn && head.mark()) {
                dropped.push((head.id, DropReason::Aqm));
                p = q.pop_head();
                self.should_drop(p.as_ref(), now, params, q.backlog_bytes());
            }
            self.dropping = true;
            // close to the last dropping state: start from the drop rate that ended it
            let delta = self.count.wrapping_sub(self.lastcount);
            let since = now.0 as i128 - self.drop_next.0 as i128;
            if delta > 1 && since < 16 * params.interval.0 as i128 {
                self.count = delta;
                self.newton_step();
            } else {
                self.count = 1;
                self.rec_inv_sqrt = REC_INV_SQRT_ONE;
            }
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, params.interval);
        }
        p
    }
}

/// CoDel over one FIFO.
pub struct Codel {
    params: CodelParams,
    limit: QueueLimit,
    q: Fifo,
    vars: CodelVars,
}

impl Codel {
    pub fn new(params: CodelParams, limit: QueueLimit) -> Codel {
        Codel { params, limit, q: Fifo::default(), vars: CodelVars::default() }
    }
}

impl CodelQueue for Fifo {
    fn pop_head(&mut self) -> Option<Queued> {
        self.pop()
    }

    fn backlog_bytes(&self) -> u64 {
        self.bytes()
    }
}

impl Aqm for Codel {
    fn enqueue(&mut self, _now: SimTime, p: Queued, _dropped: &mut Vec<(PacketId, DropReason)>) -> Admit {
        if self.q.full_for(self.limit, p.size) {
            return Admit::Dropped(DropReason::Overflow);
        }
        self.q.push(p);
        Admit::Queued
    }

    fn dequeue(&mut self, now: SimTime, dropped: &mut Vec<(PacketId, DropReason)>) -> Option<Queued> {
        self.vars.dequeue(now, &self.params, &mut self.q, dropped)
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

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// A CoDel queue fed `n` packets at time 0, then served one packet every `gap` from
    /// `start`: returns (time, dropped ids) of every dequeue that dropped.
    fn serve(n: u32, start: SimTime, gap: Dur) -> (Vec<(SimTime, Vec<u32>)>, Codel) {
        let mut c = Codel::new(CodelParams::default(), QueueLimit::Packets(10_000));
        let mut d = Vec::new();
        for id in 0..n {
            assert_eq!(
                c.enqueue(SimTime::ZERO, Queued { id, size: 1500, enqueued: SimTime::ZERO, flow: 0, ect: false, marked: false }, &mut d),
                Admit::Queued
            );
        }
        let mut drops = Vec::new();
        let mut t = start;
        while c.backlog().0 > 0 {
            d.clear();
            c.dequeue(t, &mut d);
            if !d.is_empty() {
                drops.push((t, d.iter().map(|x| x.0).collect()));
            }
            t += gap;
        }
        (drops, c)
    }

    /// Linux's sequence of `1/sqrt(count)`: one Newton step per count from 1.0 at count 1.
    fn newton_oracle(upto: u32) -> Vec<f64> {
        let mut x = 1.0f64;
        let mut v = vec![0.0, 1.0];
        for n in 2..=upto {
            x = x * (3.0 - n as f64 * x * x) / 2.0;
            v.push(x);
        }
        v
    }

    #[test]
    fn the_fixed_point_inverse_square_root_follows_newton_s_iteration() {
        let oracle = newton_oracle(1000);
        let mut v = CodelVars { rec_inv_sqrt: REC_INV_SQRT_ONE, count: 1, ..CodelVars::default() };
        for count in 2..=1000u32 {
            v.count = count;
            v.newton_step();
            let got = v.rec_inv_sqrt as f64 / 65536.0;
            assert!((got - oracle[count as usize]).abs() < 1e-3, "count {count}: {got} vs {}", oracle[count as usize]);
        }
        // and it approaches the true value (one step per count is coarse at first)
        let exact = 1.0 / 1000f64.sqrt();
        assert!((v.rec_inv_sqrt as f64 / 65536.0 - exact).abs() / exact < 0.02);
    }

    #[test]
    fn no_drop_while_the_sojourn_stays_below_target() {
        // served 1 ms after arriving, every 1 ms: the sojourn grows 1 ms per packet only
        // while packets wait; four packets never reach 5 ms
        let (drops, _) = serve(4, ms(1), Dur::from_millis(1));
        assert!(drops.is_empty());
    }

    #[test]
    fn drops_begin_one_interval_after_the_delay_rose_and_follow_the_control_law() {
        // 300 packets queued at once, served one per ms from 10 ms: every sojourn is above
        // 5 ms; the first dequeue starts the interval, the first drop comes after it ends
        let (drops, _) = serve(300, ms(10), Dur::from_millis(1));
        assert!(drops.len() >= 3, "{drops:?}");
        let first = drops[0].0;
        assert_eq!(first, ms(111), "first drop strictly after 10 + 100 ms");
        // then one drop at each control-law time, interval * 1/sqrt(count) after the previous
        // one's due time, served at the next whole millisecond
        let oracle = newton_oracle(64);
        let mut due = 111.0;
        for (n, w) in drops.windows(2).enumerate() {
            due += 100.0 * oracle[n + 1];
            let at = w[1].0 .0 as f64 / 1e6;
            assert!(at >= due - 0.5 && at < due + 1.5, "drop {} at {at} ms, due {due} ms", n + 2);
        }
    }

    #[test]
    fn a_queue_of_one_packet_is_never_dropped_from() {
        // two packets with huge sojourns: behind the first only one full packet waits, and
        // behind the second nothing
        let (drops, _) = serve(2, ms(500), Dur::from_millis(200));
        assert!(drops.is_empty());
    }

    #[test]
    fn the_queue_limit_drops_arrivals() {
        let mut c = Codel::new(CodelParams::default(), QueueLimit::Packets(2));
        let mut d = Vec::new();
        let p = |id| Queued { id, size: 100, enqueued: SimTime::ZERO, flow: 0, ect: false, marked: false };
        assert_eq!(c.enqueue(SimTime::ZERO, p(0), &mut d), Admit::Queued);
        assert_eq!(c.enqueue(SimTime::ZERO, p(1), &mut d), Admit::Queued);
        assert_eq!(c.enqueue(SimTime::ZERO, p(2), &mut d), Admit::Dropped(DropReason::Overflow));
        assert_eq!(c.clear(), vec![0, 1]);
    }

    #[test]
    fn with_ecn_ect_packets_are_marked_at_the_drop_times_and_the_others_dropped() {
        // the standing queue of `drops_begin...`: 300 packets, served one per ms from 10 ms
        let run = |ecn: bool, ect: bool| {
            let mut c = Codel::new(CodelParams { ecn, ..CodelParams::default() }, QueueLimit::Packets(10_000));
            let mut d = Vec::new();
            for id in 0..300 {
                c.enqueue(SimTime::ZERO, Queued { id, size: 1500, enqueued: SimTime::ZERO, flow: 0, ect, marked: false }, &mut d);
            }
            let (mut marks, mut t) = (Vec::new(), ms(10));
            while c.backlog().0 > 0 {
                if c.dequeue(t, &mut d).is_some_and(|p| p.marked) {
                    marks.push(t);
                }
                t += Dur::from_millis(1);
            }
            (marks, d.len())
        };
        let (marks, drops) = run(true, true);
        assert_eq!(drops, 0, "nothing dropped");
        // the first mark where the first drop was, then the control law's times
        assert_eq!(marks[0], ms(111));
        // then an interval later, and half an interval after that (the first Newton step
        // from 1/sqrt(1) gives 1/2 for count 2, as in the drop case)
        assert!(marks.len() >= 3, "{} marks", marks.len());
        assert_eq!((marks[1], marks[2]), (ms(211), ms(261)));
        let (no_marks, drops) = run(true, false);
        assert!(no_marks.is_empty() && drops >= 3, "Not-ECT packets are dropped");
        let (no_marks, drops) = run(false, true);
        assert!(no_marks.is_empty() && drops >= 3, "without ecn ECT packets are dropped");
    }
}
