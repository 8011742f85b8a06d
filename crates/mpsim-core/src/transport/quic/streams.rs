//! A QUIC connection's streams (RFC 9000 §2-4), both ends: the application's writes mapped
//! to streams, the choice of the stream whose new data goes into the next packet (strict
//! priority, RFC 9218), per-stream and connection flow control, MAX_STREAMS, FIN, and the
//! receiver's per-stream reassembly.
//!
//! Every byte the application writes has a place in the connection's byte sequence (its
//! *connection offset*: where it is in the order of the writes); loss detection, the
//! retransmission queue and the packet headers use it. A stream is a range of that sequence:
//! with one stream (a bulk application, or any application but a media one) it is all of it,
//! stream 0, and a byte's stream offset is its connection offset; with a stream per write (a
//! media application: one unidirectional stream per frame) each write is a stream of its own,
//! closed (FIN) as it is written, and the receiver delivers it once all its own bytes are in,
//! whatever happened to the other streams.

use super::ranges::RangeSet;
use super::wire;
use crate::time::SimTime;

/// The receiver's initial_max_streams_uni (RFC 9000 §18.2): streams the sender may open
/// before the first MAX_STREAMS; each stream the receiving application reads whole frees one.
pub const INITIAL_MAX_STREAMS: u64 = 100;

/// One stream: the connection offsets `[start, end)` of its bytes, its priority, and how far
/// each end got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// The stream ID on the wire: 0 for the one stream; 2, 6, 10, ... (client-initiated
    /// unidirectional, RFC 9000 §2.1) for a stream per write.
    pub id: u64,
    pub start: u64,
    pub end: u64,
    /// The writer's priority (higher: more urgent).
    pub priority: u8,
    /// Closed by the writer (FIN): `end` is its final size.
    pub fin: bool,
    /// Sender: the connection offset of its next new byte (a stream per write; the one
    /// stream's is the connection's `next_offset`); the peer's MAX_STREAM_DATA.
    pub sent: u64,
    pub limit: u64,
    /// Receiver: the connection offset up to which its bytes reached the application, and the
    /// stream credit last advertised (stream offsets).
    pub delivered: u64,
    pub advertised: u64,
    /// With `quic.reset_late`: when the stream's frame is past its playback deadline (the
    /// sender then resets it), whether the sender reset it (RESET_STREAM), and whether the
    /// receiver closed it on a RESET_STREAM.
    pub expires: Option<SimTime>,
    pub reset_sent: bool,
    pub reset_received: bool,
}

impl Stream {
    fn new(id: u64, start: u64, priority: u8, fin: bool, credit: u64) -> Stream {
        Stream {
            id,
            start,
            end: start,
            priority,
            fin,
            sent: start,
            limit: credit,
            delivered: start,
            advertised: credit,
            expires: None,
            reset_sent: false,
            reset_received: false,
        }
    }

    /// Bytes of new data the sender may put into a frame now (within the stream's credit).
    fn sendable(&self) -> u64 {
        self.end.min(self.start + self.limit).saturating_sub(self.sent)
    }

    /// Whether all its bytes reached the receiving application (a closed stream).
    pub fn complete(&self) -> bool {
        self.fin && self.delivered == self.end
    }
}

/// A chunk of stream data for one STREAM frame: its connection offset and length, the stream
/// (index), and whether the frame carries the stream's FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub offset: u64,
    pub len: u64,
    pub stream: usize,
    pub fin: bool,
}

/// What the receiver's stream layer made of newly arrived bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Nothing,
    /// The one stream's in-order bytes grew to this connection offset.
    Prefix(u64),
    /// A stream per write: the stream ending at this connection offset was read whole.
    Whole(u64),
}

/// The streams of a connection.
#[derive(Clone, Debug)]
pub struct Streams {
    /// A stream per write (else one stream for every write).
    pub per_write: bool,
    /// Strict priority across streams (else FIFO: the oldest stream with data first).
    pub priorities: bool,
    /// The receiver's stream and connection flow-control window.
    credit: u64,
    /// Every stream opened, in the order of their bytes (their IDs ascend too).
    pub streams: Vec<Stream>,
    /// Sender: streams with bytes not yet sent (indices, ascending).
    pending: Vec<usize>,
    /// Sender: the peer's MAX_STREAMS.
    pub peer_max_streams: u64,
    /// Receiver: streams with bytes received and not yet read whole (indices), streams read
    /// whole, and the MAX_STREAMS last advertised.
    open: Vec<usize>,
    pub completed: u64,
    /// Receiver: streams closed by a RESET_STREAM before they were read whole.
    pub reset: u64,
    pub advertised_streams: u64,
}

