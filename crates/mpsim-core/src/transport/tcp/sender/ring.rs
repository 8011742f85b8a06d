//! The scoreboard's segments, oldest first: a ring indexed by segment number.
//!
//! Segment number n (counted from the first ever sent) lives at `buf[n & mask]`, with the
//! buffer's length a power of two. The front is segment `head`, the number of segments
//! dropped so far; the back is `tail - 1`. Taking the front off is one increment, and
//! finding segment `i` from the front one addition and one mask: a `VecDeque` wraps its
//! physical index by a comparison and a subtraction at each of these, twice for every
//! segment an ACK acknowledges (the front looked at, then popped). The buffer doubles when
//! full and never shrinks, as a `VecDeque`'s does.

use super::Seg;
use crate::time::SimTime;

const EMPTY: Seg = Seg { seq: 0, len: 0, flags: 0, sent_at: SimTime::ZERO };

#[derive(Clone, Debug, Default)]
pub(super) struct SegRing {
    /// Empty, or a power of two long; the slots outside `head..tail` hold stale segments.
    buf: Vec<Seg>,
    /// Number of the front segment: the segments dropped from the front so far.
    head: u64,
    /// One past the number of the back segment.
    tail: u64,
}

impl SegRing {
    /// The slot of segment number `n`. (`buf` is never empty when a segment is looked up:
    /// a segment was pushed first.)
    #[inline(always)]
    fn slot(&self, n: u64) -> usize {
        n as usize & (self.buf.len() - 1)
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.tail == self.head
    }

    /// Segments dropped from the front so far: segment number n is `self[n - dropped()]`.
    #[inline(always)]
    pub fn dropped(&self) -> u64 {
        self.head
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&Seg> {
        (i < self.len()).then(|| &self.buf[self.slot(self.head + i as u64)])
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&Seg> {
        (!self.is_empty()).then(|| &self.buf[self.slot(self.head)])
    }

    #[inline(always)]
    pub fn front_mut(&mut self) -> Option<&mut Seg> {
        if self.is_empty() {
            return None;
        }
        let k = self.slot(self.head);
        Some(&mut self.buf[k])
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<Seg> {
        let s = *self.front()?;
        self.head += 1;
        Some(s)
    }

    #[inline(always)]
    pub fn push_back(&mut self, s: Seg) {
        if self.len() == self.buf.len() {
            self.grow();
        }
        let k = self.slot(self.tail);
        self.buf[k] = s;
        self.tail += 1;
    }

    /// Doubles the buffer (at least 16 slots), each segment moving to its slot under the
    /// new mask.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut buf = vec![EMPTY; (2 * self.buf.len()).max(16)];
        let mask = buf.len() - 1;
        for n in self.head..self.tail {
            buf[n as usize & mask] = self.buf[self.slot(n)];
        }
        self.buf = buf;
    }

    /// The segments, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Seg> + '_ {
        (self.head..self.tail).map(move |n| &self.buf[self.slot(n)])
    }

    /// Calls `f` on every segment, oldest first.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Seg)) {
        for n in self.head..self.tail {
            let k = self.slot(n);
            f(&mut self.buf[k]);
        }
    }

    /// The index of the first segment for which `pred` is false, the segments being
    /// partitioned by it (all true first), as `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&Seg) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(&self[mid]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl std::ops::Index<usize> for SegRing {
    type Output = Seg;
    #[inline(always)]
    fn index(&self, i: usize) -> &Seg {
        assert!(i < self.len(), "segment {i} of {}", self.len());
        &self.buf[self.slot(self.head + i as u64)]
    }
}

impl std::ops::IndexMut<usize> for SegRing {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Seg {
        assert!(i < self.len(), "segment {i} of {}", self.len());
        let k = self.slot(self.head + i as u64);
        &mut self.buf[k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::VecDeque;

    fn seg(n: u64) -> Seg {
        Seg { seq: n * 1000, len: 1000 + (n % 7) as u32, flags: (n % 16) as u8, sent_at: SimTime(n) }
    }

    fn same(a: &Seg, b: &Seg) -> bool {
        (a.seq, a.len, a.flags, a.sent_at) == (b.seq, b.len, b.flags, b.sent_at)
    }

    /// Random pushes, pops and writes across many growths and wraps: every lookup answers
    /// what a `VecDeque` given the same operations answers.
    #[test]
    fn the_ring_holds_what_a_deque_holds() {
        let mut rng = Rng::from_seed(7);
        let mut ring = SegRing::default();
        let mut deque: VecDeque<Seg> = VecDeque::new();
        let mut next = 0u64;
        let mut dropped = 0u64;
        for step in 0..100_000u64 {
            // phases that fill up (growth) and drain (wrap-around of the front)
            let push_share = if (step / 5_000) % 2 == 0 { 0.7 } else { 0.35 };
            if rng.next_f64() < push_share {
                ring.push_back(seg(next));
                deque.push_back(seg(next));
                next += 1;
            } else {
                let (a, b) = (ring.pop_front(), deque.pop_front());
                assert_eq!(a.is_some(), b.is_some(), "step {step}");
                if let (Some(a), Some(b)) = (a, b) {
                    assert!(same(&a, &b), "step {step}: popped {a:?}, expected {b:?}");
                    dropped += 1;
                }
            }
            assert_eq!(ring.len(), deque.len());
            assert_eq!(ring.is_empty(), deque.is_empty());
            assert_eq!(ring.dropped(), dropped);
            if !deque.is_empty() {
                let i = (rng.next_f64() * deque.len() as f64) as usize % deque.len();
                assert!(same(&ring[i], &deque[i]), "step {step}: segment {i}");
                assert!(same(ring.get(i).unwrap(), &deque[i]));
                ring[i].flags ^= 32;
                deque[i].flags ^= 32;
                ring.front_mut().unwrap().flags ^= 64;
                deque.front_mut().unwrap().flags ^= 64;
                assert!(same(ring.front().unwrap(), deque.front().unwrap()));
            }
            assert!(ring.get(deque.len()).is_none());
            if step % 997 == 0 {
                assert!(ring.iter().zip(deque.iter()).all(|(a, b)| same(a, b)) && ring.iter().count() == deque.len());
                ring.for_each_mut(|s| s.flags ^= 1);
                deque.iter_mut().for_each(|s| s.flags ^= 1);
                for x in [0, 500, next * 1000 / 2, next * 1000] {
                    assert_eq!(ring.partition_point(|s| s.seq < x), deque.partition_point(|s| s.seq < x));
                }
            }
        }
        assert!(ring.buf.len() >= 16 && ring.buf.len().is_power_of_two());
    }
}
