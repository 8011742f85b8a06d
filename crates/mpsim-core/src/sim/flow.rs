//! Flows: an application over a transport connection, and what the application sees of its
//! data (write-to-delivery delay, jitter, per-class figures of a media stream).

use super::handshake_rtt;
use crate::app::App;
use crate::cc::Controller;
use crate::metrics::{DelayStats, Jitter};
use crate::net::{Link, Route};
use crate::scenario::{AppSpec, FlowSpec, Join, Scenario, Transport};
use crate::sched::Sched;
use crate::time::{Dur, SimTime};
use crate::transport::feedback::{Dsror, RxLogic};
use crate::transport::subflow::PathRoutes;
use crate::transport::tcp::{DelayedAck, ReceiverConfig, SenderConfig};
use crate::transport::udp::UDP_HEADER_BYTES;
use crate::transport::sctp::Destination;
use crate::transport::{Connection, MptcpConn, Progress, SctpConn, Subflow, TcpConn, UdpConn};
use std::collections::VecDeque;

/// Delivery figures of one class of writes (a frame type of a media stream).
pub(super) struct ClassStats {
    pub name: String,
    pub priority: u8,
    pub written: u64,
    pub refused: u64,
    pub delivered: u64,
    pub late: u64,
    pub delay: DelayStats,
    pub jitter: Jitter,
}

/// A connection and its application.
pub(super) struct Flow {
    pub name: String,
    pub conn: Connection,
    pub mss: u32,
    pub snd_buf: u64,
    pub background: bool,
    pub app: App,
    /// Per frame type of a media stream (empty for other applications).
    pub classes: Vec<ClassStats>,
    pub deadline: Option<Dur>,
    /// Mean bit rate of a media stream (for the throughput-based PSNR).
    pub media_rate_bps: Option<f64>,
    pub start: SimTime,
    pub active: bool,
    pub total: Option<u64>,
    /// (end sequence, time written, class) of application writes not yet delivered.
    pub writes: VecDeque<(u64, SimTime, u8)>,
    pub delay: DelayStats,
    pub jitter: Jitter,
    /// Sum and count of the write delays since the last sample (for the delay series).
    pub interval_delay: (u128, u64),
    pub refused: u64,
    pub completed_at: Option<SimTime>,
}

/// Builds the transport of flow `f`: its subflows over their paths, under a Multipath TCP
/// connection level if the flow has a scheduler, or a UDP sender.
fn connection(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Connection {
    let route = |p: usize| PathRoutes { name: s.paths[p].name.clone(), fwd: 2 * p as u32, rev: 2 * p as u32 + 1 };
    if f.transport == Transport::Udp {
        let r = route(f.paths[0]);
        return Connection::Udp(UdpConn::new(r.name, r.fwd, f.tcp.mss));
    }
    if let Some(c) = &f.sctp {
        let dests = f.paths.iter().map(|&p| route(p)).map(|r| Destination::new(r.name, r.fwd, r.rev, c, c.rcv_buf)).collect();
        return Connection::Sctp(Box::new(SctpConn::new(c.clone(), dests)));
    }
    let multipath = f.scheduler.is_some();
    let cfg = SenderConfig {
        mss: f.tcp.mss,
        initial_window: f.tcp.initial_window,
        rto: f.tcp.rto,
        min_rto: f.tcp.min_rto,
        max_rto: f.tcp.max_rto,
        frto: f.tcp.frto,
        rack: f.tcp.rack,
        tlp: f.tcp.tlp,
        prr: f.tcp.prr,
        sack: f.tcp.sack,
        initial_rto: f.tcp.initial_rto,
        ignore_rwnd: multipath,
        // the SYN-ACK announces the receive window before any data flows
        initial_rwnd: f.tcp.rcv_buf,
    };
    let rcfg = ReceiverConfig {
        // a subflow's data is held at the connection level: its own buffer never limits
        buffer: if multipath { u64::MAX / 4 } else { f.tcp.rcv_buf },
        ack_every: if f.tcp.delayed_ack == DelayedAck::Off { 1 } else { 2 },
        delack_timeout: f.tcp.delack_timeout,
        dsack: f.tcp.dsack,
        sack: f.tcp.sack,
        linux_delack: f.tcp.delayed_ack == DelayedAck::Linux,
        handshake_rtt: None,
    };
    let subs: Vec<Subflow> = f
        .paths
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let r = route(p);
            let rtt = handshake_rtt(links, &routes[r.fwd as usize], &routes[r.rev as usize], f.tcp.header);
            // an external name ("module:Class") runs Reno until the caller installs its own
            let cc = Controller::by_name(&f.cc).unwrap_or_else(|| Controller::by_name("reno").expect("built-in"));
            // the receiver's RTT estimate is the handshake's, as Linux's
            let rcfg = ReceiverConfig { handshake_rtt: Some(rtt), ..rcfg.clone() };
            let mut sub = Subflow::new(r, &cfg, rcfg, cc, rtt, f.backup.get(k).copied().unwrap_or(false));
            let offset = match (&f.join, k) {
                (_, 0) | (Join::AtStart, _) => Dur::ZERO,
                (Join::Delay(d), _) => *d,
                // the MP_JOIN exchange: two round trips of the joining path
                (Join::Linux, _) => rtt + rtt,
                (Join::At(v), _) => v[k],
            };
            sub.join_at = f.start + offset;
            sub.joined = offset == Dur::ZERO;
            sub
        })
        .collect();
    match &f.scheduler {
        Some(name) => {
            // an external name ("module:Class") runs lowest_rtt until the caller installs its own
            let mut sched = Sched::by_name(name).unwrap_or_else(|| Sched::by_name("lowest_rtt").expect("built-in"));
            // MPTCP-rec: its settings, and the receiver's TCP emulation per path
            let rx_logic = f.rec.as_ref().map(|r| {
                sched = Sched::MptcpRec(crate::sched::MptcpRec::new(r.pcder.clone()));
                let rtts: Vec<Dur> = subs.iter().map(|x| x.sender.rtt().srtt().unwrap_or(Dur::from_millis(100))).collect();
                RxLogic::Dsror(Dsror::new(&r.tear, f.tcp.mss, &rtts))
            });
            let mut conn = MptcpConn::new(subs, sched, f.tcp.rcv_buf, f.tcp.header, f.tcp.mss);
            conn.rx_logic = rx_logic;
            Connection::Mptcp(Box::new(conn))
        }
        None => Connection::Tcp(TcpConn::new(subs.into_iter().next().expect("a TCP flow has one path"), f.tcp.header)),
    }
}

