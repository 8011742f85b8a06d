//! One TCP connection over one path: the sender at one end, the receiver at the other, and
//! the timers of both. A plain TCP flow is one subflow; a Multipath TCP connection has one
//! per path, each with the DSS mappings of the chunks handed to it.

use super::{arm, Action, Sink, TimerKind};
use crate::cc::{Controller, SubflowState};
use crate::metrics::SubflowSummary;
use crate::net::{AckHeader, DataHeader, Feedback, Header};
use crate::time::{Dur, SimTime};
use crate::transport::mptcp::{dsn_of, Mapping};
use crate::transport::tcp::{ReceiverConfig, SenderConfig, TcpReceiver, TcpSender};
use crate::view::{CaState, SubflowView};
use std::collections::VecDeque;

/// Bytes of the option carrying receiver feedback on an ACK: kind, length, path id, a
/// 4-byte timestamp and a 4-byte rate, padded to 4 (seed 000's extended NR-SACK fields).
pub const FEEDBACK_BYTES: u32 = 12;

/// Linux's `sysctl_tcp_min_tso_segs`: the fewest segments a TSO/GSO packet is sized for.
pub const MIN_TSO_SEGS: u64 = 2;
/// Linux's `sk_pacing_shift` (a packet holds about 1/1024 s at the pacing rate) and
/// `sysctl_tcp_tso_rtt_log` (9: small RTTs get larger packets).
const PACING_SHIFT: u32 = 10;
const TSO_RTT_LOG: u32 = 9;
/// Linux's GSO_LEGACY_MAX_SIZE, the largest GSO packet without BIG TCP.
const GSO_MAX_SIZE: u64 = 65536;

/// Segments per GSO packet as Linux sizes them when it sends (`tcp_tso_autosize` with
/// Reno's and CUBIC's `min_tso_segs`): about a millisecond's worth at the pacing rate, plus
/// `GSO_MAX_SIZE >> (min_rtt in us >> 9)` bytes, at most `GSO_MAX_SIZE`, and never fewer
/// than [`MIN_TSO_SEGS`]. The pacing rate is `tcp_update_pacing_rate`'s: 200 % of
/// `max(cwnd, in flight) / srtt` below half of ssthresh, 120 % above. Before an RTT sample
/// the rate is unlimited.
///
/// Out of line: `Subflow::transmit` needs it only when a round sends a second segment, and
/// inlined, its loop-invariant products were worked out ahead of every round.
#[inline(never)]
pub fn gso_segments(cwnd: u64, ssthresh: u64, in_flight: u64, mss: u64, srtt: Option<Dur>, min_rtt: Option<Dur>) -> u64 {
    use crate::sched::linux_upstream::{PACING_CA_RATIO, PACING_SS_RATIO};
    let mss = mss.max(1);
    let Some(srtt) = srtt else { return GSO_MAX_SIZE / mss };
    let ratio = if cwnd < ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
    // the pacing rate in bytes/s is num / srtt (ns)
    let num = cwnd.max(in_flight).max(mss) as u128 * ratio as u128 * 10_000_000;
    let den = srtt.0.max(1) as u128;
    let r = min_rtt.map_or(u64::MAX, |m| (m.0 / 1000) >> TSO_RTT_LOG);
    let extra = if r < 32 { GSO_MAX_SIZE >> r } else { 0 };
    // the common case, fewer than three segments' worth, decided without a 128-bit
    // division (this runs at every round of sending): floor(x) < k <=> x < k for integer k
    if extra == 0 && num < ((3 * mss as u128) << PACING_SHIFT) * den {
        return MIN_TSO_SEGS;
    }
    let bytes = ((num / den) >> PACING_SHIFT) as u64 + extra;
    (bytes.min(GSO_MAX_SIZE) / mss).max(MIN_TSO_SEGS)
}

/// Where a subflow's packets go: the path's name and its two routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRoutes {
    pub name: String,
    /// Route index of the forward (data) direction.
    pub fwd: u32,
    /// Route index of the reverse (ACK) direction.
    pub rev: u32,
}

/// One TCP connection over one path.
pub struct Subflow {
    pub path_name: String,
    pub fwd: u32,
    pub rev: u32,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub rto_pending: Option<SimTime>,
    pub delack_pending: Option<SimTime>,
    pub backup: bool,
    /// False from a timeout until new data is acknowledged (Linux's potentially-failed mark).
    pub usable: bool,
    /// Multipath TCP: which DSN each chunk handed to this subflow carries, oldest first.
    pub map: VecDeque<Mapping>,
    /// Multipath TCP: everything below this subflow sequence was already offered for
    /// reinjection.
    pub reinjected_upto: u64,
    /// The stamp of the latest receiver feedback about this path, echoed on its segments.
    pub echo: SimTime,
    /// Multipath TCP: when the subflow joins the connection, and whether it has; before, it
    /// is neither scheduled nor coupled (`scenario::Join`).
    pub join_at: SimTime,
    pub joined: bool,
}

