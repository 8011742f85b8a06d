//! The default scheduler of upstream Linux MPTCP (Linux 5.19 to 6.x, net/mptcp/protocol.c
//! `mptcp_subflow_get_send` and `__subflow_push_pending`).
//!
//! Among the active subflows (backups only when no regular subflow is active), new data goes
//! to the one that would drain its queued bytes soonest: the lowest ratio of bytes queued on
//! the subflow (sent and unacknowledged, plus not yet sent) to its smoothed pacing rate.
//!
//! - Linux's pacing rate is `ratio · max(cwnd, in flight) / srtt` (`tcp_update_pacing_rate`):
//!   200% while cwnd is below half of ssthresh, 120% after (the `tcp_pacing_ss_ratio` and
//!   `tcp_pacing_ca_ratio` defaults).
//! - The scheduler keeps its own average of it per subflow (`avg_pacing_rate`): initialised
//!   from the current rate, and at each choice moved towards the current rate in proportion
//!   of the burst to the bytes already queued, `avg = (avg · queued + rate · burst) /
//!   (burst + queued)`.
//! - Each choice hands the chosen subflow a burst of up to [`BURST`] bytes (at most what the
//!   receive window still admits); the sender keeps giving that subflow data until the burst
//!   is used up or its send buffer is full, and only then chooses again. A new round of
//!   sending (another event time: an ACK, the application) starts with a new choice, as the
//!   kernel's push from the ACK path does.
//!
//! Room is the subflow's send buffer, not its congestion window: the kernel pushes data into
//! the chosen subflow while `sk_stream_memory_free` holds, and TCP sends it as the window
//! opens, so a subflow holds data well beyond its window ([`sndbuf_room`]: about six windows),
//! and the linger times, not the buffers, balance the subflows. If the subflow with the lowest
//! linger time has no room, the scheduler waits rather than taking the next one, as the
//! kernel does.
//!
//! The connection's own send buffer is Linux's too ([`connection_sndbuf`]): `tcp_wmem[0]` plus
//! the subflows' autotuned buffers, read by the flow through `Transport::send_buffer`, so the
//! application writes no more while data a slow subflow holds is unacknowledged at the
//! connection level.
//!
//! Unlike the out-of-tree v0.9x kernel (`lowest_rtt`), upstream has neither opportunistic
//! retransmission nor penalisation: when the receive window blocks new data it waits.

use super::{Decision, SchedContext, Scheduler, SubflowView};
use crate::time::SimTime;
use crate::view::{PACING_CA_RATIO, PACING_SS_RATIO};

/// Bytes one choice hands to a subflow (`MPTCP_SEND_BURST_SIZE`: 64 KiB less the TCP
/// header, the largest TCP options, the IPv6 header and a fragment header).
pub const BURST: u64 = 65536 - 20 - 40 - 40 - 8;

/// Linux's pacing rate of a subflow in bytes per second (`sk_pacing_rate`): the controller's
/// if it sets one (BBR), otherwise the stack's from the window and the smoothed RTT; None
/// before an RTT sample (the kernel's rate is then unlimited).
fn pacing_rate(s: &SubflowView) -> Option<u128> {
    if let Some(r) = s.pacing_rate {
        return Some(r as u128);
    }
    let srtt = s.srtt?;
    let ratio = if s.cwnd < s.ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
    let basis = s.cwnd.max(s.in_flight).max(s.mss) as u128;
    Some(basis * ratio as u128 * 10_000_000 / srtt.0.max(1) as u128)
}

/// Linux's TCP_INIT_CWND: the send buffer never autotunes below this many segments.
pub const SNDBUF_MIN_SEGMENTS: u64 = 10;

/// Bytes of send buffer Linux budgets per segment (`tcp_sndbuf_expand`): the MSS plus
/// `MAX_TCP_HEADER` (320 on x86-64) plus the aligned `skb_shared_info` (320), rounded up to a
/// power of two, plus the aligned `sk_buff` (256): 4,352 for an MSS of 1,460.
pub fn sndbuf_per_segment(mss: u64) -> u64 {
    (mss + 320 + 320).next_power_of_two() + 256
}

/// Room in the subflow's send buffer (`sk_stream_memory_free` with the buffer autotuned by
/// `tcp_sndbuf_expand`: 2 · max(10, cwnd) · [`sndbuf_per_segment`] bytes). The buffer is
/// charged the true size of the queued skbs, and the skbs Multipath TCP builds hold their
/// payload densely in page fragments (up to 64 KB each), so the payload it holds is about
/// its size: some six windows, not two (measured with `ss` on Linux 6.18: a subflow with a
/// 45-segment window held 68 KB in flight and 330 KB not yet sent, 398 KB in all, against a
/// budget of 2 · 45 · 4,352 = 392 KB).
pub fn sndbuf_room(s: &SubflowView) -> bool {
    s.in_flight + s.queued < sndbuf(s.cwnd, s.mss)
}

