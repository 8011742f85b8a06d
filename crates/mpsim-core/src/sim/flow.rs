//! Flows: an application over a transport connection, and what the application sees of its
//! data (write-to-delivery delay, jitter, per-class figures of a media stream).

use crate::app::{App, Frame, FrameQueue, Outcome};
use crate::metrics::{DelayStats, Jitter};
use crate::net::{Link, Route};
use crate::scenario::{AppSpec, FlowSpec, Scenario};
use crate::time::{Dur, SimTime};
use crate::transport::{Connection, Progress};
use std::collections::VecDeque;

/// Delivery figures of one class of writes (a frame type of a media stream).
pub(super) struct ClassStats {
    pub name: String,
    pub priority: u8,
    /// Frames written to the socket.
    pub written: u64,
    /// Frames discarded at the sender (refused by a full send buffer or dropped from the
    /// application's queue).
    pub refused: u64,
    pub delivered: u64,
    pub late: u64,
    pub delay: DelayStats,
    pub jitter: Jitter,
}

/// One application write whose data has not all reached the receiving application. Its
/// bytes are delivered in units of `unit` bytes counted from the start of the write (the last
/// unit may be shorter); each unit counts once in the delay figures, at the time its last
/// byte arrives. Keeping the units implicit makes a write of any size cost one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WriteRecord {
    /// End sequence of the write (it starts where the previous one ends).
    pub end: u64,
    pub at: SimTime,
    /// Bytes per unit; 0: the whole write is one unit.
    pub unit: u32,
    pub class: u8,
    /// Delivered whole ahead of the writes before it (a write on a stream of its own).
    pub done: bool,
}

impl WriteRecord {
    /// End sequence of the write's first unit, if it starts at `start`.
    fn first_unit_end(&self, start: u64) -> u64 {
        if self.unit == 0 {
            self.end
        } else {
            (start + self.unit as u64).min(self.end)
        }
    }
}

/// The application writes not yet wholly delivered, oldest first (one record per write,
/// however many delay units it holds), and how far the oldest one is delivered.
#[derive(Debug, Default)]
pub(super) struct WriteRecords {
    writes: VecDeque<WriteRecord>,
    /// End sequence of the oldest unit not yet delivered (of the front write).
    next: u64,
}

impl WriteRecords {
    /// Records a write of the bytes [start, end) at `at`, in units of `unit` bytes (0: one
    /// unit); it must start where the previous write ended.
    pub fn push(&mut self, start: u64, end: u64, at: SimTime, unit: u32, class: u8) {
        debug_assert!(start < end && self.writes.back().is_none_or(|w| w.end == start));
        let unit = if unit as u64 >= end - start { 0 } else { unit };
        let w = WriteRecord { end, at, unit, class, done: false };
        if self.writes.is_empty() {
            self.next = w.first_unit_end(start);
        }
        self.writes.push_back(w);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.writes.capacity()
    }

    /// Calls `unit(time written, class)` for every unit whose last byte is below `upto` and
    /// was not delivered before, oldest first, and forgets the writes wholly delivered.
    pub fn take_delivered(&mut self, upto: u64, mut unit: impl FnMut(SimTime, u8)) {
        while let Some(&w) = self.writes.front() {
            if self.next > upto {
                break;
            }
            let units = if w.unit == 0 {
                1
            } else if upto >= w.end {
                // the ends next, next + unit, ... below end, then end itself
                (w.end - self.next).div_ceil(w.unit as u64) + 1
            } else {
                // the ends next, next + unit, ... up to upto; the one after ends within the write
                let n = (upto - self.next) / w.unit as u64 + 1;
                self.next = (self.next + n * w.unit as u64).min(w.end);
                n
            };
            if upto >= w.end {
                self.writes.pop_front();
                if let Some(n) = self.writes.front() {
                    self.next = n.first_unit_end(w.end);
                }
            }
            for _ in 0..units {
                unit(w.at, w.class);
            }
        }
    }
}

impl WriteRecords {
    /// The write ending at `end` (one unit) was delivered whole, whatever became of the writes
    /// before it: calls `unit(time written, class)` for it, unless it was delivered before,
    /// and forgets the writes at the front that are delivered.
    pub fn take_message(&mut self, end: u64, mut unit: impl FnMut(SimTime, u8)) {
        let Ok(k) = self.writes.binary_search_by_key(&end, |w| w.end) else { return };
        let w = &mut self.writes[k];
        if w.done {
            return;
        }
        w.done = true;
        unit(w.at, w.class);
        while self.writes.front().is_some_and(|w| w.done) {
            let w = self.writes.pop_front().expect("a write");
            if let Some(n) = self.writes.front() {
                self.next = n.first_unit_end(w.end);
            }
        }
    }
}

