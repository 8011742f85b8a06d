//! ECN for QUIC (RFC 9000 §13.4): the counts a receiver keeps of each packet number space's
//! ECN codepoints and reports in ACK_ECN (PATH_ACK_ECN) frames, and the sender's validation of
//! those counts (§13.4.2.1), which disables ECN on a path whose counts do not add up and
//! tells the recovery of an increase of the CE count (RFC 9002 §7.1, Appendix B.7).

use super::wire::varint_len;
use crate::net::Ecn;

/// Packets received with each ECN codepoint in one packet number space (RFC 9000 §13.4.1),
/// cumulative, as an ACK_ECN frame reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    pub ect0: u64,
    pub ect1: u64,
    pub ce: u64,
}

impl EcnCounts {
    /// Counts a packet that arrived with codepoint `e` (a Not-ECT one counts nowhere).
    pub fn count(&mut self, e: Ecn) {
        match e {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
        }
    }

    /// Whether any ECN-marked packet arrived: the receiver's ACKs then carry the counts.
    pub fn any(&self) -> bool {
        self.ect0 + self.ect1 + self.ce > 0
    }

    /// Bytes the three counts add to an ACK frame (ACK_ECN, type 0x03, or PATH_ACK_ECN, 0x3f:
    /// their types take one byte as ACK's and PATH_ACK's do).
    pub fn wire_len(&self) -> u32 {
        varint_len(self.ect0) + varint_len(self.ect1) + varint_len(self.ce)
    }
}

/// The sender's ECN state on a path, as qlog's `ECNState` names it: `unknown` while its
/// packets go out ECT(0) and no ACK has validated them, `capable` once one has, `failed`
/// once validation failed (no packet is marked after that).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnState {
    Unknown,
    Capable,
    Failed,
}

impl EcnState {
    pub fn name(self) -> &'static str {
        match self {
            EcnState::Unknown => "unknown",
            EcnState::Capable => "capable",
            EcnState::Failed => "failed",
        }
    }
}

/// The sender's side of ECN on one path.
#[derive(Clone, Debug)]
pub struct EcnSender {
    /// None: the flow does not use ECN.
    pub state: Option<EcnState>,
    /// Packets sent ECT(0).
    sent_ect0: u64,
    /// The counts of the last ACK taken.
    peer: EcnCounts,
    /// Congestion events for CE counts (counted by the recovery).
    pub reductions: u64,
}

/// What an ACK's counts said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnVerdict {
    /// Nothing new (or ECN not in use).
    Nothing,
    /// The CE count rose: a congestion event (RFC 9002 §7.1).
    Congestion,
    /// Validation failed just now: ECN is off on the path from here on.
    Failed,
}

impl EcnSender {
    pub fn new(on: bool) -> EcnSender {
        EcnSender { state: on.then_some(EcnState::Unknown), sent_ect0: 0, peer: EcnCounts::default(), reductions: 0 }
    }

    /// The codepoint of the next packet: ECT(0) unless ECN is off or failed on the path.
    pub fn codepoint(&self) -> Ecn {
        match self.state {
            Some(EcnState::Unknown | EcnState::Capable) => Ecn::Ect0,
            None | Some(EcnState::Failed) => Ecn::NotEct,
        }
    }

    /// A packet left with codepoint `e`.
    pub fn on_sent(&mut self, e: Ecn) {
        self.sent_ect0 += (e == Ecn::Ect0) as u64;
    }

