//! Measurements: delay and jitter statistics, fairness, time series, packet traces and the
//! run summary.

pub mod pcap;
pub mod series;
pub mod stream;
pub mod summary;
pub mod table;
pub mod trace;

pub use series::{FlowColumns, FlowRow, LinkColumns, LinkRow, SubflowColumns, SubflowRow};
pub use stream::{StreamedTable, TableSink, CHUNK_ROWS};
pub use summary::{
    AqmSummary, ClassSummary, FlowSummary, LinkSummary, PathStatusApplied, QuicSummary, SctpSummary, SubflowSummary, Summary,
};
pub use table::{Column, Table};
pub use trace::{trace_table, TraceKind, TraceRow};

use crate::time::{Dur, SimTime};

/// Streaming statistics of a delay: mean, maximum and percentiles from a log-linear histogram
/// over nanoseconds (each power of two split into 32 buckets: at most 3.1% wide).
///
/// Only the buckets from the lowest to the highest one used are kept (`buckets[0]` is bucket
/// `first`): the delays of one flow span a few powers of two, so a flow's histogram takes a
/// few hundred bytes instead of the 16 KB of all 2,048 buckets.
#[derive(Clone, Debug, Default)]
pub struct DelayStats {
    count: u64,
    sum_ns: u128,
    max: Dur,
    first: u16,
    buckets: Vec<u64>,
}

const SUB_BITS: u32 = 5;
const N_BUCKETS: usize = (64 << SUB_BITS) as usize;

