//! QUIC's ACK frequency extension (draft-ietf-quic-ack-frequency-10): the sender asks the
//! receiver, with ACK_FREQUENCY frames, how many ack-eliciting packets it may take before it
//! acknowledges (the Ack-Eliciting Threshold), how long it may wait (Request Max Ack Delay)
//! and how much reordering it lets pass before acknowledging at once (the Reordering
//! Threshold); an IMMEDIATE_ACK frame asks for an ACK at once.
//!
//! Both ends are here: [`AckFrequency`], the sender's requests (fixed values from the scenario,
//! or the `window` policy that scales the threshold to the congestion window), and
//! [`Requested`], what the receiver applies; the connection (`conn.rs`) sends the frames and
//! asks [`Requested::ack_now`] on every ack-eliciting packet.

use super::ranges::RangeSet;
use super::wire::{self, GRANULARITY_NS, MAX_ACK_DELAY_NS};
use crate::time::Dur;

/// ACK_FREQUENCY's frame type (draft-ietf-quic-ack-frequency-10 §4).
pub const ACK_FREQUENCY: u64 = 0xaf;
/// IMMEDIATE_ACK's frame type (§5): one byte.
pub const IMMEDIATE_ACK: u64 = 0x1f;
/// The receiver's min_ack_delay transport parameter (§3): the smallest Request Max Ack
/// Delay it takes, kGranularity (1 ms), as quinn advertises.
pub const MIN_ACK_DELAY_NS: u64 = GRANULARITY_NS;
/// The largest threshold the `window` policy asks: one ACK at least per initial window of
/// ten packets (§8.2's burst mitigation without pacing).
pub const POLICY_MAX_THRESHOLD: u64 = 9;
/// How far (a fraction) the `window` policy's max_ack_delay may drift from the value last
/// requested before a new frame goes out (quinn's MAX_RTT_ERROR, 0.2).
const MAX_DELAY_DRIFT: f64 = 0.2;

/// What a flow's `quic.ack_frequency` asks of the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFrequencySpec {
    /// One ACK_FREQUENCY frame at the start with these values.
    Fixed { threshold: u64, max_ack_delay: Dur, reordering: u64 },
    /// The `window` policy: a threshold of a quarter of the smallest congestion window in
    /// packets (1 to [`POLICY_MAX_THRESHOLD`]), a max_ack_delay of min(25 ms, smoothed RTT)
    /// (at least min_ack_delay), sent again when either moves; `reordering` as given.
    Window { reordering: u64 },
}

/// The values of one ACK_FREQUENCY frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub seq: u64,
    pub threshold: u64,
    pub max_ack_delay: Dur,
    pub reordering: u64,
}

impl Request {
    /// Bytes of the frame: type (two bytes) and four variable-length integers.
    pub fn wire_len(&self) -> u32 {
        wire::varint_len(ACK_FREQUENCY)
            + wire::varint_len(self.seq)
            + wire::varint_len(self.threshold)
            + wire::varint_len(self.max_ack_delay.0 / 1_000)
            + wire::varint_len(self.reordering)
    }
}

/// The sender's side: the frames sent and the one in flight.
#[derive(Clone, Debug)]
pub struct AckFrequency {
    pub spec: AckFrequencySpec,
    /// Every frame sent, by sequence number (the receiver finds a frame's values here).
    pub sent: Vec<Request>,
    /// The frame in flight: its path, packet number and max_ack_delay; None once
    /// acknowledged or lost.
    pub in_flight: Option<(usize, u64, Dur)>,
    /// The receiver's max_ack_delay as far as the sender knows: RFC 9000's 25 ms, then that
    /// of the last frame acknowledged.
    pub peer_max_ack_delay: Dur,
    /// A frame was lost and is to be sent again.
    pub resend: bool,
    /// IMMEDIATE_ACK frames sent (with probes).
    pub immediate_acks: u64,
}

impl AckFrequency {
    pub fn new(spec: AckFrequencySpec) -> AckFrequency {
        AckFrequency {
            spec,
            sent: Vec::new(),
            in_flight: None,
            peer_max_ack_delay: Dur(MAX_ACK_DELAY_NS),
            resend: false,
            immediate_acks: 0,
        }
    }

