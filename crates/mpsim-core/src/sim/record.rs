//! Measurements of a run: the packet trace, time series sampled at a fixed interval from the
//! snapshots connections give, and the summary built at the end.

use super::flow::Flow;
use crate::metrics::pcap::PcapFile;
use crate::metrics::{
    jain_index, throughput_psnr, trace_table, AqmSummary, ClassSummary, Column, FlowColumns, FlowRow, FlowSummary, LinkColumns, LinkRow,
    LinkSummary, StreamedTable, SubflowColumns, SubflowRow, Summary, Table, TableSink, TraceKind, TraceRow,
};
use crate::net::Link;
use crate::scenario::Scenario;
use crate::time::{Dur, SimTime};

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
    /// True when the series and the trace went to a sink in chunks during the run (see
    /// `Simulation::stream`): the tables above are then empty.
    pub streamed: bool,
    /// One packet capture per flow, if the scenario asked for them (`[metrics] pcap`).
    pub pcap: Vec<PcapFile>,
    /// One qlog trace (JSON-SEQ) per QUIC flow, with the flow's name, if the scenario asked
    /// for them (`[metrics] qlog`).
    pub qlog: Vec<(String, String)>,
}

/// Bytes delivered at some instant, per flow and per subflow, to measure from.
#[derive(Default)]
struct Marks {
    delivered: Vec<u64>,
    sent: Vec<u64>,
    /// Bytes delivered by way of each path (subflow, or SCTP destination) of each flow.
    sub_delivered: Vec<Vec<u64>>,
    /// MPTCP-rec: the integral of each path's advertised rate (bits), NaN for other flows.
    sub_dsr: Vec<Vec<f64>>,
    /// Sum (ns) and count of each flow's write delays: the delay series shows the mean of
    /// those recorded since the last sample.
    delay: Vec<(u128, u64)>,
}

impl Marks {
    fn take(flows: &[Flow], now: SimTime) -> Marks {
        let dsr =
            |f: &Flow| (0..f.conn.path_count()).map(|k| f.conn.rec_path(k, now).map_or(f64::NAN, |r| r.advertised_integral)).collect();
        let paths = |f: &Flow| (0..f.conn.path_count()).map(|k| f.conn.path_sample(k, now).delivered).collect();
        Marks {
            sub_dsr: flows.iter().map(dsr).collect(),
            delivered: flows.iter().map(|f| f.progress().delivered).collect(),
            sent: flows.iter().map(|f| f.progress().bytes_sent).collect(),
            sub_delivered: flows.iter().map(paths).collect(),
            delay: flows.iter().map(|f| f.delay.sum_and_count()).collect(),
        }
    }
}

/// Index columns of a series: sampling time, flow or link, and subflow.
#[derive(Default)]
struct Index {
    t: Vec<f64>,
    of: Vec<u32>,
    sub: Vec<u32>,
}

/// The names the tables give to flows, subflows and links, which the rows keep as indices.
struct Names {
    flows: Vec<String>,
    /// Forward direction of each link.
    links: Vec<String>,
    /// `sub_paths[flow][sub]`: the path of a subflow (or of an SCTP destination).
    sub_paths: Vec<Vec<String>>,
    /// Every directed link (2i forward, 2i+1 reverse), as the trace names them.
    directed: Vec<String>,
}

impl Names {
    fn new(flows: &[Flow], links: &[Link]) -> Names {
        Names {
            flows: flows.iter().map(|f| f.name.clone()).collect(),
            links: links.iter().step_by(2).map(|l| l.name.clone()).collect(),
            sub_paths: flows.iter().map(|f| f.conn.path_names()).collect(),
            directed: links
                .iter()
                .enumerate()
                .map(|(i, l)| if i % 2 == 0 { l.name.clone() } else { format!("{}.reverse", l.name) })
                .collect(),
        }
    }

    fn column(names: &[String], idx: &[u32]) -> Column {
        Column::Str(idx.iter().map(|&i| names[i as usize].clone()).collect())
    }

