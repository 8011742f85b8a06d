//! BLEST, blocking estimation (Ferlin, Alay, Mehani, Boreli, IFIP Networking 2016), in the
//! form of the out-of-tree Linux `mptcp_blest.c` (ALGORITHMS.md §4.4).
//!
//! BLEST starts from the default choice (lowest-RTT subflow with cwnd room) and only
//! second-guesses it when that choice is not the fastest subflow, i.e. the fast subflow is
//! momentarily out of window. Sending on the slow subflow then risks head-of-line blocking
//! at the receiver: while the segment lingers on the slow path, the fast path keeps
//! delivering data, and if that data does not fit in the connection's send window the
//! connection stalls. BLEST estimates how much the fast subflow would send during the slow
//! segment's lifetime; if that (scaled by a safety factor λ) exceeds the window space left
//! once the slow subflow's outstanding data is counted, it sends nothing now and waits for
//! the fast subflow.
//!
//! Choices made for this simulator:
//! * **RTT range of a subflow.** The kernel tracks the smallest and largest smoothed RTT of
//!   each subflow. We approximate the lower end by `min_rtt` (the smallest raw sample; `srtt`
//!   if none) and the upper end by `srtt + rttvar`, the usual "srtt plus one deviation".
//! * **Linger time of the slow subflow.** Interpolated between the two ends by how full its
//!   window is after adding the new chunk, `(in_flight + queued + next_len) / cwnd` (bytes
//!   rather than the kernel's packets), the upper end once the window is full, and never
//!   below `srtt`.
//! * **Fast subflow's sending.** `num_rtts = linger / avg_rtt_f + 1` (integer division, with
//!   `avg_rtt_f` the midpoint of its RTT range). In initial slow start (`ssthresh` unset, i.e.
//!   `u64::MAX`) it doubles each round: `cwnd_f · (2^num_rtts − 1)` with `num_rtts ≤ 16`;
//!   otherwise it grows by one MSS a round from `max(cwnd_f, ssthresh_f + mss_f)`.
//! * **Window space.** `send_window − (in_flight_s + queued_s + next_len)`. The kernel counts
//!   everything sent and not acknowledged on the slow subflow (`write_seq − snd_una`); we use
//!   the RFC 6675 pipe plus the unsent queue, the closest quantity a view offers.
//! * **λ adaptation.** λ starts at 1.2 and stays in [1.0, 1.3]. The kernel raises it by 0.04
//!   when a receive-buffer-optimisation retransmission happened since its last update, and
//!   lowers it by 0.01 otherwise, at most once per minimum RTT of the chosen (slow) subflow.
//!   Like the kernel's BLEST, this scheduler also performs the default scheduler's
//!   opportunistic retransmission and penalisation when the window blocks (delegated to
//!   [`LowestRtt`]), so it sees those retransmissions directly: it records that it asked for
//!   one in `on_window_blocked` and uses that record at the next update. (A requested
//!   retransmission is carried out whenever the head-of-line data is found on a subflow,
//!   which is practically always.)
//! * **No RTT sample.** If the slow subflow has no srtt yet there is nothing to estimate;
//!   the default choice stands (this also gives the new path its first sample). Subflows
//!   get a sample from the handshake, so this is rare.
//! * The fast subflow is the usable regular subflow with the smallest srtt (cwnd room not
//!   required); BLEST acts only if the default choice is strictly slower than it.

use super::{slower_than_fastest, BlockedAction, Decision, LowestRtt, SchedContext, Scheduler};
use crate::time::{Dur, SimTime};

/// λ in thousandths: initial value, bounds, and the steps after a bad / good period.
const LAMBDA_INIT: u64 = 1200;
const LAMBDA_MIN: u64 = 1000;
const LAMBDA_MAX: u64 = 1300;
const LAMBDA_BAD: u64 = 40;
const LAMBDA_GOOD: u64 = 10;
/// Cap on the number of doubling rounds in the slow-start estimate.
const MAX_SS_ROUNDS: u64 = 16;

#[derive(Clone, Copy, Debug)]
pub struct Blest {
    /// Safety factor λ, in thousandths.
    lambda: u64,
    /// When λ was last updated (None before the first evaluation).
    last_lambda_update: Option<SimTime>,
    /// An opportunistic retransmission was requested since the last λ update.
    rbuf_opt_since_update: bool,
    /// The default scheduler's receive-buffer optimisation.
    rbuf: LowestRtt,
}

