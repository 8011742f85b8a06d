//! RTT estimation and the retransmission timeout (RFC 6298).

use crate::time::Dur;

/// Clock granularity G of RFC 6298 §2.
pub const CLOCK_GRANULARITY: Dur = Dur::from_millis(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rtt: Option<Dur>,
    latest: Option<Dur>,
    min_rto: Dur,
    max_rto: Dur,
    initial_rto: Dur,
    /// Exponential backoff exponent (number of consecutive timeouts).
    backoff: u32,
    samples: u64,
    sum_samples_ns: u128,
}

impl RttEstimator {
    pub fn new(min_rto: Dur, max_rto: Dur, initial_rto: Dur) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rtt: None,
            latest: None,
            min_rto,
            max_rto,
            initial_rto,
            backoff: 0,
            samples: 0,
            sum_samples_ns: 0,
        }
    }

    /// Feeds a sample R (§2.2, §2.3). RTTVAR is updated before SRTT, with the old SRTT.
    pub fn on_sample(&mut self, r: Dur) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Dur(r.0 / 2);
            }
            Some(srtt) => {
                let err = srtt.0.abs_diff(r.0);
                // RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|; SRTT = 7/8 SRTT + 1/8 R
                self.rttvar = Dur((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(Dur((7 * srtt.0 + r.0) / 8));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.latest = Some(r);
        self.samples += 1;
        self.sum_samples_ns += r.0 as u128;
    }

    /// Base RTO without backoff: SRTT + max(G, 4·RTTVAR), floored at min RTO, capped at max.
    pub fn base_rto(&self) -> Dur {
        match self.srtt {
            None => self.initial_rto,
            Some(srtt) => {
                let rto = srtt + Dur(CLOCK_GRANULARITY.0.max(4 * self.rttvar.0));
                Dur(rto.0.clamp(self.min_rto.0, self.max_rto.0))
            }
        }
    }

    /// Current RTO including exponential backoff (§5.5), capped at max RTO.
    pub fn rto(&self) -> Dur {
        let base = self.base_rto().0;
        let shifted = base.checked_shl(self.backoff.min(32)).unwrap_or(u64::MAX);
        Dur(shifted.min(self.max_rto.0.max(base)))
    }

    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
    }

    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    pub fn rttvar(&self) -> Dur {
        self.rttvar
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

    fn est() -> RttEstimator {
        RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60), Dur::from_secs(1))
    }

    #[test]
    fn initial_rto_is_one_second() {
        assert_eq!(est().rto(), Dur::from_secs(1));
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = est();
        e.on_sample(Dur::from_millis(100));
        assert_eq!(e.srtt(), Some(Dur::from_millis(100)));
        assert_eq!(e.rttvar(), Dur::from_millis(50));
        // 100 + 4*50 = 300 ms
        assert_eq!(e.rto(), Dur::from_millis(300));
    }

    #[test]
    fn later_samples_use_rfc_gains() {
        let mut e = est();
        e.on_sample(Dur::from_millis(100));
        e.on_sample(Dur::from_millis(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), Dur(62_500_000));
        assert_eq!(e.srtt(), Some(Dur(112_500_000)));
    }

    #[test]
    fn min_rto_floors_and_backoff_doubles_up_to_the_cap() {
        let mut e = est();
        for _ in 0..20 {
            e.on_sample(Dur::from_millis(10));
        }
        assert_eq!(e.rto(), Dur::from_millis(200));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_millis(400));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_secs(60));
        e.reset_backoff();
        assert_eq!(e.rto(), Dur::from_millis(200));
    }
}
