//! The receiver as a place where logic runs: a [`ReceiverLogic`] sees every data packet that
//! arrives on each path and attaches [`Feedback`] fields to the acknowledgements the receiver
//! sends; the sender's scheduler reads them back ([`crate::sched::Scheduler::on_ack_info`]).
//! Any receiver-driven scheme (MPTCP-rec's DSRor, a user's own in Python or Rust) plugs in
//! here, without touching the TCP code.
//!
//! The connection drives it: after each data packet it asks whether an ACK must go out at
//! once ([`ReceiverLogic::on_data`]), it asks for the fields of every ACK it builds
//! ([`ReceiverLogic::feedback`]), and it keeps one timer per path at
//! [`ReceiverLogic::deadline`], calling [`ReceiverLogic::on_timer`] when it fires (an ACK
//! carrying feedback follows if the logic asks for one).

//!
//! Each built-in logic is one file implementing [`ReceiverLogic`] and one entry of the
//! [`receiver_logics!`] table below (as `cc/` and `sched/` declare theirs): the table makes
//! the [`RxLogic`] enum (static dispatch, plus a `Custom` slot for one from outside the crate)
//! and [`RECEIVER_LOGICS`], the names and descriptions `mpsim list` shows. A built-in logic is
//! made from the connection's [`RxSetup`]; MPTCP-rec's scheduler brings its own (`dsror`).

pub mod dsror;
pub mod tear;

use crate::net::{DataHeader, Feedback};
use crate::time::{Dur, SimTime};
use tear::{TearConfig, TearState, TearStats};

/// Receiver-side logic of a connection, over its paths (subflow indices).
pub trait ReceiverLogic {
    /// Short name.
    fn name(&self) -> &'static str;

    /// A data segment arrived on `path` at `now`. True if an ACK carrying feedback must be
    /// sent on that path now (rather than whenever the next ACK goes).
    fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool;

    /// The fields to attach to the ACK about to leave on `path`, if any.
    fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback>;

    /// When `on_timer` must next run for `path`.
    fn deadline(&self, _path: usize) -> Option<SimTime> {
        None
    }

    /// The timer of `path` fired; true if an ACK carrying feedback must be sent on it now.
    fn on_timer(&mut self, _now: SimTime, _path: usize) -> bool {
        false
    }

    /// After each data packet: the receive window the receiver will advertise leaves `room`
    /// bytes above the highest byte received on any path (0: the sender may send nothing new).
    /// The connection asks for every path's [`deadline`](Self::deadline) again afterwards.
    fn on_window(&mut self, _now: SimTime, _room: u64) {}
}

/// What a built-in receiver logic is made from: the connection's segment size, each path's
/// handshake RTT, and MPTCP-rec's emulation settings.
#[derive(Clone, Debug)]
pub struct RxSetup {
    pub tear: TearConfig,
    pub mss: u32,
    pub rtts: Vec<Dur>,
}

/// Declares the built-in receiver logics from one table: module (one file each) and type,
/// then each name with its constructor (from an [`RxSetup`]) and the one-line description
/// `mpsim list` shows.
macro_rules! receiver_logics {
    ($($module:ident :: $ty:ident { $($name:literal => $make:expr, $desc:literal;)+ })+) => {
        $(pub use $module::$ty;)+

        /// The receiver logic a connection runs: built-in (static dispatch) or a boxed user
        /// implementation.
        pub enum RxLogic {
            $($ty($ty),)+
            Custom(Box<dyn ReceiverLogic + Send>),
        }

        /// Names and one-line descriptions of the built-in receiver logics.
        pub const RECEIVER_LOGICS: &[(&str, &str)] = &[$($(($name, $desc),)+)+];

        impl RxLogic {
            /// The built-in logic called `name`, set up as `s`.
            pub fn by_name(name: &str, s: &RxSetup) -> Option<RxLogic> {
                let make: fn(&RxSetup) -> RxLogic = match name {
                    $($($name => |s| RxLogic::$ty(($make)(s)),)+)+
                    _ => return None,
                };
                Some(make(s))
            }

            fn inner(&mut self) -> &mut dyn ReceiverLogic {
                match self {
                    $(RxLogic::$ty(d) => d,)+
                    RxLogic::Custom(c) => c.as_mut(),
                }
            }

            fn inner_ref(&self) -> &dyn ReceiverLogic {
                match self {
                    $(RxLogic::$ty(d) => d,)+
                    RxLogic::Custom(c) => c.as_ref(),
                }
            }
        }
    };
}

receiver_logics! {
    dsror::Dsror {
        "mptcp_rec" => Dsror::from_setup,
            "MPTCP-rec's DSRor (seed 000): a TCP emulation per path at the receiver; each path's desired sending rate on an extended ACK";
    }
}

impl RxLogic {
    pub fn name(&self) -> &'static str {
        self.inner_ref().name()
    }

    pub fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool {
        self.inner().on_data(now, path, seg)
    }

    pub fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback> {
        self.inner().feedback(now, path)
    }

    pub fn deadline(&self, path: usize) -> Option<SimTime> {
        self.inner_ref().deadline(path)
    }

    pub fn on_timer(&mut self, now: SimTime, path: usize) -> bool {
        self.inner().on_timer(now, path)
    }

    pub fn on_window(&mut self, now: SimTime, room: u64) {
        self.inner().on_window(now, room)
    }

    /// Per path: the emulation's state, window (packets), advertised rate (bit/s) and
    /// counters, for the summary and the series (built-in DSRor only).
    pub fn tear_paths(&self) -> Option<Vec<(TearState, f64, f64, TearStats)>> {
        match self {
            RxLogic::Dsror(d) => Some(d.paths().iter().map(|t| (t.state(), t.rwnd(), t.advertised(), t.stats.clone())).collect()),
            RxLogic::Custom(_) => None,
        }
    }
}
