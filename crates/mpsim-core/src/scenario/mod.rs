//! The scenario: what a TOML file (or a Python dict) describes, parsed and validated.
//!
//! Parsing happens in two steps. The text becomes a generic value tree (TOML or JSON); then
//! every key is read and checked here, so that each error names the source, the key path
//! (`link[1].rate`) and what was expected. Nothing in this module panics on bad input.

mod app;
mod aqm;
mod link_schedule;
mod mptcp_rec;
mod network;
mod reader;
mod sctp;
mod topology;
mod traffic;
mod transport;
pub mod units;

use crate::net::{AqmSpec, CongestionWarning, LinkSchedule, LinkTrace, LossModel, QueueLimit};
use crate::time::{Dur, SimTime};
pub use crate::transport::tcp::TcpConfig;
pub use mptcp_rec::RecSpec;
use reader::{err, join, kind, Reader, Table};
use serde_json::Value;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
pub use topology::{ecmp_hash, FiveTuple, Topology, TOPOLOGIES};
pub use traffic::{derangement, MATRICES};
pub use transport::is_external;

/// A problem with a scenario: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// File name or other description of the source.
    pub origin: String,
    /// Key path such as `link[1].rate`; empty for whole-file problems.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: {}: {}", self.origin, self.key, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

#[derive(Clone, Debug, PartialEq)]
pub enum AppSpec {
    /// Send `bytes` (or forever) as fast as the transport allows.
    Bulk { bytes: Option<u64> },
    /// Write `packet` bytes every packet·8/rate seconds.
    Cbr { rate_bps: u64, packet: u32 },
    /// CBR during "on" periods, silent during "off" periods (durations constant or
    /// exponentially distributed with these means).
    OnOff { rate_bps: u64, packet: u32, on: Dur, off: Dur, exponential: bool },
    /// Packets of random sizes (`sizes`: wire size and probability) at Poisson arrival times
    /// averaging `rate_bps`, the rate scaled by a factor drawn anew every period.
    Vbr { rate_bps: u64, sizes: Vec<(u32, f64)>, vary: Option<Vary> },
    /// A video stream: frames at a fixed rate, sized and prioritised by type.
    Media(MediaSpec),
}

/// Load varying in time: every `period` the rate is multiplied by a factor drawn uniformly
/// from [min, max].
#[derive(Clone, Debug, PartialEq)]
pub struct Vary {
    pub min: f64,
    pub max: f64,
    pub period: Dur,
    /// Flows with the same group draw the same factors (a background mix varies as a whole);
    /// None: the flow's own stream.
    pub group: Option<String>,
}

/// A frame type of a media stream.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameClass {
    pub name: String,
    pub size: u32,
    pub priority: u8,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MediaSpec {
    pub frame_interval: Dur,
    pub classes: Vec<FrameClass>,
    /// The frames in order, as (class index, size), repeated cyclically: a GOP pattern or a
    /// frame-size trace.
    pub frames: Vec<(usize, u32)>,
    /// A frame delivered later than this after it was produced is late.
    pub deadline: Option<Dur>,
    /// Bytes of frames the sender may hold while the send buffer cannot take them (its
    /// application queue, `app::FrameQueue`); None: the flow's send buffer size. 0: no queue, a
    /// frame the send buffer cannot take at once is discarded.
    pub backlog: Option<u64>,
}

impl MediaSpec {
    /// Mean bit rate of the stream.
    pub fn rate_bps(&self) -> f64 {
        let bytes: u64 = self.frames.iter().map(|&(_, s)| s as u64).sum();
        bytes as f64 * 8.0 / (self.frames.len() as f64 * self.frame_interval.as_secs_f64())
    }
}

