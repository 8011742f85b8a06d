//! Where a retransmission goes.
//!
//! Without CMT, RFC 4960 §6.4: a chunk that timed out is retransmitted to an active
//! destination other than the one it was last sent to (fast retransmissions stay on their
//! destination, as FreeBSD does without CMT). With CMT, one of the four policies of Iyengar,
//! Amer and Stewart (ToN 2006, §V) decides for every retransmission:
//!
//! * RTX-SAME: the destination the chunk was last sent to;
//! * RTX-ASAP: any active destination with room in its cwnd now (the least loaded first);
//! * RTX-CWND: the active destination with the largest cwnd;
//! * RTX-SSTHRESH: the active destination with the largest ssthresh (ties: largest cwnd), the
//!   paper's recommendation and FreeBSD's `sctp_cmt_on_off` default policy.

/// The retransmission policy of a CMT association.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtxPolicy {
    Same,
    Asap,
    Cwnd,
    Ssthresh,
}

/// Scenario names of the policies (`sctp.rtx_policy`), with the one-line descriptions `mpsim
/// list` shows.
pub const RTX_POLICIES: &[(&str, RtxPolicy, &str)] = &[
    ("same", RtxPolicy::Same, "RTX-SAME: retransmit to the destination the chunk was last sent to"),
    ("asap", RtxPolicy::Asap, "RTX-ASAP: retransmit to any active destination with cwnd room now"),
    ("cwnd", RtxPolicy::Cwnd, "RTX-CWND: retransmit to the active destination with the largest cwnd"),
    ("ssthresh", RtxPolicy::Ssthresh, "RTX-SSTHRESH: retransmit to the active destination with the largest ssthresh (default)"),
];

impl RtxPolicy {
    pub fn by_name(name: &str) -> Option<RtxPolicy> {
        RTX_POLICIES.iter().find(|(n, _, _)| *n == name).map(|&(_, p, _)| p)
    }

    pub fn name(self) -> &'static str {
        RTX_POLICIES.iter().find(|(_, p, _)| *p == self).map(|(n, _, _)| *n).expect("listed")
    }
}

/// What the choice sees of one destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DestView {
    pub active: bool,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub flight: u64,
}

impl DestView {
    fn has_room(&self) -> bool {
        self.flight < self.cwnd
    }
}

/// Why the chunk is retransmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtxCause {
    FastRetransmit,
    Timeout,
}

/// The destination a retransmission of a chunk last sent to `last` goes to.
pub fn choose(dests: &[DestView], last: usize, cause: RtxCause, cmt: Option<RtxPolicy>) -> usize {
    let active = |i: &usize| dests[*i].active;
    let any_active = (0..dests.len()).any(|i| active(&i));
    let Some(policy) = cmt else {
        if cause == RtxCause::FastRetransmit || dests.len() == 1 {
            return last;
        }
        // RFC 4960 §6.4: an active alternate, the next one after `last` in order
        return (1..dests.len()).map(|k| (last + k) % dests.len()).find(active).unwrap_or(last);
    };
    if !any_active {
        return last;
    }
    let best_by = |key: &dyn Fn(&DestView) -> (u64, u64)| {
        (0..dests.len()).filter(active).max_by(|&a, &b| key(&dests[a]).cmp(&key(&dests[b])).then(b.cmp(&a))).expect("one is active")
    };
    match policy {
        RtxPolicy::Same if dests[last].active => last,
        RtxPolicy::Same => best_by(&|d| (d.ssthresh, d.cwnd)),
        RtxPolicy::Asap => (0..dests.len())
            .filter(|i| active(i) && dests[*i].has_room())
            .min_by_key(|&i| (dests[i].flight * 1024 / dests[i].cwnd.max(1), i))
            .unwrap_or_else(|| if dests[last].active { last } else { best_by(&|d| (d.cwnd, 0)) }),
        RtxPolicy::Cwnd => best_by(&|d| (d.cwnd, d.ssthresh)),
        RtxPolicy::Ssthresh => best_by(&|d| (d.ssthresh, d.cwnd)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(cwnd: u64, ssthresh: u64, flight: u64) -> DestView {
        DestView { active: true, cwnd, ssthresh, flight }
    }

    #[test]
    fn without_cmt_a_timed_out_chunk_goes_to_an_alternate() {
        let dests = [d(10, 20, 10), d(5, 5, 0), d(5, 5, 0)];
        assert_eq!(choose(&dests, 0, RtxCause::Timeout, None), 1);
        assert_eq!(choose(&dests, 2, RtxCause::Timeout, None), 0);
        assert_eq!(choose(&dests, 0, RtxCause::FastRetransmit, None), 0);
        let mut inactive = dests;
        inactive[1].active = false;
        assert_eq!(choose(&inactive, 0, RtxCause::Timeout, None), 2);
        assert_eq!(choose(&[d(1, 1, 0)], 0, RtxCause::Timeout, None), 0);
    }

    #[test]
    fn cmt_policies_pick_their_destination() {
        let dests = [d(10_000, 4_000, 10_000), d(6_000, 8_000, 1_000), d(3_000, 3_000, 0)];
        let pick = |p| choose(&dests, 0, RtxCause::FastRetransmit, Some(p));
        assert_eq!(pick(RtxPolicy::Same), 0);
        assert_eq!(pick(RtxPolicy::Cwnd), 0);
        assert_eq!(pick(RtxPolicy::Ssthresh), 1);
        // the emptiest destination with room
        assert_eq!(pick(RtxPolicy::Asap), 2);
        let mut down = dests;
        down[0].active = false;
        assert_eq!(choose(&down, 0, RtxCause::Timeout, Some(RtxPolicy::Same)), 1);
        assert_eq!(choose(&down, 0, RtxCause::Timeout, Some(RtxPolicy::Cwnd)), 1);
        assert_eq!(RtxPolicy::by_name("ssthresh"), Some(RtxPolicy::Ssthresh));
        assert_eq!(RtxPolicy::Asap.name(), "asap");
        assert_eq!(RtxPolicy::by_name("fastest"), None);
    }
}
