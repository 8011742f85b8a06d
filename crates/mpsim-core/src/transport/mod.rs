//! Transport protocols, each a sans-IO connection behind one small interface.
//!
//! A [`Connection`] is the transport of one flow: plain TCP (one subflow), Multipath TCP
//! (subflows under a connection level, with its scheduler) or UDP. It never reads a clock or
//! touches the network: the simulation hands it the time, the packets that reach its ends and
//! the timers it asked for, and it answers by pushing [`Action`]s (packets to send, timers to
//! arm, notes for the trace) into a [`Sink`], which carries them out in order.
//! The operations are:
//!
//! * [`write`](Connection::write): the application wrote bytes (with a priority);
//! * [`on_packet`](Connection::on_packet): a packet reached one of the connection's ends;
//! * [`on_timer`](Connection::on_timer): a timer it armed fired;
//! * [`poll_transmit`](Connection::poll_transmit): send what the windows allow now;
//! * timers are asked for through [`Action::Timer`] (its next deadline, at most one pending
//!   event per subflow and purpose);
//! * [`progress`](Connection::progress): bytes written, acknowledged, delivered and sent;
//! * [`snapshot`](Connection::snapshot) and [`subflows`](Connection::subflows): what the time
//!   series record;
//! * [`summarize`](Connection::summarize): the transport's part of the flow summary.

pub mod feedback;
pub mod mptcp;
pub mod sctp;
pub mod subflow;
pub mod tcp;
pub mod tear;
pub mod udp;

use crate::metrics::{FlowSummary, TraceKind};
use crate::net::Header;
use crate::time::{Dur, SimTime};
pub use mptcp::MptcpConn;
pub use sctp::SctpConn;
pub use subflow::Subflow;
pub use tcp::TcpConn;
pub use udp::UdpConn;

/// The purposes a connection arms timers for, one pending event each per subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// Retransmission timeout of the subflow's sender.
    Rto,
    /// Delayed-ACK timer of the subflow's receiver.
    DelAck,
    /// Timer of the receiver-side logic for this path ([`feedback::ReceiverLogic`]).
    Feedback,
    /// The scheduler's wake-up (a paced sender's next sending time); `sub` is 0.
    Pace,
    /// A Multipath TCP subflow joins the connection.
    Join,
}

/// What a connection asks the simulation to do, in the order it must happen.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Put a packet of `size` bytes on the wire along `route`, from subflow `sub`.
    Packet { sub: u8, route: u32, size: u32, header: Header },
    /// Fire [`Connection::on_timer`] for (`sub`, `kind`) at `at`.
    Timer { sub: u16, kind: TimerKind, at: SimTime },
    /// An event for the packet trace that is not a packet (a timeout).
    Note { sub: u8, kind: TraceKind, seq: u64, dsn: u64 },
}

/// Where a connection's actions go, in order. The simulation's sink carries each out at
/// once; [`Tx`] collects them (for tests, or to inspect what a call produced).
pub trait Sink {
    fn push(&mut self, a: Action);
}

/// A sink that keeps the actions in a list.
#[derive(Debug, Default)]
pub struct Tx {
    pub out: Vec<Action>,
}

impl Sink for Tx {
    #[inline]
    fn push(&mut self, a: Action) {
        self.out.push(a);
    }
}

/// Byte counters of a connection, from the application's point of view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Application bytes written so far.
    pub written: u64,
    /// Application bytes acknowledged end to end (DATA_ACK, or the TCP ACK; UDP: all sent).
    pub acked: u64,
    /// Application bytes delivered to the receiving application (in order, except UDP).
    pub delivered: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
}

/// What arrived for the receiving application with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Nothing new for the application (an ACK, a duplicate, data out of order).
    Nothing,
    /// The in-order byte stream grew to `upto` bytes.
    Stream { upto: u64 },
    /// A datagram sent at `sent_at`.
    Datagram { sent_at: SimTime },
}

/// The connection-wide figures the flow time series record at each sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConnSnapshot {
    /// Sums over subflows.
    pub cwnd: u64,
    pub in_flight: u64,
    pub retransmits: u64,
    /// The smallest srtt of any subflow.
    pub srtt: Option<Dur>,
    /// The window the receiver grants (0 if unlimited or none).
    pub rwnd: u64,
    /// Highest sequence (DSN for Multipath TCP) sent so far, or bytes written for UDP.
    pub sent: u64,
    pub rcv_buffer: u64,
    /// Time blocked by the receive window so far.
    pub blocked: Dur,
    /// JSCTP: the primary destination's smoothed jitter ratio and k/w threshold.
    pub jitter: Option<(f64, f64)>,
}

/// The transport of one flow.
#[allow(clippy::large_enum_variant)] // one per flow, matched on every packet: not worth a box
pub enum Connection {
    Tcp(TcpConn),
    Mptcp(Box<MptcpConn>),
    Udp(UdpConn),
    Sctp(Box<SctpConn>),
}

