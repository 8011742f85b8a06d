//! Multipath TCP (RFC 8684): a connection level over TCP subflows.
//!
//! The application's bytes get data sequence numbers (DSN). The scheduler hands chunks of at
//! most one MSS to subflows; each subflow is a full TCP sender with its own sequence space,
//! loss recovery and controller, and remembers which DSN each chunk carries (the DSS mapping).
//! The receiver reassembles by DSN in a bounded buffer and returns a DATA_ACK and the
//! connection-level window with every subflow ACK. New data may not go beyond that window:
//! when a slow subflow holds the head of line, out-of-order data fills the buffer and the
//! sender blocks (receive-buffer blocking), which this module measures.
//!
//! Data stuck on a subflow that timed out is offered again to the other subflows
//! (reinjection); the receiver discards whatever copy arrives second.
//!
//! Files: this one holds the connection and its sans-IO operations; `level.rs` the DSN
//! bookkeeping of both ends; `schedule.rs` the scheduling loop, head-of-line detection and
//! reinjection after a timeout.

mod level;
mod schedule;
#[cfg(test)]
mod tests;

use super::{Action, Arrival, Progress, Sink, Subflow, TimerKind};
use crate::cc::SubflowState;
use crate::metrics::TraceKind;
use crate::net::Header;
use crate::sched::{Sched, SubflowView};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{ReceiverConfig, TcpReceiver, TimerEvent};
use std::collections::VecDeque;

/// Bytes of MPTCP options: a DSS mapping on data segments, a DATA_ACK on ACKs (RFC 8684).
pub const DSS_MAPPING_BYTES: u32 = 16;
pub const DATA_ACK_BYTES: u32 = 8;

/// A chunk handed to a subflow: its subflow sequence number, DSN and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub seq: u64,
    pub dsn: u64,
    pub len: u32,
}

/// Data to send again (or a redundant copy), on `target` if given, never on `exclude`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reinject {
    pub dsn: u64,
    pub len: u32,
    pub target: Option<usize>,
    pub exclude: Option<usize>,
}

/// The DSN carried by subflow bytes at `seq`, from a subflow's mappings (oldest first).
#[inline]
pub fn dsn_of(map: &VecDeque<Mapping>, seq: u64) -> Option<u64> {
    // new data is sent from the newest mapping: look there before searching
    if let Some(m) = map.back().filter(|m| m.seq <= seq && seq < m.seq + m.len as u64) {
        return Some(m.dsn + (seq - m.seq));
    }
    let i = map.partition_point(|m| m.seq + m.len as u64 <= seq);
    map.get(i).filter(|m| m.seq <= seq).map(|m| m.dsn + (seq - m.seq))
}

/// One Multipath TCP connection: its subflows, scheduler and reinjection queue, and the
/// sender and receiver halves of the connection level.
pub struct MptcpConn {
    pub subs: Vec<Subflow>,
    pub sched: Sched,
    /// Bytes of TCP/IP headers on every segment and ACK (the MPTCP options come on top).
    pub header: u32,
    pub mss: u32,
    /// Check protocol invariants after every step (tests).
    pub check: bool,
    // ----- sender -----
    /// End of the data the application has written (DSN space).
    pub app_limit: u64,
    /// Lowest DSN never handed to a subflow (with a priority dequeue, prioritised data above
    /// it may have been handed out already: see `prio_nxt`).
    pub dsn_nxt: u64,
    /// Every prioritised byte below this DSN has been handed to a subflow (the priority
    /// dequeue's cursor; at most `dsn_nxt` without it).
    pub prio_nxt: u64,
    /// Highest DATA_ACK received.
    pub data_una: u64,
    /// The receiver admits DSNs below this (DATA_ACK + window, never moving left).
    pub right_edge: u64,
    pub reinject: VecDeque<Reinject>,
    /// [start, end) DSN ranges written with a priority above 0, and that priority, oldest first.
    priorities: VecDeque<(u64, u64, u8)>,
    // ----- receiver -----
    pub rx: TcpReceiver,
    last_rx_end: Option<u64>,
    // ----- measurements -----
    blocked_since: Option<SimTime>,
    blocked_total: Dur,
    /// Largest |DSN − end of the previously received chunk| (seed 000's O3-DSN offset).
    pub o3_max: u64,
    o3_sum: u128,
    o3_count: u64,
    pub reinjections: u64,
    pub penalties: u64,
    /// Subflows that may have something to send (bit i: subflow i): acknowledged, timed out
    /// or handed data since they last transmitted. The others would find nothing to send.
    dirty: u64,
    /// What the scheduler and the coupled controllers see of each subflow, kept from one use
    /// to the next; a subflow's entries are rebuilt only after it changed (bit i of the
    /// `stale_*` masks), so the work per ACK does not grow with the number of subflows.
    views: Vec<SubflowView>,
    states: Vec<SubflowState>,
    stale_views: u64,
    stale_states: u64,
}

impl MptcpConn {
    /// A connection over `subs` with a connection-level receive buffer of `rcv_buf` bytes.
    pub fn new(subs: Vec<Subflow>, sched: Sched, rcv_buf: u64, header: u32, mss: u32) -> MptcpConn {
        assert!(subs.len() <= 64, "at most 64 subflows");
        MptcpConn {
            subs,
            sched,
            header,
            mss,
            check: false,
            app_limit: 0,
            dsn_nxt: 0,
            prio_nxt: 0,
            data_una: 0,
            right_edge: rcv_buf,
            reinject: VecDeque::new(),
            priorities: VecDeque::new(),
            rx: TcpReceiver::new(ReceiverConfig { buffer: rcv_buf, ..ReceiverConfig::default() }),
            last_rx_end: None,
            blocked_since: None,
            blocked_total: Dur::ZERO,
            o3_max: 0,
            o3_sum: 0,
            o3_count: 0,
            reinjections: 0,
            penalties: 0,
            dirty: 0,
            views: Vec::new(),
            states: Vec::new(),
            stale_views: u64::MAX,
            stale_states: u64::MAX,
        }
    }

