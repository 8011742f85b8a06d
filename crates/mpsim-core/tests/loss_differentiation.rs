//! Westwood+ and TCP New Jersey in whole simulations: random loss against congestion, the
//! links' congestion warning and its echo, and the seed-003 cross traffic on one link.

mod common;
use common::*;
use mpsim_core::metrics::FlowSummary;
use mpsim_core::Simulation;

/// One 10 Mbit/s path of RTT `rtt_ms`, a one-BDP queue, uniform loss `loss`; `link_extra` adds
/// lines to the link (a congestion warning), `flows` flows of controller `cc`.
fn path(cc: &str, rtt_ms: u64, loss: &str, link_extra: &str, flows: usize, secs: u64) -> String {
    let bdp_pkts = (10_000_000 * rtt_ms / 1000 / 8 / 1500).max(4);
    let mut t = format!(
        r#"
duration = "{secs}s"
seed = 3
[metrics]
warmup = "5s"
interval = "0s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "{}ms"
queue = "{bdp_pkts}pkt"
loss = "{loss}"
{link_extra}
[[path]]
name = "p"
links = ["l"]
"#,
        rtt_ms / 2
    );
    for i in 0..flows {
        t += &format!("[[flow]]\nname = \"f{i}\"\npath = \"p\"\ncc = \"{cc}\"\n");
    }
    t
}

fn run(text: &str) -> mpsim_core::Output {
    run_checked(&parse(text))
}

fn sum(flows: &[FlowSummary], f: impl Fn(&FlowSummary) -> Option<u64>) -> u64 {
    flows.iter().map(|x| f(x).unwrap_or(0)).sum()
}

#[test]
fn under_random_loss_both_hold_up_better_than_reno() {
    for (loss, rtt) in [("1%", 100), ("3%", 20)] {
        let g = |cc: &str| run(&path(cc, rtt, loss, "", 1, 40)).summary.flows[0].goodput_bps;
        let (reno, ww, nj) = (g("reno"), g("westwood"), g("new_jersey"));
        eprintln!("loss {loss} rtt {rtt}: reno {reno:.0} westwood {ww:.0} new_jersey {nj:.0}");
        assert!(ww > 1.2 * reno, "{loss}/{rtt}: Westwood+ {ww} vs Reno {reno}");
        assert!(nj > 1.2 * reno, "{loss}/{rtt}: New Jersey {nj} vs Reno {reno}");
    }
}

#[test]
fn without_a_warning_every_fast_retransmit_is_random() {
    let out = run(&path("new_jersey", 50, "1%", "", 1, 20));
    let f = &out.summary.flows[0];
    assert_eq!(f.congestion_losses, Some(0));
    assert!(f.random_losses.unwrap() > 20, "{:?}", f.random_losses);
    // the other controllers report no classes
    assert_eq!(run(&path("reno", 50, "1%", "", 1, 10)).summary.flows[0].random_losses, None);
}

#[test]
fn congestion_warning_marks_and_new_jersey_reads_the_echo() {
    // four flows on a bottleneck, no random loss: every loss is a queue overflow
    let cw = r#"congestion_warning = { threshold = "10pkt", weight = 0.02 }"#;
    let out = run(&path("new_jersey", 40, "0%", cw, 4, 30));
    let (c, r) = (sum(&out.summary.flows, |f| f.congestion_losses), sum(&out.summary.flows, |f| f.random_losses));
    let l = &out.summary.links[0];
    eprintln!("with CW: congestion {c}, random {r}, marks {:?}, queue drops {}", l.cw_marks, l.queue_drops);
    assert!(l.queue_drops > 0, "the bottleneck must overflow for the test to mean anything");
    assert!(l.cw_marks.unwrap() > 0);
    assert!(c > 0 && c >= 9 * r, "congestion {c}, random {r}");
    assert_eq!(out.summary.links[1].cw_marks, None, "ACKs' direction has no warning");
    // the same without the warning: the same overflow losses are all taken as random
    let out = run(&path("new_jersey", 40, "0%", "", 4, 30));
    let (c, r) = (sum(&out.summary.flows, |f| f.congestion_losses), sum(&out.summary.flows, |f| f.random_losses));
    eprintln!("without CW: congestion {c}, random {r}, drops {}", out.summary.links[0].queue_drops);
    assert_eq!(c, 0);
    assert!(r > 0);
    assert_eq!(out.summary.links[0].cw_marks, None);
}

#[test]
fn a_link_marks_nothing_while_its_average_queue_stays_below_the_threshold() {
    // one flow limited to 2 Mbit/s on a 10 Mbit/s link never builds a queue
    let cw = r#"congestion_warning = { threshold = "1pkt" }"#;
    let text = path("new_jersey", 40, "0%", cw, 1, 10)
        .replace("cc = \"new_jersey\"", "cc = \"new_jersey\"\napp = { kind = \"cbr\", rate = \"2Mbps\", packet = \"1000B\" }");
    let out = run(&text);
    assert_eq!(out.summary.links[0].cw_marks, Some(0));
    assert_eq!(out.summary.flows[0].congestion_losses, Some(0));
}

