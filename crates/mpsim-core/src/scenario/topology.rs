//! Datacenter topologies (`[topology]`): fat trees, leaf-spine fabrics and dumbbells, built
//! as hosts, switches and cables, and routes through them chosen as ECMP switches choose.
//!
//! A cable between two nodes is two scenario links, one per direction, named
//! `"<from>><to>"` (`h0>e0_0` carries data up from host h0 to edge switch e0_0, `e0_0>h0`
//! carries data down). Each link's reverse direction carries the ACKs of the data crossing
//! its forward direction, back along the same route: ACKs never queue behind data, and they
//! return over the switches their data crossed rather than being hashed on their own.
//!
//! Routes are computed, not listed. Between two hosts every shortest path is allowed; at
//! each switch with several next hops on a shortest path to the destination the switch picks
//! one by a hash of the packet's 5-tuple (addresses, ports, protocol) keyed by a per-switch
//! seed derived from the scenario seed (stream `ecmp/<switch>`). A 5-tuple therefore follows
//! one path: a TCP flow one, each Multipath TCP subflow (its own source port) its own, and
//! two subflows may land on the same path.

use super::reader::{join, Reader};
use super::*;
use crate::rng::Rng;
use serde_json::{Map, Value};

/// The link keys a topology or one of its tiers may set for its links.
const LINK_KEYS: &[&str] = &["rate", "delay", "queue", "loss", "aqm", "reverse_aqm"];

/// The kinds of topology and their tiers of cables (each tier named after the layer a cable
/// climbs to from the hosts' side), for `mpsim list` and the docs.
pub const TOPOLOGIES: &[(&str, &[&str], &str)] = &[
    (
        "fat_tree",
        &["edge", "aggregation", "core"],
        "k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts (`k`, even)",
    ),
    ("leaf_spine", &["leaf", "spine"], "every leaf to every spine (`leaves`, `spines`, `hosts_per_leaf`, `oversubscription`)"),
    (
        "vl2",
        &["tor", "aggregation", "intermediate"],
        "VL2: ToRs dual-homed to aggregation switches, every aggregation switch to every intermediate switch (`tors`, `aggregations`, `intermediates`, `hosts_per_tor`)",
    ),
    ("dumbbell", &["access", "bottleneck"], "`hosts` hosts on each side of one bottleneck between two routers r0 and r1"),
];

/// What the switches' ECMP hash covers (`[topology] ecmp`), for `mpsim list` and the docs.
pub const ECMP_HASHES: &[(&str, &str)] = &[
    ("five_tuple", "addresses, ports and protocol (the default): each connection, and each Multipath TCP subflow, hashed on its own"),
    ("addresses", "source and destination address only: every connection and subflow between two hosts takes one path"),
];

/// The largest number of hosts a topology may have.
pub const MAX_HOSTS: usize = 65_536;

/// The transport protocol number in the 5-tuple (TCP).
const PROTO_TCP: u8 = 6;

/// A packet's 5-tuple as ECMP hashes it. Host `i` has address `i + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

impl FiveTuple {
    pub fn tcp(src_host: usize, dst_host: usize, sport: u16, dport: u16) -> FiveTuple {
        FiveTuple { src: src_host as u32 + 1, dst: dst_host as u32 + 1, sport, dport, proto: PROTO_TCP }
    }
}

/// splitmix64's finaliser: a good 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hash a switch with seed `seed` computes over a 5-tuple.
pub fn ecmp_hash(seed: u64, t: &FiveTuple) -> u64 {
    let addrs = (t.src as u64) << 32 | t.dst as u64;
    let rest = (t.sport as u64) << 24 | (t.dport as u64) << 8 | t.proto as u64;
    mix(seed ^ mix(addrs ^ mix(rest)))
}

