//! Packets and the arena that holds them while they cross the network.
//!
//! Events carry a `PacketId`, never a packet, so the hot path moves 4-byte ids and reuses
//! slots instead of allocating.

use crate::metrics::TraceKind;
use crate::time::SimTime;

pub type PacketId = u32;

/// A SACK block: the half-open byte range [start, end) held out of order by the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// Most SACK blocks an ACK carries (RFC 2018 allows 3 with timestamps, 4 without).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The bit of `AckHeader::n_sack` that carries TCP's ECE flag (it keeps the ACK within the
/// packet's size budget).
const ECE_BIT: u8 = 0x80;

/// The ECN codepoint of a packet's IP header (RFC 3168 §5): the two low bits of the TOS
/// byte, with the wire values as discriminants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport.
    #[default]
    NotEct = 0,
    /// ECN-capable transport, codepoint 1 (L4S; no sender here uses it).
    Ect1 = 1,
    /// ECN-capable transport, codepoint 0 (what an RFC 3168 sender sets).
    Ect0 = 2,
    /// Congestion experienced: set by a queue that marks instead of dropping.
    Ce = 3,
}

impl Ecn {
    /// Whether a queue may mark the packet instead of dropping it (ECT or CE already: Linux's
    /// `INET_ECN_set_ce` succeeds on both).
    #[inline]
    pub fn capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// A TCP data segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataHeader {
    /// First data byte carried.
    pub seq: u64,
    /// Connection-level data sequence number of the first byte (MPTCP DSS mapping); equal
    /// to `seq` for plain TCP.
    pub dsn: u64,
    /// When the sender put the segment on the wire.
    pub sent_at: SimTime,
    /// Payload bytes.
    pub len: u32,
    /// True if this segment is a retransmission.
    pub retx: bool,
    /// TCP's PSH flag, as Linux's sender sets it (see `Subflow::transmit`); only a receiver
    /// with Linux's delayed ACKs acts on it.
    pub psh: bool,
    /// Congestion-warning mark, set by a link whose average queue is above its threshold
    /// (`congestion_warning`, TCP New Jersey's signal); independent of `ecn`.
    pub cw: bool,
    /// The IP header's ECN codepoint: ECT(0) on new data of a flow with `tcp.ecn`, CE once a
    /// marking queue marked it.
    pub ecn: Ecn,
    /// TCP's CWR flag: the sender reduced its window after an ECN echo (RFC 3168 §6.1.2).
    pub cwr: bool,
    /// The stamp of the latest receiver feedback the sender had when it sent this segment
    /// (echoed as TCP's TSecr echoes a timestamp); zero before any. The receiver-side logic
    /// times its rounds with it.
    pub echo: SimTime,
}

/// A TCP acknowledgement: cumulative ACK, window and SACK blocks.
///
/// SACK blocks are stored as signed 32-bit offsets from the cumulative ACK (they always lie
/// within the receive window, at most 1 GB, or just below the ACK for a D-SACK), which keeps
/// a whole packet in one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckHeader {
    /// Next byte expected.
    pub ack: u64,
    /// Connection-level cumulative acknowledgement (MPTCP DATA_ACK); equal to `ack` for TCP.
    pub data_ack: u64,
    wnd: u32,
    /// The number of SACK blocks in the low bits, TCP's ECE flag in the high bit ([`ECE_BIT`]).
    n_sack: u8,
    /// The receiver saw a congestion-warning mark on the data this ACK answers (the
    /// counterpart of TCP's ECE flag, set per ACK as the marks arrive).
    pub cw_echo: bool,
    sack: [(u32, u32); MAX_SACK_BLOCKS],
    /// Receiver timestamp: when the receiver got the latest data segment this ACK answers
    /// (the TCP timestamp option's value, at the simulator's resolution). TCP New Jersey's
    /// bandwidth estimate reads the receiver's clock from it.
    pub received_at: SimTime,
    // Receiver feedback (see [`Feedback`]), in its wire form: the rate as the bits of an f32, the stamp in
    // microseconds modulo 2^32, the path id. Flat fields (not a nested struct) so that the
    // header stays within the packet's size budget; `fb` doubles as the enum niche of `Header`.
    fb_rate: u32,
    fb_stamp: u32,
    fb_path: u8,
    fb: bool,
}

