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
//! reinjection after a timeout; `subflow.rs` what the connection keeps of each subflow.

mod level;
mod schedule;
pub mod subflow;
#[cfg(test)]
mod tests;
mod transport;

use super::{arm, Action, Arrival, Progress, Sink, TimerKind};
use crate::cc::SubflowState;
use crate::feedback::RxLogic;
use crate::metrics::TraceKind;
use crate::net::Header;
use crate::sched::{AckInfo, PathEventKind, Properties, Sched, SubflowView};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{ReceiverConfig, TcpReceiver, TimerEvent};
use std::collections::VecDeque;
pub use subflow::Subflow;

/// Bytes of MPTCP options: a DSS mapping on data segments, a DATA_ACK on ACKs (RFC 8684).
pub const DSS_MAPPING_BYTES: u32 = 16;
pub const DATA_ACK_BYTES: u32 = 8;

/// MPTCP-rec's state of one path, for the series and the summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecPath {
    /// The rate the receiver advertises, bit/s.
    pub advertised_bps: f64,
    /// That rate integrated since the path's first packet, bits.
    pub advertised_integral: f64,
    /// In the sender's candidate list.
    pub listed: bool,
    /// The receiver's emulated window, packets.
    pub window_pkts: f64,
    /// The emulation's window reductions and timeouts so far.
    pub reductions: u64,
    pub timeouts: u64,
    /// Times its RTO was held by the receiver's closed window.
    pub window_holds: u64,
}

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
#[inline(always)]
pub fn dsn_of(map: &VecDeque<Mapping>, seq: u64) -> Option<u64> {
    // new data is sent from the newest mappings: look at the last one, then the one before
    // it (a chunk often waits behind a window with room for less than a segment while the
    // next one is handed over), before searching
    if let Some(m) = map.back().filter(|m| m.seq <= seq && seq < m.seq + m.len as u64) {
        return Some(m.dsn + (seq - m.seq));
    }
    dsn_by_search(map, seq)
}

/// [`dsn_of`] for bytes that are not in the newest mapping: the one before it, else (a
/// retransmission, a reinjection) a binary search. Out of line: inlined, the look at the
/// mapping before the newest was worked out ahead of every round of sending.
#[inline(never)]
fn dsn_by_search(map: &VecDeque<Mapping>, seq: u64) -> Option<u64> {
    if let Some(m) = map.get(map.len().wrapping_sub(2)).filter(|m| m.seq <= seq && seq < m.seq + m.len as u64) {
        return Some(m.dsn + (seq - m.seq));
    }
    let i = map.partition_point(|m| m.seq + m.len as u64 <= seq);
    map.get(i).filter(|m| m.seq <= seq).map(|m| m.dsn + (seq - m.seq))
}

/// One Multipath TCP connection: its subflows, scheduler and reinjection queue, and the
/// sender and receiver halves of the connection level.
pub struct MptcpConn {
    pub subs: Vec<Subflow>,
    /// The scheduler; replaced only before the connection first sends, when its
    /// [`Properties`] are read.
    pub sched: Sched,
    props: Properties,
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
    /// Logic the receiver runs per arriving packet, attaching fields to its ACKs
    /// (MPTCP-rec's DSRor; see `feedback`), and its pending timer per path.
    pub rx_logic: Option<RxLogic>,
    fb_pending: Vec<Option<SimTime>>,
    /// The scheduler's pending wake-up ([`crate::sched::Scheduler::wake_at`]).
    pace_pending: Option<SimTime>,
    /// MPTCP-rec path-list events already written to the trace.
    events_noted: usize,
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
    /// to the next. The changes of every ACK and every transmission are followed in place,
    /// field by field (`follow_ack`, `follow_transmit`); after anything rarer (a timer, a
    /// penalty, a join) a subflow's entries are rebuilt before their next use (bit i of the
    /// `stale_*` masks). The work per ACK does not grow with the number of subflows.
    views: Vec<SubflowView>,
    states: Vec<SubflowState>,
    stale_views: u64,
    stale_states: u64,
    /// Subflows whose view may be available (bit i: subflow i): every other view was found
    /// unavailable and nothing has made it available since. An ACK or a rebuild of `views[i]`
    /// sets bit i; sending or queueing data, which only take availability away, leave it; a
    /// look that finds the view unavailable clears it. So "is any subflow available", asked
    /// twice per ACK, looks at the subflow that was acknowledged, not at every subflow
    /// (`any_available`).
    maybe_available: u64,
    /// The connection has sent: the scheduler's properties are read and the join timers of
    /// subflows that join late armed.
    started: bool,
}