impl Subflow {
    /// A subflow over `path`, its first RTT estimate taken from the handshake (`handshake`).
    pub fn new(path: PathRoutes, cfg: &SenderConfig, rcfg: ReceiverConfig, cc: Controller, handshake: Dur, backup: bool) -> Subflow {
        let mut sender = TcpSender::new(cfg, cc);
        sender.seed_rtt(handshake);
        Subflow {
            path_name: path.name,
            fwd: path.fwd,
            rev: path.rev,
            sender,
            receiver: TcpReceiver::new(rcfg),
            rto_pending: None,
            delack_pending: None,
            backup,
            usable: true,
            map: VecDeque::new(),
            reinjected_upto: 0,
            echo: SimTime::ZERO,
            join_at: SimTime::ZERO,
            joined: true,
        }
    }

    /// What a scheduler sees of this subflow.
    pub fn view(&self) -> SubflowView {
        let w = self.sender.window();
        let rtt = self.sender.rtt();
        SubflowView {
            srtt: rtt.srtt(),
            latest_rtt: rtt.latest(),
            rtt_samples: rtt.samples(),
            rttvar: rtt.rttvar(),
            min_rtt: rtt.min_rtt(),
            rto: rtt.rto(),
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            mss: w.mss,
            in_flight: self.sender.in_flight(),
            queued: self.sender.unsent(),
            ca_state: self.sender.state(),
            backup: self.backup,
            usable: self.usable && self.joined,
            segments_sent: self.sender.stats.segments_sent,
            retransmits: self.sender.stats.retransmits,
        }
    }

    /// Brings `v`, this subflow's view as it stood before an ACK, up to date after it, field
    /// by field: an ACK changes the RTT estimates and the RTO, the window and the congestion
    /// state, what is in flight, and whether the subflow is usable; not the MSS, the backup
    /// mark, the data queued or the segments sent (which [`update_view_on_transmit`]
    /// follows). Checked against a rebuilt view in debug builds.
    ///
    /// [`update_view_on_transmit`]: Self::update_view_on_transmit
    #[inline]
    pub fn update_view_on_ack(&self, v: &mut SubflowView) {
        let w = self.sender.window();
        let rtt = self.sender.rtt();
        v.srtt = rtt.srtt();
        v.latest_rtt = rtt.latest();
        v.rtt_samples = rtt.samples();
        v.rttvar = rtt.rttvar();
        v.min_rtt = rtt.min_rtt();
        v.rto = rtt.rto();
        v.cwnd = w.cwnd;
        v.ssthresh = w.ssthresh;
        v.in_flight = self.sender.in_flight();
        v.ca_state = self.sender.state();
        v.usable = self.usable && self.joined;
        debug_assert_eq!(*v, self.view());
    }

    /// Brings `v`, this subflow's view as it stood before [`transmit`](Self::transmit), up to
    /// date after it: sending changes only what is in flight and queued and the counts of
    /// segments sent and retransmitted. Checked against a rebuilt view in debug builds.
    #[inline]
    pub fn update_view_on_transmit(&self, v: &mut SubflowView) {
        v.in_flight = self.sender.in_flight();
        v.queued = self.sender.unsent();
        v.segments_sent = self.sender.stats.segments_sent;
        v.retransmits = self.sender.stats.retransmits;
        debug_assert_eq!(*v, self.view());
    }

    /// What the coupled controllers see of this subflow: it takes part in the coupling while
    /// usable, joined and not a backup.
    pub fn state(&self) -> SubflowState {
        self.sender.subflow_state(self.usable && self.joined && !self.backup)
    }

    /// Brings `s`, this subflow's [`state`](Self::state) as it stood before an ACK, up to date
    /// after it: everything but the MSS may have changed. Checked against a rebuilt state in
    /// debug builds.
    #[inline]
    pub fn update_state_on_ack(&self, s: &mut SubflowState) {
        let w = self.sender.window();
        s.cwnd = w.cwnd;
        s.ssthresh = w.ssthresh;
        s.srtt = self.sender.rtt().srtt();
        s.active = self.usable && self.joined && !self.backup;
        s.in_recovery = self.sender.state() != CaState::Open;
        s.inter_loss_bytes = self.sender.cc.inter_loss_bytes();
        debug_assert_eq!(*s, self.state());
    }

    /// Multipath TCP: hands the chunk [dsn, dsn+len) to this subflow.
    pub fn assign(&mut self, dsn: u64, len: u64) {
        let seq = self.sender.write_chunk(len);
        self.map.push_back(Mapping { seq, dsn, len: len as u32 });
    }

