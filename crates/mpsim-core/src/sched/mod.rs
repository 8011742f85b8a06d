//! Packet schedulers for Multipath TCP: which subflow carries the next chunk of data.
//!
//! A scheduler sees a read-only view of every subflow and of the connection's data, and
//! answers one question at a time: where the next chunk of new data goes (or wait), and what
//! to do when the receive window blocks new data (opportunistic retransmission and
//! penalisation). It never touches the subflows itself; the connection carries out its
//! decisions, so every scheduler works with every controller and is easy to test on
//! hand-built views. One file per scheduler, chosen by an enum so dispatch is static.

use crate::net::Feedback;
use crate::time::SimTime;
pub use crate::view::{backups_in_use, CaState, SubflowView};

/// What a scheduler may see of the connection.
#[derive(Clone, Copy, Debug)]
pub struct SchedContext<'a> {
    pub now: SimTime,
    pub subflows: &'a [SubflowView],
    /// Bytes written by the application and not yet given to any subflow.
    pub unscheduled: u64,
    /// Bytes the receiver's window still admits beyond what was scheduled.
    pub window_room: u64,
    /// Length of the next chunk (at most one MSS).
    pub next_len: u64,
    /// Priority the application gave the next chunk: 0 for ordinary data, higher for more
    /// important data (PO-MPTCP's priority flag is any value above 0).
    pub next_priority: u8,
    /// The slowest subflow carrying the oldest unacknowledged data (head of line). Filled in
    /// only for `on_window_blocked`; None in `pick`.
    pub hol_subflow: Option<usize>,
    /// Whether the head-of-line data was already sent on each subflow (bit i: subflow i);
    /// like `hol_subflow`, filled in only for `on_window_blocked`.
    pub hol_sent_on: u64,
    /// Bytes the receiver's window allows in total (its size, from the last DATA_ACK).
    pub send_window: u64,
    /// The subflows that may be available (bit i: subflow i): every subflow outside the mask
    /// is not (`SubflowView::available` is false), so a choice among available subflows may
    /// look at these only ([`lowest_rtt_available_among`]). All bits set when the caller
    /// does not keep track ([`ALL_MAYBE_AVAILABLE`]).
    pub maybe_available: u64,
}

/// `SchedContext::maybe_available` of a caller that does not keep track: every subflow may
/// be available.
pub const ALL_MAYBE_AVAILABLE: u64 = u64::MAX;

/// Where the next chunk of new data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Send(usize),
    /// Send nothing now; the connection asks again on the next ACK.
    Wait,
}

/// What to do when the receive window blocks new data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockedAction {
    /// Retransmit the head-of-line data on this subflow (opportunistic retransmission).
    pub reinject_on: Option<usize>,
    /// Halve the window of this subflow (penalisation of the slow path holding the head).
    pub penalize: Option<usize>,
}

/// What an acknowledgement told the sender, for schedulers that act on the receiver's
/// fields ([`crate::feedback`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckInfo {
    pub now: SimTime,
    /// The subflow the ACK arrived on.
    pub sub: usize,
    /// The receiver's feedback the ACK carries, if any.
    pub feedback: Option<Feedback>,
    /// The connection-level window the ACK advertises (awnd), bytes.
    pub window: u64,
}

/// How a scheduler is to be driven, as it declares once ([`Scheduler::paced`],
/// [`Scheduler::priority_dequeue`], [`Scheduler::sends_only_when_available`]): the connection
/// reads these before it first sends and keeps them, instead of asking on every ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Properties {
    pub paced: bool,
    pub priority_dequeue: bool,
    pub sends_only_when_available: bool,
    /// [`Scheduler::copies`] may ask for copies: asked for every chunk handed out. False for
    /// the built-in schedulers that keep the default (no copies), which are then not asked.
    pub sends_copies: bool,
    /// [`Scheduler::on_ack_info`] does something: called on every ACK. False for the
    /// built-in schedulers that keep the default (nothing).
    pub wants_ack_info: bool,
    /// `pick` is [`lowest_rtt_available_among`] of the views and the mask, reads nothing
    /// else of the context and changes nothing (`LowestRtt`): the connection works the
    /// answer out itself, without building a context and going through two calls for it.
    pub lowest_rtt_pick: bool,
}

