//! A unidirectional link: a transmitter of fixed rate behind a drop-tail FIFO, then a
//! propagation delay, with an optional random loss process and a down/up state.
//!
//! The FIFO is kept virtually: for each accepted packet the link records when its
//! transmission ends. A packet entering at `now` starts when the transmitter is free
//! (`busy_until`), so its arrival time at the far end is known at once. Occupancy at any
//! instant is the list of accepted packets whose transmission has not ended, minus the one in
//! service, exactly as in a real drop-tail queue in front of a transmitter.
//!
//! Packets on their way (queued, in service or propagating) wait in the link's `pipe` in
//! arrival order, which is also their order of entry, because the delay is constant. The
//! simulation therefore keeps at most one event per link, for the head of its pipe, as htsim's
//! pipe does: the event queue holds about as many entries as there are busy links.
//!
//! Jitter (optional): each delivered packet's propagation delay grows by a uniform random
//! amount in [0, jitter], but never so much that it overtakes the packet before it: arrivals
//! stay in FIFO order, as on a real link whose only variable delay is in the hosts and
//! devices at its ends. With no jitter no random draw is made.
//!
//! Congestion warning (TCP-Jersey's router support, ALGORITHMS.md §6.2): a link may keep an
//! exponentially weighted average of its queue, as RED does (Floyd & Jacobson 1993), and mark
//! every packet it accepts while that average is above a threshold: a deterministic,
//! non-probabilistic ECN. The average is updated on every arrival (dropped packets included)
//! with the queue the arrival finds, `avg = (1 − w)·avg + w·q`; after the transmitter was
//! idle for a time t, it first decays as if `m = t / (this packet's transmission time)`
//! packets of an empty queue had arrived, `avg = (1 − w)^m · avg` ([RECONSTRUCTED] RED's
//! idle rule with the arriving packet's size as the "typical" one). The queue is counted in
//! the unit of the threshold (packets or bytes), not counting the packet in service.
//!
//! Trace-driven capacity (`with_trace`): instead of a fixed rate, the transmitter sends in
//! the delivery opportunities of a Mahimahi trace (`link_trace.rs`). A packet's departure is
//! still known when it is offered, since it depends only on the packets ahead of it. The
//! queue then holds the packets whose first byte has not left, as `mm-link`'s does: a packet
//! waiting for an opportunity counts as queued even when the transmitter is otherwise idle,
//! and a packet whose bytes span opportunities is out of the queue once its first bytes have
//! left. The rate (`rate_bps`) is the trace's mean; it serves only the figures that need a
//! rate (utilisation, the congestion warning's idle decay, estimates).
//!
//! Managed queue (`with_aqm`): an AQM (`aqm/`) decides when a packet leaves, so its departure
//! is not known on arrival. The packet then waits in the discipline's real queue: the caller
//! hands it over with `enqueue`, asks `next_dequeue` when the transmitter can take the next
//! one (the end of the current transmission, or a traced link's next opportunity), and calls
//! `dequeue` then, which starts the transmission of whatever packet the discipline gives up
//! and returns its fate as `offer` does. The packets the discipline drops are collected for
//! the caller (`take_drops`). Loss, delay, jitter, outages, traces and schedules apply as on
//! any link; the congestion warning (an average-queue mark of its own) does not combine with
//! an AQM.
//!
//! Scheduled rate, delay and loss (`with_schedule`, `link_schedule.rs`): the queue is the
//! fixed-rate link's, but a packet's transmission ends where the integral of the scheduled
//! rate from its start reaches its bits; its delay and loss rate are those in force then, and
//! it never arrives before the packet ahead of it. `rate_bps` is the schedule's mean rate.

use crate::net::aqm::{Admit, Aqm, AqmSpec, DropReason, Queued, SojournStats};
use crate::net::link_schedule::ScheduleCursor;
use crate::net::link_trace::{LinkTrace, TraceCursor};
use crate::net::loss::LossProcess;
use crate::net::PacketId;
use crate::rng::Rng;
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;
use std::sync::Arc;

/// The queue's capacity, in bytes or in packets (the packet in service does not count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
}

/// A link's congestion-warning setting (scenario key `congestion_warning`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CongestionWarning {
    /// Mark while the average queue is above this (packets or bytes).
    pub threshold: QueueLimit,
    /// EWMA weight of each arrival's queue sample, in (0, 1].
    pub weight: f64,
}

/// The average queue of a congestion-warning link.
#[derive(Clone, Copy, Debug)]
struct Warning {
    cfg: CongestionWarning,
    avg: f64,
    /// The average was above the threshold at the latest accepted packet.
    marked: bool,
}

#[derive(Clone, Copy, Debug)]
struct Backlogged {
    offered: SimTime,
    end: SimTime,
    size: u32,
    bytes_before: u64,
}

/// What happened to a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It will reach the far end at this time.
    Arrives(SimTime),
    /// The queue was full.
    QueueDrop,
    /// Transmitted but lost to the loss model.
    Lost,
    /// The link is down.
    Down,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    pub offered: u64,
    pub delivered: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub down_drops: u64,
    pub bytes_sent: u64,
    /// Total time the transmitter was busy.
    pub busy: Dur,
    /// Accepted packets marked by the congestion warning.
    pub cw_marks: u64,
    /// Packets a managed queue's AQM dropped (at arrival or on leaving); its overflows count
    /// in `queue_drops`.
    pub aqm_drops: u64,
    /// Packets a managed queue's AQM marked CE instead of dropping (counted as they leave).
    pub aqm_marks: u64,
}

