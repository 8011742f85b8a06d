//! QUIC (RFC 9000, RFC 9002) as a sans-IO transport beside TCP, Multipath TCP and SCTP: one
//! bulk stream, or a stream per media frame, over one path or several, without cryptography (the AEAD tag's bytes are counted) and
//! without a simulated handshake (the connection starts, as mpsim's TCP does, with the
//! handshake done and its round trip as the first RTT sample). See docs/quic.md.
//!
//! * `ack_frequency.rs`: the ACK frequency extension (draft-ietf-quic-ack-frequency-10):
//!   the sender's ACK_FREQUENCY requests (fixed or the `window` policy), what the receiver
//!   applies;
//! * `wire.rs`: wire sizes of headers and frames, RFC 9002's constants;
//! * `ranges.rs`: merged integer ranges (packet numbers received, stream bytes);
//! * `ecn.rs`: ECN counts and their validation (RFC 9000 §13.4);
//! * `rtt.rs`: RTT estimation (RFC 9002 §5);
//! * `recovery.rs`: loss detection, probe timeout, persistent congestion and the window of
//!   one packet number space (RFC 9002 §6-7), through mpsim's congestion controllers;
//! * `reset.rs`: resetting the streams of late media frames (`quic.reset_late`,
//!   RESET_STREAM);
//! * `streams.rs`: the streams (RFC 9000 §2-4): writes mapped to streams, the stream whose
//!   data goes next (priorities, RFC 9218), stream credit and MAX_STREAMS, per-stream delivery;
//! * `conn.rs`: the connection: packets, connection flow control, ACK generation,
//!   retransmission;
//! * `pacing.rs`: pacing (RFC 9002 §7.7) with noq's token bucket (`quic.pacing`);
//! * `path_status.rs`: Multipath QUIC's path status changes during a run
//!   (PATH_STATUS_BACKUP, PATH_STATUS_AVAILABLE);
//! * `qlog.rs`: the connection's qlog trace (`[metrics] qlog`);
//! * `transport.rs`: the [`Transport`](crate::transport::Transport) implementation and the
//!   flow summary.

pub mod ack_frequency;
pub mod conn;
pub mod ecn;
pub mod pacing;
pub mod path_status;
pub mod qlog;
pub mod ranges;
pub mod recovery;
pub mod reset;
pub mod rtt;
pub mod streams;
#[cfg(test)]
mod tests;
mod transport;
pub mod wire;

pub use conn::{QuicConfig, QuicConn, QuicPath};