/// The connection-level receiver. It never builds an ACK (the subflows' ACKs carry its
/// DATA_ACK and window), so it sends no SACK blocks: that lets it keep its held data as a grid
/// (`tcp::receiver`), which eight subflows delivering far out of order need.
fn conn_receiver(buffer: u64, max_window: u64) -> TcpReceiver {
    TcpReceiver::new(ReceiverConfig { buffer, max_window, sack: false, dsack: false, ..ReceiverConfig::default() })
}

impl MptcpConn {
    /// A connection over `subs` with a connection-level receive buffer of `rcv_buf` bytes.
    pub fn new(subs: Vec<Subflow>, sched: Sched, rcv_buf: u64, header: u32, mss: u32) -> MptcpConn {
        assert!(subs.len() <= 64, "at most 64 subflows");
        MptcpConn {
            subs,
            sched,
            props: Properties::default(),
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
            rx: conn_receiver(rcv_buf, u64::MAX),
            last_rx_end: None,
            rx_logic: None,
            fb_pending: Vec::new(),
            pace_pending: None,
            events_noted: 0,
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
            maybe_available: u64::MAX,
            started: false,
        }
    }

    /// Limits the connection-level window to `max_window` bytes (the window scale's
    /// `65535 << window_scale`; RFC 8684 §3.3.5: the subflows' window fields carry it).
    pub fn limit_window(&mut self, max_window: u64) {
        let buffer = self.rx.capacity();
        self.rx = conn_receiver(buffer, max_window);
        self.right_edge = self.right_edge.min(max_window);
    }

    /// Subflow `i` changed otherwise than by an ACK or a transmission (a timer, its window
    /// cut, its joining): its view and state must be rebuilt before their next use.
    #[inline]
    fn touch(&mut self, i: usize) {
        self.stale_views |= 1 << i;
        self.stale_states |= 1 << i;
    }

    /// Subflow `i` took an ACK: its state (current before it, see `subflow_states`) and its
    /// view, unless that is to be rebuilt anyway, follow in place.
    #[inline]
    fn follow_ack(&mut self, i: usize) {
        let sub = &self.subs[i];
        sub.update_state_on_ack(&mut self.states[i]);
        if self.stale_views & (1 << i) == 0 {
            sub.update_view_on_ack(&mut self.views[i]);
            self.maybe_available |= 1 << i;
        }
    }

    /// Subflow `i` transmitted: its view follows in place, unless it is to be rebuilt anyway
    /// (its state does not change by sending).
    #[inline]
    fn follow_transmit(&mut self, i: usize) {
        if self.stale_views & (1 << i) == 0 {
            // (sending moves bytes from queued to in flight, or puts a lost segment back in
            // flight: it never makes a subflow available, so `maybe_available` stays)
            self.subs[i].update_view_on_transmit(&mut self.views[i]);
        }
    }

