//! RACK: time-based loss detection (RFC 8985 §6), as Linux's `tcp_rack_*`.
//!
//! RACK remembers the most recently *sent* segment that has been delivered (cumulatively
//! acknowledged or SACKed) and the RTT it took. A segment still unacknowledged that was sent
//! before it, and longer ago than that RTT plus a reordering window, is lost. The rule is
//! about send times, not sequence numbers, so it applies to retransmissions too: a
//! retransmission that was lost is found as soon as something sent after it is delivered,
//! without waiting for the retransmission timer. The owner (the sender's scoreboard) asks
//! [`Rack::check`] for each segment it may have to mark, taking them in send order from a
//! [`SendOrder`], so an ACK costs amortised O(1) however many segments are outstanding.

use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// The state of RFC 8985 §6.1: RACK.xmit_ts, RACK.end_seq, RACK.rtt, and whether reordering
/// was ever seen.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rack {
    xmit_ts: Option<SimTime>,
    end_seq: u64,
    rtt: Dur,
    reord_seen: bool,
    /// RFC 8985 RACK.reo_wnd_mult − 1 (steps added by D-SACKs), RACK.reo_wnd_persist, and
    /// the end of the round trip in which the last step was added.
    reo_steps: u32,
    reo_persist: u32,
    dsack_round_end: Option<u64>,
}

/// Recoveries a widened reordering window lasts without a new D-SACK (RFC 8985).
pub const REO_WND_PERSIST: u32 = 16;

/// What RACK says of one unacknowledged segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not sent before the most recently sent delivered segment: nothing to say yet.
    NotYet,
    /// Lost.
    Lost,
    /// Lost unless delivered within this time (arm the reordering timer).
    Wait(Dur),
}

impl Rack {
    /// A segment ending at `end_seq`, last sent at `sent_at`, was newly delivered at `now`
    /// (RFC 8985 §6.2 step 2). `retransmitted`: it was sent more than once, so the ACK may be
    /// for an earlier copy; as Linux does without timestamps, such a sample is ignored when
    /// it is shorter than the minimum RTT.
    #[inline]
    pub fn on_delivered(&mut self, sent_at: SimTime, end_seq: u64, retransmitted: bool, now: SimTime, min_rtt: Option<Dur>) {
        let rtt = now.since(sent_at);
        if retransmitted && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        if self.sent_after(sent_at, end_seq) {
            self.xmit_ts = Some(sent_at);
            self.end_seq = end_seq;
            self.rtt = rtt;
        }
    }

    /// Records reordering (a segment below one already delivered arrived later): from then on
    /// the reordering window is kept open in recovery too.
    pub fn on_reordering(&mut self) {
        self.reord_seen = true;
    }

    /// A D-SACK arrived (RFC 8985 §6.2 step 4): reordering is seen, the window multiplier
    /// grows by one at most once per round trip (the round ends when `snd_nxt` at this D-SACK
    /// is cumulatively acknowledged), and the widened window persists for 16 recoveries.
    pub fn on_dsack(&mut self, snd_una: u64, snd_nxt: u64) {
        self.reord_seen = true;
        if self.dsack_round_end.is_none_or(|end| snd_una >= end) {
            self.reo_steps = self.reo_steps.saturating_add(1);
            self.dsack_round_end = Some(snd_nxt);
        }
        self.reo_persist = REO_WND_PERSIST;
    }

    /// A recovery began: after 16 without a D-SACK the multiplier returns to one.
    pub fn on_recovery(&mut self) {
        if self.reo_persist > 0 {
            self.reo_persist -= 1;
            if self.reo_persist == 0 {
                self.reo_steps = 0;
            }
        }
    }

    /// RACK.reo_wnd_mult.
    pub fn reo_wnd_mult(&self) -> u64 {
        1 + self.reo_steps as u64
    }