/// A connection and its application.
pub(super) struct Flow {
    pub name: String,
    pub conn: Connection,
    pub mss: u32,
    /// The payload the send buffer holds at most (`tcp.snd_buf` as `tcp.snd_buf_accounting`
    /// counts it).
    pub snd_buf: u64,
    pub background: bool,
    pub app: App,
    /// The frames a media application holds while the send buffer cannot take them (None for
    /// other applications, and over UDP, which has no send buffer).
    pub queue: Option<FrameQueue>,
    /// Per frame type of a media stream (empty for other applications).
    pub classes: Vec<ClassStats>,
    pub deadline: Option<Dur>,
    /// Mean bit rate of a media stream (for the throughput-based PSNR).
    pub media_rate_bps: Option<f64>,
    pub start: SimTime,
    pub active: bool,
    pub total: Option<u64>,
    /// Application writes not yet wholly delivered, for the delay figures.
    pub writes: WriteRecords,
    pub delay: DelayStats,
    pub jitter: Jitter,
    /// Bytes discarded at the sender: paced writes refused by a full send buffer, and media
    /// frames dropped from the application's queue.
    pub refused: u64,
    pub completed_at: Option<SimTime>,
}

impl Flow {
    pub fn new(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Flow {
        let conn = Connection::new(s, f, links, routes);
        let header = conn.header_bytes(f.tcp.header);
        let (classes, deadline, media_rate_bps) = match &f.app {
            AppSpec::Media(m) => (
                m.classes
                    .iter()
                    .map(|c| ClassStats {
                        name: c.name.clone(),
                        priority: c.priority,
                        written: 0,
                        refused: 0,
                        delivered: 0,
                        late: 0,
                        delay: DelayStats::default(),
                        jitter: Jitter::default(),
                    })
                    .collect(),
                m.deadline,
                Some(m.rate_bps()),
            ),
            _ => (Vec::new(), None, None),
        };
        let queue = match &f.app {
            AppSpec::Media(m) if conn.has_send_buffer() => Some(FrameQueue::new(m.backlog.unwrap_or(f.tcp.snd_buf))),
            _ => None,
        };
        Flow {
            name: f.name.clone(),
            conn,
            mss: f.tcp.mss,
            snd_buf: f.tcp.snd_buf_payload(),
            background: f.background,
            app: App::new(&f.app, s.seed, &f.name, header),
            queue,
            classes,
            deadline,
            media_rate_bps,
            start: f.start,
            active: false,
            total: match f.app {
                AppSpec::Bulk { bytes } => bytes,
                _ => None,
            },
            writes: WriteRecords::default(),
            delay: DelayStats::default(),
            jitter: Jitter::default(),
            refused: 0,
            completed_at: None,
        }
    }

    pub fn progress(&self) -> Progress {
        self.conn.progress()
    }

    /// Bytes written and not yet acknowledged: what occupies the send buffer.
    fn unacked(&self) -> u64 {
        self.conn.unacked()
    }

    /// The payload the send buffer holds at most now: `snd_buf`, or less where the connection
    /// autotunes its own buffer ([`Connection::send_buffer`]).
    #[inline]
    fn snd_buf_now(&self) -> u64 {
        self.conn.send_buffer().map_or(self.snd_buf, |b| b.min(self.snd_buf))
    }

    /// The application writes `n` bytes produced at `now` (earlier for a media frame that
    /// waited in the application's queue), in units of at most `unit` bytes for the delay
    /// records (a segment for bulk transfers; None: the whole write is one unit).
    #[inline]
    pub fn app_write(&mut self, now: SimTime, n: u64, unit: Option<u32>, priority: u8, class: u8) {
        let start = self.conn.written();
        if n > 0 {
            self.writes.push(start, start + n, now, unit.unwrap_or(0), class);
        }
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.written += 1;
        }
        match self.deadline {
            None => self.conn.write(n, priority),
            Some(d) => self.conn.write_until(n, priority, Some(now + d)),
        }
    }