/// A packet scheduler.
///
/// `paced`, `priority_dequeue` and `sends_only_when_available` are properties, not questions
/// about the moment: the connection asks them once, before it first sends, and never again, so
/// their answers must not change during a run. Their defaults (false) are the conservative
/// answers, right for any scheduler: a scheduler written in Python keeps them, except that it
/// is paced if it defines `wake_at`.
pub trait Scheduler {
    /// Short name, as used in scenario files.
    fn name(&self) -> &'static str;

    /// The subflow for the next chunk of new data, or wait.
    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision;

    /// Subflows that should also carry a copy of the chunk just sent on `chosen` (bit mask).
    /// A built-in scheduler that overrides this is listed in `Sched::properties`
    /// ([`Properties::sends_copies`]); a scheduler from outside is always asked.
    fn copies(&mut self, _ctx: &SchedContext<'_>, _chosen: usize) -> u64 {
        0
    }

    /// The receive window blocks new data while subflows have room.
    fn on_window_blocked(&mut self, _ctx: &SchedContext<'_>) -> BlockedAction {
        BlockedAction::default()
    }

    /// Whether the connection should hand out unscheduled prioritised data (priority above
    /// 0) before older ordinary data (a priority dequeue), rather than strictly in DSN order.
    /// Asked once ([`Properties`]).
    fn priority_dequeue(&self) -> bool {
        false
    }

    /// An ACK arrived (after the connection processed it). A built-in scheduler that
    /// overrides this is listed in `Sched::properties` ([`Properties::wants_ack_info`]); a
    /// scheduler from outside is always told.
    fn on_ack_info(&mut self, _info: &AckInfo) {}

    /// When the connection should ask again even if no ACK arrives (a paced scheduler's next
    /// sending time); None: on the next ACK.
    fn wake_at(&self) -> Option<SimTime> {
        None
    }

    /// A paced scheduler hands out at most one chunk per subflow at a time: the connection
    /// asks it again as soon as what it handed out has left, while it keeps handing out.
    /// Asked once ([`Properties`]).
    fn paced(&self) -> bool {
        false
    }

    /// `pick` sends only on an available subflow ([`SubflowView::available`]) and changes
    /// nothing when it waits: when no subflow is available the connection waits without
    /// asking (a pass that would only confirm the wait is skipped on every ACK). Asked once
    /// ([`Properties`]).
    fn sends_only_when_available(&self) -> bool {
        false
    }
}

