//! JSCTP and JSCTP-ABE (seed 003: Chen, Chu, Wu, Tsai, Wang, EURASIP JWCN 2011; ALGORITHMS.md
//! §6.4) as per-destination SCTP controllers (`cc = "jsctp"` / `"jsctp_abe"`).
//!
//! Every DATA packet carries a 12-byte timestamp chunk with its send time and SACKs echo the
//! receive times (`sctp.timestamps`, switched on by these controllers). Each destination keeps
//! its own estimators, built from the transport-independent blocks of `cc/`:
//!
//! * the jitter ratio (`cc::jitter_ratio::JitterRatio`): one `record` per echoed packet, one
//!   sample per smoothed RTT over the last window of `cwnd / chunk` packets, smoothed with
//!   α = 0.05, zero samples ignored (`sctp.jsctp_ignore_zero = false` turns the fix off, for
//!   the paper's comparison of Fig. 2 against Fig. 6);
//! * the loss response (`cc::jitter_ratio::JsctpResponse`, Algorithms 1 and 2): a loss is
//!   congestion when the smoothed ratio reaches `k/w` (k = `sctp.jsctp_k` bytes, default one
//!   data chunk, the paper's 1456 B; w = cwnd in bytes), a wireless loss otherwise;
//! * the controls: `sctp.jsctp_losses = "wireless"` or `"congestion"` takes every loss for that
//!   class instead of asking the jitter ratio (`"jitter"`, the default), all else unchanged;
//!   the seed-003 reproduction runs both to tell what the differentiation itself does;
//! * JSCTP-ABE only: TABE (`cc::tabe::Tabe`) fed with the echoed receive time and size of every
//!   packet; its window `ownd = srtt · R_n` is the ssthresh of both algorithms.
//!
//! Choices the paper leaves open, made here:
//! * [RECONSTRUCTED] Plain JSCTP has no bandwidth estimate; where Algorithms 1-2 write
//!   `RTT·R_n/s` it uses RFC 4960's `max(cwnd/2, 4·MTU)`. Its congestion response is then
//!   SCTP's own (JTCP's "halve cwnd"), and a wireless timeout resumes at that value.
//! * [RECONSTRUCTED] JSCTP-ABE before its first TABE sample (no echoed packet yet) uses the same
//!   fallback.
//! * [RECONSTRUCTED] Packets are numbered by TSN (one chunk per packet, as in the paper). With
//!   bundling a packet is known by its first TSN; with CMT a destination's packets are not
//!   consecutive TSNs, so its window of `w/s` TSNs holds fewer of its own packets.
//! * Growth is RFC 4960's (slow start and congestion avoidance with partial_bytes_acked, both
//!   gated on a fully used window), as in the paper, which changes only the loss response.

use super::{rfc4960_growth, AckEvent, DestWindow, LossEvent, LossKind, LossVerdict, SctpController, TimestampSample};
use crate::cc::jitter_ratio::{JitterRatio, JsctpResponse, LossClass, LossRule, ALPHA};
use crate::cc::tabe::Tabe;
use crate::cc::{SubflowState, Window};
use crate::time::Dur;
use crate::transport::sctp::SctpConfig;

/// Per-destination state of JSCTP (and JSCTP-ABE with `tabe`).
#[derive(Clone, Debug)]
pub struct Jsctp {
    pub jr: JitterRatio,
    pub response: JsctpResponse,
    /// JSCTP-ABE's bandwidth estimator; None for plain JSCTP.
    pub tabe: Option<Tabe>,
    /// Bytes of user data per packet: the `s` of `w/s`.
    pub chunk: u64,
    /// Losses taken for congestion, for wireless, and skipped by the Next-RTT check.
    pub congestion: u64,
    pub wireless: u64,
    pub same_rtt: u64,
}

impl Jsctp {
    /// `k_bytes` is the k of the k/w threshold; `abe` adds TABE; `ignore_zero` is the
    /// zero-sample fix.
    pub fn new(k_bytes: u64, chunk: u32, abe: bool, ignore_zero: bool) -> Jsctp {
        Jsctp::with_rule(k_bytes, chunk, abe, ignore_zero, LossRule::Jitter)
    }

