//! The retransmission timeout: Linux's estimator (the default) or strict RFC 6298.
//!
//! **Linux** (`tcp_rtt_estimator` and `__tcp_set_rto` in net/ipv4/tcp_input.c). Fixed point:
//! `srtt8` holds 8·SRTT and `mdev4` about 4 times the mean deviation, both in nanoseconds here
//! (microseconds in the kernel). For a sample m:
//!
//! * first sample: `srtt8 = 8m`, `mdev4 = 2m`, `rttvar = max(mdev4, rto_min)`;
//! * later: `err = m − srtt8/8`, `srtt8 += err`; the deviation gains `|err| − mdev4/4`, but
//!   when the RTT falls (err < 0) only an eighth of a positive gain is taken (a finer gain, so
//!   a falling RTT neither inflates the RTO nor collapses it);
//! * `mdev_max` is the largest `mdev4` of the current round (one window of data, from
//!   `rtt_seq` = snd_nxt at the round's start); it starts every round at `rto_min`, and
//!   `rttvar` follows it up at once and down by a quarter of the gap at each round's end.
//!
//! So `rttvar >= rto_min` always and `RTO = SRTT + rttvar >= SRTT + rto_min`: on a path whose
//! queue fills slowly the deviation tends to zero, yet the timer stays at least `rto_min`
//! above the smoothed RTT. This is not `max(SRTT + 4·RTTVAR, rto_min)`, the RFC formula with
//! Linux's floor, under which the RTO approaches the RTT on such a path and the timer fires
//! just before a fast retransmission can be acknowledged.
//!
//! **RFC 6298**: `RTTVAR = 3/4·RTTVAR + 1/4·|SRTT − R|`, `SRTT = 7/8·SRTT + 1/8·R`,
//! `RTO = max(SRTT + max(G, 4·RTTVAR), rto_min)` with `rto_min` = 1 s (§2.4), as ns-3 does.
//!
//! Both back off exponentially on expiry (RFC 6298 §5.5), capped at `rto_max` (Linux: 120 s).
//! The mode also decides when the sender restarts the timer: Linux's restarts it when the head
//! is retransmitted too (`sender/mod.rs`).

use crate::time::Dur;

/// Clock granularity G of RFC 6298 §2.
pub const CLOCK_GRANULARITY: Dur = Dur::from_millis(1);

/// Which retransmission-timeout computation a sender uses (`tcp.rto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RtoMode {
    /// Linux: RTO = SRTT + max(per-round max of the mean deviation, rto_min); rto_min 200 ms,
    /// rto_max 120 s.
    #[default]
    Linux,
    /// RFC 6298: RTO = max(SRTT + 4·RTTVAR, rto_min); rto_min 1 s, rto_max 60 s.
    Rfc6298,
}

/// Names and one-line descriptions of the timer modes.
pub const RTO_MODES: &[(&str, &str)] = &[
    ("linux", "Linux (tcp_rtt_estimator): RTO = SRTT + max(per-round max mean deviation, min_rto); min_rto 200 ms, max_rto 120 s"),
    ("rfc6298", "RFC 6298: RTO = max(SRTT + 4 RTTVAR, min_rto); min_rto 1 s, max_rto 60 s (ns-3's defaults)"),
];

impl RtoMode {
    pub fn by_name(name: &str) -> Option<RtoMode> {
        match name {
            "linux" => Some(RtoMode::Linux),
            "rfc6298" => Some(RtoMode::Rfc6298),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RtoMode::Linux => "linux",
            RtoMode::Rfc6298 => "rfc6298",
        }
    }
    /// The floor when the scenario gives none: Linux's TCP_RTO_MIN, or RFC 6298 §2.4's 1 s.
    pub fn default_min_rto(self) -> Dur {
        match self {
            RtoMode::Linux => Dur::from_millis(200),
            RtoMode::Rfc6298 => Dur::from_secs(1),
        }
    }
    /// The cap when the scenario gives none: Linux's TCP_RTO_MAX, or RFC 6298 §2.5's 60 s.
    pub fn default_max_rto(self) -> Dur {
        match self {
            RtoMode::Linux => Dur::from_secs(120),
            RtoMode::Rfc6298 => Dur::from_secs(60),
        }
    }
}

