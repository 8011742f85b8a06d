//! BBR in a whole simulation: it keeps a deep buffer nearly empty at full rate, shares a
//! bottleneck with another BBR flow, and keeps its rate on a path with random loss, where
//! Reno collapses.

use mpsim_core::metrics::FlowSummary;
use mpsim_core::{Scenario, Simulation};

/// One or more flows over a 10 Mbit/s bottleneck, 40 ms of round trip, a queue of `queue`
/// packets and `loss` random loss.
fn run(ccs: &[&str], queue: u32, loss: &str, duration: &str) -> Vec<FlowSummary> {
    let mut text = format!(
        r#"
duration = "{duration}"
seed = 3
[metrics]
warmup = "5s"
[[link]]
name = "access"
rate = "100Mbps"
delay = "1ms"
queue = "1000pkt"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "19ms"
queue = "{queue}pkt"
loss = {loss}
[[path]]
name = "p"
links = ["access", "bottleneck"]
"#
    );
    for (k, cc) in ccs.iter().enumerate() {
        text += &format!("[[flow]]\nname = \"f{k}\"\npath = \"p\"\ncc = \"{cc}\"\n");
    }
    let s = Scenario::from_toml(&text, "bbr.rs").unwrap();
    Simulation::new(&s).run().summary.flows
}

#[test]
fn one_flow_fills_the_link_and_keeps_a_deep_buffer_nearly_empty() {
    let f = &run(&["bbr"], 1000, "0.0", "25s")[0];
    let (rtt, min) = (f.rtt_mean_ms.unwrap(), f.rtt_min_ms.unwrap());
    assert!(f.goodput_bps > 9.0e6, "goodput {}", f.goodput_bps);
    // what stands in the queue is about the quanta (3 bursts of 2 packets) the window target
    // and the 3/4 phase allow above the BDP: some 8 ms here
    assert!(rtt < 1.5 * min, "mean RTT {rtt} ms, min {min} ms");
    assert_eq!(f.timeouts, 0);
    // a loss-based controller fills the same buffer
    let r = &run(&["cubic"], 1000, "0.0", "25s")[0];
    assert!(r.rtt_mean_ms.unwrap() > 3.0 * min, "CUBIC's mean RTT {:?}", r.rtt_mean_ms);
}

#[test]
fn two_flows_share_the_bottleneck() {
    let flows = run(&["bbr", "bbr"], 100, "0.0", "40s");
    let (a, b) = (flows[0].goodput_bps, flows[1].goodput_bps);
    assert!(a + b > 9.0e6, "together {}", a + b);
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(jain > 0.95, "goodputs {a} and {b}: Jain {jain}");
}

#[test]
fn random_loss_of_one_percent_leaves_the_rate_high() {
    let f = &run(&["bbr"], 100, "0.01", "25s")[0];
    assert!(f.goodput_bps > 8.5e6, "goodput {}", f.goodput_bps);
    let reno = &run(&["reno"], 100, "0.01", "25s")[0];
    assert!(f.goodput_bps > 2.0 * reno.goodput_bps, "BBR {}, Reno {}", f.goodput_bps, reno.goodput_bps);
}
