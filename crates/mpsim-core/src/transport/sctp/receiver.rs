//! The data receiver of an association: its TSN map (cumulative TSN, gap-ack blocks,
//! duplicate TSNs), the bounded receive buffer and its advertised window, and when to SACK.
//!
//! In-order data goes to the application at once; out-of-order chunks wait in the buffer,
//! whose free space is the advertised receiver window (a_rwnd, RFC 4960 §6.2). A chunk that
//! does not fit is dropped (§6.2: "the receiver MUST drop the chunk"), unless it is the next
//! in order, which the application takes at once.
//!
//! SACK timing (§6.2): at least every `sack_freq` (2) packets and within `sack_delay`
//! (200 ms); at once when a duplicate arrives, while gaps exist or when a gap is filled. With
//! CMT's DAC (Iyengar et al., ToN 2006, §IV-C; FreeBSD `sctp_cmt_use_dac`) the receiver keeps
//! delaying while gaps exist and reports in each SACK how many packets (1 or 2) it covers.

use crate::net::SctpDataHeader;
use crate::time::SimTime;
use std::collections::BTreeMap;

/// The contents of one SACK beyond its cumulative TSN and window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SackRecord {
    /// Gap-ack blocks as inclusive absolute TSN ranges, lowest first.
    pub gaps: Vec<(u64, u64)>,
    pub dups: Vec<u64>,
    /// CMT DAC: packets received since the previous SACK (at most 2).
    pub dac_count: u8,
    /// Per packet since the previous SACK, when timestamps are on: its first TSN, the
    /// destination it came to, its timestamp chunk (send time) and its receive time.
    pub echoes: Vec<(u64, u8, SimTime, SimTime)>,
}

/// What the receiver does after a DATA packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SackNow {
    /// Send a SACK now.
    Now,
    /// Wait: the delayed-SACK timer covers it.
    Later,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub packets: u64,
    pub out_of_order_chunks: u64,
    pub duplicate_chunks: u64,
    pub dropped_buffer_full: u64,
    pub max_buffered: u64,
    pub sacks: u64,
}

pub struct SctpReceiver {
    /// Every TSN up to and including this one has arrived (0: none yet; TSNs start at 1).
    cum_tsn: u64,
    /// Stream bytes handed to the application, in order.
    delivered: u64,
    /// Out-of-order chunks: TSN -> (stream offset, length).
    ooo: BTreeMap<u64, (u64, u32)>,
    /// The same chunks as runs of consecutive TSNs: start -> end (inclusive).
    runs: BTreeMap<u64, u64>,
    buffered: u64,
    rcv_buf: u64,
    dups: Vec<u64>,
    echoes: Vec<(u64, u8, SimTime, SimTime)>,
    since_sack: u32,
    timestamps: bool,
    pub stats: ReceiverStats,
}

impl SctpReceiver {
    pub fn new(rcv_buf: u64, timestamps: bool) -> SctpReceiver {
        SctpReceiver {
            cum_tsn: 0,
            delivered: 0,
            ooo: BTreeMap::new(),
            runs: BTreeMap::new(),
            buffered: 0,
            rcv_buf,
            dups: Vec::new(),
            echoes: Vec::new(),
            since_sack: 0,
            timestamps,
            stats: ReceiverStats::default(),
        }
    }

