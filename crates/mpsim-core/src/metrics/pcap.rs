//! Packet captures in the pcap format (nanosecond timestamps, raw IPv4 link type), with the
//! headers a real stack would put on the wire: IPv4, TCP with options (MSS, SACK-permitted,
//! window scale, SACK blocks, Multipath TCP MP_CAPABLE, MP_JOIN and DSS) and UDP, all with
//! valid checksums. Payload bytes are zeros; by default they are not stored and each record
//! keeps the headers only (its captured length is below its length on the wire), which keeps
//! the file small but leaves readers unable to verify transport checksums. With
//! `payload = true` the zeros are stored too.
//!
//! One capture per flow, seen at the sender's interfaces: data segments when they are sent,
//! ACKs when they arrive back. Sequence numbers are offset by a per-subflow initial sequence
//! number.
//!
//! Handshakes. The simulation has no handshake: a TCP or Multipath TCP flow sends its data
//! from its start time (`[[flow]] start`), its sender's first RTT sample and its receiver's
//! RTT already taken from a handshake over the path, and a joining subflow sends from the
//! time the scenario's `join_delay` / `join_at` gives it (`"linux"`: two round trips of its
//! path after the start, SYN, SYN/ACK, ACK and the ACK of that ACK, the first subflow being
//! established at the start). The capture writes each handshake with the timing it has on
//! the path, seen from the sender, and makes room for it in front of the data:
//!
//! * the one-way delays of a path are those the simulation uses for the handshake RTT: the
//!   propagation delay of every link plus the transmission of a header-sized packet at its
//!   rate (`R`, the path's handshake RTT, is the forward one plus the reverse one; it is the
//!   first RTT sample the simulated sender takes);
//! * the capture's clock runs `1 s + L` ahead of the simulation's: a packet sent or received
//!   at simulated time `t` is stamped `1 s + t + L`, the same `L` for every packet of the
//!   capture (the second, `CLOCK_BASE`, keeps a SYN of a flow starting at 0 off the zero
//!   time stamp, which Wireshark takes for no SYN at all: it would show no initial RTT).
//!   The SYN is stamped `1 s + S`, at the flow's start time `S`; the SYN/ACK arrives back
//!   `R0` later (`R0`: the first path's handshake RTT) and the third ACK leaves at that same
//!   instant, so Wireshark's initial RTT is `R0`; the data, which the simulation sends from
//!   `S`, follows from `1 s + S + L`;
//! * for plain TCP `L = R0`: the data starts as the handshake completes;
//! * for Multipath TCP every other subflow `k` joins with an MP_JOIN exchange of four
//!   packets, SYN, SYN/ACK and third ACK (`R_k` after the SYN, the ACK at once) and the
//!   receiver's ACK of that ACK (`2 R_k` after the SYN, RFC 8684 §3.2: the subflow carries
//!   no data before it). The exchange ends when the simulation lets the subflow send (its
//!   join time `J_k` after the start, 0 without `join_delay`) and starts no earlier than
//!   the first subflow's third ACK: `L = max(R0, max over k of (R0 + 2 R_k - J_k))`. With
//!   `join_delay = "linux"` (`J_k = 2 R_k`) this is `R0` and each MP_JOIN SYN leaves as the
//!   first subflow is established; with every subflow sending from the start the data of
//!   all subflows waits for the slowest join (`L = R0 + 2 max R_k`), so the first subflow is
//!   idle for `2 max R_k` after its handshake, and a join on a shorter path is written as
//!   late as it can go (its last ACK when its subflow may send).
//!
//! Nothing of the simulation changes: the gaps between the simulated packets are theirs and
//! every record keeps its order, so the file's timestamps never decrease. A handshake packet
//! is written when the capture's clock reaches it; one that would come after the FIN, or
//! after the last packet of the run, is not written (a subflow whose join time lies beyond
//! the run's end). Each capture has its own `L`: the captures of two flows of one run share
//! a clock only if their `L` are equal (subtract each file's `1 s + L` to compare them with
//! each other or with the simulated time of the trace and series). UDP and SCTP captures
//! have no handshake and no offset: their timestamps are the simulated times.
//!
//! SCTP associations (RFC 4960) are written as SCTP over IPv4 (protocol 132): the common
//! header with the peer's verification tag and the CRC32c checksum of Appendix B, DATA chunks
//! (TSN from a per-association initial TSN, stream 0, SSN, PPID 0, B and E flags: one
//! message per chunk), SACK chunks (cumulative TSN ack, a_rwnd, gap-ack blocks, duplicate
//! TSNs), HEARTBEAT and HEARTBEAT ACK chunks, and, when the association carries timestamps,
//! two chunks of its own: SCTP has no experimental chunk-type range, so they take unassigned
//! types whose two high bits are 10 ("skip and continue" for a receiver that does not know
//! them, RFC 4960 §3.2): type 0xBF (191), the timestamp chunk in front of the DATA chunks
//! (8-byte send time in nanoseconds), and type 0xBE (190), the receive times echoed in a
//! SACK (per packet: its first TSN and its receive time in microseconds modulo 2^32). The
//! CRC covers the zero payload; without `payload = true` a DATA packet is stored up to the
//! end of its last chunk header. No INIT handshake or SHUTDOWN is synthesised.
//!
//! Address plan: flow `f`, subflow (path) `s`: sender 10.(f/256 mod 256).(f mod 256).(2s+1),
//! receiver the same with last octet 2s+2, sender port 49152 + (f mod 16384), receiver port
//! 5001 (a per-flow capture is never ambiguous, and each path of a multipath flow has its own
//! address pair).

use crate::net::{AckHeader, DataHeader, Ecn, Header, SctpDataHeader, SctpSackHeader};
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// What kind of connection a capture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureKind {
    Tcp,
    Mptcp,
    Udp,
    Sctp,
}

/// How a connection's packets are captured: the capture's kind, its MSS, how many
/// subflows (or destinations) it shows, and whether SCTP chunks carry timestamps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureSetup {
    pub kind: CaptureKind,
    pub mss: u32,
    pub paths: usize,
    pub sctp_timestamps: bool,
    /// The routes of each TCP subflow, whose handshakes the capture shows (none for SCTP
    /// and UDP).
    pub routes: Vec<SubflowRoute>,
}

/// Where a TCP subflow's handshake runs: its forward and reverse routes, and when the
/// simulation lets it send (its join; the flow's start or earlier for a subflow that sends
/// from the start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubflowRoute {
    pub fwd: u32,
    pub rev: u32,
    pub join_at: SimTime,
}

/// SCTP chunk types (RFC 4960 §3.2) and the two this simulator adds (see the module notes).
pub const SCTP_DATA: u8 = 0;
pub const SCTP_SACK: u8 = 3;
pub const SCTP_HEARTBEAT: u8 = 4;
pub const SCTP_HEARTBEAT_ACK: u8 = 5;
/// ECN Echo and CWR chunks (RFC 4960 Appendix A).
pub const SCTP_ECNE: u8 = 12;
pub const SCTP_CWR: u8 = 13;
pub const SCTP_TIMESTAMP: u8 = 0xbf;
pub const SCTP_TIMESTAMP_ECHO: u8 = 0xbe;
const IPPROTO_SCTP: u8 = 132;

