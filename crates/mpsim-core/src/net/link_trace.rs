//! Trace-driven link capacity in Mahimahi's format (`mm-link`'s packet delivery traces).
//!
//! A trace file has one line per delivery opportunity: a whole number of milliseconds from
//! the start of the trace. Each opportunity lets [`OPPORTUNITY_BYTES`] leave the bottleneck
//! queue; a millisecond with several opportunities repeats its timestamp. When the trace
//! ends it starts over, shifted by its last timestamp (the period).
//!
//! [`TraceCursor`] turns the opportunities into departure times the way `mm-link`'s
//! `LinkQueue::rationalize` does (Mahimahi's `src/frontend/link_queue.cc`; docs/traces.md says
//! which version and what differs):
//!
//! - the queue's bytes drain in order through the opportunities' bytes: several small packets
//!   share one opportunity, and a packet whose bytes do not all fit continues in the next
//!   one; a packet leaves at the opportunity that carries its last byte;
//! - an opportunity serves only packets that arrived before it (at an equal time the
//!   opportunity comes first, as `mm-link` processes the opportunities due before it queues a
//!   packet); bytes of an opportunity that find the queue empty are lost;
//! - the schedule starts at time zero of the simulation and repeats without end.

use crate::time::{Dur, SimTime};
use std::fmt;
use std::io::Read;
use std::path::Path;

/// Bytes one delivery opportunity lets through (an Ethernet MTU, as the traces' README
/// counts; `mm-link`'s code uses 1504, its largest TUN payload).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// The largest trace file read: about 8 million opportunities.
pub const MAX_TRACE_FILE_BYTES: u64 = 64 << 20;

/// The largest timestamp, in milliseconds: the longest scenario duration (1,000,000 s).
pub const MAX_TRACE_MS: u64 = 1_000_000_000;

const NS_PER_MS: u64 = 1_000_000;

/// A problem with a trace: the 1-based line it is on (0 for the whole file) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

fn at_line(line: usize, message: impl Into<String>) -> TraceError {
    TraceError { line, message: message.into() }
}

/// The delivery opportunities of one trace, in nanoseconds from its start.
#[derive(Clone, PartialEq, Eq)]
pub struct LinkTrace {
    /// The file as the scenario names it (for messages and descriptions).
    pub file: String,
    /// Opportunity times, non-decreasing; the last one is the period, above zero.
    times_ns: Vec<u64>,
}

impl fmt::Debug for LinkTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LinkTrace({:?}, {} opportunities over {})", self.file, self.opportunities(), self.period())
    }
}

