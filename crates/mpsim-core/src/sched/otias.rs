//! OTIAS, Out-of-order Transmission for In-order Arrival Scheduling (Yang, Wang, Amer,
//! 2014; ALGORITHMS.md §4.6).
//!
//! Instead of waiting for a subflow with window room, OTIAS may queue a chunk on a subflow
//! whose window is full, if the chunk will still arrive there sooner than anywhere else. For
//! every chunk it estimates, on each candidate subflow, when the chunk would reach the
//! receiver if appended to that subflow's send queue, and takes the earliest:
//!
//! `T_i = rounds_i · rtt_i + rtt_i / 2`
//!
//! where `rounds_i` is the number of whole RTTs the chunk waits for window room behind the
//! data already in flight and queued, and `rtt_i / 2` the one-way trip once it is sent.
//!
//! Choices made for this simulator:
//! * **Rounding.** ALGORITHMS.md gives the MPDCCP code's rounding and a stricter one; we use
//!   the stricter: `rounds = 0` if `in_flight + queued < cwnd`, else
//!   `(in_flight + queued − cwnd) / cwnd + 1` (integer division, bytes). The code's form
//!   counts zero rounds even when the window is exactly full or overfull by less than a
//!   window, i.e. it says a chunk that cannot be sent now leaves at once; the strict form
//!   charges a full RTT as soon as the window has no room for it.
//! * **Queue bound.** A subflow's unsent queue is "full", and the subflow not a candidate,
//!   if appending the chunk would take it beyond `4 · cwnd` bytes. The estimate alone
//!   already moves data away from long queues, but the bound keeps a queue from growing
//!   without end when the other subflows look even worse (or fail), and limits how much
//!   data is stranded on a path whose window collapses.
//! * **No RTT sample.** A subflow without srtt is estimated with its RTO in place of the
//!   RTT, a pessimistic guess that still lets it be tried once the sampled subflows are
//!   loaded (skipping it would leave it unsampled for ever). Subflows normally get a sample
//!   from the handshake.
//! * **Candidates.** Usable subflows that are not in the Loss state (their window is being
//!   rebuilt after a timeout and retransmissions go first, which the estimate does not see)
//!   and not full. Backup subflows only under the shared backup rule ([`backups_in_use`]: no
//!   regular subflow usable); a regular subflow in Loss or full makes OTIAS wait.
//! * **Ties** go to the lower index, so decisions are deterministic.
//! * **Timeouts.** OTIAS deliberately parks data beyond the window; when a subflow times out,
//!   the connection takes its unsent queue back and schedules it again (as it does for every
//!   scheduler), so that data does not wait for the broken path.
//! * There is no receive-buffer optimisation (MPDCCP has no connection-level window); when
//!   the receive window blocks, OTIAS does nothing special.

use super::{backups_in_use, Decision, SchedContext, Scheduler, SubflowView};
use crate::view::CaState;

/// A subflow's unsent queue may hold at most this many congestion windows.
pub const MAX_QUEUE_WINDOWS: u64 = 4;

#[derive(Clone, Copy, Debug, Default)]
pub struct Otias;

impl Otias {
    /// Estimated time (ns) until a new chunk queued on `s` reaches the receiver.
    pub fn arrival_estimate(s: &SubflowView) -> u128 {
        let rtt = s.srtt.unwrap_or(s.rto).0 as u128;
        let cwnd = s.cwnd.max(1) as u128;
        let backlog = (s.in_flight + s.queued) as u128;
        let rounds = if backlog < cwnd { 0 } else { (backlog - cwnd) / cwnd + 1 };
        rounds * rtt + rtt / 2
    }

    fn queue_full(s: &SubflowView, next_len: u64) -> bool {
        s.queued.saturating_add(next_len) > MAX_QUEUE_WINDOWS.saturating_mul(s.cwnd)
    }
}

