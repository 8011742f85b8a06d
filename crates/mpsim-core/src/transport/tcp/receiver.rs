//! TCP receiver: reassembly, SACK blocks (RFC 2018), D-SACK (RFC 2883), delayed ACKs (RFC
//! 5681 §4.2, or Linux's: `delack.rs`) and the receive window from a bounded buffer.
//!
//! Without SACK (`sack: false`, a stack with `net.ipv4.tcp_sack = 0`) the ACKs carry no SACK
//! option at all, D-SACK included: out-of-order data is held and acknowledged at once with
//! a plain duplicate ACK.
//!
//! D-SACK: a segment that arrives wholly duplicate, below the cumulative ACK or inside a range
//! already held out of order, is reported in the first SACK block of the next ACK (RFC 2883
//! §4, as Linux's `tcp_dsack_set`); when it lies inside a held range, that range follows as
//! the second block so the sender can tell the report from an ordinary SACK (§4.1.2). The
//! report is sent once. Off with `dsack: false` (Linux's `net.ipv4.tcp_dsack = 0`).
//!
//! The application reads in-order data at once, so the buffer holds only out-of-order bytes.
//! The advertised window is the free space, no more than the window field can carry with the
//! receiver's window scale (`max_window`, RFC 7323 §2), but its right edge never moves left
//! (RFC 9293 §3.8.6: do not shrink the window), as real stacks behave.

use super::defaults;
use super::delack::{LinuxDelack, WindowGrowth};
use crate::net::{AckHeader, Ecn, SackBlock, MAX_SACK_BLOCKS};
use crate::time::{Dur, SimTime};
use std::collections::BTreeMap;

/// The receiver indexes its out-of-order ranges by last growth above this many ranges, and
/// stops below `INDEX_BELOW`.
const INDEX_ABOVE: usize = 32;
const INDEX_BELOW: usize = 8;

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// Receive buffer in bytes.
    pub buffer: u64,
    /// The largest window the window field can carry (`65535 << window_scale`, RFC 7323):
    /// the window offered is the free space or this, whichever is smaller.
    pub max_window: u64,
    /// ACK every `ack_every` in-order segments (1 = no delayed ACK, 2 = RFC 5681 delayed ACK).
    pub ack_every: u32,
    /// Longest an ACK may be delayed.
    pub delack_timeout: Dur,
    /// Report duplicate segments with D-SACK (RFC 2883).
    pub dsack: bool,
    /// Send SACK blocks (RFC 2018); off: no SACK option, so no D-SACK either.
    pub sack: bool,
    /// Linux's delayed ACKs (`delack.rs`) in place of `ack_every`, with `delack_timeout` as
    /// the floor of the adaptive timeout and `handshake_rtt` as the receiver's RTT.
    pub linux_delack: bool,
    pub handshake_rtt: Option<Dur>,
    /// Under Linux's delayed ACKs, the offered window's growth and the quick ACKs it brings
    /// (`delack.rs`); None leaves it out.
    pub window_growth: Option<WindowGrowth>,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            buffer: defaults::RCV_BUF,
            max_window: u64::MAX,
            ack_every: 1,
            delack_timeout: defaults::DELACK_TIMEOUT,
            dsack: true,
            sack: true,
            linux_delack: false,
            handshake_rtt: None,
            window_growth: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    /// When it last grew (a counter), for the SACK block order.
    touched: u64,
}

/// The out-of-order ranges, sorted: a vector whose front is removed by moving a start index,
/// not the ranges behind it. A hole filled at the front absorbs the first ranges while many
/// may stay held (a burst of losses leaves dozens), and shifting those down on every fill was
/// a third of the memory copying of a two-path transfer. The dead front is dropped once it is
/// at least as long as the live part, so each range is moved at most once per removal.
#[derive(Clone, Debug, Default)]
struct Ranges {
    v: Vec<Range>,
    head: usize,
}

impl std::ops::Deref for Ranges {
    type Target = [Range];
    #[inline]
    fn deref(&self) -> &[Range] {
        &self.v[self.head..]
    }
}

impl std::ops::DerefMut for Ranges {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Range] {
        &mut self.v[self.head..]
    }
}

impl Ranges {
    // The dead front is never the whole vector (it is cleared then), so the last live range is
    // the vector's last: these answer without slicing.
    #[inline]
    fn len(&self) -> usize {
        self.v.len() - self.head
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.v.len() == self.head
    }

    #[inline]
    fn last(&self) -> Option<&Range> {
        self.v.last()
    }

