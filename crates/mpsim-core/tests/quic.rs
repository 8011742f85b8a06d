//! QUIC scenario tests: one path, loss-free and lossy, with every invariant check on and the
//! conservation checks of the TCP scenarios.

mod common;
use common::*;
use mpsim_core::Scenario;

fn quic_one_link(duration: &str, link: &str, flow: &str) -> String {
    one_link(duration, link, &format!("transport = \"quic\"\n{flow}"))
}

#[test]
fn a_loss_free_path_is_kept_busy() {
    let out = run_checked(&parse(&quic_one_link("20s", "", "")));
    let f = &out.summary.flows[0];
    assert_eq!(f.transport, "quic");
    // QUIC's 1,500-byte packets carry 1,440 stream bytes: 96% of the link at most
    let share = f.goodput_bps / 10e6;
    assert!(share > 0.90, "goodput {} of 10 Mbit/s", f.goodput_bps);
    assert!(share < 1440.0 / 1500.0 + 0.005, "{share}");
    assert_eq!(f.subflows.len(), 1);
    let q = f.quic.as_ref().expect("the QUIC record");
    assert_eq!(q.max_datagram, 1472);
    assert!(q.acks_sent[0] > 0);
}

#[test]
fn on_a_lossy_path_quic_comes_close_to_tcp_with_the_same_acknowledgements() {
    // benches/quic.py measures the grid; QUIC reduces its window at once where TCP runs
    // PRR, and carries 1440 bytes where TCP carries 1460
    for (delay, loss) in [("10ms", "1%"), ("50ms", "3%")] {
        let link = format!("loss = \"{loss}\"");
        let quic = run_checked(&parse(&quic_one_link("60s", &link, "").replace("\"10ms\"", &format!("\"{delay}\""))));
        let tcp = run_checked(&parse(&one_link("60s", &link, "tcp = { delayed_ack = true }").replace("\"10ms\"", &format!("\"{delay}\""))));
        let ratio = quic.summary.flows[0].goodput_bps / tcp.summary.flows[0].goodput_bps;
        assert!((0.8..1.05).contains(&ratio), "{delay} {loss}: QUIC / TCP = {ratio}");
    }
}

#[test]
fn timers_cost_no_more_events_than_tcps_acks() {
    // the loss detection timer's deadline moves with every RTT sample; an event per move
    // would take several per packet (unpaced: the pacer's wake-ups are events of their own)
    let quic = run_checked(&parse(&quic_one_link("20s", "", "quic = { pacing = false }")));
    let tcp = run_checked(&parse(&one_link("20s", "", "")));
    let (q, t) = (quic.summary.events, tcp.summary.events);
    assert!(q < t + t / 5, "QUIC {q} events, TCP {t}");
}

#[test]
fn a_superseded_pacing_wake_up_does_not_start_a_chain_of_its_own() {
    // tiny writes on a slow paced path: each write moves the wake-up earlier or later, and a
    // wake-up armed and then superseded still fires; if it polled the sender, each would arm
    // another, and the events would grow with the writes (30,607 for this run before)
    let text = r#"
name = "paced_small_writes"
duration = "280ms"
seed = 15
[[link]]
name = "l0"
rate = "145976bps"
delay = "1ms"
queue = "33pkt"
[[path]]
name = "p0"
links = ["l0"]
[[flow]]
name = "f0"
path = "p0"
cc = "cubic"
start = "34ms"
transport = "quic"
app = { kind = "cbr", packet = 1, rate = "51650bps" }
"#;
    let s = parse(text);
    let out = run_checked(&s);
    let unpaced = run_checked(&parse(&text.replace("transport = \"quic\"", "transport = \"quic\"\nquic = { pacing = false }")));
    let (paced, plain) = (out.summary.events, unpaced.summary.events);
    assert!(paced < 2 * plain, "{paced} events paced, {plain} unpaced");
    assert!(paced <= 4 * s.estimate().events + 20_000);
}

