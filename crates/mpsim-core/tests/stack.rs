//! The stack options that make a run behave like a given Linux configuration: TCP without
//! SACK (NewReno recovery), Linux's delayed ACKs, and Multipath TCP subflows that join late.
//! Each test checks what the option promises, on the sender alone or on whole runs.

mod common;
use common::*;
use mpsim_core::cc::Controller;
use mpsim_core::net::{AckHeader, SackBlock};
use mpsim_core::transport::tcp::{CaState, SenderConfig, TcpSender, TxSegment};
use mpsim_core::{Dur, Scenario, SimTime, Simulation};

const MSS: u64 = 1000;

fn newreno(prr: bool) -> TcpSender {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, sack: false, prr, ..SenderConfig::default() };
    TcpSender::new(&cfg, Controller::by_name("reno").unwrap())
}

fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
    std::iter::from_fn(|| s.next_segment(now)).collect()
}

fn ms(x: u64) -> SimTime {
    SimTime(Dur::from_millis(x).0)
}

#[test]
fn without_sack_partial_acks_retransmit_each_hole_in_one_reduction() {
    for prr in [false, true] {
        let mut s = newreno(prr);
        s.write(40 * MSS);
        assert_eq!(drain(&mut s, SimTime::ZERO).len(), 10);
        // segments 0 and 4 are lost; 1-3 and 5-9 arrive: eight duplicate ACKs for 0. The
        // SACK blocks an ACK might carry are ignored without SACK.
        let mut retx = Vec::new();
        for k in 0..8 {
            let mut h = AckHeader::new(0, 1 << 30);
            h.push_sack(SackBlock { start: MSS, end: (k + 2) * MSS });
            s.on_ack(ms(50), &h);
            assert!(s.check_invariants().is_ok(), "{:?}", s.check_invariants());
            retx.extend(drain(&mut s, ms(50)).into_iter().filter(|x| x.retx).map(|x| x.seq));
        }
        assert_eq!(s.state(), CaState::Recovery, "prr {prr}");
        assert_eq!(retx, [0], "prr {prr}: the head only, after the third duplicate ACK");
        let ssthresh = s.ssthresh();
        // the retransmission of 0 arrives: a partial ACK up to the next hole, which goes out
        // at once without waiting for more duplicate ACKs
        s.on_ack(ms(100), &AckHeader::new(4 * MSS, 1 << 30));
        assert!(s.check_invariants().is_ok(), "{:?}", s.check_invariants());
        let out = drain(&mut s, ms(100));
        assert_eq!(out.iter().filter(|x| x.retx).map(|x| x.seq).collect::<Vec<_>>(), [4 * MSS], "prr {prr}");
        assert_eq!(s.state(), CaState::Recovery);
        // the second retransmission completes the window: recovery ends, one reduction only
        s.on_ack(ms(150), &AckHeader::new(s.snd_nxt().min(10 * MSS), 1 << 30));
        assert_eq!(s.stats.fast_recoveries, 1);
        assert_eq!(s.ssthresh(), ssthresh);
        assert_eq!(s.stats.timeouts, 0);
        assert_eq!(s.stats.loss_probes, 0);
    }
}

#[test]
fn without_sack_duplicate_acks_let_new_data_out_in_recovery() {
    // PRR paces recovery by what duplicate ACKs report delivered: without their credit the
    // window would stay shut until the retransmission returned
    let mut s = newreno(true);
    s.write(40 * MSS);
    drain(&mut s, SimTime::ZERO);
    let mut new_data = 0;
    for _ in 0..9 {
        s.on_ack(ms(50), &AckHeader::new(0, 1 << 30));
        new_data += drain(&mut s, ms(50)).iter().filter(|x| !x.retx).count();
    }
    assert_eq!(s.state(), CaState::Recovery);
    // cwnd 10 → ssthresh 5; of the nine segments delivered, PRR sends about half back
    assert!((3..=5).contains(&new_data), "{new_data}");
}

