//! Active queue management: a link whose queue is run by CoDel, FQ-CoDel, RED or PIE instead
//! of plain drop-tail (scenario key `aqm` on a `[[link]]`).
//!
//! A drop-tail link knows each packet's departure when the packet arrives (`link.rs`), but an
//! AQM decides at the moment a packet leaves the queue (CoDel drops at dequeue, FQ-CoDel picks
//! among flows), so a managed link keeps a real queue: the discipline holds the packets, and
//! the simulation asks it for the next one whenever the transmitter is free (an event per
//! transmission, where a drop-tail link needs none). RED and PIE decide at arrival and could
//! have been virtual too; they share the managed queue so that every AQM is measured the same
//! way (queueing delay is the sojourn from arrival to the start of transmission).
//!
//! Every discipline implements [`Aqm`]: `enqueue` when a packet arrives, `dequeue` when the
//! transmitter can take one. The link's `queue` is the hard limit (Linux's `limit` of these
//! qdiscs), in packets or bytes, not counting the packet in service. Drops are reported with
//! the packet ids so that the caller frees and traces them.
//!
//! Explicit congestion notification (RFC 3168): a discipline with `ecn` on marks an
//! ECN-capable packet Congestion Experienced (sets `Queued::marked`) where it would have
//! dropped it by its own decision, as Linux's `INET_ECN_set_ce` does; a packet that is not
//! ECN-capable is dropped as before, and overflows of the hard limit always drop. The link
//! copies the mark into the packet's IP header and counts it (`aqm_marks`).

pub mod codel;
pub mod fq_codel;
pub mod pie;
pub mod red;

use crate::net::{PacketId, QueueLimit};
use crate::rng::Rng;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

pub use codel::CodelParams;
pub use fq_codel::FqCodelParams;
pub use pie::PieParams;
pub use red::RedParams;

/// A packet waiting in a managed queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub id: PacketId,
    /// Bytes on the wire.
    pub size: u32,
    /// When it joined the queue.
    pub enqueued: SimTime,
    /// The hash of its flow's 5-tuple (every subflow of a connection is a flow of its own).
    pub flow: u32,
    /// ECN-capable (its IP header says ECT(0), ECT(1) or CE already).
    pub ect: bool,
    /// The discipline marked it CE instead of dropping it.
    pub marked: bool,
}

impl Queued {
    /// Marks the packet CE if it is ECN-capable; false (drop it) if it is not.
    #[inline]
    pub fn mark(&mut self) -> bool {
        self.marked |= self.ect;
        self.ect
    }
}

/// Why a managed queue dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was at its limit.
    Overflow,
    /// The AQM decided to (an early drop at arrival, or a drop at dequeue).
    Aqm,
}

/// What became of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Queued,
    Dropped(DropReason),
}

/// A queue discipline. Calls come in non-decreasing time.
pub trait Aqm: Send {
    /// Packet `p` arrives at `now`. Returns whether it joined the queue; packets already
    /// queued that the discipline drops to make room go to `dropped`.
    fn enqueue(&mut self, now: SimTime, p: Queued, dropped: &mut Vec<(PacketId, DropReason)>) -> Admit;
    /// The transmitter can take a packet at `now`: the one to send, if any. Packets the
    /// discipline drops on the way go to `dropped`.
    fn dequeue(&mut self, now: SimTime, dropped: &mut Vec<(PacketId, DropReason)>) -> Option<Queued>;
    /// Packets and bytes waiting.
    fn backlog(&self) -> (u64, u64);
    /// Empties the queue (the link went down), returning what it held.
    fn clear(&mut self) -> Vec<PacketId>;
}

/// A link's AQM setting, with its parameters (scenario key `aqm`).
#[derive(Clone, Debug, PartialEq)]
pub enum AqmSpec {
    Codel(CodelParams),
    FqCodel(FqCodelParams),
    Red(RedParams),
    Pie(PieParams),
}

/// The disciplines, by scenario name, with a line each for `mpsim list aqm`.
pub const AQMS: &[(&str, &str)] = &[
    ("codel", "CoDel (RFC 8289): drops at dequeue once the sojourn time stays above target for an interval"),
    ("fq_codel", "FQ-CoDel (RFC 8290): flows hashed by 5-tuple into queues served by deficit round robin, CoDel on each"),
    ("red", "RED (Floyd and Jacobson 1993) with gentle mode: early drops as the average queue grows"),
    ("pie", "PIE (RFC 8033): early drops with a probability steered by the queueing delay"),
];

