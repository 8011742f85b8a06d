//! Core speed on a scenario: `cargo run --release --example speed -- FILE [REPEATS]`.
//! Prints delivered data packets per wall second (best of REPEATS runs) and events per second.
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: speed SCENARIO.toml [REPEATS]");
    let repeats: usize = args.next().map_or(3, |r| r.parse().expect("REPEATS is a number"));
    let text = std::fs::read_to_string(&path).expect("readable scenario");
    // files the scenario names (traces, schedules) are relative to its folder
    let dir = std::path::Path::new(&path).parent();
    let s = mpsim_core::Scenario::from_toml_in(&text, &path, dir).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeats {
        let t = Instant::now();
        let o = mpsim_core::Simulation::new(&s).run();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(o);
    }
    let o = out.unwrap();
    let pk = o.summary.packets_delivered as f64;
    let flows: Vec<String> =
        o.summary.flows.iter().map(|f| format!("{{\"flow\": \"{}\", \"goodput_bps\": {:.0}}}", f.flow, f.goodput_bps)).collect();
    println!(
        "{{\"scenario\": \"{}\", \"wall_s\": {:.4}, \"packets_delivered\": {}, \"packets_per_s\": {:.0}, \"events_per_s\": {:.0}, \"flows\": [{}]}}",
        path,
        best,
        o.summary.packets_delivered,
        pk / best,
        o.summary.events as f64 / best,
        flows.join(", ")
    );
}