/// Hosts, switches and cables. Hosts are nodes `0..hosts`, named `h<i>`.
#[derive(Clone, Debug)]
pub struct Topology {
    pub kind: &'static str,
    pub nodes: Vec<String>,
    pub hosts: usize,
    /// (lower node, upper node, tier): cable `c` is links `2c` (lower to upper) and `2c + 1`.
    pub cables: Vec<(u32, u32, u8)>,
    /// Per node: (neighbour, the link from this node to it), in cable order.
    adj: Vec<Vec<(u32, u32)>>,
    /// Per node: its ECMP seed.
    seeds: Vec<u64>,
    /// Whether ECMP hashes the ports (`ecmp = "five_tuple"`) or the addresses alone.
    pub hash_ports: bool,
}

impl Topology {
    fn new(kind: &'static str, hosts: usize) -> Topology {
        let nodes = (0..hosts).map(|i| format!("h{i}")).collect();
        Topology { kind, nodes, hosts, cables: Vec::new(), adj: Vec::new(), seeds: Vec::new(), hash_ports: true }
    }

    fn node(&mut self, name: String) -> u32 {
        self.nodes.push(name);
        (self.nodes.len() - 1) as u32
    }

    fn cable(&mut self, lower: u32, upper: u32, tier: u8) {
        self.cables.push((lower, upper, tier));
    }

    /// Adjacency and seeds, once every node and cable is in.
    fn finish(mut self, seed: u64) -> Topology {
        self.adj = vec![Vec::new(); self.nodes.len()];
        for (c, &(a, b, _)) in self.cables.iter().enumerate() {
            self.adj[a as usize].push((b, 2 * c as u32));
            self.adj[b as usize].push((a, 2 * c as u32 + 1));
        }
        self.seeds = self.nodes.iter().map(|n| Rng::substream(seed, &format!("ecmp/{n}")).next_u64()).collect();
        self
    }

    /// A fat tree of `k` pods (Al-Fares et al., SIGCOMM 2008): pod p has edge switches
    /// `e<p>_<i>` and aggregation switches `a<p>_<i>` (i < k/2), every edge switch linked to
    /// every aggregation switch of its pod and to k/2 hosts; aggregation switch `a<p>_<i>` is
    /// linked to core switches `c<i*k/2>` .. `c<i*k/2 + k/2 - 1>`. Host `h<i>` sits under
    /// edge switch `e<i / (k/2)^2>_<(i / (k/2)) mod (k/2)>`.
    pub fn fat_tree(k: usize, seed: u64) -> Topology {
        let half = k / 2;
        let mut t = Topology::new("fat_tree", k * half * half);
        let mut edge = Vec::new();
        let mut agg = Vec::new();
        for p in 0..k {
            edge.push((0..half).map(|i| t.node(format!("e{p}_{i}"))).collect::<Vec<_>>());
        }
        for p in 0..k {
            agg.push((0..half).map(|i| t.node(format!("a{p}_{i}"))).collect::<Vec<_>>());
        }
        let core: Vec<u32> = (0..half * half).map(|j| t.node(format!("c{j}"))).collect();
        for h in 0..t.hosts {
            let (p, i) = (h / (half * half), (h / half) % half);
            t.cable(h as u32, edge[p][i], 0);
        }
        for (pod_edges, pod_aggs) in edge.iter().zip(&agg) {
            for &e in pod_edges {
                for &a in pod_aggs {
                    t.cable(e, a, 1);
                }
            }
        }
        for pod_aggs in &agg {
            for (m, &a) in pod_aggs.iter().enumerate() {
                for &c in &core[m * half..(m + 1) * half] {
                    t.cable(a, c, 2);
                }
            }
        }
        t.finish(seed)
    }