    /// The values the sender wants now, given the smallest congestion window in packets and
    /// the smallest smoothed RTT of the paths in use.
    fn desired(&self, cwnd_packets: u64, srtt: Dur) -> (u64, Dur, u64) {
        match self.spec {
            AckFrequencySpec::Fixed { threshold, max_ack_delay, reordering } => (threshold, max_ack_delay, reordering),
            AckFrequencySpec::Window { reordering } => {
                let threshold = (cwnd_packets / 4).clamp(1, POLICY_MAX_THRESHOLD);
                let delay = Dur(srtt.0.clamp(MIN_ACK_DELAY_NS, MAX_ACK_DELAY_NS));
                (threshold, delay, reordering)
            }
        }
    }

    /// The frame to send now, if any: the first one, one whose packet was lost (again with
    /// the latest values), or, under the `window` policy, one when the threshold changed or
    /// the delay drifted by more than a fifth.
    pub fn due(&mut self, cwnd_packets: u64, srtt: Dur) -> Option<Request> {
        let (threshold, max_ack_delay, reordering) = self.desired(cwnd_packets, srtt);
        let send = match self.sent.last() {
            None => true,
            Some(_) if self.resend => true,
            Some(last) => {
                let drift = (max_ack_delay.0 as f64 / last.max_ack_delay.0 as f64 - 1.0).abs();
                last.threshold != threshold || drift > MAX_DELAY_DRIFT
            }
        };
        if !send {
            return None;
        }
        self.resend = false;
        let r = Request { seq: self.sent.len() as u64, threshold, max_ack_delay, reordering };
        self.sent.push(r);
        Some(r)
    }

    /// The max_ack_delay loss recovery uses (§6): the receiver's and that of a frame in
    /// flight, the larger.
    pub fn pto_max_ack_delay(&self) -> Dur {
        self.in_flight.map_or(self.peer_max_ack_delay, |(_, _, d)| d.max(self.peer_max_ack_delay))
    }

    /// The packet carrying the frame in flight was acknowledged (true) or lost (false).
    pub fn settled(&mut self, acked: bool) {
        if let Some((_, _, d)) = self.in_flight.take() {
            if acked {
                self.peer_max_ack_delay = d;
            } else {
                self.resend = true;
            }
        }
    }
}

/// The receiver's side: the values of the latest frame received (the connection's; its
/// packet number spaces, one per path, each count their own packets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requested {
    pub seq: u64,
    pub threshold: u64,
    pub max_ack_delay: Dur,
    pub reordering: u64,
}

impl Requested {
    /// Takes frame `r` unless an equal or later one was taken (§4: frames may arrive
    /// reordered; the largest sequence number wins).
    pub fn take(current: Option<Requested>, r: &Request) -> Requested {
        match current {
            Some(c) if c.seq >= r.seq => c,
            _ => Requested { seq: r.seq, threshold: r.threshold, max_ack_delay: r.max_ack_delay, reordering: r.reordering },
        }
    }

