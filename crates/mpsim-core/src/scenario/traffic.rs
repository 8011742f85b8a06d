//! Traffic over a topology (`[traffic]`): who sends to whom (a traffic matrix), how much
//! (without end, a fixed size or sizes from a Pareto distribution) and when (at the start, or
//! at Poisson arrival times), as flows over ECMP routes. Also the `from`/`to` of hand-written
//! flows beside a topology.

use super::reader::{join, shown, Reader};
use super::topology::{FiveTuple, Topology};
use super::units;
use super::*;
use crate::rng::Rng;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The traffic matrices, for `mpsim list` and the docs.
pub const MATRICES: &[(&str, &str)] = &[
    ("permutation", "every host sends to exactly one other host and receives from exactly one (a seeded derangement)"),
    ("random", "every host sends to one other host drawn at random; a host may receive from several"),
    ("all_to_all", "every host sends to every other host"),
    ("incast", "`senders` hosts drawn at random send to one `receiver` (default h0)"),
];

/// The flow keys `[traffic]` passes on to every flow it generates.
const FLOW_KEYS: &[&str] = &["cc", "scheduler", "transport", "tcp"];

/// The first source port a connection may take and the number of ports (Linux's default
/// ip_local_port_range, 32768-60999); the port every receiver listens on.
const PORT_BASE: u16 = 32768;
const PORTS: u64 = 28232;
pub const LISTEN_PORT: u16 = 5001;

/// A derangement of `0..n` (n >= 2) drawn uniformly: Fisher-Yates shuffles until no element
/// stays in place (about e tries on average).
pub fn derangement(n: usize, rng: &mut Rng) -> Vec<usize> {
    loop {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, rng.below(i as u64 + 1) as usize);
        }
        if p.iter().enumerate().all(|(i, &d)| i != d) {
            return p;
        }
    }
}

/// Flow sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Size {
    /// Without end.
    Bulk,
    Fixed(u64),
    /// Pareto with this mean and shape (> 1): scale mean·(shape−1)/shape.
    Pareto {
        mean: f64,
        shape: f64,
    },
}

impl Size {
    fn mean(&self) -> Option<f64> {
        match *self {
            Size::Bulk => None,
            Size::Fixed(b) => Some(b as f64),
            Size::Pareto { mean, .. } => Some(mean),
        }
    }
    fn draw(&self, rng: &mut Rng) -> Option<u64> {
        match *self {
            Size::Bulk => None,
            Size::Fixed(b) => Some(b),
            Size::Pareto { mean, shape } => {
                let scale = mean * (shape - 1.0) / shape;
                let u = 1.0 - rng.next_f64(); // in (0, 1]
                Some((scale / u.powf(1.0 / shape)).round().clamp(1.0, 1e15) as u64)
            }
        }
    }
}

/// Route-finding state shared by every flow of a scenario.
pub(super) struct Router<'t> {
    pub topology: &'t Topology,
    seed: u64,
    /// The rate of a host's link into the network (what `load` is a share of).
    access_bps: u64,
    /// Hops to the switch of each destination host used so far.
    distances: HashMap<usize, Vec<u32>>,
}

