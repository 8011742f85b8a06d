//! RED, Random Early Detection (Floyd and Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", 1993), with the gentle variant (Floyd, "Recommendation on using the
//! gentle_ variant of RED", 2000).
//!
//! On each arrival the average queue is updated, `avg = (1 - w) avg + w q`, with `q` the
//! packets (or bytes) waiting; after an idle period it first decays as if `m` packets had
//! found the queue empty, `avg = (1 - w)^m avg`, `m` the idle time over the transmission time
//! of a `mean_packet`. Then, with `min_th <= avg < max_th`, the packet is dropped with
//! probability `pa = pb / (1 - count pb)`, `pb = max_p (avg - min_th) / (max_th - min_th)`,
//! `count` the packets accepted since the last drop, so that drops come evenly spaced rather
//! than in clusters. In gentle mode `pb` rises on from `max_p` to 1 between `max_th` and
//! `2 max_th`; above that (or above `max_th` without gentle) every arrival is dropped. The
//! thresholds and the average count packets or bytes, as the thresholds are written.
//!
//! With `ecn` (off by default, as in Linux), an ECN-capable arrival that RED would drop, early
//! or because the average is above the top threshold, is marked CE and queued instead, as
//! Linux's sch_red does without its `harddrop` flag (ns-3's RedQueueDisc drops above the top
//! threshold by default, `UseHardDrop`); the queue's hard limit still drops.
//!
//! Defaults are ns-3's RedQueueDisc's (5 and 15 packets, max_p 1/50, w 0.002, gentle on)
//! with a 1,500-byte mean packet.

use super::{Admit, Aqm, DropReason, Fifo, Queued};
use crate::net::{PacketId, QueueLimit};
use crate::rng::Rng;
use crate::time::{Dur, SimTime};

/// RED's parameters (scenario table `aqm = { kind = "red", ... }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Below this average, no drop (packets or bytes).
    pub min_th: QueueLimit,
    /// From this average, every packet is dropped (or, gentle, the probability rises to 1 at
    /// twice it). Same unit as `min_th`.
    pub max_th: QueueLimit,
    /// The drop probability as the average reaches `max_th`.
    pub max_p: f64,
    /// The average's weight of each new sample.
    pub weight: f64,
    pub gentle: bool,
    /// The size whose transmission time measures an idle period (bytes).
    pub mean_packet: u32,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th: QueueLimit::Packets(5),
            max_th: QueueLimit::Packets(15),
            max_p: 0.02,
            weight: 0.002,
            gentle: true,
            mean_packet: 1500,
            ecn: false,
        }
    }
}

fn amount(l: QueueLimit) -> f64 {
    match l {
        QueueLimit::Packets(n) | QueueLimit::Bytes(n) => n as f64,
    }
}

pub struct Red {
    params: RedParams,
    limit: QueueLimit,
    q: Fifo,
    avg: f64,
    /// Packets accepted since the last drop; -1 while the average is below `min_th`.
    count: i64,
    /// When the queue last went empty (the transmitter idle from then), if it is empty.
    idle_since: Option<SimTime>,
    mean_tx: Dur,
    rng: Rng,
}

impl Red {
    pub fn new(params: RedParams, limit: QueueLimit, rate_bps: u64, rng: Rng) -> Red {
        let mean_tx = Dur::tx_time(params.mean_packet as u64, rate_bps.max(1));
        Red { params, limit, q: Fifo::default(), avg: 0.0, count: -1, idle_since: Some(SimTime::ZERO), mean_tx, rng }
    }

    /// The average queue (in the thresholds' unit).
    pub fn average(&self) -> f64 {
        self.avg
    }

    fn update_average(&mut self, now: SimTime) {
        let w = self.params.weight;
        if let Some(since) = self.idle_since {
            let m = now.since(since).0 / self.mean_tx.0.max(1);
            self.avg *= (1.0 - w).powf(m as f64);
        }
        let q = match self.params.min_th {
            QueueLimit::Packets(_) => self.q.len() as f64,
            QueueLimit::Bytes(_) => self.q.bytes() as f64,
        };
        self.avg = (1.0 - w) * self.avg + w * q;
    }

    /// Whether the arrival is dropped early (the average already updated).
    fn early_drop(&mut self) -> bool {
        let p = &self.params;
        let (min, max) = (amount(p.min_th), amount(p.max_th));
        let avg = self.avg;
        if avg < min {
            self.count = -1;
            return false;
        }
        let pb = if avg < max {
            p.max_p * (avg - min) / (max - min)
        } else if p.gentle && avg < 2.0 * max {
            p.max_p + (1.0 - p.max_p) * (avg - max) / max
        } else {
            self.count = 0;
            return true;
        };
        self.count += 1;
        let c = self.count as f64;
        let pa = if c * pb < 1.0 { pb / (1.0 - c * pb) } else { 1.0 };
        if self.rng.next_f64() < pa {
            self.count = 0;
            return true;
        }
        false
    }
}

impl Aqm for Red {
    fn enqueue(&mut self, now: SimTime, mut p: Queued, _dropped: &mut Vec<(PacketId, DropReason)>) -> Admit {
        self.update_average(now);
        self.idle_since = None;
        if self.early_drop() && !(self.params.ecn && p.mark()) {
            self.idle_since = self.q.is_empty().then_some(now);
            return Admit::Dropped(DropReason::Aqm);
        }
        if self.q.full_for(self.limit, p.size) {
            self.count = 0;
            self.idle_since = self.q.is_empty().then_some(now);
            return Admit::Dropped(DropReason::Overflow);
        }
        self.q.push(p);
        Admit::Queued
    }

