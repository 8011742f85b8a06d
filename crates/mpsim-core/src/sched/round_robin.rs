//! Round-robin (Linux `mptcp_rr.c`, num_segments = 1, cwnd_limited = 1): subflows take turns,
//! one segment each, skipping those without cwnd room.

use super::{backups_in_use, Decision, SchedContext, Scheduler};

#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin {
    /// The subflow after the one served last.
    next: usize,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "round_robin"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let n = ctx.subflows.len();
        let backups = backups_in_use(ctx.subflows);
        for k in 0..n {
            let i = (self.next + k) % n;
            let s = &ctx.subflows[i];
            if s.available() && s.eligible(backups) {
                self.next = (i + 1) % n;
                return Decision::Send(i);
            }
        }
        Decision::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn takes_turns_and_skips_full_subflows() {
        let mut rr = RoundRobin::default();
        let subs = [sf(10, 10, 0), sf(100, 10, 0), sf(50, 10, 0)];
        let picks: Vec<_> = (0..4).map(|_| rr.pick(&ctx(&subs))).collect();
        assert_eq!(picks, vec![Decision::Send(0), Decision::Send(1), Decision::Send(2), Decision::Send(0)]);
        let subs = [sf(10, 10, 0), sf(100, 10, 10), sf(50, 10, 0)];
        assert_eq!(rr.pick(&ctx(&subs)), Decision::Send(2));
        assert_eq!(rr.pick(&ctx(&subs)), Decision::Send(0));
    }
}
