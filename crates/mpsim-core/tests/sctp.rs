//! SCTP scenario tests: single-homed associations, multihoming with failover, CMT; with every
//! invariant check on and the conservation checks of the TCP scenarios.

mod common;
use common::*;
use mpsim_core::{Scenario, Simulation};

fn sctp_one_link(duration: &str, link: &str, flow: &str) -> String {
    one_link(duration, link, &format!("transport = \"sctp\"\n{flow}"))
}

/// Two disjoint paths `a` (10 Mb/s, 10 ms) and `b` (`rate_b`, 30 ms), one SCTP flow over both.
fn two_paths(duration: &str, link_a: &str, rate_b: &str, flow: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[metrics]
trace = true
[[link]]
name = "la"
rate = "10Mbps"
delay = "10ms"
queue = "100pkt"
{link_a}
[[link]]
name = "lb"
rate = "{rate_b}"
delay = "30ms"
queue = "100pkt"
[[path]]
name = "a"
links = ["la"]
[[path]]
name = "b"
links = ["lb"]
[[flow]]
name = "f"
paths = ["a", "b"]
transport = "sctp"
{flow}
"#
    )
}

#[test]
fn a_lossless_association_fills_the_line_less_its_headers() {
    let out = run_checked(&parse(&sctp_one_link("20s", "", "")));
    let f = &out.summary.flows[0];
    assert_eq!(f.transport, "sctp");
    // slow start overflows the 100-packet queue once; no timeout follows
    assert_eq!(f.timeouts, 0, "{f:?}");
    // 1456 user bytes in 1504 on the wire
    let line = 10e6 * 1456.0 / 1504.0;
    assert!(f.goodput_bps > 0.95 * line && f.goodput_bps <= line * 1.001, "{} vs {line}", f.goodput_bps);
}

#[test]
fn finite_transfers_over_lossy_links_deliver_every_byte() {
    for (loss, threshold) in [("\"3%\"", 3), ("{ model = \"gilbert\", mean = \"2%\", burst = 4 }", 4)] {
        for cc in ["rfc4960", "newreno"] {
            let flow =
                format!("cc = \"{cc}\"\napp = {{ kind = \"bulk\", bytes = \"2MB\" }}\nsctp = {{ fast_rtx_threshold = {threshold} }}");
            let out = run_checked(&parse(&sctp_one_link("120s", &format!("loss = {loss}"), &flow)));
            let f = &out.summary.flows[0];
            assert!(f.complete, "{loss} {cc}: delivered {} of {}", f.bytes_delivered, f.bytes_written);
            assert_eq!(f.bytes_delivered, 2_000_000);
            assert!(f.retransmits > 0);
            assert_eq!(f.cc, cc);
        }
    }
}

#[test]
fn one_drop_is_repaired_by_one_fast_retransmit() {
    let out = run_checked(&parse(&sctp_one_link(
        "5s",
        "loss = { model = \"scripted\", drops = [30] }",
        "app = { kind = \"bulk\", bytes = \"500KB\" }",
    )));
    let f = &out.summary.flows[0];
    assert!(f.complete);
    assert_eq!((f.retransmits, f.fast_recoveries, f.timeouts), (1, 1, 0), "{f:?}");
    let s = f.sctp.as_ref().unwrap();
    assert_eq!(s.fast_retransmits, 1);
    assert!(s.gap_blocks_received > 0);
}

#[test]
fn the_missing_report_threshold_is_configurable() {
    // 3 chunks lost in one window: with N = 4 each needs one more report than with N = 3
    let run = |n: u8| {
        let flow = format!("app = {{ kind = \"bulk\", bytes = \"300KB\" }}\nsctp = {{ fast_rtx_threshold = {n} }}");
        let out = run_checked(&parse(&sctp_one_link("10s", "loss = { model = \"scripted\", drops = [40] }", &flow)));
        out.summary.flows[0].clone()
    };
    let (three, four) = (run(3), run(4));
    assert!(three.complete && four.complete);
    assert_eq!(three.sctp.as_ref().unwrap().fast_rtx_threshold, 3);
    assert_eq!(four.sctp.as_ref().unwrap().fast_rtx_threshold, 4);
    // a tail loss with fewer than N later chunks needs the T3-rtx timer with N = 4, not 3
    let tail = |n: u8| {
        let flow =
            format!("app = {{ kind = \"bulk\", bytes = \"{}B\" }}\nsctp = {{ fast_rtx_threshold = {n}, delayed_sack = false }}", 1456 * 20);
        let out = run_checked(&parse(&sctp_one_link("10s", "loss = { model = \"scripted\", drops = [16] }", &flow)));
        out.summary.flows[0].clone()
    };
    // chunk 17 (the 17th data packet) is lost, 3 later chunks arrive: 3 reports
    let (t3, t4) = (tail(3), tail(4));
    assert!(t3.complete && t4.complete);
    assert_eq!((t3.fast_recoveries, t3.timeouts), (1, 0), "{t3:?}");
    assert_eq!((t4.fast_recoveries, t4.timeouts), (0, 1), "{t4:?}");
}