impl Default for Blest {
    fn default() -> Self {
        Blest {
            lambda: LAMBDA_INIT,
            last_lambda_update: None,
            rbuf_opt_since_update: false,
            rbuf: LowestRtt::new(true),
        }
    }
}

impl Blest {
    /// The current λ (1.0 ..= 1.3).
    pub fn lambda(&self) -> f64 {
        self.lambda as f64 / 1000.0
    }

    /// Adapts λ at most once per `period`.
    fn update_lambda(&mut self, now: SimTime, period: Dur) {
        let Some(last) = self.last_lambda_update else {
            self.last_lambda_update = Some(now);
            return;
        };
        if now.since(last) < period {
            return;
        }
        self.lambda = if self.rbuf_opt_since_update {
            self.lambda + LAMBDA_BAD
        } else {
            self.lambda.saturating_sub(LAMBDA_GOOD)
        }
        .clamp(LAMBDA_MIN, LAMBDA_MAX);
        self.rbuf_opt_since_update = false;
        self.last_lambda_update = Some(now);
    }
}

/// Smallest and largest RTT we assume for a subflow with srtt `srtt`.
fn rtt_range(s: &super::SubflowView, srtt: Dur) -> (u64, u64) {
    let lo = s.min_rtt.unwrap_or(srtt).0.min(srtt.0);
    let hi = srtt.0.saturating_add(s.rttvar.0);
    (lo, hi)
}

