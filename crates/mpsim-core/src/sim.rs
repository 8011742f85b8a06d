//! The simulation: builds links, routes and flows from a scenario and runs the event loop.
//!
//! Every component is sans-IO; this module is the only place that owns time. It moves packets
//! between links and endpoints, asks senders what to transmit, delivers ACKs and data, keeps
//! one pending timer event per flow and purpose (rescheduling lazily when a deadline moves
//! later), and records metrics.

use crate::app::App;
use crate::cc::Controller;
use crate::engine::EventQueue;
use crate::metrics::{jain_index, Column, DelayStats, FlowSummary, Jitter, LinkSummary, Summary, Table};
use crate::net::{AckHeader, DataHeader, Fate, Header, Link, LossProcess, Packet, PacketArena, PacketId, Route};
use crate::rng::Rng;
use crate::scenario::{AppSpec, Scenario};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{ReceiverConfig, SenderConfig, TcpReceiver, TcpSender};
use std::collections::VecDeque;
use std::time::Instant;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// The packet at the head of this link's pipe reaches the far end.
    LinkHead(u32),
    Rto(u32),
    DelAck(u32),
    AppTick(u32),
    FlowStart(u32),
    FlowStop(u32),
    /// Scenario link index: both directions go down or up.
    LinkDown(u32),
    LinkUp(u32),
    Warmup,
    Sample,
}

struct Flow {
    name: String,
    path_name: String,
    fwd: u32,
    rev: u32,
    header: u32,
    mss: u32,
    snd_buf: u64,
    sender: TcpSender,
    receiver: TcpReceiver,
    app: App,
    start: SimTime,
    active: bool,
    total: Option<u64>,
    /// (end sequence, time written) of application writes not yet delivered.
    writes: VecDeque<(u64, SimTime)>,
    rto_pending: Option<SimTime>,
    delack_pending: Option<SimTime>,
    delay: DelayStats,
    jitter: Jitter,
    refused: u64,
    completed_at: Option<SimTime>,
    delivered_at_warmup: u64,
    sent_at_warmup: u64,
    delivered_at_sample: u64,
}

#[derive(Clone, Copy)]
enum TraceKind {
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
    kind: TraceKind,
    seq: u64,
    len: u32,
    link: u32,
}

#[derive(Default)]
struct FlowSeries {
    t: Vec<f64>,
    flow: Vec<u32>,
    cwnd: Vec<u64>,
    ssthresh: Vec<f64>,
    in_flight: Vec<u64>,
    srtt_ms: Vec<f64>,
    rto_ms: Vec<f64>,
    rwnd: Vec<u64>,
    delivered: Vec<u64>,
    goodput: Vec<f64>,
    retransmits: Vec<u64>,
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
    /// Per-link time series (forward direction).
    pub link_series: Table,
    /// Per-packet trace, if the scenario asked for one.
    pub trace: Option<Table>,
}

/// A simulation built from a scenario, ready to run.
pub struct Simulation {
    now: SimTime,
    end: SimTime,
    warmup: SimTime,
    seed: u64,
    name: String,
    queue: EventQueue<Event>,
    arena: PacketArena,
    /// Link 2i carries scenario link i forward, 2i+1 carries it in reverse.
    links: Vec<Link>,
    routes: Vec<Route>,
    flows: Vec<Flow>,
    interval: Option<Dur>,
    flow_series: FlowSeries,
    link_series: LinkSeries,
    trace: Option<Vec<TraceRow>>,
    packets_delivered: u64,
    check: bool,
}

