//! Time series, each declared once: a row type (what one sample records) and its columnar
//! store, with the column names the tables carry, from one macro invocation.

use super::Column;

impl From<Vec<u64>> for Column {
    fn from(v: Vec<u64>) -> Column {
        Column::U64(v)
    }
}

impl From<Vec<f64>> for Column {
    fn from(v: Vec<f64>) -> Column {
        Column::F64(v)
    }
}

/// `series!(Row => Store { field: type = "column", ... })` declares `Row` (one sample) and
/// `Store` (a vector per field) with `push` and `into_columns` in declaration order.
macro_rules! series {
    ($(#[$meta:meta])* $row:ident => $store:ident { $($(#[$fm:meta])* $field:ident : $ty:ty = $col:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $row {
            $($(#[$fm])* pub $field: $ty,)+
        }

        /// The columns of the series, one vector per field of the row type.
        #[derive(Clone, Debug, Default)]
        pub struct $store {
            $(pub $field: Vec<$ty>,)+
        }

        impl $store {
            pub fn push(&mut self, r: $row) {
                $(self.$field.push(r.$field);)+
            }

            /// The columns, named as in the tables, in declaration order.
            pub fn into_columns(self) -> Vec<(String, Column)> {
                vec![$(($col.to_string(), Column::from(self.$field)),)+]
            }
        }
    };
}

series! {
    /// One flow at one sampling instant (after the `time_s` and `flow` columns).
    FlowRow => FlowColumns {
        cwnd: u64 = "cwnd_bytes",
        in_flight: u64 = "in_flight_bytes",
        srtt_ms: f64 = "srtt_ms",
        rwnd: u64 = "rwnd_bytes",
        delivered: u64 = "delivered_bytes",
        goodput: f64 = "goodput_bps",
        retransmits: u64 = "retransmits",
        sent: u64 = "sent_bytes",
        rcv_buffer: u64 = "rcv_buffer_bytes",
        blocked_s: f64 = "blocked_s",
        psnr_db: f64 = "psnr_db",
        delay_ms: f64 = "delay_ms",
        jitter_ms: f64 = "jitter_ms",
        /// JSCTP: the primary destination's smoothed jitter ratio (NaN otherwise).
        jitter_ratio: f64 = "jitter_ratio",
        /// JSCTP: the primary destination's k/w threshold at its current window.
        jitter_threshold: f64 = "jitter_threshold",
    }
}

series! {
    /// One subflow at one sampling instant (after the `time_s`, `flow` and `path` columns).
    SubflowRow => SubflowColumns {
        cwnd: u64 = "cwnd_bytes",
        /// Infinity before the first loss.
        ssthresh: f64 = "ssthresh_bytes",
        in_flight: u64 = "in_flight_bytes",
        srtt_ms: f64 = "srtt_ms",
        rto_ms: f64 = "rto_ms",
        delivered: u64 = "delivered_bytes",
        goodput: f64 = "goodput_bps",
        /// MPTCP-rec: the rate the receiver advertises for the path (NaN otherwise).
        dsr: f64 = "dsr_bps",
        /// MPTCP-rec: 1 while the path is in the sender's candidate list, 0 when removed.
        listed: f64 = "in_path_list",
        /// MPTCP-rec: the receiver's emulated window, packets.
        emu_window: f64 = "rec_window_pkts",
        /// BBR: the bandwidth estimate, bit/s of full-sized segments (NaN for other controllers).
        bbr_bw: f64 = "bbr_bw_bps",
        /// BBR: the min-RTT estimate (NaN before the first sample).
        bbr_min_rtt_ms: f64 = "bbr_min_rtt_ms",
        /// BBR: the gains of pacing and of the window (1 and 1 in PROBE_RTT).
        bbr_pacing_gain: f64 = "bbr_pacing_gain",
        bbr_cwnd_gain: f64 = "bbr_cwnd_gain",
    }
}

series! {
    /// The forward direction of one link at one sampling instant (after `time_s`, `link`).
    LinkRow => LinkColumns {
        queue_packets: u64 = "queue_packets",
        queue_bytes: u64 = "queue_bytes",
        drops: u64 = "drops",
    }
}
