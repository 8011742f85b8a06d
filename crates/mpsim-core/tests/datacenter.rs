//! Topologies and traffic matrices: a permutation over a k = 4 fat tree delivers all its data;
//! Multipath TCP's subflows spread over the core where single-path TCP's ECMP collisions leave
//! capacity unused; the scenario keys and their errors.

mod common;
use common::*;
use mpsim_core::{Scenario, Simulation};
use std::collections::HashSet;

fn fat_tree(k: usize, traffic: &str) -> String {
    format!(
        r#"
duration = "3s"
seed = 4
[metrics]
warmup = "1s"
interval = 0
[topology]
kind = "fat_tree"
k = {k}
rate = "100Mbps"
delay = "20us"
queue = "100pkt"
[traffic]
{traffic}
"#
    )
}

fn bad(text: &str) -> mpsim_core::ScenarioError {
    Scenario::from_toml(text, "s").unwrap_err()
}

#[test]
fn a_fat_tree_is_links_and_paths() {
    let s = parse(&fat_tree(4, "matrix = \"permutation\"\nsubflows = 2\ncc = \"lia\""));
    assert_eq!(s.links.len(), 2 * 48, "two links per cable");
    assert_eq!(s.flows.len(), 16);
    assert_eq!(s.paths.len(), 32);
    assert!(s.links.iter().any(|l| l.name == "a3_1>c3"));
    let mut receivers = HashSet::new();
    for f in &s.flows {
        let (src, dst) = f.name.split_once("->").unwrap();
        assert_ne!(src, dst);
        assert!(receivers.insert(dst.to_string()), "{dst} receives twice");
        assert_eq!(f.paths.len(), 2);
        assert_eq!(f.scheduler(), Some("lowest_rtt"));
        assert_eq!(f.cc, "lia");
        // the path starts at the sender and ends at the receiver
        let p = &s.paths[f.paths[0]];
        assert!(s.links[p.links[0]].name.starts_with(&format!("{src}>")));
        assert!(s.links[*p.links.last().unwrap()].name.ends_with(&format!(">{dst}")));
    }
}

/// The subflows of a flow crossing pods take different paths (ECMP hashes their source
/// ports): with the 8 subflows of 16 flows, most flows use several core switches.
#[test]
fn subflows_spread_over_the_core() {
    let s = parse(&fat_tree(4, "matrix = \"permutation\"\nsubflows = 8"));
    let mut spread = 0;
    let mut across = 0;
    for f in &s.flows {
        let routes: HashSet<&Vec<usize>> = f.paths.iter().map(|&p| &s.paths[p].links).collect();
        if s.paths[f.paths[0]].links.len() == 6 {
            across += 1;
            spread += (routes.len() >= 3) as usize;
        }
    }
    assert!(across > 0);
    assert!(spread * 10 >= across * 9, "{spread} of {across} pod-crossing flows take 3 or more of 4 core paths");
}

#[test]
fn multipath_tcp_fills_the_fat_tree_better_than_tcp_over_ecmp() {
    let total = |subflows: usize| {
        let cc = if subflows > 1 { "cc = \"lia\"" } else { "" };
        let s = parse(&fat_tree(4, &format!("matrix = \"permutation\"\nsubflows = {subflows}\n{cc}")));
        let out = run_checked(&s);
        let g: Vec<f64> = out.summary.flows.iter().map(|f| f.goodput_bps).collect();
        // (a TCP flow that loses against one already filling the 100-packet queue can be locked
        // out for seconds: its one retransmission finds the queue full, RTO after RTO)
        if subflows > 1 {
            assert!(g.iter().all(|&x| x > 10e6), "every host gets a good share: {g:?}");
        }
        g.iter().sum::<f64>() / 16.0 / 100e6
    };
    let (tcp, mptcp) = (total(1), total(8));
    // 16 hosts at 100 Mbit/s on a full-bisection fat tree: 100% is optimal
    assert!(mptcp > tcp + 0.1, "mean host throughput: MPTCP-8 {mptcp:.3} of the access rate, TCP {tcp:.3}");
    assert!(mptcp > 0.8, "{mptcp}");
}

#[test]
fn finite_flows_deliver_everything() {
    let s = parse(&fat_tree(4, "matrix = \"permutation\"\nsubflows = 4\nsize = \"500KB\"\ncc = \"lia\""));
    let out = run_checked(&s);
    for f in &out.summary.flows {
        assert!(f.complete, "{} delivered {} of {}", f.flow, f.bytes_delivered, f.bytes_written);
        assert!(f.completion_time_s.unwrap() > 0.04, "500 KB at 100 Mbit/s takes 40 ms at least");
    }
    // the same scenario and seed give the same run
    let again = Simulation::new(&s).run();
    assert_eq!(serde_json::to_string(&out.summary).unwrap(), serde_json::to_string(&again.summary).unwrap());
}

