//! TCP sender: sequence space, SACK scoreboard, loss recovery and the retransmission timer.
//!
//! Sans-IO: the owner calls `on_ack` with each ACK, `on_rto` when the timer it was asked for
//! fires, and `next_segment` in a loop to learn what to transmit. The sender never reads a
//! clock; `rto_deadline` tells the owner when it wants to be woken.
//!
//! Loss recovery follows RFC 6675 with Linux's bookkeeping of the pipe:
//! `in_flight = outstanding − sacked − lost + retransmitted`. A segment is marked lost when more
//! than (DupThresh−1)·MSS bytes above it are SACKed (RFC 6675 IsLost) or when three duplicate
//! ACKs arrive for the head. States are those of Linux: Open, Recovery (fast recovery after
//! dup-ACKs/SACK) and Loss (after a timeout); neither recovery state ends until the recovery
//! point (the highest byte sent when it began) is cumulatively acknowledged, which gives
//! NewReno's "one reduction per window" rule (RFC 6582).

use super::rtt::RttEstimator;
use crate::cc::{AckContext, CongestionEvent, Controller, LossContext, SubflowState, Window};
use crate::net::AckHeader;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// Duplicate-ACK threshold (RFC 5681, RFC 6675).
pub const DUP_THRESH: u32 = 3;

/// Sender settings.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub mss: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    pub min_rto: Dur,
    pub max_rto: Dur,
    pub initial_rto: Dur,
    /// Ignore the receive window: an MPTCP subflow, whose connection enforces the window.
    pub ignore_rwnd: bool,
    /// The receiver's window as the handshake announced it, before any ACK.
    pub initial_rwnd: u64,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: 1460,
            initial_window: 10,
            min_rto: Dur::from_millis(200),
            max_rto: Dur::from_secs(60),
            initial_rto: Dur::from_secs(1),
            ignore_rwnd: false,
            initial_rwnd: u64::MAX,
        }
    }
}

/// Congestion-avoidance state, as in Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    Recovery,
    Loss,
}

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// A retransmission of this segment is presumed in flight.
const RETRANS: u8 = 4;
/// The segment was retransmitted at least once (Karn: no RTT sample from it).
const EVER_RETX: u8 = 8;

#[derive(Clone, Copy, Debug)]
struct Seg {
    seq: u64,
    len: u32,
    flags: u8,
    sent_at: SimTime,
}

/// A segment the owner must put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSegment {
    pub seq: u64,
    pub len: u32,
    pub retx: bool,
    /// Sent whatever the window says (the fast retransmission on entering recovery).
    pub forced: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub bytes_retransmitted: u64,
    pub timeouts: u64,
    /// Timeouts that were the first of their series (no backoff yet), and the summed
    /// durations of those timers: the T0 of the Padhye model.
    pub first_timeouts: u64,
    pub first_timeout_sum: Dur,
    pub fast_recoveries: u64,
}

