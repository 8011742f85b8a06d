//! Transport protocols, each a sans-IO connection behind one small interface.
//!
//! A [`Connection`] is the transport of one flow: plain TCP (one subflow), Multipath TCP
//! (subflows under a connection level, with its scheduler), SCTP, QUIC or UDP. It never reads a clock or
//! touches the network: the simulation hands it the time, the packets that reach its ends and
//! the timers it asked for, and it answers by pushing [`Action`]s (packets to send, timers to
//! arm, notes for the trace) into a [`Sink`], which carries them out in order.
//! The operations are:
//!
//! * [`write`](Connection::write): the application wrote bytes (with a priority);
//! * [`on_packet`](Connection::on_packet): a packet reached one of the connection's ends;
//! * [`on_timer`](Connection::on_timer): a timer it armed fired;
//! * [`poll_transmit`](Connection::poll_transmit): send what the windows allow now;
//! * timers are asked for through [`Action::Timer`] (its next deadline, at most one pending
//!   event per subflow and purpose);
//! * [`progress`](Connection::progress): bytes written, acknowledged, delivered and sent;
//! * [`snapshot`](Connection::snapshot) and [`path_sample`](Connection::path_sample): what
//!   the time series record;
//! * [`summarize`](Connection::summarize): the transport's part of the flow summary.

mod build;
pub mod mptcp;
pub mod quic;
pub mod sctp;
pub mod tcp;
pub mod udp;

use crate::cc::Controller;
use crate::feedback::RxLogic;
use crate::metrics::pcap::Capture;
pub use crate::metrics::pcap::CaptureSetup;
use crate::metrics::{FlowSummary, TraceKind};
use crate::net::Header;
use crate::sched::Sched;
use crate::time::{Dur, SimTime};
pub use mptcp::MptcpConn;
pub use quic::QuicConn;
pub use sctp::SctpConn;
pub use tcp::TcpConn;
pub use udp::UdpConn;

/// The purposes a connection arms timers for, one pending event each per subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// Retransmission timeout of the subflow's sender.
    Rto,
    /// Delayed-ACK timer of the subflow's receiver.
    DelAck,
    /// Timer of the receiver-side logic for this path ([`crate::feedback::ReceiverLogic`]).
    Feedback,
    /// The scheduler's wake-up (a paced sender's next sending time); `sub` is 0.
    Pace,
    /// A Multipath TCP subflow joins the connection.
    Join,
    /// A Multipath QUIC path's status changes (`quic.path_status`); `sub` is the change's index.
    PathStatus,
}

/// What a connection asks the simulation to do, in the order it must happen.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Put a packet of `size` bytes on the wire along `route`, from subflow `sub`.
    Packet { sub: u8, route: u32, size: u32, header: Header },
    /// Fire [`Connection::on_timer`] for (`sub`, `kind`) at `at`.
    Timer { sub: u16, kind: TimerKind, at: SimTime },
    /// An event for the packet trace that is not a packet (a timeout).
    Note { sub: u8, kind: TraceKind, seq: u64, dsn: u64 },
}

/// Where a connection's actions go, in order. The simulation's sink carries each out at
/// once; [`Tx`] collects them (for tests, or to inspect what a call produced).
pub trait Sink {
    fn push(&mut self, a: Action);
}

/// A sink that keeps the actions in a list.
#[derive(Debug, Default)]
pub struct Tx {
    pub out: Vec<Action>,
}

impl Sink for Tx {
    #[inline]
    fn push(&mut self, a: Action) {
        self.out.push(a);
    }
}

/// Byte counters of a connection, from the application's point of view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Application bytes written so far.
    pub written: u64,
    /// Application bytes acknowledged end to end (DATA_ACK, or the TCP ACK; UDP: all sent).
    pub acked: u64,
    /// Application bytes delivered to the receiving application (in order, except UDP).
    pub delivered: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
}

/// What arrived for the receiving application with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Nothing new for the application (an ACK, a duplicate, data out of order).
    Nothing,
    /// The in-order byte stream grew to `upto` bytes.
    Stream { upto: u64 },
    /// A write carried on a stream of its own (QUIC's stream per media frame) reached the
    /// receiving application whole; it ends at `end` in the sequence of the writes. A packet
    /// that completes several gives the others by [`Transport::take_message`].
    Message { end: u64 },
    /// A datagram sent at `sent_at`.
    Datagram { sent_at: SimTime },
}

