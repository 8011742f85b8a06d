//! TCP sender: sequence space, SACK scoreboard, loss recovery and the retransmission timer.
//!
//! Sans-IO: the owner calls `on_ack` with each ACK, `on_timer` when the deadline it was
//! given (`timer_deadline`) passes, and `next_segment` in a loop to learn what to transmit.
//! The sender never reads a clock.
//!
//! Loss recovery is Linux's, each defence switchable (`SenderConfig`):
//!
//! * the scoreboard keeps Linux's pipe, `in_flight = outstanding − sacked − lost +
//!   retransmitted`; a segment is lost when more than (DupThresh−1)·MSS bytes above it are
//!   SACKed (RFC 6675 IsLost), on three duplicate ACKs for the head, or by RACK (`rack.rs`,
//!   RFC 8985), which also finds lost retransmissions;
//! * states are Linux's: Open, Recovery (fast recovery) and Loss (after a timeout); neither
//!   recovery state ends until the recovery point (the highest byte sent when it began) is
//!   cumulatively acknowledged: NewReno's "one reduction per window" (RFC 6582);
//! * in Recovery, proportional rate reduction (`prr.rs`, RFC 6937) sets the window on each
//!   ACK, so the retransmissions are paced by the ACK clock;
//! * a timeout halves ssthresh from the flight at the timeout, only once per episode, and
//!   restarts from one segment; in Loss every ACK of new data grows the window by slow start
//!   (Linux's Loss state), and F-RTO (`frto.rs`, RFC 5682) undoes a spurious timeout;
//! * the tail loss probe (`tlp.rs`, RFC 8985 §7) replaces the timer for a lost tail;
//! * D-SACK (RFC 2883, RFC 3708 as Linux): a report of a duplicate segment means a
//!   retransmission was unnecessary. Each reduction (fast recovery or timeout) remembers the
//!   window before it and counts the retransmissions sent since (Linux `undo_marker`,
//!   `undo_retrans`); each D-SACK takes one off per segment it covers. When the count reaches
//!   zero, every retransmission of the episode was spurious and the reduction is undone:
//!   at once in Open (`tcp_try_undo_dsack`), at the end of fast recovery in Recovery
//!   (`tcp_try_undo_recovery`), and with the presumed losses forgotten in Loss
//!   (`tcp_try_undo_loss`). A D-SACK also tells RACK that the path reorders: its reordering
//!   window widens by a quarter of the minimum RTT per round trip with a D-SACK and stays
//!   wide for 16 recoveries (RFC 8985 §6.2 step 4). The duplicate threshold of RFC 6675
//!   IsLost is not adapted (Linux's `tp->reordering`), nor is a probe's D-SACK treated apart;
//!   a D-SACK for data not retransmitted (a duplicate made by the network) cannot occur here;
//! * the timer itself is Linux's or RFC 6298's (`rto.rs`). It starts with the first segment
//!   outstanding and restarts whenever new data is cumulatively acknowledged (never on SACKs
//!   alone) and on expiry; with Linux's timer it also restarts when the head is retransmitted
//!   (Linux 6.6 `tcp_xmit_retransmit_queue`), with RFC 6298's it does not (§5). Linux skips
//!   that restart while RACK's reordering timer is pending, because the two share one timer
//!   there and the reordering timer re-arms the RTO from the head's send time when it fires;
//!   here the timers are separate and the restart is made at once, to the same deadline.
//!
//! The per-ACK work does not grow with the window where it need not: the SACKed segments
//! are also kept as merged sequence ranges (`sacked_ranges`), so marking a SACK block visits
//! only the segments it newly covers (O(log n) to find them), the RFC 6675 loss rule finds its
//! boundary from the ranges above and marks down to the first segment already marked
//! (amortised O(1) per segment), and RACK's scan takes its candidates in send order (segments
//! never sent again from the scoreboard, where they are in send order already, merged with an
//! index of retransmissions, `rack::SendOrder`), from the oldest to the first not yet
//! overdue, dropping the entries of segments since SACKed, acknowledged, marked or sent again
//! as it meets them (amortised O(1) per transmission; nothing is added to the index for a
//! segment sent once).
//!
//! ECN (`SenderConfig::ecn`, RFC 3168 as Linux runs it): new data leaves ECT(0), never a
//! retransmission (Linux `tcp_ecn_send`). An ACK with ECE in the Open state enters CWR
//! (`tcp_enter_cwr`): ssthresh from the controller's loss response (the same call a fast
//! retransmission makes, so coupled controllers see a mark as a loss on this subflow), the
//! window brought down to it by PRR over the round (`tcp_cwnd_reduction`), CWR set on the next
//! new segment, and no further reduction until everything sent before it is acknowledged
//! (strictly beyond, so that the CWR flag reached the receiver). ECE is ignored in Recovery
//! and Loss; a loss found during CWR enters Recovery without a second reduction and keeps
//! CWR's recovery point (Linux `tcp_enter_recovery`); a timeout during CWR keeps its ssthresh
//! (`tcp_enter_loss`). CWR's reduction is never undone.
//!
//! Without SACK (`SenderConfig::sack` false, Linux's `net.ipv4.tcp_sack = 0`), loss recovery
//! is NewReno (RFC 6582) as Linux runs it for a peer without SACK: every duplicate ACK counts
//! one segment as delivered (Linux's `tcp_add_reno_sack`, so the pipe shrinks and PRR or
//! limited transmit may send), three of them enter fast recovery and retransmit the head, and
//! in recovery each partial ACK (the cumulative ACK advances but stays below the recovery
//! point) marks the new head lost, so the next hole is retransmitted at once
//! (`tcp_newreno_mark_lost`). A cumulative ACK takes back the duplicate-ACK credit it covers,
//! less the one segment it delivers itself (`tcp_remove_reno_sacks`). RACK, the tail loss
//! probe and D-SACK need SACK information and are off (Linux 4.x runs neither RACK nor TLP
//! for a non-SACK peer); F-RTO works from cumulative ACKs and stays as configured. Left out:
//! Linux's hold of the Recovery state while the ACK equals the recovery point exactly
//! (RFC 6582 §4.2's heuristic against a false fast retransmission).

use super::defaults;
use super::frto::{AckFacts, Frto, FrtoAction};
use super::prr::Prr;
use super::rack::{Rack, SendOrder, Sent, Verdict};
use super::rate::RateEstimator;
use super::rto::RtoMode;
use super::rtt::RttEstimator;
use super::tlp::{ProbeKind, ProbeOutcome, Tlp};
use crate::cc::{AckContext, CongestionEvent, Controller, LossContext, RateContext, SubflowState, Window};
use crate::net::{AckHeader, Ecn};
use crate::time::{Dur, SimTime};
use ring::SegRing;
use std::collections::VecDeque;

/// Duplicate-ACK threshold (RFC 5681, RFC 6675).
pub const DUP_THRESH: u32 = 3;

/// Sender settings.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub mss: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// How the retransmission timeout is computed.
    pub rto: RtoMode,
    /// Floor and cap of the RTO; None for the mode's defaults (`RtoMode::default_min_rto`).
    pub min_rto: Option<Dur>,
    pub max_rto: Option<Dur>,
    pub initial_rto: Dur,
    /// F-RTO: detect spurious timeouts and undo their reduction (RFC 5682).
    pub frto: bool,
    /// RACK time-based loss detection (RFC 8985 §6).
    pub rack: bool,
    /// Tail loss probe (RFC 8985 §7).
    pub tlp: bool,
    /// Proportional rate reduction in fast recovery (RFC 6937); otherwise the window drops to
    /// ssthresh at once (RFC 6675).
    pub prr: bool,
    /// Use the receiver's SACK blocks (RFC 2018). Off: NewReno recovery (RFC 6582), and RACK
    /// and the tail loss probe off whatever `rack` and `tlp` say.
    pub sack: bool,
    /// Ignore the receive window: an MPTCP subflow, whose connection enforces the window.
    pub ignore_rwnd: bool,
    /// ECN (RFC 3168): negotiated with the receiver, so new data is sent ECT(0) and ECE
    /// answered.
    pub ecn: bool,
    /// The receiver's window as the handshake announced it, before any ACK.
    pub initial_rwnd: u64,
    /// Controllers that halve on a loss halve the congestion window, as Linux's
    /// `tcp_reno_ssthresh` does, instead of the flight (RFC 5681) (`tcp.ssthresh = "cwnd"`).
    pub halve_cwnd: bool,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: defaults::MSS,
            initial_window: defaults::INITIAL_WINDOW,
            rto: RtoMode::Linux,
            min_rto: None,
            max_rto: None,
            initial_rto: defaults::INITIAL_RTO,
            frto: true,
            rack: true,
            tlp: true,
            prr: true,
            sack: true,
            ignore_rwnd: false,
            ecn: false,
            initial_rwnd: u64::MAX,
            halve_cwnd: false,
        }
    }
}