#[test]
fn a_small_receive_buffer_limits_the_association_and_is_never_exceeded() {
    let flow = "sctp = { rcv_buf = \"16KB\" }\napp = { kind = \"bulk\", bytes = \"1MB\" }";
    let out = run_checked(&parse(&sctp_one_link("30s", "loss = \"2%\"", flow)));
    let f = &out.summary.flows[0];
    assert!(f.complete);
    assert!(f.max_receive_buffer_bytes <= 16_000, "{}", f.max_receive_buffer_bytes);
    assert!(f.rcv_blocked_s > 0.0);
}

#[test]
fn bundling_puts_several_chunks_in_a_packet() {
    let flow = "sctp = { bundling = true, chunk = \"400B\" }\napp = { kind = \"bulk\", bytes = \"400KB\" }";
    let out = run_checked(&parse(&sctp_one_link("10s", "loss = \"1%\"", flow)));
    let f = &out.summary.flows[0];
    assert!(f.complete);
    // 1000 chunks of 400 B in far fewer packets (3 per 1500-byte packet)
    let new_packets = f.segments_sent - f.retransmits;
    assert!(new_packets < 500, "{new_packets}");
}

#[test]
fn a_failed_primary_moves_the_data_to_the_alternate_without_losing_a_byte() {
    // the primary's link goes down at 10 s for good
    let text = two_paths("200s", "down = [{ at = \"10s\", until = \"500s\" }]", "10Mbps", "app = { kind = \"bulk\", bytes = \"50MB\" }");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    let s = f.sctp.as_ref().unwrap();
    assert!(f.complete, "delivered {} of {}: {f:?}", f.bytes_delivered, f.bytes_written);
    // Path.Max.Retrans = 5: inactive at the 6th consecutive T3-rtx expiry. The RTO is 1 s
    // (RTO.Min) when the link fails and doubles per expiry up to RTO.Max (60 s). The first
    // expiry's error count may be reset by a late SACK of data that arrived before the
    // failure (its SACKs died on the failed link; RFC 4960 §8.3 resets the counter when data
    // sent to the destination is acknowledged), hence at most seven timers.
    let at = s.failover_at_s.expect("the primary fails over");
    let six: f64 = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0].iter().sum();
    let seven: f64 = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0].iter().sum();
    assert!(at >= 10.0 + six && at <= 10.0 + seven + 0.5, "failover at {at}");
    assert_eq!(s.destination_states, vec!["inactive", "active"]);
    assert!(f.subflows[1].bytes_sent > 0);
    assert!(s.failed_at_s.is_none());
}

#[test]
fn retransmissions_go_to_the_alternate_destination() {
    // one drop on the primary: a fast retransmission stays on it; a timeout goes to b
    let text = two_paths("10s", "loss = { model = \"scripted\", drops = [30] }", "10Mbps", "app = { kind = \"bulk\", bytes = \"500KB\" }");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    assert!(f.complete);
    assert_eq!(f.subflows[0].retransmits, 1);
    assert_eq!(f.subflows[1].bytes_sent, 0);
    // a lost tail: only the timer repairs it, and the retransmission goes to b
    let text = two_paths("10s", "loss = { model = \"scripted\", drops = [19] }", "10Mbps", "app = { kind = \"bulk\", bytes = \"29120B\" }");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    assert!(f.complete);
    assert_eq!(f.timeouts, 1);
    assert_eq!((f.subflows[0].retransmits, f.subflows[1].retransmits), (0, 1), "{:?}", f.subflows);
}