pub struct Link {
    pub name: String,
    pub rate_bps: u64,
    pub delay: Dur,
    pub limit: QueueLimit,
    pub up: bool,
    loss: LossProcess,
    /// The transmission times of the two most recent packet sizes (data and ACK sizes alternate).
    tx_cache: [(u32, Dur); 2],
    busy_until: SimTime,
    /// Accepted packets whose transmission had not ended at the last purge, in order.
    backlog: VecDeque<Backlogged>,
    /// Bytes ever accepted: entries store the count before them, so the bytes of any run of
    /// entries is a difference of two counters.
    accepted_bytes: u64,
    /// Leading backlog entries whose transmission ends by the latest offer time. Offers come
    /// in non-decreasing time, so this only moves forward (the purge moves it back as it pops).
    done_by_last_offer: usize,
    /// Accepted packets in arrival order: (arrival time at the far end, packet).
    pub pipe: VecDeque<(SimTime, PacketId)>,
    /// Packets may be offered to this link ahead of simulated time, at the moment their
    /// departure from the previous link is known (see `Simulation::forward`).
    pub cut_through: bool,
    warning: Option<Warning>,
    /// The largest extra delay and the draws for it; the last arrival time keeps FIFO order.
    jitter: Option<(Dur, Rng)>,
    last_arrival: SimTime,
    /// Trace-driven capacity: where the link is in its trace, and when each backlog entry's
    /// first byte leaves (in step with `backlog`).
    trace: Option<Box<Traced>>,
    /// The queue an AQM manages, if it has one.
    managed: Option<Box<Managed>>,
    /// Rate, delay and loss that follow a schedule.
    schedule: Option<Box<ScheduleCursor>>,
    /// The link follows a trace or a schedule: offers take the out-of-line path.
    varies: bool,
    pub stats: LinkStats,
}

/// A link's managed queue: the discipline, the drops it made that the caller has not taken
/// yet, the dequeue the caller was asked for, and the sojourn times of the packets sent.
struct Managed {
    name: &'static str,
    aqm: Box<dyn Aqm>,
    dropped: Vec<(PacketId, DropReason)>,
    due: Option<SimTime>,
    sojourn: SojournStats,
}

#[derive(Debug)]
struct Traced {
    cursor: TraceCursor,
    starts: VecDeque<SimTime>,
}

impl Link {
    pub fn new(name: String, rate_bps: u64, delay: Dur, limit: QueueLimit, loss: LossProcess) -> Link {
        Link {
            name,
            rate_bps,
            delay,
            limit,
            up: true,
            loss,
            tx_cache: [(0, Dur::ZERO); 2],
            busy_until: SimTime::ZERO,
            backlog: VecDeque::new(),
            accepted_bytes: 0,
            done_by_last_offer: 0,
            pipe: VecDeque::new(),
            cut_through: false,
            warning: None,
            jitter: None,
            last_arrival: SimTime::ZERO,
            trace: None,
            managed: None,
            schedule: None,
            varies: false,
            stats: LinkStats::default(),
        }
    }

    /// Puts the queue under an AQM; `rng` draws its random decisions.
    pub fn with_aqm(mut self, aqm: Option<&AqmSpec>, rng: Rng) -> Link {
        self.managed = aqm.map(|spec| {
            Box::new(Managed {
                name: spec.name(),
                aqm: spec.build(self.limit, self.rate_bps, rng),
                dropped: Vec::new(),
                due: None,
                sojourn: SojournStats::default(),
            })
        });
        self
    }

