//! Redundant (Linux `mptcp_redundant.c`): each chunk goes on the lowest-RTT subflow, and a
//! copy on every other active (non-backup) subflow. Copies wait on their subflow's own
//! window and are dropped once the data is acknowledged at the connection level.

use super::{lowest_rtt_available, Decision, SchedContext, Scheduler};

#[derive(Clone, Copy, Debug, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match lowest_rtt_available(ctx.subflows) {
            Some(i) => Decision::Send(i),
            None => Decision::Wait,
        }
    }

    fn copies(&mut self, ctx: &SchedContext<'_>, chosen: usize) -> u64 {
        let mut mask = 0u64;
        for (i, s) in ctx.subflows.iter().enumerate().take(64) {
            if i != chosen && s.usable && !s.backup {
                mask |= 1 << i;
            }
        }
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn copies_go_to_every_other_active_subflow() {
        let mut r = Redundant;
        let mut subs = [sf(100, 10, 0), sf(10, 10, 0), sf(50, 10, 0)];
        subs[2].backup = true;
        let c = ctx(&subs);
        assert_eq!(r.pick(&c), Decision::Send(1));
        assert_eq!(r.copies(&c, 1), 0b001);
    }
}