/// SRTT, the variance term and the backed-off RTO.
#[derive(Clone, Debug)]
pub struct RtoEstimator {
    mode: RtoMode,
    min_rto: Dur,
    max_rto: Dur,
    initial_rto: Dur,
    /// 8·SRTT (Linux) or SRTT (RFC), in ns; meaningless before the first sample (`smoothed`
    /// is None until then).
    srtt: u64,
    /// SRTT itself (`srtt` scaled back in Linux's mode), worked out again on each sample: it
    /// is read several times per ACK. None before the first sample.
    smoothed: Option<Dur>,
    /// Linux: mdev_us (≈ 4·mean deviation). RFC: RTTVAR.
    mdev: u64,
    /// The mean deviation as `rttvar` gives it (`mdev` scaled back in Linux's mode), worked
    /// out again on each sample: the scheduler's view reads it after every ACK.
    var: Dur,
    /// Linux only: the largest mdev of this round, and the variance term of the RTO.
    mdev_max: u64,
    rttvar: u64,
    /// Linux only: the round ends when snd_una passes this sequence.
    rtt_seq: u64,
    backoff: u32,
    /// The current RTO, worked out again whenever a sample or the backoff changes it: it is
    /// read on every ACK and most transmissions, and changes far less often.
    rto: Dur,
}

impl RtoEstimator {
    pub fn new(mode: RtoMode, min_rto: Dur, max_rto: Dur, initial_rto: Dur) -> RtoEstimator {
        let mut e = RtoEstimator {
            mode,
            min_rto,
            max_rto,
            initial_rto,
            srtt: 0,
            smoothed: None,
            mdev: 0,
            var: Dur::ZERO,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            backoff: 0,
            rto: Dur::ZERO,
        };
        e.rto = e.backed_off_rto();
        e
    }

    pub fn mode(&self) -> RtoMode {
        self.mode
    }

    /// Feeds a valid sample (Karn's rule applied by the caller). `snd_una` and `snd_nxt` are
    /// the sender's after the ACK that gave it (Linux ends its per-round maximum on them).
    #[inline]
    pub fn on_sample(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        let base = self.sample(r, snd_una, snd_nxt);
        self.rto = if self.backoff == 0 { base } else { self.backed_off_rto() };
    }

    /// A sample from an ACK of new data, which also ends any backoff (RFC 6298 §5.7): the same
    /// as `reset_backoff` after `on_sample`, with the RTO worked out once.
    #[inline]
    pub fn on_ack_sample(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        self.backoff = 0;
        self.rto = self.sample(r, snd_una, snd_nxt);
    }

    /// Feeds the sample to the mode's estimator, which works out the RTO without backoff from
    /// the values it has at hand, and returns that.
    #[inline]
    fn sample(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) -> Dur {
        let base = match self.mode {
            RtoMode::Linux => self.linux_sample(r.0.max(1), snd_una, snd_nxt),
            RtoMode::Rfc6298 => self.rfc_sample(r.0),
        };
        debug_assert_eq!(base, self.base_rto());
        base
    }