#[test]
fn every_destination_failing_ends_the_association() {
    let text = r#"
duration = "400s"
[[link]]
name = "la"
rate = "10Mbps"
delay = "10ms"
down = [{ at = "5s", until = "1000s" }]
[[link]]
name = "lb"
rate = "10Mbps"
delay = "10ms"
down = [{ at = "5s", until = "1000s" }]
[[path]]
name = "a"
links = ["la"]
[[path]]
name = "b"
links = ["lb"]
[[flow]]
name = "f"
paths = ["a", "b"]
transport = "sctp"
"#;
    let out = run_checked(&parse(text));
    let s = out.summary.flows[0].sctp.clone().unwrap();
    assert!(s.failed_at_s.is_some_and(|t| t > 5.0), "{s:?}");
}

#[test]
fn cmt_uses_both_paths_and_beats_the_primary_alone() {
    let single = run_checked(&parse(&two_paths("20s", "", "5Mbps", "")));
    let cmt = run_checked(&parse(&two_paths("20s", "", "5Mbps", "cmt = true")));
    let (s, c) = (&single.summary.flows[0], &cmt.summary.flows[0]);
    assert_eq!(s.subflows[1].bytes_sent, 0);
    assert!(c.subflows.iter().all(|x| x.bytes_sent > 0));
    assert!(c.goodput_bps > 1.3 * s.goodput_bps, "cmt {} vs {}", c.goodput_bps, s.goodput_bps);
    assert_eq!(c.scheduler.as_deref(), Some("round_robin"));
}

#[test]
fn per_destination_goodputs_count_from_the_warm_up_and_add_up_to_the_flow() {
    let text = two_paths("20s", "", "5Mbps", "cmt = true").replace("[metrics]\n", "[metrics]\nwarmup = \"5s\"\n");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    // each destination within its path's rate (10 and 5 Mbit/s, less headers)
    assert!(
        f.subflows[0].goodput_bps < 10e6 && f.subflows[1].goodput_bps < 5e6,
        "{} {}",
        f.subflows[0].goodput_bps,
        f.subflows[1].goodput_bps
    );
    let sum: f64 = f.subflows.iter().map(|d| d.goodput_bps).sum();
    assert!((sum / f.goodput_bps - 1.0).abs() < 0.02, "destinations {sum} vs flow {}", f.goodput_bps);
}

#[test]
fn without_split_fast_retransmit_reordering_across_paths_triggers_spurious_retransmissions() {
    // queues that never overflow, no random loss: every fast retransmission is spurious,
    // caused by reordering across the paths
    let run = |extra: &str| {
        let flow = format!("cmt = true\napp = {{ kind = \"bulk\", bytes = \"5MB\" }}\nsctp = {{ {extra} }}");
        let text = two_paths("20s", "", "5Mbps", &flow).replace("100pkt", "5000pkt");
        let out = run_checked(&parse(&text));
        out.summary.flows[0].clone()
    };
    let all = run("sfr = true");
    let none = run("sfr = false, cuc = false, dac = false");
    assert!(all.complete && none.complete);
    assert_eq!(all.retransmits, 0, "{:?}", all.sctp);
    assert!(none.retransmits > 10, "{:?}", none.sctp);
    // SFR alone removes them
    let sfr = run("sfr = true, cuc = false, dac = false");
    assert_eq!(sfr.retransmits, 0, "{:?}", sfr.sctp);
}

#[test]
fn cmt_with_losses_delivers_everything_under_every_retransmission_policy() {
    for policy in ["same", "asap", "cwnd", "ssthresh"] {
        for cc in ["rfc4960", "newreno"] {
            let flow = format!("cmt = true\ncc = \"{cc}\"\napp = {{ kind = \"bulk\", bytes = \"3MB\" }}\nsctp = {{ rtx_policy = \"{policy}\", rcv_buf = \"200KB\" }}");
            let out = run_checked(&parse(&two_paths("120s", "loss = \"2%\"", "5Mbps", &flow)));
            let f = &out.summary.flows[0];
            assert!(f.complete, "{policy}/{cc}: {} of {}", f.bytes_delivered, f.bytes_written);
            assert_eq!(f.sctp.as_ref().unwrap().rtx_policy.as_deref(), Some(policy));
        }
    }
}

