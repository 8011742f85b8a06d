//! Missing reports and CMT's rules for them (Iyengar, Amer, Stewart, ToN 2006).
//!
//! RFC 4960 §7.2.4: a SACK counts a TSN as missing ("strikes" it) when it is not acked and
//! lies below the highest TSN newly acknowledged by that SACK (HTNA); at the threshold the
//! TSN is fast-retransmitted once.
//!
//! * SFR (split fast retransmit): the HTNA is taken per destination, so a TSN is struck only
//!   when a TSN sent later *to the same destination* is newly acked; reordering across paths
//!   then causes no strikes.
//! * DAC (delayed ack for CMT): the receiver delays SACKs despite gaps and reports how many
//!   packets a SACK covers. The rule implemented is FreeBSD's (`sctp_strike_gap_ack_chunks`):
//!   the TSN is struck `dac_count` times (1 or 2) instead of once when the SACK newly acked
//!   data on exactly one destination and every TSN it newly acked lies above the struck TSN
//!   (so both packets the SACK covers arrived after it); otherwise once.
//! * CUC (cwnd update for CMT): each destination's pseudo-cumack is its earliest outstanding
//!   TSN; its cwnd may grow when a SACK acks that TSN, not only when the association's
//!   cumulative ack moves (see [`cwnd_may_grow`]).

/// What one SACK newly acknowledged, as the strike rules need it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewlyAcked {
    /// Highest TSN newly acked, over the association.
    pub htna: Option<u64>,
    /// Highest TSN newly acked among those last sent to each destination.
    pub htna_per_dest: Vec<Option<u64>>,
    /// Lowest TSN newly acked.
    pub lowest: Option<u64>,
    /// Destinations with newly acked TSNs.
    pub dests: u32,
    /// The SACK's DAC count (1 or 2).
    pub dac_count: u8,
}

/// How many missing reports a SACK adds to the unacked TSN `tsn` last sent to `dest`.
pub fn strikes(tsn: u64, dest: usize, n: &NewlyAcked, sfr: bool, dac: bool) -> u8 {
    let htna = if sfr { n.htna_per_dest.get(dest).copied().flatten() } else { n.htna };
    if htna.is_none_or(|h| h <= tsn) {
        return 0;
    }
    if dac && n.dests == 1 && n.lowest.is_some_and(|l| l > tsn) {
        return n.dac_count.clamp(1, 2);
    }
    1
}

/// RFC 4960 §7.2.1-7.2.2 let a destination's cwnd grow only on a SACK that advances the
/// cumulative TSN ack point; with CUC, on one that advances the destination's pseudo-cumack.
pub fn cwnd_may_grow(cum_advanced: bool, pseudo_cumack_advanced: bool, cuc: bool) -> bool {
    if cuc {
        pseudo_cumack_advanced
    } else {
        cum_advanced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TSNs 10.. alternate between destinations 0 and 1 (CMT round robin): 10→0, 11→1,
    /// 12→0, 13→1, 14→0. Path 1 is faster: 11 and 13 arrive first, a SACK newly acks them.
    fn acked_on_fast_path() -> NewlyAcked {
        NewlyAcked { htna: Some(13), htna_per_dest: vec![None, Some(13)], lowest: Some(11), dests: 1, dac_count: 1 }
    }

    #[test]
    fn without_sfr_reordering_across_paths_counts_as_missing() {
        let n = acked_on_fast_path();
        assert_eq!(strikes(10, 0, &n, false, false), 1);
        assert_eq!(strikes(12, 0, &n, false, false), 1);
        // above the HTNA: never
        assert_eq!(strikes(14, 0, &n, false, false), 0);
    }

    #[test]
    fn with_sfr_only_later_tsns_of_the_same_destination_count() {
        let n = acked_on_fast_path();
        assert_eq!(strikes(10, 0, &n, true, false), 0);
        assert_eq!(strikes(12, 0, &n, true, false), 0);
        // a TSN lost on destination 1 itself is still struck
        let lost_on_1 = NewlyAcked { htna: Some(15), htna_per_dest: vec![None, Some(15)], lowest: Some(15), dests: 1, dac_count: 1 };
        assert_eq!(strikes(13, 1, &lost_on_1, true, false), 1);
    }

    #[test]
    fn dac_strikes_twice_only_when_the_whole_sack_lies_above() {
        let mut n = NewlyAcked { htna: Some(15), htna_per_dest: vec![Some(15), None], lowest: Some(14), dests: 1, dac_count: 2 };
        assert_eq!(strikes(12, 0, &n, true, true), 2);
        assert_eq!(strikes(12, 0, &n, true, false), 1);
        // a SACK that newly acks data below the TSN too: once
        n.lowest = Some(11);
        assert_eq!(strikes(12, 0, &n, true, true), 1);
        // data newly acked on two destinations: once
        n.lowest = Some(14);
        n.dests = 2;
        assert_eq!(strikes(12, 0, &n, true, true), 1);
        // a SACK covering one packet: once
        n.dests = 1;
        n.dac_count = 1;
        assert_eq!(strikes(12, 0, &n, true, true), 1);
    }

    #[test]
    fn cuc_lets_a_destination_grow_on_its_pseudo_cumack() {
        assert!(cwnd_may_grow(false, true, true));
        assert!(!cwnd_may_grow(true, false, true));
        assert!(!cwnd_may_grow(false, true, false));
        assert!(cwnd_may_grow(true, false, false));
    }
}