    #[inline]
    fn last_mut(&mut self) -> Option<&mut Range> {
        self.v.last_mut()
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&Range> {
        self.v.get(self.head + i)
    }

    #[inline]
    fn push(&mut self, r: Range) {
        self.v.push(r);
    }

    fn insert(&mut self, i: usize, r: Range) {
        self.v.insert(self.head + i, r);
    }

    /// Replaces ranges `i..j` by `r`.
    fn replace(&mut self, i: usize, j: usize, r: Range) {
        self.v.splice(self.head + i..self.head + j, [r]);
    }

    fn clear(&mut self) {
        self.v.clear();
        self.head = 0;
    }

    /// Removes the first `k` ranges.
    fn drop_front(&mut self, k: usize) {
        self.head += k;
        debug_assert!(self.head <= self.v.len());
        if self.head == self.v.len() {
            self.clear();
        } else if 2 * self.head >= self.v.len() {
            self.v.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Words in the grid's ring: 32,768 units, about 47 MB of 1,448-byte chunks.
const GRID_WORDS: usize = 512;
const GRID_UNITS: u64 = 64 * GRID_WORDS as u64;
/// A receiver that sends no SACK blocks moves its held data below the highest ranges into
/// the grid at an insertion among this many ranges or more.
const GRID_FROM: usize = 16;

/// Held data as one bit per unit of `unit` bytes, unit `u` being the bytes
/// [origin + u·unit, origin + (u+1)·unit). Used by a receiver that sends no SACK blocks (the
/// connection level of Multipath TCP), for the data below its highest ranges: with eight
/// subflows most chunks land between held ranges, where the sorted ranges need a search and
/// move the ranges behind the one inserted or merged; a bit is found and set in place.
/// Units are numbered from `origin` for the grid's whole use; unit `u` is bit `u % 64` of
/// word `(u / 64) % GRID_WORDS`, and every unit set lies in [floor, floor + GRID_UNITS), so no
/// two of them share a bit.
#[derive(Clone, Debug, Default)]
struct Grid {
    /// Bytes per unit; 0 while the grid is not in use.
    unit: u64,
    /// Where unit 0 starts, modulo 2^64: it may lie below byte 0 (a first unit longer than
    /// the data before it), so every use wraps; the true offsets from it are never negative.
    origin: u64,
    /// Every unit below it is clear.
    floor: u64,
    /// One past the highest unit set since the grid was entered (a bound, not exact).
    top: u64,
    /// Units set.
    held: u64,
    words: Vec<u64>,
}

impl Grid {
    #[inline]
    fn in_use(&self) -> bool {
        self.unit != 0
    }

    /// Starts with units of `unit` bytes on the lattice through `at`, unit 0 holding `below`
    /// (the next expected byte, which is on no unit's far side).
    fn start(&mut self, unit: u64, at: u64, below: u64) {
        debug_assert!(unit > 0 && at > below && self.held == 0);
        self.unit = unit;
        self.origin = at.wrapping_sub(unit * (at - below).div_ceil(unit));
        self.floor = 0;
        self.top = 0;
        if self.words.is_empty() {
            self.words = vec![0; GRID_WORDS];
        }
    }

    fn stop(&mut self) {
        debug_assert_eq!(self.held, 0);
        self.unit = 0;
    }

    /// The units [a, b) of the bytes [start, end), if both ends are on the lattice and the
    /// units fit in the ring.
    #[inline]
    fn units(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        // only for data above the next expected byte, so at or above unit `floor`
        debug_assert!(start.wrapping_sub(self.origin) >= self.floor * self.unit);
        if end <= start {
            return None;
        }
        let (s, len) = (start.wrapping_sub(self.origin), end - start);
        let a = s / self.unit;
        // a segment of one unit, the common case, needs no second division
        let n = if len == self.unit { 1 } else { len / self.unit };
        (s % self.unit == 0 && n * self.unit == len && a + n - self.floor <= GRID_UNITS).then_some((a, a + n))
    }

    /// The bits of units [a, b) within one word: (word index, mask, units covered).
    #[inline]
    fn span(a: u64, b: u64) -> (usize, u64, u64) {
        let bit = a % 64;
        let n = (b - a).min(64 - bit);
        let mask = if n == 64 { !0 } else { ((1u64 << n) - 1) << bit };
        (((a / 64) % GRID_WORDS as u64) as usize, mask, n)
    }

    /// Sets unit `a` (from `units`); returns 1 if it was clear.
    #[inline]
    fn set_one(&mut self, a: u64) -> u64 {
        let (w, bit) = (((a / 64) % GRID_WORDS as u64) as usize, 1u64 << (a % 64));
        let new = u64::from(self.words[w] & bit == 0);
        self.words[w] |= bit;
        self.held += new;
        self.top = self.top.max(a + 1);
        new
    }

    /// Sets units [a, b) (from `units`); returns how many were clear.
    fn set(&mut self, mut a: u64, b: u64) -> u64 {
        let mut new = 0;
        while a < b {
            let (w, mask, n) = Self::span(a, b);
            new += u64::from((!self.words[w] & mask).count_ones());
            self.words[w] |= mask;
            a += n;
        }
        self.held += new;
        self.top = self.top.max(b);
        new
    }

    /// The next expected byte moved to `nxt`: clears the units below it, then the run of set
    /// units from the one holding it. Returns the next expected byte after that run and the
    /// bytes cleared.
    fn absorb(&mut self, nxt: u64) -> (u64, u64) {
        let at = nxt.wrapping_sub(self.origin) / self.unit;
        let mut cleared = 0;
        if at - self.floor >= GRID_UNITS {
            cleared = self.held;
            self.words.fill(0);
        } else {
            while self.floor < at {
                let (w, mask, n) = Self::span(self.floor, at);
                cleared += u64::from((self.words[w] & mask).count_ones());
                self.words[w] &= !mask;
                self.floor += n;
            }
        }
        self.floor = at;
        // the run of set units from `at`, a word at a time
        let mut u = at;
        loop {
            let (w, bit) = (((u / 64) % GRID_WORDS as u64) as usize, u % 64);
            let n = u64::from((self.words[w] >> bit).trailing_ones());
            if n == 0 {
                break;
            }
            let (_, mask, _) = Self::span(u, u + n);
            self.words[w] &= !mask;
            u += n;
            cleared += n;
            if bit + n < 64 {
                break;
            }
        }
        self.floor = u;
        self.held -= cleared;
        let nxt = if u > at { nxt.max(self.origin.wrapping_add(u * self.unit)) } else { nxt };
        (nxt, cleared * self.unit)
    }

    /// The held units as byte ranges, lowest first.
    fn ranges(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for u in self.floor..self.top {
            let (w, bit) = (((u / 64) % GRID_WORDS as u64) as usize, u % 64);
            if self.words[w] >> bit & 1 == 1 {
                let s = self.origin.wrapping_add(u * self.unit);
                match out.last_mut() {
                    Some(r) if r.1 == s => r.1 = s + self.unit,
                    _ => out.push((s, s + self.unit)),
                }
            }
        }
        out
    }

    /// Clears every unit (after `ranges` took them).
    fn clear(&mut self) {
        self.words.fill(0);
        self.held = 0;
        self.stop();
    }
}

/// What the receiver did with a segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// In-order bytes newly handed to the application: [rcv_nxt before, rcv_nxt after).
    pub delivered: u64,
    /// An ACK must be sent now.
    pub ack_now: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReceiverStats {
    pub segments: u64,
    pub duplicate_segments: u64,
    pub out_of_order_segments: u64,
    pub beyond_window_drops: u64,
    pub acks_sent: u64,
    /// D-SACK blocks sent.
    pub dsacks_sent: u64,
    /// Largest number of bytes held out of order.
    pub max_buffered: u64,
    /// Data segments that arrived marked CE.
    pub ecn_ce_received: u64,
}

#[derive(Clone)]
pub struct TcpReceiver {
    cfg: ReceiverConfig,
    rcv_nxt: u64,
    ooo: Ranges,
    /// The out-of-order ranges by when they last grew (`touched` → start): the SACK blocks
    /// after the first are the most recent ranges, found here without scanning them all.
    /// Kept only while there are many ranges (built by the first ACK that finds more than
    /// `INDEX_ABOVE`, dropped below `INDEX_BELOW`): for a few, a scan is cheaper than keeping
    /// the index.
    by_touch: Option<BTreeMap<u64, u64>>,
    /// Without SACK blocks, the held data below the ranges once they are many (`Grid`): every
    /// unit it holds lies below the first range, and while it holds any the ranges keep at
    /// least one (the highest), so the ranges' tests for "nothing held" and "at or above the
    /// highest range" stay as they are.
    grid: Grid,
    /// Data off the grid's lattice came: ranges only from then on.
    grid_refused: bool,
    ooo_bytes: u64,
    right_edge: u64,
    touch: u64,
    last_touched: Option<usize>,
    unacked_segments: u32,
    delack_deadline: Option<SimTime>,
    /// The duplicate to report in the next ACK (D-SACK), [start, end).
    dsack: Option<(u64, u64)>,
    linux: Option<LinuxDelack>,
    /// When the latest segment arrived (the timestamp the next ACK carries).
    last_arrival: SimTime,
    /// A segment since the last ACK carried a congestion-warning mark (echoed once).
    cw_pending: bool,
    /// ECE on every ACK: a CE mark arrived and no CWR since (RFC 3168 §6.1.3; Linux's
    /// `TCP_ECN_DEMAND_CWR`).
    ece: bool,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: ReceiverConfig) -> TcpReceiver {
        let right_edge = cfg.buffer.min(cfg.max_window);
        let linux = cfg.linux_delack.then(|| LinuxDelack::new(cfg.delack_timeout, cfg.handshake_rtt, cfg.window_growth));
        TcpReceiver {
            cfg,
            rcv_nxt: 0,
            ooo: Ranges::default(),
            by_touch: None,
            grid: Grid::default(),
            grid_refused: false,
            ooo_bytes: 0,
            right_edge,
            touch: 0,
            last_touched: None,
            unacked_segments: 0,
            delack_deadline: None,
            dsack: None,
            linux,
            last_arrival: SimTime::ZERO,
            cw_pending: false,
            ece: false,
            stats: ReceiverStats::default(),
        }
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Size of the receive buffer.
    pub fn capacity(&self) -> u64 {
        self.cfg.buffer
    }
    pub fn buffered(&self) -> u64 {
        self.ooo_bytes
    }
    /// One past the highest byte received.
    pub fn highest(&self) -> u64 {
        self.ooo.iter().map(|r| r.end).fold(self.rcv_nxt, u64::max)
    }
    pub fn delack_deadline(&self) -> Option<SimTime> {
        self.delack_deadline
    }

    /// Window to advertise: free space (at most `max_window`), without moving the right edge
    /// left.
    pub fn window(&mut self) -> u64 {
        let free_edge = self.rcv_nxt + self.cfg.buffer.saturating_sub(self.ooo_bytes).min(self.cfg.max_window);
        self.right_edge = self.right_edge.max(free_edge);
        debug_assert!(self.right_edge <= self.limit(), "the right edge beyond the buffer's end");
        self.right_edge - self.rcv_nxt
    }

    /// One past the last byte the receiver accepts: the end of the buffer. The advertised
    /// right edge never lies beyond it (it is at most the free space's end, which is at most
    /// this, and `rcv_nxt` never moves left), so the window, which may stay wider than the free
    /// space, admits nothing this does not; and the acceptance does not depend on whether or
    /// when the window was computed (`make_ack_offering` skips it).
    #[inline]
    fn limit(&self) -> u64 {
        self.rcv_nxt + self.cfg.buffer
    }

    /// Accepts a data segment [seq, seq+len).
    #[inline]
    pub fn on_segment(&mut self, now: SimTime, seq: u64, len: u32) -> Received {
        let end = seq + len as u64;
        // the common case, answered here: the next bytes expected, with nothing held out of
        // order and RFC 5681's delayed ACKs (or none)
        if seq == self.rcv_nxt && end > seq && self.ooo.is_empty() && self.linux.is_none() && end <= self.limit() {
            self.stats.segments += 1;
            self.last_arrival = now;
            self.rcv_nxt = end;
            self.unacked_segments += 1;
            let ack_now = self.unacked_segments >= self.cfg.ack_every;
            if !ack_now && self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.cfg.delack_timeout);
            }
            return Received { delivered: len as u64, ack_now };
        }
        self.on_other_segment(now, seq, len)
    }

    /// [`on_segment`](Self::on_segment) for every other segment: duplicate, beyond the
    /// window, out of order, filling a hole, or under Linux's delayed ACKs.
    #[inline(never)]
    fn on_other_segment(&mut self, now: SimTime, seq: u64, len: u32) -> Received {
        self.stats.segments += 1;
        self.last_arrival = now;
        let end = seq + len as u64;
        if end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            if self.cfg.dsack && self.cfg.sack {
                self.dsack = Some((seq, end));
            }
            if let Some(l) = self.linux.as_mut() {
                l.on_duplicate();
            }
            return Received { delivered: 0, ack_now: true };
        }
        if end > self.limit() {
            self.stats.beyond_window_drops += 1;
            return Received { delivered: 0, ack_now: true };
        }
        if seq > self.rcv_nxt {
            // the only range that can hold [seq, end) is the first ending at or after `seq`
            // (one before it ends below `seq`, one after it starts beyond that range's end);
            // the same search places the segment if it is new
            let k = match self.ooo.last().map(|l| (l.start, l.end)) {
                // at or above the highest range (most segments out of order): new data,
                // placed here without the duplicate test and `insert`'s search
                Some((_, last_end)) if last_end <= seq && end > seq && self.by_touch.is_none() => return self.hold_at_top(seq, end),
                Some((_, last_end)) if last_end < seq => self.ooo.len(),
                Some((last_start, _)) if last_start <= seq => self.ooo.len() - 1,
                // below the highest range: into the grid if this receiver keeps one
                Some(_) if self.grid_wanted() && self.insert_in_grid(seq, end) => return Received { delivered: 0, ack_now: true },
                None if end > seq && self.by_touch.is_none() => return self.hold_at_top(seq, end),
                _ => self.ooo.partition_point(|r| r.end < seq),
            };
            debug_assert_eq!(k, self.first_ending_from(seq));
            if self.ooo.get(k).is_some_and(|r| r.start <= seq && end <= r.end) {
                // wholly inside data already held: a duplicate
                self.stats.duplicate_segments += 1;
                if self.cfg.dsack && self.cfg.sack {
                    self.dsack = Some((seq, end));
                }
                return Received { delivered: 0, ack_now: true };
            }
            self.stats.out_of_order_segments += 1;
            self.insert(k, seq, end);
            self.stats.max_buffered = self.stats.max_buffered.max(self.ooo_bytes);
            return Received { delivered: 0, ack_now: true };
        }
        // in order (possibly overlapping what was delivered)
        let before = self.rcv_nxt;
        let had_gap = !self.ooo.is_empty();
        self.rcv_nxt = end;
        self.absorb_ooo();
        let delivered = self.rcv_nxt - before;
        let (every, timeout) = match self.linux.as_mut() {
            Some(l) => {
                l.on_data(now, len);
                (if l.quick() { 1 } else { 2 }, l.timeout())
            }
            None => (self.cfg.ack_every, self.cfg.delack_timeout),
        };
        let ack_now = if had_gap {
            true // filled (part of) a hole: ACK at once
        } else {
            self.unacked_segments += 1;
            if self.unacked_segments >= every {
                true
            } else {
                if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + timeout);
                }
                false
            }
        };
        Received { delivered, ack_now }
    }

    /// What `insert` does with new data [start, end) that extends the highest range (which
    /// ends at `start`) or lies above it, without the index (`by_touch`) to keep.
    #[inline]
    fn hold_at_top(&mut self, start: u64, end: u64) -> Received {
        debug_assert!(self.by_touch.is_none() && end > start && start > self.rcv_nxt);
        let n = self.ooo.len();
        self.touch += 1;
        match self.ooo.last_mut() {
            Some(l) if l.end == start => {
                l.end = end;
                l.touched = self.touch;
                self.last_touched = Some(n - 1);
            }
            _ => {
                self.ooo.push(Range { start, end, touched: self.touch });
                self.last_touched = Some(n);
            }
        }
        self.ooo_bytes += end - start;
        self.stats.out_of_order_segments += 1;
        self.stats.max_buffered = self.stats.max_buffered.max(self.ooo_bytes);
        Received { delivered: 0, ack_now: true }
    }

    /// Index of the first out-of-order range ending at or after `x`. The ranges are sorted,
    /// disjoint and never touch (touching ones are merged), and data mostly arrives at or
    /// beyond the highest one: that case is answered without a search.
    #[inline]
    fn first_ending_from(&self, x: u64) -> usize {
        let i = match self.ooo.last() {
            Some(l) if l.end < x => self.ooo.len(),
            Some(l) if l.start <= x => self.ooo.len() - 1,
            _ => self.ooo.partition_point(|r| r.end < x),
        };
        debug_assert_eq!(i, self.ooo.partition_point(|r| r.end < x));
        i
    }

    /// Whether the in-order segment just accepted, which carried PSH, is acknowledged at
    /// once: with Linux's delayed ACKs, when an ACK is pending and the application has read
    /// everything (`drained`: nothing held out of order here nor, for a Multipath TCP
    /// subflow, at the connection level). Linux (since late 2023) marks a full-sized
    /// segment with PSH as pushed (`tcp_measure_rcv_mss`), and when the reading application
    /// empties the receive memory, `tcp_cleanup_rbuf` sends the pending ACK at once instead
    /// of waiting for a second segment. A Multipath TCP subflow does so only when the
    /// connection's receive memory is empty (`mptcp_cleanup_rbuf`,
    /// `mptcp_subflow_could_cleanup`), which data held out of order at the connection level
    /// prevents. The application here reads at once, so "read everything" is "nothing held
    /// out of order".
    pub fn push_ack(&self, drained: bool) -> bool {
        self.linux.is_some() && drained && self.ooo.is_empty() && self.unacked_segments > 0
    }

    /// Merges [start, end) into the out-of-order ranges; `i` is the first range ending at or
    /// after `start` (`first_ending_from(start)`).
    fn insert(&mut self, i: usize, start: u64, end: u64) {
        debug_assert_eq!(i, self.first_ending_from(start));
        self.touch += 1;
        // data mostly arrives at or beyond the highest range: it extends that range or opens
        // one above it (answered here unless the index is kept)
        if self.by_touch.is_none() {
            let n = self.ooo.len();
            match self.ooo.last_mut() {
                Some(l) if l.end == start => {
                    l.end = end;
                    l.touched = self.touch;
                    self.ooo_bytes += end - start;
                    self.last_touched = Some(n - 1);
                    return;
                }
                Some(l) if l.end > start => {}
                _ => {
                    self.ooo.push(Range { start, end, touched: self.touch });
                    self.ooo_bytes += end - start;
                    self.last_touched = Some(n);
                    return;
                }
            }
        }
        // ranges i.. that overlap or touch [start, end) are merged into one
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ooo.len() && self.ooo[j].start <= end {
            s = s.min(self.ooo[j].start);
            e = e.max(self.ooo[j].end);
            self.ooo_bytes -= self.ooo[j].end - self.ooo[j].start;
            if let Some(ix) = self.by_touch.as_mut() {
                ix.remove(&self.ooo[j].touched);
            }
            j += 1;
        }
        let merged = Range { start: s, end: e, touched: self.touch };
        match j - i {
            0 => self.ooo.insert(i, merged),
            1 => self.ooo[i] = merged,
            _ => self.ooo.replace(i, j, merged),
        }
        if let Some(ix) = self.by_touch.as_mut() {
            ix.insert(self.touch, s);
        }
        self.ooo_bytes += e - s;
        self.last_touched = Some(i);
    }

    /// [`insert`](Self::insert) of [start, end), below the highest range, into the grid:
    /// the ranges below the segment or reaching it (all but the highest) move into the grid,
    /// then the segment, so that the grid stays below the ranges. False, with the grid left
    /// for good, if these are not all on the grid's lattice.
    #[inline(never)]
    fn insert_in_grid(&mut self, start: u64, end: u64) -> bool {
        if !self.grid.in_use() {
            self.grid.start(end - start, start, self.rcv_nxt);
        }
        // mostly the segment lies below every range
        let new = if end <= self.ooo[0].start {
            let units = match self.grid.units(start, end) {
                Some((a, b)) if b == a + 1 => self.grid.set_one(a),
                Some((a, b)) => self.grid.set(a, b),
                None => {
                    self.leave_grid();
                    return false;
                }
            };
            units * self.grid.unit
        } else {
            match self.move_into_grid(start, end) {
                Some(new) => new,
                None => return false,
            }
        };
        self.ooo_bytes += new;
        if new == 0 {
            self.stats.duplicate_segments += 1;
        } else {
            self.stats.out_of_order_segments += 1;
            self.stats.max_buffered = self.stats.max_buffered.max(self.ooo_bytes);
        }
        true
    }

    /// `insert_in_grid` of a segment reaching a range: the ranges up to it move into the grid
    /// first. Returns the bytes new, or None after leaving the grid.
    fn move_into_grid(&mut self, start: u64, end: u64) -> Option<u64> {
        let n = self.ooo.len();
        let last = self.ooo[n - 1];
        debug_assert!(start < last.start);
        let j = self.ooo.partition_point(|r| r.start <= end);
        let m = j.min(n - 1);
        // a segment reaching the highest range goes into the grid up to that range's start
        let top = if j == n { end.min(last.start) } else { end };
        let grid = &self.grid;
        if !self.ooo[..m].iter().all(|r| grid.units(r.start, r.end).is_some()) || grid.units(start, top).is_none() {
            self.leave_grid();
            return None;
        }
        for k in 0..m {
            let r = self.ooo[k];
            if let Some((a, b)) = self.grid.units(r.start, r.end) {
                self.grid.set(a, b);
            }
        }
        self.ooo.drop_front(m);
        self.last_touched = None;
        let (a, b) = self.grid.units(start, top).expect("checked above");
        let mut new = self.grid.set(a, b) * self.grid.unit;
        if j == n && end > last.end {
            let l = self.ooo.last_mut().expect("the highest range stays");
            new += end - l.end;
            l.end = end;
        }
        Some(new)
    }

    /// Whether a segment below the highest range goes into the grid: without SACK blocks,
    /// once the ranges are many, unless data off the lattice came.
    #[inline]
    fn grid_wanted(&self) -> bool {
        !self.cfg.sack && !self.grid_refused && (self.grid.in_use() || self.ooo.len() >= GRID_FROM)
    }

    /// Turns the grid's units back into ranges ahead of the others and stops using it.
    fn leave_grid(&mut self) {
        let mut v: Vec<Range> = self.grid.ranges().into_iter().map(|(start, end)| Range { start, end, touched: 0 }).collect();
        self.grid.clear();
        self.grid_refused = true;
        if v.is_empty() {
            return;
        }
        // the grid's highest unit may touch the first range
        for r in self.ooo.iter() {
            match v.last_mut() {
                Some(l) if l.end >= r.start => l.end = l.end.max(r.end),
                _ => v.push(*r),
            }
        }
        self.ooo = Ranges { v, head: 0 };
        self.last_touched = None;
    }

    fn absorb_ooo(&mut self) {
        if self.grid.in_use() {
            let (nxt, bytes) = self.grid.absorb(self.rcv_nxt);
            self.rcv_nxt = nxt;
            self.ooo_bytes -= bytes;
            if self.grid.held == 0 {
                self.grid.stop();
            }
        }
        let (mut k, mut nxt, mut bytes) = (0, self.rcv_nxt, 0);
        let ooo = &*self.ooo;
        while let Some(r) = ooo.get(k).filter(|r| r.start <= nxt) {
            nxt = nxt.max(r.end);
            bytes += r.end - r.start;
            k += 1;
        }
        self.rcv_nxt = nxt;
        self.ooo_bytes -= bytes;
        if k > 0 {
            if let Some(ix) = self.by_touch.as_mut() {
                for r in &ooo[..k] {
                    ix.remove(&r.touched);
                }
            }
            self.ooo.drop_front(k);
            if self.ooo.len() < INDEX_BELOW {
                self.by_touch = None;
            }
            self.last_touched = None;
        }
    }

    /// The ECN codepoint and CWR flag of a data segment arriving (before `on_segment`):
    /// CWR stops the echo, CE (after it, on the same segment) starts it again. Returns whether
    /// to acknowledge at once: on CWR, since the sender's window may be small now, and on the
    /// CE that starts the echo (Linux `tcp_ecn_accept_cwr`, `__tcp_ecn_check_ce`).
    #[inline]
    pub fn on_ecn(&mut self, ecn: Ecn, cwr: bool) -> bool {
        if ecn != Ecn::Ce && !cwr {
            return false;
        }
        self.on_ecn_signal(ecn, cwr)
    }

    #[inline(never)]
    fn on_ecn_signal(&mut self, ecn: Ecn, cwr: bool) -> bool {
        let mut now = cwr;
        if cwr {
            self.ece = false;
        }
        if ecn == Ecn::Ce {
            self.stats.ecn_ce_received += 1;
            now |= !self.ece;
            self.ece = true;
        }
        now
    }

    /// Whether the ACKs carry ECE now.
    pub fn ece(&self) -> bool {
        self.ece
    }

    /// The segment being received carries a congestion-warning mark: the next ACK echoes it.
    pub fn on_cw_mark(&mut self) {
        self.cw_pending = true;
    }

    /// Builds the ACK to send now and resets the delayed-ACK state.
    #[inline]
    pub fn make_ack(&mut self) -> AckHeader {
        let wnd = self.window();
        self.make_ack_offering(wnd)
    }

    /// [`make_ack`](Self::make_ack) advertising `wnd` instead of this receiver's window, which
    /// is not computed: a Multipath TCP subflow's ACK carries the connection-level window, so
    /// the subflow's own is never seen, and its right edge, which only the window reads, need
    /// not move (see `limit`).
    #[inline]
    pub fn make_ack_offering(&mut self, wnd: u64) -> AckHeader {
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        if let Some(l) = self.linux.as_mut() {
            l.on_ack_sent();
        }
        let mut h = AckHeader::new(self.rcv_nxt, wnd);
        h.received_at = self.last_arrival;
        h.cw_echo = std::mem::take(&mut self.cw_pending);
        h.set_ece(self.ece);
        // SACK blocks only for a duplicate to report or data held out of order
        if self.cfg.sack && (self.dsack.is_some() || !self.ooo.is_empty()) {
            self.push_sack_blocks(&mut h);
        }
        h
    }

    /// Puts the D-SACK block and the SACK blocks on `h`.
    #[inline(never)]
    fn push_sack_blocks(&mut self, h: &mut AckHeader) {
        let mut n = 0usize;
        // D-SACK first, then the range holding it if it lies above the cumulative ACK
        let mut dsack_range = None;
        if let Some((start, end)) = self.dsack.take() {
            h.push_dsack(SackBlock { start, end });
            self.stats.dsacks_sent += 1;
            n = 1;
            if start > self.rcv_nxt {
                let k = self.ooo.partition_point(|r| r.end < end);
                if self.ooo.get(k).is_some_and(|r| r.start <= start) {
                    h.push_sack(SackBlock { start: self.ooo[k].start, end: self.ooo[k].end });
                    dsack_range = Some(k);
                    n = 2;
                }
            }
        }
        // then the block holding the latest segment; then the most recently touched
        let first = self.last_touched.filter(|&i| i < self.ooo.len() && Some(i) != dsack_range);
        if let Some(i) = first {
            h.push_sack(SackBlock { start: self.ooo[i].start, end: self.ooo[i].end });
            n += 1;
        }
        let listed = |k: usize| Some(k) == first || Some(k) == dsack_range;
        if self.ooo.len() > n && n < MAX_SACK_BLOCKS {
            // the index is built here, where it is read, so that a receiver that never sends
            // SACK blocks (the connection level of Multipath TCP) never keeps one
            if self.by_touch.is_none() && self.ooo.len() > INDEX_ABOVE {
                self.by_touch = Some(self.ooo.iter().map(|r| (r.touched, r.start)).collect());
            }
            if let Some(ix) = self.by_touch.as_ref() {
                // the most recently grown of the others, newest first, from the index
                for (_, &start) in ix.iter().rev() {
                    if n == MAX_SACK_BLOCKS {
                        break;
                    }
                    let k = self.ooo.partition_point(|r| r.start < start);
                    if listed(k) {
                        continue;
                    }
                    h.push_sack(SackBlock { start: self.ooo[k].start, end: self.ooo[k].end });
                    n += 1;
                }
                return;
            }
            let mut rest: [(u64, usize); 8] = [(0, usize::MAX); 8];
            let mut m = 0;
            for (k, r) in self.ooo.iter().enumerate() {
                if listed(k) {
                    continue;
                }
                // keep the few most recent in a tiny sorted array
                let item = (r.touched, k);
                if m < rest.len() {
                    rest[m] = item;
                    m += 1;
                } else if let Some(min_pos) = (0..m).min_by_key(|&p| rest[p].0) {
                    if rest[min_pos].0 < item.0 {
                        rest[min_pos] = item;
                    }
                }
            }
            rest[..m].sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
            for &(_, k) in rest[..m].iter() {
                if n == MAX_SACK_BLOCKS {
                    break;
                }
                h.push_sack(SackBlock { start: self.ooo[k].start, end: self.ooo[k].end });
                n += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(buffer: u64, ack_every: u32) -> TcpReceiver {
        TcpReceiver::new(ReceiverConfig { buffer, ack_every, delack_timeout: Dur::from_millis(200), ..ReceiverConfig::default() })
    }

    #[test]
    fn in_order_data_is_delivered_and_acked() {
        let mut r = rx(10_000, 1);
        let got = r.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!(got, Received { delivered: 1000, ack_now: true });
        let a = r.make_ack();
        assert_eq!((a.ack, a.n_sack(), a.wnd()), (1000, 0, 10_000));
    }

    #[test]
    fn hole_gives_sack_blocks_most_recent_first() {
        let mut r = rx(100_000, 1);
        r.on_segment(SimTime::ZERO, 0, 1000);
        r.on_segment(SimTime::ZERO, 2000, 1000);
        r.on_segment(SimTime::ZERO, 4000, 1000);
        let got = r.on_segment(SimTime::ZERO, 6000, 1000);
        assert!(got.ack_now);
        let a = r.make_ack();
        assert_eq!(a.ack, 1000);
        assert_eq!(
            a.sack_blocks().collect::<Vec<_>>(),
            [SackBlock { start: 6000, end: 7000 }, SackBlock { start: 4000, end: 5000 }, SackBlock { start: 2000, end: 3000 },]
        );
        // filling the first hole delivers through the first block
        let got = r.on_segment(SimTime::ZERO, 1000, 1000);
        assert_eq!(got.delivered, 2000);
        assert_eq!(r.rcv_nxt(), 3000);
        assert_eq!(r.buffered(), 2000);
    }

    #[test]
    fn adjacent_ranges_merge() {
        let mut r = rx(100_000, 1);
        r.on_segment(SimTime::ZERO, 2000, 1000);
        r.on_segment(SimTime::ZERO, 4000, 1000);
        r.on_segment(SimTime::ZERO, 3000, 1000);
        let a = r.make_ack();
        assert_eq!(a.sack_blocks().collect::<Vec<_>>(), [SackBlock { start: 2000, end: 5000 }]);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_timeout() {
        let mut r = rx(100_000, 2);
        assert!(!r.on_segment(SimTime::ZERO, 0, 1000).ack_now);
        assert_eq!(r.delack_deadline(), Some(SimTime::ZERO + Dur::from_millis(200)));
        assert!(r.on_segment(SimTime::ZERO, 1000, 1000).ack_now);
        r.make_ack();
        assert_eq!(r.delack_deadline(), None);
        // out of order is acknowledged at once
        assert!(r.on_segment(SimTime::ZERO, 5000, 1000).ack_now);
    }

    #[test]
    fn window_shrinks_with_held_data_but_edge_never_moves_left() {
        let mut r = rx(5000, 1);
        assert_eq!(r.window(), 5000);
        r.on_segment(SimTime::ZERO, 1000, 1000);
        r.on_segment(SimTime::ZERO, 2000, 1000);
        // free space is 3000 but the edge stays at 5000
        assert_eq!(r.window(), 5000);
        // beyond the edge is refused
        assert_eq!(r.on_segment(SimTime::ZERO, 5000, 1000).delivered, 0);
        assert_eq!(r.stats.beyond_window_drops, 1);
        r.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!(r.rcv_nxt(), 3000);
        assert_eq!(r.window(), 5000);
    }

    #[test]
    fn the_window_scale_caps_the_window_and_held_data_uses_the_headroom_first() {
        // a 5000 B buffer behind a window field that carries at most 4000 B
        let mut r = TcpReceiver::new(ReceiverConfig { buffer: 5000, max_window: 4000, ..ReceiverConfig::default() });
        assert_eq!(r.window(), 4000);
        r.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!(r.window(), 4000, "free space 5000, capped at 4000");
        // 1000 B held out of order: the free space, 4000, still fills the field
        r.on_segment(SimTime::ZERO, 2000, 1000);
        assert_eq!(r.window(), 4000);
        r.on_segment(SimTime::ZERO, 1000, 1000);
        assert_eq!((r.rcv_nxt(), r.window()), (3000, 4000));
        // 2000 B held: now the free space binds (3000)
        r.on_segment(SimTime::ZERO, 4000, 1000);
        r.on_segment(SimTime::ZERO, 5000, 1000);
        assert_eq!(r.window(), 4000, "the edge (7000) never moves left");
        r.on_segment(SimTime::ZERO, 3000, 1000);
        assert_eq!((r.rcv_nxt(), r.window()), (6000, 4000));
        // a 4000 B buffer without the cap offers less once data is held
        let mut u = rx(4000, 1);
        u.on_segment(SimTime::ZERO, 2000, 1000);
        u.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!((u.rcv_nxt(), u.window()), (1000, 3000));
        let mut c = TcpReceiver::new(ReceiverConfig { buffer: 5000, max_window: 4000, ..ReceiverConfig::default() });
        c.on_segment(SimTime::ZERO, 2000, 1000);
        c.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!((c.rcv_nxt(), c.window()), (1000, 4000));
    }

    #[test]
    fn duplicates_are_counted_and_acked() {
        let mut r = rx(5000, 2);
        r.on_segment(SimTime::ZERO, 0, 1000);
        let got = r.on_segment(SimTime::ZERO, 0, 1000);
        assert_eq!(got, Received { delivered: 0, ack_now: true });
        assert_eq!(r.stats.duplicate_segments, 1);
    }

    #[test]
    fn a_duplicate_below_the_ack_is_reported_first_once() {
        let mut r = rx(100_000, 1);
        r.on_segment(SimTime::ZERO, 0, 1000);
        r.on_segment(SimTime::ZERO, 1000, 1000);
        r.on_segment(SimTime::ZERO, 3000, 1000);
        r.make_ack();
        r.on_segment(SimTime::ZERO, 1000, 1000);
        let a = r.make_ack();
        assert_eq!(a.ack, 2000);
        assert_eq!(a.sack_blocks().collect::<Vec<_>>(), [SackBlock { start: 1000, end: 2000 }, SackBlock { start: 3000, end: 4000 },]);
        assert_eq!(a.dsack(), Some(SackBlock { start: 1000, end: 2000 }));
        assert_eq!(r.stats.dsacks_sent, 1);
        // the next ACK carries no D-SACK
        let a = r.make_ack();
        assert_eq!(a.sack_blocks().collect::<Vec<_>>(), [SackBlock { start: 3000, end: 4000 }]);
        assert_eq!(a.dsack(), None);
    }

    #[test]
    fn a_duplicate_above_the_ack_is_followed_by_its_range() {
        let mut r = rx(100_000, 1);
        r.on_segment(SimTime::ZERO, 2000, 1000);
        r.on_segment(SimTime::ZERO, 3000, 1000);
        r.on_segment(SimTime::ZERO, 6000, 1000);
        r.make_ack();
        r.on_segment(SimTime::ZERO, 3000, 1000);
        let a = r.make_ack();
        assert_eq!(
            a.sack_blocks().collect::<Vec<_>>(),
            [SackBlock { start: 3000, end: 4000 }, SackBlock { start: 2000, end: 4000 }, SackBlock { start: 6000, end: 7000 },]
        );
        assert_eq!(a.dsack(), Some(SackBlock { start: 3000, end: 4000 }));
        assert_eq!(r.stats.duplicate_segments, 1);
        assert_eq!(r.buffered(), 3000);
    }

    #[test]
    fn ece_is_sticky_until_cwr() {
        let mut r = rx(1 << 20, 2);
        let seg = |r: &mut TcpReceiver, k: u64, ecn: Ecn, cwr: bool| {
            let now_ecn = r.on_ecn(ecn, cwr);
            let got = r.on_segment(SimTime::ZERO, k * 1000, 1000);
            (now_ecn || got.ack_now, r.make_ack().ece())
        };
        assert_eq!(seg(&mut r, 0, Ecn::Ect0, false), (false, false));
        // CE: ECE at once (an immediate ACK even with delayed ACKs), then on every ACK
        assert_eq!(seg(&mut r, 1, Ecn::Ce, false), (true, true));
        for k in 2..6 {
            assert!(seg(&mut r, k, Ecn::Ect0, false).1, "ECE stays on ACK {k}");
        }
        // CWR stops it (and is acknowledged at once)
        assert_eq!(seg(&mut r, 6, Ecn::Ect0, true), (true, false));
        assert!(!seg(&mut r, 7, Ecn::Ect0, false).1);
        // CE on the segment carrying CWR starts it again
        assert_eq!(seg(&mut r, 8, Ecn::Ce, false), (true, true));
        assert_eq!(seg(&mut r, 9, Ecn::Ce, true), (true, true));
        assert_eq!(r.stats.ecn_ce_received, 3);
    }

    #[test]
    fn without_dsack_duplicates_are_not_reported() {
        let mut r = TcpReceiver::new(ReceiverConfig { buffer: 100_000, dsack: false, ..ReceiverConfig::default() });
        r.on_segment(SimTime::ZERO, 0, 1000);
        r.on_segment(SimTime::ZERO, 0, 1000);
        let a = r.make_ack();
        assert_eq!((a.n_sack(), a.dsack()), (0, None));
        assert_eq!(r.stats.dsacks_sent, 0);
    }

    #[test]
    fn without_sack_acks_carry_no_blocks_even_for_holes_and_duplicates() {
        let mut r = TcpReceiver::new(ReceiverConfig { buffer: 100_000, sack: false, ..ReceiverConfig::default() });
        r.on_segment(SimTime::ZERO, 0, 1000);
        r.make_ack();
        // a hole and a duplicate: acknowledged at once, with neither SACK nor D-SACK
        assert!(r.on_segment(SimTime::ZERO, 2000, 1000).ack_now);
        let a = r.make_ack();
        assert_eq!((a.ack, a.n_sack(), a.dsack()), (1000, 0, None));
        assert!(r.on_segment(SimTime::ZERO, 0, 1000).ack_now);
        let a = r.make_ack();
        assert_eq!((a.ack, a.n_sack(), a.dsack()), (1000, 0, None));
        assert_eq!(r.buffered(), 1000);
        assert_eq!(r.stats.dsacks_sent, 0);
        // the same receiver with SACK reports both
        let mut r = rx(100_000, 1);
        r.on_segment(SimTime::ZERO, 0, 1000);
        r.on_segment(SimTime::ZERO, 2000, 1000);
        assert_eq!(r.make_ack().n_sack(), 1);
    }

    #[test]
    fn ranges_dropped_at_the_front_behave_as_a_plain_vector() {
        // random pushes, inserts, replacements and front drops against a Vec doing the same
        let mut rng = crate::rng::Rng::from_seed(11);
        let (mut r, mut model) = (Ranges::default(), Vec::<Range>::new());
        let range = |x: u64| Range { start: x, end: x + 1, touched: x };
        for step in 0..20_000u64 {
            let n = model.len() as u64;
            match rng.below(5) {
                0 | 1 => {
                    r.push(range(step));
                    model.push(range(step));
                }
                2 => {
                    let i = rng.below(n + 1) as usize;
                    r.insert(i, range(step));
                    model.insert(i, range(step));
                }
                3 if n > 0 => {
                    let i = rng.below(n) as usize;
                    let j = i + 1 + rng.below(n - i as u64) as usize;
                    r.replace(i, j, range(step));
                    model.splice(i..j, [range(step)]);
                }
                _ => {
                    let k = rng.below(n.min(4) + 1) as usize;
                    r.drop_front(k);
                    model.drain(..k);
                }
            }
            let key = |x: &Range| (x.start, x.end, x.touched);
            assert_eq!(r.iter().map(key).collect::<Vec<_>>(), model.iter().map(key).collect::<Vec<_>>(), "step {step}");
            assert_eq!((r.len(), r.is_empty()), (model.len(), model.is_empty()));
            assert_eq!(r.last().map(key), model.last().map(key));
            assert_eq!(r.get(1).map(key), model.get(1).map(key));
            assert!(r.head < r.v.len() || r.v.is_empty(), "the dead front is never the whole vector");
        }
    }

    /// The bytes a receiver has been given, for tests that check it against them: the next
    /// byte expected and the duplicates (segments that brought no new byte).
    struct ByteMap {
        have: Vec<bool>,
        nxt: u64,
        dups: u64,
    }

    impl ByteMap {
        fn new(bytes: usize) -> ByteMap {
            ByteMap { have: vec![false; bytes], nxt: 0, dups: 0 }
        }

        /// Takes [seq, end) and answers how far the next expected byte moved.
        fn offer(&mut self, seq: u64, end: u64) -> u64 {
            let new = (seq..end).any(|b| !self.have[b as usize]);
            (seq..end).for_each(|b| self.have[b as usize] = true);
            let before = self.nxt;
            while self.have[self.nxt as usize] {
                self.nxt += 1;
            }
            self.dups += u64::from(!new);
            self.nxt - before
        }

        /// Bytes held beyond the next expected one, among the `span` that follow it.
        fn held(&self, span: usize) -> u64 {
            self.have[self.nxt as usize..self.nxt as usize + span].iter().filter(|&&h| h).count() as u64
        }
    }

    #[test]
    fn segments_anywhere_are_held_delivered_or_counted_as_duplicates_as_a_byte_map_says() {
        // random segments, mostly ahead of the next expected byte, some over held data or
        // straddling a held range's edge, against a map of the bytes received: a segment is a
        // duplicate exactly when it brings no new byte
        let mut rng = crate::rng::Rng::from_seed(32);
        for round in 0..40 {
            let mut r = rx(1 << 30, 2);
            let mut map = ByteMap::new(300_000);
            for step in 0..600 {
                let seq = map.nxt.saturating_sub(20) + rng.below(400);
                let end = seq + 1 + rng.below(60);
                let got = r.on_segment(SimTime::ZERO, seq, (end - seq) as u32);
                let moved = map.offer(seq, end);
                let at = format!("round {round}, step {step}: [{seq}, {end})");
                assert_eq!((r.rcv_nxt, got.delivered), (map.nxt, moved), "{at}");
                assert_eq!((r.stats.duplicate_segments, r.buffered()), (map.dups, map.held(500)), "{at}");
            }
        }
    }

    #[test]
    fn what_a_receiver_accepts_does_not_depend_on_whether_its_window_was_computed() {
        // the same random segments (in order, ahead, beyond the buffer, duplicates) to two
        // receivers with a small buffer, one acknowledging with its own window, the other with
        // a window given (a Multipath TCP subflow's ACK), which never computes its own: the
        // same answers and the same ACKs but for the window; the right edge advertised never
        // lies beyond the buffer's end, which alone decides what is accepted
        let mut rng = crate::rng::Rng::from_seed(5);
        let mut drops = 0;
        for round in 0..30 {
            let cfg = ReceiverConfig {
                buffer: 4_000 + 1_000 * rng.below(8),
                max_window: if round % 3 == 0 { 3_000 } else { u64::MAX },
                sack: round % 2 == 0,
                linux_delack: round % 4 == 1,
                handshake_rtt: Some(Dur::from_millis(10)),
                ..ReceiverConfig::default()
            };
            let (mut a, mut b) = (TcpReceiver::new(cfg.clone()), TcpReceiver::new(cfg));
            let mut t = SimTime::ZERO;
            for step in 0..2_000 {
                t += Dur::from_micros(100 * rng.below(3));
                let seq = a.rcv_nxt().saturating_sub(1_000) + 500 * rng.below(24);
                let len = 500 * (1 + rng.below(3)) as u32;
                let at = format!("round {round}, step {step}: [{seq}, +{len})");
                assert_eq!(a.on_segment(t, seq, len), b.on_segment(t, seq, len), "{at}");
                assert_eq!((a.rcv_nxt(), a.buffered(), &a.stats), (b.rcv_nxt(), b.buffered(), &b.stats), "{at}");
                if rng.below(2) == 0 {
                    let (ha, mut hb) = (a.make_ack(), b.make_ack_offering(7));
                    assert_eq!(hb.wnd(), 7, "{at}");
                    hb.set_wnd(ha.wnd());
                    assert_eq!(ha, hb, "{at}");
                }
                assert!(a.right_edge <= a.limit(), "{at}: the right edge beyond the buffer's end");
            }
            drops += a.stats.beyond_window_drops;
        }
        assert!(drops > 1_000, "only {drops} segments beyond the buffer");
    }

    #[test]
    fn a_segment_at_or_above_the_highest_range_is_held_as_the_general_insertion_holds_it() {
        // segments ahead of the next expected byte, each also given to a copy of the receiver
        // through the search and `insert` (the way every out-of-order segment took before
        // `on_other_segment` answered this case itself): the same ranges, growth order, counts
        // and SACK blocks
        let mut rng = crate::rng::Rng::from_seed(21);
        let mut answered = 0;
        for round in 0..20 {
            let mut r = rx(1 << 30, 1);
            for step in 0..1_000 {
                // at or just above the highest byte held, at the next expected byte (filling
                // the holes, so that the ranges stay few enough to be kept without the index),
                // or anywhere ahead
                let seq = match rng.below(3) {
                    0 => r.highest() + 100 * rng.below(3),
                    1 => r.rcv_nxt(),
                    _ => r.rcv_nxt() + 100 * rng.below(40),
                };
                let len = 100 * (1 + rng.below(2));
                let at = format!("round {round}, step {step}: [{seq}, +{len})");
                let top = seq > r.rcv_nxt() && r.by_touch.is_none() && r.ooo.last().is_none_or(|l| l.end <= seq);
                let mut general = r.clone();
                let got = r.on_segment(SimTime::ZERO, seq, len as u32);
                if top {
                    general.stats.segments += 1;
                    let k = general.first_ending_from(seq);
                    general.stats.out_of_order_segments += 1;
                    general.insert(k, seq, seq + len);
                    general.stats.max_buffered = general.stats.max_buffered.max(general.ooo_bytes);
                    assert_eq!(got, Received { delivered: 0, ack_now: true }, "{at}");
                    let key = |x: &Range| (x.start, x.end, x.touched);
                    let ranges = |x: &TcpReceiver| x.ooo.iter().map(key).collect::<Vec<_>>();
                    assert_eq!(ranges(&r), ranges(&general), "{at}");
                    assert_eq!(
                        (r.touch, r.last_touched, r.ooo_bytes, &r.stats),
                        (general.touch, general.last_touched, general.ooo_bytes, &general.stats),
                        "{at}"
                    );
                    assert_eq!(r.make_ack(), general.make_ack(), "{at}");
                    answered += 1;
                } else {
                    r.make_ack();
                }
            }
        }
        assert!(answered > 5_000, "only {answered} segments at or above the highest range");
    }

    #[test]
    fn a_receiver_without_sack_holds_in_its_grid_what_a_byte_map_says() {
        // chunks of 10 bytes (some of 20) on one lattice, scrambled over a window of 100
        // chunks as many subflows deliver them, against a map of the bytes received; now and
        // then a chunk off the lattice makes the receiver leave the grid for ranges
        let mut rng = crate::rng::Rng::from_seed(8);
        let (mut entered, mut left) = (0, 0);
        for round in 0..60 {
            let mut r = TcpReceiver::new(ReceiverConfig { buffer: 1 << 30, sack: false, ..ReceiverConfig::default() });
            let mut map = ByteMap::new(40_000);
            let mut used = false;
            let off_lattice = round % 3 == 0;
            for step in 0..1500 {
                let mut seq = (map.nxt / 10) * 10 + 10 * rng.below(100);
                let mut len = if rng.below(8) == 0 { 20 } else { 10 };
                if off_lattice && rng.below(300) == 0 {
                    seq += 1 + rng.below(9);
                    len = 1 + rng.below(25);
                }
                let end = seq + len;
                let got = r.on_segment(SimTime::ZERO, seq, len as u32);
                let moved = map.offer(seq, end);
                let held = map.held(1100);
                let highest = (0..map.nxt as usize + 1100).rev().find(|&b| map.have[b]).map_or(0, |b| b as u64 + 1);
                let at = format!("round {round}, step {step}: [{seq}, {end})");
                assert_eq!((r.rcv_nxt, got.delivered), (map.nxt, moved), "{at}");
                assert_eq!((r.stats.duplicate_segments, r.buffered(), r.highest()), (map.dups, held, highest), "{at}");
                assert_eq!(r.grid.held * r.grid.unit + r.ooo.iter().map(|x| x.end - x.start).sum::<u64>(), held, "{at}");
                assert!(!r.grid.in_use() || !r.ooo.is_empty(), "{at}: the grid in use behind no range");
                used |= r.grid.in_use();
            }
            entered += u64::from(used);
            left += u64::from(r.grid_refused);
        }
        assert!(entered >= 50 && left >= 10, "grid used in {entered} rounds, left in {left}");
    }

    #[test]
    fn sack_blocks_are_the_latest_range_then_the_most_recently_grown_with_few_or_many_ranges() {
        // segments arrive in a scrambled order that opens up to about 100 holes and closes
        // them again, so the receiver goes through the scan (few ranges), the index (many)
        // and back; every ACK must list the range just grown, then the others newest first
        let mut rng = crate::rng::Rng::from_seed(3);
        let mut order: Vec<u64> = (0..400).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut r = rx(1 << 30, 1);
        let mut max_ranges = 0;
        for k in order {
            r.on_segment(SimTime::ZERO, k * 1000, 1000);
            max_ranges = max_ranges.max(r.ooo.len());
            let mut want: Vec<SackBlock> = Vec::new();
            if let Some(i) = r.last_touched {
                want.push(SackBlock { start: r.ooo[i].start, end: r.ooo[i].end });
            }
            let mut rest: Vec<&Range> = r.ooo.iter().enumerate().filter(|&(i, _)| Some(i) != r.last_touched).map(|(_, x)| x).collect();
            rest.sort_by_key(|x| std::cmp::Reverse(x.touched));
            want.extend(rest.iter().map(|x| SackBlock { start: x.start, end: x.end }));
            want.truncate(MAX_SACK_BLOCKS);
            assert_eq!(r.make_ack().sack_blocks().collect::<Vec<_>>(), want);
        }
        assert!(max_ranges > 3 * INDEX_ABOVE, "only {max_ranges} ranges at most");
        assert_eq!(r.rcv_nxt(), 400_000);
    }

    #[test]
    fn linux_receivers_ack_a_pushed_segment_once_the_reader_has_everything() {
        let linux = ReceiverConfig { buffer: 1 << 30, linux_delack: true, ..ReceiverConfig::default() };
        let mut r = TcpReceiver::new(linux.clone());
        // past the quick ACKs of the start
        for k in 0..QUICK {
            assert!(r.on_segment(SimTime::ZERO, k * 1000, 1000).ack_now);
            r.make_ack();
        }
        // one segment pending: pushed and drained, it is acknowledged now
        assert!(!r.on_segment(SimTime::ZERO, QUICK * 1000, 1000).ack_now);
        assert!(r.push_ack(true));
        // not while the connection holds data out of order (a Multipath TCP subflow)
        assert!(!r.push_ack(false));
        // nothing pending once acknowledged
        r.make_ack();
        assert!(!r.push_ack(true));
        // nor while this receiver holds a hole (that ACK goes out at once anyway)
        r.on_segment(SimTime::ZERO, (QUICK + 2) * 1000, 1000);
        assert!(!r.push_ack(true));
        // RFC 5681 delayed ACKs ignore PSH
        let mut every2 = TcpReceiver::new(ReceiverConfig { linux_delack: false, ack_every: 2, ..linux });
        assert!(!every2.on_segment(SimTime::ZERO, 0, 1000).ack_now);
        assert!(!every2.push_ack(true));
    }

    const QUICK: u64 = super::super::delack::QUICKACKS as u64;

    #[test]
    fn linux_delayed_acks_quick_ack_the_start_then_ack_every_second_segment() {
        let cfg = ReceiverConfig {
            buffer: 1 << 30,
            delack_timeout: Dur::from_millis(40),
            linux_delack: true,
            handshake_rtt: Some(Dur::from_millis(3)),
            ..ReceiverConfig::default()
        };
        let mut r = TcpReceiver::new(cfg);
        let mut acks = Vec::new();
        for k in 0..40u64 {
            let now = SimTime(k * 1_200_000);
            if r.on_segment(now, k * 1000, 1000).ack_now {
                r.make_ack();
                acks.push(k);
            }
        }
        // 16 quick ACKs, then one for every second segment
        assert_eq!(&acks[..16], &(0..16).collect::<Vec<_>>()[..]);
        assert_eq!(&acks[16..], &(17..40).step_by(2).collect::<Vec<_>>()[..]);
        // an odd segment waits for the 40 ms timer
        let now = SimTime(40 * 1_200_000);
        assert!(!r.on_segment(now, 40_000, 1000).ack_now);
        assert_eq!(r.delack_deadline(), Some(now + Dur::from_millis(40)));
    }

    #[test]
    fn linux_receivers_ack_every_segment_while_the_window_grows_then_every_second() {
        let growth = WindowGrowth::linux(324_000, 1000);
        let phase = growth.segments(); // (324,000 - 256,000) / 2,000 = 34
        assert_eq!(phase, 34);
        let cfg = ReceiverConfig {
            buffer: u64::MAX / 4,
            delack_timeout: Dur::from_millis(40),
            linux_delack: true,
            handshake_rtt: Some(Dur::from_millis(3)),
            window_growth: Some(growth),
            ..ReceiverConfig::default()
        };
        let mut r = TcpReceiver::new(cfg);
        let mut acks = Vec::new();
        for k in 0..120u64 {
            if r.on_segment(SimTime(k * 1_200_000), k * 1000, 1000).ack_now {
                r.make_ack();
                acks.push(k);
            }
        }
        // every segment while the window grows, then the start's 16 quick ACKs, then every
        // second segment
        let quick = phase + QUICK;
        assert_eq!(&acks[..quick as usize], &(0..quick).collect::<Vec<_>>()[..]);
        assert_eq!(&acks[quick as usize..], &(quick + 1..120).step_by(2).collect::<Vec<_>>()[..]);
    }
}