pub use crate::view::CaState;

/// Which of the sender's timers fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerEvent {
    /// Nothing was due (or nothing outstanding).
    None,
    /// The retransmission timeout.
    Rto,
    /// The tail loss probe's timeout: a probe is ready for `next_segment`.
    LossProbe,
    /// RACK's reordering timer: segments it was waiting on are now lost.
    Reorder,
}

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// A retransmission of this segment is presumed in flight.
const RETRANS: u8 = 4;
/// The segment was retransmitted at least once (Karn: no RTT sample from it).
const EVER_RETX: u8 = 8;

/// A segment RACK may have to mark lost: neither SACKed nor lost and awaiting a
/// retransmission.
#[inline]
fn rack_candidate_flags(flags: u8) -> bool {
    flags & SACKED == 0 && flags & (LOST | RETRANS) != LOST
}

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
    /// Sent whatever the window says (the fast retransmission on entering recovery, a loss
    /// probe).
    pub forced: bool,
    /// The IP header's ECN codepoint: ECT(0) on new data with ECN, Not-ECT otherwise.
    pub ecn: Ecn,
    /// TCP's CWR flag (the first new segment after entering CWR).
    pub cwr: bool,
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
    /// Timeouts whose retransmission turned out unnecessary: F-RTO, a D-SACK or an ACK too
    /// early for the retransmission showed that an earlier copy of the head got through
    /// (`undo.rs`).
    pub spurious_timeouts: u64,
    /// Tail loss probes sent.
    pub loss_probes: u64,
    /// ACKs that carried a D-SACK block.
    pub dsacks: u64,
    /// Reductions undone because D-SACKs showed every retransmission of the episode spurious.
    pub dsack_undos: u64,
    /// Window reductions for ECN echoes (entries into CWR).
    pub ecn_reductions: u64,
}

/// What a reduction may be undone to, and how many of its retransmissions are not yet known
/// to be spurious (Linux `prior_cwnd`, `prior_ssthresh`, `undo_retrans`).
#[derive(Clone, Copy, Debug)]
struct Undo {
    cwnd: u64,
    ssthresh: u64,
    retrans: u64,
    dsacked: bool,
}

