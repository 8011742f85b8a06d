//! Measurements of a run: the packet trace, time series sampled at a fixed interval, and the
//! summary built at the end.

use super::flow::Flow;
use crate::metrics::{jain_index, throughput_psnr, ClassSummary, Column, FlowSummary, LinkSummary, SubflowSummary, Summary, Table};
use crate::net::Link;
use crate::scenario::Scenario;
use crate::time::{Dur, SimTime};

#[derive(Clone, Copy)]
pub(super) enum TraceKind {
    Send,
    Retx,
    Recv,
    Ack,
    QueueDrop,
    LossDrop,
    DownDrop,
    Timeout,
}

impl TraceKind {
    fn name(self) -> &'static str {
        match self {
            TraceKind::Send => "send",
            TraceKind::Retx => "retx",
            TraceKind::Recv => "recv",
            TraceKind::Ack => "ack",
            TraceKind::QueueDrop => "drop_queue",
            TraceKind::LossDrop => "drop_loss",
            TraceKind::DownDrop => "drop_down",
            TraceKind::Timeout => "timeout",
        }
    }
}

struct TraceRow {
    t: SimTime,
    flow: u32,
    sub: u8,
    kind: TraceKind,
    seq: u64,
    dsn: u64,
    len: u32,
    link: u32,
}

#[derive(Default)]
struct FlowSeries {
    t: Vec<f64>,
    flow: Vec<u32>,
    cwnd: Vec<u64>,
    in_flight: Vec<u64>,
    srtt_ms: Vec<f64>,
    rwnd: Vec<u64>,
    delivered: Vec<u64>,
    goodput: Vec<f64>,
    retransmits: Vec<u64>,
    sent: Vec<u64>,
    rcv_buffer: Vec<u64>,
    blocked_s: Vec<f64>,
    psnr_db: Vec<f64>,
    delay_ms: Vec<f64>,
    jitter_ms: Vec<f64>,
}

#[derive(Default)]
struct SubflowSeries {
    t: Vec<f64>,
    flow: Vec<u32>,
    sub: Vec<u32>,
    cwnd: Vec<u64>,
    ssthresh: Vec<f64>,
    in_flight: Vec<u64>,
    srtt_ms: Vec<f64>,
    rto_ms: Vec<f64>,
    delivered: Vec<u64>,
    goodput: Vec<f64>,
}

#[derive(Default)]
struct LinkSeries {
    t: Vec<f64>,
    link: Vec<u32>,
    queue_packets: Vec<u64>,
    queue_bytes: Vec<u64>,
    drops: Vec<u64>,
}

/// What a run produces.
pub struct Output {
    pub summary: Summary,
    /// Per-flow time series (one row per flow per sampling interval).
    pub flow_series: Table,
    /// Per-subflow time series (one row per subflow per interval; plain TCP has one subflow).
    pub subflow_series: Table,
    /// Per-link time series (forward direction).
    pub link_series: Table,
    /// Per-packet trace, if the scenario asked for one.
    pub trace: Option<Table>,
}

pub(super) struct Recorder {
    name: String,
    seed: u64,
    interval: Option<Dur>,
    flow_series: FlowSeries,
    subflow_series: SubflowSeries,
    link_series: LinkSeries,
    trace: Option<Vec<TraceRow>>,
    pub packets_delivered: u64,
    warmup: SimTime,
    /// Per flow: sum and count of the PSNR of the intervals after the warm-up.
    psnr: Vec<(f64, u32)>,
}

fn ms(d: Option<Dur>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_millis_f64())
}

impl Recorder {
    pub fn new(s: &Scenario) -> Recorder {
        Recorder {
            name: s.name.clone(),
            seed: s.seed,
            interval: s.metrics.interval,
            flow_series: FlowSeries::default(),
            subflow_series: SubflowSeries::default(),
            link_series: LinkSeries::default(),
            trace: s.metrics.trace.then(Vec::new),
            packets_delivered: 0,
            warmup: SimTime(s.metrics.warmup.0),
            psnr: Vec::new(),
        }
    }

