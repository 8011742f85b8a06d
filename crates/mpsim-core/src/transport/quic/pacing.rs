//! Pacing of a QUIC path's packets (RFC 9002 §7.7, `quic.pacing`), as noq 1.4.0's pacer
//! (`noq-proto/src/connection/pacing.rs`, quinn's) does it: a token bucket that refills at
//! N x cwnd / smoothed_rtt bytes per second with N = 1.25, and holds a burst of 2 ms at
//! cwnd / smoothed_rtt, at least 10 and at most 256 full packets, but never more than 10 ms
//! at that rate (and at least one packet). A packet leaves while the bucket holds its bytes;
//! once it does not, the path waits until the bucket is full again (a whole burst's worth)
//! and sends the next burst.
//!
//! Linux's earliest-departure-time pacing of the TCP sender (`tcp/rate.rs`) spaces every
//! segment at the rate; noq's bucket lets bursts of at least ten packets go at once, so the
//! QUIC sender keeps a pacer of its own to match the implementation it runs beside.

use crate::time::{Dur, SimTime};

/// The pacing rate's factor N over cwnd / smoothed_rtt, as 5/4.
const RATE_NUM: u128 = 5;
const RATE_DEN: u128 = 4;
/// The burst: the window's share of this interval...
const BURST_INTERVAL_NS: u128 = 2_000_000;
/// ... in full packets, at least and at most...
pub const MIN_BURST: u64 = 10;
pub const MAX_BURST: u64 = 256;
/// ... and never more than the window's share of this interval (nor less than a packet).
const MAX_BURST_INTERVAL_NS: u128 = 10_000_000;

/// One path's token bucket.
#[derive(Clone, Debug)]
pub struct Pacer {
    capacity: u64,
    window: u64,
    tokens: u64,
    refilled_at: SimTime,
}

/// The bucket's size for a window of `cwnd` bytes over `srtt`, packets of `mds` bytes.
fn capacity(srtt: Dur, cwnd: u64, mds: u64) -> u64 {
    // the window's share of `interval`, in 64 bits while the product fits (the window
    // changes with nearly every ACK)
    let share = |interval: u128| match cwnd.checked_mul(interval as u64) {
        Some(x) => x / srtt.0.max(1),
        None => (cwnd as u128 * interval / srtt.0.max(1) as u128).min(u64::MAX as u128) as u64,
    };
    let target = share(BURST_INTERVAL_NS).clamp(MIN_BURST * mds, MAX_BURST * mds);
    target.min(share(MAX_BURST_INTERVAL_NS).max(mds))
}

impl Pacer {
    /// A full bucket at `now`.
    pub fn new(now: SimTime, srtt: Dur, cwnd: u64, mds: u64) -> Pacer {
        let capacity = capacity(srtt, cwnd, mds);
        Pacer { capacity, window: cwnd, tokens: capacity, refilled_at: now }
    }

    /// When a packet of `len` bytes may leave, given the path's window and smoothed RTT:
    /// None at once, else the time the bucket is full again.
    pub fn delay(&mut self, now: SimTime, srtt: Dur, cwnd: u64, mds: u64, len: u64) -> Option<SimTime> {
        if cwnd != self.window {
            self.capacity = capacity(srtt, cwnd, mds);
            self.tokens = self.tokens.min(self.capacity);
            self.window = cwnd;
        }
        if self.tokens >= len || srtt == Dur::ZERO || cwnd == 0 {
            return None;
        }
        // the tokens of the time since the last refill, rounded to the nearest byte; the
        // time counts on until it brings one
        let elapsed = (now - self.refilled_at).0 as u128;
        let (num, den) = (cwnd as u128 * RATE_NUM * elapsed, RATE_DEN * srtt.0 as u128);
        let fresh = (2 * num + den) / (2 * den);
        self.tokens = (self.tokens as u128 + fresh).min(self.capacity as u128) as u64;
        if fresh > 0 {
            self.refilled_at = now;
        }
        if self.tokens >= len {
            return None;
        }
        // the time the bucket holds max(len, capacity) again, rounded up
        let missing = (len.max(self.capacity) - self.tokens) as u128;
        let num = srtt.0 as u128 * missing * RATE_DEN;
        let den = RATE_NUM * cwnd as u128;
        Some(now + Dur(num.div_ceil(den).min(u64::MAX as u128) as u64))
    }

    /// A packet of `len` bytes left.
    pub fn on_sent(&mut self, len: u64) {
        self.tokens = self.tokens.saturating_sub(len);
    }

    /// The rate the bucket refills at, bytes per second, for `cwnd` over `srtt`.
    pub fn rate(srtt: Dur, cwnd: u64) -> u64 {
        (cwnd as u128 * RATE_NUM * 1_000_000_000 / (RATE_DEN * srtt.0.max(1) as u128)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MDS: u64 = 1472;

    fn ms(v: u64) -> Dur {
        Dur::from_millis(v)
    }

    #[test]
    fn the_burst_is_two_milliseconds_of_the_window_within_10_and_256_packets_and_10_ms() {
        assert_eq!(capacity(ms(20), 100 * MDS, MDS), 10 * MDS, "10 packets per 2 ms of a 20 ms RTT: the floor");
        assert_eq!(capacity(ms(2), 100 * MDS, MDS), 100 * MDS);
        assert_eq!(capacity(ms(1), 1000 * MDS, MDS), 256 * MDS);
        // 10 ms of 12 packets per 20 ms is 6 packets: below the floor of 10
        assert_eq!(capacity(ms(20), 12 * MDS, MDS), 6 * MDS);
        assert_eq!(capacity(ms(1000), 2 * MDS, MDS), MDS, "at least a packet");
    }

    #[test]
    fn a_full_bucket_sends_a_burst_then_waits_for_the_next() {
        // 100 packets per 20 ms RTT: 125 packets per 20 ms at N = 1.25, a burst of 10 packets
        let (srtt, cwnd) = (ms(20), 100 * MDS);
        let mut p = Pacer::new(SimTime::ZERO, srtt, cwnd, MDS);
        for _ in 0..10 {
            assert_eq!(p.delay(SimTime::ZERO, srtt, cwnd, MDS, MDS), None);
            p.on_sent(MDS);
        }
        // the bucket is empty: it is full again after 10 packets at 125 per 20 ms, 1.6 ms
        let at = p.delay(SimTime::ZERO, srtt, cwnd, MDS, MDS).expect("held");
        assert_eq!(at, SimTime(1_600_000));
        assert_eq!(p.delay(at, srtt, cwnd, MDS, MDS), None);
        assert_eq!(Pacer::rate(srtt, cwnd), 125 * MDS * 50);
    }

    #[test]
    fn a_smaller_window_shrinks_the_bucket() {
        let mut p = Pacer::new(SimTime::ZERO, ms(1), 1000 * MDS, MDS);
        assert_eq!(p.tokens, 256 * MDS);
        assert_eq!(p.delay(SimTime::ZERO, ms(1), 50 * MDS, MDS, MDS), None);
        assert_eq!(p.tokens, 100 * MDS);
    }
}
