//! Explicit congestion notification end to end: TCP and Multipath TCP subflows with
//! `tcp.ecn` through queues that mark (RFC 3168): the marks replace the drops, the senders
//! reduce once per round trip, nothing is retransmitted, and throughput and delay stay those of
//! the dropping queue. Flows without ECN through a marking queue are dropped as before.

mod common;
use common::*;
use mpsim_core::metrics::{FlowSummary, LinkSummary};
use mpsim_core::Scenario;

/// Two flows of controller `cc` over a 10 Mbit/s, 20 ms bottleneck with a 1,000-packet buffer
/// managed by `aqm`; `global` goes before the link, `flow` into each flow.
fn two_flows(aqm: &str, global: &str, flow: &str, cc: &str) -> Scenario {
    parse(&format!(
        r#"
duration = "40s"
[metrics]
warmup = "5s"
{global}
[[link]]
name = "b"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
aqm = {aqm}
[[path]]
name = "p"
links = ["b"]
[[flow]]
name = "f1"
path = "p"
cc = "{cc}"
{flow}
[[flow]]
name = "f2"
path = "p"
cc = "{cc}"
start = "1s"
{flow}
"#
    ))
}

/// Two TCP flows over the bottleneck of [`two_flows`], with `tcp` as their `[tcp]` table.
fn bottleneck(aqm: &str, tcp: &str, cc: &str) -> Scenario {
    two_flows(aqm, &format!("[tcp]\n{tcp}"), "", cc)
}

fn goodput(flows: &[FlowSummary]) -> f64 {
    flows.iter().map(|f| f.goodput_bps).sum()
}

fn marks(l: &LinkSummary) -> (u64, u64) {
    let a = l.aqm.as_ref().expect("a managed link");
    (a.aqm_marks, a.aqm_drops)
}

/// Runs `scenario` (a bottleneck of two CUBIC flows, given the AQM and the flows' ECN key)
/// over CoDel with marking on, without and then with ECN at the senders, and checks what
/// every transport must show: without ECN the queue drops and no summary speaks of ECN; with
/// it the queue marks, nothing is dropped or retransmitted, every mark reaches a receiver (a
/// few may be in flight at the end), the senders reduce at most once per mark and once per
/// round trip (40 s of ~50 ms rounds), and goodput and delay stay those of the dropping queue.
/// Returns the two runs, without ECN first.
fn codel_marks_in_place_of_drops(label: &str, scenario: fn(&str, &str, &str) -> Scenario) -> (mpsim_core::Output, mpsim_core::Output) {
    let codel_ecn = "{ kind = \"codel\", ecn = true }";
    let dropped = run_checked(&scenario(codel_ecn, "", "cubic"));
    let marked = run_checked(&scenario(codel_ecn, "ecn = true", "cubic"));
    let (m0, d0) = marks(&dropped.summary.links[0]);
    let (m1, d1) = marks(&marked.summary.links[0]);
    let (g0, g1) = (goodput(&dropped.summary.flows), goodput(&marked.summary.flows));
    let delay = |o: &mpsim_core::Output| o.summary.links[0].aqm.as_ref().unwrap().queue_delay_mean_ms;
    let retx = |o: &mpsim_core::Output| o.summary.flows.iter().map(|f| f.retransmits).sum::<u64>();
    let ce: u64 = marked.summary.flows.iter().map(|f| f.ecn_ce_received.unwrap()).sum();
    let red: u64 = marked.summary.flows.iter().map(|f| f.ecn_reductions.unwrap()).sum();
    eprintln!(
        "{label}, ECN off: {d0} drops, {m0} marks, {} retransmissions, {:.3} Mbit/s, queue delay {:.1} ms; ECN on: {d1} drops, {m1} marks, {ce} CE received, {red} reductions, {} retransmissions, {:.3} Mbit/s, queue delay {:.1} ms",
        retx(&dropped),
        g0 / 1e6,
        delay(&dropped),
        retx(&marked),
        g1 / 1e6,
        delay(&marked)
    );
    assert!(d0 > 0 && m0 == 0);
    assert!(dropped.summary.flows.iter().all(|f| f.ecn_ce_received.is_none() && f.ecn_reductions.is_none()));
    assert!(m1 > 0 && d1 == 0, "{m1} marks, {d1} drops");
    assert_eq!(marked.summary.links[0].queue_drops, 0);
    assert_eq!(retx(&marked), 0);
    assert!(ce <= m1 && ce + 10 >= m1, "{ce} CE received of {m1} marks");
    assert!(red > 0 && red <= ce && red <= 2 * 800, "{red} reductions");
    assert!((g1 - g0).abs() < 0.03 * g0, "goodput {g1} with ECN against {g0} without");
    assert!(delay(&marked) < 3.0 * 5.0, "queueing delay {} ms", delay(&marked));
    (dropped, marked)
}