    /// True if (t, seq) is later than RACK's segment: sent later, or at the same time with a
    /// higher end (RFC 8985 RACK_sent_after).
    fn sent_after(&self, t: SimTime, end_seq: u64) -> bool {
        match self.xmit_ts {
            None => true,
            Some(x) => t > x || (t == x && end_seq > self.end_seq),
        }
    }

    /// The reordering window (RFC 8985 §6.2 step 4, Linux `tcp_rack_reo_wnd`): zero in
    /// recovery or once DupThresh segments are SACKed, unless reordering was seen; otherwise a
    /// quarter of the minimum RTT times the multiplier, at most SRTT.
    pub fn reo_wnd(&self, in_recovery: bool, sacked_segments: u64, dup_thresh: u64, min_rtt: Option<Dur>, srtt: Option<Dur>) -> Dur {
        if !self.reord_seen && (in_recovery || sacked_segments >= dup_thresh) {
            return Dur::ZERO;
        }
        let q = min_rtt.map_or(0, |m| m.0 / 4).saturating_mul(self.reo_wnd_mult());
        Dur(q.min(srtt.map_or(u64::MAX, |s| s.0)))
    }

    /// Whether a segment not yet delivered, ending at `end_seq` and last sent at `sent_at`, is
    /// lost at `now` (RFC 8985 §6.2 step 5).
    pub fn check(&self, sent_at: SimTime, end_seq: u64, now: SimTime, reo_wnd: Dur) -> Verdict {
        let Some(x) = self.xmit_ts else { return Verdict::NotYet };
        let before = sent_at < x || (sent_at == x && end_seq < self.end_seq);
        if !before {
            return Verdict::NotYet;
        }
        let deadline = sent_at + self.rtt + reo_wnd;
        if deadline <= now {
            Verdict::Lost
        } else {
            Verdict::Wait(deadline.since(now))
        }
    }

    pub fn active(&self) -> bool {
        self.xmit_ts.is_some()
    }
}

/// One transmission of a segment: when it left, and which segment it was, numbered from the
/// first segment the sender ever sent (the number survives the scoreboard dropping
/// acknowledged segments from its front). Ordered by (time, number), which for segments is
/// the order of RFC 8985's RACK_sent_after (the same time and a higher end is later).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sent {
    pub at: SimTime,
    pub seg: u64,
}

/// The transmissions RACK may still have to judge, in send order, for a scan that stops
/// where the verdicts stop mattering: the owner's segments never sent again (in sequence
/// order, which is their send order) from `fresh_from` on, merged with the resends held here.
///
/// [`Rack::check`] calls a segment lost when it was sent before RACK's segment and its send
/// time plus RTT plus the reordering window has passed. In send order the segments sent
/// before RACK's come first, and among them the lost ones first (their deadlines grow with
/// the send time): so the scan takes the oldest transmissions until one is not yet overdue,
/// and the reordering timer is the deadline of the newest one still sent before RACK's.
///
/// Entries are removed lazily: the owner says for each entry met whether its segment is
/// still a candidate sent at that time (not acknowledged, not SACKed, not lost and awaiting a
/// retransmission, not sent again since), and drops those that are not. A retransmission
/// enters again at its new time; an owner that makes segments candidates again with their old
/// times (undoing a loss marking) must `rebuild` the order from its scoreboard.
///
/// `early` holds the transmissions already found to be sent before RACK's segment (of
/// either kind), `later` the resends not yet found so; every entry of `early` precedes every
/// entry of `later` and every segment from `fresh_from` on, and each queue is sorted. RACK's
/// segment only moves later (RFC 8985 updates it only for a segment sent after it), so a
/// transmission joins `early` at most once, and leaves it at most once.
#[derive(Debug, Default)]
pub struct SendOrder {
    pub early: VecDeque<Sent>,
    pub later: VecDeque<Sent>,
    /// The first segment (by number) not yet taken into `early` among those never sent again;
    /// the ones below it are in `early`, or were passed over as no candidates (SACKed, lost
    /// and awaiting a retransmission, or sent again).
    pub fresh_from: u64,
}

