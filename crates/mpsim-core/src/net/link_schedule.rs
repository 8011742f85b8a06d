//! Time-varying links: a schedule of steps giving a link's rate, delay and loss rate over
//! time (scenario key `schedule`, docs/links.md).
//!
//! Each step holds from its time `at` until the next step; a value a step leaves out keeps
//! what was in force before it, and before the first step the link's own keys (`rate`,
//! `delay`, `loss`) hold. After the last step its values hold to the end of the run.
//!
//! [`ScheduleCursor`] gives one direction of a link its departures and its delay and loss:
//!
//! - **Rate.** The rate is a piecewise-constant capacity function, and a packet's
//!   transmission ends when the integral of the rate from its start reaches its bits, so a
//!   rate change takes effect on the packet in service and on every packet queued behind it.
//!   The sums are exact (integer bit·nanoseconds), and with one rate a departure is the
//!   fixed-rate link's to the nanosecond. A rate of 0 holds every packet in the queue until
//!   a later step gives a positive rate (the last rate given must be positive).
//! - **Delay.** A packet's propagation delay is the one in force when its transmission ends;
//!   a packet never overtakes the one before it (when the delay falls, a packet arrives no
//!   earlier than its predecessor), as with jitter.
//! - **Loss.** The uniform loss rate in force when a packet's transmission ends decides it.

use crate::scenario::units;
use crate::time::{Dur, SimTime};
use std::io::Read;
use std::path::Path;

/// The most steps a schedule may have.
pub const MAX_SCHEDULE_STEPS: usize = 100_000;

/// The largest schedule file read.
pub const MAX_SCHEDULE_FILE_BYTES: u64 = 8 << 20;

/// The columns of a schedule file and the keys of an inline step.
pub const SCHEDULE_COLUMNS: [&str; 4] = ["at", "rate", "delay", "loss"];

/// From `at` on, the values it gives (None: as before).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub at: Dur,
    pub rate_bps: Option<u64>,
    pub delay: Option<Dur>,
    /// A uniform loss rate, in [0, 1).
    pub loss: Option<f64>,
}

/// A link's schedule, checked: steps in increasing time, each giving a value, the last rate
/// given positive.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSchedule {
    /// The file as the scenario names it; None for a schedule written inline.
    pub file: Option<String>,
    steps: Vec<Step>,
}

impl Step {
    /// Checks one step against the one before it.
    pub fn check(&self, before: Option<&Step>) -> Result<(), String> {
        if self.rate_bps.is_none() && self.delay.is_none() && self.loss.is_none() {
            return Err("gives no value; a step gives at least one of rate, delay, loss".into());
        }
        if let Some(b) = before {
            if self.at <= b.at {
                return Err(format!("at {} is not after the step before ({}); steps must be in increasing time", self.at, b.at));
            }
        }
        if self.loss.is_some_and(|p| p >= 1.0) {
            return Err("a loss rate of 100% delivers nothing; use `down` for an outage".into());
        }
        Ok(())
    }
}

impl LinkSchedule {
    /// A schedule of steps each checked with [`Step::check`]; refused if it is empty or if its
    /// rate ends at 0 (nothing would ever leave the link again).
    pub fn new(file: Option<String>, steps: Vec<Step>) -> Result<LinkSchedule, String> {
        if steps.is_empty() {
            return Err("has no step; give at least one".into());
        }
        if steps.len() > MAX_SCHEDULE_STEPS {
            return Err(format!("has more than {MAX_SCHEDULE_STEPS} steps"));
        }
        if steps.iter().rev().find_map(|s| s.rate_bps) == Some(0) {
            return Err(
                "the last rate given is 0: nothing would ever leave the link; end on a positive rate (use `down` for an outage)".into()
            );
        }
        Ok(LinkSchedule { file, steps })
    }

