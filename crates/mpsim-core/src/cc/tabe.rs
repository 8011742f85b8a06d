//! TABE: the timestamp-based available-bandwidth estimator of TCP New Jersey (Xu, Tian,
//! Ansari, Computer Networks 47(2) 2005), also used by JSCTP-ABE (seed 003, eq. 9-10).
//!
//! At the n-th acknowledgement, with `L_n` the bytes it newly acknowledges, `t_n` the time
//! the receiver got the data it answers (carried back in the acknowledgement) and `RTT` the
//! current round-trip estimate:
//!
//! ```text
//! R_n = (RTT · R_{n-1} + L_n) / ((t_n − t_{n-1}) + RTT)
//! ownd = RTT · R_n            (bytes; the papers divide by the segment size to count packets)
//! ```
//!
//! TCP-Jersey's ABE is the same filter with `t_n` the arrival time of the acknowledgement at
//! the sender; taking the receiver's clock instead removes the noise of the reverse path (ACK
//! compression, a congested or asymmetric return link). The estimator is independent of any
//! transport: TCP New Jersey feeds it from TCP ACKs, an SCTP controller from SACKs.
//!
//! Choices the papers leave open, made here:
//! * [RECONSTRUCTED] The estimate starts at `R_0 = 0` and the first acknowledgement is taken
//!   with `t_1 − t_0 = 0`, so `R_1 = L_1 / RTT`: one window's worth per round trip.
//! * [RECONSTRUCTED] An acknowledgement that acknowledges nothing new (a pure duplicate) is
//!   still a sample, with `L_n = 0`: time passed at the receiver without delivery, and the
//!   estimate decays. A timestamp older than the previous one (it cannot happen on one FIFO
//!   path, but a reordered acknowledgement could carry one) counts as no time elapsed.
//! * [RECONSTRUCTED] `RTT` is the smoothed RTT at the time of the sample (the papers say
//!   "the round-trip time"); without an RTT sample nothing is updated.

use crate::time::{Dur, SimTime};

/// The TABE filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tabe {
    /// Current estimate `R_n`, bytes per second.
    rate: f64,
    /// Receiver timestamp of the previous sample, `t_{n-1}`.
    last: Option<SimTime>,
    /// Samples taken.
    samples: u64,
}

impl Tabe {
    pub fn new() -> Tabe {
        Tabe::default()
    }

    /// One acknowledgement: `acked` bytes newly acknowledged, `received_at` the receiver's
    /// timestamp of the data it answers, `rtt` the current round-trip estimate.
    pub fn on_ack(&mut self, received_at: SimTime, acked: u64, rtt: Dur) {
        if rtt == Dur::ZERO {
            return;
        }
        let gap = match self.last {
            Some(prev) if received_at > prev => received_at.since(prev),
            _ => Dur::ZERO,
        };
        if self.last.is_none_or(|p| received_at > p) {
            self.last = Some(received_at);
        }
        let rtt_s = rtt.as_secs_f64();
        self.rate = (rtt_s * self.rate + acked as f64) / (gap.as_secs_f64() + rtt_s);
        self.samples += 1;
    }

    /// The estimate `R_n` in bytes per second (0 before the first sample).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The optimal window `ownd = RTT · R_n`, in bytes (rounded down).
    pub fn ownd(&self, rtt: Dur) -> u64 {
        (self.rate * rtt.as_secs_f64()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Dur = Dur::from_millis;

    #[test]
    fn first_sample_is_one_window_per_rtt() {
        let mut t = Tabe::new();
        t.on_ack(SimTime(5_000_000), 1000, MS(100));
        assert!((t.rate() - 10_000.0).abs() < 1e-9, "{}", t.rate());
        assert_eq!(t.samples(), 1);
    }

    #[test]
    fn matches_the_formula_by_hand() {
        let mut t = Tabe::new();
        let rtt = MS(50);
        t.on_ack(SimTime::ZERO, 1500, rtt); // R1 = 1500 / 0.05 = 30000
        t.on_ack(SimTime(10_000_000), 1500, rtt); // R2 = (0.05·30000 + 1500) / (0.01 + 0.05) = 50000
        assert!((t.rate() - 50_000.0).abs() < 1e-6, "{}", t.rate());
        assert_eq!(t.ownd(rtt), 2500);
    }

    #[test]
    fn converges_to_the_arrival_rate_at_the_receiver() {
        // 1000-byte packets arriving every 1 ms at the receiver: 1 MB/s, whatever the RTT
        for rtt_ms in [10, 100, 400] {
            let mut t = Tabe::new();
            for i in 0..20_000u64 {
                t.on_ack(SimTime(i * 1_000_000), 1000, MS(rtt_ms));
            }
            assert!((t.rate() / 1e6 - 1.0).abs() < 0.01, "rtt {rtt_ms} ms: {}", t.rate());
            // ownd is the bandwidth-delay product
            let bdp = rtt_ms * 1000;
            assert!(t.ownd(MS(rtt_ms)).abs_diff(bdp) <= bdp / 100, "{}", t.ownd(MS(rtt_ms)));
        }
    }

    #[test]
    fn receiver_timestamps_ignore_ack_compression() {
        // the same deliveries, the ACKs bunched on the way back: TABE sees only the receiver's
        // clock, so the estimate is the same as with evenly spaced ACKs
        let mut even = Tabe::new();
        let mut bunched = Tabe::new();
        for i in 0..5_000u64 {
            even.on_ack(SimTime(i * 2_000_000), 1460, MS(60));
            bunched.on_ack(SimTime(i * 2_000_000), 1460, MS(60));
        }
        assert_eq!(even, bunched);
        assert!((even.rate() - 730_000.0).abs() / 730_000.0 < 0.01, "{}", even.rate());
    }

    #[test]
    fn duplicates_decay_the_estimate_and_old_timestamps_count_as_no_time() {
        let mut t = Tabe::new();
        for i in 0..1000u64 {
            t.on_ack(SimTime(i * 1_000_000), 1000, MS(20));
        }
        let r = t.rate();
        t.on_ack(SimTime(1_020_000_000), 0, MS(20));
        assert!(t.rate() < r / 1.5, "{} vs {r}", t.rate());
        let r = t.rate();
        t.on_ack(SimTime(5_000_000), 1000, MS(20)); // older than the last: no time elapsed
        assert!((t.rate() - (r + 1000.0 / 0.02)).abs() < 1e-6);
    }

    #[test]
    fn no_rtt_no_update() {
        let mut t = Tabe::new();
        t.on_ack(SimTime(1), 1000, Dur::ZERO);
        assert_eq!((t.rate(), t.samples()), (0.0, 0));
    }
}
