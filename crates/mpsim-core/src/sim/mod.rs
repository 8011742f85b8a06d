//! The simulation: builds links, routes and flows from a scenario and runs the event loop.
//!
//! Every component is sans-IO; this module is the only place that owns time. It moves packets
//! between links and the ends of connections, fires the timers connections ask for, runs
//! applications (`flow.rs`: a flow is an application over a `transport::Connection`) and
//! records measurements (`record.rs`). Connections answer every call with actions (packets,
//! timers, trace notes) that a [`Wire`] carries out in order.
//!
//! Files: this one holds the types; `build.rs` makes a simulation from a scenario (and
//! installs what is given from outside: controllers, schedulers, receiver logic, sinks);
//! `run.rs` is the event loop and what each event does to the flows; `net.rs` moves packets
//! over links and routes and carries out a connection's actions.

mod build;
mod flow;
mod net;
mod record;
mod run;

use crate::engine::EventQueue;
use crate::metrics::pcap::Capture;
use crate::net::{Link, PacketArena, Route};
use crate::time::SimTime;
use crate::transport::TimerKind;
use flow::Flow;
use record::Recorder;

pub use record::Output;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// The packet at the head of this link's pipe reaches the far end.
    LinkHead(u32),
    /// A link whose queue an AQM manages can start its next transmission.
    LinkDequeue(u32),
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
    /// Components the scenario names as written outside this crate ("module:Class") and not
    /// installed yet: (flow, kind, name). `run` refuses to start while any is left, instead of
    /// running the built-in stand-in the connection was built with.
    pending: Vec<(String, &'static str, String)>,
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
