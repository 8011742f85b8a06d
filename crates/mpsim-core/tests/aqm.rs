//! Links whose queue an AQM manages, carrying TCP: each discipline keeps the queueing delay
//! near its target where drop-tail fills the buffer, without giving up throughput; FQ-CoDel
//! isolates a sparse flow from a bulk one; the accounting of packets stays exact; outages and
//! traced links combine with a managed queue.

mod common;
use common::*;
use mpsim_core::metrics::LinkSummary;
use mpsim_core::{Scenario, Simulation};

/// A 10 Mbit/s, 20 ms one-way bottleneck with a 1,000-packet buffer (about 30 BDP), two CUBIC
/// flows; `aqm` is the link's extra line.
fn bottleneck(aqm: &str, duration: &str) -> Scenario {
    parse(&format!(
        r#"
duration = "{duration}"
[metrics]
warmup = "5s"
[[link]]
name = "b"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
{aqm}
[[path]]
name = "p"
links = ["b"]
[[flow]]
name = "f1"
path = "p"
cc = "cubic"
[[flow]]
name = "f2"
path = "p"
cc = "cubic"
start = "1s"
"#
    ))
}

fn forward(out: &mpsim_core::Output) -> &LinkSummary {
    &out.summary.links[0]
}

#[test]
fn every_discipline_keeps_the_delay_near_its_target_at_full_throughput() {
    let droptail = run_checked(&bottleneck("", "40s"));
    let dt_goodput: f64 = droptail.summary.flows.iter().map(|f| f.goodput_bps).sum();
    // drop-tail: the buffer fills, so the RTT is hundreds of milliseconds
    let dt_rtt = droptail.summary.flows[0].rtt_mean_ms.unwrap();
    assert!(dt_rtt > 300.0, "drop-tail mean RTT {dt_rtt} ms");
    for (aqm, target_ms) in [("codel", 5.0), ("fq_codel", 5.0), ("pie", 15.0), ("red", 30.0)] {
        let out = run_checked(&bottleneck(&format!("aqm = \"{aqm}\""), "40s"));
        let l = forward(&out);
        let a = l.aqm.as_ref().expect("the summary names the discipline");
        assert_eq!(a.aqm, aqm);
        let goodput: f64 = out.summary.flows.iter().map(|f| f.goodput_bps).sum();
        eprintln!(
            "{aqm}: goodput {:.2} Mbit/s (drop-tail {:.2}), queue delay mean {:.1} ms p95 {:.1} ms, {} AQM drops, {} overflows, RTT {:.1} ms (drop-tail {dt_rtt:.1})",
            goodput / 1e6,
            dt_goodput / 1e6,
            a.queue_delay_mean_ms,
            a.queue_delay_p95_ms,
            a.aqm_drops,
            l.queue_drops,
            out.summary.flows[0].rtt_mean_ms.unwrap()
        );
        assert!(goodput > 0.9 * dt_goodput, "{aqm}: goodput {goodput} against drop-tail's {dt_goodput}");
        assert!(a.aqm_drops > 0, "{aqm} never dropped");
        assert_eq!(l.queue_drops, 0, "{aqm}: the 1,000-packet limit is never reached");
        // RED's target is a queue length: 5 to 15 packets of 1.2 ms
        assert!(a.queue_delay_mean_ms < 3.0 * target_ms, "{aqm}: mean queueing delay {} ms", a.queue_delay_mean_ms);
        assert!(out.summary.flows[0].rtt_mean_ms.unwrap() < dt_rtt / 3.0);
    }
}

#[test]
fn fq_codel_keeps_a_sparse_flow_s_delay_low_beside_a_bulk_flow_on_drop_tail_it_is_not() {
    let text = |aqm: &str| {
        format!(
            r#"
duration = "30s"
[metrics]
warmup = "5s"
[[link]]
name = "b"
rate = "5Mbps"
delay = "20ms"
queue = "300pkt"
{aqm}
[[path]]
name = "p"
links = ["b"]
[[flow]]
name = "bulk"
path = "p"
cc = "cubic"
[[flow]]
name = "voice"
path = "p"
app = {{ kind = "cbr", rate = "64kbps", packet = "200B" }}
transport = "udp"
"#
        )
    };
    let delay = |aqm: &str| {
        let out = run_checked(&parse(&text(aqm)));
        let v = out.summary.flows.iter().find(|f| f.flow == "voice").unwrap();
        v.delay_mean_ms.expect("datagram delay")
    };
    let (dt, fq, codel) = (delay(""), delay("aqm = \"fq_codel\""), delay("aqm = \"codel\""));
    eprintln!("voice one-way delay: drop-tail {dt:.1} ms, codel {codel:.1} ms, fq_codel {fq:.1} ms");
    // 20 ms of propagation: fq_codel serves the sparse flow at once, CoDel keeps ~5 ms of
    // queue in front of it, drop-tail a full buffer
    assert!(fq < 23.0, "{fq}");
    assert!(codel > fq + 2.0, "{codel} vs {fq}");
    assert!(dt > 200.0, "{dt}");
}

#[test]
fn a_managed_queue_accounts_for_every_packet_and_survives_an_outage() {
    for aqm in ["codel", "fq_codel", "red", "pie"] {
        let s = parse(&one_link(
            "20s",
            &format!("aqm = \"{aqm}\"\nreverse_aqm = \"{aqm}\"\ndown = [{{ at = \"5s\", until = \"7s\" }}]"),
            "cc = \"reno\"",
        ));
        let out = run_checked(&s);
        let f = &out.summary.flows[0];
        assert!(f.goodput_bps > 5e6, "{aqm}: {}", f.goodput_bps);
        for l in &out.summary.links {
            assert!(l.down_drops > 0 || l.direction == "reverse", "{aqm}: {l:?}");
            assert!(l.aqm.is_some());
        }
        // deterministic
        let again = Simulation::new(&s).run();
        assert_eq!(again.summary.flows[0].bytes_delivered, f.bytes_delivered);
    }
}