    /// The same with the losses classed by `rule` (`sctp.jsctp_losses`: the controls).
    pub fn with_rule(k_bytes: u64, chunk: u32, abe: bool, ignore_zero: bool, rule: LossRule) -> Jsctp {
        Jsctp {
            jr: JitterRatio::new(ALPHA, ignore_zero),
            response: JsctpResponse::with_rule(k_bytes, rule),
            tabe: abe.then(Tabe::new),
            chunk: chunk.max(1) as u64,
            congestion: 0,
            wireless: 0,
            same_rtt: 0,
        }
    }

    /// The controller with the association's settings: k (`sctp.jsctp_k`, default one data
    /// chunk), the chunk size, the zero-sample fix and the loss rule; `abe` adds TABE.
    pub fn from_config(c: &SctpConfig, abe: bool) -> Jsctp {
        let k = c.jsctp_k.unwrap_or(c.chunk as u64);
        Jsctp::with_rule(k, c.chunk, abe, c.jsctp_ignore_zero, c.jsctp_losses)
    }

    /// The window in packets, `w/s` (at least one).
    fn window_pkts(&self, w: &DestWindow) -> u64 {
        (w.cwnd / self.chunk).max(1)
    }

    /// The ssthresh a congestion (or a wireless timeout) moves to: TABE's `srtt·R_n` for
    /// JSCTP-ABE once it has samples, RFC 4960's halving otherwise.
    pub fn ownd(&self, w: &DestWindow, srtt: Option<Dur>) -> u64 {
        match (&self.tabe, srtt) {
            (Some(t), Some(rtt)) if t.samples() > 0 => t.ownd(rtt),
            _ => (w.cwnd / 2).max(4 * w.mtu),
        }
    }
}

impl SctpController for Jsctp {
    /// An echoed send/receive time pair; `srtt` the destination's smoothed RTT.
    fn on_timestamp(&mut self, s: &TimestampSample, srtt: Option<Dur>) {
        self.jr.record(s.tsn, s.sent_at, s.received_at);
        if let (Some(t), Some(rtt)) = (self.tabe.as_mut(), srtt) {
            t.on_ack(s.received_at, s.bytes as u64, rtt);
        }
    }

    /// New data acknowledged: one jitter-ratio sample per smoothed RTT, then RFC 4960 growth.
    fn on_ack(&mut self, w: &mut DestWindow, a: &AckEvent, _siblings: &[SubflowState], _me: usize) {
        if let Some(rtt) = a.srtt {
            self.jr.maybe_sample(a.now, rtt, self.window_pkts(w));
        }
        rfc4960_growth(w, a);
    }

    /// A loss on this destination: Algorithm 1 (fast retransmit) or 2 (T3-rtx timeout).
    fn on_loss(&mut self, w: &mut DestWindow, l: &LossEvent, _siblings: &[SubflowState], _me: usize) -> LossVerdict {
        let ownd = self.ownd(w, l.srtt);
        let win = Window { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mtu };
        let (nw, class) = match l.kind {
            LossKind::FastRetransmit => {
                let rtt = l.srtt.or(l.min_rtt).unwrap_or(Dur::ZERO);
                self.response.on_fast_retransmit(l.now, rtt, win, &self.jr, ownd)
            }
            LossKind::Timeout => self.response.on_timeout(l.now, win, &self.jr, ownd),
        };
        if nw != win {
            w.partial_bytes_acked = 0;
        }
        w.cwnd = nw.cwnd;
        w.ssthresh = nw.ssthresh;
        match class {
            LossClass::Congestion => {
                self.congestion += 1;
                LossVerdict::Congestion
            }
            LossClass::Wireless => {
                self.wireless += 1;
                LossVerdict::NotCongestion
            }
            LossClass::SameRtt => {
                self.same_rtt += 1;
                LossVerdict::NotCongestion
            }
        }
    }