#[test]
fn incast_and_arrivals() {
    let s = parse(&fat_tree(4, "matrix = \"incast\"\nsenders = 5\nreceiver = \"h9\"\nsize = \"100KB\""));
    assert_eq!(s.flows.len(), 5);
    assert!(s.flows.iter().all(|f| f.name.ends_with("->h9") && !f.name.starts_with("h9-")));
    let s = parse(&fat_tree(4, "matrix = \"all_to_all\"\nsize = \"10KB\""));
    assert_eq!(s.flows.len(), 16 * 15);
    // Poisson arrivals at 10% of 100 Mbit/s with 100 KB flows: 12.5 flows/s per host for 3 s
    let s = parse(&fat_tree(4, "matrix = \"permutation\"\nsize = { dist = \"pareto\", mean = \"100KB\", shape = 1.5 }\nload = 0.1"));
    let n = s.flows.len() as f64;
    assert!((n - 16.0 * 37.5).abs() < 0.2 * 16.0 * 37.5, "{n} flows");
    assert!(s.flows.iter().any(|f| f.name.ends_with("#3")));
}

#[test]
fn hand_written_flows_name_hosts() {
    let text =
        fat_tree(4, "matrix = \"permutation\"") + "[[flow]]\nname = \"extra\"\nfrom = \"h0\"\nto = \"h15\"\nsubflows = 3\ncc = \"olia\"\n";
    let s = parse(&text);
    let f = s.flows.iter().find(|f| f.name == "extra").unwrap();
    assert_eq!(f.paths.len(), 3);
    assert_eq!(s.paths[f.paths[0]].name, "extra.0");
    let e = bad(&text.replace("\"h15\"", "\"h16\""));
    assert_eq!(e.key, "flow[0].to");
    assert!(e.message.contains("no host named \"h16\" (hosts: h0 to h15)"), "{e}");
    let e = bad(&text.replace("from = \"h0\"\n", ""));
    assert_eq!(e.key, "flow[0].from");
}

#[test]
fn bad_topologies_and_traffic_are_refused() {
    let e = bad(&fat_tree(5, "matrix = \"permutation\""));
    assert_eq!(e.key, "topology.k");
    assert!(e.message.contains("must be even"), "{e}");
    let e = bad(&fat_tree(4, "matrix = \"permutations\""));
    assert_eq!(e.key, "traffic.matrix");
    assert!(e.message.contains("expected one of: permutation, random, all_to_all, incast"), "{e}");
    let e = bad(&fat_tree(4, "matrix = \"permutation\"\nsubflows = 9"));
    assert_eq!(e.key, "traffic.subflows");
    let e = bad(&fat_tree(4, "matrix = \"permutation\"\ncc = \"fast\""));
    assert_eq!(e.key, "traffic.cc");
    let e = bad(&fat_tree(4, "matrix = \"incast\"\nsenders = 16"));
    assert_eq!(e.key, "traffic.senders");
    let e = bad(&fat_tree(4, "matrix = \"permutation\"\nload = 0.5"));
    assert!(e.message.contains("give `size` too"), "{e}");
    let e = bad(&fat_tree(4, "matrix = \"permutation\"").replace("rate = \"100Mbps\"", "rate = \"fast\""));
    assert_eq!(e.key, "topology.rate");
    let e =
        bad(&fat_tree(4, "matrix = \"permutation\"")
            .replace("queue = \"100pkt\"", "queue = \"100pkt\"\n[topology.tier.cor]\nrate = \"1Gbps\""));
    assert!(e.key.starts_with("topology.tier"), "{e}");
    assert!(e.message.contains("did you mean 'core'"), "{e}");
    let e = bad(&fat_tree(4, "matrix = \"permutation\"").replace("k = 4", "k = 4\nspines = 2"));
    assert_eq!(e.key, "topology.spines");
    let e = bad(&fat_tree(64, "matrix = \"permutation\""));
    assert!(e.message.contains("at most 100000"), "{e}");
    let e = bad(&(one_link("1s", "", "") + "[traffic]\nmatrix = \"permutation\"\n"));
    assert_eq!(e.key, "traffic");
}

