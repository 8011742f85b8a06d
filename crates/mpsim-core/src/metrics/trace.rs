//! The per-packet trace: one row per send, retransmission, arrival, ACK, drop or timeout.

use super::{Column, Table};
use crate::time::SimTime;

/// What a trace row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Send,
    Retx,
    Recv,
    Ack,
    QueueDrop,
    LossDrop,
    DownDrop,
    Timeout,
    /// MPTCP-rec's path list (`sub` is the path concerned).
    Rb2locPredicted,
    PathRemoved,
    PathRestored,
}

impl TraceKind {
    /// The name in the trace's `event` column.
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::Send => "send",
            TraceKind::Retx => "retx",
            TraceKind::Recv => "recv",
            TraceKind::Ack => "ack",
            TraceKind::QueueDrop => "drop_queue",
            TraceKind::LossDrop => "drop_loss",
            TraceKind::DownDrop => "drop_down",
            TraceKind::Timeout => "timeout",
            TraceKind::Rb2locPredicted => "rb2loc_predicted",
            TraceKind::PathRemoved => "path_removed",
            TraceKind::PathRestored => "path_restored",
        }
    }
}

/// One row of the trace, with indices where the table will have names.
#[derive(Clone, Copy, Debug)]
pub struct TraceRow {
    pub t: SimTime,
    pub flow: u32,
    pub sub: u8,
    pub kind: TraceKind,
    pub seq: u64,
    pub dsn: u64,
    pub len: u32,
    /// Index of the directed link (2i forward, 2i+1 reverse), or `u32::MAX` for none.
    pub link: u32,
}

/// Builds the trace table. `paths[flow][sub]` names the path of a subflow; `links[l]` the
/// directed link `l`.
pub fn trace_table(rows: &[TraceRow], flows: &[String], paths: &[Vec<String>], links: &[String]) -> Table {
    Table {
        columns: vec![
            ("time_s".into(), Column::F64(rows.iter().map(|r| r.t.as_secs_f64()).collect())),
            ("flow".into(), Column::Str(rows.iter().map(|r| flows[r.flow as usize].clone()).collect())),
            // a row about no particular subflow (an RB2LOC prediction with no path to remove)
            // has an empty path
            (
                "path".into(),
                Column::Str(rows.iter().map(|r| paths[r.flow as usize].get(r.sub as usize).cloned().unwrap_or_default()).collect()),
            ),
            ("event".into(), Column::Str(rows.iter().map(|r| r.kind.name().to_string()).collect())),
            ("seq".into(), Column::U64(rows.iter().map(|r| r.seq).collect())),
            ("dsn".into(), Column::U64(rows.iter().map(|r| r.dsn).collect())),
            ("len".into(), Column::U64(rows.iter().map(|r| r.len as u64).collect())),
            (
                "link".into(),
                Column::Str(rows.iter().map(|r| if r.link == u32::MAX { String::new() } else { links[r.link as usize].clone() }).collect()),
            ),
        ],
    }
}