#[test]
fn the_papers_cross_traffic_on_one_link_of_a_path() {
    // seed 003: UDP with 100-byte packets and TCP with 1500-byte packets crossing the
    // bottleneck only; the access and wireless links carry the main flow alone
    let text = r#"
duration = "20s"
[metrics]
interval = "0s"
[[link]]
name = "access"
rate = "100Mbps"
delay = "1ms"
[[link]]
name = "bottleneck"
rate = "2Mbps"
delay = "40ms"
queue = "50pkt"
[[link]]
name = "wireless"
rate = "11Mbps"
delay = "4ms"
[[path]]
name = "main"
links = ["access", "bottleneck", "wireless"]
[[path]]
name = "cross"
links = ["bottleneck"]
[[flow]]
name = "ftp"
path = "main"
cc = "new_jersey"
[[flow]]
name = "udp_cross"
path = "cross"
transport = "udp"
app = { kind = "cbr", rate = "144kbps", packet = "72B" }
[[flow]]
name = "tcp_cross"
path = "cross"
cc = "reno"
tcp = { mss = "1460B" }
"#;
    let s = parse(text);
    let out = Simulation::new(&s).run();
    let by = |n: &str| out.summary.flows.iter().find(|f| f.flow == n).unwrap().clone();
    let (ftp, udp, tcp) = (by("ftp"), by("udp_cross"), by("tcp_cross"));
    // a CBR rate counts payload: 250 datagrams/s of 72 B is 144 kbit/s; with 28 B of IP/UDP
    // headers each is 100 B, 200 kbit/s on the wire
    let dgrams = udp.datagrams_sent.unwrap();
    assert!((dgrams as f64 / 20.0 - 250.0).abs() < 2.0, "{dgrams}");
    assert!(ftp.goodput_bps > 0.0 && tcp.goodput_bps > 0.0);
    // access and wireless see only the main flow's segments; the bottleneck all three
    let link = |name: &str| out.summary.links.iter().find(|l| l.link == name && l.direction == "forward").unwrap().clone();
    let (access, bn, wl) = (link("access"), link("bottleneck"), link("wireless"));
    assert_eq!(access.packets_offered, ftp.segments_sent);
    // (the access link's own queue may drop some of the main flow's bursts)
    assert_eq!(bn.packets_offered, access.packets_delivered + dgrams + tcp.segments_sent);
    assert!(wl.packets_offered <= ftp.segments_sent);
}

#[test]
fn cross_traffic_packets_have_the_papers_sizes_on_the_wire() {
    // the bottleneck alone, not saturated: its busy time is exactly its wire bytes
    let text = r#"
duration = "20s"
[metrics]
interval = "0s"
[[link]]
name = "bottleneck"
rate = "2Mbps"
delay = "40ms"
queue = "1000pkt"
[[path]]
name = "cross"
links = ["bottleneck"]
[[flow]]
name = "udp_cross"
path = "cross"
transport = "udp"
app = { kind = "cbr", rate = "144kbps", packet = "72B" }
[[flow]]
name = "tcp_cross"
path = "cross"
tcp = { mss = "1460B" }
app = { kind = "bulk", bytes = "1460000B" }
"#;
    let out = Simulation::new(&parse(text)).run();
    let (udp, tcp) = (&out.summary.flows[0], &out.summary.flows[1]);
    assert!(tcp.complete && tcp.retransmits == 0);
    let bn = &out.summary.links[0];
    let wire_bytes = bn.utilization * 20.0 * 2e6 / 8.0;
    let expect = 1500.0 * tcp.segments_sent as f64 + 100.0 * udp.datagrams_sent.unwrap() as f64;
    assert_eq!(tcp.segments_sent, 1000);
    assert!((wire_bytes / expect - 1.0).abs() < 1e-6, "{wire_bytes} vs {expect}");
}

#[test]
fn bad_congestion_warning_keys_get_one_clear_error() {
    let cases = [
        ("congestion_warning = { weight = 0.1 }", "link[0].congestion_warning.threshold", "missing"),
        ("congestion_warning = { threshold = \"lots\" }", "link[0].congestion_warning.threshold", "lots"),
        ("congestion_warning = { threshold = \"5pkt\", weight = 0 }", "link[0].congestion_warning.weight", "above 0"),
        ("congestion_warning = { threshold = \"5pkt\", weight = 1.5 }", "link[0].congestion_warning.weight", "at most 1"),
        ("congestion_warning = { threshold = \"5pkt\", weight = \"x\" }", "link[0].congestion_warning.weight", "expected a number"),
        ("congestion_warning = { treshold = \"5pkt\" }", "link[0].congestion_warning.treshold", "did you mean 'threshold'"),
        ("congestion_warning = \"5pkt\"", "link[0].congestion_warning", "expected a table"),
    ];
    for (line, key, what) in cases {
        let text = path("new_jersey", 20, "0%", line, 1, 10);
        let e = mpsim_core::Scenario::from_toml(&text, "bad.toml").expect_err(line).to_string();
        assert!(e.starts_with(&format!("bad.toml: {key}: ")), "{line}: {e}");
        assert!(e.contains(what), "{line}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // a good one parses, in packets or in bytes
    for ok in ["congestion_warning = { threshold = \"20pkt\" }", "congestion_warning = { threshold = \"30KB\", weight = 0.002 }"] {
        parse(&path("new_jersey", 20, "0%", ok, 1, 10));
    }
}
