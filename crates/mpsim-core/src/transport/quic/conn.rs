//! A QUIC connection (RFC 9000), both of its ends: the sender's packets, stream data and its
//! retransmission in new packets, connection-level flow control; the receiver's packet number
//! ranges, ACK generation (RFC 9000 §13.2) and flow-control credit as the application reads.
//! Its streams (which stream's data goes next, stream credit, per-stream delivery) are
//! `streams.rs`'s; loss detection and the window are `recovery.rs`'s, one per packet number
//! space.
//!
//! With more than one path it is Multipath QUIC (draft-ietf-quic-multipath-19): one packet
//! number space per path, acknowledged by PATH_ACK frames sent back on the path they
//! acknowledge; each path after the first validated by PATH_CHALLENGE and PATH_RESPONSE
//! before it carries data; the flow's scheduler (`crate::sched`) choosing the path of every
//! packet, lost data included, and coupled controllers told of the sibling paths. A backup
//! path (announced by PATH_STATUS_BACKUP) carries data only while no other path is in use;
//! a path whose probe timeout fired `ABANDON_PTOS` times in a row without an ACK is
//! abandoned (PATH_ABANDON on another path), its data in flight sent again elsewhere.
//!
//! With ECN (`quic.ecn`, RFC 9000 §13.4) the sender's packets leave ECT(0); the receiver
//! counts each space's codepoints and reports them in ACK_ECN (PATH_ACK_ECN) frames, and
//! the sender validates them and reduces on a CE increase (`ecn.rs`, `recovery.rs`).

use super::ack_frequency::{AckFrequency, AckFrequencySpec, Requested};
use super::ecn::{EcnCounts, EcnSender};
use super::pacing::Pacer;
use super::path_status::PathStatus;
use super::qlog::Qlog;
use super::ranges::RangeSet;
use super::recovery::{Recovery, Settled, StreamRange};
use super::reset::ResetLate;
use super::streams::{Delivery, Streams};
use super::wire::{self, ACK_PACKET_PN_LEN, AEAD_TAG, IP_UDP, MAX_ACK_RANGES, SHORT_HEADER};
use crate::cc::SubflowState;
use crate::cc::{Controller, Window};
use crate::metrics::TraceKind;
use crate::net::{Ecn, Header, QuicHeader};
use crate::sched::{CaState, Decision, Sched, SchedContext, SubflowView, ALL_MAYBE_AVAILABLE};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::PathRoutes;
use crate::transport::{arm, Action, Arrival, Progress, Sink, TimerKind};
use serde_json::json;
use std::collections::VecDeque;

/// Settings of a QUIC connection.
#[derive(Clone, Debug, PartialEq)]
pub struct QuicConfig {
    /// Largest QUIC packet (UDP payload), from the flow's IP packet size (`tcp.mss` +
    /// `tcp.header`) less IPv4 and UDP headers.
    pub max_datagram: u32,
    /// The receiver's max_ack_delay (RFC 9000 §18.2: 25 ms).
    pub max_ack_delay: Dur,
    /// The receiver's flow-control window, stream and connection (the flow's `tcp.rcv_buf`).
    pub rcv_buf: u64,
    /// Initial window in packets (RFC 9002 §7.2 caps it at max(14720 bytes, 2 packets)).
    pub initial_window: u32,
    /// ECN (`quic.ecn`): packets leave ECT(0) and ACKs carry the receiver's counts.
    pub ecn: bool,
}

impl QuicConfig {
    /// RFC 9002 §7.2's initial window: min(10 x max_datagram, max(14720, 2 x max_datagram)),
    /// with the flow's initial window in place of 10, and never below the minimum window of
    /// two packets.
    pub fn initial_cwnd(&self) -> u64 {
        let mds = self.max_datagram as u64;
        (self.initial_window as u64 * mds).min((2 * mds).max(14_720)).max(2 * mds)
    }
}

/// An ACK packet's frames, kept by the connection under the id its header carries.
#[derive(Clone, Debug, Default)]
pub struct AckRecord {
    /// ACK ranges, inclusive, largest first.
    pub ranges: Vec<(u64, u64)>,
    pub ack_delay: Dur,
    /// MAX_DATA (and MAX_STREAM_DATA of the one stream, equal to it), when sent.
    pub max_data: Option<u64>,
    /// With a stream per write: MAX_STREAM_DATA (stream index, limit) and MAX_STREAMS.
    pub max_stream_data: Vec<(usize, u64)>,
    pub max_streams: Option<u64>,
    /// The packet also carries a PATH_RESPONSE (to the path's PATH_CHALLENGE).
    pub path_response: bool,
    /// The ECN counts of the space (an ACK_ECN or PATH_ACK_ECN frame), once any packet
    /// arrived ECN-marked.
    pub ecn: Option<EcnCounts>,
}

/// The `ack` field of a data packet that carries a PATH_CHALLENGE (data packets carry 0, or
/// with `more` set the index of their further frames in the connection's log).
pub const CHALLENGE: u32 = 1;
/// The `ack` field of a packet carrying an ACK_FREQUENCY frame, whose sequence number is in
/// the `offset` field (draft-ietf-quic-ack-frequency).
pub const ACK_FREQUENCY_PACKET: u32 = 2;
/// The `ack` field of a packet carrying RESET_STREAM frames, whose sequence number (the
/// frames' place in [`ResetLate::sent`]) is in the `offset` field.
pub const RESET_STREAM_PACKET: u32 = 3;
/// PATH_CHALLENGE and PATH_RESPONSE frames: type and 8 bytes of data (RFC 9000 §19.17-18).
const PATH_VALIDATION_FRAME: u32 = 1 + 8;

/// ACK packets whose frames are kept for their header to find, and likewise data packets'
/// STREAM frames beyond the first.
const ACK_LOG: usize = 1 << 14;

/// A STREAM frame to send: connection offset, length, and whether its data was sent before.
type Frame = (u64, u32, bool);

/// Counters of one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Stream bytes sent, retransmissions included, and packets carrying retransmitted data.
    pub bytes_sent: u64,
    pub retransmits: u64,
    /// Stream bytes the receiver got by way of this path for the first time.
    pub bytes_received: u64,
    /// ACK packets the receiver sent on this path.
    pub acks_sent: u64,
}

/// The receiver's side of one packet number space.
#[derive(Clone, Debug, Default)]
struct AckState {
    received: RangeSet,
    largest: Option<u64>,
    largest_at: SimTime,
    /// Ack-eliciting packets received since the last ACK.
    unacked: u32,
    ack_at: Option<SimTime>,
    timer_event: Option<SimTime>,
    next_pn: u64,
    /// Packets received with each ECN codepoint (RFC 9000 §13.4.1).
    ecn: EcnCounts,
    /// The largest packet number the last ACK acknowledged (for the reordering threshold).
    reported: Option<u64>,
}

/// One path of the connection: its routes, its packet number space at both ends.
pub struct QuicPath {
    pub name: String,
    pub fwd: u32,
    pub rev: u32,
    pub rec: Recovery,
    timer_event: Option<SimTime>,
    rx: AckState,
    pub stats: PathStats,
    /// The path may carry data (RFC 9000 §8.2): the first one validated by the handshake,
    /// the others when the PATH_RESPONSE to their PATH_CHALLENGE arrives (at `validated_at`).
    pub validated: bool,
    pub validated_at: Option<SimTime>,
    /// When the last PATH_CHALLENGE went out.
    challenged_at: Option<SimTime>,
    /// A backup path (PATH_STATUS_BACKUP): used only when no other path is.
    pub backup: bool,
    /// When the path was abandoned (PATH_ABANDON): it carries nothing after that.
    pub abandoned_at: Option<SimTime>,
    /// With `quic.pacing`: the path's pacer and its pending wake-up.
    pub pacer: Option<Pacer>,
    pace_event: Option<SimTime>,
}