impl Scheduler for Otias {
    fn name(&self) -> &'static str {
        "otias"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let backups = backups_in_use(ctx.subflows);
        ctx.subflows
            .iter()
            .enumerate()
            .filter(|(_, s)| s.eligible(backups))
            .filter(|(_, s)| s.ca_state != CaState::Loss && !Self::queue_full(s, ctx.next_len))
            .min_by_key(|(i, s)| (Self::arrival_estimate(s), *i))
            .map_or(Decision::Wait, |(i, _)| Decision::Send(i))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::time::Dur;

    const MSS: u64 = 1000;

    #[test]
    fn strict_rounding() {
        let mut s = sf(10, 10, 9);
        assert_eq!(Otias::arrival_estimate(&s), Dur::from_millis(5).0 as u128);
        s.in_flight = 10 * MSS;
        assert_eq!(Otias::arrival_estimate(&s), Dur::from_millis(15).0 as u128);
        s.queued = 9 * MSS;
        assert_eq!(Otias::arrival_estimate(&s), Dur::from_millis(15).0 as u128);
        s.queued = 10 * MSS;
        assert_eq!(Otias::arrival_estimate(&s), Dur::from_millis(25).0 as u128);
    }

    #[test]
    fn queues_on_the_fast_subflow_beyond_its_window() {
        // fast: window full, 5 queued → 1 round: 15 ms; slow: 50 ms one way
        let mut o = Otias;
        let mut subs = [sf(10, 10, 10), sf(100, 10, 0)];
        subs[0].queued = 5 * MSS;
        assert!(!subs[0].has_cwnd_room());
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(0));
    }

    #[test]
    fn moves_to_the_slow_subflow_when_the_fast_queue_is_long() {
        let mut o = Otias;
        // fast: 20 queued behind a full window → 3 rounds: 35 ms; slow (60 ms): 30 ms
        let mut subs = [sf(10, 10, 10), sf(60, 10, 0)];
        subs[0].queued = 19 * MSS;
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued = 20 * MSS;
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(1));
        // the queue bound: even a very slow subflow beats a full queue
        let mut subs = [sf(10, 10, 10), sf(1000, 10, 0)];
        subs[0].queued = MAX_QUEUE_WINDOWS * 10 * MSS - MSS;
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(0));
        subs[0].queued += 1;
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(1));
        // every queue full: wait
        subs[1].queued = MAX_QUEUE_WINDOWS * 10 * MSS;
        assert_eq!(o.pick(&ctx(&subs)), Decision::Wait);
    }

    #[test]
    fn never_unusable_or_backup_while_a_regular_subflow_is_usable() {
        let mut o = Otias;
        let mut dead = sf(1, 10, 0);
        dead.usable = false;
        let mut backup = sf(1, 10, 0);
        backup.backup = true;
        let mut loaded = sf(100, 10, 10);
        loaded.queued = 30 * MSS;
        let subs = [dead, backup, loaded];
        assert_eq!(o.pick(&ctx(&subs)), Decision::Send(2));
        // the regular subflow in Loss (or full): wait, still no backup
        let mut lossy = loaded;
        lossy.ca_state = CaState::Loss;
        assert_eq!(o.pick(&ctx(&[dead, backup, lossy])), Decision::Wait);
        let mut full = loaded;
        full.queued = 40 * MSS;
        assert_eq!(o.pick(&ctx(&[dead, backup, full])), Decision::Wait);
        // no usable regular subflow: the backup carries the data
        let mut dead2 = loaded;
        dead2.usable = false;
        assert_eq!(o.pick(&ctx(&[dead, backup, dead2])), Decision::Send(1));
    }

    #[test]
    fn unsampled_subflow_is_estimated_with_its_rto() {
        let mut o = Otias;
        let mut fresh = sf(10, 10, 0);
        fresh.srtt = None;
        fresh.min_rtt = None;
        fresh.rto = Dur::from_millis(200); // T = 100 ms
        let mut sampled = sf(40, 10, 10); // T = 40 + 20 = 60 ms
        assert_eq!(o.pick(&ctx(&[fresh, sampled])), Decision::Send(1));
        sampled.queued = 10 * MSS; // T = 2·40 + 20 = 100 ms: tie, lower index
        assert_eq!(o.pick(&ctx(&[fresh, sampled])), Decision::Send(0));
    }
}