impl SendOrder {
    /// A resend at `e.at`, which is the latest time in the order (times only grow): it goes at
    /// the back, or just before the entries of the same instant with higher numbers.
    #[inline]
    pub fn push(&mut self, e: Sent) {
        let q = if self.early.back().is_some_and(|b| e < *b) { &mut self.early } else { &mut self.later };
        let mut k = q.len();
        while k > 0 && q[k - 1] > e {
            k -= 1;
        }
        if k == q.len() {
            q.push_back(e);
        } else {
            q.insert(k, e);
        }
    }

    /// Drops the front entries of segments numbered below `first` (cumulatively acknowledged):
    /// in the usual case the oldest transmissions are the ones acknowledged, so the order
    /// stays as long as what is in flight.
    #[inline]
    pub fn drop_acked(&mut self, first: u64) {
        while self.later.front().is_some_and(|e| e.seg < first) {
            self.later.pop_front();
        }
        while self.early.front().is_some_and(|e| e.seg < first) {
            self.early.pop_front();
        }
    }

    pub fn len(&self) -> usize {
        self.early.len() + self.later.len()
    }

    pub fn is_empty(&self) -> bool {
        self.early.is_empty() && self.later.is_empty()
    }

    pub fn clear(&mut self) {
        self.early.clear();
        self.later.clear();
    }

    /// Starts again from these resends (in any order) and the segments never sent again from
    /// `fresh_from` on; the next scan moves to `early` those sent before RACK's segment.
    pub fn rebuild(&mut self, resent: impl Iterator<Item = Sent>, fresh_from: u64) {
        self.early.clear();
        self.later.clear();
        self.later.extend(resent);
        self.later.make_contiguous().sort_unstable();
        self.fresh_from = fresh_from;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Controller;
    use crate::net::{AckHeader, SackBlock};
    use crate::transport::tcp::{CaState, SenderConfig, TcpSender, TxSegment};

    const MSS: u64 = 1000;

    fn ms(x: u64) -> SimTime {
        SimTime(Dur::from_millis(x).0)
    }

    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_the_rtt_plus_window() {
        let mut r = Rack::default();
        assert_eq!(r.check(ms(0), 1000, ms(500), Dur::ZERO), Verdict::NotYet);
        // segment 2 (sent at 10 ms) delivered at 110 ms
        r.on_delivered(ms(10), 3000, false, ms(110), None);
        // segment 1, sent at 5 ms, is overdue at 105 ms + window
        assert_eq!(r.check(ms(5), 2000, ms(110), Dur::ZERO), Verdict::Lost);
        assert_eq!(r.check(ms(5), 2000, ms(104), Dur::from_millis(25)), Verdict::Wait(Dur::from_millis(26)));
        // a segment sent after it says nothing
        assert_eq!(r.check(ms(20), 4000, ms(500), Dur::ZERO), Verdict::NotYet);
    }

    #[test]
    fn an_ack_too_fast_for_a_retransmission_is_for_the_original() {
        let mut r = Rack::default();
        r.on_delivered(ms(10), 3000, false, ms(110), Some(Dur::from_millis(100)));
        // retransmitted at 200 ms, acknowledged at 210 ms: the original arrived
        r.on_delivered(ms(200), 1000, true, ms(210), Some(Dur::from_millis(100)));
        assert_eq!(r.check(ms(150), 5000, ms(400), Dur::ZERO), Verdict::NotYet);
    }

    #[test]
    fn the_reordering_window_closes_in_recovery() {
        let r = Rack::default();
        let min = Some(Dur::from_millis(40));
        assert_eq!(r.reo_wnd(false, 0, 3, min, min), Dur::from_millis(10));
        assert_eq!(r.reo_wnd(true, 0, 3, min, min), Dur::ZERO);
        assert_eq!(r.reo_wnd(false, 3, 3, min, min), Dur::ZERO);
        let mut r = r;
        r.on_reordering();
        assert_eq!(r.reo_wnd(true, 5, 3, min, min), Dur::from_millis(10));
    }

    fn sender(rack: bool) -> TcpSender {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, rack, tlp: false, ..SenderConfig::default() };
        TcpSender::new(&cfg, Controller::by_name("reno").unwrap())
    }

