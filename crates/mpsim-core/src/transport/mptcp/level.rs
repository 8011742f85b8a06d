//! The connection level's bookkeeping: data sequence numbers written and scheduled, the
//! DATA_ACK and the window it grants, priorities of written ranges, and at the receiver the
//! reassembly by DSN with its out-of-order (O3) offsets and the time the window blocked.

use super::MptcpConn;
use crate::time::{Dur, SimTime};
use crate::transport::tcp::Received;

impl MptcpConn {
    /// The application writes `len` bytes with `priority` (0: ordinary data).
    pub fn write(&mut self, len: u64, priority: u8) {
        let start = self.app_limit;
        self.app_limit += len;
        if priority > 0 {
            match self.priorities.back_mut() {
                Some((_, end, p)) if *end == start && *p == priority => *end = self.app_limit,
                _ => self.priorities.push_back((start, self.app_limit, priority)),
            }
        }
    }

    /// The priority of the byte at `dsn` (0 unless the application raised it). Ranges wholly
    /// below both `dsn` and the next unscheduled byte are forgotten.
    pub fn priority_at(&mut self, dsn: u64) -> u8 {
        // asked at every scheduling pass; most applications never raise a priority
        if self.priorities.is_empty() {
            return 0;
        }
        let horizon = self.dsn_nxt.min(dsn);
        while self.priorities.front().is_some_and(|&(_, end, _)| end <= horizon) {
            self.priorities.pop_front();
        }
        self.priorities.iter().find(|&&(start, end, _)| start <= dsn && dsn < end).map_or(0, |&(_, _, p)| p)
    }

    /// Bytes written by the application and not yet handed to a subflow.
    pub fn unscheduled(&self) -> u64 {
        self.app_limit - self.dsn_nxt - self.scheduled_ahead()
    }

    /// Prioritised bytes above `dsn_nxt` already handed out by the priority dequeue.
    fn scheduled_ahead(&self) -> u64 {
        if self.prio_nxt <= self.dsn_nxt {
            return 0;
        }
        let (lo, hi) = (self.dsn_nxt, self.prio_nxt);
        self.priorities
            .iter()
            .take_while(|&&(start, _, _)| start < hi)
            .map(|&(start, end, _)| end.min(hi).saturating_sub(start.max(lo)))
            .sum()
    }

    /// The priority dequeue's next chunk: the oldest prioritised bytes not yet handed out,
    /// as (DSN, length of at most `mss` within one written range, priority).
    pub fn next_priority_chunk(&self, mss: u64) -> Option<(u64, u64, u8)> {
        let from = self.prio_nxt.max(self.dsn_nxt);
        self.priorities.iter().find(|&&(_, end, _)| end > from).map(|&(start, end, p)| {
            let dsn = start.max(from);
            (dsn, (end - dsn).min(mss), p)
        })
    }

    /// The priority dequeue handed out [dsn, dsn + len): move its cursor, and move `dsn_nxt`
    /// past prioritised data handed out ahead of it.
    pub fn priority_chunk_scheduled(&mut self, dsn: u64, len: u64) {
        self.prio_nxt = dsn + len;
        self.skip_scheduled_ahead();
    }

    /// Moves `dsn_nxt` past prioritised bytes the priority dequeue already handed out.
    pub fn skip_scheduled_ahead(&mut self) {
        while self.dsn_nxt < self.prio_nxt {
            let nxt = self.dsn_nxt;
            match self.priorities.iter().find(|&&(start, end, _)| start <= nxt && nxt < end) {
                Some(&(_, end, _)) => self.dsn_nxt = end.min(self.prio_nxt),
                None => break,
            }
        }
    }

    /// Length of the ordinary chunk at `dsn_nxt` under the priority dequeue: at most `mss`,
    /// ending where the next prioritised range begins.
    pub fn ordinary_chunk_len(&self, mss: u64) -> u64 {
        let nxt = self.dsn_nxt;
        let mut len = (self.app_limit - nxt).min(mss);
        if let Some(&(start, _, _)) = self.priorities.iter().find(|&&(start, _, _)| start > nxt) {
            len = len.min(start - nxt);
        }
        len
    }

    /// A DATA_ACK with the connection-level window arrived.
    pub fn on_data_ack(&mut self, data_ack: u64, wnd: u64) {
        if data_ack > self.data_una {
            self.data_una = data_ack.min(self.dsn_nxt.max(self.data_una));
        }
        self.right_edge = self.right_edge.max(data_ack + wnd);
        while self.reinject.front().is_some_and(|r| r.dsn + r.len as u64 <= self.data_una) {
            self.reinject.pop_front();
        }
    }

