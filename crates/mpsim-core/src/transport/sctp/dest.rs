//! Per-destination state of an association: the path to it, its window and controller, its
//! RTO (RFC 4960 §6.3.1) and T3-rtx timer, its error counter (§8.2) and reachability, and the
//! CMT bookkeeping (pseudo-cumack, fast recovery exit point).

use super::cc::{DestWindow, SctpCc};
use super::config::SctpConfig;
use crate::time::{Dur, SimTime};

/// The RTO of one destination (RFC 4960 §6.3.1: RFC 6298 arithmetic, α = 1/8, β = 1/4,
/// bounded by RTO.Min and RTO.Max; doubled on every T3-rtx expiry).
#[derive(Clone, Debug)]
pub struct SctpRto {
    srtt: Option<Dur>,
    rttvar: Dur,
    rto: Dur,
    min: Dur,
    max: Dur,
    pub min_rtt: Option<Dur>,
    pub samples: u64,
    sum_ns: u128,
}

impl SctpRto {
    pub fn new(c: &SctpConfig) -> SctpRto {
        SctpRto { srtt: None, rttvar: Dur::ZERO, rto: c.rto_initial, min: c.rto_min, max: c.rto_max, min_rtt: None, samples: 0, sum_ns: 0 }
    }

    pub fn on_sample(&mut self, r: Dur) {
        match self.srtt {
            None => {
                // C1
                self.srtt = Some(r);
                self.rttvar = Dur(r.0 / 2);
            }
            Some(s) => {
                // C2: RTTVAR first, with the old SRTT
                self.rttvar = Dur((3 * self.rttvar.0 + s.0.abs_diff(r.0)) / 4);
                self.srtt = Some(Dur((7 * s.0 + r.0) / 8));
            }
        }
        let s = self.srtt.expect("set");
        self.rto = Dur(s.0 + 4 * self.rttvar.0).max(self.min).min(self.max);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.samples += 1;
        self.sum_ns += r.0 as u128;
    }

    /// E2 of §6.3.3: RTO = min(2·RTO, RTO.Max).
    pub fn back_off(&mut self) {
        self.rto = Dur(self.rto.0.saturating_mul(2)).min(self.max);
    }

    pub fn rto(&self) -> Dur {
        self.rto
    }
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    pub fn mean(&self) -> Option<Dur> {
        (self.samples > 0).then(|| Dur((self.sum_ns / self.samples as u128) as u64))
    }
}

/// Reachability of a destination (RFC 4960 §8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestState {
    Active,
    /// CMT-PF: a T3-rtx timer expired; no data goes there until a heartbeat is answered.
    PotentiallyFailed,
    /// More than Path.Max.Retrans consecutive errors: no data goes there until a heartbeat
    /// is answered or data sent there is acknowledged.
    Inactive,
}

impl DestState {
    pub fn name(self) -> &'static str {
        match self {
            DestState::Active => "active",
            DestState::PotentiallyFailed => "potentially_failed",
            DestState::Inactive => "inactive",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DestStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    /// Packets of retransmitted chunks (a packet bundles several when bundling is on).
    pub retransmits: u64,
    pub fast_retransmits: u64,
    /// Fast recoveries entered (window reductions on a fast retransmit).
    pub fast_recoveries: u64,
    pub timeouts: u64,
    /// Losses the controller did (or did not) treat as congestion.
    pub congestion_losses: u64,
    pub other_losses: u64,
    pub heartbeats: u64,
    /// Send/receive time pairs handed to the controller (with `sctp.timestamps`).
    pub timestamp_samples: u64,
    /// Bytes of chunks received on this destination for the first time.
    pub bytes_received: u64,
    /// Window reductions for ECN echoes (ECNE chunks).
    pub ecn_reductions: u64,
}

pub struct Destination {
    pub path_name: String,
    pub fwd: u32,
    pub rev: u32,
    pub w: DestWindow,
    pub cc: SctpCc,
    pub rto: SctpRto,
    pub state: DestState,
    pub errors: u32,
    /// User-data bytes of chunks outstanding on this destination (sent, not acked, not
    /// marked for retransmission).
    pub flight: u64,
    pub outstanding: u32,
    /// T3-rtx: when it expires, and the earliest timer event pending for it.
    pub t3: Option<SimTime>,
    pub t3_event: Option<SimTime>,
    /// Fast recovery on this destination until the cumulative ack reaches this TSN.
    pub fast_recovery: Option<u64>,
    /// When the next HEARTBEAT is due (inactive or potentially-failed destinations), and the
    /// send time of the one awaiting its ACK.
    pub hb_due: Option<SimTime>,
    pub hb_outstanding: Option<SimTime>,
    /// CMT CUC: the earliest TSN outstanding on this destination when the last SACK was
    /// processed (its pseudo-cumack).
    pub pseudo_cumack: Option<u64>,
    /// When the window was last reduced for an ECNE (once per round trip at most).
    pub ecne_reduced_at: Option<SimTime>,
    pub stats: DestStats,
}

impl Destination {
    pub fn new(path_name: String, fwd: u32, rev: u32, c: &SctpConfig, initial_rwnd: u64) -> Destination {
        Destination {
            path_name,
            fwd,
            rev,
            // RFC 4960 §7.2.1: the initial ssthresh may be arbitrarily high, e.g. the peer's
            // advertised window
            w: DestWindow { cwnd: c.initial_cwnd(), ssthresh: initial_rwnd, partial_bytes_acked: 0, mtu: c.mtu as u64 },
            cc: SctpCc::by_name(c.cc, c).expect("the reader checks the controller's name"),
            rto: SctpRto::new(c),
            state: DestState::Active,
            errors: 0,
            flight: 0,
            outstanding: 0,
            t3: None,
            t3_event: None,
            fast_recovery: None,
            hb_due: None,
            hb_outstanding: None,
            pseudo_cumack: None,
            ecne_reduced_at: None,
            stats: DestStats::default(),
        }
    }

    pub fn active(&self) -> bool {
        self.state == DestState::Active
    }

    /// The next timer event this destination needs: its T3-rtx or its next heartbeat.
    pub fn next_deadline(&self) -> Option<SimTime> {
        match (self.t3, self.hb_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// RFC 4960 §6.1 B: new data may go out while fewer than cwnd bytes are outstanding.
    pub fn has_room(&self) -> bool {
        self.flight < self.w.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rto_follows_rfc4960_and_its_bounds() {
        let c = SctpConfig::default();
        let mut r = SctpRto::new(&c);
        assert_eq!(r.rto(), Dur::from_secs(3));
        r.on_sample(Dur::from_millis(100));
        // 100 + 4·50 = 300 ms, raised to RTO.Min
        assert_eq!(r.rto(), Dur::from_secs(1));
        for _ in 0..10 {
            r.back_off();
        }
        assert_eq!(r.rto(), Dur::from_secs(60));
        let mut small = SctpRto::new(&SctpConfig { rto_min: Dur::from_millis(10), ..c });
        small.on_sample(Dur::from_millis(100));
        assert_eq!(small.rto(), Dur::from_millis(300));
        small.on_sample(Dur::from_millis(200));
        // rttvar = (3·50 + 100)/4 = 62.5, srtt = 112.5: 362.5 ms
        assert_eq!(small.rto(), Dur::from_micros(362_500));
    }
}