    /// The AQM managing the queue, by scenario name, if any.
    pub fn aqm(&self) -> Option<&'static str> {
        self.managed.as_ref().map(|m| m.name)
    }

    /// Whether an AQM manages the queue (packets go through `enqueue`, not `offer`).
    #[inline]
    pub fn is_managed(&self) -> bool {
        self.managed.is_some()
    }

    /// Packets and bytes waiting in a managed queue (zero on a drop-tail link, whose waiting
    /// packets are counted when `queued` is asked at a time).
    pub fn backlog(&self) -> (u64, u64) {
        self.managed.as_ref().map_or((0, 0), |m| m.aqm.backlog())
    }

    /// Queueing delays of the packets a managed link sent.
    pub fn sojourn(&self) -> Option<&SojournStats> {
        self.managed.as_ref().map(|m| &m.sojourn)
    }

    /// A managed link: packet `id` of `size` bytes, of flow (5-tuple hash) `flow`, ECN-capable
    /// if `ect`, arrives at `now`. Returns the fate of a packet that does not join the queue.
    /// Packets of the queue that the discipline drops to make room wait in `take_drops`.
    pub fn enqueue(&mut self, now: SimTime, id: PacketId, size: u32, flow: u32, ect: bool) -> Option<Fate> {
        self.stats.offered += 1;
        if !self.up {
            self.stats.down_drops += 1;
            return Some(Fate::Down);
        }
        let m = self.managed.as_mut().expect("a managed link");
        let p = Queued { id, size, enqueued: now, flow, ect, marked: false };
        let before = m.dropped.len();
        let admit = m.aqm.enqueue(now, p, &mut m.dropped);
        for &(_, why) in &m.dropped[before..] {
            self.stats.count_drop(why);
        }
        match admit {
            Admit::Queued => None,
            Admit::Dropped(why) => {
                self.stats.count_drop(why);
                Some(Fate::QueueDrop)
            }
        }
    }

    /// A managed link: when the transmitter can take the next packet, if packets wait and no
    /// dequeue was asked for yet. A time after `now` counts as asked for: the caller then
    /// calls `dequeue` at that time (an earlier answer is forgotten when the link goes down).
    pub fn next_dequeue(&mut self, now: SimTime) -> Option<SimTime> {
        let m = self.managed.as_mut().expect("a managed link");
        if m.due.is_some() || m.aqm.backlog().0 == 0 || !self.up {
            return None;
        }
        let t = match &mut self.trace {
            Some(tr) => tr.cursor.next_start(now),
            None => self.busy_until.max(now),
        };
        if t > now {
            m.due = Some(t);
        }
        Some(t)
    }

    /// The dequeue a managed link asked for (`next_dequeue` gave a later time), if one is
    /// pending.
    pub fn dequeue_due(&self) -> Option<SimTime> {
        self.managed.as_ref().and_then(|m| m.due)
    }

    /// A managed link: the transmitter is free at `now` (a time `next_dequeue` gave): the
    /// discipline's next packet starts; returns it, its fate (`Arrives` or `Lost`) and
    /// whether the discipline marked it CE (the caller sets the mark in its header), or
    /// `None` if the discipline had nothing left to send.
    pub fn dequeue(&mut self, now: SimTime) -> Option<(PacketId, Fate, bool)> {
        let m = self.managed.as_mut().expect("a managed link");
        m.due = None;
        if !self.up {
            return None;
        }
        let before = m.dropped.len();
        let p = m.aqm.dequeue(now, &mut m.dropped);
        for &(_, why) in &m.dropped[before..] {
            self.stats.count_drop(why);
        }
        let p = p?;
        m.sojourn.record(now.since(p.enqueued));
        self.stats.aqm_marks += p.marked as u64;
        let mut tx = self.tx_time(p.size);
        let end = match (&mut self.trace, &mut self.schedule) {
            (Some(tr), _) => tr.cursor.send_from(now, p.size),
            (None, Some(sch)) => {
                // the scheduled rate's integral, and the delay and loss in force at the end
                let end = sch.depart(now, p.size);
                let step = *sch.current();
                self.delay = step.delay;
                if sch.sets_loss {
                    self.loss.set_uniform(step.loss);
                }
                tx = end.since(now);
                end
            }
            (None, None) => now + tx,
        };
        self.busy_until = end;
        self.stats.bytes_sent += p.size as u64;
        self.stats.busy = self.stats.busy + tx;
        if self.loss.lose_next() {
            self.stats.loss_drops += 1;
            return Some((p.id, Fate::Lost, p.marked));
        }
        self.stats.delivered += 1;
        let mut arrival = self.arrival(end);
        if self.schedule.is_some() {
            // a falling delay never lets a packet overtake the one ahead of it
            arrival = arrival.max(self.last_arrival);
            self.last_arrival = arrival;
        }
        Some((p.id, Fate::Arrives(arrival), p.marked))
    }

    /// The packets a managed link's discipline dropped since the last call.
    pub fn take_drops(&mut self) -> impl Iterator<Item = PacketId> + '_ {
        self.managed.iter_mut().flat_map(|m| m.dropped.drain(..).map(|d| d.0))
    }

    /// Sends in the delivery opportunities of `trace` instead of at a fixed rate; the link's
    /// rate becomes the trace's mean.
    pub fn with_trace(mut self, trace: Option<Arc<LinkTrace>>) -> Link {
        if let Some(t) = trace {
            self.rate_bps = (t.mean_rate_bps().round() as u64).max(1);
            self.trace = Some(Box::new(Traced { cursor: TraceCursor::new(t), starts: VecDeque::new() }));
            self.varies = true;
        }
        self
    }

    /// Follows a schedule of rate, delay and loss (`rate_bps`: its mean; `delay`: its delay
    /// at time 0).
    pub fn with_schedule(mut self, schedule: Option<ScheduleCursor>) -> Link {
        if let Some(s) = schedule {
            self.delay = s.current().delay;
            self.schedule = Some(Box::new(s));
            self.varies = true;
        }
        self
    }

    /// The trace the link follows, if it is trace-driven.
    pub fn trace(&self) -> Option<&LinkTrace> {
        self.trace.as_ref().map(|t| t.cursor.trace())
    }

    /// Turns the congestion warning on.
    pub fn with_congestion_warning(mut self, cw: Option<CongestionWarning>) -> Link {
        self.warning = cw.map(|cfg| Warning { cfg, avg: 0.0, marked: false });
        self
    }

    /// Extends each delivered packet's delay by a uniform draw in [0, `max`] (FIFO kept).
    pub fn with_jitter(mut self, max: Dur, rng: Rng) -> Link {
        self.jitter = (max > Dur::ZERO).then_some((max, rng));
        self
    }

    pub fn congestion_warning(&self) -> Option<CongestionWarning> {
        self.warning.map(|w| w.cfg)
    }

    /// The average queue of the congestion warning (in its threshold's unit).
    pub fn average_queue(&self) -> Option<f64> {
        self.warning.map(|w| w.avg)
    }

    /// Whether the packet just accepted (`offer` returned `Arrives`) must carry the mark.
    #[inline]
    pub fn marks_last(&self) -> bool {
        self.warning.is_some_and(|w| w.marked)
    }

    /// Forgets the backlog entries whose transmission has ended by `now`. The entries end in
    /// the order they were accepted (each starts when the one before it ends), so the finished
    /// ones are a prefix, found by a binary search and dropped at once: a purge after many
    /// offers that skipped it (see `offer_at`) pops dozens of entries.
    fn purge(&mut self, now: SimTime) {
        let done = self.backlog.partition_point(|e| e.end <= now);
        if done > 0 {
            self.backlog.drain(..done);
            self.done_by_last_offer = self.done_by_last_offer.saturating_sub(done);
        }
    }

    /// Packets and bytes waiting among backlog entries `from..to` (the first is in service).
    fn waiting(&self, from: usize, to: usize) -> (u64, u64) {
        if from >= to {
            return (0, 0);
        }
        let (head, last) = (self.backlog[from], self.backlog[to - 1]);
        let bytes = last.bytes_before + last.size as u64 - head.bytes_before - head.size as u64;
        ((to - from - 1) as u64, bytes)
    }

    /// Packets and bytes waiting among the unfinished backlog entries `from..to` at `t`: on a
    /// trace-driven link the first is in service only once its first byte has left. The
    /// starts of a traced link's entries are trimmed here to the entries the purge left (both
    /// lose entries only at the front), so that the purge costs a fixed-rate link nothing.
    fn waiting_at(&mut self, from: usize, to: usize, t: SimTime) -> (u64, u64) {
        let left = self.backlog.len();
        match &mut self.trace {
            Some(tr) => {
                let gone = tr.starts.len() - left;
                tr.starts.drain(..gone);
                if from < to && tr.starts[from] > t {
                    let (p, b) = self.waiting(from, to);
                    return (p + 1, b + self.backlog[from].size as u64);
                }
                self.waiting(from, to)
            }
            None => self.waiting(from, to),
        }
    }

    /// Packets and bytes waiting in the queue at `now` (not counting the one in service).
    /// Packets offered ahead of `now` (cut-through) have not arrived yet and do not count.
    pub fn queued(&mut self, now: SimTime) -> (u64, u64) {
        if let Some(m) = &self.managed {
            return m.aqm.backlog();
        }
        self.purge(now);
        let arrived = self.backlog.partition_point(|e| e.offered <= now);
        self.waiting_at(0, arrived, now)
    }

    /// Offers a packet of `size` bytes to the link at `now`.
    pub fn offer(&mut self, now: SimTime, size: u32) -> Fate {
        self.offer_at(now, now, size)
    }

    /// Offers a packet that enters the link at `at`, no earlier than the simulation's `now`
    /// (later for cut-through links). Offers to one link come in non-decreasing `at`.
    #[inline(always)]
    pub fn offer_at(&mut self, now: SimTime, at: SimTime, size: u32) -> Fate {
        if self.varies {
            return if self.trace.is_some() { self.offer_traced(now, at, size) } else { self.offer_scheduled(now, at, size) };
        }
        self.stats.offered += 1;
        if !self.up {
            self.stats.down_drops += 1;
            return Fate::Down;
        }
        // A queue of at most n packets cannot be full while the backlog, finished entries
        // included, holds n or fewer: nothing needs to know which entry is in service then,
        // and the finished ones are purged later, at an offer that does need it (or a sample).
        if let (QueueLimit::Packets(n), None) = (self.limit, &self.warning) {
            if self.backlog.len() as u64 <= n {
                return self.accept_unchecked(at, size);
            }
        }
        let in_service = self.in_service_at(now, at);
        let len = self.backlog.len();
        let busy = in_service < len;
        let now = at;
        if self.warning.is_some() {
            let (q_pkts, q_bytes) = self.waiting(in_service, len);
            self.update_average(now, busy, q_pkts, q_bytes, size);
        }
        // the bytes waiting are worked out only for a limit in bytes
        let full = busy
            && match self.limit {
                QueueLimit::Packets(n) => (len - in_service) as u64 > n,
                QueueLimit::Bytes(b) => self.waiting(in_service, len).1 + size as u64 > b,
            };
        if full {
            self.stats.queue_drops += 1;
            return Fate::QueueDrop;
        }
        self.accept_unchecked(now, size)
    }

    /// Accepts a packet of `size` bytes that entered at `now` and fits the queue: it starts
    /// when the transmitter is free.
    #[inline(always)]
    fn accept_unchecked(&mut self, now: SimTime, size: u32) -> Fate {
        let start = self.busy_until.max(now);
        let tx = self.tx_time(size);
        let end = start + tx;
        self.accept(now, end, size, tx)
    }

    /// Forgets what has finished by `now` (what finishes between `now` and `at` stays, so
    /// that samples taken at `now` remain exact); returns the first backlog entry that has
    /// not finished by `at`.
    #[inline(always)]
    fn in_service_at(&mut self, now: SimTime, at: SimTime) -> usize {
        self.purge(now);
        let mut in_service = self.done_by_last_offer;
        while self.backlog.get(in_service).is_some_and(|e| e.end <= at) {
            in_service += 1;
        }
        self.done_by_last_offer = in_service;
        in_service
    }

    /// `offer_at` on a trace-driven link (kept out of the fixed-rate links' way).
    #[cold]
    #[inline(never)]
    fn offer_traced(&mut self, now: SimTime, at: SimTime, size: u32) -> Fate {
        self.stats.offered += 1;
        if !self.up {
            self.stats.down_drops += 1;
            return Fate::Down;
        }
        let in_service = self.in_service_at(now, at);
        let now = at;
        let len = self.backlog.len();
        let busy = in_service < len;
        // the queue holds the packets whose first byte has not left
        let (q_pkts, q_bytes) = self.waiting_at(in_service, len, now);
        if !self.admits(now, busy, q_pkts, q_bytes, size) {
            return Fate::QueueDrop;
        }
        let tx = self.tx_time(size);
        let tr = self.trace.as_mut().expect("a traced link");
        let (first, end) = tr.cursor.schedule(now, size);
        tr.starts.push_back(first);
        self.accept(now, end, size, tx)
    }

    /// The out-of-line paths' admission: the congestion warning's average updated for an
    /// arrival that finds `q_pkts` packets and `q_bytes` bytes waiting, then whether the
    /// packet fits the queue (a queue drop counted if not).
    fn admits(&mut self, now: SimTime, busy: bool, q_pkts: u64, q_bytes: u64, size: u32) -> bool {
        if self.warning.is_some() {
            self.update_average(now, busy, q_pkts, q_bytes, size);
        }
        let full = busy
            && match self.limit {
                QueueLimit::Packets(n) => q_pkts >= n,
                QueueLimit::Bytes(b) => q_bytes + size as u64 > b,
            };
        self.stats.queue_drops += full as u64;
        !full
    }

    /// `offer_at` on a scheduled link: the fixed-rate queue, departures from the scheduled
    /// rate, delay and loss from the step in force at the departure, arrivals in order.
    #[cold]
    #[inline(never)]
    fn offer_scheduled(&mut self, now: SimTime, at: SimTime, size: u32) -> Fate {
        self.stats.offered += 1;
        if !self.up {
            self.stats.down_drops += 1;
            return Fate::Down;
        }
        let in_service = self.in_service_at(now, at);
        let len = self.backlog.len();
        let busy = in_service < len;
        let now = at;
        let (q_pkts, q_bytes) = self.waiting(in_service, len);
        if !self.admits(now, busy, q_pkts, q_bytes, size) {
            return Fate::QueueDrop;
        }
        let start = self.busy_until.max(now);
        let sch = self.schedule.as_mut().expect("a scheduled link");
        let end = sch.depart(start, size);
        let step = *sch.current();
        self.delay = step.delay;
        if sch.sets_loss {
            self.loss.set_uniform(step.loss);
        }
        match self.accept(now, end, size, end.since(start)) {
            Fate::Arrives(a) => {
                let a = a.max(self.last_arrival);
                self.last_arrival = a;
                Fate::Arrives(a)
            }
            fate => fate,
        }
    }

    /// Takes a packet that entered at `now` and whose transmission ends at `end` (`tx`: its
    /// transmission time at the link's rate): accounting, the mark, loss, delay and jitter.
    #[inline(always)]
    fn accept(&mut self, now: SimTime, end: SimTime, size: u32, tx: Dur) -> Fate {
        // (the purge's binary search needs the entries in order of their ends)
        debug_assert!(self.backlog.back().is_none_or(|b| b.end <= end));
        self.busy_until = end;
        self.backlog.push_back(Backlogged { offered: now, end, size, bytes_before: self.accepted_bytes });
        self.accepted_bytes += size as u64;
        self.stats.bytes_sent += size as u64;
        self.stats.busy = self.stats.busy + tx;
        let marked = match &mut self.warning {
            Some(w) => {
                w.marked = match w.cfg.threshold {
                    QueueLimit::Packets(n) => w.avg > n as f64,
                    QueueLimit::Bytes(b) => w.avg > b as f64,
                };
                w.marked
            }
            None => false,
        };
        if self.loss.lose_next() {
            self.stats.loss_drops += 1;
            return Fate::Lost;
        }
        self.stats.delivered += 1;
        self.stats.cw_marks += marked as u64;
        Fate::Arrives(self.arrival(end))
    }

    /// When a packet whose transmission ends at `end` reaches the far end: the delay, and
    /// the jitter if any (FIFO kept).
    #[inline(always)]
    fn arrival(&mut self, end: SimTime) -> SimTime {
        let mut arrival = end + self.delay;
        if let Some((max, rng)) = &mut self.jitter {
            arrival = (arrival + Dur(rng.below(max.0 + 1))).max(self.last_arrival);
            self.last_arrival = arrival;
        }
        arrival
    }

    /// The congestion warning's average, updated for an arrival at `now` that finds `q_pkts`
    /// packets and `q_bytes` bytes waiting (`busy`: the transmitter is sending).
    fn update_average(&mut self, now: SimTime, busy: bool, q_pkts: u64, q_bytes: u64, size: u32) {
        let idle_for = if busy { Dur::ZERO } else { now.since(self.busy_until.min(now)) };
        let tx = if idle_for > Dur::ZERO { self.tx_time(size) } else { Dur::ZERO };
        let Some(w) = &mut self.warning else { return };
        let keep = 1.0 - w.cfg.weight;
        if idle_for > Dur::ZERO && tx > Dur::ZERO {
            let m = idle_for.as_nanos() / tx.as_nanos();
            w.avg *= keep.powf(m as f64);
        }
        let q = match w.cfg.threshold {
            QueueLimit::Packets(_) => q_pkts as f64,
            QueueLimit::Bytes(_) => q_bytes as f64,
        };
        w.avg = keep * w.avg + w.cfg.weight * q;
    }

    /// Transmission time of `size` bytes; the last size is cached (most packets share it).
    #[inline]
    fn tx_time(&mut self, size: u32) -> Dur {
        if self.tx_cache[0].0 == size {
            return self.tx_cache[0].1;
        }
        if self.tx_cache[1].0 != size {
            self.tx_cache[1] = (size, Dur::tx_time(size as u64, self.rate_bps));
        }
        self.tx_cache.swap(0, 1);
        self.tx_cache[0].1
    }

    /// Takes the link down: everything queued or on the wire is lost. Returns the packets
    /// that were in the pipe, for the caller to free.
    pub fn set_down(&mut self, now: SimTime) -> Vec<PacketId> {
        if !self.up {
            return Vec::new();
        }
        self.up = false;
        self.backlog.clear();
        self.done_by_last_offer = 0;
        self.busy_until = now;
        if let Some(t) = &mut self.trace {
            t.starts.clear();
            t.cursor.reset(now);
        }

        let mut lost: Vec<PacketId> = self.pipe.drain(..).map(|(_, id)| id).collect();
        self.stats.delivered -= lost.len() as u64;
        if let Some(m) = &mut self.managed {
            m.due = None;
            lost.extend(m.aqm.clear());
        }
        self.stats.down_drops += lost.len() as u64;
        lost
    }

    pub fn set_up(&mut self) {
        self.up = true;
    }
}

