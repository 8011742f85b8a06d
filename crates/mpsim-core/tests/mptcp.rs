//! Multipath TCP property tests: random networks, every scheduler with every controller,
//! invariants checked after every step (windows, scoreboards, connection-level window and
//! buffer, DATA_ACK never beyond delivered data), and every byte delivered exactly once.

mod common;
use common::*;
use mpsim_core::cc::CONTROLLERS;
use mpsim_core::sched::SCHEDULERS;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct PathCase {
    rate_mbps: u32,
    delay_ms: u32,
    queue_pkts: u32,
    loss_permille: u32,
    outage: Option<(u32, u32)>,
    backup: bool,
}

fn path_case() -> impl Strategy<Value = PathCase> {
    (1u32..50, 1u32..120, 3u32..150, 0u32..30, proptest::option::weighted(0.25, (1u32..20, 1u32..15)), proptest::bool::weighted(0.15))
        .prop_map(|(rate_mbps, delay_ms, queue_pkts, loss_permille, outage, backup)| PathCase {
            rate_mbps,
            delay_ms,
            queue_pkts,
            loss_permille,
            outage,
            backup,
        })
}

fn render(paths: &[PathCase], sched: &str, cc: &str, bytes: u32, rcv_kb: u32) -> String {
    let mut t = format!("duration = \"600s\"\n[metrics]\ninterval = \"1s\"\n[tcp]\nrcv_buf = \"{rcv_kb}KB\"\n");
    for (i, p) in paths.iter().enumerate() {
        t += &format!(
            "[[link]]\nname = \"l{i}\"\nrate = \"{}Mbps\"\ndelay = \"{}ms\"\nqueue = \"{}pkt\"\nloss = \"{}%\"\n",
            p.rate_mbps,
            p.delay_ms,
            p.queue_pkts,
            p.loss_permille as f64 / 10.0
        );
        if let Some((at, len)) = p.outage {
            t += &format!("down = [{{ at = \"{at}s\", until = \"{}s\" }}]\n", at + len);
        }
    }
    for i in 0..paths.len() {
        t += &format!("[[path]]\nname = \"p{i}\"\nlinks = [\"l{i}\"]\n");
    }
    let names: Vec<String> = (0..paths.len()).map(|i| format!("\"p{i}\"")).collect();
    let backups: Vec<String> = paths.iter().enumerate().skip(1).filter(|(_, p)| p.backup).map(|(i, _)| format!("\"p{i}\"")).collect();
    t += &format!(
        "[[flow]]\nname = \"mp\"\npaths = [{}]\nscheduler = \"{sched}\"\ncc = \"{cc}\"\nbackup = [{}]\napp = {{ kind = \"bulk\", bytes = {bytes} }}\n",
        names.join(", "),
        backups.join(", ")
    );
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), ..ProptestConfig::default() })]

    #[test]
    fn random_multipath_networks_deliver_every_byte(
        paths in proptest::collection::vec(path_case(), 1..4),
        sched in 0..SCHEDULERS.len(),
        cc in 0..CONTROLLERS.len(),
        bytes in 10_000u32..600_000,
        rcv_kb in 8u32..600,
    ) {
        let text = render(&paths, SCHEDULERS[sched].0, CONTROLLERS[cc].0, bytes, rcv_kb);
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        prop_assert!(f.complete, "delivered {} of {}\n{}", f.bytes_delivered, bytes, text);
        prop_assert!(f.max_receive_buffer_bytes <= rcv_kb as u64 * 1000);
    }
}

#[test]
fn every_scheduler_with_every_controller_on_a_lossy_pair_of_paths() {
    let paths = [
        PathCase { rate_mbps: 10, delay_ms: 10, queue_pkts: 50, loss_permille: 10, outage: None, backup: false },
        PathCase { rate_mbps: 5, delay_ms: 60, queue_pkts: 50, loss_permille: 5, outage: Some((3, 2)), backup: false },
    ];
    for (sched, _) in SCHEDULERS {
        for (cc, _) in CONTROLLERS {
            let text = render(&paths, sched, cc, 2_000_000, 256);
            let s = parse(&text);
            let a = run_checked(&s);
            let f = &a.summary.flows[0];
            assert!(f.complete, "{sched} + {cc}: {} of 2000000", f.bytes_delivered);
            // deterministic
            let b = mpsim_core::Simulation::new(&s).run();
            assert_eq!(a.summary.flows[0].completion_time_s, b.summary.flows[0].completion_time_s, "{sched} + {cc}");
        }
    }
}