    /// Whether room freed in the send buffer is the application's to fill: a bulk
    /// application's, or a media application's holding frames.
    #[inline]
    pub fn refills(&self) -> bool {
        matches!(self.app, App::Bulk { .. }) || self.queue.as_ref().is_some_and(|q| !q.is_empty())
    }

    /// Tops up the send buffer of a bulk application, or writes the frames a media
    /// application holds, from the oldest, as long as the next one fits whole. After the
    /// application stops (`active` false) it writes nothing more.
    pub fn refill(&mut self, now: SimTime) {
        if !self.active {
            return;
        }
        if self.queue.is_some() {
            return self.write_queued();
        }
        let space = self.snd_buf_now().saturating_sub(self.unacked());
        let n = self.app.bulk_write(space, self.mss as u64);
        if n > 0 {
            self.app_write(now, n, Some(self.mss), 0, 0);
        }
    }

    /// A media application's part of [`refill`](Self::refill): writes the frames it holds.
    /// Out of line, so that a bulk application's refill (after every ACK) stays small.
    #[inline(never)]
    fn write_queued(&mut self) {
        let space = self.snd_buf_now().saturating_sub(self.unacked());
        if let Some(mut q) = self.queue.take() {
            q.drain(space, |f, o| self.frame_out(f, o));
            self.queue = Some(q);
        }
    }

    /// A paced application's write of `len` bytes. A media frame goes through the
    /// application's queue (`FrameQueue`): written whole when the send buffer has room for it
    /// and no older frame waits, otherwise held, and if the queue is over its bound the
    /// lowest-priority frames are discarded. Another paced write is accepted if the send
    /// buffer has room, otherwise refused (dropped at the sender). UDP has no send buffer.
    pub fn paced_write(&mut self, now: SimTime, len: u64, priority: u8, class: u8) {
        if !self.conn.has_send_buffer() {
            self.conn.write(len, priority);
        } else if let Some(mut q) = self.queue.take() {
            let buf = self.snd_buf_now();
            let space = buf.saturating_sub(self.unacked());
            q.offer(Frame { len, priority, class, at: now }, space, buf, |f, o| self.frame_out(f, o));
            self.queue = Some(q);
        } else if self.unacked() + len <= self.snd_buf_now() {
            self.app_write(now, len, None, priority, class);
        } else {
            self.discarded(len, class);
        }
    }

    /// A media frame leaves the application's queue: written to the socket (its delay counts
    /// from when it was produced), or discarded.
    fn frame_out(&mut self, f: Frame, o: Outcome) {
        match o {
            Outcome::Written => self.app_write(f.at, f.len, None, f.priority, f.class),
            Outcome::Discarded => self.discarded(f.len, f.class),
        }
    }