/// A flow's transport, with the settings only it has. Combinations that make no sense (UDP
/// with a scheduler, SCTP with backup subflows) cannot be written down.
#[derive(Clone, Debug, PartialEq)]
pub enum TransportSpec {
    /// Plain TCP over one path (`path = "..."`).
    Tcp,
    /// Multipath TCP over the flow's paths (`paths = [...]`), with its scheduler.
    Mptcp(Box<MptcpSpec>),
    /// Datagrams without congestion control or retransmission (`transport = "udp"`).
    Udp,
    /// An SCTP association (`transport = "sctp"`; single-homed with `path`, multihomed with
    /// `paths`).
    Sctp(Box<crate::transport::sctp::SctpConfig>),
    /// A QUIC connection with one bulk stream (`transport = "quic"`): over one path
    /// (`path`), or Multipath QUIC over the flow's paths (`paths`) with its `scheduler`;
    /// `ecn`, `priorities`, `path_status`, `ack_frequency`, `pacing` and `reset_late` from its
    /// `quic` table;
    /// `backup[i]`: path i is a backup path.
    Quic {
        scheduler: Option<String>,
        ecn: bool,
        priorities: bool,
        backup: Vec<bool>,
        path_status: Vec<PathStatusChange>,
        ack_frequency: Option<crate::transport::quic::ack_frequency::AckFrequencySpec>,
        pacing: bool,
        reset_late: bool,
    },
}

/// A Multipath QUIC path's status changed during the run (`quic.path_status`): at `at`,
/// path `path` (its index in the flow's `paths`) becomes a backup path or available.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathStatusChange {
    pub at: SimTime,
    pub path: usize,
    pub backup: bool,
}

impl TransportSpec {
    /// The value of the scenario's `transport` key for this transport: tcp (Multipath TCP
    /// too), udp, sctp or quic.
    pub fn key(&self) -> &'static str {
        match self {
            TransportSpec::Tcp | TransportSpec::Mptcp(_) => "tcp",
            TransportSpec::Udp => "udp",
            TransportSpec::Sctp(_) => "sctp",
            TransportSpec::Quic { .. } => "quic",
        }
    }
}

/// What a Multipath TCP flow has beyond TCP's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MptcpSpec {
    /// The scheduler: a built-in name or "module:Class" (installed by the caller).
    pub scheduler: String,
    /// Per subflow: a backup subflow (MP_PRIO), used only when no regular one can be.
    pub backup: Vec<bool>,
    /// When the subflows after the first join the connection.
    pub join: Join,
    /// MPTCP-rec's settings (`scheduler = "mptcp_rec"` switches its receiver logic on).
    pub rec: Option<RecSpec>,
    /// Receiver-side logic written in Python ("module:Class"; `receiver` key), installed with
    /// `Simulation::with_receiver_logic`; it replaces MPTCP-rec's own.
    pub receiver: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub name: String,
    /// The forward (data) direction's rate: `rate`, or its trace's mean rate (rounded) when
    /// it follows a trace, which is what estimates and background loads go by.
    pub rate_bps: u64,
    /// Delivery opportunities the forward direction follows instead of a fixed rate (`trace`).
    pub trace: Option<Arc<LinkTrace>>,
    /// The reverse direction's rate (`rate`, or its trace's mean rate) and trace
    /// (`reverse_trace`).
    pub reverse_rate_bps: u64,
    pub reverse_trace: Option<Arc<LinkTrace>>,
    pub delay: Dur,
    /// Largest random extra delay per packet, in both directions (FIFO kept); zero: none.
    pub jitter: Dur,
    pub queue: QueueLimit,
    pub loss: LossModel,
    pub reverse_loss: LossModel,
    /// Intervals [down, up) during which the link carries nothing, in both directions.
    pub outages: Vec<(SimTime, SimTime)>,
    /// Mark data packets while the average queue is above a threshold (TCP New Jersey).
    pub congestion_warning: Option<CongestionWarning>,
    /// The queue discipline of the forward direction (`aqm`) and of the reverse one
    /// (`reverse_aqm`); drop-tail where none.
    pub aqm: Option<AqmSpec>,
    pub reverse_aqm: Option<AqmSpec>,
    /// Rate and delay (both directions) and loss rate (forward) over time (`schedule`); its
    /// rate from time 0 is explicit when it has rate steps.
    pub schedule: Option<Arc<LinkSchedule>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PathSpec {
    pub name: String,
    /// Indices into `Scenario::links`.
    pub links: Vec<usize>,
}