#[test]
fn nr_sack_frees_gap_acked_chunks_and_relieves_a_small_send_buffer() {
    let run = |nr: bool| {
        let flow = format!("cmt = true\nsctp = {{ snd_buf = \"64KB\", rcv_buf = \"1MB\", nr_sack = {nr} }}");
        let out = run_checked(&parse(&two_paths("60s", "loss = \"1%\"", "5Mbps", &flow)));
        out.summary.flows[0].clone()
    };
    let (plain, nr) = (run(false), run(true));
    assert!(nr.sctp.as_ref().unwrap().nr_sack);
    assert!(nr.goodput_bps > 1.05 * plain.goodput_bps, "NR-SACK {} vs SACK {}", nr.goodput_bps, plain.goodput_bps);
}

#[test]
fn same_seed_gives_the_same_run() {
    let text = two_paths("10s", "loss = \"1%\"", "5Mbps", "cmt = true");
    let s = parse(&text);
    let mut a = Simulation::new(&s).run().summary;
    let mut b = Simulation::new(&s).run().summary;
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    assert_eq!(a, b);
}

#[test]
fn bad_sctp_settings_get_one_clear_error() {
    let bad = |text: &str| Scenario::from_toml(text, "bad.toml").unwrap_err();
    let e = bad(&sctp_one_link("1s", "", "cmt = true"));
    assert_eq!(e.key, "flow[0].cmt");
    assert!(e.message.contains("several paths"), "{}", e.message);
    let e = bad(&two_paths("1s", "", "5Mbps", "cmt = true\nsctp = { rtx_policy = \"fastest\" }"));
    assert_eq!(e.key, "flow[0].sctp.rtx_policy");
    assert!(e.message.contains("same, asap, cwnd, ssthresh"), "{}", e.message);
    assert!(e.to_string().contains("bad.toml"), "{e}");
    let e = bad(&two_paths("1s", "", "5Mbps", "sctp = { sfr = false }"));
    assert_eq!(e.key, "flow[0].sctp.sfr");
    let e = bad(&sctp_one_link("1s", "", "sctp = { fast_rtx_threshold = 0 }"));
    assert_eq!(e.key, "flow[0].sctp.fast_rtx_threshold");
    let e = bad(&sctp_one_link("1s", "", "sctp = { rto_min = \"2s\", rto_max = \"1s\" }"));
    assert_eq!(e.key, "flow[0].sctp.rto_min");
    let e = bad(&sctp_one_link("1s", "", "sctp = { chunk_size = 1000 }"));
    assert_eq!(e.key, "flow[0].sctp.chunk_size");
    let e = bad(&sctp_one_link("1s", "", "cc = \"cubic\""));
    assert_eq!(e.key, "flow[0].cc");
    assert!(e.message.contains("rfc4960"), "{}", e.message);
    let e = bad(&sctp_one_link("1s", "", "tcp = { mss = 1000 }"));
    assert_eq!(e.key, "flow[0].tcp");
    let e = bad(&one_link("1s", "", "sctp = { chunk = 1000 }"));
    assert_eq!(e.key, "flow[0].sctp");
    let e = bad(&one_link("1s", "", "cmt = true"));
    assert_eq!(e.key, "flow[0].cmt");
    let e = bad(&two_paths("1s", "", "5Mbps", "sctp = { primary = \"c\" }"));
    assert_eq!(e.key, "flow[0].sctp.primary");
    let e = bad(&sctp_one_link("1s", "", "sctp = { chunk = \"8B\" }"));
    assert_eq!(e.key, "flow[0].sctp.chunk");
    // JSCTP: k of zero, JSCTP keys on another controller, timestamps switched off
    let e = bad(&sctp_one_link("1s", "", "cc = \"jsctp\"\nsctp = { jsctp_k = 0 }"));
    assert_eq!(e.key, "flow[0].sctp.jsctp_k");
    assert!(e.message.contains("k/w") && e.to_string().contains("bad.toml"), "{e}");
    let e = bad(&sctp_one_link("1s", "", "cc = \"jsctp_abe\"\nsctp = { jsctp_k = \"0B\" }"));
    assert_eq!(e.key, "flow[0].sctp.jsctp_k");
    let e = bad(&sctp_one_link("1s", "", "sctp = { jsctp_ignore_zero = false }"));
    assert_eq!(e.key, "flow[0].sctp.jsctp_ignore_zero");
    assert!(e.message.contains("jsctp"), "{}", e.message);
    let e = bad(&sctp_one_link("1s", "", "cc = \"jsctp\"\nsctp = { timestamps = false }"));
    assert_eq!(e.key, "flow[0].sctp.timestamps");
    // the loss-rule controls: a known name, and JSCTP's only
    let e = bad(&sctp_one_link("1s", "", "cc = \"jsctp\"\nsctp = { jsctp_losses = \"random\" }"));
    assert_eq!(e.key, "flow[0].sctp.jsctp_losses");
    assert!(e.message.contains("wireless") && e.message.contains("congestion"), "{}", e.message);
    let e = bad(&sctp_one_link("1s", "", "sctp = { jsctp_losses = \"wireless\" }"));
    assert_eq!(e.key, "flow[0].sctp.jsctp_losses");
}

