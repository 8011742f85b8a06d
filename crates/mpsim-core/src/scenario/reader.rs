//! The scenario reader: walks the parsed document one table at a time, checking each
//! table's keys and reporting problems with the file and the key path. The top level and the
//! helpers are here; links and paths in `network.rs`, flows and their TCP settings in
//! `transport.rs`.

use super::traffic::{Paths, Router};
use super::units;
use super::*;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The longest name of a scenario, link, path, flow or background mix, in characters.
pub const MAX_NAME_CHARS: usize = 100;

pub(super) fn err(origin: &str, key: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError { origin: origin.to_string(), key: key.to_string(), message: message.into() }
}

// ----------------------------------------------------------------------------------------
// The reader: one method per table, each checking its keys.

pub(super) struct Reader<'a> {
    pub(super) origin: &'a str,
    /// The folder relative file names are read from; None: the current directory.
    pub(super) dir: Option<&'a std::path::Path>,
}

/// A table being read: remembers which keys were used so unknown ones can be reported.
pub(super) struct Table<'v> {
    pub(super) path: String,
    pub(super) map: &'v Map<String, Value>,
    pub(super) allowed: &'static [&'static str],
}

impl<'a> Reader<'a> {
    pub(super) fn e(&self, key: &str, msg: impl Into<String>) -> ScenarioError {
        err(self.origin, key, msg)
    }

