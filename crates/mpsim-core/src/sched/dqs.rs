//! DQS, Double-Queue Scheduling with the send window (Huang & Zhang; seed 001,
//! ALGORITHMS.md §8).
//!
//! DQS keeps two kinds of queue at the sender: one connection-level *data queue* of numbered,
//! equal-sized packets, and one *sub-path queue* per subflow. It ranks the subflows by the
//! expected time `T_i` a packet needs to reach the receiver on them, retransmissions
//! included, and fills the sub-path queues in that order, each with as many packets as its
//! window holds. When a subflow fails or times out, its unsent packets go back to the data
//! queue and are handed out again ("re-scheduling").
//!
//! In mpsim the connection's unscheduled data is the data queue and a subflow's unsent
//! queue (`queued`) is its sub-path queue; the connection asks for one chunk at a time, so
//! DQS answers each request with the best-ranked subflow whose sub-path queue still has room.
//! Re-scheduling needs nothing here: on a timeout the connection takes the subflow's unsent
//! queue back and schedules it again, for every scheduler. Under the paper's queue bound
//! that queue is nearly always empty (what is dispatched fits the window and leaves at once),
//! so re-scheduling matters mostly with the `_ahead` bound; the test
//! `dqs_reschedules_the_queue_of_a_subflow_that_fails` fails for `dqs_ahead` without it.
//!
//! The estimate, per subflow `i`:
//! * `RTT_i ← β·RTT_i + (1−β)·rtt_i` with β = 0.75, from the subflow's RTT samples; the
//!   first sample sets `RTT_i`. The scheduler keeps this average itself (it is not the RFC
//!   6298 srtt, which uses 7/8).
//! * `FT_i = RTT_i / 2`, the one-way (forward) delay.
//! * `l_i` = retransmitted / sent segments ([`SubflowView::loss_estimate`]).
//! * `RTO_i` = the subflow's current retransmission timeout.
//! * `T_i` in one of three forms (m = 3 retransmissions at most), selected by name:
//!   - `dqs`: eq. (9) exactly as printed, `(1−l⁴)·FT + (l+l²+l³−3l⁴)·RTO`;
//!   - `dqs_exact`: the delay expected when the packet gets through within three
//!     retransmissions, `FT + RTO·(l+l²+l³−3l⁴)/(1−l⁴)`, computed as the equal
//!     `FT + RTO·(l+2l²+3l³)/(1+l+l²+l³)` so it stays finite at `l = 1`;
//!   - `dqs_backoff`: as eq. (9) but with RFC 6298 exponential backoff, the k-th
//!     retransmission arriving after `(2^k−1)·RTO + FT`:
//!     `(1−l⁴)·FT + (l+2l²+4l³−7l⁴)·RTO`.
//!
//! Choices made for this simulator:
//! * **RTT samples.** The view shows the latest sample and the number taken so far. When the
//!   count has grown by `k` since the last call, the average is updated as if all `k` unseen
//!   samples had equalled the latest one: `RTT ← β^k·RTT + (1−β^k)·rtt` (for `k = 1`,
//!   exactly eq. (2)). Samples can arrive while the scheduler is not asked (no new data, or
//!   the receive window blocks), and this keeps the weight of old history per sample as the
//!   paper intends. The average is kept per subflow index and grown as subflows appear; if
//!   a subflow's count ever goes down (a new subflow in the same slot), its average restarts.
//! * **No RTT sample.** A subflow with no sample yet is ranked with its RTO in place of
//!   `RTT_i`, a pessimistic guess that still lets it be tried when the sampled subflows are
//!   full (skipping it would leave it unsampled for ever).
//! * **Sub-path queue size.** "The number of dispatched packets is equal to the number of
//!   receive window" (`n_i = w_i`), "without data accumulation at the sender"; we read `w_i`
//!   as the subflow's congestion window (the title says send window). Two bounds, selected
//!   by name:
//!   - the paper's (`dqs`, `dqs_exact`, `dqs_backoff`): what is dispatched and not yet
//!     acknowledged fits the window, `in_flight + queued + next_len ≤ cwnd`, so nothing
//!     waits in a sub-path queue that the window could not send at once;
//!   - one window ahead (`dqs_ahead`, eq. (9) as printed): the unsent bytes alone fit the
//!     window, `queued + next_len ≤ cwnd`, whatever is in flight; the queue may hold a
//!     whole window beyond the flight, so DQS can choose a subflow whose window is
//!     momentarily full and have its next window ready.
//! * **Candidates.** Usable subflows not in the Loss state (after a timeout the window is
//!   rebuilt and retransmissions go first; the connection has just taken their queue back).
//!   Backup subflows only under the backup rule every scheduler shares
//!   ([`backups_in_use`]: no regular subflow usable); a regular subflow that is merely full
//!   or in Loss makes DQS wait.
//! * **Order.** Ascending `T_i`, ties to the lower index; the chunk goes to the first
//!   candidate with queue room, or DQS waits.
//! * The loss estimate counts every retransmission, including spurious ones, and is clamped
//!   to [0, 1]. Note that the printed eq. (9) and the backoff form are truncated sums whose
//!   weights add up to `1 − l⁴`: they stop growing around `l ≈ 0.6` and fall to 0 at `l = 1`,
//!   so a path that loses nearly everything would rank first. `dqs_exact` does not have this
//!   flaw (it tends to `FT + 1.5·RTO`). We keep the printed form as the default, as the
//!   paper uses it; such loss rates are far outside the regime it was designed for.
//! * **A control without the ranking.** `dqs_round_robin` keeps the paper's window-bounded
//!   sub-path queues and candidate rule but takes the candidates in turn, like
//!   `round_robin`, instead of by `T_i`. The seed-001 reproduction runs it to tell what the
//!   ranking itself contributes from what the queue bound does.
//! * There is no receive-buffer optimisation: the paper addresses receive-buffer blocking by
//!   the choice of path alone, so when the receive window blocks, DQS does nothing special.