impl<'t> Router<'t> {
    pub fn new(topology: &'t Topology, seed: u64, access_bps: u64) -> Router<'t> {
        Router { topology, seed, access_bps, distances: HashMap::new() }
    }

    /// The routes of `subflows` connections from `src` to `dst` of the flow `name`, each with
    /// its own source port drawn from the stream `ports/<name>`.
    ///
    /// A route to a host is the route to its switch and the switch's link down to it (the
    /// host has no other neighbour, so the shortest paths and their hashes are the same): one
    /// breadth-first search per switch, not per host, however many hosts there are.
    pub fn routes(&mut self, name: &str, src: usize, dst: usize, subflows: usize) -> Vec<Vec<usize>> {
        let t = self.topology;
        let (switch, down) = t.access(dst);
        let dist = self.distances.entry(switch).or_insert_with(|| t.distances(switch));
        let mut rng = Rng::substream(self.seed, &format!("ports/{name}"));
        let mut ports: Vec<u16> = Vec::with_capacity(subflows);
        while ports.len() < subflows {
            let p = PORT_BASE + rng.below(PORTS) as u16;
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        ports
            .iter()
            .map(|&p| {
                let mut links = t.route(src, dist, &FiveTuple::tcp(src, dst, p, LISTEN_PORT));
                links.push(down);
                links
            })
            .collect()
    }
}

/// The paths of the scenario as they are made.
pub(super) struct Paths<'a> {
    pub specs: &'a mut Vec<PathSpec>,
    pub names: &'a mut HashMap<String, usize>,
}

impl Paths<'_> {
    /// Adds one path per route, named after the flow (`<flow>` alone, `<flow>.<i>` for each
    /// of several), and returns the flow's `path` or `paths` key and value.
    fn add(&mut self, flow: &str, routes: Vec<Vec<usize>>) -> Result<(&'static str, Value), String> {
        let n = routes.len();
        if self.specs.len() + n > MAX_PATHS {
            return Err(format!("the scenario would have more than {MAX_PATHS} paths"));
        }
        let mut names = Vec::new();
        for (i, links) in routes.into_iter().enumerate() {
            let name = if n == 1 { flow.to_string() } else { format!("{flow}.{i}") };
            if self.names.insert(name.clone(), self.specs.len()).is_some() {
                return Err(format!("path name '{name}' is already taken"));
            }
            self.specs.push(PathSpec { name: name.clone(), links });
            names.push(Value::String(name));
        }
        Ok(if n == 1 { ("path", names.pop().unwrap_or_default()) } else { ("paths", Value::Array(names)) })
    }
}

