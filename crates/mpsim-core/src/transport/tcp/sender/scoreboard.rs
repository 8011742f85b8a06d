//! The SACK scoreboard's bookkeeping: counters of SACKed, lost and retransmitted segments,
//! SACK blocks applied to the segments, and losses inferred from SACKs (RFC 6675).

use super::*;

impl TcpSender {
    /// Counts one segment of `len` bytes as newly marked `flag` (SACKED, LOST or RETRANS),
    /// or (`add` false) as no longer marked.
    #[inline(always)]
    pub(super) fn count(&mut self, flag: u8, len: u64, add: bool) {
        self.count_many(flag, len, 1, add);
    }

    /// [`count`](Self::count) for `segs` segments of `bytes` bytes in all. A retransmission
    /// puts a lost segment back in the pipe; SACKed and lost segments leave it.
    #[inline(always)]
    pub(super) fn count_many(&mut self, flag: u8, bytes: u64, segs: u64, add: bool) {
        let (b, n) = match flag {
            SACKED => (&mut self.sacked_bytes, &mut self.sacked_segs),
            LOST => (&mut self.lost_bytes, &mut self.lost_segs),
            _ => (&mut self.retrans_bytes, &mut self.retrans_segs),
        };
        if add {
            *b += bytes;
            *n += segs;
            if flag == LOST {
                if let Some(r) = self.rate.as_deref_mut() {
                    r.lost += segs;
                }
            }
        } else {
            *b -= bytes;
            *n -= segs;
        }
        // (the sum is never negative, its parts may briefly be so while it changes)
        if add == (flag != RETRANS) {
            self.out_of_pipe = self.out_of_pipe.wrapping_add(bytes);
            self.out_of_pipe_segs = self.out_of_pipe_segs.wrapping_add(segs);
        } else {
            self.out_of_pipe = self.out_of_pipe.wrapping_sub(bytes);
            self.out_of_pipe_segs = self.out_of_pipe_segs.wrapping_sub(segs);
        }
    }

    /// Sets the duplicate-ACK credit (without SACK), which the pipe leaves out too, in bytes
    /// and in whole segments.
    #[inline]
    pub(super) fn set_reno_sacked(&mut self, v: u64) {
        self.out_of_pipe = self.out_of_pipe.wrapping_sub(self.reno_sacked).wrapping_add(v);
        let segs = |bytes: u64| if bytes == 0 { 0 } else { bytes / self.mss };
        self.out_of_pipe_segs = self.out_of_pipe_segs.wrapping_sub(segs(self.reno_sacked)).wrapping_add(segs(v));
        self.reno_sacked = v;
    }

    /// Uncounts the marks of segment `s`, leaving the scoreboard. Out of line: inlined into
    /// the loop over the segments an ACK acknowledges, it had that loop hold the counters in
    /// registers (and spill them) on every ACK, where most segments carry no mark.
    #[inline(never)]
    pub(super) fn drop_flags(&mut self, s: &Seg) {
        let len = s.len as u64;
        for flag in [SACKED, LOST, RETRANS] {
            if s.flags & flag != 0 {
                self.count(flag, len, false);
            }
        }
    }

