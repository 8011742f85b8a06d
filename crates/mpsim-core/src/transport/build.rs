//! Builds a flow's connection from its scenario entry: a TCP subflow per path, alone or under
//! a Multipath TCP connection level, an SCTP association over its destinations, a QUIC
//! connection, or a UDP sender.

use super::mptcp::Subflow;
use super::quic::{wire, QuicConfig, QuicPath};
use super::sctp::Destination;
use super::tcp::{self, PathRoutes};
use super::udp::UDP_HEADER_BYTES;
use super::{Connection, MptcpConn, QuicConn, SctpConn, TcpConn, UdpConn};
use crate::cc::Controller;
use crate::feedback::{RxLogic, RxSetup};
use crate::net::{handshake_rtt, Link, Route};
use crate::rng::Rng;
use crate::scenario::{AppSpec, FlowSpec, Join, MptcpSpec, Scenario, TransportSpec};
use crate::sched::Sched;
use crate::time::Dur;

impl Connection {
    /// The connection of flow `f` of scenario `s`, over `links` and `routes` (route 2p is
    /// path p forward, 2p + 1 back).
    pub fn new(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Connection {
        let route = |p: usize| PathRoutes { name: s.paths[p].name.clone(), fwd: 2 * p as u32, rev: 2 * p as u32 + 1 };
        match &f.transport {
            TransportSpec::Udp => {
                let r = route(f.paths[0]);
                Connection::Udp(UdpConn::new(r.name, r.fwd, f.tcp.mss))
            }
            TransportSpec::Sctp(c) => {
                let dests = f.paths.iter().map(|&p| route(p)).map(|r| Destination::new(r.name, r.fwd, r.rev, c, c.rcv_buf)).collect();
                Connection::Sctp(Box::new(SctpConn::new((**c).clone(), dests)))
            }
            TransportSpec::Quic { scheduler, ecn, priorities, backup, path_status, ack_frequency, pacing, reset_late } => {
                let cfg = QuicConfig {
                    max_datagram: f.tcp.mss + f.tcp.header - wire::IP_UDP,
                    max_ack_delay: Dur(wire::MAX_ACK_DELAY_NS),
                    rcv_buf: f.tcp.rcv_buf,
                    initial_window: f.tcp.initial_window,
                    ecn: *ecn,
                };
                let paths = f
                    .paths
                    .iter()
                    .map(|&p| {
                        let r = route(p);
                        let rtt = handshake_rtt(links, &routes[r.fwd as usize], &routes[r.rev as usize], f.tcp.header);
                        let mut cc = Controller::by_name(&f.cc).unwrap_or_else(|| Controller::by_name("reno").expect("built-in"));
                        cc.seed(Rng::substream(s.seed, &format!("flow/{}/path/{}/cc", f.name, r.name)));
                        QuicPath::new(r, &cfg, cc, rtt)
                    })
                    .collect();
                let sched =
                    scheduler.as_deref().map(|n| Sched::by_name(n).unwrap_or_else(|| Sched::by_name("lowest_rtt").expect("built-in")));
                // a media application's frames each on a stream of their own; any other
                // application's bytes on one stream
                let per_frame = matches!(f.app, AppSpec::Media(_));
                let conn = QuicConn::new(cfg, paths)
                    .with_scheduler(sched)
                    .with_backup(backup)
                    .with_streams(per_frame, *priorities)
                    .with_path_status(path_status)
                    .with_ack_frequency(*ack_frequency)
                    .with_pacing(*pacing)
                    .with_reset_late(*reset_late);
                Connection::Quic(Box::new(conn))
            }
            TransportSpec::Tcp => {
                let (sub, _) = subflows(f, false, s.seed, links, routes, route).into_iter().next().expect("a TCP flow has one path");
                Connection::Tcp(TcpConn::new(sub, f.tcp.header))
            }
            TransportSpec::Mptcp(m) => {
                let subs = subflows(f, true, s.seed, links, routes, route);
                Connection::Mptcp(Box::new(MptcpConn::from_spec(subs, m, f)))
            }
        }
    }

    /// Bytes of headers on each packet of the connection: the flow's TCP/IP headers, or
    /// IP and UDP for datagrams.
    pub fn header_bytes(&self, tcp_header: u32) -> u32 {
        if self.has_send_buffer() {
            tcp_header
        } else {
            UDP_HEADER_BYTES
        }
    }
}

/// The TCP subflows of flow `f`, one per path, each with its handshake's round trip and its
/// controller's random stream (from the scenario's `seed`); under
/// Multipath TCP (`multipath`) the connection level holds the data and grants the window.
fn subflows(
    f: &FlowSpec,
    multipath: bool,
    seed: u64,
    links: &[Link],
    routes: &[Route],
    route: impl Fn(usize) -> PathRoutes,
) -> Vec<(tcp::Subflow, Dur)> {
    let cfg = f.tcp.sender(multipath);
    f.paths
        .iter()
        .map(|&p| {
            let r = route(p);
            let rtt = handshake_rtt(links, &routes[r.fwd as usize], &routes[r.rev as usize], f.tcp.header);
            // an external name ("module:Class") runs Reno until the caller installs its own
            let mut cc = Controller::by_name(&f.cc).unwrap_or_else(|| Controller::by_name("reno").expect("built-in"));
            cc.seed(Rng::substream(seed, &format!("flow/{}/path/{}/cc", f.name, r.name)));
            // the receiver's RTT estimate is the handshake's, as Linux's
            let rcfg = f.tcp.receiver(multipath, rtt);
            (tcp::Subflow::new(r, &cfg, rcfg, cc, rtt), rtt)
        })
        .collect()
}

impl MptcpConn {
    /// The Multipath TCP connection of flow `f` over the TCP subflows `tcp` (with their
    /// handshake round trips), as its settings `m` say: each subflow's backup mark and join
    /// (after the first, when `join` says), its scheduler, and MPTCP-rec's receiver logic and
    /// pacing if it runs it.
    pub fn from_spec(tcp: Vec<(tcp::Subflow, Dur)>, m: &MptcpSpec, f: &FlowSpec) -> MptcpConn {
        let subs: Vec<Subflow> = tcp
            .into_iter()
            .enumerate()
            .map(|(k, (tcp, rtt))| {
                let offset = match (&m.join, k) {
                    (_, 0) | (Join::AtStart, _) => Dur::ZERO,
                    (Join::Delay(d), _) => *d,
                    // the MP_JOIN exchange: two round trips of the joining path
                    (Join::Linux, _) => rtt + rtt,
                    (Join::At(v), _) => v[k],
                };
                let backup = m.backup.get(k).copied().unwrap_or(false);
                Subflow::new(tcp, backup, f.start + offset, offset == Dur::ZERO)
            })
            .collect();
        // an external name ("module:Class") runs lowest_rtt until the caller installs its own
        let mut sched = Sched::by_name(&m.scheduler).unwrap_or_else(|| Sched::by_name("lowest_rtt").expect("built-in"));
        // MPTCP-rec: its settings, and the receiver's TCP emulation per path
        let rx_logic = m.rec.as_ref().map(|r| {
            sched = Sched::MptcpRec(crate::sched::MptcpRec::new(r.pcder.clone()));
            let rtts: Vec<Dur> = subs.iter().map(|x| x.tcp.sender.rtt().srtt().unwrap_or(Dur::from_millis(100))).collect();
            RxLogic::by_name("mptcp_rec", &RxSetup { tear: r.tear.clone(), mss: f.tcp.mss, rtts }).expect("built-in")
        });
        let mut conn = MptcpConn::new(subs, sched, f.tcp.rcv_buf, f.tcp.header, f.tcp.mss);
        if f.tcp.window_scale.is_some() {
            conn.limit_window(f.tcp.max_window());
        }
        conn.rx_logic = rx_logic;
        conn
    }
}
