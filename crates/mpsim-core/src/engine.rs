//! The event queue: a heap keyed by (time, insertion sequence).
//!
//! Ties in time are broken by insertion order, so a run is deterministic. There is no global
//! state: the simulation owns its queue and passes `now` to every component.

use crate::time::SimTime;

/// A deterministic priority queue of events: a 4-ary min-heap on the key (time, sequence),
/// packed into one `u128` so each step of a sift is a single comparison. Four children per
/// node halve the depth of a binary heap; with a few dozen pending events the whole heap
/// stays in a handful of cache lines. Each entry keeps its key and its event side by side, so
/// a step of a sift moves one entry.
///
/// `pop` leaves the root's slot empty (a hole) instead of moving the last entry up at once:
/// handling an event usually schedules the next one (a link's next packet, a timer), and that
/// push fills the hole with a single sift down, where a pop and a push would sift twice. A hole
/// still there at the next pop or peek is closed then. The keys are unique, so the order in
/// which events come out does not depend on the heap's layout.
pub struct EventQueue<E> {
    heap: Vec<(u128, E)>,
    seq: u64,
    /// The root slot is empty (its event was popped).
    hole: bool,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn key(time: SimTime, seq: u64) -> u128 {
    ((time.0 as u128) << 64) | seq as u128
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: Vec::with_capacity(256), seq: 0, hole: false }
    }

    /// Inlined at its few call sites: most pushes fill the hole of the pop just before,
    /// a short sift down, where a call's overhead is a good part of the cost.
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, ev: E) {
        self.seq += 1;
        let k = key(time, self.seq);
        if self.hole {
            self.hole = false;
            self.sift_down(k, ev);
            return;
        }
        self.heap.push((k, ev));
        let h = &mut self.heap[..];
        let mut i = h.len() - 1;
        // sift up
        while i > 0 {
            let parent = (i - 1) / 4;
            if h[parent].0 <= k {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = (k, ev);
    }

    /// Puts (k, ev) into the empty root slot and sifts it down to its place.
    #[inline(always)]
    fn sift_down(&mut self, k: u128, ev: E) {
        let h = &mut self.heap[..];
        let n = h.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            let (best, best_key) = if first + 4 <= n {
                // four children: a tournament of three comparisons without a loop (the keys
                // are unique, so the winner is the one minimum)
                let c = &h[first..first + 4];
                let (a, ka) = if c[1].0 < c[0].0 { (1, c[1].0) } else { (0, c[0].0) };
                let (b, kb) = if c[3].0 < c[2].0 { (3, c[3].0) } else { (2, c[2].0) };
                if kb < ka {
                    (first + b, kb)
                } else {
                    (first + a, ka)
                }
            } else if first < n {
                let mut best = first;
                let mut best_key = h[first].0;
                for (c, e) in h.iter().enumerate().skip(first + 1) {
                    if e.0 < best_key {
                        best = c;
                        best_key = e.0;
                    }
                }
                (best, best_key)
            } else {
                break;
            };
            if k <= best_key {
                break;
            }
            h[i] = h[best];
            i = best;
        }
        h[i] = (k, ev);
    }

    /// Closes the hole left by a pop: the last entry fills the root slot.
    fn close_hole(&mut self) {
        self.hole = false;
        let Some((k, ev)) = self.heap.pop() else { return };
        if !self.heap.is_empty() {
            self.sift_down(k, ev);
        }
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        if self.hole {
            self.close_hole();
        }
        let &(k, ev) = self.heap.first()?;
        self.hole = true;
        Some((SimTime((k >> 64) as u64), ev))
    }

    /// Removes and returns the earliest event if it is due no later than `end`.
    #[inline]
    pub fn pop_until(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        if self.hole {
            self.close_hole();
        }
        let &(k, ev) = self.heap.first()?;
        let t = SimTime((k >> 64) as u64);
        if t > end {
            return None;
        }
        self.hole = true;
        Some((t, ev))
    }

    pub fn peek_time(&mut self) -> Option<SimTime> {
        if self.hole {
            self.close_hole();
        }
        self.heap.first().map(|k| SimTime((k.0 >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.hole as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events processed so far: every event pushed has been popped or is pending.
    pub fn events_processed(&self) -> u64 {
        self.seq - self.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_with_fifo_ties() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), "c");
        q.push(SimTime(1), "a");
        q.push(SimTime(5), "d");
        q.push(SimTime(2), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
        assert_eq!(q.events_processed(), 4);
    }

    #[test]
    fn matches_a_sorted_reference_on_random_input() {
        let mut rng = crate::rng::Rng::from_seed(5);
        let mut q = EventQueue::new();
        let mut reference = Vec::new();
        let mut n = 0u32;
        for round in 0..2000 {
            for _ in 0..rng.below(5) {
                let t = SimTime(rng.below(50) + round);
                q.push(t, n);
                reference.push((t, n));
                n += 1;
            }
            if rng.below(3) > 0 {
                reference.sort();
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(q.pop(), want);
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort();
        for want in reference {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.is_empty());
    }
}