pub struct TcpSender {
    mss: u64,
    pub cc: Controller,
    w: Window,
    rtt: RttEstimator,
    state: CaState,
    snd_una: u64,
    snd_nxt: u64,
    /// End of the data the application has handed over.
    app_limit: u64,
    rwnd: u64,
    segs: VecDeque<Seg>,
    sacked_bytes: u64,
    lost_bytes: u64,
    retrans_bytes: u64,
    dupacks: u32,
    recovery_point: u64,
    highest_sacked: u64,
    /// No segment below this sequence is lost and awaiting retransmission.
    rtx_scan_seq: u64,
    rto_deadline: Option<SimTime>,
    /// Ends of chunks written with `write_chunk`: a new segment never crosses one, so each
    /// segment carries exactly one chunk (one MPTCP data-sequence mapping).
    chunk_ends: VecDeque<u64>,
    ignore_rwnd: bool,
    /// The fast retransmission owed on entering recovery (RFC 6675 §5 step 4.3: it is sent
    /// whatever the window says).
    fast_rtx_due: bool,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: &SenderConfig, cc: Controller) -> TcpSender {
        let mss = cfg.mss as u64;
        TcpSender {
            mss,
            cc,
            w: Window { cwnd: cfg.initial_window as u64 * mss, ssthresh: u64::MAX, mss },
            rtt: RttEstimator::new(cfg.min_rto, cfg.max_rto, cfg.initial_rto),
            state: CaState::Open,
            snd_una: 0,
            snd_nxt: 0,
            app_limit: 0,
            rwnd: cfg.initial_rwnd,
            segs: VecDeque::new(),
            sacked_bytes: 0,
            lost_bytes: 0,
            retrans_bytes: 0,
            dupacks: 0,
            recovery_point: 0,
            highest_sacked: 0,
            rtx_scan_seq: 0,
            rto_deadline: None,
            chunk_ends: VecDeque::new(),
            ignore_rwnd: cfg.ignore_rwnd,
            fast_rtx_due: false,
            stats: SenderStats::default(),
        }
    }

    // ----- read-only view -----

    pub fn window(&self) -> Window {
        self.w
    }
    pub fn cwnd(&self) -> u64 {
        self.w.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }
    pub fn state(&self) -> CaState {
        self.state
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn app_limit(&self) -> u64 {
        self.app_limit
    }
    pub fn rwnd(&self) -> u64 {
        self.rwnd
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    pub fn rto_deadline(&self) -> Option<SimTime> {
        self.rto_deadline
    }
    /// Bytes sent and not yet cumulatively acknowledged.
    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// Bytes presumed in the network (RFC 6675 pipe).
    pub fn in_flight(&self) -> u64 {
        self.outstanding() - self.sacked_bytes - self.lost_bytes + self.retrans_bytes
    }
    /// Bytes written by the application and not yet sent for the first time.
    pub fn unsent(&self) -> u64 {
        self.app_limit - self.snd_nxt
    }

    /// The application hands over `bytes` more bytes.
    pub fn write(&mut self, bytes: u64) {
        self.app_limit = self.app_limit.saturating_add(bytes);
    }

    /// Hands over one chunk that must travel as one segment (at most one MSS); returns the
    /// sequence number it starts at.
    pub fn write_chunk(&mut self, bytes: u64) -> u64 {
        debug_assert!(bytes > 0 && bytes <= self.mss);
        let start = self.app_limit;
        self.app_limit += bytes;
        self.chunk_ends.push_back(self.app_limit);
        start
    }

    /// Takes back the chunks handed over but not yet sent; returns their (sequence, length).
    pub fn take_back_unsent(&mut self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut start = self.snd_nxt;
        for &end in self.chunk_ends.iter() {
            if end > start {
                out.push((start, end - start));
                start = end;
            }
        }
        self.chunk_ends.clear();
        self.app_limit = self.snd_nxt;
        out
    }

    /// Sequence ranges sent and neither acknowledged nor SACKed, oldest first.
    pub fn unacked_segments(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.segs.iter().filter(|s| s.flags & SACKED == 0).map(|s| (s.seq, s.len))
    }

    /// Halves the window (MPTCP penalisation of a slow subflow holding the head of line):
    /// cwnd = max(cwnd/2, 1 MSS), and ssthresh likewise outside slow start.
    pub fn penalize(&mut self) {
        if !self.w.in_slow_start() {
            self.w.ssthresh = (self.w.ssthresh / 2).max(2 * self.mss);
        }
        self.w.cwnd = (self.w.cwnd / 2).max(self.mss);
    }

    /// Feeds an RTT measured outside the data exchange (the connection handshake). Linux
    /// also hands the SYN's RTT to the congestion controller (CUBIC's minimum delay, which
    /// HyStart measures against, starts from it).
    pub fn seed_rtt(&mut self, sample: Dur) {
        if self.rtt.srtt().is_none() {
            self.rtt.on_sample(sample);
            self.cc.on_rtt_sample(sample, SimTime::ZERO);
        }
    }

    // ----- transmission -----

    /// The next segment to transmit now, if the windows allow one. Call in a loop.
    pub fn next_segment(&mut self, now: SimTime) -> Option<TxSegment> {
        if std::mem::take(&mut self.fast_rtx_due) {
            if let Some(i) = self.first_lost_unretransmitted() {
                return Some(TxSegment { forced: true, ..self.retransmit(i, now) });
            }
        }
        let pipe = self.in_flight();
        if pipe >= self.w.cwnd {
            return None;
        }
        let room = self.w.cwnd - pipe;
        // RFC 6675 NextSeg rule 1: the first lost segment not yet retransmitted
        if self.lost_bytes > self.retrans_bytes_lost() {
            if let Some(i) = self.first_lost_unretransmitted() {
                if (self.segs[i].len as u64) > room && pipe > 0 {
                    return None;
                }
                return Some(self.retransmit(i, now));
            }
        }
        // Rule 2: new data, within the receiver's window
        if self.snd_nxt < self.app_limit {
            let mut len = (self.app_limit - self.snd_nxt).min(self.mss);
            while self.chunk_ends.front().is_some_and(|&e| e <= self.snd_nxt) {
                self.chunk_ends.pop_front();
            }
            if let Some(&end) = self.chunk_ends.front() {
                len = len.min(end - self.snd_nxt);
            }
            if len > room && pipe > 0 {
                return None;
            }
            let right_edge = self.snd_una.saturating_add(self.rwnd);
            if !self.ignore_rwnd && self.snd_nxt + len > right_edge {
                return None;
            }
            let seq = self.snd_nxt;
            self.segs.push_back(Seg { seq, len: len as u32, flags: 0, sent_at: now });
            self.snd_nxt += len;
            self.on_transmit(now, len as u32);
            return Some(TxSegment { seq, len: len as u32, retx: false, forced: false });
        }
        None
    }

    fn retransmit(&mut self, i: usize, now: SimTime) -> TxSegment {
        let s = &mut self.segs[i];
        s.flags |= RETRANS | EVER_RETX;
        s.sent_at = now;
        let (seq, len) = (s.seq, s.len);
        self.rtx_scan_seq = seq + len as u64;
        self.retrans_bytes += len as u64;
        self.stats.retransmits += 1;
        self.stats.bytes_retransmitted += len as u64;
        self.on_transmit(now, len);
        TxSegment { seq, len, retx: true, forced: false }
    }

    fn on_transmit(&mut self, now: SimTime, len: u32) {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Bytes that are both lost and already retransmitted (so not awaiting a retransmission).
    fn retrans_bytes_lost(&self) -> u64 {
        // every RETRANS segment is also LOST until it is acknowledged
        self.retrans_bytes
    }

    fn first_lost_unretransmitted(&self) -> Option<usize> {
        let start = self.segs.partition_point(|s| s.seq < self.rtx_scan_seq);
        (start..self.segs.len()).find(|&i| self.segs[i].flags & (LOST | RETRANS) == LOST)
    }

    // ----- acknowledgements -----

    /// What this subflow shows its siblings' controllers.
    pub fn subflow_state(&self, active: bool) -> SubflowState {
        SubflowState {
            cwnd: self.w.cwnd,
            ssthresh: self.w.ssthresh,
            mss: self.mss,
            srtt: self.rtt.srtt(),
            active,
            in_recovery: self.state != CaState::Open,
            inter_loss_bytes: self.cc.inter_loss_bytes(),
        }
    }

    /// Processes an ACK from the receiver (plain TCP: no siblings).
    pub fn on_ack(&mut self, now: SimTime, h: &AckHeader) {
        self.on_ack_coupled(now, h, &[], 0)
    }

    /// Processes an ACK; `subflows` is the state of every subflow of the connection (this one
    /// at index `me`), for coupled congestion control.
    pub fn on_ack_coupled(&mut self, now: SimTime, h: &AckHeader, subflows: &[SubflowState], me: usize) {
        self.rwnd = h.wnd();
        let ack = h.ack.min(self.snd_nxt);
        let prior_in_flight = self.in_flight();
        let mut delivered = 0u64;
        // RTT: from the most recently sent segment that this ACK newly acknowledges, never
        // retransmitted (Karn); if the cumulative part covers a retransmission, it gives none
        let mut newest_sent: Option<SimTime> = None;
        let mut retx_acked = false;
        let ack_advanced = ack > self.snd_una;

        if ack_advanced {
            while let Some(s) = self.segs.front_mut() {
                let end = s.seq + s.len as u64;
                if end > ack {
                    if s.seq < ack {
                        // the receiver acknowledged part of a segment: trim it
                        debug_assert!(s.flags & (SACKED | LOST | RETRANS) == 0);
                        s.len = (end - ack) as u32;
                        s.seq = ack;
                    }
                    break;
                }
                let s = self.segs.pop_front().unwrap();
                self.drop_flags(&s);
                // a segment SACKed earlier was delivered then: it says nothing about now
                if s.flags & SACKED == 0 {
                    delivered += s.len as u64;
                    if s.flags & EVER_RETX != 0 {
                        retx_acked = true;
                    } else {
                        newest_sent = newest_sent.max(Some(s.sent_at));
                    }
                }
            }
            if retx_acked {
                newest_sent = None;
            }
            self.snd_una = ack;
            self.dupacks = 0;
            if self.rtx_scan_seq < ack {
                self.rtx_scan_seq = ack;
            }
            // RFC 6298 §5.2/5.3: restart the timer, or stop it when all is acknowledged
            self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| now + self.rtt.rto());
        } else if ack == self.snd_una && self.snd_nxt > self.snd_una {
            self.dupacks += 1;
        }

        let (sacked, sack_newest) = self.apply_sack(h);
        delivered += sacked;
        if self.sacked_bytes > 0 {
            self.mark_lost_by_sack();
        }
        if let Some(sent) = newest_sent.max(sack_newest) {
            let r = now.since(sent);
            self.rtt.on_sample(r);
            self.rtt.reset_backoff();
            self.cc.on_rtt_sample(r, now);
            // the timer restarts only when new data is cumulatively acknowledged (RFC 6298
            // §5.3), never on SACK alone: otherwise a lost retransmission could hide behind a
            // stream of SACKs for new data and never time out
            if ack_advanced && self.snd_una < self.snd_nxt {
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        }

        match self.state {
            CaState::Recovery | CaState::Loss if self.snd_una >= self.recovery_point => {
                self.state = CaState::Open;
                self.w = self.cc.on_recovery_exit(self.w);
            }
            _ => {}
        }

        if self.state == CaState::Open {
            let head_lost = self.segs.front().is_some_and(|s| s.flags & LOST != 0);
            if self.dupacks >= DUP_THRESH || head_lost {
                self.enter_recovery(now, prior_in_flight, subflows, me);
            } else if delivered > 0 && self.cwnd_limited(prior_in_flight) {
                let ctx = AckContext {
                    now,
                    bytes_acked: delivered,
                    in_flight: prior_in_flight,
                    srtt: self.rtt.srtt(),
                    min_rtt: self.rtt.min_rtt(),
                    subflows,
                    me,
                };
                self.w = self.cc.on_ack(self.w, &ctx);
            }
        }
    }

    /// Linux-style cwnd validation: grow only while the window is what limits sending.
    fn cwnd_limited(&self, in_flight: u64) -> bool {
        if self.w.in_slow_start() {
            self.w.cwnd < 2 * in_flight.max(self.mss)
        } else {
            in_flight + self.mss >= self.w.cwnd
        }
    }

    fn drop_flags(&mut self, s: &Seg) {
        let len = s.len as u64;
        if s.flags & SACKED != 0 {
            self.sacked_bytes -= len;
        }
        if s.flags & LOST != 0 {
            self.lost_bytes -= len;
        }
        if s.flags & RETRANS != 0 {
            self.retrans_bytes -= len;
        }
    }

    /// Marks segments covered by the ACK's SACK blocks; returns the bytes newly SACKed and
    /// when the most recently sent of them (never retransmitted) was sent, for an RTT sample.
    fn apply_sack(&mut self, h: &AckHeader) -> (u64, Option<SimTime>) {
        let mut newly = 0;
        let mut newest_sent: Option<SimTime> = None;
        for b in h.sack_blocks() {
            let start = b.start.max(self.snd_una);
            let end = b.end.min(self.snd_nxt);
            if start >= end {
                continue;
            }
            let mut i = self.segs.partition_point(|s| s.seq < start);
            while i < self.segs.len() {
                let s = self.segs[i];
                let s_end = s.seq + s.len as u64;
                if s_end > end {
                    break;
                }
                if s.flags & SACKED == 0 {
                    self.drop_flags(&s);
                    self.segs[i].flags = (s.flags & EVER_RETX) | SACKED;
                    self.sacked_bytes += s.len as u64;
                    newly += s.len as u64;
                    if s.flags & EVER_RETX == 0 {
                        newest_sent = newest_sent.max(Some(s.sent_at));
                    }
                }
                i += 1;
            }
            self.highest_sacked = self.highest_sacked.max(end);
        }
        (newly, newest_sent)
    }

    /// RFC 6675 IsLost: a segment is lost when more than (DupThresh−1)·MSS bytes above it are
    /// SACKed. The rule is monotone in sequence, so the walk starts at the highest SACKed
    /// segment, finds the boundary, and marks downwards until it meets a segment already
    /// marked (everything below that was handled by an earlier ACK).
    fn mark_lost_by_sack(&mut self) {
        let threshold = (DUP_THRESH as u64 - 1) * self.mss;
        let top = self.segs.partition_point(|s| s.seq < self.highest_sacked);
        let mut sacked_above = 0u64;
        let mut i = top;
        while i > 0 {
            i -= 1;
            let s = self.segs[i];
            if s.flags & SACKED != 0 {
                sacked_above += s.len as u64;
                continue;
            }
            if sacked_above <= threshold {
                continue;
            }
            if s.flags & LOST != 0 {
                break;
            }
            self.segs[i].flags |= LOST;
            self.lost_bytes += s.len as u64;
            if s.seq < self.rtx_scan_seq {
                self.rtx_scan_seq = s.seq;
            }
        }
    }

    /// Enters fast recovery. The controller halves `in_flight`, the RFC 6675 pipe before this
    /// ACK, as ns-3 does with its BytesInFlight (RFC 5681 writes FlightSize, the outstanding
    /// data; the two differ by the segments already SACKed).
    fn enter_recovery(&mut self, now: SimTime, in_flight: u64, subflows: &[SubflowState], me: usize) {
        self.state = CaState::Recovery;
        self.recovery_point = self.snd_nxt;
        self.stats.fast_recoveries += 1;
        let ctx = LossContext { now, in_flight, srtt: self.rtt.srtt(), min_rtt: self.rtt.min_rtt(), subflows, me };
        self.w = self.cc.on_congestion(self.w, CongestionEvent::FastRetransmit, &ctx);
        // RFC 6675 §5 step 4.3: retransmit the first unacknowledged segment, at once
        if let Some(s) = self.segs.front_mut() {
            if s.flags & (SACKED | LOST) == 0 {
                s.flags |= LOST;
                self.lost_bytes += s.len as u64;
            }
            self.rtx_scan_seq = self.snd_una;
            self.fast_rtx_due = true;
        }
    }

    // ----- timer -----

    /// The retransmission timer fired at `now` (the owner checks `rto_deadline` first).
    pub fn on_rto(&mut self, now: SimTime) {
        self.on_rto_coupled(now, &[], 0)
    }

    /// The retransmission timer fired; `subflows` as for `on_ack_coupled`.
    pub fn on_rto_coupled(&mut self, now: SimTime, subflows: &[SubflowState], me: usize) {
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
            return;
        }
        self.stats.timeouts += 1;
        if self.rtt.backoff() == 0 {
            self.stats.first_timeouts += 1;
            self.stats.first_timeout_sum = self.stats.first_timeout_sum + self.rtt.rto();
        }
        let in_flight = self.in_flight();
        if self.state == CaState::Loss && self.rtt.backoff() > 0 {
            // repeated timeout for the same loss: keep ssthresh, back to one segment
            self.w.cwnd = self.mss;
        } else {
            let ctx = LossContext { now, in_flight, srtt: self.rtt.srtt(), min_rtt: self.rtt.min_rtt(), subflows, me };
            self.w = self.cc.on_congestion(self.w, CongestionEvent::Timeout, &ctx);
        }
        self.state = CaState::Loss;
        self.recovery_point = self.snd_nxt;
        self.dupacks = 0;
        self.fast_rtx_due = false;
        // every unSACKed segment is presumed lost, retransmissions included
        for s in self.segs.iter_mut() {
            if s.flags & SACKED == 0 {
                if s.flags & LOST == 0 {
                    self.lost_bytes += s.len as u64;
                }
                s.flags = (s.flags & EVER_RETX) | LOST;
            }
        }
        self.retrans_bytes = 0;
        self.rtx_scan_seq = self.snd_una;
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// Checks the scoreboard's counters against the segments (debug and tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut sacked, mut lost, mut retrans) = (0u64, 0u64, 0u64);
        let mut expect = self.snd_una;
        for s in &self.segs {
            if s.seq != expect {
                return Err(format!("gap in scoreboard at {} (expected {expect})", s.seq));
            }
            expect = s.seq + s.len as u64;
            let l = s.len as u64;
            if s.flags & SACKED != 0 {
                sacked += l;
            }
            if s.flags & LOST != 0 {
                lost += l;
            }
            if s.flags & RETRANS != 0 {
                retrans += l;
                if s.flags & LOST == 0 {
                    return Err("retransmitted segment not marked lost".into());
                }
            }
            if s.flags & SACKED != 0 && s.flags & (LOST | RETRANS) != 0 {
                return Err("SACKed segment marked lost".into());
            }
        }
        if expect != self.snd_nxt {
            return Err(format!("scoreboard ends at {expect}, snd_nxt {}", self.snd_nxt));
        }
        if (sacked, lost, retrans) != (self.sacked_bytes, self.lost_bytes, self.retrans_bytes) {
            return Err(format!(
                "counters ({}, {}, {}) != scoreboard ({sacked}, {lost}, {retrans})",
                self.sacked_bytes, self.lost_bytes, self.retrans_bytes
            ));
        }
        if self.w.cwnd == 0 {
            return Err("cwnd is zero".into());
        }
        if self.snd_una > self.snd_nxt || self.snd_nxt > self.app_limit {
            return Err("sequence space out of order".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::SackBlock;

    const MSS: u64 = 1000;

    fn sender(iw: u32) -> TcpSender {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: iw, ..SenderConfig::default() };
        TcpSender::new(&cfg, Controller::by_name("reno").unwrap())
    }

    fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    fn ack(n: u64, sacks: &[(u64, u64)]) -> AckHeader {
        let mut h = AckHeader::new(n, 1 << 30);
        for &(a, b) in sacks {
            h.push_sack(SackBlock { start: a, end: b });
        }
        h
    }

    #[test]
    fn sends_the_initial_window_then_waits() {
        let mut s = sender(4);
        s.write(10 * MSS);
        let segs = drain(&mut s, SimTime::ZERO);
        assert_eq!(segs.len(), 4);
        assert_eq!(s.in_flight(), 4 * MSS);
        assert!(s.rto_deadline().is_some());
    }

    #[test]
    fn three_dupacks_with_sack_retransmit_the_head_and_halve() {
        let mut s = sender(10);
        s.write(20 * MSS);
        drain(&mut s, SimTime::ZERO);
        let t = SimTime(Dur::from_millis(50).0);
        // segment 0 lost; 1..=3 arrive
        for k in 1..=3 {
            s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
        }
        assert_eq!(s.state(), CaState::Recovery);
        // FlightSize is the pipe before the third duplicate ACK: 10 sent, 2 SACKed
        assert_eq!(s.cwnd(), 4 * MSS);
        // the pipe (6) is above the halved window (4), yet the head goes out at once
        let segs = drain(&mut s, t);
        assert_eq!(segs, vec![TxSegment { seq: 0, len: MSS as u32, retx: true, forced: true }]);
        assert!(s.check_invariants().is_ok());
        // the retransmission is acknowledged with everything sent: recovery ends
        s.on_ack(t + Dur::from_millis(50), &ack(s.snd_nxt(), &[]));
        assert_eq!(s.state(), CaState::Open);
        assert_eq!(s.stats.fast_recoveries, 1);
    }

    #[test]
    fn timeout_marks_everything_lost_and_restarts_from_one_segment() {
        let mut s = sender(10);
        s.write(10 * MSS);
        drain(&mut s, SimTime::ZERO);
        let t = s.rto_deadline().unwrap();
        s.on_rto(t);
        assert_eq!((s.state(), s.cwnd()), (CaState::Loss, MSS));
        assert_eq!(s.in_flight(), 0);
        let segs = drain(&mut s, t);
        assert_eq!(segs, vec![TxSegment { seq: 0, len: MSS as u32, retx: true, forced: false }]);
        assert_eq!(s.rto_deadline(), Some(t + Dur::from_secs(2)), "backed off");
    }

    #[test]
    fn no_rtt_sample_from_segments_sacked_long_ago_or_from_retransmissions() {
        let mut s = sender(10);
        s.write(10 * MSS);
        drain(&mut s, SimTime::ZERO);
        let t = SimTime(Dur::from_millis(100).0);
        // 1..9 SACKed at 100 ms: a sample of 100 ms from the newest of them
        s.on_ack(t, &ack(0, &[(MSS, 10 * MSS)]));
        assert_eq!(s.rtt().latest(), Some(Dur::from_millis(100)));
        // the head is retransmitted and acknowledged at 5 s (after a timeout, say): the
        // cumulative ACK covers the retransmission and segments SACKed long ago, so no sample
        let t2 = SimTime(Dur::from_secs(5).0);
        s.on_rto(t2);
        drain(&mut s, t2);
        let n = s.rtt().samples();
        s.on_ack(t2 + Dur::from_millis(100), &ack(10 * MSS, &[]));
        assert_eq!(s.rtt().samples(), n, "Karn's rule");
        assert_eq!(s.rtt().latest(), Some(Dur::from_millis(100)));
    }

    #[test]
    fn sack_alone_never_pushes_the_retransmission_timer_back() {
        let mut s = sender(10);
        s.write(40 * MSS);
        drain(&mut s, SimTime::ZERO);
        let deadline = s.rto_deadline().unwrap();
        // segment 0 is lost; SACKs for everything else keep arriving, each with an RTT sample
        for k in 1..10 {
            let t = SimTime(Dur::from_millis(10 * k).0);
            s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
            drain(&mut s, t);
        }
        assert_eq!(s.rto_deadline(), Some(deadline));
    }

    #[test]
    fn the_handshake_window_limits_the_first_flight() {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 16, initial_rwnd: 4 * MSS, ..SenderConfig::default() };
        let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        s.write(20 * MSS);
        assert_eq!(drain(&mut s, SimTime::ZERO).len(), 4);
    }

    #[test]
    fn chunks_are_never_merged_into_one_segment() {
        let mut s = sender(10);
        assert_eq!(s.write_chunk(300), 0);
        assert_eq!(s.write_chunk(300), 300);
        assert_eq!(s.write_chunk(1000), 600);
        let segs = drain(&mut s, SimTime::ZERO);
        let lens: Vec<u32> = segs.iter().map(|x| x.len).collect();
        assert_eq!(lens, vec![300, 300, 1000]);
    }

    #[test]
    fn unsent_chunks_can_be_taken_back() {
        let mut s = sender(1);
        for _ in 0..3 {
            s.write_chunk(MSS);
        }
        assert_eq!(drain(&mut s, SimTime::ZERO).len(), 1);
        assert_eq!(s.take_back_unsent(), vec![(MSS, MSS), (2 * MSS, MSS)]);
        assert_eq!(s.unsent(), 0);
        assert!(s.check_invariants().is_ok());
        assert_eq!(s.unacked_segments().collect::<Vec<_>>(), vec![(0, MSS as u32)]);
    }

    #[test]
    fn penalty_halves_the_window_but_never_below_one_segment() {
        let mut s = sender(10);
        s.penalize();
        assert_eq!(s.cwnd(), 5 * MSS);
        for _ in 0..5 {
            s.penalize();
        }
        assert_eq!(s.cwnd(), MSS);
    }

    #[test]
    fn receive_window_limits_new_data_unless_ignored() {
        let mut s = sender(10);
        s.write(10 * MSS);
        s.on_ack(SimTime::ZERO, &AckHeader::new(0, 2 * MSS));
        assert_eq!(drain(&mut s, SimTime::ZERO).len(), 2);
        let cfg = SenderConfig { mss: MSS as u32, ignore_rwnd: true, ..SenderConfig::default() };
        let mut m = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        m.write(10 * MSS);
        m.on_ack(SimTime::ZERO, &AckHeader::new(0, 2 * MSS));
        assert_eq!(drain(&mut m, SimTime::ZERO).len(), 10);
    }
}
