//! The delivery-rate estimator and the sender's pacing, kept only for a controller that runs
//! on rate samples (`CongestionControl::wants_rate_samples`, BBR).
//!
//! The estimator is draft-cheng-iccrg-delivery-rate-estimation-02 as Linux 6.x's
//! `net/ipv4/tcp_rate.c` implements it: each transmission records the connection's delivered
//! count, when it last grew, the send time of the first packet of the current flight and
//! whether the sender was application-limited; each packet newly acknowledged (cumulatively or
//! by SACK) offers its record, and the one sent last (ties broken by sequence) becomes the
//! ACK's sample: delivered = delivered now - delivered then, over the longer of the send
//! interval (its send time less its flight's first) and the ACK interval (now less the
//! delivered time it recorded). A sample shorter than the minimum RTT is discarded. The
//! sender is marked application-limited when it has less than a segment to send and room in
//! the window (Linux `tcp_rate_check_app_limited`), until that flight is delivered.
//!
//! Pacing is Linux's earliest-departure-time pacing (`tcp_update_skb_after_send`,
//! `tcp_pacing_check`): each data segment moves the next departure time on by its length at
//! the pacing rate, less up to half of that for time the sender lost idling, from the tenth
//! segment on.

use crate::cc::RateSample;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// What a transmission recorded (Linux's `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug)]
pub struct Record {
    delivered: u64,
    /// None once the packet was SACKed (it offers no second sample).
    delivered_time: Option<SimTime>,
    first_sent: SimTime,
    app_limited: bool,
}

/// Pacing starts once this many data segments were sent (Linux `tcp_update_skb_after_send`).
const PACING_FROM_SEGMENT: u64 = 10;

#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    /// One record per segment of the scoreboard, in the same order.
    pub recs: VecDeque<Record>,
    /// Packets delivered and marked lost since the start (`tp->delivered`, `tp->lost`).
    pub delivered: u64,
    pub lost: u64,
    /// When `delivered` last grew (`tp->delivered_mstamp`).
    pub delivered_time: SimTime,
    /// Send time of the first packet of the current flight (`tp->first_tx_mstamp`).
    first_sent: SimTime,
    /// Non-zero: application-limited until `delivered` passes it (`tp->app_limited`).
    app_limited: u64,
    // the sample this ACK builds (`struct rate_sample`)
    rs_prior_delivered: u64,
    rs_prior_time: Option<SimTime>,
    rs_app_limited: bool,
    rs_last_end_seq: u64,
    rs_send_interval: Dur,
    /// Pacing rate, bytes per second (0: unpaced), and the next departure time.
    pub pacing_rate: u64,
    next_send: SimTime,
    data_segs_out: u64,
    /// Set while pacing holds back a segment the window allows: when it may leave.
    pub pace_deadline: Option<SimTime>,
}

impl RateEstimator {
    fn record(&mut self, now: SimTime, nothing_outstanding: bool) -> Record {
        if nothing_outstanding {
            self.first_sent = now;
            self.delivered_time = now;
        }
        Record {
            delivered: self.delivered,
            delivered_time: Some(self.delivered_time),
            first_sent: self.first_sent,
            app_limited: self.app_limited != 0,
        }
    }

    /// A new segment is sent (`tcp_rate_skb_sent`); it goes to the back of the scoreboard.
    pub fn on_new_segment(&mut self, now: SimTime, nothing_outstanding: bool) {
        let r = self.record(now, nothing_outstanding);
        self.recs.push_back(r);
    }

    /// Segment `i` of the scoreboard is sent again.
    pub fn on_resent(&mut self, i: usize, now: SimTime) {
        self.recs[i] = self.record(now, false);
    }

    /// Segment `i` (sent at `sent_at`, ending at `end_seq`) is newly delivered
    /// (`tcp_rate_skb_delivered`); `sacked`: by SACK, so it stays on the scoreboard.
    pub fn on_delivered(&mut self, rec: &mut Record, sent_at: SimTime, end_seq: u64, sacked: bool) {
        let Some(dt) = rec.delivered_time else { return };
        let later = sent_at > self.first_sent || (sent_at == self.first_sent && end_seq > self.rs_last_end_seq);
        if self.rs_prior_delivered == 0 || later {
            self.rs_prior_delivered = rec.delivered;
            self.rs_prior_time = Some(dt);
            self.rs_app_limited = rec.app_limited;
            self.rs_last_end_seq = end_seq;
            self.first_sent = sent_at;
            self.rs_send_interval = sent_at.since(rec.first_sent);
        }
        if sacked {
            rec.delivered_time = None;
        }
    }