    /// Marks segments covered by the ACK's SACK blocks; returns the bytes newly SACKed, when
    /// the most recently sent of them (never retransmitted) was sent, for an RTT sample, and
    /// whether any of them was never retransmitted.
    pub(super) fn apply_sack(&mut self, h: &AckHeader, now: SimTime) -> (u64, Option<SimTime>, bool) {
        let mut newly = 0;
        let mut newest_sent: Option<SimTime> = None;
        let mut orig = false;
        let min_rtt = self.rtt.min_rtt();
        for b in h.sack_blocks() {
            let start = b.start.max(self.snd_una);
            let end = b.end.min(self.snd_nxt);
            if start >= end {
                continue;
            }
            // walk only the parts of the block not SACKed yet (the gaps between the ranges),
            // segment by segment in ascending order, up to the first segment the block does
            // not cover whole
            let mut pos = start;
            'block: while pos < end {
                let r = self.sacked_ranges.partition_point(|&(_, e)| e <= pos);
                let gap_end = match self.sacked_ranges.get(r) {
                    Some(&(rs, re)) if rs <= pos => {
                        pos = re;
                        continue;
                    }
                    Some(&(rs, _)) => rs.min(end),
                    None => end,
                };
                let mut i = self.segs.partition_point(|s| s.seq < pos);
                let mut run: Option<(u64, u64)> = None;
                while i < self.segs.len() && self.segs[i].seq < gap_end {
                    let s = self.segs[i];
                    let s_end = s.seq + s.len as u64;
                    if s_end > end {
                        if let Some(run) = run {
                            self.add_sacked_range(run);
                        }
                        break 'block;
                    }
                    debug_assert!(s.flags & SACKED == 0);
                    self.drop_flags(&s);
                    self.segs[i].flags = (s.flags & EVER_RETX) | SACKED;
                    self.count(SACKED, s.len as u64, true);
                    if let Some(r) = self.rate.as_deref_mut() {
                        let mut rec = r.recs[i];
                        r.on_delivered(&mut rec, s.sent_at, s_end, true);
                        r.recs[i] = rec;
                        r.delivered += 1;
                    }
                    newly += s.len as u64;
                    run = Some((run.map_or(s.seq, |r| r.0), s_end));
                    let retx = s.flags & EVER_RETX != 0;
                    if self.rack_on {
                        self.rack.on_delivered(s.sent_at, s_end, retx, now, min_rtt);
                    }
                    if !retx {
                        orig = true;
                        newest_sent = newest_sent.max(Some(s.sent_at));
                    }
                    i += 1;
                }
                if let Some(run) = run {
                    self.add_sacked_range(run);
                }
                pos = gap_end;
            }
            self.highest_sacked = self.highest_sacked.max(end);
        }
        (newly, newest_sent, orig)
    }

    /// Adds [start, end), which lies in a gap between the SACKed ranges, merging it with the
    /// ranges it touches.
    pub(super) fn add_sacked_range(&mut self, (start, end): (u64, u64)) {
        let r = self.sacked_ranges.partition_point(|&(_, e)| e < start);
        let touches_prev = r < self.sacked_ranges.len() && self.sacked_ranges[r].1 == start;
        let next = if touches_prev { r + 1 } else { r };
        let touches_next = next < self.sacked_ranges.len() && self.sacked_ranges[next].0 == end;
        match (touches_prev, touches_next) {
            (true, true) => {
                self.sacked_ranges[r].1 = self.sacked_ranges[next].1;
                self.sacked_ranges.remove(next);
            }
            (true, false) => self.sacked_ranges[r].1 = end,
            (false, true) => self.sacked_ranges[next].0 = start,
            (false, false) => self.sacked_ranges.insert(r, (start, end)),
        }
    }

    /// The cumulative ACK reached `ack`: forget the SACKed ranges below it.
    pub(super) fn drop_ranges_below(&mut self, ack: u64) {
        let k = self.sacked_ranges.partition_point(|&(_, e)| e <= ack);
        if k > 0 {
            self.sacked_ranges.drain(..k);
        }
        if let Some(first) = self.sacked_ranges.first_mut() {
            first.0 = first.0.max(ack);
        }
    }

    /// RFC 6675 IsLost: a segment is lost when more than (DupThresh−1)·MSS bytes above it are
    /// SACKed. The rule is monotone in sequence, so the walk starts at the highest SACKed
    /// segment, finds the boundary, and marks downwards until it meets a segment already
    /// marked (everything below that was handled by an earlier ACK). Returns the bytes marked.
    pub(super) fn mark_lost_by_sack(&mut self) -> u64 {
        let threshold = (DUP_THRESH as u64 - 1) * self.mss;
        // every SACKed segment lies below `highest_sacked`; the SACKed bytes above a segment
        // are the lengths of the ranges above it. Find the highest range with more than the
        // threshold at or above its start: the segments below it are the candidates.
        let mut acc = 0u64;
        let mut k = self.sacked_ranges.len();
        while k > 0 && acc <= threshold {
            k -= 1;
            let (a, b) = self.sacked_ranges[k];
            acc += b - a;
        }
        if acc <= threshold {
            return 0;
        }
        let mut marked = 0;
        let mut i = self.segs.partition_point(|s| s.seq < self.sacked_ranges[k].0);
        loop {
            // the unSACKed segments below range k, downwards, until one already marked
            while i > 0 {
                let s = self.segs[i - 1];
                if s.flags & SACKED != 0 {
                    break;
                }
                if s.flags & LOST != 0 {
                    return marked;
                }
                self.segs[i - 1].flags |= LOST;
                self.count(LOST, s.len as u64, true);
                marked += s.len as u64;
                if s.seq < self.rtx_scan_seq {
                    self.rtx_scan_seq = s.seq;
                }
                i -= 1;
            }
            if i == 0 || k == 0 {
                return marked;
            }
            // segment i-1 ends range k-1: jump below it
            k -= 1;
            i = self.segs.partition_point(|s| s.seq < self.sacked_ranges[k].0);
        }
    }
}