impl LinkStats {
    fn count_drop(&mut self, why: DropReason) {
        match why {
            DropReason::Overflow => self.queue_drops += 1,
            DropReason::Aqm => self.aqm_drops += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::loss::LossModel;
    use crate::rng::Rng;

    fn link(limit: QueueLimit) -> Link {
        Link::new("l".into(), 10_000_000, Dur::from_millis(10), limit, LossProcess::new(LossModel::None, Rng::from_seed(0)))
    }

    #[test]
    fn back_to_back_packets_serialise() {
        let mut l = link(QueueLimit::Packets(10));
        let t0 = SimTime::ZERO;
        assert_eq!(l.offer(t0, 1500), Fate::Arrives(SimTime(1_200_000 + 10_000_000)));
        assert_eq!(l.offer(t0, 1500), Fate::Arrives(SimTime(2_400_000 + 10_000_000)));
        assert_eq!(l.queued(t0), (1, 1500));
        // after the first finished, one is in service and none waits
        assert_eq!(l.queued(SimTime(1_200_000)), (0, 0));
    }

    #[test]
    fn drop_tail_in_packets_excludes_the_one_in_service() {
        let mut l = link(QueueLimit::Packets(2));
        let t0 = SimTime::ZERO;
        let fates: Vec<_> = (0..4).map(|_| l.offer(t0, 1000)).collect();
        assert!(matches!(fates[0], Fate::Arrives(_)));
        assert!(matches!(fates[1], Fate::Arrives(_)));
        assert!(matches!(fates[2], Fate::Arrives(_)));
        assert_eq!(fates[3], Fate::QueueDrop);
        assert_eq!(l.stats.queue_drops, 1);
    }

    #[test]
    fn drop_tail_in_bytes() {
        let mut l = link(QueueLimit::Bytes(2500));
        let t0 = SimTime::ZERO;
        assert!(matches!(l.offer(t0, 1500), Fate::Arrives(_))); // in service
        assert!(matches!(l.offer(t0, 1500), Fate::Arrives(_))); // 1500 waiting
        assert_eq!(l.offer(t0, 1500), Fate::QueueDrop); // 3000 > 2500
        assert!(matches!(l.offer(t0, 1000), Fate::Arrives(_))); // 2500 fits
    }

    #[test]
    fn idle_link_starts_immediately() {
        let mut l = link(QueueLimit::Packets(1));
        l.offer(SimTime::ZERO, 1500);
        let later = SimTime(50_000_000);
        assert_eq!(l.offer(later, 1500), Fate::Arrives(later + Dur::from_micros(1200) + Dur::from_millis(10)));
    }

    #[test]
    fn packets_offered_ahead_of_time_are_not_counted_as_queued() {
        let mut l = link(QueueLimit::Packets(10));
        l.offer(SimTime::ZERO, 1500); // in service until 1.2 ms
        l.offer(SimTime(100), 1500); // waiting
        l.offer_at(SimTime(150), SimTime(5_000_000), 1500); // offered early: arrives at 5 ms
        assert_eq!(l.queued(SimTime(200)), (1, 1500));
        assert_eq!(l.queued(SimTime(5_000_000)), (0, 0)); // first two done, third in service
    }

    /// A drop-tail queue of `n` packets worked out from scratch at every offer: the accepted
    /// packets' transmission ends, the one in service not counted as waiting.
    struct Reference {
        n: u64,
        ends: Vec<(SimTime, u32)>,
        busy_until: SimTime,
    }

    impl Reference {
        fn unfinished(&self, t: SimTime) -> Vec<u32> {
            self.ends.iter().filter(|e| e.0 > t).map(|e| e.1).collect()
        }

        fn offer(&mut self, t: SimTime, size: u32, tx: Dur, delay: Dur) -> Fate {
            let left = self.unfinished(t);
            if left.len() as u64 > self.n {
                return Fate::QueueDrop;
            }
            let end = self.busy_until.max(t) + tx;
            self.busy_until = end;
            self.ends.push((end, size));
            Fate::Arrives(end + delay)
        }

        fn queued(&self, t: SimTime) -> (u64, u64) {
            let left = self.unfinished(t);
            let waiting = &left[left.len().min(1)..];
            (waiting.len() as u64, waiting.iter().map(|&s| s as u64).sum())
        }
    }

    #[test]
    fn a_queue_in_packets_drops_as_if_its_backlog_were_purged_at_every_offer() {
        // bursts and gaps at random: the backlog keeps finished entries while it holds no more
        // than the limit, and must still drop exactly when the queue is full
        let mut rng = Rng::from_seed(5);
        for n in [1u64, 2, 5, 20] {
            let mut l = link(QueueLimit::Packets(n));
            let mut r = Reference { n, ends: Vec::new(), busy_until: SimTime::ZERO };
            let mut t = SimTime::ZERO;
            let mut drops = 0;
            for k in 0..20_000 {
                // mostly back to back, sometimes a gap long enough to drain the queue
                let gap = if rng.below(50) == 0 { rng.below(30_000_000) } else { rng.below(1_500_000) };
                t += Dur(gap);
                let size = if rng.below(2) == 0 { 1500 } else { 40 + rng.below(1460) as u32 };
                let tx = Dur::tx_time(size as u64, l.rate_bps);
                let fate = l.offer(t, size);
                assert_eq!(fate, r.offer(t, size, tx, l.delay), "n = {n}, offer {k} at {t:?}");
                drops += (fate == Fate::QueueDrop) as u64;
                if rng.below(10) == 0 {
                    assert_eq!(l.queued(t), r.queued(t), "n = {n}, sample after offer {k}");
                }
                assert!(l.backlog.len() as u64 <= n + 1, "the backlog stays within the limit and the new entry");
            }
            assert!(drops > 100, "n = {n}: the queue overflowed {drops} times");
            assert_eq!(l.stats.queue_drops, drops);
        }
    }

    #[test]
    fn the_purge_forgets_exactly_the_finished_entries() {
        // the purge drops the finished entries at once (a binary search for the first that
        // has not finished): it must leave what popping them one by one would, and keep the
        // count of entries done by the latest offer in step (offers ahead of the simulation's
        // time, as on a cut-through link, leave that count above zero)
        let mut rng = Rng::from_seed(11);
        let mut l = link(QueueLimit::Packets(50));
        let (mut now, mut at) = (SimTime::ZERO, SimTime::ZERO);
        for k in 0..20_000 {
            at += Dur(if rng.below(20) == 0 { rng.below(80_000_000) } else { rng.below(1_500_000) });
            // often exactly when an entry's transmission ends (it is then finished)
            if !l.backlog.is_empty() && rng.below(3) == 0 {
                let e = l.backlog[rng.below(l.backlog.len() as u64) as usize];
                at = at.max(e.end);
            }
            // half the offers at the simulation's time (ties with an entry's end reach the purge)
            let lag = if rng.below(2) == 0 { 0 } else { rng.below(3_000_000) };
            now = now.max(SimTime(at.0.saturating_sub(lag)));
            l.offer_at(now, at, if rng.below(2) == 0 { 1500 } else { 40 + rng.below(1460) as u32 });
            if rng.below(8) == 0 {
                let before: Vec<SimTime> = l.backlog.iter().map(|e| e.end).collect();
                let gone = before.iter().take_while(|&&end| end <= now).count();
                let done = l.done_by_last_offer;
                l.purge(now);
                let after: Vec<SimTime> = l.backlog.iter().map(|e| e.end).collect();
                assert_eq!(after, before[gone..], "purge {k} at {now:?}");
                assert_eq!(l.done_by_last_offer, done.saturating_sub(gone), "purge {k} at {now:?}");
            }
        }
    }

    #[test]
    fn congestion_warning_marks_while_the_average_queue_is_above_the_threshold() {
        let cw = CongestionWarning { threshold: QueueLimit::Packets(2), weight: 0.5 };
        let mut l = link(QueueLimit::Packets(100)).with_congestion_warning(Some(cw));
        // a burst at t = 0: the k-th arrival finds k - 1 waiting (the first is in service)
        let mut avg = 0.0;
        for k in 0..8u64 {
            assert!(matches!(l.offer(SimTime::ZERO, 1500), Fate::Arrives(_)));
            avg = 0.5 * avg + 0.5 * k.saturating_sub(1) as f64;
            assert_eq!(l.average_queue(), Some(avg));
            assert_eq!(l.marks_last(), avg > 2.0, "arrival {k}: average {avg}");
        }
        assert_eq!(l.stats.cw_marks, 4); // arrivals 4 to 7 (averages 2.125, 3.06, 4.03, 5.02)
                                         // the burst is sent by 9.6 ms; 100 ms later the average has decayed as if 83 empty
                                         // arrivals (100 ms / 1.2 ms) had come, then takes this arrival's empty queue
        let t = SimTime(9_600_000 + 100_000_000);
        l.offer(t, 1500);
        let expect = 0.5 * avg * 0.5f64.powi(83);
        assert!((l.average_queue().unwrap() - expect).abs() < 1e-30);
        assert!(!l.marks_last());
        // bytes: the threshold and the average count bytes waiting
        let cw = CongestionWarning { threshold: QueueLimit::Bytes(3000), weight: 1.0 };
        let mut l = link(QueueLimit::Packets(100)).with_congestion_warning(Some(cw));
        let marks: Vec<bool> = (0..5)
            .map(|_| {
                l.offer(SimTime::ZERO, 1500);
                l.marks_last()
            })
            .collect();
        assert_eq!(marks, [false, false, false, false, true]); // waiting 0, 0, 1500, 3000, 4500
                                                               // no warning, no mark, no average
        let mut plain = link(QueueLimit::Packets(100));
        plain.offer(SimTime::ZERO, 1500);
        assert_eq!((plain.marks_last(), plain.average_queue()), (false, None));
    }

    #[test]
    fn down_link_drops_and_clears() {
        let mut l = link(QueueLimit::Packets(10));
        l.offer(SimTime::ZERO, 1500);
        l.pipe.push_back((SimTime(11_200_000), 7));
        assert_eq!(l.set_down(SimTime(100)), vec![7]);
        assert_eq!(l.offer(SimTime(200), 1500), Fate::Down);
        assert_eq!(l.stats.down_drops, 2);
        l.set_up();
        assert_eq!(l.offer(SimTime(300), 1500), Fate::Arrives(SimTime(300) + Dur::from_micros(1200) + Dur::from_millis(10)));
    }

    fn traced(limit: QueueLimit, text: &str) -> Link {
        let trace = Arc::new(LinkTrace::parse(text, "t").unwrap());
        link(limit).with_trace(Some(trace))
    }

    #[test]
    fn a_traced_link_departs_at_its_opportunities_then_adds_the_delay() {
        let ms = |x: u64| SimTime(x * 1_000_000);
        let mut l = traced(QueueLimit::Packets(100), "1\n2\n3\n10\n");
        assert_eq!(l.rate_bps, 4 * 12_000 * 100, "the rate is the trace's mean: 4 opportunities in 10 ms");
        // an ACK and a data packet share the opportunity at 1 ms; the next full packet spans 1 and 2
        assert_eq!(l.offer(ms(0), 40), Fate::Arrives(ms(1 + 10)));
        assert_eq!(l.offer(ms(0), 1000), Fate::Arrives(ms(1 + 10)));
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(ms(2 + 10)));
        // 1040 bytes left at 2 ms, none at 3 ms: a packet at 2.5 ms misses 2, takes 3
        assert_eq!(l.offer(SimTime(2_500_000), 1500), Fate::Arrives(ms(3 + 10)));
        // at 4 ms the queue is empty and the next opportunity is 10: the repeat (period 10) gives 11, 12
        assert_eq!(l.offer(ms(4), 1500), Fate::Arrives(ms(10 + 10)));
        assert_eq!(l.offer(ms(4), 1500), Fate::Arrives(ms(11 + 10)));
        assert_eq!(l.offer(ms(4), 1500), Fate::Arrives(ms(12 + 10)));
        assert_eq!(l.trace().map(|t| t.opportunities()), Some(4));
        // a fixed-rate link has no trace and keeps its rate
        assert!(link(QueueLimit::Packets(1)).trace().is_none());
    }

    #[test]
    fn a_traced_queue_holds_the_packets_whose_first_byte_has_not_left() {
        let ms = |x: u64| SimTime(x * 1_000_000);
        // (10 ms of delay after each departure) one packet of room: a packet waiting for the opportunity at 5 ms fills it, though
        // the link is idle; a fixed-rate link would have it in service and queue the next
        let mut l = traced(QueueLimit::Packets(1), "5\n10\n");
        assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(ms(5 + 10)));
        assert_eq!(l.queued(ms(1)), (1, 1500));
        assert_eq!(l.offer(ms(1), 1500), Fate::QueueDrop);
        assert_eq!(l.queued(ms(5)), (0, 0));
        // a packet spanning two opportunities leaves the queue with its first bytes (5 ms)
        let mut l = traced(QueueLimit::Packets(1), "5\n10\n");
        assert_eq!(l.offer(ms(0), 2000), Fate::Arrives(ms(10 + 10)));
        assert_eq!(l.queued(ms(6)), (0, 0));
        assert_eq!(l.offer(ms(6), 500), Fate::Arrives(ms(10 + 10)));
        assert_eq!(l.offer(ms(6), 100), Fate::QueueDrop);
        // in bytes: the waiting packets' bytes, the one started excluded
        let mut l = traced(QueueLimit::Bytes(3000), "5\n10\n");
        assert!(matches!(l.offer(ms(0), 1500), Fate::Arrives(_)));
        assert!(matches!(l.offer(ms(0), 1500), Fate::Arrives(_)));
        assert_eq!(l.offer(ms(0), 1), Fate::QueueDrop);
        assert!(matches!(l.offer(ms(5), 1500), Fate::Arrives(_)), "the first left at 5 ms");
    }