    /// Whether any subflow's view is available (`SubflowView::available`), looking only at
    /// the views that may be (`maybe_available`) and forgetting those that are not.
    #[inline]
    fn any_available(&mut self) -> bool {
        let mut maybe = self.maybe_available;
        let mut found = false;
        while maybe != 0 {
            let i = maybe.trailing_zeros() as usize;
            let Some(v) = self.views.get(i) else {
                // bits beyond the last subflow (the first mask has them all)
                self.maybe_available &= (1 << i) - 1;
                break;
            };
            if v.available() {
                found = true;
                break;
            }
            self.maybe_available &= !(1 << i);
            maybe &= maybe - 1;
        }
        debug_assert_eq!(found, self.views.iter().any(|v| v.available()));
        found
    }

    pub fn progress(&self) -> Progress {
        Progress {
            written: self.app_limit,
            acked: self.data_una,
            delivered: self.rx.rcv_nxt(),
            bytes_sent: self.subs.iter().map(|s| s.tcp.sender.stats.bytes_sent).sum(),
        }
    }

    /// Brings what the coupled controllers see of every subflow up to date: only after
    /// something rarer than an ACK is there anything to rebuild.
    #[inline]
    fn subflow_states(&mut self) {
        if self.stale_states != 0 || self.states.len() != self.subs.len() {
            self.rebuild_states();
        }
        debug_assert!(self.states.iter().zip(&self.subs).all(|(s, sub)| *s == sub.state()));
    }

    fn rebuild_states(&mut self) {
        if self.states.len() != self.subs.len() {
            self.states.clear();
            self.states.extend(self.subs.iter().map(Subflow::state));
        } else {
            let mut stale = self.stale_states;
            while stale != 0 {
                let i = stale.trailing_zeros() as usize;
                stale &= stale - 1;
                if i < self.subs.len() {
                    self.states[i] = self.subs[i].state();
                }
            }
        }
        self.stale_states = 0;
    }

