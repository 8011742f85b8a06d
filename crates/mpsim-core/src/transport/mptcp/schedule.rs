//! The sending side's decisions: the scheduling loop that hands chunks to subflows (pending
//! reinjections first, then new data as the scheduler picks), what happens when the receive
//! window blocks new data, and the reinjection of a timed-out subflow's data.

use super::Subflow;
use super::{dsn_of, MptcpConn, Reinject};
use crate::sched::{lowest_rtt_available, lowest_rtt_available_among, BlockedAction, Decision, SchedContext};
use crate::time::SimTime;

/// Most pending reinjections looked at per scheduling pass.
const REINJECT_SCAN: usize = 64;

impl MptcpConn {
    /// Hands chunks of new data (and pending reinjections) to subflows as the scheduler
    /// decides, until it says wait, the data runs out or the receive window blocks.
    pub(super) fn schedule(&mut self, now: SimTime) {
        let mss = self.mss as u64;
        if self.views.len() != self.subs.len() {
            self.views.clear();
            self.views.extend(self.subs.iter().map(Subflow::view));
            self.maybe_available = u64::MAX;
        } else {
            self.maybe_available |= self.stale_views;
            let mut stale = self.stale_views;
            while stale != 0 {
                let i = stale.trailing_zeros() as usize;
                stale &= stale - 1;
                if i < self.subs.len() {
                    self.views[i] = self.subs[i].view();
                }
            }
        }
        self.stale_views = 0;
        debug_assert!(self.views.iter().zip(&self.subs).all(|(v, s)| *v == s.view()));
        // every pass hands out a chunk or stops; the bound only guards against a faulty
        // scheduler. A pass changes at most one subflow, whose view alone is rebuilt.
        for _ in 0..100_000 {
            if let Some(t) = self.serve_reinjection() {
                if let Some(t) = t {
                    self.views[t] = self.subs[t].view();
                    self.stale_views &= !(1 << t);
                    self.maybe_available |= 1 << t;
                }
                continue;
            }
            // prioritised data first, when the scheduler asks for a priority dequeue
            let dequeue = self.props.priority_dequeue;
            if dequeue {
                match self.serve_priority(now) {
                    Some(true) => continue,
                    Some(false) => return,
                    None => {}
                }
            }
            // new data
            if self.dsn_nxt >= self.app_limit {
                self.note_blocked(now, false);
                return;
            }
            let len = if dequeue { self.ordinary_chunk_len(mss) } else { (self.app_limit - self.dsn_nxt).min(mss) };
            let blocked = self.dsn_nxt + len > self.right_edge;
            if !blocked && self.props.sends_only_when_available && !self.any_available() {
                // the scheduler would wait: no need to ask it
                self.note_blocked(now, false);
                return;
            }
            if !blocked && self.props.lowest_rtt_pick {
                // lowest-RTT's pick reads only the views and the mask (`Properties`): worked
                // out here, without the context the other schedulers are handed
                self.priority_at(self.dsn_nxt); // (it also drops the priorities passed)
                self.note_blocked(now, false);
                match lowest_rtt_available_among(&self.views, self.maybe_available) {
                    Some(i) if i < self.subs.len() && self.views[i].usable => self.hand_over(i, len, dequeue, 0),
                    _ => return,
                }
                // Most ACKs free room for one chunk: with no subflow available now, the next
                // pass would hand out nothing and change nothing, so it is not made. It would
                // serve no reinjection (this pass served none, and handing out a chunk only
                // took availability away; every reinjection needs an available subflow, and
                // whether a target is dead did not change); the priority dequeue's pick and
                // the one above would find no subflow; and the receive window, blocked or
                // not, would only record "not blocked", as this pass did.
                if !self.any_available() {
                    return;
                }
                continue;
            }
            let unscheduled = self.unscheduled();
            let next_priority = self.priority_at(self.dsn_nxt);
            // receive-buffer blocking: there is data, a subflow could send, the window says no
            let any_room = blocked && self.any_available();
            self.note_blocked(now, any_room);
            let (hol_subflow, hol_sent_on) = if any_room { head_of_line(&self.subs, self.data_una) } else { (None, 0) };
            let ctx = SchedContext {
                now,
                subflows: &self.views,
                unscheduled,
                window_room: self.right_edge.saturating_sub(self.dsn_nxt),
                next_len: len,
                next_priority,
                hol_subflow,
                hol_sent_on,
                send_window: self.right_edge.saturating_sub(self.data_una),
                maybe_available: self.maybe_available,
            };
            if blocked {
                if any_room {
                    let act = self.sched.on_window_blocked(&ctx);
                    self.act_on_block(act);
                }
                return;
            }
            match self.sched.pick(&ctx) {
                Decision::Send(i) if i < self.subs.len() && self.views[i].usable => {
                    let copies = if self.props.sends_copies { self.sched.copies(&ctx, i) } else { 0 };
                    self.hand_over(i, len, dequeue, copies);
                }
                _ => return,
            }
        }
    }

