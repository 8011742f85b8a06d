//! The estimate of a run's cost against what runs actually do: events processed and trace
//! rows recorded, for every shipped scenario (cut to a few simulated seconds). The estimate
//! is an upper bound that may be loose (a loss-limited flow sends far less than its path
//! carries) but must not fall much below the truth, or a run could outgrow its warning.

use mpsim_core::{Dur, Scenario, Simulation};

mod common;

#[test]
fn estimated_events_and_trace_rows_bound_the_real_ones_within_a_small_factor() {
    let files = common::shipped_scenarios();
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
        eprintln!(
            "{}: events {} est {} ({re:.2}x), trace rows {} est {} ({rt:.2}x)",
            f.display(),
            events,
            est.events,
            rows,
            est.trace_rows
        );
        assert!((0.7..=20.0).contains(&re), "{}: {events} events, estimated {}", f.display(), est.events);
        assert!((0.7..=20.0).contains(&rt), "{}: {rows} trace rows, estimated {}", f.display(), est.trace_rows);
    }
}
