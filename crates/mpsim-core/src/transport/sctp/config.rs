//! Settings of an SCTP association, with RFC 4960's defaults (§15, "Suggested SCTP Protocol
//! Parameter Values"), read from a flow's `sctp` table.

use super::rtx::RtxPolicy;
use crate::time::Dur;

/// Everything an association is built from. Field names are the scenario keys.
#[derive(Clone, Debug, PartialEq)]
pub struct SctpConfig {
    /// User data bytes per DATA chunk (the seed paper's 1456 B).
    pub chunk: u32,
    /// Path MTU: the unit of cwnd arithmetic (RFC 4960 §7.2) and the largest packet when
    /// bundling. A single chunk may make a larger packet (the seed paper's 1456-byte chunk
    /// travels in 1504-byte packets); there is no fragmentation.
    pub mtu: u32,
    /// Put several DATA chunks into one packet, up to the MTU (off: one chunk per packet, as
    /// in the seed paper's ns-2 runs).
    pub bundling: bool,
    pub rto_initial: Dur,
    pub rto_min: Dur,
    pub rto_max: Dur,
    /// Missing reports that trigger a fast retransmit: 3 (RFC 4960), 4 (RFC 2960, seed 003).
    pub fast_rtx_threshold: u8,
    pub path_max_retrans: u32,
    pub association_max_retrans: u32,
    /// Delay SACKs (RFC 4960 §6.2): one for every `sack_freq` packets, or after `sack_delay`.
    pub delayed_sack: bool,
    pub sack_freq: u32,
    pub sack_delay: Dur,
    pub rcv_buf: u64,
    pub snd_buf: u64,
    /// Concurrent multipath transfer: new data on every active destination.
    pub cmt: bool,
    /// CMT's split fast retransmit, cwnd update (pseudo-cumack) and delayed-ack handling.
    pub sfr: bool,
    pub cuc: bool,
    pub dac: bool,
    pub rtx_policy: RtxPolicy,
    /// CMT: the scheduler choosing each new packet's destination (`scheduler` on the flow;
    /// one of [`SCTP_SCHEDULERS`]).
    pub scheduler: &'static str,
    /// Index (into the flow's paths) of the primary destination.
    pub primary: usize,
    /// Carry a 12-byte timestamp chunk in every DATA packet and echo receive times in SACKs
    /// (what a jitter-based controller reads).
    pub timestamps: bool,
    /// NR-SACK (Natarajan et al., ICNP 2008): the receiver reports its out-of-order data as
    /// non-renegable (it never reneges here), so the sender frees gap-acked chunks from its
    /// send buffer at once instead of at the cumulative ack.
    pub nr_sack: bool,
    /// ECN (RFC 4960 Appendix A; `sctp.ecn`): both ends announce the ECN-capable parameter,
    /// DATA packets are ECT(0), the receiver answers CE with ECNE chunks until a CWR chunk
    /// covers them, the sender reduces at most once per round trip per destination.
    pub ecn: bool,
    /// CMT-PF (Natarajan et al., Computer Communications 2009): with CMT, a destination whose
    /// T3-rtx timer expires is "potentially failed": no new data and no retransmissions go
    /// there until a HEARTBEAT sent to it every RTO is acknowledged.
    pub cmt_pf: bool,
    /// RFC 4960 HB.interval: an inactive destination is probed every RTO + this.
    pub hb_interval: Dur,
    /// The congestion controller of every destination (one of `cc::SCTP_CONTROLLERS`).
    pub cc: &'static str,
    /// JSCTP's k of the k/w threshold, bytes (None: one data chunk, the paper's k = MSS).
    pub jsctp_k: Option<u64>,
    /// JSCTP's fix: jitter-ratio samples of exactly zero leave the smoothed ratio alone.
    pub jsctp_ignore_zero: bool,
    /// Who classes JSCTP's losses: the jitter ratio, or a control (every loss one class).
    pub jsctp_losses: crate::cc::jitter_ratio::LossRule,
}

/// The schedulers a CMT association can run (`sched/`, over one view per destination), the
/// first the default: round-robin as CMT defines it, lowest RTT first, and BLEST's and ECF's
/// waiting for the fast path. Others need what SCTP does not have (redundant copies of a TSN
/// on several destinations, per-subflow sequence spaces, receiver feedback) and are refused.
pub const SCTP_SCHEDULERS: &[&str] = &["round_robin", "lowest_rtt", "blest", "ecf"];