    /// Subflow `i` changed (an ACK, a timer, data handed to it or sent, its window cut): its
    /// view and state must be rebuilt before their next use.
    #[inline]
    fn touch(&mut self, i: usize) {
        self.stale_views |= 1 << i;
        self.stale_states |= 1 << i;
    }

    pub fn progress(&self) -> Progress {
        Progress {
            written: self.app_limit,
            acked: self.data_una,
            delivered: self.rx.rcv_nxt(),
            bytes_sent: self.subs.iter().map(|s| s.sender.stats.bytes_sent).sum(),
        }
    }

    /// What the coupled controllers see of every subflow.
    fn subflow_states(&mut self) {
        let state = |s: &Subflow| s.sender.subflow_state(s.usable && !s.backup);
        if self.states.len() != self.subs.len() {
            self.states.clear();
            self.states.extend(self.subs.iter().map(state));
        } else {
            let mut stale = self.stale_states;
            while stale != 0 {
                let i = stale.trailing_zeros() as usize;
                stale &= stale - 1;
                if i < self.subs.len() {
                    self.states[i] = state(&self.subs[i]);
                }
            }
        }
        self.stale_states = 0;
    }

    /// Schedules new data (and pending reinjections), then lets every subflow transmit.
    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        self.schedule(now);
        let header = self.header + DSS_MAPPING_BYTES;
        let edge = self.check.then_some(self.right_edge);
        let mut dirty = std::mem::take(&mut self.dirty);
        while dirty != 0 {
            let i = dirty.trailing_zeros() as usize;
            dirty &= dirty - 1;
            self.subs[i].transmit(now, i, header, true, edge, tx);
            self.touch(i);
        }
    }

    /// Hands the chunk [dsn, dsn+len) to subflow `i`.
    fn assign(&mut self, i: usize, dsn: u64, len: u64) {
        self.subs[i].assign(dsn, len);
        self.dirty |= 1 << i;
        self.touch(i);
    }

    pub fn on_packet(&mut self, now: SimTime, i: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        match header {
            Header::TcpData(h) => {
                let before = self.rx.rcv_nxt();
                if h.cw {
                    self.subs[i].receiver.on_cw_mark();
                }
                let r = self.subs[i].receiver.on_segment(now, h.seq, h.len);
                let delivered = self.on_receive(now, h.dsn, h.len).delivered;
                if self.check {
                    assert!(self.rx.buffered() <= self.rx.capacity(), "receive buffer over its limit");
                    assert_eq!(self.rx.stats.beyond_window_drops, 0, "data beyond the receive window");
                }
                if r.ack_now {
                    self.send_ack(i, tx);
                } else {
                    self.subs[i].delay_ack(i, tx);
                }
                if delivered > 0 {
                    Arrival::Stream { upto: before + delivered }
                } else {
                    Arrival::Nothing
                }
            }
            Header::TcpAck(h) => {
                self.dirty |= 1 << i;
                self.subflow_states();
                let sub = &mut self.subs[i];
                let una_before = sub.sender.snd_una();
                sub.sender.on_ack_coupled(now, h, &self.states, i);
                let una = sub.sender.snd_una();
                if una > una_before {
                    sub.usable = true;
                    while sub.map.front().is_some_and(|m| m.seq + m.len as u64 <= una) {
                        sub.map.pop_front();
                    }
                }
                self.touch(i);
                self.on_data_ack(h.data_ack, h.wnd());
                if self.check {
                    let sub = &self.subs[i];
                    if let Err(e) = sub.sender.check_invariants() {
                        panic!("subflow {i}: {e}");
                    }
                    assert!(sub.sender.snd_una() <= sub.receiver.rcv_nxt(), "subflow {i}: acknowledged undelivered data");
                    assert!(self.data_una <= self.rx.rcv_nxt(), "DATA_ACK beyond delivered data");
                }
                Arrival::Nothing
            }
            Header::Datagram(_) | Header::SctpData(_) | Header::SctpSack(_) | Header::SctpControl(_) => Arrival::Nothing,
        }
    }

    /// An ACK on subflow `i`, carrying the DATA_ACK and the connection-level window.
    fn send_ack(&mut self, i: usize, tx: &mut impl Sink) {
        let conn = (self.rx.rcv_nxt(), self.rx.window());
        self.subs[i].send_ack(i, self.header + DATA_ACK_BYTES, Some(conn), tx);
    }

    pub fn on_timer(&mut self, now: SimTime, i: usize, kind: TimerKind, tx: &mut impl Sink) {
        match kind {
            TimerKind::Rto => {
                if !self.subs[i].rto_due(now, i, tx) {
                    return;
                }
                self.dirty |= 1 << i;
                self.subflow_states();
                let una = self.subs[i].sender.snd_una();
                let fired = self.subs[i].sender.on_timer_coupled(now, &self.states, i);
                self.touch(i);
                if fired == TimerEvent::Rto {
                    self.reinject_after_timeout(i);
                    let dsn = dsn_of(&self.subs[i].map, una).unwrap_or(0);
                    tx.push(Action::Note { sub: i as u8, kind: TraceKind::Timeout, seq: una, dsn });
                }
                self.poll_transmit(now, tx);
            }
            TimerKind::DelAck => {
                if self.subs[i].delack_due(now, i, tx) {
                    self.send_ack(i, tx);
                }
            }
        }
    }
}