impl Streams {
    pub fn new(per_write: bool, priorities: bool, credit: u64) -> Streams {
        Streams {
            per_write,
            priorities,
            credit,
            streams: Vec::new(),
            pending: Vec::new(),
            peer_max_streams: INITIAL_MAX_STREAMS,
            open: Vec::new(),
            completed: 0,
            reset: 0,
            advertised_streams: INITIAL_MAX_STREAMS,
        }
    }

    /// The application wrote `len` bytes at connection offset `at` with `priority`.
    pub fn write(&mut self, at: u64, len: u64, priority: u8) {
        if len == 0 {
            return;
        }
        let k = self.streams.len();
        if self.per_write || k == 0 {
            let id = if self.per_write { 4 * k as u64 + 2 } else { 0 };
            self.streams.push(Stream::new(id, at, priority, self.per_write, self.credit));
        }
        let k = self.streams.len() - 1;
        let s = &mut self.streams[k];
        debug_assert_eq!(s.end, at, "writes follow one another");
        s.end += len;
        if self.per_write {
            self.pending.push(k);
        }
    }

    /// The stream holding connection offset `off` (a byte written).
    pub fn index_of(&self, off: u64) -> usize {
        if !self.per_write {
            return 0;
        }
        self.streams.partition_point(|s| s.end <= off)
    }

    /// Bytes of the STREAM frame header (type, stream ID, offset when nonzero, length) for
    /// `len` bytes of stream `k` from connection offset `off`.
    pub fn frame_header(&self, k: usize, off: u64, len: u64) -> u32 {
        let s = &self.streams[k];
        wire::stream_frame_header(s.id, off - s.start, len)
    }

