//! QUIC as the simulation drives and observes it (see [`Transport`]): each path is a row of
//! the subflow series and of the summary's subflows.

use super::QuicConn;
use crate::cc::Controller;
use crate::metrics::pcap::CaptureKind;
use crate::metrics::{FlowSummary, PathStatusApplied, QuicSummary, SubflowSummary};
use crate::net::Header;
use crate::time::{Dur, SimTime};
use crate::transport::{Arrival, CaptureSetup, ConnSnapshot, PathSample, Progress, Sink, TimerKind, Transport};

impl Transport for QuicConn {
    const KIND: &'static str = "quic";

    fn write(&mut self, len: u64, priority: u8) {
        QuicConn::write_with(self, len, priority);
    }
    fn write_until(&mut self, len: u64, priority: u8, expires: Option<SimTime>) {
        QuicConn::write_until(self, len, priority, expires);
    }
    fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
        match header {
            Header::Quic(h) => QuicConn::on_packet(self, now, sub, h, tx),
            _ => Arrival::Nothing,
        }
    }
    fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
        QuicConn::on_timer(self, now, sub, kind, tx);
    }
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
        QuicConn::poll_transmit(self, now, tx);
    }
    fn take_message(&mut self) -> Option<u64> {
        QuicConn::take_message(self)
    }
    #[inline]
    fn written(&self) -> u64 {
        QuicConn::written(self)
    }
    #[inline]
    fn unacked(&self) -> u64 {
        QuicConn::unacked(self)
    }
    fn progress(&self) -> Progress {
        QuicConn::progress(self)
    }
    fn set_controller(&mut self, make: &mut dyn FnMut() -> Controller) -> bool {
        for p in &mut self.paths {
            p.rec.cc = make();
        }
        true
    }
    fn set_scheduler(&mut self, sched: crate::sched::Sched) -> bool {
        if self.paths.len() < 2 {
            return false;
        }
        self.sched = Some(sched);
        true
    }
    fn path_names(&self) -> Vec<String> {
        self.paths.iter().map(|p| p.name.clone()).collect()
    }
    fn path_count(&self) -> usize {
        self.paths.len()
    }
    fn path_sample(&self, k: usize, _now: SimTime) -> PathSample {
        let p = &self.paths[k];
        PathSample {
            cwnd: p.rec.w.cwnd,
            ssthresh: p.rec.w.ssthresh,
            in_flight: p.rec.bytes_in_flight,
            srtt: Some(p.rec.rtt.smoothed),
            rto: p.rec.pto_duration(),
            delivered: p.stats.bytes_received,
            rec: None,
            model: p.rec.cc.model(),
        }
    }
    fn snapshot(&self, now: SimTime) -> ConnSnapshot {
        let ps = &self.paths;
        ConnSnapshot {
            cwnd: ps.iter().map(|p| p.rec.w.cwnd).sum(),
            in_flight: ps.iter().map(|p| p.rec.bytes_in_flight).sum(),
            retransmits: ps.iter().map(|p| p.stats.retransmits).sum(),
            srtt: ps.iter().map(|p| p.rec.rtt.smoothed).min(),
            rwnd: self.peer_limit.saturating_sub(self.next_offset),
            sent: self.next_offset,
            rcv_buffer: self.rcv_buffered(),
            blocked: self.blocked_time(now),
            jitter: None,
        }
    }
    fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        let ps = &self.paths;
        let ms = |d: Dur| Some(d.as_millis_f64());
        let sum = |f: &dyn Fn(&super::QuicPath) -> u64| ps.iter().map(f).sum::<u64>();
        s.path = ps.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join("+");
        s.cc = ps[0].rec.cc.name().into();
        s.scheduler = self.sched.as_ref().map(|s| s.name().to_string());
        s.segments_sent = sum(&|p| p.rec.stats.packets_sent);
        s.retransmits = sum(&|p| p.stats.retransmits);
        s.timeouts = sum(&|p| p.rec.stats.ptos);
        s.loss_probes = sum(&|p| p.rec.stats.probes);
        s.fast_recoveries = sum(&|p| p.rec.stats.congestion_events);
        s.loss_indications = s.fast_recoveries + sum(&|p| p.rec.stats.persistent_congestion);
        s.retransmit_rate = if s.segments_sent > 0 { s.retransmits as f64 / s.segments_sent as f64 } else { 0.0 };
        let n_rtt = sum(&|p| p.rec.rtt.samples);
        let sum_rtt: f64 = ps.iter().map(|p| p.rec.rtt.mean().as_millis_f64() * p.rec.rtt.samples as f64).sum();
        s.rtt_mean_ms = (n_rtt > 0).then(|| sum_rtt / n_rtt as f64);
        s.rtt_min_ms = ps.iter().map(|p| p.rec.rtt.min).min().and_then(ms);
        s.srtt_final_ms = ms(ps[0].rec.rtt.smoothed);
        s.rto_final_ms = ps[0].rec.pto_duration().as_millis_f64();
        s.cwnd_final_bytes = sum(&|p| p.rec.w.cwnd);
        s.out_of_order_segments = self.stats.out_of_order_packets;
        s.duplicate_segments = self.stats.duplicate_packets;
        s.max_receive_buffer_bytes = self.stats.max_buffered;
        s.rcv_blocked_s = self.blocked_time(end).as_secs_f64();
        // with ECN: CE-marked packets the receiver counted, and the sender's reductions for them
        let ecn = |v: u64| self.cfg.ecn.then_some(v);
        s.ecn_ce_received = ecn(sum(&|p| p.ecn_received().ce));
        s.ecn_reductions = ecn(sum(&|p| p.rec.ecn.reductions));
        s.subflows = ps
            .iter()
            .enumerate()
            .map(|(k, p)| SubflowSummary {
                path: p.name.clone(),
                backup: p.backup,
                goodput_bps: sub_goodput(k, p.stats.bytes_received),
                bytes_sent: p.stats.bytes_sent,
                segments_sent: p.rec.stats.packets_sent,
                retransmits: p.stats.retransmits,
                timeouts: p.rec.stats.ptos,
                fast_recoveries: p.rec.stats.congestion_events,
                rtt_mean_ms: ms(p.rec.rtt.mean()),
                srtt_final_ms: ms(p.rec.rtt.smoothed),
                cwnd_final_bytes: p.rec.w.cwnd,
                dsr_mean_bps: None,
                rec_reductions: None,
                rec_timeouts: None,
                rec_window_holds: None,
                ecn_ce_received: ecn(p.ecn_received().ce),
                ecn_reductions: ecn(p.rec.ecn.reductions),
            })
            .collect();
        s.quic = Some(QuicSummary {
            packets_lost: ps.iter().map(|p| p.rec.stats.packets_lost).collect(),
            ptos: ps.iter().map(|p| p.rec.stats.ptos).collect(),
            persistent_congestion: ps.iter().map(|p| p.rec.stats.persistent_congestion).collect(),
            acks_sent: ps.iter().map(|p| p.stats.acks_sent).collect(),
            max_data_updates: self.stats.max_data_updates,
            max_datagram: self.cfg.max_datagram,
            abandoned_s: (ps.len() > 1).then(|| ps.iter().map(|p| p.abandoned_at.map(|t| t.as_secs_f64())).collect()),
            path_status: self.status.any().then(|| {
                let name = |b: bool| if b { "backup" } else { "available" };
                self.status
                    .applied
                    .iter()
                    .map(|&(at, p, b)| PathStatusApplied { at_s: at.as_secs_f64(), path: ps[p].name.clone(), status: name(b) })
                    .collect()
            }),
            ecn_state: self.cfg.ecn.then(|| ps.iter().map(|p| p.rec.ecn.state.map_or("off", |e| e.name())).collect()),
            ack_frequency_frames: self.ack_frequency.as_ref().map(|a| a.sent.len() as u64),
            immediate_acks: self.ack_frequency.as_ref().map(|a| a.immediate_acks),
            reset_stream_frames: self.reset_late.as_ref().map(|r| r.frames),
            streams_reset: self.reset_late.as_ref().map(|_| self.streams.reset),
        });
    }
    fn set_invariant_checks(&mut self, on: bool) {
        self.check = on;
    }
    fn start_qlog(&mut self, title: &str) -> bool {
        self.qlog = Some(super::qlog::Qlog::new(title));
        true
    }
    fn take_qlog(&mut self) -> Option<String> {
        self.qlog.take().map(|q| q.into_text())
    }
    fn capture_setup(&self) -> CaptureSetup {
        CaptureSetup {
            kind: CaptureKind::Udp,
            mss: self.cfg.max_datagram,
            paths: self.paths.len(),
            sctp_timestamps: false,
            routes: Vec::new(),
        }
    }
}
