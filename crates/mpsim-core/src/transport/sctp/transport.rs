//! SCTP as the simulation drives and observes it (see [`Transport`]): each destination is a
//! path of the subflow series, and a capture shows SACKs with their gap blocks.

use super::receiver::SackRecord;
use super::SctpConn;
use crate::metrics::pcap::{Capture, CaptureKind, SctpSackBody};
use crate::metrics::FlowSummary;
use crate::net::Header;
use crate::time::SimTime;
use crate::transport::{Arrival, CaptureSetup, ConnSnapshot, PathSample, Progress, Sink, TimerKind, Transport};

impl Transport for SctpConn {
    const KIND: &'static str = "sctp";

    fn write(&mut self, len: u64, _priority: u8) {
        SctpConn::write(self, len);
    }
    fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        SctpConn::on_packet(self, now, sub, header, tx)
    }
    fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        SctpConn::on_timer(self, now, sub, kind, tx);
    }
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        SctpConn::poll_transmit(self, now, tx);
    }
    #[inline]
    fn written(&self) -> u64 {
        self.app_limit
    }
    #[inline]
    fn unacked(&self) -> u64 {
        self.send_buffer_bytes()
    }
    fn progress(&self) -> Progress {
        SctpConn::progress(self)
    }
    fn path_names(&self) -> Vec<String> {
        self.dests.iter().map(|d| d.path_name.clone()).collect()
    }
    fn path_count(&self) -> usize {
        self.dests.len()
    }
    /// A destination's figures, its bytes counted as they arrive at the receiver by way of it.
    fn path_sample(&self, k: usize, _now: SimTime) -> PathSample {
        let d = &self.dests[k];
        PathSample {
            cwnd: d.w.cwnd,
            ssthresh: d.w.ssthresh,
            in_flight: d.flight,
            srtt: d.rto.srtt(),
            rto: d.rto.rto(),
            delivered: d.stats.bytes_received,
            rec: None,
            model: None,
        }
    }
    fn snapshot(&self, now: SimTime) -> ConnSnapshot {
        let d = &self.dests;
        let p = &d[self.cfg.primary];
        ConnSnapshot {
            cwnd: d.iter().map(|x| x.w.cwnd).sum(),
            in_flight: self.in_flight(),
            retransmits: d.iter().map(|x| x.stats.retransmits).sum(),
            srtt: d.iter().filter_map(|x| x.rto.srtt()).min(),
            rwnd: self.peer_rwnd,
            sent: self.next_offset,
            rcv_buffer: self.rx.buffered(),
            blocked: self.blocked_time(now),
            jitter: p.cc.jitter(&p.w),
        }
    }
    fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        SctpConn::summarize(self, s, end, sub_goodput);
    }
    fn set_invariant_checks(&mut self, on: bool) {
        self.check = on;
    }
    fn capture_setup(&self) -> CaptureSetup {
        CaptureSetup {
            kind: CaptureKind::Sctp,
            mss: self.cfg.chunk,
            paths: self.dests.len().max(1),
            sctp_timestamps: self.cfg.timestamps,
            routes: Vec::new(),
        }
    }
    /// A SACK is captured with the gap blocks, duplicate TSNs and timestamp echoes the
    /// receiver put in it.
    fn capture_arrival(&self, cap: &mut Capture, now: SimTime, sub: usize, header: &Header) {
        if let Header::SctpSack(h) = header {
            let empty = SackRecord::default();
            let rec = self.sack_record(h.id).unwrap_or(&empty);
            let echoes: Vec<(u64, SimTime)> = rec.echoes.iter().map(|e| (e.0, e.3)).collect();
            let body = SctpSackBody { gaps: &rec.gaps, dups: &rec.dups, echoes: &echoes };
            cap.sctp_sack(now, sub, h, &body);
        } else {
            cap.arrived(now, sub, header);
        }
    }
}
