//! ECF, Earliest Completion First (Lim, Nahum, Towsley, Gibbens, CoNEXT 2017), in the byte
//! form of the out-of-tree Linux `mptcp_ecf.c` (ALGORITHMS.md §4.5).
//!
//! Like BLEST, ECF only reconsiders the default choice when it is not the fastest subflow.
//! It then compares two ways of finishing the `k` bytes still waiting at the connection
//! level: wait for the fast subflow and send everything there (about `k/cwnd_f + 1` of its
//! RTTs), or start now on the slow subflow (one slow RTT plus the deviation δ). If waiting
//! finishes sooner, and the slow subflow would really be slower for this amount of data
//! (it needs at least two fast RTTs plus δ), ECF sends nothing now. A per-connection
//! `waiting` flag adds hysteresis: once ECF has decided to wait, the first test is relaxed by
//! a factor `1 + β` (β = 1/4), so it does not flip back and forth on small changes.
//!
//! Tests, all in bytes and nanoseconds, with `x_f = max(k, cwnd_f)`, `x_s = max(k, cwnd_s)`:
//! * first: `rtt_f · (x_f + cwnd_f) < (1 + waiting·β) · cwnd_f · (rtt_s + δ)`;
//! * second (only if the first holds): `rtt_s · x_s ≥ cwnd_s · (2·rtt_f + δ)` → set
//!   `waiting`, wait; otherwise use the slow subflow;
//! * if the first test fails, clear `waiting` and use the slow subflow.
//!
//! Choices made for this simulator:
//! * **k** is `ctx.unscheduled`, the bytes written and not yet given to any subflow
//!   (including the chunk being placed), the counterpart of the kernel's meta send-buffer
//!   occupancy minus what already sits on subflows.
//! * **δ** = `2 · max(rttvar_f, rttvar_s)`. Our `rttvar` is the RFC 6298 RTTVAR (a mean
//!   deviation). The kernel uses `max(rttvar_us_f, rttvar_us_s) / 2`, where Linux
//!   `rttvar_us` is about four mean deviations, so its δ is about two of ours. (Linux also
//!   keeps `rttvar_us` from falling much below `tcp_rto_min`, 200 ms, which makes the
//!   kernel's δ at least about 100 ms in practice; we do not reproduce that floor, as it
//!   belongs to Linux's RTO machinery and not to ECF's design.)
//! * **rtt** is `srtt`. If the slow subflow has no sample yet, the default choice stands.
//! * The fast subflow is the usable regular subflow with the smallest srtt (cwnd room not
//!   required); ECF acts only if the default choice is strictly slower than it.
//! * Like the kernel's ECF, it keeps the default scheduler's opportunistic retransmission
//!   and penalisation when the receive window blocks (delegated to [`LowestRtt`]).

use super::{slower_than_fastest, BlockedAction, Decision, LowestRtt, SchedContext, Scheduler};

/// β = 1 / BETA_DIV.
const BETA_DIV: u128 = 4;

#[derive(Clone, Copy, Debug)]
pub struct Ecf {
    /// Hysteresis: the last decision was to wait for the fast subflow.
    waiting: bool,
    /// The default scheduler's receive-buffer optimisation.
    rbuf: LowestRtt,
}

impl Default for Ecf {
    fn default() -> Self {
        Ecf { waiting: false, rbuf: LowestRtt::new(true) }
    }
}

impl Ecf {
    /// Whether ECF is currently in its waiting state.
    pub fn waiting(&self) -> bool {
        self.waiting
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let (slow, fast) = match slower_than_fastest(ctx.subflows) {
            Ok(pair) => pair,
            Err(decision) => return decision,
        };
        let (s, f) = (&ctx.subflows[slow], &ctx.subflows[fast]);
        let (srtt_s, srtt_f) = (s.srtt_or_max(), f.srtt_or_max());

        let k = ctx.unscheduled as u128;
        let (rtt_f, rtt_s) = (srtt_f.0 as u128, srtt_s.0 as u128);
        let (cwnd_f, cwnd_s) = (f.cwnd as u128, s.cwnd as u128);
        let delta = 2 * f.rttvar.0.max(s.rttvar.0) as u128;
        let x_f = k.max(cwnd_f);
        let x_s = k.max(cwnd_s);

        // waiting for the fast subflow completes sooner (both sides times BETA_DIV)
        let lhs = BETA_DIV * rtt_f * (x_f + cwnd_f);
        let rhs = (BETA_DIV + self.waiting as u128) * cwnd_f * (rtt_s + delta);
        if lhs < rhs {
            // and the slow subflow is really too slow for this much data
            if rtt_s * x_s >= cwnd_s * (2 * rtt_f + delta) {
                self.waiting = true;
                return Decision::Wait;
            }
        } else {
            self.waiting = false;
        }
        Decision::Send(slow)
    }

    fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        self.rbuf.on_window_blocked(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::time::Dur;

    /// Fast subflow (10 ms, full window of 10 segments) and slow one (100 ms, room), both
    /// with rttvar 1 ms, so δ = 2 ms.
    fn paths() -> [super::super::SubflowView; 2] {
        let mut subs = [sf(10, 10, 10), sf(100, 10, 0)];
        for s in &mut subs {
            s.rttvar = Dur::from_millis(1);
        }
        subs
    }

    #[test]
    fn uses_the_fast_subflow_when_it_has_room() {
        let mut e = Ecf::default();
        let subs = [sf(10, 10, 0), sf(100, 10, 0)];
        assert_eq!(e.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn waits_when_the_fast_subflow_finishes_sooner() {
        // k = 20 kB: fast needs ~ (20+10)/10 · 10 = 30 ms < 102 ms on the slow one
        let mut e = Ecf::default();
        let subs = paths();
        let mut c = ctx(&subs);
        c.unscheduled = 20_000;
        assert_eq!(e.pick(&c), Decision::Wait);
        assert!(e.waiting());
    }

    #[test]
    fn uses_the_slow_subflow_when_k_is_large() {
        // k = 100 kB: fast needs (100+10)/10 · 10 ms = 110 ms ≥ 102 ms
        let mut e = Ecf::default();
        let subs = paths();
        let mut c = ctx(&subs);
        c.unscheduled = 100_000;
        assert_eq!(e.pick(&c), Decision::Send(1));
        assert!(!e.waiting());
    }

    #[test]
    fn uses_the_slow_subflow_when_it_is_not_much_slower() {
        // waiting would finish sooner, but the slow subflow (21 ms) needs less than two fast
        // RTTs plus δ for this data: 21 ms · 10 kB < 10 kB · (2·10 + 2) ms → use it
        let mut e = Ecf::default();
        let mut subs = paths();
        subs[1].srtt = Some(Dur::from_millis(21));
        let mut c = ctx(&subs);
        c.unscheduled = 1000;
        assert_eq!(e.pick(&c), Decision::Send(1));
        assert!(!e.waiting());
    }

    #[test]
    fn hysteresis_keeps_waiting_within_the_beta_margin() {
        // first test: 10·(k+10k) < (1 + β·w) · 10k · 102  ⇔  k < 92 kB (w = 0), k < 117.5 kB (w = 1)
        let subs = paths();
        let mut c = ctx(&subs);
        c.unscheduled = 100_000;
        // not waiting: k = 100 kB is above the plain threshold → slow subflow
        let mut e = Ecf::default();
        assert_eq!(e.pick(&c), Decision::Send(1));
        // having waited before, the same k stays within the relaxed threshold → wait
        let mut e = Ecf::default();
        c.unscheduled = 50_000;
        assert_eq!(e.pick(&c), Decision::Wait);
        c.unscheduled = 100_000;
        assert_eq!(e.pick(&c), Decision::Wait);
        // beyond the relaxed threshold the flag clears, and the plain threshold applies again
        c.unscheduled = 120_000;
        assert_eq!(e.pick(&c), Decision::Send(1));
        assert!(!e.waiting());
        c.unscheduled = 100_000;
        assert_eq!(e.pick(&c), Decision::Send(1));
    }

    #[test]
    fn no_subflow_available_means_wait() {
        let mut e = Ecf::default();
        let subs = [sf(10, 10, 10), sf(100, 10, 10)];
        assert_eq!(e.pick(&ctx(&subs)), Decision::Wait);
    }
}