impl QuicPath {
    pub fn new(r: PathRoutes, cfg: &QuicConfig, cc: Controller, handshake_rtt: Dur) -> QuicPath {
        let w = Window { cwnd: cfg.initial_cwnd(), ssthresh: u64::MAX, mss: cfg.max_datagram as u64 };
        let mut rec = Recovery::new(handshake_rtt, w, cc, cfg.max_ack_delay);
        rec.ecn = EcnSender::new(cfg.ecn);
        QuicPath {
            name: r.name,
            fwd: r.fwd,
            rev: r.rev,
            rec,
            timer_event: None,
            rx: AckState::default(),
            stats: PathStats::default(),
            validated: true,
            validated_at: None,
            challenged_at: None,
            backup: false,
            abandoned_at: None,
            pacer: None,
            pace_event: None,
        }
    }

    /// Validated and not abandoned: the path may carry data.
    pub fn active(&self) -> bool {
        self.validated && self.abandoned_at.is_none()
    }

    /// What the scheduler sees of this path. Nothing waits on a QUIC path (frames are made
    /// when a packet leaves), so `queued` is 0; a probe timeout puts it in the Loss state until
    /// an ACK arrives, as a TCP subflow's retransmission timeout does.
    pub fn view(&self) -> SubflowView {
        let r = &self.rec;
        let ca_state = if r.pto_count > 0 {
            CaState::Loss
        } else if r.in_recovery {
            CaState::Recovery
        } else {
            CaState::Open
        };
        SubflowView {
            srtt: Some(r.rtt.smoothed),
            latest_rtt: Some(r.rtt.latest),
            rtt_samples: r.rtt.samples,
            rttvar: r.rtt.rttvar,
            min_rtt: Some(r.rtt.min),
            rto: r.pto_duration(),
            cwnd: r.w.cwnd,
            ssthresh: r.w.ssthresh,
            mss: r.w.mss,
            in_flight: r.bytes_in_flight,
            queued: 0,
            ca_state,
            backup: self.backup,
            usable: self.active(),
            segments_sent: r.stats.packets_sent,
            retransmits: self.stats.retransmits,
            pacing_rate: None,
        }
    }

    /// Whether the path's pacer holds its next full packet (`mds` bytes) at `now`; its
    /// wake-up (timer `Pace` of path `p`) is then armed.
    #[inline]
    fn pacing_holds(&mut self, now: SimTime, p: usize, mds: u64, tx: &mut impl Sink) -> bool {
        let Some(pacer) = &mut self.pacer else { return false };
        match pacer.delay(now, self.rec.rtt.smoothed, self.rec.w.cwnd, mds, mds) {
            None => false,
            Some(at) => {
                arm(tx, &mut self.pace_event, Some(at), p, TimerKind::Pace);
                true
            }
        }
    }

    /// What coupled controllers see of this path.
    fn state(&self) -> SubflowState {
        SubflowState { active: self.active(), ..self.rec.state() }
    }

    /// When the receiver's delayed ACK is due on this path.
    pub fn rx_timer(&self) -> Option<SimTime> {
        self.rx.ack_at
    }

    /// The ECN counts the receiver kept of this path's packets.
    pub fn ecn_received(&self) -> EcnCounts {
        self.rx.ecn
    }
}

/// Connection-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnStats {
    /// Stream bytes that arrived beyond a gap, and again after they had arrived.
    pub out_of_order_packets: u64,
    pub duplicate_packets: u64,
    pub max_buffered: u64,
    /// MAX_DATA/MAX_STREAM_DATA updates the receiver sent.
    pub max_data_updates: u64,
}

/// A QUIC connection.
pub struct QuicConn {
    pub cfg: QuicConfig,
    pub paths: Vec<QuicPath>,
    /// The streams, both ends.
    pub streams: Streams,
    /// Sender: bytes written, the bytes sent for the first time (what MAX_DATA limits; the next
    /// new stream offset with one stream), what was acknowledged (and its prefix), lost ranges
    /// waiting to be sent again, the peer's MAX_DATA. Offsets are the connection's (`streams.rs`).
    written: u64,
    pub next_offset: u64,
    pub(crate) acked: RangeSet,
    acked_upto: u64,
    pub(crate) rtx: VecDeque<(u64, u64)>,
    pub peer_limit: u64,
    blocked_since: Option<SimTime>,
    blocked: Dur,
    /// Receiver: the stream bytes held, the bytes the application read, the limit last
    /// advertised.
    rx_data: RangeSet,
    delivered: u64,
    advertised: u64,
    acks: VecDeque<AckRecord>,
    ack_base: u32,
    /// The STREAM frames beyond the first of data packets that carry several (RFC 9000 §12.4),
    /// for the receiver to read under the header's `ack`.
    frame_log: VecDeque<Box<[StreamRange]>>,
    frame_base: u32,
    /// The frames of the packet being built (kept for its capacity).
    pkt: Vec<Frame>,
    /// Receiver: ends of the further streams the last packet completed, beyond the one its
    /// [`Arrival::Message`] gave (taken by [`QuicConn::take_message`]).
    messages: Vec<u64>,
    pub stats: ConnStats,
    pub check: bool,
    /// The qlog trace, when the scenario asks for one.
    pub qlog: Option<Qlog>,
    /// Multipath QUIC's scheduler (None with one path).
    pub sched: Option<Sched>,
    views: Vec<SubflowView>,
    /// Abandoned paths whose PATH_ABANDON is still to be sent.
    abandons: Vec<usize>,
    /// Multipath QUIC's path status changes during the run (`path_status.rs`).
    pub status: PathStatus,
    /// The sender's ACK_FREQUENCY requests (`quic.ack_frequency`), and whether the next
    /// packet carries an IMMEDIATE_ACK (after a probe timeout).
    pub ack_frequency: Option<AckFrequency>,
    immediate_ack: bool,
    /// The receiver: the values of the latest ACK_FREQUENCY frame received.
    pub(super) requested: Option<Requested>,
    /// `quic.reset_late`: the streams of late frames reset (`reset.rs`); the sender's bytes
    /// of reset streams that were never sent, and the receiver's connection credit released
    /// by reset streams beyond the bytes read (both 0 without resets).
    pub reset_late: Option<ResetLate>,
    pub(crate) unsent: u64,
    pub(crate) released: u64,
}

impl QuicConn {
    /// A connection over `paths`; with more than one, Multipath QUIC under the lowest-RTT
    /// scheduler (see [`QuicConn::with_scheduler`]), every path but the first to be validated.
    pub fn new(cfg: QuicConfig, mut paths: Vec<QuicPath>) -> QuicConn {
        assert!(!paths.is_empty(), "a QUIC connection has a path");
        let limit = cfg.rcv_buf;
        for p in &mut paths[1..] {
            p.validated = false;
        }
        let sched = (paths.len() > 1).then(|| Sched::by_name("lowest_rtt").expect("built-in"));
        QuicConn {
            streams: Streams::new(false, true, cfg.rcv_buf),
            cfg,
            paths,
            written: 0,
            next_offset: 0,
            acked: RangeSet::default(),
            acked_upto: 0,
            rtx: VecDeque::new(),
            peer_limit: limit,
            blocked_since: None,
            blocked: Dur::ZERO,
            rx_data: RangeSet::default(),
            delivered: 0,
            advertised: limit,
            acks: VecDeque::new(),
            ack_base: 0,
            frame_log: VecDeque::new(),
            frame_base: 0,
            pkt: Vec::new(),
            messages: Vec::new(),
            stats: ConnStats::default(),
            check: false,
            qlog: None,
            sched,
            views: Vec::new(),
            abandons: Vec::new(),
            status: PathStatus::default(),
            ack_frequency: None,
            immediate_ack: false,
            requested: None,
            reset_late: None,
            unsent: 0,
            released: 0,
        }
    }

    /// Pacing (`quic.pacing`, RFC 9002 §7.7): each path's packets through a pacer
    /// (`pacing.rs`).
    pub fn with_pacing(mut self, on: bool) -> QuicConn {
        if on {
            let mds = self.cfg.max_datagram as u64;
            for p in &mut self.paths {
                p.pacer = Some(Pacer::new(SimTime::ZERO, p.rec.rtt.smoothed, p.rec.w.cwnd, mds));
            }
        }
        self
    }

    /// The ACK frequency extension (`quic.ack_frequency`): ACK_FREQUENCY frames asking the
    /// receiver for `spec`, IMMEDIATE_ACK with probes.
    pub fn with_ack_frequency(mut self, spec: Option<AckFrequencySpec>) -> QuicConn {
        self.ack_frequency = spec.map(AckFrequency::new);
        self
    }