impl Flow {
    pub fn new(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Flow {
        let conn = connection(s, f, links, routes);
        let header = if matches!(conn, Connection::Udp(_)) { UDP_HEADER_BYTES } else { f.tcp.header };
        let (classes, deadline, media_rate_bps) = match &f.app {
            AppSpec::Media(m) => (
                m.classes
                    .iter()
                    .map(|c| ClassStats {
                        name: c.name.clone(),
                        priority: c.priority,
                        written: 0,
                        refused: 0,
                        delivered: 0,
                        late: 0,
                        delay: DelayStats::default(),
                        jitter: Jitter::default(),
                    })
                    .collect(),
                m.deadline,
                Some(m.rate_bps()),
            ),
            _ => (Vec::new(), None, None),
        };
        Flow {
            name: f.name.clone(),
            conn,
            mss: f.tcp.mss,
            snd_buf: f.tcp.snd_buf,
            background: f.background,
            app: App::new(&f.app, s.seed, &f.name, header),
            classes,
            deadline,
            media_rate_bps,
            start: f.start,
            active: false,
            total: match f.app {
                AppSpec::Bulk { bytes } => bytes,
                _ => None,
            },
            writes: VecDeque::new(),
            delay: DelayStats::default(),
            jitter: Jitter::default(),
            interval_delay: (0, 0),
            refused: 0,
            completed_at: None,
        }
    }

    pub fn progress(&self) -> Progress {
        self.conn.progress()
    }

    /// Bytes written and not yet acknowledged: what occupies the send buffer.
    fn unacked(&self) -> u64 {
        self.conn.unacked()
    }

    /// The application writes `n` bytes at `now`, in units of at most `unit` bytes for the
    /// delay records (a segment for bulk transfers; the whole write otherwise).
    pub fn app_write(&mut self, now: SimTime, n: u64, unit: u64, priority: u8, class: u8) {
        let mut seq = self.conn.written();
        let end = seq + n;
        while seq < end {
            seq = (seq + unit).min(end);
            self.writes.push_back((seq, now, class));
        }
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.written += 1;
        }
        self.conn.write(n, priority);
    }

    /// Tops up the send buffer of a bulk application.
    pub fn refill(&mut self, now: SimTime) {
        if !self.active {
            return;
        }
        let space = self.snd_buf.saturating_sub(self.unacked());
        let n = self.app.bulk_write(space, self.mss as u64);
        if n > 0 {
            let unit = self.mss as u64;
            self.app_write(now, n, unit, 0, 0);
        }
    }

    /// A paced application's write of `len` bytes: accepted if the send buffer has room,
    /// otherwise refused (dropped at the sender). UDP has no send buffer.
    pub fn paced_write(&mut self, now: SimTime, len: u64, priority: u8, class: u8) {
        if let Connection::Udp(_) = self.conn {
            self.conn.write(len, priority);
        } else if self.unacked() + len <= self.snd_buf {
            self.app_write(now, len, len, priority, class);
        } else {
            self.refused += len;
            if let Some(c) = self.classes.get_mut(class as usize) {
                c.refused += 1;
            }
        }
    }

    /// Records that the application's bytes up to `upto` reached the receiving application.
    pub fn app_delivered(&mut self, now: SimTime, upto: u64) {
        while let Some(&(end, t, class)) = self.writes.front() {
            if end > upto {
                break;
            }
            self.writes.pop_front();
            let d = now.since(t);
            self.delay.record(d);
            self.jitter.record(t, now);
            self.interval_delay.0 += d.0 as u128;
            self.interval_delay.1 += 1;
            if let Some(c) = self.classes.get_mut(class as usize) {
                c.delivered += 1;
                c.delay.record(d);
                c.jitter.record(t, now);
                if self.deadline.is_some_and(|dl| d > dl) {
                    c.late += 1;
                }
            }
        }
        if self.total == Some(upto) {
            self.completed_at = Some(now);
        }
    }

    /// A datagram sent at `sent_at` arrived at `now`.
    pub fn datagram_delivered(&mut self, now: SimTime, sent_at: SimTime) {
        let d = now.since(sent_at);
        self.delay.record(d);
        self.jitter.record(sent_at, now);
        self.interval_delay.0 += d.0 as u128;
        self.interval_delay.1 += 1;
    }
}
