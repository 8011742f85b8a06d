//! The scenario: what a TOML file (or a Python dict) describes, parsed and validated.
//!
//! Parsing happens in two steps. The text becomes a generic value tree (TOML or JSON); then
//! every key is read and checked here, so that each error names the source, the key path
//! (`link[1].rate`) and what was expected. Nothing in this module panics on bad input.

mod app;

use crate::cc::Controller;
use crate::net::{LossModel, QueueLimit};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{RtoMode, RTO_MODES};
use crate::units;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;

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

/// Per-flow TCP settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpSpec {
    pub mss: u32,
    pub initial_window: u32,
    /// Retransmission-timeout computation (`tcp.rto`: "linux" or "rfc6298").
    pub rto: RtoMode,
    /// Floor and cap of the RTO; None for the mode's defaults.
    pub min_rto: Option<Dur>,
    pub max_rto: Option<Dur>,
    pub initial_rto: Dur,
    /// Linux's loss-recovery defences (`tcp.frto`, `tcp.rack`, `tcp.tlp`, `tcp.prr`).
    pub frto: bool,
    pub rack: bool,
    pub tlp: bool,
    pub prr: bool,
    pub delayed_ack: bool,
    pub delack_timeout: Dur,
    pub rcv_buf: u64,
    pub snd_buf: u64,
    /// IP + TCP header bytes added to every packet on the wire.
    pub header: u32,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            mss: 1460,
            initial_window: 10,
            rto: RtoMode::Linux,
            min_rto: None,
            max_rto: None,
            initial_rto: Dur::from_secs(1),
            frto: true,
            rack: true,
            tlp: true,
            prr: true,
            delayed_ack: false,
            // Linux's TCP_DELACK_MIN; with the 200 ms min RTO a 200 ms delayed ACK would race
            // the retransmission timer on the last segment of a flight
            delack_timeout: Dur::from_millis(40),
            rcv_buf: 4_000_000,
            snd_buf: 4_000_000,
            header: 40,
        }
    }
}

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
}

impl MediaSpec {
    /// Mean bit rate of the stream.
    pub fn rate_bps(&self) -> f64 {
        let bytes: u64 = self.frames.iter().map(|&(_, s)| s as u64).sum();
        bytes as f64 * 8.0 / (self.frames.len() as f64 * self.frame_interval.as_secs_f64())
    }
}

/// The transport protocol of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    /// Datagrams without congestion control or retransmission (background traffic).
    Udp,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub name: String,
    pub rate_bps: u64,
    pub delay: Dur,
    pub queue: QueueLimit,
    pub loss: LossModel,
    pub reverse_loss: LossModel,
    /// Intervals [down, up) during which the link carries nothing, in both directions.
    pub outages: Vec<(SimTime, SimTime)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PathSpec {
    pub name: String,
    /// Indices into `Scenario::links`.
    pub links: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    /// Indices into `Scenario::paths`: one per subflow (exactly one for plain TCP).
    pub paths: Vec<usize>,
    /// Multipath TCP (the flow was given `paths`), with this scheduler.
    pub scheduler: Option<String>,
    /// Per subflow: a backup subflow (MP_PRIO), used only when no regular one can be.
    pub backup: Vec<bool>,
    pub cc: String,
    pub transport: Transport,
    /// Generated by a `[[background]]` table: left out of fairness figures.
    pub background: bool,
    pub start: SimTime,
    /// The application stops writing at this time.
    pub stop: Option<SimTime>,
    pub app: AppSpec,
    pub tcp: TcpSpec,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSpec {
    /// Time-series sampling interval; `None` records no series.
    pub interval: Option<Dur>,
    /// Record a per-packet trace.
    pub trace: bool,
    /// Goodput and throughput are measured from this time on.
    pub warmup: Dur,
}

impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec { interval: Some(Dur::from_millis(100)), trace: false, warmup: Dur::ZERO }
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
    ("media", "video frames at `fps` following a GOP pattern or a frame list, with per-type sizes and priorities"),
];

// ----------------------------------------------------------------------------------------
// Entry points

