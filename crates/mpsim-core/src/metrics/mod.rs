//! Measurements: delay and jitter statistics, fairness, time series, packet traces and the
//! run summary.

pub mod summary;
pub mod table;

pub use summary::{FlowSummary, LinkSummary, Summary};
pub use table::{Column, Table};

use crate::time::{Dur, SimTime};

/// Streaming statistics of a delay: mean, maximum and percentiles from a log histogram
/// (buckets 2% wide, from 1 µs to about 1000 s).
#[derive(Clone, Debug)]
pub struct DelayStats {
    count: u64,
    sum_ns: u128,
    max: Dur,
    buckets: Vec<u64>,
}

const BUCKET_GROWTH: f64 = 1.02;
const N_BUCKETS: usize = 1100;

impl Default for DelayStats {
    fn default() -> Self {
        DelayStats { count: 0, sum_ns: 0, max: Dur::ZERO, buckets: vec![0; N_BUCKETS] }
    }
}

impl DelayStats {
    fn bucket(d: Dur) -> usize {
        let us = d.0 as f64 / 1e3;
        if us <= 1.0 {
            return 0;
        }
        ((us.ln() / BUCKET_GROWTH.ln()) as usize + 1).min(N_BUCKETS - 1)
    }

    pub fn record(&mut self, d: Dur) {
        self.count += 1;
        self.sum_ns += d.0 as u128;
        self.max = self.max.max(d);
        self.buckets[Self::bucket(d)] += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> Option<Dur> {
        (self.count > 0).then(|| Dur((self.sum_ns / self.count as u128) as u64))
    }

    pub fn max(&self) -> Option<Dur> {
        (self.count > 0).then_some(self.max)
    }

    /// The q-quantile (0..=1), to within the bucket width (2%).
    pub fn quantile(&self, q: f64) -> Option<Dur> {
        if self.count == 0 {
            return None;
        }
        let target = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= target {
                // upper edge of the bucket, never above the true maximum
                let us = if i == 0 { 1.0 } else { BUCKET_GROWTH.powi(i as i32) };
                return Some(Dur(((us * 1e3) as u64).min(self.max.0)));
            }
        }
        Some(self.max)
    }
}

/// RFC 3550 §6.4.1 inter-arrival jitter: J += (|D(i-1,i)| − J)/16, in seconds.
#[derive(Clone, Debug, Default)]
pub struct Jitter {
    last: Option<(SimTime, SimTime)>,
    jitter_s: f64,
    samples: u64,
}

impl Jitter {
    /// A unit sent at `sent` and received at `received`.
    pub fn record(&mut self, sent: SimTime, received: SimTime) {
        if let Some((s0, r0)) = self.last {
            let d = (received.0 as f64 - r0.0 as f64) - (sent.0 as f64 - s0.0 as f64);
            self.jitter_s += (d.abs() * 1e-9 - self.jitter_s) / 16.0;
            self.samples += 1;
        }
        self.last = Some((sent, received));
    }

    pub fn value(&self) -> Option<Dur> {
        (self.samples > 0).then(|| Dur((self.jitter_s * 1e9).round() as u64))
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²); 1 when all equal, 1/n when one takes all.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        return Some(1.0);
    }
    Some(sum * sum / (xs.len() as f64 * sq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0]), Some(1.0));
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(jain_index(&[]), None);
    }

    #[test]
    fn jitter_of_constant_delay_is_zero_and_grows_with_variation() {
        let mut j = Jitter::default();
        for i in 0..100u64 {
            j.record(SimTime(i * 1_000_000), SimTime(i * 1_000_000 + 5_000_000));
        }
        assert_eq!(j.value(), Some(Dur::ZERO));
        let mut j = Jitter::default();
        for i in 0..2000u64 {
            let extra = if i % 2 == 0 { 0 } else { 2_000_000 };
            j.record(SimTime(i * 10_000_000), SimTime(i * 10_000_000 + 5_000_000 + extra));
        }
        // |D| is always 2 ms, so J converges to 2 ms
        let v = j.value().unwrap().as_millis_f64();
        assert!((v - 2.0).abs() < 0.01, "{v}");
    }

    #[test]
    fn delay_quantiles_within_bucket_width() {
        let mut d = DelayStats::default();
        for ms in 1..=100u64 {
            d.record(Dur::from_millis(ms));
        }
        assert_eq!(d.mean(), Some(Dur(50_500_000)));
        assert_eq!(d.max(), Some(Dur::from_millis(100)));
        let p50 = d.quantile(0.5).unwrap().as_millis_f64();
        assert!((p50 - 50.0).abs() / 50.0 < 0.03, "{p50}");
        let p99 = d.quantile(0.99).unwrap().as_millis_f64();
        assert!((p99 - 99.0).abs() / 99.0 < 0.03, "{p99}");
    }
}
