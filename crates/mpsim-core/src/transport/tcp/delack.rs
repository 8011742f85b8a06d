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
//!   - quick ACKs while the offered window grows (`tcp_grow_window`): the receiver raises the
//!     window it offers, `rcv_ssthresh`, by twice the MSS for every in-order segment of 128 B
//!     or more until it reaches `window_clamp`, and each raise sets the low bit of
//!     `icsk_ack.quick` (`quick |= 1`), so that segment is acknowledged at once (see
//!     [`WindowGrowth`]);
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
//!   immediate here, so the window never lags), the window's growth on out-of-order segments
//!   (Linux grows it for an out-of-order skb that is not merged into the one before, which a
//!   burst after a hole mostly is; their ACKs go at once anyway), ACK compression of SACK-carrying ACKs (Linux 4.18+), and the
//!   interactive (pingpong) mode.

use crate::time::{Dur, SimTime};

/// Linux's TCP_MAX_QUICKACKS.
pub const QUICKACKS: u32 = 16;
/// Cap on the ATO of a receiver that is not interactive (Linux: HZ/2).
const MAX_ATO: Dur = Dur::from_millis(500);
/// Linux's TCP_RTO_MIN.
const RTO_MIN: Dur = Dur::from_millis(200);
/// Segments shorter than this do not grow the window (`tcp_event_data_recv`).
const GROW_MIN_LEN: u32 = 128;

/// How the window a Linux receiver offers grows (`rcv_ssthresh`, Linux 6.x).
///
/// Linux turns receive memory into window through `scaling_ratio` (payload over true size,
/// in 256ths): `tcp_select_initial_window` and `tcp_init_buffer_space` start the socket at
/// the default ratio, 128 (half the doubled `SO_RCVBUF`, i.e. the buffer asked for), and the
/// first segment's true size (`tcp_measure_rcv_mss`) sets the measured ratio, which raises
/// `window_clamp` to that share of the buffer (`tcp_set_window_clamp`, not capped by what the
/// window field carries) while `rcv_ssthresh` stays at the window offered so far.
/// `tcp_grow_window` then adds `max(2·advmss, 2·len)` per segment (the true size of a full
/// segment is within what the ratio allows, so no `__tcp_grow_window`) up to `window_clamp`.
/// The testbed's receivers measured it: with a 4 MiB buffer 4,198,848 B at the start, 2,976 B
/// (twice the MSS) per segment, 5,308,416 B at the end, the ratio 0.633; with 256,000 B,
/// 324,000 B at the end, above the 262,140 B the field carries at window scale 2
/// (`benches/results/slow_start_exit.md`, `KERNEL_RCV_SCALING` in the kernel testbed). The
/// offered window is capped by the field separately, so the growth, and its quick ACKs, go
/// on after the window offered stopped growing.
///
/// In the simulator the receive buffer (`tcp.rcv_buf`) is the memory's share offered as
/// window (as `mpsim kernel` sets it from the kernel's window), so the buffer asked for is
/// that share at the default ratio over the measured one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowGrowth {
    /// `rcv_ssthresh` at the start.
    pub start: u64,
    /// Linux's `window_clamp`: the window the receiver offers once grown.
    pub window_clamp: u64,
    /// The receiver's MSS (Linux's `advmss`).
    pub mss: u32,
}

impl WindowGrowth {
    /// Linux's `scaling_ratio` before any segment (TCP_DEFAULT_SCALING_RATIO), in 256ths.
    pub const DEFAULT_RATIO: u64 = 128;
    /// The ratio measured on the testbed's receivers (0.633), in 256ths.
    pub const MEASURED_RATIO: u64 = 162;

    /// The growth for a receive buffer offering `rcv_buf` bytes as window, with segments of
    /// `mss` bytes.
    pub fn linux(rcv_buf: u64, mss: u32) -> WindowGrowth {
        WindowGrowth { start: rcv_buf / Self::MEASURED_RATIO * Self::DEFAULT_RATIO, window_clamp: rcv_buf, mss }
    }

    /// Segments of `mss` bytes that grow the window, each acknowledged at once.
    pub fn segments(&self) -> u64 {
        (self.window_clamp - self.start).div_ceil(2 * self.mss as u64)
    }
}

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
    /// The window's growth, if modelled, and the window offered so far (`rcv_ssthresh`).
    growth: Option<WindowGrowth>,
    rcv_ssthresh: u64,
    /// Adaptive ACK timeout; zero before the first segment.
    ato: Dur,
    last_rcv: Option<SimTime>,
}

impl LinuxDelack {
    /// `ato_min`: the floor of the timeout; `srtt`: the handshake's RTT, if known; `growth`:
    /// the offered window's growth, None to leave it out.
    pub fn new(ato_min: Dur, srtt: Option<Dur>, growth: Option<WindowGrowth>) -> LinuxDelack {
        let rcv_ssthresh = growth.map_or(0, |g| g.start);
        LinuxDelack { ato_min, srtt, quick: 0, growth, rcv_ssthresh, ato: Dur::ZERO, last_rcv: None }
    }