    pub(super) fn table<'v>(&self, v: &'v Value, path: &str, allowed: &'static [&'static str]) -> Result<Table<'v>, ScenarioError> {
        let map = v.as_object().ok_or_else(|| self.e(path, format!("expected a table, found {}", kind(v))))?;
        for k in map.keys() {
            if !allowed.contains(&k.as_str()) {
                let key = join(path, k);
                let hint = closest(k, allowed).map(|c| format!(" (did you mean '{c}'?)")).unwrap_or_default();
                return Err(
                    self.e(&key, format!("unknown key {:?}{hint}; expected one of: {}", k.escape_debug().to_string(), allowed.join(", ")))
                );
            }
        }
        Ok(Table { path: path.to_string(), map, allowed })
    }

    pub(super) fn scenario(&self, v: &Value) -> Result<Scenario, ScenarioError> {
        if v.as_object().is_some_and(|m| m.is_empty()) {
            return Err(self.e("", "the scenario is empty; it needs at least `duration`, a [[link]], a [[path]] and a [[flow]]"));
        }
        let t = self.table(
            v,
            "",
            &["name", "duration", "seed", "tcp", "metrics", "topology", "traffic", "link", "path", "flow", "background"],
        )?;
        let name = self.opt_name(&t, "name")?.unwrap_or_else(|| "scenario".into());
        let duration = self.req(&t, "duration", units::duration)?;
        if duration == Dur::ZERO {
            return Err(self.e("duration", "must be longer than zero"));
        }
        let seed = match t.map.get("seed") {
            None => 1,
            Some(v) => {
                v.as_u64().ok_or_else(|| self.e("seed", format!("expected a whole number from 0 to {}, found {}", u64::MAX, shown(v))))?
            }
        };
        let tcp_defaults = match t.map.get("tcp") {
            None => TcpConfig::default(),
            Some(v) => self.tcp(v, "tcp", &TcpConfig::default())?,
        };
        let metrics = match t.map.get("metrics") {
            None => MetricsSpec::default(),
            Some(v) => self.metrics(v)?,
        };

        let topology = t.map.get("topology").map(|tv| self.topology(tv, seed, duration)).transpose()?;
        if topology.is_none() && t.map.contains_key("traffic") {
            return Err(self.e("traffic", "traffic runs over a [topology]; give one, or write [[link]]s, [[path]]s and [[flow]]s"));
        }
        let mut link_specs = Vec::new();
        let mut link_names = HashMap::new();
        let mut path_specs = Vec::new();
        let mut path_names = HashMap::new();
        if let Some(b) = &topology {
            for k in ["link", "path"] {
                if t.map.contains_key(k) {
                    return Err(self.e(k, format!("a [topology] makes the links and paths: leave out [[{k}]]")));
                }
            }
            for (i, l) in b.links.iter().enumerate() {
                link_names.insert(l.name.clone(), i);
            }
            link_specs = b.links.clone();
        } else {
            let links = self.array(&t, "link")?;
            if links.is_empty() {
                return Err(self.e("link", "at least one [[link]] is needed"));
            }
            self.at_most(links.len(), MAX_LINKS, "link", "links")?;
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
            self.at_most(paths.len(), MAX_PATHS, "path", "paths")?;
            for (i, pv) in paths.iter().enumerate() {
                let key = format!("path[{i}]");
                let p = self.path(pv, &key, &link_names)?;
                if path_names.insert(p.name.clone(), i).is_some() {
                    return Err(self.e(&format!("{key}.name"), format!("duplicate path name '{}'", p.name)));
                }
                path_specs.push(p);
            }
        }
        // `load` is a share of a host's access link: the first tier's rate
        let mut router = topology.as_ref().map(|b| Router::new(&b.topology, seed, b.links[0].rate_bps));

        let flows = self.array(&t, "flow")?;
        let backgrounds = self.array(&t, "background")?;
        if flows.is_empty() && backgrounds.is_empty() && !t.map.contains_key("traffic") {
            return Err(self.e("flow", "at least one [[flow]] is needed"));
        }
        self.at_most(flows.len(), MAX_FLOWS, "flow", "flows")?;
        let mut flow_specs = Vec::new();
        let mut flow_names = HashMap::new();
        for (i, fv) in flows.iter().enumerate() {
            let key = format!("flow[{i}]");
            let f = match router.as_mut() {
                Some(r) => {
                    let fv = self.host_flow(fv, &key, i, r, &mut Paths { specs: &mut path_specs, names: &mut path_names })?;
                    self.flow(&fv, &key, i, &path_names, &tcp_defaults, duration)?
                }
                None => {
                    if let Some(k) = ["from", "to"].into_iter().find(|k| fv.get(k).is_some()) {
                        return Err(self.e(&join(&key, k), "naming hosts needs a [topology]; without one a flow names its path or paths"));
                    }
                    self.flow(fv, &key, i, &path_names, &tcp_defaults, duration)?
                }
            };
            if flow_names.insert(f.name.clone(), i).is_some() {
                return Err(self.e(&format!("{key}.name"), format!("duplicate flow name '{}'", f.name)));
            }
            flow_specs.push(f);
        }
        if let (Some(tv), Some(r)) = (t.map.get("traffic"), router.as_mut()) {
            let mut paths = Paths { specs: &mut path_specs, names: &mut path_names };
            for f in self.traffic(tv, r, &mut paths, &tcp_defaults, duration)? {
                if flow_specs.len() >= MAX_FLOWS {
                    return Err(self.e("traffic", format!("the scenario would have more than {MAX_FLOWS} flows in all")));
                }
                if flow_names.insert(f.name.clone(), flow_specs.len()).is_some() {
                    return Err(self.e("traffic", format!("flow name '{}' is already taken", f.name)));
                }
                flow_specs.push(f);
            }
        }
        for (i, bv) in backgrounds.iter().enumerate() {
            let key = format!("background[{i}]");
            for f in self.background(bv, &key, &path_names, &path_specs, &link_specs, &tcp_defaults, duration)? {
                if flow_specs.len() >= MAX_FLOWS {
                    return Err(self.e(&key, format!("the scenario would have more than {MAX_FLOWS} flows in all")));
                }
                if flow_names.insert(f.name.clone(), flow_specs.len()).is_some() {
                    return Err(self.e(&format!("{key}.name"), format!("flow name '{}' is already taken", f.name)));
                }
                flow_specs.push(f);
            }
        }
        if metrics.pcap {
            if let Some(f) = flow_specs.iter().find(|f| f.is_quic()) {
                return Err(self.e("metrics.pcap", format!("flow '{}' runs QUIC, whose packets are not captured (docs/quic.md)", f.name)));
            }
        }
        if metrics.warmup >= duration {
            return Err(self.e(
                "metrics.warmup",
                format!("must be shorter than the duration: warmup {} against duration {}", metrics.warmup, duration),
            ));
        }
        let _ = t.allowed;
        Ok(Scenario { name, duration, seed, links: link_specs, paths: path_specs, flows: flow_specs, metrics })
    }

    fn metrics(&self, v: &Value) -> Result<MetricsSpec, ScenarioError> {
        let t = self.table(v, "metrics", &["interval", "trace", "warmup", "pcap", "pcap_limit", "pcap_payload", "qlog"])?;
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
        if let Some(b) = t.map.get("pcap") {
            m.pcap = b.as_bool().ok_or_else(|| self.e("metrics.pcap", format!("expected true or false, found {}", kind(b))))?;
        }
        if let Some(b) = t.map.get("qlog") {
            m.qlog = b.as_bool().ok_or_else(|| self.e("metrics.qlog", format!("expected true or false, found {}", kind(b))))?;
        }
        if let Some(b) = t.map.get("pcap_payload") {
            m.pcap_payload =
                b.as_bool().ok_or_else(|| self.e("metrics.pcap_payload", format!("expected true or false, found {}", kind(b))))?;
        }
        if let Some(n) = self.opt(&t, "pcap_limit", units::bytes)? {
            if n < 1024 {
                return Err(self.e("metrics.pcap_limit", "must be at least 1KB"));
            }
            m.pcap_limit = n;
        }
        Ok(m)
    }

    // ----- small readers -----

    /// Refuses a list longer than `max`, naming the key and the limit.
    pub(super) fn at_most(&self, n: usize, max: usize, key: &str, what: &str) -> Result<(), ScenarioError> {
        if n > max {
            return Err(self.e(key, format!("at most {max} {what} (got {n})")));
        }
        Ok(())
    }

    pub(super) fn array<'v>(&self, t: &Table<'v>, k: &str) -> Result<&'v [Value], ScenarioError> {
        match t.map.get(k) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a.as_slice()),
            Some(v) => Err(self.e(&join(&t.path, k), format!("expected a list of tables ([[{k}]]), found {}", kind(v)))),
        }
    }

    pub(super) fn opt_string(&self, t: &Table, k: &str) -> Result<Option<String>, ScenarioError> {
        match t.map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(self.e(&join(&t.path, k), "must not be empty")),
            Some(v) => Err(self.e(&join(&t.path, k), format!("expected a string, found {}", kind(v)))),
        }
    }

    pub(super) fn req_string(&self, t: &Table, k: &str) -> Result<String, ScenarioError> {
        self.opt_string(t, k)?.ok_or_else(|| self.e(&join(&t.path, k), "missing"))
    }

    /// An optional name (of the scenario, a link, a path, a flow or a background mix): names
    /// become file names (a flow's capture is `<flow>.pcap`) and stand in one-line messages,
    /// so they hold no `/`, `\\`, control character or line separator (U+2028, U+2029), do not
    /// start with `.`, and are at most
    /// [`MAX_NAME_CHARS`] characters long.
    pub(super) fn opt_name(&self, t: &Table, k: &str) -> Result<Option<String>, ScenarioError> {
        let Some(name) = self.opt_string(t, k)? else { return Ok(None) };
        let problem = if name.chars().count() > MAX_NAME_CHARS {
            Some(format!("is longer than {MAX_NAME_CHARS} characters"))
        } else if let Some(c) = name.chars().find(|&c| breaks_a_line(c) || c == '/' || c == '\\') {
            Some(format!("holds {c:?}, which a file name cannot"))
        } else if name.starts_with('.') {
            Some("starts with '.'".into())
        } else {
            None
        };
        match problem {
            Some(p) => Err(self.e(
                &join(&t.path, k),
                format!("the name {:?} {p}: names become file names, so they hold no '/', '\\', control character or line separator, do not start with '.', and are at most {MAX_NAME_CHARS} characters long", name.escape_debug().to_string()),
            )),
            None => Ok(Some(name)),
        }
    }

    pub(super) fn req_name(&self, t: &Table, k: &str) -> Result<String, ScenarioError> {
        self.opt_name(t, k)?.ok_or_else(|| self.e(&join(&t.path, k), "missing"))
    }

    pub(super) fn req_f64(&self, t: &Table, k: &str) -> Result<f64, ScenarioError> {
        match t.map.get(k) {
            None => Err(self.e(&join(&t.path, k), "missing")),
            Some(v) => v.as_f64().ok_or_else(|| self.e(&join(&t.path, k), format!("expected a number, found {}", kind(v)))),
        }
    }

    /// Reads an optional quantity written as a string with a unit or as a bare number.
    pub(super) fn opt<T>(&self, t: &Table, k: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Option<T>, ScenarioError> {
        let key = join(&t.path, k);
        match t.map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => parse(s).map(Some).map_err(|m| self.e(&key, format!("{m} (got '{s}')"))),
            Some(Value::Number(n)) => parse(&n.to_string()).map(Some).map_err(|m| self.e(&key, format!("{m} (got {n})"))),
            Some(v) => Err(self.e(&key, format!("expected a quantity like \"10Mbps\" or \"20ms\", found {}", kind(v)))),
        }
    }

    pub(super) fn req<T>(&self, t: &Table, k: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<T, ScenarioError> {
        self.opt(t, k, parse)?.ok_or_else(|| self.e(&join(&t.path, k), "missing"))
    }
}

pub(super) fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a table",
    }
}

/// A value as a message shows it: numbers and short strings as they are, others by kind.
pub(super) fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("{:?}", s.escape_debug().to_string()),
        other => kind(other).to_string(),
    }
}

/// The allowed key closest to a misspelt one, if any is close.
pub(super) fn closest<'k>(k: &str, allowed: &[&'k str]) -> Option<&'k str> {
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

/// A control character, or a Unicode line or paragraph separator (U+2028, U+2029): what would
/// break a one-line message or a file name.
fn breaks_a_line(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}