#[test]
fn tiers_take_their_own_settings() {
    let text = r#"
duration = "1s"
[topology]
kind = "leaf_spine"
leaves = 4
spines = 2
hosts_per_leaf = 8
oversubscription = 2
rate = "10Gbps"
delay = "1us"
[traffic]
matrix = "random"
"#;
    let s = parse(text);
    let rate = |name: &str| s.links.iter().find(|l| l.name == name).unwrap().rate_bps;
    assert_eq!(rate("h0>l0"), 10_000_000_000);
    assert_eq!(rate("l0>s1"), 20_000_000_000, "8 hosts x 10 Gbit/s over 2 spines at 2:1");
    let e = bad(&text.replace("delay = \"1us\"", "delay = \"1us\"\n[topology.tier.spine]\nrate = \"40Gbps\""));
    assert_eq!(e.key, "topology.oversubscription");
    let s = parse(
        &text
            .replace("oversubscription = 2\n", "")
            .replace("delay = \"1us\"", "delay = \"1us\"\n[topology.tier.spine]\nrate = \"40Gbps\"\ndelay = \"5us\""),
    );
    let l = s.links.iter().find(|l| l.name == "s1>l3").unwrap();
    assert_eq!((l.rate_bps, l.delay.0), (40_000_000_000, 5_000));
    let d = parse("duration = \"1s\"\n[topology]\nkind = \"dumbbell\"\nhosts = 3\nrate = \"1Gbps\"\n[topology.tier.bottleneck]\nrate = \"100Mbps\"\n[traffic]\nmatrix = \"permutation\"\n");
    assert_eq!(d.links.iter().find(|l| l.name == "r0>r1").unwrap().rate_bps, 100_000_000);
    assert_eq!(d.flows.len(), 6);
}

#[test]
fn a_k16_fat_tree_builds_quickly() {
    let t = std::time::Instant::now();
    let s = parse(&fat_tree(16, "matrix = \"permutation\"\nsubflows = 8\ncc = \"lia\""));
    let _sim = Simulation::new(&s);
    assert_eq!(s.flows.len(), 1024);
    // (a debug build: the release build takes a fraction of this)
    assert!(t.elapsed().as_secs_f64() < 10.0, "{:?}", t.elapsed());
}

/// A dumbbell written as a topology runs exactly as the same dumbbell written link by link:
/// the same routes, the same queues, the same packets.
#[test]
fn a_dumbbell_topology_is_the_hand_written_dumbbell() {
    let n = 4;
    let mut by_hand = String::from("duration = \"2s\"\n[metrics]\ninterval = 0\n");
    by_hand += "[[link]]\nname = \"bottleneck\"\nrate = \"20Mbps\"\ndelay = \"10ms\"\nqueue = \"50pkt\"\n";
    for i in 0..n {
        by_hand += &format!("[[link]]\nname = \"src{i}\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\nqueue = \"1000pkt\"\n");
        by_hand += &format!("[[link]]\nname = \"dst{i}\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\nqueue = \"1000pkt\"\n");
    }
    for i in 0..n {
        by_hand += &format!("[[path]]\nname = \"p{i}\"\nlinks = [\"src{i}\", \"bottleneck\", \"dst{i}\"]\n");
    }
    for i in 0..n {
        by_hand += &format!("[[flow]]\nname = \"f{i}\"\npath = \"p{i}\"\nstart = \"{}ms\"\n", 100 * i);
    }
    let mut topology = String::from(
        "duration = \"2s\"\n[metrics]\ninterval = 0\n[topology]\nkind = \"dumbbell\"\nhosts = 4\nrate = \"100Mbps\"\ndelay = \"1ms\"\nqueue = \"1000pkt\"\n[topology.tier.bottleneck]\nrate = \"20Mbps\"\ndelay = \"10ms\"\nqueue = \"50pkt\"\n",
    );
    for i in 0..n {
        topology += &format!("[[flow]]\nname = \"f{i}\"\nfrom = \"h{i}\"\nto = \"h{}\"\nstart = \"{}ms\"\n", n + i, 100 * i);
    }
    let run = |text: &str| {
        let out = run_checked(&parse(text));
        let flows: Vec<(u64, u64, u64)> = out.summary.flows.iter().map(|f| (f.bytes_delivered, f.segments_sent, f.retransmits)).collect();
        (flows, out.summary.packets_delivered, out.summary.events)
    };
    let (a, b) = (run(&by_hand), run(&topology));
    assert!(a.0.iter().all(|f| f.2 > 0), "the bottleneck drops: {:?}", a.0);
    assert_eq!(a, b);
}
