//! The simulation: builds links, routes and flows from a scenario and runs the event loop.
//!
//! Every component is sans-IO; this module is the only place that owns time. It moves packets
//! between links and the ends of connections, fires the timers connections ask for, runs
//! applications (`flow.rs`: a flow is an application over a `transport::Connection`) and
//! records measurements (`record.rs`). Connections answer every call with outputs (packets,
//! timers, trace notes) that `drain` carries out in order.

mod flow;
mod record;

use crate::app::App;
use crate::cc::Controller;
use crate::engine::EventQueue;
use crate::metrics::pcap::{Capture, PathTiming};
use crate::metrics::TraceKind;
use crate::net::{Fate, Header, Link, Packet, PacketArena, PacketId, Route};
use crate::scenario::Scenario;
use crate::sched::Sched;
use crate::time::SimTime;
use crate::transport::{Action, Arrival, Sink, TimerKind};
use flow::Flow;
use record::Recorder;
use std::time::Instant;

pub use record::Output;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// The packet at the head of this link's pipe reaches the far end.
    LinkHead(u32),
    /// A timer a connection asked for.
    Timer {
        flow: u32,
        sub: u16,
        kind: TimerKind,
    },
    AppTick(u32),
    FlowStart(u32),
    FlowStop(u32),
    /// Scenario link index: both directions go down or up.
    LinkDown(u32),
    LinkUp(u32),
    Warmup,
    Sample,
}

/// Progress is reported this many times over a run's simulated duration.
const PROGRESS_STEPS: u64 = 1000;

/// A simulation built from a scenario, ready to run: the network half (`Net`) and the flows.
pub struct Simulation {
    net: Net,
    warmup: SimTime,
    flows: Vec<Flow>,
}

/// Everything but the flows: the clock, the event queue, packets, links and routes, and the
/// recorder. Kept apart so that a connection can be served (through a [`Wire`]) while it is
/// borrowed from the flows.
struct Net {
    now: SimTime,
    end: SimTime,
    queue: EventQueue<Event>,
    arena: PacketArena,
    /// Link 2i carries scenario link i forward, 2i+1 carries it in reverse.
    links: Vec<Link>,
    routes: Vec<Route>,
    rec: Recorder,
    /// One capture per flow, or none when captures are off.
    pcap: Vec<Capture>,
    /// Packets sent are traced or captured (set once, when the simulation is built).
    watched: bool,
}

/// The sink a connection's actions go to: packets are put on their first link at once,
/// timers become events, notes go to the trace, in the order the connection emits them.
struct Wire<'a> {
    net: &'a mut Net,
    flow: u32,
}

impl Sink for Wire<'_> {
    #[inline]
    fn push(&mut self, a: Action) {
        let net = &mut *self.net;
        let (f, now) = (self.flow, net.now);
        match a {
            Action::Packet { sub, route, size, ref header } => net.send(f, sub, route, size, header),
            Action::Timer { sub, kind, at } => net.queue.push(at, Event::Timer { flow: f, sub, kind }),
            Action::Note { sub, kind, seq, dsn } => net.rec.trace(now, f, sub, kind, seq, dsn, 0, u32::MAX),
        }
    }
}

