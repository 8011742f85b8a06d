//! Undoing a reduction found unnecessary: D-SACKs counted against the retransmissions of an
//! episode (RFC 2883, RFC 3708) and a timeout found spurious.

use super::*;

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
        let segments = (d.end - d.start).div_ceil(self.mss).max(1);
        if let Some(u) = self.undo.as_mut() {
            u.retrans = u.retrans.saturating_sub(segments);
            u.dsacked = true;
        }
        if self.rack_on {
            self.rack.on_dsack(self.snd_una, self.snd_nxt);
        }
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
        for s in self.segs.iter_mut() {
            if s.flags & (LOST | RETRANS) == LOST {
                s.flags &= !LOST;
                bytes += s.len as u64;
                segs += 1;
            }
        }
        self.count_many(LOST, bytes, segs, false);
        self.rebuild_send_order();
        self.state = CaState::Open;
        self.recovery_point = self.snd_una;
        self.rtt.reset_backoff();
        self.stats.spurious_timeouts += 1;
        // segments with enough SACKed above them are still lost
        if self.sacked_bytes > 0 {
            self.mark_lost_by_sack();
        }
        self.rtx_scan_seq = self.snd_una;
    }
}