    /// Whether the packet just received calls for an ACK at once (§6): more ack-eliciting
    /// packets than the threshold since the last ACK (`unacked`, this one included), or
    /// reordering past the threshold: a packet missing among those not yet reported lies
    /// `reordering` or more below the largest received, the largest reported being the last
    /// ACK's largest acknowledged less `reordering` - 1 (§6.2). With a threshold of 1 a packet
    /// that arrives below the largest (RFC 9000 §13.2.1's out-of-order packet) is
    /// acknowledged at once too.
    pub fn ack_now(&self, unacked: u64, pn: u64, largest: u64, reported: Option<u64>, received: &RangeSet) -> bool {
        if unacked > self.threshold {
            return true;
        }
        let r = self.reordering;
        if r == 0 {
            return false;
        }
        if r == 1 && pn < largest {
            return true;
        }
        let from = match reported {
            Some(l) => (l + 2).saturating_sub(r),
            None => 0,
        };
        match received.first_gap(from, largest) {
            Some((missing, _)) => largest - missing >= r,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(ranges: &[(u64, u64)]) -> RangeSet {
        let mut s = RangeSet::default();
        for &(a, b) in ranges {
            s.insert(a, b);
        }
        s
    }

    fn req(threshold: u64, reordering: u64) -> Requested {
        Requested { seq: 0, threshold, max_ack_delay: Dur::from_millis(25), reordering }
    }

    #[test]
    fn the_threshold_counts_packets_beyond_it() {
        let r = req(10, 1);
        let rx = received(&[(0, 11)]);
        assert!(!r.ack_now(10, 9, 9, None, &rx));
        assert!(r.ack_now(11, 10, 10, None, &rx));
        // threshold 0: every ack-eliciting packet
        assert!(req(0, 1).ack_now(1, 0, 0, None, &received(&[(0, 1)])));
    }

    #[test]
    fn a_reordering_threshold_lets_small_gaps_pass() {
        // 0..=4 acknowledged; 5 missing, 6 and 7 arrive
        let rx = received(&[(0, 5), (6, 8)]);
        // threshold 1: at once on the gap
        assert!(req(10, 1).ack_now(1, 6, 6, Some(4), &received(&[(0, 5), (6, 7)])));
        // threshold 3: 7 - 5 = 2 < 3, nothing yet; with 8 it is 3
        assert!(!req(10, 3).ack_now(2, 7, 7, Some(4), &rx));
        assert!(req(10, 3).ack_now(3, 8, 8, Some(4), &received(&[(0, 5), (6, 9)])));
        // threshold 0: never for reordering
        assert!(!req(10, 0).ack_now(3, 8, 8, Some(4), &received(&[(0, 5), (6, 9)])));
        // a hole already reported (below the largest reported) does not count again
        let rx = received(&[(0, 5), (6, 20)]);
        assert!(!req(10, 3).ack_now(2, 19, 19, Some(17), &rx));
    }

    #[test]
    fn later_frames_win_whatever_their_order() {
        let f = |seq, threshold| Request { seq, threshold, max_ack_delay: Dur::from_millis(25), reordering: 1 };
        let r = Requested::take(None, &f(1, 5));
        assert_eq!(Requested::take(Some(r), &f(0, 2)).threshold, 5);
        assert_eq!(Requested::take(Some(r), &f(2, 7)).threshold, 7);
    }

    #[test]
    fn the_window_policy_follows_the_window_and_the_rtt() {
        let mut a = AckFrequency::new(AckFrequencySpec::Window { reordering: 1 });
        let r = a.due(10, Dur::from_millis(100)).expect("the first frame");
        assert_eq!((r.seq, r.threshold, r.max_ack_delay), (0, 2, Dur::from_millis(25)));
        assert_eq!(a.due(11, Dur::from_millis(100)), None, "same threshold, same delay");
        let r = a.due(40, Dur::from_millis(100)).expect("the window grew");
        assert_eq!((r.seq, r.threshold), (1, POLICY_MAX_THRESHOLD));
        let r = a.due(400, Dur::from_millis(10)).expect("the RTT fell below 25 ms");
        assert_eq!((r.threshold, r.max_ack_delay), (POLICY_MAX_THRESHOLD, Dur::from_millis(10)));
        assert_eq!(a.due(400, Dur::from_millis(11)), None, "a drift of a tenth");
        assert_eq!(r.wire_len(), 2 + 1 + 1 + 2 + 1);
    }

    #[test]
    fn recovery_uses_the_larger_delay_while_a_frame_is_in_flight() {
        let mut a = AckFrequency::new(AckFrequencySpec::Fixed { threshold: 10, max_ack_delay: Dur::from_millis(50), reordering: 1 });
        assert_eq!(a.pto_max_ack_delay(), Dur::from_millis(25));
        let r = a.due(10, Dur::from_millis(100)).expect("the first frame");
        a.in_flight = Some((0, 0, r.max_ack_delay));
        assert_eq!(a.pto_max_ack_delay(), Dur::from_millis(50));
        a.settled(false);
        assert_eq!(a.pto_max_ack_delay(), Dur::from_millis(25), "lost: the receiver keeps its delay");
        let r = a.due(10, Dur::from_millis(100)).expect("sent again");
        assert_eq!(r.seq, 1);
        a.in_flight = Some((0, 5, r.max_ack_delay));
        a.settled(true);
        assert_eq!(a.pto_max_ack_delay(), Dur::from_millis(50));
        assert_eq!(a.due(10, Dur::from_millis(100)), None);
    }
}