/// The connection-wide figures the flow time series record at each sample.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConnSnapshot {
    /// Sums over subflows.
    pub cwnd: u64,
    pub in_flight: u64,
    pub retransmits: u64,
    /// The smallest srtt of any subflow.
    pub srtt: Option<Dur>,
    /// The window the receiver grants (0 if unlimited or none).
    pub rwnd: u64,
    /// Highest sequence (DSN for Multipath TCP) sent so far, or bytes written for UDP.
    pub sent: u64,
    pub rcv_buffer: u64,
    /// Time blocked by the receive window so far.
    pub blocked: Dur,
    /// JSCTP: the primary destination's smoothed jitter ratio and k/w threshold.
    pub jitter: Option<(f64, f64)>,
}

/// What the subflow series record of one path of a connection at a sample: a TCP subflow,
/// or an SCTP destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathSample {
    pub cwnd: u64,
    /// `u64::MAX` while the path is in its first slow start.
    pub ssthresh: u64,
    pub in_flight: u64,
    pub srtt: Option<Dur>,
    pub rto: Dur,
    /// Bytes delivered by way of this path (a subflow's in-order bytes, or the bytes an SCTP
    /// receiver took from this destination).
    pub delivered: u64,
    /// MPTCP-rec's figures of the path.
    pub rec: Option<mptcp::RecPath>,
    /// The congestion controller's model of the path (BBR's bandwidth, min RTT and gains).
    pub model: Option<crate::cc::RateModel>,
}

/// A transport protocol's connection, as the simulation drives and observes it. Each
/// transport implements it in its own folder and takes one line of the [`transports!`]
/// table, which makes the [`Connection`] enum the simulation holds.
pub trait Transport {
    /// A short name of the transport, as summaries show it.
    const KIND: &'static str;

    /// The application writes `len` bytes with `priority` (0: ordinary data).
    fn write(&mut self, len: u64, priority: u8);
    /// A write as [`write`](Self::write) of a media frame that is past its playback deadline
    /// from `expires` on (QUIC with `quic.reset_late` resets its stream then; the others
    /// ignore it).
    fn write_until(&mut self, len: u64, priority: u8, _expires: Option<SimTime>) {
        self.write(len, priority);
    }
    /// A packet of this connection reached one of its ends, on subflow `sub`.
    fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival;
    /// A timer armed through [`Action::Timer`] fired at `now`.
    fn on_timer(&mut self, _now: SimTime, _sub: usize, _kind: TimerKind, _tx: &mut impl Sink) {}
    /// Sends whatever the windows allow now.
    fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink);

    /// Application bytes written so far (the cheap part of [`progress`](Self::progress)).
    fn written(&self) -> u64;
    /// Bytes written and not yet acknowledged: what occupies the send buffer.
    fn unacked(&self) -> u64;
    /// Whether writes go through a send buffer (refused when it is full); UDP has none.
    fn has_send_buffer(&self) -> bool {
        true
    }
    /// The payload the connection's own send buffer admits now, where it sizes it itself
    /// (Multipath TCP with `linux_upstream`: the kernel's autotuned buffer); None: the flow's
    /// `tcp.snd_buf`. The application keeps at most the smaller of the two written and not
    /// yet acknowledged.
    fn send_buffer(&self) -> Option<u64> {
        None
    }
    fn progress(&self) -> Progress;

    /// Replaces the congestion controller of every TCP subflow with one `make` returns (one
    /// call per subflow); false if the transport has none.
    fn set_controller(&mut self, _make: &mut dyn FnMut() -> Controller) -> bool {
        false
    }
    /// Names of the paths the connection uses, one per subflow or destination (UDP: its one
    /// path).
    fn path_names(&self) -> Vec<String>;
    /// Paths the subflow series show a row for (subflows or destinations).
    fn path_count(&self) -> usize;
    /// The subflow series' figures of path `k` (below [`path_count`](Self::path_count)).
    fn path_sample(&self, k: usize, now: SimTime) -> PathSample;
    /// MPTCP-rec's figures of subflow `k` (None for any other transport or scheduler).
    fn rec_path(&self, _k: usize, _now: SimTime) -> Option<mptcp::RecPath> {
        None
    }
    /// The connection-wide figures of the flow series.
    fn snapshot(&self, now: SimTime) -> ConnSnapshot;
    /// Fills in the transport's fields of a flow summary. `sub_goodput` gives each path's
    /// goodput from its index and bytes delivered by way of it; `end` is the end of the run.
    fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64);

    /// Checks protocol invariants after every step, panicking on a violation (for tests).
    fn set_invariant_checks(&mut self, _on: bool) {}
    /// Installs a scheduler; false if the transport has none.
    fn set_scheduler(&mut self, _sched: Sched) -> bool {
        false
    }
    /// Installs receiver-side logic; false if the transport takes none.
    fn set_receiver_logic(&mut self, _logic: RxLogic) -> bool {
        false
    }

    /// Starts a qlog trace of the connection titled `title`; false if the transport writes
    /// none (only QUIC does).
    fn start_qlog(&mut self, _title: &str) -> bool {
        false
    }
    /// The qlog trace written so far (JSON-SEQ), taken out of the connection.
    fn take_qlog(&mut self) -> Option<String> {
        None
    }

    /// How the connection's packets are captured.
    fn capture_setup(&self) -> CaptureSetup;
    /// Captures a packet arriving back at the sender, before the connection takes it.
    fn capture_arrival(&self, cap: &mut Capture, now: SimTime, sub: usize, header: &Header) {
        cap.arrived(now, sub, header);
    }
    /// Captures the close of a finite transfer once `header` has acknowledged all of it
    /// (`total` bytes): FIN and DATA_FIN for TCP and Multipath TCP.
    fn capture_close(&self, _cap: &mut Capture, _now: SimTime, _header: &Header, _total: Option<u64>) {}
    /// After an [`Arrival::Message`]: the end of a further write the same packet delivered
    /// whole, one per call (QUIC: a packet with several STREAM frames may complete several).
    fn take_message(&mut self) -> Option<u64> {
        None
    }
}

