//! FQ-CoDel (RFC 8290), as Linux 6.x's sch_fq_codel.c runs it.
//!
//! Arriving packets are hashed by their flow's 5-tuple into one of `flows` queues (1024). A
//! queue that was empty joins the list of new flows with a deficit of one `quantum`; the
//! scheduler serves the new flows first, then the old ones, in deficit round robin: a queue
//! whose deficit is spent gets another quantum and moves to the back of the old list. Each
//! queue runs its own CoDel ([`CodelVars`]); a queue that CoDel leaves empty moves to the old
//! list if it was new and old flows are waiting (so new flows cannot starve old ones), and
//! leaves the lists otherwise.
//!
//! When the whole discipline is over its limit (the link's `queue`, in packets or bytes), the
//! flow with the largest backlog loses packets from its head: as Linux does, up to half its
//! bytes and at most 64 packets at once, which may include the packet that just arrived.
//!
//! The hash: in the simulator a flow is a connection's subflow (a subflow has a 5-tuple of
//! its own), identified by a number; it is mixed with a per-link random perturbation (Linux
//! draws one per qdisc) and scaled onto the queues as Linux's `reciprocal_scale` does, so two
//! subflows can share a queue as they can on a real router.

use super::codel::{CodelParams, CodelQueue, CodelVars};
use super::{Admit, Aqm, DropReason, Fifo, Queued};
use crate::net::{PacketId, QueueLimit};
use crate::rng::Rng;
use crate::time::SimTime;
use std::collections::VecDeque;

/// FQ-CoDel's parameters (scenario table `aqm = { kind = "fq_codel", ... }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FqCodelParams {
    /// CoDel's parameters, for every flow queue.
    pub codel: CodelParams,
    /// Flow queues (RFC 8290 and Linux: 1024).
    pub flows: u32,
    /// Bytes a queue may send per round (Linux: the device MTU plus header, 1514).
    pub quantum: u32,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        // Linux's fq_codel marks ECN-capable packets unless told `noecn`
        FqCodelParams { codel: CodelParams { ecn: true, ..CodelParams::default() }, flows: 1024, quantum: 1514 }
    }
}

/// Most packets one overflow drops at once (Linux's `drop_batch_size`).
const DROP_BATCH: usize = 64;

#[derive(Default)]
struct FlowQueue {
    q: Fifo,
    deficit: i64,
    vars: CodelVars,
    /// In the new or old list.
    listed: bool,
}

/// One flow queue seen by CoDel: pops from it, and counts the discipline's whole backlog.
struct FlowView<'a> {
    flow: &'a mut FlowQueue,
    backlog: &'a mut (u64, u64),
}

impl CodelQueue for FlowView<'_> {
    fn pop_head(&mut self) -> Option<Queued> {
        let p = self.flow.q.pop()?;
        self.backlog.0 -= 1;
        self.backlog.1 -= p.size as u64;
        Some(p)
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog.1
    }
}

pub struct FqCodel {
    params: FqCodelParams,
    limit: QueueLimit,
    queues: Vec<FlowQueue>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Packets and bytes in all queues.
    backlog: (u64, u64),
    perturbation: u64,
}

impl FqCodel {
    pub fn new(params: FqCodelParams, limit: QueueLimit, mut rng: Rng) -> FqCodel {
        let n = params.flows.max(1) as usize;
        FqCodel {
            params,
            limit,
            queues: (0..n).map(|_| FlowQueue::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog: (0, 0),
            perturbation: rng.next_u64(),
        }
    }

    /// The queue of flow `flow`.
    pub fn queue_of(&self, flow: u32) -> usize {
        // a 64-bit finaliser (splitmix64's) of the flow and the perturbation, scaled onto
        // the queues by the high bits of a 32 x 32 product
        let mut x = (flow as u64) ^ self.perturbation;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        (((x as u32) as u64 * self.queues.len() as u64) >> 32) as usize
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => self.backlog.0 > n,
            QueueLimit::Bytes(b) => self.backlog.1 > b,
        }
    }