/// When the subflows of a Multipath TCP connection join it, from the flow's start. The first
/// subflow carries the connection's own handshake and sends from the start; until a subflow
/// joins it sends nothing and is left out of scheduling and of the coupled controllers.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Join {
    /// Every subflow from the start (`join_delay` absent).
    #[default]
    AtStart,
    /// Every subflow after the first this long after the start (`join_delay = "500ms"`).
    Delay(Dur),
    /// As Linux's path manager opens them once the first subflow is established: each after
    /// its own MP_JOIN exchange, two round trips of its path (SYN, SYN/ACK, ACK, and the ACK
    /// of that ACK before data may flow) (`join_delay = "linux"`).
    Linux,
    /// An explicit time per subflow, the first 0 (`join_at = ["0s", "1s"]`).
    At(Vec<Dur>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    /// Indices into `Scenario::paths`: one per subflow or destination (exactly one for plain
    /// TCP and UDP).
    pub paths: Vec<usize>,
    pub cc: String,
    pub transport: TransportSpec,
    /// Generated by a `[[background]]` table: left out of fairness figures.
    pub background: bool,
    pub start: SimTime,
    /// The application stops writing at this time.
    pub stop: Option<SimTime>,
    pub app: AppSpec,
    /// TCP settings. For an SCTP flow, the fields other parts read mirror its SCTP settings
    /// (mss = chunk, rcv_buf, snd_buf, header = IP + common + DATA chunk header).
    pub tcp: TcpConfig,
}