/// The transports, one line each: `Variant(connection type)`. Makes the [`Connection`] enum
/// and its methods, each passed on to the variant's [`Transport`] implementation.
macro_rules! transports {
    ($($variant:ident($conn:ty $(, $boxed:ident)?)),+ $(,)?) => {
        /// The transport of one flow.
        ///
        /// An explicit one-byte tag (`repr(u8)`): matched on every packet, it is read with one
        /// load, where the niche the compiler would otherwise hide the tag in takes a compare
        /// and an add to decode.
        #[allow(clippy::large_enum_variant)] // one per flow, matched on every packet: not worth a box
        #[repr(u8)]
        pub enum Connection {
            $($variant(connection_field!($conn $(, $boxed)?))),+
        }

        impl Connection {
            pub fn kind(&self) -> &'static str {
                match self { $(Connection::$variant(_) => <$conn as Transport>::KIND),+ }
            }
            pub fn write(&mut self, len: u64, priority: u8) {
                match self { $(Connection::$variant(c) => Transport::write(mut_of::<$conn>(c), len, priority)),+ }
            }
            pub fn write_until(&mut self, len: u64, priority: u8, expires: Option<SimTime>) {
                match self { $(Connection::$variant(c) => Transport::write_until(mut_of::<$conn>(c), len, priority, expires)),+ }
            }
            pub fn on_packet(&mut self, now: SimTime, sub: usize, header: &Header, tx: &mut impl Sink) -> Arrival {
                match self { $(Connection::$variant(c) => Transport::on_packet(mut_of::<$conn>(c), now, sub, header, tx)),+ }
            }
            pub fn on_timer(&mut self, now: SimTime, sub: usize, kind: TimerKind, tx: &mut impl Sink) {
                match self { $(Connection::$variant(c) => Transport::on_timer(mut_of::<$conn>(c), now, sub, kind, tx)),+ }
            }
            pub fn poll_transmit(&mut self, now: SimTime, tx: &mut impl Sink) {
                match self { $(Connection::$variant(c) => Transport::poll_transmit(mut_of::<$conn>(c), now, tx)),+ }
            }
            pub fn take_message(&mut self) -> Option<u64> {
                match self { $(Connection::$variant(c) => Transport::take_message(mut_of::<$conn>(c))),+ }
            }
            #[inline]
            pub fn written(&self) -> u64 {
                match self { $(Connection::$variant(c) => Transport::written(ref_of::<$conn>(c))),+ }
            }
            #[inline]
            pub fn unacked(&self) -> u64 {
                match self { $(Connection::$variant(c) => Transport::unacked(ref_of::<$conn>(c))),+ }
            }
            pub fn has_send_buffer(&self) -> bool {
                match self { $(Connection::$variant(c) => Transport::has_send_buffer(ref_of::<$conn>(c))),+ }
            }
            #[inline]
            pub fn send_buffer(&self) -> Option<u64> {
                match self { $(Connection::$variant(c) => Transport::send_buffer(ref_of::<$conn>(c))),+ }
            }
            pub fn progress(&self) -> Progress {
                match self { $(Connection::$variant(c) => Transport::progress(ref_of::<$conn>(c))),+ }
            }
            pub fn set_controller(&mut self, make: &mut dyn FnMut() -> Controller) -> bool {
                match self { $(Connection::$variant(c) => Transport::set_controller(mut_of::<$conn>(c), make)),+ }
            }
            pub fn path_names(&self) -> Vec<String> {
                match self { $(Connection::$variant(c) => Transport::path_names(ref_of::<$conn>(c))),+ }
            }
            pub fn path_count(&self) -> usize {
                match self { $(Connection::$variant(c) => Transport::path_count(ref_of::<$conn>(c))),+ }
            }
            pub fn path_sample(&self, k: usize, now: SimTime) -> PathSample {
                match self { $(Connection::$variant(c) => Transport::path_sample(ref_of::<$conn>(c), k, now)),+ }
            }
            pub fn rec_path(&self, k: usize, now: SimTime) -> Option<mptcp::RecPath> {
                match self { $(Connection::$variant(c) => Transport::rec_path(ref_of::<$conn>(c), k, now)),+ }
            }
            /// The flow series' figures; a receive window of 4 GiB or more shows as 0 (none).
            pub fn snapshot(&self, now: SimTime) -> ConnSnapshot {
                let mut s = match self { $(Connection::$variant(c) => Transport::snapshot(ref_of::<$conn>(c), now)),+ };
                if s.rwnd >= u32::MAX as u64 {
                    s.rwnd = 0;
                }
                s
            }
            pub fn summarize(&self, s: &mut FlowSummary, end: SimTime, sub_goodput: &dyn Fn(usize, u64) -> f64) {
                s.transport = self.kind().to_string();
                match self { $(Connection::$variant(c) => Transport::summarize(ref_of::<$conn>(c), s, end, sub_goodput)),+ }
            }
            pub fn set_invariant_checks(&mut self, on: bool) {
                match self { $(Connection::$variant(c) => Transport::set_invariant_checks(mut_of::<$conn>(c), on)),+ }
            }
            pub fn set_scheduler(&mut self, sched: Sched) -> bool {
                match self { $(Connection::$variant(c) => Transport::set_scheduler(mut_of::<$conn>(c), sched)),+ }
            }
            pub fn set_receiver_logic(&mut self, logic: RxLogic) -> bool {
                match self { $(Connection::$variant(c) => Transport::set_receiver_logic(mut_of::<$conn>(c), logic)),+ }
            }
            pub fn start_qlog(&mut self, title: &str) -> bool {
                match self { $(Connection::$variant(c) => Transport::start_qlog(mut_of::<$conn>(c), title)),+ }
            }
            pub fn take_qlog(&mut self) -> Option<String> {
                match self { $(Connection::$variant(c) => Transport::take_qlog(mut_of::<$conn>(c))),+ }
            }
            pub fn capture_setup(&self) -> CaptureSetup {
                match self { $(Connection::$variant(c) => Transport::capture_setup(ref_of::<$conn>(c))),+ }
            }
            pub fn capture_arrival(&self, cap: &mut Capture, now: SimTime, sub: usize, header: &Header) {
                match self { $(Connection::$variant(c) => Transport::capture_arrival(ref_of::<$conn>(c), cap, now, sub, header)),+ }
            }
            pub fn capture_close(&self, cap: &mut Capture, now: SimTime, header: &Header, total: Option<u64>) {
                match self { $(Connection::$variant(c) => Transport::capture_close(ref_of::<$conn>(c), cap, now, header, total)),+ }
            }
        }
    };
}

/// The type a [`Connection`] variant holds: the connection, or a box of it (`boxed`) for a
/// large one.
macro_rules! connection_field {
    ($conn:ty) => { $conn };
    ($conn:ty, boxed) => { Box<$conn> };
}

#[inline(always)]
fn ref_of<T>(c: &impl std::borrow::Borrow<T>) -> &T {
    c.borrow()
}

#[inline(always)]
fn mut_of<T>(c: &mut impl std::borrow::BorrowMut<T>) -> &mut T {
    c.borrow_mut()
}

transports! {
    Tcp(TcpConn),
    Mptcp(MptcpConn, boxed),
    Udp(UdpConn),
    Sctp(SctpConn, boxed),
    Quic(QuicConn, boxed),
}

/// Asks for a timer event at `deadline` unless one at or before it is already pending.
pub(crate) fn arm(tx: &mut impl Sink, pending: &mut Option<SimTime>, deadline: Option<SimTime>, sub: usize, kind: TimerKind) {
    if let Some(d) = deadline {
        if pending.is_none_or(|p| d < p) {
            tx.push(Action::Timer { sub: sub as u16, kind, at: d });
            *pending = Some(d);
        }
    }
}