    /// Hands the next `len` bytes of new data to subflow `i`, and a copy to each subflow in
    /// `copies`.
    #[inline(always)]
    fn hand_over(&mut self, i: usize, len: u64, dequeue: bool, copies: u64) {
        let dsn = self.dsn_nxt;
        self.assign(i, dsn, len);
        // handing over a chunk changes only what is queued on the subflow
        self.views[i].queued = self.subs[i].tcp.sender.unsent();
        debug_assert_eq!(self.views[i], self.subs[i].view());
        self.stale_views &= !(1 << i);
        self.dsn_nxt += len;
        if dequeue {
            self.skip_scheduled_ahead();
        }
        self.queue_copies(copies, dsn, len);
    }

    /// The priority dequeue: offers the oldest prioritised chunk not yet handed out to the
    /// scheduler, ahead of older ordinary data. Some(true) if it was handed to a subflow,
    /// Some(false) if the scheduler waits (ordinary data then waits too: important data
    /// leaves first), None if there is no such chunk or the receive window does not admit
    /// it yet (ordinary data below it may still fit).
    fn serve_priority(&mut self, now: SimTime) -> Option<bool> {
        let (dsn, len, priority) = self.next_priority_chunk(self.mss as u64)?;
        if dsn + len > self.right_edge {
            return None;
        }
        self.note_blocked(now, false);
        let ctx = SchedContext {
            now,
            subflows: &self.views,
            unscheduled: self.unscheduled(),
            window_room: self.right_edge.saturating_sub(dsn),
            next_len: len,
            next_priority: priority,
            hol_subflow: None,
            hol_sent_on: 0,
            send_window: self.right_edge.saturating_sub(self.data_una),
            maybe_available: self.maybe_available,
        };
        match self.sched.pick(&ctx) {
            Decision::Send(i) if i < self.subs.len() && self.views[i].usable => {
                let copies = if self.props.sends_copies { self.sched.copies(&ctx, i) } else { 0 };
                self.assign(i, dsn, len);
                self.views[i] = self.subs[i].view();
                self.stale_views &= !(1 << i);
                self.maybe_available |= 1 << i;
                self.priority_chunk_scheduled(dsn, len);
                self.queue_copies(copies, dsn, len);
                Some(true)
            }
            _ => Some(false),
        }
    }

