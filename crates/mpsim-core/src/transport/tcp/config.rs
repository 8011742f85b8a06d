//! A flow's TCP settings as the scenario gives them, and the sender's and receiver's
//! configurations made from them.

use super::{defaults, DelayedAck, ReceiverConfig, RtoMode, SenderConfig};
use crate::time::Dur;

/// A flow's TCP settings: the `[tcp]` table of a scenario (or of a flow), field for key.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    pub mss: u32,
    pub initial_window: u32,
    /// Retransmission-timeout computation (`tcp.rto`: "linux" or "rfc6298").
    pub rto: RtoMode,
    /// Floor and cap of the RTO; None for the mode's defaults.
    pub min_rto: Option<Dur>,
    pub max_rto: Option<Dur>,
    /// Linux's loss-recovery defences (`tcp.frto`, `tcp.rack`, `tcp.tlp`, `tcp.prr`).
    pub frto: bool,
    pub rack: bool,
    pub tlp: bool,
    pub prr: bool,
    /// The receiver reports duplicate segments with D-SACK (`tcp.dsack`, RFC 2883; Linux's
    /// default), which lets the sender undo spurious reductions and widen RACK's window.
    pub dsack: bool,
    /// SACK (`tcp.sack`, RFC 2018; Linux's default). Off: NewReno loss recovery (RFC 6582),
    /// and with it no RACK, tail loss probe or D-SACK.
    pub sack: bool,
    /// ECN (`tcp.ecn`, RFC 3168): both ends of the flow agree to it, as a handshake with ECE
    /// and CWR on the SYN and ECE on the SYN-ACK would (Linux's `net.ipv4.tcp_ecn = 1` on the
    /// side that opens the connection); off by default, as Linux does not ask for it.
    pub ecn: bool,
    pub initial_rto: Dur,
    /// When the receiver acknowledges (`tcp.delayed_ack`: false, true or "linux").
    pub delayed_ack: DelayedAck,
    pub delack_timeout: Dur,
    pub rcv_buf: u64,
    pub snd_buf: u64,
    /// IP + TCP header bytes added to every packet on the wire.
    pub header: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: defaults::MSS,
            initial_window: defaults::INITIAL_WINDOW,
            rto: RtoMode::Linux,
            min_rto: None,
            max_rto: None,
            frto: true,
            rack: true,
            tlp: true,
            prr: true,
            dsack: true,
            sack: true,
            ecn: false,
            initial_rto: defaults::INITIAL_RTO,
            delayed_ack: DelayedAck::Off,
            delack_timeout: defaults::DELACK_TIMEOUT,
            rcv_buf: defaults::RCV_BUF,
            snd_buf: defaults::SND_BUF,
            header: defaults::HEADER,
        }
    }
}

impl TcpConfig {
    /// The sender's configuration; a Multipath TCP subflow's (`multipath`) ignores its own
    /// receive window, which the connection level grants.
    pub fn sender(&self, multipath: bool) -> SenderConfig {
        SenderConfig {
            mss: self.mss,
            initial_window: self.initial_window,
            rto: self.rto,
            min_rto: self.min_rto,
            max_rto: self.max_rto,
            frto: self.frto,
            rack: self.rack,
            tlp: self.tlp,
            prr: self.prr,
            sack: self.sack,
            ecn: self.ecn,
            initial_rto: self.initial_rto,
            ignore_rwnd: multipath,
            // the SYN-ACK announces the receive window before any data flows
            initial_rwnd: self.rcv_buf,
        }
    }

    /// The receiver's configuration, its RTT estimate taken from the handshake (`handshake`);
    /// a Multipath TCP subflow's (`multipath`) holds no data of its own (the connection level
    /// does), so its buffer never limits.
    pub fn receiver(&self, multipath: bool, handshake: Dur) -> ReceiverConfig {
        ReceiverConfig {
            buffer: if multipath { u64::MAX / 4 } else { self.rcv_buf },
            ack_every: if self.delayed_ack == DelayedAck::Off { 1 } else { 2 },
            delack_timeout: self.delack_timeout,
            dsack: self.dsack,
            sack: self.sack,
            linux_delack: self.delayed_ack == DelayedAck::Linux,
            handshake_rtt: Some(handshake),
        }
    }
}