    fn flow_table(&self, i: Index, series: FlowColumns) -> Table {
        let mut columns = vec![("time_s".into(), Column::F64(i.t)), ("flow".into(), Names::column(&self.flows, &i.of))];
        columns.extend(series.into_columns());
        Table { columns }
    }

    fn subflow_table(&self, i: Index, series: SubflowColumns) -> Table {
        let paths = i.of.iter().zip(&i.sub).map(|(&f, &k)| self.sub_paths[f as usize][k as usize].clone()).collect();
        let mut columns = vec![
            ("time_s".into(), Column::F64(i.t)),
            ("flow".into(), Names::column(&self.flows, &i.of)),
            ("path".into(), Column::Str(paths)),
        ];
        columns.extend(series.into_columns());
        Table { columns }
    }

    fn link_table(&self, i: Index, series: LinkColumns) -> Table {
        let mut columns = vec![("time_s".into(), Column::F64(i.t)), ("link".into(), Names::column(&self.links, &i.of))];
        columns.extend(series.into_columns());
        Table { columns }
    }

    fn trace_table(&self, rows: &[TraceRow]) -> Table {
        trace_table(rows, &self.flows, &self.sub_paths, &self.directed)
    }
}

/// Where the tables go when they stream, and what has gone so far.
struct Stream {
    sink: TableSink,
    chunk_rows: usize,
    names: Names,
    /// Per table: whether a chunk has been handed over.
    sent: [bool; 4],
}

impl Stream {
    fn send(&mut self, which: StreamedTable, t: Table) {
        self.sent[which.index()] = true;
        (self.sink)(which, t);
    }
}