#[test]
fn sack_off_is_read_and_turns_the_sack_based_defences_off() {
    let text = one_link("1s", "", "tcp = { sack = false }");
    let s = parse(&text);
    let t = &s.flows[0].tcp;
    assert!(!t.sack && !t.rack && !t.tlp && !t.dsack);
    assert!(t.frto, "F-RTO works from cumulative ACKs and stays on");
    let bad = one_link("1s", "", "tcp = { sack = false, rack = true }");
    let e = Scenario::from_toml(&bad, "x.toml").unwrap_err();
    assert_eq!(e.key, "flow[0].tcp.rack");
    let bad = one_link("1s", "", "tcp = { delayed_ack = \"sometimes\" }");
    let e = Scenario::from_toml(&bad, "x.toml").unwrap_err();
    assert_eq!(e.key, "flow[0].tcp.delayed_ack");
}

/// TCP flags and options of the ACKs (packets from the receiver) of a capture.
fn ack_options(pcap: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let ip = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        let ihl = (ip[0] & 0xf) as usize * 4;
        let tcp = &ip[ihl..];
        // the receiver's port is 5001
        if ip[9] == 6 && u16::from_be_bytes([tcp[0], tcp[1]]) == 5001 {
            let doff = (tcp[12] >> 4) as usize * 4;
            out.push(tcp[20..doff].to_vec());
        }
    }
    out
}

fn has_option(opts: &[u8], kind: u8) -> bool {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return false,
            1 => i += 1,
            k => {
                if k == kind {
                    return true;
                }
                i += (*opts.get(i + 1).unwrap_or(&2) as usize).max(2);
            }
        }
    }
    false
}

#[test]
fn without_sack_no_sack_option_is_on_the_wire_and_losses_are_still_repaired() {
    let run = |sack: bool| {
        let text = one_link("20s", "loss = \"2%\"", &format!("app = {{ kind = \"bulk\", bytes = \"1MB\" }}\ntcp = {{ sack = {sack} }}"))
            .replace("[metrics]\n", "[metrics]\npcap = true\n");
        let out = run_checked(&parse(&text));
        let f = out.summary.flows[0].clone();
        (f, ack_options(&out.pcap[0].bytes))
    };
    let (with, acks_with) = run(true);
    let (without, acks_without) = run(false);
    for f in [&with, &without] {
        assert!(f.complete && f.retransmits > 0, "{f:?}");
    }
    // SACK blocks (kind 5) and SACK-permitted (kind 4) with SACK; neither without
    assert!(acks_with.iter().any(|o| has_option(o, 5)));
    assert!(acks_with.iter().any(|o| has_option(o, 4)));
    assert!(!acks_without.is_empty());
    assert!(acks_without.iter().all(|o| !has_option(o, 5) && !has_option(o, 4)));
    assert_eq!((without.dsacks, without.loss_probes), (0, 0));
    assert!(without.fast_recoveries > 0);
}

#[test]
fn linux_delayed_acks_ack_quickly_at_first_then_every_second_segment() {
    // 100 segments over a clean path, without a loss; the count of ACKs tells the mode apart
    let acks = |mode: &str, rcv_buf: &str| {
        let text = one_link(
            "10s",
            "",
            &format!("app = {{ kind = \"bulk\", bytes = \"146000B\" }}\ntcp = {{ delayed_ack = {mode}, rcv_buf = \"{rcv_buf}\" }}"),
        );
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        assert!(f.complete);
        out.summary.links.iter().find(|l| l.direction == "reverse").unwrap().packets_offered
    };
    let (off, every2) = (acks("false", "4MB"), acks("true", "4MB"));
    assert_eq!(off, 100);
    // each flight of the slow start is even, so no ACK waits for the timer
    assert_eq!(every2, 50);
    // Linux's receiver acknowledges every segment while its offered window grows: from a
    // 4 MB buffer it grows for about 300 segments, so all 100 are acknowledged one by one
    assert_eq!(acks("\"linux\"", "4MB"), 100);
    // from a 100 KB buffer the growth ends after 8 segments; then the 16 quick ACKs of the
    // start, then one ACK for every second segment (a pushed segment alone now and then)
    let small = acks("\"linux\"", "100KB");
    eprintln!("linux, 100 KB: {small} ACKs");
    assert!((8 + 16 + 38..=8 + 16 + 42).contains(&small), "{small}");
}