#[test]
fn codel_on_a_traced_link() {
    let dir = std::env::temp_dir().join(format!("mpsim-aqm-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 12 Mbit/s for a second, then 1.2 Mbit/s for a second, repeated
    let mut text = String::new();
    for m in 1..=1000 {
        text.push_str(&format!("{m}\n"));
    }
    for m in (1010..=2000).step_by(10) {
        text.push_str(&format!("{m}\n"));
    }
    std::fs::write(dir.join("steps"), text).unwrap();
    let run = |aqm: &str| {
        let s = Scenario::from_toml_in(
            &one_link("30s", &format!("trace = \"steps\"\n{aqm}"), "cc = \"cubic\"").replace("queue = \"100pkt\"", "queue = \"400pkt\""),
            "test",
            Some(&dir),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        run_checked(&s)
    };
    let (dt, codel) = (run(""), run("aqm = \"codel\""));
    let _ = std::fs::remove_dir_all(&dir);
    let (g_dt, g_codel) = (dt.summary.flows[0].goodput_bps, codel.summary.flows[0].goodput_bps);
    let (r_dt, r_codel) = (dt.summary.flows[0].rtt_mean_ms.unwrap(), codel.summary.flows[0].rtt_mean_ms.unwrap());
    eprintln!("traced: drop-tail {g_dt:.0} bit/s RTT {r_dt:.0} ms, codel {g_codel:.0} bit/s RTT {r_codel:.0} ms");
    let a = codel.summary.links[0].aqm.as_ref().unwrap();
    assert!(a.aqm_drops > 0);
    assert!(r_codel < r_dt / 2.0, "codel RTT {r_codel} vs drop-tail {r_dt}");
    assert!(g_codel > 0.75 * g_dt, "codel goodput {g_codel} vs drop-tail {g_dt}");
}

#[test]
fn codel_on_a_scheduled_link_follows_its_rate_steps_with_a_short_queue() {
    let run = |aqm: &str| {
        let s = parse(
            &one_link(
                "40s",
                &format!(
                    "schedule = [{{ at = \"0s\", rate = \"10Mbps\" }}, {{ at = \"20s\", rate = \"2Mbps\", delay = \"30ms\" }}]\n{aqm}"
                ),
                "cc = \"cubic\"",
            )
            .replace("queue = \"100pkt\"", "queue = \"1000pkt\""),
        );
        run_checked(&s)
    };
    let (dt, codel) = (run(""), run("aqm = \"codel\""));
    let a = codel.summary.links[0].aqm.as_ref().unwrap();
    let (g_dt, g_c) = (dt.summary.flows[0].goodput_bps, codel.summary.flows[0].goodput_bps);
    eprintln!(
        "scheduled 10 then 2 Mbit/s: drop-tail {g_dt:.0} bit/s, codel {g_c:.0} bit/s, queue delay {} / {} ms",
        a.queue_delay_mean_ms, a.queue_delay_p95_ms
    );
    // about (10 x 20 + 2 x 20) / 40 = 6 Mbit/s of capacity
    assert!(g_c > 0.85 * 6e6 * 1448.0 / 1500.0 && g_c < 6e6, "{g_c}");
    assert!(a.queue_delay_mean_ms < 20.0, "{}", a.queue_delay_mean_ms);
    assert!(codel.summary.flows[0].rtt_mean_ms.unwrap() < dt.summary.flows[0].rtt_mean_ms.unwrap() / 3.0);
}

#[test]
fn bad_aqm_settings_are_explained() {
    let err = |link: &str| Scenario::from_toml(&one_link("1s", link, ""), "t").unwrap_err().to_string();
    assert!(err("aqm = \"sfq\"").contains("unknown queue discipline 'sfq'; expected one of: codel, fq_codel, red, pie"));
    assert!(err("aqm = { kind = \"codel\", quantum = 300 }").contains("not a parameter of codel"));
    assert!(err("aqm = { kind = \"red\", min_th = \"20pkt\", max_th = \"10pkt\" }").contains("must be above min_th"));
    assert!(err("aqm = { kind = \"red\", min_th = \"20pkt\" }").contains("give both min_th and max_th"));
    let e = err("aqm = { kind = \"red\", min_th = \"5pkt\", max_th = \"30KB\" }");
    assert!(e.contains("must both be packets or both bytes"), "{e}");
    assert!(err("aqm = { kind = \"codel\", target = \"0ms\" }").contains("must be above zero"));
    assert!(err("aqm = { kind = \"fq_codel\", flows = 0 }").contains("between 1 and 65536"));
    assert!(err("aqm = 3").contains("expected a discipline's name"));
    assert!(err("aqm = \"codel\"\ncongestion_warning = { threshold = \"5pkt\" }").contains("do not combine"));
    // "none" is drop-tail, as without the key
    assert!(parse(&one_link("1s", "aqm = \"none\"", "")).links[0].aqm.is_none());
    // parameters are read
    let s = parse(&one_link("1s", "aqm = { kind = \"codel\", target = \"2ms\", interval = \"50ms\" }", ""));
    match &s.links[0].aqm {
        Some(mpsim_core::net::AqmSpec::Codel(p)) => {
            assert_eq!(p.target, mpsim_core::time::Dur::from_millis(2));
            assert_eq!(p.interval, mpsim_core::time::Dur::from_millis(50));
        }
        other => panic!("{other:?}"),
    }
}