#[test]
fn codel_with_ecn_marks_instead_of_dropping_at_the_same_goodput_and_delay() {
    codel_marks_in_place_of_drops("TCP", bottleneck);
}

#[test]
fn every_marking_discipline_carries_ecn_flows_without_loss() {
    for aqm in ["\"fq_codel\"", "{ kind = \"codel\", ecn = true }", "{ kind = \"pie\", ecn = true }", "{ kind = \"red\", ecn = true }"] {
        for cc in ["reno", "cubic", "bbr"] {
            let out = run_checked(&bottleneck(aqm, "ecn = true", cc));
            let l = &out.summary.links[0];
            let (m, d) = marks(l);
            let retx: u64 = out.summary.flows.iter().map(|f| f.retransmits).sum();
            let g = goodput(&out.summary.flows);
            eprintln!("{aqm} {cc}: {m} marks, {d} AQM drops, {} overflows, {retx} retransmissions, {:.2} Mbit/s", l.queue_drops, g / 1e6);
            assert!(m > 0, "{aqm} {cc}: no mark");
            assert!(g > 9.0e6, "{aqm} {cc}: goodput {g}");
            if aqm.contains("codel") {
                // CoDel marks wherever it would drop: no loss at all
                assert_eq!((d, l.queue_drops, retx), (0, 0, 0), "{aqm} {cc}");
            }
        }
    }
}

#[test]
fn fq_codel_marks_by_default_and_a_flow_without_ecn_is_still_dropped() {
    let out = run_checked(&bottleneck("\"fq_codel\"", "", "cubic"));
    let (m, d) = marks(&out.summary.links[0]);
    assert!(m == 0 && d > 0, "{m} marks, {d} drops");
    let off = run_checked(&bottleneck("{ kind = \"fq_codel\", ecn = false }", "ecn = true", "cubic"));
    let (m, d) = marks(&off.summary.links[0]);
    assert!(m == 0 && d > 0, "fq_codel with ecn = false: {m} marks, {d} drops");
    assert!(off.summary.flows.iter().all(|f| f.ecn_ce_received == Some(0) && f.ecn_reductions == Some(0)));
}

/// Two paths of 10 and 5 Mbit/s (20 and 40 ms one way) behind FQ-CoDel, 30 s with 5 s of
/// warm-up, and one LIA flow over both: `global` goes before the links, `flow` into the flow.
fn two_fq_codel_paths(global: &str, flow: &str) -> String {
    format!(
        r#"
duration = "30s"
[metrics]
warmup = "5s"
{global}
[[link]]
name = "a"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
aqm = "fq_codel"
[[link]]
name = "b"
rate = "5Mbps"
delay = "40ms"
queue = "1000pkt"
aqm = "fq_codel"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
paths = ["pa", "pb"]
cc = "lia"
{flow}
"#
    )
}

#[test]
fn a_two_path_mptcp_flow_with_lia_reduces_on_marks_on_each_subflow() {
    let text = |tcp: &str| two_fq_codel_paths(&format!("[tcp]\n{tcp}"), "name = \"mp\"\nscheduler = \"lowest_rtt\"");
    let dropped = run_checked(&parse(&text("")));
    let marked = run_checked(&parse(&text("ecn = true")));
    let f = &marked.summary.flows[0];
    eprintln!(
        "MPTCP LIA: {:.2} Mbit/s with ECN ({} retransmissions, {:?} CE, {:?} reductions), {:.2} without ({} retransmissions)",
        f.goodput_bps / 1e6,
        f.retransmits,
        f.ecn_ce_received,
        f.ecn_reductions,
        dropped.summary.flows[0].goodput_bps / 1e6,
        dropped.summary.flows[0].retransmits
    );
    for (l, s) in marked.summary.links.iter().step_by(2).zip(&f.subflows) {
        let (m, d) = marks(l);
        assert!(m > 0 && d == 0, "{}: {m} marks, {d} drops", l.link);
        assert!(s.ecn_ce_received.unwrap() > 0 && s.ecn_reductions.unwrap() > 0, "{}: {:?}", s.path, s);
    }
    assert_eq!(f.retransmits, 0);
    assert_eq!(f.ecn_reductions, Some(f.subflows.iter().map(|s| s.ecn_reductions.unwrap()).sum()));
    let g0 = dropped.summary.flows[0].goodput_bps;
    assert!((f.goodput_bps - g0).abs() < 0.05 * g0, "{} against {g0}", f.goodput_bps);
}