impl FlowSpec {
    /// The Multipath TCP settings of a Multipath TCP flow.
    pub fn mptcp(&self) -> Option<&MptcpSpec> {
        match &self.transport {
            TransportSpec::Mptcp(m) => Some(m),
            _ => None,
        }
    }
    /// The settings of an SCTP flow.
    pub fn sctp(&self) -> Option<&crate::transport::sctp::SctpConfig> {
        match &self.transport {
            TransportSpec::Sctp(c) => Some(c),
            _ => None,
        }
    }
    /// Per path of the flow: a backup path (`backup = [...]`) of a Multipath TCP or QUIC flow;
    /// all false for other transports.
    pub fn backup(&self) -> Vec<bool> {
        match &self.transport {
            TransportSpec::Mptcp(m) => m.backup.clone(),
            TransportSpec::Quic { backup, .. } => backup.clone(),
            _ => vec![false; self.paths.len()],
        }
    }
    /// The scheduler of a Multipath TCP flow.
    pub fn scheduler(&self) -> Option<&str> {
        self.mptcp().map(|m| m.scheduler.as_str())
    }
    /// The components the flow names as written outside this crate ("module:Class"), as
    /// (scenario key, name): its scheduler, controller and receiver logic.
    pub fn external_components(&self) -> Vec<(&'static str, &str)> {
        let receiver = self.mptcp().and_then(|m| m.receiver.as_deref());
        [("scheduler", self.scheduler()), ("cc", Some(self.cc.as_str())), ("receiver", receiver)]
            .into_iter()
            .filter_map(|(key, name)| Some((key, name.filter(|n| is_external(n))?)))
            .collect()
    }
    /// MPTCP-rec's settings, if the flow runs it.
    pub fn rec(&self) -> Option<&RecSpec> {
        self.mptcp().and_then(|m| m.rec.as_ref())
    }
    pub fn is_udp(&self) -> bool {
        self.transport == TransportSpec::Udp
    }
    pub fn is_sctp(&self) -> bool {
        matches!(self.transport, TransportSpec::Sctp(_))
    }
    pub fn is_quic(&self) -> bool {
        matches!(self.transport, TransportSpec::Quic { .. })
    }
    /// TCP or Multipath TCP: segments acknowledged by TCP ACKs.
    pub fn is_tcp(&self) -> bool {
        matches!(self.transport, TransportSpec::Tcp | TransportSpec::Mptcp(_))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSpec {
    /// Time-series sampling interval; `None` records no series.
    pub interval: Option<Dur>,
    /// Record a per-packet trace.
    pub trace: bool,
    /// Goodput and throughput are measured from this time on.
    pub warmup: Dur,
    /// Record a packet capture per flow (`metrics::pcap`).
    pub pcap: bool,
    /// Largest size of one capture file, in bytes; packets beyond it are not recorded.
    pub pcap_limit: u64,
    /// Store the payload (zeros) in captures, not only the headers.
    pub pcap_payload: bool,
    /// Write a qlog trace of each QUIC flow (`transport::quic::qlog`).
    pub qlog: bool,
}

impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec {
            interval: Some(Dur::from_millis(100)),
            trace: false,
            warmup: Dur::ZERO,
            pcap: false,
            pcap_limit: 1 << 30,
            pcap_payload: false,
            qlog: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub duration: Dur,
    pub seed: u64,
    pub links: Vec<LinkSpec>,
    pub paths: Vec<PathSpec>,
    pub flows: Vec<FlowSpec>,
    pub metrics: MetricsSpec,
}

/// Ceilings on the number of things a scenario may declare. Each is far beyond any
/// experiment in the papers; they exist so that a typo cannot ask for unbounded work.
pub const MAX_LINKS: usize = 100_000;
pub const MAX_PATHS: usize = 100_000;
/// Flows in all, `[[flow]]` tables and the flows `[[background]]` tables generate together.
pub const MAX_FLOWS: usize = 1_000_000;
pub const MAX_LINKS_PER_PATH: usize = 1_000;
pub const MAX_OUTAGES_PER_LINK: usize = 100_000;
/// Most path status changes a QUIC flow's `quic.path_status` may list (each takes a timer
/// numbered by a `u16`).
pub const MAX_PATH_STATUS_CHANGES: usize = u16::MAX as usize;
pub const MAX_SCRIPTED_DROPS: usize = 1_000_000;
/// Frames in a media stream's pattern (`gop`, `frames` or a trace file).
pub const MAX_MEDIA_FRAMES: usize = 1_000_000;
/// The largest send buffer: 1 TB.
pub const MAX_SND_BUF: u64 = 1_000_000_000_000;

/// The loss models a link accepts, for `mpsim list`.
pub const LOSS_MODELS: &[(&str, &str)] = &[
    ("none", "no random loss (the default)"),
    ("uniform", "each packet lost independently with probability rate ('1%' is shorthand)"),
    ("gilbert", "Gilbert-Elliott bursts: p, r, k, h, or mean loss and mean burst length"),
    ("scripted", "drop exactly the listed packet indices (for tests)"),
];

/// The applications a flow can run, for `mpsim list`.
pub const APPS: &[(&str, &str)] = &[
    ("bulk", "send `bytes` (or without end) as fast as the transport allows"),
    ("cbr", "constant bit rate: `packet` bytes every packet*8/rate seconds"),
    ("onoff", "CBR during on periods and silent during off periods (`on`, `off`, constant or exponential)"),
    ("vbr", "Poisson packets of random sizes (`sizes` mix or preset) at a mean `rate`, optionally varying in time"),
    ("media", "video frames at `fps` following a GOP pattern or a frame list, with per-type sizes and priorities; frames the send buffer cannot take wait in a queue of `backlog` bytes, written highest priority first, the lowest priority discarded first"),
];

// ----------------------------------------------------------------------------------------
// Entry points

impl Scenario {
    /// Parses a TOML scenario. `origin` names the source in error messages. Files the
    /// scenario names (link traces) are read relative to the current directory.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_in(text, origin, None)
    }

    /// Parses a TOML scenario whose relative file names (link traces) are relative to `dir`
    /// (the scenario file's folder); None: the current directory.
    pub fn from_toml_in(text: &str, origin: &str, dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let value: Value = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            let at = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            err(origin, "", format!("not valid TOML{at}: {msg}"))
        })?;
        Scenario::from_value_in(&value, origin, dir)
    }

    /// Parses a JSON scenario (the form the Python API sends).
    pub fn from_json(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let value: Value = serde_json::from_str(text).map_err(|e| err(origin, "", format!("not valid JSON: {e}")))?;
        Scenario::from_value(&value, origin)
    }

    /// Reads and validates a value tree (relative file names: from the current directory).
    pub fn from_value(v: &Value, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_value_in(v, origin, None)
    }

    /// Reads and validates a value tree whose relative file names are relative to `dir`.
    pub fn from_value_in(v: &Value, origin: &str, dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        Reader { origin, dir }.scenario(v)
    }

    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        duration = "10s"
        [[link]]
        name = "l1"
        rate = "10Mbps"
        delay = "20ms"
        queue = "100pkt"
        loss = "1%"
        [[path]]
        name = "p"
        links = ["l1"]
        [[flow]]
        path = "p"
    "#;

    fn bad(text: &str) -> ScenarioError {
        Scenario::from_toml(text, "s.toml").unwrap_err()
    }

    #[test]
    fn parses_a_minimal_scenario() {
        let s = Scenario::from_toml(GOOD, "s.toml").unwrap();
        assert_eq!(s.duration, Dur::from_secs(10));
        assert_eq!(s.links[0].rate_bps, 10_000_000);
        assert_eq!(s.links[0].loss, LossModel::Uniform { p: 0.01 });
        assert_eq!(s.flows[0].name, "flow0");
        assert_eq!((s.flows[0].paths.clone(), s.flows[0].scheduler().map(str::to_string)), (vec![0], None));
        assert_eq!(s.flows[0].app, AppSpec::Bulk { bytes: None });
        assert_eq!(s.flows[0].tcp, TcpConfig::default());
    }

    #[test]
    fn errors_name_the_key() {
        let e = bad(&GOOD.replace("\"10Mbps\"", "\"-5Mbps\""));
        assert_eq!(e.key, "link[0].rate");
        assert!(e.message.contains("negative"), "{e}");
        assert!(e.to_string().starts_with("s.toml: link[0].rate:"));

        let e = bad(&GOOD.replace("links = [\"l1\"]", "links = [\"nope\"]"));
        assert_eq!(e.key, "path[0].links[0]");
        assert!(e.message.contains("no link named 'nope'"));

        let e = bad(&GOOD.replace("queue =", "qeue ="));
        assert_eq!(e.key, "link[0].qeue");
        assert!(e.message.contains("did you mean 'queue'"));
    }

    #[test]
    fn multipath_flows_name_their_paths_scheduler_and_backups() {
        let text = GOOD
            .replace("links = [\"l1\"]", "links = [\"l1\"]\n[[path]]\nname = \"q\"\nlinks = [\"l1\"]")
            .replace("path = \"p\"", "paths = [\"p\", \"q\"]\nscheduler = \"round_robin\"\nbackup = [\"q\"]");
        let s = Scenario::from_toml(&text, "s").unwrap();
        assert_eq!(s.flows[0].paths, vec![0, 1]);
        assert_eq!(s.flows[0].scheduler(), Some("round_robin"));
        assert_eq!(s.flows[0].mptcp().unwrap().backup, vec![false, true]);
        let e = bad(&text.replace("round_robin", "fastest"));
        assert_eq!(e.key, "flow[0].scheduler");
        let e = bad(&GOOD.replace("path = \"p\"", "path = \"p\"\nscheduler = \"lowest_rtt\""));
        assert!(e.message.contains("only a multipath flow"));
        let e = bad(&GOOD.replace("path = \"p\"", "paths = [\"p\", \"p\"]"));
        assert_eq!(e.key, "flow[0].paths[1]");
    }

    #[test]
    fn empty_and_garbage_are_refused() {
        assert!(bad("").message.contains("empty"));
        let e = bad("this is = = not toml");
        assert!(e.message.contains("not valid TOML"), "{e}");
        let e = bad("\u{0}\u{1}\u{2}binary");
        assert!(e.message.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn gilbert_by_mean_and_burst() {
        let s =
            Scenario::from_toml(&GOOD.replace("loss = \"1%\"", "loss = { model = \"gilbert\", mean = \"1%\", burst = 4 }"), "s").unwrap();
        let m = &s.links[0].loss;
        assert!((m.mean_loss() - 0.01).abs() < 1e-12);
        let e = bad(&GOOD.replace("loss = \"1%\"", "loss = { model = \"gilbert\", mean = \"1%\", p = 0.1 }"));
        assert_eq!(e.key, "link[0].loss.p");
    }

    #[test]
    fn snd_buf_accounting_is_payload_or_linux() {
        let with_tcp = |tcp: &str| GOOD.replace("path = \"p\"\n", &format!("path = \"p\"\ntcp = {{ {tcp} }}\n"));
        let s = Scenario::from_toml(&with_tcp("snd_buf_accounting = \"linux\""), "s").unwrap();
        assert_eq!(s.flows[0].tcp.snd_buf_accounting, crate::transport::tcp::SndBufAccounting::Linux);
        let s = Scenario::from_toml(GOOD, "s").unwrap();
        assert_eq!(s.flows[0].tcp.snd_buf_accounting, crate::transport::tcp::SndBufAccounting::Payload);
        let e = bad(&with_tcp("snd_buf_accounting = \"truesize\""));
        assert_eq!(e.key, "flow[0].tcp.snd_buf_accounting");
        assert!(e.message.contains("expected \"payload\" or \"linux\", found \"truesize\""), "{e}");
        let e = bad(&with_tcp("snd_buf_accounting = true"));
        assert!(e.message.contains("found a boolean"), "{e}");
    }

    #[test]
    fn window_scale_caps_the_window_offered() {
        let with_tcp = |tcp: &str| GOOD.replace("path = \"p\"\n", &format!("path = \"p\"\ntcp = {{ {tcp} }}\n"));
        let t = &Scenario::from_toml(GOOD, "s").unwrap().flows[0].tcp;
        assert_eq!((t.window_scale, t.max_window()), (None, u64::MAX));
        let s = Scenario::from_toml(&with_tcp("window_scale = 2, rcv_buf = \"512000B\""), "s").unwrap();
        let t = &s.flows[0].tcp;
        assert_eq!((t.window_scale, t.max_window()), (Some(2), 262_140));
        assert_eq!(t.receiver(false, crate::time::Dur::from_millis(10)).max_window, 262_140);
        assert_eq!(t.sender(false).initial_rwnd, 262_140, "the SYN-ACK offers no more than the field carries");
        assert_eq!(t.receiver(true, crate::time::Dur::from_millis(10)).max_window, u64::MAX, "a subflow's is the connection's");
        for (v, found) in [("15", "found 15"), ("1.5", "found 1.5"), ("-1", "found -1")] {
            let e = bad(&with_tcp(&format!("window_scale = {v}")));
            assert_eq!(e.key, "flow[0].tcp.window_scale");
            assert!(e.message.contains("expected a whole number from 0 to 14") && e.message.contains(found), "{e}");
        }
        let e = bad(&with_tcp("window_scale = \"2\""));
        assert!(e.message.contains("expected a number, found a string"), "{e}");
    }

    #[test]
    fn ssthresh_halves_the_flight_or_the_window() {
        let with_tcp = |tcp: &str| GOOD.replace("path = \"p\"\n", &format!("path = \"p\"\ntcp = {{ {tcp} }}\n"));
        assert!(!Scenario::from_toml(GOOD, "s").unwrap().flows[0].tcp.ssthresh_of_cwnd);
        let s = Scenario::from_toml(&with_tcp("ssthresh = \"cwnd\""), "s").unwrap();
        assert!(s.flows[0].tcp.ssthresh_of_cwnd && s.flows[0].tcp.sender(false).halve_cwnd);
        assert!(!Scenario::from_toml(&with_tcp("ssthresh = \"flight\""), "s").unwrap().flows[0].tcp.ssthresh_of_cwnd);
        let e = bad(&with_tcp("ssthresh = \"half\""));
        assert_eq!(e.key, "flow[0].tcp.ssthresh");
        assert!(e.message.contains("expected \"flight\" or \"cwnd\", found \"half\""), "{e}");
        let e = bad(&with_tcp("ssthresh = 10"));
        assert!(e.message.contains("found a number"), "{e}");
    }

    #[test]
    fn oversized_values_are_refused_naming_key_and_limit() {
        let with_tcp = |tcp: &str| GOOD.replace("path = \"p\"\n", &format!("path = \"p\"\ntcp = {{ {tcp} }}\n"));
        let e = bad(&with_tcp("snd_buf = \"999999999999999GB\""));
        assert_eq!(e.key, "flow[0].tcp.snd_buf");
        assert!(e.message.contains("at most 1 TB"), "its own limit, not the parser's: {e}");
        let e = bad(&with_tcp("snd_buf = \"lots\""));
        assert!(!e.message.contains("1 TB"), "{e}");
        let e = bad(&with_tcp("snd_buf = \"2TB\""));
        assert_eq!(e.key, "flow[0].tcp.snd_buf");
        assert!(e.message.contains("at most 1 TB"), "{e}");
        assert!(Scenario::from_toml(&with_tcp("snd_buf = \"100GB\""), "s").is_ok());
        let e = bad(&GOOD.replace("\"10Mbps\"", "\"99999999999999999999999999Gbps\""));
        assert_eq!(e.key, "link[0].rate");
        assert!(e.message.contains("at most 1 Tbit/s"), "{e}");
        // scientific notation is read like any other number, in strings and bare numbers
        let s = Scenario::from_toml(&GOOD.replace("\"10Mbps\"", "\"1e7bps\""), "s").unwrap();
        assert_eq!(s.links[0].rate_bps, 10_000_000);
        let s = Scenario::from_toml(&GOOD.replace("\"10Mbps\"", "1e7"), "s").unwrap();
        assert_eq!(s.links[0].rate_bps, 10_000_000);
        let e = bad(&GOOD.replace("\"10Mbps\"", "1e30"));
        assert!(e.message.contains("at most 1 Tbit/s"), "{e}");
        let e = bad(&GOOD.replace("duration = \"10s\"", "duration = \"1e7s\""));
        assert_eq!(e.key, "duration");
        assert!(e.message.contains("at most 1000000 s"), "{e}");
    }

    #[test]
    fn names_that_cannot_be_file_names_are_refused_naming_the_key() {
        let flow =
            |name: &str| GOOD.replace("[[flow]]\n        path = \"p\"", &format!("[[flow]]\n        name = {name}\n        path = \"p\""));
        for (name, why) in [
            ("\"../escaped\"", "'/'"),
            ("\"a/b\"", "'/'"),
            ("\"a\\\\b\"", "'\\\\'"),
            ("\"two\\nlines\"", "control character"),
            ("\"two\\u2028lines\"", "control character"),
            ("\"two\\u2029lines\"", "control character"),
            ("\".hidden\"", "start with '.'"),
            (&format!("\"{}\"", "x".repeat(101)), "100 characters"),
        ] {
            let e = bad(&flow(name));
            assert_eq!(e.key, "flow[0].name", "{name}: {e}");
            assert!(e.message.contains(why), "{name}: {e}");
            assert!(!e.to_string().contains('\n'), "one line: {e}");
        }
        for ok in ["\"wifi path\"", "\"bg_a.tcp1\"", "\"flow-2+\"", "\"ünï\""] {
            assert!(Scenario::from_toml(&flow(ok), "s").is_ok(), "{ok}");
        }
        let e = bad(&GOOD.replace("name = \"l1\"", "name = \"../l1\"").replace("links = [\"l1\"]", "links = [\"../l1\"]"));
        assert_eq!(e.key, "link[0].name");
        let e = bad(&GOOD.replace("name = \"p\"", "name = \"/p\"").replace("path = \"p\"", "path = \"/p\""));
        assert_eq!(e.key, "path[0].name");
        let e = bad(&format!("name = \"a/b\"\n{GOOD}"));
        assert_eq!(e.key, "name");
    }

    #[test]
    fn weak_inputs_get_messages_that_show_them() {
        let e = bad(&GOOD.replace("duration = \"10s\"", "duration = \"10s\"\nseed = -1"));
        assert_eq!(e.key, "seed");
        assert!(e.message.contains("found -1"), "{e}");
        let e = bad(&format!("\"\" = 1\n{GOOD}"));
        assert!(e.message.contains("unknown key \"\""), "{e}");
        let e = bad(&GOOD.replace("duration = \"10s\"", "duration = \"1s\"\n[metrics]\nwarmup = \"2s\""));
        assert_eq!(e.key, "metrics.warmup");
        assert!(e.message.contains("warmup 2.000s against duration 1.000s"), "{e}");
    }

    #[test]
    fn counts_are_capped() {
        let mut text = GOOD.replace("links = [\"l1\"]", "links = [\"l1\"]\n[[path]]\nname = \"q\"\nlinks = [\"l1\"]");
        text.push_str("[[background]]\nname = \"bg\"\npath = \"q\"\nload = \"10%\"\ntcp_flows = 1001\n");
        let e = bad(&text);
        assert_eq!(e.key, "background[0].tcp_flows");
        let drops: Vec<String> = (0..=MAX_SCRIPTED_DROPS).map(|i| i.to_string()).collect();
        let e = bad(&GOOD.replace("loss = \"1%\"", &format!("loss = {{ model = \"scripted\", drops = [{}] }}", drops.join(","))));
        assert_eq!(e.key, "link[0].loss.drops");
        assert!(e.message.contains(&format!("at most {MAX_SCRIPTED_DROPS} drops")), "{e}");
    }

    #[test]
    fn json_form_is_equivalent() {
        let toml_s = Scenario::from_toml(GOOD, "a").unwrap();
        let v: Value = toml::from_str(GOOD).unwrap();
        let json_s = Scenario::from_json(&v.to_string(), "b").unwrap();
        assert_eq!(toml_s, json_s);
    }
}