    /// `quic.reset_late`: the sender resets the stream of a frame past its deadline (given
    /// with each write, [`QuicConn::write_until`]).
    pub fn with_reset_late(mut self, on: bool) -> QuicConn {
        self.reset_late = on.then(ResetLate::default);
        self
    }

    /// A stream per write (else one stream for all), and strict priority across streams
    /// (else FIFO).
    pub fn with_streams(mut self, per_write: bool, priorities: bool) -> QuicConn {
        self.streams = Streams::new(per_write, priorities, self.cfg.rcv_buf);
        self
    }

    /// Multipath QUIC's path status changes during the run (after [`QuicConn::with_backup`]:
    /// the status a path starts with counts; ignored with one path).
    pub fn with_path_status(mut self, changes: &[crate::scenario::PathStatusChange]) -> QuicConn {
        if self.multipath() {
            self.status = PathStatus::new(changes, &self.paths);
        }
        self
    }

    /// Multipath QUIC's backup paths (`backup[i]`: path i is one; ignored with one path).
    pub fn with_backup(mut self, backup: &[bool]) -> QuicConn {
        if self.multipath() {
            for (p, &b) in self.paths.iter_mut().zip(backup) {
                p.backup = b;
            }
        }
        self
    }

    /// Multipath QUIC's scheduler, when given (a connection of one path has none).
    pub fn with_scheduler(mut self, sched: Option<Sched>) -> QuicConn {
        if self.paths.len() > 1 {
            if let Some(s) = sched {
                self.sched = Some(s);
            }
        }
        self
    }

    fn multipath(&self) -> bool {
        self.paths.len() > 1
    }

    /// The paths as coupled controllers see them (none for one path: nothing to couple).
    pub(crate) fn siblings(&self) -> Vec<SubflowState> {
        if self.multipath() {
            self.paths.iter().map(QuicPath::state).collect()
        } else {
            Vec::new()
        }
    }

    pub fn write(&mut self, len: u64) {
        self.write_with(len, 0);
    }

    /// A write of `len` bytes with the application's `priority` (higher: more urgent).
    pub fn write_with(&mut self, len: u64, priority: u8) {
        self.streams.write(self.written, len, priority);
        self.written += len;
    }