    /// Sends every segment the sender allows now, each `header` bytes of headers on top of
    /// its payload, then (re)arms the retransmission timer. With `mapped`, each segment
    /// carries the DSN of its mapping. With `check`, asserts the window rules, `edge` being
    /// the receiver's right edge in the sequence space the segments are numbered in.
    ///
    /// PSH is set as Linux's sender sets it on the wire, which the receiver's ACKs follow
    /// (`TcpReceiver::push_ack`): a round of sending goes out as GSO packets of
    /// [`gso_segments`] segments, the last segment of each full packet carrying PSH and a
    /// packet cut short by the window carrying none. This is the rule measured on Linux 6.18
    /// with bulk senders of TCP and of Multipath TCP alike (two segments per packet on those
    /// paths; `benches/kernel_probe.py psh`, docs/kernel.md): bursts of two end with PSH in 97
    /// to 100 % of cases, single segments carry it in 0 to 4 %, bursts of three carry it on
    /// the second segment only.
    pub fn transmit(&mut self, now: SimTime, me: usize, header: u32, mapped: bool, check: Option<u64>, tx: &mut impl Sink) {
        // the packet size is that of the round's start; it only matters from the second
        // segment on (a packet holds at least MIN_TSO_SEGS), and most rounds send one
        // (sending changes neither the window nor the RTT estimates)
        let (w, in_flight) = (self.sender.window(), self.sender.in_flight());
        let mut per_packet = u64::MAX;
        let mut sent = 0u64;
        while let Some(seg) = self.sender.next_segment(now) {
            let dsn = if mapped { dsn_of(&self.map, seg.seq).expect("every chunk handed to a subflow has a mapping") } else { seg.seq };
            if let Some(edge) = check {
                let w = self.sender.window();
                assert!(
                    seg.forced || self.sender.in_flight() <= w.cwnd.max(seg.len as u64),
                    "subflow {me}: in flight {} above cwnd {}",
                    self.sender.in_flight(),
                    w.cwnd
                );
                assert!(
                    seg.forced || self.sender.in_flight_segments() * w.mss <= w.cwnd.max(w.mss),
                    "subflow {me}: {} segments in flight above cwnd {}",
                    self.sender.in_flight_segments(),
                    w.cwnd
                );
                assert!(seg.retx || dsn + seg.len as u64 <= edge, "subflow {me}: sent beyond the receive window");
            }
            sent += 1;
            if sent == MIN_TSO_SEGS {
                debug_assert_eq!(self.sender.window(), w);
                let rtt = self.sender.rtt();
                per_packet = gso_segments(w.cwnd, w.ssthresh, in_flight, w.mss, rtt.srtt(), rtt.min_rtt());
            }
            let psh = sent >= MIN_TSO_SEGS && sent.is_multiple_of(per_packet);
            let h = DataHeader { seq: seg.seq, dsn, len: seg.len, retx: seg.retx, psh, sent_at: now, cw: false, echo: self.echo };
            tx.push(Action::Packet { sub: me as u8, route: self.fwd, size: seg.len + header, header: Header::TcpData(h) });
        }
        arm(tx, &mut self.rto_pending, self.sender.timer_deadline(), me, TimerKind::Rto);
    }

    /// Sends an ACK of `header` bytes plus the SACK option; `conn` sets the connection-level
    /// DATA_ACK and window (Multipath TCP) on it first.
    pub fn send_ack(&mut self, me: usize, header: u32, conn: Option<(u64, u64)>, tx: &mut impl Sink) {
        self.send_ack_with(me, header, conn, None, tx);
    }

    /// [`send_ack`](Self::send_ack) with the receiver logic's fields attached (an extended
    /// ACK, [`FEEDBACK_BYTES`] longer).
    pub fn send_ack_with(&mut self, me: usize, header: u32, conn: Option<(u64, u64)>, fb: Option<Feedback>, tx: &mut impl Sink) {
        let mut h: AckHeader = self.receiver.make_ack();
        let header = match fb {
            Some(f) => {
                h.set_feedback(f);
                header + FEEDBACK_BYTES
            }
            None => header,
        };
        if let Some((data_ack, wnd)) = conn {
            h.data_ack = data_ack;
            h.set_wnd(wnd);
        }
        // SACK option: 2 bytes + 8 per block, padded to 4
        let n = h.n_sack() as u32;
        let size = header + if n > 0 { (2 + 8 * n).div_ceil(4) * 4 } else { 0 };
        tx.push(Action::Packet { sub: me as u8, route: self.rev, size, header: Header::TcpAck(h) });
    }

    /// A segment arrived that need not be acknowledged at once: arm the delayed-ACK timer.
    pub fn delay_ack(&mut self, me: usize, tx: &mut impl Sink) {
        arm(tx, &mut self.delack_pending, self.receiver.delack_deadline(), me, TimerKind::DelAck);
    }

