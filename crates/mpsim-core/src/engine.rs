//! The event queue: two lanes keyed by (time, insertion sequence), a calendar and a heap.
//!
//! Ties in time are broken by insertion order, so a run is deterministic. There is no global
//! state: the simulation owns its queue and passes `now` to every component.

use crate::time::SimTime;

/// A deterministic priority queue of events, keyed by (time, sequence), in two lanes.
///
/// Events are pushed into one of two lanes, the frequent one a [`Calendar`] (a heap while it
/// holds few entries), the other a heap, and a pop takes the earlier of the two heads. The lane changes nothing in the order events come out: the keys are unique
/// over both lanes. It keeps the heap that most pops and pushes touch small: the simulation
/// puts its frequent events (a link's next packet) in one lane and the rest (timers, which
/// mostly wait long, samples, applications) in the other, so the frequent lane holds about
/// one entry per busy link (in a two-path transfer four instead of seven, one level of the
/// heap instead of two).
pub struct EventQueue<E> {
    /// The lane of frequent events ([`push_frequent`](Self::push_frequent)).
    frequent: Calendar<E>,
    other: Heap<E>,
    /// The head key of `other`, kept up to date as it changes (rarely), so that a pop looks
    /// into one heap.
    other_head: u128,
    seq: u64,
}

/// A 4-ary min-heap on the key (time, sequence), packed into one `u128` so each step of a sift
/// is a single comparison. Four children per node halve the depth of a binary heap; with a few
/// dozen pending events the whole heap stays in a handful of cache lines. Each entry keeps its
/// key and its event side by side, so a step of a sift moves one entry.
///
/// A pop from the frequent lane leaves the root's slot empty (a hole) instead of moving the
/// last entry up at once: handling a link's event usually schedules its next one, and that
/// push fills the hole with a single sift down, where a pop and a push would sift twice. A hole
/// still there at the next pop or peek is closed then (the other lane closes its hole at once,
/// to keep its head known). The keys are unique, so the order in which events come out does
/// not depend on the heap's layout.
struct Heap<E> {
    entries: Vec<(u128, E)>,
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

#[inline]
fn time_of(k: u128) -> SimTime {
    SimTime((k >> 64) as u64)
}

/// The head key of an empty lane: later than every key (a sequence number never reaches it).
const NONE: u128 = u128::MAX;

/// A heap with more entries than this has three levels or more (1 + 4 + 16 entries fill two).
const DEEP: usize = 21;

impl<E: Copy> Heap<E> {
    fn new() -> Self {
        Heap { entries: Vec::with_capacity(64), hole: false }
    }

