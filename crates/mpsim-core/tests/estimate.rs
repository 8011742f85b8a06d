//! The estimate of a run's cost against what runs actually do: events processed and trace
//! rows recorded, for every shipped scenario (cut to a few simulated seconds). The estimate
//! is an upper bound that may be loose (a loss-limited flow sends far less than its path
//! carries) but must not fall much below the truth, or a run could outgrow its warning.

use mpsim_core::{Dur, Scenario, Simulation};
use std::path::{Path, PathBuf};

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            scenario_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn estimated_events_and_trace_rows_bound_the_real_ones_within_a_small_factor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    scenario_files(&root, &mut files);
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut s = Scenario::from_toml(&text, &f.display().to_string()).unwrap();
        s.duration = s.duration.min(Dur::from_secs(3));
        s.metrics.warmup = Dur::ZERO;
        s.metrics.trace = true;
        let est = s.estimate();
        let out = Simulation::new(&s).run();
        let events = out.summary.events as f64;
        let rows = out.trace.as_ref().map_or(0, |t| t.rows()) as f64;
        let (re, rt) = (est.events as f64 / events, est.trace_rows as f64 / rows);
        eprintln!("{}: events {} est {} ({re:.2}x), trace rows {} est {} ({rt:.2}x)", f.display(), events, est.events, rows, est.trace_rows);
        assert!((0.7..=20.0).contains(&re), "{}: {events} events, estimated {}", f.display(), est.events);
        assert!((0.7..=20.0).contains(&rt), "{}: {rows} trace rows, estimated {}", f.display(), est.trace_rows);
    }
}