#[test]
fn a_finite_transfer_completes_through_random_loss() {
    for cc in ["reno", "cubic", "westwood"] {
        let out = run_checked(&parse(&quic_one_link(
            "60s",
            "loss = \"2%\"",
            &format!("cc = \"{cc}\"\napp = {{ kind = \"bulk\", bytes = \"2MB\" }}"),
        )));
        let f = &out.summary.flows[0];
        assert!(f.complete, "{cc}: {} of 2 MB", f.bytes_delivered);
        assert!(f.retransmits > 0 && f.fast_recoveries > 0, "{cc}");
        assert_eq!(f.cc, cc);
        assert!(f.quic.as_ref().unwrap().packets_lost[0] > 0);
    }
}

#[test]
fn a_small_receive_buffer_limits_the_rate_to_a_window_per_round_trip() {
    // 16 KB of credit per 20 ms round trip: about 6.5 Mbit/s at most
    let out = run_checked(&parse(&quic_one_link("20s", "", "tcp = { rcv_buf = \"16KB\" }")));
    let f = &out.summary.flows[0];
    assert!(f.goodput_bps < 16_000.0 * 8.0 / 0.020, "{}", f.goodput_bps);
    assert!(f.goodput_bps > 2e6, "{}", f.goodput_bps);
    assert!(f.quic.as_ref().unwrap().max_data_updates > 10);
}

#[test]
fn an_outage_backs_off_the_probe_timeout_and_recovers() {
    let out = run_checked(&parse(&quic_one_link("30s", "down = [{ at = \"5s\", until = \"8s\" }]", "")));
    let f = &out.summary.flows[0];
    let q = f.quic.as_ref().unwrap();
    assert!(q.ptos[0] >= 3, "{q:?}");
    assert!(q.persistent_congestion[0] >= 1, "{q:?}");
    assert!(f.goodput_bps > 5e6, "{}", f.goodput_bps);
}

#[test]
fn same_scenario_same_result() {
    let s = parse(&quic_one_link("10s", "loss = \"1%\"", ""));
    let a = run_checked(&s);
    let b = run_checked(&s);
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
}

#[test]
fn bad_quic_flows_are_refused_with_a_reason() {
    let cases = [
        ("cc = \"bbr\"", "delivery-rate samples"),
        ("scheduler = \"lowest_rtt\"", "scheduler"),
        ("tcp = { mss = \"1000B\" }", "at least 1228"),
        ("tcp = { ecn = true }", "quic = { ecn = true }"),
        ("quic = { ecn = 1 }", "expected true or false"),
        ("quic = { ecm = true }", "ecm"),
        ("quic = { ack_frequency = { threshold = -1 } }", "flow[0].quic.ack_frequency.threshold"),
        ("quic = { ack_frequency = { reordering = 1001 } }", "flow[0].quic.ack_frequency.reordering"),
        ("quic = { ack_frequency = { max_ack_delay = \"500us\" } }", "min_ack_delay"),
        ("quic = { ack_frequency = { max_ack_delay = \"20s\" } }", "flow[0].quic.ack_frequency.max_ack_delay"),
        ("quic = { ack_frequency = { policy = \"rtt\" } }", "flow[0].quic.ack_frequency.policy"),
        ("quic = { ack_frequency = { policy = \"window\", threshold = 4 } }", "flow[0].quic.ack_frequency.threshold"),
        ("quic = { ack_frequency = { treshold = 4 } }", "did you mean 'threshold'"),
        ("quic = { ack_frequency = 10 }", "flow[0].quic.ack_frequency"),
        ("quic = { pacing = \"yes\" }", "flow[0].quic.pacing"),
        ("quic = { reset_late = 1 }", "flow[0].quic.reset_late"),
        ("quic = { reset_late = true }", "flow[0].quic.reset_late"),
    ];
    for (extra, why) in cases {
        let text =
            quic_one_link("10s", "", extra).replace("path = \"p\"\n", if extra.starts_with("paths") { "" } else { "path = \"p\"\n" });
        let text = text.replace("[[flow]]", "[[path]]\nname = \"q\"\nlinks = [\"l\"]\n[[flow]]");
        let e = Scenario::from_toml(&text, "t").expect_err(extra).to_string();
        assert!(e.contains(why), "{extra}: {e}");
    }
    let e = Scenario::from_toml(&quic_one_link("10s", "", "").replace("trace = true", "pcap = true"), "t").unwrap_err().to_string();
    assert!(e.contains("metrics.pcap") && e.contains("QUIC"), "{e}");
    let e = Scenario::from_toml(&one_link("10s", "", "transport = \"quick\""), "t").unwrap_err().to_string();
    assert!(e.contains("tcp, udp, sctp or quic"), "{e}");
    let e = Scenario::from_toml(&one_link("10s", "", "quic = { ecn = true }"), "t").unwrap_err().to_string();
    assert!(e.contains("flow[0].quic") && e.contains("only a QUIC flow"), "{e}");
}