    /// A write as [`QuicConn::write_with`], past its deadline from `expires` on (with
    /// `quic.reset_late` and a stream per write: its stream is then reset).
    pub fn write_until(&mut self, len: u64, priority: u8, expires: Option<SimTime>) {
        self.write_with(len, priority);
        if self.reset_late.is_some() && self.streams.per_write && len > 0 {
            if let Some(s) = self.streams.streams.last_mut() {
                s.expires = expires;
            }
        }
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Resets the streams whose frame is past its deadline (`now` after it) and not yet
    /// acknowledged whole, in stream order, within the peer's MAX_STREAMS (a stream beyond
    /// it waits, sending nothing, until the limit lets its RESET_STREAM go): its bytes leave
    /// the send buffer as if acknowledged, so that none is sent (again), and its
    /// RESET_STREAM is queued.
    fn reset_late_streams(&mut self, now: SimTime) {
        let Some(r) = &mut self.reset_late else { return };
        while let Some(s) = self.streams.streams.get(r.next) {
            if r.next as u64 >= self.streams.peer_max_streams || s.expires.is_none_or(|at| at >= now) {
                break;
            }
            let k = r.next;
            r.next += 1;
            let (start, end) = (s.start, s.end);
            if self.acked.first_gap(start, end).is_none() {
                continue; // acknowledged whole: nothing to abandon
            }
            let final_size = self.streams.reset(k);
            self.unsent += end - (start + final_size);
            self.acked.insert(start, end);
            self.rtx.retain(|&(a, _)| a < start || a >= end);
            r.queue.push_back(k);
            self.acked_upto = self.acked.contiguous_from(self.acked_upto);
        }
    }

    /// Sends the RESET_STREAM frames queued, as many as fit in a packet, in packets of their
    /// own (ack-eliciting; beyond the window, as a probe) on the first path in use (regular
    /// before backup).
    fn send_resets(&mut self, now: SimTime, tx: &mut impl Sink) {
        let Some(on) = (0..self.paths.len()).filter(|&j| self.paths[j].active()).min_by_key(|&j| self.paths[j].backup) else {
            return;
        };
        // the packet's room for frames: a packet number takes 4 bytes at most
        let room = self.cfg.max_datagram - SHORT_HEADER - 4 - AEAD_TAG;
        while self.reset_late.as_ref().is_some_and(|r| !r.queue.is_empty()) {
            let r = self.reset_late.as_mut().expect("on");
            let (mut frames, mut len) = (Vec::new(), 0);
            while let Some(&k) = r.queue.front() {
                let s = &self.streams.streams[k];
                let final_size = s.sent - s.start;
                let n = wire::reset_stream_frame(s.id, wire::DELIVERY_TIMEOUT, final_size);
                if len + n > room {
                    break;
                }
                len += n;
                frames.push((k, final_size));
                r.queue.pop_front();
            }
            let seq = r.sent.len();
            r.frames += frames.len() as u64;
            let logged = match self.qlog {
                None => serde_json::Value::Null,
                Some(_) => frames
                    .iter()
                    .map(|&(k, final_size)| {
                        let id = self.streams.streams[k].id;
                        json!({"frame_type": "reset_stream", "stream_id": id, "error_code": wire::DELIVERY_TIMEOUT, "final_size": final_size})
                    })
                    .collect(),
            };
            r.sent.push(frames.into());
            let pn = self.send_control_packet(now, on, len, logged, (RESET_STREAM_PACKET, seq as u64), tx);
            self.reset_late.as_mut().expect("on").in_flight.push((on, pn, seq));
        }
    }

    /// The receiver read a packet of RESET_STREAM frames (sequence number `seq`): each
    /// stream not yet read whole is closed, its final size counted in the connection's
    /// credit.
    fn on_resets(&mut self, seq: u64) {
        let Some(r) = &self.reset_late else { return };
        let Some(frames) = r.sent.get(seq as usize).cloned() else { return };
        for &(k, final_size) in frames.iter() {
            if let Some(released) = self.streams.on_reset(k, final_size) {
                self.released += released;
            }
        }
    }

    /// The connection credit the receiver allows: the bytes read, those released by reset
    /// streams, and the buffer.
    #[inline]
    fn rx_limit(&self) -> u64 {
        self.delivered + self.released + self.cfg.rcv_buf
    }

    /// Bytes written and not yet acknowledged: beyond the acknowledged prefix with one stream
    /// (as TCP's send buffer), every byte not acknowledged with a stream per write (each
    /// stream's bytes leave the buffer when acknowledged, whatever the other streams' did).
    pub fn unacked(&self) -> u64 {
        if self.streams.per_write {
            self.written - self.acked.count_from(0)
        } else {
            self.written - self.acked_upto
        }
    }

    pub fn progress(&self) -> Progress {
        Progress {
            written: self.written,
            acked: self.acked_upto,
            delivered: self.delivered,
            bytes_sent: self.paths.iter().map(|p| p.stats.bytes_sent).sum(),
        }
    }

    /// Time new data waited for flow-control credit while the window had room.
    pub fn blocked_time(&self, now: SimTime) -> Dur {
        self.blocked + self.blocked_since.map_or(Dur::ZERO, |b| now - b)
    }

    /// Bytes the receiver holds that the application has not read.
    pub fn rcv_buffered(&self) -> u64 {
        self.rx_data.count_from(0) - self.delivered
    }

    pub fn ack_record(&self, id: u32) -> Option<&AckRecord> {
        self.acks.get(id.wrapping_sub(self.ack_base) as usize)
    }

    /// The end of a further stream the last packet completed (after its
    /// [`Arrival::Message`]), one per call.
    pub fn take_message(&mut self) -> Option<u64> {
        (!self.messages.is_empty()).then(|| self.messages.remove(0))
    }

    /// The STREAM frames of a data packet (connection offset and length of each), the first
    /// one the header's and the others from the log.
    pub fn stream_frames(&self, h: &QuicHeader) -> Vec<StreamRange> {
        let mut out = vec![(h.offset, h.len)];
        if h.more {
            out.extend(self.frame_log.get(h.ack.wrapping_sub(self.frame_base) as usize).into_iter().flat_map(|m| m.iter()));
        }
        out
    }

    pub fn on_packet(&mut self, now: SimTime, sub: usize, h: &QuicHeader, tx: &mut impl Sink) -> Arrival {
        let arrival = if h.is_ack { self.on_ack_packet(now, sub, h, tx) } else { self.on_data_packet(now, sub, h, tx) };
        if self.check {
            self.check_invariants();
        }
        arrival
    }

    // ----- receiver -----

    fn on_data_packet(&mut self, now: SimTime, p: usize, h: &QuicHeader, tx: &mut impl Sink) -> Arrival {
        // an ACK_FREQUENCY frame's values apply from the packet that carries it on
        if h.ack == ACK_FREQUENCY_PACKET && !h.more {
            if let Some(r) = self.ack_frequency.as_ref().and_then(|a| a.sent.get(h.offset as usize)) {
                self.requested = Some(Requested::take(self.requested, r));
            }
        }
        if h.ack == RESET_STREAM_PACKET && !h.more {
            self.on_resets(h.offset);
        }
        let rx = &mut self.paths[p].rx;
        let pn = h.pn;
        let new_pn = rx.received.insert(pn, pn + 1) == 1;
        // RFC 9000 §13.4.1: a packet counts once, with the codepoint it arrived with
        if new_pn {
            rx.ecn.count(h.ecn);
        }
        // RFC 9000 §13.2.1: acknowledge at once a packet that arrives out of order or
        // leaves a gap below it
        let reordered = rx.largest.is_some_and(|l| pn < l);
        let gap = match rx.largest {
            Some(l) => pn > l + 1,
            None => pn > 0,
        };
        if rx.largest.is_none_or(|l| pn > l) {
            rx.largest = Some(pn);
            rx.largest_at = now;
        }
        rx.unacked += 1;
        let mut arrival = Arrival::Nothing;
        if h.len > 0 {
            let out_of_order = h.offset > self.delivered;
            let mut fresh = self.receive_frame(h.offset, h.len, &mut arrival);
            if h.more {
                let more = self.frame_log.get(h.ack.wrapping_sub(self.frame_base) as usize).cloned().unwrap_or_default();
                for &(off, len) in more.iter() {
                    fresh += self.receive_frame(off, len, &mut arrival);
                }
            }
            self.paths[p].stats.bytes_received += fresh;
            if fresh == 0 {
                self.stats.duplicate_packets += 1;
            } else if out_of_order {
                self.stats.out_of_order_packets += 1;
            }
            self.stats.max_buffered = self.stats.max_buffered.max(self.rcv_buffered());
        }
        // the application reads what is in order at once: credit grows with it
        let limit = self.rx_limit();
        let credit_due = limit >= self.advertised + self.cfg.rcv_buf / 4 || (h.blocked && limit > self.advertised);
        let rx = &self.paths[p].rx;
        // RFC 9000 §8.2.2: a PATH_CHALLENGE is answered at once, on the path it came on
        let challenge = h.ack == CHALLENGE && !h.more;
        // RFC 9000 §13.2.1: a packet marked CE is acknowledged at once
        let ce = h.ecn == Ecn::Ce;
        // RFC 9000 §13.2.1's every second packet and at once on reordering, or what the
        // sender asked with ACK_FREQUENCY and IMMEDIATE_ACK
        let due = match &self.requested {
            None => reordered || gap || rx.unacked >= 2,
            Some(r) => {
                let largest = rx.largest.expect("a packet arrived");
                h.immediate || r.ack_now(rx.unacked as u64, pn, largest, rx.reported, &rx.received)
            }
        };
        if !new_pn || due || credit_due || h.blocked || challenge || ce {
            self.send_ack(now, p, h.blocked, challenge, tx);
        } else if rx.ack_at.is_none() {
            let at = now + self.requested.map_or(self.cfg.max_ack_delay, |r| r.max_ack_delay);
            let rx = &mut self.paths[p].rx;
            rx.ack_at = Some(at);
            arm(tx, &mut rx.timer_event, Some(at), p, TimerKind::DelAck);
        }
        arrival
    }

    /// Bytes `[off, off + len)` of a STREAM frame arrived: the receiver holds them, the
    /// application reads what its stream has in order (into `arrival`). Returns the bytes new
    /// to the receiver.
    #[inline]
    fn receive_frame(&mut self, off: u64, len: u32, arrival: &mut Arrival) -> u64 {
        let fresh = self.rx_data.insert(off, off + len as u64);
        let (read, delivery) = self.streams.on_received(off, &self.rx_data);
        self.delivered += read;
        match delivery {
            Delivery::Nothing => {}
            Delivery::Prefix(upto) => *arrival = Arrival::Stream { upto },
            Delivery::Whole(end) => match arrival {
                Arrival::Message { .. } => self.messages.push(end),
                _ => *arrival = Arrival::Message { end },
            },
        }
        fresh
    }

    /// Sends an ACK packet on path `p`: the ranges received (most recent first), the delay
    /// since the largest arrived, and flow-control credit when it grew by a quarter of the
    /// buffer since last advertised (or again, when the sender said it is `blocked`). With
    /// more than one path the frame is a PATH_ACK, which adds the path's identifier; a
    /// `response` adds PATH_RESPONSE and pads the packet to 1,200 bytes (RFC 9000 §8.2.2).
    fn send_ack(&mut self, now: SimTime, p: usize, blocked: bool, response: bool, tx: &mut impl Sink) {
        let limit = self.rx_limit();
        let due = limit >= self.advertised + self.cfg.rcv_buf / 4 || (blocked && limit >= self.advertised);
        let max_data = due.then(|| {
            self.advertised = limit;
            self.stats.max_data_updates += 1;
            limit
        });
        // with a stream per write: the streams' credit and MAX_STREAMS, when grown
        let (max_stream_data, max_streams) = if self.streams.per_write {
            (self.streams.max_stream_data_due(), self.streams.max_streams_due(blocked))
        } else {
            (Vec::new(), None)
        };
        let rx = &mut self.paths[p].rx;
        let ranges: Vec<(u64, u64)> = rx.received.descending().take(MAX_ACK_RANGES).collect();
        rx.received.keep_highest(2 * MAX_ACK_RANGES);
        let ack_delay = now - rx.largest_at;
        let mut size = IP_UDP + SHORT_HEADER + ACK_PACKET_PN_LEN + AEAD_TAG + wire::ack_frame(&ranges, ack_delay.0 / 1_000);
        // ACK_ECN (0x03) or PATH_ACK_ECN (0x3f): the three counts after the ranges
        let ecn = rx.ecn.any().then_some(rx.ecn);
        size += ecn.map_or(0, |c| c.wire_len());
        if let Some(m) = max_data {
            size += if self.streams.per_write { wire::max_data_frame(m) } else { wire::max_data_frames(m, m) };
        }
        for &(k, m) in &max_stream_data {
            size += wire::max_stream_data_frame(self.streams.streams[k].id, m);
        }
        size += max_streams.map_or(0, wire::max_streams_frame);
        if self.paths.len() > 1 {
            size += wire::varint_len(p as u64);
        }
        if response {
            size = (size + PATH_VALIDATION_FRAME).max(wire::MIN_IP_PACKET);
        }
        let path = &mut self.paths[p];
        let rx = &mut path.rx;
        let largest = ranges[0].1;
        let pn = rx.next_pn;
        rx.next_pn += 1;
        rx.unacked = 0;
        rx.ack_at = None;
        rx.reported = Some(largest);
        path.stats.acks_sent += 1;
        let id = self.ack_base.wrapping_add(self.acks.len() as u32);
        self.acks.push_back(AckRecord { ranges, ack_delay, max_data, max_stream_data, max_streams, path_response: response, ecn });
        if self.acks.len() > ACK_LOG {
            self.acks.pop_front();
            self.ack_base = self.ack_base.wrapping_add(1);
        }
        let header = QuicHeader {
            pn,
            offset: largest,
            sent_at: now,
            len: 0,
            ack: id,
            path: p as u8,
            is_ack: true,
            retx: false,
            blocked: false,
            more: false,
            immediate: false,
            ecn: Ecn::NotEct,
        };
        tx.push(Action::Packet { sub: p as u8, route: self.paths[p].rev, size, header: Header::Quic(header) });
    }

    // ----- sender -----

    fn on_ack_packet(&mut self, now: SimTime, p: usize, h: &QuicHeader, tx: &mut impl Sink) -> Arrival {
        let Some(rec) = self.ack_record(h.ack).cloned() else { return Arrival::Nothing };
        if let Some(m) = rec.max_data {
            self.peer_limit = self.peer_limit.max(m);
            if !self.streams.per_write && !self.streams.streams.is_empty() {
                self.streams.on_max_stream_data(0, m);
            }
        }
        for &(k, m) in &rec.max_stream_data {
            self.streams.on_max_stream_data(k, m);
        }
        if let Some(n) = rec.max_streams {
            self.streams.peer_max_streams = self.streams.peer_max_streams.max(n);
        }
        if self.paths[p].abandoned_at.is_some() {
            return Arrival::Nothing; // a late ACK of an abandoned path: its packets were settled
        }
        let sibs = self.siblings();
        let ecn_before = self.paths[p].rec.ecn.state;
        let settled = self.paths[p].rec.on_ack(now, &rec.ranges, rec.ack_delay, rec.ecn, &sibs, p);
        if self.ack_frequency.is_some() {
            self.settle_ack_frequency(p, &rec.ranges, &settled.lost_packets);
        }
        if let Some(r) = &mut self.reset_late {
            r.settle(p, &rec.ranges, &settled.lost_packets);
        }
        if rec.path_response && !self.paths[p].validated {
            self.paths[p].validated = true;
            self.paths[p].validated_at = Some(now);
        }
        if let Some(q) = &mut self.qlog {
            let ranges: Vec<[u64; 2]> = rec.ranges.iter().rev().map(|&(lo, hi)| [lo, hi]).collect();
            let ack = if self.paths.len() > 1 { "path_ack" } else { "ack" };
            let mut frame = json!({"frame_type": ack, "ack_delay": rec.ack_delay.as_millis_f64(), "acked_ranges": ranges});
            if let Some(c) = rec.ecn {
                frame["ect0"] = json!(c.ect0);
                frame["ect1"] = json!(c.ect1);
                frame["ce"] = json!(c.ce);
            }
            let mut frames = vec![frame];
            if rec.path_response {
                frames.push(json!({"frame_type": "path_response"}));
            }
            if let Some(m) = rec.max_data {
                frames.push(json!({"frame_type": "max_data", "maximum": m}));
                if !self.streams.per_write {
                    frames.push(json!({"frame_type": "max_stream_data", "stream_id": 0, "maximum": m}));
                }
            }
            for &(k, m) in &rec.max_stream_data {
                frames.push(json!({"frame_type": "max_stream_data", "stream_id": self.streams.streams[k].id, "maximum": m}));
            }
            if let Some(n) = rec.max_streams {
                frames.push(json!({"frame_type": "max_streams", "stream_type": "unidirectional", "maximum": n}));
            }
            let data = json!({"header": {"packet_type": "1RTT", "packet_number": h.pn}, "path_id": p, "frames": frames});
            q.event(now, "quic:packet_received", data);
            let ecn_after = self.paths[p].rec.ecn.state;
            if let (Some(old), Some(new)) = (ecn_before, ecn_after) {
                if old != new {
                    q.event(now, "quic:ecn_state_updated", json!({"path_id": p, "old": old.name(), "new": new.name()}));
                }
            }
        }
        self.log_recovery(now, p, &settled);
        self.apply(settled);
        self.arm_loss_timer(p, tx);
        Arrival::Nothing
    }

    /// Logs the packets `s` declared lost and the path's recovery figures.
    fn log_recovery(&mut self, now: SimTime, p: usize, s: &Settled) {
        let Some(q) = &mut self.qlog else { return };
        for &(pn, size) in &s.lost_packets {
            let data = json!({"header": {"packet_type": "1RTT", "packet_number": pn}, "path_id": p, "raw": {"length": size}});
            q.event(now, "quic:packet_lost", data);
        }
        let r = &self.paths[p].rec;
        let data = json!({
            "path_id": p,
            "min_rtt": r.rtt.min.as_millis_f64(),
            "smoothed_rtt": r.rtt.smoothed.as_millis_f64(),
            "latest_rtt": r.rtt.latest.as_millis_f64(),
            "rtt_variance": r.rtt.rttvar.as_millis_f64(),
            "pto_count": r.pto_count,
            "congestion_window": r.w.cwnd,
            "ssthresh": r.w.ssthresh.min(u64::MAX >> 11),
            "bytes_in_flight": r.bytes_in_flight,
        });
        q.event(now, "quic:recovery_metrics_updated", data);
    }

    /// Takes what an ACK or a timer settled: acknowledged ranges into the acknowledged set,
    /// lost ones (less what was acknowledged since) queued to be sent again.
    fn apply(&mut self, s: Settled) {
        for (off, len) in s.acked {
            self.acked.insert(off, off + len as u64);
        }
        self.acked_upto = self.acked.contiguous_from(0);
        for (off, len) in s.lost {
            self.rtx.push_back((off, off + len as u64));
        }
    }

    /// Asks for the loss detection timer's event. The deadline moves with every RTT sample,
    /// earlier as often as later: an event already pending at most kGranularity (1 ms) after
    /// it serves (RFC 9002's timers have that granularity), which spares an event per ACK.
    fn arm_loss_timer(&mut self, p: usize, tx: &mut impl Sink) {
        let path = &mut self.paths[p];
        if let Some(at) = path.rec.timer() {
            if path.timer_event.is_none_or(|e| at + Dur(wire::GRANULARITY_NS) < e) {
                tx.push(Action::Timer { sub: p as u16, kind: TimerKind::Rto, at });
                path.timer_event = Some(at);
            }
        }
    }

    pub fn on_timer(&mut self, now: SimTime, p: usize, kind: TimerKind, tx: &mut impl Sink) {
        match kind {
            TimerKind::Rto if self.paths[p].abandoned_at.is_some() => {}
            TimerKind::Rto => {
                self.paths[p].timer_event = None;
                match self.paths[p].rec.timer() {
                    Some(at) if at <= now => {
                        let sibs = self.siblings();
                        let (settled, pto) = self.paths[p].rec.on_timeout(now, &sibs, p);
                        self.settle_ack_frequency(p, &[], &settled.lost_packets);
                        if let Some(r) = &mut self.reset_late {
                            r.settle(p, &[], &settled.lost_packets);
                        }
                        self.log_recovery(now, p, &settled);
                        self.apply(settled);
                        if pto {
                            tx.push(Action::Note { sub: p as u8, kind: TraceKind::Timeout, seq: self.acked_upto, dsn: 0 });
                            if self.may_abandon(p) {
                                self.abandon(now, p);
                            } else {
                                // RFC 9002 §6.2.4: two probes, beyond the window, the
                                // first with IMMEDIATE_ACK under the ACK frequency
                                // extension (as quinn does)
                                self.immediate_ack = self.ack_frequency.is_some();
                                for _ in 0..2 {
                                    self.send_probe(now, p, tx);
                                }
                            }
                        }
                        self.poll_transmit(now, tx);
                    }
                    _ => {}
                }
                self.arm_loss_timer(p, tx);
            }
            TimerKind::PathStatus => self.on_path_status(now, p, tx),
            // a wake-up armed later than an earlier one still fires: only the pending one counts
            TimerKind::Pace if self.paths[p].pace_event != Some(now) => {}
            TimerKind::Pace => {
                self.paths[p].pace_event = None;
                self.poll_transmit(now, tx);
            }
            TimerKind::DelAck => {
                let rx = &mut self.paths[p].rx;
                rx.timer_event = None;
                match rx.ack_at {
                    Some(at) if at <= now => self.send_ack(now, p, false, false, tx),
                    Some(at) => arm(tx, &mut rx.timer_event, Some(at), p, TimerKind::DelAck),
                    None => {}
                }
            }
            _ => {}
        }
        if self.check {
            self.check_invariants();
        }
    }

    /// Whether path `p` is to be abandoned: its probe timeout fired `ABANDON_PTOS` times in a
    /// row without an ACK, and another path is left (the last one never is: abandoning it
    /// would close the connection).
    fn may_abandon(&self, p: usize) -> bool {
        self.multipath()
            && self.paths[p].rec.pto_count >= wire::ABANDON_PTOS
            && self.paths.iter().enumerate().any(|(j, q)| j != p && q.abandoned_at.is_none())
    }

    /// Abandons path `p`: its packets in flight are taken as lost (their data queued to go on
    /// the other paths), it carries nothing more, and PATH_ABANDON goes out on another path.
    fn abandon(&mut self, now: SimTime, p: usize) {
        let settled = self.paths[p].rec.abandon();
        self.settle_ack_frequency(p, &[], &settled.lost_packets);
        if let Some(r) = &mut self.reset_late {
            r.settle(p, &[], &settled.lost_packets);
        }
        self.paths[p].abandoned_at = Some(now);
        self.log_recovery(now, p, &settled);
        self.apply(settled);
        self.abandons.push(p);
    }

    /// PATH_ABANDON for `gone` in a packet of its own on path `p` (ack-eliciting; beyond the
    /// window, as a probe).
    fn send_abandon(&mut self, now: SimTime, p: usize, gone: usize, tx: &mut impl Sink) {
        let frame = json!({"frame_type": "path_abandon", "path_id": gone, "error_code": "path_unstable_or_poor"});
        self.send_control_frame(now, p, wire::path_abandon_frame(gone as u64), frame, tx);
    }

    /// A packet of its own on path `p` carrying one control frame of `frame_len` bytes
    /// (`frame`: its form in qlog; such packets are rare).
    pub(super) fn send_control_frame(&mut self, now: SimTime, p: usize, frame_len: u32, frame: serde_json::Value, tx: &mut impl Sink) {
        self.send_control_packet(now, p, frame_len, json!([frame]), (0, 0), tx);
    }

    /// [`QuicConn::send_control_frame`] with the frames' `frames_len` bytes (`frames`: their
    /// qlog array), the header's `ack` and `offset` fields set to `mark` (what the receiver
    /// reads of the frames); returns the packet number.
    fn send_control_packet(
        &mut self,
        now: SimTime,
        p: usize,
        frame_len: u32,
        frames: serde_json::Value,
        mark: (u32, u64),
        tx: &mut impl Sink,
    ) -> u64 {
        let path = &mut self.paths[p];
        let pn_len = wire::pn_len(path.rec.peek_pn(), path.rec.largest_acked);
        let size = SHORT_HEADER + pn_len + frame_len + AEAD_TAG;
        let ecn = path.rec.ecn.codepoint();
        let pn = path.rec.on_sent(now, size, None, false, ecn);
        if let Some(q) = &mut self.qlog {
            let data =
                json!({"header": {"packet_type": "1RTT", "packet_number": pn}, "path_id": p, "raw": {"length": size}, "frames": frames});
            q.event(now, "quic:packet_sent", data);
        }
        let header = control_header(pn, now, p, mark, ecn);
        tx.push(Action::Packet { sub: p as u8, route: self.paths[p].fwd, size: size + IP_UDP, header: Header::Quic(header) });
        pn
    }

    /// Sends an ACK_FREQUENCY frame when the sender's requests call for one (the first, one
    /// lost, or a change under the `window` policy), in a packet of its own on the first path
    /// in use (regular before backup); recovery's max_ack_delay follows (the larger of the
    /// receiver's and the one in flight).
    fn send_ack_frequency(&mut self, now: SimTime, tx: &mut impl Sink) {
        let Some(a) = &mut self.ack_frequency else { return };
        let active = self.paths.iter().filter(|q| q.active());
        let Some(cwnd) = active.clone().map(|q| q.rec.w.cwnd / q.rec.w.mss).min() else { return };
        let srtt = active.map(|q| q.rec.rtt.smoothed).min().expect("a path in use");
        let Some(r) = a.due(cwnd, srtt) else { return };
        let on = (0..self.paths.len()).filter(|&j| self.paths[j].active()).min_by_key(|&j| self.paths[j].backup).expect("a path in use");
        let frame = json!({
            "frame_type": "ack_frequency",
            "sequence_number": r.seq,
            "ack_eliciting_threshold": r.threshold,
            "request_max_ack_delay": r.max_ack_delay.0 / 1_000,
            "reordering_threshold": r.reordering,
        });
        let pn = self.send_control_packet(now, on, r.wire_len(), json!([frame]), (ACK_FREQUENCY_PACKET, r.seq), tx);
        let a = self.ack_frequency.as_mut().expect("on");
        a.in_flight = Some((on, pn, r.max_ack_delay));
        let d = a.pto_max_ack_delay();
        for q in &mut self.paths {
            q.rec.max_ack_delay = d;
        }
    }

    /// The packet carrying the ACK_FREQUENCY frame in flight on path `p` was acknowledged (in
    /// `acked`, inclusive ranges) or declared lost (in `lost`): the receiver's max_ack_delay
    /// is the frame's, or the frame goes again.
    fn settle_ack_frequency(&mut self, p: usize, acked: &[(u64, u64)], lost: &[(u64, u32)]) {
        let Some(a) = &mut self.ack_frequency else { return };
        let Some((q, pn, _)) = a.in_flight else { return };
        if q != p {
            return;
        }
        if acked.iter().any(|&(lo, hi)| (lo..=hi).contains(&pn)) {
            a.settled(true);
        } else if lost.iter().any(|&(l, _)| l == pn) {
            a.settled(false);
        } else {
            return;
        }
        let d = a.pto_max_ack_delay();
        for path in &mut self.paths {
            path.rec.max_ack_delay = d;
        }
    }

    /// The most stream bytes the next packet on path `p` can carry in a STREAM frame at
    /// `offset`, after `used` bytes of frames before it.
    fn room(&self, p: usize, offset: u64, used: u32) -> u64 {
        let pn_len = wire::pn_len(self.paths[p].rec.peek_pn(), self.paths[p].rec.largest_acked);
        let blocked = if self.fc_blocked() { wire::blocked_frame(self.peer_limit) } else { 0 };
        let header = self.streams.frame_header(self.streams.index_of(offset), offset, self.cfg.max_datagram as u64);
        let fixed = SHORT_HEADER + pn_len + AEAD_TAG + header + blocked + used + self.immediate_ack as u32;
        self.cfg.max_datagram.saturating_sub(fixed) as u64
    }

    /// Bytes of STREAM frame `f` on the wire: its header and data.
    #[inline]
    fn frame_bytes(&self, f: Frame) -> u32 {
        self.streams.frame_header(self.streams.index_of(f.0), f.0, f.1 as u64) + f.1
    }

    /// The next stream frame to send on path `p` in a packet holding `used` bytes of frames
    /// already: lost data first (less what was acknowledged since), then new data of the
    /// stream `streams.rs` picks, within the peer's limits; None when there is none or no room
    /// for a byte of it.
    fn next_frame(&mut self, p: usize, used: u32) -> Option<Frame> {
        while let Some(&(s, e)) = self.rtx.front() {
            match self.acked.first_gap(s, e) {
                None => {
                    self.rtx.pop_front();
                }
                Some((gs, ge)) => {
                    let room = self.room(p, gs, used);
                    if room == 0 {
                        return None;
                    }
                    let len = (ge - gs).min(room);
                    if gs + len >= e {
                        self.rtx.pop_front();
                    } else {
                        self.rtx[0] = (gs + len, e);
                    }
                    return Some((gs, len as u32, true));
                }
            }
        }
        if !self.streams.per_write {
            // one stream: its bytes leave in order, the next new offset is `next_offset`
            let limit = self.written.min(self.peer_limit);
            return (self.next_offset < limit).then(|| {
                let off = self.next_offset;
                let len = (limit - off).min(self.room(p, off, used));
                self.next_offset += len;
                (off, len as u32, false)
            });
        }
        if self.next_offset >= self.peer_limit {
            return None;
        }
        let k = self.streams.next_stream()?;
        let off = self.streams.streams[k].sent;
        let room = self.room(p, off, used);
        if room == 0 {
            return None;
        }
        let len = (self.peer_limit - self.next_offset).min(room);
        let chunk = self.streams.take(k, len);
        self.next_offset += chunk.len;
        Some((chunk.offset, chunk.len as u32, false))
    }

    /// The frames of the next packet on path `p`, from its first frame `first`: with a stream
    /// per write, as long as room is left, more frames as [`QuicConn::next_frame`] picks them
    /// (the rest of a lost range, the next stream's data: RFC 9000 §12.4), each with its own
    /// header. (The one stream of a bulk flow fills a packet with one frame.)
    fn fill(&mut self, p: usize, first: Frame) -> Vec<Frame> {
        let mut pkt = std::mem::take(&mut self.pkt);
        pkt.clear();
        pkt.push(first);
        let mut used = self.frame_bytes(first);
        while let Some(f) = self.next_frame(p, used) {
            used += self.frame_bytes(f);
            pkt.push(f);
        }
        pkt
    }

    /// The frames of `frames` that fit in a packet on path `p` (a copy of a packet sent on
    /// another path, whose packet number may take more bytes): the last one cut short.
    fn fit(&self, p: usize, frames: &[Frame]) -> Vec<Frame> {
        let (mut out, mut used) = (Vec::new(), 0);
        for &(off, len, retx) in frames {
            let l = (len as u64).min(self.room(p, off, used)) as u32;
            if l == 0 {
                break;
            }
            out.push((off, l, retx));
            used += self.frame_bytes((off, l, retx));
            if l < len {
                break;
            }
        }
        out
    }

    /// The priority of the stream whose data goes next (schedulers that place urgent data, as
    /// PO-MPTCP, read it): of the lost data at the head of the queue if any (it goes first),
    /// else of the stream whose new data goes next; 0 with one stream. Called after
    /// [`QuicConn::has_frame`], which drops lost ranges acknowledged since.
    pub(super) fn next_priority(&self) -> u8 {
        if !self.streams.per_write {
            return 0;
        }
        let k = match self.rtx.front() {
            Some(&(s, _)) => Some(self.streams.index_of(s)),
            None => self.streams.next_stream(),
        };
        k.map_or(0, |k| self.streams.streams[k].priority)
    }

    /// Whether new data waits for flow-control credit (the connection's; with a stream per
    /// write, also a stream's or MAX_STREAMS).
    fn fc_blocked(&self) -> bool {
        (self.next_offset < self.written && self.next_offset >= self.peer_limit)
            || (self.streams.per_write && self.streams.stream_blocked())
    }

    /// Whether there is stream data to send, lost or new (dropping lost ranges acknowledged
    /// since).
    fn has_frame(&mut self) -> bool {
        while let Some(&(s, e)) = self.rtx.front() {
            if self.acked.first_gap(s, e).is_some() {
                return true;
            }
            self.rtx.pop_front();
        }
        match self.streams.per_write {
            true => self.next_offset < self.peer_limit && self.streams.next_stream().is_some(),
            false => self.next_offset < self.written.min(self.peer_limit),
        }
    }

    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        if self.multipath() {
            return self.poll_multipath(now, tx);
        }
        let p = 0;
        let full = self.cfg.max_datagram;
        if self.ack_frequency.is_some() {
            self.send_ack_frequency(now, tx);
        }
        if self.reset_late.is_some() {
            self.reset_late_streams(now);
            self.send_resets(now, tx);
        }
        while self.paths[p].rec.can_send(full) {
            if self.paths[p].pacer.is_some() && self.has_frame() && self.paths[p].pacing_holds(now, p, full as u64, tx) {
                break;
            }
            let Some(frame) = self.next_frame(p, 0) else { break };
            self.send_from(now, p, frame, false, tx);
        }
        let blocked = self.fc_blocked() && self.paths[p].rec.can_send(full) && self.rtx.is_empty();
        match (blocked, self.blocked_since) {
            (true, None) => self.blocked_since = Some(now),
            (false, Some(b)) => {
                self.blocked = self.blocked + (now - b);
                self.blocked_since = None;
            }
            _ => {}
        }
        self.arm_loss_timer(p, tx);
        if self.check {
            self.check_invariants();
        }
    }

