//! Loss detection and congestion control of one packet number space, per RFC 9002: the
//! packets sent and not yet settled, ACK processing, the packet and time thresholds, the
//! probe timeout with its backoff, persistent congestion, and the window driven by one of
//! mpsim's controllers with RFC 9002 §7.3.2's recovery period, which an increase of the
//! peer's ECN-CE count starts as a loss does (RFC 9002 §7.1, B.7; `ecn.rs`).

use super::ecn::{EcnCounts, EcnSender, EcnVerdict};
use super::rtt::RttEstimator;
use super::wire::{PACKET_THRESHOLD, PERSISTENT_CONGESTION_THRESHOLD};
use crate::cc::{AckContext, CongestionEvent, Controller, LossContext, SubflowState, Window};
use crate::net::Ecn;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// A stream frame: bytes [offset, offset + len) of the stream.
pub type StreamRange = (u64, u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Outstanding,
    Acked,
    Lost,
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    sent_at: SimTime,
    /// Bytes counted in flight (the QUIC packet: the UDP payload).
    size: u32,
    /// The packet's first STREAM frame; `more`: further frames, in [`Recovery`]'s `more`.
    stream: Option<StreamRange>,
    more: bool,
    state: State,
    /// Sent ECT(0).
    ect0: bool,
}

/// What an ACK or a timer settled: stream frames acknowledged and lost.
#[derive(Debug, Default)]
pub struct Settled {
    pub acked: Vec<StreamRange>,
    pub lost: Vec<StreamRange>,
    /// Packet numbers declared lost, with their sizes.
    pub lost_packets: Vec<(u64, u32)>,
    /// The largest acknowledged packet was newly acknowledged (an RTT sample was taken).
    pub rtt_sample: bool,
    /// ECN validation failed on this ACK (ECN is off on the path from now on).
    pub ecn_failed: bool,
}

/// Counters of one space (one path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    pub packets_sent: u64,
    pub packets_acked: u64,
    pub packets_lost: u64,
    /// Probe timeouts that fired, and the probe packets they sent.
    pub ptos: u64,
    pub probes: u64,
    /// Recovery periods entered, and persistent congestion declared.
    pub congestion_events: u64,
    pub persistent_congestion: u64,
}

/// Sender-side recovery of one packet number space.
pub struct Recovery {
    pub rtt: RttEstimator,
    sent: VecDeque<Sent>,
    /// The STREAM frames beyond the first of outstanding packets that carry several, by
    /// packet number (ascending; emptied as they are settled).
    more: VecDeque<(u64, Box<[StreamRange]>)>,
    /// Packet number of `sent[0]`.
    base: u64,
    pub next_pn: u64,
    pub largest_acked: Option<u64>,
    pub bytes_in_flight: u64,
    ack_eliciting_in_flight: u64,
    last_ack_eliciting_at: SimTime,
    /// When the oldest packet below the largest acknowledged one crosses the time threshold.
    pub loss_time: Option<SimTime>,
    /// Consecutive probe timeouts without an ACK: the backoff's exponent.
    pub pto_count: u32,
    pub w: Window,
    pub cc: Controller,
    /// The largest packet number sent when the current recovery period began: packets
    /// numbered above it were sent during the period (RFC 9002 §7.3.2).
    recovery_start: Option<u64>,
    pub in_recovery: bool,
    /// One packet may go beyond the window as a recovery period begins (RFC 9002 §7.3.2:
    /// the retransmission of the lost data need not wait for the flight to drain).
    recovery_send: bool,
    pub max_ack_delay: Dur,
    pub stats: RecoveryStats,
    /// ECN on this path: the codepoint of its packets and the validation of the peer's counts.
    pub ecn: EcnSender,
}