impl LinkTrace {
    /// Reads a trace from its text. Lines may end in "\r\n" and carry spaces around the
    /// number; an empty line is an error, as it is to `mm-link`.
    pub fn parse(text: &str, file: &str) -> Result<LinkTrace, TraceError> {
        let mut times_ns: Vec<u64> = Vec::new();
        let mut last_ms = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() {
                return Err(at_line(n, "empty line; each line is one delivery opportunity in whole milliseconds"));
            }
            if !line.bytes().all(|b| b.is_ascii_digit()) {
                let shown: String = line.chars().take(40).collect();
                return Err(at_line(n, format!("expected a whole number of milliseconds, found '{}'", shown.escape_debug())));
            }
            let ms = line
                .parse::<u64>()
                .ok()
                .filter(|&ms| ms <= MAX_TRACE_MS)
                .ok_or_else(|| at_line(n, format!("a timestamp above {MAX_TRACE_MS} ms (1,000,000 s, the longest scenario)")))?;
            if ms < last_ms {
                return Err(at_line(
                    n,
                    format!("timestamp {ms} ms is earlier than the one before ({last_ms} ms); timestamps must not decrease"),
                ));
            }
            last_ms = ms;
            times_ns.push(ms * NS_PER_MS);
        }
        if times_ns.is_empty() {
            return Err(at_line(0, "is empty; a trace needs at least one delivery opportunity"));
        }
        if last_ms == 0 {
            return Err(at_line(
                times_ns.len(),
                "the last timestamp is 0 ms: the trace must last longer than zero (it repeats with its last timestamp as period)",
            ));
        }
        Ok(LinkTrace { file: file.to_string(), times_ns })
    }

    /// Reads a trace file. `shown` names it in messages (the name the scenario gives).
    /// Only a regular file of at most [`MAX_TRACE_FILE_BYTES`] is read.
    pub fn read(path: &Path, shown: &str) -> Result<LinkTrace, TraceError> {
        let whole = |m: String| at_line(0, m);
        let meta = std::fs::metadata(path).map_err(|e| whole(format!("cannot read the file: {}", io_reason(&e))))?;
        if meta.is_dir() {
            return Err(whole("is a directory, not a trace file".into()));
        }
        if !meta.is_file() {
            return Err(whole("is not a regular file (a device, pipe or socket); give a trace file".into()));
        }
        if meta.len() == 0 {
            // (also what /proc files report: they are not read, some block)
            return Err(whole("is empty; a trace needs at least one delivery opportunity".into()));
        }
        if meta.len() > MAX_TRACE_FILE_BYTES {
            return Err(whole(format!("is larger than {} MB; a trace file has at most that", MAX_TRACE_FILE_BYTES >> 20)));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TRACE_FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| whole(format!("cannot read the file: {}", io_reason(&e))))?;
        if bytes.len() as u64 > MAX_TRACE_FILE_BYTES {
            return Err(whole(format!("is larger than {} MB; a trace file has at most that", MAX_TRACE_FILE_BYTES >> 20)));
        }
        let text = String::from_utf8(bytes).map_err(|_| whole("is not a text file".into()))?;
        LinkTrace::parse(&text, shown)
    }

    /// Delivery opportunities in one period.
    pub fn opportunities(&self) -> usize {
        self.times_ns.len()
    }

    /// The trace's length: its last timestamp, after which it repeats.
    pub fn period(&self) -> Dur {
        Dur(*self.times_ns.last().expect("a trace is never empty"))
    }

    /// The timestamps as written, in milliseconds.
    pub fn millis(&self) -> impl Iterator<Item = u64> + '_ {
        self.times_ns.iter().map(|t| t / NS_PER_MS)
    }

    /// Mean capacity over one period, in bit/s: every opportunity's bytes over the period.
    pub fn mean_rate_bps(&self) -> f64 {
        self.opportunities() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / self.period().as_secs_f64()
    }

    /// The time of opportunity `idx` of repetition `cycle`.
    #[inline]
    fn time(&self, cycle: u64, idx: usize) -> u64 {
        cycle * self.period().0 + self.times_ns[idx]
    }

    /// The first opportunity strictly after `t`, as (repetition, index).
    fn first_after(&self, t: u64) -> (u64, usize) {
        let p = self.period().0;
        let cycle = t / p;
        let off = t - cycle * p;
        // the last time is the period, above `off`: the search always ends inside the trace
        (cycle, self.times_ns.partition_point(|&x| x <= off))
    }

    /// As `first_after`, knowing that it is at or after opportunity `idx` of repetition
    /// `cycle`: in the same repetition the search gallops from there (the idle gaps of a link
    /// are mostly short, and a search of the whole trace would touch it all).
    fn first_after_from(&self, cycle: u64, idx: usize, t: u64) -> (u64, usize) {
        let p = self.period().0;
        if t / p != cycle {
            return self.first_after(t);
        }
        let off = t - cycle * p;
        let times = &self.times_ns;
        let (mut lo, mut step) = (idx, 1);
        while lo + step < times.len() && times[lo + step] <= off {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step + 1).min(times.len());
        (cycle, lo + times[lo..hi].partition_point(|&x| x <= off))
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Where a link stands in its trace: the next opportunity not yet used and what is left of
/// the one the latest packet left in.
#[derive(Clone, Debug)]
pub struct TraceCursor {
    trace: std::sync::Arc<LinkTrace>,
    /// The next opportunity no packet has used: (repetition, index).
    cycle: u64,
    idx: usize,
    /// The opportunity the latest packet left in, and its bytes no packet has used yet.
    last: u64,
    left: u32,
}

impl TraceCursor {
    pub fn new(trace: std::sync::Arc<LinkTrace>) -> TraceCursor {
        TraceCursor { trace, cycle: 0, idx: 0, last: 0, left: 0 }
    }

    pub fn trace(&self) -> &LinkTrace {
        &self.trace
    }

    /// Takes the opportunity the cursor is at, moving it on; returns its time.
    #[inline]
    fn take(&mut self) -> u64 {
        let t = self.trace.time(self.cycle, self.idx);
        self.idx += 1;
        if self.idx == self.trace.times_ns.len() {
            self.idx = 0;
            self.cycle += 1;
        }
        t
    }

    /// A packet of `size` bytes joins the queue at `at`, behind every packet scheduled
    /// before it (calls come in non-decreasing `at`). Returns when its first byte and its
    /// last byte leave: the times of the opportunities that carry them.
    pub fn schedule(&mut self, at: SimTime, size: u32) -> (SimTime, SimTime) {
        let mut rest = size;
        let mut first = None;
        if self.left > 0 && at.0 < self.last {
            // queued before the opportunity the packet ahead of it left in: it takes what
            // that packet left of it
            let used = rest.min(self.left);
            self.left -= used;
            rest -= used;
            first = Some(self.last);
            if rest == 0 {
                return (SimTime(self.last), SimTime(self.last));
            }
        } else if self.trace.time(self.cycle, self.idx) <= at.0 {
            // the queue was empty for a while: the opportunities it had are gone
            (self.cycle, self.idx) = self.trace.first_after_from(self.cycle, self.idx, at.0);
        }
        loop {
            let t = self.take();
            let first = *first.get_or_insert(t);
            let used = rest.min(OPPORTUNITY_BYTES);
            rest -= used;
            if rest == 0 {
                self.last = t;
                self.left = OPPORTUNITY_BYTES - used;
                return (SimTime(first), SimTime(t));
            }
        }
    }

    /// A managed queue (one whose packets leave when an AQM lets them, `aqm/`): when the
    /// next packet to leave can have its first byte sent, the transmitter being free at `now`.
    /// That is the rest of the opportunity the latest packet ended in, if it ended at `now`
    /// or later and left bytes unused (mm-link fills an opportunity with the packets queued
    /// when it comes), else the next unused opportunity at or after `now`.
    pub fn next_start(&mut self, now: SimTime) -> SimTime {
        if self.left > 0 && now.0 <= self.last {
            return SimTime(self.last);
        }
        if self.trace.time(self.cycle, self.idx) < now.0 {
            // idle: the opportunities before `now` went unused
            (self.cycle, self.idx) = self.trace.first_after_from(self.cycle, self.idx, now.0 - 1);
        }
        SimTime(self.trace.time(self.cycle, self.idx))
    }

    /// A managed queue: a packet of `size` bytes starts at `at`, a time `next_start` gave.
    /// Returns when its last byte leaves.
    pub fn send_from(&mut self, at: SimTime, size: u32) -> SimTime {
        let mut rest = size;
        if self.left > 0 && at.0 == self.last {
            let used = rest.min(self.left);
            self.left -= used;
            rest -= used;
            if rest == 0 {
                return at;
            }
        }
        loop {
            let t = self.take();
            let used = rest.min(OPPORTUNITY_BYTES);
            rest -= used;
            if rest == 0 {
                self.last = t;
                self.left = OPPORTUNITY_BYTES - used;
                return SimTime(t);
            }
        }
    }

    /// Everything queued is gone at `now` (the link went down): the opportunities after
    /// `now` are free again.
    pub fn reset(&mut self, now: SimTime) {
        (self.cycle, self.idx) = self.trace.first_after(now.0);
        self.last = now.0;
        self.left = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cursor(text: &str) -> TraceCursor {
        TraceCursor::new(Arc::new(LinkTrace::parse(text, "t").unwrap()))
    }

    fn ms(x: u64) -> SimTime {
        SimTime(x * NS_PER_MS)
    }

    #[test]
    fn reads_the_format_and_its_figures() {
        let t = LinkTrace::parse("1\n1\n2\r\n 5 \n5\n10\n", "t").unwrap();
        assert_eq!(t.opportunities(), 6);
        assert_eq!(t.period(), Dur::from_millis(10));
        assert_eq!(t.millis().collect::<Vec<_>>(), vec![1, 1, 2, 5, 5, 10]);
        assert!((t.mean_rate_bps() - 6.0 * 12_000.0 / 0.010).abs() < 1e-6);
        // no newline after the last line is fine, a leading 0 too
        assert_eq!(LinkTrace::parse("0\n3", "t").unwrap().period(), Dur::from_millis(3));
    }

    #[test]
    fn bad_traces_name_the_line() {
        let e = |text: &str| LinkTrace::parse(text, "t").unwrap_err();
        assert_eq!(e(""), at_line(0, "is empty; a trace needs at least one delivery opportunity"));
        let d = e("1\n5\n4\n");
        assert_eq!(d.line, 3);
        assert!(d.message.contains("earlier than the one before (5 ms)"), "{d}");
        for bad in ["1.5", "-3", "x", "1e3", "0x10"] {
            let err = e(&format!("1\n{bad}\n"));
            assert_eq!(err.line, 2, "{bad}");
            assert!(err.message.contains("whole number of milliseconds"), "{bad}: {err}");
        }
        assert_eq!(e("1\n\n2\n").line, 2);
        let z = e("0\n0\n");
        assert_eq!(z.line, 2);
        assert!(z.message.contains("last timestamp is 0 ms"), "{z}");
        assert_eq!(e("1\n99999999999999999999999\n").line, 2);
        assert!(e(&format!("{}\n", MAX_TRACE_MS + 1)).message.contains("above"));
        assert_eq!(e("3\n0\n").to_string(), "line 2: timestamp 0 ms is earlier than the one before (3 ms); timestamps must not decrease");
    }

    #[test]
    fn a_missing_or_odd_file_is_refused() {
        let e = LinkTrace::read(Path::new("/nonexistent/trace.down"), "trace.down").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (0, "cannot read the file: no such file"));
        let e = LinkTrace::read(Path::new("/dev/null"), "null").unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
        let e = LinkTrace::read(Path::new("/"), "root").unwrap_err();
        assert!(e.message.contains("directory"), "{e}");
        // a pseudo-file that says it is empty is not read (/proc/kmsg would block)
        let e = LinkTrace::read(Path::new("/proc/self/status"), "status").unwrap_err();
        assert!(e.message.starts_with("is empty"), "{e}");
    }

    #[test]
    fn full_packets_leave_one_per_opportunity_and_idle_ones_are_lost() {
        let mut c = cursor("1\n2\n2\n4\n");
        // three full packets at 0: opportunities at 1, 2 and 2
        assert_eq!(c.schedule(ms(0), 1500), (ms(1), ms(1)));
        assert_eq!(c.schedule(ms(0), 1500), (ms(2), ms(2)));
        assert_eq!(c.schedule(ms(0), 1500), (ms(2), ms(2)));
        // the next one waits for 4, then the trace repeats: period 4, so 5, 6, 6, 8
        assert_eq!(c.schedule(ms(0), 1500), (ms(4), ms(4)));
        assert_eq!(c.schedule(ms(0), 1500), (ms(5), ms(5)));
        // a packet at 7 finds the opportunities at 6 passed unused: it takes 8
        assert_eq!(c.schedule(ms(7), 1500), (ms(8), ms(8)));
        // an arrival at the very time of an opportunity misses it: at 9 it takes 10, not 9
        assert_eq!(c.schedule(ms(9), 1500), (ms(10), ms(10)));
        // far ahead: repetition 250 (1000 ms), after 1000.5 ms comes 1001
        assert_eq!(c.schedule(SimTime(1_000_500_000), 1500), (ms(1001), ms(1001)));
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_several() {
        let mut c = cursor("1\n2\n3\n10\n");
        // 40 + 1000 + 460 bytes fill the opportunity at 1 exactly
        assert_eq!(c.schedule(ms(0), 40), (ms(1), ms(1)));
        assert_eq!(c.schedule(ms(0), 1000), (ms(1), ms(1)));
        assert_eq!(c.schedule(SimTime(500_000), 460), (ms(1), ms(1)));
        // 1000 bytes at 2, then a 1500-byte packet starts with 500 bytes at 2 and ends at 3
        assert_eq!(c.schedule(ms(1) + Dur(1), 1000), (ms(2), ms(2)));
        assert_eq!(c.schedule(ms(1) + Dur(2), 1500), (ms(2), ms(3)));
        // 500 bytes are left at 3, but this packet arrives at 3 itself: too late for them
        assert_eq!(c.schedule(ms(3), 100), (ms(10), ms(10)));
        // a 4000-byte packet (jumbo) takes 1400 more at 10, then 11 (1500) and 12 (1100)
        assert_eq!(c.schedule(ms(4), 4000), (ms(10), ms(12)));
        // what 12 has left (400 bytes) goes to the next packet queued before 12
        assert_eq!(c.schedule(ms(11), 400), (ms(12), ms(12)));
        assert_eq!(c.schedule(ms(11), 1), (ms(13), ms(13)));
    }

    #[test]
    fn the_galloping_search_finds_what_the_whole_search_finds() {
        let t = LinkTrace::parse("0\n1\n1\n1\n4\n9\n9\n10\n15\n16\n30\n", "t").unwrap();
        for cycle in 0..2u64 {
            for idx in 0..t.opportunities() {
                let from = t.time(cycle, idx);
                for x in 0..40u64 {
                    let at = from.saturating_sub(1) + x * 500_000;
                    if t.first_after(at) >= (cycle, idx) {
                        assert_eq!(t.first_after_from(cycle, idx, at), t.first_after(at), "from ({cycle}, {idx}) to {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_reset_frees_the_opportunities_after_it() {
        let mut c = cursor("1\n2\n3\n4\n");
        for k in 1..=4 {
            assert_eq!(c.schedule(ms(0), 1500).1, ms(k));
        }
        // the link goes down at 1.5 ms: the packets due at 2, 3, 4 are gone
        c.reset(SimTime(1_500_000));
        assert_eq!(c.schedule(SimTime(1_600_000), 1500), (ms(2), ms(2)));
    }
}
