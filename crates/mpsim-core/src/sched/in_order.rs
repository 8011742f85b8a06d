//! In order: subflows filled in index order, ignoring RTT. This is what the ns-2 MPTCP patch
//! of the early 2010s does (`MptcpAgent::send_control` walks its subflow list from the first
//! and sends on the first one whose congestion window has room), and so the "standard
//! MPTCP" of ns-2 studies such as PO-MPTCP (seed 004, ALGORITHMS.md §9).
//!
//! Choices made for this simulator: a subflow takes data when it is available in the Linux
//! sense ([`SubflowView::available`]: usable, not in the Loss state, cwnd room), under the
//! shared backup rule ([`backups_in_use`]); the scheduler has no state, and it answers a
//! blocked receive window by doing nothing (the ns-2 patch has no opportunistic
//! retransmission or penalisation).
//!
//! [`SubflowView::available`]: super::SubflowView::available

use super::{backups_in_use, Decision, SchedContext, Scheduler};

#[derive(Clone, Copy, Debug, Default)]
pub struct InOrder;

impl InOrder {
    /// The first subflow, by index, that may take data now.
    pub fn first_available(subflows: &[super::SubflowView]) -> Option<usize> {
        let backups = backups_in_use(subflows);
        subflows.iter().position(|s| s.eligible(backups) && s.available())
    }
}

impl Scheduler for InOrder {
    fn name(&self) -> &'static str {
        "in_order"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        Self::first_available(ctx.subflows).map_or(Decision::Wait, Decision::Send)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::view::CaState;

    #[test]
    fn fills_the_first_subflow_with_room_whatever_the_rtt() {
        let mut s = InOrder;
        // the first subflow is the slow one: it still comes first
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0));
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0), "no turns: the same subflow while it has room");
        let subs = [sf(100, 10, 10), sf(10, 10, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1), "the next one once the first is full");
        let subs = [sf(100, 10, 10), sf(10, 10, 10)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Wait);
    }

    #[test]
    fn skips_failed_and_loss_state_subflows_and_keeps_backups_for_when_nothing_else_works() {
        let mut s = InOrder;
        let mut dead = sf(10, 10, 0);
        dead.usable = false;
        let mut lost = sf(10, 10, 0);
        lost.ca_state = CaState::Loss;
        let mut backup = sf(10, 10, 0);
        backup.backup = true;
        let regular = sf(100, 10, 0);
        assert_eq!(s.pick(&ctx(&[dead, lost, backup, regular])), Decision::Send(3));
        // a regular subflow usable but full: wait rather than use the backup
        let full = sf(100, 10, 10);
        assert_eq!(s.pick(&ctx(&[dead, backup, full])), Decision::Wait);
        // no regular subflow usable: the backup
        assert_eq!(s.pick(&ctx(&[dead, backup])), Decision::Send(1));
        // the blocked-window answer is to do nothing
        let pair = [regular, full];
        let mut c = ctx(&pair);
        c.hol_subflow = Some(1);
        assert_eq!(s.on_window_blocked(&c), super::super::BlockedAction::default());
    }

    mod props {
        use super::super::super::props::{context, scenario};
        use super::super::super::SchedContext;
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// The pick is the lowest index among the subflows lowest_rtt would accept.
            #[test]
            fn picks_the_lowest_index_that_may_send((subflows, conns) in scenario()) {
                let ctx: SchedContext<'_> = context(&conns[0], &subflows);
                let backups = backups_in_use(&subflows);
                let expect = (0..subflows.len())
                    .find(|&i| subflows[i].eligible(backups) && subflows[i].available())
                    .map_or(Decision::Wait, Decision::Send);
                prop_assert_eq!(InOrder.pick(&ctx), expect);
                // it sends exactly when lowest_rtt would
                let l = super::super::super::lowest_rtt_available(&subflows);
                prop_assert_eq!(l.is_none(), expect == Decision::Wait);
            }
        }
    }
}