/// Two paths through one shared bottleneck (separate access links), a CMT association over
/// both and a single-homed association beside it; the bottleneck queue holds `queue` packets.
fn shared_bottleneck(cc: &str, queue: u32) -> String {
    format!(
        r#"
duration = "200s"
[metrics]
warmup = "20s"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "20ms"
queue = "{queue}pkt"
[[link]]
name = "x"
rate = "100Mbps"
delay = "1ms"
[[link]]
name = "y"
rate = "100Mbps"
delay = "5ms"
[[link]]
name = "z"
rate = "100Mbps"
delay = "3ms"
[[path]]
name = "px"
links = ["x", "bottleneck"]
[[path]]
name = "py"
links = ["y", "bottleneck"]
[[path]]
name = "pz"
links = ["z", "bottleneck"]
[[flow]]
name = "cmt"
paths = ["px", "py"]
transport = "sctp"
cmt = true
cc = "{cc}"
[[flow]]
name = "single"
path = "pz"
transport = "sctp"
"#
    )
}

#[test]
fn coupled_cmt_takes_about_one_association_share_of_a_shared_bottleneck() {
    // Drop-tail losses synchronise differently with every queue size, so one run's share
    // swings widely (LIA: 1.48 to 2.00 over the five below): the mean over five is compared
    let share = |cc: &str| {
        let queues = [80, 90, 100, 110, 120];
        let sum: f64 = queues
            .iter()
            .map(|&q| {
                let out = run_checked(&parse(&shared_bottleneck(cc, q)));
                let f = &out.summary.flows;
                assert_eq!(f[0].cc, cc);
                f[0].goodput_bps / f[1].goodput_bps
            })
            .sum();
        sum / queues.len() as f64
    };
    let (plain, lia, olia) = (share("rfc4960"), share("lia"), share("olia"));
    // uncoupled, two destinations take about twice the single association's share (2.40)
    assert!(plain > 2.0, "uncoupled {plain}");
    // coupled, clearly less (LIA 1.63, OLIA 1.34)
    assert!(lia < plain * 0.8, "lia {lia} vs uncoupled {plain}");
    assert!(olia < plain * 0.8, "olia {olia} vs uncoupled {plain}");
}

#[test]
fn cmt_pf_stops_sending_to_a_failed_path_until_a_heartbeat_is_answered() {
    // path b fails from 10 s to 30 s
    let run = |pf: bool| {
        let text = two_paths("50s", "", "5Mbps", &format!("cmt = true\nsctp = {{ cmt_pf = {pf}, rcv_buf = \"400KB\" }}"))
            .replace("name = \"lb\"", "name = \"lb\"\ndown = [{ at = \"10s\", until = \"30s\" }]");
        let out = run_checked(&parse(&text));
        out.summary.flows[0].clone()
    };
    let (plain, pf) = (run(false), run(true));
    let s = pf.sctp.as_ref().unwrap();
    assert!(s.cmt_pf && s.heartbeats > 0, "{s:?}");
    // b is back in use after the failure in both
    assert_eq!(s.destination_states, vec!["active", "active"]);
    assert!(pf.subflows[1].timeouts < plain.subflows[1].timeouts, "{:?} vs {:?}", pf.subflows[1], plain.subflows[1]);
    assert!(pf.goodput_bps > plain.goodput_bps, "CMT-PF {} vs CMT {}", pf.goodput_bps, plain.goodput_bps);
}