    /// Multipath QUIC's sending: a PATH_CHALLENGE on each path not yet challenged, then a
    /// packet at a time on the path the scheduler picks among the validated ones, lost data
    /// first (on whichever path is picked: QUIC's natural reinjection). A path picked without
    /// room in its window for a full packet is hidden from the scheduler, which is asked again.
    fn poll_multipath(&mut self, now: SimTime, tx: &mut impl Sink) {
        let full = self.cfg.max_datagram;
        self.arm_path_status(now, tx);
        if self.ack_frequency.is_some() {
            self.send_ack_frequency(now, tx);
        }
        for p in 0..self.paths.len() {
            if !self.paths[p].validated && self.paths[p].challenged_at.is_none() {
                self.send_challenge(now, p, false, tx);
            }
        }
        // PATH_ABANDON on the first path in use, a regular one before a backup
        while let Some(&gone) = self.abandons.last() {
            let on = (0..self.paths.len()).filter(|&j| self.paths[j].active()).min_by_key(|&j| self.paths[j].backup);
            let Some(j) = on else { break };
            self.abandons.pop();
            self.send_abandon(now, j, gone, tx);
        }
        self.send_path_status(now, tx);
        if self.reset_late.is_some() {
            self.reset_late_streams(now);
            self.send_resets(now, tx);
        }
        // the backup rule: backup paths carry data only while no regular path is in use
        let backups = !self.paths.iter().any(|p| p.active() && !p.backup);
        let mut sched = self.sched.take().expect("a multipath connection has a scheduler");
        let copies_asked = sched.properties().sends_copies;
        // every pass sends a packet or stops; the bound only guards against a faulty scheduler
        for _ in 0..100_000 {
            if !self.has_frame() {
                break;
            }
            self.views.clear();
            self.views.extend(self.paths.iter().map(QuicPath::view));
            let unscheduled = self.written - self.next_offset - self.unsent;
            let next_priority = self.next_priority();
            let (mut chosen, mut copies) = (None, 0);
            for _ in 0..self.paths.len() {
                let ctx = SchedContext {
                    now,
                    subflows: &self.views,
                    unscheduled,
                    window_room: self.peer_limit.saturating_sub(self.next_offset),
                    next_len: full as u64,
                    next_priority,
                    hol_subflow: None,
                    hol_sent_on: 0,
                    send_window: self.peer_limit.saturating_sub(self.acked_upto),
                    maybe_available: ALL_MAYBE_AVAILABLE,
                };
                match sched.pick(&ctx) {
                    Decision::Send(i) if i < self.paths.len() && self.views[i].usable => {
                        if self.paths[i].rec.can_send(full)
                            && (backups || !self.paths[i].backup)
                            && (self.paths[i].pacer.is_none() || !self.paths[i].pacing_holds(now, i, full as u64, tx))
                        {
                            copies = if copies_asked { sched.copies(&ctx, i) } else { 0 };
                            chosen = Some(i);
                            break;
                        }
                        self.views[i].usable = false;
                    }
                    _ => break,
                }
            }
            let Some(i) = chosen else { break };
            let frame = self.next_frame(i, 0).expect("a frame to send");
            self.send_from(now, i, frame, false, tx);
            // the redundant scheduler's copies, on the paths it names that have room
            let mut m = copies & !(1 << i);
            if m != 0 {
                let pkt = if self.streams.per_write { self.pkt.clone() } else { vec![frame] };
                while m != 0 {
                    let j = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let ok = self.paths.get(j).is_some_and(|q| q.active() && (backups || !q.backup) && q.rec.can_send(full));
                    if ok {
                        let copy = self.fit(j, &pkt);
                        self.transmit(now, j, &copy, false, tx);
                    }
                }
            }
        }
        self.sched = Some(sched);
        let room = self.paths.iter().any(|p| p.active() && (backups || !p.backup) && p.rec.can_send(full));
        let blocked = self.fc_blocked() && room && self.rtx.is_empty();
        match (blocked, self.blocked_since) {
            (true, None) => self.blocked_since = Some(now),
            (false, Some(b)) => {
                self.blocked = self.blocked + (now - b);
                self.blocked_since = None;
            }
            _ => {}
        }
        for p in 0..self.paths.len() {
            self.arm_loss_timer(p, tx);
        }
        if self.check {
            self.check_invariants();
        }
    }