#[test]
fn ack_frequency_sends_fewer_acks_and_keeps_the_goodput_on_a_clean_path() {
    // 10 Mbit/s, 10 ms, 20 s: RFC 9000's every second packet, then the receiver asked for
    // one ACK per 11 packets, and the window policy
    let run = |quic: &str| {
        let out = run_checked(&parse(&quic_one_link("20s", "", quic)));
        let f = &out.summary.flows[0];
        let q = f.quic.as_ref().unwrap();
        (q.acks_sent[0] as f64 / f.segments_sent as f64, f.goodput_bps, q.ack_frequency_frames)
    };
    let (base_ratio, base_goodput, none) = run("");
    let (ratio, goodput, frames) = run("quic = { ack_frequency = { threshold = 10 } }");
    let (policy_ratio, policy_goodput, policy_frames) = run("quic = { ack_frequency = { policy = \"window\" } }");
    assert_eq!(none, None);
    assert!((0.45..0.55).contains(&base_ratio), "{base_ratio}");
    assert!(ratio < 0.1, "threshold 10: {ratio} ACK packets per data packet");
    assert!(policy_ratio < 0.13, "window policy: {policy_ratio}");
    assert_eq!(frames, Some(1), "one frame, at the start");
    assert!(policy_frames.unwrap() > 1, "the policy follows the window");
    assert!(goodput >= base_goodput * 0.995, "{goodput} against {base_goodput}");
    assert!(policy_goodput >= base_goodput * 0.995, "{policy_goodput} against {base_goodput}");
}

#[test]
fn with_ack_frequency_a_lossy_transfer_still_completes() {
    for af in ["{ threshold = 10, reordering = 3 }", "{ policy = \"window\", reordering = 0 }"] {
        let out = run_checked(&parse(&quic_one_link(
            "60s",
            "loss = \"2%\"",
            &format!("app = {{ kind = \"bulk\", bytes = \"2MB\" }}\nquic = {{ ack_frequency = {af} }}"),
        )));
        let f = &out.summary.flows[0];
        assert!(f.complete, "{af}: {} of 2 MB", f.bytes_delivered);
        assert!(f.quic.as_ref().unwrap().packets_lost[0] > 0, "{af}");
    }
}

// ----- Multipath QUIC -----

/// Two disjoint paths (10 Mbit/s, 10 ms and `rate1`, `delay1`; `loss` on both, path 1 down
/// during `outage`) and a Multipath QUIC flow over them.
fn two_paths(sched: &str, cc: &str, rate1: &str, delay1: &str, loss: &str, outage: &str, app: &str) -> String {
    format!(
        r#"
duration = "60s"
[metrics]
trace = true
[[link]]
name = "l0"
rate = "10Mbps"
delay = "10ms"
queue = "50pkt"
loss = "{loss}"
[[link]]
name = "l1"
rate = "{rate1}"
delay = "{delay1}"
queue = "50pkt"
loss = "{loss}"
{outage}
[[path]]
name = "p0"
links = ["l0"]
[[path]]
name = "p1"
links = ["l1"]
[[flow]]
name = "f"
paths = ["p0", "p1"]
transport = "quic"
scheduler = "{sched}"
cc = "{cc}"
{app}
"#
    )
}

