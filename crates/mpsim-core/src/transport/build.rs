//! Builds a flow's connection from its scenario entry: its subflows over their paths, under
//! a Multipath TCP connection level if the flow has a scheduler, an SCTP association, or a
//! UDP sender.

use super::feedback::{Dsror, RxLogic};
use super::sctp::Destination;
use super::subflow::PathRoutes;
use super::tcp::{DelayedAck, ReceiverConfig, SenderConfig};
use super::udp::UDP_HEADER_BYTES;
use super::{Connection, MptcpConn, SctpConn, Subflow, TcpConn, UdpConn};
use crate::cc::Controller;
use crate::net::{handshake_rtt, Link, Route};
use crate::scenario::{FlowSpec, Join, Scenario, Transport as TransportSpec};
use crate::sched::Sched;
use crate::time::Dur;

impl Connection {
    /// The connection of flow `f` of scenario `s`, over `links` and `routes` (route 2p is
    /// path p forward, 2p + 1 back).
    pub fn new(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Connection {
        let route = |p: usize| PathRoutes { name: s.paths[p].name.clone(), fwd: 2 * p as u32, rev: 2 * p as u32 + 1 };
        if f.transport == TransportSpec::Udp {
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