#[test]
fn an_inactive_primary_is_probed_and_taken_back_when_it_recovers() {
    // 2 Mbit/s paths keep the run short; probes every RTO + 5 s
    let text = two_paths("320s", "down = [{ at = \"10s\", until = \"200s\" }]", "2Mbps", "sctp = { hb_interval = \"5s\" }")
        .replace("\"10Mbps\"", "\"2Mbps\"");
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    let s = f.sctp.as_ref().unwrap();
    assert!(s.failover_at_s.is_some());
    assert!(s.heartbeats > 0);
    assert_eq!(s.destination_states, vec!["active", "active"]);
    // new data went back to the primary: it carried far more than its first 10 s (2.5 MB)
    assert!(f.subflows[0].bytes_sent > 8_000_000, "{:?}", f.subflows[0]);
}

/// JSCTP in an association: random loss on an uncongested path is taken for wireless loss
/// (the window stays, goodput far above RFC 4960's), while the overflow of a drop-tail queue
/// by a lone flow in slow start is taken for congestion; the timestamp chunk is on the wire.
#[test]
fn jsctp_tells_random_loss_from_queue_overflow() {
    let run = |cc: &str, loss: &str, queue: &str| {
        let flow = format!("cc = \"{cc}\"\nsctp = {{ fast_rtx_threshold = 4 }}");
        let text = sctp_one_link("60s", loss, &flow).replace("queue = \"100pkt\"", &format!("queue = \"{queue}\""));
        let out = run_checked(&parse(&text));
        out.summary.flows[0].clone()
    };
    let (lossy, deep) = ("loss = \"1%\"", "1000pkt");
    let (std, j, abe) = (run("rfc4960", lossy, deep), run("jsctp", lossy, deep), run("jsctp_abe", lossy, deep));
    for f in [&j, &abe] {
        let s = f.sctp.as_ref().unwrap();
        assert!(s.wireless_losses[0] > 3 * s.congestion_losses[0], "{}: {s:?}", f.cc);
        assert!(s.jitter_samples[0] > 100 && s.jitter_zero_samples[0] > 0, "{s:?}");
        assert!(f.goodput_bps > 1.3 * std.goodput_bps, "{} {} vs {}", f.cc, f.goodput_bps, std.goodput_bps);
    }
    assert!(std.sctp.as_ref().unwrap().wireless_losses.is_empty());
    // no random loss, a small queue: the losses are the queue's, and JSCTP reduces for them
    let f = run("jsctp", "", "20pkt");
    let s = f.sctp.as_ref().unwrap();
    assert!(s.congestion_losses[0] > 0, "{s:?}");
    // 1456 user bytes in 1504 + 12 on the wire: the line rate less headers bounds goodput
    let line = 10e6 * 1456.0 / 1516.0;
    assert!(f.goodput_bps <= line * 1.001 && f.goodput_bps > 0.8 * line, "{} vs {line}", f.goodput_bps);
}

#[test]
fn rto_keys_take_tcps_names_with_rfc_4960s_as_aliases() {
    let flow = |sctp: &str| {
        format!("duration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"10Mbps\"\n[[path]]\nname = \"p\"\nlinks = [\"l\"]\n[[flow]]\npath = \"p\"\ntransport = \"sctp\"\nsctp = {{ {sctp} }}\n")
    };
    let read = |sctp: &str| mpsim_core::Scenario::from_toml(&flow(sctp), "t");
    let a = read("min_rto = \"200ms\", max_rto = \"9s\", initial_rto = \"2s\"").unwrap();
    let b = read("rto_min = \"200ms\", rto_max = \"9s\", rto_initial = \"2s\"").unwrap();
    assert_eq!(a.flows[0].sctp(), b.flows[0].sctp());
    assert_eq!(a.flows[0].sctp().unwrap().rto_min, mpsim_core::time::Dur::from_millis(200));
    let e = read("min_rto = \"1s\", rto_min = \"2s\"").unwrap_err();
    assert_eq!(e.key, "flow[0].sctp.rto_min");
    assert!(e.message.contains("not both"), "{}", e.message);
    let e = read("min_rto = \"10s\", max_rto = \"1s\"").unwrap_err();
    assert_eq!(e.key, "flow[0].sctp.min_rto");
}