#[test]
fn multipath_quic_applies_the_ack_frequency_to_every_path() {
    let run = |quic: &str| {
        let text = two_paths("lowest_rtt", "lia", "10Mbps", "10ms", "0%", "", quic).replace("\"60s\"", "\"20s\"");
        run_checked(&parse(&text)).summary.flows[0].clone()
    };
    let base = run("");
    let af = run("quic = { ack_frequency = { threshold = 10 } }");
    for (k, (b, a)) in base.subflows.iter().zip(&af.subflows).enumerate() {
        let per = |f: &mpsim_core::metrics::FlowSummary, s: &mpsim_core::metrics::SubflowSummary| {
            f.quic.as_ref().unwrap().acks_sent[k] as f64 / s.segments_sent as f64
        };
        let (rb, ra) = (per(&base, b), per(&af, a));
        assert!(ra < rb / 4.0, "path {k}: {ra} ACK packets per packet against {rb}");
        assert!(a.goodput_bps > b.goodput_bps * 0.98, "path {k}");
    }
}

#[test]
fn two_disjoint_paths_carry_more_than_one_path_can() {
    let one = run_checked(&parse(&quic_one_link("20s", "", "cc = \"lia\"")));
    let text = two_paths("lowest_rtt", "lia", "10Mbps", "10ms", "0%", "", "").replace("\"60s\"", "\"20s\"");
    let two = run_checked(&parse(&text));
    let f = &two.summary.flows[0];
    let ratio = f.goodput_bps / one.summary.flows[0].goodput_bps;
    assert!(ratio > 1.6, "two paths / one path = {ratio}");
    assert_eq!(f.subflows.len(), 2);
    assert!(f.subflows.iter().all(|s| s.goodput_bps > 3e6), "{:?}", f.subflows.iter().map(|s| s.goodput_bps).collect::<Vec<_>>());
}

#[test]
fn every_scheduler_with_every_controller_delivers_every_byte_over_two_paths() {
    use mpsim_core::cc::{Controller, CONTROLLERS};
    use mpsim_core::sched::SCHEDULERS;
    let outage = r#"down = [{ at = "3s", until = "5s" }]"#;
    for (sched, _) in SCHEDULERS.iter().filter(|s| s.0 != "mptcp_rec") {
        for (cc, _) in CONTROLLERS.iter().filter(|c| !Controller::by_name(c.0).unwrap().wants_rate_samples()) {
            let text = two_paths(sched, cc, "5Mbps", "60ms", "1%", outage, "app = { kind = \"bulk\", bytes = 2000000 }");
            let s = parse(&text);
            let a = run_checked(&s);
            let f = &a.summary.flows[0];
            assert!(f.complete, "{sched} + {cc}: {} of 2000000", f.bytes_delivered);
            let b = mpsim_core::Simulation::new(&s).run();
            assert_eq!(f.completion_time_s, b.summary.flows[0].completion_time_s, "{sched} + {cc}");
        }
    }
}

