//! PO-MPTCP, a priority-oriented scheduler for multimedia over Multipath TCP (Lu, Yu, Huang,
//! Guo, Int. J. Digital Multimedia Broadcasting 2018; seed 004, ALGORITHMS.md §9).
//!
//! The paper's sender has three modules:
//! * **DPAM** learns, through cross-layer signalling, which data the application marks as
//!   important and keeps a status list of priorities. If the list is empty, standard MPTCP
//!   scheduling applies.
//! * **MDPS** ranks the paths by quality: ascending RTT, and among paths with equal RTT the
//!   larger congestion window first.
//! * **PBPD** sends each prioritised packet on the best path of that ranking, moving down
//!   the list while a path's congestion window is full ("while c's cwnd is full, c =
//!   next(c)"); other packets go through the standard scheduler.
//!
//! The paper also says that "as long as there is important data with prior in queue, it
//! would be quickly removed from queue": prioritised data leaves the send buffer ahead of
//! ordinary data. That part is the connection's (it owns the send buffer): a scheduler whose
//! [`Scheduler::priority_dequeue`] is true makes the connection offer the oldest unscheduled
//! prioritised chunk before older ordinary data, DSN order kept within each class (see
//! `transport/mptcp/schedule.rs`).
//!
//! Choices made for this simulator:
//! * **Priority.** The application's marking reaches the scheduler as
//!   `ctx.next_priority`; any value above 0 is the paper's priority flag. Ordinary data
//!   (priority 0, which is also what an application that marks nothing produces, i.e. an
//!   empty DPAM list) goes to the standard scheduler. The paper ran the ns-2 MPTCP patch,
//!   whose scheduler fills subflows in index order ([`InOrder`]); `po_mptcp_in_order` uses
//!   it. `po_mptcp` uses lowest RTT with cwnd room ([`LowestRtt`], Linux MPTCP v0.9x), and
//!   `po_mptcp_rr` round-robin. Each has a `_fifo` form without the priority dequeue.
//!   Priorities are per stream in the paper (SCTP-like stream buffers); per-write tags in one
//!   byte stream are the approximation used here.
//! * **RTT** is the smoothed RTT; a subflow without a sample ranks after all sampled ones.
//!   Equal RTTs (to the nanosecond) are ordered by larger `cwnd`, then by lower index, so
//!   the order is total and decisions deterministic.
//! * **Which paths are ranked.** The paper ranks the "available paths". We rank the
//!   subflows the standard scheduler would consider: usable regular subflows not in the
//!   Loss state (a subflow rebuilding its window after a timeout is not available in Linux
//!   either). Backups are ranked instead only under the shared backup rule
//!   ([`backups_in_use`]: no regular subflow usable), so prioritised data is not stranded
//!   when only a backup path works; a regular subflow that is merely full or in Loss makes
//!   PO-MPTCP wait rather than use a backup.
//! * **Full window.** A path's cwnd is full when it has no room for another segment beyond
//!   what is in flight and queued ([`SubflowView::has_cwnd_room`]). If every ranked path is
//!   full, the prioritised chunk waits for the next ACK (the paper repeats "until there is
//!   no available sending window").
//! * When the receive window blocks new data, the standard scheduler's answer applies
//!   (opportunistic retransmission and penalisation for lowest RTT, nothing for in order),
//!   since the paper keeps standard MPTCP behaviour outside priority scheduling.
//!
//! Note that MDPS's ranking differs from lowest RTT's choice only in how it breaks exact RTT
//! ties (larger cwnd rather than lower index), so over `lowest_rtt` prioritised and ordinary
//! data go to the same subflow on paths with distinct RTTs and only the dequeue can make a
//! difference. Over `in_order` and `round_robin` PBPD also changes where important data goes.

use super::{backups_in_use, BlockedAction, Decision, InOrder, LowestRtt, RoundRobin, SchedContext, Scheduler, SubflowView};
use crate::time::Dur;
use crate::view::CaState;
use std::cmp::Reverse;