/// Fields a receiver-side controller attaches to an acknowledgement (seed 000's extended
/// NR-SACK: timestamp, path id, desired sending rate). Any receiver-driven scheme can use it:
/// the receiver logic fills it in, the sender's scheduler reads it back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    /// When the receiver produced it.
    pub stamp: SimTime,
    /// The path (subflow index) the figure is about.
    pub path: u8,
    /// The rate the receiver wants the sender to use on that path, in bit/s.
    pub rate_bps: f64,
}

impl AckHeader {
    pub fn new(ack: u64, wnd: u64) -> AckHeader {
        AckHeader {
            ack,
            data_ack: ack,
            wnd: wnd.min(u32::MAX as u64) as u32,
            n_sack: 0,
            cw_echo: false,
            received_at: SimTime::ZERO,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            fb_rate: 0,
            fb_stamp: 0,
            fb_path: 0,
            fb: false,
        }
    }

    /// Attaches receiver feedback. The rate travels as an f32 (7 significant digits) and the
    /// stamp at microsecond resolution.
    pub fn set_feedback(&mut self, f: Feedback) {
        self.fb_rate = (f.rate_bps as f32).to_bits();
        self.fb_stamp = (f.stamp.0 / 1_000) as u32;
        self.fb_path = f.path;
        self.fb = true;
    }

    /// The receiver feedback this ACK carries, its stamp unwrapped against `now` (the time it
    /// is read, within 71 minutes after it was written, as TCP timestamps are).
    pub fn feedback(&self, now: SimTime) -> Option<Feedback> {
        self.fb.then(|| {
            let now_us = now.0 / 1_000;
            let back = (now_us as u32).wrapping_sub(self.fb_stamp) as u64;
            Feedback {
                stamp: SimTime(now_us.saturating_sub(back) * 1_000),
                path: self.fb_path,
                rate_bps: f32::from_bits(self.fb_rate) as f64,
            }
        })
    }

    /// Replaces the advertised window (MPTCP: the connection-level window).
    pub fn set_wnd(&mut self, wnd: u64) {
        self.wnd = wnd.min(u32::MAX as u64) as u32;
    }

    /// Advertised receive window in bytes.
    pub fn wnd(&self) -> u64 {
        self.wnd as u64
    }

    /// Appends a SACK block above the cumulative ACK; returns false if the ACK is full.
    pub fn push_sack(&mut self, b: SackBlock) -> bool {
        let n = self.n_sack();
        if n == MAX_SACK_BLOCKS {
            return false;
        }
        debug_assert!(b.start > self.ack && b.end > b.start && b.end - self.ack <= i32::MAX as u64);
        self.sack[n] = ((b.start - self.ack) as u32, (b.end - self.ack) as u32);
        self.n_sack += 1;
        true
    }

    /// Puts a D-SACK block (RFC 2883), which may lie below the cumulative ACK, first; call it
    /// before `push_sack`.
    pub fn push_dsack(&mut self, b: SackBlock) -> bool {
        let n = self.n_sack();
        if n == MAX_SACK_BLOCKS {
            return false;
        }
        debug_assert!(n == 0 && b.end > b.start);
        debug_assert!(self.ack.abs_diff(b.start) <= i32::MAX as u64 && self.ack.abs_diff(b.end) <= i32::MAX as u64);
        let off = |x: u64| (x.wrapping_sub(self.ack) as i64) as i32 as u32;
        self.sack[n] = (off(b.start), off(b.end));
        self.n_sack += 1;
        true
    }

    /// Whether the ACK carries any SACK block (a D-SACK included).
    #[inline]
    pub fn has_sack(&self) -> bool {
        self.n_sack & !ECE_BIT != 0
    }

    /// TCP's ECE flag: the receiver got a CE-marked segment and has not yet seen CWR
    /// (RFC 3168 §6.1.3).
    #[inline]
    pub fn ece(&self) -> bool {
        self.n_sack & ECE_BIT != 0
    }

    pub fn set_ece(&mut self, on: bool) {
        self.n_sack = (self.n_sack & !ECE_BIT) | if on { ECE_BIT } else { 0 };
    }