    pub fn cum_tsn(&self) -> u64 {
        self.cum_tsn
    }
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// Out-of-order bytes held.
    pub fn buffered(&self) -> u64 {
        self.buffered
    }
    /// The advertised receiver window: free buffer space.
    pub fn a_rwnd(&self) -> u64 {
        self.rcv_buf.saturating_sub(self.buffered)
    }
    pub fn has_gaps(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Takes a DATA packet; returns whether to SACK now. `chunk` is the full chunk size (all
    /// chunks of a bundle but the last carry that much).
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(&mut self, now: SimTime, dest: u8, h: &SctpDataHeader, chunk: u32, delayed: bool, sack_freq: u32, dac: bool) -> SackNow {
        self.stats.packets += 1;
        self.since_sack += 1;
        if self.timestamps {
            self.echoes.push((h.tsn, dest, h.sent_at, now));
        }
        let had_gaps = self.has_gaps();
        let mut dup = false;
        let (mut off, mut left) = (h.offset, h.len);
        for k in 0..h.chunks as u64 {
            let len = if k + 1 == h.chunks as u64 { left } else { chunk };
            self.on_chunk(h.tsn + k, off, len, &mut dup);
            off += len as u64;
            left -= len;
        }
        self.stats.max_buffered = self.stats.max_buffered.max(self.buffered);
        let filled = had_gaps && !self.has_gaps();
        let gaps_now = self.has_gaps() && !dac;
        if !delayed || dup || filled || gaps_now || self.since_sack >= sack_freq {
            SackNow::Now
        } else {
            SackNow::Later
        }
    }

    fn on_chunk(&mut self, tsn: u64, offset: u64, len: u32, dup: &mut bool) {
        if tsn <= self.cum_tsn || self.ooo.contains_key(&tsn) {
            self.dups.push(tsn);
            self.stats.duplicate_chunks += 1;
            *dup = true;
            return;
        }
        if tsn == self.cum_tsn + 1 {
            debug_assert_eq!(offset, self.delivered);
            self.cum_tsn = tsn;
            self.delivered = offset + len as u64;
            // the run that starts right above, if any, is now in order
            if let Some(end) = self.runs.remove(&(tsn + 1)) {
                for t in tsn + 1..=end {
                    let (o, l) = self.ooo.remove(&t).expect("a run's chunks are held");
                    debug_assert_eq!(o, self.delivered);
                    self.delivered = o + l as u64;
                    self.buffered -= l as u64;
                }
                self.cum_tsn = end;
            }
            return;
        }
        if self.buffered + len as u64 > self.rcv_buf {
            self.stats.dropped_buffer_full += 1;
            return;
        }
        self.stats.out_of_order_chunks += 1;
        self.ooo.insert(tsn, (offset, len));
        self.buffered += len as u64;
        // merge into the runs
        let mut start = tsn;
        let mut end = tsn;
        if let Some((&s, &e)) = self.runs.range(..tsn).next_back() {
            if e + 1 == tsn {
                start = s;
            }
        }
        if let Some(e) = self.runs.remove(&(tsn + 1)) {
            end = e;
        }
        self.runs.insert(start, end);
    }

    /// Builds the next SACK's record, with at most `room` gap blocks and duplicate TSNs in
    /// all (the lowest blocks first, then duplicates), and resets the delayed-SACK state.
    pub fn take_sack(&mut self, room: usize) -> SackRecord {
        self.stats.sacks += 1;
        let gaps: Vec<(u64, u64)> = self.runs.iter().take(room).map(|(&s, &e)| (s, e)).collect();
        let mut dups = std::mem::take(&mut self.dups);
        dups.truncate(room - gaps.len());
        let rec = SackRecord { gaps, dups, dac_count: self.since_sack.clamp(1, 2) as u8, echoes: std::mem::take(&mut self.echoes) };
        self.since_sack = 0;
        rec
    }

    /// Packets received since the last SACK.
    pub fn unacked_packets(&self) -> u32 {
        self.since_sack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(tsn: u64) -> SctpDataHeader {
        SctpDataHeader { tsn, offset: (tsn - 1) * 1000, sent_at: SimTime::ZERO, len: 1000, chunks: 1, retx: false, ..Default::default() }
    }

    #[test]
    fn gaps_and_duplicates_are_reported_and_filled() {
        let mut r = SctpReceiver::new(10_000, false);
        let t = SimTime::ZERO;
        assert_eq!(r.on_data(t, 0, &data(1), 1000, true, 2, false), SackNow::Later);
        assert_eq!(r.on_data(t, 0, &data(2), 1000, true, 2, false), SackNow::Now);
        assert_eq!(r.take_sack(usize::MAX), SackRecord { dac_count: 2, ..SackRecord::default() });
        // 3 lost, 4 and 6 arrive: gaps, SACK at once
        assert_eq!(r.on_data(t, 0, &data(4), 1000, true, 2, false), SackNow::Now);
        assert_eq!(r.on_data(t, 0, &data(6), 1000, true, 2, false), SackNow::Now);
        assert_eq!(r.on_data(t, 0, &data(5), 1000, true, 2, false), SackNow::Now);
        assert_eq!(r.buffered(), 3000);
        assert_eq!(r.a_rwnd(), 7000);
        let s = r.take_sack(usize::MAX);
        assert_eq!(s.gaps, vec![(4, 6)]);
        assert_eq!(r.cum_tsn(), 2);
        r.on_data(t, 0, &data(8), 1000, true, 2, false);
        r.on_data(t, 0, &data(10), 1000, true, 2, false);
        r.on_data(t, 0, &data(10), 1000, true, 2, false);
        // a SACK holds what fits: the lowest blocks first, then duplicates
        let capped = r.take_sack(2);
        assert_eq!((capped.gaps, capped.dups), (vec![(4, 6), (8, 8)], vec![]));
        r.on_data(t, 0, &data(10), 1000, true, 2, false);
        let capped = r.take_sack(4);
        assert_eq!((capped.gaps, capped.dups), (vec![(4, 6), (8, 8), (10, 10)], vec![10]));
        r.on_data(t, 0, &data(4), 1000, true, 2, false);
        assert_eq!(r.take_sack(usize::MAX).dups, vec![4]);
        // 3 fills the first gap
        r.on_data(t, 0, &data(3), 1000, true, 2, false);
        assert_eq!((r.cum_tsn(), r.delivered(), r.buffered()), (6, 6000, 2000));
        assert_eq!(r.take_sack(usize::MAX).gaps, vec![(8, 8), (10, 10)]);
        // with DAC the receiver keeps delaying despite the gap
        let mut d = SctpReceiver::new(10_000, false);
        assert_eq!(d.on_data(t, 0, &data(2), 1000, true, 2, true), SackNow::Later);
        assert_eq!(d.on_data(t, 0, &data(3), 1000, true, 2, true), SackNow::Now);
        assert_eq!(d.take_sack(usize::MAX).dac_count, 2);
    }

    #[test]
    fn a_full_buffer_drops_out_of_order_chunks_but_takes_the_next_in_order() {
        let mut r = SctpReceiver::new(2000, false);
        let t = SimTime::ZERO;
        r.on_data(t, 0, &data(2), 1000, true, 2, false);
        r.on_data(t, 0, &data(3), 1000, true, 2, false);
        r.on_data(t, 0, &data(4), 1000, true, 2, false);
        assert_eq!((r.buffered(), r.stats.dropped_buffer_full, r.a_rwnd()), (2000, 1, 0));
        r.on_data(t, 0, &data(1), 1000, true, 2, false);
        assert_eq!((r.cum_tsn(), r.buffered()), (3, 0));
    }

    #[test]
    fn bundled_chunks_are_split_by_the_chunk_size() {
        let mut r = SctpReceiver::new(1 << 20, true);
        let h = SctpDataHeader { tsn: 1, offset: 0, sent_at: SimTime::ZERO, len: 2500, chunks: 3, retx: false, ..Default::default() };
        r.on_data(SimTime(7), 0, &h, 1000, true, 2, false);
        assert_eq!((r.cum_tsn(), r.delivered()), (3, 2500));
        assert_eq!(r.take_sack(usize::MAX).echoes, vec![(1, 0, SimTime::ZERO, SimTime(7))]);
    }
}
