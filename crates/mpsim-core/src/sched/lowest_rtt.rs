//! Lowest-RTT first, the default scheduler of the Linux MPTCP implementation (v0.9x,
//! `mptcp_sched.c`; ALGORITHMS.md §4.1).
//!
//! New data goes to the available subflow with the smallest smoothed RTT. When the
//! receiver's window blocks new data, the receive-buffer optimisation may retransmit the
//! head-of-line data on the fast subflow (opportunistic retransmission) and halve the window
//! of the slow subflow holding it (penalisation), at most once per RTT of the fast subflow.

use super::{lowest_rtt_available, lowest_rtt_available_among, BlockedAction, Decision, SchedContext, Scheduler};
use crate::time::SimTime;
use crate::view::CaState;

#[derive(Clone, Copy, Debug)]
pub struct LowestRtt {
    /// Opportunistic retransmission and penalisation on.
    pub rbuf_opt: bool,
    last_penalty: Option<SimTime>,
}

impl LowestRtt {
    pub fn new(rbuf_opt: bool) -> LowestRtt {
        LowestRtt { rbuf_opt, last_penalty: None }
    }
}

impl Scheduler for LowestRtt {
    fn name(&self) -> &'static str {
        if self.rbuf_opt {
            "lowest_rtt"
        } else {
            "lowest_rtt_plain"
        }
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match lowest_rtt_available_among(ctx.subflows, ctx.maybe_available) {
            Some(i) => Decision::Send(i),
            None => Decision::Wait,
        }
    }

    fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        let mut act = BlockedAction::default();
        if !self.rbuf_opt {
            return act;
        }
        let (Some(fast), Some(hol)) = (lowest_rtt_available(ctx.subflows), ctx.hol_subflow) else {
            return act;
        };
        if fast == hol {
            return act;
        }
        let (f, h) = (&ctx.subflows[fast], &ctx.subflows[hol]);
        let fast_rtt = f.srtt_or_max();
        // opportunistic retransmission: the head is stuck on a small or much slower window
        let already = ctx.hol_sent_on & (1 << fast.min(63)) != 0;
        if !already && (h.cwnd <= 4 * h.mss || h.srtt_or_max().0 / 4 > fast_rtt.0) {
            act.reinject_on = Some(fast);
        }
        // penalise the slower holder once per fast-subflow RTT
        let due = self.last_penalty.is_none_or(|t| ctx.now.since(t) >= fast_rtt);
        if due && h.ca_state == CaState::Open && h.srtt_or_max() > fast_rtt {
            act.penalize = Some(hol);
            self.last_penalty = Some(ctx.now);
        }
        act
    }

    fn sends_only_when_available(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::time::Dur;

    #[test]
    fn picks_the_fastest_with_room() {
        let mut s = LowestRtt::new(true);
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1));
    }

    #[test]
    fn reinjects_head_on_fast_subflow_and_penalises_slow_once_per_rtt() {
        let mut s = LowestRtt::new(true);
        let subs = [sf(100, 10, 5), sf(10, 10, 0)];
        let mut c = ctx(&subs);
        c.hol_subflow = Some(0);
        let a = s.on_window_blocked(&c);
        assert_eq!(a, BlockedAction { reinject_on: Some(1), penalize: Some(0) });
        // within one fast RTT: no second penalty
        c.now = SimTime(Dur::from_millis(5).0);
        c.hol_sent_on = 0b10;
        assert_eq!(s.on_window_blocked(&c), BlockedAction::default());
        c.now = SimTime(Dur::from_millis(11).0);
        assert_eq!(s.on_window_blocked(&c).penalize, Some(0));
    }

    #[test]
    fn plain_variant_never_reinjects() {
        let mut s = LowestRtt::new(false);
        let subs = [sf(100, 10, 5), sf(10, 10, 0)];
        let mut c = ctx(&subs);
        c.hol_subflow = Some(0);
        assert_eq!(s.on_window_blocked(&c), BlockedAction::default());
    }
}