    /// A write of `len` bytes of class `class` discarded at the sender.
    fn discarded(&mut self, len: u64, class: u8) {
        self.refused += len;
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.refused += 1;
        }
    }

    /// Frames of class `class` still in the application's queue.
    pub fn queued(&self, class: usize) -> u64 {
        self.queue.as_ref().map_or(0, |q| q.iter().filter(|f| f.class as usize == class).count() as u64)
    }

    /// Records that the application's bytes up to `upto` reached the receiving application.
    pub fn app_delivered(&mut self, now: SimTime, upto: u64) {
        let mut writes = std::mem::take(&mut self.writes);
        writes.take_delivered(upto, |t, class| self.unit_delivered(now, t, class));
        self.writes = writes;
        if self.total == Some(upto) {
            self.completed_at = Some(now);
        }
    }

    /// Records that the write ending at `end`, on a stream of its own, reached the receiving
    /// application whole.
    pub fn message_delivered(&mut self, now: SimTime, end: u64) {
        let mut writes = std::mem::take(&mut self.writes);
        writes.take_message(end, |t, class| self.unit_delivered(now, t, class));
        self.writes = writes;
    }

    /// A unit of class `class` written at `t` reached the receiving application at `now`.
    #[inline]
    fn unit_delivered(&mut self, now: SimTime, t: SimTime, class: u8) {
        let d = now.since(t);
        self.delay.record(d);
        self.jitter.record(t, now);
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.delivered += 1;
            c.delay.record(d);
            c.jitter.record(t, now);
            if self.deadline.is_some_and(|dl| d > dl) {
                c.late += 1;
            }
        }
    }

    /// A datagram sent at `sent_at` arrived at `now`.
    pub fn datagram_delivered(&mut self, now: SimTime, sent_at: SimTime) {
        let d = now.since(sent_at);
        self.delay.record(d);
        self.jitter.record(sent_at, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The records as they were kept per unit: (end sequence, time, class) of every unit.
    fn per_unit(writes: &[(u64, u64, u64, u8)]) -> VecDeque<(u64, SimTime, u8)> {
        let mut out = VecDeque::new();
        let mut seq = 0;
        for &(n, unit, t, class) in writes {
            let end = seq + n;
            while seq < end {
                seq = (seq + unit).min(end);
                out.push_back((seq, SimTime(t), class));
            }
        }
        out
    }

    #[test]
    fn a_ranged_write_delivers_the_units_of_per_unit_records() {
        let mut rng = Rng::substream(7, "flow-test");
        for round in 0..200 {
            // writes of random sizes in units of a segment (bulk) or of the whole write (paced)
            let mut writes = Vec::new();
            for k in 0..1 + rng.below(12) {
                let n = 1 + rng.below(20_000);
                let unit = if rng.below(2) == 0 { 1 + rng.below(1500) } else { n };
                let unit = if rng.below(8) == 0 { unit.max(n) } else { unit };
                writes.push((n, unit, 1000 * k + round, (k % 3) as u8));
            }
            let total: u64 = writes.iter().map(|w| w.0).sum();
            let mut reference = per_unit(&writes);
            let mut ranged = WriteRecords::default();
            let mut seq = 0;
            for &(n, unit, t, class) in &writes {
                ranged.push(seq, seq + n, SimTime(t), if unit >= n { 0 } else { unit as u32 }, class);
                seq += n;
            }
            assert!(ranged.len() == writes.len());
            // deliveries at random growing points, ending with everything
            let mut upto = 0;
            while upto < total {
                upto = (upto + rng.below(6000)).min(total);
                let mut want = Vec::new();
                while reference.front().is_some_and(|&(end, _, _)| end <= upto) {
                    let (_, t, c) = reference.pop_front().unwrap();
                    want.push((t, c));
                }
                let mut got = Vec::new();
                ranged.take_delivered(upto, |t, c| got.push((t, c)));
                assert_eq!(got, want, "round {round}, delivered up to {upto}");
            }
            assert!(ranged.is_empty() && reference.is_empty());
        }
    }

    #[test]
    fn a_huge_send_buffer_costs_records_per_write_not_per_segment() {
        let text = "duration = \"300ms\"\ntcp = { snd_buf = \"100GB\" }\n[[link]]\nname = \"l\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n[[path]]\nname = \"p\"\nlinks = [\"l\"]\n[[flow]]\npath = \"p\"\n";
        let s = Scenario::from_toml(text, "t").unwrap();
        let mut sim = crate::Simulation::new(&s);
        while let Some(t) = sim.net.queue.peek_time().filter(|&t| t <= sim.net.end) {
            let (_, ev) = sim.net.queue.pop().expect("peeked");
            sim.net.now = t;
            sim.dispatch(ev);
        }
        let f = &sim.flows[0];
        // the first write fills 100 GB (68 million segments) in one record and is never
        // delivered; every later one refills what an ACK of at least a segment freed
        let delivered = f.delay.count();
        assert!(delivered > 1000, "data was delivered");
        assert!(f.writes.len() as u64 <= delivered + 1, "{} write records for {delivered} segments", f.writes.len());
        assert!(f.writes.capacity() <= 2 * f.writes.len() + 16, "{} write records reserved", f.writes.capacity());
    }

    #[test]
    fn writes_delivered_whole_out_of_order_count_once_and_free_their_records_in_order() {
        let mut w = WriteRecords::default();
        for (k, class) in [(0u64, 0u8), (1, 1), (2, 2)] {
            w.push(k * 100, (k + 1) * 100, SimTime(k), 0, class);
        }
        let mut got = Vec::new();
        // the third and second writes arrive whole before the first
        w.take_message(300, |t, c| got.push((t, c)));
        w.take_message(200, |t, c| got.push((t, c)));
        assert_eq!(w.len(), 3, "the first write still holds the front");
        w.take_message(200, |t, c| got.push((t, c)));
        w.take_message(150, |t, c| got.push((t, c)));
        w.take_message(100, |t, c| got.push((t, c)));
        assert_eq!(got, [(SimTime(2), 2), (SimTime(1), 1), (SimTime(0), 0)], "each write once");
        assert!(w.is_empty());
    }
}
