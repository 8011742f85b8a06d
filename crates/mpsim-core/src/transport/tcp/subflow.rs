//! One TCP connection over one path: the sender at one end, the receiver at the other, and
//! the timers of both. A plain TCP flow is one subflow; a Multipath TCP connection has one
//! per path under its connection level (`mptcp::Subflow` adds what Multipath TCP keeps of
//! each).

use super::{ReceiverConfig, SenderConfig, TcpReceiver, TcpSender};
use crate::cc::Controller;
use crate::metrics::pcap::Capture;
use crate::metrics::{FlowSummary, SubflowSummary};
use crate::net::{AckHeader, DataHeader, Feedback, Header};
use crate::time::{Dur, SimTime};
use crate::transport::{arm, Action, ConnSnapshot, PathSample, Sink, TimerKind};
use crate::view::{PACING_CA_RATIO, PACING_SS_RATIO};

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
}

impl Subflow {
    /// A subflow over `path`, its first RTT estimate taken from the handshake (`handshake`).
    pub fn new(path: PathRoutes, cfg: &SenderConfig, rcfg: ReceiverConfig, cc: Controller, handshake: Dur) -> Subflow {
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
        }
    }

    /// Sends every segment the sender allows now, each `header` bytes of headers on top of
    /// its payload, then (re)arms the retransmission timer. Each segment carries the data
    /// sequence number `dsn` gives for its sequence number (Multipath TCP's mapping; the
    /// sequence number itself for plain TCP) and the feedback stamp `echo`. With `check`,
    /// asserts the window rules, `edge` being the receiver's right edge in the sequence space
    /// the segments are numbered in.
    ///
    /// PSH is set as Linux's sender sets it on the wire, which the receiver's ACKs follow
    /// (`TcpReceiver::push_ack`): a round of sending goes out as GSO packets of
    /// [`gso_segments`] segments, the last segment of each full packet carrying PSH and a
    /// packet cut short by the window carrying none. This is the rule measured on Linux 6.18
    /// with bulk senders of TCP and of Multipath TCP alike (two segments per packet on those
    /// paths; `benches/kernel_probe.py psh`, docs/kernel.md): bursts of two end with PSH in 97
    /// to 100 % of cases, single segments carry it in 0 to 4 %, bursts of three carry it on
    /// the second segment only.
    ///
    /// Out of line: inlined into Multipath TCP's scheduling loop it made that loop cost 11 %
    /// more instructions per packet with the redundant scheduler (`benches/speed.py
    /// --instructions`).
    #[allow(clippy::too_many_arguments)] // the hot path: each one is a plain value
    #[inline(never)]
    pub fn transmit(
        &mut self,
        now: SimTime,
        me: usize,
        header: u32,
        dsn: impl Fn(u64) -> u64,
        echo: SimTime,
        check: Option<u64>,
        tx: &mut impl Sink,
    ) {
        // the packet size is that of the round's start; it only matters from the second
        // segment on (a packet holds at least MIN_TSO_SEGS), and most rounds send one
        // (sending changes neither the window nor the RTT estimates)
        let (w, in_flight) = (self.sender.window(), self.sender.in_flight());
        let mut per_packet = u64::MAX;
        let mut sent = 0u64;
        while let Some(seg) = self.sender.next_segment(now) {
            let dsn = dsn(seg.seq);
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
            let h = DataHeader {
                seq: seg.seq,
                dsn,
                len: seg.len,
                retx: seg.retx,
                psh,
                sent_at: now,
                cw: false,
                ecn: seg.ecn,
                cwr: seg.cwr,
                echo,
            };
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
        let mut h: AckHeader = match conn {
            // the connection-level window replaces the subflow's, which is not computed
            Some((data_ack, wnd)) => {
                let mut h = self.receiver.make_ack_offering(wnd);
                h.data_ack = data_ack;
                h
            }
            None => self.receiver.make_ack(),
        };
        let header = match fb {
            Some(f) => {
                h.set_feedback(f);
                header + FEEDBACK_BYTES
            }
            None => header,
        };
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

    /// What the subflow series record of this path at a sample (without MPTCP-rec's
    /// figures).
    pub fn sample(&self) -> PathSample {
        let w = self.sender.window();
        PathSample {
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            in_flight: self.sender.in_flight(),
            srtt: self.sender.rtt().srtt(),
            rto: self.sender.rtt().rto(),
            delivered: self.receiver.rcv_nxt(),
            rec: None,
            model: self.sender.cc.model(),
        }
    }

    /// The subflow's line of the flow summary, with its goodput computed by the caller.
    pub fn summary(&self, goodput_bps: f64) -> SubflowSummary {
        let r = self.sender.rtt();
        let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
        SubflowSummary {
            path: self.path_name.clone(),
            backup: false,
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
            ecn_ce_received: self.sender.ecn().then_some(self.receiver.stats.ecn_ce_received),
            ecn_reductions: self.sender.ecn().then_some(self.sender.stats.ecn_reductions),
        }
    }
}

/// The transport's part of a flow summary that every TCP-based connection shares: identity,
/// counters and RTT over its subflows `subs` (over paths `path_names`), and its receive
/// buffer (`rx`: the connection level's, or the one subflow's).
pub(crate) fn summarize_subflows(
    subs: &[&Subflow],
    path_names: &[String],
    rx: &TcpReceiver,
    s: &mut FlowSummary,
    sub_goodput: &dyn Fn(usize, u64) -> f64,
) {
    let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
    let sum = |f: &dyn Fn(&Subflow) -> u64| subs.iter().map(|x| f(x)).sum::<u64>();
    s.path = path_names.join("+");
    s.cc = subs.first().map_or("none", |x| x.sender.cc.name()).to_string();
    s.segments_sent = sum(&|x| x.sender.stats.segments_sent);
    s.retransmits = sum(&|x| x.sender.stats.retransmits);
    s.timeouts = sum(&|x| x.sender.stats.timeouts);
    s.fast_recoveries = sum(&|x| x.sender.stats.fast_recoveries);
    s.spurious_timeouts = sum(&|x| x.sender.stats.spurious_timeouts);
    s.dsacks = sum(&|x| x.sender.stats.dsacks);
    s.dsack_undos = sum(&|x| x.sender.stats.dsack_undos);
    s.loss_probes = sum(&|x| x.sender.stats.loss_probes);
    if subs.iter().any(|x| x.sender.ecn()) {
        s.ecn_ce_received = Some(sum(&|x| x.receiver.stats.ecn_ce_received));
        s.ecn_reductions = Some(sum(&|x| x.sender.stats.ecn_reductions));
    }
    let first_timeouts = sum(&|x| x.sender.stats.first_timeouts);
    s.loss_indications = s.fast_recoveries + first_timeouts;
    s.retransmit_rate = if s.segments_sent > 0 { s.retransmits as f64 / s.segments_sent as f64 } else { 0.0 };
    // RTT over every sample of every subflow
    let (n_rtt, sum_rtt) = subs.iter().fold((0u64, 0f64), |(n, t), x| {
        let r = x.sender.rtt();
        (n + r.samples(), t + r.mean_sample().map_or(0.0, |m| m.as_millis_f64() * r.samples() as f64))
    });
    s.rtt_mean_ms = (n_rtt > 0).then(|| sum_rtt / n_rtt as f64);
    s.rtt_min_ms = ms(subs.iter().filter_map(|x| x.sender.rtt().min_rtt()).min());
    let sub0 = subs.first();
    s.srtt_final_ms = sub0.and_then(|x| ms(x.sender.rtt().srtt()));
    s.rto_final_ms = sub0.map_or(0.0, |x| x.sender.rtt().rto().as_millis_f64());
    let first_timeout_ns = sum(&|x| x.sender.stats.first_timeout_sum.0);
    s.first_rto_mean_ms = (first_timeouts > 0).then(|| first_timeout_ns as f64 / 1e6 / first_timeouts as f64);
    s.cwnd_final_bytes = sum(&|x| x.sender.cwnd());
    s.out_of_order_segments = sum(&|x| x.receiver.stats.out_of_order_segments);
    // controllers that tell congestion from random losses (TCP New Jersey)
    if subs.iter().any(|x| x.sender.cc.loss_classes().is_some()) {
        let classes = subs.iter().filter_map(|x| x.sender.cc.loss_classes());
        let (c, r) = classes.fold((0, 0), |(c, r), (a, b)| (c + a, r + b));
        (s.congestion_losses, s.random_losses) = (Some(c), Some(r));
    }
    s.subflows = subs.iter().enumerate().map(|(k, x)| x.summary(sub_goodput(k, x.receiver.rcv_nxt()))).collect();
    s.duplicate_segments = rx.stats.duplicate_segments;
    s.max_receive_buffer_bytes = rx.stats.max_buffered;
}

/// The connection-wide figures every TCP-based connection shares: sums over its subflows
/// (the rest is the connection's own).
pub(crate) fn snapshot_subflows<'a>(subs: impl Iterator<Item = &'a Subflow> + Clone) -> ConnSnapshot {
    ConnSnapshot {
        cwnd: subs.clone().map(|x| x.sender.cwnd()).sum(),
        in_flight: subs.clone().map(|x| x.sender.in_flight()).sum(),
        retransmits: subs.clone().map(|x| x.sender.stats.retransmits).sum(),
        srtt: subs.filter_map(|x| x.sender.rtt().srtt()).min(),
        ..ConnSnapshot::default()
    }
}

/// Captures the close of a finite transfer of `total` bytes once `header`, an ACK, has
/// acknowledged all of it: FIN (and DATA_FIN for Multipath TCP) after each subflow's last
/// sequence number (`next`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn capture_close<'a>(
    cap: &mut Capture,
    now: SimTime,
    header: &Header,
    total: Option<u64>,
    unacked: u64,
    written: u64,
    subs: impl Iterator<Item = &'a Subflow>,
) {
    if matches!(header, Header::TcpAck(_)) && total.is_some_and(|t| unacked == 0 && written == t) {
        let next: Vec<u64> = subs.map(|s| s.sender.snd_nxt()).collect();
        cap.finish(now, &next, written);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut s = Subflow::new(path, &cfg, ReceiverConfig::default(), Controller::by_name("reno").unwrap(), Dur::from_millis(40));
        for _ in 0..20 {
            s.sender.write_chunk(1000);
        }
        let mut tx = Tx::default();
        s.transmit(SimTime::ZERO, 0, 40, |seq| seq, SimTime::ZERO, None, &mut tx);
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
