//! A UDP flow: datagrams of at most one MSS go out as the application writes, without
//! feedback; the receiver counts what arrives.

use super::{Action, Arrival, CaptureSetup, ConnSnapshot, PathSample, Progress, Sink, Transport};
use crate::metrics::pcap::CaptureKind;
use crate::metrics::FlowSummary;
use crate::net::{DataHeader, Ecn, Header};
use crate::time::SimTime;

/// IPv4 + UDP headers.
pub const UDP_HEADER_BYTES: u32 = 28;

pub struct UdpConn {
    pub path_name: String,
    /// Route index of the path's forward direction.
    pub fwd: u32,
    pub mss: u32,
    /// Bytes written and not yet sent (sent at the next `poll_transmit`).
    pending: u64,
    pub sent: u64,
    pub received: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
}

impl UdpConn {
    pub fn new(path_name: String, fwd: u32, mss: u32) -> UdpConn {
        UdpConn { path_name, fwd, mss, pending: 0, sent: 0, received: 0, datagrams_sent: 0, datagrams_received: 0 }
    }

    pub fn write(&mut self, len: u64) {
        self.pending += len;
    }

    pub fn progress(&self) -> Progress {
        Progress { written: self.sent + self.pending, acked: self.sent, delivered: self.received, bytes_sent: self.sent }
    }

    /// Sends everything written, as datagrams of at most one MSS.
    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        while self.pending > 0 {
            let len = self.pending.min(self.mss as u64) as u32;
            self.pending -= len as u64;
            let h = DataHeader {
                seq: self.sent,
                dsn: self.sent,
                len,
                retx: false,
                psh: false,
                sent_at: now,
                cw: false,
                ecn: Ecn::NotEct,
                cwr: false,
                echo: SimTime::ZERO,
            };
            self.sent += len as u64;
            self.datagrams_sent += 1;
            tx.push(Action::Packet { sub: 0, route: self.fwd, size: len + UDP_HEADER_BYTES, header: Header::Datagram(h) });
        }
    }

    pub fn on_packet(&mut self, header: &Header) -> Arrival {
        match header {
            Header::Datagram(h) => {
                self.received += h.len as u64;
                self.datagrams_received += 1;
                Arrival::Datagram { sent_at: h.sent_at }
            }
            _ => Arrival::Nothing,
        }
    }
}

impl Transport for UdpConn {
    const KIND: &'static str = "udp";

    fn write(&mut self, len: u64, _priority: u8) {
        UdpConn::write(self, len);
    }
    fn on_packet(&mut self, _now: SimTime, _sub: usize, header: &Header, _tx: &mut impl Sink) -> Arrival {
        UdpConn::on_packet(self, header)
    }
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        UdpConn::poll_transmit(self, now, tx);
    }
    fn written(&self) -> u64 {
        UdpConn::progress(self).written
    }
    /// Datagrams leave as they are written: nothing waits for an acknowledgement.
    fn unacked(&self) -> u64 {
        0
    }
    fn has_send_buffer(&self) -> bool {
        false
    }
    fn progress(&self) -> Progress {
        UdpConn::progress(self)
    }
    fn path_names(&self) -> Vec<String> {
        vec![self.path_name.clone()]
    }
    /// A UDP flow keeps no per-path state: the subflow series show no row of it.
    fn path_count(&self) -> usize {
        0
    }
    fn path_sample(&self, _k: usize, _now: SimTime) -> PathSample {
        unreachable!("a UDP flow has no per-path series (path_count is 0)")
    }
    fn snapshot(&self, _now: SimTime) -> ConnSnapshot {
        ConnSnapshot { sent: self.sent, ..ConnSnapshot::default() }
    }
    fn summarize(&self, s: &mut FlowSummary, _end: SimTime, _sub_goodput: &dyn Fn(usize, u64) -> f64) {
        // no congestion control, retransmissions or RTT samples: those fields stay 0
        s.path = self.path_name.clone();
        s.cc = "none".to_string();
        s.datagrams_sent = Some(self.datagrams_sent);
        s.datagrams_received = Some(self.datagrams_received);
    }
    fn capture_setup(&self) -> CaptureSetup {
        CaptureSetup { kind: CaptureKind::Udp, mss: self.mss, paths: 1, sctp_timestamps: false, routes: Vec::new() }
    }
}
