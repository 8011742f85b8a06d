//! RTT samples: the statistics a run reports (minimum, latest, mean) and the retransmission
//! timeout computed from them (`rto.rs`).

use super::rto::{RtoEstimator, RtoMode};
use crate::time::Dur;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    rto: RtoEstimator,
    min_rtt: Option<Dur>,
    latest: Option<Dur>,
    samples: u64,
    sum_samples_ns: u128,
}

impl RttEstimator {
    pub fn new(mode: RtoMode, min_rto: Dur, max_rto: Dur, initial_rto: Dur) -> RttEstimator {
        RttEstimator {
            rto: RtoEstimator::new(mode, min_rto, max_rto, initial_rto),
            min_rtt: None,
            latest: None,
            samples: 0,
            sum_samples_ns: 0,
        }
    }

    /// Feeds a sample R taken on an ACK after which the sender's snd_una and snd_nxt are
    /// as given (Linux's estimator works in rounds of one window).
    pub fn on_sample(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        self.rto.on_sample(r, snd_una, snd_nxt);
        self.count(r);
    }

    /// [`on_sample`](Self::on_sample) for a sample from an ACK of new data, which also ends
    /// any backoff of the RTO (as `reset_backoff` after it would).
    pub fn on_ack_sample(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        self.rto.on_ack_sample(r, snd_una, snd_nxt);
        self.count(r);
    }

    #[inline]
    fn count(&mut self, r: Dur) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.latest = Some(r);
        self.samples += 1;
        self.sum_samples_ns += r.0 as u128;
    }

    pub fn base_rto(&self) -> Dur {
        self.rto.base_rto()
    }
    /// Current RTO including exponential backoff, capped at max RTO.
    pub fn rto(&self) -> Dur {
        self.rto.rto()
    }
    pub fn back_off(&mut self) {
        self.rto.back_off()
    }
    pub fn reset_backoff(&mut self) {
        self.rto.reset_backoff()
    }
    pub fn backoff(&self) -> u32 {
        self.rto.backoff()
    }
    pub fn mode(&self) -> RtoMode {
        self.rto.mode()
    }
    pub fn srtt(&self) -> Option<Dur> {
        self.rto.srtt()
    }
    pub fn rttvar(&self) -> Dur {
        self.rto.rttvar()
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Dur> {
        self.latest
    }
    pub fn samples(&self) -> u64 {
        self.samples
    }
    /// Mean of all samples taken.
    pub fn mean_sample(&self) -> Option<Dur> {
        (self.samples > 0).then(|| Dur((self.sum_samples_ns / self.samples as u128) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_follow_the_samples() {
        let mut e = RttEstimator::new(RtoMode::Linux, Dur::from_millis(200), Dur::from_secs(120), Dur::from_secs(1));
        assert_eq!(e.rto(), Dur::from_secs(1));
        assert_eq!(e.mean_sample(), None);
        e.on_sample(Dur::from_millis(100), 0, 1);
        e.on_sample(Dur::from_millis(50), 1, 2);
        e.on_sample(Dur::from_millis(150), 2, 3);
        assert_eq!(e.min_rtt(), Some(Dur::from_millis(50)));
        assert_eq!(e.latest(), Some(Dur::from_millis(150)));
        assert_eq!(e.samples(), 3);
        assert_eq!(e.mean_sample(), Some(Dur::from_millis(100)));
    }
}
