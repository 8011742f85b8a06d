//! F-RTO (RFC 5682 §3, the SACK-enhanced algorithm, as Linux's `tcp_process_loss`): detects a
//! spurious retransmission timeout so that its window reduction can be undone.
//!
//! After a timeout the sender retransmits the first unacknowledged segment. If the first ACK
//! after that advances the window, the sender transmits *new* data instead of more
//! retransmissions (step 2b). If the next ACK then acknowledges (cumulatively or by SACK)
//! data that was never retransmitted, the original transmissions were merely delayed: the
//! timeout was spurious (step 3b) and the sender returns to the window it had before. A
//! duplicate ACK or a SACK of only the new data means the loss was real (step 3a): the
//! conventional recovery goes on. Linux (and this model) also declares a timeout spurious as
//! soon as any ACK after it acknowledges never-retransmitted data.

/// What the sender must do after an ACK in the Loss state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrtoAction {
    /// F-RTO is not running (disabled, or finished): conventional recovery.
    Conventional,
    /// The timeout was spurious: undo its reduction and return to the Open state.
    Undo,
    /// Step 2b: send new data (not retransmissions) on this ACK.
    SendNew,
    /// Keep waiting.
    Wait,
}

/// The facts of one ACK F-RTO looks at.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckFacts {
    /// The cumulative ACK advanced.
    pub una_advanced: bool,
    /// Data never retransmitted was newly acknowledged or SACKed.
    pub orig_acked: bool,
    /// Something was newly SACKed, or the ACK was a duplicate.
    pub sacked_or_dup: bool,
    /// Everything outstanding at the timeout is now acknowledged.
    pub recovered: bool,
    /// Unsent data is available and the receive window has room for it.
    pub can_send_new: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frto {
    active: bool,
    /// snd_nxt when the timeout fired, then when new data was first sent after it.
    high_seq: u64,
}

impl Frto {
    /// A timeout fired with `snd_nxt`; F-RTO runs if `enabled`.
    pub fn on_timeout(&mut self, enabled: bool, snd_nxt: u64) {
        self.active = enabled;
        self.high_seq = snd_nxt;
    }

    pub fn active(&self) -> bool {
        self.active
    }

    pub fn stop(&mut self) {
        self.active = false;
    }

    /// An ACK arrived in the Loss state; `snd_nxt` is the sender's before it sends anything.
    pub fn on_ack(&mut self, f: AckFacts, snd_nxt: u64) -> FrtoAction {
        if !self.active {
            return FrtoAction::Conventional;
        }
        if f.orig_acked {
            // step 3b: never-retransmitted data arrived
            self.active = false;
            return FrtoAction::Undo;
        }
        if snd_nxt > self.high_seq {
            // new data went out after the timeout (step 2b done): a duplicate ACK or a SACK
            // now reports a real loss (step 3a)
            if f.sacked_or_dup {
                self.active = false;
                return FrtoAction::Conventional;
            }
            return FrtoAction::Wait;
        }
        if f.una_advanced && !f.recovered {
            self.high_seq = snd_nxt;
            if f.can_send_new {
                return FrtoAction::SendNew;
            }
            self.active = false;
            return FrtoAction::Conventional;
        }
        if f.recovered {
            self.active = false;
        }
        FrtoAction::Conventional
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Controller;
    use crate::net::AckHeader;
    use crate::time::{Dur, SimTime};
    use crate::transport::tcp::{CaState, SenderConfig, TcpSender, TxSegment};

    #[test]
    fn the_state_machine_follows_rfc_5682() {
        let mut f = Frto::default();
        f.on_timeout(true, 10_000);
        // step 2b: the first ACK advances: send new data
        let a = AckFacts { una_advanced: true, can_send_new: true, ..AckFacts::default() };
        assert_eq!(f.on_ack(a, 10_000), FrtoAction::SendNew);
        // new data was sent; a duplicate ACK: the loss was real
        let dup = AckFacts { sacked_or_dup: true, ..AckFacts::default() };
        assert_eq!(f.on_ack(dup, 12_000), FrtoAction::Conventional);
        assert!(!f.active());
        // disabled: always conventional
        let mut g = Frto::default();
        g.on_timeout(false, 10_000);
        assert_eq!(g.on_ack(AckFacts { orig_acked: true, ..AckFacts::default() }, 10_000), FrtoAction::Conventional);
        // nothing to send in step 2b: fall back
        let mut h = Frto::default();
        h.on_timeout(true, 10_000);
        assert_eq!(h.on_ack(AckFacts { una_advanced: true, ..AckFacts::default() }, 10_000), FrtoAction::Conventional);
    }

    const MSS: u64 = 1000;

    fn ms(x: u64) -> SimTime {
        SimTime(Dur::from_millis(x).0)
    }

    fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    /// A window of 20 segments is merely delayed past the timer: the first ACK after the
    /// timeout acknowledges the head (its original, but the sender cannot tell), the next
    /// acknowledges segments never retransmitted.
    fn delayed_window(frto: bool) -> TcpSender {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 20, frto, tlp: false, ..SenderConfig::default() };
        let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        s.seed_rtt(Dur::from_millis(100));
        s.write(100 * MSS);
        drain(&mut s, ms(0));
        let t = s.rto_deadline().unwrap();
        s.on_rto(t);
        assert_eq!(s.cwnd(), MSS);
        let rtx = drain(&mut s, t);
        assert_eq!(rtx.len(), 1);
        s.on_ack(t + Dur::from_millis(1), &AckHeader::new(MSS, 1 << 30));
        let next = drain(&mut s, t + Dur::from_millis(1));
        if frto {
            assert!(next.iter().all(|x| !x.retx && x.seq >= 20 * MSS), "new data only: {next:?}");
        }
        s.on_ack(t + Dur::from_millis(2), &AckHeader::new(2 * MSS, 1 << 30));
        s
    }

    #[test]
    fn a_spurious_timeout_is_undone() {
        let s = delayed_window(true);
        assert_eq!(s.state(), CaState::Open);
        assert_eq!(s.stats.spurious_timeouts, 1);
        // back to the window before the timeout (20 segments), not slow start from one
        assert!(s.cwnd() >= 20 * MSS, "cwnd {}", s.cwnd());
        assert_eq!(s.ssthresh(), u64::MAX);
        assert!(s.check_invariants().is_ok());
        // without F-RTO the reduction stands, though the head's ACK, 1 ms after its
        // retransmission, shows the timeout spurious all the same
        let s = delayed_window(false);
        assert_eq!(s.state(), CaState::Loss);
        assert_eq!(s.stats.spurious_timeouts, 1);
        assert!(s.cwnd() <= 4 * MSS);
    }
}