    /// Records whether the receive window blocks new data at `now`.
    pub fn note_blocked(&mut self, now: SimTime, blocked: bool) {
        match (blocked, self.blocked_since) {
            (true, None) => self.blocked_since = Some(now),
            (false, Some(t)) => {
                self.blocked_total = self.blocked_total + now.since(t);
                self.blocked_since = None;
            }
            _ => {}
        }
    }

    /// Total time blocked by the receive window up to `now`.
    pub fn blocked_time(&self, now: SimTime) -> Dur {
        self.blocked_total + self.blocked_since.map_or(Dur::ZERO, |t| now.since(t))
    }

    /// Data with DSN `dsn` arrived on some subflow.
    pub fn on_receive(&mut self, now: SimTime, dsn: u64, len: u32) -> Received {
        if let Some(prev_end) = self.last_rx_end {
            let off = dsn.abs_diff(prev_end);
            self.o3_max = self.o3_max.max(off);
            self.o3_sum += off as u128;
            self.o3_count += 1;
        }
        self.last_rx_end = Some(dsn + len as u64);
        self.rx.on_segment(now, dsn, len)
    }

    /// Mean |O3-DSN offset| over received chunks.
    pub fn o3_mean(&self) -> Option<f64> {
        (self.o3_count > 0).then(|| self.o3_sum as f64 / self.o3_count as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{dsn_of, Mapping, Reinject};
    use super::*;
    use crate::sched::Sched;
    use std::collections::VecDeque;

    fn conn() -> MptcpConn {
        MptcpConn::new(Vec::new(), Sched::by_name("lowest_rtt").unwrap(), 10_000, 40, 1000)
    }

    #[test]
    fn mapping_lookup() {
        let map: VecDeque<Mapping> = [Mapping { seq: 0, dsn: 5000, len: 1000 }, Mapping { seq: 1000, dsn: 9000, len: 500 }].into();
        assert_eq!(dsn_of(&map, 0), Some(5000));
        assert_eq!(dsn_of(&map, 999), Some(5999));
        assert_eq!(dsn_of(&map, 1200), Some(9200));
        assert_eq!(dsn_of(&map, 1500), None);
        // a longer list: the last two mappings are looked at first, the others searched; the
        // answer is the same whichever way it is found
        let map: VecDeque<Mapping> = (0..6u64).map(|k| Mapping { seq: 1000 * k, dsn: 7000 * k + 3, len: 1000 }).collect();
        for seq in (0..6000).step_by(250) {
            assert_eq!(dsn_of(&map, seq), Some(7000 * (seq / 1000) + 3 + seq % 1000), "seq {seq}");
        }
        assert_eq!(dsn_of(&map, 6000), None);
    }

    #[test]
    fn data_ack_moves_the_window_and_drops_acked_reinjections() {
        let mut c = conn();
        c.app_limit = 20_000;
        c.dsn_nxt = 8000;
        c.reinject.push_back(Reinject { dsn: 0, len: 1000, target: None, exclude: Some(0) });
        c.reinject.push_back(Reinject { dsn: 3000, len: 1000, target: None, exclude: Some(0) });
        c.on_data_ack(2000, 4000);
        assert_eq!((c.data_una, c.right_edge), (2000, 10_000), "the edge never moves left");
        assert_eq!(c.reinject.len(), 1);
        c.on_data_ack(8000, 10_000);
        assert_eq!((c.data_una, c.right_edge), (8000, 18_000));
        assert!(c.reinject.is_empty());
    }

    #[test]
    fn priorities_follow_the_writes() {
        let mut c = conn();
        c.write(1000, 2);
        c.write(500, 2);
        c.write(3000, 0);
        c.write(800, 1);
        assert_eq!((c.priority_at(0), c.priority_at(1499)), (2, 2));
        assert_eq!((c.priority_at(1500), c.priority_at(4499)), (0, 0));
        assert_eq!(c.priority_at(4500), 1);
        c.dsn_nxt = 4500;
        assert_eq!(c.priority_at(4500), 1);
        assert_eq!(c.priority_at(5300), 0);
    }

    #[test]
    fn blocked_time_accumulates() {
        let mut c = conn();
        c.note_blocked(SimTime(100), true);
        c.note_blocked(SimTime(150), true);
        c.note_blocked(SimTime(300), false);
        c.note_blocked(SimTime(400), true);
        assert_eq!(c.blocked_time(SimTime(450)), Dur(250));
    }

    #[test]
    fn reassembly_by_dsn_and_o3_offsets() {
        let mut c = conn();
        assert_eq!(c.on_receive(SimTime::ZERO, 1000, 1000).delivered, 0);
        assert_eq!(c.on_receive(SimTime::ZERO, 0, 1000).delivered, 2000);
        // offsets: first none, then |0 - 2000| = 2000
        assert_eq!(c.o3_max, 2000);
        assert_eq!(c.on_receive(SimTime::ZERO, 0, 1000).delivered, 0, "duplicate copy");
    }
}