/// A subflow's send buffer as `tcp_sndbuf_expand` autotunes it for a window of `cwnd` bytes
/// of `mss`-byte segments: 2 · max(10, cwnd in segments) · [`sndbuf_per_segment`] bytes.
pub fn sndbuf(cwnd: u64, mss: u64) -> u64 {
    2 * (cwnd / mss.max(1)).max(SNDBUF_MIN_SEGMENTS) * sndbuf_per_segment(mss)
}

/// `tcp_wmem[0]`, Linux's default and the testbed's: the floor of the connection's buffer.
pub const WMEM_MIN: u64 = 4096;

/// Bytes per segment of a subflow's `sk_sndbuf` as Linux 6.18 autotunes it, measured: `ss -m`
/// showed subflow buffers (skmem `tb`) of 142,848 and 165,888 B, 2 · 31 and 2 · 36 segments
/// of 2,304 B, for a 1,460-byte MSS (`benches/kernel_probe.py sndmem`, docs/aqm.md). What a
/// subflow may hold queued ([`sndbuf_room`]) was calibrated apart, on the bytes it held.
pub const SNDBUF_TB_PER_SEGMENT: u64 = 2304;

/// The Multipath TCP connection's own send buffer (Linux 6.7 and later, `__mptcp_sync_sndbuf`):
/// `tcp_wmem[0]` plus its subflows' `sk_sndbuf`, each 2 · max(10, its largest window in
/// segments) · [`SNDBUF_TB_PER_SEGMENT`] (`tcp_sndbuf_expand` only grows it), from (largest
/// cwnd, mss) pairs. Every byte written and not yet acknowledged at the connection level
/// (DATA_ACK) is charged to it, about its payload (the connection's data fragments are
/// dense), so data a slow subflow holds up keeps the application from writing more for the
/// others. Measured: 312,832 B = 4,096 + 142,848 + 165,888.
pub fn connection_sndbuf(subflows: impl Iterator<Item = (u64, u64)>) -> u64 {
    WMEM_MIN + subflows.map(|(cwnd, mss)| 2 * (cwnd / mss.max(1)).max(SNDBUF_MIN_SEGMENTS) * SNDBUF_TB_PER_SEGMENT).sum::<u64>()
}

#[derive(Clone, Debug, Default)]
pub struct LinuxUpstream {
    /// Per subflow: the smoothed pacing rate (bytes/s); 0 until the subflow is first weighed.
    avg_rate: Vec<u128>,
    /// The subflow of the current burst, the bytes left of it and the time it was given.
    burst_to: usize,
    burst_left: u64,
    burst_at: SimTime,
    /// Per subflow: the largest window (bytes) seen at a choice, which sizes its send buffer.
    peak_cwnd: Vec<u64>,
}

impl LinuxUpstream {
    /// The subflow with the lowest linger time among the active regular subflows, or the
    /// backups when no regular subflow is active; ties to the lower index.
    fn best(&mut self, subflows: &[SubflowView]) -> Option<usize> {
        if self.avg_rate.len() < subflows.len() {
            self.avg_rate.resize(subflows.len(), 0);
        }
        if self.peak_cwnd.len() < subflows.len() {
            self.peak_cwnd.resize(subflows.len(), 0);
        }
        for (p, s) in self.peak_cwnd.iter_mut().zip(subflows) {
            *p = (*p).max(s.cwnd);
        }
        let backup = !subflows.iter().any(|s| !s.backup && s.usable);
        // linger = queued / avg_rate, compared as fractions: a/b < c/d <=> a·d < c·b
        let mut out: Option<(usize, u128, u128)> = None;
        for (i, s) in subflows.iter().enumerate() {
            if s.backup != backup || !s.usable {
                continue;
            }
            let (queued, rate) = match pacing_rate(s) {
                None => (0, 1),
                Some(now) => {
                    if self.avg_rate[i] == 0 {
                        self.avg_rate[i] = now;
                    }
                    ((s.in_flight + s.queued) as u128, self.avg_rate[i].max(1))
                }
            };
            if out.is_none_or(|(_, q, r)| queued * r < q * rate) {
                out = Some((i, queued, rate));
            }
        }
        out.map(|(i, _, _)| i)
    }
}

impl LinuxUpstream {
    /// The connection's send buffer ([`connection_sndbuf`]) for subflows whose windows are
    /// `cwnds` now, each at least as large as the largest seen at a choice.
    pub fn connection_sndbuf(&self, cwnds: impl Iterator<Item = u64>, mss: u64) -> u64 {
        connection_sndbuf(cwnds.enumerate().map(|(i, c)| (c.max(self.peak_cwnd.get(i).copied().unwrap_or(0)), mss)))
    }
}