impl Simulation {
    pub fn new(s: &Scenario) -> Simulation {
        let mut links = Vec::with_capacity(2 * s.links.len());
        for l in &s.links {
            for forward in [true, false] {
                links.push(l.link(forward, s.seed));
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
            flows.push(Flow::new(s, f, &links, &routes));
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
        let mut pcap = Vec::new();
        if s.metrics.pcap {
            for (i, f) in flows.iter().enumerate() {
                let setup = f.conn.capture_setup();
                let mut c = Capture::with_setup(&setup, i as u32, s.seed, s.metrics.pcap_limit);
                c.payload = s.metrics.pcap_payload;
                c.sack = s.flows[i].tcp.sack;
                // the handshakes take the path's one-way delays, as the RTT sample the
                // senders are seeded with, and end when the simulation lets a subflow send
                let header = s.flows[i].tcp.header;
                let paths: Vec<PathTiming> = setup
                    .routes
                    .iter()
                    .map(|r| PathTiming {
                        fwd: routes[r.fwd as usize].one_way(&links, header),
                        rev: routes[r.rev as usize].one_way(&links, header),
                        join: r.join_at.since(f.start),
                    })
                    .collect();
                c.plan_handshakes(f.start, &paths);
                pcap.push(c);
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
            net: Net {
                now: SimTime::ZERO,
                end: SimTime(s.duration.0),
                queue,
                arena: PacketArena::default(),
                links,
                routes,
                watched: s.metrics.trace || !pcap.is_empty(),
                rec: Recorder::new(s),
                pcap,
            },
            warmup,
            flows,
        }
    }

    /// Replaces the congestion controller of flow `flow` (by name) on every subflow, for
    /// example with a `Controller::Custom` implemented outside this crate. `make` is called
    /// once per subflow. Call before `run`.
    pub fn with_controller(mut self, flow: &str, mut make: impl FnMut() -> Controller) -> Result<Simulation, String> {
        let f = self.flows.iter_mut().find(|f| f.name == flow).ok_or_else(|| format!("no flow named '{flow}'"))?;
        if !f.conn.set_controller(&mut make) {
            return Err(format!("flow '{flow}' has no TCP congestion controller to replace (it is {})", f.conn.kind()));
        }
        Ok(self)
    }

    /// Replaces the scheduler of the multipath flow `flow` (by name), for example with a
    /// `Sched::Custom` implemented outside this crate. Call before `run`.
    pub fn with_scheduler(mut self, flow: &str, sched: Sched) -> Result<Simulation, String> {
        let f = self.flows.iter_mut().find(|f| f.name == flow).ok_or_else(|| format!("no flow named '{flow}'"))?;
        if !f.conn.set_scheduler(sched) {
            return Err(format!("flow '{flow}' is not a multipath flow: it has no scheduler"));
        }
        Ok(self)
    }

    /// Installs receiver-side logic on the multipath flow `flow` (by name), for example an
    /// `RxLogic::Custom` implemented outside this crate: it sees every data packet at the
    /// receiver and attaches feedback to the ACKs, which the flow's scheduler reads. Call
    /// before `run`.
    pub fn with_receiver_logic(mut self, flow: &str, logic: crate::feedback::RxLogic) -> Result<Simulation, String> {
        let f = self.flows.iter_mut().find(|f| f.name == flow).ok_or_else(|| format!("no flow named '{flow}'"))?;
        if !f.conn.set_receiver_logic(logic) {
            return Err(format!("flow '{flow}' is not a multipath flow: it has no receiver logic"));
        }
        Ok(self)
    }

    /// Streams the time series and the trace: they go to `sink` in chunks of `chunk_rows`
    /// rows or more (see [`crate::metrics::CHUNK_ROWS`]) while the run goes on, and the rest
    /// at its end, instead of growing in memory until the output; the output's tables are
    /// then empty. Call before `run`.
    pub fn stream(mut self, sink: crate::metrics::TableSink, chunk_rows: usize) -> Simulation {
        self.net.rec.stream_to(sink, chunk_rows, &self.flows, &self.net.links);
        self
    }

    /// Turns cut-through off: every hop gets its own event (for tests that compare both).
    pub fn without_cut_through(mut self) -> Simulation {
        for l in &mut self.net.links {
            l.cut_through = false;
        }
        self
    }

    /// Checks protocol invariants after every step and panics on a violation (for tests).
    pub fn with_invariant_checks(mut self, on: bool) -> Simulation {
        for f in &mut self.flows {
            f.conn.set_invariant_checks(on);
        }
        self
    }

    /// Runs to the end.
    pub fn run(self) -> Output {
        self.run_with_progress(|_| true)
    }

    /// Runs to the end, calling `progress(fraction_done)` at every thousandth of the simulated
    /// duration; if it returns false the run stops early (the summary then covers the time
    /// simulated so far).
    pub fn run_with_progress(mut self, mut progress: impl FnMut(f64) -> bool) -> Output {
        let wall = Instant::now();
        let mut stopped = false;
        // progress at every thousandth of the simulated time, whatever the event rate
        let step = (self.net.end.0 / PROGRESS_STEPS).max(1);
        let mut next_report = step;
        while let Some((t, ev)) = self.net.queue.pop_until(self.net.end) {
            self.net.now = t;
            // a packet reaching the head of a link is most events: it goes straight to its
            // handler, the rest through `dispatch` (kept out of line, so the loop stays small)
            match ev {
                Event::LinkHead(l) => self.on_link_head(l),
                ev => self.dispatch(ev),
            }
            if t.0 < next_report {
                continue;
            }
            next_report = (t.0 / step + 1) * step;
            if !progress(t.0 as f64 / self.net.end.0 as f64) {
                self.net.end = self.net.now;
                stopped = true;
                break;
            }
        }
        if !stopped {
            progress(1.0);
        }
        self.net.now = self.net.end;
        let events = self.net.queue.events_processed();
        let pcap = std::mem::take(&mut self.net.pcap);
        let mut out = self.net.rec.finish(&self.flows, &self.net.links, self.net.end, self.warmup, events, wall.elapsed().as_secs_f64());
        out.pcap = pcap.into_iter().zip(&self.flows).map(|(c, f)| c.into_file(f.name.clone())).collect();
        out
    }

    /// Handles one event (the run loop hands a link's head to `on_link_head` directly).
    #[inline(never)]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::LinkHead(l) => self.on_link_head(l),
            Event::Timer { flow, sub, kind } => {
                let f = flow as usize;
                let wire = &mut Wire { net: &mut self.net, flow };
                self.flows[f].conn.on_timer(wire.net.now, sub as usize, kind, wire);
            }
            Event::AppTick(f) => self.on_app_tick(f as usize),
            Event::FlowStart(f) => self.on_flow_start(f as usize),
            Event::FlowStop(f) => self.flows[f as usize].active = false,
            Event::LinkDown(l) => {
                let now = self.net.now;
                for dir in [2 * l, 2 * l + 1] {
                    for id in self.net.links[dir as usize].set_down(now) {
                        let p = *self.net.arena.get(id);
                        self.net.arena.free(id);
                        self.net.rec.trace(now, p.flow, p.sub, TraceKind::DownDrop, 0, 0, p.size, dir);
                    }
                }
            }
            Event::LinkUp(l) => {
                self.net.links[2 * l as usize].set_up();
                self.net.links[2 * l as usize + 1].set_up();
            }
            Event::Warmup => self.net.rec.mark_warmup(self.net.now, &self.flows),
            Event::Sample => {
                self.net.rec.sample(self.net.now, &mut self.flows, &mut self.net.links);
                if let Some(iv) = self.net.rec.interval() {
                    let next = self.net.now + iv;
                    if next <= self.net.end {
                        self.net.queue.push(next, Event::Sample);
                    }
                }
            }
        }
    }

    fn on_link_head(&mut self, link: u32) {
        let l = &mut self.net.links[link as usize];
        let Some((t, id)) = l.pipe.pop_front() else { return };
        if t != self.net.now {
            // a stale event, left behind by a link that went down and came back
            l.pipe.push_front((t, id));
            return;
        }
        if let Some(&(next, _)) = l.pipe.front() {
            self.net.queue.push_frequent(next, Event::LinkHead(link));
        }
        let p = self.net.arena.get_mut(id);
        if !p.last {
            p.hop += 1;
            self.net.forward(id);
            return;
        }
        let (flow, sub) = (p.flow as usize, p.sub as usize);
        let header = p.header;
        self.net.arena.free(id);
        self.on_arrival(flow, sub, &header);
    }

    // ----- flows -----

    fn on_flow_start(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.active = true;
        match fl.app {
            App::Bulk { .. } => fl.refill(self.net.now),
            App::Paced(_) => self.net.queue.push(self.net.now, Event::AppTick(f as u32)),
        }
        self.send_data(f);
    }

    fn on_app_tick(&mut self, f: usize) {
        let now = self.net.now;
        let fl = &mut self.flows[f];
        if !fl.active {
            return;
        }
        let (write, next) = fl.app.tick(now);
        if let Some(next) = next {
            self.net.queue.push(next, Event::AppTick(f as u32));
        }
        let Some(w) = write else { return };
        fl.paced_write(now, w.len, w.priority, w.class);
        self.send_data(f);
    }

    /// A packet reached the end of its route: the connection takes it, the application gets
    /// what it delivers, and an ACK may free room to send more.
    fn on_arrival(&mut self, f: usize, sub: usize, header: &Header) {
        let now = self.net.now;
        if let Some((seq, dsn, len)) = header.data() {
            self.net.rec.packets_delivered += 1;
            self.net.rec.trace(now, f as u32, sub as u8, TraceKind::Recv, seq, dsn, len, u32::MAX);
        }
        if !self.net.pcap.is_empty() {
            self.flows[f].conn.capture_arrival(&mut self.net.pcap[f], now, sub, header);
        }
        let fl = &mut self.flows[f];
        match fl.conn.on_packet(now, sub, header, &mut Wire { net: &mut self.net, flow: f as u32 }) {
            Arrival::Stream { upto } => fl.app_delivered(now, upto),
            Arrival::Datagram { sent_at } => fl.datagram_delivered(now, sent_at),
            Arrival::Nothing => {}
        }
        if header.frees_room() {
            if !self.net.pcap.is_empty() {
                // a finite transfer acknowledged in full: the sender closes
                let fl = &self.flows[f];
                fl.conn.capture_close(&mut self.net.pcap[f], now, header, fl.total);
            }
            let fl = &mut self.flows[f];
            if fl.refills() {
                fl.refill(now);
            }
            self.send_data(f);
        }
    }

    /// Lets flow `f`'s connection send what its windows allow.
    fn send_data(&mut self, f: usize) {
        let now = self.net.now;
        self.flows[f].conn.poll_transmit(now, &mut Wire { net: &mut self.net, flow: f as u32 });
    }
}

impl Net {
    /// Traces and captures a packet as it is sent (see `send`).
    #[inline(never)]
    fn watch_send(&mut self, flow: u32, sub: u8, header: &Header) {
        let now = self.now;
        if self.rec.tracing() {
            let (kind, seq, dsn, len) = header.trace_send();
            self.rec.trace(now, flow, sub, kind, seq, dsn, len, u32::MAX);
        }
        if !self.pcap.is_empty() {
            self.pcap[flow as usize].sent(now, sub as usize, header);
        }
    }

