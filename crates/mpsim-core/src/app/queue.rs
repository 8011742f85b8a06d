//! The application's queue of a media sender: frames produced but not yet written to the
//! socket, because the send buffer cannot take them yet.
//!
//! A streaming sender does not give up a frame because the socket is momentarily full: it
//! holds the frame and writes it when acknowledgements free room. When it must discard, it
//! discards the least important frames first (priority drop: Krasic, Walpole and Feng,
//! "Quality-adaptive media streaming by priority drop", NOSSDAV 2003; the rule of MPEG frame
//! discarding, B before P before I). The rules:
//!
//! * Frames are written whole, highest priority first and oldest first among equals, as long
//!   as the next one fits in the send buffer (`unacked + len <= snd_buf`): the less important
//!   frames are the ones delayed (priority-progress streaming, Krasic and Walpole, 2001-2003:
//!   the sender sends in priority order within its window and drops what the window cannot
//!   carry). A frame of lower priority that would fit is not written past one that does not:
//!   the room is kept for the more important frame.
//! * The frames waiting hold at most `bound` bytes. When an arriving frame would put the queue
//!   over the bound, frames are discarded until the rest fit, each time the one with the lowest
//!   priority among the queued frames and the arriving one, the newest among equals (so the
//!   arriving frame goes first among its peers). After each discard the next frame is written
//!   if it now fits (a discarded frame may have been what held the queue).
//! * A frame that can never be held whole is discarded on arrival, alone: one larger than the
//!   send buffer (it could never be written), or one the send buffer cannot take now that is
//!   larger than the bound (it could never wait). No discard could make room for it, so no
//!   other frame is sacrificed for it. With a bound of 0 every frame the send buffer cannot
//!   take at once is discarded: a sender without a queue.
//!
//! Hence a frame is never discarded while a frame of lower priority is held (except one that
//! can never be held, above), and a frame written to the socket is never discarded.
//!
//! Frames are kept per priority level, each level in production order, so that the frame to
//! write (the front of the highest level) and the frame to discard (the newest of the lowest
//! level) are found in time proportional to the number of levels, whatever the queue's length.

use crate::time::SimTime;
use std::collections::VecDeque;

/// A frame the application produced: `len` bytes of class `class` (an index into the
/// stream's frame classes) with the class's `priority`, produced at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub len: u64,
    pub priority: u8,
    pub class: u8,
    pub at: SimTime,
}

/// What became of a frame that left the queue (or never entered it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Handed to the socket whole: it occupies `len` more bytes of the send buffer.
    Written,
    /// Discarded at the sender.
    Discarded,
}

/// The frames waiting for room in the send buffer (see the module's documentation).
#[derive(Clone, Debug, Default)]
pub struct FrameQueue {
    bound: u64,
    bytes: u64,
    len: usize,
    /// Per priority, lowest first: the waiting frames with their production number, oldest
    /// first. A level stays (empty) once seen; there are at most 256.
    levels: Vec<(u8, VecDeque<(u64, Frame)>)>,
    /// Production number of the next frame to enter.
    next: u64,
}

