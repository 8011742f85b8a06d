//! SCTP (RFC 4960) with multihoming and concurrent multipath transfer (CMT), as a sans-IO
//! transport beside TCP and Multipath TCP.
//!
//! * `association.rs`: the association: TSN space, send and retransmission queues, SACK
//!   processing, T3-rtx, failover, destination choice, and the data receiver at the far end;
//! * `config.rs`: settings with RFC 4960's defaults, and wire sizes of chunks and packets;
//! * `receiver.rs`: the receiver's TSN map (cumulative TSN, gap blocks, duplicates), receive
//!   buffer and a_rwnd, delayed SACK;
//! * `dest.rs`: per-destination state: window, RTO, T3-rtx, error counter, reachability;
//! * `cmt.rs`: missing-report rules (HTNA, SFR, DAC) and CUC;
//! * `rtx.rs`: where retransmissions go (RFC 4960 §6.4; CMT's RTX-SAME/ASAP/CWND/SSTHRESH);
//! * `cc/`: per-destination congestion controllers, one file each (RFC 4960, NewReno-SCTP,
//!   LIA/OLIA coupling, JSCTP and JSCTP-ABE of seed 003), their hooks and their table.

pub mod association;
pub mod cc;
pub mod cmt;
pub mod config;
pub mod dest;
pub mod receiver;
pub mod rtx;
pub mod summary;
#[cfg(test)]
mod tests;
mod transport;

pub use crate::metrics::SctpSummary;
pub use association::SctpConn;
pub use cc::{SctpCc, SCTP_CONTROLLERS};
pub use config::{SctpConfig, SCTP_SCHEDULERS};
pub use dest::Destination;
pub use rtx::{RtxPolicy, RTX_POLICIES};