impl DelayStats {
    /// Bucket of a value: its power of two and the next SUB_BITS bits below the top bit.
    #[inline]
    fn bucket(d: Dur) -> usize {
        let v = d.0;
        if v < (1 << SUB_BITS) {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros();
        let sub = (v >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        (((exp - SUB_BITS + 1) << SUB_BITS) as u64 + sub) as usize
    }

    /// Largest value that falls in bucket `b`.
    fn bucket_upper(b: usize) -> u64 {
        let b = b as u64;
        if b < (1 << SUB_BITS) {
            return b;
        }
        let exp = (b >> SUB_BITS) + SUB_BITS as u64 - 1;
        let sub = b & ((1 << SUB_BITS) - 1);
        let low = (1u64 << exp) | (sub << (exp - SUB_BITS as u64));
        low + (1u64 << (exp - SUB_BITS as u64)) - 1
    }

    #[inline]
    pub fn record(&mut self, d: Dur) {
        self.count += 1;
        self.sum_ns += d.0 as u128;
        self.max = self.max.max(d);
        let b = Self::bucket(d);
        debug_assert!(b < N_BUCKETS);
        // a delay within the buckets kept (nearly every one): counted in place
        match self.buckets.get_mut(b.wrapping_sub(self.first as usize)) {
            Some(c) => *c += 1,
            None => self.grow_to(b),
        }
    }

    /// Counts a delay in bucket `b`, outside the buckets kept so far: extends them to it.
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, b: usize) {
        let first = self.first as usize;
        if self.buckets.is_empty() {
            self.first = b as u16;
            self.buckets.push(1);
        } else if b < first {
            // grow downwards: the buckets from b to first are new
            self.buckets.splice(0..0, std::iter::repeat_n(0, first - b));
            self.first = b as u16;
            self.buckets[0] = 1;
        } else {
            self.buckets.resize(b - first + 1, 0);
            self.buckets[b - first] = 1;
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of the delays recorded (ns) and their count.
    pub fn sum_and_count(&self) -> (u128, u64) {
        (self.sum_ns, self.count)
    }

    pub fn mean(&self) -> Option<Dur> {
        (self.count > 0).then(|| Dur((self.sum_ns / self.count as u128) as u64))
    }

    pub fn max(&self) -> Option<Dur> {
        (self.count > 0).then_some(self.max)
    }

    /// The q-quantile (0..=1), to within the bucket width (3.1%).
    pub fn quantile(&self, q: f64) -> Option<Dur> {
        if self.count == 0 {
            return None;
        }
        let target = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            let i = i + self.first as usize;
            seen += c;
            if seen >= target {
                // upper edge of the bucket, never above the true maximum
                return Some(Dur(Self::bucket_upper(i).min(self.max.0)));
            }
        }
        Some(self.max)
    }
}

/// RFC 3550 §6.4.1 inter-arrival jitter: J += (|D(i-1,i)| − J)/16, in seconds.
#[derive(Clone, Debug, Default)]
pub struct Jitter {
    /// The previous unit's times sent and received, in nanoseconds.
    last: Option<(u64, u64)>,
    jitter_s: f64,
    samples: u64,
}

/// Times below this many nanoseconds (104 days) are exact as `f64`, and so are their
/// differences.
const EXACT_NS: u64 = 1 << 53;

impl Jitter {
    /// A unit sent at `sent` and received at `received`.
    #[inline]
    pub fn record(&mut self, sent: SimTime, received: SimTime) {
        let (s, r) = (sent.0, received.0);
        if let Some((s0, r0)) = self.last {
            // D = (r - r0) - (s - s0), as the definition has it in floating point. Below
            // EXACT_NS every term and partial result is a whole number that f64 holds
            // exactly, so the integer difference converted once (one signed conversion
            // instead of four unsigned ones and three subtractions per unit) is the same
            // value, bit for bit.
            let d = if (s | r | s0 | r0) < EXACT_NS {
                ((r as i64 - r0 as i64) - (s as i64 - s0 as i64)) as f64
            } else {
                (r as f64 - r0 as f64) - (s as f64 - s0 as f64)
            };
            self.jitter_s += (d.abs() * 1e-9 - self.jitter_s) / 16.0;
            self.samples += 1;
        }
        self.last = Some((s, r));
    }

    pub fn value(&self) -> Option<Dur> {
        (self.samples > 0).then(|| Dur((self.jitter_s * 1e9).round() as u64))
    }
}

/// The throughput-based PSNR of ALGORITHMS.md §9 for one interval: 20·log10(R / |R − G|)
/// with R the stream's expected rate and G the measured goodput, clamped to [0, 50] dB (it is
/// infinite when G = R).
pub fn throughput_psnr(expected_bps: f64, measured_bps: f64) -> f64 {
    const MAX_DB: f64 = 50.0;
    let err = (expected_bps - measured_bps).abs();
    if err <= expected_bps * 10f64.powf(-MAX_DB / 20.0) {
        return MAX_DB;
    }
    (20.0 * (expected_bps / err).log10()).clamp(0.0, MAX_DB)
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
    fn psnr_from_throughput() {
        assert_eq!(throughput_psnr(1e6, 1e6), 50.0);
        assert!((throughput_psnr(1e6, 0.9e6) - 20.0).abs() < 1e-9); // |R-G| = R/10
        assert!((throughput_psnr(1e6, 0.5e6) - 20.0 * 2f64.log10()).abs() < 1e-9);
        assert_eq!(throughput_psnr(1e6, 0.0), 0.0);
        assert_eq!(throughput_psnr(1e6, 3e6), 0.0);
    }

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

    /// The jitter as RFC 3550 defines it, every time converted to floating point first.
    fn jitter_in_floating_point(times: &[(u64, u64)]) -> (u64, u64) {
        let (mut j, mut n, mut last) = (0.0f64, 0u64, None::<(f64, f64)>);
        for &(s, r) in times {
            let (s, r) = (s as f64, r as f64);
            if let Some((s0, r0)) = last {
                let d = (r - r0) - (s - s0);
                j += (d.abs() * 1e-9 - j) / 16.0;
                n += 1;
            }
            last = Some((s, r));
        }
        (j.to_bits(), n)
    }

    #[test]
    fn the_jitter_in_whole_nanoseconds_has_the_bits_of_the_floating_point_definition() {
        let mut rng = crate::rng::Rng::substream(5, "jitter");
        for round in 0..2000 {
            // times sent and received in order, with delays from nothing to seconds; some runs
            // start near or past 2^53 ns, where the integer difference is not used
            let mut t = match round % 10 {
                0 => EXACT_NS - rng.below(1 << 40),
                1 => u64::MAX / 2 + rng.below(1 << 40),
                _ => rng.below(1 << 45),
            };
            let mut times = Vec::new();
            for _ in 0..1 + rng.below(60) {
                t += rng.below(20_000_000);
                let delay = rng.next_u64() >> (20 + rng.below(44) as u32);
                times.push((t, t + delay));
            }
            let mut j = Jitter::default();
            for &(s, r) in &times {
                j.record(SimTime(s), SimTime(r));
            }
            assert_eq!((j.jitter_s.to_bits(), j.samples), jitter_in_floating_point(&times), "round {round}");
        }
    }

    #[test]
    fn buckets_are_monotone_and_contain_their_values() {
        let mut prev = 0;
        for v in [0u64, 1, 31, 32, 33, 63, 64, 100, 1_000, 123_456, 1 << 40, u64::MAX / 2] {
            let b = DelayStats::bucket(Dur(v));
            assert!(b >= prev);
            assert!(DelayStats::bucket_upper(b) >= v, "{v}");
            assert!(b < N_BUCKETS);
            prev = b;
        }
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

    #[test]
    fn the_kept_buckets_give_the_quantiles_of_the_whole_histogram() {
        let mut rng = crate::rng::Rng::substream(3, "delay-stats");
        for round in 0..50 {
            let mut d = DelayStats::default();
            let mut full = vec![0u64; N_BUCKETS];
            for _ in 0..1 + rng.below(300) {
                // delays over many powers of two, arriving in any order
                let v = rng.next_u64() >> (2 + rng.below(62) as u32);
                d.record(Dur(v));
                full[DelayStats::bucket(Dur(v))] += 1;
            }
            assert!(d.buckets.len() <= N_BUCKETS);
            for q in [0.0, 0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0] {
                let target = ((q * d.count as f64).ceil() as u64).max(1);
                let (mut seen, mut want) = (0, None);
                for (i, &c) in full.iter().enumerate() {
                    seen += c;
                    if seen >= target {
                        want = Some(Dur(DelayStats::bucket_upper(i).min(d.max.0)));
                        break;
                    }
                }
                assert_eq!(d.quantile(q), want, "round {round}, q {q}");
            }
        }
    }
}