    /// Reads a schedule file's text: a header naming the columns (`at` and any of `rate`,
    /// `delay`, `loss`, in any order), then one step per line, comma-separated, each value as
    /// the scenario writes it ("5s", "10Mbps", "30ms", "1%"); an empty cell keeps the value
    /// before. Blank lines and lines starting with `#` are skipped. Errors name the line.
    pub fn parse(text: &str, file: &str) -> Result<LinkSchedule, String> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let Some((hn, header)) = lines.next() else {
            return Err("is empty; a schedule file starts with a header line such as 'at,rate,delay,loss'".into());
        };
        let mut cols = Vec::new();
        for c in header.split(',').map(str::trim) {
            let name = c.to_ascii_lowercase();
            if !SCHEDULE_COLUMNS.contains(&name.as_str()) {
                return Err(format!("line {hn}: unknown column '{}'; the columns are {}", c.escape_debug(), SCHEDULE_COLUMNS.join(", ")));
            }
            if cols.contains(&name) {
                return Err(format!("line {hn}: column '{name}' appears twice"));
            }
            cols.push(name);
        }
        if !cols.iter().any(|c| c == "at") {
            return Err(format!("line {hn}: no 'at' column; the header names the columns, such as 'at,rate,delay,loss'"));
        }
        let mut steps: Vec<Step> = Vec::new();
        for (n, line) in lines {
            if steps.len() == MAX_SCHEDULE_STEPS {
                return Err(format!("line {n}: more than {MAX_SCHEDULE_STEPS} steps"));
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != cols.len() {
                return Err(format!("line {n}: {} values for {} columns ({})", cells.len(), cols.len(), cols.join(",")));
            }
            let mut step = Step { at: Dur::ZERO, rate_bps: None, delay: None, loss: None };
            for (col, cell) in cols.iter().zip(cells) {
                let bad = |m: String| format!("line {n}, column {col}: {m} (got '{}')", cell.escape_debug());
                if cell.is_empty() {
                    if col == "at" {
                        return Err(format!("line {n}, column at: missing; every step needs its time"));
                    }
                    continue;
                }
                match col.as_str() {
                    "at" => step.at = units::duration(cell).map_err(bad)?,
                    "rate" => step.rate_bps = Some(units::rate(cell).map_err(bad)?),
                    "delay" => step.delay = Some(units::duration(cell).map_err(bad)?),
                    _ => step.loss = Some(units::fraction(cell).map_err(bad)?),
                }
            }
            step.check(steps.last()).map_err(|m| format!("line {n}: {m}"))?;
            steps.push(step);
        }
        LinkSchedule::new(Some(file.to_string()), steps)
    }

    /// Reads a schedule file (a regular text file of at most [`MAX_SCHEDULE_FILE_BYTES`]).
    pub fn read(path: &Path, shown: &str) -> Result<LinkSchedule, String> {
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read the file: {}", io_reason(&e)))?;
        if !meta.is_file() {
            return Err("is not a regular file; give a schedule file (CSV)".into());
        }
        if meta.len() > MAX_SCHEDULE_FILE_BYTES {
            return Err(format!("is larger than {} MB; a schedule file has at most that", MAX_SCHEDULE_FILE_BYTES >> 20));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCHEDULE_FILE_BYTES).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read the file: {}", io_reason(&e)))?;
        let text = String::from_utf8(bytes).map_err(|_| "is not a text file".to_string())?;
        LinkSchedule::parse(&text, shown)
    }