    /// Drops from the head of the fattest queue: up to half its bytes, at most 64 packets.
    fn drop_from_fattest(&mut self, dropped: &mut Vec<(PacketId, DropReason)>) {
        let (mut fat, mut most) = (0, 0);
        for (i, f) in self.queues.iter().enumerate() {
            if f.q.bytes() > most {
                (fat, most) = (i, f.q.bytes());
            }
        }
        let threshold = most / 2;
        let (mut bytes, mut n) = (0, 0);
        while let Some(p) = self.queues[fat].q.pop() {
            self.backlog.0 -= 1;
            self.backlog.1 -= p.size as u64;
            bytes += p.size as u64;
            n += 1;
            dropped.push((p.id, DropReason::Overflow));
            if n >= DROP_BATCH || bytes >= threshold {
                break;
            }
        }
    }
}

impl Aqm for FqCodel {
    fn enqueue(&mut self, _now: SimTime, p: Queued, dropped: &mut Vec<(PacketId, DropReason)>) -> Admit {
        let idx = self.queue_of(p.flow);
        let f = &mut self.queues[idx];
        f.q.push(p);
        self.backlog.0 += 1;
        self.backlog.1 += p.size as u64;
        if !f.listed {
            f.listed = true;
            f.deficit = self.params.quantum as i64;
            self.new_flows.push_back(idx as u32);
        }
        if !self.over_limit() {
            return Admit::Queued;
        }
        let before = dropped.len();
        self.drop_from_fattest(dropped);
        if dropped[before..].iter().any(|&(id, _)| id == p.id) {
            // the arrival was among them: report it as not queued, not as dropped from the queue
            dropped.retain(|&(id, _)| id != p.id);
            return Admit::Dropped(DropReason::Overflow);
        }
        Admit::Queued
    }

