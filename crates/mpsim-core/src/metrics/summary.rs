//! The summary of a run: per-flow and per-link figures, serialisable to JSON.

use serde::Serialize;

/// One subflow of a flow (plain TCP flows have exactly one).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SubflowSummary {
    pub path: String,
    pub backup: bool,
    /// Bytes delivered in order at the subflow level per second, after the warm-up
    /// (reinjected copies count on each subflow that carried them).
    pub goodput_bps: f64,
    pub bytes_sent: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    pub rtt_mean_ms: Option<f64>,
    pub srtt_final_ms: Option<f64>,
    pub cwnd_final_bytes: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The flow's name (the same key as the `flow` column of series and traces).
    pub flow: String,
    /// The flow's path, or its paths joined by '+' for a multipath flow.
    pub path: String,
    pub cc: String,
    /// The packet scheduler of a multipath flow; None for plain TCP.
    pub scheduler: Option<String>,
    /// Application bytes delivered in order per second, after the warm-up. Over a short
    /// window it can exceed `throughput_bps`: data sent before the warm-up may arrive after it.
    pub goodput_bps: f64,
    /// Data bytes transmitted (retransmissions included) per second, after the warm-up.
    pub throughput_bps: f64,
    pub bytes_written: u64,
    pub bytes_delivered: u64,
    /// True if a finite transfer delivered every byte.
    pub complete: bool,
    /// Seconds from the flow's start until its last byte was delivered (finite transfers).
    pub completion_time_s: Option<f64>,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Loss indications in Padhye's sense: fast recoveries plus timeout series (a run of
    /// back-to-back timeouts counts once).
    pub loss_indications: u64,
    /// Fraction of transmitted segments that were retransmissions.
    pub retransmit_rate: f64,
    pub rtt_mean_ms: Option<f64>,
    pub rtt_min_ms: Option<f64>,
    pub srtt_final_ms: Option<f64>,
    pub rto_final_ms: f64,
    /// Mean length of the first timer of each timeout series (Padhye's T0); None without timeouts.
    pub first_rto_mean_ms: Option<f64>,
    /// Delay from the application's write to in-order delivery at the receiver. It includes
    /// the wait in the send buffer: for a bulk transfer with a large `snd_buf` that wait
    /// dominates (the buffer is kept full), so read it for rate-limited applications (CBR).
    pub delay_mean_ms: Option<f64>,
    pub delay_p50_ms: Option<f64>,
    pub delay_p95_ms: Option<f64>,
    pub delay_max_ms: Option<f64>,
    /// RFC 3550 inter-arrival jitter of delivered application writes.
    pub jitter_ms: Option<f64>,
    pub cwnd_final_bytes: u64,
    /// Bytes the application could not write because the send buffer was full (CBR only).
    pub app_bytes_refused: u64,
    pub out_of_order_segments: u64,
    pub duplicate_segments: u64,
    pub max_receive_buffer_bytes: u64,
    /// Seconds during which the receive window stopped new data while a subflow had room
    /// (multipath: receive-buffer blocking).
    pub rcv_blocked_s: f64,
    /// Largest and mean |DSN offset| between consecutively received chunks (multipath).
    pub o3_max_bytes: Option<u64>,
    pub o3_mean_bytes: Option<f64>,
    /// Chunks sent again on another subflow after a timeout or by opportunistic retransmission.
    pub reinjections: u64,
    /// Windows halved by the lowest-RTT scheduler's penalisation.
    pub penalties: u64,
    pub subflows: Vec<SubflowSummary>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    /// The link's name (the same key as the `link` column of series and traces).
    pub link: String,
    /// "forward" (as declared) or "reverse" (carrying ACKs back).
    pub direction: String,
    pub packets_offered: u64,
    pub packets_delivered: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub down_drops: u64,
    /// Fraction of the run the transmitter was busy.
    pub utilization: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    /// Jain's index over the flows' goodputs.
    pub jain_index: Option<f64>,
    pub events: u64,
    /// Data packets delivered to receivers.
    pub packets_delivered: u64,
    pub wall_s: f64,
}
