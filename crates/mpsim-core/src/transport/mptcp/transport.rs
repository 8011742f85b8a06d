//! Multipath TCP as the simulation drives and observes it (see [`Transport`]).

use super::{MptcpConn, RecPath};
use crate::cc::Controller;
use crate::feedback::RxLogic;
use crate::metrics::pcap::{Capture, CaptureKind, SubflowRoute};
use crate::metrics::FlowSummary;
use crate::net::Header;
use crate::sched::Sched;
use crate::time::SimTime;
use crate::transport::tcp::subflow::{capture_close, snapshot_subflows, summarize_subflows};
use crate::transport::{tcp, Arrival, CaptureSetup, ConnSnapshot, PathSample, Progress, Sink, TimerKind, Transport};

impl Transport for MptcpConn {
    const KIND: &'static str = "mptcp";

    fn write(&mut self, len: u64, priority: u8) {
        MptcpConn::write(self, len, priority);
    }
    fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        MptcpConn::on_packet(self, now, sub, header, tx)
    }
    fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        MptcpConn::on_timer(self, now, sub, kind, tx);
    }
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        MptcpConn::poll_transmit(self, now, tx);
    }
    #[inline]
    fn written(&self) -> u64 {
        self.app_limit
    }
    #[inline]
    fn unacked(&self) -> u64 {
        self.app_limit - self.data_una
    }
    fn progress(&self) -> Progress {
        MptcpConn::progress(self)
    }
    fn send_buffer(&self) -> Option<u64> {
        match self.sched {
            Sched::LinuxUpstream(ref u) => Some(u.connection_sndbuf(self.subs.iter().map(|s| s.tcp.sender.cwnd()), self.mss as u64)),
            _ => None,
        }
    }
    fn set_controller(&mut self, make: &mut dyn FnMut() -> Controller) -> bool {
        for sub in &mut self.subs {
            sub.tcp.sender.set_controller(make());
        }
        true
    }
    fn path_names(&self) -> Vec<String> {
        self.subs.iter().map(|s| s.tcp.path_name.clone()).collect()
    }
    fn path_count(&self) -> usize {
        self.subs.len()
    }
    fn path_sample(&self, k: usize, now: SimTime) -> PathSample {
        PathSample { rec: self.rec_path(k, now), ..self.subs[k].tcp.sample() }
    }
    fn rec_path(&self, k: usize, now: SimTime) -> Option<RecPath> {
        MptcpConn::rec_path(self, k, now)
    }
    fn snapshot(&self, now: SimTime) -> ConnSnapshot {
        ConnSnapshot {
            rwnd: self.right_edge.saturating_sub(self.data_una),
            sent: self.dsn_nxt,
            rcv_buffer: self.rx.buffered(),
            blocked: self.blocked_time(now),
            ..snapshot_subflows(self.subs.iter().map(|s| &s.tcp))
        }
    }
    fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        let tcp: Vec<&tcp::Subflow> = self.subs.iter().map(|s| &s.tcp).collect();
        summarize_subflows(&tcp, &self.path_names(), &self.rx, s, sub_goodput);
        for (line, sub) in s.subflows.iter_mut().zip(&self.subs) {
            line.backup = sub.backup;
        }
        s.scheduler = Some(self.sched.name().to_string());
        s.rcv_blocked_s = self.blocked_time(end).as_secs_f64();
        s.o3_max_bytes = Some(self.o3_max);
        s.o3_mean_bytes = self.o3_mean();
        s.reinjections = self.reinjections;
        s.penalties = self.penalties;
        if let Some((p, r, b)) = self.rec_events() {
            (s.rb2loc_predictions, s.path_removals, s.path_restorations) = (Some(p), Some(r), Some(b));
        }
    }
    fn set_invariant_checks(&mut self, on: bool) {
        self.check = on;
    }
    fn set_scheduler(&mut self, sched: Sched) -> bool {
        self.sched = sched;
        true
    }
    fn set_receiver_logic(&mut self, logic: RxLogic) -> bool {
        self.rx_logic = Some(logic);
        true
    }
    fn capture_setup(&self) -> CaptureSetup {
        let mss = self.subs.first().map_or(1460, |s| s.tcp.sender.subflow_state(true).mss as u32);
        let routes = self.subs.iter().map(|s| SubflowRoute { fwd: s.tcp.fwd, rev: s.tcp.rev, join_at: s.join_at }).collect();
        CaptureSetup { kind: CaptureKind::Mptcp, mss, paths: self.subs.len().max(1), sctp_timestamps: false, routes }
    }
    fn capture_close(&self, cap: &mut Capture, now: SimTime, header: &Header, total: Option<u64>) {
        capture_close(cap, now, header, total, self.unacked(), self.written(), self.subs.iter().map(|s| &s.tcp));
    }
}