/// Declares the built-in schedulers from one table: each entry names the module (one file
/// per scheduler) and type, the optional hooks it uses in brackets (`copies`: it overrides
/// [`Scheduler::copies`]; `ack_info`: it overrides [`Scheduler::on_ack_info`]; the
/// connection skips either hook for the others), then every scenario name it answers to, with
/// the constructor and the one-line description `mpsim list` shows. The table's order is the
/// listing's order. Dispatch stays static (one enum variant per type), plus a `Custom` slot
/// for a boxed implementation from outside the crate, which is always asked.
macro_rules! schedulers {
    ($($module:ident :: $ty:ident $([$($hook:ident),+])? { $($name:literal => $make:expr, $desc:literal;)+ })+) => {
        $(pub mod $module; pub use $module::$ty;)+

        /// The schedulers mpsim ships, plus one slot for a user implementation.
        pub enum Sched {
            $($ty($ty),)+
            /// A user-supplied scheduler; slower, dynamic dispatch.
            Custom(Box<dyn Scheduler + Send>),
        }

        /// Names and one-line descriptions of the built-in schedulers, for `mpsim list`.
        pub const SCHEDULERS: &[(&str, &str)] = &[$($(($name, $desc),)+)+];

        impl Sched {
            pub fn by_name(name: &str) -> Option<Sched> {
                match name {
                    $($($name => Some(Sched::$ty($make)),)+)+
                    _ => None,
                }
            }

            fn inner(&mut self) -> &mut dyn Scheduler {
                match self {
                    $(Sched::$ty(s) => s,)+
                    Sched::Custom(s) => s.as_mut(),
                }
            }

            pub fn name(&self) -> &'static str {
                match self {
                    $(Sched::$ty(s) => s.name(),)+
                    Sched::Custom(s) => s.name(),
                }
            }

            /// See [`Scheduler::priority_dequeue`].
            pub fn priority_dequeue(&self) -> bool {
                match self {
                    $(Sched::$ty(s) => s.priority_dequeue(),)+
                    Sched::Custom(s) => s.priority_dequeue(),
                }
            }

            /// The scheduler's state, written out (tests compare it before and after a call).
            #[cfg(test)]
            fn state_text(&self) -> String {
                match self {
                    $(Sched::$ty(s) => format!("{s:?}"),)+
                    Sched::Custom(_) => String::new(),
                }
            }

            /// See [`Properties`].
            pub fn properties(&self) -> Properties {
                let mut p = match self {
                    $(Sched::$ty(s) => Properties {
                        paced: s.paced(),
                        priority_dequeue: s.priority_dequeue(),
                        sends_only_when_available: s.sends_only_when_available(),
                        ..Properties::default()
                    },)+
                    Sched::Custom(s) => Properties {
                        paced: s.paced(),
                        priority_dequeue: s.priority_dequeue(),
                        sends_only_when_available: s.sends_only_when_available(),
                        ..Properties::default()
                    },
                };
                // the hooks each entry of the table declares (the test
                // `only_the_listed_schedulers_ask_for_copies_or_listen_to_acks` checks that
                // the others keep the defaults); one from outside is always asked
                (p.sends_copies, p.wants_ack_info) = match self {
                    $(Sched::$ty(_) => (uses_hook!(copies; $($($hook)+)?), uses_hook!(ack_info; $($($hook)+)?)),)+
                    Sched::Custom(_) => (true, true),
                };
                p.lowest_rtt_pick = matches!(self, Sched::LowestRtt(_));
                p
            }

            #[inline]
            pub fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
                match self {
                    $(Sched::$ty(s) => s.pick(ctx),)+
                    Sched::Custom(s) => s.pick(ctx),
                }
            }

            /// See [`Scheduler::copies`] (every chunk handed out: static dispatch).
            #[inline]
            pub fn copies(&mut self, ctx: &SchedContext<'_>, chosen: usize) -> u64 {
                match self {
                    $(Sched::$ty(s) => s.copies(ctx, chosen),)+
                    Sched::Custom(s) => s.copies(ctx, chosen),
                }
            }

            /// See [`Scheduler::on_ack_info`] (every ACK: static dispatch).
            #[inline]
            pub fn on_ack_info(&mut self, info: &AckInfo) {
                match self {
                    $(Sched::$ty(s) => s.on_ack_info(info),)+
                    Sched::Custom(s) => s.on_ack_info(info),
                }
            }

            /// See [`Scheduler::wake_at`].
            #[inline]
            pub fn wake_at(&self) -> Option<SimTime> {
                match self {
                    $(Sched::$ty(s) => s.wake_at(),)+
                    Sched::Custom(s) => s.wake_at(),
                }
            }

            /// See [`Scheduler::paced`].
            pub fn paced(&self) -> bool {
                match self {
                    $(Sched::$ty(s) => s.paced(),)+
                    Sched::Custom(s) => s.paced(),
                }
            }

            /// See [`Scheduler::sends_only_when_available`].
            pub fn sends_only_when_available(&self) -> bool {
                match self {
                    $(Sched::$ty(s) => s.sends_only_when_available(),)+
                    Sched::Custom(s) => s.sends_only_when_available(),
                }
            }
        }
    };
}

/// Whether a scheduler's list of hooks in the [`schedulers!`] table names `copies` (or
/// `ack_info`).
macro_rules! uses_hook {
    (copies; copies $($rest:ident)*) => { true };
    (ack_info; ack_info $($rest:ident)*) => { true };
    ($want:ident; $other:ident $($rest:ident)*) => { uses_hook!($want; $($rest)*) };
    ($want:ident;) => { false };
}