pub(super) struct Recorder {
    name: String,
    seed: u64,
    interval: Option<Dur>,
    flow_index: Index,
    flow_series: FlowColumns,
    subflow_index: Index,
    subflow_series: SubflowColumns,
    link_index: Index,
    link_series: LinkColumns,
    trace: Option<Vec<TraceRow>>,
    /// Trace rows that make a chunk (never reached unless the tables stream).
    trace_chunk: usize,
    stream: Option<Stream>,
    pub packets_delivered: u64,
    warmup: SimTime,
    /// Taken at the warm-up (zero before it) and at the last sample.
    at_warmup: Option<Marks>,
    at_sample: Option<Marks>,
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
            flow_index: Index::default(),
            flow_series: FlowColumns::default(),
            subflow_index: Index::default(),
            subflow_series: SubflowColumns::default(),
            link_index: Index::default(),
            link_series: LinkColumns::default(),
            trace: s.metrics.trace.then(Vec::new),
            trace_chunk: usize::MAX,
            stream: None,
            packets_delivered: 0,
            warmup: SimTime(s.metrics.warmup.0),
            at_warmup: None,
            at_sample: None,
            psnr: Vec::new(),
        }
    }

    pub fn interval(&self) -> Option<Dur> {
        self.interval
    }

    /// Hands the series and the trace to `sink` in chunks of `chunk_rows` rows or more as
    /// they grow, and the rest at the end, instead of keeping them for the output.
    pub fn stream_to(&mut self, sink: TableSink, chunk_rows: usize, flows: &[Flow], links: &[Link]) {
        let chunk_rows = chunk_rows.max(1);
        self.trace_chunk = chunk_rows;
        self.stream = Some(Stream { sink, chunk_rows, names: Names::new(flows, links), sent: [false; 4] });
    }

    /// Hands over the trace rows recorded so far.
    #[cold]
    #[inline(never)]
    fn flush_trace(&mut self) {
        if let (Some(st), Some(rows)) = (&mut self.stream, &mut self.trace) {
            let t = st.names.trace_table(rows);
            rows.clear();
            st.send(StreamedTable::Trace, t);
        }
    }

    /// Hands over each series that holds a chunk's worth of rows (every series, and the
    /// trace, at the end of the run, also when they are shorter or empty and nothing went).
    fn flush_series(&mut self, end: bool) {
        let Some(st) = &mut self.stream else { return };
        let due = |st: &Stream, which: StreamedTable, rows: usize| rows >= st.chunk_rows || (end && (rows > 0 || !st.sent[which.index()]));
        if due(st, StreamedTable::FlowSeries, self.flow_index.t.len()) {
            let t = st.names.flow_table(std::mem::take(&mut self.flow_index), std::mem::take(&mut self.flow_series));
            st.send(StreamedTable::FlowSeries, t);
        }
        if due(st, StreamedTable::SubflowSeries, self.subflow_index.t.len()) {
            let t = st.names.subflow_table(std::mem::take(&mut self.subflow_index), std::mem::take(&mut self.subflow_series));
            st.send(StreamedTable::SubflowSeries, t);
        }
        if due(st, StreamedTable::LinkSeries, self.link_index.t.len()) {
            let t = st.names.link_table(std::mem::take(&mut self.link_index), std::mem::take(&mut self.link_series));
            st.send(StreamedTable::LinkSeries, t);
        }
        // the trace hands over its own full chunks as it grows
        let trace_due = end && self.trace.as_ref().is_some_and(|rows| due(st, StreamedTable::Trace, rows.len()));
        if trace_due {
            self.flush_trace();
        }
    }

    /// Whether packets are traced (callers skip preparing a row otherwise).
    #[inline]
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn trace(&mut self, t: SimTime, flow: u32, sub: u8, kind: TraceKind, seq: u64, dsn: u64, len: u32, link: u32) {
        if let Some(tr) = &mut self.trace {
            tr.push(TraceRow { t, flow, sub, kind, seq, dsn, len, link });
            if tr.len() >= self.trace_chunk {
                self.flush_trace();
            }
        }
    }

    /// The warm-up ends: goodputs are measured from here.
    pub fn mark_warmup(&mut self, now: SimTime, flows: &[Flow]) {
        self.at_warmup = Some(Marks::take(flows, now));
    }

    /// Records one sample of every series, then starts the next interval.
    pub fn sample(&mut self, now: SimTime, flows: &mut [Flow], links: &mut [Link]) {
        let Some(iv) = self.interval else { return };
        let t = now.as_secs_f64();
        let secs = iv.as_secs_f64();
        let rate = |bytes: u64| if now == SimTime::ZERO { 0.0 } else { bytes as f64 * 8.0 / secs };
        self.psnr.resize(flows.len(), (0.0, 0));
        let whole_interval_after_warmup = now.0 >= self.warmup.0 + iv.0;
        let last = self.at_sample.take().unwrap_or_default();
        for (i, fl) in flows.iter().enumerate() {
            let snap = fl.conn.snapshot(now);
            let delivered = fl.progress().delivered;
            let gp = rate(delivered - last.delivered.get(i).copied().unwrap_or(0));
            let psnr_db = match fl.media_rate_bps.filter(|_| now > SimTime::ZERO) {
                Some(r) => {
                    let p = throughput_psnr(r, gp);
                    if whole_interval_after_warmup {
                        self.psnr[i].0 += p;
                        self.psnr[i].1 += 1;
                    }
                    p
                }
                None => f64::NAN,
            };
            let ((sum, n), (sum0, n0)) = (fl.delay.sum_and_count(), last.delay.get(i).copied().unwrap_or_default());
            let (sum, n) = (sum - sum0, n - n0);
            self.flow_index.t.push(t);
            self.flow_index.of.push(i as u32);
            self.flow_series.push(FlowRow {
                cwnd: snap.cwnd,
                in_flight: snap.in_flight,
                srtt_ms: ms(snap.srtt),
                rwnd: snap.rwnd,
                delivered,
                goodput: gp,
                retransmits: snap.retransmits,
                sent: snap.sent,
                rcv_buffer: snap.rcv_buffer,
                blocked_s: snap.blocked.as_secs_f64(),
                psnr_db,
                delay_ms: if n == 0 { f64::NAN } else { sum as f64 / n as f64 / 1e6 },
                jitter_ms: ms(fl.jitter.value()),
                jitter_ratio: snap.jitter.map_or(f64::NAN, |j| j.0),
                jitter_threshold: snap.jitter.map_or(f64::NAN, |j| j.1),
            });
            // one row per path: a TCP subflow, or an SCTP destination (its bytes counted as
            // they arrive at the receiver by way of it)
            for k in 0..fl.conn.path_count() {
                let p = fl.conn.path_sample(k, now);
                let before = last.sub_delivered.get(i).and_then(|v| v.get(k)).copied().unwrap_or(0);
                self.subflow_index.t.push(t);
                self.subflow_index.of.push(i as u32);
                self.subflow_index.sub.push(k as u32);
                self.subflow_series.push(SubflowRow {
                    cwnd: p.cwnd,
                    ssthresh: if p.ssthresh == u64::MAX { f64::INFINITY } else { p.ssthresh as f64 },
                    in_flight: p.in_flight,
                    srtt_ms: ms(p.srtt),
                    rto_ms: p.rto.as_millis_f64(),
                    delivered: p.delivered,
                    goodput: rate(p.delivered - before),
                    dsr: p.rec.map_or(f64::NAN, |r| r.advertised_bps),
                    listed: p.rec.map_or(f64::NAN, |r| if r.listed { 1.0 } else { 0.0 }),
                    emu_window: p.rec.map_or(f64::NAN, |r| r.window_pkts),
                    bbr_bw: p.model.map_or(f64::NAN, |m| m.bw_bps),
                    bbr_min_rtt_ms: p.model.map_or(f64::NAN, |m| ms(m.min_rtt)),
                    bbr_pacing_gain: p.model.map_or(f64::NAN, |m| m.pacing_gain),
                    bbr_cwnd_gain: p.model.map_or(f64::NAN, |m| m.cwnd_gain),
                });
            }
        }
        for i in (0..links.len()).step_by(2) {
            let l = &mut links[i];
            let (qp, qb) = l.queued(now);
            self.link_index.t.push(t);
            self.link_index.of.push(i as u32 / 2);
            self.link_series.push(LinkRow {
                queue_packets: qp,
                queue_bytes: qb,
                drops: l.stats.queue_drops + l.stats.loss_drops + l.stats.down_drops,
            });
        }
        self.at_sample = Some(Marks::take(flows, now));
        self.flush_series(false);
    }

    /// Builds the output of a run.
    pub fn finish(mut self, flows: &[Flow], links: &[Link], end: SimTime, warmup: SimTime, events: u64, wall_s: f64) -> Output {
        let dur = end.as_secs_f64();
        let zero = Marks::default();
        let warm = self.at_warmup.as_ref().unwrap_or(&zero);
        let mut summaries = Vec::with_capacity(flows.len());
        for (i, fl) in flows.iter().enumerate() {
            let from = fl.start.max(warmup);
            let span = end.since(from).as_secs_f64();
            let per_s = |bytes: u64| if span > 0.0 { bytes as f64 * 8.0 / span } else { 0.0 };
            let msd = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
            let p = fl.progress();
            // per subflow, or per destination of an SCTP association, bytes at the warm-up
            let sub_warm = warm.sub_delivered.get(i);
            let mut s = FlowSummary::default();
            fl.conn.summarize(&mut s, end, &|k, d| per_s(d - sub_warm.and_then(|v| v.get(k)).copied().unwrap_or(0)));
            s.flow = fl.name.clone();
            s.background = fl.background;
            s.goodput_bps = per_s(p.delivered - warm.delivered.get(i).copied().unwrap_or(0));
            s.throughput_bps = per_s(p.bytes_sent - warm.sent.get(i).copied().unwrap_or(0));
            s.bytes_written = p.written;
            s.bytes_delivered = p.delivered;
            s.complete = fl.total.is_some_and(|t| p.delivered == t);
            s.completion_time_s = fl.completed_at.map(|t| t.since(fl.start).as_secs_f64());
            s.delay_mean_ms = msd(fl.delay.mean());
            s.delay_p50_ms = msd(fl.delay.quantile(0.5));
            s.delay_p95_ms = msd(fl.delay.quantile(0.95));
            s.delay_max_ms = msd(fl.delay.max());
            s.jitter_ms = msd(fl.jitter.value());
            s.app_bytes_refused = fl.refused;
            s.classes = fl
                .classes
                .iter()
                .enumerate()
                .map(|(k, c)| ClassSummary {
                    class: c.name.clone(),
                    priority: c.priority,
                    frames: c.written,
                    refused: c.refused,
                    queued: fl.queued(k),
                    delivered: c.delivered,
                    late: c.late,
                    delay_mean_ms: msd(c.delay.mean()),
                    delay_p95_ms: msd(c.delay.quantile(0.95)),
                    jitter_ms: msd(c.jitter.value()),
                })
                .collect();
            s.psnr_db = self.psnr.get(i).filter(|p| p.1 > 0).map(|p| p.0 / p.1 as f64);
            for (k, sub) in s.subflows.iter_mut().enumerate() {
                if let Some(r) = fl.conn.rec_path(k, end) {
                    let before = warm.sub_dsr.get(i).and_then(|v| v.get(k)).copied().filter(|x| !x.is_nan()).unwrap_or(0.0);
                    sub.dsr_mean_bps = (span > 0.0).then(|| (r.advertised_integral - before) / span);
                    (sub.rec_reductions, sub.rec_timeouts) = (Some(r.reductions), Some(r.timeouts));
                    sub.rec_window_holds = Some(r.window_holds);
                }
            }
            summaries.push(s);
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
                cw_marks: l.congestion_warning().map(|_| l.stats.cw_marks),
                aqm: l.aqm().map(|name| {
                    let s = l.sojourn().expect("a managed link");
                    let ms = |d: Option<crate::time::Dur>| d.map_or(0.0, |d| d.as_millis_f64());
                    AqmSummary {
                        aqm: name.to_string(),
                        aqm_drops: l.stats.aqm_drops,
                        aqm_marks: l.stats.aqm_marks,
                        queued_at_end: l.backlog().0,
                        queue_delay_mean_ms: ms(s.mean()),
                        queue_delay_p95_ms: ms(s.quantile(0.95)),
                    }
                }),
            })
            .collect();
        let goodputs: Vec<f64> = summaries.iter().filter(|f| !f.background).map(|f: &FlowSummary| f.goodput_bps).collect();
        let summary = Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: dur,
            warmup_s: warmup.as_secs_f64(),
            jain_index: jain_index(&goodputs),
            flows: summaries,
            flows_omitted: None,
            links: link_summaries,
            events,
            packets_delivered: self.packets_delivered,
            wall_s,
        };
        if self.stream.is_some() {
            self.flush_series(true);
            let trace = self.trace.as_ref().map(|_| Table::default());
            let empty = Table::default();
            return Output {
                summary,
                flow_series: empty.clone(),
                subflow_series: empty.clone(),
                link_series: empty,
                trace,
                streamed: true,
                pcap: Vec::new(),
                qlog: Vec::new(),
            };
        }
        let names = Names::new(flows, links);
        let flow_series = names.flow_table(self.flow_index, self.flow_series);
        let subflow_series = names.subflow_table(self.subflow_index, self.subflow_series);
        let link_series = names.link_table(self.link_index, self.link_series);
        let trace = self.trace.map(|rows| names.trace_table(&rows));
        Output { summary, flow_series, subflow_series, link_series, trace, streamed: false, pcap: Vec::new(), qlog: Vec::new() }
    }
}