    /// The first block if it reports a duplicate (RFC 2883 §4): it lies below the cumulative
    /// ACK, or within the second block.
    pub fn dsack(&self) -> Option<SackBlock> {
        let mut it = self.sack_blocks();
        let first = it.next()?;
        if first.end <= self.ack {
            return Some(first);
        }
        let second = it.next()?;
        (second.start <= first.start && first.end <= second.end).then_some(first)
    }

    pub fn n_sack(&self) -> usize {
        (self.n_sack & !ECE_BIT) as usize
    }

    /// The SACK blocks, first (most recent) first.
    pub fn sack_blocks(&self) -> impl Iterator<Item = SackBlock> + '_ {
        self.sack[..self.n_sack()].iter().map(|&(s, e)| SackBlock {
            start: self.ack.wrapping_add(s as i32 as i64 as u64),
            end: self.ack.wrapping_add(e as i32 as i64 as u64),
        })
    }
}

/// An SCTP packet carrying DATA chunks (RFC 4960 §3.3.1) of consecutive TSNs: the first one
/// here, `chunks` in all (one unless bundling is on), covering the stream bytes
/// [`offset`, `offset + len`). Every chunk but the last carries a full chunk of data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SctpDataHeader {
    pub tsn: u64,
    pub offset: u64,
    /// When the sender put the packet on the wire (also the value of the optional timestamp
    /// chunk).
    pub sent_at: SimTime,
    /// User data bytes over all chunks.
    pub len: u32,
    pub chunks: u16,
    /// The chunks are retransmissions.
    pub retx: bool,
    /// The IP header's ECN codepoint (ECT(0) with `sctp.ecn`, CE once marked).
    pub ecn: Ecn,
    /// A CWR chunk rides along (RFC 4960 Appendix A), with the TSN it answers ECNEs up to.
    pub cwr: Option<u64>,
}

/// An SCTP packet carrying a SACK chunk (RFC 4960 §3.3.4). The cumulative TSN ack and the
/// advertised window travel here; the gap-ack blocks, duplicate TSNs, the delayed-ack count
/// (CMT DAC) and echoed receive times stay in the association's SACK log under `id`, which
/// keeps every packet the same small size (the wire size counts them all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SctpSackHeader {
    pub id: u32,
    pub cum_tsn: u64,
    pub a_rwnd: u32,
    /// Stream bytes delivered in order (for traces).
    pub delivered: u64,
    /// An ECNE chunk rides along (RFC 4960 Appendix A): the TSN of the latest packet that
    /// arrived CE, repeated until a CWR covers it.
    pub ecne: Option<u64>,
}

/// An SCTP control packet: a HEARTBEAT probing a destination, or the HEARTBEAT ACK answering
/// it; `sent_at` is the heartbeat's send time, echoed back (RFC 4960 §8.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SctpControlHeader {
    pub ack: bool,
    pub sent_at: SimTime,
}

/// A QUIC packet (RFC 9000): from the sender, a STREAM frame of `len` bytes at stream
/// `offset` (or a PING when `len` is 0), and with `more` further STREAM frames kept in the
/// connection's log under `ack` (the wire size counts them); from the receiver, an ACK packet whose ACK ranges,
/// ack delay and flow-control credit stay in the connection's log under `ack` (its wire size
/// counts them), `offset` then being the largest packet number acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuicHeader {
    /// Packet number, in the space of its path and direction.
    pub pn: u64,
    pub offset: u64,
    pub sent_at: SimTime,
    pub len: u32,
    pub ack: u32,
    /// The path (its index in the connection).
    pub path: u8,
    pub is_ack: bool,
    /// The STREAM frame carries data sent before.
    pub retx: bool,
    /// The packet carries STREAM_DATA_BLOCKED: the sender waits for credit.
    pub blocked: bool,
    /// The packet carries further STREAM frames (under `ack` in the connection's log).
    pub more: bool,
    /// The packet carries IMMEDIATE_ACK (draft-ietf-quic-ack-frequency; after a probe timeout).
    pub immediate: bool,
    /// The IP header's ECN codepoint (ECT(0) with `quic.ecn`, CE once marked).
    pub ecn: Ecn,
}

