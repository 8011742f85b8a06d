//! Resetting the streams of late media frames (`quic.reset_late`): once a frame is past its
//! playback deadline (the media application's `deadline` after the frame was produced) and
//! not yet acknowledged whole, the sender abandons its stream with RESET_STREAM (RFC 9000
//! §19.4: type, stream ID, application error code, final size), as Media over QUIC
//! implementations do with objects past their delivery timeout. Its bytes not yet sent are
//! never sent and its lost bytes never sent again; its final size (the bytes sent) is what
//! the stream took of the connection's credit (§4.5), and the receiver, closing the stream,
//! releases that credit less what it read. The frames go in ack-eliciting packets of their
//! own, as many as fit, and are sent again when such a packet is lost.
//!
//! This file keeps the state of both ends; `conn.rs` calls it where the sender polls, where
//! packets are settled and where the receiver reads a packet.

use std::collections::VecDeque;

/// The state of `quic.reset_late`, both ends.
#[derive(Clone, Debug, Default)]
pub struct ResetLate {
    /// Sender: the next stream whose deadline is checked (frames are written in the order
    /// they were produced, so their streams expire in stream order).
    pub next: usize,
    /// Sender: streams whose RESET_STREAM is to be sent (again, when its packet was lost).
    pub queue: VecDeque<usize>,
    /// The RESET_STREAM frames of each packet sent (stream index, final size), under the
    /// sequence number its header carries for the receiver to read.
    pub sent: Vec<Box<[(usize, u64)]>>,
    /// Sender: packets carrying RESET_STREAM in flight (path, packet number, sequence number).
    pub in_flight: Vec<(usize, u64, usize)>,
    /// Sender: RESET_STREAM frames sent (lost ones sent again included).
    pub frames: u64,
}

impl ResetLate {
    /// Packets of path `p` acknowledged (`acked`, inclusive ranges) or declared lost
    /// (`lost`): an acknowledged packet's frames are done, a lost one's are queued again.
    pub fn settle(&mut self, p: usize, acked: &[(u64, u64)], lost: &[(u64, u32)]) {
        let (queue, sent) = (&mut self.queue, &self.sent);
        self.in_flight.retain(|&(q, pn, seq)| {
            if q != p {
                return true;
            }
            if lost.iter().any(|&(l, _)| l == pn) {
                queue.extend(sent[seq].iter().map(|&(k, _)| k));
                return false;
            }
            !acked.iter().any(|&(lo, hi)| (lo..=hi).contains(&pn))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_packet_queues_its_frames_again_and_an_acknowledged_one_is_done() {
        let mut r = ResetLate { sent: vec![Box::new([(3, 100), (4, 0)]), Box::new([(7, 50)])], ..ResetLate::default() };
        r.in_flight = vec![(0, 10, 0), (1, 10, 1)];
        // path 1's packet 10 is acknowledged; path 0's packet 10 is not touched by it
        r.settle(1, &[(5, 12)], &[]);
        assert_eq!(r.in_flight, [(0, 10, 0)]);
        assert!(r.queue.is_empty());
        r.settle(0, &[], &[(10, 1200)]);
        assert!(r.in_flight.is_empty());
        assert_eq!(r.queue, [3, 4]);
    }
}
