//! Trace-driven links (Mahimahi delivery traces) carrying TCP: a constant-rate trace behaves
//! like the same rate, and a real cellular trace (read from `../shared/traces` beside the
//! checkout when it is there) gives a goodput between half its capacity and all of it.

mod common;
use common::*;
use mpsim_core::net::LinkTrace;
use mpsim_core::Scenario;
use std::path::{Path, PathBuf};

fn scenario(duration: &str, link: &str, dir: &Path) -> Scenario {
    let text = format!(
        r#"
duration = "{duration}"
[metrics]
warmup = "5s"
[[link]]
name = "cell"
delay = "20ms"
queue = "60pkt"
{link}
[[path]]
name = "p"
links = ["cell"]
[[flow]]
name = "f"
path = "p"
cc = "cubic"
"#
    );
    Scenario::from_toml_in(&text, "test", Some(dir)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn tcp_over_a_constant_trace_gets_what_the_same_fixed_rate_gives() {
    let dir = std::env::temp_dir().join(format!("mpsim-trace-tcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 12 Mbit/s: one 1500-byte opportunity every millisecond, for one second, repeated
    std::fs::write(dir.join("12mbps"), (1..=1000).map(|m| format!("{m}\n")).collect::<String>()).unwrap();
    let traced = run_checked(&scenario("30s", "trace = \"12mbps\"\nrate = \"12Mbps\"", &dir));
    let fixed = run_checked(&scenario("30s", "rate = \"12Mbps\"", &dir));
    let _ = std::fs::remove_dir_all(&dir);
    let (t, f) = (traced.summary.flows[0].goodput_bps, fixed.summary.flows[0].goodput_bps);
    eprintln!("12 Mbit/s: traced {t:.0} bit/s, fixed {f:.0} bit/s");
    assert!((t / f - 1.0).abs() < 0.03, "traced {t:.0} bit/s against fixed {f:.0} bit/s");
    assert!(t < 12e6 && t > 0.9 * 12e6 * 1448.0 / 1500.0, "{t}");
}

/// The shared traces beside the checkout, if they are there.
fn shared_traces() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    d.join("Verizon-LTE-short.down").is_file().then_some(d)
}

#[test]
fn tcp_over_a_real_cellular_trace_gets_between_half_and_all_of_its_capacity() {
    let Some(dir) = shared_traces() else {
        eprintln!("skipped: the cellular traces are not in ../shared/traces beside the checkout");
        return;
    };
    let down = LinkTrace::read(&dir.join("Verizon-LTE-short.down"), "down").unwrap();
    // one whole period of the trace, so that its mean is the capacity the run was offered
    let period_s = down.period().as_secs_f64();
    let s = scenario(&format!("{period_s}s"), "trace = \"Verizon-LTE-short.down\"\nreverse_trace = \"Verizon-LTE-short.up\"", &dir);
    let out = run_checked(&s);
    let goodput = out.summary.flows[0].goodput_bps;
    let mean = down.mean_rate_bps();
    eprintln!("Verizon-LTE-short: goodput {goodput:.0} bit/s, trace mean {mean:.0} bit/s");
    assert!(goodput < mean && goodput > 0.5 * mean, "goodput {goodput:.0} bit/s, trace mean {mean:.0} bit/s");
}