    /// Leaves `l<i>` with `hosts_per_leaf` hosts each (host `h<i>` under leaf
    /// `l<i / hosts_per_leaf>`), every leaf linked to every spine `s<j>`.
    pub fn leaf_spine(leaves: usize, spines: usize, hosts_per_leaf: usize, seed: u64) -> Topology {
        let mut t = Topology::new("leaf_spine", leaves * hosts_per_leaf);
        let leaf: Vec<u32> = (0..leaves).map(|i| t.node(format!("l{i}"))).collect();
        let spine: Vec<u32> = (0..spines).map(|j| t.node(format!("s{j}"))).collect();
        for h in 0..t.hosts {
            t.cable(h as u32, leaf[h / hosts_per_leaf], 0);
        }
        for &l in &leaf {
            for &s in &spine {
                t.cable(l, s, 1);
            }
        }
        t.finish(seed)
    }

    /// VL2 (Greenberg et al., SIGCOMM 2009): ToRs `t<i>` with `hosts_per_tor` hosts each (host
    /// `h<i>` under `t<i / hosts_per_tor>`), each ToR dual-homed to aggregation switches
    /// `a<2i mod aggregations>` and `a<(2i + 1) mod aggregations>`, every aggregation switch
    /// linked to every intermediate switch `i<j>`.
    pub fn vl2(tors: usize, aggregations: usize, intermediates: usize, hosts_per_tor: usize, seed: u64) -> Topology {
        let mut t = Topology::new("vl2", tors * hosts_per_tor);
        let tor: Vec<u32> = (0..tors).map(|i| t.node(format!("t{i}"))).collect();
        let agg: Vec<u32> = (0..aggregations).map(|i| t.node(format!("a{i}"))).collect();
        let int: Vec<u32> = (0..intermediates).map(|j| t.node(format!("i{j}"))).collect();
        for h in 0..t.hosts {
            t.cable(h as u32, tor[h / hosts_per_tor], 0);
        }
        for (i, &r) in tor.iter().enumerate() {
            t.cable(r, agg[2 * i % aggregations], 1);
            t.cable(r, agg[(2 * i + 1) % aggregations], 1);
        }
        for &a in &agg {
            for &m in &int {
                t.cable(a, m, 2);
            }
        }
        t.finish(seed)
    }

    /// Hosts `h0` .. `h<n-1>` on router `r0`, `h<n>` .. `h<2n-1>` on router `r1`, and the
    /// bottleneck cable between the routers.
    pub fn dumbbell(n: usize, seed: u64) -> Topology {
        let mut t = Topology::new("dumbbell", 2 * n);
        let r = [t.node("r0".into()), t.node("r1".into())];
        for h in 0..t.hosts {
            t.cable(h as u32, r[h / n], 0);
        }
        t.cable(r[0], r[1], 1);
        t.finish(seed)
    }

    /// The name of the scenario link `l` (`2c` or `2c + 1` of cable `c`).
    pub fn link_name(&self, l: usize) -> String {
        let (a, b, _) = self.cables[l / 2];
        let (from, to) = if l.is_multiple_of(2) { (a, b) } else { (b, a) };
        format!("{}>{}", self.nodes[from as usize], self.nodes[to as usize])
    }

    /// The index of host `name` (`h<i>`).
    pub fn host(&self, name: &str) -> Option<usize> {
        let i: usize = name.strip_prefix('h')?.parse().ok()?;
        (i < self.hosts && format!("h{i}") == name).then_some(i)
    }

    /// The switch host `h` hangs from (every topology links a host to exactly one switch)
    /// and the link from that switch down to the host (the cable's other direction).
    pub fn access(&self, h: usize) -> (usize, usize) {
        let (switch, up) = self.adj[h][0];
        (switch as usize, up as usize + 1)
    }