    #[test]
    fn a_traced_link_that_goes_down_frees_its_opportunities() {
        let ms = |x: u64| SimTime(x * 1_000_000);
        let mut l = traced(QueueLimit::Packets(100), "1\n2\n3\n4\n");
        for k in 1..=4 {
            assert_eq!(l.offer(ms(0), 1500), Fate::Arrives(ms(k + 10)));
        }
        l.set_down(SimTime(1_500_000));
        l.set_up();
        assert_eq!(l.offer(SimTime(1_600_000), 1500), Fate::Arrives(ms(2 + 10)));
    }

    #[test]
    fn jitter_adds_at_most_its_bound_and_keeps_fifo_order() {
        let max = Dur::from_micros(500);
        let mut l = link(QueueLimit::Packets(1000)).with_jitter(max, Rng::from_seed(7));
        let mut plain = link(QueueLimit::Packets(1000));
        let mut last = SimTime::ZERO;
        let mut extra_sum = 0u64;
        let n = 2000u64;
        for k in 0..n {
            // ACK-sized packets 100 us apart: spaced closer than the jitter, so draws would
            // reorder them if arrivals were not held in order
            let at = SimTime(k * 100_000);
            let (Fate::Arrives(a), Fate::Arrives(b)) = (l.offer(at, 64), plain.offer(at, 64)) else { panic!() };
            assert!(a >= b, "never earlier than without jitter");
            assert!(a >= last, "FIFO: packet {k} overtook the one before");
            assert!(a <= b.max(last) + max, "at most the bound beyond the constant delay or the packet before");
            extra_sum += a.since(b).0;
            last = a;
        }
        // the draws are spread over the bound, not stuck at zero or at the bound
        let mean = extra_sum / n;
        assert!(mean > 200_000 && mean < 500_000, "mean extra delay {mean} ns");
        // no jitter: no draw, the constant delay exactly
        let mut none = link(QueueLimit::Packets(10)).with_jitter(Dur::ZERO, Rng::from_seed(7));
        assert_eq!(none.offer(SimTime::ZERO, 1500), Fate::Arrives(SimTime::ZERO + Dur::from_micros(1200) + Dur::from_millis(10)));
    }
}