fn two_paths_text(join: &str) -> String {
    format!(
        r#"
duration = "3s"
[metrics]
trace = true
[[link]]
name = "a"
rate = "10Mbps"
delay = "1ms"
queue = "45KB"
[[link]]
name = "b"
rate = "10Mbps"
delay = "100ms"
queue = "45KB"
[[path]]
name = "p1"
links = ["a"]
[[path]]
name = "p2"
links = ["b"]
[[flow]]
name = "mp"
paths = ["p1", "p2"]
scheduler = "lowest_rtt"
cc = "olia"
start = "100ms"
{join}
"#
    )
}

fn two_paths(join: &str) -> Scenario {
    parse(&two_paths_text(join))
}

/// Time of the first data segment sent on path `path` of the trace.
fn first_send(out: &mpsim_core::Output, path: &str) -> Option<f64> {
    use mpsim_core::metrics::Column;
    let tr = out.trace.as_ref().unwrap();
    let (Some(Column::F64(t)), Some(Column::Str(p)), Some(Column::Str(ev))) = (tr.column("time_s"), tr.column("path"), tr.column("event"))
    else {
        panic!("trace columns")
    };
    (0..t.len()).find(|&i| p[i] == path && (ev[i] == "send" || ev[i] == "retx")).map(|i| t[i])
}

#[test]
fn a_subflow_sends_nothing_before_it_joins() {
    let at_start = run_checked(&two_paths(""));
    assert!(first_send(&at_start, "p2").unwrap() < 0.1001);
    let delayed = run_checked(&two_paths("join_delay = \"1s\""));
    let t = first_send(&delayed, "p2").expect("path 2 joins and carries data");
    assert!((1.1..1.2).contains(&t), "first segment on path 2 at {t}");
    assert!(first_send(&delayed, "p1").unwrap() < 0.1001);
    // Linux's path manager: the join takes two round trips of path 2 (about 400 ms)
    let linux = run_checked(&two_paths("join_delay = \"linux\""));
    let t = first_send(&linux, "p2").unwrap();
    assert!((0.1 + 0.4..0.1 + 0.41).contains(&t), "{t}");
    // an explicit time per path
    let at = run_checked(&two_paths("join_at = [\"0s\", \"2s\"]"));
    let t = first_send(&at, "p2").unwrap();
    assert!((2.1..2.2).contains(&t), "{t}");
    // path 1 carried everything before the join: more of it than when both start together
    let sent = |o: &mpsim_core::Output, k: usize| o.summary.flows[0].subflows[k].bytes_sent;
    assert!(sent(&at, 0) > sent(&at_start, 0));
    assert!(sent(&at, 1) < sent(&at_start, 1));
}

#[test]
fn join_settings_are_checked() {
    let bad = |join: &str, key: &str| {
        let text = two_paths_text(join);
        let e = Scenario::from_toml(&text, "x.toml").unwrap_err();
        assert_eq!(e.key, key, "{join}: {}", e.message);
    };
    bad("join_at = [\"1s\", \"2s\"]", "flow[0].join_at[0]");
    bad("join_at = [\"0s\"]", "flow[0].join_at");
    bad("join_delay = \"soon\"", "flow[0].join_delay");
    bad("join_delay = \"1s\"\njoin_at = [\"0s\", \"1s\"]", "flow[0]");
    let single = one_link("1s", "", "join_delay = \"1s\"");
    assert_eq!(Scenario::from_toml(&single, "x.toml").unwrap_err().key, "flow[0].join_delay");
}