    #[inline(always)]
    fn push(&mut self, k: u128, ev: E) {
        if self.hole {
            self.hole = false;
            // (in a heap of three levels or more most entries are near the bottom, and so
            // mostly is a new one: a link's next packet leaves after most pending events)
            if self.entries.len() > DEEP {
                self.sift_down_from_leaf(k, ev);
            } else {
                self.sift_down(k, ev);
            }
            return;
        }
        self.entries.push((k, ev));
        let h = &mut self.entries[..];
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
        let h = &mut self.entries[..];
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
                // one to three children, the last ones
                let c = &h[first..];
                let (mut best, mut best_key) = (0, c[0].0);
                if let Some(e) = c.get(1).filter(|e| e.0 < best_key) {
                    (best, best_key) = (1, e.0);
                }
                if let Some(e) = c.get(2).filter(|e| e.0 < best_key) {
                    (best, best_key) = (2, e.0);
                }
                (first + best, best_key)
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

    /// Puts (k, ev), an entry that belongs near the bottom, into the empty root slot: the
    /// empty slot first goes down to a leaf, always to the earliest of its children (three
    /// comparisons per level of four), then (k, ev) rises from there to its place. The way
    /// down saves the comparison with k that `sift_down` makes at every level, and the way
    /// up is short (the bottom-up sift of Wegener's bottom-up heapsort, 1993). The choice of
    /// the child is written out as in `sift_down` (a shared helper returning an `Option`
    /// cost about 20 instructions per packet on mptcp_2path and 250 on the k = 8 fat tree).
    #[inline(always)]
    fn sift_down_from_leaf(&mut self, k: u128, ev: E) {
        let h = &mut self.entries[..];
        let n = h.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            let best = if first + 4 <= n {
                // four children: a tournament of three comparisons without a loop (the keys
                // are unique, so the winner is the one minimum)
                let c = &h[first..first + 4];
                let (a, ka) = if c[1].0 < c[0].0 { (1, c[1].0) } else { (0, c[0].0) };
                let (b, kb) = if c[3].0 < c[2].0 { (3, c[3].0) } else { (2, c[2].0) };
                first + if kb < ka { b } else { a }
            } else if first < n {
                // one to three children, the last ones
                let c = &h[first..];
                let (mut best, mut best_key) = (0, c[0].0);
                if let Some(e) = c.get(1).filter(|e| e.0 < best_key) {
                    (best, best_key) = (1, e.0);
                }
                if c.get(2).is_some_and(|e| e.0 < best_key) {
                    best = 2;
                }
                first + best
            } else {
                break;
            };
            h[i] = h[best];
            i = best;
        }
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

    /// Closes the hole left by a pop: the last entry fills the root slot.
    fn close_hole(&mut self) {
        self.hole = false;
        let Some((k, ev)) = self.entries.pop() else { return };
        // (the last entry, from the bottom, mostly goes back near there)
        if !self.entries.is_empty() {
            self.sift_down_from_leaf(k, ev);
        }
    }

    /// The key of the earliest entry, or `NONE`.
    #[inline(always)]
    fn head(&mut self) -> u128 {
        if self.hole {
            self.close_hole();
        }
        self.entries.first().map_or(NONE, |e| e.0)
    }

    /// Takes the earliest entry (`head` was asked first and is not `NONE`).
    #[inline(always)]
    fn take(&mut self) -> E {
        self.hole = true;
        self.entries[0].1
    }

    fn len(&self) -> usize {
        self.entries.len() - self.hole as usize
    }
}

/// Time slots of the calendar: 2^SLOT_SHIFT ns (4.1 us) each.
const SLOT_SHIFT: u32 = 12;
/// Slots the calendar's ring holds ahead of the current one (16.8 ms of 4.1 us slots).
const RING: usize = 4096;
/// Words of the ring's bitmap of non-empty buckets (one bit of `Calendar::words` each).
const WORDS: usize = RING / 64;
/// The calendar spreads its entries over slots when it holds more than this, and holds them
/// all in one heap again when fewer than `FEW` are left: below a few hundred entries the
/// heap's sifts cost less than the slots' upkeep.
const MANY: usize = 512;
const FEW: usize = 64;
/// `Calendar::slot` while every entry is in `near` (the calendar holds few).
const ALL_NEAR: u64 = u64::MAX;

#[inline]
fn slot_of(k: u128) -> u64 {
    (k >> (64 + SLOT_SHIFT)) as u64
}

/// The lane of frequent events: a calendar queue (Brown, 1988) that gives the earliest key
/// exactly, at a cost that does not grow with the number of pending entries.
///
/// Time is cut into slots of 2^SLOT_SHIFT ns. The entries of the current slot (and of any
/// earlier one pushed late) are in `near`, a small heap; those of the next RING - 1 slots each
/// in the ring's bucket of their slot, unsorted; those further away in `far`, a heap. Every
/// key in the ring is later than every key in `near` (a later slot), and every key in `far`
/// later than every key in the ring, so `near`'s head is the earliest entry, and the keys
/// being unique the order in which entries come out is the one a single heap gives. When
/// `near` runs out, the next non-empty bucket (found through a two-level bitmap) becomes the
/// current slot and moves into it, and the entries of `far` that came within the ring's reach
/// move into their buckets.
///
/// A link's next packet mostly arrives a transmission time after the one just handled, a few
/// slots ahead: a push into a bucket and, once, into `near`, whose size is the entries of one
/// slot, not the number of busy links. While the calendar holds few entries (below `MANY`,
/// then until fewer than `FEW` are left) they all stay in `near`, a plain heap, cheaper at
/// that size.
struct Calendar<E> {
    near: Heap<E>,
    /// The current slot: entries of this slot or earlier are in `near` (all of them while it
    /// is `ALL_NEAR`).
    slot: u64,
    /// Bucket `s % RING` holds the entries of slot s, for s in (slot, slot + RING).
    ring: Box<[Vec<(u128, E)>]>,
    /// Bit b of word w: bucket 64 w + b is not empty.
    bits: [u64; WORDS],
    /// Bit w: word w of `bits` is not zero.
    words: u64,
    /// Entries in the ring.
    in_ring: usize,
    far: Heap<E>,
}

impl<E: Copy> Calendar<E> {
    fn new() -> Self {
        Calendar {
            near: Heap::new(),
            slot: ALL_NEAR,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            bits: [0; WORDS],
            words: 0,
            in_ring: 0,
            far: Heap::new(),
        }
    }

