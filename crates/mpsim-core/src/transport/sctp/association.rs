//! An SCTP association: the data sender (TSN space, send queue and retransmission queue, SACK
//! processing, T3-rtx timers, destination choice) and, at the far end, the data receiver,
//! in one sans-IO component like the other transports.
//!
//! Departures from RFC 4960 and what users compare against (INET, FreeBSD), by design:
//! * one unordered stream of user data; no stream sequence numbers, no handshake (the
//!   association is established at the flow's start);
//! * HEARTBEATs (§8.3) probe only inactive destinations (every RTO + HB.interval) and, with
//!   CMT-PF, potentially-failed ones (every RTO); idle active destinations are not probed,
//!   so their RTO is not refreshed while they carry nothing;
//! * a SACK goes back along the path its last DATA packet came on (§6.4's "same address"
//!   rule);
//! * with bundling, a packet carries new data chunks of consecutive TSNs only;
//!   retransmissions go one chunk per packet;
//! * RTT is sampled on every SACK per destination from the highest newly acked chunk sent
//!   once (Karn's rule), as FreeBSD does, rather than once per round trip.

use super::cc::{AckEvent, LossEvent, LossKind, LossVerdict, TimestampSample};
use super::cmt::{cwnd_may_grow, strikes, NewlyAcked};
use super::config::SctpConfig;
use super::config::{HEARTBEAT_CHUNK, PACKET_HEADER};
use super::dest::{DestState, Destination};
use super::receiver::{SackNow, SackRecord, SctpReceiver};
use super::rtx::{choose, DestView, RtxCause};
use crate::cc::SubflowState;
use crate::metrics::TraceKind;
use crate::net::{Ecn, Header, SctpControlHeader, SctpDataHeader, SctpSackHeader};
use crate::sched::{CaState, Decision, Sched, SchedContext, SubflowView, ALL_MAYBE_AVAILABLE};
use crate::time::{Dur, SimTime};
use crate::transport::{arm, Action, Arrival, Progress, Sink, TimerKind};
use std::collections::{BTreeSet, VecDeque};

/// SACK records kept for SACKs in flight; older ones are dropped (a SACK that arrives after
/// this many newer ones were sent carries only its cumulative ack).
const SACK_LOG: usize = 1024;

/// A chunk the sender has assigned a TSN to and not yet seen cumulatively acked.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    offset: u64,
    /// Payload bytes.
    len: u32,
    /// Destination it was last sent to.
    dest: u8,
    sent_at: SimTime,
    transmissions: u16,
    /// Acked by a gap block.
    acked: bool,
    /// For an acked chunk: a TSN above it such that every TSN from this one up to it (not
    /// included) is acked too, the next one to look at when skipping acked chunks. Pointers
    /// are shortened where walks start, so a SACK that repeats the gap blocks of the last one
    /// skips each acked run at once instead of visiting its chunks. Kept as the distance
    /// from this TSN (at least 1), so the chunk stays 32 bytes.
    skip: u32,
    /// Counted in its destination's flight.
    in_flight: bool,
    /// In the retransmission queue.
    marked: bool,
    missing: u8,
    fast_retransmitted: bool,
}

/// Association-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssocStats {
    /// Every SACK that reached the sender.
    pub sacks_received: u64,
    /// Gap-ack blocks and duplicate TSNs of the SACKs `on_sack` processed (not stale, not
    /// after a failure); see `SctpSummary::gap_blocks_received`.
    pub gap_blocks_received: u64,
    pub dup_tsns_reported: u64,
    /// Fast retransmissions that did not reduce a window (a destination already in fast
    /// recovery, or a loss the controller did not take as congestion).
    pub fast_retransmits_without_reduction: u64,
}

pub struct SctpConn {
    pub cfg: SctpConfig,
    pub dests: Vec<Destination>,
    pub check: bool,
    // ----- sender -----
    pub app_limit: u64,
    /// Stream bytes put into chunks so far.
    pub next_offset: u64,
    next_tsn: u64,
    /// Cumulative TSN ack point: every TSN up to it is acked.
    pub cum_ack: u64,
    /// Stream bytes acked cumulatively.
    pub acked_bytes: u64,
    chunks: VecDeque<Chunk>,
    rtx: BTreeSet<u64>,
    /// Bytes of chunks not acked (cumulatively or by gap blocks).
    unacked_bytes: u64,
    /// The peer's receiver window as the sender tracks it (§6.2.1).
    pub peer_rwnd: u64,
    /// One retransmission packet may go out regardless of cwnd (§7.2.4 step 3, §6.3.3 E3).
    rtx_allowance: bool,
    /// CMT: where new data goes (`cfg.scheduler`), and the views it reads, reused.
    sched: Sched,
    views_buf: Vec<SubflowView>,
    pub bytes_sent: u64,
    assoc_errors: u32,
    pub failover_at: Option<SimTime>,
    pub failed_at: Option<SimTime>,
    blocked_since: Option<SimTime>,
    blocked_total: Dur,
    pub stats: AssocStats,
    // ----- receiver -----
    pub rx: SctpReceiver,
    sack_log: VecDeque<SackRecord>,
    /// Id of `sack_log[0]`.
    sack_base: u32,
    delack: Option<SimTime>,
    delack_event: Option<SimTime>,
    /// Destination (path) the last DATA packet came on: SACKs go back along it.
    last_rx_dest: usize,
    // ----- ECN (RFC 4960 Appendix A) -----
    /// Receiver: the TSN its SACKs report in an ECNE chunk until a CWR covers it.
    ecne: Option<u64>,
    /// Receiver: DATA packets that arrived CE.
    pub ecn_ce_received: u64,
    /// Sender: the highest TSN sent when the window was last reduced for an ECNE (an ECNE
    /// for a TSN up to it is answered by that reduction), and the CWR owed to the receiver.
    last_cwr_tsn: u64,
    cwr_due: Option<u64>,
}