    /// Hops from every node to node `dst` (breadth first; hosts do not forward).
    pub fn distances(&self, dst: usize) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.nodes.len()];
        dist[dst] = 0;
        let mut frontier = vec![dst as u32];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for &n in &frontier {
                if n as usize != dst && (n as usize) < self.hosts {
                    continue;
                }
                for &(m, _) in &self.adj[n as usize] {
                    if dist[m as usize] == u32::MAX {
                        dist[m as usize] = dist[n as usize] + 1;
                        next.push(m);
                    }
                }
            }
            frontier = next;
        }
        dist
    }

    /// The next hops (neighbour, link) of node `n` on shortest paths to the node `dist` was
    /// computed for.
    fn next_hops<'a>(&'a self, n: usize, dist: &'a [u32]) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.adj[n].iter().copied().filter(move |&(m, _)| dist[m as usize].wrapping_add(1) == dist[n])
    }

    /// The links a packet with 5-tuple `t` crosses from host `src` to the host `dist` was
    /// computed for: at each node, among the next hops on a shortest path, the one its hash
    /// picks.
    pub fn route(&self, src: usize, dist: &[u32], t: &FiveTuple) -> Vec<usize> {
        let hashed = if self.hash_ports { *t } else { FiveTuple { sport: 0, dport: 0, ..*t } };
        let t = &hashed;
        let mut links = Vec::new();
        let mut n = src;
        while dist[n] != 0 {
            let hops: Vec<(u32, u32)> = self.next_hops(n, dist).collect();
            let pick = if hops.len() == 1 { 0 } else { ((ecmp_hash(self.seeds[n], t) as u128 * hops.len() as u128) >> 64) as usize };
            let (m, l) = hops[pick];
            links.push(l as usize);
            n = m as usize;
        }
        links
    }

    /// The number of shortest paths from `src` to the node `dist` was computed for.
    pub fn shortest_paths(&self, src: usize, dist: &[u32]) -> u64 {
        if dist[src] == 0 {
            return 1;
        }
        self.next_hops(src, dist).map(|(m, _)| self.shortest_paths(m as usize, dist)).sum()
    }
}

/// A topology with its links as scenario links.
pub(super) struct Built {
    pub topology: Topology,
    pub links: Vec<LinkSpec>,
}

/// The keys of `[topology]`: nine every kind takes, then those that give a kind its shape.
const KEYS: [&str; 19] = [
    "kind",
    "tier",
    "rate",
    "delay",
    "queue",
    "loss",
    "aqm",
    "reverse_aqm",
    "ecmp",
    "k",
    "leaves",
    "spines",
    "hosts_per_leaf",
    "oversubscription",
    "hosts",
    "tors",
    "aggregations",
    "intermediates",
    "hosts_per_tor",
];
/// The keys that give a topology's shape: each kind takes some of them.
const SHAPE_KEYS: &[&str] = KEYS.split_at(9).1;