    /// The ACK's sample (`tcp_rate_gen`), after `delivered` and `lost` took its packets.
    pub fn sample(
        &mut self,
        now: SimTime,
        acked_sacked: u64,
        losses: u64,
        prior_in_flight: u64,
        min_rtt: Option<Dur>,
        rtt: Option<Dur>,
    ) -> RateSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample { acked_sacked, losses, prior_in_flight, rtt, ..RateSample::default() };
        if let Some(prior_time) = self.rs_prior_time.take() {
            rs.prior_delivered = self.rs_prior_delivered;
            rs.is_app_limited = self.rs_app_limited;
            rs.delivered = self.delivered - self.rs_prior_delivered;
            let interval = self.rs_send_interval.max(now.since(prior_time));
            if min_rtt.is_none_or(|m| interval >= m) {
                rs.interval = Some(interval);
            }
        }
        self.rs_prior_delivered = 0;
        self.rs_app_limited = false;
        self.rs_last_end_seq = 0;
        rs
    }

    /// Marks the sender application-limited (`tcp_rate_check_app_limited` when its test
    /// holds, or a controller's request) until the packets now in flight are delivered.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// When the next segment may leave.
    pub fn next_send(&self) -> SimTime {
        self.next_send
    }

    /// Whether pacing holds back a segment at `now` (and if so, until when).
    #[inline]
    pub fn holds(&mut self, now: SimTime) -> bool {
        if self.pacing_rate > 0 && self.next_send > now {
            self.pace_deadline = Some(self.next_send);
            return true;
        }
        self.pace_deadline = None;
        false
    }

    /// A data segment of `len` bytes left at `now`.
    pub fn on_data_sent(&mut self, now: SimTime, len: u64) {
        self.data_segs_out += 1;
        let prior = self.next_send;
        self.next_send = self.next_send.max(now);
        if self.pacing_rate > 0 && self.data_segs_out >= PACING_FROM_SEGMENT {
            let len_ns = (len as u128 * 1_000_000_000 / self.pacing_rate as u128) as u64;
            let credit = self.next_send.0 - prior.0;
            self.next_send = SimTime(self.next_send.0 + len_ns - (len_ns / 2).min(credit));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }

    #[test]
    fn the_sample_is_the_packet_sent_last_over_the_longer_interval() {
        let mut r = RateEstimator::default();
        // a flight of 4 packets sent 1 ms apart from t = 0, each acknowledged 100 ms later
        for k in 0..4 {
            r.on_new_segment(t(k), k == 0);
        }
        let mut delivered = 0;
        for k in 0..4u64 {
            let mut rec = r.recs.pop_front().unwrap();
            r.on_delivered(&mut rec, t(k), (k + 1) * 1000, false);
            r.delivered += 1;
            delivered += 1;
            let rs = r.sample(t(100 + k), 1, 0, 4 - k, Some(Dur::from_millis(50)), None);
            assert_eq!(rs.prior_delivered, 0);
            assert_eq!(rs.delivered, delivered);
            // send interval k ms, ACK interval 100 + k ms since the flight's delivered time (0)
            assert_eq!(rs.interval, Some(Dur::from_millis(100 + k)));
        }
        // an interval below the minimum RTT gives no sample
        r.on_new_segment(t(200), true);
        let mut rec = r.recs.pop_front().unwrap();
        r.on_delivered(&mut rec, t(200), 5000, false);
        r.delivered += 1;
        assert_eq!(r.sample(t(210), 1, 0, 1, Some(Dur::from_millis(50)), None).interval, None);
    }

    #[test]
    fn a_sacked_packet_offers_one_sample_and_app_limited_marks_clear() {
        let mut r = RateEstimator::default();
        r.mark_app_limited(0);
        r.on_new_segment(t(0), true);
        r.on_new_segment(t(1), false);
        let mut rec = r.recs[1];
        r.on_delivered(&mut rec, t(1), 2000, true);
        r.delivered += 1;
        let rs = r.sample(t(101), 1, 0, 2, None, None);
        assert!(rs.is_app_limited);
        assert_eq!(rs.delivered, 1);
        // once SACKed, the cumulative ACK of the same packet samples nothing from it
        r.on_delivered(&mut rec, t(1), 2000, false);
        let mut first = r.recs[0];
        r.on_delivered(&mut first, t(0), 1000, false);
        r.delivered += 1;
        let rs = r.sample(t(102), 1, 0, 1, None, None);
        assert_eq!(rs.prior_delivered, 0);
        assert!(!r.is_app_limited(), "delivered passed the mark");
    }

    /// Two flights: P0..P3 sent at 0..3 ms; P0 acknowledged at 100 ms (P4 sent then), P1 at
    /// 101 ms (the sender then marks itself application-limited and sends P5 at 102 ms).
    /// Returns the estimator and the records of P4 and P5 (P4 sent with 1 delivered and not
    /// application-limited, P5 with 2 delivered and application-limited).
    fn two_flights() -> (RateEstimator, Record, Record) {
        let mut r = RateEstimator::default();
        for k in 0..4 {
            r.on_new_segment(t(k), k == 0);
        }
        for k in 0..2u64 {
            let mut rec = r.recs.pop_front().unwrap();
            r.on_delivered(&mut rec, t(k), (k + 1) * 1000, false);
            r.delivered += 1;
            r.sample(t(100 + k), 1, 0, 4 - k, None, None);
            if k == 0 {
                r.on_new_segment(t(100), false);
            }
        }
        r.mark_app_limited(3);
        r.on_new_segment(t(102), false);
        let p5 = r.recs.pop_back().unwrap();
        let p4 = r.recs.pop_back().unwrap();
        assert!(!p4.app_limited && p5.app_limited);
        (r, p4, p5)
    }

    #[test]
    fn one_ack_for_several_packets_samples_the_one_sent_last_in_either_order() {
        // the ACK at 200 ms SACKs P4 and P5 (sent at 100 and 102 ms), in either order
        for p5_first in [false, true] {
            let (mut r, mut p4, mut p5) = two_flights();
            let (p4_sent, p5_sent) = (t(100), t(102));
            if p5_first {
                r.on_delivered(&mut p5, p5_sent, 6000, true);
                r.on_delivered(&mut p4, p4_sent, 5000, true);
            } else {
                r.on_delivered(&mut p4, p4_sent, 5000, true);
                r.on_delivered(&mut p5, p5_sent, 6000, true);
            }
            r.delivered += 2;
            let rs = r.sample(t(200), 2, 0, 4, None, None);
            // P5's record: 2 delivered when it left, application-limited, its flight's first
            // send at 1 ms (P1, the last sampled) and delivered time 101 ms
            assert_eq!(rs.prior_delivered, 2, "P5 first: {p5_first}");
            assert_eq!(rs.delivered, 2);
            assert!(rs.is_app_limited, "the sample is P5's, which left application-limited");
            // send interval 102 - 1 = 101 ms, ACK interval 200 - 101 = 99 ms: the longer
            assert_eq!(rs.interval, Some(Dur::from_millis(101)));
        }
    }

    #[test]
    fn the_app_limited_mark_is_the_sampled_packets_not_any_packets() {
        // P4 (not application-limited) is the newest delivered: the sample is not limited,
        // although P5, still in flight, is
        let (mut r, mut p4, _) = two_flights();
        r.on_delivered(&mut p4, t(100), 5000, false);
        r.delivered += 1;
        let rs = r.sample(t(200), 1, 0, 4, None, None);
        assert_eq!(rs.prior_delivered, 1);
        assert!(!rs.is_app_limited);
        assert!(r.is_app_limited(), "the mark holds until 2 + 3 packets are delivered");
        // then P5: application-limited
        let (mut r, _, mut p5) = two_flights();
        r.on_delivered(&mut p5, t(102), 6000, false);
        r.delivered += 1;
        assert!(r.sample(t(200), 1, 0, 4, None, None).is_app_limited);
    }

    #[test]
    fn packets_sent_at_the_same_time_sample_the_higher_sequence() {
        let mut r = RateEstimator::default();
        r.on_new_segment(t(0), true);
        r.delivered = 7;
        r.on_new_segment(t(0), false);
        let mut a = r.recs[0];
        let mut b = r.recs[1];
        r.on_delivered(&mut b, t(0), 2000, false);
        r.on_delivered(&mut a, t(0), 1000, false);
        r.delivered += 2;
        assert_eq!(r.sample(t(100), 2, 0, 2, None, None).prior_delivered, 7);
    }

    #[test]
    fn pacing_spaces_segments_at_the_rate_after_the_tenth() {
        let mut r = RateEstimator { pacing_rate: 1_000_000, ..Default::default() };
        for _ in 0..9 {
            assert!(!r.holds(t(0)));
            r.on_data_sent(t(0), 1000);
        }
        assert_eq!(r.next_send(), t(0));
        r.on_data_sent(t(0), 1000);
        // 1000 bytes at 1 MB/s: 1 ms
        assert_eq!(r.next_send(), t(1));
        assert!(r.holds(t(0)));
        assert_eq!(r.pace_deadline, Some(t(1)));
        // sent 4 ms late: half of the next slot is taken back as credit
        r.on_data_sent(t(5), 1000);
        assert_eq!(r.next_send(), SimTime(t(5).0 + 500_000));
    }
}