impl SctpConn {
    /// An association over `dests` (one per path; the primary is `cfg.primary`).
    pub fn new(mut cfg: SctpConfig, dests: Vec<Destination>) -> SctpConn {
        assert!(!dests.is_empty() && dests.len() <= 64 && cfg.primary < dests.len());
        // a jitter-based controller reads the timestamp chunks
        cfg.timestamps |= super::SctpCc::reads_timestamps(cfg.cc);
        let rx = SctpReceiver::new(cfg.rcv_buf, cfg.timestamps);
        let sched = Sched::by_name(cfg.scheduler).expect("an SCTP scheduler from SCTP_SCHEDULERS");
        SctpConn {
            peer_rwnd: cfg.rcv_buf,
            cfg,
            dests,
            check: false,
            app_limit: 0,
            next_offset: 0,
            next_tsn: 1,
            cum_ack: 0,
            acked_bytes: 0,
            chunks: VecDeque::new(),
            rtx: BTreeSet::new(),
            unacked_bytes: 0,
            rtx_allowance: false,
            sched,
            views_buf: Vec::new(),
            bytes_sent: 0,
            assoc_errors: 0,
            failover_at: None,
            failed_at: None,
            blocked_since: None,
            blocked_total: Dur::ZERO,
            stats: AssocStats::default(),
            rx,
            sack_log: VecDeque::new(),
            sack_base: 0,
            delack: None,
            delack_event: None,
            last_rx_dest: 0,
            ecne: None,
            ecn_ce_received: 0,
            last_cwr_tsn: 0,
            cwr_due: None,
        }
    }

    /// The gap blocks, duplicate TSNs and echoes of the SACK with id `id`, while the sender
    /// has not processed it yet (for packet captures).
    pub fn sack_record(&self, id: u32) -> Option<&SackRecord> {
        self.sack_log.get(id.wrapping_sub(self.sack_base) as usize)
    }

    pub fn write(&mut self, len: u64) {
        self.app_limit += len;
    }

    /// Bytes the send buffer holds: written and not yet acknowledged cumulatively; with
    /// NR-SACK, gap-acked chunks are freed too.
    pub fn send_buffer_bytes(&self) -> u64 {
        let held = self.app_limit - self.acked_bytes;
        if self.cfg.nr_sack {
            held - ((self.next_offset - self.acked_bytes) - self.unacked_bytes)
        } else {
            held
        }
    }

    pub fn progress(&self) -> Progress {
        Progress { written: self.app_limit, acked: self.acked_bytes, delivered: self.rx.delivered(), bytes_sent: self.bytes_sent }
    }

    /// Total time new data waited for the receiver window while a destination had cwnd room.
    pub fn blocked_time(&self, now: SimTime) -> Dur {
        self.blocked_total + self.blocked_since.map_or(Dur::ZERO, |t| now.since(t))
    }

    fn note_blocked(&mut self, now: SimTime, blocked: bool) {
        match (blocked, self.blocked_since) {
            (true, None) => self.blocked_since = Some(now),
            (false, Some(t)) => {
                self.blocked_total = self.blocked_total + now.since(t);
                self.blocked_since = None;
            }
            _ => {}
        }
    }

    /// What a chunk of `len` payload bytes counts in its destination's flight, cwnd growth and
    /// bandwidth samples: the DATA chunk's Length field (RFC 4960 §3.3.1: its 16-byte header
    /// and payload, without padding), as FreeBSD books it. Counted in payload bytes alone, as
    /// Linux does, a window of tiny unbundled chunks holds thousands of packets: the initial
    /// window (4,380 bytes) takes 2,190 packets of 2-byte messages that way, 244 this way.
    #[inline]
    fn booked(len: u32) -> u64 {
        (len + super::config::DATA_CHUNK_HEADER) as u64
    }

    fn chunk(&self, tsn: u64) -> &Chunk {
        &self.chunks[(tsn - self.cum_ack - 1) as usize]
    }

    fn chunk_mut(&mut self, tsn: u64) -> &mut Chunk {
        &mut self.chunks[(tsn - self.cum_ack - 1) as usize]
    }

    /// From the gap-acked chunk `tsn` (whose skip pointer is `skip`), the first TSN that is
    /// not gap-acked, or `limit` if that comes first, following skip pointers; a walk of
    /// more than one hop leaves `tsn` pointing straight to its end, so a later SACK repeating
    /// the block skips it in one.
    #[inline]
    fn skip_acked(&mut self, tsn: u64, skip: u32, limit: u64) -> u64 {
        let mut to = tsn + skip as u64;
        let mut hops = 1;
        while to < limit && self.chunk(to).acked {
            to += self.chunk(to).skip as u64;
            hops += 1;
        }
        if hops > 1 {
            // a shorter pointer is still a valid one
            self.chunk_mut(tsn).skip = (to - tsn).min(u32::MAX as u64) as u32;
        }
        to
    }

    pub fn in_flight(&self) -> u64 {
        self.dests.iter().map(|d| d.flight).sum()
    }

    // ===================================================================== receiver side

