//! BBR in a whole simulation: the delivery-rate estimator measures the bottleneck, and BBR
//! keeps a deep buffer nearly empty at full rate, shares a bottleneck with another BBR flow,
//! and keeps its rate on a path with random loss, where Reno collapses.

use mpsim_core::cc::{AckContext, CongestionControl, CongestionEvent, Controller, LossContext, RateContext, RateControl, Window};
use mpsim_core::metrics::FlowSummary;
use mpsim_core::time::SimTime;
use mpsim_core::{Scenario, Simulation};
use std::sync::{Arc, Mutex};

/// One or more flows over a 10 Mbit/s bottleneck, 40 ms of round trip, a queue of `queue`
/// packets and `loss` random loss.
fn run(ccs: &[&str], queue: u32, loss: &str, duration: &str) -> Vec<FlowSummary> {
    Simulation::new(&scenario(ccs, queue, loss, duration)).run().summary.flows
}

fn scenario(ccs: &[&str], queue: u32, loss: &str, duration: &str) -> Scenario {
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
    Scenario::from_toml(&text, "bbr.rs").unwrap()
}

/// A fixed window of 60 packets (above the 34 of the path's BDP: the bottleneck stays busy)
/// that keeps every rate sample, in packets per second.
struct Samples {
    out: Arc<Mutex<Vec<(SimTime, f64, bool)>>>,
}

impl CongestionControl for Samples {
    fn name(&self) -> &'static str {
        "samples"
    }
    fn on_ack(&mut self, w: Window, _ctx: &AckContext) -> Window {
        w
    }
    fn on_congestion(&mut self, w: Window, _ev: CongestionEvent, _ctx: &LossContext) -> Window {
        w
    }
    fn wants_rate_samples(&self) -> bool {
        true
    }
    fn on_rate_sample(&mut self, w: Window, ctx: &RateContext) -> RateControl {
        if let Some(i) = ctx.rs.interval {
            self.out.lock().unwrap().push((ctx.now, ctx.rs.delivered as f64 / i.as_secs_f64(), ctx.rs.is_app_limited));
        }
        RateControl { w: Window { cwnd: 60 * w.mss, ..w }, pacing_rate: 0, mark_app_limited: false }
    }
}

/// Rate samples of a window-limited sender over the path with a queue of `queue` packets.
fn samples(queue: u32) -> Vec<f64> {
    let out = Arc::new(Mutex::new(Vec::new()));
    let o = out.clone();
    let sim = Simulation::new(&scenario(&["reno"], queue, "0.0", "10s"))
        .with_controller("f0", move || Controller::Custom(Box::new(Samples { out: o.clone() })))
        .unwrap();
    let summary = sim.run().summary;
    assert!(summary.flows[0].goodput_bps > 9.0e6);
    let v = out.lock().unwrap();
    // the first write finds the sender idle (application-limited, as Linux marks it), the
    // bulk application then keeps it busy
    assert!(v[0].2);
    let later: Vec<_> = v.iter().filter(|s| s.0 > SimTime(1_000_000_000)).collect();
    assert!(later.iter().all(|s| !s.2));
    later.iter().map(|s| s.1).collect()
}

#[test]
fn rate_samples_are_the_bottleneck_rate() {
    // 10 Mbit/s of 1500-byte packets
    let rate = 10e6 / (1500.0 * 8.0);
    // loss-free (the queue holds the whole window): every sample is the bottleneck's rate
    let v = samples(100);
    assert!(v.len() > 5000, "{} samples", v.len());
    for s in &v {
        assert!((s / rate - 1.0).abs() < 0.01, "sample {s} packets/s, bottleneck {rate}");
    }
    // with losses (a queue of 10 packets), the samples the SACKs give never exceed it and
    // most are it
    let v = samples(10);
    assert!(v.iter().all(|s| *s < 1.01 * rate), "max {}", v.iter().cloned().fold(0.0, f64::max));
    let close = v.iter().filter(|s| **s > 0.97 * rate).count();
    assert!(close * 10 > v.len() * 8, "{close} of {} samples within 3 %", v.len());
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
