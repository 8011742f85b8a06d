//! A qlog trace of a QUIC connection, from the sender's vantage point: one JSON text per
//! record, each after an ASCII record separator (JSON-SEQ, RFC 7464), the first the file's
//! header (the sequential file schema of draft-ietf-quic-qlog-main-schema), then events named
//! as draft-ietf-quic-qlog-quic-events names them: `quic:packet_sent`, `quic:packet_received`
//! (the receiver's ACK packets reaching the sender), `quic:packet_lost` and
//! `quic:recovery_metrics_updated`, each with the path it concerns. Times are milliseconds
//! of simulated time from the start of the run.

use crate::time::SimTime;
use serde_json::{json, Value};

/// The trace being written.
#[derive(Clone, Debug, Default)]
pub struct Qlog {
    text: String,
}

impl Qlog {
    /// A trace whose header names the flow's connection.
    pub fn new(title: &str) -> Qlog {
        let mut q = Qlog { text: String::new() };
        q.record(&json!({
            "file_schema": "urn:ietf:params:qlog:file:sequential",
            "serialization_format": "application/qlog+json-seq",
            "title": title,
            "trace": {
                "vantage_point": {"type": "client", "name": "sender"},
                "event_schemas": ["urn:ietf:params:qlog:events:quic"],
                "common_fields": {"reference_time": {"clock_type": "monotonic", "epoch": "unknown"}},
            },
        }));
        q
    }

    fn record(&mut self, v: &Value) {
        self.text.push('\u{1e}');
        self.text.push_str(&v.to_string());
        self.text.push('\n');
    }

    /// An event `name` at `now` with `data`.
    pub fn event(&mut self, now: SimTime, name: &str, data: Value) {
        self.record(&json!({"time": now.0 as f64 / 1e6, "name": name, "data": data}));
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_json_texts_after_a_record_separator() {
        let mut q = Qlog::new("f");
        q.event(SimTime(1_500_000), "quic:packet_sent", json!({"header": {"packet_number": 0}}));
        let text = q.into_text();
        let recs: Vec<Value> = text.split('\u{1e}').skip(1).map(|r| serde_json::from_str(r.trim_end()).unwrap()).collect();
        assert!(text.starts_with('\u{1e}') && text.ends_with('\n'));
        assert_eq!(recs[0]["file_schema"], "urn:ietf:params:qlog:file:sequential");
        assert_eq!((recs[1]["time"].as_f64(), recs[1]["name"].as_str()), (Some(1.5), Some("quic:packet_sent")));
    }
}