/// Which standard scheduler PO-MPTCP falls back on for ordinary data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standard {
    /// Lowest RTT with cwnd room (Linux MPTCP v0.9x default, `lowest_rtt`).
    LowestRtt,
    /// The first subflow by index with cwnd room (the ns-2 MPTCP patch, `in_order`).
    InOrder,
    /// Round-robin (`round_robin`).
    RoundRobin,
}

/// The standard scheduler's state.
#[derive(Clone, Copy, Debug)]
enum Fallback {
    LowestRtt(LowestRtt),
    InOrder(InOrder),
    RoundRobin(RoundRobin),
}

#[derive(Clone, Copy, Debug)]
pub struct PoMptcp {
    /// The standard scheduler, for ordinary data and receive-window blocking.
    standard: Fallback,
    /// Prioritised data leaves the send buffer ahead of older ordinary data.
    dequeue: bool,
    name: &'static str,
}

impl Default for PoMptcp {
    /// As the paper describes it: the priority dequeue on; lowest RTT for ordinary data.
    fn default() -> Self {
        PoMptcp::new(Standard::LowestRtt, true)
    }
}

impl PoMptcp {
    /// PO-MPTCP over `standard` for ordinary data, with or without the priority dequeue.
    pub fn new(standard: Standard, dequeue: bool) -> PoMptcp {
        let (fallback, name) = match (standard, dequeue) {
            (Standard::LowestRtt, true) => (Fallback::LowestRtt(LowestRtt::new(true)), "po_mptcp"),
            (Standard::LowestRtt, false) => (Fallback::LowestRtt(LowestRtt::new(true)), "po_mptcp_fifo"),
            (Standard::InOrder, true) => (Fallback::InOrder(InOrder), "po_mptcp_in_order"),
            (Standard::InOrder, false) => (Fallback::InOrder(InOrder), "po_mptcp_in_order_fifo"),
            (Standard::RoundRobin, true) => (Fallback::RoundRobin(RoundRobin::default()), "po_mptcp_rr"),
            (Standard::RoundRobin, false) => (Fallback::RoundRobin(RoundRobin::default()), "po_mptcp_rr_fifo"),
        };
        PoMptcp { standard: fallback, dequeue, name }
    }

    /// PO-MPTCP over round-robin as the standard scheduler (`po_mptcp_rr`).
    pub fn over_round_robin() -> PoMptcp {
        PoMptcp::new(Standard::RoundRobin, true)
    }
}

/// MDPS sort key: ascending srtt (unsampled last), descending cwnd, ascending index.
fn mdps_key(i: usize, s: &SubflowView) -> (Dur, Reverse<u64>, usize) {
    (s.srtt_or_max(), Reverse(s.cwnd), i)
}

impl PoMptcp {
    /// The subflows MDPS ranks: eligible under the backup rule and not in Loss.
    fn ranked(subflows: &[SubflowView]) -> impl Iterator<Item = (usize, &SubflowView)> {
        let backups = backups_in_use(subflows);
        subflows.iter().enumerate().filter(move |(_, s)| s.eligible(backups) && s.ca_state != CaState::Loss)
    }

    /// MDPS: the preferred path list L, best first.
    pub fn path_order(subflows: &[SubflowView]) -> Vec<usize> {
        let mut l: Vec<_> = Self::ranked(subflows).collect();
        l.sort_by_key(|&(i, s)| mdps_key(i, s));
        l.into_iter().map(|(i, _)| i).collect()
    }

    /// PBPD for a prioritised chunk: the first path of L whose cwnd is not full.
    pub fn priority_pick(subflows: &[SubflowView]) -> Decision {
        Self::ranked(subflows)
            .filter(|(_, s)| s.has_cwnd_room())
            .min_by_key(|&(i, s)| mdps_key(i, s))
            .map_or(Decision::Wait, |(i, _)| Decision::Send(i))
    }
}