impl Scenario {
    /// Parses a TOML scenario. `origin` names the source in error messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
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
        Scenario::from_value(&value, origin)
    }

    /// Parses a JSON scenario (the form the Python API sends).
    pub fn from_json(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| err(origin, "", format!("not valid JSON: {e}")))?;
        Scenario::from_value(&value, origin)
    }

    /// Reads and validates a value tree.
    pub fn from_value(v: &Value, origin: &str) -> Result<Scenario, ScenarioError> {
        Reader { origin }.scenario(v)
    }

    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
}

fn err(origin: &str, key: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError { origin: origin.to_string(), key: key.to_string(), message: message.into() }
}

// ----------------------------------------------------------------------------------------
// The reader: one method per table, each checking its keys.

struct Reader<'a> {
    origin: &'a str,
}

/// A table being read: remembers which keys were used so unknown ones can be reported.
struct Table<'v> {
    path: String,
    map: &'v Map<String, Value>,
    allowed: &'static [&'static str],
}

impl<'a> Reader<'a> {
    fn e(&self, key: &str, msg: impl Into<String>) -> ScenarioError {
        err(self.origin, key, msg)
    }

    fn table<'v>(&self, v: &'v Value, path: &str, allowed: &'static [&'static str]) -> Result<Table<'v>, ScenarioError> {
        let map = v.as_object().ok_or_else(|| self.e(path, format!("expected a table, found {}", kind(v))))?;
        for k in map.keys() {
            if !allowed.contains(&k.as_str()) {
                let key = join(path, k);
                let hint = closest(k, allowed).map(|c| format!(" (did you mean '{c}'?)")).unwrap_or_default();
                return Err(self.e(&key, format!("unknown key{hint}; expected one of: {}", allowed.join(", "))));
            }
        }
        Ok(Table { path: path.to_string(), map, allowed })
    }

    fn scenario(&self, v: &Value) -> Result<Scenario, ScenarioError> {
        if v.as_object().is_some_and(|m| m.is_empty()) {
            return Err(self.e("", "the scenario is empty; it needs at least `duration`, a [[link]], a [[path]] and a [[flow]]"));
        }
        let t = self.table(v, "", &["name", "duration", "seed", "tcp", "metrics", "link", "path", "flow", "background"])?;
        let name = self.opt_string(&t, "name")?.unwrap_or_else(|| "scenario".into());
        let duration = self.req(&t, "duration", |s| units::duration(s))?;
        if duration == Dur::ZERO {
            return Err(self.e("duration", "must be longer than zero"));
        }
        let seed = match t.map.get("seed") {
            None => 1,
            Some(v) => v.as_u64().ok_or_else(|| self.e("seed", format!("expected a non-negative integer, found {}", kind(v))))?,
        };
        let tcp_defaults = match t.map.get("tcp") {
            None => TcpSpec::default(),
            Some(v) => self.tcp(v, "tcp", &TcpSpec::default())?,
        };
        let metrics = match t.map.get("metrics") {
            None => MetricsSpec::default(),
            Some(v) => self.metrics(v)?,
        };

        let links = self.array(&t, "link")?;
        if links.is_empty() {
            return Err(self.e("link", "at least one [[link]] is needed"));
        }
        let mut link_specs = Vec::new();
        let mut link_names = HashMap::new();
        for (i, lv) in links.iter().enumerate() {
            let key = format!("link[{i}]");
            let l = self.link(lv, &key, duration)?;
            if link_names.insert(l.name.clone(), i).is_some() {
                return Err(self.e(&format!("{key}.name"), format!("duplicate link name '{}'", l.name)));
            }
            link_specs.push(l);
        }

        let paths = self.array(&t, "path")?;
        if paths.is_empty() {
            return Err(self.e("path", "at least one [[path]] is needed"));
        }
        let mut path_specs = Vec::new();
        let mut path_names = HashMap::new();
        for (i, pv) in paths.iter().enumerate() {
            let key = format!("path[{i}]");
            let p = self.path(pv, &key, &link_names)?;
            if path_names.insert(p.name.clone(), i).is_some() {
                return Err(self.e(&format!("{key}.name"), format!("duplicate path name '{}'", p.name)));
            }
            path_specs.push(p);
        }

        let flows = self.array(&t, "flow")?;
        let backgrounds = self.array(&t, "background")?;
        if flows.is_empty() && backgrounds.is_empty() {
            return Err(self.e("flow", "at least one [[flow]] is needed"));
        }
        let mut flow_specs = Vec::new();
        let mut flow_names = HashMap::new();
        for (i, fv) in flows.iter().enumerate() {
            let key = format!("flow[{i}]");
            let f = self.flow(fv, &key, i, &path_names, &tcp_defaults, duration)?;
            if flow_names.insert(f.name.clone(), i).is_some() {
                return Err(self.e(&format!("{key}.name"), format!("duplicate flow name '{}'", f.name)));
            }
            flow_specs.push(f);
        }
        for (i, bv) in backgrounds.iter().enumerate() {
            let key = format!("background[{i}]");
            for f in self.background(bv, &key, &path_names, &path_specs, &link_specs, &tcp_defaults, duration)? {
                if flow_names.insert(f.name.clone(), flow_specs.len()).is_some() {
                    return Err(self.e(&format!("{key}.name"), format!("flow name '{}' is already taken", f.name)));
                }
                flow_specs.push(f);
            }
        }
        if metrics.warmup >= duration {
            return Err(self.e("metrics.warmup", "must be shorter than the duration"));
        }
        let _ = t.allowed;
        Ok(Scenario { name, duration, seed, links: link_specs, paths: path_specs, flows: flow_specs, metrics })
    }

    fn link(&self, v: &Value, key: &str, duration: Dur) -> Result<LinkSpec, ScenarioError> {
        let t = self.table(v, key, &["name", "rate", "delay", "queue", "loss", "reverse_loss", "down"])?;
        let name = self.req_string(&t, "name")?;
        let rate_bps = self.req(&t, "rate", units::rate)?;
        if rate_bps == 0 {
            return Err(self.e(&join(key, "rate"), "must be greater than zero"));
        }
        let delay = self.opt(&t, "delay", units::duration)?.unwrap_or(Dur::ZERO);
        let queue = match self.opt(&t, "queue", |s| units::queue(s))? {
            None => QueueLimit::Packets(100),
            Some(units::QueueSize::Packets(0)) | Some(units::QueueSize::Bytes(0)) => {
                return Err(self.e(&join(key, "queue"), "must hold at least one packet"))
            }
            Some(units::QueueSize::Packets(n)) => QueueLimit::Packets(n),
            Some(units::QueueSize::Bytes(b)) => QueueLimit::Bytes(b),
        };
        let loss = match t.map.get("loss") {
            None => LossModel::None,
            Some(lv) => self.loss(lv, &join(key, "loss"))?,
        };
        let reverse_loss = match t.map.get("reverse_loss") {
            None => LossModel::None,
            Some(lv) => self.loss(lv, &join(key, "reverse_loss"))?,
        };
        let mut outages = Vec::new();
        if let Some(dv) = t.map.get("down") {
            let arr = dv.as_array().ok_or_else(|| {
                self.e(&join(key, "down"), "expected a list of outages like [{ at = \"10s\", until = \"12s\" }]")
            })?;
            for (j, ov) in arr.iter().enumerate() {
                let okey = format!("{key}.down[{j}]");
                let ot = self.table(ov, &okey, &["at", "until"])?;
                let at = self.req(&ot, "at", units::duration)?;
                let until = self.opt(&ot, "until", units::duration)?.unwrap_or(duration + Dur::from_secs(1));
                if until <= at {
                    return Err(self.e(&join(&okey, "until"), "must be later than `at`"));
                }
                outages.push((SimTime(at.0), SimTime(until.0)));
            }
            outages.sort();
        }
        Ok(LinkSpec { name, rate_bps, delay, queue, loss, reverse_loss, outages })
    }

    fn loss(&self, v: &Value, key: &str) -> Result<LossModel, ScenarioError> {
        if let Some(s) = v.as_str() {
            return self.uniform(units::fraction(s).map_err(|m| self.e(key, m))?, key);
        }
        if let Some(x) = v.as_f64() {
            return self.uniform(units::fraction(&x.to_string()).map_err(|m| self.e(key, m))?, key);
        }
        let t = self.table(v, key, &["model", "rate", "p", "r", "k", "h", "mean", "burst", "drops"])?;
        let model = self.req_string(&t, "model")?;
        let used = |names: &[&str]| -> Result<(), ScenarioError> {
            for k in t.map.keys() {
                if k != "model" && !names.contains(&k.as_str()) {
                    return Err(self.e(&join(key, k), format!("not a parameter of the '{model}' loss model")));
                }
            }
            Ok(())
        };
        match model.as_str() {
            "none" => {
                used(&[])?;
                Ok(LossModel::None)
            }
            "uniform" => {
                used(&["rate"])?;
                let p = self.req(&t, "rate", units::fraction)?;
                self.uniform(p, key)
            }
            "gilbert" => {
                if t.map.contains_key("mean") || t.map.contains_key("burst") {
                    used(&["mean", "burst"])?;
                    let mean = self.req(&t, "mean", units::fraction)?;
                    let burst = self.req_f64(&t, "burst")?;
                    if burst < 1.0 {
                        return Err(self.e(&join(key, "burst"), "the mean burst length is at least 1 packet"));
                    }
                    if mean >= 1.0 {
                        return Err(self.e(&join(key, "mean"), "must be below 100%"));
                    }
                    // simple Gilbert: no loss in Good, all lost in Bad (ALGORITHMS.md §10.1)
                    let r = 1.0 / burst;
                    let p = mean * r / (1.0 - mean);
                    Ok(LossModel::GilbertElliott { p, r, k: 1.0, h: 0.0 })
                } else {
                    used(&["p", "r", "k", "h"])?;
                    let p = self.req(&t, "p", units::fraction)?;
                    let r = self.req(&t, "r", units::fraction)?;
                    let k = self.opt(&t, "k", units::fraction)?.unwrap_or(1.0);
                    let h = self.opt(&t, "h", units::fraction)?.unwrap_or(0.0);
                    if r == 0.0 && p > 0.0 {
                        return Err(self.e(&join(key, "r"), "must be above 0 or the chain never leaves the Bad state"));
                    }
                    Ok(LossModel::GilbertElliott { p, r, k, h })
                }
            }
            "scripted" => {
                used(&["drops"])?;
                let dv = t.map.get("drops").ok_or_else(|| self.e(&join(key, "drops"), "missing; list the 0-based packet indices to drop"))?;
                let arr = dv.as_array().ok_or_else(|| self.e(&join(key, "drops"), "expected a list of packet indices"))?;
                let mut drops = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    drops.push(x.as_u64().ok_or_else(|| self.e(&format!("{key}.drops[{j}]"), "expected a non-negative integer"))?);
                }
                Ok(LossModel::Scripted { drops })
            }
            other => Err(self.e(
                &join(key, "model"),
                format!("unknown loss model '{other}'; expected one of: none, uniform, gilbert, scripted"),
            )),
        }
    }

    fn uniform(&self, p: f64, key: &str) -> Result<LossModel, ScenarioError> {
        if p >= 1.0 {
            return Err(self.e(key, "a loss rate of 100% delivers nothing"));
        }
        Ok(if p == 0.0 { LossModel::None } else { LossModel::Uniform { p } })
    }

    fn path(&self, v: &Value, key: &str, links: &HashMap<String, usize>) -> Result<PathSpec, ScenarioError> {
        let t = self.table(v, key, &["name", "links"])?;
        let name = self.req_string(&t, "name")?;
        let lk = join(key, "links");
        let arr = t
            .map
            .get("links")
            .ok_or_else(|| self.e(&lk, "missing; list the link names the path crosses, in order"))?
            .as_array()
            .ok_or_else(|| self.e(&lk, "expected a list of link names"))?;
        if arr.is_empty() {
            return Err(self.e(&lk, "a path needs at least one link"));
        }
        let mut idx = Vec::new();
        for (j, lv) in arr.iter().enumerate() {
            let k = format!("{lk}[{j}]");
            let n = lv.as_str().ok_or_else(|| self.e(&k, format!("expected a link name, found {}", kind(lv))))?;
            let i = *links.get(n).ok_or_else(|| {
                let mut names: Vec<&str> = links.keys().map(|s| s.as_str()).collect();
                names.sort();
                self.e(&k, format!("no link named '{n}' (links: {})", names.join(", ")))
            })?;
            if idx.contains(&i) {
                return Err(self.e(&k, format!("link '{n}' appears twice in the path")));
            }
            idx.push(i);
        }
        Ok(PathSpec { name, links: idx })
    }

    fn flow(
        &self,
        v: &Value,
        key: &str,
        i: usize,
        paths: &HashMap<String, usize>,
        tcp_defaults: &TcpSpec,
        duration: Dur,
    ) -> Result<FlowSpec, ScenarioError> {
        let t = self.table(v, key, &["name", "path", "paths", "scheduler", "backup", "cc", "transport", "start", "stop", "app", "tcp"])?;
        let name = self.opt_string(&t, "name")?.unwrap_or_else(|| format!("flow{i}"));
        let lookup = |pname: &str, k: &str| -> Result<usize, ScenarioError> {
            paths.get(pname).copied().ok_or_else(|| {
                let mut names: Vec<&str> = paths.keys().map(|s| s.as_str()).collect();
                names.sort();
                self.e(k, format!("no path named '{pname}' (paths: {})", names.join(", ")))
            })
        };
        let (path_names, multipath) = match (t.map.get("path"), t.map.get("paths")) {
            (Some(_), Some(_)) => {
                return Err(self.e(key, "give either `path` (plain TCP) or `paths` (Multipath TCP), not both"))
            }
            (None, None) => return Err(self.e(&join(key, "path"), "missing: give `path` (plain TCP) or `paths` (Multipath TCP)")),
            (Some(_), None) => (vec![(self.req_string(&t, "path")?, join(key, "path"))], false),
            (None, Some(pv)) => {
                let pk = join(key, "paths");
                let arr = pv.as_array().ok_or_else(|| self.e(&pk, "expected a list of path names"))?;
                if arr.is_empty() || arr.len() > 8 {
                    return Err(self.e(&pk, "a multipath flow needs 1 to 8 paths"));
                }
                let mut names = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    let k = format!("{pk}[{j}]");
                    let n = x.as_str().ok_or_else(|| self.e(&k, format!("expected a path name, found {}", kind(x))))?;
                    if names.iter().any(|(m, _): &(String, String)| m == n) {
                        return Err(self.e(&k, format!("path '{n}' appears twice")));
                    }
                    names.push((n.to_string(), k));
                }
                (names, true)
            }
        };
        let mut flow_paths = Vec::new();
        for (n, k) in &path_names {
            flow_paths.push(lookup(n, k)?);
        }
        let scheduler = match (multipath, self.opt_string(&t, "scheduler")?) {
            (false, Some(_)) => return Err(self.e(&join(key, "scheduler"), "only a multipath flow (`paths = [...]`) has a scheduler")),
            (false, None) => None,
            (true, None) => Some("lowest_rtt".to_string()),
            (true, Some(sname)) => {
                if crate::sched::Sched::by_name(&sname).is_none() {
                    let names: Vec<&str> = crate::sched::SCHEDULERS.iter().map(|c| c.0).collect();
                    return Err(self.e(&join(key, "scheduler"), format!("unknown scheduler '{sname}'; expected one of: {}", names.join(", "))));
                }
                Some(sname)
            }
        };
        let mut backup = vec![false; flow_paths.len()];
        if let Some(bv) = t.map.get("backup") {
            let bk = join(key, "backup");
            if !multipath {
                return Err(self.e(&bk, "only a multipath flow has backup subflows"));
            }
            let arr = bv.as_array().ok_or_else(|| self.e(&bk, "expected a list of path names from `paths`"))?;
            for (j, x) in arr.iter().enumerate() {
                let k = format!("{bk}[{j}]");
                let n = x.as_str().ok_or_else(|| self.e(&k, "expected a path name"))?;
                let pos = path_names.iter().position(|(m, _)| m == n).ok_or_else(|| self.e(&k, format!("'{n}' is not one of this flow's paths")))?;
                backup[pos] = true;
            }
        }
        let transport = match self.opt_string(&t, "transport")?.as_deref() {
            None | Some("tcp") => Transport::Tcp,
            Some("udp") if multipath => return Err(self.e(&join(key, "transport"), "a multipath flow runs over TCP")),
            Some("udp") => Transport::Udp,
            Some(other) => return Err(self.e(&join(key, "transport"), format!("unknown transport '{other}'; expected tcp or udp"))),
        };
        let cc = self.opt_string(&t, "cc")?.unwrap_or_else(|| "reno".into());
        if Controller::by_name(&cc).is_none() {
            let names: Vec<&str> = crate::cc::CONTROLLERS.iter().map(|c| c.0).collect();
            return Err(self.e(&join(key, "cc"), format!("unknown congestion controller '{cc}'; expected one of: {}", names.join(", "))));
        }
        let start = self.opt(&t, "start", units::duration)?.unwrap_or(Dur::ZERO);
        if start >= duration {
            return Err(self.e(&join(key, "start"), "the flow starts after the simulation ends"));
        }
        let stop = self.opt(&t, "stop", units::duration)?;
        if let Some(s) = stop {
            if s <= start {
                return Err(self.e(&join(key, "stop"), "must be later than `start`"));
            }
        }
        let app = match t.map.get("app") {
            None => AppSpec::Bulk { bytes: None },
            Some(av) => self.app(av, &join(key, "app"))?,
        };
        if transport == Transport::Udp && matches!(app, AppSpec::Bulk { .. }) {
            return Err(self.e(&join(key, "app"), "a UDP flow has no congestion control: give it a paced application (cbr, onoff or vbr)"));
        }
        if transport == Transport::Udp && matches!(app, AppSpec::Media(_)) {
            return Err(self.e(&join(key, "app"), "a media stream runs over TCP or Multipath TCP (UDP flows carry cbr, onoff or vbr traffic)"));
        }
        let tcp = match t.map.get("tcp") {
            None => tcp_defaults.clone(),
            Some(tv) => self.tcp(tv, &join(key, "tcp"), tcp_defaults)?,
        };
        Ok(FlowSpec {
            name,
            paths: flow_paths,
            scheduler,
            backup,
            cc,
            transport,
            background: false,
            start: SimTime(start.0),
            stop: stop.map(|s| SimTime(s.0)),
            app,
            tcp,
        })
    }

    fn tcp(&self, v: &Value, key: &str, base: &TcpSpec) -> Result<TcpSpec, ScenarioError> {
        let t = self.table(
            v,
            key,
            &["mss", "initial_window", "rto", "min_rto", "max_rto", "initial_rto", "frto", "rack", "tlp", "prr", "delayed_ack", "delack_timeout", "rcv_buf", "snd_buf", "header"],
        )?;
        let mut s = base.clone();
        if let Some(m) = self.opt(&t, "mss", units::bytes)? {
            if !(64..=65_000).contains(&m) {
                return Err(self.e(&join(key, "mss"), "must be between 64 B and 65000 B"));
            }
            s.mss = m as u32;
        }
        if t.map.contains_key("initial_window") {
            let iw = self.req_f64(&t, "initial_window")?;
            if iw < 1.0 || iw.fract() != 0.0 || iw > 1000.0 {
                return Err(self.e(&join(key, "initial_window"), "expected a whole number of segments from 1 to 1000"));
            }
            s.initial_window = iw as u32;
        }
        if let Some(m) = self.opt_string(&t, "rto")? {
            s.rto = RtoMode::by_name(&m).ok_or_else(|| {
                let names: Vec<&str> = RTO_MODES.iter().map(|(n, _)| *n).collect();
                self.e(&join(key, "rto"), format!("unknown timer '{m}'; expected one of: {}", names.join(", ")))
            })?;
        }
        if let Some(d) = self.opt(&t, "min_rto", units::duration)? {
            s.min_rto = Some(d);
        }
        if let Some(d) = self.opt(&t, "max_rto", units::duration)? {
            s.max_rto = Some(d);
        }
        if let Some(d) = self.opt(&t, "initial_rto", units::duration)? {
            s.initial_rto = d;
        }
        let (min_rto, max_rto) = (s.min_rto.unwrap_or(s.rto.default_min_rto()), s.max_rto.unwrap_or(s.rto.default_max_rto()));
        if min_rto > max_rto {
            return Err(self.e(&join(key, "min_rto"), format!("must not exceed max_rto ({max_rto})")));
        }
        if min_rto == Dur::ZERO {
            return Err(self.e(&join(key, "min_rto"), "must be greater than zero"));
        }
        for (name, slot) in [("frto", &mut s.frto), ("rack", &mut s.rack), ("tlp", &mut s.tlp), ("prr", &mut s.prr)] {
            if let Some(b) = t.map.get(name) {
                *slot = b.as_bool().ok_or_else(|| self.e(&join(key, name), format!("expected true or false, found {}", kind(b))))?;
            }
        }
        if let Some(b) = t.map.get("delayed_ack") {
            s.delayed_ack = b.as_bool().ok_or_else(|| self.e(&join(key, "delayed_ack"), format!("expected true or false, found {}", kind(b))))?;
        }
        if let Some(d) = self.opt(&t, "delack_timeout", units::duration)? {
            s.delack_timeout = d;
        }
        if let Some(b) = self.opt(&t, "rcv_buf", units::bytes)? {
            s.rcv_buf = b;
        }
        if let Some(b) = self.opt(&t, "snd_buf", units::bytes)? {
            s.snd_buf = b;
        }
        if let Some(b) = self.opt(&t, "header", units::bytes)? {
            if b > 1000 {
                return Err(self.e(&join(key, "header"), "must be at most 1000 B"));
            }
            s.header = b as u32;
        }
        if s.rcv_buf > 1_000_000_000 {
            return Err(self.e(&join(key, "rcv_buf"), "must be at most 1 GB (the largest TCP window with window scaling)"));
        }
        if s.rcv_buf < s.mss as u64 {
            return Err(self.e(&join(key, "rcv_buf"), format!("must hold at least one segment ({} B)", s.mss)));
        }
        if s.snd_buf < s.mss as u64 {
            return Err(self.e(&join(key, "snd_buf"), format!("must hold at least one segment ({} B)", s.mss)));
        }
        Ok(s)
    }

    fn metrics(&self, v: &Value) -> Result<MetricsSpec, ScenarioError> {
        let t = self.table(v, "metrics", &["interval", "trace", "warmup"])?;
        let mut m = MetricsSpec::default();
        if let Some(iv) = t.map.get("interval") {
            if iv.as_bool() == Some(false) {
                m.interval = None;
            } else {
                let d = self.req(&t, "interval", units::duration)?;
                m.interval = (d > Dur::ZERO).then_some(d);
                if let Some(d) = m.interval {
                    if d < Dur::from_micros(100) {
                        return Err(self.e("metrics.interval", "must be at least 100us (or 0 to record no series)"));
                    }
                }
            }
        }
        if let Some(b) = t.map.get("trace") {
            m.trace = b.as_bool().ok_or_else(|| self.e("metrics.trace", format!("expected true or false, found {}", kind(b))))?;
        }
        if let Some(d) = self.opt(&t, "warmup", units::duration)? {
            m.warmup = d;
        }
        Ok(m)
    }

    // ----- small readers -----

    fn array<'v>(&self, t: &Table<'v>, k: &str) -> Result<&'v [Value], ScenarioError> {
        match t.map.get(k) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a.as_slice()),
            Some(v) => Err(self.e(&join(&t.path, k), format!("expected a list of tables ([[{k}]]), found {}", kind(v)))),
        }
    }

    fn opt_string(&self, t: &Table, k: &str) -> Result<Option<String>, ScenarioError> {
        match t.map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(self.e(&join(&t.path, k), "must not be empty")),
            Some(v) => Err(self.e(&join(&t.path, k), format!("expected a string, found {}", kind(v)))),
        }
    }

    fn req_string(&self, t: &Table, k: &str) -> Result<String, ScenarioError> {
        self.opt_string(t, k)?.ok_or_else(|| self.e(&join(&t.path, k), "missing"))
    }

    fn req_f64(&self, t: &Table, k: &str) -> Result<f64, ScenarioError> {
        match t.map.get(k) {
            None => Err(self.e(&join(&t.path, k), "missing")),
            Some(v) => v.as_f64().ok_or_else(|| self.e(&join(&t.path, k), format!("expected a number, found {}", kind(v)))),
        }
    }

    /// Reads an optional quantity written as a string with a unit or as a bare number.
    fn opt<T>(&self, t: &Table, k: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Option<T>, ScenarioError> {
        let key = join(&t.path, k);
        match t.map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => parse(s).map(Some).map_err(|m| self.e(&key, format!("{m} (got '{s}')"))),
            Some(Value::Number(n)) => parse(&n.to_string()).map(Some).map_err(|m| self.e(&key, format!("{m} (got {n})"))),
            Some(v) => Err(self.e(&key, format!("expected a quantity like \"10Mbps\" or \"20ms\", found {}", kind(v)))),
        }
    }

    fn req<T>(&self, t: &Table, k: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<T, ScenarioError> {
        self.opt(t, k, parse)?.ok_or_else(|| self.e(&join(&t.path, k), "missing"))
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a table",
    }
}

