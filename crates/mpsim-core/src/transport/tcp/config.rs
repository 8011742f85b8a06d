//! A flow's TCP settings as the scenario gives them, and the sender's and receiver's
//! configurations made from them.

use super::delack::WindowGrowth;
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
    /// The receiver's window scale (`tcp.window_scale`, RFC 7323 §2): the window field
    /// carries at most 65,535 units of `2^window_scale` bytes, so no window offered exceeds
    /// `65535 << window_scale` however much of `rcv_buf` is free. `None`: no such limit.
    pub window_scale: Option<u8>,
    pub snd_buf: u64,
    /// How `snd_buf` is counted (`tcp.snd_buf_accounting`: "payload" or "linux").
    pub snd_buf_accounting: SndBufAccounting,
    /// What a controller that halves on a loss halves (`tcp.ssthresh`: "flight", RFC 5681, or
    /// "cwnd", Linux's `tcp_reno_ssthresh`): true for "cwnd".
    pub ssthresh_of_cwnd: bool,
    /// IP + TCP header bytes added to every packet on the wire.
    pub header: u32,
}

/// How the send buffer is counted against `snd_buf`.
///
/// * `Payload` ("payload", the default): the application may keep `snd_buf` bytes of payload
///   written and not yet acknowledged.
/// * `Linux` ("linux"): as Linux 6.x charges a socket's send buffer (`tcp_wmem`, `sk_sndbuf`)
///   and wakes a writer. The buffer is charged the true size of its skbs (`sk_wmem_queued`:
///   payload plus the `sk_buff` and `skb_shared_info` of each skb, and more per payload byte
///   once sent skbs are split by SACK and retransmission), and a writer that waits for the
///   socket to be writable (poll, select or a blocking write) is woken only when the free
///   space is at least half the charged bytes (`sk_stream_is_writeable`:
///   `sk_stream_wspace >= sk_stream_min_wspace`), that is with at most 2/3 of the buffer
///   charged. The application therefore holds about `snd_buf · 2/3 / 1.15` of payload: the true
///   size is taken as 1.15 times the payload ([`TRUESIZE_PER_PAYLOAD`], measured with `ss -m`
///   on Linux 6.18, see docs/kernel.md). Not modelled: the buffer's autotuning below
///   `tcp_wmem[2]` (2 · cwnd · 2,304 B of true size on 6.18, which leaves about one window of
///   unsent data and so never holds the window back) and the true size's variation over a run
///   (1.05 in steady state, 1.11 to 1.41 around a loss burst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SndBufAccounting {
    #[default]
    Payload,
    Linux,
}

/// The true size Linux charges per byte of payload in a send buffer, as (numerator,
/// denominator): 1.15, the mean of `w / (unacked · mss + notsent)` from `ss -tim` (skmem's
/// `w`) while the buffer held slow start back on a 10 Mbit/s, 400 ms path (1.11 to 1.19).
pub const TRUESIZE_PER_PAYLOAD: (u64, u64) = (115, 100);

impl SndBufAccounting {
    /// The value's name in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            SndBufAccounting::Payload => "payload",
            SndBufAccounting::Linux => "linux",
        }
    }

    /// The payload a send buffer of `snd_buf` bytes lets the application keep written and
    /// not yet acknowledged (at least `mss`, one segment).
    pub fn payload_limit(self, snd_buf: u64, mss: u64) -> u64 {
        match self {
            SndBufAccounting::Payload => snd_buf,
            SndBufAccounting::Linux => {
                let (num, den) = TRUESIZE_PER_PAYLOAD;
                let charged = (snd_buf as u128 * 2 / 3) as u64;
                ((charged as u128 * den as u128 / num as u128) as u64).max(mss)
            }
        }
    }
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
            window_scale: None,
            snd_buf: defaults::SND_BUF,
            snd_buf_accounting: SndBufAccounting::Payload,
            ssthresh_of_cwnd: false,
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
            initial_rwnd: self.rcv_buf.min(self.max_window()),
            halve_cwnd: self.ssthresh_of_cwnd,
        }
    }

    /// The receiver's configuration, its RTT estimate taken from the handshake (`handshake`);
    /// a Multipath TCP subflow's (`multipath`) holds no data of its own (the connection level
    /// does), so its buffer never limits.
    pub fn receiver(&self, multipath: bool, handshake: Dur) -> ReceiverConfig {
        ReceiverConfig {
            buffer: if multipath { u64::MAX / 4 } else { self.rcv_buf },
            max_window: if multipath { u64::MAX } else { self.max_window() },
            ack_every: if self.delayed_ack == DelayedAck::Off { 1 } else { 2 },
            delack_timeout: self.delack_timeout,
            dsack: self.dsack,
            sack: self.sack,
            linux_delack: self.delayed_ack == DelayedAck::Linux,
            handshake_rtt: Some(handshake),
            // from the flow's receive buffer, which a subflow's window follows as well; not
            // capped by the window scale, as Linux's window_clamp is not
            window_growth: Some(WindowGrowth::linux(self.rcv_buf, self.mss)),
        }
    }

    /// The largest window the receiver can offer: `65535 << window_scale`, or no limit.
    pub fn max_window(&self) -> u64 {
        self.window_scale.map_or(u64::MAX, |s| 65_535 << s)
    }

    /// The payload the flow's send buffer holds at most: `snd_buf` counted as
    /// `snd_buf_accounting` says.
    pub fn snd_buf_payload(&self) -> u64 {
        self.snd_buf_accounting.payload_limit(self.snd_buf, self.mss as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_accounting_holds_two_thirds_of_the_buffer_in_true_size() {
        let mut c = TcpConfig { snd_buf: 8_000_000, ..TcpConfig::default() };
        assert_eq!(c.snd_buf_payload(), 8_000_000);
        c.snd_buf_accounting = SndBufAccounting::Linux;
        // 8 MB · 2/3 = 5,333,333 B charged, / 1.15 = 4,637,680 B of payload (rounded down)
        assert_eq!(c.snd_buf_payload(), 4_637_680);
        // never less than a segment
        c.snd_buf = c.mss as u64;
        assert_eq!(c.snd_buf_payload(), c.mss as u64);
    }

    #[test]
    fn a_subflow_s_window_grows_from_the_flow_s_buffer_beyond_the_window_field() {
        // the matched runs' default buffer: 5,064,000 B of window at scale 6 (4,194,240 B)
        let c = TcpConfig { rcv_buf: 5_064_000, window_scale: Some(6), ..TcpConfig::default() };
        for multipath in [false, true] {
            let r = c.receiver(multipath, Dur::from_millis(20));
            let g = r.window_growth.unwrap();
            assert_eq!((g.start, g.window_clamp, g.mss), (4_001_152, 5_064_000, 1460), "multipath {multipath}");
        }
    }
}
