//! CUBIC in a whole simulation: HyStart, measured against the handshake's RTT as in Linux,
//! ends slow start before a one-BDP drop-tail queue overflows.

use mpsim_core::{Scenario, Simulation};

fn run(cc: &str) -> (f64, u64, u64) {
    let text = format!(
        r#"
duration = "6s"
[tcp]
delayed_ack = "linux"
header = "52B"
[metrics]
warmup = "1s"
[[link]]
name = "l0"
rate = "10Mbps"
delay = "20ms"
queue = "34pkt"
[[path]]
name = "p0"
links = ["l0"]
[[flow]]
path = "p0"
cc = "{cc}"
"#
    );
    let s = Scenario::from_toml(&text, "cubic.rs").unwrap();
    let out = Simulation::new(&s).run();
    let f = &out.summary.flows[0];
    (f.goodput_bps, f.retransmits, f.timeouts)
}

#[test]
fn hystart_leaves_slow_start_before_the_queue_overflows() {
    // the same path with Linux 6.18 and the same queue, whose receiver acknowledges every
    // segment while its window grows (`delayed_ack = "linux"`): 11 retransmissions, no
    // timeout, over 20 s (docs/reports/kernel-results.md); Reno, without HyStart, overshoots
    // and loses a window's worth. (With an ACK every second segment HyStart's delay test sees
    // each round's first, least queued, packets and slow start ends later:
    // benches/results/slow_start_exit.md.)
    let (goodput, rtx, timeouts) = run("cubic");
    assert_eq!(timeouts, 0);
    assert!(rtx < 20, "{rtx} retransmissions");
    assert!(goodput > 9.0e6, "{goodput}");
    let (_, reno_rtx, _) = run("reno");
    assert!(reno_rtx > 2 * rtx, "Reno {reno_rtx}, CUBIC {rtx}");
}
