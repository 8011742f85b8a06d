//! Delayed acknowledgements: when the receiver acknowledges in-order data.
//!
//! Three modes (`tcp.delayed_ack`):
//!
//! * `Off` (false): every segment is acknowledged at once.
//! * `Every2` (true): RFC 5681 §4.2: every second full-sized segment, or when the fixed
//!   timer (`tcp.delack_timeout`) expires, whichever comes first.
//! * `Linux` ("linux"): Linux's receiver (`tcp_event_data_recv`, `__tcp_ack_snd_check`,
//!   `tcp_send_delayed_ack`):
//!   - quick-ack mode: the first segments of a connection are acknowledged one by one, as
//!     many as `QUICKACKS` (Linux's TCP_MAX_QUICKACKS, reached with any receive window of
//!     32 segments or more); the mode returns after an idle gap longer than the receiver's
//!     retransmission timeout, and when a duplicate segment arrives (a retransmission the
//!     sender made because an ACK was late or lost);
//!   - otherwise an ACK for every second segment (more than one full segment unacknowledged);
//!   - the delayed-ACK timeout is the adaptive ATO: it starts at `tcp.delack_timeout` (Linux's
//!     TCP_ATO_MIN, 40 ms), and each arrival moves it towards the gap since the previous one
//!     (gap ≤ ATO_MIN/2: ato/2 + ATO_MIN/2; gap < ato: ato/2 + gap, at most the RTO); when
//!     armed it is capped by max(srtt, ATO_MIN) and by 500 ms (a bulk receiver is never in
//!     Linux's interactive "pingpong" mode, whose cap is 200 ms);
//!   - data out of order, or filling a hole, is acknowledged at once, as in the other modes;
//!   - a segment carrying PSH is acknowledged at once once the application has read
//!     everything (`TcpReceiver::push_ack`: Linux's pushed-ACK in `tcp_cleanup_rbuf`; for a
//!     Multipath TCP subflow only while the connection holds nothing out of order), the
//!     sender marking PSH as Linux's does (`Subflow::transmit`).
//!
//!   The receiver's RTT and RTO are those Linux takes from the handshake (one sample: srtt =
//!   the handshake RTT, RTO = srtt + max(2·srtt, 200 ms)); without a handshake RTT, no cap
//!   from it. Left out: the receiver's own RTT measurement during the transfer
//!   (`tcp_rcv_rtt_measure`), the window-update ACK when the application reads (reading is
//!   immediate here, so the window never lags), ACK compression of SACK-carrying ACKs (Linux 4.18+), and the
//!   interactive (pingpong) mode.

use crate::time::{Dur, SimTime};

/// Linux's TCP_MAX_QUICKACKS.
pub const QUICKACKS: u32 = 16;
/// Cap on the ATO of a receiver that is not interactive (Linux: HZ/2).
const MAX_ATO: Dur = Dur::from_millis(500);
/// Linux's TCP_RTO_MIN.
const RTO_MIN: Dur = Dur::from_millis(200);

/// How the receiver delays its ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayedAck {
    Off,
    Every2,
    Linux,
}

impl DelayedAck {
    /// The value's name in a scenario: false, true or "linux".
    pub fn name(self) -> &'static str {
        match self {
            DelayedAck::Off => "false",
            DelayedAck::Every2 => "true",
            DelayedAck::Linux => "linux",
        }
    }
    /// ACKs per segment of a long transfer, for estimates.
    pub fn acks_per_segment(self) -> f64 {
        match self {
            DelayedAck::Off => 1.0,
            _ => 0.5,
        }
    }
}

/// Linux's delayed-ACK state of one receiver.
#[derive(Clone, Debug)]
pub struct LinuxDelack {
    ato_min: Dur,
    srtt: Option<Dur>,
    /// Segments still to be acknowledged one by one (Linux `icsk_ack.quick`).
    quick: u32,
    /// Adaptive ACK timeout; zero before the first segment.
    ato: Dur,
    last_rcv: Option<SimTime>,
}

impl LinuxDelack {
    /// `ato_min`: the floor of the timeout; `srtt`: the handshake's RTT, if known.
    pub fn new(ato_min: Dur, srtt: Option<Dur>) -> LinuxDelack {
        LinuxDelack { ato_min, srtt, quick: 0, ato: Dur::ZERO, last_rcv: None }
    }

    fn rto(&self) -> Dur {
        match self.srtt {
            Some(r) => r + Dur((2 * r.0).max(RTO_MIN.0)),
            None => Dur::from_secs(1),
        }
    }

    /// In-order data arrived at `now` (Linux `tcp_event_data_recv`).
    pub fn on_data(&mut self, now: SimTime) {
        match self.last_rcv {
            None => {
                self.quick = QUICKACKS;
                self.ato = self.ato_min;
            }
            Some(last) => {
                let m = now.since(last);
                let half = Dur(self.ato_min.0 / 2);
                if m <= half {
                    self.ato = Dur(self.ato.0 / 2) + half;
                } else if m < self.ato {
                    self.ato = (Dur(self.ato.0 / 2) + m).min(self.rto());
                } else if m > self.rto() {
                    // a long gap: the sender restarts its window, ACK quickly
                    self.quick = QUICKACKS;
                }
            }
        }
        self.last_rcv = Some(now);
    }

    /// A duplicate segment arrived (Linux `tcp_enter_quickack_mode`).
    pub fn on_duplicate(&mut self) {
        self.quick = QUICKACKS;
        self.ato = self.ato_min;
    }

    /// In quick-ack mode: acknowledge this segment at once.
    pub fn quick(&self) -> bool {
        self.quick > 0
    }

    /// An ACK was sent (Linux `tcp_dec_quickack_mode`).
    pub fn on_ack_sent(&mut self) {
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
    }

    /// The timeout to arm for a delayed ACK now (Linux `tcp_send_delayed_ack`).
    pub fn timeout(&self) -> Dur {
        let mut ato = self.ato.max(self.ato_min);
        if ato > self.ato_min {
            let mut max_ato = MAX_ATO;
            if let Some(r) = self.srtt {
                max_ato = max_ato.min(r.max(self.ato_min));
            }
            ato = ato.min(max_ato);
        }
        ato
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(Dur::from_millis(x).0)
    }

    #[test]
    fn the_first_sixteen_acks_are_quick_then_the_timeout_is_the_floor() {
        let mut d = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(3)));
        for k in 0..QUICKACKS {
            d.on_data(SimTime(k as u64 * 1_000_000));
            assert!(d.quick(), "segment {k}");
            d.on_ack_sent();
        }
        d.on_data(ms(20));
        assert!(!d.quick());
        assert_eq!(d.timeout(), Dur::from_millis(40));
    }

    #[test]
    fn sparse_arrivals_lengthen_the_timeout_up_to_the_rtt_and_idle_restores_quick_acks() {
        // a gap of 30 ms (above ATO_MIN/2, below ato): ato = 40/2 + 30 = 50 ms, under the
        // cap of max(srtt, 40 ms) = 200 ms
        let mut d2 = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(200)));
        d2.on_data(ms(0));
        d2.quick = 0;
        d2.on_data(ms(30));
        assert_eq!(d2.timeout(), Dur::from_millis(50));
        // a small srtt caps it at the floor
        let mut d3 = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(3)));
        d3.on_data(ms(0));
        d3.quick = 0;
        d3.on_data(ms(30));
        assert_eq!(d3.timeout(), Dur::from_millis(40));
        // an idle gap longer than the receiver's RTO (200 + 400 ms) restores quick ACKs
        d2.on_data(ms(30 + 601));
        assert!(d2.quick());
    }
}