    /// The sender's timer event (retransmission, tail loss probe or RACK reordering timer)
    /// fired at `now`: true if it is due (the caller handles it); otherwise a stale or early
    /// event, re-armed for the current deadline.
    pub fn rto_due(&mut self, now: SimTime, me: usize, tx: &mut impl Sink) -> bool {
        if self.rto_pending != Some(now) {
            return false; // superseded by an earlier event
        }
        self.rto_pending = None;
        match self.sender.timer_deadline() {
            Some(d) if d <= now => true,
            d => {
                arm(tx, &mut self.rto_pending, d, me, TimerKind::Rto);
                false
            }
        }
    }

    /// The delayed-ACK timer event fired at `now`: true if the ACK is due now.
    pub fn delack_due(&mut self, now: SimTime, me: usize, tx: &mut impl Sink) -> bool {
        if self.delack_pending != Some(now) {
            return false;
        }
        self.delack_pending = None;
        match self.receiver.delack_deadline() {
            Some(d) if d <= now => true,
            d => {
                arm(tx, &mut self.delack_pending, d, me, TimerKind::DelAck);
                false
            }
        }
    }

    /// The subflow's line of the flow summary, with its goodput computed by the caller.
    pub fn summary(&self, goodput_bps: f64) -> SubflowSummary {
        let r = self.sender.rtt();
        let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
        SubflowSummary {
            path: self.path_name.clone(),
            backup: self.backup,
            goodput_bps,
            bytes_sent: self.sender.stats.bytes_sent,
            segments_sent: self.sender.stats.segments_sent,
            retransmits: self.sender.stats.retransmits,
            timeouts: self.sender.stats.timeouts,
            fast_recoveries: self.sender.stats.fast_recoveries,
            rtt_mean_ms: ms(r.mean_sample()),
            srtt_final_ms: ms(r.srtt()),
            cwnd_final_bytes: self.sender.cwnd(),
            dsr_mean_bps: None,
            rec_reductions: None,
            rec_timeouts: None,
            rec_window_holds: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Controller;
    use crate::transport::Tx;

    const MS: Dur = Dur::from_millis(1);

    #[test]
    fn gso_packets_hold_a_millisecond_at_the_pacing_rate_and_two_segments_at_least() {
        let mss = 1460;
        // 25 segments per 57 ms in congestion avoidance: 120 % is 768 KB/s, 750 B a
        // millisecond, less than a segment: the floor of two
        assert_eq!(gso_segments(25 * mss, 20 * mss, 25 * mss, mss, Some(Dur::from_millis(57)), Some(Dur::from_millis(20))), 2);
        // 1000 segments per 10 ms: 175 MB/s, 171 KB a millisecond, capped at 64 KB
        assert_eq!(gso_segments(1000 * mss, 500 * mss, 1000 * mss, mss, Some(Dur::from_millis(10)), Some(Dur::from_millis(10))), 44);
        // 100 segments per 20 ms in slow start (200 %): 14.6 MB/s, 14,257 B: 9 segments
        assert_eq!(gso_segments(100 * mss, u64::MAX, 100 * mss, mss, Some(Dur::from_millis(20)), Some(Dur::from_millis(20))), 9);
        // a 1 ms minimum RTT adds 64 KB >> (1000 >> 9) = 32 KB: 2 + 22 segments' worth
        let small = gso_segments(10 * mss, 5 * mss, 10 * mss, mss, Some(Dur::from_millis(5)), Some(MS));
        assert_eq!(small, (14_600 * 12 / 10 * 200 / 1024 + 32_768) / mss);
        // no RTT sample yet: unlimited rate, the largest packet
        assert_eq!(gso_segments(10 * mss, u64::MAX, 0, mss, None, None), 65536 / mss);
    }

    #[test]
    fn psh_ends_each_full_gso_packet_of_a_round_of_sending() {
        let cfg = SenderConfig { mss: 1000, initial_window: 5, ignore_rwnd: true, ..SenderConfig::default() };
        let path = PathRoutes { name: "p".into(), fwd: 0, rev: 1 };
        let mut s = Subflow::new(path, &cfg, ReceiverConfig::default(), Controller::by_name("reno").unwrap(), Dur::from_millis(40), false);
        for k in 0..20 {
            s.assign(k * 1000, 1000);
        }
        let mut tx = Tx::default();
        s.transmit(SimTime::ZERO, 0, 40, false, None, &mut tx);
        let psh: Vec<bool> = tx
            .out
            .iter()
            .filter_map(|a| match a {
                Action::Packet { header: Header::TcpData(h), .. } => Some(h.psh),
                _ => None,
            })
            .collect();
        // five segments at 2 per packet: two full packets and a fifth split off by the window
        assert_eq!(psh, [false, true, false, true, false]);
    }
}