schedulers! {
    lowest_rtt::LowestRtt {
        "lowest_rtt" => LowestRtt::new(true),
            "default of the out-of-tree Linux MPTCP v0.9x: lowest-RTT subflow with cwnd room; opportunistic retransmission and penalisation";
        "lowest_rtt_plain" => LowestRtt::new(false),
            "lowest-RTT first without opportunistic retransmission or penalisation";
    }
    linux_upstream::LinuxUpstream {
        "linux_upstream" => LinuxUpstream::default(),
            "default of upstream Linux MPTCP (5.19-6.x): lowest queued bytes over smoothed pacing rate, 64 KB bursts per choice; no opportunistic retransmission or penalisation";
    }
    round_robin::RoundRobin {
        "round_robin" => RoundRobin::default(), "cycle over subflows with cwnd room, one segment each (Linux roundrobin)";
    }
    redundant::Redundant [copies] {
        "redundant" => Redundant, "every chunk on the lowest-RTT subflow and a copy on every other active subflow";
    }
    in_order::InOrder {
        "in_order" => InOrder,
            "the ns-2 MPTCP patch's scheduler: the first subflow (by index) with cwnd room, ignoring RTT";
    }
    single_path::SinglePath {
        "single_path" => SinglePath, "only the first subflow: plain TCP inside the multipath model, as a baseline";
    }
    blest::Blest {
        "blest" => Blest::default(),
            "BLEST: lowest-RTT, but wait for the fast subflow when a slow one would block the receive window";
    }
    ecf::Ecf {
        "ecf" => Ecf::default(), "ECF: lowest-RTT, but wait for the fast subflow when it would finish the queued data sooner";
    }
    otias::Otias {
        "otias" => Otias, "OTIAS: each chunk to the subflow where it would arrive first, queueing beyond cwnd";
    }
    dqs::Dqs {
        "dqs" => Dqs::new(DqsForm::Printed),
            "DQS: fill each subflow's window, no data held beyond it, in order of expected delivery time with retransmissions (eq. 9 as printed)";
        "dqs_exact" => Dqs::new(DqsForm::Exact), "DQS with the delivery time conditioned on success within three retransmissions";
        "dqs_backoff" => Dqs::new(DqsForm::Backoff), "DQS with the delivery time under exponential RTO backoff";
        "dqs_ahead" => Dqs::with_bound(DqsForm::Printed, QueueBound::Ahead),
            "DQS (eq. 9 as printed) whose subflow queues may hold one cwnd beyond what is in flight";
        "dqs_exact_ahead" => Dqs::with_bound(DqsForm::Exact, QueueBound::Ahead), "dqs_exact with queues one cwnd beyond the flight";
        "dqs_backoff_ahead" => Dqs::with_bound(DqsForm::Backoff, QueueBound::Ahead), "dqs_backoff with queues one cwnd beyond the flight";
        "dqs_round_robin" => Dqs::round_robin(),
            "control for DQS: its window-bounded subflow queues, subflows taken in turn instead of by expected delivery time";
    }
    po_mptcp::PoMptcp {
        "po_mptcp" => PoMptcp::default(),
            "PO-MPTCP: prioritised data first out of the send buffer, on the lowest-RTT (then largest-cwnd) subflow with room; other data as lowest_rtt";
        "po_mptcp_fifo" => PoMptcp::new(Standard::LowestRtt, false),
            "po_mptcp without the priority dequeue: the send buffer is handed out in DSN order";
        "po_mptcp_in_order" => PoMptcp::new(Standard::InOrder, true),
            "PO-MPTCP over the ns-2 patch's in_order scheduler for ordinary data (the paper's setting)";
        "po_mptcp_in_order_fifo" => PoMptcp::new(Standard::InOrder, false), "po_mptcp_in_order without the priority dequeue";
        "po_mptcp_rr" => PoMptcp::new(Standard::RoundRobin, true), "PO-MPTCP with round-robin as the standard scheduler for ordinary data";
        "po_mptcp_rr_fifo" => PoMptcp::new(Standard::RoundRobin, false), "po_mptcp_rr without the priority dequeue";
    }
    mptcp_rec::MptcpRec [ack_info] {
        "mptcp_rec" => MptcpRec::default(),
            "MPTCP-rec (seed 000): rates from the receiver's TCP emulation, paced per path; drops the slowest path when receive-buffer blocking is predicted";
    }
}

pub use dqs::{DqsForm, QueueBound};
pub use mptcp_rec::{PathEvent, PathEventKind, PcderConfig};
pub use po_mptcp::Standard;

impl Sched {
    pub fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        self.inner().on_window_blocked(ctx)
    }
}

/// The lowest-RTT available subflow (cwnd room) under the backup rule ([`backups_in_use`]).
pub fn lowest_rtt_available(subflows: &[SubflowView]) -> Option<usize> {
    let backups = backups_in_use(subflows);
    // one pass keeping the first smallest srtt (ties to the lower index); called on every
    // scheduling decision
    let mut best: Option<(crate::time::Dur, usize)> = None;
    for (i, s) in subflows.iter().enumerate() {
        if s.eligible(backups) && s.available() && best.is_none_or(|(b, _)| s.srtt_or_max() < b) {
            best = Some((s.srtt_or_max(), i));
        }
    }
    best.map(|(_, i)| i)
}