/// Protocol headers. One link and queue model serves every protocol.
#[derive(Clone, Copy, Debug)]
pub enum Header {
    /// Data segment from a flow's sender to its receiver.
    TcpData(DataHeader),
    /// ACK from a flow's receiver to its sender.
    TcpAck(AckHeader),
    /// UDP datagram (`seq` counts the flow's bytes).
    Datagram(DataHeader),
    /// SCTP DATA from an association's sender to its receiver.
    SctpData(SctpDataHeader),
    /// SCTP SACK from the receiver back to the sender.
    SctpSack(SctpSackHeader),
    /// SCTP HEARTBEAT (sender to receiver) or HEARTBEAT ACK (back).
    SctpControl(SctpControlHeader),
    /// A QUIC packet, either way.
    Quic(QuicHeader),
}

impl Header {
    /// The sequence numbers a trace row shows for the packet: subflow (or stream) level and
    /// connection level.
    #[inline]
    pub fn trace_ids(&self) -> (u64, u64) {
        match *self {
            Header::TcpData(h) | Header::Datagram(h) => (h.seq, h.dsn),
            Header::TcpAck(h) => (h.ack, h.data_ack),
            Header::SctpData(h) => (h.offset, h.tsn),
            Header::SctpSack(h) => (h.delivered, h.cum_tsn),
            Header::SctpControl(_) => (0, 0),
            Header::Quic(h) => (h.offset, h.pn),
        }
    }

    /// The trace row of the packet as it is sent: its kind (a first transmission, a
    /// retransmission or an acknowledgement), its ids and its payload length.
    #[inline]
    pub fn trace_send(&self) -> (TraceKind, u64, u64, u32) {
        let (seq, dsn) = self.trace_ids();
        match *self {
            Header::TcpData(h) => (if h.retx { TraceKind::Retx } else { TraceKind::Send }, seq, dsn, h.len),
            Header::Datagram(h) => (TraceKind::Send, seq, dsn, h.len),
            Header::SctpData(h) => (if h.retx { TraceKind::Retx } else { TraceKind::Send }, seq, dsn, h.len),
            Header::Quic(h) if !h.is_ack => (if h.retx { TraceKind::Retx } else { TraceKind::Send }, seq, dsn, h.len),
            Header::TcpAck(_) | Header::SctpSack(_) | Header::SctpControl(_) | Header::Quic(_) => (TraceKind::Ack, seq, dsn, 0),
        }
    }

    /// The payload the packet brings its receiver, as a trace row shows it (ids and length):
    /// None for acknowledgements and control chunks.
    #[inline]
    pub fn data(&self) -> Option<(u64, u64, u32)> {
        match *self {
            Header::TcpData(h) | Header::Datagram(h) => Some((h.seq, h.dsn, h.len)),
            Header::SctpData(h) => Some((h.offset, h.tsn, h.len)),
            Header::Quic(h) if !h.is_ack => Some((h.offset, h.pn, h.len)),
            Header::TcpAck(_) | Header::SctpSack(_) | Header::SctpControl(_) | Header::Quic(_) => None,
        }
    }

    /// Whether the packet, arriving back at its sender, may free room in the send buffer or
    /// the window (an acknowledgement or a control chunk): the application is then offered
    /// room and the connection polled. Exactly the packets without [`data`](Header::data)
    /// (an arrival asks only this, and `data` for a trace; a test holds the two together).
    #[inline]
    pub fn frees_room(&self) -> bool {
        match self {
            Header::TcpAck(_) | Header::SctpSack(_) | Header::SctpControl(_) => true,
            Header::Quic(h) => h.is_ack,
            Header::TcpData(_) | Header::Datagram(_) | Header::SctpData(_) => false,
        }
    }

    /// The packet's ECN codepoint (acknowledgements and control chunks are Not-ECT, as
    /// RFC 3168 §6.1.4 has pure ACKs).
    #[inline]
    pub fn ecn(&self) -> Ecn {
        match *self {
            Header::TcpData(h) => h.ecn,
            Header::SctpData(h) => h.ecn,
            Header::Quic(h) => h.ecn,
            Header::Datagram(_) | Header::TcpAck(_) | Header::SctpSack(_) | Header::SctpControl(_) => Ecn::NotEct,
        }
    }