    /// The smoothed jitter ratio and the k/w threshold at the current window.
    fn jitter(&self, w: &DestWindow) -> Option<(f64, f64)> {
        Some((self.jr.smoothed(), JitterRatio::threshold(self.response.k_bytes, w.cwnd)))
    }

    fn loss_counts(&self) -> Option<(u64, u64, u64, u64)> {
        let (taken, ignored) = self.jr.counts();
        Some((taken, ignored, self.congestion, self.wireless))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    const CHUNK: u32 = 1456;
    const MTU: u64 = 1500;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    fn win(cwnd_pkts: u64) -> DestWindow {
        DestWindow { cwnd: cwnd_pkts * CHUNK as u64, ssthresh: 4 * MTU, partial_bytes_acked: 0, mtu: MTU }
    }

    fn ack(now: SimTime) -> AckEvent {
        AckEvent {
            now,
            bytes_acked: CHUNK as u64,
            advanced: true,
            fully_used: false,
            in_fast_recovery: false,
            flight: 0,
            srtt: Some(Dur::from_millis(100)),
            min_rtt: None,
        }
    }

    fn loss(now: SimTime, kind: LossKind) -> LossEvent {
        LossEvent { now, kind, tsn: 1, sent_at: now, flight: 0, srtt: Some(Dur::from_millis(100)), min_rtt: None }
    }

    /// Packets `range` sent every 10 ms, each meeting `queue(i)` ms of queue; then an ack at
    /// `at` takes a sample over a 10-packet window.
    fn feed(j: &mut Jsctp, range: std::ops::Range<u64>, queue: impl Fn(u64) -> u64, w: &mut DestWindow, at: u64) {
        for i in range {
            j.on_timestamp(
                &TimestampSample { tsn: i, sent_at: ms(10 * i), received_at: ms(10 * i + 40 + queue(i)), bytes: CHUNK },
                Some(Dur::from_millis(100)),
            );
        }
        j.on_ack(w, &ack(ms(at)), &[], 0);
    }

    #[test]
    fn zero_samples_are_ignored_unless_the_fix_is_off() {
        let mut w = win(10);
        let mut fixed = Jsctp::new(CHUNK as u64, CHUNK, false, true);
        let mut plain = Jsctp::new(CHUNK as u64, CHUNK, false, false);
        for j in [&mut fixed, &mut plain] {
            feed(j, 0..11, |i| 4 * i, &mut w, 200); // a growing queue: a positive sample
        }
        let before = fixed.jitter(&w).unwrap().0;
        assert!(before > 0.0 && before == plain.jitter(&w).unwrap().0);
        for j in [&mut fixed, &mut plain] {
            feed(j, 11..40, |_| 44, &mut w, 400); // a steady queue: a zero sample
        }
        assert_eq!(fixed.jitter(&w).unwrap().0, before, "the zero sample moved the smoothed ratio");
        assert!(plain.jitter(&w).unwrap().0 < before);
        assert_eq!((fixed.jr.counts(), plain.jr.counts()), ((2, 1), (2, 0)));
    }

    #[test]
    fn the_k_over_w_decision_and_the_window_it_leaves() {
        // a congested path: the queue grows 9 ms per 10 ms packet (smoothed ratio ~ 0.05·0.47)
        let mut congested = Jsctp::new(CHUNK as u64, CHUNK, false, true);
        let mut w = win(60);
        feed(&mut congested, 0..61, |i| 9 * i, &mut w, 1000);
        let (jr, _) = congested.jitter(&w).unwrap();
        // k/w at 60 packets is 1/60 = 0.0167 < jr = 0.0237: congestion, RFC 4960's halving
        assert!(jr > 1.0 / 60.0 && jr < 1.0 / 30.0, "{jr}");
        let mut c = w;
        assert_eq!(congested.on_loss(&mut c, &loss(ms(2000), LossKind::FastRetransmit), &[], 0), LossVerdict::Congestion);
        assert_eq!((c.cwnd, c.ssthresh), (30 * CHUNK as u64, 30 * CHUNK as u64));
        // the same ratio against a smaller window (k/w = 1/30 > jr): wireless, window kept
        let mut small = win(30);
        let mut j2 = congested.clone();
        j2.response = JsctpResponse::new(CHUNK as u64);
        assert_eq!(j2.on_loss(&mut small, &loss(ms(2000), LossKind::FastRetransmit), &[], 0), LossVerdict::NotCongestion);
        assert_eq!(small, win(30));
        // a larger k raises the bar: the 60-packet window's loss becomes wireless with k = 2 MSS
        let mut big_k = congested.clone();
        big_k.response = JsctpResponse::new(2 * CHUNK as u64);
        let mut w2 = w;
        assert_eq!(big_k.on_loss(&mut w2, &loss(ms(2000), LossKind::FastRetransmit), &[], 0), LossVerdict::NotCongestion);
        assert_eq!(w2, w);
        assert_eq!((congested.congestion, j2.wireless, big_k.wireless), (1, 1, 1));
        // a second loss within one RTT of the reduction: retransmit only
        assert_eq!(congested.on_loss(&mut c, &loss(ms(2050), LossKind::FastRetransmit), &[], 0), LossVerdict::NotCongestion);
        assert_eq!((c.cwnd, congested.same_rtt), (30 * CHUNK as u64, 1));
    }

    #[test]
    fn timeouts_collapse_on_congestion_and_resume_on_wireless() {
        let mut quiet = Jsctp::new(CHUNK as u64, CHUNK, false, true);
        let mut w = win(40);
        feed(&mut quiet, 0..41, |_| 3, &mut w, 1000); // no queue growth: every loss is wireless
        assert_eq!(quiet.on_loss(&mut w, &loss(ms(2000), LossKind::Timeout), &[], 0), LossVerdict::NotCongestion);
        assert_eq!((w.cwnd, w.ssthresh), (20 * CHUNK as u64, 20 * CHUNK as u64));
        let mut busy = Jsctp::new(CHUNK as u64, CHUNK, false, true);
        let mut w = win(60);
        feed(&mut busy, 0..61, |i| 9 * i, &mut w, 1000);
        assert_eq!(busy.on_loss(&mut w, &loss(ms(2000), LossKind::Timeout), &[], 0), LossVerdict::Congestion);
        assert_eq!((w.cwnd, w.ssthresh), (MTU, 30 * CHUNK as u64));
    }

    #[test]
    fn abe_sets_ssthresh_from_tabe() {
        // the receiver gets one 1456-byte packet every 10 ms: 145.6 kB/s; srtt 100 ms gives
        // ownd = 14560 B, whatever the window
        let mut abe = Jsctp::new(CHUNK as u64, CHUNK, true, true);
        for i in 0..2000 {
            abe.on_timestamp(
                &TimestampSample { tsn: i, sent_at: ms(10 * i), received_at: ms(10 * i + 40), bytes: CHUNK },
                Some(Dur::from_millis(100)),
            );
        }
        // the jitter ratio of a congested path, so that the loss is congestion
        let mut w = win(60);
        let mut c = Jsctp::new(CHUNK as u64, CHUNK, false, true);
        feed(&mut c, 0..61, |i| 9 * i, &mut w, 1000);
        abe.jr = c.jr.clone();
        let ownd = abe.ownd(&w, Some(Dur::from_millis(100)));
        assert!(ownd.abs_diff(14_560) < 300, "{ownd}");
        let mut w2 = w;
        assert_eq!(abe.on_loss(&mut w2, &loss(ms(2000), LossKind::FastRetransmit), &[], 0), LossVerdict::Congestion);
        assert_eq!((w2.cwnd, w2.ssthresh), (ownd, ownd));
        // plain JSCTP halves instead
        assert_eq!(c.ownd(&w, Some(Dur::from_millis(100))), 30 * CHUNK as u64);
    }
}