    /// Linux's estimator; returns the RTO without backoff.
    #[inline]
    fn linux_sample(&mut self, m: u64, snd_una: u64, snd_nxt: u64) -> Dur {
        let rto_min = self.min_rto.0;
        let srtt8 = if self.smoothed.is_none() {
            self.mdev = m << 1; // RTO = 3·RTT at first
            self.rttvar = self.mdev.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            m << 3
        } else {
            let srtt8 = self.srtt;
            // nanoseconds below 2^62 (146 years): i64 holds every difference
            let err = m as i64 - (srtt8 >> 3) as i64;
            let srtt8 = (srtt8 as i64 + err).max(1) as u64;
            let mut gain = err.abs() - (self.mdev >> 2) as i64;
            if err < 0 && gain > 0 {
                gain >>= 3;
            }
            self.mdev = (self.mdev as i64 + gain).max(0) as u64;
            if self.mdev > self.mdev_max {
                self.mdev_max = self.mdev;
                if self.mdev_max > self.rttvar {
                    self.rttvar = self.mdev_max;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
            srtt8
        };
        self.srtt = srtt8;
        let srtt = srtt8 >> 3;
        self.smoothed = Some(Dur(srtt));
        self.var = Dur(self.mdev >> 2);
        self.linux_rto(srtt)
    }

    /// RFC 6298's estimator; returns the RTO without backoff.
    fn rfc_sample(&mut self, r: u64) -> Dur {
        let srtt = match self.smoothed {
            None => {
                self.mdev = r / 2;
                r
            }
            Some(_) => {
                let srtt = self.srtt;
                // RTTVAR first, with the old SRTT (§2.3)
                self.mdev = (3 * self.mdev + srtt.abs_diff(r)) / 4;
                (7 * srtt + r) / 8
            }
        };
        self.srtt = srtt;
        self.smoothed = Some(Dur(srtt));
        self.var = Dur(self.mdev);
        self.rfc_rto(srtt)
    }

    /// Linux's RTO without backoff from SRTT (ns): SRTT + rttvar, capped.
    #[inline]
    fn linux_rto(&self, srtt: u64) -> Dur {
        Dur((srtt + self.rttvar).min(self.max_rto.0))
    }

    /// RFC 6298's RTO without backoff from SRTT (ns): SRTT + max(G, 4·RTTVAR), at least the
    /// minimum, capped.
    #[inline]
    fn rfc_rto(&self, srtt: u64) -> Dur {
        let rto = (srtt + CLOCK_GRANULARITY.0.max(4 * self.mdev)).max(self.min_rto.0);
        Dur(rto.min(self.max_rto.0))
    }

    /// Smoothed RTT.
    #[inline]
    pub fn srtt(&self) -> Option<Dur> {
        debug_assert_eq!(self.smoothed, self.scaled_srtt());
        self.smoothed
    }

    /// SRTT worked out from the estimator's own figure (kept in `smoothed`); None before the
    /// first sample.
    fn scaled_srtt(&self) -> Option<Dur> {
        self.smoothed.map(|_| match self.mode {
            RtoMode::Linux => Dur(self.srtt >> 3),
            RtoMode::Rfc6298 => Dur(self.srtt),
        })
    }

    /// The mean deviation of the RTT (RFC 6298's RTTVAR; Linux's mdev/4).
    #[inline]
    pub fn rttvar(&self) -> Dur {
        debug_assert_eq!(self.var, self.scaled_mdev());
        self.var
    }

    /// The mean deviation worked out from the estimator's own figure (kept in `var`).
    fn scaled_mdev(&self) -> Dur {
        match self.mode {
            RtoMode::Linux => Dur(self.mdev >> 2),
            RtoMode::Rfc6298 => Dur(self.mdev),
        }
    }

    /// RTO without backoff.
    pub fn base_rto(&self) -> Dur {
        let Some(srtt) = self.srtt() else { return self.initial_rto };
        match self.mode {
            RtoMode::Linux => self.linux_rto(srtt.0),
            RtoMode::Rfc6298 => self.rfc_rto(srtt.0),
        }
    }

    /// Current RTO including exponential backoff (RFC 6298 §5.5), capped at `max_rto`.
    #[inline]
    pub fn rto(&self) -> Dur {
        debug_assert_eq!(self.rto, self.backed_off_rto());
        self.rto
    }

    fn backed_off_rto(&self) -> Dur {
        if self.backoff == 0 {
            // (the shift and the cap below change nothing: `base_rto` is within `max_rto`)
            return self.base_rto();
        }
        let base = self.base_rto().0;
        let shifted = base.checked_shl(self.backoff.min(32)).unwrap_or(u64::MAX);
        Dur(shifted.min(self.max_rto.0.max(base)))
    }

    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(32);
        self.rto = self.backed_off_rto();
    }
    #[inline]
    pub fn reset_backoff(&mut self) {
        if self.backoff != 0 {
            self.backoff = 0;
            self.rto = self.backed_off_rto();
        }
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn linux() -> RtoEstimator {
        RtoEstimator::new(RtoMode::Linux, Dur::from_millis(200), Dur::from_secs(120), Dur::from_secs(1))
    }
    fn rfc() -> RtoEstimator {
        RtoEstimator::new(RtoMode::Rfc6298, Dur::from_secs(1), Dur::from_secs(60), Dur::from_secs(1))
    }

    /// Feeds one sample per ACK of a window of `w` segments per round, the RTT rising by
    /// `step` every round, as when a drop-tail queue fills by one packet per RTT.
    fn rising(e: &mut RtoEstimator, start: Dur, step: Dur, rounds: u64, w: u64, mut check: impl FnMut(&RtoEstimator)) {
        let mut seq = 0;
        for k in 0..rounds {
            let r = Dur(start.0 + k * step.0);
            for _ in 0..w {
                seq += 1;
                e.on_sample(r, seq, seq + w);
                check(e);
            }
        }
    }

    #[test]
    fn linux_first_sample_gives_three_rtts_or_srtt_plus_rto_min() {
        let mut e = linux();
        assert_eq!(e.rto(), Dur::from_secs(1));
        e.on_sample(Dur::from_millis(100), 0, 10);
        // srtt 100, rttvar = max(2·100, 200) = 200
        assert_eq!(e.rto(), Dur::from_millis(300));
        let mut e = linux();
        e.on_sample(Dur::from_millis(10), 0, 10);
        assert_eq!(e.rto(), Dur::from_millis(210));
    }

    #[test]
    fn linux_slowly_rising_rtt_never_brings_the_rto_below_srtt_plus_rto_min() {
        // 400 ms base RTT, queue filling by 1.2 ms per round, 300 segments per round
        let mut e = linux();
        let mut min_margin = u64::MAX;
        rising(&mut e, Dur::from_millis(400), Dur(1_200_000), 400, 300, |e| {
            let srtt = e.srtt().unwrap().0;
            assert!(e.rto().0 >= srtt + 200 * MS, "rto {:?} srtt {:?}", e.rto(), e.srtt());
            min_margin = min_margin.min(e.rto().0 - srtt);
        });
        // the deviation is long gone: the margin is the floor itself (to the nanosecond
        // rounding of the fixed-point decay)
        assert!(min_margin < 200 * MS + 1000, "{min_margin}");
        // the RFC formula with a 200 ms floor collapses towards the RTT on the same sequence
        let mut r = RtoEstimator::new(RtoMode::Rfc6298, Dur::from_millis(200), Dur::from_secs(60), Dur::from_secs(1));
        rising(&mut r, Dur::from_millis(400), Dur(1_200_000), 400, 300, |_| {});
        assert!(r.rto().0 < r.srtt().unwrap().0 + 20 * MS, "rfc rto {:?} srtt {:?}", r.rto(), r.srtt());
    }

    #[test]
    fn linux_variance_rises_at_once_and_decays_a_quarter_per_round() {
        let mut e = linux();
        let mut seq = 0;
        let mut feed = |e: &mut RtoEstimator, r: u64, n: u64| {
            for _ in 0..n {
                seq += 1;
                e.on_sample(Dur(r * MS), seq, seq + 10);
            }
        };
        feed(&mut e, 100, 50);
        let calm = e.rto();
        assert_eq!(calm.0, e.srtt().unwrap().0 + 200 * MS);
        // one sample far above: mdev jumps, the RTO with it, in the same ACK
        feed(&mut e, 600, 1);
        let jumped = e.rto();
        assert!(jumped.0 > e.srtt().unwrap().0 + 300 * MS, "{jumped:?}");
        // then calm samples: the variance term decays round by round, never below the floor
        feed(&mut e, 100, 400);
        let margin = e.rto().0 - e.srtt().unwrap().0;
        assert!((200 * MS..200 * MS + 100_000).contains(&margin), "{margin}");
    }

    #[test]
    fn falling_rtt_takes_a_finer_deviation_gain() {
        let mut e = linux();
        e.on_sample(Dur::from_millis(100), 0, 10);
        let m0 = e.rttvar();
        e.on_sample(Dur::from_millis(20), 1, 11);
        // |err| = 80 ms, mdev4 was 200 ms: gain (80 − 50)/8 on mdev4
        assert_eq!(e.rttvar(), Dur((200 * MS + (30 * MS) / 8) / 4));
        assert!(e.rttvar() > m0);
    }

    #[test]
    fn rfc6298_floors_at_one_second() {
        let mut e = rfc();
        for _ in 0..50 {
            e.on_sample(Dur::from_millis(100), 0, 0);
        }
        assert_eq!(e.rto(), Dur::from_secs(1));
        rising(&mut e, Dur::from_millis(100), Dur(1_200_000), 100, 50, |e| assert!(e.rto() >= Dur::from_secs(1)));
        // above the floor the RFC formula rules: SRTT + 4·RTTVAR
        let mut e = rfc();
        e.on_sample(Dur::from_millis(500), 0, 0);
        assert_eq!(e.rto(), Dur::from_millis(1500));
    }

    #[test]
    fn rfc6298_gains() {
        let mut e = rfc();
        e.on_sample(Dur::from_millis(100), 0, 0);
        e.on_sample(Dur::from_millis(200), 0, 0);
        assert_eq!(e.rttvar(), Dur(62_500_000));
        assert_eq!(e.srtt(), Some(Dur(112_500_000)));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_in_both_modes() {
        for mut e in [linux(), rfc()] {
            for k in 0..20 {
                e.on_sample(Dur::from_millis(10), k, k + 1);
            }
            let base = e.rto();
            e.back_off();
            assert_eq!(e.rto(), Dur(2 * base.0));
            for _ in 0..20 {
                e.back_off();
            }
            assert_eq!(e.rto(), e.max_rto);
            e.reset_backoff();
            assert_eq!(e.rto(), base);
        }
    }

    /// The SRTT and mean deviation kept for reading and the RTO worked out once per change
    /// follow the estimator's own figures through random samples and backoffs, in both modes;
    /// a sample that ends the backoff (`on_ack_sample`) leaves what `reset_backoff` then
    /// `on_sample` leave.
    #[test]
    fn the_kept_srtt_and_rto_follow_every_sample_and_backoff() {
        for mut e in [linux(), rfc()] {
            let mut twin = e.clone();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for i in 0..5_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let r = Dur(MS + x % (400 * MS));
                let (una, nxt) = (i * 1460, (i + 10) * 1460);
                match x % 10 {
                    0 | 1 => {
                        e.back_off();
                        twin.back_off();
                    }
                    // a sample taken while backed off (the handshake's), keeping the backoff
                    2 => {
                        e.on_sample(r, una, nxt);
                        twin.on_sample(r, una, nxt);
                    }
                    _ => {
                        e.on_ack_sample(r, una, nxt);
                        twin.reset_backoff();
                        twin.on_sample(r, una, nxt);
                    }
                }
                let own = e.smoothed.map(|_| if e.mode == RtoMode::Linux { e.srtt >> 3 } else { e.srtt });
                assert_eq!(e.smoothed.map(|d| d.0), own, "{:?} after step {i}", e.mode);
                let var = if e.mode == RtoMode::Linux { e.mdev >> 2 } else { e.mdev };
                assert_eq!(e.var.0, var, "{:?} after step {i}", e.mode);
                assert_eq!(e.rto, e.backed_off_rto(), "{:?} after step {i}", e.mode);
                let capped = e.base_rto().0.checked_shl(e.backoff).unwrap_or(u64::MAX).min(e.max_rto.0.max(e.base_rto().0));
                assert_eq!(e.rto.0, capped, "{:?} after step {i}", e.mode);
                let figures = |e: &RtoEstimator| (e.srtt, e.smoothed, e.mdev, e.var, e.mdev_max, e.rttvar, e.rtt_seq, e.backoff, e.rto);
                assert_eq!(figures(&e), figures(&twin), "{:?} after step {i}", e.mode);
            }
        }
    }
}
