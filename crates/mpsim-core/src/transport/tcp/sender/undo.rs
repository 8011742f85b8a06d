//! Undoing a reduction found unnecessary: D-SACKs counted against the retransmissions of an
//! episode (RFC 2883, RFC 3708) and a timeout found spurious.
//!
//! A timeout is *spurious* (`SenderStats::spurious_timeouts`) when its retransmission of the
//! head turns out unnecessary, because a copy sent before the timeout got through. Three
//! kinds of evidence show it, each counted once per timeout:
//!
//! * F-RTO (RFC 5682) finds never-retransmitted data acknowledged, or D-SACKs show every
//!   retransmission of the episode unnecessary: the timeout is undone (`undo_timeout`);
//! * a D-SACK (RFC 2883) reports a duplicate of the head the timeout retransmitted: two of its
//!   copies arrived, so the timeout's was not needed;
//! * the ACK that first covers that head arrives less than the minimum RTT after the
//!   timeout's retransmission, too early to answer it: it answers an earlier copy. This is
//!   what Eifel detection (RFC 3522) reads from the timestamp echo, here from the send time,
//!   as RACK resolves the same ambiguity (RFC 8985 §6.2 step 2).
//!
//! Only the latest timeout of a series is judged (an earlier one of the series is followed by
//! another, so its copy of the head did not get through in time either).

use super::*;

/// The head a timeout retransmitted, and when.
#[derive(Clone, Copy, Debug)]
pub(super) struct RtoCheck {
    pub seq: u64,
    pub end: u64,
    pub at: SimTime,
}

impl TcpSender {
    pub(super) fn count_undo_retrans(&mut self) {
        if let Some(u) = self.undo.as_mut() {
            u.retrans += 1;
        }
    }

    /// A D-SACK block `d`: one retransmission per segment it covers was unnecessary, and the
    /// path reorders (or delays) segments.
    pub(super) fn on_dsack(&mut self, d: crate::net::SackBlock) {
        self.stats.dsacks += 1;
        if self.rto_check.is_some_and(|c| d.start < c.end && c.seq < d.end) {
            self.timeout_was_spurious();
        }
        let segments = (d.end - d.start).div_ceil(self.mss).max(1);
        if let Some(u) = self.undo.as_mut() {
            u.retrans = u.retrans.saturating_sub(segments);
            u.dsacked = true;
        }
        if self.rack_on {
            self.rack.on_dsack(self.snd_una, self.snd_nxt);
        }
    }

    /// D-SACKs showed every retransmission of the last reduction spurious.
    pub(super) fn dsack_undo_due(&self) -> bool {
        self.undo.is_some_and(|u| u.dsacked && u.retrans == 0)
    }

    /// In Open: undo the last reduction if D-SACKs showed all its retransmissions spurious.
    pub(super) fn try_undo_dsack(&mut self) {
        let Some(u) = self.undo.filter(|u| u.dsacked && u.retrans == 0) else { return };
        self.undo = None;
        self.w.cwnd = self.cc.undo_cwnd(self.w, u.cwnd);
        self.w.ssthresh = self.w.ssthresh.max(u.ssthresh);
        self.stats.dsack_undos += 1;
    }

    /// F-RTO found the timeout spurious: restore the window from before it and forget the
    /// losses it presumed (Linux `tcp_try_undo_loss`, `tcp_undo_cwnd_reduction`).
    pub(super) fn undo_timeout(&mut self) {
        if let Some((cwnd, ssthresh)) = self.prior.take() {
            self.w.cwnd = self.cc.undo_cwnd(self.w, cwnd);
            self.w.ssthresh = self.w.ssthresh.max(ssthresh);
        }
        let (mut bytes, mut segs) = (0, 0);
        self.segs.for_each_mut(|s| {
            if s.flags & (LOST | RETRANS) == LOST {
                s.flags &= !LOST;
                bytes += s.len as u64;
                segs += 1;
            }
        });
        self.count_many(LOST, bytes, segs, false);
        self.rebuild_send_order();
        self.state = CaState::Open;
        self.recovery_point = self.snd_una;
        self.rtt.reset_backoff();
        self.timeout_was_spurious();
        // segments with enough SACKed above them are still lost
        if self.sacked_bytes > 0 {
            self.mark_lost_by_sack();
        }
        self.rtx_scan_seq = self.snd_una;
    }

    /// The cumulative ACK moves to `ack` (from below it): if it is the first to cover the
    /// head the latest timeout retransmitted and came sooner than any answer to that
    /// retransmission could, an earlier copy got through and the timeout was spurious.
    #[inline]
    pub(super) fn judge_timeout_by_ack(&mut self, now: SimTime, ack: u64, min_rtt: Option<Dur>) {
        let Some(c) = self.rto_check else { return };
        if self.snd_una < c.end && ack >= c.end && min_rtt.is_some_and(|m| now.since(c.at) < m) {
            self.timeout_was_spurious();
        }
    }

    /// Counts the latest timeout spurious, once.
    pub(super) fn timeout_was_spurious(&mut self) {
        if self.rto_check.take().is_some() {
            self.stats.spurious_timeouts += 1;
        }
    }
}
