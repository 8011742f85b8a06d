//! RTT estimation per RFC 9002 §5: min_rtt, smoothed_rtt, rttvar, the peer's ack delay
//! taken off a sample unless that would bring it below min_rtt.

use super::wire::GRANULARITY_NS;
use crate::time::Dur;

#[derive(Clone, Debug, PartialEq)]
pub struct RttEstimator {
    pub latest: Dur,
    pub smoothed: Dur,
    pub rttvar: Dur,
    pub min: Dur,
    /// Samples taken (the handshake's included).
    pub samples: u64,
    /// Sum of the samples, for their mean.
    sum_ns: u128,
}

impl RttEstimator {
    /// Starts from the handshake's round trip as the first sample (RFC 9002 §5.3).
    pub fn new(first: Dur) -> RttEstimator {
        RttEstimator { latest: first, smoothed: first, rttvar: Dur(first.0 / 2), min: first, samples: 1, sum_ns: first.0 as u128 }
    }

    /// A sample `latest` from an ACK reporting `ack_delay` (already capped at max_ack_delay).
    pub fn update(&mut self, latest: Dur, ack_delay: Dur) {
        self.latest = latest;
        self.samples += 1;
        self.sum_ns += latest.0 as u128;
        self.min = self.min.min(latest);
        let adjusted = if latest >= self.min + ack_delay { latest - ack_delay } else { latest };
        let dev = self.smoothed.0.abs_diff(adjusted.0);
        self.rttvar = Dur((3 * self.rttvar.0 + dev) / 4);
        self.smoothed = Dur((7 * self.smoothed.0 + adjusted.0) / 8);
    }

    /// RFC 9002 §6.2.1: smoothed_rtt + max(4 rttvar, kGranularity) + max_ack_delay, before
    /// backoff.
    pub fn pto_base(&self, max_ack_delay: Dur) -> Dur {
        self.smoothed + Dur((4 * self.rttvar.0).max(GRANULARITY_NS)) + max_ack_delay
    }

    /// RFC 9002 §6.1.2: 9/8 x max(smoothed_rtt, latest_rtt), at least kGranularity.
    pub fn loss_delay(&self) -> Dur {
        Dur((self.smoothed.max(self.latest).0 * 9 / 8).max(GRANULARITY_NS))
    }

    pub fn mean(&self) -> Dur {
        Dur((self.sum_ns / self.samples as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    #[test]
    fn first_sample_seeds_and_later_ones_smooth() {
        let mut r = RttEstimator::new(ms(100));
        assert_eq!((r.smoothed, r.rttvar, r.min), (ms(100), ms(50), ms(100)));
        r.update(ms(180), Dur::ZERO);
        // rttvar = 3/4 * 50 + 1/4 * 80; smoothed = 7/8 * 100 + 1/8 * 180
        assert_eq!((r.rttvar, r.smoothed), (ms(57) + Dur::from_micros(500), ms(110)));
        assert_eq!(r.mean(), ms(140));
    }

    #[test]
    fn ack_delay_is_taken_off_unless_below_min_rtt() {
        let mut a = RttEstimator::new(ms(100));
        a.update(ms(120), ms(20));
        assert_eq!(a.smoothed, ms(100));
        let mut b = RttEstimator::new(ms(100));
        // 110 - 20 would fall below min_rtt 100: the delay is not taken off
        b.update(ms(110), ms(20));
        assert_eq!(b.smoothed, Dur(100_000_000 + 10_000_000 / 8));
        assert_eq!(b.min, ms(100));
    }

    #[test]
    fn pto_and_loss_delay() {
        let r = RttEstimator::new(ms(40));
        assert_eq!(r.pto_base(ms(25)), ms(40 + 80 + 25));
        assert_eq!(r.loss_delay(), ms(45));
    }
}