#[test]
fn multipath_quic_refuses_what_it_does_not_model() {
    for (key, value) in [("backup", "[\"p0\"]"), ("join_delay", "\"1s\""), ("scheduler", "\"mptcp_rec\"")] {
        let text = two_paths("lowest_rtt", "reno", "10Mbps", "10ms", "0%", "", "").replace("scheduler = \"lowest_rtt\"\n", "");
        let text = format!("{text}{key} = {value}\n");
        let err = mpsim_core::Scenario::from_toml(&text, "test").expect_err(key).to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
}

#[test]
fn a_backup_path_stays_idle_while_the_primary_works() {
    let text = two_paths("lowest_rtt", "lia", "10Mbps", "5ms", "0%", "", "backup = [\"p1\"]").replace("\"60s\"", "\"20s\"");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    let (p0, p1) = (&f.subflows[0], &f.subflows[1]);
    // the backup path has the lower RTT, so lowest_rtt would pick it were it not a backup
    assert!(!p0.backup && p1.backup);
    assert_eq!(p1.bytes_sent, 0, "stream bytes on the backup path");
    assert_eq!(p1.segments_sent, 1, "the PATH_CHALLENGE (with PATH_STATUS_BACKUP) only");
    assert!(p0.goodput_bps > 9e6);
    assert_eq!(f.quic.as_ref().unwrap().abandoned_s, Some(vec![None, None]));
}

#[test]
fn a_failed_primary_is_abandoned_after_three_probe_timeouts_and_the_backup_takes_over() {
    // path 0 (the primary) goes down for good at 5 s; path 1 is the backup
    let text =
        two_paths("lowest_rtt", "cubic", "10Mbps", "10ms", "0%", "", "backup = [\"p1\"]\napp = { kind = \"bulk\", bytes = 12000000 }")
            .replacen("loss = \"0%\"\n", "loss = \"0%\"\ndown = [{ at = \"5s\", until = \"60s\" }]\n", 1);
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    let q = f.quic.as_ref().unwrap();
    assert!(f.complete, "{} of 12 MB", f.bytes_delivered);
    let abandoned = q.abandoned_s.as_ref().unwrap();
    assert_eq!(abandoned[1], None);
    let at = abandoned[0].expect("the primary is abandoned");
    // three probe timeouts, backed off: 1 + 2 + 4 PTOs of about 25 + 20 + a few ms after the
    // last packet sent before 5 s
    assert_eq!(q.ptos[0], 3);
    assert!((5.1..7.5).contains(&at), "abandoned at {at} s");
    let (p0, p1) = (&f.subflows[0], &f.subflows[1]);
    eprintln!(
        "primary down at 5 s, abandoned at {at:.3} s; stream bytes sent {} on the primary, {} on the backup; complete at {:?} s",
        p0.bytes_sent, p1.bytes_sent, f.completion_time_s
    );
    assert!(p1.bytes_sent > 0 && p1.goodput_bps > 0.0);
    // the backup carried nothing before the primary was abandoned: about 5 s of 10 Mbit/s on
    // the primary, the rest on the backup
    assert!(p0.bytes_sent < 7_000_000 && p1.bytes_sent > 5_000_000, "{} and {}", p0.bytes_sent, p1.bytes_sent);
    // the same run again, the same result
    let again = mpsim_core::Simulation::new(&parse(&text)).run();
    assert_eq!(f.completion_time_s, again.summary.flows[0].completion_time_s);
}

#[test]
fn without_a_backup_an_outage_longer_than_three_probe_timeouts_abandons_the_path() {
    let outage = r#"down = [{ at = "3s", until = "10s" }]"#;
    let text = two_paths("lowest_rtt", "lia", "10Mbps", "10ms", "0%", outage, "app = { kind = \"bulk\", bytes = 20000000 }");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    assert!(f.complete, "{} of 20 MB", f.bytes_delivered);
    let q = f.quic.as_ref().unwrap();
    let abandoned = q.abandoned_s.as_ref().unwrap();
    assert!(abandoned[1].is_some_and(|t| (3.1..5.0).contains(&t)), "{abandoned:?}");
    // path 1 carries nothing after its outage ends: abandoned paths are not used again
    assert!(f.subflows[1].bytes_sent < 4_000_000, "{}", f.subflows[1].bytes_sent);
}

/// A video of 25 frames/s, GOP IBBPBBPBBPBB, I frames of priority 1: `rate` of 3.8 or 9.5
/// Mbit/s ("60KB" or "150KB" I frames, P and B frames of 40% and 20% of them).
fn video(i_frame_kb: u32) -> String {
    let (p, b) = (i_frame_kb * 2 / 5, i_frame_kb / 5);
    format!(
        "app = {{ kind = \"media\", fps = 25, gop = \"IBBPBBPBBPBB\", deadline = \"1s\", classes = {{ I = {{ size = \"{i_frame_kb}KB\", priority = 1 }}, P = {{ size = \"{p}KB\" }}, B = {{ size = \"{b}KB\" }} }} }}"
    )
}

#[test]
fn a_media_stream_over_quic_delivers_every_frame_whole_on_its_own_stream() {
    // the video stops at 20 s; by 40 s every frame written is delivered, each once, through
    // 2% loss (every stream's bytes in order: the connection's invariant checks run throughout)
    for multipath in [false, true] {
        let mut text = quic_one_link("40s", "loss = \"2%\"", &format!("stop = \"20s\"\n{}", video(60)));
        if multipath {
            text = text.replace("path = \"p\"\n", "paths = [\"p\", \"p2\"]\n").replace(
                "[[flow]]",
                "[[link]]\nname = \"l2\"\nrate = \"10Mbps\"\ndelay = \"30ms\"\nqueue = \"100pkt\"\nloss = \"2%\"\n[[path]]\nname = \"p2\"\nlinks = [\"l2\"]\n[[flow]]",
            );
        }
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        assert!(f.retransmits > 0 && f.out_of_order_segments > 0, "losses and reordering to recover from");
        assert_eq!(f.bytes_delivered, f.bytes_written, "multipath {multipath}");
        for c in &f.classes {
            assert!(c.frames > 0 && c.refused == 0, "{}: {} frames, {} refused", c.class, c.frames, c.refused);
            assert_eq!(c.delivered, c.frames, "class {}: every frame written is delivered once", c.class);
        }
    }
}

/// Mean delay of the video's I, P and B frames over a congested 6 Mbit/s link, the frames
/// written at once into a send buffer of 64 MB (so that they wait in the transport, not in the
/// application's queue, which would put the I frames first itself).
fn class_delays(priorities: bool) -> [f64; 3] {
    let flow = format!("quic = {{ priorities = {priorities} }}\ntcp = {{ snd_buf = \"64MB\" }}\n{}", video(150));
    let out = run_checked(&parse(&quic_one_link("30s", "", &flow).replace("10Mbps", "6Mbps")));
    let f = &out.summary.flows[0];
    let d = |name: &str| f.classes.iter().find(|c| c.class == name).and_then(|c| c.delay_mean_ms).expect("frames delivered");
    [d("I"), d("P"), d("B")]
}

#[test]
fn with_priorities_the_urgent_frames_overtake_the_others_under_congestion() {
    // a 9.5 Mbit/s video on a 6 Mbit/s link: frames wait in the sender; with priorities the
    // I frames' streams go first and arrive sooner than the P and B frames; sent in the order
    // written, every class waits alike
    // (measured: on, I 3,345 ms, P 7,181 ms, B 7,097 ms; off, 6,016, 6,061 and 6,032 ms; the
    // I frames wait at all because their streams' IDs come after the waiting P and B frames'
    // and MAX_STREAMS grants 100 streams beyond those read whole)
    let [i, p, b] = class_delays(true);
    eprintln!("priorities on: I {i:.0} ms, P {p:.0} ms, B {b:.0} ms");
    assert!(i < 0.8 * p.min(b), "priorities on: I {i:.0} ms, P {p:.0} ms, B {b:.0} ms");
    let [i, p, b] = class_delays(false);
    eprintln!("priorities off: I {i:.0} ms, P {p:.0} ms, B {b:.0} ms");
    assert!(i > 0.9 * p.min(b), "priorities off: I {i:.0} ms, P {p:.0} ms, B {b:.0} ms");
}

#[test]
fn path_status_changes_make_a_backup_available_and_a_regular_path_backup() {
    let status = r#"quic = { path_status = [{ at = "8s", path = "p1", status = "available" }, { at = "4s", path = "p1", status = "backup" }, { at = "12s", path = "p0", status = "backup" }] }"#;
    let text = two_paths("lowest_rtt", "cubic", "10Mbps", "10ms", "0%", "", status).replace("\"60s\"", "\"16s\"");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    let q = f.quic.as_ref().unwrap();
    // p1 is regular from the start: the change at 4 s makes it a backup, the one at 8 s
    // available again (the list is applied in time order), and p0 a backup at 12 s
    let applied: Vec<(f64, &str, &str)> = q.path_status.as_ref().unwrap().iter().map(|c| (c.at_s, c.path.as_str(), c.status)).collect();
    assert_eq!(applied, vec![(4.0, "p1", "backup"), (8.0, "p1", "available"), (12.0, "p0", "backup")]);
    assert_eq!((f.subflows[0].backup, f.subflows[1].backup), (true, false));
    // per second of the run, the stream bytes each path carried: both at first, p0 alone
    // while p1 is a backup, both again, then p1 alone
    use mpsim_core::metrics::Column;
    let tr = out.trace.as_ref().expect("the trace");
    let (Some(Column::F64(time)), Some(Column::Str(path)), Some(Column::Str(ev)), Some(Column::U64(len))) =
        (tr.column("time_s"), tr.column("path"), tr.column("event"), tr.column("len"))
    else {
        panic!("trace columns")
    };
    let per_second = |name: &str| -> Vec<u64> {
        let mut v = vec![0u64; 16];
        for i in (0..ev.len()).filter(|&i| path[i] == name && ev[i] == "send" && len[i] > 0) {
            v[(time[i] as usize).min(15)] += 1;
        }
        v
    };
    let (p0, p1) = (per_second("p0"), per_second("p1"));
    for s in [1, 2, 9, 10] {
        assert!(p0[s] > 100 && p1[s] > 100, "second {s}: {} and {} packets", p0[s], p1[s]);
    }
    for s in [5, 6, 7] {
        assert!(p0[s] > 100 && p1[s] == 0, "second {s}: {} and {} packets", p0[s], p1[s]);
    }
    for s in [13, 14, 15] {
        assert!(p0[s] == 0 && p1[s] > 100, "second {s}: {} and {} packets", p0[s], p1[s]);
    }
    // without the changes both paths carry data to the end
    let plain = run_checked(&parse(&two_paths("lowest_rtt", "cubic", "10Mbps", "10ms", "0%", "", "").replace("\"60s\"", "\"16s\"")));
    assert!(plain.summary.flows[0].quic.as_ref().unwrap().path_status.is_none());
}

#[test]
fn path_status_refuses_what_it_cannot_apply() {
    let base = two_paths("lowest_rtt", "cubic", "10Mbps", "10ms", "0%", "", "");
    for (status, expect) in [
        (r#"[{ at = "1s", path = "p9", status = "backup" }]"#, "not a path of this flow"),
        (r#"[{ at = "1s", path = "p1", status = "standby" }]"#, "not a path status"),
        (r#"[{ at = "1s", path = "p1" }]"#, "status: missing"),
        (r#"[{ at = "1s", path = "p1", status = "backup", when = "2s" }]"#, "unknown key"),
        (r#""p1""#, "expected a list of status changes"),
    ] {
        let text = format!("{base}quic = {{ path_status = {status} }}\n");
        let err = Scenario::from_toml(&text, "test").expect_err(status).to_string();
        assert!(err.contains("quic.path_status") && err.contains(expect), "{status}: {err}");
    }
    let one = quic_one_link("10s", "", r#"quic = { path_status = [{ at = "1s", path = "p", status = "backup" }] }"#);
    let err = Scenario::from_toml(&one, "test").expect_err("one path").to_string();
    assert!(err.contains("only a Multipath QUIC flow"), "{err}");
}

// ----- pacing -----

/// The largest queue, packets, the link's series saw (sampled every millisecond).
fn max_queue(out: &mpsim_core::Output) -> u64 {
    match out.link_series.column("queue_packets") {
        Some(mpsim_core::metrics::Column::U64(v)) => v.iter().copied().max().unwrap_or(0),
        _ => panic!("no queue series"),
    }
}

#[test]
fn pacing_keeps_the_queue_of_a_deep_buffer_smaller_at_a_loss_free_start() {
    // 10 Mbit/s, 20 ms, 2,000 packets of buffer, the first 600 ms (no loss yet); pacing is
    // on by default. With
    // RFC 9000's ACK every second packet the slow start's ACK clock never lets more than a
    // few packets go at once, within noq's burst of 10, and pacing changes nothing; with an
    // ACK every 31 packets (ack_frequency threshold 30) each ACK releases a burst of 31
    // unpaced, of 10 paced.
    let run = |quic: &str| {
        let text = quic_one_link("600ms", "", quic)
            .replace("queue = \"100pkt\"", "queue = \"2000pkt\"")
            .replace("trace = true", "interval = \"1ms\"");
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        assert_eq!(f.quic.as_ref().unwrap().packets_lost[0], 0, "{quic}: a loss-free start");
        (max_queue(&out), f.bytes_delivered)
    };
    let (unpaced, d0) = run("quic = { ack_frequency = { threshold = 30 }, pacing = false }");
    let (paced, d1) = run("quic = { ack_frequency = { threshold = 30 }, pacing = true }");
    eprintln!("ACK every 31 packets: largest queue {unpaced} packets unpaced, {paced} paced; {d0} and {d1} bytes delivered");
    assert!(paced < unpaced, "paced {paced}, unpaced {unpaced}");
    assert!(d1 as f64 >= d0 as f64 * 0.95, "{d1} against {d0}");
    let (unpaced, d0) = run("quic = { pacing = false }");
    let (paced, d1) = run("");
    eprintln!("ACK every 2 packets: largest queue {unpaced} packets unpaced, {paced} paced; {d0} and {d1} bytes delivered");
    assert_eq!((paced, d1), (unpaced, d0), "the ACK clock keeps bursts within the pacer's");
}

/// The video of `class_delays` (9.5 Mbit/s into 6 Mbit/s, a 64 MB send buffer) for 20 s of a
/// 40 s run, with `quic.reset_late` on or off.
fn late_video(reset_late: bool) -> mpsim_core::Output {
    let flow = format!("stop = \"20s\"\nquic = {{ reset_late = {reset_late} }}\ntcp = {{ snd_buf = \"64MB\" }}\n{}", video(150));
    run_checked(&parse(&quic_one_link("40s", "loss = \"1%\"", &flow).replace("10Mbps", "6Mbps")))
}

#[test]
fn reset_late_abandons_the_frames_past_their_deadline_and_the_others_arrive_in_time() {
    let on = late_video(true);
    let f = &on.summary.flows[0];
    let q = f.quic.as_ref().unwrap();
    let (reset, frames) = (q.streams_reset.unwrap(), q.reset_stream_frames.unwrap());
    let written: u64 = f.classes.iter().map(|c| c.frames).sum();
    let delivered: u64 = f.classes.iter().map(|c| c.delivered).sum();
    let late: u64 = f.classes.iter().map(|c| c.late).sum();
    eprintln!("reset_late: {written} frames written, {delivered} delivered ({late} late), {reset} reset, {frames} RESET_STREAM frames");
    // every frame written is delivered whole or reset, never both; each reset took a frame
    assert!(reset > 0 && frames >= reset);
    assert_eq!(delivered + reset, written);
    // without it every frame is delivered, most of them late
    let off = late_video(false);
    let g = &off.summary.flows[0];
    assert!(g.quic.as_ref().unwrap().streams_reset.is_none());
    let late_off: u64 = g.classes.iter().map(|c| c.late).sum();
    let delivered_off: u64 = g.classes.iter().map(|c| c.delivered).sum();
    eprintln!("without: {delivered_off} delivered ({late_off} late)");
    assert!(late_off > 2 * late + 100, "late frames: {late} with the resets, {late_off} without");
    assert!(delivered - late > delivered_off - late_off, "frames in time: {} with, {} without", delivered - late, delivered_off - late_off);
}