impl FrameQueue {
    /// An empty queue that holds at most `bound` bytes.
    pub fn new(bound: u64) -> FrameQueue {
        FrameQueue { bound, ..FrameQueue::default() }
    }

    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// Bytes of the waiting frames.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of waiting frames.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The waiting frames, by priority level (lowest first), each level oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Frame> {
        self.levels.iter().flat_map(|(_, l)| l.iter().map(|(_, f)| f))
    }

    /// A frame arrives while the send buffer of `capacity` bytes has `space` bytes free. `out`
    /// is told, in order, of every frame written to the socket or discarded as a result
    /// (the arriving one included, unless it stays in the queue).
    pub fn offer(&mut self, frame: Frame, space: u64, capacity: u64, mut out: impl FnMut(Frame, Outcome)) {
        if frame.len > capacity {
            return out(frame, Outcome::Discarded);
        }
        if self.is_empty() && frame.len <= space {
            return out(frame, Outcome::Written);
        }
        if frame.len > self.bound {
            return out(frame, Outcome::Discarded);
        }
        self.push(frame);
        let mut space = space;
        loop {
            space = self.drain(space, &mut out);
            if self.bytes <= self.bound {
                return;
            }
            let victim = self.pop_victim();
            out(victim, Outcome::Discarded);
        }
    }

    /// The send buffer has `space` bytes free: writes the waiting frames, highest priority
    /// first and oldest first among equals, as long as the next one fits, telling `out` of
    /// each. Returns the space left.
    pub fn drain(&mut self, mut space: u64, mut out: impl FnMut(Frame, Outcome)) -> u64 {
        while let Some(k) = self.front_level() {
            let (_, frame) = *self.levels[k].1.front().expect("a non-empty level");
            if frame.len > space {
                break;
            }
            self.levels[k].1.pop_front();
            self.bytes -= frame.len;
            self.len -= 1;
            space -= frame.len;
            out(frame, Outcome::Written);
        }
        space
    }

    fn push(&mut self, frame: Frame) {
        let k = match self.levels.binary_search_by_key(&frame.priority, |l| l.0) {
            Ok(k) => k,
            Err(k) => {
                self.levels.insert(k, (frame.priority, VecDeque::new()));
                k
            }
        };
        self.levels[k].1.push_back((self.next, frame));
        self.next += 1;
        self.bytes += frame.len;
        self.len += 1;
    }

    /// The level holding the next frame to write: the highest priority held.
    fn front_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|(_, l)| !l.is_empty())
    }

    /// Removes and returns the newest frame of the lowest priority held.
    fn pop_victim(&mut self) -> Frame {
        let level = self.levels.iter_mut().find(|(_, l)| !l.is_empty()).expect("a frame to discard");
        let (_, frame) = level.1.pop_back().expect("a non-empty level");
        self.bytes -= frame.len;
        self.len -= 1;
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The rule written the plain way: one list in production order, scanned for each choice.
    #[derive(Default)]
    struct Reference {
        frames: Vec<Frame>,
        bound: u64,
    }

    impl Reference {
        fn bytes(&self) -> u64 {
            self.frames.iter().map(|f| f.len).sum()
        }

        fn drain(&mut self, mut space: u64, out: &mut Vec<(Frame, Outcome)>) -> u64 {
            // the highest priority; the oldest among equals (the first in production order)
            while let Some(high) = self.frames.iter().map(|f| f.priority).max() {
                let k = self.frames.iter().position(|f| f.priority == high).unwrap();
                if self.frames[k].len > space {
                    break;
                }
                let f = self.frames.remove(k);
                space -= f.len;
                out.push((f, Outcome::Written));
            }
            space
        }

        fn offer(&mut self, frame: Frame, space: u64, capacity: u64, out: &mut Vec<(Frame, Outcome)>) {
            let fits_now = self.frames.is_empty() && frame.len <= space;
            if frame.len > capacity || !fits_now && frame.len > self.bound {
                return out.push((frame, Outcome::Discarded));
            }
            self.frames.push(frame);
            let mut space = space;
            loop {
                space = self.drain(space, out);
                if self.bytes() <= self.bound {
                    return;
                }
                // the lowest priority; the newest among equals (the last in production order)
                let low = self.frames.iter().map(|f| f.priority).min().unwrap();
                let k = self.frames.iter().rposition(|f| f.priority == low).unwrap();
                out.push((self.frames.remove(k), Outcome::Discarded));
            }
        }
    }

    /// A send buffer that frees random amounts between arrivals.
    struct Socket {
        capacity: u64,
        unacked: u64,
    }

    #[derive(Clone, Debug)]
    enum Step {
        /// A frame of this size and priority arrives.
        Frame(u64, u8),
        /// Acknowledgements free this share (per mille) of the send buffer's content.
        Free(u16),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (1u64..40_000, 0u8..4).prop_map(|(len, p)| Step::Frame(len, p)),
            1 => (0u16..=1000).prop_map(Step::Free),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn the_queue_keeps_its_bound_order_and_priorities(
            steps in proptest::collection::vec(step(), 1..300),
            bound in prop_oneof![Just(0u64), 0u64..200_000],
            capacity in 1u64..150_000,
        ) {
            let mut q = FrameQueue::new(bound);
            let mut reference = Reference { bound, ..Reference::default() };
            let mut sock = Socket { capacity, unacked: 0 };
            let (mut produced, mut written, mut discarded) = (Vec::new(), Vec::new(), Vec::new());
            let (mut bytes_in, mut bytes_written, mut bytes_discarded) = (0u64, 0u64, 0u64);
            for (t, s) in steps.into_iter().enumerate() {
                let mut events = Vec::new();
                let mut want = Vec::new();
                let space = sock.capacity - sock.unacked;
                match s {
                    Step::Frame(len, priority) => {
                        let frame = Frame { len, priority, class: priority, at: SimTime(t as u64) };
                        produced.push(frame);
                        bytes_in += len;
                        // what the queue holds when the frame arrives, lowest priority first
                        let held: Vec<Frame> = q.iter().copied().collect();
                        q.offer(frame, space, sock.capacity, |f, o| events.push((f, o)));
                        reference.offer(frame, space, sock.capacity, &mut want);
                        // a frame is never discarded while one of lower priority is held: each
                        // discard is the lowest of what is held with the arriving frame, less
                        // the frames written or discarded before it in this arrival
                        let mut present = held;
                        present.push(frame);
                        for &(f, o) in &events {
                            let k = present.iter().position(|x| *x == f).expect("a frame held or arriving");
                            present.remove(k);
                            let alone = f == frame && (f.len > sock.capacity || f.len > bound);
                            if o == Outcome::Discarded && !alone {
                                prop_assert!(present.iter().all(|x| x.priority >= f.priority),
                                    "discarded {f:?} while holding {present:?}");
                                // the newest among equals: none newer of its priority is left
                                prop_assert!(present.iter().all(|x| x.priority > f.priority || x.at < f.at));
                            }
                        }
                    }
                    Step::Free(permille) => {
                        sock.unacked -= sock.unacked * permille as u64 / 1000;
                        let space = sock.capacity - sock.unacked;
                        q.drain(space, |f, o| events.push((f, o)));
                        reference.drain(space, &mut want);
                    }
                }
                prop_assert_eq!(&events, &want, "the queue and the plain rule differ");
                for (f, o) in events {
                    match o {
                        Outcome::Written => {
                            // whole frames only, within the send buffer
                            sock.unacked += f.len;
                            prop_assert!(sock.unacked <= sock.capacity);
                            bytes_written += f.len;
                            written.push(f);
                        }
                        Outcome::Discarded => {
                            bytes_discarded += f.len;
                            discarded.push(f);
                        }
                    }
                }
                // the bound is kept after every step
                prop_assert!(q.bytes() <= bound);
                prop_assert_eq!(q.bytes(), q.iter().map(|f| f.len).sum::<u64>());
                prop_assert_eq!(q.len(), q.iter().count());
                // what is left waits because the next frame to write (the highest priority, the
                // oldest among equals) does not fit
                let next = q.iter().max_by_key(|f| (f.priority, std::cmp::Reverse(f.at)));
                prop_assert!(next.is_none_or(|f| f.len > sock.capacity - sock.unacked));
            }
            // frames of one priority are written in the order they were produced
            for p in 0..4u8 {
                let level: Vec<&Frame> = written.iter().filter(|f| f.priority == p).collect();
                prop_assert!(level.windows(2).all(|w| w[0].at < w[1].at));
            }
            // every frame is written, discarded or still waiting, exactly once
            let mut all: Vec<SimTime> = written.iter().chain(&discarded).chain(q.iter()).map(|f| f.at).collect();
            all.sort();
            prop_assert_eq!(all, produced.iter().map(|f| f.at).collect::<Vec<_>>());
            prop_assert_eq!(bytes_in, bytes_written + bytes_discarded + q.bytes());
            // a written frame is never discarded (each appears once above); without a queue,
            // every frame the send buffer could not take at once was discarded at once
            if bound == 0 {
                prop_assert!(q.is_empty());
            }
        }
    }

    fn f(len: u64, priority: u8, at: u64) -> Frame {
        Frame { len, priority, class: priority, at: SimTime(at) }
    }

    #[test]
    fn b_frames_go_before_an_i_frame_and_the_arriving_one_first_among_peers() {
        let mut q = FrameQueue::new(100);
        let mut out = Vec::new();
        // the send buffer is full: everything waits
        for (k, (len, p)) in [(60, 2), (20, 0), (20, 0)].into_iter().enumerate() {
            q.offer(f(len, p, k as u64), 0, 1000, |f, o| out.push((f.at.0, o)));
        }
        assert!(out.is_empty() && q.bytes() == 100);
        // a B frame arrives: it is the newest of the lowest priority, so it goes alone
        q.offer(f(20, 0, 3), 0, 1000, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(3, Outcome::Discarded)]);
        // an I frame arrives: the newest B frame goes, then the older one
        out.clear();
        q.offer(f(40, 2, 4), 0, 1000, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(2, Outcome::Discarded), (1, Outcome::Discarded)]);
        // room frees: the frames leave highest priority first, whole, as long as they fit
        out.clear();
        assert_eq!(q.drain(99, |f, o| out.push((f.at.0, o))), 39);
        assert_eq!(out, vec![(0, Outcome::Written)]);
        assert_eq!(q.drain(40, |f, o| out.push((f.at.0, o))), 0);
        assert!(q.is_empty());
    }

    #[test]
    fn without_a_bound_a_frame_the_socket_cannot_take_is_discarded_at_once() {
        let mut q = FrameQueue::new(0);
        let mut out = Vec::new();
        q.offer(f(10, 1, 0), 10, 100, |f, o| out.push((f.at.0, o)));
        q.offer(f(10, 1, 1), 9, 100, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(0, Outcome::Written), (1, Outcome::Discarded)]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_frame_that_can_never_be_held_takes_no_other_frame_with_it() {
        let mut q = FrameQueue::new(50);
        let mut out = Vec::new();
        q.offer(f(30, 0, 0), 0, 100, |f, o| out.push((f.at.0, o)));
        // larger than the send buffer, and larger than the bound
        q.offer(f(101, 9, 1), 200, 100, |f, o| out.push((f.at.0, o)));
        q.offer(f(51, 9, 2), 0, 100, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(1, Outcome::Discarded), (2, Outcome::Discarded)]);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn a_discarded_frame_lets_the_next_one_through() {
        // the I frame (next to write) does not fit; an arriving B frame overflows the bound, the
        // newest B goes, and so on until the rest fit
        let mut q = FrameQueue::new(60);
        let mut out = Vec::new();
        q.offer(f(50, 1, 0), 30, 1000, |f, o| out.push((f.at.0, o)));
        q.offer(f(20, 0, 1), 30, 1000, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(1, Outcome::Discarded)]);
        assert_eq!(q.len(), 1);
        // a frame of higher priority than all held, that fits, goes first
        out.clear();
        q.offer(f(5, 2, 2), 30, 1000, |f, o| out.push((f.at.0, o)));
        assert_eq!(out, vec![(2, Outcome::Written)]);
        // a lower-priority frame that would fit waits behind the I frame that does not
        let mut q = FrameQueue::new(100);
        out.clear();
        q.offer(f(50, 1, 0), 30, 1000, |f, o| out.push((f.at.0, o)));
        q.offer(f(10, 0, 1), 30, 1000, |f, o| out.push((f.at.0, o)));
        assert!(out.is_empty() && q.len() == 2);
        assert_eq!(q.drain(60, |f, o| out.push((f.at.0, o))), 0);
        assert_eq!(out, vec![(0, Outcome::Written), (1, Outcome::Written)]);
    }
}