    /// A PATH_CHALLENGE on path `p`, padded to 1,200 bytes (RFC 9000 §8.2.1); ack-eliciting,
    /// so that its loss brings a probe timeout, which challenges again.
    fn send_challenge(&mut self, now: SimTime, p: usize, probe: bool, tx: &mut impl Sink) {
        let size = wire::MIN_IP_PACKET - IP_UDP;
        let path = &mut self.paths[p];
        let ecn = path.rec.ecn.codepoint();
        let pn = path.rec.on_sent(now, size, None, probe, ecn);
        path.challenged_at = Some(now);
        // a backup path announces itself with PATH_STATUS_BACKUP beside the challenge (the
        // padding leaves room for it: the packet's size is the same)
        let backup = path.backup;
        if let Some(q) = &mut self.qlog {
            let mut frames = vec![json!({"frame_type": "path_challenge"})];
            if backup {
                frames.push(json!({"frame_type": "path_status_backup", "path_id": p, "sequence_number": 0}));
            }
            frames.push(json!({"frame_type": "padding"}));
            let data =
                json!({"header": {"packet_type": "1RTT", "packet_number": pn}, "path_id": p, "raw": {"length": size}, "frames": frames});
            q.event(now, "quic:packet_sent", data);
        }
        let header = control_header(pn, now, p, (CHALLENGE, 0), ecn);
        tx.push(Action::Packet { sub: p as u8, route: self.paths[p].fwd, size: size + IP_UDP, header: Header::Quic(header) });
    }