/// What the cumulative part of an ACK did (`TcpSender::take_cumulative_ack`).
#[derive(Default)]
struct CumulativeAck {
    /// Bytes newly delivered (SACKed ones added later).
    delivered: u64,
    /// Without SACK, what a duplicate ACK says left the network: it paces PRR but, as in
    /// Linux, does not grow the window (no data was acknowledged).
    dup_delivered: u64,
    /// RTT: the send time of the most recently sent segment this ACK newly acknowledges,
    /// never retransmitted (Karn); None if the cumulative part covers a retransmission.
    newest_sent: Option<SimTime>,
    /// Never-retransmitted data newly delivered (F-RTO).
    orig_acked: bool,
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
    /// The segments sent and not yet cumulatively acknowledged, oldest first: segment number
    /// n (counted from the first ever sent) is `segs[n - segs.dropped()]`.
    segs: SegRing,
    /// Test builds only: take the general path for every ACK (the fast path's reference).
    #[cfg(test)]
    general_only: bool,
    /// RACK's candidates in send order (with RACK on).
    rack_order: SendOrder,
    /// The SACKed segments as merged sequence ranges [start, end), ascending: an index over
    /// the scoreboard, so the scans per ACK skip what is SACKed already instead of walking it
    /// (each range is a union of whole segments; `check_invariants` verifies it).
    sacked_ranges: Vec<(u64, u64)>,
    sacked_bytes: u64,
    lost_bytes: u64,
    retrans_bytes: u64,
    /// The same three counts in segments: the window is also counted in packets (see
    /// `in_flight_segments`).
    sacked_segs: u64,
    lost_segs: u64,
    retrans_segs: u64,
    /// What the pipe leaves out of the bytes outstanding, kept as the counts change:
    /// SACKed + lost + the duplicate-ACK credit - retransmitted (`in_flight` is read many
    /// times per ACK). In segments, the credit in whole segments (`in_flight_segments`).
    out_of_pipe: u64,
    out_of_pipe_segs: u64,
    dupacks: u32,
    recovery_point: u64,
    highest_sacked: u64,
    /// No segment below this sequence is lost and awaiting retransmission.
    rtx_scan_seq: u64,
    rto_deadline: Option<SimTime>,
    /// Ends of the chunks shorter than an MSS written with `write_chunk` (a full chunk ends
    /// one MSS after its start, where a segment from there ends anyway): a new segment never
    /// crosses a chunk's end, so each segment carries exactly one chunk (one MPTCP
    /// data-sequence mapping).
    chunk_ends: VecDeque<u64>,
    ignore_rwnd: bool,
    /// The fast retransmission owed on entering recovery without PRR (RFC 6675 §5 step 4.3:
    /// it is sent whatever the window says).
    fast_rtx_due: bool,
    /// Switches (see `SenderConfig`).
    frto_on: bool,
    rack_on: bool,
    tlp_on: bool,
    prr_on: bool,
    sack_on: bool,
    /// `SenderConfig::halve_cwnd`, handed to the controller in its `LossContext`.
    halve_cwnd: bool,
    ecn_on: bool,
    /// CWR is owed on the next new segment.
    cwr_due: bool,
    /// Without SACK: bytes the duplicate ACKs since the last cumulative advance say arrived
    /// (Linux's `sacked_out` for a non-SACK peer), one MSS per duplicate ACK.
    reno_sacked: u64,
    rack: Rack,
    reo_deadline: Option<SimTime>,
    tlp: Tlp,
    probe_deadline: Option<SimTime>,
    /// When the probe was last armed (re-arming at the same instant changes nothing).
    probe_armed_at: Option<SimTime>,
    probe_due: bool,
    frto: Frto,
    /// F-RTO step 2b: this ACK may send new data only.
    frto_send_new: bool,
    /// (cwnd, ssthresh) before the timeout, for F-RTO's undo.
    prior: Option<(u64, u64)>,
    /// The latest timeout, until evidence shows its retransmission unnecessary (`undo.rs`).
    rto_check: Option<RtoCheck>,
    /// The current fast-recovery episode's PRR counters and the window the controller chose
    /// for its end.
    prr: Prr,
    recovery_target: Window,
    undo: Option<Undo>,
    /// The latest ACK's receiver timestamp and congestion-warning echo, for the controller.
    ack_received_at: SimTime,
    cw_echo: bool,
    /// The delivery-rate estimator and pacing, for a controller that runs on rate samples
    /// (`rate.rs`); None for the others, which then pay nothing for it.
    rate: Option<Box<RateEstimator>>,
    /// The controller's `wants_deliveries`, `wants_every_ack`, `wants_rtt_samples` and
    /// `shares_inter_loss_bytes`, read once (they are asked on every ACK).
    deliveries: bool,
    every_ack: bool,
    rtt_samples: bool,
    inter_loss: bool,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: &SenderConfig, cc: Controller) -> TcpSender {
        let mss = cfg.mss as u64;
        let min_rto = cfg.min_rto.unwrap_or(cfg.rto.default_min_rto());
        let max_rto = cfg.max_rto.unwrap_or(cfg.rto.default_max_rto()).max(min_rto);
        let w = Window { cwnd: cfg.initial_window as u64 * mss, ssthresh: u64::MAX, mss };
        TcpSender {
            mss,
            w,
            rtt: RttEstimator::new(cfg.rto, min_rto, max_rto, cfg.initial_rto),
            state: CaState::Open,
            snd_una: 0,
            snd_nxt: 0,
            app_limit: 0,
            rwnd: cfg.initial_rwnd,
            segs: SegRing::default(),
            #[cfg(test)]
            general_only: false,
            rack_order: SendOrder::default(),
            sacked_ranges: Vec::new(),
            sacked_bytes: 0,
            lost_bytes: 0,
            retrans_bytes: 0,
            sacked_segs: 0,
            lost_segs: 0,
            retrans_segs: 0,
            out_of_pipe: 0,
            out_of_pipe_segs: 0,
            dupacks: 0,
            recovery_point: 0,
            highest_sacked: 0,
            rtx_scan_seq: 0,
            rto_deadline: None,
            chunk_ends: VecDeque::new(),
            ignore_rwnd: cfg.ignore_rwnd,
            fast_rtx_due: false,
            frto_on: cfg.frto,
            rack_on: cfg.rack && cfg.sack,
            tlp_on: cfg.tlp && cfg.sack,
            prr_on: cfg.prr,
            sack_on: cfg.sack,
            halve_cwnd: cfg.halve_cwnd,
            ecn_on: cfg.ecn,
            cwr_due: false,
            reno_sacked: 0,
            rack: Rack::default(),
            reo_deadline: None,
            tlp: Tlp::default(),
            probe_deadline: None,
            probe_armed_at: None,
            probe_due: false,
            frto: Frto::default(),
            frto_send_new: false,
            ack_received_at: SimTime::ZERO,
            cw_echo: false,
            prior: None,
            rto_check: None,
            prr: Prr::default(),
            recovery_target: w,
            undo: None,
            rate: cc.wants_rate_samples().then(Box::default),
            deliveries: cc.wants_deliveries(),
            every_ack: cc.wants_every_ack(),
            rtt_samples: cc.wants_rtt_samples(),
            inter_loss: cc.shares_inter_loss_bytes(),
            cc,
            stats: SenderStats::default(),
        }
    }

    /// Replaces the congestion controller (before the first segment is sent).
    pub fn set_controller(&mut self, cc: Controller) {
        self.rate = cc.wants_rate_samples().then(Box::default);
        self.deliveries = cc.wants_deliveries();
        self.every_ack = cc.wants_every_ack();
        self.rtt_samples = cc.wants_rtt_samples();
        self.inter_loss = cc.shares_inter_loss_bytes();
        self.cc = cc;
    }

    /// The pacing rate in bytes per second, if the controller paces.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.rate.as_ref().map(|r| r.pacing_rate).filter(|&r| r > 0)
    }

    /// Linux `tcp_rate_check_app_limited`, as the application writes: with less than a
    /// segment left to send, room in the window and no lost segment awaiting a
    /// retransmission, the sender is application-limited. Out of line: inlined, it kept the
    /// application's write from being inlined for every controller.
    #[inline(never)]
    fn check_app_limited(&mut self) {
        let in_flight = self.in_flight_segments();
        let limited = self.unsent() < self.mss && in_flight * self.mss < self.w.cwnd && self.lost_segs <= self.retrans_segs;
        if let Some(r) = self.rate.as_deref_mut().filter(|_| limited) {
            r.mark_app_limited(in_flight);
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
    /// Whether ECN is on (negotiated).
    pub fn ecn(&self) -> bool {
        self.ecn_on
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
    /// When the retransmission timer fires (None: not running).
    pub fn rto_deadline(&self) -> Option<SimTime> {
        self.rto_deadline
    }
    /// The earliest of the sender's timers (retransmission, loss probe, RACK reordering): the
    /// owner calls `on_timer` then.
    pub fn timer_deadline(&self) -> Option<SimTime> {
        // written out: an iterator over the three costs several times more, once per ACK
        let earliest = |a: Option<SimTime>, b: Option<SimTime>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        let d = earliest(earliest(self.rto_deadline, self.probe_deadline), self.reo_deadline);
        match &self.rate {
            Some(r) => earliest(d, r.pace_deadline),
            None => d,
        }
    }
    /// Bytes sent and not yet cumulatively acknowledged.
    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// Bytes presumed in the network (RFC 6675 pipe).
    pub fn in_flight(&self) -> u64 {
        self.outstanding() - self.out_of_pipe
    }
    /// Segments presumed in the network: the pipe counted in packets, as Linux counts it
    /// (`tcp_packets_in_flight`), each duplicate ACK without SACK taking one off.
    pub fn in_flight_segments(&self) -> u64 {
        // (the credit, there without SACK only, is kept in `out_of_pipe_segs` in whole
        // segments: `set_reno_sacked`)
        self.segs.len() as u64 - self.out_of_pipe_segs
    }
    /// Bytes written by the application and not yet sent for the first time.
    pub fn unsent(&self) -> u64 {
        self.app_limit - self.snd_nxt
    }

    /// The application hands over `bytes` more bytes.
    pub fn write(&mut self, bytes: u64) {
        if self.rate.is_some() {
            self.check_app_limited();
        }
        self.app_limit = self.app_limit.saturating_add(bytes);
    }

    /// Hands over one chunk that must travel as one segment (at most one MSS); returns the
    /// sequence number it starts at.
    pub fn write_chunk(&mut self, bytes: u64) -> u64 {
        debug_assert!(bytes > 0 && bytes <= self.mss);
        let start = self.app_limit;
        self.app_limit += bytes;
        // a full chunk ends where a full segment from its start would: only the end of a
        // shorter one needs keeping
        if bytes < self.mss {
            self.chunk_ends.push_back(self.app_limit);
        }
        start
    }

    /// Takes back the chunks handed over but not yet sent; returns their (sequence, length).
    pub fn take_back_unsent(&mut self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut start = self.snd_nxt;
        let from = start;
        let mut short_ends = self.chunk_ends.iter().copied().filter(|&e| e > from).peekable();
        while start < self.app_limit {
            // the chunk from `start` is a short one whose end is kept, or a full one
            let end = match short_ends.next_if(|&e| e < start + self.mss) {
                Some(e) => e,
                None => (start + self.mss).min(self.app_limit),
            };
            out.push((start, end - start));
            start = end;
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
            self.rtt.on_sample(sample, self.snd_una, self.snd_nxt);
            if self.rtt_samples {
                self.cc.on_rtt_sample(sample, SimTime::ZERO);
            }
        }
    }

    // ----- transmission -----

    /// The next segment to transmit now, if the windows allow one. Call in a loop.
    ///
    /// Always inlined: its one caller, `Subflow::transmit`, is made once for plain TCP and
    /// once for Multipath TCP's mappings, and left to itself the compiler then calls it out
    /// of line (+1.3 to 2.3 % instructions per packet on the speed cases).
    #[inline(always)]
    pub fn next_segment(&mut self, now: SimTime) -> Option<TxSegment> {
        if std::mem::take(&mut self.probe_due) {
            if let Some(t) = self.loss_probe(now) {
                return Some(t);
            }
        }
        if std::mem::take(&mut self.fast_rtx_due) {
            if let Some(i) = self.first_lost_unretransmitted() {
                return Some(TxSegment { forced: true, ..self.retransmit(i, now) });
            }
        }
        let pipe = self.in_flight();
        if pipe >= self.w.cwnd {
            return None;
        }
        // The window is counted in packets too, as Linux counts it: a segment in flight takes
        // a full segment of the window however short it is. With full segments this is the
        // byte rule below; with short ones (small writes) it keeps the number of packets in
        // flight within the window. (Without SACK the duplicate-ACK credit may leave no bytes
        // in the pipe while a short segment still counts as a packet.)
        let packets = self.in_flight_segments();
        if packets > 0 && (packets + 1) * self.mss > self.w.cwnd {
            return None;
        }
        // pacing (Linux `tcp_pacing_check`), for retransmissions and new data alike
        if let Some(r) = self.rate.as_deref_mut() {
            if r.holds(now) {
                return None;
            }
        }
        let room = self.w.cwnd - pipe;
        // RFC 6675 NextSeg rule 1: the first lost segment not yet retransmitted (F-RTO's
        // step 2b sends new data instead)
        if self.lost_bytes > self.retrans_bytes_lost() && !self.frto_send_new {
            if let Some(i) = self.first_lost_unretransmitted() {
                if (self.segs[i].len as u64) > room && pipe > 0 {
                    return None;
                }
                return Some(self.retransmit(i, now));
            }
        }
        // Rule 2: new data, within the receiver's window
        let t = self.new_segment(now, Some((room, pipe)))?;
        // Linux re-arms the probe after sending new data; after an ACK it is armed already
        // at this same instant
        if self.probe_armed_at != Some(now) {
            self.arm_probe(now);
        }
        Some(t)
    }

    /// A new segment, if there is data and the receive window has room; `window` is the room
    /// in the congestion window and the pipe, None for a probe that ignores it.
    #[inline(always)]
    fn new_segment(&mut self, now: SimTime, window: Option<(u64, u64)>) -> Option<TxSegment> {
        if self.snd_nxt >= self.app_limit {
            return None;
        }
        let mut len = (self.app_limit - self.snd_nxt).min(self.mss);
        while self.chunk_ends.front().is_some_and(|&e| e <= self.snd_nxt) {
            self.chunk_ends.pop_front();
        }
        if let Some(&end) = self.chunk_ends.front() {
            len = len.min(end - self.snd_nxt);
        }
        if let Some((room, pipe)) = window {
            if len > room && pipe > 0 {
                return None;
            }
        }
        let right_edge = self.snd_una.saturating_add(self.rwnd);
        if !self.ignore_rwnd && self.snd_nxt + len > right_edge {
            return None;
        }
        let seq = self.snd_nxt;
        if self.rate.is_some() {
            self.rate_on_send(now, None, len);
        }
        self.segs.push_back(Seg { seq, len: len as u32, flags: 0, sent_at: now });
        self.snd_nxt += len;
        self.on_transmit(now, len as u32);
        let (ecn, cwr) = if self.ecn_on { (Ecn::Ect0, std::mem::take(&mut self.cwr_due)) } else { (Ecn::NotEct, false) };
        Some(TxSegment { seq, len: len as u32, retx: false, forced: window.is_none(), ecn, cwr })
    }

    fn retransmit(&mut self, i: usize, now: SimTime) -> TxSegment {
        let s = &mut self.segs[i];
        s.flags |= RETRANS | EVER_RETX;
        s.sent_at = now;
        let (seq, len) = (s.seq, s.len);
        if self.rate.is_some() {
            self.rate_on_send(now, Some(i), len as u64);
        }
        self.enter_send_order(i, now);
        self.rtx_scan_seq = seq + len as u64;
        self.count(RETRANS, len as u64, true);
        self.count_undo_retrans();
        self.stats.retransmits += 1;
        self.stats.bytes_retransmitted += len as u64;
        self.on_transmit(now, len);
        if i == 0 && self.rtt.mode() == RtoMode::Linux {
            // Linux restarts the timer whenever it retransmits the head (6.6,
            // tcp_xmit_retransmit_queue), so the head's new copy has a whole RTO to be
            // acknowledged. RFC 6298 restarts it on new data acknowledged and on expiry only
            // (§5.3, §5.6).
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        TxSegment { seq, len, retx: true, forced: false, ecn: Ecn::NotEct, cwr: false }
    }

    /// The tail loss probe (RFC 8985 §7.3): new data if the receive window allows, otherwise
    /// the last segment not SACKed again. Either way the window does not limit it.
    fn loss_probe(&mut self, now: SimTime) -> Option<TxSegment> {
        if self.state != CaState::Open || self.outstanding() == 0 {
            return None;
        }
        let t = if let Some(t) = self.new_segment(now, None) {
            self.tlp.on_probe_sent(ProbeKind::NewData, self.snd_nxt);
            t
        } else {
            let i = (0..self.segs.len()).rev().find(|&i| self.segs[i].flags & SACKED == 0)?;
            let s = &mut self.segs[i];
            // not marked lost: the probe is not a repair, and the pipe does not count it twice
            s.flags |= EVER_RETX;
            s.sent_at = now;
            let (seq, len) = (s.seq, s.len);
            if self.rate.is_some() {
                self.rate_on_send(now, Some(i), len as u64);
            }
            self.enter_send_order(i, now);
            self.count_undo_retrans();
            self.stats.retransmits += 1;
            self.stats.bytes_retransmitted += len as u64;
            self.on_transmit(now, len);
            self.tlp.on_probe_sent(ProbeKind::Retransmission, self.snd_nxt);
            TxSegment { seq, len, retx: true, forced: true, ecn: Ecn::NotEct, cwr: false }
        };
        self.stats.loss_probes += 1;
        self.probe_deadline = None;
        // RFC 8985 §7.3: the RTO timer restarts after a probe
        self.rto_deadline = Some(now + self.rtt.rto());
        Some(t)
    }

    fn on_transmit(&mut self, now: SimTime, len: u32) {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        if matches!(self.state, CaState::Recovery | CaState::Cwr) {
            self.prr.on_sent(len as u64);
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Arms the loss probe (Linux `tcp_schedule_loss_probe`): in the Open state, with data
    /// outstanding and no probe already outstanding; otherwise disarms it.
    #[inline]
    fn arm_probe(&mut self, now: SimTime) {
        self.probe_deadline = None;
        self.probe_armed_at = Some(now);
        if !self.tlp_on || self.state != CaState::Open || self.outstanding() == 0 || !self.tlp.may_probe() {
            return;
        }
        let one = self.outstanding() <= self.mss;
        self.probe_deadline = Some(Tlp::deadline(now, self.rtt.srtt(), one, self.rto_deadline));
    }

    /// Bytes that are both lost and already retransmitted (so not awaiting a retransmission).
    fn retrans_bytes_lost(&self) -> u64 {
        // every RETRANS segment is also LOST until it is acknowledged
        self.retrans_bytes
    }

    /// Marks the first unacknowledged segment lost (unless it is SACKed or marked already);
    /// returns the bytes marked.
    fn mark_head_lost(&mut self) -> u64 {
        let Some(s) = self.segs.front_mut() else { return 0 };
        self.rtx_scan_seq = self.rtx_scan_seq.min(s.seq);
        if s.flags & (SACKED | LOST) != 0 {
            return 0;
        }
        s.flags |= LOST;
        let len = s.len as u64;
        self.count(LOST, len, true);
        len
    }

    /// Without SACK: the duplicate-ACK credit never covers the holes (Linux
    /// `tcp_limit_reno_sacked`: at least one segment, or every lost one, stays outstanding).
    fn limit_reno_sacked(&mut self) {
        let holes = self.lost_bytes.max(self.mss).min(self.outstanding());
        self.set_reno_sacked(self.reno_sacked.min(self.outstanding() - holes));
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
            in_recovery: self.state.recovering(),
            inter_loss_bytes: self.inter_loss_bytes(),
        }
    }

    /// The controller's `inter_loss_bytes`, not asked of a controller that shares none (0).
    #[inline]
    pub fn inter_loss_bytes(&self) -> u64 {
        if self.inter_loss {
            self.cc.inter_loss_bytes()
        } else {
            0
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
        self.ack_received_at = h.received_at;
        self.cw_echo = h.cw_echo;
        let ack = h.ack.min(self.snd_nxt);
        // The common ACK: it advances snd_una, carries no SACK block, and finds nothing
        // SACKed, lost or retransmitted outstanding, the Open state, no loss probe and no
        // timeout to judge outstanding. Every check of the general path below the RTT sample
        // is idle on it (no SACK to apply, no loss to mark, no RACK scan, no probe to judge,
        // no F-RTO, no recovery to end), so it goes from the RTT sample straight to growing
        // the window. It is told before the ACK changes anything: the cumulative part only
        // takes marks away and, with no timeout to judge, leaves the state and the probe as
        // they are. An ACK that only the cumulative part makes common takes the general path,
        // which decides alike (`rack_scan_tests` runs both on every ACK). Without SACK the
        // duplicate-ACK credit is kept up to date by the general path, so such ACKs take it.
        // The general path is out of line: inlined, its state kept the common ACK's values
        // in memory rather than in registers.
        let quiet = ack > self.snd_una
            && self.sack_on
            && !h.has_sack()
            && self.sacked_bytes == 0
            && self.lost_bytes == 0
            && self.retrans_bytes == 0
            && self.state == CaState::Open
            && !h.ece()
            && (!self.tlp_on || self.tlp.may_probe())
            && self.rto_check.is_none()
            && !self.general_only();
        if quiet {
            self.on_common_ack(now, ack, subflows, me);
        } else {
            self.on_ack_general(now, h, ack, subflows, me);
        }
    }

    /// The common ACK (see `on_ack_coupled`): what the general path does for it, without its
    /// idle checks.
    #[inline(always)]
    fn on_common_ack(&mut self, now: SimTime, ack: u64, subflows: &[SubflowState], me: usize) {
        let prior_in_flight = self.in_flight();
        let rated = self.rate.is_some();
        let before = if rated { self.rate_before() } else { (0, 0, 0) };
        let min_rtt = self.rtt.min_rtt();
        let c = self.take_cumulative_ack::<true>(now, ack, min_rtt);
        debug_assert!(self.sacked_ranges.is_empty() && self.dupacks == 0 && self.state == CaState::Open);
        let rtt = c.newest_sent.map(|sent| now.since(sent));
        if let Some(r) = rtt {
            self.take_rtt_sample(now, r);
        }
        self.restart_rto(now);
        self.ack_hooks(now, c.delivered, prior_in_flight, subflows, me);
        self.reo_deadline = None;
        self.frto_send_new = false;
        // (`try_undo_dsack` would do nothing: in Open the undo record is never one that
        // D-SACKs showed spurious, `check_invariants`, and no D-SACK reaches the common ACK)
        debug_assert!(!self.dsack_undo_due());
        if rated {
            self.rate_control(now, &c, before, rtt);
        } else {
            self.grow(now, c.delivered, prior_in_flight, subflows, me);
        }
        self.arm_probe_after_common_ack(now);
    }

    /// `arm_probe` after the common ACK, which was told with the state Open and no probe
    /// outstanding (neither changed since) and restarted the retransmission timer at `now`
    /// with the current RTO (or stopped it, nothing being outstanding). The deadline,
    /// `now + min(PTO, time to the RTO deadline)` there, is then `now + min(PTO, RTO)`
    /// (saturating alike), without the deadline's `Option` and subtraction.
    #[inline(always)]
    fn arm_probe_after_common_ack(&mut self, now: SimTime) {
        debug_assert!(self.state == CaState::Open && self.tlp.may_probe());
        self.probe_deadline = None;
        self.probe_armed_at = Some(now);
        if !self.tlp_on || self.outstanding() == 0 {
            return;
        }
        debug_assert_eq!(self.rto_deadline, Some(now + self.rtt.rto()));
        let pto = Tlp::pto(self.rtt.srtt(), self.outstanding() <= self.mss, self.rtt.rto());
        let deadline = now + pto;
        debug_assert_eq!(deadline, Tlp::deadline(now, self.rtt.srtt(), self.outstanding() <= self.mss, self.rto_deadline));
        self.probe_deadline = Some(deadline);
    }

    /// The controller's hooks that see every ACK, for the controllers that asked for them.
    #[inline(always)]
    fn ack_hooks(&mut self, now: SimTime, delivered: u64, prior_in_flight: u64, subflows: &[SubflowState], me: usize) {
        if self.deliveries {
            let ctx = self.ack_context(now, delivered, prior_in_flight, subflows, me);
            self.cc.on_delivery(&ctx);
        }
        if self.every_ack {
            let ctx = self.ack_context(now, delivered, prior_in_flight, subflows, me);
            self.w = self.cc.on_every_ack(self.w, &ctx);
        }
    }

    /// Any ACK (`ack` is its cumulative acknowledgement, at most snd_nxt): the cumulative
    /// part, SACK blocks and D-SACK, loss detection, the loss probe, F-RTO, the end of a
    /// recovery and the window's answer in each state.
    #[inline(never)]
    fn on_ack_general(&mut self, now: SimTime, h: &AckHeader, ack: u64, subflows: &[SubflowState], me: usize) {
        let prior_in_flight = self.in_flight();
        let rated = self.rate.is_some();
        let before = if rated { self.rate_before() } else { (0, 0, 0) };
        let ack_advanced = ack > self.snd_una;
        let min_rtt = self.rtt.min_rtt();
        let mut c = self.take_cumulative_ack::<false>(now, ack, min_rtt);
        let (sacked, sack_newest, sack_orig) = if self.sack_on {
            if let Some(d) = h.dsack() {
                self.on_dsack(d);
            }
            self.apply_sack(h, now)
        } else {
            (0, None, false)
        };
        c.delivered += sacked;
        c.orig_acked |= sack_orig;
        let rtt = c.newest_sent.max(sack_newest).map(|sent| now.since(sent));
        if let Some(r) = rtt {
            self.take_rtt_sample(now, r);
        }
        if ack_advanced {
            self.restart_rto(now);
        }
        self.ack_hooks(now, c.delivered, prior_in_flight, subflows, me);
        let newly_lost = self.detect_losses(now, ack_advanced);
        if self.tlp_on && self.tlp.on_ack(self.snd_una, self.state != CaState::Open) == ProbeOutcome::Repaired {
            // the probe repaired a loss: reduce once, as a fast recovery would have
            let ctx = LossContext { min_rtt, ..self.loss_context(now, prior_in_flight, subflows, me) };
            self.w = self.cc.on_congestion(self.w, CongestionEvent::FastRetransmit, &ctx);
        }
        self.judge_frto(ack_advanced, c.orig_acked, sacked);
        self.end_recovery();
        // (an ECN echo is only heard once ECN was negotiated: no ECT, no CE, no echo)
        let ece = self.ecn_on && h.ece();
        self.respond(now, &c, ack_advanced, newly_lost, prior_in_flight, ece, subflows, me);
        if rated {
            self.rate_control(now, &c, before, rtt);
        }
        self.arm_probe(now);
    }

    /// A segment of `len` bytes is about to be sent: segment `i` of the scoreboard again, or
    /// (None) a new one. Records it for the rate estimator, tells the controller when it
    /// leaves with nothing in flight (Linux's `CA_EVENT_TX_START`, from
    /// `tcp_event_data_sent`), and moves the pacing's next departure time on.
    #[inline(never)]
    fn rate_on_send(&mut self, now: SimTime, i: Option<usize>, len: u64) {
        let idle = self.in_flight_segments() == 0;
        let Some(r) = self.rate.as_deref_mut() else { return };
        match i {
            Some(i) => r.on_resent(i, now),
            None => r.on_new_segment(now, self.segs.is_empty()),
        }
        if idle {
            let out = self.cc.on_send_from_idle(self.w, r.pacing_rate, now, r.is_app_limited());
            self.w = out.w;
            r.pacing_rate = out.pacing_rate;
        }
        r.on_data_sent(now, len);
    }

    /// The flight in packets and the delivered and lost counts, before an ACK.
    #[inline(never)]
    fn rate_before(&self) -> (u64, u64, u64) {
        let r = self.rate.as_deref().expect("a rate estimator");
        (self.in_flight_segments(), r.delivered, r.lost)
    }

    /// Segment `s`, ending at `end`, left the scoreboard cumulatively acknowledged: its record
    /// goes too, offering its sample, and it counts as delivered unless SACKed before.
    #[inline(never)]
    fn rate_on_acked(&mut self, s: &Seg, end: u64) {
        let Some(r) = self.rate.as_deref_mut() else { return };
        let mut rec = r.recs.pop_front().expect("a record per segment");
        r.on_delivered(&mut rec, s.sent_at, end, false);
        if s.flags & SACKED == 0 && self.sack_on {
            r.delivered += 1;
        }
    }

    /// A controller that runs on rate samples sets the window and the pacing rate from this
    /// ACK's sample (Linux `tcp_cong_control` with `cong_control`); `before` is the flight in
    /// packets and the delivered and lost counts before the ACK.
    #[inline(never)]
    fn rate_control(&mut self, now: SimTime, c: &CumulativeAck, before: (u64, u64, u64), rtt: Option<Dur>) {
        let (prior_in_flight, delivered_before, lost_before) = before;
        let in_flight = self.in_flight_segments();
        let (srtt, min_rtt) = (self.rtt.srtt(), self.rtt.min_rtt());
        let Some(r) = self.rate.as_deref_mut() else { return };
        if !self.sack_on {
            // without SACK each duplicate ACK and the cumulative advance count as delivered
            r.delivered += (c.delivered + c.dup_delivered).div_ceil(self.mss);
        }
        let rs = r.sample(now, r.delivered - delivered_before, r.lost - lost_before, prior_in_flight, min_rtt, rtt);
        let ctx = RateContext {
            now,
            rs,
            delivered: r.delivered,
            lost: r.lost,
            delivered_time: r.delivered_time,
            in_flight,
            state: self.state,
            srtt,
            min_rtt,
            next_send: r.next_send(),
        };
        let out = self.cc.on_rate_sample(self.w, &ctx);
        self.w = out.w;
        r.pacing_rate = out.pacing_rate;
        if out.mark_app_limited {
            r.mark_app_limited(in_flight);
        }
    }

    /// The cumulative part of an ACK up to `ack`: the segments it covers leave the
    /// scoreboard (what they deliver, and RACK's and Karn's view of them), or, if it does not
    /// advance, it counts as a duplicate. Always inlined: called out of line by the common
    /// ACK, it cost that ACK the call and the passing of its result through memory.
    ///
    /// `COMMON`: the common ACK's (`on_ack_coupled`), for which the tests that cannot pass
    /// are left out: it advances snd_una with SACK on, no segment is SACKed, lost or
    /// retransmitted (so none carries those marks and no SACKed range is held), and no
    /// timeout is to be judged.
    #[inline(always)]
    fn take_cumulative_ack<const COMMON: bool>(&mut self, now: SimTime, ack: u64, min_rtt: Option<Dur>) -> CumulativeAck {
        let mut c = CumulativeAck::default();
        if COMMON {
            debug_assert!(ack > self.snd_una && self.sack_on && self.rto_check.is_none());
            debug_assert!(self.sacked_bytes == 0 && self.lost_bytes == 0 && self.retrans_bytes == 0);
        }
        if COMMON || ack > self.snd_una {
            if !COMMON && self.rto_check.is_some() {
                self.judge_timeout_by_ack(now, ack, min_rtt);
            }
            let mut retx_acked = false;
            // the send time of the newest never-retransmitted segment acknowledged, valid
            // once `orig_acked` is set (a plain maximum: cheaper than one of options)
            let mut newest = SimTime::ZERO;
            // (read once: the loop calls out of line, which would have it read per segment)
            let rated = self.rate.is_some();
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
                if rated {
                    self.rate_on_acked(&s, end);
                }
                debug_assert!(!COMMON || s.flags & (SACKED | LOST | RETRANS) == 0);
                if !COMMON && s.flags & (SACKED | LOST | RETRANS) != 0 {
                    self.drop_flags(&s); // (rarely: see there)
                }
                // a segment SACKed earlier was delivered then: it says nothing about now
                if COMMON || s.flags & SACKED == 0 {
                    c.delivered += s.len as u64;
                    let retx = s.flags & EVER_RETX != 0;
                    if self.rack_on {
                        self.rack.on_delivered(s.sent_at, end, retx, now, min_rtt);
                    }
                    if retx {
                        retx_acked = true;
                    } else {
                        c.orig_acked = true;
                        newest = newest.max(s.sent_at);
                    }
                }
            }
            c.newest_sent = (c.orig_acked && !retx_acked).then_some(newest);
            if !self.rack_order.is_empty() {
                self.rack_order.drop_acked(self.segs.dropped());
            }
            if !COMMON && !self.sack_on {
                // the duplicate ACKs already counted part of this as delivered; the ACK
                // itself delivers at least one segment (Linux `tcp_remove_reno_sacks`)
                let acked = ack - self.snd_una;
                c.delivered = acked.saturating_sub(self.reno_sacked).max(acked.min(self.mss));
                self.set_reno_sacked(self.reno_sacked - self.reno_sacked.min(acked.saturating_sub(self.mss)));
            }
            self.snd_una = ack;
            if !COMMON {
                self.drop_ranges_below(ack);
            }
            debug_assert!(!COMMON || self.sacked_ranges.is_empty());
            self.dupacks = 0;
            if self.rtx_scan_seq < ack {
                self.rtx_scan_seq = ack;
            }
            // (the retransmission timer restarts after this ACK's RTT sample: `restart_rto`)
        } else if ack == self.snd_una && self.snd_nxt > self.snd_una {
            self.dupacks += 1;
            if !self.sack_on {
                // a duplicate ACK: one more segment has left the network (Linux
                // `tcp_add_reno_sack`)
                self.set_reno_sacked(self.reno_sacked + self.mss);
                c.dup_delivered = self.mss;
            }
        }
        c
    }

    /// An RTT sample `r` from newly acknowledged data never retransmitted. Always inlined:
    /// with the test of `rtt_samples` the compiler put it out of line (+4 per packet).
    #[inline(always)]
    fn take_rtt_sample(&mut self, now: SimTime, r: Dur) {
        self.rtt.on_ack_sample(r, self.snd_una, self.snd_nxt);
        if self.rtt_samples {
            self.cc.on_rtt_sample(r, now);
        }
    }

    /// New data was cumulatively acknowledged: the retransmission timer restarts with the RTO
    /// after this ACK's sample, or stops when all is acknowledged (RFC 6298 §5.2/5.3). Never
    /// on SACK alone: otherwise a lost retransmission could hide behind a stream of SACKs
    /// for new data and never time out.
    #[inline]
    fn restart_rto(&mut self, now: SimTime) {
        self.rto_deadline = (self.snd_una < self.snd_nxt).then(|| now + self.rtt.rto());
    }

    /// Marks the segments this ACK shows lost: by SACK (RFC 6675), by NewReno's partial ACK
    /// without SACK, and by RACK. Returns the bytes newly marked.
    fn detect_losses(&mut self, now: SimTime, ack_advanced: bool) -> u64 {
        let mut newly_lost = 0;
        if self.sacked_bytes > 0 {
            newly_lost += self.mark_lost_by_sack();
        }
        if !self.sack_on {
            // NewReno (RFC 6582 §3.2 step 5): a partial ACK in recovery retransmits the
            // first unacknowledged segment
            if self.state == CaState::Recovery && ack_advanced && self.snd_una < self.recovery_point {
                newly_lost += self.mark_head_lost();
            }
            self.limit_reno_sacked();
        }
        if self.rack_on && (self.sacked_bytes > 0 || self.retrans_bytes > 0) {
            newly_lost += self.rack_detect(now);
        } else {
            self.reo_deadline = None;
        }
        newly_lost
    }

    /// F-RTO (RFC 5682) after a timeout: whether the ACK shows it spurious (undo), lets new
    /// data go first, or leaves the conventional recovery.
    fn judge_frto(&mut self, ack_advanced: bool, orig_acked: bool, sacked: u64) {
        self.frto_send_new = false;
        if self.state == CaState::Loss && self.frto.active() {
            let facts = AckFacts {
                una_advanced: ack_advanced,
                orig_acked,
                sacked_or_dup: sacked > 0 || (!ack_advanced && self.outstanding() > 0),
                recovered: self.snd_una >= self.recovery_point,
                can_send_new: self.unsent() > 0 && (self.ignore_rwnd || self.snd_nxt < self.snd_una.saturating_add(self.rwnd)),
            };
            match self.frto.on_ack(facts, self.snd_nxt) {
                FrtoAction::Undo => self.undo_timeout(),
                FrtoAction::SendNew => self.frto_send_new = true,
                FrtoAction::Conventional | FrtoAction::Wait => {}
            }
        }
    }

    /// Leaves fast recovery or the Loss state once everything outstanding at its start is
    /// acknowledged, and undoes a reduction D-SACKs have shown unnecessary.
    fn end_recovery(&mut self) {
        match self.state {
            CaState::Recovery if self.snd_una >= self.recovery_point => {
                if self.prr_on && self.rate.is_none() {
                    // Linux `tcp_end_cwnd_reduction`: the window the controller chose
                    self.w.cwnd = self.recovery_target.cwnd;
                    self.w.ssthresh = self.recovery_target.ssthresh;
                }
                self.state = CaState::Open;
                self.w = self.cc.on_recovery_exit(self.w);
                self.try_undo_dsack();
            }
            CaState::Loss if self.snd_una >= self.recovery_point => {
                self.state = CaState::Open;
                self.frto.stop();
                self.w = self.cc.on_recovery_exit(self.w);
            }
            // held until data above the point is acknowledged, so that CWR reached the receiver
            // (Linux `tcp_fastretrans_alert`)
            CaState::Cwr if self.snd_una > self.recovery_point => {
                if self.prr_on && self.rate.is_none() {
                    self.w.cwnd = self.recovery_target.cwnd;
                    self.w.ssthresh = self.recovery_target.ssthresh;
                }
                self.state = CaState::Open;
                self.w = self.cc.on_recovery_exit(self.w);
            }
            _ => {}
        }
        if self.state == CaState::Open {
            self.try_undo_dsack();
        } else if self.state == CaState::Loss && self.undo.is_some_and(|u| u.dsacked && u.retrans == 0) {
            self.undo = None;
            self.stats.dsack_undos += 1;
            self.undo_timeout();
        }
    }

    /// The window's answer to the ACK in each state: grow it, enter fast recovery, or pace
    /// the recovery with PRR.
    #[allow(clippy::too_many_arguments)]
    fn respond(
        &mut self,
        now: SimTime,
        c: &CumulativeAck,
        ack_advanced: bool,
        newly_lost: u64,
        prior_in_flight: u64,
        ece: bool,
        subflows: &[SubflowState],
        me: usize,
    ) {
        // a controller on rate samples sets the window itself after this (`rate_control`)
        let prr = self.prr_on && self.rate.is_none();
        match self.state {
            CaState::Open | CaState::Cwr => {
                if self.dupacks >= DUP_THRESH || self.lost_bytes > 0 {
                    self.enter_recovery(now, prior_in_flight, subflows, me);
                    if prr {
                        self.prr_step(c.delivered + c.dup_delivered, ack_advanced, newly_lost > 0);
                    }
                    return;
                }
                if ece && self.state == CaState::Open {
                    self.enter_cwr(now, prior_in_flight, subflows, me);
                }
                if self.state == CaState::Cwr {
                    if prr {
                        self.prr_step(c.delivered + c.dup_delivered, ack_advanced, false);
                    }
                } else if self.rate.is_none() {
                    self.grow(now, c.delivered, prior_in_flight, subflows, me);
                }
            }
            // Linux's Loss state: not a window reduction in progress, so new ACKs grow the
            // window at once (slow start from one segment towards ssthresh)
            CaState::Loss if self.rate.is_none() => self.grow(now, c.delivered, prior_in_flight, subflows, me),
            CaState::Loss => {}
            CaState::Recovery => {
                if prr {
                    self.prr_step(c.delivered + c.dup_delivered, ack_advanced, newly_lost > 0);
                }
            }
        }
    }

    #[cfg(test)]
    fn general_only(&self) -> bool {
        self.general_only
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn general_only(&self) -> bool {
        false
    }

    #[inline]
    fn grow(&mut self, now: SimTime, delivered: u64, prior_in_flight: u64, subflows: &[SubflowState], me: usize) {
        if delivered > 0 && self.cwnd_limited(prior_in_flight) {
            let ctx = self.ack_context(now, delivered, prior_in_flight, subflows, me);
            self.w = self.cc.on_ack(self.w, &ctx);
        }
    }

    fn ack_context<'a>(&self, now: SimTime, delivered: u64, in_flight: u64, subflows: &'a [SubflowState], me: usize) -> AckContext<'a> {
        AckContext {
            now,
            bytes_acked: delivered,
            in_flight,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            subflows,
            me,
            received_at: self.ack_received_at,
            cw_echo: self.cw_echo,
        }
    }

    /// PRR: the window for this ACK of fast recovery.
    fn prr_step(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool) {
        let target = self.recovery_target.cwnd;
        self.w.cwnd = self.prr.on_ack(delivered, self.in_flight(), target, self.mss, una_advanced, newly_lost).max(self.mss);
    }

    /// Linux-style cwnd validation: grow only while the window is what limits sending.
    fn cwnd_limited(&self, in_flight: u64) -> bool {
        if self.w.in_slow_start() {
            self.w.cwnd < 2 * in_flight.max(self.mss)
        } else {
            in_flight + self.mss >= self.w.cwnd
        }
    }

    /// Enters fast recovery. The controller halves `in_flight`, the RFC 6675 pipe before this
    /// ACK, as ns-3 does with its BytesInFlight (RFC 5681 writes FlightSize, the outstanding
    /// data; the two differ by the segments already SACKed). With PRR the window then moves
    /// towards the controller's choice ACK by ACK; without, it drops to it at once.
    ///
    /// From CWR the window is already being reduced for this round: no second reduction, and
    /// CWR's recovery point stays (Linux `tcp_enter_recovery` skips `tcp_init_cwnd_reduction`
    /// then).
    fn enter_recovery(&mut self, now: SimTime, in_flight: u64, subflows: &[SubflowState], me: usize) {
        let reducing = self.state == CaState::Cwr;
        self.state = CaState::Recovery;
        self.stats.fast_recoveries += 1;
        self.rack.on_recovery();
        self.tlp.reset();
        let target = if reducing {
            self.undo = None;
            self.recovery_target
        } else {
            self.recovery_point = self.snd_nxt;
            self.undo = Some(Undo { cwnd: self.w.cwnd, ssthresh: self.w.ssthresh, retrans: 0, dsacked: false });
            let ctx = self.loss_context(now, in_flight, subflows, me);
            self.cc.on_congestion(self.w, CongestionEvent::FastRetransmit, &ctx)
        };
        // RFC 6675 §5 step 4.3: retransmit the first unacknowledged segment, at once
        if let Some(s) = self.segs.front_mut() {
            if s.flags & (SACKED | LOST) == 0 {
                s.flags |= LOST;
                let len = s.len as u64;
                self.count(LOST, len, true);
            }
            self.rtx_scan_seq = self.snd_una;
        }
        if !self.sack_on {
            self.limit_reno_sacked();
        }
        if self.prr_on {
            if !reducing {
                self.recovery_target = target;
                self.w.ssthresh = target.ssthresh;
                self.prr = Prr::start(in_flight);
            }
        } else {
            self.w = target;
            self.fast_rtx_due = !self.segs.is_empty();
        }
    }

    /// What a controller is told of a congestion event on this subflow.
    fn loss_context<'a>(&self, now: SimTime, in_flight: u64, subflows: &'a [SubflowState], me: usize) -> LossContext<'a> {
        LossContext {
            now,
            in_flight,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            subflows,
            me,
            cw_echo: self.cw_echo,
            halve_cwnd: self.halve_cwnd,
        }
    }

    /// An ECN echo in the Open state (Linux `tcp_enter_cwr`): one reduction for the round, as
    /// a loss would make, paced by PRR (or at once without it); CWR goes out on the next new
    /// segment. `in_flight` is the pipe before this ACK.
    fn enter_cwr(&mut self, now: SimTime, in_flight: u64, subflows: &[SubflowState], me: usize) {
        self.state = CaState::Cwr;
        self.recovery_point = self.snd_nxt;
        self.stats.ecn_reductions += 1;
        self.cwr_due = true;
        // Linux clears the undo marker: an ECN reduction is never undone
        self.undo = None;
        let ctx = self.loss_context(now, in_flight, subflows, me);
        let target = self.cc.on_congestion(self.w, CongestionEvent::FastRetransmit, &ctx);
        self.recovery_target = target;
        if self.prr_on {
            self.w.ssthresh = target.ssthresh;
            self.prr = Prr::start(in_flight);
        } else {
            self.w = target;
        }
    }

    // ----- timers -----

    /// The retransmission timer fired at `now` (tests: the owner calls `on_timer`).
    pub fn on_rto(&mut self, now: SimTime) {
        self.fire_rto(now, &[], 0);
    }

    /// The deadline of `timer_deadline` passed (plain TCP).
    pub fn on_timer(&mut self, now: SimTime) -> TimerEvent {
        self.on_timer_coupled(now, &[], 0)
    }

    /// The deadline of `timer_deadline` passed; `subflows` as for `on_ack_coupled`. Returns
    /// which timer it was: only `Rto` is a retransmission timeout.
    pub fn on_timer_coupled(&mut self, now: SimTime, subflows: &[SubflowState], me: usize) -> TimerEvent {
        // pacing's wait is over: the owner transmits after any timer
        if let Some(r) = self.rate.as_deref_mut() {
            if r.pace_deadline.is_some_and(|d| d <= now) {
                r.pace_deadline = None;
            }
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            return if self.fire_rto(now, subflows, me) { TimerEvent::Rto } else { TimerEvent::None };
        }
        if self.reo_deadline.is_some_and(|d| d <= now) {
            self.reo_deadline = None;
            let prior_in_flight = self.in_flight();
            if self.rack_detect(now) > 0 {
                let prr = self.prr_on && self.rate.is_none();
                match self.state {
                    CaState::Open | CaState::Cwr => {
                        self.enter_recovery(now, prior_in_flight, subflows, me);
                        if prr {
                            self.prr_step(self.mss, false, true);
                        }
                    }
                    CaState::Recovery if prr => self.prr_step(self.mss, false, true),
                    _ => {}
                }
            }
            self.arm_probe(now);
            return TimerEvent::Reorder;
        }
        if self.probe_deadline.is_some_and(|d| d <= now) {
            self.probe_deadline = None;
            if self.state == CaState::Open && self.outstanding() > 0 && self.tlp.may_probe() {
                self.probe_due = true;
                return TimerEvent::LossProbe;
            }
        }
        TimerEvent::None
    }

    /// The retransmission timeout; false if nothing was outstanding.
    fn fire_rto(&mut self, now: SimTime, subflows: &[SubflowState], me: usize) -> bool {
        if self.snd_una == self.snd_nxt {
            self.rto_deadline = None;
            return false;
        }
        self.stats.timeouts += 1;
        if self.rtt.backoff() == 0 {
            self.stats.first_timeouts += 1;
            self.stats.first_timeout_sum = self.stats.first_timeout_sum + self.rtt.rto();
        }
        let repeated = self.rtt.backoff() > 0;
        match self.state {
            CaState::Open => {
                // the flight at the timeout, before anything is marked lost
                let in_flight = self.in_flight();
                self.prior = Some((self.w.cwnd, self.w.ssthresh));
                self.undo = Some(Undo { cwnd: self.w.cwnd, ssthresh: self.w.ssthresh, retrans: 0, dsacked: false });
                self.rack.on_recovery();
                let ctx = self.loss_context(now, in_flight, subflows, me);
                self.w = self.cc.on_congestion(self.w, CongestionEvent::Timeout, &ctx);
            }
            CaState::Recovery | CaState::Cwr => {
                // this episode's reduction was made on entering recovery (or CWR): keep its
                // ssthresh and restart from one segment
                if self.prr_on {
                    self.w.ssthresh = self.recovery_target.ssthresh;
                }
                self.prior = None;
                self.w.cwnd = self.mss;
            }
            CaState::Loss => {
                // a further timeout in the same episode: ssthresh stays
                self.w.cwnd = self.mss;
            }
        }
        // Linux runs F-RTO on a timeout outside recovery, or on a repeated one
        let frto = self.frto_on && (!self.state.recovering() || repeated);
        self.frto.on_timeout(frto, self.snd_nxt);
        self.frto_send_new = false;
        self.state = CaState::Loss;
        self.recovery_point = self.snd_nxt;
        self.dupacks = 0;
        self.fast_rtx_due = false;
        self.probe_due = false;
        self.probe_deadline = None;
        self.reo_deadline = None;
        self.tlp.reset();
        // every unSACKed segment is presumed lost, retransmissions included
        let (mut bytes, mut segs) = (0, 0);
        self.segs.for_each_mut(|s| {
            if s.flags & SACKED == 0 {
                if s.flags & LOST == 0 {
                    bytes += s.len as u64;
                    segs += 1;
                }
                s.flags = (s.flags & EVER_RETX) | LOST;
            }
        });
        self.count_many(LOST, bytes, segs, true);
        self.count_many(RETRANS, self.retrans_bytes, self.retrans_segs, false);
        self.set_reno_sacked(0);
        self.rtx_scan_seq = self.snd_una;
        // no segment is a RACK candidate any more (each is SACKed or lost and awaiting a
        // retransmission)
        self.rack_order.clear();
        self.rack_order.fresh_from = self.segs.dropped() + self.segs.len() as u64;
        self.rto_check = self.segs.front().map(|s| RtoCheck { seq: s.seq, end: s.seq + s.len as u64, at: now });
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
        true
    }

    /// Checks the scoreboard's counters against the segments (debug and tests).
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut sacked, mut lost, mut retrans) = (0u64, 0u64, 0u64);
        let mut counts = (0u64, 0u64, 0u64);
        let mut expect = self.snd_una;
        for s in self.segs.iter() {
            if s.seq != expect {
                return Err(format!("gap in scoreboard at {} (expected {expect})", s.seq));
            }
            expect = s.seq + s.len as u64;
            let l = s.len as u64;
            if s.flags & SACKED != 0 {
                sacked += l;
                counts.0 += 1;
            }
            if s.flags & LOST != 0 {
                lost += l;
                counts.1 += 1;
            }
            if s.flags & RETRANS != 0 {
                retrans += l;
                counts.2 += 1;
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
        // the range index is exactly the union of the SACKed segments
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for s in self.segs.iter().filter(|s| s.flags & SACKED != 0) {
            match ranges.last_mut() {
                Some(last) if last.1 == s.seq => last.1 = s.seq + s.len as u64,
                _ => ranges.push((s.seq, s.seq + s.len as u64)),
            }
        }
        if ranges != self.sacked_ranges {
            return Err(format!("SACKed ranges {:?} != scoreboard {:?}", self.sacked_ranges, ranges));
        }
        if (sacked, lost, retrans) != (self.sacked_bytes, self.lost_bytes, self.retrans_bytes) {
            return Err(format!(
                "counters ({}, {}, {}) != scoreboard ({sacked}, {lost}, {retrans})",
                self.sacked_bytes, self.lost_bytes, self.retrans_bytes
            ));
        }
        if counts != (self.sacked_segs, self.lost_segs, self.retrans_segs) {
            return Err(format!(
                "segment counters ({}, {}, {}) != scoreboard {counts:?}",
                self.sacked_segs, self.lost_segs, self.retrans_segs
            ));
        }
        let gone = (sacked + lost + self.reno_sacked).wrapping_sub(retrans);
        let credit_segs = if self.reno_sacked == 0 { 0 } else { self.reno_sacked / self.mss };
        let gone_segs = counts.0 + counts.1 + credit_segs - counts.2;
        if (gone, gone_segs) != (self.out_of_pipe, self.out_of_pipe_segs) {
            return Err(format!(
                "out of the pipe ({}, {} segments) != scoreboard ({gone}, {gone_segs} segments)",
                self.out_of_pipe, self.out_of_pipe_segs,
            ));
        }
        if self.w.cwnd == 0 {
            return Err("cwnd is zero".into());
        }
        if self.sack_on && self.reno_sacked != 0 {
            return Err("duplicate-ACK credit with SACK on".into());
        }
        if !self.sack_on && self.sacked_bytes != 0 {
            return Err("SACKed bytes with SACK off".into());
        }
        if self.sacked_bytes + self.lost_bytes + self.reno_sacked > self.outstanding() {
            return Err(format!(
                "sacked {} + lost {} + duplicate-ACK credit {} exceed the {} outstanding",
                self.sacked_bytes,
                self.lost_bytes,
                self.reno_sacked,
                self.outstanding()
            ));
        }
        if self.snd_una > self.snd_nxt || self.snd_nxt > self.app_limit {
            return Err("sequence space out of order".into());
        }
        // every way into Open, and every D-SACK, ends in `end_recovery`'s `try_undo_dsack`
        // (so the common ACK need not try it)
        if self.state == CaState::Open && self.dsack_undo_due() {
            return Err("in Open with a reduction D-SACKs showed spurious, not undone".into());
        }
        Ok(())
    }
}

mod rack_scan;
mod ring;
mod scoreboard;
mod undo;
use undo::RtoCheck;

/// RACK's indexed scan against a plain walk over the scoreboard, verdict for verdict.
#[cfg(test)]
mod rack_scan_tests;

#[cfg(test)]
mod tests;
