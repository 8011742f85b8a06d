//! The default scheduler of upstream Linux MPTCP (Linux 5.19 to 6.x, net/mptcp/protocol.c
//! `mptcp_subflow_get_send`).
//!
//! Among the active subflows (backups only when no regular subflow is active), new data goes
//! to the one that would drain its queued bytes soonest: the lowest ratio of bytes queued on
//! the subflow (sent and unacknowledged, plus not yet sent) to its pacing rate. Linux's
//! pacing rate is `ratio · cwnd / srtt` (`tcp_update_pacing_rate`: 200% in slow start, 120%
//! in congestion avoidance, the `tcp_pacing_ss_ratio` and `tcp_pacing_ca_ratio` defaults).
//! The kernel smooths the rate over its send bursts (`avg_pacing_rate`); with one chunk per
//! decision here the current rate is used.
//!
//! Room is the subflow's send buffer, not its congestion window: the kernel pushes data into
//! the chosen subflow while `sk_stream_memory_free` holds, and TCP sends it as the window
//! opens, so a slow subflow can hold data beyond its window. The send buffer autotunes to
//! two windows' worth of segments (`tcp_sndbuf_expand`: 2 · max(10, cwnd) segments), which is
//! the limit used here for bytes in flight plus queued. If the subflow with the lowest linger
//! time has no room, the scheduler waits rather than taking the next one, as the kernel does.
//!
//! Unlike the out-of-tree v0.9x kernel (`lowest_rtt`), upstream has neither opportunistic
//! retransmission nor penalisation: when the receive window blocks new data it waits.

use super::{Decision, SchedContext, Scheduler, SubflowView};

/// Linux `sysctl_tcp_pacing_ss_ratio` and `sysctl_tcp_pacing_ca_ratio`, in percent.
pub const PACING_SS_RATIO: u64 = 200;
pub const PACING_CA_RATIO: u64 = 120;

#[derive(Clone, Copy, Debug, Default)]
pub struct LinuxUpstream;

/// The linger time of a subflow's queue as a fraction num/den, in nanoseconds:
/// queued · srtt · 100 / (ratio · cwnd). No RTT sample: zero (Linux's pacing rate is
/// unlimited until the first sample).
fn linger(s: &SubflowView) -> (u128, u128) {
    let Some(srtt) = s.srtt else { return (0, 1) };
    let ratio = if s.cwnd < s.ssthresh { PACING_SS_RATIO } else { PACING_CA_RATIO };
    let queued = (s.in_flight + s.queued) as u128;
    (queued * srtt.0 as u128 * 100, ratio as u128 * s.cwnd.max(1) as u128)
}

/// Linux's TCP_INIT_CWND: the send buffer never autotunes below this many segments.
pub const SNDBUF_MIN_SEGMENTS: u64 = 10;

/// Room in the subflow's send buffer (`sk_stream_memory_free` with the autotuned buffer of
/// `tcp_sndbuf_expand`): bytes in flight plus queued below 2 · max(10, cwnd) segments.
pub fn sndbuf_room(s: &SubflowView) -> bool {
    s.in_flight + s.queued < 2 * s.cwnd.max(SNDBUF_MIN_SEGMENTS * s.mss)
}

/// The active subflow with the lowest linger time, ties to the lower index.
fn best(subflows: &[SubflowView], backup: bool) -> Option<usize> {
    let mut out: Option<(usize, (u128, u128))> = None;
    for (i, s) in subflows.iter().enumerate() {
        if s.backup != backup || !s.usable {
            continue;
        }
        let l = linger(s);
        let better = match out {
            None => true,
            // a/b < c/d  <=>  a·d < c·b
            Some((_, (n, d))) => l.0 * d < n * l.1,
        };
        if better {
            out = Some((i, l));
        }
    }
    out.map(|(i, _)| i)
}

impl Scheduler for LinuxUpstream {
    fn name(&self) -> &'static str {
        "linux_upstream"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let active = ctx.subflows.iter().any(|s| !s.backup && s.usable);
        let pick = if active { best(ctx.subflows, false) } else { best(ctx.subflows, true) };
        match pick {
            Some(i) if sndbuf_room(&ctx.subflows[i]) => Decision::Send(i),
            _ => Decision::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, sf};
    use super::*;
    use crate::sched::BlockedAction;

    #[test]
    fn picks_the_lowest_queued_bytes_over_pacing_rate() {
        let mut s = LinuxUpstream;
        // 10 ms with 8 of 10 segments in flight: 8/10 · 10 ms = 8 ms to drain
        // 40 ms with 2 of 20 in flight: 2/20 · 40 ms = 4 ms: the slower path wins
        let subs = [sf(10, 10, 8), sf(40, 20, 2)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1));
        // lowest_rtt would take the 10 ms path
        assert_eq!(super::super::lowest_rtt_available(&subs), Some(0));
        // equal queues: the faster path drains sooner
        let subs = [sf(10, 10, 5), sf(40, 10, 5)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn slow_start_paces_faster() {
        let mut s = LinuxUpstream;
        let mut a = sf(10, 10, 6);
        let mut b = sf(10, 10, 5);
        b.ssthresh = b.mss;
        // a is in slow start: rate 200% instead of 120%, so 6/2 < 5/1.2
        a.ssthresh = 100 * a.mss;
        assert_eq!(s.pick(&ctx(&[a, b])), Decision::Send(0));
    }

    #[test]
    fn full_send_buffers_wait_and_backups_only_without_active_subflows() {
        let mut s = LinuxUpstream;
        // a full window is no reason to wait: the send buffer holds two windows
        let subs = [sf(10, 10, 10), sf(40, 10, 10)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0));
        // the lowest linger time has a full send buffer: wait, even if another has room
        let mut full = sf(10, 10, 10);
        full.queued = 10 * full.mss;
        let subs = [full, sf(400, 10, 5)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Wait);
        let mut backup = sf(5, 10, 0);
        backup.backup = true;
        assert_eq!(s.pick(&ctx(&[sf(10, 10, 3), backup])), Decision::Send(0));
        let mut dead = sf(10, 10, 0);
        dead.usable = false;
        assert_eq!(s.pick(&ctx(&[dead, backup])), Decision::Send(1));
    }

    #[test]
    fn no_opportunistic_retransmission_nor_penalisation() {
        let mut s = LinuxUpstream;
        let subs = [sf(10, 10, 2), sf(200, 2, 2)];
        let mut c = ctx(&subs);
        c.hol_subflow = Some(1);
        assert_eq!(s.on_window_blocked(&c), BlockedAction::default());
    }
}