    /// A probe on path `p` (RFC 9002 §6.2.4): lost or new data if any, else the oldest
    /// outstanding data again, else a PING; on a path not yet validated, a PATH_CHALLENGE
    /// again.
    fn send_probe(&mut self, now: SimTime, p: usize, tx: &mut impl Sink) {
        if !self.paths[p].validated {
            return self.send_challenge(now, p, true, tx);
        }
        match self.next_frame(p, 0) {
            Some(frame) => self.send_from(now, p, frame, true, tx),
            None => match self.paths[p].rec.oldest_outstanding_stream() {
                // with `quic.reset_late`, a reset stream's data is not sent again: a PING
                Some((off, len)) if self.reset_late.is_some() && self.acked.first_gap(off, off + len as u64).is_none() => {
                    self.transmit(now, p, &[], true, tx)
                }
                Some((off, len)) => self.transmit(now, p, &[(off, len.min(self.room(p, off, 0) as u32), true)], true, tx),
                None => self.transmit(now, p, &[], true, tx),
            },
        }
    }

    /// Sends the packet that starts with frame `first` on path `p`, with the further frames
    /// [`QuicConn::fill`] adds (with a stream per write; they stay in `pkt`).
    fn send_from(&mut self, now: SimTime, p: usize, first: Frame, probe: bool, tx: &mut impl Sink) {
        if !self.streams.per_write {
            return self.transmit(now, p, &[first], probe, tx);
        }
        let pkt = self.fill(p, first);
        self.transmit(now, p, &pkt, probe, tx);
        self.pkt = pkt;
    }

