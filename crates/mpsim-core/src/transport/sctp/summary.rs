//! The SCTP part of a flow summary.

use super::association::SctpConn;
use crate::metrics::{FlowSummary, SctpSummary, SubflowSummary};
use crate::time::{Dur, SimTime};

impl SctpConn {
    /// Fills in a flow summary: counters over destinations (each destination is reported as
    /// a subflow), RTT, the receive buffer and its blocking, and the SCTP figures.
    pub fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
        let ds = &self.dests;
        let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
        let sum = |f: &dyn Fn(&super::Destination) -> u64| ds.iter().map(f).sum::<u64>();
        s.path = ds.iter().map(|d| d.path_name.as_str()).collect::<Vec<_>>().join("+");
        s.transport = "sctp".into();
        s.cc = self.cfg.cc.into();
        s.scheduler = self.cfg.cmt.then(|| self.cfg.scheduler.to_string());
        s.segments_sent = sum(&|d| d.stats.packets_sent);
        s.retransmits = sum(&|d| d.stats.retransmits);
        s.timeouts = sum(&|d| d.stats.timeouts);
        s.fast_recoveries = sum(&|d| d.stats.fast_recoveries);
        s.loss_indications = s.fast_recoveries + s.timeouts;
        s.retransmit_rate = if s.segments_sent > 0 { s.retransmits as f64 / s.segments_sent as f64 } else { 0.0 };
        let n_rtt: u64 = sum(&|d| d.rto.samples);
        let sum_rtt: f64 = ds.iter().map(|d| d.rto.mean().map_or(0.0, |m| m.as_millis_f64() * d.rto.samples as f64)).sum();
        s.rtt_mean_ms = (n_rtt > 0).then(|| sum_rtt / n_rtt as f64);
        s.rtt_min_ms = ms(ds.iter().filter_map(|d| d.rto.min_rtt).min());
        let p = &ds[self.cfg.primary];
        s.srtt_final_ms = ms(p.rto.srtt());
        s.rto_final_ms = p.rto.rto().as_millis_f64();
        s.cwnd_final_bytes = sum(&|d| d.w.cwnd);
        s.out_of_order_segments = self.rx.stats.out_of_order_chunks;
        s.duplicate_segments = self.rx.stats.duplicate_chunks;
        s.max_receive_buffer_bytes = self.rx.stats.max_buffered;
        s.rcv_blocked_s = self.blocked_time(end).as_secs_f64();
        if self.cfg.ecn {
            s.ecn_ce_received = Some(self.ecn_ce_received);
            s.ecn_reductions = Some(sum(&|d| d.stats.ecn_reductions));
        }
        s.subflows = ds
            .iter()
            .enumerate()
            .map(|(k, d)| SubflowSummary {
                path: d.path_name.clone(),
                backup: false,
                goodput_bps: sub_goodput(k, d.stats.bytes_received),
                bytes_sent: d.stats.bytes_sent,
                segments_sent: d.stats.packets_sent,
                retransmits: d.stats.retransmits,
                timeouts: d.stats.timeouts,
                fast_recoveries: d.stats.fast_recoveries,
                rtt_mean_ms: ms(d.rto.mean()),
                srtt_final_ms: ms(d.rto.srtt()),
                cwnd_final_bytes: d.w.cwnd,
                dsr_mean_bps: None,
                rec_reductions: None,
                rec_timeouts: None,
                rec_window_holds: None,
                ecn_ce_received: None,
                ecn_reductions: self.cfg.ecn.then_some(d.stats.ecn_reductions),
            })
            .collect();
        let secs = |t: Option<SimTime>| t.map(|t| t.as_secs_f64());
        let jc: Vec<(u64, u64, u64, u64)> = ds.iter().filter_map(|d| d.cc.loss_counts()).collect();
        s.sctp = Some(SctpSummary {
            cmt: self.cfg.cmt,
            primary: p.path_name.clone(),
            failover_at_s: secs(self.failover_at),
            failed_at_s: secs(self.failed_at),
            fast_retransmits: sum(&|d| d.stats.fast_retransmits),
            fast_retransmits_without_reduction: self.stats.fast_retransmits_without_reduction,
            t3_expirations: s.timeouts,
            sacks_sent: self.rx.stats.sacks,
            sacks_received: self.stats.sacks_received,
            gap_blocks_received: self.stats.gap_blocks_received,
            dup_tsns_reported: self.stats.dup_tsns_reported,
            chunks_dropped_buffer_full: self.rx.stats.dropped_buffer_full,
            rtx_policy: self.cfg.cmt.then(|| self.cfg.rtx_policy.name().to_string()),
            sfr: self.cfg.cmt && self.cfg.sfr,
            cuc: self.cfg.cmt && self.cfg.cuc,
            dac: self.cfg.cmt && self.cfg.dac,
            fast_rtx_threshold: self.cfg.fast_rtx_threshold,
            nr_sack: self.cfg.nr_sack,
            cmt_pf: self.cfg.cmt && self.cfg.cmt_pf,
            heartbeats: sum(&|d| d.stats.heartbeats),
            destination_states: ds.iter().map(|d| d.state.name().to_string()).collect(),
            jitter_samples: jc.iter().map(|c| c.0).collect(),
            jitter_zero_samples: jc.iter().map(|c| c.1).collect(),
            congestion_losses: jc.iter().map(|c| c.2).collect(),
            wireless_losses: jc.iter().map(|c| c.3).collect(),
        });
    }
}