    /// An ACK frame newly acknowledged packets, `newly_ect0` of them sent ECT(0), with
    /// `counts` (None: a frame without them); `advances` if it raised the largest
    /// acknowledged packet number. RFC 9000 §13.4.2.1: validation fails when a frame newly
    /// acknowledging ECT packets has no counts, when ECT(0) plus CE grew by less than the
    /// newly acknowledged ECT(0) packets, or when a count exceeds the packets sent with its
    /// codepoint (ECT(1): none here); it is skipped for a frame that does not advance the
    /// largest acknowledged (reordered ACKs). Otherwise a CE count above the last one is a
    /// congestion signal.
    pub fn on_ack(&mut self, counts: Option<EcnCounts>, newly_ect0: u64, advances: bool) -> EcnVerdict {
        let Some(state) = self.state else { return EcnVerdict::Nothing };
        if state == EcnState::Failed {
            return EcnVerdict::Nothing;
        }
        if advances && newly_ect0 > 0 {
            let ok = counts.is_some_and(|c| {
                let grew = c.ect0.saturating_sub(self.peer.ect0) + c.ce.saturating_sub(self.peer.ce);
                grew >= newly_ect0 && c.ect0 <= self.sent_ect0 && c.ect1 == 0
            });
            if !ok {
                self.state = Some(EcnState::Failed);
                return EcnVerdict::Failed;
            }
            self.state = Some(EcnState::Capable);
        }
        let Some(c) = counts else { return EcnVerdict::Nothing };
        let congestion = c.ce > self.peer.ce;
        if advances {
            self.peer = c;
        } else {
            self.peer.ce = self.peer.ce.max(c.ce);
        }
        if congestion {
            EcnVerdict::Congestion
        } else {
            EcnVerdict::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sender(sent: u64) -> EcnSender {
        let mut s = EcnSender::new(true);
        for _ in 0..sent {
            s.on_sent(s.codepoint());
        }
        s
    }

    #[test]
    fn counts_take_each_codepoint_and_their_varints() {
        let mut c = EcnCounts::default();
        assert!(!c.any());
        for e in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            c.count(e);
        }
        assert_eq!(c, EcnCounts { ect0: 2, ect1: 1, ce: 1 });
        assert_eq!(c.wire_len(), 3);
        c.ect0 = 64;
        assert_eq!(c.wire_len(), 4);
    }

    #[test]
    fn matching_counts_validate_and_a_ce_increase_is_congestion() {
        let mut s = sender(4);
        assert_eq!(s.codepoint(), Ecn::Ect0);
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 2, ..Default::default() }), 2, true), EcnVerdict::Nothing);
        assert_eq!(s.state, Some(EcnState::Capable));
        // one of the next two marked CE: the sum still matches, and CE grew
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 3, ect1: 0, ce: 1 }), 2, true), EcnVerdict::Congestion);
        // the same CE count again is no new signal
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 3, ect1: 0, ce: 1 }), 0, true), EcnVerdict::Nothing);
    }

    #[test]
    fn counts_that_do_not_add_up_fail_validation() {
        // a path that clears the marks: the packets arrive Not-ECT, counts stay at zero
        let mut s = sender(2);
        assert_eq!(s.on_ack(None, 2, true), EcnVerdict::Failed);
        assert_eq!((s.state, s.codepoint()), (Some(EcnState::Failed), Ecn::NotEct));
        // nothing after a failure: not even a CE increase
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 0, ect1: 0, ce: 9 }), 1, true), EcnVerdict::Nothing);
        // too few counted
        let mut s = sender(3);
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 1, ..Default::default() }), 2, true), EcnVerdict::Failed);
        // more ECT(0) than sent, or ECT(1) that was never sent
        let mut s = sender(1);
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 2, ..Default::default() }), 1, true), EcnVerdict::Failed);
        let mut s = sender(1);
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 1, ect1: 1, ce: 0 }), 1, true), EcnVerdict::Failed);
    }

    #[test]
    fn a_reordered_ack_is_not_validated_but_its_ce_counts() {
        let mut s = sender(4);
        assert_eq!(s.on_ack(Some(EcnCounts { ect0: 0, ect1: 0, ce: 1 }), 3, false), EcnVerdict::Congestion);
        assert_eq!(s.state, Some(EcnState::Unknown));
        let mut off = EcnSender::new(false);
        assert_eq!((off.codepoint(), off.on_ack(None, 0, true)), (Ecn::NotEct, EcnVerdict::Nothing));
    }
}