impl Simulation {
    pub fn new(s: &Scenario) -> Simulation {
        let mut links = Vec::with_capacity(2 * s.links.len());
        for l in &s.links {
            for (dir, loss) in [("fwd", &l.loss), ("rev", &l.reverse_loss)] {
                let rng = Rng::substream(s.seed, &format!("link/{}/{dir}/loss", l.name));
                links.push(Link::new(l.name.clone(), l.rate_bps, l.delay, l.queue, LossProcess::new(loss.clone(), rng)));
            }
        }
        let mut routes = Vec::with_capacity(2 * s.paths.len());
        for p in &s.paths {
            routes.push(Route { links: p.links.iter().map(|&i| 2 * i as u32).collect() });
            routes.push(Route { links: p.links.iter().rev().map(|&i| 2 * i as u32 + 1).collect() });
        }
        let mut queue = EventQueue::new();
        let mut flows = Vec::with_capacity(s.flows.len());
        for (i, f) in s.flows.iter().enumerate() {
            let cfg = SenderConfig {
                mss: f.tcp.mss,
                initial_window: f.tcp.initial_window,
                min_rto: f.tcp.min_rto,
                max_rto: f.tcp.max_rto,
                initial_rto: f.tcp.initial_rto,
                ignore_rwnd: false,
            };
            let cc = Controller::by_name(&f.cc).expect("validated controller name");
            let rcfg = ReceiverConfig {
                buffer: f.tcp.rcv_buf,
                ack_every: if f.tcp.delayed_ack { 2 } else { 1 },
                delack_timeout: f.tcp.delack_timeout,
            };
            flows.push(Flow {
                name: f.name.clone(),
                path_name: s.paths[f.path].name.clone(),
                fwd: 2 * f.path as u32,
                rev: 2 * f.path as u32 + 1,
                header: f.tcp.header,
                mss: f.tcp.mss,
                snd_buf: f.tcp.snd_buf,
                sender: TcpSender::new(&cfg, cc),
                receiver: TcpReceiver::new(rcfg),
                app: App::from_spec(&f.app),
                start: f.start,
                active: false,
                total: match f.app {
                    AppSpec::Bulk { bytes } => bytes,
                    AppSpec::Cbr { .. } => None,
                },
                writes: VecDeque::new(),
                rto_pending: None,
                delack_pending: None,
                delay: DelayStats::default(),
                jitter: Jitter::default(),
                refused: 0,
                completed_at: None,
                delivered_at_warmup: 0,
                sent_at_warmup: 0,
                delivered_at_sample: 0,
            });
            queue.push(f.start, Event::FlowStart(i as u32));
            if let Some(stop) = f.stop {
                queue.push(stop, Event::FlowStop(i as u32));
            }
        }
        for (i, l) in s.links.iter().enumerate() {
            for &(down, up) in &l.outages {
                queue.push(down, Event::LinkDown(i as u32));
                queue.push(up, Event::LinkUp(i as u32));
            }
        }
        // Cut-through: a link that only one route uses, in one position, receives that route's
        // packets in the order they leave the previous link, so a packet can be offered to it
        // as soon as its departure from the previous link is known, saving an event per hop.
        // Links with outages are excluded, in both roles, so a failure never misses a packet.
        let mut users = vec![0u32; links.len()];
        for r in &routes {
            for &l in &r.links {
                users[l as usize] += 1;
            }
        }
        let has_outage = |l: u32| !s.links[l as usize / 2].outages.is_empty();
        for r in &routes {
            for w in r.links.windows(2) {
                let (prev, next) = (w[0], w[1]);
                if users[next as usize] == 1 && !has_outage(prev) && !has_outage(next) {
                    links[next as usize].cut_through = true;
                }
            }
        }
        let warmup = SimTime(s.metrics.warmup.0);
        if warmup > SimTime::ZERO {
            queue.push(warmup, Event::Warmup);
        }
        if s.metrics.interval.is_some() {
            queue.push(SimTime::ZERO, Event::Sample);
        }
        Simulation {
            now: SimTime::ZERO,
            end: SimTime(s.duration.0),
            warmup,
            seed: s.seed,
            name: s.name.clone(),
            queue,
            arena: PacketArena::default(),
            links,
            routes,
            flows,
            interval: s.metrics.interval,
            flow_series: FlowSeries::default(),
            link_series: LinkSeries::default(),
            trace: s.metrics.trace.then(Vec::new),
            packets_delivered: 0,
            check: false,
        }
    }