    /// Puts a packet of flow `flow` on the first link of `route` (and on through cut-through
    /// links). The packet is written into the arena once, when the link accepts it, with the
    /// link's mark; a packet the first link drops never enters it.
    #[inline]
    fn send(&mut self, flow: u32, sub: u8, route: u32, size: u32, header: &Header) {
        let now = self.now;
        if self.watched {
            self.watch_send(flow, sub, header);
        }
        let links = &self.routes[route as usize].links;
        let (link, next) = (links[0], links.get(1).copied());
        let l = &mut self.links[link as usize];
        let t = match l.offer_at(now, now, size) {
            Fate::Arrives(t) => t,
            fate => {
                let (seq, dsn) = header.trace_ids();
                return self.rec.trace(now, flow, sub, drop_kind(fate), seq, dsn, size, link);
            }
        };
        let mut p = Packet { flow, route, hop: 0, last: next.is_none(), sub, size, header: *header };
        if l.marks_last() {
            p.header.set_cw();
        }
        // (see `forward_at`)
        if t <= self.end && next.is_some_and(|n| self.links[n as usize].cut_through) {
            p.hop = 1;
            let id = self.arena.alloc(p);
            return self.forward_at(id, t);
        }
        let id = self.arena.alloc(p);
        let l = &mut self.links[link as usize];
        if l.pipe.is_empty() {
            self.queue.push_frequent(t, Event::LinkHead(link));
        }
        l.pipe.push_back((t, id));
    }

