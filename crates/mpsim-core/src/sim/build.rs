//! Building a simulation from a scenario: links, routes, flows and their connections, the
//! captures and the first events; then what is installed from outside before a run.

use super::flow::Flow;
use super::record::Recorder;
use super::{Event, Net, Simulation};
use crate::cc::Controller;
use crate::engine::EventQueue;
use crate::metrics::pcap::{Capture, PathTiming};
use crate::net::{PacketArena, Route};
use crate::scenario::Scenario;
use crate::sched::Sched;
use crate::time::SimTime;

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
                // (a link whose queue an AQM manages takes packets only as they arrive)
                if users[next as usize] == 1 && !has_outage(prev) && !has_outage(next) && !links[next as usize].is_managed() {
                    links[next as usize].cut_through = true;
                }
            }
        }
        if s.metrics.qlog {
            for f in &mut flows {
                let title = format!("{}: flow {}", s.name, f.name);
                f.conn.start_qlog(&title);
            }
        }
        let mut pcap = Vec::new();
        if s.metrics.pcap {
            for (i, f) in flows.iter().enumerate() {
                let setup = f.conn.capture_setup();
                let mut c = Capture::with_setup(&setup, i as u32, s.seed, s.metrics.pcap_limit);
                c.payload = s.metrics.pcap_payload;
                c.sack = s.flows[i].tcp.sack;
                c.ecn = s.flows[i].tcp.ecn;
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
            pending: external_components(s),
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
        self.installed(flow, "cc");
        Ok(self)
    }

    /// Replaces the scheduler of the multipath flow `flow` (by name), for example with a
    /// `Sched::Custom` implemented outside this crate. Call before `run`.
    pub fn with_scheduler(mut self, flow: &str, sched: Sched) -> Result<Simulation, String> {
        let f = self.flows.iter_mut().find(|f| f.name == flow).ok_or_else(|| format!("no flow named '{flow}'"))?;
        if !f.conn.set_scheduler(sched) {
            return Err(format!("flow '{flow}' is not a multipath flow: it has no scheduler"));
        }
        self.installed(flow, "scheduler");
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
        self.installed(flow, "receiver");
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

    /// The components written outside this crate that the scenario names and no `with_*`
    /// call has installed yet, as (flow, kind, name).
    pub fn pending_components(&self) -> &[(String, &'static str, String)] {
        &self.pending
    }

    fn installed(&mut self, flow: &str, kind: &str) {
        self.pending.retain(|(f, k, _)| !(f == flow && *k == kind));
    }
}

/// The components of `s`'s flows named as written outside this crate ("module:Class"):
/// (flow, kind, name), kind being the scenario key.
fn external_components(s: &Scenario) -> Vec<(String, &'static str, String)> {
    s.flows.iter().flat_map(|f| f.external_components().into_iter().map(|(k, n)| (f.name.clone(), k, n.to_string()))).collect()
}
