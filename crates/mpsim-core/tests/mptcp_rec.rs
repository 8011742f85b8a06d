//! MPTCP-rec end to end: the receiver's rate estimate on one lossy path against mpsim's own
//! NewReno, the path list and its events, and determinism.

mod common;
use common::*;

/// One path of `rtt_ms` round-trip time and random loss `loss_pct`, fast enough for the
/// loss to set the rate; `flow` is the flow's extra lines.
fn one_path(rtt_ms: u32, loss_pct: f64, secs: u32, flow: &str) -> String {
    format!(
        r#"
duration = "{secs}s"
seed = 3
[metrics]
warmup = "10s"
interval = "1s"
[[link]]
name = "l"
rate = "100Mbps"
delay = "{}ms"
queue = "1000pkt"
loss = "{loss_pct}%"
[[path]]
name = "p"
links = ["l"]
[[flow]]
name = "f"
{flow}
"#,
        rtt_ms / 2
    )
}

fn goodput_and_dsr(text: &str) -> (f64, Option<f64>) {
    let out = run_checked(&parse(text));
    let f = &out.summary.flows[0];
    (f.goodput_bps, f.subflows[0].dsr_mean_bps)
}

/// Seed 000's three paths (3G, WiFi, WiMax) with a small receive buffer.
fn three_paths(sched: &str, rcv_buf: &str, secs: u32) -> String {
    let mut t =
        format!("duration = \"{secs}s\"\nseed = 5\n[metrics]\ninterval = \"500ms\"\ntrace = true\n[tcp]\nrcv_buf = \"{rcv_buf}\"\n");
    for (name, rate, delay) in [("g3", "384kbps", "35ms"), ("wifi", "11Mbps", "15ms"), ("wimax", "10Mbps", "35ms")] {
        t += &format!("[[link]]\nname = \"{name}\"\nrate = \"{rate}\"\ndelay = \"{delay}\"\nqueue = \"50pkt\"\nloss = \"1%\"\n");
        t += &format!("[[path]]\nname = \"{name}\"\nlinks = [\"{name}\"]\n");
    }
    t += &format!("[[flow]]\nname = \"mp\"\npaths = [\"g3\", \"wifi\", \"wimax\"]\nscheduler = \"{sched}\"\n");
    t
}

#[test]
fn one_lossy_path_gets_a_tcp_friendly_rate() {
    let (reno, _) = goodput_and_dsr(&one_path(20, 2.0, 60, "path = \"p\"\ncc = \"reno\""));
    let (rec, dsr) = goodput_and_dsr(&one_path(20, 2.0, 60, "paths = [\"p\"]\nscheduler = \"mptcp_rec\""));
    let dsr = dsr.expect("mptcp_rec reports its advertised rate");
    assert!((dsr / reno - 1.0).abs() < 0.2, "advertised {dsr} vs NewReno {reno}");
    assert!((rec / reno - 1.0).abs() < 0.2, "MPTCP-rec {rec} vs NewReno {reno}");
    // the sender follows the receiver
    assert!((rec / dsr - 1.0).abs() < 0.05, "MPTCP-rec {rec} vs advertised {dsr}");
}

#[test]
fn the_path_list_drops_the_3g_path_and_takes_it_back() {
    use mpsim_core::metrics::Column;
    let s = parse(&three_paths("mptcp_rec", "64KB", 30));
    let a = run_checked(&s);
    let f = &a.summary.flows[0];
    let tr = a.trace.as_ref().unwrap();
    let (Some(Column::Str(ev)), Some(Column::Str(path))) = (tr.column("event"), tr.column("path")) else { panic!("trace columns") };
    let removed: Vec<&str> = (0..ev.len()).filter(|&i| ev[i] == "path_removed").map(|i| path[i].as_str()).collect();
    let restored = (0..ev.len()).filter(|&i| ev[i] == "path_restored").count() as u64;
    // the 3G path leaves the list and comes back later
    let g3_out = (0..ev.len()).find(|&i| ev[i] == "path_removed" && path[i] == "g3").expect("3G removed");
    assert!((g3_out..ev.len()).any(|i| ev[i] == "path_restored" && path[i] == "g3"), "3G restored");
    assert_eq!(f.path_removals, Some(removed.len() as u64));
    assert_eq!(f.path_restorations, Some(restored));
    // each removal follows a prediction at the same instant
    assert!(f.rb2loc_predictions >= f.path_removals);
    // the series says which paths were listed
    let Some(Column::F64(listed)) = a.subflow_series.column("in_path_list") else { panic!("series column") };
    assert!(listed.contains(&0.0) && listed.iter().all(|&l| l == 0.0 || l == 1.0));
    // deterministic
    let b = mpsim_core::Simulation::new(&s).run();
    assert_eq!(format!("{:?}", a.summary.flows), format!("{:?}", b.summary.flows));
}

/// A user's receiver-driven scheme through the same interface MPTCP-rec uses: this receiver
/// asks for a fixed rate per path in the feedback of every fourth packet; MPTCP-rec's paced
/// scheduler follows whatever rate the receiver advertises.
struct FixedRate {
    rate_bps: f64,
    seen: u64,
    due: bool,
}

impl mpsim_core::feedback::ReceiverLogic for FixedRate {
    fn name(&self) -> &'static str {
        "fixed_rate"
    }
    fn on_data(&mut self, _now: mpsim_core::time::SimTime, _path: usize, _seg: &mpsim_core::net::DataHeader) -> bool {
        self.seen += 1;
        self.due = self.seen % 4 == 1;
        self.due
    }
    fn feedback(&mut self, now: mpsim_core::time::SimTime, path: usize) -> Option<mpsim_core::net::Feedback> {
        std::mem::take(&mut self.due).then_some(mpsim_core::net::Feedback { stamp: now, path: path as u8, rate_bps: self.rate_bps })
    }
}

#[test]
fn a_custom_receiver_logic_drives_the_paced_sender() {
    use mpsim_core::feedback::RxLogic;
    let s = parse(&one_path(20, 0.0, 20, "paths = [\"p\"]\nscheduler = \"mptcp_rec\""));
    let logic = RxLogic::Custom(Box::new(FixedRate { rate_bps: 3e6, seen: 0, due: false }));
    let out = mpsim_core::Simulation::new(&s).with_invariant_checks(true).with_receiver_logic("f", logic).unwrap().run();
    let f = &out.summary.flows[0];
    // rates are of payload, as the receiver measures them (MSS-sized packets per second)
    assert!((f.goodput_bps / 3e6 - 1.0).abs() < 0.03, "{}", f.goodput_bps);
    assert!(mpsim_core::Simulation::new(&s)
        .with_receiver_logic("nope", RxLogic::Custom(Box::new(FixedRate { rate_bps: 1.0, seen: 0, due: false })))
        .is_err());
}