    pub fn interval(&self) -> Option<Dur> {
        self.interval
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn trace(&mut self, t: SimTime, flow: u32, sub: u8, kind: TraceKind, seq: u64, dsn: u64, len: u32, link: u32) {
        if let Some(tr) = &mut self.trace {
            tr.push(TraceRow { t, flow, sub, kind, seq, dsn, len, link });
        }
    }

    pub fn sample(&mut self, now: SimTime, flows: &[Flow], links: &mut [Link]) {
        let Some(iv) = self.interval else { return };
        let t = now.as_secs_f64();
        let secs = iv.as_secs_f64();
        let rate = |bytes: u64| if now == SimTime::ZERO { 0.0 } else { bytes as f64 * 8.0 / secs };
        self.psnr.resize(flows.len(), (0.0, 0));
        let whole_interval_after_warmup = now.0 >= self.warmup.0 + iv.0;
        for (i, fl) in flows.iter().enumerate() {
            let s = &mut self.flow_series;
            let delivered = fl.delivered();
            s.t.push(t);
            s.flow.push(i as u32);
            s.cwnd.push(fl.subs.iter().map(|x| x.sender.cwnd()).sum());
            s.in_flight.push(fl.subs.iter().map(|x| x.sender.in_flight()).sum());
            s.srtt_ms.push(ms(fl.subs.iter().filter_map(|x| x.sender.rtt().srtt()).min()));
            let rwnd = match (&fl.mp, fl.subs.first()) {
                (Some(mp), _) => mp.right_edge.saturating_sub(mp.data_una),
                (None, Some(sub)) => sub.sender.rwnd(),
                (None, None) => 0,
            };
            s.rwnd.push(if rwnd >= u32::MAX as u64 { 0 } else { rwnd });
            s.delivered.push(delivered);
            let gp = rate(delivered - fl.delivered_at_sample);
            s.goodput.push(gp);
            match fl.media_rate_bps.filter(|_| now > SimTime::ZERO) {
                Some(r) => {
                    let p = throughput_psnr(r, gp);
                    s.psnr_db.push(p);
                    if whole_interval_after_warmup {
                        self.psnr[i].0 += p;
                        self.psnr[i].1 += 1;
                    }
                }
                None => s.psnr_db.push(f64::NAN),
            }
            s.retransmits.push(fl.subs.iter().map(|x| x.sender.stats.retransmits).sum());
            let (sum, n) = fl.interval_delay;
            s.delay_ms.push(if n == 0 { f64::NAN } else { sum as f64 / n as f64 / 1e6 });
            s.jitter_ms.push(ms(fl.jitter.value()));
            match (&fl.mp, fl.subs.first()) {
                (Some(mp), _) => {
                    s.sent.push(mp.dsn_nxt);
                    s.rcv_buffer.push(mp.rx.buffered());
                    s.blocked_s.push(mp.blocked_time(now).as_secs_f64());
                }
                (None, Some(sub)) => {
                    s.sent.push(sub.sender.snd_nxt());
                    s.rcv_buffer.push(sub.receiver.buffered());
                    s.blocked_s.push(0.0);
                }
                (None, None) => {
                    s.sent.push(fl.written());
                    s.rcv_buffer.push(0);
                    s.blocked_s.push(0.0);
                }
            }
            for (k, sub) in fl.subs.iter().enumerate() {
                let ss = &mut self.subflow_series;
                let w = sub.sender.window();
                let d = sub.receiver.rcv_nxt();
                ss.t.push(t);
                ss.flow.push(i as u32);
                ss.sub.push(k as u32);
                ss.cwnd.push(w.cwnd);
                ss.ssthresh.push(if w.ssthresh == u64::MAX { f64::INFINITY } else { w.ssthresh as f64 });
                ss.in_flight.push(sub.sender.in_flight());
                ss.srtt_ms.push(ms(sub.sender.rtt().srtt()));
                ss.rto_ms.push(sub.sender.rtt().rto().as_millis_f64());
                ss.delivered.push(d);
                ss.goodput.push(rate(d - sub.delivered_at_sample));
            }
        }
        for i in (0..links.len()).step_by(2) {
            let l = &mut links[i];
            let (qp, qb) = l.queued(now);
            let s = &mut self.link_series;
            s.t.push(t);
            s.link.push(i as u32 / 2);
            s.queue_packets.push(qp);
            s.queue_bytes.push(qb);
            s.drops.push(l.stats.queue_drops + l.stats.loss_drops + l.stats.down_drops);
        }
    }
}

/// Updates the per-interval counters after a sample (called by the simulation).
pub(super) fn after_sample(flows: &mut [Flow]) {
    for fl in flows {
        fl.delivered_at_sample = fl.delivered();
        fl.interval_delay = (0, 0);
        for s in &mut fl.subs {
            s.delivered_at_sample = s.receiver.rcv_nxt();
        }
    }
}

fn strings(names: &[String], idx: &[u32]) -> Column {
    Column::Str(idx.iter().map(|&i| names[i as usize].clone()).collect())
}

/// Builds the output of a run.
pub(super) fn finish(
    rec: Recorder,
    flows: &[Flow],
    links: &[Link],
    end: SimTime,
    warmup: SimTime,
    events: u64,
    wall_s: f64,
) -> Output {
    let dur = end.as_secs_f64();
    let mut summaries = Vec::with_capacity(flows.len());
    for fl in flows {
        let from = fl.start.max(warmup);
        let span = end.since(from).as_secs_f64();
        let per_s = |bytes: u64| if span > 0.0 { bytes as f64 * 8.0 / span } else { 0.0 };
        let msd = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
        let delivered = fl.delivered();
        let sum = |f: &dyn Fn(&super::flow::Subflow) -> u64| fl.subs.iter().map(f).sum::<u64>();
        let segments_sent = sum(&|s| s.sender.stats.segments_sent);
        let retransmits = sum(&|s| s.sender.stats.retransmits);
        let first_timeouts = sum(&|s| s.sender.stats.first_timeouts);
        let first_timeout_ns = sum(&|s| s.sender.stats.first_timeout_sum.0);
        let fast_recoveries = sum(&|s| s.sender.stats.fast_recoveries);
        // RTT over every sample of every subflow
        let (n_rtt, sum_rtt) = fl.subs.iter().fold((0u64, 0f64), |(n, t), s| {
            let r = s.sender.rtt();
            (n + r.samples(), t + r.mean_sample().map_or(0.0, |m| m.as_millis_f64() * r.samples() as f64))
        });
        let subflows = fl
            .subs
            .iter()
            .map(|s| {
                let r = s.sender.rtt();
                SubflowSummary {
                    path: s.path_name.clone(),
                    backup: s.backup,
                    goodput_bps: per_s(s.receiver.rcv_nxt() - s.delivered_at_warmup),
                    bytes_sent: s.sender.stats.bytes_sent,
                    segments_sent: s.sender.stats.segments_sent,
                    retransmits: s.sender.stats.retransmits,
                    timeouts: s.sender.stats.timeouts,
                    fast_recoveries: s.sender.stats.fast_recoveries,
                    rtt_mean_ms: msd(r.mean_sample()),
                    srtt_final_ms: msd(r.srtt()),
                    cwnd_final_bytes: s.sender.cwnd(),
                }
            })
            .collect();
        let sub0 = fl.subs.first();
        let rx = fl.mp.as_ref().map(|mp| &mp.rx).or(sub0.map(|s| &s.receiver));
        let classes = fl
            .classes
            .iter()
            .map(|c| ClassSummary {
                class: c.name.clone(),
                priority: c.priority,
                frames: c.written,
                refused: c.refused,
                delivered: c.delivered,
                late: c.late,
                delay_mean_ms: msd(c.delay.mean()),
                delay_p95_ms: msd(c.delay.quantile(0.95)),
                jitter_ms: msd(c.jitter.value()),
            })
            .collect();
        let idx = summaries.len();
        let psnr = rec.psnr.get(idx).filter(|p| p.1 > 0).map(|p| p.0 / p.1 as f64);
        summaries.push(FlowSummary {
            flow: fl.name.clone(),
            path: match &fl.udp {
                Some(u) => u.path_name.clone(),
                None => fl.subs.iter().map(|s| s.path_name.as_str()).collect::<Vec<_>>().join("+"),
            },
            cc: sub0.map_or("none", |s| s.sender.cc.name()).to_string(),
            scheduler: fl.mp.as_ref().map(|mp| mp.sched.name().to_string()),
            transport: fl.transport().to_string(),
            background: fl.background,
            goodput_bps: per_s(delivered - fl.delivered_at_warmup),
            throughput_bps: per_s(fl.bytes_sent() - fl.sent_at_warmup),
            bytes_written: fl.written(),
            bytes_delivered: delivered,
            complete: fl.total.is_some_and(|t| delivered == t),
            completion_time_s: fl.completed_at.map(|t| t.since(fl.start).as_secs_f64()),
            segments_sent,
            retransmits,
            timeouts: sum(&|s| s.sender.stats.timeouts),
            spurious_timeouts: sum(&|s| s.sender.stats.spurious_timeouts),
            loss_probes: sum(&|s| s.sender.stats.loss_probes),
            fast_recoveries,
            loss_indications: fast_recoveries + first_timeouts,
            retransmit_rate: if segments_sent > 0 { retransmits as f64 / segments_sent as f64 } else { 0.0 },
            rtt_mean_ms: (n_rtt > 0).then(|| sum_rtt / n_rtt as f64),
            rtt_min_ms: msd(fl.subs.iter().filter_map(|s| s.sender.rtt().min_rtt()).min()),
            srtt_final_ms: sub0.and_then(|s| msd(s.sender.rtt().srtt())),
            rto_final_ms: sub0.map_or(0.0, |s| s.sender.rtt().rto().as_millis_f64()),
            first_rto_mean_ms: (first_timeouts > 0).then(|| first_timeout_ns as f64 / 1e6 / first_timeouts as f64),
            delay_mean_ms: msd(fl.delay.mean()),
            delay_p50_ms: msd(fl.delay.quantile(0.5)),
            delay_p95_ms: msd(fl.delay.quantile(0.95)),
            delay_max_ms: msd(fl.delay.max()),
            jitter_ms: msd(fl.jitter.value()),
            cwnd_final_bytes: sum(&|s| s.sender.cwnd()),
            app_bytes_refused: fl.refused,
            out_of_order_segments: fl.subs.iter().map(|s| s.receiver.stats.out_of_order_segments).sum(),
            duplicate_segments: rx.map_or(0, |r| r.stats.duplicate_segments),
            max_receive_buffer_bytes: rx.map_or(0, |r| r.stats.max_buffered),
            rcv_blocked_s: fl.mp.as_ref().map_or(0.0, |mp| mp.blocked_time(end).as_secs_f64()),
            o3_max_bytes: fl.mp.as_ref().map(|mp| mp.o3_max),
            o3_mean_bytes: fl.mp.as_ref().and_then(|mp| mp.o3_mean()),
            reinjections: fl.mp.as_ref().map_or(0, |mp| mp.reinjections),
            penalties: fl.mp.as_ref().map_or(0, |mp| mp.penalties),
            subflows,
            datagrams_sent: fl.udp.as_ref().map(|u| u.datagrams_sent),
            datagrams_received: fl.udp.as_ref().map(|u| u.datagrams_received),
            classes,
            psnr_db: psnr,
        });
    }
    let link_summaries = links
        .iter()
        .enumerate()
        .map(|(i, l)| LinkSummary {
            link: l.name.clone(),
            direction: if i % 2 == 0 { "forward" } else { "reverse" }.to_string(),
            packets_offered: l.stats.offered,
            packets_delivered: l.stats.delivered,
            queue_drops: l.stats.queue_drops,
            loss_drops: l.stats.loss_drops,
            down_drops: l.stats.down_drops,
            utilization: if dur > 0.0 { (l.stats.busy.as_secs_f64() / dur).min(1.0) } else { 0.0 },
        })
        .collect();
    let goodputs: Vec<f64> = summaries.iter().filter(|f| !f.background).map(|f: &FlowSummary| f.goodput_bps).collect();
    let summary = Summary {
        scenario: rec.name.clone(),
        seed: rec.seed,
        duration_s: dur,
        warmup_s: warmup.as_secs_f64(),
        jain_index: jain_index(&goodputs),
        flows: summaries,
        links: link_summaries,
        events,
        packets_delivered: rec.packets_delivered,
        wall_s,
    };
    let flow_names: Vec<String> = flows.iter().map(|f| f.name.clone()).collect();
    let link_names: Vec<String> = links.iter().step_by(2).map(|l| l.name.clone()).collect();
    let fs = rec.flow_series;
    let flow_series = Table {
        columns: vec![
            ("time_s".into(), Column::F64(fs.t)),
            ("flow".into(), strings(&flow_names, &fs.flow)),
            ("cwnd_bytes".into(), Column::U64(fs.cwnd)),
            ("in_flight_bytes".into(), Column::U64(fs.in_flight)),
            ("srtt_ms".into(), Column::F64(fs.srtt_ms)),
            ("rwnd_bytes".into(), Column::U64(fs.rwnd)),
            ("delivered_bytes".into(), Column::U64(fs.delivered)),
            ("goodput_bps".into(), Column::F64(fs.goodput)),
            ("retransmits".into(), Column::U64(fs.retransmits)),
            ("sent_bytes".into(), Column::U64(fs.sent)),
            ("rcv_buffer_bytes".into(), Column::U64(fs.rcv_buffer)),
            ("blocked_s".into(), Column::F64(fs.blocked_s)),
            ("psnr_db".into(), Column::F64(fs.psnr_db)),
            ("delay_ms".into(), Column::F64(fs.delay_ms)),
            ("jitter_ms".into(), Column::F64(fs.jitter_ms)),
        ],
    };
    let ss = rec.subflow_series;
    let sub_paths: Vec<Vec<String>> = flows
        .iter()
        .map(|f| match &f.udp {
            Some(u) => vec![u.path_name.clone()],
            None => f.subs.iter().map(|s| s.path_name.clone()).collect(),
        })
        .collect();
    let subflow_series = Table {
        columns: vec![
            ("time_s".into(), Column::F64(ss.t)),
            ("flow".into(), strings(&flow_names, &ss.flow)),
            (
                "path".into(),
                Column::Str(ss.flow.iter().zip(&ss.sub).map(|(&f, &k)| sub_paths[f as usize][k as usize].clone()).collect()),
            ),
            ("cwnd_bytes".into(), Column::U64(ss.cwnd)),
            ("ssthresh_bytes".into(), Column::F64(ss.ssthresh)),
            ("in_flight_bytes".into(), Column::U64(ss.in_flight)),
            ("srtt_ms".into(), Column::F64(ss.srtt_ms)),
            ("rto_ms".into(), Column::F64(ss.rto_ms)),
            ("delivered_bytes".into(), Column::U64(ss.delivered)),
            ("goodput_bps".into(), Column::F64(ss.goodput)),
        ],
    };
    let ls = rec.link_series;
    let link_series = Table {
        columns: vec![
            ("time_s".into(), Column::F64(ls.t)),
            ("link".into(), strings(&link_names, &ls.link)),
            ("queue_packets".into(), Column::U64(ls.queue_packets)),
            ("queue_bytes".into(), Column::U64(ls.queue_bytes)),
            ("drops".into(), Column::U64(ls.drops)),
        ],
    };
    let all_links: Vec<String> =
        links.iter().enumerate().map(|(i, l)| if i % 2 == 0 { l.name.clone() } else { format!("{}.reverse", l.name) }).collect();
    let trace = rec.trace.map(|rows| Table {
        columns: vec![
            ("time_s".into(), Column::F64(rows.iter().map(|r| r.t.as_secs_f64()).collect())),
            ("flow".into(), Column::Str(rows.iter().map(|r| flow_names[r.flow as usize].clone()).collect())),
            (
                "path".into(),
                Column::Str(rows.iter().map(|r| sub_paths[r.flow as usize][r.sub as usize].clone()).collect()),
            ),
            ("event".into(), Column::Str(rows.iter().map(|r| r.kind.name().to_string()).collect())),
            ("seq".into(), Column::U64(rows.iter().map(|r| r.seq).collect())),
            ("dsn".into(), Column::U64(rows.iter().map(|r| r.dsn).collect())),
            ("len".into(), Column::U64(rows.iter().map(|r| r.len as u64).collect())),
            (
                "link".into(),
                Column::Str(rows.iter().map(|r| if r.link == u32::MAX { String::new() } else { all_links[r.link as usize].clone() }).collect()),
            ),
        ],
    });
    Output { summary, flow_series, subflow_series, link_series, trace }
}
