//! Applications and background traffic: UDP datagram flows, on/off and VBR generators, the
//! background mix, and media streams with frame priorities, deadlines and PSNR.

mod common;
use common::*;

fn link_scenario(link: &str, flows: &str) -> String {
    format!(
        r#"
duration = "60s"
[metrics]
warmup = "5s"
interval = "500ms"
[[link]]
name = "l"
rate = "10Mbps"
delay = "20ms"
queue = "100pkt"
{link}
[[path]]
name = "p"
links = ["l"]
{flows}
"#
    )
}

#[test]
fn udp_cbr_loses_what_the_link_drops_and_nothing_else() {
    let text = link_scenario(
        "loss = \"2%\"",
        "[[flow]]\nname = \"u\"\npath = \"p\"\ntransport = \"udp\"\napp = { kind = \"cbr\", rate = \"2Mbps\", packet = \"1000B\" }",
    );
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    assert_eq!(f.transport, "udp");
    let (sent, got) = (f.datagrams_sent.unwrap() as f64, f.datagrams_received.unwrap() as f64);
    assert!((1.0 - got / sent - 0.02).abs() < 0.004, "loss {}", 1.0 - got / sent);
    assert!((f.goodput_bps / (2e6 * 0.98) - 1.0).abs() < 0.02, "{}", f.goodput_bps);
    assert_eq!(f.retransmits, 0);
    // one-way delay: 20 ms propagation + 1028 B at 10 Mbit/s, no queue
    assert!((f.delay_mean_ms.unwrap() - 20.82).abs() < 0.05, "{:?}", f.delay_mean_ms);
}

#[test]
fn onoff_and_vbr_offer_their_mean_rates() {
    let text = link_scenario(
        "queue = \"1000pkt\"",
        r#"[[flow]]
name = "onoff"
path = "p"
transport = "udp"
app = { kind = "onoff", rate = "4Mbps", packet = "1000B", on = "1s", off = "1s" }
[[flow]]
name = "vbr"
path = "p"
transport = "udp"
app = { kind = "vbr", rate = "2Mbps", sizes = "cmtqa" }"#,
    )
    .replace("queue = \"100pkt\"\n", "");
    let out = run_checked(&parse(&text));
    let by = |n: &str| out.summary.flows.iter().find(|f| f.flow == n).unwrap().clone();
    // on/off: half of 4 Mbit/s on average (exponential periods: loose bound)
    assert!((by("onoff").goodput_bps / 2e6 - 1.0).abs() < 0.2, "{}", by("onoff").goodput_bps);
    // vbr: 2 Mbit/s on the wire; goodput excludes the 28-byte headers of the 541-byte mean
    let payload_share = (0.5 * 16.0 + 0.25 * 548.0 + 0.25 * 1472.0) / 541.0;
    assert!((by("vbr").goodput_bps / (2e6 * payload_share) - 1.0).abs() < 0.05, "{}", by("vbr").goodput_bps);
}

#[test]
fn background_mix_expands_into_tcp_and_udp_flows_with_the_byte_shares() {
    let text = link_scenario(
        "",
        r#"[[background]]
name = "bg"
path = "p"
load = "50%"
tcp_share = "80%"
tcp_flows = 4
udp_flows = 1"#,
    );
    let s = parse(&text);
    assert_eq!(s.flows.len(), 5);
    assert!(s.flows.iter().all(|f| f.background));
    let out = run_checked(&s);
    let tcp: f64 = out.summary.flows.iter().filter(|f| f.transport == "tcp").map(|f| f.throughput_bps).sum();
    let udp: f64 = out.summary.flows.iter().filter(|f| f.transport == "udp").map(|f| f.throughput_bps).sum();
    let share = tcp / (tcp + udp);
    assert!((share - 0.8).abs() < 0.04, "tcp byte share {share}");
    let link = &out.summary.links[0];
    assert!((link.utilization - 0.5).abs() < 0.06, "utilization {}", link.utilization);
    assert_eq!(out.summary.jain_index, None, "background flows are not in the fairness index");
}

