//! What a scheduler may see of a subflow, and the rules every scheduler shares about which
//! subflows may carry data.
//!
//! This module sits below both `sched/` (which reads views) and `transport/` (which builds
//! them), so neither depends on the other's internals.

use crate::time::Dur;

/// Linux `sysctl_tcp_pacing_ss_ratio` and `sysctl_tcp_pacing_ca_ratio`, in percent: a Linux
/// sender paces at this share of `max(cwnd, in flight) / srtt` (below half of ssthresh, and
/// above). The sender sizes its packets by that rate and the upstream scheduler estimates
/// each subflow's rate with it, so it lives here, below both.
pub const PACING_SS_RATIO: u64 = 200;
pub const PACING_CA_RATIO: u64 = 120;

/// Congestion-avoidance state of a TCP sender, as in Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    /// Reducing the window after an ECN echo (Linux's `TCP_CA_CWR`), nothing lost.
    Cwr,
    Recovery,
    Loss,
}

impl CaState {
    /// Recovering from a loss (Linux's `icsk_ca_state >= TCP_CA_Recovery`).
    pub fn recovering(self) -> bool {
        matches!(self, CaState::Recovery | CaState::Loss)
    }
}

/// What a scheduler may see of one subflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubflowView {
    pub srtt: Option<Dur>,
    /// The most recent RTT sample, and how many samples were taken so far (a scheduler that
    /// keeps its own RTT average updates it when the count changes).
    pub latest_rtt: Option<Dur>,
    pub rtt_samples: u64,
    pub rttvar: Dur,
    pub min_rtt: Option<Dur>,
    pub rto: Dur,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    /// Bytes presumed in the network (RFC 6675 pipe).
    pub in_flight: u64,
    /// Bytes handed to the subflow and not yet sent.
    pub queued: u64,
    pub ca_state: CaState,
    /// A backup subflow (MP_PRIO): used only when no regular subflow can be (see
    /// [`backups_in_use`]).
    pub backup: bool,
    /// Established and not marked potentially failed (a timeout marks it until new data is
    /// acknowledged on it).
    pub usable: bool,
    /// Segments sent and retransmitted so far, for schedulers that estimate loss.
    pub segments_sent: u64,
    pub retransmits: u64,
    /// The pacing rate the congestion controller sets, bytes per second (BBR); None for a
    /// controller that leaves it to the stack's default (the ratios above).
    pub pacing_rate: Option<u64>,
}

impl SubflowView {
    /// Room in the window for at least one more segment beyond what is queued.
    pub fn has_cwnd_room(&self) -> bool {
        self.in_flight + self.queued < self.cwnd
    }

    /// Linux `mptcp_is_available` with the cwnd test: usable, not in the Loss state, and
    /// room in the window.
    pub fn available(&self) -> bool {
        self.usable && self.ca_state != CaState::Loss && self.has_cwnd_room()
    }

    /// May carry data under the backup rule: usable, and a backup exactly when backups are
    /// in use (`backups`, from [`backups_in_use`]).
    pub fn eligible(&self, backups: bool) -> bool {
        self.usable && self.backup == backups
    }

    /// srtt, or the largest value if there is no sample yet (so sampled paths come first).
    pub fn srtt_or_max(&self) -> Dur {
        self.srtt.unwrap_or(Dur(u64::MAX))
    }

    /// Fraction of segments retransmitted: a crude loss estimate.
    pub fn loss_estimate(&self) -> f64 {
        if self.segments_sent == 0 {
            0.0
        } else {
            self.retransmits as f64 / self.segments_sent as f64
        }
    }
}

/// The backup rule, as the Linux MPTCP schedulers apply it: backup subflows carry data only
/// when no regular subflow is usable (established and not potentially failed). A regular
/// subflow that is merely out of window room, or rebuilding its window in the Loss state,
/// still keeps the backups idle: the scheduler waits for it instead.
pub fn backups_in_use(subflows: &[SubflowView]) -> bool {
    !subflows.iter().any(|s| s.usable && !s.backup)
}