/// CRC32c (Castagnoli, reflected polynomial 0x82F63B78) lookup table.
const CRC32C: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82f6_3b78 } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// CRC32c of `data` as RFC 4960 Appendix B computes it (initial value all ones, final
/// complement); it goes into the packet least significant byte first.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC32C[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// Where a TCP or Multipath TCP capture's clock puts the simulation's time 0, before the
/// handshake's `L` is added: Wireshark takes a SYN stamped 0 for no SYN at all and then shows
/// no initial RTT.
pub const CLOCK_BASE: Dur = Dur(1_000_000_000);

/// Window scale announced in the handshake: windows are advertised in units of 1 KiB.
pub const WSCALE: u8 = 10;
const LINKTYPE_RAW: u32 = 101;
const PCAP_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// A finished capture: the file's bytes, for flow `flow`.
#[derive(Clone, Debug)]
pub struct PcapFile {
    pub flow: String,
    pub bytes: Vec<u8>,
    /// Packets recorded, and packets left out because the file reached its size limit.
    pub packets: u64,
    pub dropped: u64,
}

/// What the handshake of a subflow takes on its path, as the simulation computes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathTiming {
    /// One-way delays forward (the SYN's) and back (the SYN/ACK's): propagation plus the
    /// transmission of a header-sized packet on every link.
    pub fwd: Dur,
    pub rev: Dur,
    /// When the simulation lets the subflow send, from the flow's start (0 for the first).
    pub join: Dur,
}

impl PathTiming {
    /// The handshake's round trip.
    pub fn rtt(&self) -> Dur {
        self.fwd + self.rev
    }
}

/// Per-subflow wire state.
#[derive(Clone, Debug)]
struct Sub {
    /// Handshake packets written (SYN, SYN/ACK, third ACK and, on an MP_JOIN subflow, the
    /// fourth ACK).
    steps: u8,
    /// Initial sequence numbers of the sender and of the receiver.
    isn: u32,
    peer_isn: u32,
    ip_id: [u16; 2],
}

/// The capture of one flow.
pub struct Capture {
    kind: CaptureKind,
    flow: u32,
    mss: u32,
    /// Multipath TCP keys of the sender (A) and receiver (B), and the join nonces.
    key: [u64; 2],
    subs: Vec<Sub>,
    buf: Vec<u8>,
    limit: u64,
    /// Store the (zero) payload bytes, not only the headers.
    pub payload: bool,
    /// Announce SACK-permitted in the handshakes (false: the flow runs without SACK).
    pub sack: bool,
    /// Negotiate ECN in the handshakes (RFC 3168 §6.1.1: ECE and CWR on the SYN, ECE on the
    /// SYN/ACK).
    pub ecn: bool,
    full: bool,
    /// The FIN (and DATA_FIN) was written: the transfer is over.
    finished: bool,
    /// Packets that did not fit under the limit.
    pub dropped: u64,
    pub packets: u64,
    /// SCTP: the association carries timestamp chunks.
    pub sctp_timestamps: bool,
    /// The capture's clock minus the simulation's (`1 s + L` in the module notes).
    offset: Dur,
    /// Handshake packets not yet written, in the order of their times on the capture's
    /// clock: (time, subflow, step).
    pending: VecDeque<(SimTime, usize, u8)>,
    /// The latest DATA_ACK seen (for the fourth ACK of an MP_JOIN exchange).
    data_ack: u64,
}