impl Scheduler for LinuxUpstream {
    fn name(&self) -> &'static str {
        "linux_upstream"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        // the burst of the last choice, within the same round of sending
        if self.burst_left > 0 && self.burst_at == ctx.now {
            if let Some(s) = ctx.subflows.get(self.burst_to) {
                if s.usable && sndbuf_room(s) {
                    self.burst_left = self.burst_left.saturating_sub(ctx.next_len);
                    return Decision::Send(self.burst_to);
                }
            }
        }
        self.burst_left = 0;
        let Some(i) = self.best(ctx.subflows) else { return Decision::Wait };
        let s = &ctx.subflows[i];
        if !sndbuf_room(s) {
            return Decision::Wait;
        }
        let burst = BURST.min(ctx.window_room);
        if burst > 0 {
            if let Some(now) = pacing_rate(s) {
                let queued = (s.in_flight + s.queued) as u128;
                let b = burst as u128;
                self.avg_rate[i] = (self.avg_rate[i] * queued + now * b) / (b + queued);
            }
            self.burst_to = i;
            self.burst_left = burst.saturating_sub(ctx.next_len);
            self.burst_at = ctx.now;
        }
        Decision::Send(i)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, sf};
    use super::*;
    use crate::sched::BlockedAction;
    use crate::time::Dur;

    fn pick(subs: &[SubflowView]) -> Decision {
        LinuxUpstream::default().pick(&ctx(subs))
    }

    #[test]
    fn picks_the_lowest_queued_bytes_over_pacing_rate() {
        // 10 ms with 8 of 10 segments in flight: 8/10 · 10 ms = 8 ms to drain
        // 40 ms with 2 of 20 in flight: 2/20 · 40 ms = 4 ms: the slower path wins
        let subs = [sf(10, 10, 8), sf(40, 20, 2)];
        assert_eq!(pick(&subs), Decision::Send(1));
        // lowest_rtt would take the 10 ms path
        assert_eq!(super::super::lowest_rtt_available(&subs), Some(0));
        // equal queues: the faster path drains sooner
        assert_eq!(pick(&[sf(10, 10, 5), sf(40, 10, 5)]), Decision::Send(0));
    }

    #[test]
    fn slow_start_below_half_ssthresh_paces_faster() {
        let mut a = sf(10, 10, 6);
        let mut b = sf(10, 10, 5);
        b.ssthresh = b.mss;
        // a is in slow start well below ssthresh: rate 200% instead of 120%, so 6/2 < 5/1.2
        a.ssthresh = 100 * a.mss;
        assert_eq!(pick(&[a, b]), Decision::Send(0));
        // at half of ssthresh or above, Linux already paces at the congestion-avoidance ratio
        a.ssthresh = 20 * a.mss;
        assert_eq!(pick(&[a, b]), Decision::Send(1));
    }

    #[test]
    fn full_send_buffers_wait_and_backups_only_without_active_subflows() {
        // a full window is no reason to wait: the send buffer holds several windows
        let mut queued = sf(10, 10, 10);
        queued.queued = 30 * queued.mss;
        assert_eq!(pick(&[queued, sf(40, 10, 30)]), Decision::Send(0));
        // the lowest linger time has a full send buffer (2 · 10 segments of 2,304 B budget):
        // wait, even if another has room
        let mut full = sf(10, 10, 10);
        full.queued = 2 * 10 * 2304 - full.in_flight;
        assert_eq!(pick(&[full, sf(400, 10, 5)]), Decision::Wait);
        let mut backup = sf(5, 10, 0);
        backup.backup = true;
        assert_eq!(pick(&[sf(10, 10, 3), backup]), Decision::Send(0));
        let mut dead = sf(10, 10, 0);
        dead.usable = false;
        assert_eq!(pick(&[dead, backup]), Decision::Send(1));
    }

    #[test]
    fn a_choice_gives_one_burst_then_chooses_again() {
        let mut s = LinuxUpstream::default();
        // subflow 1 drains sooner; it keeps the data while its burst lasts, although its
        // queue grows past subflow 0's
        let mut subs = [sf(10, 40, 20), sf(10, 40, 0)];
        let mut c = ctx(&subs);
        let mut given = 0;
        while given < BURST {
            assert_eq!(s.pick(&c), Decision::Send(1), "after {given} bytes");
            given += c.next_len;
            subs[1].queued += c.next_len;
            c = ctx(&subs);
        }
        // the burst is used up: a new choice, and subflow 0 now drains sooner
        assert_eq!(s.pick(&c), Decision::Send(0));
        // a new round of sending (a later event) chooses again at once
        let mut s = LinuxUpstream::default();
        let subs = [sf(10, 40, 20), sf(10, 40, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1));
        let subs = [sf(10, 40, 0), sf(10, 40, 20)];
        let mut c = ctx(&subs);
        assert_eq!(s.pick(&c), Decision::Send(1), "same round: the burst continues");
        c.now = SimTime::ZERO + Dur::from_millis(1);
        assert_eq!(s.pick(&c), Decision::Send(0), "next round: chosen anew");
    }

    #[test]
    fn the_burst_is_bounded_by_the_receive_window_and_the_send_buffer() {
        let mut s = LinuxUpstream::default();
        let subs = [sf(10, 40, 0), sf(10, 40, 30)];
        let mut c = ctx(&subs);
        c.window_room = 3000;
        for _ in 0..3 {
            assert_eq!(s.pick(&c), Decision::Send(0));
        }
        // 3000 bytes given: the burst is over, the next choice is made afresh
        assert_eq!(s.burst_left, 0);
        // a subflow whose send buffer fills ends its burst: the choice is made again
        let mut s = LinuxUpstream::default();
        let mut subs = [sf(10, 10, 10), sf(10, 10, 10)];
        subs[1].queued = subs[1].mss / 2;
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued = 2 * 10 * 2304 - subs[0].in_flight; // the budget reached
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1), "the burst ends, subflow 1 is chosen");
    }

    #[test]
    fn the_pacing_rate_is_smoothed_over_bursts() {
        let mut s = LinuxUpstream::default();
        // first weighing: the current rate, 120% of 10 segments per 10 ms = 1.2 MB/s
        let a = sf(10, 10, 10);
        let mut one = [a];
        one[0].ssthresh = 0;
        assert_eq!(s.pick(&ctx(&one)), Decision::Send(0));
        assert_eq!(s.avg_rate[0], 1_200_000);
        // the window doubles; the average moves by burst / (burst + queued) of the way
        one[0].cwnd *= 2;
        let mut c = ctx(&one);
        c.now = SimTime::ZERO + Dur::from_millis(1);
        assert_eq!(s.pick(&c), Decision::Send(0));
        let (q, b) = (10_000u128, BURST as u128);
        assert_eq!(s.avg_rate[0], (1_200_000 * q + 2_400_000 * b) / (b + q));
    }

    #[test]
    fn the_connection_buffer_is_tcp_wmem0_plus_its_subflows_largest() {
        // the measured case: windows of 31 and 36 segments, 312,832 B
        assert_eq!(connection_sndbuf([(31 * 1460, 1460), (36 * 1460, 1460)].into_iter()), 312_832);
        // a 3-segment window is budgeted as 10
        assert_eq!(connection_sndbuf([(3 * 1460, 1460)].into_iter()), 4096 + 2 * 10 * 2304);
        // the scheduler keeps each subflow's largest window: the buffer does not shrink
        let mut s = LinuxUpstream::default();
        let mut subs = [sf(10, 10, 5), sf(40, 10, 5)];
        subs[0].cwnd = 36 * subs[0].mss;
        s.pick(&ctx(&subs));
        let mss = subs[0].mss;
        let big = s.connection_sndbuf([36 * mss, 10 * mss].into_iter(), mss);
        assert_eq!(big, 4096 + 2 * 36 * 2304 + 2 * 10 * 2304);
        assert_eq!(s.connection_sndbuf([20 * mss, 10 * mss].into_iter(), mss), big);
        assert_eq!(s.connection_sndbuf([20 * mss, 12 * mss].into_iter(), mss), big + 2 * 2 * 2304);
    }

    #[test]
    fn the_send_buffer_is_linux_autotuned_budget() {
        // 2 · max(10, cwnd) segments at 4,352 B each for an MSS of 1,460 (x86-64)
        assert_eq!(sndbuf_per_segment(1460), 4352);
        let mut s = sf(100, 45, 45);
        s.mss = 1460;
        s.cwnd = 45 * 1460;
        s.in_flight = 45 * 1460;
        s.queued = 2 * 45 * 4352 - s.in_flight - 1;
        assert!(sndbuf_room(&s));
        s.queued += 1;
        assert!(!sndbuf_room(&s));
        // a small window still gets ten segments' budget
        let mut small = sf(10, 2, 2);
        small.queued = 2 * 10 * 2304 - small.in_flight - 1;
        assert!(sndbuf_room(&small));
    }

    #[test]
    fn no_opportunistic_retransmission_nor_penalisation() {
        let mut s = LinuxUpstream::default();
        let subs = [sf(10, 10, 2), sf(200, 2, 2)];
        let mut c = ctx(&subs);
        c.hol_subflow = Some(1);
        assert_eq!(s.on_window_blocked(&c), BlockedAction::default());
    }
}