impl Reader<'_> {
    /// The number of subflows (`subflows`, 1 to 8; 1 when absent).
    fn subflows(&self, t: &Map<String, Value>, key: &str) -> Result<usize, ScenarioError> {
        match t.get("subflows") {
            None => Ok(1),
            Some(v) => match v.as_u64() {
                Some(n @ 1..=8) => Ok(n as usize),
                _ => Err(self.e(&join(key, "subflows"), format!("expected 1 (TCP) to 8 (Multipath TCP subflows), found {}", shown(v)))),
            },
        }
    }

    /// A hand-written flow beside a topology naming hosts (`from`, `to`, `subflows`): the flow
    /// with its paths in their place.
    pub(super) fn host_flow(&self, v: &Value, key: &str, i: usize, router: &mut Router, paths: &mut Paths) -> Result<Value, ScenarioError> {
        let Some(map) = v.as_object().filter(|m| m.contains_key("from") || m.contains_key("to")) else {
            return Ok(v.clone());
        };
        let mut map = map.clone();
        let t = router.topology;
        let mut host = |k: &str| -> Result<usize, ScenarioError> {
            let hv = map.remove(k).ok_or_else(|| self.e(&join(key, k), "missing: a flow beside a topology names both hosts (from, to)"))?;
            let name = hv.as_str().unwrap_or_default();
            t.host(name).ok_or_else(|| self.e(&join(key, k), format!("no host named {} (hosts: h0 to h{})", shown(&hv), t.hosts - 1)))
        };
        let (src, dst) = (host("from")?, host("to")?);
        if src == dst {
            return Err(self.e(&join(key, "to"), "a flow goes from one host to another"));
        }
        for k in ["path", "paths"] {
            if map.contains_key(k) {
                return Err(self.e(&join(key, k), "a flow naming hosts (from, to) takes its paths from the topology's routes"));
            }
        }
        let n = self.subflows(&map, key)?;
        map.remove("subflows");
        let name = match map.get("name").and_then(Value::as_str) {
            Some(s) => s.to_string(),
            None => format!("flow{i}"),
        };
        let (k, pv) = paths.add(&name, router.routes(&name, src, dst, n)).map_err(|m| self.e(key, m))?;
        map.insert(k.into(), pv);
        Ok(Value::Object(map))
    }

    /// The flows `[traffic]` generates.
    pub(super) fn traffic(
        &self,
        v: &Value,
        router: &mut Router,
        paths: &mut Paths,
        tcp_defaults: &TcpConfig,
        duration: Dur,
    ) -> Result<Vec<FlowSpec>, ScenarioError> {
        let key = "traffic";
        let t = self.table(
            v,
            key,
            &["matrix", "subflows", "cc", "scheduler", "transport", "tcp", "start", "size", "load", "rate", "senders", "receiver"],
        )?;
        let topo = router.topology;
        let hosts = topo.hosts;
        if hosts < 2 {
            return Err(self.e(key, "traffic needs at least two hosts"));
        }
        let seed = router.seed;
        let mut rng = Rng::substream(seed, "traffic/matrix");
        let matrix = self.req_string(&t, "matrix")?;
        let only = |k: &str, m: &str| -> Result<(), ScenarioError> {
            if t.map.contains_key(k) && matrix != m {
                return Err(self.e(&join(key, k), format!("only an {m} matrix has `{k}`")));
            }
            Ok(())
        };
        only("senders", "incast")?;
        only("receiver", "incast")?;
        let pairs: Vec<(usize, usize)> = match matrix.as_str() {
            "permutation" => derangement(hosts, &mut rng).into_iter().enumerate().collect(),
            "random" => (0..hosts)
                .map(|s| {
                    let d = rng.below(hosts as u64 - 1) as usize;
                    (s, if d >= s { d + 1 } else { d })
                })
                .collect(),
            "all_to_all" => {
                self.at_most(hosts * (hosts - 1), MAX_FLOWS, &join(key, "matrix"), "flows")?;
                (0..hosts).flat_map(|s| (0..hosts).filter(move |&d| d != s).map(move |d| (s, d))).collect()
            }
            "incast" => {
                let receiver = match t.map.get("receiver") {
                    None => 0,
                    Some(rv) => topo.host(rv.as_str().unwrap_or_default()).ok_or_else(|| {
                        self.e(&join(key, "receiver"), format!("no host named {} (hosts: h0 to h{})", shown(rv), hosts - 1))
                    })?,
                };
                let sv =
                    t.map.get("senders").ok_or_else(|| self.e(&join(key, "senders"), "missing: how many hosts send to the receiver"))?;
                let n = sv.as_u64().filter(|&n| n >= 1 && n < hosts as u64).ok_or_else(|| {
                    self.e(
                        &join(key, "senders"),
                        format!("expected a whole number from 1 to {} (the other hosts), found {}", hosts - 1, shown(sv)),
                    )
                })? as usize;
                let mut others: Vec<usize> = (0..hosts).filter(|&h| h != receiver).collect();
                for i in 0..n {
                    let j = i + rng.below((others.len() - i) as u64) as usize;
                    others.swap(i, j);
                }
                others[..n].iter().map(|&s| (s, receiver)).collect()
            }
            other => {
                let names: Vec<&str> = MATRICES.iter().map(|m| m.0).collect();
                return Err(
                    self.e(&join(key, "matrix"), format!("unknown traffic matrix '{other}'; expected one of: {}", names.join(", ")))
                );
            }
        };
        let size = self.flow_size(&t, key)?;
        let start = self.opt(&t, "start", units::duration)?.unwrap_or(Dur::ZERO);
        if start >= duration {
            return Err(self.e(&join(key, "start"), "the traffic starts after the simulation ends"));
        }
        // flows per second from each pair: None, one flow per pair at `start`
        let per_pair = self.arrival_rate(&t, key, size, &pairs, router.access_bps)?;
        let subflows = self.subflows(t.map, key)?;
        let mut common = Map::new();
        for &k in FLOW_KEYS {
            if let Some(x) = t.map.get(k) {
                common.insert(k.into(), x.clone());
            }
        }
        let mut size_rng = Rng::substream(seed, "traffic/size");
        let mut arrivals = Rng::substream(seed, "traffic/arrivals");
        let mut flows = Vec::new();
        let mut template: Option<FlowSpec> = None;
        for &(src, dst) in &pairs {
            let pair = format!("{}->{}", topo.nodes[src], topo.nodes[dst]);
            let mut times = Vec::new();
            match per_pair.as_ref().map(|r| r[src]) {
                None => times.push((pair.clone(), start)),
                Some(lambda) => {
                    let mut at = start.as_secs_f64();
                    loop {
                        at += -(1.0 - arrivals.next_f64()).ln() / lambda;
                        if at >= duration.as_secs_f64() {
                            break;
                        }
                        if flows.len() + times.len() >= MAX_FLOWS {
                            return Err(self.e(&join(key, "load"), format!("the traffic would make more than {MAX_FLOWS} flows")));
                        }
                        times.push((format!("{pair}#{}", times.len()), Dur((at * 1e9) as u64)));
                    }
                }
            }
            for (name, at) in times {
                let (k, pv) = paths.add(&name, router.routes(&name, src, dst, subflows)).map_err(|m| self.e(key, m))?;
                let mut spec = match &template {
                    // every flow of the traffic has the same settings: read them once
                    Some(f) => {
                        let mut f = f.clone();
                        f.paths = paths_of(&pv, paths);
                        f
                    }
                    _ => {
                        let mut m = common.clone();
                        m.insert("name".into(), Value::String(name.clone()));
                        m.insert(k.into(), pv.clone());
                        let f = self.flow(&Value::Object(m), key, 0, paths.names, tcp_defaults, duration)?;
                        template = Some(f.clone());
                        f
                    }
                };
                spec.name = name;
                spec.start = SimTime(at.0);
                spec.app = AppSpec::Bulk { bytes: size.draw(&mut size_rng) };
                flows.push(spec);
            }
        }
        Ok(flows)
    }

    /// `size`: absent (bulk), a size (`"1MB"`) or `{ dist = "pareto", mean = "100KB", shape = 1.1 }`.
    fn flow_size(&self, t: &Table, key: &str) -> Result<Size, ScenarioError> {
        let skey = join(key, "size");
        match t.map.get("size") {
            None => Ok(Size::Bulk),
            Some(Value::Object(_)) => {
                let st = self.table(&t.map["size"], &skey, &["dist", "mean", "shape"])?;
                let dist = self.req_string(&st, "dist")?;
                if dist != "pareto" {
                    return Err(self.e(&join(&skey, "dist"), format!("unknown size distribution '{dist}'; expected pareto")));
                }
                let mean = self.req(&st, "mean", units::bytes)?;
                let shape = self.req_f64(&st, "shape")?;
                if mean == 0 {
                    return Err(self.e(&join(&skey, "mean"), "must be greater than zero"));
                }
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(self.e(&join(&skey, "shape"), format!("must be above 1 for the mean to exist (got {shape})")));
                }
                Ok(Size::Pareto { mean: mean as f64, shape })
            }
            Some(_) => match self.req(t, "size", units::bytes)? {
                0 => Err(self.e(&skey, "must be greater than zero (omit it to send without end)")),
                b => Ok(Size::Fixed(b)),
            },
        }
    }

    /// Poisson arrivals per sending host: `load` (a fraction of its access link's rate) or
    /// `rate` (flows per second), shared by the host's pairs. Per host: flows per second from
    /// each of its pairs.
    fn arrival_rate(
        &self,
        t: &Table,
        key: &str,
        size: Size,
        pairs: &[(usize, usize)],
        access_bps: u64,
    ) -> Result<Option<Vec<f64>>, ScenarioError> {
        let per_host = match (t.map.get("load"), t.map.get("rate")) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err(self.e(&join(key, "rate"), "give `load` or `rate`, not both")),
            (l, _) => {
                let k = if l.is_some() { "load" } else { "rate" };
                let Some(mean) = size.mean() else {
                    return Err(self.e(&join(key, k), "arrivals need flow sizes: give `size` too"));
                };
                if l.is_some() {
                    let load = self.req(t, "load", units::fraction_any)?;
                    if load <= 0.0 {
                        return Err(self.e(&join(key, "load"), "must be above 0"));
                    }
                    access_bps as f64 * load / (8.0 * mean)
                } else {
                    let r = self.req_f64(t, "rate")?;
                    if !(r > 0.0 && r.is_finite()) {
                        return Err(self.e(&join(key, "rate"), "expected flows per second, above 0"));
                    }
                    r
                }
            }
        };
        let mut count = HashMap::new();
        for &(s, _) in pairs {
            *count.entry(s).or_insert(0usize) += 1;
        }
        let n = pairs.iter().map(|p| p.0).max().unwrap_or(0) + 1;
        Ok(Some((0..n).map(|s| count.get(&s).map_or(0.0, |&c| per_host / c as f64)).collect()))
    }
}