#[test]
fn an_sctp_association_with_ecn_reduces_on_ecne_without_loss() {
    let text = |ecn: bool, cmt: bool| {
        let (paths, cmt_line) = if cmt { ("paths = [\"pa\", \"pb\"]", "cmt = true") } else { ("path = \"pa\"", "") };
        format!(
            r#"
duration = "30s"
[metrics]
warmup = "5s"
[[link]]
name = "a"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
aqm = {{ kind = "codel", ecn = true }}
[[link]]
name = "b"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
aqm = {{ kind = "codel", ecn = true }}
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
name = "s"
transport = "sctp"
{paths}
{cmt_line}
sctp = {{ ecn = {ecn} }}
"#
        )
    };
    for cmt in [false, true] {
        let dropped = run_checked(&parse(&text(false, cmt)));
        let marked = run_checked(&parse(&text(true, cmt)));
        let f = &marked.summary.flows[0];
        let used = if cmt { 2 } else { 1 };
        let m: u64 = marked.summary.links.iter().step_by(2).take(used).map(|l| marks(l).0).sum();
        let d: u64 = marked.summary.links.iter().step_by(2).take(used).map(|l| marks(l).1).sum();
        let g0 = dropped.summary.flows[0].goodput_bps;
        eprintln!(
            "SCTP (cmt {cmt}): {m} marks, {d} drops, {:?} CE, {:?} reductions, {} retransmissions, {:.2} Mbit/s (without ECN {:.2}, {} retransmissions)",
            f.ecn_ce_received,
            f.ecn_reductions,
            f.retransmits,
            f.goodput_bps / 1e6,
            g0 / 1e6,
            dropped.summary.flows[0].retransmits
        );
        assert!(dropped.summary.flows[0].ecn_reductions.is_none());
        assert!(m > 0 && d == 0, "{m} marks, {d} drops");
        assert_eq!(f.retransmits, 0);
        assert_eq!(f.ecn_ce_received, Some(m));
        let r = f.ecn_reductions.unwrap();
        assert!(r > 0 && r <= m, "{r} reductions for {m} marks");
        assert!(f.goodput_bps > 0.95 * g0, "{} against {g0}", f.goodput_bps);
    }
}

/// The bottleneck of [`two_flows`] carrying two QUIC flows, with `quic` as their `quic`
/// table.
fn quic_bottleneck(aqm: &str, quic: &str, cc: &str) -> Scenario {
    two_flows(aqm, "", &format!("transport = \"quic\"\nquic = {{ {quic} }}"), cc)
}

#[test]
fn quic_with_ecn_over_codel_marks_instead_of_dropping_at_the_same_goodput() {
    let (dropped, marked) = codel_marks_in_place_of_drops("QUIC", quic_bottleneck);
    assert!(dropped.summary.flows.iter().map(|f| f.retransmits).sum::<u64>() > 0);
    for f in &marked.summary.flows {
        assert_eq!(f.quic.as_ref().unwrap().ecn_state, Some(vec!["capable"]));
        assert_eq!(f.subflows[0].ecn_ce_received, f.ecn_ce_received);
    }
}

#[test]
fn a_two_path_quic_flow_with_lia_reduces_on_marks_on_each_path() {
    let text = |ecn: &str| two_fq_codel_paths("", &format!("name = \"m\"\ntransport = \"quic\"\nquic = {{ ecn = {ecn} }}"));
    let on = run_checked(&parse(&text("true")));
    let off = run_checked(&parse(&text("false")));
    let f = &on.summary.flows[0];
    assert_eq!(f.retransmits, 0);
    assert!(on.summary.links.iter().all(|l| l.queue_drops == 0 && l.aqm.as_ref().is_none_or(|a| a.aqm_drops == 0)));
    for s in &f.subflows {
        assert!(s.ecn_reductions.unwrap() > 0, "{}: no reduction", s.path);
    }
    let (g1, g0) = (f.goodput_bps, off.summary.flows[0].goodput_bps);
    assert!(off.summary.flows[0].retransmits > 0);
    assert!((g1 - g0).abs() < 0.05 * g0, "goodput {g1} with ECN against {g0} without");
}