    /// Queues a copy of the chunk [dsn, dsn+len) for each subflow in `copies` (bit i:
    /// subflow i), lowest index first. Most schedulers ask for none: only the bits set are
    /// visited.
    #[inline]
    fn queue_copies(&mut self, copies: u64, dsn: u64, len: u64) {
        let n = self.subs.len();
        let mut m = if n >= 64 { copies } else { copies & ((1 << n) - 1) };
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            self.reinject.push_back(Reinject { dsn, len: len as u32, target: Some(j), exclude: None });
        }
    }

    /// Hands the first pending reinjection that some subflow can take now to it (an entry no
    /// subflow can take, such as a copy excluded from the only working subflow, must not hold
    /// back the ones behind it). Entries already acknowledged are dropped. Some(the subflow
    /// that took it) if an entry was served, Some(None) if one was dropped, None otherwise.
    fn serve_reinjection(&mut self) -> Option<Option<usize>> {
        // asked at every pass, and there is usually nothing to reinject
        if self.reinject.is_empty() {
            return None;
        }
        while self.reinject.front().is_some_and(|r| r.dsn + r.len as u64 <= self.data_una) {
            self.reinject.pop_front();
        }
        for k in 0..self.reinject.len().min(REINJECT_SCAN) {
            let r = self.reinject[k];
            let target = match r.target {
                Some(t) => (t < self.views.len() && self.views[t].available()).then_some(t),
                None => match r.exclude {
                    // the excluded subflow is hidden from the choice for a moment
                    Some(x) => {
                        let usable = std::mem::replace(&mut self.views[x].usable, false);
                        let t = lowest_rtt_available(&self.views);
                        self.views[x].usable = usable;
                        t
                    }
                    None => lowest_rtt_available(&self.views),
                },
            };
            let dead_target = r.target.is_some_and(|t| t >= self.views.len() || !self.views[t].usable);
            let live = r.dsn + r.len as u64 > self.data_una;
            if target.is_none() && !dead_target && live {
                continue;
            }
            self.reinject.remove(k);
            let taker = target.filter(|_| live);
            if let Some(t) = taker {
                self.assign(t, r.dsn, r.len as u64);
                if r.target.is_none() {
                    self.reinjections += 1;
                }
            }
            return Some(taker);
        }
        None
    }

    /// Carries out the scheduler's answer to a blocked window: penalise a subflow, and
    /// retransmit the head-of-line data on another (opportunistic retransmission).
    fn act_on_block(&mut self, act: BlockedAction) {
        if let Some(p) = act.penalize {
            self.subs[p].tcp.sender.penalize();
            self.dirty |= 1 << p;
            self.touch(p);
            self.penalties += 1;
        }
        if let Some(t) = act.reinject_on {
            let una = self.data_una;
            let head = self.subs.iter().flat_map(Subflow::mappings).find(|m| m.dsn == una).copied();
            if let Some(m) = head {
                let (dsn, len) = (m.dsn, m.len);
                self.assign(t, dsn, len as u64);
                self.reinjections += 1;
            }
        }
    }

    /// Subflow `i` timed out: mark it potentially failed, offer its unacknowledged data to
    /// the other subflows, and take back the chunks it had not sent yet (Linux reinjects the
    /// whole write queue of a failed subflow; otherwise a chunk queued there could hold the
    /// head of line for as long as the path is down).
    pub(super) fn reinject_after_timeout(&mut self, i: usize) {
        let n = self.subs.len();
        let data_una = self.data_una;
        let sub = &mut self.subs[i];
        sub.usable = false;
        let mut offered = Vec::new();
        // unsent chunks were never on the path and nobody else will send them: they must be
        // scheduled again, on any subflow, this one included
        for (seq, len) in sub.tcp.sender.take_back_unsent() {
            if let Some(dsn) = dsn_of(&sub.map, seq) {
                offered.push(Reinject { dsn, len: len as u32, target: None, exclude: None });
            }
        }
        let nxt = sub.tcp.sender.snd_nxt();
        while sub.map.back().is_some_and(|m| m.seq >= nxt) {
            sub.map.pop_back();
        }
        // copies of what is in flight on it, for the other subflows (the subflow still
        // retransmits its own data; whichever copy arrives second is discarded)
        if n > 1 {
            let from = sub.reinjected_upto;
            for (seq, len) in sub.tcp.sender.unacked_segments().filter(|&(seq, _)| seq >= from) {
                if let Some(dsn) = dsn_of(&sub.map, seq) {
                    if dsn + len as u64 > data_una {
                        offered.push(Reinject { dsn, len, target: None, exclude: Some(i) });
                    }
                }
            }
            sub.reinjected_upto = sub.reinjected_upto.max(sub.tcp.sender.snd_nxt());
        }
        // ahead of other pending copies, in that order
        for r in offered.into_iter().rev() {
            self.reinject.push_front(r);
        }
    }
}

/// The slowest subflow holding the oldest unacknowledged data, and the mask of subflows it
/// was sent on.
fn head_of_line(subs: &[Subflow], data_una: u64) -> (Option<usize>, u64) {
    let mut holder: Option<usize> = None;
    let mut mask = 0u64;
    let srtt = |i: usize| subs[i].tcp.sender.rtt().srtt().unwrap_or_default();
    for (i, s) in subs.iter().enumerate() {
        if s.mappings().any(|m| m.dsn <= data_una && data_una < m.dsn + m.len as u64) {
            mask |= 1 << i.min(63);
            if holder.is_none_or(|h| srtt(i) > srtt(h)) {
                holder = Some(i);
            }
        }
    }
    (holder, mask)
}
