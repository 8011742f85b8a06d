//! A plain TCP connection: one subflow, its application bytes numbered by the subflow's own
//! sequence space.

use super::super::{Action, Arrival, CaptureSetup, ConnSnapshot, PathSample, Progress, Sink, TimerKind, Transport};
use super::subflow::{capture_close, snapshot_subflows, summarize_subflows, Subflow};
use crate::cc::Controller;
use crate::metrics::pcap::Capture;
use crate::metrics::pcap::{CaptureKind, SubflowRoute};
use crate::metrics::FlowSummary;
use crate::net::Header;
use crate::time::SimTime;
use crate::transport::tcp::TimerEvent;

pub struct TcpConn {
    pub sub: Subflow,
    /// Bytes of headers on every segment and ACK.
    pub header: u32,
    /// Check protocol invariants after every step (tests).
    pub check: bool,
}

impl TcpConn {
    pub fn new(sub: Subflow, header: u32) -> TcpConn {
        TcpConn { sub, header, check: false }
    }

    pub fn write(&mut self, len: u64) {
        self.sub.sender.write(len);
    }

    pub fn progress(&self) -> Progress {
        Progress {
            written: self.sub.sender.app_limit(),
            acked: self.sub.sender.snd_una(),
            delivered: self.sub.receiver.rcv_nxt(),
            bytes_sent: self.sub.sender.stats.bytes_sent,
        }
    }

    pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        let edge = self.check.then(|| self.sub.sender.snd_una() + self.sub.sender.rwnd());
        // the edge is read per segment in the check, but no ACK arrives while transmitting
        self.sub.transmit(now, 0, self.header, |seq| seq, SimTime::ZERO, edge, tx);
    }

    pub fn on_packet(&mut self, now: SimTime, header: &Header, tx: &mut impl Sink) -> Arrival {
        match header {
            Header::TcpData(h) => {
                if h.cw {
                    self.sub.receiver.on_cw_mark();
                }
                let ecn_ack = self.sub.receiver.on_ecn(h.ecn, h.cwr);
                let mut r = self.sub.receiver.on_segment(now, h.seq, h.len);
                r.ack_now |= ecn_ack;
                r.ack_now |= h.psh && r.delivered > 0 && self.sub.receiver.push_ack(true);
                if self.check {
                    let rx = &self.sub.receiver;
                    assert!(rx.buffered() <= rx.capacity(), "receive buffer over its limit");
                    assert_eq!(rx.stats.beyond_window_drops, 0, "data beyond the receive window");
                }
                if r.ack_now {
                    self.sub.send_ack(0, self.header, None, tx);
                } else {
                    self.sub.delay_ack(0, tx);
                }
                if r.delivered > 0 {
                    Arrival::Stream { upto: self.sub.receiver.rcv_nxt() }
                } else {
                    Arrival::Nothing
                }
            }
            Header::TcpAck(h) => {
                self.sub.sender.on_ack_coupled(now, h, &[], 0);
                if self.check {
                    if let Err(e) = self.sub.sender.check_invariants() {
                        panic!("{e}");
                    }
                    assert!(self.sub.sender.snd_una() <= self.sub.receiver.rcv_nxt(), "acknowledged undelivered data");
                }
                Arrival::Nothing
            }
            Header::Datagram(_) | Header::SctpData(_) | Header::SctpSack(_) | Header::SctpControl(_) | Header::Quic(_) => Arrival::Nothing,
        }
    }

    pub fn on_timer(&mut self, now: SimTime, kind: TimerKind, tx: &mut impl Sink) {
        match kind {
            TimerKind::Rto => {
                if self.sub.rto_due(now, 0, tx) {
                    let una = self.sub.sender.snd_una();
                    if self.sub.sender.on_timer_coupled(now, &[], 0) == TimerEvent::Rto {
                        tx.push(Action::Note { sub: 0, kind: crate::metrics::TraceKind::Timeout, seq: una, dsn: una });
                    }
                    self.poll_transmit(now, tx);
                }
            }
            TimerKind::DelAck => {
                if self.sub.delack_due(now, 0, tx) {
                    self.sub.send_ack(0, self.header, None, tx);
                }
            }
            // plain TCP runs no receiver logic, no scheduler and has no subflows to join
            TimerKind::Feedback | TimerKind::Pace | TimerKind::Join | TimerKind::PathStatus => {}
        }
    }
}

impl Transport for TcpConn {
    const KIND: &'static str = "tcp";

    fn write(&mut self, len: u64, _priority: u8) {
        TcpConn::write(self, len);
    }
    fn on_packet(&mut self, now: SimTime, _sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        TcpConn::on_packet(self, now, header, tx)
    }
    fn on_timer(&mut self, now: SimTime, _sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        TcpConn::on_timer(self, now, kind, tx);
    }
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        TcpConn::poll_transmit(self, now, tx);
    }
    #[inline]
    fn written(&self) -> u64 {
        self.sub.sender.app_limit()
    }
    #[inline]
    fn unacked(&self) -> u64 {
        self.sub.sender.app_limit() - self.sub.sender.snd_una()
    }
    fn progress(&self) -> Progress {
        TcpConn::progress(self)
    }
    fn set_controller(&mut self, make: &mut dyn FnMut() -> Controller) -> bool {
        self.sub.sender.set_controller(make());
        true
    }
    fn path_names(&self) -> Vec<String> {
        vec![self.sub.path_name.clone()]
    }
    fn path_count(&self) -> usize {
        1
    }
    fn path_sample(&self, _k: usize, _now: SimTime) -> PathSample {
        self.sub.sample()
    }
    fn snapshot(&self, _now: SimTime) -> ConnSnapshot {
        ConnSnapshot {
            rwnd: self.sub.sender.rwnd(),
            sent: self.sub.sender.snd_nxt(),
            rcv_buffer: self.sub.receiver.buffered(),
            ..snapshot_subflows(std::iter::once(&self.sub))
        }
    }
    fn summarize(&self, s: &mut FlowSummary, _end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        summarize_subflows(&[&self.sub], &self.path_names(), &self.sub.receiver, s, sub_goodput);
    }
    fn set_invariant_checks(&mut self, on: bool) {
        self.check = on;
    }
    fn capture_setup(&self) -> CaptureSetup {
        let route = SubflowRoute { fwd: self.sub.fwd, rev: self.sub.rev, join_at: SimTime::ZERO };
        CaptureSetup {
            kind: CaptureKind::Tcp,
            mss: self.sub.sender.subflow_state(true).mss as u32,
            paths: 1,
            sctp_timestamps: false,
            routes: vec![route],
        }
    }
    fn capture_close(&self, cap: &mut Capture, now: SimTime, header: &Header, total: Option<u64>) {
        capture_close(cap, now, header, total, self.unacked(), self.written(), std::iter::once(&self.sub));
    }
}