    /// A queue marks the packet Congestion Experienced (only called on an ECN-capable one).
    pub fn set_ce(&mut self) {
        match self {
            Header::TcpData(h) => h.ecn = Ecn::Ce,
            Header::SctpData(h) => h.ecn = Ecn::Ce,
            Header::Quic(h) => h.ecn = Ecn::Ce,
            Header::Datagram(_) | Header::TcpAck(_) | Header::SctpSack(_) | Header::SctpControl(_) => {
                debug_assert!(false, "CE on a packet that is not ECN-capable")
            }
        }
    }

    /// A link marks the packet with a congestion warning. Data segments and datagrams carry
    /// the mark; pure ACKs do not (they are not ECN-capable either, RFC 3168 §6.1.4).
    #[inline]
    pub fn set_cw(&mut self) {
        match self {
            Header::TcpData(h) | Header::Datagram(h) => h.cw = true,
            // neither SCTP nor QUIC (whose ECN is not modelled) carries the warning
            Header::TcpAck(_) | Header::SctpData(_) | Header::SctpSack(_) | Header::SctpControl(_) | Header::Quic(_) => {}
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Index of the flow the packet belongs to.
    pub flow: u32,
    /// Route the packet follows and the hop it is on.
    pub route: u32,
    pub hop: u16,
    /// The hop it is on is the last of its route.
    pub last: bool,
    /// Index of the subflow within its flow (0 for plain TCP).
    pub sub: u8,
    /// Bytes on the wire, headers included.
    pub size: u32,
    pub header: Header,
}

/// Slot arena with a free list.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<PacketId>,
}

impl PacketArena {
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = p;
            id
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as PacketId
        }
    }

    pub fn free(&mut self, id: PacketId) {
        self.free.push(id);
    }

    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    /// Packets currently alive (allocated and not freed).
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_stays_small() {
        // 72 bytes until ACKs carried the receiver timestamp (8 more)
        assert!(std::mem::size_of::<Packet>() <= 80, "{}", std::mem::size_of::<Packet>());
    }

    #[test]
    fn a_packet_frees_room_exactly_when_it_brings_no_data() {
        let data = DataHeader::default();
        let quic = QuicHeader::default();
        let headers = [
            Header::TcpData(data),
            Header::TcpAck(AckHeader::new(1, 2)),
            Header::Datagram(data),
            Header::SctpData(SctpDataHeader::default()),
            Header::SctpSack(SctpSackHeader::default()),
            Header::SctpControl(SctpControlHeader { ack: true, sent_at: SimTime::ZERO }),
            Header::Quic(quic),
            Header::Quic(QuicHeader { is_ack: true, ..quic }),
        ];
        for h in headers {
            assert_eq!(h.frees_room(), h.data().is_none(), "{h:?}");
        }
    }

    #[test]
    fn sack_blocks_round_trip_through_offsets() {
        let mut h = AckHeader::new(5_000_000_000, 1 << 20);
        let blocks = [SackBlock { start: 5_000_002_000, end: 5_000_003_000 }, SackBlock { start: 5_000_010_000, end: 5_000_011_460 }];
        for b in blocks {
            assert!(h.push_sack(b));
        }
        assert_eq!(h.sack_blocks().collect::<Vec<_>>(), blocks);
        assert!(h.push_sack(SackBlock { start: 5_000_020_000, end: 5_000_021_000 }));
        assert!(!h.push_sack(SackBlock { start: 5_000_030_000, end: 5_000_031_000 }));
        assert_eq!(AckHeader::new(0, u64::MAX).wnd(), u32::MAX as u64);
    }

    #[test]
    fn feedback_round_trips_and_its_stamp_unwraps() {
        let mut h = AckHeader::new(1000, 1 << 20);
        assert_eq!(h.feedback(SimTime(5)), None);
        // written 3 s before it is read, with the microsecond counter wrapped in between
        let wrote = SimTime((u32::MAX as u64 + 1) * 1_000 * 2 - 1_000_000_000);
        h.set_feedback(Feedback { stamp: wrote, path: 2, rate_bps: 1.5e6 });
        let f = h.feedback(SimTime(wrote.0 + 3_000_000_000)).unwrap();
        assert_eq!((f.stamp, f.path, f.rate_bps), (wrote, 2, 1.5e6));
    }
}
