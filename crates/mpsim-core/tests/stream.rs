//! Streamed tables: the chunks a run hands over while it goes on add up, row for row, to the
//! tables it returns when it does not stream, and each chunk stays near the asked size.

use mpsim_core::metrics::{Column, StreamedTable, Table};
use mpsim_core::{Scenario, Simulation};
use std::sync::{Arc, Mutex};

/// Two multipath flows and a plain TCP flow over two lossy links, traced, sampled every 10 ms.
const SCENARIO: &str = r#"
duration = "3s"
seed = 5
[metrics]
trace = true
interval = "10ms"
[[link]]
name = "a"
rate = "20Mbps"
delay = "10ms"
loss = "0.5%"
[[link]]
name = "b"
rate = "10Mbps"
delay = "30ms"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
name = "m1"
paths = ["pa", "pb"]
[[flow]]
name = "m2"
paths = ["pa", "pb"]
scheduler = "round_robin"
[[flow]]
name = "t"
path = "pb"
"#;

type Chunks = Arc<Mutex<Vec<(StreamedTable, Table)>>>;

fn streamed(s: &Scenario, chunk_rows: usize) -> (mpsim_core::Output, Chunks) {
    let chunks: Chunks = Arc::default();
    let c = chunks.clone();
    let out = Simulation::new(s).stream(Box::new(move |which, t| c.lock().unwrap().push((which, t))), chunk_rows).run();
    (out, chunks)
}

/// The chunks of one table, concatenated.
fn concat(chunks: &[(StreamedTable, Table)], which: StreamedTable) -> Table {
    let mut all: Option<Table> = None;
    for (_, t) in chunks.iter().filter(|(w, _)| *w == which) {
        match &mut all {
            None => all = Some(t.clone()),
            Some(a) => {
                for ((name, col), (name2, more)) in a.columns.iter_mut().zip(&t.columns) {
                    assert_eq!(name, name2);
                    match (col, more) {
                        (Column::F64(a), Column::F64(b)) => a.extend_from_slice(b),
                        (Column::U64(a), Column::U64(b)) => a.extend_from_slice(b),
                        (Column::Str(a), Column::Str(b)) => a.extend_from_slice(b),
                        _ => panic!("column {name} changed type"),
                    }
                }
            }
        }
    }
    all.unwrap_or_else(|| panic!("no chunk of {}", which.name()))
}

/// Compares two tables, NaN equal to NaN.
fn same(a: &Table, b: &Table) -> bool {
    a.columns.len() == b.columns.len()
        && a.columns.iter().zip(&b.columns).all(|((n1, c1), (n2, c2))| {
            n1 == n2
                && match (c1, c2) {
                    (Column::F64(x), Column::F64(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()),
                    _ => c1 == c2,
                }
        })
}

#[test]
fn chunks_add_up_to_the_tables_and_stay_bounded() {
    let s = Scenario::from_toml(SCENARIO, "t").unwrap();
    let whole = Simulation::new(&s).run();
    assert!(!whole.streamed);
    let chunk = 1000;
    let (out, chunks) = streamed(&s, chunk);
    let chunks = chunks.lock().unwrap();
    assert!(out.streamed);
    assert_eq!(out.summary.events, whole.summary.events);
    assert_eq!(out.flow_series.rows() + out.subflow_series.rows() + out.link_series.rows(), 0);
    assert_eq!(out.trace.as_ref().map(Table::rows), Some(0));
    let full = [
        (StreamedTable::FlowSeries, &whole.flow_series),
        (StreamedTable::SubflowSeries, &whole.subflow_series),
        (StreamedTable::LinkSeries, &whole.link_series),
        (StreamedTable::Trace, whole.trace.as_ref().unwrap()),
    ];
    for (which, table) in full {
        let joined = concat(&chunks, which);
        assert!(table.rows() > 0);
        assert!(same(&joined, table), "{} differs when streamed", which.name());
        let n = chunks.iter().filter(|(w, _)| *w == which).count();
        assert!(n >= table.rows() / (chunk + 5), "{}: {n} chunks for {} rows", which.name(), table.rows());
    }
    // every chunk but each table's last holds at least a chunk's worth, and at most one sample
    // more (5 rows: one per flow, or per subflow)
    let trace_rows = whole.trace.as_ref().unwrap().rows();
    assert!(trace_rows > 10 * chunk, "{trace_rows}");
    for (which, t) in chunks.iter() {
        assert!(t.rows() < chunk + 5, "{}: chunk of {} rows", which.name(), t.rows());
    }
}

#[test]
fn every_table_gets_a_chunk_even_when_empty() {
    let mut s = Scenario::from_toml(SCENARIO, "t").unwrap();
    s.metrics.interval = None;
    s.metrics.trace = false;
    let (out, chunks) = streamed(&s, 1000);
    let chunks = chunks.lock().unwrap();
    let names: Vec<&str> = chunks.iter().map(|(w, _)| w.name()).collect();
    // no trace asked: none streams; the series stream empty, with their columns
    assert_eq!(names, ["flow_series", "subflow_series", "link_series"]);
    assert!(chunks.iter().all(|(_, t)| t.rows() == 0 && !t.columns.is_empty()));
    assert!(out.trace.is_none());
}