    /// The stream whose new data goes next, with a stream per write (the one stream's bytes
    /// are the connection's to send in order): among those with data the stream credit allows
    /// and within the peer's MAX_STREAMS, the most urgent, the oldest among equals (RFC 9218's
    /// non-incremental streams of one urgency, in stream ID order); without priorities, the
    /// oldest.
    pub fn next_stream(&self) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &k in &self.pending {
            if k as u64 >= self.peer_max_streams {
                break;
            }
            if self.streams[k].sendable() == 0 {
                continue;
            }
            if !self.priorities {
                return Some(k);
            }
            if best.is_none_or(|b| self.streams[k].priority > self.streams[b].priority) {
                best = Some(k);
            }
        }
        best
    }

    /// Takes up to `len` new bytes of stream `k` (from [`Streams::next_stream`]) as sent.
    pub fn take(&mut self, k: usize, len: u64) -> Chunk {
        let s = &mut self.streams[k];
        let len = len.min(s.sendable());
        let offset = s.sent;
        s.sent += len;
        let fin = s.fin && s.sent == s.end;
        if s.sent == s.end {
            self.pending.retain(|&j| j != k);
        }
        Chunk { offset, len, stream: k, fin }
    }

    /// The sender abandons stream `k` (RESET_STREAM): its bytes not yet sent never will be.
    /// Returns its final size (RFC 9000 §4.5: the bytes sent, which is what it took of the
    /// connection's credit).
    pub fn reset(&mut self, k: usize) -> u64 {
        self.pending.retain(|&j| j != k);
        let s = &mut self.streams[k];
        s.reset_sent = true;
        s.sent - s.start
    }

    /// A chunk of data sent before, `[off, off + len)` within one stream.
    pub fn chunk(&self, off: u64, len: u64) -> Chunk {
        let k = self.index_of(off);
        let s = &self.streams[k];
        Chunk { offset: off, len, stream: k, fin: s.fin && off + len == s.end }
    }

    /// Whether new data waits for the peer's credit (a stream's, or MAX_STREAMS) while none
    /// may go.
    pub fn stream_blocked(&self) -> bool {
        self.next_stream().is_none() && !self.pending.is_empty()
    }

    /// The peer raised stream `k`'s credit (MAX_STREAM_DATA) or the stream limit (MAX_STREAMS).
    pub fn on_max_stream_data(&mut self, k: usize, limit: u64) {
        let s = &mut self.streams[k];
        s.limit = s.limit.max(limit);
    }

    // ----- receiver -----

    /// Bytes `[off, end)` of the stream holding `off` arrived; `held` is every byte the
    /// receiver holds. Returns how many bytes the application newly read and what it got.
    #[inline]
    pub fn on_received(&mut self, off: u64, held: &RangeSet) -> (u64, Delivery) {
        let k = self.index_of(off);
        let s = &mut self.streams[k];
        if s.reset_received {
            return (0, Delivery::Nothing); // closed: its late bytes are discarded
        }
        let before = s.delivered;
        s.delivered = held.contiguous_from(s.start).min(s.end).max(s.delivered);
        let read = s.delivered - before;
        if !self.per_write {
            return (read, if read > 0 { Delivery::Prefix(s.delivered) } else { Delivery::Nothing });
        }
        if s.complete() {
            if read > 0 {
                self.completed += 1;
                self.open.retain(|&j| j != k);
                return (read, Delivery::Whole(s.end));
            }
        } else if !self.open.contains(&k) {
            self.open.push(k);
        }
        (read, Delivery::Nothing)
    }

    /// The receiver got RESET_STREAM for stream `k` with `final_size`: a stream not yet read
    /// whole is closed (its bytes arriving later are discarded) and counted. Returns the
    /// connection credit it releases (RFC 9000 §4.5: the final size counts, less the bytes
    /// the application read), None for a stream read whole or closed before.
    pub fn on_reset(&mut self, k: usize, final_size: u64) -> Option<u64> {
        let s = &mut self.streams[k];
        if s.complete() || s.reset_received {
            return None;
        }
        s.reset_received = true;
        self.reset += 1;
        self.open.retain(|&j| j != k);
        Some((s.start + final_size).saturating_sub(s.delivered))
    }

    /// The receiver's MAX_STREAMS, when it grew by a quarter of the initial limit since last
    /// advertised (or when `blocked` and it grew at all).
    pub fn max_streams_due(&mut self, blocked: bool) -> Option<u64> {
        let limit = self.completed + self.reset + INITIAL_MAX_STREAMS;
        let due = limit >= self.advertised_streams + INITIAL_MAX_STREAMS / 4 || (blocked && limit > self.advertised_streams);
        (self.per_write && due).then(|| {
            self.advertised_streams = limit;
            limit
        })
    }

    /// MAX_STREAM_DATA of the open streams (a stream per write) whose credit grew by a
    /// quarter of the window since last advertised: (stream index, limit in stream offsets).
    pub fn max_stream_data_due(&mut self) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        for &k in &self.open {
            let s = &mut self.streams[k];
            let limit = s.delivered - s.start + self.credit;
            if limit >= s.advertised + self.credit / 4 {
                s.advertised = limit;
                out.push((k, limit));
            }
        }
        out
    }

    /// Checks the streams' invariants (for tests).
    pub fn check_invariants(&self) {
        for (k, s) in self.streams.iter().enumerate() {
            assert!(s.start <= s.delivered && s.delivered <= s.end, "stream {} delivered outside its bytes", s.id);
            assert!(s.sent <= s.end && s.sent - s.start <= s.limit, "stream {} sent beyond its bytes or credit", s.id);
            assert!(k as u64 <= self.peer_max_streams || s.sent == s.start, "stream {} opened beyond MAX_STREAMS", s.id);
            if k > 0 {
                assert_eq!(self.streams[k - 1].end, s.start, "streams follow one another");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(per_write: bool, priorities: bool) -> Streams {
        let mut s = Streams::new(per_write, priorities, 1 << 20);
        // three writes: priority 0, 1, 0
        s.write(0, 3000, 0);
        s.write(3000, 2000, 1);
        s.write(5000, 1000, 0);
        s
    }

    #[test]
    fn one_stream_carries_every_write() {
        let s = frames(false, true);
        assert_eq!(s.streams.len(), 1);
        assert_eq!((s.streams[0].id, s.streams[0].start, s.streams[0].end), (0, 0, 6000));
        assert_eq!(s.index_of(5999), 0);
        assert!(!s.chunk(4600, 1400).fin, "the one stream is never closed");
        // stream offsets are connection offsets: the header is that of stream 0
        assert_eq!(s.frame_header(0, 1400, 1400), wire::stream_frame_header(0, 1400, 1400));
    }

    #[test]
    fn a_stream_per_write_has_unidirectional_ids_and_fin() {
        let mut s = frames(true, false);
        assert_eq!(s.streams.iter().map(|x| x.id).collect::<Vec<_>>(), [2, 6, 10]);
        assert_eq!(s.index_of(2999), 0);
        assert_eq!(s.index_of(3000), 1);
        assert_eq!(s.index_of(5999), 2);
        let c = s.take(0, 5000);
        assert_eq!((c.offset, c.len, c.fin), (0, 3000, true));
        // offsets within the stream: the second stream's first frame has no offset field
        assert_eq!(s.frame_header(1, 3000, 1000), 1 + 1 + 2);
        assert_eq!(s.frame_header(1, 3500, 1000), 1 + 1 + 2 + 2);
        assert!(s.chunk(4000, 1000).fin && !s.chunk(3000, 1000).fin);
    }

    #[test]
    fn priorities_send_the_most_urgent_stream_first_and_fifo_among_equals() {
        let mut s = frames(true, true);
        let order: Vec<usize> = std::iter::from_fn(|| s.next_stream().map(|k| s.take(k, 1400).stream)).collect();
        assert_eq!(order, [1, 1, 0, 0, 0, 2]);
        let mut s = frames(true, false);
        let order: Vec<usize> = std::iter::from_fn(|| s.next_stream().map(|k| s.take(k, 1400).stream)).collect();
        assert_eq!(order, [0, 0, 0, 1, 1, 2]);
    }

    #[test]
    fn stream_credit_and_max_streams_hold_the_sender() {
        let mut s = Streams::new(true, true, 1000);
        s.write(0, 1500, 0);
        let c = s.take(0, 1400);
        assert_eq!(c.len, 1000, "the stream's credit");
        assert_eq!(s.next_stream(), None);
        assert!(s.stream_blocked());
        s.on_max_stream_data(0, 1500);
        assert_eq!(s.take(0, 1400).len, 500);
        // MAX_STREAMS: the 101st stream waits
        let mut s = Streams::new(true, false, 1000);
        for k in 0..=INITIAL_MAX_STREAMS {
            s.write(k * 10, 10, 0);
        }
        for _ in 0..INITIAL_MAX_STREAMS {
            let k = s.next_stream().unwrap();
            s.take(k, 100);
        }
        assert_eq!(s.next_stream(), None);
        assert!(s.stream_blocked());
        s.peer_max_streams += 1;
        assert_eq!(s.next_stream(), Some(INITIAL_MAX_STREAMS as usize));
    }

    #[test]
    fn the_receiver_delivers_each_stream_when_its_own_bytes_are_in() {
        let mut s = frames(true, true);
        let mut held = RangeSet::default();
        // the second stream arrives whole before the first: no head-of-line blocking
        held.insert(3000, 5000);
        assert_eq!(s.on_received(3000, &held), (2000, Delivery::Whole(5000)));
        held.insert(1000, 3000);
        assert_eq!(s.on_received(1000, &held), (0, Delivery::Nothing));
        held.insert(0, 1000);
        assert_eq!(s.on_received(0, &held), (3000, Delivery::Whole(3000)));
        // a duplicate delivers nothing again
        assert_eq!(s.on_received(0, &held), (0, Delivery::Nothing));
        assert_eq!(s.completed, 2);
        // one stream: the prefix, as TCP's byte stream
        let mut s = frames(false, true);
        let mut held = RangeSet::default();
        held.insert(3000, 5000);
        assert_eq!(s.on_received(3000, &held), (0, Delivery::Nothing));
        held.insert(0, 3000);
        assert_eq!(s.on_received(0, &held), (5000, Delivery::Prefix(5000)));
        s.check_invariants();
    }

    #[test]
    fn credit_updates_are_due_by_the_quarter() {
        let mut s = Streams::new(true, true, 4000);
        s.write(0, 3000, 0);
        let mut held = RangeSet::default();
        held.insert(0, 999);
        s.on_received(0, &held);
        assert!(s.max_stream_data_due().is_empty());
        held.insert(0, 1000);
        s.on_received(0, &held);
        assert_eq!(s.max_stream_data_due(), [(0, 5000)]);
        assert!(s.max_stream_data_due().is_empty(), "advertised once");
        assert_eq!(s.max_streams_due(false), None);
        for k in 1..=25 {
            s.write(3000 + (k - 1) * 10, 10, 0);
        }
        held.insert(0, 3250);
        for k in 0..=25 {
            s.on_received(s.streams[k].start, &held);
        }
        assert_eq!(s.completed, 26);
        assert_eq!(s.max_streams_due(false), Some(INITIAL_MAX_STREAMS + 26));
        assert_eq!(s.max_streams_due(true), None);
    }
}
