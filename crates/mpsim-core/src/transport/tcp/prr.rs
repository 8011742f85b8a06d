//! Proportional rate reduction (RFC 6937), as Linux's `tcp_cwnd_reduction` applies it.
//!
//! In fast recovery the window does not drop to ssthresh at once: each ACK lets the sender
//! transmit in proportion to what it delivered, so that by the end of the episode it has sent
//! ssthresh/RecoverFS of the data delivered, and the retransmissions leave paced by the ACK
//! clock instead of in one burst into a queue that has just overflowed. When the pipe has
//! already fallen below ssthresh (many losses), slow-start reduction bound (SSRB) lets it
//! grow back towards ssthresh by at most one segment more than was delivered.

/// Per-episode counters, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// RecoverFS: the pipe when recovery began.
    recover_fs: u64,
    /// Bytes newly delivered (cumulatively or by SACK) since recovery began.
    delivered: u64,
    /// Bytes sent since recovery began.
    out: u64,
}

impl Prr {
    /// Starts an episode whose pipe at the start was `recover_fs` bytes.
    pub fn start(recover_fs: u64) -> Prr {
        Prr { recover_fs: recover_fs.max(1), delivered: 0, out: 0 }
    }

    /// Counts bytes sent during the episode.
    pub fn on_sent(&mut self, bytes: u64) {
        self.out += bytes;
    }

    pub fn out(&self) -> u64 {
        self.out
    }

    /// An ACK delivered `newly` bytes; returns the new cwnd: the pipe (after the ACK) plus
    /// what may be sent now. `una_advanced` and `newly_lost` refine SSRB as Linux does (one
    /// more segment when the cumulative ACK advanced and nothing new was found lost). The
    /// first call of an episode always allows one segment (the fast retransmission).
    pub fn on_ack(&mut self, newly: u64, pipe: u64, ssthresh: u64, mss: u64, una_advanced: bool, newly_lost: bool) -> u64 {
        self.delivered += newly;
        let sndcnt = if pipe > ssthresh {
            // proportional part: ceil(delivered · ssthresh / RecoverFS) − out
            let allowed = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as u64;
            allowed.saturating_sub(self.out)
        } else {
            let mut n = self.delivered.saturating_sub(self.out).max(newly);
            if una_advanced && !newly_lost {
                n += mss;
            }
            n.min(ssthresh - pipe)
        };
        let sndcnt = if self.out == 0 { sndcnt.max(mss) } else { sndcnt };
        pipe + sndcnt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn one_loss_in_a_window_of_twenty_sends_one_segment_for_every_two_delivered() {
        // RFC 6937 §3: cwnd 20, one loss, ssthresh 10. Each further ACK delivers one segment;
        // the sender transmits while cwnd − pipe >= 1 segment.
        let mut p = Prr::start(20 * MSS);
        let mut pipe = 19 * MSS; // the lost segment left the pipe
        let mut sent = Vec::new();
        for _ in 0..19 {
            pipe -= MSS; // the segment this ACK reports left the network
            let cwnd = p.on_ack(MSS, pipe, 10 * MSS, MSS, false, false);
            let mut n = 0;
            while cwnd >= pipe + MSS {
                p.on_sent(MSS);
                pipe += MSS;
                n += 1;
            }
            sent.push(n);
        }
        // the fast retransmission first; never a burst; over the first half of the episode
        // one segment for every two delivered; in all, ssthresh/RecoverFS of the delivered
        assert_eq!(sent[0], 1);
        assert!(sent.iter().all(|&n| n <= 1), "never a burst: {sent:?}");
        assert_eq!(sent[..10].iter().sum::<u64>(), 5, "{sent:?}");
        assert_eq!(sent.iter().sum::<u64>(), 10, "{sent:?}");
        // the episode ends with the pipe at ssthresh
        assert_eq!(pipe, 10 * MSS);
    }

    #[test]
    fn the_first_ack_always_allows_the_fast_retransmission() {
        let mut p = Prr::start(20 * MSS);
        // nothing delivered beyond a sliver: the proportional part is zero, yet one segment
        assert_eq!(p.on_ack(1, 19 * MSS, 10 * MSS, MSS, false, false), 20 * MSS);
        p.on_sent(MSS);
        assert_eq!(p.on_ack(1, 19 * MSS, 10 * MSS, MSS, false, false), 19 * MSS);
    }

    #[test]
    fn below_ssthresh_the_window_grows_back_by_at_most_delivered_plus_one_segment() {
        // heavy loss: the pipe is far below ssthresh
        let mut p = Prr::start(20 * MSS);
        p.on_sent(MSS);
        let cwnd = p.on_ack(2 * MSS, 3 * MSS, 10 * MSS, MSS, true, false);
        // delivered 2, out 1: max(1, 2) + 1 = 3 segments
        assert_eq!(cwnd, 6 * MSS);
        // never above ssthresh
        let cwnd = p.on_ack(20 * MSS, 9 * MSS, 10 * MSS, MSS, true, false);
        assert_eq!(cwnd, 10 * MSS);
    }
}