/// Bytes the fast subflow `f` can send during `linger_ns`, before scaling by λ.
fn fast_subflow_bytes(f: &super::SubflowView, srtt_f: Dur, linger_ns: u64) -> u128 {
    let (lo, hi) = rtt_range(f, srtt_f);
    let avg = ((lo as u128 + hi as u128) / 2).max(1);
    let num_rtts = linger_ns as u128 / avg + 1;
    let cwnd = f.cwnd as u128;
    if f.ssthresh == u64::MAX {
        let rounds = num_rtts.min(MAX_SS_ROUNDS as u128) as u32;
        cwnd * ((1u128 << rounds) - 1)
    } else {
        let mss = f.mss as u128;
        let base = cwnd.max(f.ssthresh as u128 + mss);
        (base + mss * (num_rtts - 1) / 2) * num_rtts
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let (slow, fast) = match slower_than_fastest(ctx.subflows) {
            Ok(pair) => pair,
            Err(decision) => return decision,
        };
        let (s, f) = (&ctx.subflows[slow], &ctx.subflows[fast]);
        let (srtt_s, srtt_f) = (s.srtt_or_max(), f.srtt_or_max());

        self.update_lambda(ctx.now, s.min_rtt.unwrap_or(srtt_s));

        // how long the new chunk would linger on the slow subflow
        let (lo, hi) = rtt_range(s, srtt_s);
        let used = s.in_flight + s.queued + ctx.next_len;
        let linger = if used >= s.cwnd || s.cwnd == 0 {
            hi
        } else {
            lo + ((hi - lo) as u128 * used as u128 / s.cwnd as u128) as u64
        }
        .max(srtt_s.0);

        let fast_bytes = fast_subflow_bytes(f, srtt_f, linger) * self.lambda as u128 / 1000;
        let avail_space = ctx.send_window.saturating_sub(used) as u128;
        if fast_bytes > avail_space {
            Decision::Wait
        } else {
            Decision::Send(slow)
        }
    }

    fn on_window_blocked(&mut self, ctx: &SchedContext<'_>) -> BlockedAction {
        let act = self.rbuf.on_window_blocked(ctx);
        if act.reinject_on.is_some() {
            self.rbuf_opt_since_update = true;
        }
        act
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    /// A fast subflow with a full window and a slow one with room.
    fn fast_full_slow_free() -> [super::super::SubflowView; 2] {
        let mut fast = sf(10, 10, 10);
        fast.ssthresh = 10_000; // in congestion avoidance
        [fast, sf(100, 10, 0)]
    }

    #[test]
    fn uses_the_fast_subflow_when_it_has_room() {
        let mut b = Blest::default();
        let subs = [sf(10, 10, 0), sf(100, 10, 0)];
        let mut c = ctx(&subs);
        c.send_window = 1000;
        assert_eq!(b.pick(&c), Decision::Send(0));
    }

    #[test]
    fn waits_for_the_fast_subflow_when_the_window_is_small() {
        let mut b = Blest::default();
        let subs = fast_full_slow_free();
        let mut c = ctx(&subs);
        // slow linger ≥ 100 ms = 10+ fast RTTs: the fast path sends far more than 30 kB
        c.send_window = 30_000;
        assert_eq!(b.pick(&c), Decision::Wait);
    }

    #[test]
    fn uses_the_slow_subflow_when_the_window_is_large() {
        let mut b = Blest::default();
        let subs = fast_full_slow_free();
        let mut c = ctx(&subs);
        c.send_window = 10_000_000;
        assert_eq!(b.pick(&c), Decision::Send(1));
    }

    #[test]
    fn estimate_matches_the_formula_at_the_threshold() {
        // fast: srtt 10 ms, rttvar 2 ms (range 10..12, avg 11 ms), cwnd 10 kB, ssthresh 10 kB
        // slow: srtt 100 ms, rttvar 25 ms, min 100 ms; window 1 kB of 10 kB after the chunk
        //   linger = max(100 + 25·0.1, 100) = 102.5 ms -> num_rtts = 102.5/11 + 1 = 10
        //   bytes = (max(10 000, 11 000) + 1000·9/2) · 10 = 155 000; ·1.2 = 186 000
        let mut b = Blest::default();
        let mut subs = fast_full_slow_free();
        subs[0].rttvar = Dur::from_millis(2);
        let mut c = ctx(&subs);
        c.send_window = 186_000 + 1000;
        assert_eq!(b.pick(&c), Decision::Send(1));
        c.send_window = 186_000 + 999;
        assert_eq!(b.pick(&c), Decision::Wait);
    }

    #[test]
    fn slow_start_estimate_is_larger() {
        let subs_ca = fast_full_slow_free();
        let mut subs_ss = subs_ca;
        subs_ss[0].ssthresh = u64::MAX;
        let mut c = ctx(&subs_ca);
        c.send_window = 500_000;
        assert_eq!(Blest::default().pick(&c), Decision::Send(1));
        let mut c = ctx(&subs_ss);
        c.send_window = 500_000;
        assert_eq!(Blest::default().pick(&c), Decision::Wait);
    }

    #[test]
    fn lambda_rises_after_opportunistic_retransmission_and_decays_otherwise() {
        let mut b = Blest::default();
        let subs = fast_full_slow_free();
        let mut c = ctx(&subs);
        b.pick(&c); // first evaluation starts the clock
        assert_eq!(b.lambda, 1200);
        // an opportunistic retransmission on the fast subflow
        let blocked = [sf(100, 10, 5), sf(10, 10, 0)];
        let mut cb = ctx(&blocked);
        cb.hol_subflow = Some(0);
        assert_eq!(b.on_window_blocked(&cb).reinject_on, Some(1));
        // within one min_rtt of the slow subflow (100 ms): no update
        c.now = SimTime(Dur::from_millis(50).0);
        b.pick(&c);
        assert_eq!(b.lambda, 1200);
        c.now = SimTime(Dur::from_millis(100).0);
        b.pick(&c);
        assert_eq!(b.lambda, 1240);
        c.now = SimTime(Dur::from_millis(200).0);
        b.pick(&c);
        assert_eq!(b.lambda, 1230);
        // clamped at both ends
        for i in 3..40 {
            c.now = SimTime(Dur::from_millis(100 * i).0);
            b.pick(&c);
        }
        assert_eq!(b.lambda, LAMBDA_MIN);
        for i in 40..60 {
            b.on_window_blocked(&cb);
            c.now = SimTime(Dur::from_millis(100 * i).0);
            b.pick(&c);
        }
        assert_eq!(b.lambda, LAMBDA_MAX);
    }

    #[test]
    fn backup_or_unsampled_slow_subflow_is_used_as_the_default_would() {
        let mut b = Blest::default();
        let mut subs = fast_full_slow_free();
        subs[1].srtt = None;
        subs[1].min_rtt = None;
        let mut c = ctx(&subs);
        c.send_window = 1000;
        assert_eq!(b.pick(&c), Decision::Send(1));
        // only a backup left: the default choice stands
        let mut subs = fast_full_slow_free();
        subs[0].usable = false;
        subs[1].backup = true;
        let mut c = ctx(&subs);
        c.send_window = 1000;
        assert_eq!(b.pick(&c), Decision::Send(1));
    }
}