    /// The same schedule with `rate_bps` in force from time 0 until a step gives a rate.
    pub fn with_rate_at_zero(mut self, rate_bps: u64) -> LinkSchedule {
        match self.steps.first_mut() {
            Some(first) if first.at == Dur::ZERO => {
                first.rate_bps.get_or_insert(rate_bps);
            }
            _ => self.steps.insert(0, Step { at: Dur::ZERO, rate_bps: Some(rate_bps), delay: None, loss: None }),
        }
        self
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Whether any step gives a rate (a delay, a loss rate).
    pub fn has_rate(&self) -> bool {
        self.steps.iter().any(|s| s.rate_bps.is_some())
    }
    pub fn has_delay(&self) -> bool {
        self.steps.iter().any(|s| s.delay.is_some())
    }
    pub fn has_loss(&self) -> bool {
        self.steps.iter().any(|s| s.loss.is_some())
    }

    /// The values in force over time for a link whose own keys give `rate_bps`, `delay` and
    /// the uniform loss rate `loss`: the segments a cursor walks, the first at time 0.
    fn segments(&self, rate_bps: u64, delay: Dur, loss: f64) -> Vec<Segment> {
        let mut now = Segment { from: 0, rate_bps, delay, loss };
        let mut segs = Vec::with_capacity(self.steps.len() + 1);
        for s in &self.steps {
            if s.at.0 > 0 {
                segs.push(now);
            }
            now = Segment {
                from: s.at.0,
                rate_bps: s.rate_bps.unwrap_or(now.rate_bps),
                delay: s.delay.unwrap_or(now.delay),
                loss: s.loss.unwrap_or(now.loss),
            };
        }
        segs.push(now);
        segs
    }

    /// The values in force at time 0 (rate, delay), for a link whose own keys give these.
    pub fn initial(&self, rate_bps: u64, delay: Dur) -> (u64, Dur) {
        let s = self.segments(rate_bps, delay, 0.0)[0];
        (s.rate_bps, s.delay)
    }

    /// The mean rate over [0, `until`), in bit/s (at least 1), for a link whose `rate` is
    /// `rate_bps`: what the figures that need one rate go by (estimates, utilisation).
    pub fn mean_rate_bps(&self, rate_bps: u64, until: Dur) -> u64 {
        let segs = self.segments(rate_bps, Dur::ZERO, 0.0);
        let end = until.0.max(1);
        let mut bits_ns = 0u128;
        for (i, s) in segs.iter().enumerate() {
            let to = segs.get(i + 1).map_or(end, |n| n.from.min(end));
            if s.from >= end {
                break;
            }
            bits_ns += s.rate_bps as u128 * (to - s.from) as u128;
        }
        ((bits_ns / end as u128) as u64).max(1)
    }
}

/// The values in force from `from` (ns) until the next segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    pub from: u64,
    pub rate_bps: u64,
    pub delay: Dur,
    pub loss: f64,
}

/// One direction of a scheduled link: its segments and the one it is at.
#[derive(Clone, Debug)]
pub struct ScheduleCursor {
    segs: Vec<Segment>,
    idx: usize,
    /// Whether the loss rate follows the schedule (the forward direction of a schedule with
    /// loss steps); otherwise the link's own loss model is left alone.
    pub sets_loss: bool,
}

const NS_PER_S: u128 = 1_000_000_000;

impl ScheduleCursor {
    /// The cursor of one direction: `rate_bps`, `delay` and `loss` are what the link's own
    /// keys give it; `with_loss` whether the schedule's loss steps apply to it.
    pub fn new(s: &LinkSchedule, rate_bps: u64, delay: Dur, loss: f64, with_loss: bool) -> ScheduleCursor {
        ScheduleCursor { segs: s.segments(rate_bps, delay, loss), idx: 0, sets_loss: with_loss && s.has_loss() }
    }

    /// Moves to the segment in force at `t` (forward as time goes; back after an outage).
    #[inline]
    fn seek(&mut self, t: u64) {
        while self.idx > 0 && self.segs[self.idx].from > t {
            self.idx -= 1;
        }
        while self.segs.get(self.idx + 1).is_some_and(|n| n.from <= t) {
            self.idx += 1;
        }
    }

    /// When the transmission of `size` bytes that starts at `start` ends: the time at which the
    /// rate's integral from `start` reaches its bits. Leaves the cursor at the segment in
    /// force then ([`ScheduleCursor::current`]).
    pub fn depart(&mut self, start: SimTime, size: u32) -> SimTime {
        self.seek(start.0);
        // most packets end in the segment they start in: one division in 64 bits
        let s = self.segs[self.idx];
        if s.rate_bps > 0 {
            let end = start.0 + Dur::tx_time(size as u64, s.rate_bps).0;
            if self.segs.get(self.idx + 1).is_none_or(|n| end < n.from) {
                return SimTime(end);
            }
        }
        let mut t = start.0;
        // what is left to send, in bit·ns: bits × 10^9
        let mut need = size as u128 * 8 * NS_PER_S;
        loop {
            let s = self.segs[self.idx];
            let next = self.segs.get(self.idx + 1).map(|n| n.from);
            if s.rate_bps > 0 {
                let end = t as u128 + need.div_ceil(s.rate_bps as u128);
                if next.is_none_or(|n| end <= n as u128) {
                    self.seek(end as u64);
                    return SimTime(end as u64);
                }
            }
            // the segment ends before the packet does: it sends its share, the next the rest
            let n = next.expect("the last rate is positive");
            need -= s.rate_bps as u128 * (n - t) as u128;
            t = n;
            self.idx += 1;
        }
    }