use super::{backups_in_use, Decision, SchedContext, Scheduler, SubflowView};
use crate::time::Dur;
use crate::view::CaState;

/// Weight of the old average in `RTT_i ← β·RTT_i + (1−β)·rtt_i`.
pub const BETA: f64 = 0.75;

/// Which expression of the expected delivery time `T_i` DQS ranks subflows by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DqsForm {
    /// Eq. (9) as printed: `(1−l⁴)·FT + (l+l²+l³−3l⁴)·RTO`.
    Printed,
    /// Conditioned on delivery within three retransmissions:
    /// `FT + RTO·(l+l²+l³−3l⁴)/(1−l⁴)`.
    Exact,
    /// Exponential backoff: `(1−l⁴)·FT + (l+2l²+4l³−7l⁴)·RTO`.
    Backoff,
}

impl DqsForm {
    /// Expected time for a packet to reach the receiver (same unit as the arguments), given
    /// the forward delay `ft`, the retransmission timeout `rto` and the loss rate `l`.
    pub fn expected_delivery(self, ft: f64, rto: f64, l: f64) -> f64 {
        let l = if l.is_nan() { 0.0 } else { l.clamp(0.0, 1.0) };
        let (l2, l3) = (l * l, l * l * l);
        let l4 = l2 * l2;
        match self {
            DqsForm::Printed => (1.0 - l4) * ft + (l + l2 + l3 - 3.0 * l4) * rto,
            // (1−l⁴) = (1−l)(1+l+l²+l³) and (l+l²+l³−3l⁴) = (1−l)(l+2l²+3l³)
            DqsForm::Exact => ft + rto * (l + 2.0 * l2 + 3.0 * l3) / (1.0 + l + l2 + l3),
            DqsForm::Backoff => (1.0 - l4) * ft + (l + 2.0 * l2 + 4.0 * l3 - 7.0 * l4) * rto,
        }
    }
}

/// One subflow's RTT average as DQS keeps it.
#[derive(Clone, Copy, Debug, Default)]
struct RttAvg {
    /// β-weighted average, nanoseconds; None before the first sample.
    avg_ns: Option<f64>,
    /// The subflow's sample count when last seen.
    seen: u64,
}

/// How much a sub-path queue may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueBound {
    /// The paper's "without data accumulation at the sender": in flight plus queued within
    /// the window.
    Window,
    /// Queued alone within the window: up to one window beyond what is in flight.
    Ahead,
}