    pub fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        let arrival = match header {
            Header::SctpData(h) => self.on_data(now, sub, h, tx),
            Header::SctpSack(h) => {
                self.on_sack(now, h);
                // a restarted T3-rtx may now be due before the timer event pending for it
                for d in 0..self.dests.len() {
                    let next = self.dests[d].next_deadline();
                    arm(tx, &mut self.dests[d].t3_event, next, d, TimerKind::Rto);
                }
                Arrival::Nothing
            }
            Header::SctpControl(h) if !h.ack => {
                // the receiving end answers a HEARTBEAT on the path it came by
                let header = Header::SctpControl(SctpControlHeader { ack: true, sent_at: h.sent_at });
                tx.push(Action::Packet { sub: sub as u8, route: self.dests[sub].rev, size: PACKET_HEADER + HEARTBEAT_CHUNK, header });
                Arrival::Nothing
            }
            Header::SctpControl(h) => {
                self.on_heartbeat_ack(now, sub, h.sent_at);
                Arrival::Nothing
            }
            _ => Arrival::Nothing,
        };
        if self.check {
            self.check_invariants();
        }
        arrival
    }

    fn on_data(&mut self, now: SimTime, sub: usize, h: &SctpDataHeader, tx: &mut impl Sink) -> Arrival {
        // the CWR chunk comes before the DATA chunks in the packet: a CE on this packet
        // starts the echo again (Linux `sctp_do_ecn_cwr_work`, `sctp_do_ecn_ce_work`)
        if let Some(cwr) = h.cwr {
            if self.ecne.is_some_and(|t| t <= cwr) {
                self.ecne = None;
            }
        }
        if h.ecn == Ecn::Ce {
            self.ecn_ce_received += 1;
            self.ecne = Some(h.tsn);
        }
        let before = (self.rx.delivered(), self.rx.buffered());
        self.last_rx_dest = sub;
        let dac = self.cfg.cmt && self.cfg.dac;
        let now_or_later = self.rx.on_data(now, sub as u8, h, self.cfg.chunk, self.cfg.delayed_sack, self.cfg.sack_freq, dac);
        let new_bytes = (self.rx.delivered() + self.rx.buffered()).saturating_sub(before.0 + before.1);
        self.dests[sub].stats.bytes_received += new_bytes;
        match now_or_later {
            SackNow::Now => self.send_sack(now, tx),
            SackNow::Later => {
                if self.delack.is_none() {
                    self.delack = Some(now + self.cfg.sack_delay);
                }
                arm(tx, &mut self.delack_event, self.delack, 0, TimerKind::DelAck);
            }
        }
        if self.rx.delivered() > before.0 {
            Arrival::Stream { upto: self.rx.delivered() }
        } else {
            Arrival::Nothing
        }
    }

    fn send_sack(&mut self, _now: SimTime, tx: &mut impl Sink) {
        self.delack = None;
        // the SACK must fit in one packet (RFC 4960 §6.2): the lowest gap blocks and duplicate
        // TSNs that fit are reported, as FreeBSD does
        let room = (self.cfg.mtu.saturating_sub(PACKET_HEADER + super::config::NR_SACK_CHUNK) / 4) as usize;
        let rec = self.rx.take_sack(room);
        let size = self.cfg.sack_packet_wire(rec.gaps.len(), rec.dups.len(), rec.echoes.len())
            + if self.ecne.is_some() { super::config::ECN_CHUNK } else { 0 };
        let id = self.sack_base.wrapping_add(self.sack_log.len() as u32);
        self.sack_log.push_back(rec);
        if self.sack_log.len() > SACK_LOG {
            self.sack_log.pop_front();
            self.sack_base = self.sack_base.wrapping_add(1);
        }
        let h = SctpSackHeader {
            id,
            cum_tsn: self.rx.cum_tsn(),
            a_rwnd: self.rx.a_rwnd().min(u32::MAX as u64) as u32,
            delivered: self.rx.delivered(),
            ecne: self.ecne,
        };
        let d = self.last_rx_dest;
        tx.push(Action::Packet { sub: d as u8, route: self.dests[d].rev, size, header: Header::SctpSack(h) });
    }

    // ======================================================================= sender side

    fn on_sack(&mut self, now: SimTime, h: &SctpSackHeader) {
        self.stats.sacks_received += 1;
        // §6.2.1 D i): a SACK whose cumulative TSN ack is below the ack point is stale
        if h.cum_tsn < self.cum_ack || self.failed_at.is_some() {
            return;
        }
        let rec = match h.id.wrapping_sub(self.sack_base) as usize {
            k if k < self.sack_log.len() => std::mem::take(&mut self.sack_log[k]),
            _ => SackRecord::default(),
        };
        self.stats.gap_blocks_received += rec.gaps.len() as u64;
        self.stats.dup_tsns_reported += rec.dups.len() as u64;
        if let Some(t) = h.ecne.filter(|_| self.cfg.ecn) {
            self.on_ecne(now, t);
        }
        let n = self.dests.len();
        let flight_before: Vec<u64> = self.dests.iter().map(|d| d.flight).collect();
        let mut earliest_before: Vec<Option<u64>> = vec![None; n];
        let mut to_find = self.dests.iter().filter(|d| d.outstanding > 0).count();
        for (k, c) in self.chunks.iter().enumerate() {
            if to_find == 0 {
                break;
            }
            if c.in_flight && earliest_before[c.dest as usize].is_none() {
                earliest_before[c.dest as usize] = Some(self.cum_ack + 1 + k as u64);
                to_find -= 1;
            }
        }
        // timestamps echoed for packets whose chunks are still known
        for &(tsn, dest, sent_at, received_at) in &rec.echoes {
            if tsn > self.cum_ack && tsn < self.next_tsn {
                let bytes = Self::booked(self.chunk(tsn).len) as u32;
                let dst = &mut self.dests[dest as usize];
                dst.cc.on_timestamp(&TimestampSample { tsn, sent_at, received_at, bytes }, dst.rto.srtt());
                dst.stats.timestamp_samples += 1;
            }
        }
        let mut newly = NewlyAcked { htna_per_dest: vec![None; n], dac_count: rec.dac_count, ..NewlyAcked::default() };
        let mut bytes_acked = vec![0u64; n];
        let mut rtt_sample: Vec<Option<SimTime>> = vec![None; n];
        let mut dest_mask = 0u64;
        // cumulative ack
        let cum_advanced = h.cum_tsn > self.cum_ack;
        while self.cum_ack < h.cum_tsn {
            let tsn = self.cum_ack + 1;
            let Some(c) = self.chunks.pop_front() else { break };
            self.cum_ack = tsn;
            self.acked_bytes = c.offset + c.len as u64;
            if c.marked {
                self.rtx.remove(&tsn);
            }
            if !c.acked {
                self.newly_acked(tsn, &c, &mut newly, &mut bytes_acked, &mut rtt_sample, &mut dest_mask);
            }
        }
        // gap-ack blocks: the chunks in them not acked yet, acked runs skipped
        for &(s, e) in &rec.gaps {
            let lo = s.max(self.cum_ack + 1);
            let hi = e.min(self.next_tsn - 1);
            let mut tsn = lo;
            while tsn <= hi {
                let c = *self.chunk(tsn);
                if c.acked {
                    tsn = self.skip_acked(tsn, c.skip, hi + 1);
                    continue;
                }
                if c.marked {
                    self.rtx.remove(&tsn);
                }
                let cm = self.chunk_mut(tsn);
                cm.acked = true;
                cm.marked = false;
                cm.in_flight = false;
                self.newly_acked(tsn, &c, &mut newly, &mut bytes_acked, &mut rtt_sample, &mut dest_mask);
                tsn += 1;
            }
        }
        newly.dests = dest_mask.count_ones();
        // RTT, error counters, reachability
        if dest_mask != 0 {
            self.assoc_errors = 0;
        }
        for d in 0..n {
            if let Some(t) = rtt_sample[d] {
                let dst = &mut self.dests[d];
                dst.rto.on_sample(now.since(t));
                dst.cc.on_rtt_sample(now.since(t), now);
            }
            if bytes_acked[d] > 0 {
                let dst = &mut self.dests[d];
                dst.errors = 0;
                dst.state = DestState::Active;
                dst.hb_due = None;
                dst.hb_outstanding = None;
            }
        }
        // missing reports (§7.2.4; SFR and DAC with CMT)
        let (sfr, dac) = (self.cfg.cmt && self.cfg.sfr, self.cfg.cmt && self.cfg.dac);
        let mut lost: Vec<Option<(u64, SimTime)>> = vec![None; n];
        if let Some(htna) = newly.htna {
            let thresh = self.cfg.fast_rtx_threshold;
            // acked chunks are not in flight: only the ones not acked below htna can be missing
            let mut next = self.cum_ack + 1;
            while next < htna {
                let tsn = next;
                let c = self.chunk(tsn);
                if c.acked {
                    let skip = c.skip;
                    next = self.skip_acked(tsn, skip, htna);
                    continue;
                }
                next = tsn + 1;
                if !c.in_flight || c.fast_retransmitted {
                    continue;
                }
                let add = strikes(tsn, c.dest as usize, &newly, sfr, dac);
                if add == 0 {
                    continue;
                }
                let c = self.chunk_mut(tsn);
                c.missing = c.missing.saturating_add(add);
                if c.missing >= thresh {
                    c.fast_retransmitted = true;
                    let (d, len, sent_at) = (c.dest as usize, c.len as u64, c.sent_at);
                    self.unflight_and_mark(tsn);
                    let _ = len;
                    lost[d].get_or_insert((tsn, sent_at));
                    self.dests[d].stats.fast_retransmits += 1;
                }
            }
        }
        let highest_sent = self.next_tsn - 1;
        let mut siblings = self.siblings();
        for (d, l) in lost.iter().enumerate() {
            let Some((tsn, sent_at)) = *l else { continue };
            self.rtx_allowance = true;
            let dst = &mut self.dests[d];
            if dst.fast_recovery.is_some() {
                self.stats.fast_retransmits_without_reduction += 1;
                continue;
            }
            let ev = LossEvent {
                now,
                kind: LossKind::FastRetransmit,
                tsn,
                sent_at,
                flight: flight_before[d],
                srtt: dst.rto.srtt(),
                min_rtt: dst.rto.min_rtt,
            };
            match dst.cc.on_loss(&mut dst.w, &ev, &siblings, d) {
                LossVerdict::Congestion => {
                    dst.stats.congestion_losses += 1;
                    dst.stats.fast_recoveries += 1;
                    dst.fast_recovery = Some(highest_sent);
                }
                LossVerdict::NotCongestion => {
                    dst.stats.other_losses += 1;
                    self.stats.fast_retransmits_without_reduction += 1;
                }
            }
        }
        // NewReno-SCTP's partial ack: the next hole is retransmitted at once
        if cum_advanced {
            if let Some(c) = self.chunks.front().copied() {
                let d = c.dest as usize;
                let dst = &self.dests[d];
                if c.in_flight && dst.cc.partial_ack_retransmit() && dst.fast_recovery.is_some_and(|x| self.cum_ack < x) {
                    let tsn = self.cum_ack + 1;
                    self.chunk_mut(tsn).fast_retransmitted = true;
                    self.unflight_and_mark(tsn);
                    self.rtx_allowance = true;
                    self.dests[d].stats.fast_retransmits += 1;
                }
            }
        }
        // cwnd growth (§7.2.1-7.2.2; CUC with CMT), fast recovery exit, timers
        let cuc = self.cfg.cmt && self.cfg.cuc;
        if !siblings.is_empty() {
            siblings = self.siblings();
        }
        for d in 0..n {
            let pseudo_advanced = earliest_before[d].is_some_and(|t| t <= self.cum_ack || self.chunk(t).acked);
            let dst = &mut self.dests[d];
            if bytes_acked[d] > 0 {
                let ev = AckEvent {
                    now,
                    bytes_acked: bytes_acked[d],
                    advanced: cwnd_may_grow(cum_advanced, pseudo_advanced, cuc),
                    fully_used: flight_before[d] >= dst.w.cwnd,
                    in_fast_recovery: dst.fast_recovery.is_some(),
                    flight: flight_before[d],
                    srtt: dst.rto.srtt(),
                    min_rtt: dst.rto.min_rtt,
                };
                dst.cc.on_ack(&mut dst.w, &ev, &siblings, d);
            }
            if dst.fast_recovery.is_some_and(|x| self.cum_ack >= x) {
                dst.fast_recovery = None;
            }
            if dst.flight == 0 {
                dst.w.partial_bytes_acked = 0;
            }
            // §6.3.2 R2/R3
            if dst.outstanding == 0 {
                dst.t3 = None;
            } else if pseudo_advanced || dst.t3.is_none() {
                dst.t3 = Some(now + dst.rto.rto());
            }
        }
        // §6.2.1 D ii)
        self.peer_rwnd = (h.a_rwnd as u64).saturating_sub(self.unacked_bytes);
    }

    /// An ECNE for TSN `tsn` (RFC 4960 Appendix A, as Linux's `sctp_do_ecn_ecne_work`): unless
    /// an earlier reduction covered it, the destination the TSN was sent to reduces its window
    /// as for a loss (the controller's fast-retransmit response), at most once per round trip
    /// and not during fast recovery, and a CWR for everything sent so far rides on the next
    /// DATA packet.
    fn on_ecne(&mut self, now: SimTime, tsn: u64) {
        if tsn <= self.last_cwr_tsn {
            return;
        }
        let dest = (tsn > self.cum_ack && tsn < self.next_tsn).then(|| self.chunk(tsn)).map(|c| (c.dest as usize, c.sent_at));
        self.last_cwr_tsn = self.next_tsn - 1;
        self.cwr_due = Some(self.last_cwr_tsn);
        let Some((d, sent_at)) = dest else { return };
        let siblings = self.siblings();
        let dst = &mut self.dests[d];
        let recent = dst.ecne_reduced_at.is_some_and(|t| now.since(t) < dst.rto.srtt().unwrap_or(Dur::ZERO));
        if recent || dst.fast_recovery.is_some() {
            return;
        }
        let ev = LossEvent {
            now,
            kind: LossKind::FastRetransmit,
            tsn,
            sent_at,
            flight: dst.flight,
            srtt: dst.rto.srtt(),
            min_rtt: dst.rto.min_rtt,
        };
        dst.cc.on_loss(&mut dst.w, &ev, &siblings, d);
        dst.ecne_reduced_at = Some(now);
        dst.stats.ecn_reductions += 1;
    }

    /// What coupled controllers see of every destination (empty for uncoupled ones).
    fn siblings(&self) -> Vec<SubflowState> {
        if !self.dests[0].cc.is_coupled() {
            return Vec::new();
        }
        self.dests
            .iter()
            .map(|d| SubflowState {
                cwnd: d.w.cwnd,
                ssthresh: d.w.ssthresh,
                mss: d.w.mtu,
                srtt: d.rto.srtt(),
                active: d.active(),
                in_recovery: d.fast_recovery.is_some(),
                inter_loss_bytes: d.cc.inter_loss_bytes(),
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn newly_acked(&mut self, tsn: u64, c: &Chunk, n: &mut NewlyAcked, bytes: &mut [u64], rtt: &mut [Option<SimTime>], mask: &mut u64) {
        let d = c.dest as usize;
        self.unacked_bytes -= c.len as u64;
        if c.in_flight {
            let dst = &mut self.dests[d];
            dst.flight -= Self::booked(c.len);
            dst.outstanding -= 1;
        }
        bytes[d] += Self::booked(c.len);
        *mask |= 1 << d;
        n.htna = Some(n.htna.map_or(tsn, |h| h.max(tsn)));
        n.htna_per_dest[d] = Some(n.htna_per_dest[d].map_or(tsn, |h| h.max(tsn)));
        n.lowest = Some(n.lowest.map_or(tsn, |l| l.min(tsn)));
        if c.transmissions == 1 && !c.marked {
            rtt[d] = Some(rtt[d].map_or(c.sent_at, |t| t.max(c.sent_at)));
        }
    }

    /// Takes an in-flight chunk out of its destination's flight and queues it for
    /// retransmission.
    fn unflight_and_mark(&mut self, tsn: u64) {
        let c = self.chunk_mut(tsn);
        debug_assert!(c.in_flight && !c.acked);
        c.in_flight = false;
        c.marked = true;
        c.missing = 0;
        let (d, booked) = (c.dest as usize, Self::booked(c.len));
        let dst = &mut self.dests[d];
        dst.flight -= booked;
        dst.outstanding -= 1;
        self.rtx.insert(tsn);
    }

    pub fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        match kind {
            TimerKind::DelAck => {
                if self.delack_event != Some(now) {
                    // superseded by an earlier event, which re-armed the timer
                    return;
                }
                self.delack_event = None;
                match self.delack {
                    Some(t) if t <= now => {
                        if self.rx.unacked_packets() > 0 {
                            self.send_sack(now, tx);
                        } else {
                            self.delack = None;
                        }
                    }
                    Some(_) => arm(tx, &mut self.delack_event, self.delack, 0, TimerKind::DelAck),
                    None => {}
                }
            }
            TimerKind::Rto => {
                let Some(dst) = self.dests.get_mut(sub) else { return };
                if dst.t3_event != Some(now) {
                    // superseded by an earlier event, which re-armed the timer
                    return;
                }
                dst.t3_event = None;
                let t3_due = dst.t3.is_some_and(|t| t <= now);
                if t3_due {
                    self.on_t3_expiry(now, sub, tx);
                }
                if self.dests[sub].hb_due.is_some_and(|t| t <= now) {
                    self.heartbeat(now, sub, tx);
                }
                let next = self.dests[sub].next_deadline();
                arm(tx, &mut self.dests[sub].t3_event, next, sub, TimerKind::Rto);
                if t3_due {
                    self.poll_transmit(now, tx);
                }
            }
            // an association arms no receiver-feedback, pacing or join timers
            TimerKind::Feedback | TimerKind::Pace | TimerKind::Join | TimerKind::PathStatus => {}
        }
        if self.check {
            self.check_invariants();
        }
    }

    /// §6.3.3: the T3-rtx timer of destination `d` expired.
    fn on_t3_expiry(&mut self, now: SimTime, d: usize, tx: &mut impl Sink) {
        self.dests[d].t3 = None;
        if self.failed_at.is_some() || self.dests[d].outstanding == 0 {
            return;
        }
        let first = (self.cum_ack + 1..self.next_tsn).find(|&t| {
            let c = self.chunk(t);
            c.in_flight && c.dest as usize == d
        });
        let Some(first) = first else { return };
        let sent_at = self.chunk(first).sent_at;
        let siblings = self.siblings();
        tx.push(Action::Note { sub: d as u8, kind: TraceKind::Timeout, seq: self.chunk(first).offset, dsn: first });
        let dst = &mut self.dests[d];
        dst.stats.timeouts += 1;
        let ev = LossEvent {
            now,
            kind: LossKind::Timeout,
            tsn: first,
            sent_at,
            flight: dst.flight,
            srtt: dst.rto.srtt(),
            min_rtt: dst.rto.min_rtt,
        };
        match dst.cc.on_loss(&mut dst.w, &ev, &siblings, d) {
            LossVerdict::Congestion => dst.stats.congestion_losses += 1,
            LossVerdict::NotCongestion => dst.stats.other_losses += 1,
        }
        dst.fast_recovery = None;
        // E2
        dst.rto.back_off();
        // §8.2, §8.1
        if self.note_path_error(now, d) {
            return;
        }
        // E3: everything outstanding on d is marked for retransmission
        for tsn in self.cum_ack + 1..self.next_tsn {
            let c = self.chunk(tsn);
            if c.in_flight && c.dest as usize == d {
                self.unflight_and_mark(tsn);
                self.chunk_mut(tsn).fast_retransmitted = false;
            }
        }
        self.rtx_allowance = true;
    }

    /// Counts an error on destination `d` (a T3-rtx expiry or an unanswered heartbeat):
    /// §8.2's Path.Max.Retrans makes it inactive, CMT-PF makes it potentially failed at the
    /// first error, §8.1's Association.Max.Retrans ends the association (returns true then).
    fn note_path_error(&mut self, now: SimTime, d: usize) -> bool {
        self.assoc_errors += 1;
        let (pmr, pf) = (self.cfg.path_max_retrans, self.cfg.cmt && self.cfg.cmt_pf);
        let dst = &mut self.dests[d];
        dst.errors += 1;
        if dst.errors > pmr && dst.state != DestState::Inactive {
            dst.state = DestState::Inactive;
            dst.hb_due = Some(now + dst.rto.rto() + self.cfg.hb_interval);
            if d == self.cfg.primary && self.failover_at.is_none() {
                self.failover_at = Some(now);
            }
        } else if pf && dst.state == DestState::Active {
            dst.state = DestState::PotentiallyFailed;
            dst.hb_due = Some(now);
        }
        if self.assoc_errors > self.cfg.association_max_retrans {
            self.failed_at = Some(now);
            return true;
        }
        false
    }

    /// §8.3: probes an inactive or potentially-failed destination; a heartbeat still
    /// unanswered when the next one is due counts as an error and backs the RTO off.
    fn heartbeat(&mut self, now: SimTime, d: usize, tx: &mut impl Sink) {
        self.dests[d].hb_due = None;
        if self.failed_at.is_some() || self.dests[d].active() {
            self.dests[d].hb_outstanding = None;
            return;
        }
        if self.dests[d].hb_outstanding.take().is_some() {
            self.dests[d].rto.back_off();
            if self.note_path_error(now, d) {
                return;
            }
        }
        let dst = &mut self.dests[d];
        let header = Header::SctpControl(SctpControlHeader { ack: false, sent_at: now });
        tx.push(Action::Packet { sub: d as u8, route: dst.fwd, size: PACKET_HEADER + HEARTBEAT_CHUNK, header });
        dst.stats.heartbeats += 1;
        dst.hb_outstanding = Some(now);
        let extra = if dst.state == DestState::Inactive { self.cfg.hb_interval } else { Dur::ZERO };
        dst.hb_due = Some(now + dst.rto.rto() + extra);
    }

    /// A HEARTBEAT ACK came back from destination `d`: it is reachable again.
    fn on_heartbeat_ack(&mut self, now: SimTime, d: usize, sent_at: SimTime) {
        let Some(dst) = self.dests.get_mut(d) else { return };
        if dst.hb_outstanding != Some(sent_at) {
            return;
        }
        dst.rto.on_sample(now.since(sent_at));
        dst.errors = 0;
        dst.state = DestState::Active;
        dst.hb_outstanding = None;
        dst.hb_due = None;
        self.assoc_errors = 0;
    }

    fn views(&self) -> Vec<DestView> {
        self.dests.iter().map(|d| DestView { active: d.active(), cwnd: d.w.cwnd, ssthresh: d.w.ssthresh, flight: d.flight }).collect()
    }

    /// Where new data goes: without CMT the primary (or, once it is inactive, the first active
    /// alternate); with CMT the scheduler's pick among the active destinations (round-robin by
    /// default: the next one in turn with cwnd room).
    fn new_data_dest(&mut self, now: SimTime, skip: Option<usize>) -> Option<usize> {
        let n = self.dests.len();
        if !self.cfg.cmt {
            let p = self.cfg.primary;
            let d = if self.dests[p].active() { p } else { (1..n).map(|k| (p + k) % n).find(|&k| self.dests[k].active()).unwrap_or(p) };
            return (self.dests[d].has_room() && skip != Some(d)).then_some(d);
        }
        if !self.dests.iter().any(|d| d.active()) {
            let p = self.cfg.primary;
            return (self.dests[p].has_room() && skip != Some(p)).then_some(p);
        }
        // the scheduler sees every destination as a subflow: an active one (not `skip`) is
        // usable, with room while its flight is below cwnd
        let mut views = std::mem::take(&mut self.views_buf);
        views.clear();
        views.extend(self.dests.iter().enumerate().map(|(k, d)| SubflowView {
            srtt: d.rto.srtt(),
            latest_rtt: d.rto.srtt(),
            rtt_samples: d.rto.samples,
            rttvar: Dur::ZERO,
            min_rtt: d.rto.min_rtt,
            rto: d.rto.rto(),
            cwnd: d.w.cwnd,
            ssthresh: d.w.ssthresh,
            mss: self.cfg.chunk as u64,
            in_flight: d.flight,
            queued: 0,
            ca_state: if d.fast_recovery.is_some() { CaState::Recovery } else { CaState::Open },
            backup: false,
            usable: d.active() && skip != Some(k),
            segments_sent: d.stats.packets_sent,
            retransmits: d.stats.retransmits,
            pacing_rate: None,
        }));
        let unscheduled = self.app_limit - self.next_offset;
        let ctx = SchedContext {
            now,
            subflows: &views,
            unscheduled,
            window_room: self.peer_rwnd,
            next_len: unscheduled.min(self.cfg.chunk as u64),
            next_priority: 0,
            hol_subflow: None,
            hol_sent_on: 0,
            send_window: self.peer_rwnd,
            maybe_available: ALL_MAYBE_AVAILABLE,
        };
        let d = match self.sched.pick(&ctx) {
            Decision::Send(d) => Some(d),
            Decision::Wait => None,
        };
        self.views_buf = views;
        d
    }

    /// Sends what the windows allow: retransmissions first (§6.1 C), then new data.
    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        if self.failed_at.is_some() {
            return;
        }
        let policy = self.cfg.cmt.then_some(self.cfg.rtx_policy);
        let mut rtx_waiting: Option<usize> = None;
        while let Some(&tsn) = self.rtx.first() {
            let c = *self.chunk(tsn);
            let cause = if c.fast_retransmitted { RtxCause::FastRetransmit } else { RtxCause::Timeout };
            let d = choose(&self.views(), c.dest as usize, cause, policy);
            if !(self.rtx_allowance || self.dests[d].has_room()) {
                rtx_waiting = Some(d);
                break;
            }
            let count = self.retransmission_bundle(tsn, d, self.rtx_allowance);
            self.rtx_allowance = false;
            for t in tsn..tsn + count as u64 {
                self.rtx.remove(&t);
                self.chunk_mut(t).marked = false;
            }
            self.transmit(now, tsn, count, d, true, tx);
        }
        self.rtx_allowance = false;
        if rtx_waiting.is_some() && !self.cfg.cmt {
            return;
        }
        loop {
            if self.next_offset >= self.app_limit {
                self.note_blocked(now, false);
                return;
            }
            let Some(d) = self.new_data_dest(now, rtx_waiting) else {
                self.note_blocked(now, false);
                return;
            };
            let first_len = (self.app_limit - self.next_offset).min(self.cfg.chunk as u64);
            // §6.1 A: within the peer's window, or one chunk when nothing is in flight
            if first_len > self.peer_rwnd && self.in_flight() > 0 {
                self.note_blocked(now, true);
                return;
            }
            self.note_blocked(now, false);
            // chunks for this packet: one, or with bundling as many as fit in the MTU
            let space = self.cfg.chunk_space();
            let (mut count, mut bytes, mut wire) = (0u16, 0u64, 0u32);
            let mut rwnd = self.peer_rwnd;
            let mut flight = self.dests[d].flight;
            loop {
                let len = (self.app_limit - self.next_offset - bytes).min(self.cfg.chunk as u64);
                if len == 0 {
                    break;
                }
                let w = SctpConfig::data_chunk_wire(len as u32);
                if count > 0
                    && (!self.cfg.bundling
                        || wire + w > space
                        || flight >= self.dests[d].w.cwnd
                        || len > rwnd
                        || len < self.cfg.chunk as u64 && bytes > 0)
                {
                    break;
                }
                count += 1;
                bytes += len;
                wire += w;
                flight += Self::booked(len as u32);
                rwnd = rwnd.saturating_sub(len);
                if len < self.cfg.chunk as u64 {
                    break;
                }
            }
            let tsn = self.next_tsn;
            let mut off = self.next_offset;
            for k in 0..count as u64 {
                let len = (bytes - (off - self.next_offset)).min(self.cfg.chunk as u64) as u32;
                self.chunks.push_back(Chunk {
                    offset: off,
                    len,
                    dest: d as u8,
                    sent_at: now,
                    transmissions: 0,
                    acked: false,
                    skip: 1,
                    in_flight: false,
                    marked: false,
                    missing: 0,
                    fast_retransmitted: false,
                });
                self.unacked_bytes += len as u64;
                off += len as u64;
                let _ = k;
            }
            self.next_tsn += count as u64;
            self.next_offset += bytes;
            self.transmit(now, tsn, count, d, false, tx);
        }
    }

    /// How many chunks from `tsn` on, all marked for retransmission, go in one packet to `d`
    /// (RFC 4960 §6.3.3 E3 and §7.2.4: as many of the earliest marked chunks as fit in the
    /// MTU). Only runs of consecutive TSNs last sent to the same destination for the same cause
    /// are bundled, full chunks but the last, as a packet of new data holds them; without
    /// bundling every chunk goes alone. The packet an expiry or a fast retransmission allows
    /// (`allowed`) is filled whatever the cwnd; later ones stop once the cwnd is full.
    fn retransmission_bundle(&self, tsn: u64, d: usize, allowed: bool) -> u16 {
        let first = *self.chunk(tsn);
        if !self.cfg.bundling {
            return 1;
        }
        let space = self.cfg.chunk_space();
        let (mut count, mut wire) = (1u16, SctpConfig::data_chunk_wire(first.len));
        let (mut flight, cwnd) = (self.dests[d].flight + Self::booked(first.len), self.dests[d].w.cwnd);
        let mut prev = first;
        let mut t = tsn + 1;
        while t < self.next_tsn && count < u16::MAX {
            let c = *self.chunk(t);
            let w = SctpConfig::data_chunk_wire(c.len);
            if !c.marked
                || c.dest != first.dest
                || c.fast_retransmitted != first.fast_retransmitted
                || prev.len != self.cfg.chunk
                || wire + w > space
                || (!allowed && flight >= cwnd)
            {
                break;
            }
            count += 1;
            wire += w;
            flight += Self::booked(c.len);
            prev = c;
            t += 1;
        }
        count
    }

    /// Puts chunks `tsn`..`tsn + count` (consecutive in the stream) on the wire to `d`.
    fn transmit(&mut self, now: SimTime, tsn: u64, count: u16, d: usize, retx: bool, tx: &mut impl Sink) {
        let (mut len, mut booked) = (0u32, 0u64);
        for t in tsn..tsn + count as u64 {
            let c = self.chunk_mut(t);
            c.dest = d as u8;
            c.sent_at = now;
            c.transmissions += 1;
            c.in_flight = true;
            c.missing = 0;
            len += c.len;
            booked += Self::booked(c.len);
        }
        let offset = self.chunk(tsn).offset;
        let dst = &mut self.dests[d];
        if self.check && !retx {
            assert!(dst.flight < dst.w.cwnd, "new data sent to destination {d} with a full cwnd ({} >= {})", dst.flight, dst.w.cwnd);
        }
        dst.flight += booked;
        dst.outstanding += count as u32;
        dst.stats.packets_sent += 1;
        dst.stats.bytes_sent += len as u64;
        if retx {
            dst.stats.retransmits += 1;
        }
        if dst.t3.is_none() {
            dst.t3 = Some(now + dst.rto.rto());
        }
        let next = dst.next_deadline();
        arm(tx, &mut self.dests[d].t3_event, next, d, TimerKind::Rto);
        self.bytes_sent += len as u64;
        self.peer_rwnd = self.peer_rwnd.saturating_sub(len as u64);
        let ecn = if self.cfg.ecn { Ecn::Ect0 } else { Ecn::NotEct };
        let cwr = self.cwr_due.take();
        let h = SctpDataHeader { tsn, offset, sent_at: now, len, chunks: count, retx, ecn, cwr };
        let size = self.cfg.data_packet_wire(len, count) + if cwr.is_some() { super::config::ECN_CHUNK } else { 0 };
        tx.push(Action::Packet { sub: d as u8, route: self.dests[d].fwd, size, header: Header::SctpData(h) });
    }

    /// Panics if a protocol invariant does not hold (tests turn this on).
    pub fn check_invariants(&self) {
        let mut flight = vec![0u64; self.dests.len()];
        let mut outstanding = vec![0u32; self.dests.len()];
        let mut unacked = 0;
        let mut marked = 0;
        // every skip pointer stays within the acked run it starts in
        let mut run_end = self.next_tsn;
        for (k, c) in self.chunks.iter().enumerate().rev() {
            let tsn = self.cum_ack + 1 + k as u64;
            if !c.acked {
                run_end = tsn;
            } else {
                assert!(c.skip >= 1 && tsn + c.skip as u64 <= run_end, "TSN {tsn}: skip pointer +{} beyond its acked run", c.skip);
            }
        }
        for (k, c) in self.chunks.iter().enumerate() {
            let tsn = self.cum_ack + 1 + k as u64;
            assert!(!(c.in_flight && (c.acked || c.marked)), "TSN {tsn}: in flight and acked or queued");
            marked += c.marked as usize;
            if c.in_flight {
                flight[c.dest as usize] += Self::booked(c.len);
                outstanding[c.dest as usize] += 1;
            }
            if !c.acked {
                unacked += c.len as u64;
            }
        }
        assert_eq!(unacked, self.unacked_bytes);
        // the retransmission queue holds exactly the marked chunks (counted, and each member
        // checked: a lookup per member, not one per chunk)
        assert_eq!(marked, self.rtx.len(), "retransmission queue out of step");
        assert!(
            self.rtx.iter().all(|&t| t > self.cum_ack && t < self.next_tsn && self.chunk(t).marked),
            "retransmission queue out of step"
        );
        for (d, dst) in self.dests.iter().enumerate() {
            assert_eq!(dst.flight, flight[d], "destination {d}: flight");
            assert_eq!(dst.outstanding, outstanding[d], "destination {d}: outstanding");
            assert!(dst.w.cwnd >= dst.w.mtu, "destination {d}: cwnd below one MTU");
            assert!(dst.w.ssthresh > 0, "destination {d}: ssthresh");
            assert!(
                dst.outstanding == 0 || dst.t3.is_some() || self.failed_at.is_some(),
                "destination {d}: data outstanding without a T3-rtx timer"
            );
        }
        assert!(self.acked_bytes <= self.rx.delivered(), "acked beyond what was delivered");
        assert!(self.rx.delivered() <= self.next_offset && self.next_offset <= self.app_limit);
        assert!(self.rx.buffered() <= self.cfg.rcv_buf, "receive buffer over its limit");
        assert!(self.send_buffer_bytes() <= self.cfg.snd_buf, "send buffer over its limit");
        assert_eq!(self.chunks.len() as u64, self.next_tsn - 1 - self.cum_ack);
    }
}