    /// Sends one packet on path `p` with STREAM `frames` (a PING without any).
    fn transmit(&mut self, now: SimTime, p: usize, frames: &[Frame], probe: bool, tx: &mut impl Sink) {
        let blocked = self.fc_blocked();
        let pn_len = wire::pn_len(self.paths[p].rec.peek_pn(), self.paths[p].rec.largest_acked);
        let first = frames.first().copied();
        let (offset, len, _) = first.unwrap_or((0, 0, false));
        let (mut bytes, mut data, mut retx) = (0, 0u64, false);
        for &f in frames {
            bytes += self.frame_bytes(f);
            data += f.1 as u64;
            retx |= f.2;
        }
        // IMMEDIATE_ACK (one byte) after a probe timeout; it elicits an ACK as a PING does, so
        // it takes a PING's place
        let immediate = std::mem::take(&mut self.immediate_ack);
        // a PING: 1 byte
        let mut size = SHORT_HEADER + pn_len + bytes.max(1) + (immediate && !frames.is_empty()) as u32 + AEAD_TAG;
        // STREAM_DATA_BLOCKED, when it fits
        let blocked = blocked && size + wire::blocked_frame(self.peer_limit) <= self.cfg.max_datagram;
        if blocked {
            size += wire::blocked_frame(self.peer_limit);
        }
        let path = &mut self.paths[p];
        let ecn = path.rec.ecn.codepoint();
        let pn = path.rec.on_sent(now, size, first.map(|f| (f.0, f.1)), probe, ecn);
        path.stats.bytes_sent += data;
        path.stats.retransmits += retx as u64;
        let more = frames.len() > 1;
        let mut id = 0;
        if more {
            let rest: Box<[StreamRange]> = frames[1..].iter().map(|f| (f.0, f.1)).collect();
            path.rec.add_frames(pn, rest.clone());
            id = self.frame_base.wrapping_add(self.frame_log.len() as u32);
            self.frame_log.push_back(rest);
            if self.frame_log.len() > ACK_LOG {
                self.frame_log.pop_front();
                self.frame_base = self.frame_base.wrapping_add(1);
            }
        }
        if let Some(q) = &mut self.qlog {
            let mut logged: Vec<serde_json::Value> = frames
                .iter()
                .map(|&(off, len, _)| {
                    let c = self.streams.chunk(off, len as u64);
                    let s = &self.streams.streams[c.stream];
                    let mut f = json!({"frame_type": "stream", "stream_id": s.id, "offset": off - s.start, "length": len});
                    if c.fin {
                        f["fin"] = json!(true);
                    }
                    f
                })
                .collect();
            if frames.is_empty() {
                logged.push(json!({"frame_type": "ping"}));
            }
            if blocked {
                logged.push(json!({"frame_type": "stream_data_blocked", "stream_id": 0, "maximum": self.peer_limit}));
            }
            if immediate {
                logged.retain(|f| f["frame_type"] != "ping");
                logged.push(json!({"frame_type": "immediate_ack"}));
            }
            let mut data =
                json!({"header": {"packet_type": "1RTT", "packet_number": pn}, "path_id": p, "raw": {"length": size}, "frames": logged});
            if probe {
                data["trigger"] = json!("pto_probe");
            }
            q.event(now, "quic:packet_sent", data);
        }
        if let (true, Some(a)) = (immediate, &mut self.ack_frequency) {
            a.immediate_acks += 1;
        }
        let path = &mut self.paths[p];
        if let Some(pacer) = &mut path.pacer {
            pacer.on_sent(size as u64);
        }
        let header =
            QuicHeader { pn, offset, sent_at: now, len, ack: id, path: p as u8, is_ack: false, retx, blocked, more, immediate, ecn };
        tx.push(Action::Packet { sub: p as u8, route: path.fwd, size: size + IP_UDP, header: Header::Quic(header) });
    }

    /// Checks the connection's invariants (for tests).
    pub fn check_invariants(&self) {
        for p in &self.paths {
            p.rec.check_invariants();
            assert!(p.validated || p.stats.bytes_sent == 0, "stream data sent on a path not validated");
        }
        assert!(self.next_offset <= self.written.min(self.peer_limit), "sent beyond what was written or allowed");
        assert!(self.acked_upto <= self.next_offset + self.unsent, "acknowledged beyond what was sent");
        assert!(self.delivered <= self.next_offset, "delivered beyond what was sent");
        assert!(self.rx_data.count_from(0) <= self.rx_limit(), "received beyond the credit");
        self.streams.check_invariants();
    }
}

/// The header of a packet of control frames only on path `p`: no stream data, `mark` in the
/// `ack` and `offset` fields (what the receiver reads of the frame).
fn control_header(pn: u64, now: SimTime, p: usize, mark: (u32, u64), ecn: Ecn) -> QuicHeader {
    let (ack, offset) = mark;
    QuicHeader {
        pn,
        offset,
        sent_at: now,
        len: 0,
        ack,
        path: p as u8,
        is_ack: false,
        retx: false,
        blocked: false,
        more: false,
        immediate: false,
        ecn,
    }
}