    /// The window offered so far (Linux `rcv_ssthresh`), None without the growth modelled.
    pub fn rcv_ssthresh(&self) -> Option<u64> {
        self.growth.map(|_| self.rcv_ssthresh)
    }

    fn rto(&self) -> Dur {
        match self.srtt {
            Some(r) => r + Dur((2 * r.0).max(RTO_MIN.0)),
            None => Dur::from_secs(1),
        }
    }

    /// In-order data of `len` bytes arrived at `now` (Linux `tcp_event_data_recv`).
    pub fn on_data(&mut self, now: SimTime, len: u32) {
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
        if len >= GROW_MIN_LEN {
            self.grow_window(len);
        }
    }

    /// Linux `tcp_grow_window`: raise the offered window towards the clamp, and acknowledge
    /// this segment at once if it was raised.
    fn grow_window(&mut self, len: u32) {
        if let Some(g) = self.growth {
            let room = g.window_clamp.saturating_sub(self.rcv_ssthresh);
            if room > 0 {
                let incr = 2 * g.mss.max(len) as u64;
                self.rcv_ssthresh += room.min(incr);
                self.quick |= 1;
            }
        }
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
        let mut d = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(3)), None);
        for k in 0..QUICKACKS {
            d.on_data(SimTime(k as u64 * 1_000_000), 1000);
            assert!(d.quick(), "segment {k}");
            d.on_ack_sent();
        }
        d.on_data(ms(20), 1000);
        assert!(!d.quick());
        assert_eq!(d.timeout(), Dur::from_millis(40));
    }

    #[test]
    fn sparse_arrivals_lengthen_the_timeout_up_to_the_rtt_and_idle_restores_quick_acks() {
        // a gap of 30 ms (above ATO_MIN/2, below ato): ato = 40/2 + 30 = 50 ms, under the
        // cap of max(srtt, 40 ms) = 200 ms
        let mut d2 = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(200)), None);
        d2.on_data(ms(0), 1000);
        d2.quick = 0;
        d2.on_data(ms(30), 1000);
        assert_eq!(d2.timeout(), Dur::from_millis(50));
        // a small srtt caps it at the floor
        let mut d3 = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(3)), None);
        d3.on_data(ms(0), 1000);
        d3.quick = 0;
        d3.on_data(ms(30), 1000);
        assert_eq!(d3.timeout(), Dur::from_millis(40));
        // an idle gap longer than the receiver's RTO (200 + 400 ms) restores quick ACKs
        d2.on_data(ms(30 + 601), 1000);
        assert!(d2.quick());
    }

    #[test]
    fn the_window_grows_from_the_buffer_asked_for_to_the_clamp_by_two_segments_each() {
        // the testbed's 20 + 50 ms row: 4 MiB asked for, window_clamp 5,308,416 B measured,
        // rcv_ssthresh from 4,198,848 B by 2,976 B (twice the advertised MSS of 1,488 B)
        let g = WindowGrowth::linux(5_308_416, 1488);
        assert_eq!(g.start, 4_194_304);
        assert_eq!(g.segments(), 375); // (5,308,416 - 4,194,304) / 2,976 = 374.4
        let mut d = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(20)), Some(g));
        let mut grown = 0;
        for k in 0..1000u64 {
            let before = d.rcv_ssthresh().unwrap();
            d.on_data(SimTime(k * 1_200_000), 1464);
            if d.rcv_ssthresh().unwrap() > before {
                grown += 1;
                assert!(d.quick(), "segment {k}");
            }
            d.on_ack_sent();
        }
        assert_eq!(grown, 375);
        assert_eq!(d.rcv_ssthresh(), Some(5_308_416));
        // a 256,000 B buffer: 324,000 B at the end, as measured, beyond what window scale 2
        // carries (262,140 B), from the 256,000 B asked for
        let s = WindowGrowth::linux(324_000, 1488);
        assert_eq!((s.start, s.window_clamp, s.segments()), (256_000, 324_000, 23));
        // short segments do not grow it
        let mut d = LinuxDelack::new(Dur::from_millis(40), None, Some(g));
        d.on_data(ms(0), 100);
        assert_eq!(d.rcv_ssthresh(), Some(g.start));
    }

    #[test]
    fn each_growth_sets_the_low_bit_of_quick_so_the_start_s_quick_acks_wait_for_its_end() {
        // a clamp that grows for 40 segments of 850 B: (324,000 - 256,000) / 1,700
        let g = WindowGrowth::linux(324_000, 850);
        assert_eq!((g.start, g.segments()), (256_000, 40));
        let mut d = LinuxDelack::new(Dur::from_millis(40), Some(Dur::from_millis(3)), Some(g));
        let mut quick = 0;
        for k in 0..100u64 {
            d.on_data(SimTime(k * 1_000_000), 850);
            if d.quick() {
                quick += 1;
                d.on_ack_sent();
            }
        }
        // 40 segments while the window grows (each raise quick 16 -> 17, each ACK back to 16),
        // then the 16 of the start
        assert_eq!(quick, 40 + QUICKACKS);
    }
}