impl Recovery {
    /// A space starting with the handshake's RTT, window `w` and controller `cc`.
    pub fn new(handshake_rtt: Dur, w: Window, cc: Controller, max_ack_delay: Dur) -> Recovery {
        Recovery {
            rtt: RttEstimator::new(handshake_rtt),
            sent: VecDeque::new(),
            more: VecDeque::new(),
            base: 0,
            next_pn: 0,
            largest_acked: None,
            bytes_in_flight: 0,
            ack_eliciting_in_flight: 0,
            last_ack_eliciting_at: SimTime::ZERO,
            loss_time: None,
            pto_count: 0,
            w,
            cc,
            recovery_start: None,
            in_recovery: false,
            recovery_send: false,
            max_ack_delay,
            stats: RecoveryStats::default(),
            ecn: EcnSender::new(false),
        }
    }

    /// Room in the window for a packet of `size` bytes (or the one packet allowed as a
    /// recovery period begins).
    pub fn can_send(&self, size: u32) -> bool {
        self.bytes_in_flight + size as u64 <= self.w.cwnd || self.recovery_send
    }

    /// The number the next packet takes.
    pub fn peek_pn(&self) -> u64 {
        self.next_pn
    }

    /// Records an ack-eliciting packet of `size` bytes carrying `stream`, sent with ECN
    /// codepoint `ecn` (the path's [`EcnSender::codepoint`]); returns its number.
    pub fn on_sent(&mut self, now: SimTime, size: u32, stream: Option<StreamRange>, probe: bool, ecn: Ecn) -> u64 {
        let pn = self.next_pn;
        self.next_pn += 1;
        self.sent.push_back(Sent { sent_at: now, size, stream, more: false, state: State::Outstanding, ect0: ecn == Ecn::Ect0 });
        self.ecn.on_sent(ecn);
        self.bytes_in_flight += size as u64;
        self.ack_eliciting_in_flight += 1;
        self.last_ack_eliciting_at = now;
        self.stats.packets_sent += 1;
        self.stats.probes += probe as u64;
        self.recovery_send = false;
        pn
    }

    /// The packet just sent (numbered `pn`, by [`Recovery::on_sent`]) carries `frames` beside its
    /// first STREAM frame (several STREAM frames in one packet, RFC 9000 §12.4).
    pub fn add_frames(&mut self, pn: u64, frames: Box<[StreamRange]>) {
        debug_assert_eq!(pn + 1, self.next_pn);
        self.sent.back_mut().expect("the packet just sent").more = true;
        self.more.push_back((pn, frames));
    }

    /// Appends the frames of packet `pn` beyond its first (taking them) to `out`.
    fn take_more(&mut self, pn: u64, out: &mut Vec<StreamRange>) {
        let i = self.more.partition_point(|m| m.0 < pn);
        debug_assert_eq!(self.more[i].0, pn);
        out.extend(std::mem::take(&mut self.more[i].1).iter());
        while self.more.front().is_some_and(|m| m.1.is_empty()) {
            self.more.pop_front();
        }
    }

    /// The first stream frame of the oldest outstanding packet (what a probe resends when there
    /// is nothing else).
    pub fn oldest_outstanding_stream(&self) -> Option<StreamRange> {
        self.sent.iter().find(|p| p.state == State::Outstanding).and_then(|p| p.stream)
    }

    fn settle(&mut self, i: usize, to: State) -> Sent {
        let p = &mut self.sent[i];
        debug_assert_eq!(p.state, State::Outstanding);
        p.state = to;
        self.bytes_in_flight -= p.size as u64;
        self.ack_eliciting_in_flight -= 1;
        *p
    }

    fn trim(&mut self) {
        while self.sent.front().is_some_and(|p| p.state != State::Outstanding) {
            self.sent.pop_front();
            self.base += 1;
        }
    }