    fn dequeue(&mut self, now: SimTime, _dropped: &mut Vec<(PacketId, DropReason)>) -> Option<Queued> {
        let p = self.q.pop();
        if self.q.is_empty() && self.idle_since.is_none() {
            // the queue is empty from the moment this packet leaves; the transmitter's idle
            // time is counted from then (ns-3 and Linux count from the end of transmission,
            // a packet's time apart)
            self.idle_since = Some(now);
        }
        p
    }

    fn backlog(&self) -> (u64, u64) {
        (self.q.len() as u64, self.q.bytes())
    }

    fn clear(&mut self) -> Vec<PacketId> {
        self.idle_since = None;
        self.q.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(params: RedParams) -> Red {
        Red::new(params, QueueLimit::Packets(1000), 10_000_000, Rng::from_seed(3))
    }

    fn pkt(id: u32) -> Queued {
        Queued { id, size: 1500, enqueued: SimTime::ZERO, flow: 0, ect: false, marked: false }
    }

    /// Drives the average to a steady queue of `q` packets, then counts drops in `n` arrivals
    /// that leave the queue at `q`.
    fn drop_fraction(params: RedParams, q: u32, n: u32) -> f64 {
        let mut r = red(params);
        let mut d = Vec::new();
        for i in 0..q {
            r.q.push(pkt(i));
        }
        r.avg = q as f64;
        r.idle_since = None;
        let mut drops = 0;
        for i in 0..n {
            match r.enqueue(SimTime::ZERO, pkt(1000 + i), &mut d) {
                Admit::Queued => {
                    r.dequeue(SimTime::ZERO, &mut d);
                }
                Admit::Dropped(_) => drops += 1,
            }
        }
        drops as f64 / n as f64
    }

    #[test]
    fn no_drops_below_min_th_all_above_twice_max_th() {
        assert_eq!(drop_fraction(RedParams::default(), 3, 2000), 0.0);
        assert_eq!(drop_fraction(RedParams::default(), 31, 200), 1.0);
        let harsh = RedParams { gentle: false, ..RedParams::default() };
        assert_eq!(drop_fraction(harsh, 16, 200), 1.0);
    }

    #[test]
    fn the_count_spaces_drops_so_their_rate_is_about_pb_over_1_plus_pb() {
        // at avg 10 of 5..15 with max_p 0.1, pb = 0.05: with the count, drops are uniform
        // over 1..1/pb arrivals apart, a rate of 2 pb / (1 + pb) ~ 0.095
        let p = RedParams { max_p: 0.1, ..RedParams::default() };
        let f = drop_fraction(p, 10, 20_000);
        assert!((f - 0.0952).abs() < 0.01, "{f}");
    }

    #[test]
    fn gentle_mode_ramps_from_max_p_to_one() {
        // just above max_th: pb = 0.02 + 0.98 / 15 = 0.0853, so with the count ~ 0.157
        let f = drop_fraction(RedParams::default(), 16, 20_000);
        assert!((f - 0.157).abs() < 0.015, "{f}");
        // without gentle mode the same average drops everything
        assert_eq!(drop_fraction(RedParams { gentle: false, ..RedParams::default() }, 16, 200), 1.0);
    }

    #[test]
    fn the_average_decays_over_an_idle_period() {
        let mut r = red(RedParams::default());
        r.avg = 10.0;
        let mut d = Vec::new();
        // idle since 0: one full packet at 10 Mbit/s takes 1.2 ms, so 1.2 s is 1000 of them
        r.enqueue(SimTime(1_200_000_000), pkt(1), &mut d);
        let expect = 10.0 * 0.998f64.powi(1000) * 0.998;
        assert!((r.average() - expect).abs() < 1e-9, "{} vs {expect}", r.average());
    }

    #[test]
    fn with_ecn_capable_packets_are_marked_and_the_others_dropped() {
        let p = RedParams { ecn: true, max_p: 0.1, ..RedParams::default() };
        let mut r = red(p);
        let mut d = Vec::new();
        for i in 0..10 {
            r.q.push(pkt(i));
        }
        r.avg = 10.0;
        r.idle_since = None;
        let (mut marked, mut dropped_ect, mut dropped_plain) = (0, 0, 0);
        for i in 0..20_000u32 {
            let ect = i % 2 == 0;
            match r.enqueue(SimTime::ZERO, Queued { ect, ..pkt(1000 + i) }, &mut d) {
                Admit::Queued => {
                    let last = r.q.q.back().copied().unwrap();
                    marked += last.marked as u32;
                    assert!(!last.marked || ect, "only an ECN-capable packet is marked");
                    r.dequeue(SimTime::ZERO, &mut d);
                }
                Admit::Dropped(_) if ect => dropped_ect += 1,
                Admit::Dropped(_) => dropped_plain += 1,
            }
        }
        assert_eq!(dropped_ect, 0);
        // about half of the early decisions fall on each kind
        assert!(marked > 500 && dropped_plain > 500, "{marked} marked, {dropped_plain} dropped");
        // the hard limit drops whatever the packet is
        let mut full = Red::new(p, QueueLimit::Packets(1), 10_000_000, Rng::from_seed(3));
        assert_eq!(full.enqueue(SimTime::ZERO, Queued { ect: true, ..pkt(1) }, &mut d), Admit::Queued);
        assert_eq!(full.enqueue(SimTime::ZERO, Queued { ect: true, ..pkt(2) }, &mut d), Admit::Dropped(DropReason::Overflow));
    }
}