/// How DQS orders the candidate subflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    /// The paper's: ascending expected delivery time `T_i`.
    ExpectedDelivery,
    /// A control with the ranking switched off: candidates in turn, starting after the one
    /// served last.
    RoundRobin,
}

#[derive(Clone, Debug)]
pub struct Dqs {
    pub form: DqsForm,
    pub bound: QueueBound,
    pub ranking: Ranking,
    rtt: Vec<RttAvg>,
    /// With [`Ranking::RoundRobin`]: the subflow after the one served last.
    next: usize,
}

impl Dqs {
    /// DQS with the paper's queue bound.
    pub fn new(form: DqsForm) -> Dqs {
        Dqs::with_bound(form, QueueBound::Window)
    }

    /// DQS with the given queue bound.
    pub fn with_bound(form: DqsForm, bound: QueueBound) -> Dqs {
        Dqs { form, bound, ranking: Ranking::ExpectedDelivery, rtt: Vec::new(), next: 0 }
    }

    /// The paper's queue bound and candidates with the candidates taken in turn (a control).
    pub fn round_robin() -> Dqs {
        Dqs { ranking: Ranking::RoundRobin, ..Dqs::new(DqsForm::Printed) }
    }

    /// The β-weighted RTT average of subflow `i`, if it has had a sample.
    pub fn rtt_average(&self, i: usize) -> Option<Dur> {
        self.rtt.get(i).and_then(|r| r.avg_ns).map(|ns| Dur(ns.round() as u64))
    }

    /// Folds the samples taken since the last call into the averages.
    fn observe(&mut self, subflows: &[SubflowView]) {
        if self.rtt.len() < subflows.len() {
            self.rtt.resize(subflows.len(), RttAvg::default());
        }
        for (r, s) in self.rtt.iter_mut().zip(subflows) {
            if s.rtt_samples < r.seen {
                *r = RttAvg::default();
            }
            let new = s.rtt_samples - r.seen;
            let Some(latest) = s.latest_rtt.filter(|_| new > 0) else {
                continue;
            };
            let sample = latest.0 as f64;
            r.avg_ns = Some(match r.avg_ns {
                None => sample,
                Some(avg) => {
                    let keep = BETA.powi(new.min(1000) as i32);
                    keep * avg + (1.0 - keep) * sample
                }
            });
            r.seen = s.rtt_samples;
        }
    }

    /// `T_i` of subflow `i` (nanoseconds), from the current averages.
    pub fn expected_delivery(&self, i: usize, s: &SubflowView) -> f64 {
        let rto = s.rto.0 as f64;
        let rtt = self.rtt.get(i).and_then(|r| r.avg_ns).unwrap_or(rto);
        self.form.expected_delivery(rtt / 2.0, rto, s.loss_estimate())
    }

    /// The sub-path queue of `s` can take a chunk of `len` bytes under `bound`.
    pub fn queue_has_room(bound: QueueBound, s: &SubflowView, len: u64) -> bool {
        let held = match bound {
            QueueBound::Window => s.queued.saturating_add(s.in_flight),
            QueueBound::Ahead => s.queued,
        };
        held.saturating_add(len) <= s.cwnd
    }

    fn candidate(s: &SubflowView) -> bool {
        s.usable && s.ca_state != CaState::Loss
    }
}

