//! Tables that leave a run in chunks while it goes on, instead of all at its end, so that the
//! memory they take stays bounded whatever the run's length (see `Simulation::stream`).
//!
//! The chunks of one table, concatenated in the order they arrive, are exactly the table the
//! run would have returned otherwise, row for row.

use super::Table;

/// The tables that can stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamedTable {
    FlowSeries,
    SubflowSeries,
    LinkSeries,
    Trace,
}

impl StreamedTable {
    /// The table's name, as in the output (`flow_series`, ..., `trace`).
    pub fn name(self) -> &'static str {
        match self {
            StreamedTable::FlowSeries => "flow_series",
            StreamedTable::SubflowSeries => "subflow_series",
            StreamedTable::LinkSeries => "link_series",
            StreamedTable::Trace => "trace",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Rows of a chunk unless told otherwise: a chunk is handed over once a table holds at least
/// this many rows (a sample adds a row per flow at once, so a chunk may hold a few more).
pub const CHUNK_ROWS: usize = 65_536;

/// Receives each chunk of each streamed table, in order. Every streamed table gets at least
/// one chunk (possibly empty, with its columns) so that the receiver learns its columns.
pub type TableSink = Box<dyn FnMut(StreamedTable, Table) + Send>;