impl AqmSpec {
    /// The discipline's scenario name.
    pub fn name(&self) -> &'static str {
        match self {
            AqmSpec::Codel(_) => "codel",
            AqmSpec::FqCodel(_) => "fq_codel",
            AqmSpec::Red(_) => "red",
            AqmSpec::Pie(_) => "pie",
        }
    }

    /// The discipline with its RFC (or usual) defaults.
    pub fn default_for(name: &str) -> Option<AqmSpec> {
        Some(match name {
            "codel" => AqmSpec::Codel(CodelParams::default()),
            "fq_codel" => AqmSpec::FqCodel(FqCodelParams::default()),
            "red" => AqmSpec::Red(RedParams::default()),
            "pie" => AqmSpec::Pie(PieParams::default()),
            _ => return None,
        })
    }

    /// A discipline for a link of `rate_bps` with queue limit `limit`; `rng` draws its random
    /// decisions (RED, PIE) or perturbs its flow hash (FQ-CoDel).
    pub fn build(&self, limit: QueueLimit, rate_bps: u64, rng: Rng) -> Box<dyn Aqm> {
        match self {
            AqmSpec::Codel(p) => Box::new(codel::Codel::new(*p, limit)),
            AqmSpec::FqCodel(p) => Box::new(fq_codel::FqCodel::new(*p, limit, rng)),
            AqmSpec::Red(p) => Box::new(red::Red::new(*p, limit, rate_bps, rng)),
            AqmSpec::Pie(p) => Box::new(pie::Pie::new(*p, limit, rng)),
        }
    }
}

/// A first-in first-out queue of packets that counts its bytes.
#[derive(Debug, Default)]
pub struct Fifo {
    q: VecDeque<Queued>,
    bytes: u64,
}

impl Fifo {
    pub fn push(&mut self, p: Queued) {
        self.bytes += p.size as u64;
        self.q.push_back(p);
    }

    pub fn pop(&mut self) -> Option<Queued> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn drain(&mut self) -> Vec<PacketId> {
        self.bytes = 0;
        self.q.drain(..).map(|p| p.id).collect()
    }

    /// Whether a packet of `size` bytes would take the queue over `limit`.
    pub fn full_for(&self, limit: QueueLimit, size: u32) -> bool {
        match limit {
            QueueLimit::Packets(n) => self.q.len() as u64 >= n,
            QueueLimit::Bytes(b) => self.bytes + size as u64 > b,
        }
    }
}

/// Queueing delays of the packets a managed link sent: mean and percentiles, from a
/// histogram of 0.1 ms bins up to 10 s (longer sojourns count in the last bin).
#[derive(Clone, Debug)]
pub struct SojournStats {
    bins: Vec<u64>,
    count: u64,
    sum: Dur,
}

const SOJOURN_BIN_NS: u64 = 100_000;
const SOJOURN_BINS: usize = 100_000;

impl Default for SojournStats {
    fn default() -> Self {
        SojournStats { bins: Vec::new(), count: 0, sum: Dur::ZERO }
    }
}

impl SojournStats {
    pub fn record(&mut self, d: Dur) {
        let bin = ((d.0 / SOJOURN_BIN_NS) as usize).min(SOJOURN_BINS - 1);
        if self.bins.len() <= bin {
            self.bins.resize(bin + 1, 0);
        }
        self.bins[bin] += 1;
        self.count += 1;
        self.sum = self.sum + d;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean sojourn, if any packet was sent.
    pub fn mean(&self) -> Option<Dur> {
        (self.count > 0).then(|| Dur(self.sum.0 / self.count))
    }

    /// The `q`-quantile (0 < q <= 1), as the upper edge of its bin.
    pub fn quantile(&self, q: f64) -> Option<Dur> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Dur((i as u64 + 1) * SOJOURN_BIN_NS));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, size: u32) -> Queued {
        Queued { id, size, enqueued: SimTime::ZERO, flow: 0, ect: false, marked: false }
    }

    #[test]
    fn a_fifo_counts_packets_and_bytes_and_knows_when_it_is_full() {
        let mut f = Fifo::default();
        f.push(pkt(1, 1500));
        f.push(pkt(2, 40));
        assert_eq!((f.len(), f.bytes()), (2, 1540));
        assert!(f.full_for(QueueLimit::Packets(2), 1500));
        assert!(!f.full_for(QueueLimit::Packets(3), 1500));
        assert!(f.full_for(QueueLimit::Bytes(3000), 1500));
        assert!(!f.full_for(QueueLimit::Bytes(3040), 1500));
        assert_eq!(f.pop().map(|p| p.id), Some(1));
        assert_eq!(f.bytes(), 40);
        assert_eq!(f.drain(), vec![2]);
        assert!(f.is_empty());
    }

    #[test]
    fn sojourn_quantiles_are_bin_edges() {
        let mut s = SojournStats::default();
        assert_eq!(s.mean(), None);
        for ms in 1..=100 {
            s.record(Dur::from_millis(ms));
        }
        assert_eq!(s.mean(), Some(Dur::from_micros(50_500)));
        // the 95th of 1..100 ms is 95 ms, which lies in the bin [95.0, 95.1) ms
        assert_eq!(s.quantile(0.95), Some(Dur::from_micros(95_100)));
        assert_eq!(s.quantile(1.0), Some(Dur::from_micros(100_100)));
    }

    #[test]
    fn every_listed_discipline_has_defaults_and_its_own_name() {
        for (name, _) in AQMS {
            let spec = AqmSpec::default_for(name).unwrap();
            assert_eq!(spec.name(), *name);
        }
        assert!(AqmSpec::default_for("sfq").is_none());
    }
}