impl Scheduler for Dqs {
    fn name(&self) -> &'static str {
        if self.ranking == Ranking::RoundRobin {
            return "dqs_round_robin";
        }
        match (self.form, self.bound) {
            (DqsForm::Printed, QueueBound::Window) => "dqs",
            (DqsForm::Exact, QueueBound::Window) => "dqs_exact",
            (DqsForm::Backoff, QueueBound::Window) => "dqs_backoff",
            (DqsForm::Printed, QueueBound::Ahead) => "dqs_ahead",
            (DqsForm::Exact, QueueBound::Ahead) => "dqs_exact_ahead",
            (DqsForm::Backoff, QueueBound::Ahead) => "dqs_backoff_ahead",
        }
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        self.observe(ctx.subflows);
        let backups = backups_in_use(ctx.subflows);
        let bound = self.bound;
        let room = |s: &SubflowView| s.eligible(backups) && Self::candidate(s) && Self::queue_has_room(bound, s, ctx.next_len);
        if self.ranking == Ranking::RoundRobin {
            let n = ctx.subflows.len();
            return match (0..n).map(|k| (self.next + k) % n).find(|&i| room(&ctx.subflows[i])) {
                Some(i) => {
                    self.next = (i + 1) % n;
                    Decision::Send(i)
                }
                None => Decision::Wait,
            };
        }
        ctx.subflows
            .iter()
            .enumerate()
            .filter(|(_, s)| room(s))
            .map(|(i, s)| (self.expected_delivery(i, s), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map_or(Decision::Wait, |(_, i)| Decision::Send(i))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    const MSS: u64 = 1000;

    fn ms(x: f64) -> f64 {
        x * 1e6
    }

    fn round4(x_ns: f64) -> f64 {
        (x_ns / 1e6 * 1e4).round() / 1e4
    }

    #[test]
    fn delivery_time_forms_on_the_spec_example() {
        // l = 0.2 %, FT = 10 ms, RTO = 200 ms
        let (ft, rto, l) = (ms(10.0), ms(200.0), 0.002);
        assert_eq!(round4(DqsForm::Printed.expected_delivery(ft, rto, l)), 10.4008);
        assert_eq!(round4(DqsForm::Exact.expected_delivery(ft, rto, l)), 10.4008);
        // the untruncated geometric expectation FT + RTO·l/(1−l) agrees
        assert_eq!(round4(ft + rto * l / (1.0 - l)), 10.4008);
        // with exponential backoff the second and third retransmissions cost 3 and 7 RTOs:
        // 10 + 200·(0.002 + 2·0.002² + 4·0.002³ − 7·0.002⁴) = 10.4016 ms
        assert_eq!(round4(DqsForm::Backoff.expected_delivery(ft, rto, l)), 10.4016);
    }

    #[test]
    fn delivery_time_forms_on_hand_values() {
        let (ft, rto) = (ms(10.0), ms(200.0));
        for form in [DqsForm::Printed, DqsForm::Exact, DqsForm::Backoff] {
            // no loss: just the forward delay
            assert_eq!(form.expected_delivery(ft, rto, 0.0), ft);
        }
        // l = 0.1: 0.9999·10 + (0.1 + 0.01 + 0.001 − 0.0003)·200 = 9.999 + 22.14
        assert_eq!(round4(DqsForm::Printed.expected_delivery(ft, rto, 0.1)), 32.139);
        // 10 + 200·0.123/1.111
        assert_eq!(round4(DqsForm::Exact.expected_delivery(ft, rto, 0.1)), 32.1422);
        // 9.999 + (0.1 + 0.02 + 0.004 − 0.0007)·200
        assert_eq!(round4(DqsForm::Backoff.expected_delivery(ft, rto, 0.1)), 34.659);
        // the exact form equals its printed-in-the-spec expression below l = 1
        let l: f64 = 0.3;
        let spec = ft + rto * (l + l.powi(2) + l.powi(3) - 3.0 * l.powi(4)) / (1.0 - l.powi(4));
        assert!((DqsForm::Exact.expected_delivery(ft, rto, l) - spec).abs() < 1e-3);
        // at l = 1 the truncated sums vanish; the conditioned form tends to FT + 1.5·RTO
        assert_eq!(DqsForm::Printed.expected_delivery(ft, rto, 1.0), 0.0);
        assert_eq!(DqsForm::Backoff.expected_delivery(ft, rto, 1.0), 0.0);
        assert_eq!(DqsForm::Exact.expected_delivery(ft, rto, 1.0), ft + 1.5 * rto);
    }

    #[test]
    fn names_select_the_forms() {
        let forms = [("dqs", DqsForm::Printed), ("dqs_exact", DqsForm::Exact), ("dqs_backoff", DqsForm::Backoff)];
        for (name, form) in forms {
            assert_eq!(Dqs::new(form).name(), name);
            assert_eq!(super::super::Sched::by_name(name).map(|s| s.name()), Some(name));
        }
        assert_eq!(Dqs::with_bound(DqsForm::Printed, QueueBound::Ahead).name(), "dqs_ahead");
        assert_eq!(super::super::Sched::by_name("dqs_ahead").map(|s| s.name()), Some("dqs_ahead"));
    }

    #[test]
    fn the_round_robin_control_takes_turns_within_the_window_bound() {
        let mut d = Dqs::round_robin();
        assert_eq!(d.name(), "dqs_round_robin");
        assert_eq!(super::super::Sched::by_name("dqs_round_robin").map(|s| s.name()), Some("dqs_round_robin"));
        // the ranking would always pick subflow 2 (lowest RTT): the control takes turns
        let subs = [sf(100, 10, 0), sf(50, 10, 0), sf(10, 10, 0)];
        let picks: Vec<_> = (0..4).map(|_| d.pick(&ctx(&subs))).collect();
        assert_eq!(picks, vec![Decision::Send(0), Decision::Send(1), Decision::Send(2), Decision::Send(0)]);
        assert_eq!(Dqs::new(DqsForm::Printed).pick(&ctx(&subs)), Decision::Send(2));
        // the paper's bound is kept: in flight plus queued plus the chunk within the window
        let mut full = sf(100, 10, 9);
        full.queued = MSS;
        let subs = [full, sf(50, 10, 0)];
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        // a subflow in Loss is no candidate, as for DQS
        let mut lossy = sf(10, 10, 0);
        lossy.ca_state = CaState::Loss;
        assert_eq!(d.pick(&ctx(&[lossy])), Decision::Wait);
    }

    #[test]
    fn rtt_average_uses_beta_three_quarters() {
        let mut d = Dqs::new(DqsForm::Printed);
        let mut s = sf(100, 10, 0);
        s.rtt_samples = 1;
        d.observe(&[s]);
        assert_eq!(d.rtt_average(0), Some(Dur::from_millis(100)));
        // one new sample: 0.75·100 + 0.25·20 = 80
        s.rtt_samples = 2;
        s.latest_rtt = Some(Dur::from_millis(20));
        d.observe(&[s]);
        assert_eq!(d.rtt_average(0), Some(Dur::from_millis(80)));
        // no new sample: unchanged, even if the latest value differs
        s.latest_rtt = Some(Dur::from_millis(500));
        d.observe(&[s]);
        assert_eq!(d.rtt_average(0), Some(Dur::from_millis(80)));
        // two new samples, only the latest (40) visible: 0.5625·80 + 0.4375·40 = 62.5
        s.rtt_samples = 4;
        s.latest_rtt = Some(Dur::from_millis(40));
        d.observe(&[s]);
        assert_eq!(d.rtt_average(0), Some(Dur::from_micros(62_500)));
        // a second subflow appears later and is initialised by its first sample
        let mut t = sf(30, 10, 0);
        t.rtt_samples = 3;
        d.observe(&[s, t]);
        assert_eq!(d.rtt_average(1), Some(Dur::from_millis(30)));
        assert_eq!(d.rtt_average(0), Some(Dur::from_micros(62_500)));
    }

    #[test]
    fn the_average_not_srtt_drives_the_ranking() {
        // both start at 40 ms; subflow 1 then sees 10 ms samples, which move the β = 0.75
        // average much faster than srtt (left at 40 ms here)
        let mut d = Dqs::new(DqsForm::Printed);
        let mut subs = [sf(30, 10, 0), sf(40, 10, 0)];
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        subs[1].rtt_samples += 1;
        subs[1].latest_rtt = Some(Dur::from_millis(10)); // average 32.5
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        subs[1].rtt_samples += 1; // average 26.875 < 30
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        assert_eq!(subs[1].srtt, Some(Dur::from_millis(40)));
    }

    #[test]
    fn a_lossy_fast_path_can_lose_to_a_clean_slow_one() {
        let mut d = Dqs::new(DqsForm::Printed);
        // 20 ms with 5 % loss: ≈ 10 + 0.0526·200 ≈ 20.5 ms; 30 ms clean: 15 ms
        let mut subs = [sf(20, 10, 0), sf(30, 10, 0)];
        subs[0].retransmits = 5;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        // without the loss the faster path wins
        subs[0].retransmits = 0;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        // 1 % loss: 10 + 2.02 = 12.02 ms < 15 ms, still first
        subs[0].retransmits = 1;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        // equal T: the lower index
        let subs = [sf(30, 10, 0), sf(30, 10, 0)];
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn paper_bound_dispatches_only_what_the_window_can_send() {
        let mut d = Dqs::new(DqsForm::Printed);
        // the fast subflow's window is full: nothing more is queued on it
        let mut subs = [sf(10, 10, 10), sf(50, 10, 0)];
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        // room for exactly one segment: in flight 8 + queued 1 + 1 ≤ 10
        subs[0].in_flight = 8 * MSS;
        subs[0].queued = MSS;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued = MSS + 1;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        // every window taken: wait
        subs[1].in_flight = 10 * MSS;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Wait);
        for name in ["dqs", "dqs_exact", "dqs_backoff"] {
            let mut s = super::super::Sched::by_name(name).unwrap();
            assert_eq!(s.pick(&ctx(&subs)), Decision::Wait, "{name}");
        }
    }

    #[test]
    fn fills_the_queue_to_the_window_then_moves_on() {
        let mut d = Dqs::with_bound(DqsForm::Printed, QueueBound::Ahead);
        // the fast subflow's window is full, yet its queue may take up to one window
        let mut subs = [sf(10, 10, 10), sf(50, 10, 0)];
        assert!(!subs[0].has_cwnd_room());
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued = 9 * MSS; // 9 + 1 ≤ 10
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued = 9 * MSS + 1;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(1));
        // a shorter chunk still fits
        let mut c = ctx(&subs);
        c.next_len = 999;
        assert_eq!(d.pick(&c), Decision::Send(0));
        // every queue full: wait
        subs[1].queued = 10 * MSS;
        subs[0].queued = 10 * MSS;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Wait);
        // the queue bound does not depend on what is in flight
        subs[0].in_flight = 0;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Wait);
        subs[0].queued = 0;
        subs[0].in_flight = 50 * MSS;
        assert_eq!(d.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn skips_loss_state_failed_and_backup_subflows() {
        let mut d = Dqs::new(DqsForm::Printed);
        let mut lost = sf(5, 10, 0);
        lost.ca_state = CaState::Loss;
        let mut dead = sf(5, 10, 0);
        dead.usable = false;
        let mut backup = sf(5, 10, 0);
        backup.backup = true;
        let slow = sf(100, 10, 0);
        assert_eq!(d.pick(&ctx(&[lost, dead, backup, slow])), Decision::Send(3));
        // the regular subflow full: wait rather than use the backup
        let mut full = slow;
        full.queued = 10 * MSS;
        assert_eq!(d.pick(&ctx(&[lost, dead, backup, full])), Decision::Wait);
        // a regular subflow usable but in Loss keeps the backup idle (the shared rule)
        let mut slow_dead = slow;
        slow_dead.usable = false;
        assert_eq!(d.pick(&ctx(&[lost, dead, backup, slow_dead])), Decision::Wait);
        // no regular subflow usable at all: the backup
        let mut lost_dead = lost;
        lost_dead.usable = false;
        assert_eq!(d.pick(&ctx(&[lost_dead, dead, backup, slow_dead])), Decision::Send(2));
    }

    #[test]
    fn unsampled_subflow_is_ranked_with_its_rto() {
        let mut d = Dqs::new(DqsForm::Printed);
        let mut fresh = sf(10, 10, 0);
        fresh.srtt = None;
        fresh.latest_rtt = None;
        fresh.rtt_samples = 0;
        fresh.rto = Dur::from_millis(200); // T = 100 ms
        let sampled = sf(150, 10, 0); // T = 75 ms
        assert_eq!(d.pick(&ctx(&[fresh, sampled])), Decision::Send(1));
        // (a new scheduler: this one has already averaged subflow 1 at 150 ms)
        let mut d = Dqs::new(DqsForm::Printed);
        let sampled = sf(250, 10, 0); // T = 125 ms
        assert_eq!(d.pick(&ctx(&[fresh, sampled])), Decision::Send(0));
        // once sampled, the average replaces the RTO
        fresh.rtt_samples = 1;
        fresh.latest_rtt = Some(Dur::from_millis(300)); // T = 150 ms
        assert_eq!(d.pick(&ctx(&[fresh, sampled])), Decision::Send(1));
    }
}