    /// The values in force at the cursor's time.
    #[inline]
    pub fn current(&self) -> &Segment {
        &self.segs[self.idx]
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    fn step(at_ms: u64, rate: Option<u64>, delay_ms: Option<u64>, loss: Option<f64>) -> Step {
        Step { at: Dur::from_millis(at_ms), rate_bps: rate, delay: delay_ms.map(Dur::from_millis), loss }
    }

    fn cursor(steps: Vec<Step>, rate: u64) -> ScheduleCursor {
        ScheduleCursor::new(&LinkSchedule::new(None, steps).unwrap(), rate, Dur::from_millis(10), 0.0, true)
    }

    #[test]
    fn one_rate_departs_as_a_fixed_link() {
        let mut c = cursor(vec![step(0, Some(10_000_000), None, None)], 1);
        assert_eq!(c.depart(ms(0), 1500), SimTime(0) + Dur::tx_time(1500, 10_000_000));
        // an odd rate: rounded up to the nanosecond as Dur::tx_time does
        let mut c = cursor(vec![step(0, Some(3_000_001), None, None)], 1);
        assert_eq!(c.depart(ms(7), 1499), ms(7) + Dur::tx_time(1499, 3_000_001));
    }

    #[test]
    fn departures_across_a_rate_change_follow_the_integral() {
        // 10 Mbit/s until 1 ms, then 1 Mbit/s: a 1500-byte packet from 0.4 ms sends
        // 10e6 × 0.6e-3 = 6000 bits by 1 ms, the other 6000 at 1 Mbit/s take 6 ms: it ends at 7 ms
        let mut c = cursor(vec![step(1, Some(1_000_000), None, None)], 10_000_000);
        assert_eq!(c.depart(SimTime(400_000), 1500), ms(7));
        assert_eq!(c.current().rate_bps, 1_000_000);
        // the next one, all at 1 Mbit/s: 12 ms
        assert_eq!(c.depart(ms(7), 1500), ms(19));
        // across several steps and a pause at 0: 8 Mbit/s [0, 1 ms) = 8000 bits, nothing in
        // [1, 3 ms), 4 Mbit/s from 3 ms: the remaining 4000 bits take 1 ms, so 4 ms
        let steps = vec![step(0, Some(8_000_000), None, None), step(1, Some(0), None, None), step(3, Some(4_000_000), None, None)];
        let mut c = cursor(steps.clone(), 1);
        assert_eq!(c.depart(ms(0), 1500), ms(4));
        // bits sent between start and end equal the packet's, for many starts and sizes
        for start in (0..6_000_000u64).step_by(77_777) {
            for size in [40u32, 1000, 1500, 9000] {
                let mut c = cursor(steps.clone(), 1);
                let end = c.depart(SimTime(start), size).0;
                let sent = |a: u64, b: u64| -> u128 {
                    // bit·ns sent over [a, b) by the rate function
                    let r = |t: u64| {
                        if t < 1_000_000 {
                            8_000_000u128
                        } else if t < 3_000_000 {
                            0
                        } else {
                            4_000_000
                        }
                    };
                    let cuts = [a, 1_000_000.clamp(a, b), 3_000_000.clamp(a, b), b];
                    cuts.windows(2).map(|w| r(w[0]) * (w[1] - w[0]) as u128).sum()
                };
                let need = size as u128 * 8 * NS_PER_S;
                assert!(sent(start, end) >= need, "start {start} size {size}: ends too early");
                assert!(sent(start, end - 1) < need, "start {start} size {size}: ends too late");
            }
        }
    }

    #[test]
    fn delay_and_loss_follow_the_steps_and_gaps_keep_the_values_before() {
        let steps = vec![step(5, None, Some(80), None), step(8, Some(2_000_000), None, Some(0.01)), step(9, None, None, Some(0.0))];
        let mut c = cursor(steps, 10_000_000);
        let at = |c: &mut ScheduleCursor, t: u64| {
            c.depart(SimTime(t), 1);
            *c.current()
        };
        // before the first step: the link's own values; then each step changes only its own
        assert_eq!(at(&mut c, 1_000_000), Segment { from: 0, rate_bps: 10_000_000, delay: Dur::from_millis(10), loss: 0.0 });
        assert_eq!(at(&mut c, 6_000_000), Segment { from: 5_000_000, rate_bps: 10_000_000, delay: Dur::from_millis(80), loss: 0.0 });
        assert_eq!(at(&mut c, 8_500_000), Segment { from: 8_000_000, rate_bps: 2_000_000, delay: Dur::from_millis(80), loss: 0.01 });
        assert_eq!(at(&mut c, 50_000_000).loss, 0.0, "the last step holds");
        // back in time (a link that went down frees the time after it): the cursor follows
        assert_eq!(at(&mut c, 2_000_000).delay, Dur::from_millis(10));
    }

    #[test]
    fn the_mean_rate_weighs_each_rate_by_its_time() {
        let s = LinkSchedule::new(
            None,
            vec![step(2000, Some(2_000_000), None, None), step(3000, Some(0), None, None), step(4000, Some(4_000_000), None, None)],
        )
        .unwrap();
        // 10 Mbit/s for 2 s, 2 for 1 s, 0 for 1 s, 4 for 6 s over 10 s: (20 + 2 + 0 + 24) / 10
        assert_eq!(s.mean_rate_bps(10_000_000, Dur::from_secs(10)), 4_600_000);
        assert_eq!(s.mean_rate_bps(10_000_000, Dur::from_secs(1)), 10_000_000, "only the run's time counts");
        assert_eq!(s.initial(10_000_000, Dur::from_millis(3)), (10_000_000, Dur::from_millis(3)));
    }

    #[test]
    fn a_file_reads_its_columns_and_names_the_line_of_a_problem() {
        let s = LinkSchedule::parse("# handover\nat, rate ,delay\n0s,10Mbps,20ms\n\n5s,2Mbps,\n7.5s,,80ms\n", "f.csv").unwrap();
        assert_eq!(
            s.steps(),
            &[step(0, Some(10_000_000), Some(20), None), step(5000, Some(2_000_000), None, None), step(7500, None, Some(80), None)]
        );
        assert_eq!(s.file.as_deref(), Some("f.csv"));
        let e = |text: &str| LinkSchedule::parse(text, "f").unwrap_err();
        assert_eq!(e(""), "is empty; a schedule file starts with a header line such as 'at,rate,delay,loss'");
        assert_eq!(e("at,speed\n"), "line 1: unknown column 'speed'; the columns are at, rate, delay, loss");
        assert_eq!(e("rate\n1Mbps\n"), "line 1: no 'at' column; the header names the columns, such as 'at,rate,delay,loss'");
        assert_eq!(e("at,rate,rate\n"), "line 1: column 'rate' appears twice");
        assert_eq!(e("at,rate\n0s,1Mbps\n2s,1Mbps,3\n"), "line 3: 3 values for 2 columns (at,rate)");
        assert_eq!(
            e("at,rate\n0s,1Mbps\n0s,2Mbps\n"),
            "line 3: at 0ns is not after the step before (0ns); steps must be in increasing time"
        );
        assert_eq!(
            e("at,rate\n2s,1Mbps\n1s,2Mbps\n"),
            "line 3: at 1.000s is not after the step before (2.000s); steps must be in increasing time"
        );
        assert_eq!(e("at,rate\n0s,-1Mbps\n"), "line 2, column rate: a rate must not be negative (got '-1Mbps')");
        assert_eq!(
            e("at,delay\n0s,5parsecs\n"),
            "line 2, column delay: unknown time unit 'parsecs' (use ns, us, ms, s, min or h) (got '5parsecs')"
        );
        assert_eq!(e("at,rate\n,1Mbps\n"), "line 2, column at: missing; every step needs its time");
        assert_eq!(e("at,rate\n1s,\n"), "line 2: gives no value; a step gives at least one of rate, delay, loss");
        assert_eq!(e("at,loss\n1s,100%\n"), "line 2: a loss rate of 100% delivers nothing; use `down` for an outage");
        assert_eq!(e("at,rate\n"), "has no step; give at least one");
        assert!(e("at,rate\n0s,1Mbps\n1s,0\n").starts_with("the last rate given is 0"));
        // a pause that ends is fine
        assert!(LinkSchedule::parse("at,rate,delay\n0s,0,\n1s,1Mbps,\n2s,,5ms\n", "f").is_ok());
    }

    fn link(steps: Vec<Step>, loss: f64) -> crate::net::Link {
        use crate::net::{Link, LossModel, LossProcess, QueueLimit};
        let s = LinkSchedule::new(None, steps).unwrap();
        let model = if loss > 0.0 { LossModel::Uniform { p: loss } } else { LossModel::None };
        let process = LossProcess::new(model, crate::rng::Rng::from_seed(3));
        let c = ScheduleCursor::new(&s, 10_000_000, Dur::from_millis(10), loss, true);
        Link::new("l".into(), 10_000_000, Dur::from_millis(10), QueueLimit::Packets(100), process).with_schedule(Some(c))
    }

    #[test]
    fn a_rate_change_reaches_the_packets_already_queued() {
        use crate::net::Fate;
        // 10 Mbit/s, 1 Mbit/s from 1 ms: the packet in service sends 10,000 bits by 1 ms and
        // its last 2,000 by 3 ms; the one queued behind it takes 12 ms at the new rate
        let mut l = link(vec![step(1, Some(1_000_000), None, None)], 0.0);
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(ms(3 + 10)));
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(ms(15 + 10)));
        // the queue is the fixed-rate link's: at 2 ms one packet is in service, one waits
        assert_eq!(l.queued(ms(2)), (1, 1500));
        assert_eq!(l.stats.busy, Dur::from_millis(15), "busy for the time it sends");
    }

    #[test]
    fn a_falling_delay_keeps_arrivals_in_order() {
        use crate::net::Fate;
        // 100 ms of delay, 10 ms from 5 ms: a packet sent at 10 ms would arrive at 21.2 ms,
        // before the one sent at 0 (101.2 ms): it arrives with it
        let mut l = link(vec![step(0, None, Some(100), None), step(5, None, Some(10), None)], 0.0);
        assert_eq!(l.delay, Dur::from_millis(100), "the delay at time 0 is the link's");
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(SimTime(101_200_000)));
        assert_eq!(l.offer(ms(10), 1500), Fate::Arrives(SimTime(101_200_000)));
        assert_eq!(l.offer(ms(200), 1500), Fate::Arrives(SimTime(211_200_000)));
        // a rising delay takes effect at once
        let mut l = link(vec![step(5, None, Some(50), None)], 0.0);
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(SimTime(11_200_000)));
        assert_eq!(l.offer(ms(6), 1500), Fate::Arrives(SimTime(57_200_000)));
    }

    #[test]
    fn the_loss_rate_switches_at_its_steps() {
        use crate::net::Fate;
        // 1% until 1 s, 30% until 2 s, none after
        let mut l = link(vec![step(1000, None, None, Some(0.3)), step(2000, None, None, Some(0.0))], 0.01);
        let mut lost = [0u32; 3];
        for k in 0..3000u64 {
            if l.offer(SimTime(k * 1_000_000), 100) == Fate::Lost {
                lost[(k / 1000) as usize] += 1;
            }
        }
        assert!((3..=25).contains(&lost[0]), "{lost:?}");
        assert!((240..=360).contains(&lost[1]), "{lost:?}");
        assert_eq!(lost[2], 0, "{lost:?}");
    }

    #[test]
    fn a_missing_file_is_refused() {
        assert_eq!(LinkSchedule::read(Path::new("/nonexistent/s.csv"), "s.csv").unwrap_err(), "cannot read the file: no such file");
        assert!(LinkSchedule::read(Path::new("/"), "root").unwrap_err().contains("not a regular file"));
    }
}