#[test]
fn dqs_reschedules_the_queue_of_a_subflow_that_fails() {
    // path 0 dies at 5 s and never comes back; DQS leaves data queued on each subflow (up to
    // its window, or one window beyond the flight with `_ahead`), so the transfer can only
    // finish if that queue is taken back and sent on path 1
    let paths = [
        PathCase { rate_mbps: 10, delay_ms: 10, queue_pkts: 50, loss_permille: 0, outage: Some((5, 10_000)), backup: false },
        PathCase { rate_mbps: 5, delay_ms: 30, queue_pkts: 50, loss_permille: 0, outage: None, backup: false },
    ];
    for sched in ["dqs", "dqs_exact", "dqs_backoff", "dqs_ahead"] {
        let text = render(&paths, sched, "lia", 20_000_000, 512);
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        assert!(f.complete, "{sched}: {} of 20000000", f.bytes_delivered);
        assert!(f.reinjections > 0, "{sched}");
        assert!(f.subflows[0].timeouts >= 2, "{sched}");
    }
}

/// The seed-001 setting at n = 10: four lossy paths of 5, 5, 2 and 2 Mbit/s with RTTs 20, 70,
/// 120 and 220 ms, a 64 KB receive buffer, LIA; goodput (bit/s) of `sched` over seeds 1..=5.
/// The paths are listed slowest first, so that an order taken from the list (the lowest index
/// first) is no stand-in for the ranking.
fn dqs_setting_goodput(sched: &str) -> Vec<f64> {
    let links = [("5Mbps", 10, "0.2%"), ("5Mbps", 35, "0.1%"), ("2Mbps", 60, "0.3%"), ("2Mbps", 110, "0.2%")];
    (1..=5)
        .map(|seed| {
            let mut t = format!("duration = \"60s\"\nseed = {seed}\n[tcp]\nsnd_buf = \"128KB\"\nrcv_buf = \"64KB\"\ndsack = true\n[metrics]\nwarmup = \"5s\"\n");
            for (i, (rate, delay, loss)) in links.iter().enumerate() {
                t += &format!("[[link]]\nname = \"s{i}\"\nrate = \"{rate}\"\ndelay = \"{delay}ms\"\nloss = \"{loss}\"\n[[path]]\nname = \"p{i}\"\nlinks = [\"s{i}\"]\n");
            }
            t += &format!("[[flow]]\nname = \"mp\"\npaths = [\"p3\", \"p2\", \"p1\", \"p0\"]\nscheduler = \"{sched}\"\ncc = \"lia\"\n");
            mpsim_core::Simulation::new(&parse(&t)).run().summary.flows[0].goodput_bps
        })
        .collect()
}

#[test]
fn dqs_ranking_beats_its_round_robin_control_when_the_rtts_spread() {
    // the mechanism seed 001 credits: with the window-bounded queues kept and the ranking by
    // expected delivery time switched off (`dqs_round_robin`), utilisation falls. Seed by seed
    // (same losses drawn), DQS is ahead at every seed and by a fifth in total; this goes red if
    // the ranking stops ranking (checked by making `Dqs::expected_delivery` return a constant:
    // DQS then fills the first-listed, slowest path first)
    let dqs = dqs_setting_goodput("dqs");
    let control = dqs_setting_goodput("dqs_round_robin");
    for (seed, (a, b)) in dqs.iter().zip(&control).enumerate() {
        assert!(a > b, "seed {}: dqs {a:.0} vs dqs_round_robin {b:.0} bit/s", seed + 1);
    }
    let (a, b): (f64, f64) = (dqs.iter().sum(), control.iter().sum());
    assert!(a > 1.2 * b, "dqs {a:.0} vs dqs_round_robin {b:.0} bit/s over five seeds");
}