    fn ack(n: u64, sacks: &[(u64, u64)]) -> AckHeader {
        let mut h = AckHeader::new(n, 1 << 30);
        for &(a, b) in sacks {
            h.push_sack(SackBlock { start: a, end: b });
        }
        h
    }

    fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    /// Segment 0 is lost, fast-retransmitted at 100 ms, and the retransmission is lost too.
    /// New data sent after it is SACKed at 200 ms: RACK finds the lost retransmission at once
    /// and sends it again, long before the retransmission timer would fire.
    fn lost_retransmission(rack: bool) -> (TcpSender, Vec<TxSegment>) {
        let mut s = sender(rack);
        s.write(40 * MSS);
        drain(&mut s, ms(0));
        // 1..=9 arrive; the ACKs come back at 100 ms
        for k in 1..=9 {
            s.on_ack(ms(100), &ack(0, &[(MSS, (k + 1) * MSS)]));
        }
        assert_eq!(s.state(), CaState::Recovery);
        let first = drain(&mut s, ms(100));
        assert_eq!(first[0].seq, 0, "fast retransmission");
        assert!(first.iter().skip(1).all(|t| !t.retx && t.seq >= 10 * MSS));
        // the retransmission of 0 is lost; the new data sent with it is SACKed 100 ms later
        let top = first.iter().map(|t| t.seq + t.len as u64).max().unwrap();
        s.on_ack(ms(200), &ack(0, &[(MSS, top)]));
        let again = drain(&mut s, ms(200));
        (s, again)
    }

    #[test]
    fn rack_detects_a_lost_retransmission_without_the_timer() {
        let (s, again) = lost_retransmission(true);
        assert_eq!(again.first().map(|t| (t.seq, t.retx)), Some((0, true)), "{again:?}");
        assert_eq!(s.stats.timeouts, 0);
        assert!(s.check_invariants().is_ok());
        // without RACK the sender waits for the timer
        let (s, again) = lost_retransmission(false);
        assert!(again.iter().all(|t| t.seq != 0), "{again:?}");
        assert!(s.rto_deadline().unwrap() > ms(200));
    }

    #[test]
    fn dsacks_widen_the_reordering_window_once_per_round_for_sixteen_recoveries() {
        let min = Some(Dur::from_millis(40));
        let srtt = Some(Dur::from_millis(100));
        let mut r = Rack::default();
        assert_eq!(r.reo_wnd(false, 0, 3, min, srtt), Dur::from_millis(10));
        // reordering seen: the window stays open in recovery, and grows by a step
        r.on_dsack(0, 10_000);
        assert_eq!(r.reo_wnd(true, 5, 3, min, srtt), Dur::from_millis(20));
        // a second D-SACK in the same round adds nothing; one in the next round does
        r.on_dsack(5_000, 12_000);
        assert_eq!(r.reo_wnd_mult(), 2);
        r.on_dsack(10_000, 20_000);
        assert_eq!(r.reo_wnd(false, 0, 3, min, srtt), Dur::from_millis(30));
        // at most SRTT
        for k in 0..20u64 {
            r.on_dsack(20_000 + k * 10_000, 30_000 + k * 10_000);
        }
        assert_eq!(r.reo_wnd(false, 0, 3, min, srtt), Dur::from_millis(100));
        // sixteen recoveries without a D-SACK reset the multiplier
        for _ in 0..15 {
            r.on_recovery();
        }
        assert!(r.reo_wnd_mult() > 1);
        r.on_recovery();
        assert_eq!(r.reo_wnd_mult(), 1);
    }
}