/// IP header (20) + SCTP common header (12).
pub const PACKET_HEADER: u32 = 32;
/// DATA chunk header.
pub const DATA_CHUNK_HEADER: u32 = 16;
/// SACK chunk without gap blocks or duplicate TSNs.
pub const SACK_CHUNK: u32 = 16;
/// NR-SACK chunk without blocks (a 2-byte count of NR gap blocks and 2 reserved bytes more).
pub const NR_SACK_CHUNK: u32 = 20;
/// A HEARTBEAT or HEARTBEAT ACK chunk: header and a heartbeat-info parameter carrying the
/// send time and the destination (4 + 4 + 8 + 8 bytes).
pub const HEARTBEAT_CHUNK: u32 = 24;
/// A timestamp chunk (type/flags/length + 8-byte send time).
pub const TIMESTAMP_CHUNK: u32 = 12;
/// An ECNE or CWR chunk (RFC 4960 Appendix A: type, flags, length and a TSN).
pub const ECN_CHUNK: u32 = 8;

impl Default for SctpConfig {
    fn default() -> Self {
        SctpConfig {
            chunk: 1456,
            mtu: 1500,
            bundling: false,
            rto_initial: Dur::from_secs(3),
            rto_min: Dur::from_secs(1),
            rto_max: Dur::from_secs(60),
            fast_rtx_threshold: 3,
            path_max_retrans: 5,
            association_max_retrans: 10,
            delayed_sack: true,
            sack_freq: 2,
            sack_delay: Dur::from_millis(200),
            rcv_buf: crate::transport::tcp::defaults::RCV_BUF,
            snd_buf: crate::transport::tcp::defaults::SND_BUF,
            cmt: false,
            sfr: true,
            cuc: true,
            dac: true,
            rtx_policy: RtxPolicy::Ssthresh,
            scheduler: "round_robin",
            primary: 0,
            timestamps: false,
            nr_sack: false,
            ecn: false,
            cmt_pf: false,
            hb_interval: Dur::from_secs(30),
            cc: "rfc4960",
            jsctp_k: None,
            jsctp_ignore_zero: true,
            jsctp_losses: crate::cc::jitter_ratio::LossRule::Jitter,
        }
    }
}

impl SctpConfig {
    /// Room for DATA chunks in a packet: the MTU less the common header and, with timestamps,
    /// the timestamp chunk.
    pub fn chunk_space(&self) -> u32 {
        self.mtu - PACKET_HEADER - if self.timestamps { TIMESTAMP_CHUNK } else { 0 }
    }

    /// Bytes on the wire of a DATA chunk carrying `len` user bytes (padded to 4 bytes).
    pub fn data_chunk_wire(len: u32) -> u32 {
        DATA_CHUNK_HEADER + len.div_ceil(4) * 4
    }

    /// Wire size of a packet with `chunks` DATA chunks carrying `len` bytes in all; all but
    /// the last are full chunks of `self.chunk` bytes.
    /// (An ECN CWR chunk riding along adds [`ECN_CHUNK`] bytes.)
    pub fn data_packet_wire(&self, len: u32, chunks: u16) -> u32 {
        let full = chunks.saturating_sub(1) as u32;
        let last = len - full * self.chunk;
        let ts = if self.timestamps { TIMESTAMP_CHUNK } else { 0 };
        PACKET_HEADER + ts + full * Self::data_chunk_wire(self.chunk) + Self::data_chunk_wire(last)
    }

    /// Wire size of a SACK packet (RFC 4960 §3.3.4: 16 bytes, 4 per gap block and 4 per
    /// duplicate TSN; echoed receive times add 8 bytes each when timestamps are on). An
    /// NR-SACK chunk has a 20-byte header and reports every block as a non-renegable one.
    pub fn sack_packet_wire(&self, gaps: usize, dups: usize, echoes: usize) -> u32 {
        let echo = if self.timestamps { 4 + 8 * echoes as u32 } else { 0 };
        let chunk = if self.nr_sack { NR_SACK_CHUNK } else { SACK_CHUNK };
        PACKET_HEADER + chunk + 4 * gaps as u32 + 4 * dups as u32 + echo
    }

    /// RFC 4960 §7.2.1: initial cwnd = min(4·MTU, max(2·MTU, 4380 bytes)).
    pub fn initial_cwnd(&self) -> u64 {
        let m = self.mtu as u64;
        (4 * m).min((2 * m).max(4380))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_sizes_follow_the_chunk_layout() {
        let c = SctpConfig::default();
        // IP 20 + common 12 + DATA 16 + 1456
        assert_eq!(c.data_packet_wire(1456, 1), 1504);
        // a 1001-byte chunk is padded to 1004
        assert_eq!(c.data_packet_wire(1001, 1), 32 + 16 + 1004);
        assert_eq!(c.data_packet_wire(1456 + 100, 2), 32 + 16 + 1456 + 16 + 100);
        assert_eq!(c.sack_packet_wire(0, 0, 0), 48);
        assert_eq!(c.sack_packet_wire(2, 1, 0), 48 + 8 + 4);
        let ts = SctpConfig { timestamps: true, ..c };
        assert_eq!(ts.data_packet_wire(1456, 1), 1516);
        assert_eq!(c.initial_cwnd(), 4380);
        let nr = SctpConfig { nr_sack: true, ..c };
        assert_eq!(nr.sack_packet_wire(2, 0, 0), 52 + 8);
    }
}