impl Scheduler for PoMptcp {
    fn name(&self) -> &'static str {
        self.name
    }

    fn priority_dequeue(&self) -> bool {
        self.dequeue
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        if ctx.next_priority > 0 {
            return Self::priority_pick(ctx.subflows);
        }
        match &mut self.standard {
            Fallback::LowestRtt(s) => s.pick(ctx),
            Fallback::InOrder(s) => s.pick(ctx),
            Fallback::RoundRobin(s) => s.pick(ctx),
        }
    }

    fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        match &mut self.standard {
            Fallback::LowestRtt(s) => s.on_window_blocked(ctx),
            Fallback::InOrder(s) => s.on_window_blocked(ctx),
            Fallback::RoundRobin(s) => s.on_window_blocked(ctx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn over_round_robin_ordinary_data_takes_turns_but_priority_data_takes_the_best_path() {
        let mut s = PoMptcp::over_round_robin();
        assert_eq!(s.name(), "po_mptcp_rr");
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        let mut c = ctx(&subs);
        assert_eq!(s.pick(&c), Decision::Send(0), "round-robin starts with the first subflow");
        assert_eq!(s.pick(&c), Decision::Send(1));
        c.next_priority = 1;
        assert_eq!(s.pick(&c), Decision::Send(1));
        assert_eq!(s.pick(&c), Decision::Send(1), "priority data always on the best path");
    }

    #[test]
    fn over_in_order_ordinary_data_fills_the_first_subflow_but_priority_data_takes_the_fastest() {
        let mut s = PoMptcp::new(Standard::InOrder, true);
        assert_eq!((s.name(), s.priority_dequeue()), ("po_mptcp_in_order", true));
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(0), "ordinary data: index order, slow path first");
        assert_eq!(s.pick(&prio(&subs)), Decision::Send(1), "priority data: the lowest RTT");
        let subs = [sf(100, 10, 10), sf(10, 10, 0)];
        assert_eq!(s.pick(&ctx(&subs)), Decision::Send(1));
        let subs = [sf(100, 10, 0), sf(10, 10, 10)];
        assert_eq!(s.pick(&prio(&subs)), Decision::Send(0), "priority data walks down the ranking");
    }

    #[test]
    fn names_and_dequeue_flags() {
        for (name, dequeue) in [
            ("po_mptcp", true),
            ("po_mptcp_fifo", false),
            ("po_mptcp_in_order", true),
            ("po_mptcp_in_order_fifo", false),
            ("po_mptcp_rr", true),
            ("po_mptcp_rr_fifo", false),
        ] {
            let s = crate::sched::Sched::by_name(name).unwrap();
            assert_eq!((s.name(), s.priority_dequeue()), (name, dequeue));
        }
        assert!(PoMptcp::default().priority_dequeue(), "the paper's scheme dequeues important data first");
        assert!(!crate::sched::Sched::by_name("lowest_rtt").unwrap().priority_dequeue());
    }

    fn prio<'a>(subs: &'a [SubflowView]) -> SchedContext<'a> {
        let mut c = ctx(subs);
        c.next_priority = 1;
        c
    }

    #[test]
    fn priority_data_takes_the_best_path_then_walks_down_the_list() {
        let mut p = PoMptcp::default();
        let mut subs = [sf(50, 10, 0), sf(10, 10, 0), sf(30, 10, 0)];
        assert_eq!(PoMptcp::path_order(&subs), vec![1, 2, 0]);
        assert_eq!(p.pick(&prio(&subs)), Decision::Send(1));
        subs[1].in_flight = 10_000; // best path's cwnd full
        assert_eq!(p.pick(&prio(&subs)), Decision::Send(2));
        subs[2].in_flight = 5_000;
        subs[2].queued = 5_000; // queued data fills the window too
        assert_eq!(p.pick(&prio(&subs)), Decision::Send(0));
        subs[0].in_flight = 10_000;
        assert_eq!(p.pick(&prio(&subs)), Decision::Wait);
        // any priority above 0 counts
        subs[0].in_flight = 0;
        let mut c = prio(&subs);
        c.next_priority = 7;
        assert_eq!(p.pick(&c), Decision::Send(0));
    }

    #[test]
    fn equal_rtt_prefers_the_larger_window() {
        let mut p = PoMptcp::default();
        let subs = [sf(20, 10, 0), sf(20, 30, 0), sf(20, 30, 0), sf(40, 100, 0)];
        assert_eq!(PoMptcp::path_order(&subs), vec![1, 2, 0, 3]);
        assert_eq!(p.pick(&prio(&subs)), Decision::Send(1));
        // the standard scheduler breaks the same tie by index
        assert_eq!(p.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn unsampled_paths_rank_last() {
        let mut fresh = sf(1, 50, 0);
        fresh.srtt = None;
        let subs = [fresh, sf(300, 10, 0)];
        assert_eq!(PoMptcp::path_order(&subs), vec![1, 0]);
        assert_eq!(PoMptcp::priority_pick(&subs), Decision::Send(1));
    }

    #[test]
    fn failed_loss_state_and_backup_paths() {
        let mut p = PoMptcp::default();
        let mut lost = sf(5, 10, 0);
        lost.ca_state = CaState::Loss;
        let mut dead = sf(5, 10, 0);
        dead.usable = false;
        let mut backup = sf(5, 10, 0);
        backup.backup = true;
        let slow = sf(100, 10, 0);
        assert_eq!(PoMptcp::path_order(&[lost, dead, backup, slow]), vec![3]);
        assert_eq!(p.pick(&prio(&[lost, dead, backup, slow])), Decision::Send(3));
        // regular path merely full: wait, no backup
        let full = sf(100, 10, 10);
        assert_eq!(p.pick(&prio(&[lost, dead, backup, full])), Decision::Wait);
        // a regular subflow usable but in Loss keeps the backup idle (the shared rule)
        let mut slow_dead = slow;
        slow_dead.usable = false;
        assert_eq!(p.pick(&prio(&[lost, dead, backup, slow_dead])), Decision::Wait);
        // no regular subflow usable at all: the backup
        let mut lost_dead = lost;
        lost_dead.usable = false;
        assert_eq!(p.pick(&prio(&[lost_dead, dead, backup, slow_dead])), Decision::Send(2));
    }

    #[test]
    fn ordinary_data_and_blocking_behave_like_lowest_rtt() {
        let mut p = PoMptcp::default();
        let mut l = LowestRtt::new(true);
        let subs = [sf(100, 10, 5), sf(10, 10, 0)];
        let mut c = ctx(&subs);
        assert_eq!(p.pick(&c), l.pick(&c));
        c.hol_subflow = Some(0);
        let a = p.on_window_blocked(&c);
        assert_eq!(a, BlockedAction { reinject_on: Some(1), penalize: Some(0) });
        assert_eq!(a, l.on_window_blocked(&c));
    }

    mod props {
        use super::super::super::props::{context, scenario};
        use super::super::super::SchedContext;
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Ordinary data: the same decisions (and blocking actions) as lowest_rtt, over
            /// a run of contexts so the penalty timer is exercised too.
            #[test]
            fn ordinary_data_decides_like_lowest_rtt((subflows, conns) in scenario()) {
                let mut p = PoMptcp::default();
                let mut l = LowestRtt::new(true);
                for c in &conns {
                    let ctx = SchedContext { next_priority: 0, ..context(c, &subflows) };
                    prop_assert_eq!(p.pick(&ctx), l.pick(&ctx));
                    prop_assert_eq!(p.on_window_blocked(&ctx), l.on_window_blocked(&ctx));
                }
            }

            /// Priority data: the first path of the MDPS list with cwnd room.
            #[test]
            fn priority_data_takes_the_first_ranked_path_with_room((subflows, conns) in scenario()) {
                let mut p = PoMptcp::default();
                let ctx = SchedContext { next_priority: 1, ..context(&conns[0], &subflows) };
                let expect = PoMptcp::path_order(&subflows)
                    .into_iter()
                    .find(|&i| subflows[i].has_cwnd_room())
                    .map_or(Decision::Wait, Decision::Send);
                prop_assert_eq!(p.pick(&ctx), expect);
                // and it sends whenever the standard scheduler would
                let standard = LowestRtt::new(true).pick(&ctx);
                prop_assert_eq!(expect == Decision::Wait, standard == Decision::Wait);
            }
        }
    }
}