    /// An ACK frame arrived: `ranges` (inclusive, largest first), the peer's `ack_delay` and
    /// its ECN counts (an ACK_ECN frame). `sibs` are the connection's paths for coupled
    /// controllers (empty for one path).
    pub fn on_ack(
        &mut self,
        now: SimTime,
        ranges: &[(u64, u64)],
        ack_delay: Dur,
        ecn: Option<EcnCounts>,
        sibs: &[SubflowState],
        me: usize,
    ) -> Settled {
        let mut out = Settled::default();
        let Some(&(_, largest)) = ranges.first() else { return out };
        if largest >= self.next_pn {
            return out; // acknowledges a packet never sent: ignored
        }
        let advances = self.largest_acked.is_none_or(|l| largest > l);
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));
        let prior_in_flight = self.bytes_in_flight;
        let mut largest_newly: Option<SimTime> = None;
        let mut grow_bytes = 0u64;
        let mut newly = 0u64;
        let (mut newly_ect0, mut largest_newly_pn) = (0u64, 0u64);
        for &(lo, hi) in ranges {
            let (lo, hi) = (lo.max(self.base), hi.min(self.next_pn - 1));
            if lo > hi {
                continue;
            }
            for pn in lo..=hi {
                let i = (pn - self.base) as usize;
                if self.sent[i].state != State::Outstanding {
                    continue;
                }
                let p = self.settle(i, State::Acked);
                self.stats.packets_acked += 1;
                newly += 1;
                newly_ect0 += p.ect0 as u64;
                largest_newly_pn = largest_newly_pn.max(pn);
                if pn == largest {
                    largest_newly = Some(p.sent_at);
                }
                out.acked.extend(p.stream);
                if p.more {
                    self.take_more(pn, &mut out.acked);
                }
                // RFC 9002 §7.3.2: packets sent before the recovery period began do not grow
                // the window
                if self.sent_in_period(pn) {
                    grow_bytes += p.size as u64;
                }
            }
        }
        if newly == 0 {
            return out;
        }
        // RFC 9002 B.7: an increase of the CE count is a congestion event unless the largest
        // acknowledged packet was sent in the current recovery period; packets it acknowledges
        // then neither grow the window nor end the new period
        match self.ecn.on_ack(ecn, newly_ect0, advances) {
            EcnVerdict::Congestion if self.sent_in_period(largest_newly_pn) => {
                self.ecn.reductions += 1;
                self.congestion_event(now, prior_in_flight, sibs, me);
                self.w.cwnd = self.w.cwnd.max(self.min_window());
                grow_bytes = 0;
            }
            EcnVerdict::Failed => out.ecn_failed = true,
            _ => {}
        }
        if let Some(sent_at) = largest_newly {
            let delay = ack_delay.min(self.max_ack_delay);
            self.rtt.update(now - sent_at, delay);
            self.cc.on_rtt_sample(self.rtt.latest, now);
            out.rtt_sample = true;
        }
        self.detect_lost(now, &mut out, sibs, me);
        // the acknowledgement of a packet sent during the period ends it: judged after loss
        // detection, so a period this very ACK began (its packets all sent before) goes on
        if self.in_recovery && self.sent_in_period(largest_newly_pn) {
            self.in_recovery = false;
            self.w = self.cc.on_recovery_exit(self.w);
            self.w.cwnd = self.w.cwnd.max(self.min_window());
        }
        let ctx = AckContext {
            now,
            bytes_acked: grow_bytes,
            in_flight: prior_in_flight,
            srtt: Some(self.rtt.smoothed),
            min_rtt: Some(self.rtt.min),
            subflows: sibs,
            me,
            received_at: now,
            cw_echo: false,
        };
        if self.cc.wants_deliveries() {
            self.cc.on_delivery(&ctx);
        }
        if self.cc.wants_every_ack() {
            self.w = self.cc.on_every_ack(self.w, &ctx);
        }
        if grow_bytes > 0 && !self.in_recovery {
            self.w = self.cc.on_ack(self.w, &ctx);
            self.w.cwnd = self.w.cwnd.max(self.min_window());
        }
        self.pto_count = 0;
        self.trim();
        out
    }

    /// RFC 9002 §6.1: declares lost the outstanding packets below the largest acknowledged
    /// one that are 3 packets older or sent longer than the loss delay ago; sets the loss
    /// time for the others below it.
    fn detect_lost(&mut self, now: SimTime, out: &mut Settled, sibs: &[SubflowState], me: usize) {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else { return };
        let loss_delay = self.rtt.loss_delay();
        let prior_in_flight = self.bytes_in_flight;
        let mut lost: Vec<(u64, SimTime)> = Vec::new();
        let end = (largest + 1).min(self.next_pn).saturating_sub(self.base) as usize;
        for i in 0..end.min(self.sent.len()) {
            let p = self.sent[i];
            if p.state != State::Outstanding {
                continue;
            }
            let pn = self.base + i as u64;
            if p.sent_at + loss_delay <= now || largest >= pn + PACKET_THRESHOLD {
                let p = self.settle(i, State::Lost);
                self.stats.packets_lost += 1;
                out.lost.extend(p.stream);
                if p.more {
                    self.take_more(pn, &mut out.lost);
                }
                out.lost_packets.push((pn, p.size));
                lost.push((pn, p.sent_at));
            } else {
                let t = p.sent_at + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l: SimTime| l.min(t)));
            }
        }
        if !lost.is_empty() {
            self.on_lost(now, &lost, prior_in_flight, sibs, me);
        }
    }

    /// RFC 9002 §7.3.2 and §7.6: a congestion event unless the loss falls in the current
    /// recovery period, and persistent congestion when the lost packets span more than three
    /// PTOs with nothing between them acknowledged.
    fn on_lost(&mut self, now: SimTime, lost: &[(u64, SimTime)], in_flight: u64, sibs: &[SubflowState], me: usize) {
        let largest_lost = lost.iter().map(|l| l.0).max().expect("some loss");
        if self.sent_in_period(largest_lost) {
            self.stats.congestion_events += 1;
            self.congestion_event(now, in_flight, sibs, me);
        }
        if self.persistent_congestion(lost) {
            self.stats.persistent_congestion += 1;
            let ctx = self.loss_context(now, in_flight, sibs, me);
            self.w = self.cc.on_congestion(self.w, CongestionEvent::Timeout, &ctx);
            self.w.cwnd = self.min_window();
            self.recovery_start = None;
            self.in_recovery = false;
            self.recovery_send = false;
        }
        self.w.cwnd = self.w.cwnd.max(self.min_window());
    }

    fn loss_context<'a>(&self, now: SimTime, in_flight: u64, sibs: &'a [SubflowState], me: usize) -> LossContext<'a> {
        LossContext {
            now,
            in_flight,
            srtt: Some(self.rtt.smoothed),
            min_rtt: Some(self.rtt.min),
            subflows: sibs,
            me,
            cw_echo: false,
            // RFC 9002 §7.3.2: a controller that halves halves the congestion window
            // (kLossReductionFactor 0.5 of it), not the bytes in flight
            halve_cwnd: true,
        }
    }

    /// RFC 9002 §7.3.2's OnCongestionEvent: a recovery period begins now, with the
    /// controller's fast-retransmit reaction (`in_flight`: bytes in flight before the ACK).
    fn congestion_event(&mut self, now: SimTime, in_flight: u64, sibs: &[SubflowState], me: usize) {
        // a packet was sent: the event is about one
        self.recovery_start = Some(self.next_pn - 1);
        self.in_recovery = true;
        self.recovery_send = true;
        let ctx = self.loss_context(now, in_flight, sibs, me);
        self.w = self.cc.on_congestion(self.w, CongestionEvent::FastRetransmit, &ctx);
    }

    /// Packet `pn` was sent after the current recovery period began (or there is none):
    /// RFC 9002 §7.3.2's InCongestionRecovery, by packet number, so a packet sent at the
    /// instant the period began counts as sent in it.
    fn sent_in_period(&self, pn: u64) -> bool {
        self.recovery_start.is_none_or(|r| pn > r)
    }

    /// RFC 9002's kMinimumWindow: two datagrams.
    fn min_window(&self) -> u64 {
        2 * self.w.mss
    }

    fn persistent_congestion(&self, lost: &[(u64, SimTime)]) -> bool {
        let (first, last) = (lost[0], lost[lost.len() - 1]);
        let span = self.rtt.pto_base(self.max_ack_delay).mul(PERSISTENT_CONGESTION_THRESHOLD);
        if last.1 < first.1 + span {
            return false;
        }
        // nothing sent between the two was acknowledged
        (first.0..=last.0).all(|pn| self.sent[(pn - self.base) as usize].state != State::Acked)
    }

    /// The path is abandoned: every outstanding packet is taken as lost (its data goes back to
    /// the connection's queue) without a congestion event, and its timers stop.
    pub fn abandon(&mut self) -> Settled {
        let mut out = Settled::default();
        for i in 0..self.sent.len() {
            if self.sent[i].state == State::Outstanding {
                let p = self.settle(i, State::Lost);
                self.stats.packets_lost += 1;
                out.lost.extend(p.stream);
                if p.more {
                    self.take_more(self.base + i as u64, &mut out.lost);
                }
                out.lost_packets.push((self.base + i as u64, p.size));
            }
        }
        self.loss_time = None;
        self.trim();
        out
    }

    /// When the loss detection timer should fire: the loss time, or else the probe timeout
    /// (RFC 9002 §6.2.1, backed off by 2^pto_count) while ack-eliciting packets are in flight.
    pub fn timer(&self) -> Option<SimTime> {
        if self.loss_time.is_some() {
            return self.loss_time;
        }
        (self.ack_eliciting_in_flight > 0).then(|| self.last_ack_eliciting_at + self.pto_duration())
    }

    /// The current probe timeout, backoff included.
    pub fn pto_duration(&self) -> Dur {
        self.rtt.pto_base(self.max_ack_delay).mul(1 << self.pto_count.min(30))
    }

    /// The loss detection timer fired at `now` (its deadline reached): lost packets when it
    /// was the loss time; otherwise a probe timeout, counted, for which the caller sends
    /// probes (true).
    pub fn on_timeout(&mut self, now: SimTime, sibs: &[SubflowState], me: usize) -> (Settled, bool) {
        let mut out = Settled::default();
        if self.loss_time.is_some() {
            self.detect_lost(now, &mut out, sibs, me);
            self.trim();
            return (out, false);
        }
        self.pto_count += 1;
        self.stats.ptos += 1;
        (out, true)
    }

    /// What coupled controllers see of this space.
    pub fn state(&self) -> SubflowState {
        SubflowState {
            cwnd: self.w.cwnd,
            ssthresh: self.w.ssthresh,
            mss: self.w.mss,
            srtt: Some(self.rtt.smoothed),
            active: true,
            in_recovery: self.in_recovery,
            inter_loss_bytes: self.cc.inter_loss_bytes(),
        }
    }

    /// Packets sent and not yet acknowledged or lost.
    pub fn outstanding(&self) -> usize {
        self.ack_eliciting_in_flight as usize
    }

    /// Checks that the flight counters match the packets kept.
    pub fn check_invariants(&self) {
        let out: Vec<&Sent> = self.sent.iter().filter(|p| p.state == State::Outstanding).collect();
        assert_eq!(out.len() as u64, self.ack_eliciting_in_flight, "ack-eliciting packets in flight");
        assert_eq!(out.iter().map(|p| p.size as u64).sum::<u64>(), self.bytes_in_flight, "bytes in flight");
        assert_eq!(self.base + self.sent.len() as u64, self.next_pn, "packet numbers kept");
        assert!(self.w.cwnd >= self.min_window(), "cwnd below the minimum window");
    }
}