    #[inline(always)]
    fn push(&mut self, k: u128, ev: E) {
        let s = slot_of(k);
        if s <= self.slot {
            // (filling the hole of a pop leaves the size as it was: only an entry added can
            // make the heap too large)
            if !self.near.hole && self.near.entries.len() >= MANY && self.slot == ALL_NEAR {
                self.near.push(k, ev);
                return self.spread();
            }
            self.near.push(k, ev);
        } else if s - self.slot < RING as u64 {
            let b = s as usize % RING;
            self.ring[b].push((k, ev));
            self.bits[b / 64] |= 1 << (b % 64);
            self.words |= 1 << (b / 64);
            self.in_ring += 1;
        } else {
            self.far.push(k, ev);
        }
    }

    /// The key of the earliest entry, or `NONE`.
    #[inline(always)]
    fn head(&mut self) -> u128 {
        let h = self.near.head();
        if h != NONE {
            return h;
        }
        self.advance();
        self.near.head()
    }

    /// Takes the earliest entry (`head` was asked first and is not `NONE`).
    #[inline(always)]
    fn take(&mut self) -> E {
        self.near.take()
    }

    /// Spreads the entries of `near`, all of them so far, over the slots from the earliest.
    #[inline(never)]
    fn spread(&mut self) {
        let first = self.near.head();
        let all = std::mem::take(&mut self.near.entries);
        self.slot = slot_of(first);
        for &(k, ev) in &all {
            self.push(k, ev);
        }
    }

    /// With `near` empty: makes the next slot that has entries the current one, or, with few
    /// entries left, puts them all back into `near`.
    #[inline(never)]
    fn advance(&mut self) {
        if self.slot == ALL_NEAR {
            return;
        }
        if self.in_ring + self.far.len() < FEW {
            self.slot = ALL_NEAR;
            for b in 0..RING {
                for (k, ev) in self.ring[b].drain(..) {
                    self.near.push(k, ev);
                }
            }
            (self.bits, self.words, self.in_ring) = ([0; WORDS], 0, 0);
            while self.far.head() != NONE {
                let (k, ev) = (self.far.head(), self.far.take());
                self.near.push(k, ev);
            }
            return;
        }
        let next = if self.in_ring > 0 {
            let from = (self.slot + 1) as usize % RING;
            let b = self.next_bucket(from);
            self.slot + 1 + ((b + RING - from) % RING) as u64
        } else {
            let f = self.far.head();
            if f == NONE {
                return;
            }
            slot_of(f)
        };
        self.slot = next;
        let b = next as usize % RING;
        if self.bits[b / 64] & (1 << (b % 64)) != 0 {
            self.bits[b / 64] &= !(1 << (b % 64));
            if self.bits[b / 64] == 0 {
                self.words &= !(1 << (b / 64));
            }
            self.in_ring -= self.ring[b].len();
            for (k, ev) in self.ring[b].drain(..) {
                self.near.push(k, ev);
            }
        }
        // the entries of `far` the ring now reaches
        loop {
            let f = self.far.head();
            if f == NONE || slot_of(f) - self.slot >= RING as u64 {
                break;
            }
            let ev = self.far.take();
            self.push(f, ev);
        }
    }

    /// The first non-empty bucket at or after `from`, going round the ring (one exists).
    #[inline]
    fn next_bucket(&self, from: usize) -> usize {
        let w = from / 64;
        let here = self.bits[w] & (!0u64 << (from % 64));
        if here != 0 {
            return w * 64 + here.trailing_zeros() as usize;
        }
        let later = if w + 1 < WORDS { self.words & (!0u64 << (w + 1)) } else { 0 };
        let w = if later != 0 { later } else { self.words }.trailing_zeros() as usize;
        w * 64 + self.bits[w].trailing_zeros() as usize
    }