impl Connection {
    /// The application writes `len` bytes with `priority` (0: ordinary data).
    pub fn write(&mut self, len: u64, priority: u8) {
        match self {
            Connection::Tcp(c) => c.write(len),
            Connection::Mptcp(c) => c.write(len, priority),
            Connection::Udp(c) => c.write(len),
            Connection::Sctp(c) => c.write(len),
        }
    }

    /// A packet of this connection reached one of its ends, on subflow `sub`.
    pub fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        match self {
            Connection::Tcp(c) => c.on_packet(now, header, tx),
            Connection::Mptcp(c) => c.on_packet(now, sub, header, tx),
            Connection::Udp(c) => c.on_packet(header),
            Connection::Sctp(c) => c.on_packet(now, sub, header, tx),
        }
    }

    /// A timer armed through [`Action::Timer`] fired at `now`.
    pub fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        match self {
            Connection::Tcp(c) => c.on_timer(now, kind, tx),
            Connection::Mptcp(c) => c.on_timer(now, sub, kind, tx),
            Connection::Udp(_) => {}
            Connection::Sctp(c) => c.on_timer(now, sub, kind, tx),
        }
    }

    /// Sends whatever the windows allow now (schedules new data first for Multipath TCP).
    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        match self {
            Connection::Tcp(c) => c.poll_transmit(now, tx),
            Connection::Mptcp(c) => c.poll_transmit(now, tx),
            Connection::Udp(c) => c.poll_transmit(now, tx),
            Connection::Sctp(c) => c.poll_transmit(now, tx),
        }
    }

    /// Application bytes written so far (the cheap part of [`progress`](Self::progress)).
    #[inline]
    pub fn written(&self) -> u64 {
        match self {
            Connection::Tcp(c) => c.sub.sender.app_limit(),
            Connection::Mptcp(c) => c.app_limit,
            Connection::Udp(c) => c.progress().written,
            Connection::Sctp(c) => c.app_limit,
        }
    }

    /// Bytes written and not yet acknowledged: what occupies the send buffer.
    #[inline]
    pub fn unacked(&self) -> u64 {
        match self {
            Connection::Tcp(c) => c.sub.sender.app_limit() - c.sub.sender.snd_una(),
            Connection::Mptcp(c) => c.app_limit - c.data_una,
            Connection::Udp(_) => 0,
            Connection::Sctp(c) => c.send_buffer_bytes(),
        }
    }

    pub fn progress(&self) -> Progress {
        match self {
            Connection::Tcp(c) => c.progress(),
            Connection::Mptcp(c) => c.progress(),
            Connection::Udp(c) => c.progress(),
            Connection::Sctp(c) => c.progress(),
        }
    }

    /// The subflows (one for plain TCP, none for UDP or SCTP, whose destinations are not
    /// TCP subflows).
    pub fn subflows(&self) -> &[Subflow] {
        match self {
            Connection::Tcp(c) => std::slice::from_ref(&c.sub),
            Connection::Mptcp(c) => &c.subs,
            Connection::Udp(_) | Connection::Sctp(_) => &[],
        }
    }

    pub fn subflows_mut(&mut self) -> &mut [Subflow] {
        match self {
            Connection::Tcp(c) => std::slice::from_mut(&mut c.sub),
            Connection::Mptcp(c) => &mut c.subs,
            Connection::Udp(_) | Connection::Sctp(_) => &mut [],
        }
    }

    /// Names of the paths the connection uses, one per subflow (UDP: its one path).
    pub fn path_names(&self) -> Vec<String> {
        match self {
            Connection::Udp(c) => vec![c.path_name.clone()],
            Connection::Sctp(c) => c.dests.iter().map(|d| d.path_name.clone()).collect(),
            _ => self.subflows().iter().map(|s| s.path_name.clone()).collect(),
        }
    }

    /// A short name of the transport: tcp, mptcp, udp or sctp.
    pub fn kind(&self) -> &'static str {
        match self {
            Connection::Tcp(_) => "tcp",
            Connection::Mptcp(_) => "mptcp",
            Connection::Udp(_) => "udp",
            Connection::Sctp(_) => "sctp",
        }
    }

    pub fn snapshot(&self, now: SimTime) -> ConnSnapshot {
        let subs = self.subflows();
        let mut s = ConnSnapshot {
            cwnd: subs.iter().map(|x| x.sender.cwnd()).sum(),
            in_flight: subs.iter().map(|x| x.sender.in_flight()).sum(),
            retransmits: subs.iter().map(|x| x.sender.stats.retransmits).sum(),
            srtt: subs.iter().filter_map(|x| x.sender.rtt().srtt()).min(),
            ..ConnSnapshot::default()
        };
        match self {
            Connection::Tcp(c) => {
                s.rwnd = c.sub.sender.rwnd();
                s.sent = c.sub.sender.snd_nxt();
                s.rcv_buffer = c.sub.receiver.buffered();
            }
            Connection::Mptcp(c) => {
                s.rwnd = c.right_edge.saturating_sub(c.data_una);
                s.sent = c.dsn_nxt;
                s.rcv_buffer = c.rx.buffered();
                s.blocked = c.blocked_time(now);
            }
            Connection::Udp(c) => s.sent = c.sent,
            Connection::Sctp(c) => {
                let d = &c.dests;
                s.cwnd = d.iter().map(|x| x.w.cwnd).sum();
                s.in_flight = c.in_flight();
                s.retransmits = d.iter().map(|x| x.stats.retransmits).sum();
                s.srtt = d.iter().filter_map(|x| x.rto.srtt()).min();
                s.rwnd = c.peer_rwnd;
                s.sent = c.next_offset;
                s.rcv_buffer = c.rx.buffered();
                s.blocked = c.blocked_time(now);
                let p = &d[c.cfg.primary];
                s.jitter = p.cc.jitter(&p.w);
            }
        }
        if s.rwnd >= u32::MAX as u64 {
            s.rwnd = 0;
        }
        s
    }

    /// Fills in the transport's fields of a flow summary: identity, counters over subflows,
    /// RTT, receive buffer, Multipath TCP and UDP figures. `sub_goodput` gives each subflow's
    /// goodput from its index and in-order bytes delivered; `end` is the end of the run.
    pub fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        if let Connection::Sctp(c) = self {
            return c.summarize(s, end, sub_goodput);
        }
        let subs = self.subflows();
        let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
        let sum = |f: &dyn Fn(&Subflow) -> u64| subs.iter().map(f).sum::<u64>();
        s.path = self.path_names().join("+");
        s.transport = self.kind().to_string();
        s.cc = subs.first().map_or("none", |x| x.sender.cc.name()).to_string();
        s.segments_sent = sum(&|x| x.sender.stats.segments_sent);
        s.retransmits = sum(&|x| x.sender.stats.retransmits);
        s.timeouts = sum(&|x| x.sender.stats.timeouts);
        s.fast_recoveries = sum(&|x| x.sender.stats.fast_recoveries);
        s.spurious_timeouts = sum(&|x| x.sender.stats.spurious_timeouts);
        s.dsacks = sum(&|x| x.sender.stats.dsacks);
        s.dsack_undos = sum(&|x| x.sender.stats.dsack_undos);
        s.loss_probes = sum(&|x| x.sender.stats.loss_probes);
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
        let rx = match self {
            Connection::Mptcp(c) => Some(&c.rx),
            _ => sub0.map(|x| &x.receiver),
        };
        s.duplicate_segments = rx.map_or(0, |r| r.stats.duplicate_segments);
        s.max_receive_buffer_bytes = rx.map_or(0, |r| r.stats.max_buffered);
        match self {
            Connection::Mptcp(c) => {
                s.scheduler = Some(c.sched.name().to_string());
                s.rcv_blocked_s = c.blocked_time(end).as_secs_f64();
                s.o3_max_bytes = Some(c.o3_max);
                s.o3_mean_bytes = c.o3_mean();
                s.reinjections = c.reinjections;
                s.penalties = c.penalties;
                if let Some((p, r, b)) = c.rec_events() {
                    (s.rb2loc_predictions, s.path_removals, s.path_restorations) = (Some(p), Some(r), Some(b));
                }
            }
            Connection::Udp(c) => {
                s.datagrams_sent = Some(c.datagrams_sent);
                s.datagrams_received = Some(c.datagrams_received);
            }
            Connection::Tcp(_) | Connection::Sctp(_) => {}
        }
    }

    /// MPTCP-rec's figures of subflow `k` (None for any other transport or scheduler).
    pub fn rec_path(&self, k: usize, now: SimTime) -> Option<mptcp::RecPath> {
        match self {
            Connection::Mptcp(c) => c.rec_path(k, now),
            _ => None,
        }
    }

    /// Checks protocol invariants after every step, panicking on a violation (for tests).
    pub fn set_invariant_checks(&mut self, on: bool) {
        match self {
            Connection::Tcp(c) => c.check = on,
            Connection::Mptcp(c) => c.check = on,
            Connection::Sctp(c) => c.check = on,
            Connection::Udp(_) => {}
        }
    }
}

/// Asks for a timer event at `deadline` unless one at or before it is already pending.
pub(crate) fn arm(tx: &mut impl Sink, pending: &mut Option<SimTime>, deadline: Option<SimTime>, sub: usize, kind: TimerKind) {
    if let Some(d) = deadline {
        if pending.is_none_or(|p| d < p) {
            tx.push(Action::Timer { sub: sub as u16, kind, at: d });
            *pending = Some(d);
        }
    }
}