impl Reader<'_> {
    /// Reads `[topology]` and builds its links.
    pub(super) fn topology(&self, v: &Value, seed: u64, duration: Dur) -> Result<Built, ScenarioError> {
        let key = "topology";
        let t = self.table(v, key, &KEYS)?;
        let kinds: Vec<&str> = TOPOLOGIES.iter().map(|k| k.0).collect();
        let kind = self.req_string(&t, "kind")?;
        let Some(&(kind, tiers, _)) = TOPOLOGIES.iter().find(|k| k.0 == kind) else {
            return Err(self.e(&join(key, "kind"), format!("unknown topology '{kind}'; expected one of: {}", kinds.join(", "))));
        };
        let only: &[&str] = match kind {
            "fat_tree" => &["k"],
            "leaf_spine" => &["leaves", "spines", "hosts_per_leaf", "oversubscription"],
            "vl2" => &["tors", "aggregations", "intermediates", "hosts_per_tor"],
            _ => &["hosts"],
        };
        for &k in SHAPE_KEYS {
            if t.map.contains_key(k) && !only.contains(&k) {
                return Err(self.e(&join(key, k), format!("not a parameter of a {kind} topology (its parameters: {})", only.join(", "))));
            }
        }
        let count =
            |k: &str, min: u64| -> Result<usize, ScenarioError> {
                let v = t.map.get(k).ok_or_else(|| self.e(&join(key, k), "missing"))?;
                match v.as_u64() {
                    Some(n) if n >= min && n <= MAX_HOSTS as u64 => Ok(n as usize),
                    _ => Err(self
                        .e(&join(key, k), format!("expected a whole number from {min} to {MAX_HOSTS}, found {}", super::reader::shown(v)))),
                }
            };
        let topology = match kind {
            "fat_tree" => {
                let k = count("k", 2)?;
                if k % 2 == 1 {
                    return Err(self.e(&join(key, "k"), format!("a fat tree's k must be even (got {k})")));
                }
                self.host_limit(k * k * k / 4, 3 * k * k * k / 4, "k")?;
                Topology::fat_tree(k, seed)
            }
            "leaf_spine" => {
                let (leaves, spines, hpl) = (count("leaves", 1)?, count("spines", 1)?, count("hosts_per_leaf", 1)?);
                self.host_limit(leaves * hpl, leaves * hpl + leaves * spines, "leaves")?;
                Topology::leaf_spine(leaves, spines, hpl, seed)
            }
            "vl2" => {
                let (tors, aggs, ints, hpt) =
                    (count("tors", 1)?, count("aggregations", 2)?, count("intermediates", 1)?, count("hosts_per_tor", 1)?);
                self.host_limit(tors * hpt, tors * hpt + 2 * tors + aggs * ints, "tors")?;
                Topology::vl2(tors, aggs, ints, hpt, seed)
            }
            _ => {
                let n = count("hosts", 1)?;
                self.host_limit(2 * n, 2 * n + 1, "hosts")?;
                Topology::dumbbell(n, seed)
            }
        };
        let mut topology = topology;
        if let Some(h) = t.map.get("ecmp") {
            let names: Vec<&str> = ECMP_HASHES.iter().map(|e| e.0).collect();
            match h.as_str() {
                Some("five_tuple") => topology.hash_ports = true,
                Some("addresses") => topology.hash_ports = false,
                _ => {
                    return Err(
                        self.e(&join(key, "ecmp"), format!("expected one of: {}; found {}", names.join(", "), super::reader::shown(h)))
                    )
                }
            }
        }
        // every tier's settings: the topology's, then the tier's own
        let mut base = Map::new();
        for &k in LINK_KEYS {
            if let Some(x) = t.map.get(k) {
                base.insert(k.into(), x.clone());
            }
        }
        if !base.contains_key("rate") {
            return Err(self.e(&join(key, "rate"), "missing: the rate of every link (tiers may override it)"));
        }
        base.insert("name".into(), Value::String("topology".into()));
        let top = self.link(&Value::Object(base.clone()), key, duration)?;
        let tier_tables = match t.map.get("tier") {
            None => Map::new(),
            Some(tv) => self.table(tv, &join(key, "tier"), tiers)?.map.clone(),
        };
        let mut templates: Vec<LinkSpec> = Vec::new();
        for (ti, &tier) in tiers.iter().enumerate() {
            let tkey = format!("{key}.tier.{tier}");
            let own = match tier_tables.get(tier) {
                Some(tv) => self.table(tv, &tkey, LINK_KEYS)?.map.clone(),
                None => Map::new(),
            };
            let mut merged = base.clone();
            let mut derived = false;
            if kind == "leaf_spine" && ti == 1 {
                if let Some(o) = t.map.get("oversubscription") {
                    if own.contains_key("rate") {
                        return Err(self.e(
                            &join(key, "oversubscription"),
                            "give the spine links' rate either by oversubscription or by [topology.tier.spine] rate, not both",
                        ));
                    }
                    let ratio = o.as_f64().filter(|r| r.is_finite() && *r > 0.0).ok_or_else(|| {
                        self.e(&join(key, "oversubscription"), "expected a positive number (hosts' rate into a leaf / its uplinks' rate)")
                    })?;
                    let hpl = count("hosts_per_leaf", 1)? as f64;
                    let spines = count("spines", 1)? as f64;
                    let up = (templates[0].rate_bps as f64 * hpl / (spines * ratio)).round() as u64;
                    merged.insert("rate".into(), Value::String(format!("{}bps", up.max(1))));
                    derived = true;
                }
            }
            if own.is_empty() && !derived {
                templates.push(top.clone());
                continue;
            }
            merged.extend(own);
            templates.push(self.link(&Value::Object(merged), &tkey, duration)?);
        }
        let mut links = Vec::with_capacity(2 * topology.cables.len());
        for l in 0..2 * topology.cables.len() {
            let mut spec = templates[topology.cables[l / 2].2 as usize].clone();
            spec.name = topology.link_name(l);
            links.push(spec);
        }
        Ok(Built { topology, links })
    }

    fn host_limit(&self, hosts: usize, cables: usize, k: &str) -> Result<(), ScenarioError> {
        if hosts > MAX_HOSTS {
            return Err(self.e(&join("topology", k), format!("the topology would have {hosts} hosts; at most {MAX_HOSTS}")));
        }
        if 2 * cables > MAX_LINKS {
            return Err(
                self.e(&join("topology", k), format!("the topology would have {} links (two per cable); at most {MAX_LINKS}", 2 * cables))
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn fat_tree_counts() {
        for (k, hosts, switches) in [(4, 16, 20), (8, 128, 80)] {
            let t = Topology::fat_tree(k, 1);
            assert_eq!(t.hosts, hosts);
            assert_eq!(t.nodes.len() - t.hosts, switches, "k pods x k switches + (k/2)^2 cores");
            assert_eq!(t.cables.len(), 3 * hosts, "host, edge-aggregation and aggregation-core cables: k^3/4 each");
            for tier in 0..3 {
                assert_eq!(t.cables.iter().filter(|c| c.2 == tier).count(), hosts);
            }
        }
        let t = Topology::fat_tree(4, 1);
        assert_eq!(t.link_name(0), "h0>e0_0");
        assert_eq!(t.link_name(1), "e0_0>h0");
        assert_eq!(t.host("h15"), Some(15));
        assert_eq!((t.host("h16"), t.host("h01"), t.host("e0_0")), (None, None, None));
        assert_eq!(t.nodes.iter().filter(|n| n.starts_with('c')).count(), 4);
    }

    #[test]
    fn shortest_paths_between_hosts() {
        for k in [4, 8] {
            let t = Topology::fat_tree(k, 1);
            let half = k / 2;
            let dist = t.distances(0);
            for src in 1..t.hosts {
                let same_edge = src / half == 0;
                let same_pod = src / (half * half) == 0;
                let (hops, n) = if same_edge {
                    (2, 1)
                } else if same_pod {
                    (4, half as u64)
                } else {
                    (6, (half * half) as u64)
                };
                assert_eq!(dist[src], hops, "h{src}");
                assert_eq!(t.shortest_paths(src, &dist), n, "h{src}");
            }
        }
        let t = Topology::leaf_spine(4, 3, 2, 1);
        assert_eq!(t.shortest_paths(7, &t.distances(0)), 3);
        let t = Topology::dumbbell(2, 1);
        assert_eq!(t.route(0, &t.distances(3), &FiveTuple::tcp(0, 3, 1, 2)).len(), 3);
    }

    #[test]
    fn routes_are_shortest_and_connected() {
        let t = Topology::fat_tree(4, 7);
        let dist = t.distances(13);
        for sport in 0..50 {
            let r = t.route(0, &dist, &FiveTuple::tcp(0, 13, 40000 + sport, 5001));
            assert_eq!(r.len(), 6);
            // each link starts where the previous one ended
            let ends = |l: usize| {
                let (a, b, _) = t.cables[l / 2];
                if l.is_multiple_of(2) {
                    (a, b)
                } else {
                    (b, a)
                }
            };
            assert_eq!(ends(r[0]).0, 0);
            assert_eq!(ends(r[5]).1, 13);
            for w in r.windows(2) {
                assert_eq!(ends(w[0]).1, ends(w[1]).0);
            }
        }
    }

    #[test]
    fn ecmp_is_deterministic_per_seed_and_spreads_over_the_core() {
        let k = 8;
        let routes = |seed: u64| {
            let t = Topology::fat_tree(k, seed);
            let dist = t.distances(127);
            (0..4000u16).map(|p| t.route(0, &dist, &FiveTuple::tcp(0, 127, 30000 + p, 5001))).collect::<Vec<_>>()
        };
        assert_eq!(routes(3), routes(3));
        assert_ne!(routes(3), routes(4));
        // every core switch about as often: the middle link of a 6-hop route leaves a core
        let t = Topology::fat_tree(k, 3);
        let mut per_core: HashMap<String, usize> = HashMap::new();
        for r in routes(3) {
            let (_, upper, _) = t.cables[r[2] / 2];
            *per_core.entry(t.nodes[upper as usize].clone()).or_default() += 1;
        }
        assert_eq!(per_core.len(), (k / 2) * (k / 2));
        let expected = 4000.0 / 16.0;
        for (c, n) in &per_core {
            assert!((*n as f64 - expected).abs() < 0.25 * expected, "{c}: {n} of 4000, expected about {expected}");
        }
    }

    #[test]
    fn vl2_dual_homes_every_tor() {
        let t = Topology::vl2(4, 4, 2, 20, 1);
        assert_eq!((t.hosts, t.nodes.len() - t.hosts), (80, 10));
        assert_eq!(t.cables.iter().filter(|c| c.2 == 1).count(), 8, "two uplinks per ToR");
        assert_eq!(t.cables.iter().filter(|c| c.2 == 2).count(), 8, "every aggregation switch to every intermediate");
        assert_eq!(t.link_name(0), "h0>t0");
        // each aggregation switch serves two ToRs
        for a in 0..4 {
            let name = format!("a{a}");
            assert_eq!(t.cables.iter().filter(|c| c.2 == 1 && t.nodes[c.1 as usize] == name).count(), 2, "{name}");
        }
        // between ToRs: up to a ToR's two aggregation switches, over any intermediate, down:
        // 2 x 2 x 2 = 8 shortest paths of 6 hops (t0 and t1 share none of theirs)
        let dist = t.distances(20);
        assert_eq!(dist[0], 6);
        assert_eq!(t.shortest_paths(0, &dist), 8);
        // under one ToR: 2 hops, one path
        assert_eq!(t.shortest_paths(1, &t.distances(0)), 1);
    }

    #[test]
    fn hashing_the_addresses_alone_puts_every_port_on_one_route() {
        let mut t = Topology::fat_tree(4, 5);
        let dist = t.distances(13);
        let routes = |t: &Topology| {
            let mut r: Vec<Vec<usize>> = (0..64u16).map(|p| t.route(0, &dist, &FiveTuple::tcp(0, 13, 40000 + p, 5001))).collect();
            r.sort();
            r.dedup();
            r.len()
        };
        assert_eq!(routes(&t), 4, "the 5-tuple hash spreads 64 ports over the (k/2)^2 = 4 paths");
        t.hash_ports = false;
        assert_eq!(routes(&t), 1);
    }

    #[test]
    fn the_hash_depends_on_every_field() {
        let base = FiveTuple::tcp(1, 2, 40000, 5001);
        let h = ecmp_hash(9, &base);
        for other in [
            FiveTuple { src: 9, ..base },
            FiveTuple { dst: 9, ..base },
            FiveTuple { sport: 40001, ..base },
            FiveTuple { dport: 5002, ..base },
            FiveTuple { proto: 17, ..base },
        ] {
            assert_ne!(ecmp_hash(9, &other), h, "{other:?}");
        }
        assert_ne!(ecmp_hash(10, &base), h);
    }
}