    fn dequeue(&mut self, now: SimTime, dropped: &mut Vec<(PacketId, DropReason)>) -> Option<Queued> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let idx = *if from_new { self.new_flows.front() } else { self.old_flows.front() }? as usize;
            let quantum = self.params.quantum as i64;
            if self.queues[idx].deficit <= 0 {
                self.queues[idx].deficit += quantum;
                if from_new {
                    self.new_flows.pop_front()
                } else {
                    self.old_flows.pop_front()
                };
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let params = self.params.codel;
            let flow = &mut self.queues[idx];
            let mut view = FlowView { flow, backlog: &mut self.backlog };
            let mut vars = view.flow.vars;
            let p = vars.dequeue(now, &params, &mut view, dropped);
            self.queues[idx].vars = vars;
            match p {
                Some(p) => {
                    self.queues[idx].deficit -= p.size as i64;
                    return Some(p);
                }
                None => {
                    if from_new {
                        self.new_flows.pop_front()
                    } else {
                        self.old_flows.pop_front()
                    };
                    if from_new && !self.old_flows.is_empty() {
                        // once through the old flows before the queue may count as new again
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.queues[idx].listed = false;
                    }
                }
            }
        }
    }

    fn backlog(&self) -> (u64, u64) {
        self.backlog
    }

    fn clear(&mut self) -> Vec<PacketId> {
        self.new_flows.clear();
        self.old_flows.clear();
        self.backlog = (0, 0);
        let mut ids = Vec::new();
        for f in &mut self.queues {
            ids.extend(f.q.drain());
            f.listed = false;
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn fq(limit: u64) -> FqCodel {
        FqCodel::new(FqCodelParams::default(), QueueLimit::Packets(limit), Rng::from_seed(7))
    }

    /// Two flows that do not share a queue under this perturbation.
    fn two_flows(f: &FqCodel) -> (u32, u32) {
        let a = 1;
        let b = (2..100).find(|&b| f.queue_of(b) != f.queue_of(a)).unwrap();
        (a, b)
    }

    fn pkt(id: u32, flow: u32, size: u32, at: SimTime) -> Queued {
        Queued { id, size, enqueued: at, flow, ect: false, marked: false }
    }

    #[test]
    fn flows_share_the_link_in_round_robin_by_bytes() {
        let mut f = fq(10_000);
        let (a, b) = two_flows(&f);
        let mut d = Vec::new();
        // flow a queues 20 full packets first, then flow b 20 small ones
        for i in 0..20 {
            f.enqueue(SimTime::ZERO, pkt(i, a, 1500, SimTime::ZERO), &mut d);
        }
        for i in 20..40 {
            f.enqueue(SimTime::ZERO, pkt(i, b, 500, SimTime::ZERO), &mut d);
        }
        let order: Vec<u32> = (0..12).map(|_| f.dequeue(SimTime::ZERO, &mut d).unwrap().flow).collect();
        // a quantum (1514 B) is one full packet of a or three of b's 500-byte packets (the
        // third overdraws the deficit, which the next round pays back)
        let a_count = order.iter().filter(|&&x| x == a).count();
        let b_count = order.iter().filter(|&&x| x == b).count();
        assert!(b_count >= 2 * a_count, "{order:?}");
        assert!(a_count >= 2, "{order:?}");
        assert!(d.is_empty());
    }

    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        let mut f = fq(10_000);
        let (bulk, sparse) = two_flows(&f);
        let mut d = Vec::new();
        for i in 0..50 {
            f.enqueue(SimTime::ZERO, pkt(i, bulk, 1500, SimTime::ZERO), &mut d);
        }
        // the bulk flow has been served a while: it is an old flow now
        for _ in 0..5 {
            f.dequeue(SimTime::ZERO, &mut d);
        }
        f.enqueue(SimTime::ZERO, pkt(99, sparse, 100, SimTime::ZERO), &mut d);
        assert_eq!(f.dequeue(SimTime::ZERO, &mut d).map(|p| p.id), Some(99));
    }

    #[test]
    fn overflow_drops_from_the_head_of_the_fattest_flow() {
        let mut f = fq(10);
        let (fat, thin) = two_flows(&f);
        let mut d = Vec::new();
        for i in 0..8 {
            f.enqueue(SimTime::ZERO, pkt(i, fat, 1500, SimTime::ZERO), &mut d);
        }
        for i in 8..11 {
            assert_eq!(f.enqueue(SimTime::ZERO, pkt(i, thin, 1500, SimTime::ZERO), &mut d), Admit::Queued);
        }
        // the 11th packet went over the limit of 10: half of the fat flow's 8 go, from its head
        assert_eq!(d, (0..4).map(|i| (i, DropReason::Overflow)).collect::<Vec<_>>());
        assert_eq!(f.backlog(), (7, 7 * 1500));
    }

    #[test]
    fn codel_runs_per_flow() {
        let mut f = fq(10_000);
        let (slow, fast) = two_flows(&f);
        let mut d = Vec::new();
        // a standing queue in one flow: 200 packets waiting since 0
        for i in 0..200 {
            f.enqueue(SimTime::ZERO, pkt(i, slow, 1500, SimTime::ZERO), &mut d);
        }
        let mut t = SimTime::ZERO;
        let mut fast_id = 1000;
        let mut fast_dropped = 0;
        // the other flow sends one packet per 2 ms, each leaving at once
        for _ in 0..150 {
            t += Dur::from_millis(1);
            if t.0.is_multiple_of(2_000_000) {
                f.enqueue(t, pkt(fast_id, fast, 1500, t), &mut d);
                fast_id += 1;
            }
            f.dequeue(t, &mut d);
        }
        fast_dropped += d.iter().filter(|(id, _)| *id >= 1000).count();
        assert!(d.iter().any(|(id, _)| *id < 1000), "the standing queue is dropped from");
        assert_eq!(fast_dropped, 0, "the sparse flow is not");
    }
}