/// [`lowest_rtt_available`] looking first at the subflows that may be available only
/// (`maybe_available`, a superset of the available ones, bit i: subflow i), with the same
/// answer. An available regular subflow among them means that no backup is in use and that
/// every eligible available subflow is among them, visited in index order as the full scan
/// visits them; without one the full scan decides (backups, or nothing available).
#[inline]
pub fn lowest_rtt_available_among(subflows: &[SubflowView], maybe_available: u64) -> Option<usize> {
    let mut best: Option<(crate::time::Dur, usize)> = None;
    let mut maybe = maybe_available;
    while maybe != 0 {
        let i = maybe.trailing_zeros() as usize;
        maybe &= maybe - 1;
        let Some(s) = subflows.get(i) else { break };
        if !s.backup && s.available() && best.is_none_or(|(b, _)| s.srtt_or_max() < b) {
            best = Some((s.srtt_or_max(), i));
        }
    }
    let pick = match best {
        Some((_, i)) => Some(i),
        None => lowest_rtt_available(subflows),
    };
    debug_assert_eq!(pick, lowest_rtt_available(subflows));
    pick
}

/// The fastest subflow (smallest srtt, unsampled last, ties to the lower index) among usable
/// regular subflows, whether or not it has cwnd room: BLEST's and ECF's `x_f`.
pub fn fastest_usable_regular(subflows: &[SubflowView]) -> Option<usize> {
    subflows.iter().enumerate().filter(|(_, s)| s.usable && !s.backup).min_by_key(|(i, s)| (s.srtt_or_max(), *i)).map(|(i, _)| i)
}