    /// Offers packet `id` to the link of its current hop, and on through cut-through links.
    fn forward(&mut self, id: PacketId) {
        self.forward_at(id, self.now);
    }

    /// Offers packet `id` to the link of its current hop at `at` (later than now for a
    /// cut-through link), and on through cut-through links.
    fn forward_at(&mut self, id: PacketId, mut at: SimTime) {
        let (size, route) = {
            let p = self.arena.get(id);
            (p.size, p.route as usize)
        };
        loop {
            let hop = self.arena.get(id).hop as usize;
            let links = &self.routes[route].links;
            let link = links[hop];
            let next = links.get(hop + 1).copied();
            let l = &mut self.links[link as usize];
            let fate = l.offer_at(self.now, at, size);
            if let Fate::Arrives(t) = fate {
                if l.marks_last() {
                    self.arena.get_mut(id).header.set_cw();
                }
                // (a packet that would enter after the run ends waits in the pipe instead, so
                // link counters cover the run exactly; drops on a cut-through link are counted
                // when the packet leaves the previous link, up to one hop early)
                if t <= self.end && next.is_some_and(|n| self.links[n as usize].cut_through) {
                    self.arena.get_mut(id).hop += 1;
                    at = t;
                    continue;
                }
                self.arena.get_mut(id).last = next.is_none();
                let l = &mut self.links[link as usize];
                if l.pipe.is_empty() {
                    self.queue.push_frequent(t, Event::LinkHead(link));
                }
                l.pipe.push_back((t, id));
                return;
            }
            self.drop_packet(id, fate, link, at);
            return;
        }
    }

    fn drop_packet(&mut self, id: PacketId, fate: Fate, link: u32, at: SimTime) {
        let p = *self.arena.get(id);
        let (seq, dsn) = p.header.trace_ids();
        self.arena.free(id);
        self.rec.trace(at, p.flow, p.sub, drop_kind(fate), seq, dsn, p.size, link);
    }
}

/// The trace kind of a packet a link did not accept.
fn drop_kind(fate: Fate) -> TraceKind {
    match fate {
        Fate::QueueDrop => TraceKind::QueueDrop,
        Fate::Lost => TraceKind::LossDrop,
        Fate::Down | Fate::Arrives(_) => TraceKind::DownDrop,
    }
}