    fn len(&self) -> usize {
        self.near.len() + self.in_ring + self.far.len()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { frequent: Calendar::new(), other: Heap::new(), other_head: NONE, seq: 0 }
    }

    /// Pushes into the other lane (see the type).
    pub fn push(&mut self, time: SimTime, ev: E) {
        self.seq += 1;
        self.other.push(key(time, self.seq), ev);
        self.other_head = self.other.head();
    }

    /// Pushes into the lane of frequent events (see the type). Inlined at its few call sites:
    /// most pushes fill the hole of the pop just before, a short sift down, where a call's
    /// overhead is a good part of the cost.
    #[inline(always)]
    pub fn push_frequent(&mut self, time: SimTime, ev: E) {
        self.seq += 1;
        self.frequent.push(key(time, self.seq), ev);
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_until(SimTime(u64::MAX))
    }

    /// Removes and returns the earliest event if it is due no later than `end`.
    #[inline]
    pub fn pop_until(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        let f = self.frequent.head();
        if f < self.other_head {
            if time_of(f) > end {
                return None;
            }
            return Some((time_of(f), self.frequent.take()));
        }
        let o = self.other_head;
        if o == NONE || time_of(o) > end {
            return None;
        }
        let ev = self.other.take();
        self.other_head = self.other.head();
        Some((time_of(o), ev))
    }

    pub fn peek_time(&mut self) -> Option<SimTime> {
        let k = self.frequent.head().min(self.other_head);
        (k != NONE).then(|| time_of(k))
    }

    pub fn len(&self) -> usize {
        self.frequent.len() + self.other.len()
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
                if rng.below(2) == 0 {
                    q.push(t, n);
                } else {
                    q.push_frequent(t, n);
                }
                reference.push((t, n));
                n += 1;
            }
            if rng.below(3) > 0 {
                reference.sort();
                assert_eq!(q.peek_time(), reference.first().map(|r| r.0));
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

    /// The calendar of the frequent lane over every case: entries in one heap (few of them),
    /// in the current slot, in the ring (going round it), beyond it, pushed behind the current
    /// slot after a peek moved it, and ties in time across all of those, against a sorted
    /// reference; the entries spread over the slots as they grow past `MANY` and gather into
    /// one heap again below `FEW`.
    #[test]
    fn the_frequent_lane_gives_the_order_of_a_sorted_reference_wherever_its_entries_wait() {
        let slot = 1u64 << SLOT_SHIFT;
        let reach = [3, slot, 40 * slot, RING as u64 * slot, 3 * RING as u64 * slot];
        let mut rng = crate::rng::Rng::from_seed(9);
        let mut q = EventQueue::new();
        let mut reference: Vec<(SimTime, u32)> = Vec::new();
        let (mut n, mut now) = (0u32, 0u64);
        let mut spread = 0;
        for _ in 0..6_000 {
            for _ in 0..rng.below(4) {
                // a time from now on, on a coarse grid now and then so that times tie
                let r = reach[rng.below(5) as usize];
                let mut t = now + rng.below(r);
                if rng.below(4) == 0 {
                    t -= t % slot;
                    t = t.max(now);
                }
                if rng.below(3) == 0 {
                    q.push(SimTime(t), n);
                } else {
                    q.push_frequent(SimTime(t), n);
                }
                reference.push((SimTime(t), n));
                n += 1;
            }
            reference.sort();
            // a peek moves the calendar to the next slot with entries; what is pushed then,
            // from an earlier time, must still come out first
            assert_eq!(q.peek_time(), reference.first().map(|r| r.0));
            if rng.below(3) > 0 {
                let want = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(q.pop(), want);
                if let Some((t, _)) = want {
                    now = t.0;
                }
            }
            assert_eq!(q.len(), reference.len());
            spread += (q.frequent.slot != ALL_NEAR) as u32;
        }
        assert!(spread > 1000 && q.frequent.in_ring > 0 && q.frequent.far.len() > 0);
        for want in reference {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.is_empty() && q.pop().is_none() && q.frequent.slot == ALL_NEAR);
        assert_eq!(q.events_processed(), n as u64);
    }
}