#[test]
fn background_load_varies_in_time() {
    let text = link_scenario(
        "",
        r#"[[background]]
name = "bg"
path = "p"
load = "50%"
tcp_flows = 0
tcp_share = "0%"
udp_flows = 2
vary = { min = "0%", max = "100%", period = "5s" }"#,
    );
    let out = run_checked(&parse(&text));
    let mbps = |i: usize| {
        use mpsim_core::metrics::Column;
        let Some(Column::F64(g)) = out.flow_series.column("goodput_bps") else { panic!() };
        g[i]
    };
    // per 5 s period the rate changes; the two flows of the group vary together
    let n = out.flow_series.rows() / 2;
    let per_period: Vec<f64> = (1..12).map(|k| (0..10).map(|j| mbps(2 * (k * 10 + j).min(n - 1))).sum::<f64>()).collect();
    let (lo, hi) = per_period.iter().fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi > 2.0 * lo + 1e6, "{per_period:?}");
}

fn media(link: &str, deadline: &str) -> String {
    link_scenario(
        link,
        &format!(
            r#"[[flow]]
name = "video"
path = "p"
app = {{ kind = "media", fps = 25, gop = "IPPPPPPPPPPP", classes = {{ I = {{ size = "30KB", priority = 1 }}, P = {{ size = "6KB" }} }}{deadline} }}"#
        ),
    )
}

#[test]
fn media_frames_are_counted_per_type_with_psnr() {
    let out = run_checked(&parse(&media("", "")));
    let f = &out.summary.flows[0];
    let (i, p) = (&f.classes[0], &f.classes[1]);
    assert_eq!((i.class.as_str(), i.priority, p.class.as_str(), p.priority), ("I", 1, "P", 0));
    // frames at 0, 40 ms, ..., 60 s inclusive: 1501, one I frame in 12 starting at 0
    assert_eq!(i.frames + p.frames, 1501);
    assert_eq!(i.frames, 126);
    assert!(i.delivered >= 125 && p.delivered >= 1370);
    // the link carries the stream (about 1.5 Mbit/s) easily: PSNR near its ceiling
    assert!(f.psnr_db.unwrap() > 25.0, "{:?}", f.psnr_db);
    assert!(i.delay_mean_ms.unwrap() > p.delay_mean_ms.unwrap(), "an I frame is five times larger");
}

#[test]
fn a_slow_link_makes_frames_late_and_lowers_psnr() {
    let fast = run_checked(&parse(&media("", ", deadline = \"150ms\"")));
    let slow = run_checked(&parse(&media("loss = \"3%\"", ", deadline = \"150ms\"").replace("10Mbps", "1.6Mbps")));
    let late = |o: &mpsim_core::Output| o.summary.flows[0].classes.iter().map(|c| c.late).sum::<u64>();
    assert_eq!(late(&fast), 0);
    assert!(late(&slow) > 100, "{}", late(&slow));
    assert!(slow.summary.flows[0].psnr_db.unwrap() < fast.summary.flows[0].psnr_db.unwrap() - 5.0);
}

#[test]
fn media_priorities_reach_the_scheduler_of_a_multipath_flow() {
    let text = media("", "").replace("path = \"p\"\napp", "paths = [\"p\"]\napp");
    let out = run_checked(&parse(&text));
    assert_eq!(out.summary.flows[0].transport, "mptcp");
    assert_eq!(out.summary.flows[0].classes[0].frames, 126);
}

#[test]
fn bad_app_parameters_are_named() {
    let e = mpsim_core::Scenario::from_toml(
        &link_scenario("", "[[flow]]\npath = \"p\"\ntransport = \"udp\"\napp = \"bulk\""),
        "s",
    )
    .unwrap_err();
    assert_eq!(e.key, "flow[0].app");
    let e = mpsim_core::Scenario::from_toml(&media("", "").replace("IPPPPPPPPPPP", "IPX"), "s").unwrap_err();
    assert!(e.message.contains("no frame class 'X'"), "{e}");
    let e = mpsim_core::Scenario::from_toml(
        &link_scenario("", "[[background]]\nname = \"b\"\npath = \"p\"\nload = \"50%\"\nsizes = \"huge\""),
        "s",
    )
    .unwrap_err();
    assert_eq!(e.key, "background[0].sizes");
}
