//! Simulated time: integer nanoseconds, never floats.
//!
//! `SimTime` is an instant since the start of the run, `Dur` a span. Both are plain `u64`
//! nanoseconds so arithmetic is exact and runs are bit-identical on every machine.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant, in nanoseconds since the start of the simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);

    pub const fn from_nanos(n: u64) -> Dur {
        Dur(n)
    }
    pub const fn from_micros(us: u64) -> Dur {
        Dur(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * 1_000_000_000)
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time to serialise `bytes` at `rate_bps`, rounded up to the next nanosecond.
    pub fn tx_time(bytes: u64, rate_bps: u64) -> Dur {
        debug_assert!(rate_bps > 0);
        match bytes.checked_mul(8_000_000_000) {
            Some(bits) => Dur(bits.div_ceil(rate_bps)),
            None => Dur((bytes as u128 * 8_000_000_000).div_ceil(rate_bps as u128) as u64),
        }
    }
    pub fn saturating_sub(self, other: Dur) -> Dur {
        Dur(self.0.saturating_sub(other.0))
    }
    #[allow(clippy::should_implement_trait)] // saturating, and by a count: not `Mul<Dur>`
    pub fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}

impl Add<Dur> for SimTime {
    type Output = SimTime;
    fn add(self, d: Dur) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for SimTime {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimTime> for SimTime {
    type Output = Dur;
    fn sub(self, o: SimTime) -> Dur {
        Dur(self.0 - o.0)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, o: Dur) -> Dur {
        Dur(self.0.saturating_add(o.0))
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0 - o.0)
    }
}

fn fmt_ns(f: &mut fmt::Formatter<'_>, ns: u64) -> fmt::Result {
    if ns >= 1_000_000_000 {
        write!(f, "{:.3}s", ns as f64 * 1e-9)
    } else if ns >= 1_000_000 {
        write!(f, "{:.3}ms", ns as f64 * 1e-6)
    } else if ns >= 1_000 {
        write!(f, "{:.3}us", ns as f64 * 1e-3)
    } else {
        write!(f, "{ns}ns")
    }
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(f, self.0)
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(f, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_for_round_rates() {
        assert_eq!(Dur::tx_time(1500, 10_000_000), Dur::from_micros(1200));
        assert_eq!(Dur::tx_time(1500, 100_000_000), Dur::from_micros(120));
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1 byte at 3 bit/s = 2.666.. s -> rounded up to whole nanoseconds
        assert_eq!(Dur::tx_time(1, 3), Dur(2_666_666_667));
    }

    #[test]
    fn display_picks_a_readable_unit() {
        assert_eq!(Dur::from_millis(20).to_string(), "20.000ms");
        assert_eq!(SimTime(1_500_000_000).to_string(), "1.500s");
        assert_eq!(Dur(12).to_string(), "12ns");
    }
}