/// The path indices of a flow's `path` or `paths` value.
fn paths_of(v: &Value, paths: &Paths) -> Vec<usize> {
    match v {
        Value::Array(a) => a.iter().filter_map(|x| paths.names.get(x.as_str()?).copied()).collect(),
        other => other.as_str().and_then(|n| paths.names.get(n).copied()).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_is_a_derangement() {
        for seed in 0..50 {
            let mut rng = Rng::from_seed(seed);
            let p = derangement(16, &mut rng);
            let mut seen = p.clone();
            seen.sort();
            assert_eq!(seen, (0..16).collect::<Vec<_>>(), "everyone receives exactly once");
            assert!(p.iter().enumerate().all(|(i, &d)| i != d), "no one sends to itself");
        }
        assert_ne!(derangement(16, &mut Rng::from_seed(1)), derangement(16, &mut Rng::from_seed(2)));
        assert_eq!(derangement(2, &mut Rng::from_seed(5)), vec![1, 0]);
    }

    #[test]
    fn routes_through_the_switch_of_the_destination_are_those_to_the_host() {
        // the search per switch gives every route the search per host gives, hashes included
        for t in [Topology::fat_tree(4, 3), Topology::leaf_spine(3, 2, 3, 4), Topology::dumbbell(3, 5)] {
            let mut router = Router::new(&t, 9, 1);
            for src in 0..t.hosts {
                for dst in (0..t.hosts).filter(|&d| d != src) {
                    let name = format!("f{src}_{dst}");
                    let ours = router.routes(&name, src, dst, 4);
                    let mut rng = Rng::substream(9, &format!("ports/{name}"));
                    let mut ports: Vec<u16> = Vec::new();
                    while ports.len() < 4 {
                        let p = PORT_BASE + rng.below(PORTS) as u16;
                        if !ports.contains(&p) {
                            ports.push(p);
                        }
                    }
                    let dist = t.distances(dst);
                    let theirs: Vec<Vec<usize>> =
                        ports.iter().map(|&p| t.route(src, &dist, &FiveTuple::tcp(src, dst, p, LISTEN_PORT))).collect();
                    assert_eq!(ours, theirs, "{} h{src} to h{dst}", t.kind);
                }
            }
            assert!(router.distances.len() < t.hosts, "{}: one search per switch", t.kind);
        }
    }

    #[test]
    fn pareto_sizes_have_their_mean() {
        let s = Size::Pareto { mean: 100_000.0, shape: 2.5 };
        let mut rng = Rng::from_seed(3);
        let n = 200_000;
        let total: f64 = (0..n).map(|_| s.draw(&mut rng).unwrap() as f64).sum();
        let mean = total / n as f64;
        assert!((mean - 100_000.0).abs() < 3_000.0, "{mean}");
        let min = (0..1000).map(|_| s.draw(&mut rng).unwrap()).min().unwrap();
        assert!(min >= 60_000, "the scale is mean (shape-1)/shape: {min}");
    }
}
