//! Tail loss probe (RFC 8985 §7, Linux `tcp_schedule_loss_probe` / `tcp_send_loss_probe`).
//!
//! When the last segments of a flight are lost, no later segment is delivered to trigger
//! RACK or duplicate ACKs, and only the retransmission timer would recover them. TLP arms a
//! probe timeout (PTO) of about two smoothed RTTs instead: when it fires, the sender
//! transmits one segment whatever the window says (new data if it has any, otherwise the last
//! segment again), so that the ACK it elicits lets RACK or SACK find the losses. One probe at
//! a time: a new one waits until the previous probe's sequence is acknowledged. If a probe
//! that was a retransmission turns out to have repaired a loss, the window is reduced once,
//! as after a fast recovery (§7.4.2; without DSACK a sender cannot tell that the original
//! arrived, and must assume the loss).

use crate::time::{Dur, SimTime};

/// Linux adds TCP_RTO_MIN (200 ms) to the PTO when a single segment is outstanding, so that
/// a delayed ACK of that segment does not trigger a probe.
pub const WORST_CASE_DELACK: Dur = Dur::from_millis(200);
/// Linux's TCP_TIMEOUT_MIN (2 ms) added to 2·SRTT otherwise.
pub const PTO_SLACK: Dur = Dur::from_millis(2);
/// The PTO before any RTT sample (Linux: TCP_TIMEOUT_INIT).
pub const PTO_INITIAL: Dur = Dur::from_secs(1);

/// What kind of segment a probe was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    NewData,
    Retransmission,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Tlp {
    /// snd_nxt when the outstanding probe was sent (RFC 8985 TLP.end_seq), and its kind.
    outstanding: Option<(u64, ProbeKind)>,
}

/// What the ACK of a probe means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// No probe was outstanding, or it is not yet acknowledged.
    Pending,
    /// The episode ended without evidence of a loss.
    Done,
    /// A retransmitted probe was acknowledged: a loss was repaired, reduce the window once.
    Repaired,
}

impl Tlp {
    /// The probe timeout: 2·SRTT (+ the worst-case delayed ACK when one segment is
    /// outstanding, + 2 ms otherwise), never later than the RTO would fire.
    pub fn pto(srtt: Option<Dur>, one_segment_out: bool, until_rto: Dur) -> Dur {
        let p = match srtt {
            None => PTO_INITIAL,
            Some(s) => Dur(2 * s.0) + if one_segment_out { WORST_CASE_DELACK } else { PTO_SLACK },
        };
        Dur(p.0.min(until_rto.0))
    }

    /// A probe may be armed: none is outstanding.
    pub fn may_probe(&self) -> bool {
        self.outstanding.is_none()
    }

    /// A probe of `kind` was sent when snd_nxt was `snd_nxt` (after it, for new data).
    pub fn on_probe_sent(&mut self, kind: ProbeKind, snd_nxt: u64) {
        self.outstanding = Some((snd_nxt, kind));
    }

    /// An ACK moved the cumulative acknowledgement to `ack`; `in_recovery` if the sender has
    /// started a loss recovery since (which reduced the window already).
    pub fn on_ack(&mut self, ack: u64, in_recovery: bool) -> ProbeOutcome {
        let Some((end, kind)) = self.outstanding else { return ProbeOutcome::Pending };
        if ack < end {
            return ProbeOutcome::Pending;
        }
        self.outstanding = None;
        if kind == ProbeKind::Retransmission && !in_recovery {
            ProbeOutcome::Repaired
        } else {
            ProbeOutcome::Done
        }
    }

    /// A timeout or a recovery ends any probe episode.
    pub fn reset(&mut self) {
        self.outstanding = None;
    }

    pub fn deadline(now: SimTime, srtt: Option<Dur>, one_segment_out: bool, rto_deadline: Option<SimTime>) -> SimTime {
        let until_rto = rto_deadline.map_or(Dur(u64::MAX), |d| if d > now { d.since(now) } else { Dur::ZERO });
        now + Tlp::pto(srtt, one_segment_out, until_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Controller;
    use crate::net::AckHeader;
    use crate::transport::tcp::{SenderConfig, TcpSender, TimerEvent, TxSegment};

    #[test]
    fn pto_is_two_srtt_capped_by_the_rto() {
        let srtt = Some(Dur::from_millis(50));
        assert_eq!(Tlp::pto(srtt, false, Dur::from_secs(1)), Dur::from_millis(102));
        assert_eq!(Tlp::pto(srtt, true, Dur::from_secs(1)), Dur::from_millis(300));
        assert_eq!(Tlp::pto(srtt, true, Dur::from_millis(250)), Dur::from_millis(250));
        assert_eq!(Tlp::pto(None, false, Dur::from_secs(3)), Dur::from_secs(1));
    }

    #[test]
    fn a_retransmitted_probe_that_is_acknowledged_repaired_a_loss() {
        let mut t = Tlp::default();
        assert_eq!(t.on_ack(5000, false), ProbeOutcome::Pending);
        t.on_probe_sent(ProbeKind::Retransmission, 10_000);
        assert!(!t.may_probe());
        assert_eq!(t.on_ack(9000, false), ProbeOutcome::Pending);
        assert_eq!(t.on_ack(10_000, false), ProbeOutcome::Repaired);
        assert!(t.may_probe());
        t.on_probe_sent(ProbeKind::NewData, 12_000);
        assert_eq!(t.on_ack(12_000, false), ProbeOutcome::Done);
    }

    const MSS: u64 = 1000;

    fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    #[test]
    fn a_lost_tail_is_probed_before_the_timer_fires() {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, ..SenderConfig::default() };
        let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        s.seed_rtt(Dur::from_millis(100));
        s.write(10 * MSS);
        drain(&mut s, SimTime::ZERO);
        // the first 7 segments arrive, the last 3 are lost
        let t = SimTime(Dur::from_millis(100).0);
        s.on_ack(t, &AckHeader::new(7 * MSS, 1 << 30));
        let probe_at = s.timer_deadline().unwrap();
        assert!(probe_at < s.rto_deadline().unwrap());
        assert_eq!(probe_at, t + Dur::from_millis(2 * 100 + 2));
        assert_eq!(s.on_timer(probe_at), TimerEvent::LossProbe);
        let probe = drain(&mut s, probe_at);
        assert_eq!(
            probe,
            vec![TxSegment { seq: 9 * MSS, len: MSS as u32, retx: true, forced: true, ecn: crate::net::Ecn::NotEct, cwr: false }]
        );
        assert_eq!(s.stats.loss_probes, 1);
        assert_eq!(s.stats.timeouts, 0);
    }
}