/// The parts of an SCTP SACK that travel beside its header (the association's SACK log).
pub struct SctpSackBody<'a> {
    /// Gap-ack blocks as inclusive absolute TSN ranges.
    pub gaps: &'a [(u64, u64)],
    pub dups: &'a [u64],
    /// Echoed timestamps: first TSN of a packet and its receive time.
    pub echoes: &'a [(u64, SimTime)],
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Ones'-complement sum of 16-bit words (not yet folded or inverted).
fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut it = data.chunks_exact(2);
    for w in &mut it {
        acc += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [b] = it.remainder() {
        acc += (*b as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Token (most significant 32 bits) and initial data sequence number (least significant 64
/// bits) of a Multipath TCP key: RFC 8684 §3.1, SHA-256 of the key.
pub fn token_and_idsn(key: u64) -> (u32, u64) {
    let h = sha256(&key.to_be_bytes());
    (u32::from_be_bytes(h[0..4].try_into().unwrap()), u64::from_be_bytes(h[24..32].try_into().unwrap()))
}

/// A TCP segment to encode.
struct Seg<'a> {
    sub: usize,
    /// True from the receiver to the sender.
    rev: bool,
    seq: u32,
    ack: u32,
    flags: u8,
    wnd: u16,
    opts: &'a [u8],
    payload: u32,
    /// The IP header's ECN field.
    ecn: Ecn,
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

impl Capture {
    /// Captures a packet of the flow as its sender sends it: data segments, datagrams, SCTP
    /// DATA and HEARTBEATs. Acknowledgements are captured as they arrive back
    /// ([`arrived`](Self::arrived)).
    pub fn sent(&mut self, t: SimTime, sub: usize, header: &Header) {
        match header {
            Header::TcpData(h) | Header::Datagram(h) => self.data(t, sub, h),
            Header::SctpData(h) => self.sctp_data(t, sub, h),
            Header::SctpControl(h) if !h.ack => self.sctp_heartbeat(t, sub, false, h.sent_at),
            _ => {}
        }
    }

    /// Captures a packet arriving back at the sender: a TCP ACK or a HEARTBEAT ACK (an SCTP
    /// SACK needs its association's record of what it carried: [`sctp_sack`](Self::sctp_sack)).
    pub fn arrived(&mut self, t: SimTime, sub: usize, header: &Header) {
        match header {
            Header::TcpAck(h) => self.ack(t, sub, h),
            Header::SctpControl(h) if h.ack => self.sctp_heartbeat(t, sub, true, h.sent_at),
            _ => {}
        }
    }

    /// The capture of flow `flow`'s connection as `setup` describes it, holding at most
    /// `limit` bytes.
    pub fn with_setup(setup: &CaptureSetup, flow: u32, seed: u64, limit: u64) -> Capture {
        let mut c = Capture::new(setup.kind, flow, setup.paths, setup.mss, seed, limit);
        c.sctp_timestamps = setup.sctp_timestamps;
        c
    }

    /// A capture of flow `flow` with `n_subs` subflows, holding at most `limit` bytes.
    pub fn new(kind: CaptureKind, flow: u32, n_subs: usize, mss: u32, seed: u64, limit: u64) -> Capture {
        let base = mix(seed ^ mix(flow as u64 + 1));
        let subs = (0..n_subs)
            .map(|s| Sub {
                steps: 0,
                isn: mix(base ^ (2 * s as u64 + 1)) as u32,
                peer_isn: mix(base ^ (2 * s as u64 + 2)) as u32,
                ip_id: [mix(base ^ (s as u64) << 40) as u16, mix(base ^ (s as u64) << 41) as u16],
            })
            .collect();
        let mut c = Capture {
            kind,
            flow,
            mss,
            key: [mix(base ^ 0xa), mix(base ^ 0xb)],
            subs,
            buf: Vec::new(),
            limit,
            payload: false,
            sack: true,
            ecn: false,
            full: false,
            finished: false,
            dropped: 0,
            packets: 0,
            sctp_timestamps: false,
            offset: Dur::ZERO,
            pending: VecDeque::new(),
            data_ack: 0,
        };
        c.buf.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        c.buf.extend_from_slice(&2u16.to_le_bytes());
        c.buf.extend_from_slice(&4u16.to_le_bytes());
        c.buf.extend_from_slice(&0i32.to_le_bytes());
        c.buf.extend_from_slice(&0u32.to_le_bytes());
        c.buf.extend_from_slice(&262_144u32.to_le_bytes());
        c.buf.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        debug_assert_eq!(c.buf.len(), PCAP_HEADER);
        c
    }

    /// The pcap file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// True once a packet was refused because the capture reached its size limit.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// The finished file of flow `name`.
    pub fn into_file(self, name: String) -> PcapFile {
        PcapFile { flow: name, bytes: self.buf, packets: self.packets, dropped: self.dropped }
    }

    pub fn kind(&self) -> CaptureKind {
        self.kind
    }

    /// The capture's clock minus the simulation's: a packet at simulated time `t` is stamped
    /// `t + offset` (`CLOCK_BASE + L`, see the module notes; 0 until handshakes are planned).
    pub fn offset(&self) -> Dur {
        self.offset
    }

    /// Times the handshakes of a TCP or Multipath TCP flow that starts at `start`, one entry
    /// of `paths` per subflow, and sets the capture's clock (see the module notes). Call it
    /// before the first packet; without it a subflow's handshake is written whole at the
    /// time of its first packet. Does nothing for UDP and SCTP.
    pub fn plan_handshakes(&mut self, start: SimTime, paths: &[PathTiming]) {
        if !matches!(self.kind, CaptureKind::Tcp | CaptureKind::Mptcp) || paths.len() != self.subs.len() {
            return;
        }
        debug_assert_eq!(self.packets + self.dropped, 0, "handshakes are planned before the first packet");
        let r0 = paths[0].rtt();
        let joins = if self.kind == CaptureKind::Mptcp { &paths[1..] } else { &[][..] };
        // the data of subflow k may follow from S + J_k + L, its MP_JOIN exchange takes 2 R_k
        // and starts no earlier than the first subflow's third ACK, at S + R0
        let lead = joins.iter().map(|p| (r0 + p.rtt() + p.rtt()).saturating_sub(p.join)).fold(r0, Dur::max);
        self.offset = CLOCK_BASE + lead;
        // the flow's start on the capture's clock
        let start = start + CLOCK_BASE;
        let mut plan = vec![(start, 0, 0), (start + r0, 0, 1), (start + r0, 0, 2)];
        for (i, p) in joins.iter().enumerate() {
            let end = start + p.join + lead;
            let syn = SimTime(end.0.saturating_sub((p.rtt() + p.rtt()).0));
            debug_assert!(syn >= start + r0);
            plan.extend([(syn, i + 1, 0), (syn + p.rtt(), i + 1, 1), (syn + p.rtt(), i + 1, 2), (end, i + 1, 3)]);
        }
        // by time; at one instant, a subflow's packets in their order, the first subflow first
        plan.sort_by_key(|&(t, sub, step)| (t, sub, step));
        self.pending = plan.into();
    }

    /// The time on the capture's clock of simulated time `t`, after writing the handshake
    /// packets due by then.
    fn clock(&mut self, t: SimTime) -> SimTime {
        let t = t + self.offset;
        while let Some(&(at, sub, step)) = self.pending.front() {
            if at > t {
                break;
            }
            self.pending.pop_front();
            self.handshake_packet(at, sub, step);
        }
        t
    }

    /// Handshake packets of subflow `sub`: 4 for an MP_JOIN exchange, 3 otherwise.
    fn handshake_len(&self, sub: usize) -> u8 {
        if self.kind == CaptureKind::Mptcp && sub > 0 {
            4
        } else {
            3
        }
    }

    /// The handshake of subflow `sub` has finished (its third ACK is written).
    fn established(&self, sub: usize) -> bool {
        self.subs[sub].steps >= 3
    }

    /// Before a packet of subflow `sub` at `t` (capture clock): the rest of its handshake, at
    /// `t`, if it is not written yet (only when the handshakes were not planned).
    fn open(&mut self, t: SimTime, sub: usize) {
        if self.subs[sub].steps >= self.handshake_len(sub) {
            return;
        }
        self.pending.retain(|&(_, s, _)| s != sub);
        for step in self.subs[sub].steps..self.handshake_len(sub) {
            self.handshake_packet(t, sub, step);
        }
    }

    fn addrs(&self, sub: usize) -> ([u8; 4], [u8; 4], u16, u16) {
        let f = self.flow;
        let (a, b) = ((f >> 8) as u8, f as u8);
        let s = (sub as u8).wrapping_mul(2);
        ([10, a, b, s.wrapping_add(1)], [10, a, b, s.wrapping_add(2)], 49152 + (f % 16384) as u16, 5001)
    }

    fn idsn(&self, who: usize) -> u64 {
        token_and_idsn(self.key[who]).1
    }

    /// Appends one IPv4 packet with the given transport header and a zero payload of
    /// `payload` bytes (not stored), its ECN field `ecn`.
    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, t: SimTime, sub: usize, rev: bool, proto: u8, l4: &mut [u8], payload: u32, ecn: Ecn) {
        let (mut src, mut dst, ..) = self.addrs(sub);
        if rev {
            std::mem::swap(&mut src, &mut dst);
        }
        let l4_len = l4.len() as u32 + payload;
        let caplen = if self.payload { (20 + l4_len).min(0xffff) as usize } else { 20 + l4.len() };
        if !self.fits(caplen) {
            return;
        }
        // transport checksum over the pseudo-header, the header and the (zero) payload
        let mut acc = sum16(&src, 0);
        acc = sum16(&dst, acc);
        acc += proto as u32 + (l4_len & 0xffff) + (l4_len >> 16);
        let off = if proto == 6 { 16 } else { 6 };
        l4[off] = 0;
        l4[off + 1] = 0;
        let mut c = fold(sum16(l4, acc));
        if proto == 17 && c == 0 {
            c = 0xffff;
        }
        l4[off..off + 2].copy_from_slice(&c.to_be_bytes());
        self.write(t, sub, rev, (proto, ecn), l4, l4_len, caplen);
    }

    /// Room for a record of `caplen` stored bytes under the limit; counts it either way.
    fn fits(&mut self, caplen: usize) -> bool {
        if self.full || (self.buf.len() + RECORD_HEADER + caplen) as u64 > self.limit {
            self.full = true;
            self.dropped += 1;
            return false;
        }
        self.packets += 1;
        true
    }

    /// Writes the record: IPv4 header (protocol and ECN field `ip`), the stored transport
    /// bytes `l4` and zeros up to `caplen` stored bytes; `l4_len` is the transport length on
    /// the wire.
    #[allow(clippy::too_many_arguments)]
    fn write(&mut self, t: SimTime, sub: usize, rev: bool, ip: (u8, Ecn), l4: &[u8], l4_len: u32, caplen: usize) {
        let (proto, ecn) = ip;
        let (mut src, mut dst, ..) = self.addrs(sub);
        if rev {
            std::mem::swap(&mut src, &mut dst);
        }
        let total = 20 + l4_len;
        let id = &mut self.subs[sub].ip_id[rev as usize];
        *id = id.wrapping_add(1);
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = ecn as u8;
        ip[2..4].copy_from_slice(&(total.min(0xffff) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&id.to_be_bytes());
        ip[6] = 0x40; // don't fragment
        ip[8] = 64;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let c = fold(sum16(&ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let b = &mut self.buf;
        b.extend_from_slice(&((t.0 / 1_000_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&((t.0 % 1_000_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&(caplen as u32).to_le_bytes());
        b.extend_from_slice(&(total.min(0xffff)).to_le_bytes());
        b.extend_from_slice(&ip);
        let keep = l4.len().min(caplen - 20);
        b.extend_from_slice(&l4[..keep]);
        b.resize(b.len() + caplen - 20 - keep, 0);
    }

    // ------------------------------------------------------------------------- SCTP

    /// Verification tag of the side that receives a packet (`rev`: the sender's).
    fn vtag(&self, rev: bool) -> u32 {
        (mix(self.key[!rev as usize] ^ 0x7a67) as u32).max(1)
    }

    /// The wire TSN of the simulator's TSN `tsn` (the first is 1).
    fn wire_tsn(&self, tsn: u64) -> u32 {
        (mix(self.key[0] ^ 0x74_736e) as u32).wrapping_add(tsn.wrapping_sub(1) as u32)
    }

    /// Writes an SCTP packet: common header and `chunks` (the full packet, zero payloads
    /// included), stored up to `keep` bytes of SCTP (all with `payload = true`).
    #[allow(clippy::too_many_arguments)]
    fn sctp(&mut self, t: SimTime, sub: usize, rev: bool, chunks: &[u8], keep: usize, ecn: Ecn) {
        let (_, _, sport, dport) = self.addrs(sub);
        let (sp, dp) = if rev { (dport, sport) } else { (sport, dport) };
        let mut p = Vec::with_capacity(12 + chunks.len());
        p.extend_from_slice(&sp.to_be_bytes());
        p.extend_from_slice(&dp.to_be_bytes());
        p.extend_from_slice(&self.vtag(rev).to_be_bytes());
        p.extend_from_slice(&[0; 4]);
        p.extend_from_slice(chunks);
        let crc = crc32c(&p);
        p[8..12].copy_from_slice(&crc.to_le_bytes());
        let l4_len = p.len() as u32;
        let keep = if self.payload { p.len() } else { (12 + keep).min(p.len()) };
        let caplen = (20 + keep).min(0xffff);
        if !self.fits(caplen) {
            return;
        }
        self.write(t, sub, rev, (IPPROTO_SCTP, ecn), &p[..keep], l4_len, caplen);
    }

    /// An SCTP DATA packet to destination `sub` sent at `t`: `h.chunks` chunks of
    /// consecutive TSNs, all but the last of `self.mss` bytes.
    pub fn sctp_data(&mut self, t: SimTime, sub: usize, h: &SctpDataHeader) {
        let mut c = Vec::new();
        if let Some(tsn) = h.cwr {
            c.extend_from_slice(&[SCTP_CWR, 0, 0, 8]);
            c.extend_from_slice(&self.wire_tsn(tsn).to_be_bytes());
        }
        if self.sctp_timestamps {
            c.extend_from_slice(&[SCTP_TIMESTAMP, 0, 0, 12]);
            c.extend_from_slice(&t.0.to_be_bytes());
        }
        let mut left = h.len;
        let mut last_header = 0;
        for k in 0..h.chunks.max(1) as u64 {
            let len = if k + 1 == h.chunks.max(1) as u64 { left } else { self.mss.min(left) };
            left -= len;
            let tsn = h.tsn + k;
            last_header = c.len() + 16;
            c.extend_from_slice(&[SCTP_DATA, 0x03]);
            c.extend_from_slice(&((16 + len) as u16).to_be_bytes());
            c.extend_from_slice(&self.wire_tsn(tsn).to_be_bytes());
            c.extend_from_slice(&0u16.to_be_bytes()); // stream 0
            c.extend_from_slice(&(tsn.wrapping_sub(1) as u16).to_be_bytes()); // SSN
            c.extend_from_slice(&0u32.to_be_bytes()); // PPID
            c.resize(c.len() + len.div_ceil(4) as usize * 4, 0);
        }
        self.sctp(t, sub, false, &c, last_header, h.ecn);
    }

    /// An SCTP SACK arriving at the sender on path `sub` at `t`.
    pub fn sctp_sack(&mut self, t: SimTime, sub: usize, h: &SctpSackHeader, body: &SctpSackBody) {
        let cum = self.wire_tsn(h.cum_tsn);
        let mut c = Vec::new();
        let len = 16 + 4 * (body.gaps.len() + body.dups.len());
        c.extend_from_slice(&[SCTP_SACK, 0]);
        c.extend_from_slice(&(len as u16).to_be_bytes());
        c.extend_from_slice(&cum.to_be_bytes());
        c.extend_from_slice(&h.a_rwnd.to_be_bytes());
        c.extend_from_slice(&(body.gaps.len() as u16).to_be_bytes());
        c.extend_from_slice(&(body.dups.len() as u16).to_be_bytes());
        for &(s, e) in body.gaps {
            c.extend_from_slice(&(s.wrapping_sub(h.cum_tsn) as u16).to_be_bytes());
            c.extend_from_slice(&(e.wrapping_sub(h.cum_tsn) as u16).to_be_bytes());
        }
        for &d in body.dups {
            c.extend_from_slice(&self.wire_tsn(d).to_be_bytes());
        }
        if self.sctp_timestamps {
            c.extend_from_slice(&[SCTP_TIMESTAMP_ECHO, 0]);
            c.extend_from_slice(&((4 + 8 * body.echoes.len()) as u16).to_be_bytes());
            for &(tsn, at) in body.echoes {
                c.extend_from_slice(&self.wire_tsn(tsn).to_be_bytes());
                c.extend_from_slice(&((at.0 / 1_000) as u32).to_be_bytes());
            }
        }
        if let Some(tsn) = h.ecne {
            c.extend_from_slice(&[SCTP_ECNE, 0, 0, 8]);
            c.extend_from_slice(&self.wire_tsn(tsn).to_be_bytes());
        }
        let n = c.len();
        self.sctp(t, sub, true, &c, n, Ecn::NotEct);
    }

    /// A HEARTBEAT to destination `sub` (`ack` false, at the send) or its HEARTBEAT ACK
    /// (arriving back): the heartbeat information carries the send time and the destination.
    pub fn sctp_heartbeat(&mut self, t: SimTime, sub: usize, ack: bool, sent_at: SimTime) {
        let mut c = Vec::with_capacity(24);
        c.extend_from_slice(&[if ack { SCTP_HEARTBEAT_ACK } else { SCTP_HEARTBEAT }, 0, 0, 24]);
        c.extend_from_slice(&[0, 1, 0, 20]); // heartbeat info parameter
        c.extend_from_slice(&sent_at.0.to_be_bytes());
        c.extend_from_slice(&(sub as u64).to_be_bytes());
        self.sctp(t, sub, ack, &c, 24, Ecn::NotEct);
    }

    fn tcp(&mut self, t: SimTime, s: Seg) {
        let (_, _, sport, dport) = self.addrs(s.sub);
        let (sp, dp) = if s.rev { (dport, sport) } else { (sport, dport) };
        let mut opts = s.opts.to_vec();
        while !opts.len().is_multiple_of(4) {
            opts.insert(0, 1); // NOP padding in front keeps the options aligned
        }
        debug_assert!(opts.len() <= 40);
        let mut h = vec![0u8; 20 + opts.len()];
        h[0..2].copy_from_slice(&sp.to_be_bytes());
        h[2..4].copy_from_slice(&dp.to_be_bytes());
        h[4..8].copy_from_slice(&s.seq.to_be_bytes());
        h[8..12].copy_from_slice(&s.ack.to_be_bytes());
        h[12] = ((h.len() / 4) as u8) << 4;
        h[13] = s.flags;
        h[14..16].copy_from_slice(&s.wnd.to_be_bytes());
        h[20..].copy_from_slice(&opts);
        self.record(t, s.sub, s.rev, 6, &mut h, s.payload, s.ecn);
    }

    /// Packet `step` of the handshake of subflow `sub` at `t` (capture clock): the SYN, the
    /// SYN/ACK as it arrives back, the third ACK and, closing an MP_JOIN exchange, the
    /// receiver's ACK of that ACK as it arrives back.
    fn handshake_packet(&mut self, t: SimTime, sub: usize, step: u8) {
        let (isn, peer) = (self.subs[sub].isn, self.subs[sub].peer_isn);
        let mss = (self.mss.min(0xffff) as u16).to_be_bytes();
        // SYN and SYN/ACK: MSS; SACK-permitted unless the flow runs without SACK (a NOP pair
        // in its place); NOP and window scale
        let sack_perm = if self.sack { [4, 2] } else { [1, 1] };
        let mut opts = Vec::new();
        if step < 2 {
            opts.extend_from_slice(&[2, 4, mss[0], mss[1], sack_perm[0], sack_perm[1], 1, 3, 3, WSCALE]);
        }
        if self.kind == CaptureKind::Mptcp {
            let (ka, kb) = (self.key[0].to_be_bytes(), self.key[1].to_be_bytes());
            let id = sub as u8;
            let ra = mix(self.key[0] ^ sub as u64) as u32;
            let rb = mix(self.key[1] ^ sub as u64) as u32;
            match (sub, step) {
                // MP_CAPABLE v1, HMAC-SHA256, no DSS checksum
                (0, 0) => opts.extend_from_slice(&[30, 4, 0x01, 0x01]),
                (0, 1) => {
                    opts.extend_from_slice(&[30, 12, 0x01, 0x01]);
                    opts.extend_from_slice(&kb);
                }
                (0, _) => {
                    opts.extend_from_slice(&[30, 20, 0x01, 0x01]);
                    opts.extend_from_slice(&ka);
                    opts.extend_from_slice(&kb);
                }
                (_, 0) => {
                    let (token_b, _) = token_and_idsn(self.key[1]);
                    opts.extend_from_slice(&[30, 12, 0x10, id]);
                    opts.extend_from_slice(&token_b.to_be_bytes());
                    opts.extend_from_slice(&ra.to_be_bytes());
                }
                (_, 1) => {
                    let mac_b = hmac_sha256(&[kb, ka].concat(), &[rb.to_be_bytes(), ra.to_be_bytes()].concat());
                    opts.extend_from_slice(&[30, 16, 0x10, id]);
                    opts.extend_from_slice(&mac_b[..8]);
                    opts.extend_from_slice(&rb.to_be_bytes());
                }
                (_, 2) => {
                    let mac_a = hmac_sha256(&[ka, kb].concat(), &[ra.to_be_bytes(), rb.to_be_bytes()].concat());
                    opts.extend_from_slice(&[30, 24, 0x10, 0]);
                    opts.extend_from_slice(&mac_a[..20]);
                }
                // the fourth ACK: a DSS with the connection's DATA_ACK
                _ => {
                    opts.extend_from_slice(&[30, 12, 0x20, 0x03]);
                    opts.extend_from_slice(&self.idsn(0).wrapping_add(1).wrapping_add(self.data_ack).to_be_bytes());
                }
            }
        }
        let w = (0xffffu32 >> WSCALE).max(1) as u16;
        let (isn1, peer1) = (isn.wrapping_add(1), peer.wrapping_add(1));
        // an ECN-setup SYN and SYN/ACK (RFC 3168 §6.1.1); neither is ECT itself
        let (syn_ecn, synack_ecn) = if self.ecn { (ECE | CWR, ECE) } else { (0, 0) };
        let ecn = Ecn::NotEct;
        let seg = match step {
            0 => Seg { sub, rev: false, seq: isn, ack: 0, flags: SYN | syn_ecn, wnd: 0xffff, opts: &opts, payload: 0, ecn },
            1 => Seg { sub, rev: true, seq: peer, ack: isn1, flags: SYN | ACK | synack_ecn, wnd: 0xffff, opts: &opts, payload: 0, ecn },
            2 => Seg { sub, rev: false, seq: isn1, ack: peer1, flags: ACK, wnd: w, opts: &opts, payload: 0, ecn },
            _ => Seg { sub, rev: true, seq: peer1, ack: isn1, flags: ACK, wnd: w, opts: &opts, payload: 0, ecn },
        };
        self.tcp(t, seg);
        self.subs[sub].steps = step + 1;
    }

    /// A data segment (or datagram) of subflow `sub` sent at `t`.
    pub fn data(&mut self, t: SimTime, sub: usize, h: &DataHeader) {
        if self.kind == CaptureKind::Udp {
            let (_, _, sp, dp) = self.addrs(sub);
            let mut u = [0u8; 8];
            u[0..2].copy_from_slice(&sp.to_be_bytes());
            u[2..4].copy_from_slice(&dp.to_be_bytes());
            u[4..6].copy_from_slice(&((8 + h.len).min(0xffff) as u16).to_be_bytes());
            self.record(t, sub, false, 17, &mut u, h.len, h.ecn);
            return;
        }
        let t = self.clock(t);
        self.open(t, sub);
        let st = &self.subs[sub];
        let (seq, ack) = (st.isn.wrapping_add(1).wrapping_add(h.seq as u32), st.peer_isn.wrapping_add(1));
        let mut opts = Vec::new();
        if self.kind == CaptureKind::Mptcp {
            // DSS: mapping with an 8-octet data sequence number, relative subflow sequence
            // number (the first data byte is 1) and data-level length
            opts.extend_from_slice(&[30, 18, 0x20, 0x0c]);
            opts.extend_from_slice(&self.idsn(0).wrapping_add(1).wrapping_add(h.dsn).to_be_bytes());
            opts.extend_from_slice(&(h.seq as u32).wrapping_add(1).to_be_bytes());
            opts.extend_from_slice(&(h.len.min(0xffff) as u16).to_be_bytes());
        }
        let w = (0xffffu32 >> WSCALE).max(1) as u16;
        let flags = ACK | PSH | if h.cwr { CWR } else { 0 };
        self.tcp(t, Seg { sub, rev: false, seq, ack, flags, wnd: w, opts: &opts, payload: h.len, ecn: h.ecn });
    }

    /// An ACK of subflow `sub` arriving at the sender at `t`.
    pub fn ack(&mut self, t: SimTime, sub: usize, h: &AckHeader) {
        let t = self.clock(t);
        self.open(t, sub);
        self.data_ack = self.data_ack.max(h.data_ack);
        let st = &self.subs[sub];
        let (seq, ack) = (st.peer_isn.wrapping_add(1), st.isn.wrapping_add(1).wrapping_add(h.ack as u32));
        let isn1 = st.isn.wrapping_add(1);
        let mut opts = Vec::new();
        if self.kind == CaptureKind::Mptcp {
            opts.extend_from_slice(&[30, 12, 0x20, 0x03]);
            opts.extend_from_slice(&self.idsn(0).wrapping_add(1).wrapping_add(h.data_ack).to_be_bytes());
        }
        let n = h.n_sack();
        if n > 0 {
            let room = (40 - opts.len() - 2) / 8;
            let blocks: Vec<_> = h.sack_blocks().take(room).collect();
            opts.push(5);
            opts.push(2 + 8 * blocks.len() as u8);
            for b in blocks {
                opts.extend_from_slice(&isn1.wrapping_add(b.start as u32).to_be_bytes());
                opts.extend_from_slice(&isn1.wrapping_add(b.end as u32).to_be_bytes());
            }
        }
        let w = (h.wnd() >> WSCALE).min(0xffff) as u16;
        let flags = ACK | if h.ece() { ECE } else { 0 };
        self.tcp(t, Seg { sub, rev: true, seq, ack, flags, wnd: w, opts: &opts, payload: 0, ecn: Ecn::NotEct });
    }

    /// A FIN from the sender on every established subflow (with DATA_FIN on Multipath
    /// TCP), at simulated time `t`; handshake packets due after it are never written.
    /// Writes it once; later calls do nothing.
    pub fn finish(&mut self, t: SimTime, next_seq: &[u64], next_dsn: u64) {
        if self.kind == CaptureKind::Udp || self.finished {
            return;
        }
        self.finished = true;
        let t = self.clock(t);
        self.pending.clear();
        for sub in 0..self.subs.len() {
            if !self.established(sub) {
                continue;
            }
            let st = &self.subs[sub];
            let s = next_seq.get(sub).copied().unwrap_or(0);
            let (seq, ack) = (st.isn.wrapping_add(1).wrapping_add(s as u32), st.peer_isn.wrapping_add(1));
            let mut opts = Vec::new();
            if self.kind == CaptureKind::Mptcp {
                // DSS with DATA_FIN: a mapping of length 1 with subflow sequence number 0
                opts.extend_from_slice(&[30, 18, 0x20, 0x1c]);
                opts.extend_from_slice(&self.idsn(0).wrapping_add(1).wrapping_add(next_dsn).to_be_bytes());
                opts.extend_from_slice(&0u32.to_be_bytes());
                opts.extend_from_slice(&1u16.to_be_bytes());
            }
            let w = (0xffffu32 >> WSCALE).max(1) as u16;
            self.tcp(t, Seg { sub, rev: false, seq, ack, flags: ACK | FIN, wnd: w, opts: &opts, payload: 0, ecn: Ecn::NotEct });
        }
    }
}

// ----- SHA-256 (FIPS 180-4) and HMAC (RFC 2104), for MPTCP tokens and join MACs -----

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

pub fn sha256(msg: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut data = msg.to_vec();
    data.push(0x80);
    while data.len() % 64 != 56 {
        data.push(0);
    }
    data.extend_from_slice(&((msg.len() as u64) * 8).to_be_bytes());
    for block in data.chunks_exact(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[4 * i..4 * i + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&sha256(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).chain(msg.iter().copied()).collect();
    let ih = sha256(&inner);
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).chain(ih.iter().copied()).collect();
    sha256(&outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::SackBlock;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_and_hmac_known_answers() {
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        // RFC 4231 test case 2
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// Walks the records of a capture: (caplen, orig_len, packet bytes).
    fn records(b: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        assert_eq!(&b[0..4], &0xa1b2_3c4du32.to_le_bytes());
        let mut out = Vec::new();
        let mut i = PCAP_HEADER;
        while i < b.len() {
            let cap = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap());
            let len = u32::from_le_bytes(b[i + 12..i + 16].try_into().unwrap());
            out.push((cap, len, b[i + 16..i + 16 + cap as usize].to_vec()));
            i += 16 + cap as usize;
        }
        assert_eq!(i, b.len());
        out
    }

    /// Checks IPv4 and transport checksums (the missing payload is zeros).
    fn checksums_ok(p: &[u8], orig: u32) -> bool {
        let ip_ok = fold(sum16(&p[..20], 0)) == 0;
        let l4_len = orig - 20;
        let mut acc = sum16(&p[12..20], 0);
        acc += p[9] as u32 + l4_len;
        ip_ok && fold(sum16(&p[20..], acc)) == 0
    }

    #[test]
    fn tcp_segments_have_valid_checksums_handshake_and_sack() {
        let mut c = Capture::new(CaptureKind::Mptcp, 3, 2, 1448, 7, 1 << 30);
        let d = DataHeader {
            seq: 0,
            dsn: 0,
            sent_at: SimTime(5),
            len: 1448,
            retx: false,
            psh: false,
            cw: false,
            ecn: Ecn::NotEct,
            cwr: false,
            echo: SimTime::ZERO,
        };
        c.data(SimTime(1_000_000), 0, &d);
        c.data(SimTime(1_000_100), 1, &DataHeader { seq: 0, dsn: 1448, ..d });
        let mut a = AckHeader::new(1448, 1 << 20);
        a.push_sack(SackBlock { start: 2896, end: 4344 });
        c.ack(SimTime(2_000_000), 0, &a);
        c.finish(SimTime(3_000_000), &[1448, 1448], 2896);
        let r = records(c.bytes());
        // a handshake of 3 and an MP_JOIN exchange of 4 (unplanned: at the first packet),
        // 2 data, 1 ack, 2 FINs
        assert_eq!(r.len(), 12);
        for (cap, len, p) in &r {
            assert!(checksums_ok(p, *len), "bad checksum");
            assert!(cap <= len);
        }
        // the data segment stores headers only: 20 IP + 20 TCP + 20 options (DSS 18 + pad)
        assert_eq!((r[3].0, r[3].1), (60, 60 + 1448));
        // SYN of the second subflow carries MP_JOIN with the receiver's token
        let join = &r[4].2;
        assert_eq!(join[33], SYN);
        let (token, _) = token_and_idsn(c.key[1]);
        assert!(join.windows(4).any(|w| w == token.to_be_bytes()));
        // the fourth ACK of the MP_JOIN exchange comes from the receiver
        assert_eq!((r[7].2[33], &r[7].2[12..16]), (ACK, &[10, 0, 3, 4][..]));
        // the ACK acknowledges ISN + 1 + 1448
        let ack = &r[9].2;
        let isn = c.subs[0].isn;
        assert_eq!(u32::from_be_bytes(ack[28..32].try_into().unwrap()), isn.wrapping_add(1449));
    }

    /// Timestamps of the records of a capture, on its clock.
    fn times(b: &[u8]) -> Vec<SimTime> {
        let mut out = Vec::new();
        let mut i = PCAP_HEADER;
        while i < b.len() {
            let sec = u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64;
            let ns = u32::from_le_bytes(b[i + 4..i + 8].try_into().unwrap()) as u64;
            out.push(SimTime(sec * 1_000_000_000 + ns));
            i += RECORD_HEADER + u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
        }
        out
    }

    /// A TCP record's (time, source address, flags).
    fn tcp_rows(b: &[u8]) -> Vec<(SimTime, [u8; 4], u8)> {
        times(b).into_iter().zip(records(b)).map(|(t, (_, _, p))| (t, p[12..16].try_into().unwrap(), p[33])).collect()
    }

    fn non_decreasing(t: &[SimTime]) -> bool {
        t.windows(2).all(|w| w[0] <= w[1])
    }

    fn data(seq: u64) -> DataHeader {
        DataHeader {
            seq,
            dsn: seq,
            sent_at: SimTime::ZERO,
            len: 1448,
            retx: false,
            psh: false,
            cw: false,
            ecn: Ecn::NotEct,
            cwr: false,
            echo: SimTime::ZERO,
        }
    }

    #[test]
    fn a_tcp_handshake_takes_the_paths_round_trip_before_the_data() {
        let start = SimTime(500_000_000);
        let (fwd, rev) = (Dur(10_032_000), Dur(12_032_000));
        let mut c = Capture::new(CaptureKind::Tcp, 0, 1, 1448, 7, 1 << 30);
        c.plan_handshakes(start, &[PathTiming { fwd, rev, join: Dur::ZERO }]);
        let rtt = fwd + rev;
        assert_eq!(c.offset(), CLOCK_BASE + rtt);
        // the simulation sends from the flow's start; its first ACK one round trip later
        c.data(start, 0, &data(0));
        c.data(start, 0, &data(1448));
        c.ack(start + rtt, 0, &AckHeader::new(2896, 1 << 20));
        let rows = tcp_rows(c.bytes());
        assert_eq!(rows.len(), 6);
        let (syn, synack, third) = (rows[0], rows[1], rows[2]);
        assert_eq!((syn.2, synack.2, third.2), (SYN, SYN | ACK, ACK));
        // (the capture's clock puts the simulation's time 0 at CLOCK_BASE)
        assert_eq!(syn.0, start + CLOCK_BASE, "the SYN leaves at the flow's start");
        assert_eq!(synack.0 - syn.0, rtt, "the SYN/ACK arrives back one round trip later");
        assert_eq!(synack.1, [10, 0, 0, 2]);
        assert_eq!(third.0, synack.0, "the third ACK leaves as the SYN/ACK arrives");
        // the data follows the handshake, the gaps between simulated packets unchanged
        assert_eq!(rows[3].0, start + CLOCK_BASE + rtt);
        assert_eq!(rows[5].0 - rows[3].0, rtt);
        assert!(non_decreasing(&times(c.bytes())));
    }

    #[test]
    fn mp_joins_follow_the_first_subflows_handshake() {
        let ms = Dur::from_millis;
        let start = SimTime::ZERO;
        // the first path 20 ms, the others 60 ms (joining at the start) and 10 ms (joining
        // after two of its round trips, as Linux's path manager)
        let paths = [
            PathTiming { fwd: ms(10), rev: ms(10), join: Dur::ZERO },
            PathTiming { fwd: ms(25), rev: ms(35), join: Dur::ZERO },
            PathTiming { fwd: ms(5), rev: ms(5), join: ms(20) },
        ];
        let mut c = Capture::new(CaptureKind::Mptcp, 2, 3, 1448, 9, 1 << 30);
        c.plan_handshakes(start, &paths);
        // the data of the 60 ms subflow waits for its MP_JOIN exchange after the first
        // subflow's handshake: 20 + 2 x 60 ms
        assert_eq!(c.offset(), CLOCK_BASE + ms(140));
        // the simulation: the first two subflows send from the start, the third from 20 ms
        c.data(start, 0, &data(0));
        c.data(start, 1, &data(0));
        c.ack(start + ms(20), 0, &AckHeader::new(1448, 1 << 20));
        c.data(start + ms(20), 2, &data(0));
        c.ack(start + ms(30), 2, &AckHeader::new(1448, 1 << 20));
        c.ack(start + ms(60), 1, &AckHeader::new(1448, 1 << 20));
        let rows = tcp_rows(c.bytes());
        assert!(non_decreasing(&times(c.bytes())), "{rows:?}");
        let of = |sub: u8| rows.iter().filter(move |r| r.1[3] == 2 * sub + 1 || r.1[3] == 2 * sub + 2).copied().collect::<Vec<_>>();
        let (s0, s1, s2) = (of(0), of(1), of(2));
        assert_eq!((s0.len(), s1.len(), s2.len()), (3 + 2, 4 + 2, 4 + 2));
        // the first subflow: SYN at the start, SYN/ACK and third ACK one round trip later
        let base = start + CLOCK_BASE;
        assert_eq!((s0[0].0, s0[0].2), (base, SYN));
        assert_eq!((s0[1].0 - s0[0].0, s0[1].2), (ms(20), SYN | ACK));
        assert_eq!((s0[2].0, s0[2].2), (s0[1].0, ACK));
        let up = s0[2].0;
        for (s, p) in [(&s1, paths[1]), (&s2, paths[2])] {
            // SYN, SYN/ACK a round trip later with the ACK at once, the receiver's ACK of
            // that ACK another round trip later, then the subflow's data
            assert!(s[0].0 >= up, "an MP_JOIN starts once the first subflow is established");
            assert_eq!([s[0].2, s[1].2, s[2].2, s[3].2, s[4].2], [SYN, SYN | ACK, ACK, ACK, ACK | PSH]);
            assert_eq!(s[1].0 - s[0].0, p.rtt());
            assert_eq!(s[2].0, s[1].0);
            assert_eq!(s[3].0 - s[2].0, p.rtt());
            assert_eq!(s[4].0, start + p.join + c.offset(), "the exchange ends when the subflow may send");
        }
        // the slowest join begins as the first subflow is up, the other as late as it can go
        assert_eq!(s1[0].0, up);
        assert_eq!(s2[0].0, base + ms(140), "20 + 140 - 2 x 10 ms");
        // the data of the first subflow waits for the slowest join
        assert_eq!(s0[3].0, base + ms(140));
    }

    #[test]
    fn handshakes_after_the_fin_are_not_written() {
        let ms = Dur::from_millis;
        let paths = [PathTiming { fwd: ms(10), rev: ms(10), join: Dur::ZERO }, PathTiming { fwd: ms(10), rev: ms(10), join: ms(5_000) }];
        let mut c = Capture::new(CaptureKind::Mptcp, 0, 2, 1448, 1, 1 << 30);
        c.plan_handshakes(SimTime::ZERO, &paths);
        assert_eq!(c.offset(), CLOCK_BASE + ms(20));
        c.data(SimTime::ZERO, 0, &data(0));
        c.ack(SimTime(20_000_000), 0, &AckHeader::new(1448, 1 << 20));
        c.finish(SimTime(20_000_000), &[1448, 0], 1448);
        c.ack(SimTime(6_000_000_000), 0, &AckHeader::new(1448, 1 << 20));
        let rows = tcp_rows(c.bytes());
        // handshake, data, ACK, FIN on the first subflow only, the late ACK
        assert_eq!(rows.iter().map(|r| r.2).collect::<Vec<_>>(), [SYN, SYN | ACK, ACK, ACK | PSH, ACK, ACK | FIN, ACK]);
        assert!(rows.iter().all(|r| r.1[3] <= 2));
    }

    /// A run of the simulation: the capture's handshakes against the scenario's paths, and the
    /// summary the same with and without the capture.
    fn run_two_paths(join: &str) -> (crate::scenario::Scenario, Vec<u8>, Dur, Dur) {
        let text = format!(
            r#"
duration = "2s"
[metrics]
interval = false
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "b"
rate = "5Mbps"
delay = "30ms"
[[path]]
name = "p"
links = ["a"]
[[path]]
name = "q"
links = ["b"]
[[flow]]
name = "mp"
paths = ["p", "q"]
start = "300ms"
{join}
"#
        );
        let s = crate::scenario::Scenario::from_toml(&text, "pcap.toml").unwrap();
        let plain = crate::sim::Simulation::new(&s).run();
        let mut with = s.clone();
        with.metrics.pcap = true;
        let out = crate::sim::Simulation::new(&with).run();
        let (a, b) = (&plain.summary, &out.summary);
        assert_eq!(format!("{:?}", (&a.flows, &a.links, a.events)), format!("{:?}", (&b.flows, &b.links, b.events)));
        let h = s.flows[0].tcp.header as u64;
        // a header's one-way delay on each path: propagation and transmission, both ways equal
        let owd = [Dur::from_millis(10) + Dur::tx_time(h, 10_000_000), Dur::from_millis(30) + Dur::tx_time(h, 5_000_000)];
        (s, out.pcap[0].bytes.clone(), owd[0], owd[1])
    }

    #[test]
    fn a_simulated_capture_shows_the_paths_round_trips() {
        // without join_delay the data waits for the second path's MP_JOIN exchange (two of
        // its round trips); with Linux's join time the exchange fits before its data
        for (join, waits) in [("", 1u64), ("join_delay = \"linux\"", 0)] {
            let (s, bytes, p, q) = run_two_paths(join);
            let start = s.flows[0].start;
            assert_eq!(start, SimTime(300_000_000));
            let t = times(&bytes);
            assert!(non_decreasing(&t), "times never decrease");
            let rows = tcp_rows(&bytes);
            let syn: Vec<_> = rows.iter().filter(|r| r.2 == SYN).collect();
            let synack: Vec<_> = rows.iter().filter(|r| r.2 == SYN | ACK).collect();
            assert_eq!((syn.len(), synack.len()), (2, 2));
            assert_eq!(syn[0].0, start + CLOCK_BASE, "the SYN leaves at the flow's start");
            assert_eq!(synack[0].0 - syn[0].0, p + p, "one round trip of the first path");
            assert_eq!(synack[1].0 - syn[1].0, q + q, "one round trip of the second path");
            // the MP_JOIN after the first subflow's third ACK
            let third = rows.iter().find(|r| r.2 == ACK && r.1 == [10, 0, 0, 1]).unwrap();
            assert_eq!(third.0, synack[0].0);
            assert!(syn[1].0 >= third.0);
            if waits == 0 {
                assert_eq!(syn[1].0, third.0, "Linux's path manager opens the subflow at once");
            }
            // the data from the flow's start on the simulation's clock, L later
            let lead = (p + p) + Dur(waits * 2 * (q.0 + q.0));
            let first_data = rows.iter().find(|r| r.2 & PSH != 0).unwrap();
            assert_eq!(first_data.0, start + CLOCK_BASE + lead);
        }
    }

    #[test]
    fn udp_datagrams_and_the_size_limit() {
        let limit = (PCAP_HEADER + 3 * (RECORD_HEADER + 28)) as u64;
        let mut c = Capture::new(CaptureKind::Udp, 0, 1, 1200, 1, limit);
        for i in 0..5u64 {
            c.data(
                SimTime(i),
                0,
                &DataHeader {
                    seq: i * 1200,
                    dsn: i * 1200,
                    sent_at: SimTime(i),
                    len: 1200,
                    retx: false,
                    psh: false,
                    cw: false,
                    ecn: Ecn::NotEct,
                    cwr: false,
                    echo: SimTime::ZERO,
                },
            );
        }
        let r = records(c.bytes());
        assert_eq!(r.len(), 3);
        assert!(c.is_full());
        assert_eq!(c.dropped, 2);
        for (_, len, p) in &r {
            assert_eq!(*len, 1228);
            assert!(checksums_ok(p, *len));
        }
    }

    #[test]
    fn sctp_packets_carry_crc32c_and_chunks() {
        // RFC 3720 B.4 / the usual check value of CRC32c
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        let mut c = Capture::new(CaptureKind::Sctp, 1, 2, 1456, 3, 1 << 30);
        c.sctp_timestamps = true;
        c.sctp_data(
            SimTime(1_000),
            1,
            &SctpDataHeader { tsn: 5, offset: 4 * 1456, sent_at: SimTime(1_000), len: 1000, chunks: 1, retx: false, ..Default::default() },
        );
        let sack = SctpSackHeader { id: 0, cum_tsn: 3, a_rwnd: 65536, delivered: 3 * 1456, ecne: None };
        c.sctp_sack(SimTime(2_000), 1, &sack, &SctpSackBody { gaps: &[(5, 6)], dups: &[2], echoes: &[(5, SimTime(1_500))] });
        c.sctp_heartbeat(SimTime(3_000), 0, false, SimTime(3_000));
        let r = records(c.bytes());
        assert_eq!(r.len(), 3);
        // DATA: headers stored up to the end of the DATA chunk header; the length on the wire
        // counts IP, common header, timestamp chunk and the padded chunk
        assert_eq!((r[0].0, r[0].1), (20 + 12 + 12 + 16, 20 + 12 + 12 + 16 + 1000));
        let d = &r[0].2;
        assert_eq!(d[9], IPPROTO_SCTP);
        assert_eq!(&d[16..20], &[10, 0, 1, 4]); // destination 1 of flow 1
        assert_eq!(d[32], SCTP_TIMESTAMP);
        assert_eq!(d[44], SCTP_DATA);
        assert_eq!(u32::from_be_bytes(d[48..52].try_into().unwrap()), c.wire_tsn(5));
        assert_eq!(u16::from_be_bytes(d[54..56].try_into().unwrap()), 4); // SSN
                                                                          // the stored checksum is the CRC32c of the whole packet with its zero payload
        let mut full = d[20..].to_vec();
        full.resize(12 + 12 + 16 + 1000, 0);
        let stored = u32::from_le_bytes(full[8..12].try_into().unwrap());
        full[8..12].fill(0);
        assert_eq!(stored, crc32c(&full));
        // SACK from the receiver: the sender's tag, one gap block at offsets 2..3, one dup
        let s = &r[1].2;
        assert_eq!(r[1].0, r[1].1);
        assert_eq!(&s[12..16], &[10, 0, 1, 4]);
        assert_eq!(u32::from_be_bytes(s[24..28].try_into().unwrap()), c.vtag(true));
        assert_eq!(s[32], SCTP_SACK);
        assert_eq!(u32::from_be_bytes(s[36..40].try_into().unwrap()), c.wire_tsn(3));
        assert_eq!(&s[44..52], &[0, 1, 0, 1, 0, 2, 0, 3]);
        assert_eq!(u32::from_be_bytes(s[52..56].try_into().unwrap()), c.wire_tsn(2));
        assert_eq!(s[56], SCTP_TIMESTAMP_ECHO);
        let mut p = s[20..].to_vec();
        let stored = u32::from_le_bytes(p[8..12].try_into().unwrap());
        p[8..12].fill(0);
        assert_eq!(stored, crc32c(&p));
        assert_eq!(r[2].2[32], SCTP_HEARTBEAT);
        assert_eq!(r[2].1, 20 + 12 + 24);
    }
}
