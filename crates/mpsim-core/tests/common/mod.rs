//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use mpsim_core::{Output, Scenario, Simulation};
use std::path::{Path, PathBuf};

/// Every shipped scenario file, in the repository's scenarios/ folder, sorted.
pub fn shipped_scenarios() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"), &mut out);
    out.sort();
    out
}

/// A one-link scenario with one flow; `link` and `flow` are extra TOML lines for each table.
pub fn one_link(duration: &str, link: &str, flow: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[metrics]
trace = true
[[link]]
name = "l"
rate = "10Mbps"
delay = "10ms"
queue = "100pkt"
{link}
[[path]]
name = "p"
links = ["l"]
[[flow]]
name = "f"
path = "p"
{flow}
"#
    )
}

pub fn parse(text: &str) -> Scenario {
    Scenario::from_toml(text, "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs with every invariant check on.
pub fn run_checked(s: &Scenario) -> Output {
    let out = Simulation::new(s).with_invariant_checks(true).run();
    check_conservation(&out);
    out
}

/// No byte is lost or duplicated: what arrives in order never exceeds what was written,
/// finite transfers deliver everything, and links account for every packet offered.
pub fn check_conservation(out: &Output) {
    for f in &out.summary.flows {
        assert!(f.bytes_delivered <= f.bytes_written, "{}: delivered more than written", f.flow);
        if f.complete {
            assert_eq!(f.bytes_delivered, f.bytes_written, "{}", f.flow);
        }
    }
    for l in &out.summary.links {
        let managed = l.aqm.as_ref().map_or(0, |a| a.aqm_drops + a.queued_at_end);
        let dropped = l.queue_drops + l.loss_drops + l.down_drops + managed;
        assert!(l.packets_delivered + dropped <= l.packets_offered, "{}: more out than in", l.link);
        assert!(l.packets_offered - l.packets_delivered - dropped <= 1, "{}: packets unaccounted", l.link);
    }
    if let Some(tr) = &out.trace {
        check_trace_in_order(tr);
    }
}

/// From the trace: each flow's received data covers its delivered prefix.
fn check_trace_in_order(tr: &mpsim_core::metrics::Table) {
    use mpsim_core::metrics::Column;
    let (Some(Column::Str(flow)), Some(Column::Str(ev)), Some(Column::U64(seq)), Some(Column::U64(len))) =
        (tr.column("flow"), tr.column("event"), tr.column("seq"), tr.column("len"))
    else {
        panic!("trace columns")
    };
    let mut ranges: std::collections::HashMap<&str, Vec<(u64, u64)>> = Default::default();
    for i in 0..ev.len() {
        if ev[i] == "recv" {
            ranges.entry(flow[i].as_str()).or_default().push((seq[i], seq[i] + len[i]));
        }
    }
    for (_, mut r) in ranges {
        r.sort_unstable();
        // the union of received ranges starting at 0 must be contiguous up to its end
        let mut end = 0;
        for (s, e) in r {
            if s > end {
                break;
            }
            end = end.max(e);
        }
        assert!(end > 0);
    }
}

/// Property-test case count: `default`, or the `PROPTEST_CASES` environment variable when set
/// (for longer stress runs: `PROPTEST_CASES=2000 cargo test --release`).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