/// The allowed key closest to a misspelt one, if any is close.
fn closest<'k>(k: &str, allowed: &[&'k str]) -> Option<&'k str> {
    fn dist(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                cur.push((prev[j] + (ca != *cb) as usize).min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    allowed.iter().map(|a| (dist(k, a), *a)).filter(|(d, _)| *d <= 2).min().map(|(_, a)| a)
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
        assert_eq!((s.flows[0].paths.clone(), s.flows[0].scheduler.clone()), (vec![0], None));
        assert_eq!(s.flows[0].app, AppSpec::Bulk { bytes: None });
        assert_eq!(s.flows[0].tcp, TcpSpec::default());
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
        let text = GOOD.replace("links = [\"l1\"]", "links = [\"l1\"]\n[[path]]\nname = \"q\"\nlinks = [\"l1\"]")
            .replace("path = \"p\"", "paths = [\"p\", \"q\"]\nscheduler = \"round_robin\"\nbackup = [\"q\"]");
        let s = Scenario::from_toml(&text, "s").unwrap();
        assert_eq!(s.flows[0].paths, vec![0, 1]);
        assert_eq!(s.flows[0].scheduler.as_deref(), Some("round_robin"));
        assert_eq!(s.flows[0].backup, vec![false, true]);
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
        let s = Scenario::from_toml(&GOOD.replace("loss = \"1%\"", "loss = { model = \"gilbert\", mean = \"1%\", burst = 4 }"), "s").unwrap();
        let m = &s.links[0].loss;
        assert!((m.mean_loss() - 0.01).abs() < 1e-12);
        let e = bad(&GOOD.replace("loss = \"1%\"", "loss = { model = \"gilbert\", mean = \"1%\", p = 0.1 }"));
        assert_eq!(e.key, "link[0].loss.p");
    }

    #[test]
    fn json_form_is_equivalent() {
        let toml_s = Scenario::from_toml(GOOD, "a").unwrap();
        let v: Value = toml::from_str(GOOD).unwrap();
        let json_s = Scenario::from_json(&v.to_string(), "b").unwrap();
        assert_eq!(toml_s, json_s);
    }
}