    /// Replaces the congestion controller of flow `flow` (by name), for example with a
    /// `Controller::Custom` implemented outside this crate. Call before `run`.
    pub fn with_controller(mut self, flow: &str, cc: Controller) -> Result<Simulation, String> {
        let f = self.flows.iter_mut().find(|f| f.name == flow).ok_or_else(|| format!("no flow named '{flow}'"))?;
        f.sender.cc = cc;
        Ok(self)
    }

    /// Turns cut-through off: every hop gets its own event (for tests that compare both).
    pub fn without_cut_through(mut self) -> Simulation {
        for l in &mut self.links {
            l.cut_through = false;
        }
        self
    }

    /// Checks protocol invariants after every step and panics on a violation (for tests).
    pub fn with_invariant_checks(mut self, on: bool) -> Simulation {
        self.check = on;
        self
    }

    /// Runs to the end.
    pub fn run(self) -> Output {
        self.run_with_progress(|_| true)
    }

    /// Runs to the end, calling `progress(fraction_done)` now and then; if it returns false
    /// the run stops early (the summary then covers the time simulated so far).
    pub fn run_with_progress(mut self, mut progress: impl FnMut(f64) -> bool) -> Output {
        let wall = Instant::now();
        let mut n = 0u64;
        let mut stopped = false;
        while let Some(t) = self.queue.peek_time() {
            if t > self.end {
                break;
            }
            let (t, ev) = self.queue.pop().expect("peeked");
            self.now = t;
            self.dispatch(ev);
            n += 1;
            if n & 0xF_FFFF == 0 && !progress(t.0 as f64 / self.end.0 as f64) {
                self.end = self.now;
                stopped = true;
                break;
            }
        }
        if !stopped {
            progress(1.0);
        }
        self.now = self.end;
        self.finish(wall.elapsed().as_secs_f64())
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::LinkHead(l) => self.on_link_head(l),
            Event::Rto(f) => self.on_rto_event(f as usize),
            Event::DelAck(f) => self.on_delack_event(f as usize),
            Event::AppTick(f) => self.on_app_tick(f as usize),
            Event::FlowStart(f) => self.on_flow_start(f as usize),
            Event::FlowStop(f) => self.flows[f as usize].active = false,
            Event::LinkDown(l) => {
                let now = self.now;
                for dir in [2 * l, 2 * l + 1] {
                    for id in self.links[dir as usize].set_down(now) {
                        let p = *self.arena.get(id);
                        self.arena.free(id);
                        self.trace(p.flow, TraceKind::DownDrop, 0, p.size, dir);
                    }
                }
            }
            Event::LinkUp(l) => {
                self.links[2 * l as usize].set_up();
                self.links[2 * l as usize + 1].set_up();
            }
            Event::Warmup => {
                for f in &mut self.flows {
                    f.delivered_at_warmup = f.receiver.rcv_nxt();
                    f.sent_at_warmup = f.sender.stats.bytes_sent;
                }
            }
            Event::Sample => self.on_sample(),
        }
    }

    // ----- packets -----

    fn trace(&mut self, flow: u32, kind: TraceKind, seq: u64, len: u32, link: u32) {
        if let Some(tr) = &mut self.trace {
            tr.push(TraceRow { t: self.now, flow, kind, seq, len, link });
        }
    }

    /// Offers packet `id` to the link of its current hop, and on through cut-through links.
    fn forward(&mut self, id: PacketId) {
        let mut at = self.now;
        let (size, flow, route) = {
            let p = self.arena.get(id);
            (p.size, p.flow, p.route as usize)
        };
        loop {
            let hop = self.arena.get(id).hop as usize;
            let links = &self.routes[route].links;
            let link = links[hop];
            let next = links.get(hop + 1).copied();
            let l = &mut self.links[link as usize];
            let fate = l.offer_at(self.now, at, size);
            if let Fate::Arrives(t) = fate {
                // (a packet that would enter after the run ends waits in the pipe instead, so
                // link counters cover the run exactly; drops on a cut-through link are counted
                // when the packet leaves the previous link, up to one hop early)
                if t <= self.end && next.is_some_and(|n| self.links[n as usize].cut_through) {
                    self.arena.get_mut(id).hop += 1;
                    at = t;
                    continue;
                }
                let l = &mut self.links[link as usize];
                if l.pipe.is_empty() {
                    self.queue.push(t, Event::LinkHead(link));
                }
                l.pipe.push_back((t, id));
                return;
            }
            self.drop_packet(id, fate, link, at, flow, size);
            return;
        }
    }

    fn drop_packet(&mut self, id: PacketId, fate: Fate, link: u32, at: SimTime, flow: u32, size: u32) {
        let kind = match fate {
            Fate::QueueDrop => TraceKind::QueueDrop,
            Fate::Lost => TraceKind::LossDrop,
            Fate::Down | Fate::Arrives(_) => TraceKind::DownDrop,
        };
        let seq = match self.arena.get(id).header {
            Header::TcpData(h) => h.seq,
            Header::TcpAck(h) => h.ack,
        };
        self.arena.free(id);
        if let Some(tr) = &mut self.trace {
            tr.push(TraceRow { t: at, flow, kind, seq, len: size, link });
        }
    }

    fn on_link_head(&mut self, link: u32) {
        let l = &mut self.links[link as usize];
        // a link that went down and came back may leave a stale event behind
        let Some(&(t, id)) = l.pipe.front() else { return };
        if t != self.now {
            return;
        }
        l.pipe.pop_front();
        if let Some(&(next, _)) = l.pipe.front() {
            self.queue.push(next, Event::LinkHead(link));
        }
        let p = self.arena.get_mut(id);
        if (p.hop as usize) + 1 < self.routes[p.route as usize].links.len() {
            p.hop += 1;
            self.forward(id);
            return;
        }
        let flow = p.flow as usize;
        let header = p.header;
        self.arena.free(id);
        match header {
            Header::TcpData(h) => self.on_data(flow, &h),
            Header::TcpAck(h) => self.on_ack(flow, &h),
        }
    }

    // ----- flows -----

    fn on_flow_start(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.active = true;
        match fl.app {
            App::Bulk { .. } => self.refill(f),
            App::Cbr { .. } => self.queue.push(self.now, Event::AppTick(f as u32)),
        }
        self.send_data(f);
    }

    /// Tops up the send buffer of a bulk application.
    fn refill(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if !fl.active {
            return;
        }
        let used = fl.sender.app_limit() - fl.sender.snd_una();
        let space = fl.snd_buf.saturating_sub(used);
        let n = fl.app.bulk_write(space, fl.mss as u64);
        if n == 0 {
            return;
        }
        let mut seq = fl.sender.app_limit();
        let end = seq + n;
        // one delay record per segment-sized unit
        while seq < end {
            seq = (seq + fl.mss as u64).min(end);
            fl.writes.push_back((seq, now));
        }
        fl.sender.write(n);
    }

    fn on_app_tick(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        let App::Cbr { interval, packet } = fl.app else { return };
        if !fl.active {
            return;
        }
        let used = fl.sender.app_limit() - fl.sender.snd_una();
        if used + packet as u64 <= fl.snd_buf {
            fl.sender.write(packet as u64);
            fl.writes.push_back((fl.sender.app_limit(), now));
        } else {
            fl.refused += packet as u64;
        }
        self.queue.push(now + interval, Event::AppTick(f as u32));
        self.send_data(f);
    }

    fn send_data(&mut self, f: usize) {
        let now = self.now;
        loop {
            let fl = &mut self.flows[f];
            let Some(seg) = fl.sender.next_segment(now) else { break };
            if self.check {
                let w = fl.sender.window();
                assert!(
                    seg.forced || fl.sender.in_flight() <= w.cwnd.max(seg.len as u64),
                    "flow {}: in flight {} above cwnd {}",
                    fl.name,
                    fl.sender.in_flight(),
                    w.cwnd
                );
                assert!(
                    seg.retx || seg.seq + seg.len as u64 <= fl.sender.snd_una() + fl.sender.rwnd(),
                    "flow {}: sent beyond the receive window",
                    fl.name
                );
            }
            let h = DataHeader { seq: seg.seq, dsn: seg.seq, len: seg.len, retx: seg.retx, sent_at: now };
            let pkt = Packet {
                flow: f as u32,
                route: fl.fwd,
                hop: 0,
                size: seg.len + fl.header,
                header: Header::TcpData(h),
            };
            let id = self.arena.alloc(pkt);
            let kind = if seg.retx { TraceKind::Retx } else { TraceKind::Send };
            self.trace(f as u32, kind, seg.seq, seg.len, u32::MAX);
            self.forward(id);
        }
        let fl = &mut self.flows[f];
        arm(&mut self.queue, &mut fl.rto_pending, fl.sender.rto_deadline(), Event::Rto(f as u32));
    }

    fn on_data(&mut self, f: usize, h: &DataHeader) {
        let now = self.now;
        self.packets_delivered += 1;
        self.trace(f as u32, TraceKind::Recv, h.seq, h.len, u32::MAX);
        let fl = &mut self.flows[f];
        let before = fl.receiver.rcv_nxt();
        let r = fl.receiver.on_segment(now, h.seq, h.len);
        if r.delivered > 0 {
            let upto = before + r.delivered;
            while let Some(&(end, t)) = fl.writes.front() {
                if end > upto {
                    break;
                }
                fl.writes.pop_front();
                fl.delay.record(now.since(t));
                fl.jitter.record(t, now);
            }
            if fl.total == Some(upto) {
                fl.completed_at = Some(now);
            }
        }
        if self.check {
            let fl = &self.flows[f];
            assert!(fl.receiver.buffered() <= fl.receiver.capacity(), "flow {}: receive buffer over its limit", fl.name);
        }
        if r.ack_now {
            self.send_ack(f);
        } else {
            let fl = &mut self.flows[f];
            arm(&mut self.queue, &mut fl.delack_pending, fl.receiver.delack_deadline(), Event::DelAck(f as u32));
        }
    }

    fn send_ack(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        let h = fl.receiver.make_ack();
        // SACK option: 2 bytes + 8 per block, padded to 4
        let n = h.n_sack() as u32;
        let opt = if n > 0 { (2 + 8 * n).div_ceil(4) * 4 } else { 0 };
        let pkt = Packet { flow: f as u32, route: fl.rev, hop: 0, size: fl.header + opt, header: Header::TcpAck(h) };
        let id = self.arena.alloc(pkt);
        self.trace(f as u32, TraceKind::Ack, h.ack, 0, u32::MAX);
        self.forward(id);
    }

    fn on_ack(&mut self, f: usize, h: &AckHeader) {
        let now = self.now;
        let fl = &mut self.flows[f];
        fl.sender.on_ack(now, h);
        if self.check {
            if let Err(e) = fl.sender.check_invariants() {
                panic!("flow {}: {e}", fl.name);
            }
            assert!(fl.sender.snd_una() <= fl.receiver.rcv_nxt(), "flow {}: acknowledged undelivered data", fl.name);
        }
        if matches!(fl.app, App::Bulk { .. }) {
            self.refill(f);
        }
        self.send_data(f);
    }

    fn on_rto_event(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if fl.rto_pending != Some(now) {
            return; // superseded by an earlier event
        }
        fl.rto_pending = None;
        match fl.sender.rto_deadline() {
            Some(d) if d <= now => {
                let una = fl.sender.snd_una();
                fl.sender.on_rto(now);
                self.trace(f as u32, TraceKind::Timeout, una, 0, u32::MAX);
                self.send_data(f);
            }
            d => arm(&mut self.queue, &mut fl.rto_pending, d, Event::Rto(f as u32)),
        }
    }

    fn on_delack_event(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if fl.delack_pending != Some(now) {
            return;
        }
        fl.delack_pending = None;
        match fl.receiver.delack_deadline() {
            Some(d) if d <= now => self.send_ack(f),
            d => arm(&mut self.queue, &mut fl.delack_pending, d, Event::DelAck(f as u32)),
        }
    }

    // ----- metrics -----

    fn on_sample(&mut self) {
        let Some(iv) = self.interval else { return };
        let t = self.now.as_secs_f64();
        let secs = iv.as_secs_f64();
        for (i, fl) in self.flows.iter_mut().enumerate() {
            let s = &mut self.flow_series;
            let w = fl.sender.window();
            let delivered = fl.receiver.rcv_nxt();
            s.t.push(t);
            s.flow.push(i as u32);
            s.cwnd.push(w.cwnd);
            s.ssthresh.push(if w.ssthresh == u64::MAX { f64::INFINITY } else { w.ssthresh as f64 });
            s.in_flight.push(fl.sender.in_flight());
            s.srtt_ms.push(fl.sender.rtt().srtt().map_or(f64::NAN, |d| d.as_millis_f64()));
            s.rto_ms.push(fl.sender.rtt().rto().as_millis_f64());
            s.rwnd.push(if fl.sender.rwnd() == u64::MAX { 0 } else { fl.sender.rwnd() });
            s.delivered.push(delivered);
            let gp = if self.now == SimTime::ZERO { 0.0 } else { (delivered - fl.delivered_at_sample) as f64 * 8.0 / secs };
            s.goodput.push(gp);
            s.retransmits.push(fl.sender.stats.retransmits);
            fl.delivered_at_sample = delivered;
        }
        for i in (0..self.links.len()).step_by(2) {
            let now = self.now;
            let l = &mut self.links[i];
            let (qp, qb) = l.queued(now);
            let s = &mut self.link_series;
            s.t.push(t);
            s.link.push(i as u32 / 2);
            s.queue_packets.push(qp);
            s.queue_bytes.push(qb);
            s.drops.push(l.stats.queue_drops + l.stats.loss_drops + l.stats.down_drops);
        }
        let next = self.now + iv;
        if next <= self.end {
            self.queue.push(next, Event::Sample);
        }
    }

    fn finish(self, wall_s: f64) -> Output {
        let dur = self.end.as_secs_f64();
        let mut flows = Vec::with_capacity(self.flows.len());
        for fl in &self.flows {
            let from = fl.start.max(self.warmup);
            let span = self.end.since(from).as_secs_f64();
            let delivered = fl.receiver.rcv_nxt();
            let st = &fl.sender.stats;
            let rtt = fl.sender.rtt();
            let ms = |d: Option<Dur>| d.map(|d| d.as_millis_f64());
            let per_s = |bytes: u64| if span > 0.0 { bytes as f64 * 8.0 / span } else { 0.0 };
            flows.push(FlowSummary {
                flow: fl.name.clone(),
                path: fl.path_name.clone(),
                cc: fl.sender.cc.name().to_string(),
                goodput_bps: per_s(delivered - fl.delivered_at_warmup),
                throughput_bps: per_s(st.bytes_sent - fl.sent_at_warmup),
                bytes_written: fl.sender.app_limit(),
                bytes_delivered: delivered,
                complete: fl.total.is_some_and(|t| delivered == t),
                completion_time_s: fl.completed_at.map(|t| t.since(fl.start).as_secs_f64()),
                segments_sent: st.segments_sent,
                retransmits: st.retransmits,
                timeouts: st.timeouts,
                fast_recoveries: st.fast_recoveries,
                loss_indications: st.fast_recoveries + st.first_timeouts,
                retransmit_rate: if st.segments_sent > 0 { st.retransmits as f64 / st.segments_sent as f64 } else { 0.0 },
                rtt_mean_ms: ms(rtt.mean_sample()),
                rtt_min_ms: ms(rtt.min_rtt()),
                srtt_final_ms: ms(rtt.srtt()),
                rto_final_ms: rtt.rto().as_millis_f64(),
                first_rto_mean_ms: (st.first_timeouts > 0)
                    .then(|| st.first_timeout_sum.as_millis_f64() / st.first_timeouts as f64),
                delay_mean_ms: ms(fl.delay.mean()),
                delay_p50_ms: ms(fl.delay.quantile(0.5)),
                delay_p95_ms: ms(fl.delay.quantile(0.95)),
                delay_max_ms: ms(fl.delay.max()),
                jitter_ms: ms(fl.jitter.value()),
                cwnd_final_bytes: fl.sender.cwnd(),
                app_bytes_refused: fl.refused,
                out_of_order_segments: fl.receiver.stats.out_of_order_segments,
                duplicate_segments: fl.receiver.stats.duplicate_segments,
                max_receive_buffer_bytes: fl.receiver.stats.max_buffered,
            });
        }
        let links = self
            .links
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
        let goodputs: Vec<f64> = flows.iter().map(|f: &FlowSummary| f.goodput_bps).collect();
        let summary = Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: dur,
            warmup_s: self.warmup.as_secs_f64(),
            jain_index: jain_index(&goodputs),
            flows,
            links,
            events: self.queue.events_processed(),
            packets_delivered: self.packets_delivered,
            wall_s,
        };
        let flow_names: Vec<String> = self.flows.iter().map(|f| f.name.clone()).collect();
        let link_names: Vec<String> = self.links.iter().step_by(2).map(|l| l.name.clone()).collect();
        let fs = self.flow_series;
        let flow_series = Table {
            columns: vec![
                ("time_s".into(), Column::F64(fs.t)),
                ("flow".into(), Column::Str(fs.flow.iter().map(|&i| flow_names[i as usize].clone()).collect())),
                ("cwnd_bytes".into(), Column::U64(fs.cwnd)),
                ("ssthresh_bytes".into(), Column::F64(fs.ssthresh)),
                ("in_flight_bytes".into(), Column::U64(fs.in_flight)),
                ("srtt_ms".into(), Column::F64(fs.srtt_ms)),
                ("rto_ms".into(), Column::F64(fs.rto_ms)),
                ("rwnd_bytes".into(), Column::U64(fs.rwnd)),
                ("delivered_bytes".into(), Column::U64(fs.delivered)),
                ("goodput_bps".into(), Column::F64(fs.goodput)),
                ("retransmits".into(), Column::U64(fs.retransmits)),
            ],
        };
        let ls = self.link_series;
        let link_series = Table {
            columns: vec![
                ("time_s".into(), Column::F64(ls.t)),
                ("link".into(), Column::Str(ls.link.iter().map(|&i| link_names[i as usize].clone()).collect())),
                ("queue_packets".into(), Column::U64(ls.queue_packets)),
                ("queue_bytes".into(), Column::U64(ls.queue_bytes)),
                ("drops".into(), Column::U64(ls.drops)),
            ],
        };
        let all_links: Vec<String> =
            self.links.iter().enumerate().map(|(i, l)| if i % 2 == 0 { l.name.clone() } else { format!("{}.reverse", l.name) }).collect();
        let trace = self.trace.map(|rows| Table {
            columns: vec![
                ("time_s".into(), Column::F64(rows.iter().map(|r| r.t.as_secs_f64()).collect())),
                ("flow".into(), Column::Str(rows.iter().map(|r| flow_names[r.flow as usize].clone()).collect())),
                ("event".into(), Column::Str(rows.iter().map(|r| r.kind.name().to_string()).collect())),
                ("seq".into(), Column::U64(rows.iter().map(|r| r.seq).collect())),
                ("len".into(), Column::U64(rows.iter().map(|r| r.len as u64).collect())),
                (
                    "link".into(),
                    Column::Str(rows.iter().map(|r| if r.link == u32::MAX { String::new() } else { all_links[r.link as usize].clone() }).collect()),
                ),
            ],
        });
        Output { summary, flow_series, link_series, trace }
    }
}

/// Schedules a timer event at `deadline` unless one at or before it is already pending.
fn arm(queue: &mut EventQueue<Event>, pending: &mut Option<SimTime>, deadline: Option<SimTime>, ev: Event) {
    if let Some(d) = deadline {
        if pending.is_none_or(|p| d < p) {
            queue.push(d, ev);
            *pending = Some(d);
        }
    }
}