    /// Schedules new data (and pending reinjections), then lets every subflow transmit.
    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        if !self.started {
            self.started = true;
            self.props = self.sched.properties();
            for (i, s) in self.subs.iter().enumerate().filter(|(_, s)| !s.joined) {
                tx.push(Action::Timer { sub: i as u16, kind: TimerKind::Join, at: s.join_at.max(now) });
            }
        }
        // a paced scheduler hands out one chunk per subflow per pass: pass again while it
        // hands out (each pass sends what it handed out first)
        let mut passes_left = if self.props.paced { 64 } else { 1 };
        loop {
            let assigned_before = self.dsn_nxt;
            let reinjections_before = self.reinject.len();
            self.schedule(now);
            let header = self.header + DSS_MAPPING_BYTES;
            let edge = self.check.then_some(self.right_edge);
            let mut dirty = std::mem::take(&mut self.dirty);
            while dirty != 0 {
                let i = dirty.trailing_zeros() as usize;
                dirty &= dirty - 1;
                self.subs[i].transmit(now, i, header, edge, tx);
                self.follow_transmit(i);
            }
            passes_left -= 1;
            if passes_left == 0 || (self.dsn_nxt == assigned_before && self.reinject.len() == reinjections_before) {
                break;
            }
        }
        // a paced scheduler's next sending time (a stale one, not after now, waits for an ACK)
        let wake = self.sched.wake_at().filter(|&w| w > now);
        arm(tx, &mut self.pace_pending, wake, 0, TimerKind::Pace);
    }

    /// Hands the chunk [dsn, dsn+len) to subflow `i` (which changes what is queued on it, in
    /// its view, and nothing of its state).
    #[inline]
    fn assign(&mut self, i: usize, dsn: u64, len: u64) {
        self.subs[i].assign(dsn, len);
        self.dirty |= 1 << i;
        self.stale_views |= 1 << i;
    }

    pub fn on_packet(&mut self, now: SimTime, i: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        match header {
            Header::TcpData(h) => {
                let before = self.rx.rcv_nxt();
                let receiver = &mut self.subs[i].tcp.receiver;
                if h.cw {
                    receiver.on_cw_mark();
                }
                let ecn_ack = receiver.on_ecn(h.ecn, h.cwr);
                let mut r = receiver.on_segment(now, h.seq, h.len);
                r.ack_now |= ecn_ack;
                if let Some(logic) = &mut self.rx_logic {
                    r.ack_now |= logic.on_data(now, i, h);
                    let deadline = logic.deadline(i);
                    self.arm_feedback(i, deadline, tx);
                }
                let delivered = self.on_receive(now, h.dsn, h.len).delivered;
                // Linux acknowledges a pushed segment at once if the reader emptied the connection
                r.ack_now |= h.psh && r.delivered > 0 && self.subs[i].tcp.receiver.push_ack(self.rx.buffered() == 0);
                if let Some(logic) = &mut self.rx_logic {
                    // the room the next advertised window leaves above everything received
                    let edge = self.rx.rcv_nxt() + self.rx.window();
                    logic.on_window(now, edge.saturating_sub(self.rx.highest()));
                    for j in 0..self.subs.len() {
                        let deadline = self.rx_logic.as_ref().and_then(|l| l.deadline(j));
                        self.arm_feedback(j, deadline, tx);
                    }
                }
                if self.check {
                    assert!(self.rx.buffered() <= self.rx.capacity(), "receive buffer over its limit");
                    assert_eq!(self.rx.stats.beyond_window_drops, 0, "data beyond the receive window");
                }
                if r.ack_now {
                    self.send_ack(i, now, tx);
                } else {
                    self.subs[i].tcp.delay_ack(i, tx);
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
                let una_before = sub.tcp.sender.snd_una();
                sub.tcp.sender.on_ack_coupled(now, h, &self.states, i);
                let una = sub.tcp.sender.snd_una();
                if una > una_before {
                    // (the mappings of the data acknowledged are dropped later, in batches:
                    // `Subflow::assign`)
                    sub.usable = true;
                }
                self.follow_ack(i);
                self.on_data_ack(h.data_ack, h.wnd());
                let feedback = h.feedback(now);
                if let Some(f) = feedback {
                    if let Some(s) = self.subs.get_mut(f.path as usize) {
                        s.echo = s.echo.max(f.stamp);
                    }
                }
                if self.props.wants_ack_info || !self.started {
                    self.sched.on_ack_info(&AckInfo { now, sub: i, feedback, window: h.wnd() });
                }
                self.note_path_events(tx);
                if self.check {
                    let sub = &self.subs[i];
                    if let Err(e) = sub.tcp.sender.check_invariants() {
                        panic!("subflow {i}: {e}");
                    }
                    assert!(sub.tcp.sender.snd_una() <= sub.tcp.receiver.rcv_nxt(), "subflow {i}: acknowledged undelivered data");
                    assert!(self.data_una <= self.rx.rcv_nxt(), "DATA_ACK beyond delivered data");
                }
                Arrival::Nothing
            }
            Header::Datagram(_) | Header::SctpData(_) | Header::SctpSack(_) | Header::SctpControl(_) | Header::Quic(_) => Arrival::Nothing,
        }
    }

    /// An ACK on subflow `i`, carrying the DATA_ACK and the connection-level window.
    fn send_ack(&mut self, i: usize, now: SimTime, tx: &mut impl Sink) {
        let conn = (self.rx.rcv_nxt(), self.rx.window());
        let fb = self.rx_logic.as_mut().and_then(|l| l.feedback(now, i));
        self.subs[i].tcp.send_ack_with(i, self.header + DATA_ACK_BYTES, Some(conn), fb, tx);
    }

    /// Writes MPTCP-rec's new path-list events to the trace.
    fn note_path_events(&mut self, tx: &mut impl Sink) {
        let Sched::MptcpRec(r) = &self.sched else { return };
        for e in &r.events()[self.events_noted..] {
            let kind = match e.kind {
                PathEventKind::Predicted => TraceKind::Rb2locPredicted,
                PathEventKind::Removed => TraceKind::PathRemoved,
                PathEventKind::Restored => TraceKind::PathRestored,
            };
            let sub = e.path.unwrap_or(u8::MAX as usize) as u8;
            tx.push(Action::Note { sub, kind, seq: 0, dsn: self.data_una });
        }
        self.events_noted = r.events().len();
    }

    /// MPTCP-rec's figures of path `k` at `now`, None for other schedulers.
    pub fn rec_path(&self, k: usize, now: SimTime) -> Option<RecPath> {
        let (Sched::MptcpRec(r), Some(RxLogic::Dsror(d))) = (&self.sched, &self.rx_logic) else { return None };
        let t = d.paths().get(k)?;
        Some(RecPath {
            advertised_bps: t.advertised(),
            advertised_integral: t.advertised_integral(now),
            listed: r.listed().get(k).copied().unwrap_or(true),
            window_pkts: t.rwnd(),
            reductions: t.stats.reductions,
            timeouts: t.stats.timeouts,
            window_holds: t.stats.window_holds,
        })
    }

    /// MPTCP-rec's path-list counts: (RB2LOC predictions, removals, restorations).
    pub fn rec_events(&self) -> Option<(u64, u64, u64)> {
        let Sched::MptcpRec(r) = &self.sched else { return None };
        let count = |k: PathEventKind| r.events().iter().filter(|e| e.kind == k).count() as u64;
        Some((count(PathEventKind::Predicted), count(PathEventKind::Removed), count(PathEventKind::Restored)))
    }

    /// Keeps one pending timer of the receiver logic for path `i`, at `deadline`.
    fn arm_feedback(&mut self, i: usize, deadline: Option<SimTime>, tx: &mut impl Sink) {
        if self.fb_pending.len() < self.subs.len() {
            self.fb_pending.resize(self.subs.len(), None);
        }
        arm(tx, &mut self.fb_pending[i], deadline, i, TimerKind::Feedback);
    }

    pub fn on_timer(&mut self, now: SimTime, i: usize, kind: TimerKind, tx: &mut impl Sink) {
        match kind {
            TimerKind::Rto => {
                if !self.subs[i].tcp.rto_due(now, i, tx) {
                    return;
                }
                self.dirty |= 1 << i;
                self.subflow_states();
                let una = self.subs[i].tcp.sender.snd_una();
                let fired = self.subs[i].tcp.sender.on_timer_coupled(now, &self.states, i);
                self.touch(i);
                if fired == TimerEvent::Rto {
                    self.reinject_after_timeout(i);
                    let dsn = dsn_of(&self.subs[i].map, una).unwrap_or(0);
                    tx.push(Action::Note { sub: i as u8, kind: TraceKind::Timeout, seq: una, dsn });
                }
                self.poll_transmit(now, tx);
            }
            TimerKind::DelAck => {
                if self.subs[i].tcp.delack_due(now, i, tx) {
                    self.send_ack(i, now, tx);
                }
            }
            TimerKind::Feedback => {
                if self.fb_pending.get(i).copied().flatten() != Some(now) {
                    return; // superseded by an earlier event
                }
                self.fb_pending[i] = None;
                let Some(logic) = &mut self.rx_logic else { return };
                let send = logic.deadline(i).is_some_and(|d| d <= now) && logic.on_timer(now, i);
                let deadline = logic.deadline(i);
                if send {
                    self.send_ack(i, now, tx);
                }
                self.arm_feedback(i, deadline, tx);
            }
            TimerKind::Pace => {
                if self.pace_pending != Some(now) {
                    return;
                }
                self.pace_pending = None;
                self.poll_transmit(now, tx);
            }
            TimerKind::PathStatus => {}
            TimerKind::Join => {
                if !self.subs[i].joined && now >= self.subs[i].join_at {
                    self.subs[i].joined = true;
                    self.touch(i);
                    self.poll_transmit(now, tx);
                }
            }
        }
    }
}
