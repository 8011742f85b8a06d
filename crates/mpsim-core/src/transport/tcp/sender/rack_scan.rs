//! RACK's loss detection over the scoreboard (RFC 8985 §6.2): the scan in send order of
//! the segments that may be overdue, and that order's upkeep.

use super::*;

impl TcpSender {
    /// RACK (RFC 8985 §6.2 step 5): marks lost every segment sent before the most recently
    /// sent delivered one and overdue by more than its RTT plus the reordering window; a
    /// retransmission found lost becomes due again. Arms the reordering timer for segments
    /// not yet overdue. Returns the bytes marked.
    pub(super) fn rack_detect(&mut self, now: SimTime) -> u64 {
        self.reo_deadline = None;
        if !self.rack.active() || (self.sacked_bytes == 0 && self.retrans_bytes == 0) {
            return 0;
        }
        let reo = self.rack.reo_wnd(
            self.state != CaState::Open,
            self.sacked_bytes / self.mss,
            DUP_THRESH as u64,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        #[cfg(test)]
        let expected = rack_scan_tests::reference_rack_scan(self, now, reo);
        #[cfg(test)]
        let mut marked_segs = Vec::new();
        let mut order = std::mem::take(&mut self.rack_order);
        // the transmissions sent before RACK's segment join `early`, in send order (they are
        // a prefix of the candidates): the next segment never sent again, from the
        // scoreboard, or the next resend, from `later`, whichever was sent first
        order.fresh_from = order.fresh_from.max(self.segs.dropped());
        loop {
            let fresh = loop {
                let Some(s) = self.segs.get((order.fresh_from - self.segs.dropped()) as usize) else { break None };
                if s.flags & (SACKED | LOST | EVER_RETX) == 0 {
                    break Some(Sent { at: s.sent_at, seg: order.fresh_from });
                }
                order.fresh_from += 1;
            };
            let resent = loop {
                let Some(&e) = order.later.front() else { break None };
                if self.rack_candidate(e).is_some() {
                    break Some(e);
                }
                order.later.pop_front();
            };
            let e = match (fresh, resent) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            let s = self.segs[(e.seg - self.segs.dropped()) as usize];
            if self.rack.check(s.sent_at, s.seq + s.len as u64, now, reo) == Verdict::NotYet {
                break;
            }
            order.early.push_back(e);
            if Some(e) == fresh {
                order.fresh_from += 1;
            } else {
                order.later.pop_front();
            }
        }
        // the oldest of them are lost while overdue (the deadlines grow with the send time)
        let mut marked = 0;
        while let Some(&e) = order.early.front() {
            if let Some(i) = self.rack_candidate(e) {
                let s = self.segs[i];
                let verdict = self.rack.check(s.sent_at, s.seq + s.len as u64, now, reo);
                debug_assert!(verdict != Verdict::NotYet, "{e:?} sent after RACK's segment");
                if verdict != Verdict::Lost {
                    break;
                }
                let len = s.len as u64;
                if s.flags & RETRANS != 0 {
                    // a lost retransmission: lost again, awaiting another
                    self.segs[i].flags &= !RETRANS;
                    self.count(RETRANS, len, false);
                } else {
                    self.segs[i].flags |= LOST;
                    self.count(LOST, len, true);
                }
                marked += len;
                if s.seq < self.rtx_scan_seq {
                    self.rtx_scan_seq = s.seq;
                }
                #[cfg(test)]
                marked_segs.push(e.seg);
            }
            order.early.pop_front();
        }
        // the others wait; the newest of them, with the latest deadline, arms the timer
        let mut wait: Option<Dur> = None;
        while let Some(&e) = order.early.back() {
            if let Some(i) = self.rack_candidate(e) {
                let s = self.segs[i];
                let verdict = self.rack.check(s.sent_at, s.seq + s.len as u64, now, reo);
                debug_assert!(matches!(verdict, Verdict::Wait(_)), "{e:?}: {verdict:?}");
                if let Verdict::Wait(d) = verdict {
                    wait = Some(d);
                }
                break;
            }
            order.early.pop_back();
        }
        self.rack_order = order;
        #[cfg(test)]
        rack_scan_tests::assert_same_rack_verdicts(expected, marked_segs, wait);
        self.reo_deadline = wait.map(|d| now + d);
        marked
    }

    /// The index in `segs` of the segment a transmission of `rack_order` names, if that
    /// segment is still one RACK may mark and was last sent then.
    #[inline]
    pub(super) fn rack_candidate(&self, e: Sent) -> Option<usize> {
        let i = usize::try_from(e.seg.checked_sub(self.segs.dropped())?).ok()?;
        let s = self.segs.get(i)?;
        (s.sent_at == e.at && rack_candidate_flags(s.flags)).then_some(i)
    }

    /// Segment `segs[i]` was sent again at `now` (a retransmission or a probe): it enters
    /// RACK's send order. When the order holds many entries of segments no longer candidates
    /// (sent again, SACKed or acknowledged out of send order), it drops them, so it stays
    /// within twice the scoreboard.
    #[inline]
    pub(super) fn enter_send_order(&mut self, i: usize, now: SimTime) {
        if !self.rack_on {
            return;
        }
        self.rack_order.push(Sent { at: now, seg: self.segs.dropped() + i as u64 });
        if self.rack_order.len() > 2 * self.segs.len() + 64 {
            let (segs, dropped) = (&self.segs, self.segs.dropped());
            let valid = |e: &Sent| {
                e.seg
                    .checked_sub(dropped)
                    .and_then(|i| segs.get(i as usize))
                    .is_some_and(|s| s.sent_at == e.at && rack_candidate_flags(s.flags))
            };
            // (an entry equal to the one before it, a segment sent twice at the same instant,
            // goes too: each candidate keeps one entry)
            for q in [&mut self.rack_order.early, &mut self.rack_order.later] {
                let mut last: Option<Sent> = None;
                q.retain(|e| {
                    let keep = last != Some(*e) && valid(e);
                    if keep {
                        last = Some(*e);
                    }
                    keep
                });
            }
        }
    }

    /// Segments became RACK candidates again with their old send times (an undo): the send
    /// order is rebuilt from the scoreboard.
    pub(super) fn rebuild_send_order(&mut self) {
        if !self.rack_on {
            return;
        }
        let dropped = self.segs.dropped();
        let resent = self.segs.iter().enumerate().filter(|(_, s)| s.flags & EVER_RETX != 0 && rack_candidate_flags(s.flags));
        self.rack_order.rebuild(resent.map(|(i, s)| Sent { at: s.sent_at, seg: dropped + i as u64 }), dropped);
    }
}