#[test]
fn an_unjoined_subflow_is_left_out_of_the_coupling() {
    // OLIA over path 1 alone before the join grows like Reno on it; after the join the
    // coupling takes effect. A subflow counted before it joins would hold path 1 back.
    let mut alone = two_paths("join_at = [\"0s\", \"2.9s\"]");
    alone.duration = Dur::from_millis(2800);
    let mut single = alone.clone();
    single.flows[0].paths = vec![0];
    match &mut single.flows[0].transport {
        mpsim_core::scenario::TransportSpec::Mptcp(m) => {
            m.join = mpsim_core::scenario::Join::AtStart;
            m.backup.truncate(1);
        }
        _ => unreachable!("a multipath flow"),
    }
    let a = Simulation::new(&alone).run();
    let b = Simulation::new(&single).run();
    let (x, y) = (&a.summary.flows[0], &b.summary.flows[0]);
    assert_eq!(x.bytes_delivered, y.bytes_delivered);
    // the window's path, not only the (link-limited) bytes, is the same
    let key = |s: &mpsim_core::metrics::SubflowSummary| (s.segments_sent, s.retransmits, s.fast_recoveries, s.cwnd_final_bytes);
    assert!(x.fast_recoveries > 3, "congestion avoidance must matter: {}", x.fast_recoveries);
    assert_eq!(key(&x.subflows[0]), key(&y.subflows[0]));
    assert_eq!(x.subflows[1].bytes_sent, 0);
}

use proptest::prelude::*;

/// A random Multipath TCP transfer over 1 to 3 lossy paths, with the stack options drawn too.
fn stack_case_text(paths: &[(u32, u32, u32, u32)], sched: &str, cc: &str, bytes: u32, sack: bool, delack: &str, join: u32) -> String {
    let mut t =
        format!("duration = \"600s\"\n[metrics]\ninterval = \"1s\"\n[tcp]\nrcv_buf = \"300KB\"\nsack = {sack}\ndelayed_ack = {delack}\n");
    for (i, &(rate, delay, queue, loss)) in paths.iter().enumerate() {
        t += &format!(
            "[[link]]\nname = \"l{i}\"\nrate = \"{rate}Mbps\"\ndelay = \"{delay}ms\"\nqueue = \"{queue}pkt\"\nloss = \"{}%\"\n[[path]]\nname = \"p{i}\"\nlinks = [\"l{i}\"]\n",
            loss as f64 / 10.0
        );
    }
    let names: Vec<String> = (0..paths.len()).map(|i| format!("\"p{i}\"")).collect();
    let join = match join % 3 {
        0 => String::new(),
        1 => "join_delay = \"linux\"\n".to_string(),
        _ => format!("join_at = [{}]\n", (0..paths.len()).map(|k| format!("\"{}ms\"", k as u32 * join)).collect::<Vec<_>>().join(", ")),
    };
    t += &format!(
        "[[flow]]\nname = \"mp\"\npaths = [{}]\nscheduler = \"{sched}\"\ncc = \"{cc}\"\n{join}app = {{ kind = \"bulk\", bytes = {bytes} }}\n",
        names.join(", ")
    );
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    #[test]
    fn random_multipath_transfers_with_the_stack_options_deliver_every_byte(
        paths in proptest::collection::vec((1u32..30, 1u32..100, 3u32..100, 0u32..30), 1..4),
        sched in 0..mpsim_core::sched::SCHEDULERS.len(),
        cc in 0..mpsim_core::cc::CONTROLLERS.len(),
        bytes in 10_000u32..400_000,
        sack in any::<bool>(),
        delack in prop_oneof![Just("false"), Just("true"), Just("\"linux\"")],
        join in 0u32..3000,
    ) {
        let text = stack_case_text(
            &paths,
            mpsim_core::sched::SCHEDULERS[sched].0,
            mpsim_core::cc::CONTROLLERS[cc].0,
            bytes,
            sack,
            delack,
            join,
        );
        let out = run_checked(&parse(&text));
        let f = &out.summary.flows[0];
        prop_assert!(f.complete, "delivered {} of {}\n{}", f.bytes_delivered, bytes, text);
        if !sack {
            prop_assert_eq!((f.dsacks, f.loss_probes), (0, 0));
        }
    }
}