/// The case BLEST and ECF act on: the default (lowest-RTT available) subflow `slow` is slower
/// than the fastest usable regular subflow `fast`, and both have an RTT sample. Otherwise
/// returns the decision to take as it is (the default's choice, or wait).
pub fn slower_than_fastest(subflows: &[SubflowView]) -> Result<(usize, usize), Decision> {
    let Some(slow) = lowest_rtt_available(subflows) else {
        return Err(Decision::Wait);
    };
    let Some(fast) = fastest_usable_regular(subflows) else {
        return Err(Decision::Send(slow));
    };
    let (s, f) = (&subflows[slow], &subflows[fast]);
    match (s.srtt, f.srtt) {
        (Some(srtt_s), Some(srtt_f)) if fast != slow && srtt_s > srtt_f => Ok((slow, fast)),
        _ => Err(Decision::Send(slow)),
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;
    use crate::time::Dur;

    /// A usable regular subflow with the given srtt (ms), cwnd and in-flight (segments).
    pub fn sf(srtt_ms: u64, cwnd: u64, in_flight: u64) -> SubflowView {
        const MSS: u64 = 1000;
        SubflowView {
            srtt: Some(Dur::from_millis(srtt_ms)),
            latest_rtt: Some(Dur::from_millis(srtt_ms)),
            rtt_samples: 10,
            rttvar: Dur::from_millis(srtt_ms / 4),
            min_rtt: Some(Dur::from_millis(srtt_ms)),
            rto: Dur::from_millis(200),
            cwnd: cwnd * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
            in_flight: in_flight * MSS,
            queued: 0,
            ca_state: CaState::Open,
            backup: false,
            usable: true,
            segments_sent: 100,
            retransmits: 0,
            pacing_rate: None,
        }
    }

    pub fn ctx<'a>(subflows: &'a [SubflowView]) -> SchedContext<'a> {
        SchedContext {
            now: SimTime::ZERO,
            subflows,
            unscheduled: 1 << 20,
            window_room: 1 << 20,
            next_len: 1000,
            next_priority: 0,
            hol_subflow: None,
            hol_sent_on: 0,
            send_window: 1 << 20,
            maybe_available: ALL_MAYBE_AVAILABLE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    /// One to four subflows with random RTTs, windows, flight, states and marks.
    fn random_views(rng: &mut crate::rng::Rng) -> Vec<SubflowView> {
        let n = 1 + rng.below(4) as usize;
        (0..n)
            .map(|_| {
                let mut v = sf(1 + rng.below(200), 1 + rng.below(20), rng.below(22));
                v.usable = rng.below(5) > 0;
                v.backup = rng.below(4) == 0;
                v.ca_state = [CaState::Open, CaState::Recovery, CaState::Loss][rng.below(3) as usize];
                v
            })
            .collect()
    }

    #[test]
    fn the_pick_among_the_subflows_that_may_be_available_is_the_full_scans() {
        // one to eight random views, and masks that hold every available subflow plus random
        // others (bits beyond the last subflow too): the answer is the full scan's
        let mut rng = crate::rng::Rng::from_seed(32);
        let mut found = [0u32; 2];
        for _ in 0..20_000 {
            let mut views = random_views(&mut rng);
            views.extend(random_views(&mut rng));
            let available = views.iter().enumerate().filter(|(_, v)| v.available()).fold(0u64, |m, (i, _)| m | 1 << i);
            let extra = rng.next_u64() & rng.next_u64();
            let full = lowest_rtt_available(&views);
            assert_eq!(lowest_rtt_available_among(&views, available | extra), full, "{views:?}, mask {:b}", available | extra);
            assert_eq!(lowest_rtt_available_among(&views, ALL_MAYBE_AVAILABLE), full);
            found[full.is_some() as usize] += 1;
        }
        // both outcomes are exercised
        assert!(found.iter().all(|&n| n > 1000), "{found:?}");
    }

    #[test]
    fn a_scheduler_said_to_pick_the_lowest_rtt_picks_it_and_changes_nothing() {
        // the connection answers for the schedulers whose properties say `lowest_rtt_pick`
        // without asking them: their pick must be that answer, under any context, and must
        // leave them as they were
        let mut rng = crate::rng::Rng::from_seed(33);
        let mut claimed = 0;
        for &(name, _) in SCHEDULERS {
            let mut s = Sched::by_name(name).unwrap();
            if !s.properties().lowest_rtt_pick {
                continue;
            }
            claimed += 1;
            for k in 0..5000 {
                let views = random_views(&mut rng);
                let available = views.iter().enumerate().filter(|(_, v)| v.available()).fold(0u64, |m, (i, _)| m | 1 << i);
                let mut c = ctx(&views);
                c.now = SimTime(k * 1_000_000);
                c.maybe_available = available | (rng.next_u64() & rng.next_u64());
                c.unscheduled = rng.below(1 << 20);
                c.window_room = rng.below(1 << 20);
                c.next_priority = rng.below(3) as u8;
                let before = s.state_text();
                let want = match lowest_rtt_available_among(&views, c.maybe_available) {
                    Some(i) => Decision::Send(i),
                    None => Decision::Wait,
                };
                assert_eq!(s.pick(&c), want, "{name}: {views:?}");
                assert_eq!(s.state_text(), before, "{name} changed by its pick");
            }
        }
        assert_eq!(claimed, 2);
    }

    #[test]
    fn a_scheduler_that_sends_only_when_available_waits_when_none_is() {
        // the connection skips asking such a scheduler when no subflow is available: its
        // picks must never name an unavailable subflow, and with none available it waits
        let mut rng = crate::rng::Rng::from_seed(11);
        let mut claimed = 0;
        for &(name, _) in SCHEDULERS {
            let mut s = Sched::by_name(name).unwrap();
            if !s.sends_only_when_available() {
                continue;
            }
            claimed += 1;
            for _ in 0..2000 {
                let subs = random_views(&mut rng);
                if let Decision::Send(i) = s.pick(&ctx(&subs)) {
                    assert!(subs[i].available(), "{name} sent on unavailable subflow {i}: {subs:?}");
                }
            }
        }
        assert!(claimed > 0);
    }

    #[test]
    fn only_the_listed_schedulers_ask_for_copies_or_listen_to_acks() {
        // the connection skips `copies` and `on_ack_info` for the schedulers whose properties
        // say so: for those, the defaults (no copies, nothing done) must be what they do
        let mut rng = crate::rng::Rng::from_seed(12);
        let (mut copying, mut listening) = (0, 0);
        for &(name, _) in SCHEDULERS {
            let mut s = Sched::by_name(name).unwrap();
            let p = s.properties();
            copying += p.sends_copies as usize;
            listening += p.wants_ack_info as usize;
            for k in 0..2000 {
                let subs = random_views(&mut rng);
                let n = subs.len();
                let mut c = ctx(&subs);
                c.now = SimTime(k * 1_000_000);
                if let Decision::Send(i) = s.pick(&c) {
                    if !p.sends_copies {
                        assert_eq!(s.copies(&c, i), 0, "{name} asks for copies");
                    }
                }
                if !p.wants_ack_info {
                    let before = s.state_text();
                    let feedback = (rng.below(2) == 0).then(|| crate::net::Feedback {
                        stamp: c.now,
                        path: rng.below(n as u64) as u8,
                        rate_bps: 1e6 * (1 + rng.below(100)) as f64,
                    });
                    s.on_ack_info(&AckInfo { now: c.now, sub: rng.below(n as u64) as usize, feedback, window: rng.below(1 << 20) });
                    assert_eq!(s.state_text(), before, "{name} acts on ACKs");
                }
            }
        }
        assert_eq!((copying, listening), (1, 1));
    }

    #[test]
    fn lowest_rtt_prefers_fast_then_falls_back_when_full() {
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        assert_eq!(lowest_rtt_available(&subs), Some(1));
        let subs = [sf(100, 10, 0), sf(10, 10, 10)];
        assert_eq!(lowest_rtt_available(&subs), Some(0));
        let subs = [sf(100, 10, 10), sf(10, 10, 10)];
        assert_eq!(lowest_rtt_available(&subs), None);
    }

    #[test]
    fn backups_only_when_no_regular_subflow_is_usable() {
        let mut backup = sf(5, 10, 0);
        backup.backup = true;
        // regular subflow merely cwnd-limited: wait rather than use the backup
        assert_eq!(lowest_rtt_available(&[sf(50, 10, 10), backup]), None);
        let mut failed = sf(50, 10, 0);
        failed.usable = false;
        assert_eq!(lowest_rtt_available(&[failed, backup]), Some(1));
    }

    #[test]
    fn loss_state_and_failed_subflows_are_unavailable() {
        let mut s = sf(10, 10, 0);
        s.ca_state = CaState::Loss;
        assert!(!s.available());
        let mut s = sf(10, 10, 0);
        s.usable = false;
        assert!(!s.available());
    }
}

#[cfg(test)]
pub(crate) mod props {
    use super::*;
    use crate::time::Dur;
    use proptest::prelude::*;

    fn ca_state() -> impl Strategy<Value = CaState> {
        prop_oneof![Just(CaState::Open), Just(CaState::Recovery), Just(CaState::Loss)]
    }

    prop_compose! {
        pub(crate) fn view()(
            srtt_us in proptest::option::weighted(0.9, 100u64..500_000),
            rttvar_us in 0u64..200_000,
            min_frac in proptest::option::of(1u64..=100),
            rto_ms in 200u64..3000,
            mss in prop_oneof![Just(1000u64), Just(1460u64)],
            cwnd_seg in 1u64..60,
            ssthresh_seg in proptest::option::of(2u64..100),
            in_flight_seg in 0u64..80,
            queued_seg in 0u64..300,
            ca in ca_state(),
            backup in proptest::bool::weighted(0.2),
            usable in proptest::bool::weighted(0.8),
            sent in 0u64..10_000,
            retr in 0u64..100,
        ) -> SubflowView {
            let srtt = srtt_us.map(Dur::from_micros);
            SubflowView {
                srtt,
                latest_rtt: srtt,
                rtt_samples: srtt.map_or(0, |_| 1),
                rttvar: Dur::from_micros(rttvar_us),
                min_rtt: srtt.and_then(|s| min_frac.map(|f| Dur(s.0 * f / 100))),
                rto: Dur::from_millis(rto_ms),
                cwnd: cwnd_seg * mss,
                ssthresh: ssthresh_seg.map_or(u64::MAX, |s| s * mss),
                mss,
                in_flight: in_flight_seg * mss,
                queued: queued_seg * mss,
                ca_state: ca,
                backup,
                usable,
                segments_sent: sent,
                retransmits: retr.min(sent),
                pacing_rate: None,
            }
        }
    }

    /// The connection-level part of a context (everything but the subflows).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Conn {
        now_ms: u64,
        unscheduled: u64,
        window_room: u64,
        next_len: u64,
        hol_subflow: Option<usize>,
        hol_sent_on: u64,
        send_window: u64,
    }

    prop_compose! {
        pub(crate) fn conn(n: usize)(
            now_ms in 0u64..100_000,
            unscheduled in 1u64..10_000_000,
            window_room in 0u64..10_000_000,
            next_len in 1u64..=1000,
            hol_subflow in proptest::option::of(0..n),
            hol_sent_on in 0u64..(1 << n),
            send_window in 0u64..10_000_000,
        ) -> Conn {
            Conn { now_ms, unscheduled, window_room, next_len, hol_subflow, hol_sent_on, send_window }
        }
    }

    pub(crate) fn context<'a>(c: &Conn, subflows: &'a [SubflowView]) -> SchedContext<'a> {
        SchedContext {
            now: SimTime(Dur::from_millis(c.now_ms).0),
            subflows,
            unscheduled: c.unscheduled,
            window_room: c.window_room,
            next_len: c.next_len,
            next_priority: (c.next_len % 3) as u8,
            hol_subflow: c.hol_subflow,
            hol_sent_on: c.hol_sent_on,
            send_window: c.send_window,
            maybe_available: ALL_MAYBE_AVAILABLE,
        }
    }

    /// Subflow views and a few successive connection states over them.
    pub(crate) fn scenario() -> impl Strategy<Value = (Vec<SubflowView>, Vec<Conn>)> {
        (1usize..=4).prop_flat_map(|n| (proptest::collection::vec(view(), n), proptest::collection::vec(conn(n), 1..6)))
    }

    fn check(name: &str, subflows: &[SubflowView], next_len: u64, d: Decision) -> Result<(), TestCaseError> {
        if let Decision::Send(i) = d {
            prop_assert!(i < subflows.len(), "{name}: Send({i}) out of range");
            let s = &subflows[i];
            prop_assert!(s.usable, "{name}: Send({i}) on an unusable subflow");
            if name == "otias" {
                let regular_usable = subflows.iter().any(|s| s.usable && !s.backup);
                prop_assert!(!(s.backup && regular_usable), "otias: backup chosen while a regular subflow is usable");
            } else if name.starts_with("dqs") {
                // DQS keeps what it dispatched within the window; the `_ahead` variants fill
                // the unsent queue up to one window whatever is in flight
                prop_assert!(s.ca_state != CaState::Loss, "{name}: Send({i}) in the Loss state");
                prop_assert!(s.queued + next_len <= s.cwnd, "{name}: Send({i}) with a full queue");
                if !name.ends_with("_ahead") {
                    prop_assert!(s.in_flight + s.queued + next_len <= s.cwnd, "{name}: Send({i}) beyond the window");
                }
                let regular_usable = subflows.iter().any(|s| s.usable && !s.backup && s.ca_state != CaState::Loss);
                prop_assert!(!(s.backup && regular_usable), "{name}: backup chosen while a regular subflow is usable");
            } else if name == "linux_upstream" {
                // upstream fills the send buffer, not only the window
                prop_assert!(linux_upstream::sndbuf_room(s), "{name}: Send({i}) with a full send buffer");
                prop_assert!(s.eligible(backups_in_use(subflows)), "{name}: backup chosen while a regular subflow is usable");
            } else {
                prop_assert!(s.has_cwnd_room(), "{name}: Send({i}) without cwnd room");
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_scheduler_picks_a_valid_subflow_deterministically((subflows, conns) in scenario()) {
            for &(name, _) in SCHEDULERS {
                let mut a = Sched::by_name(name).expect("listed scheduler");
                let mut b = Sched::by_name(name).expect("listed scheduler");
                for (step, c) in conns.iter().enumerate() {
                    let ctx = context(c, &subflows);
                    // a fresh scheduler decides the same way twice
                    let fresh1 = Sched::by_name(name).unwrap().pick(&ctx);
                    let fresh2 = Sched::by_name(name).unwrap().pick(&ctx);
                    prop_assert_eq!(fresh1, fresh2, "{} not deterministic", name);
                    // and two instances fed the same history stay in step
                    let (da, db) = (a.pick(&ctx), b.pick(&ctx));
                    prop_assert_eq!(da, db, "{} diverged at step {}", name, step);
                    check(name, &subflows, c.next_len, da)?;
                    if step % 2 == 1 {
                        let (xa, xb) = (a.on_window_blocked(&ctx), b.on_window_blocked(&ctx));
                        prop_assert_eq!(xa, xb);
                        prop_assert!(xa.reinject_on.is_none_or(|i| i < subflows.len() && subflows[i].usable));
                        prop_assert!(xa.penalize.is_none_or(|i| i < subflows.len()));
                    }
                }
            }
        }
    }
}
