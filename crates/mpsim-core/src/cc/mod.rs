//! Congestion control: a small trait, one file per algorithm, static dispatch by enum.
//!
//! Controllers do not own the window: the sender passes the current `Window` and the
//! controller returns the new one. Loss detection, recovery and RTT estimation stay in the
//! sender; the controller only decides how the window moves. Hooks that a controller does not
//! need have default implementations.

use crate::rng::Rng;
use crate::time::{Dur, SimTime};
pub use crate::view::CaState;

/// Congestion window and slow-start threshold, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What a controller may see of one subflow of its connection (itself included). Coupled
/// controllers (LIA, OLIA, BALIA) read their siblings through this, never through back doors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubflowState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    pub srtt: Option<Dur>,
    /// Established and able to send: only these count in the coupling.
    pub active: bool,
    /// In fast recovery or after a timeout.
    pub in_recovery: bool,
    /// The controller's own per-path figure, shared with its siblings (OLIA: bytes between
    /// the last two losses or since the last one, whichever is larger).
    pub inter_loss_bytes: u64,
}

/// What the sender knows when an ACK acknowledges new data.
#[derive(Clone, Copy, Debug)]
pub struct AckContext<'a> {
    pub now: SimTime,
    /// Bytes newly acknowledged (cumulatively or by SACK) by this ACK.
    pub bytes_acked: u64,
    /// Bytes in flight (RFC 6675 pipe) before this ACK.
    pub in_flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    pub subflows: &'a [SubflowState],
    pub me: usize,
    /// The receiver's timestamp on this ACK: when it received the data the ACK answers
    /// (TABE's t_n).
    pub received_at: SimTime,
    /// The ACK echoes a congestion-warning mark (`AckHeader::cw_echo`).
    pub cw_echo: bool,
}

/// The kind of congestion signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by duplicate ACKs / SACK: fast retransmit and recovery.
    FastRetransmit,
    /// Retransmission timeout.
    Timeout,
}

/// What the sender knows when it detects congestion.
#[derive(Clone, Copy, Debug)]
pub struct LossContext<'a> {
    pub now: SimTime,
    /// Bytes in flight (RFC 6675 pipe) when the loss was detected.
    pub in_flight: u64,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Every subflow of the connection, this one at index `me`; empty for plain TCP.
    pub subflows: &'a [SubflowState],
    pub me: usize,
    /// The latest ACK echoed a congestion-warning mark (`AckHeader::cw_echo`).
    pub cw_echo: bool,
    /// Halve the congestion window rather than the flight (`tcp.ssthresh = "cwnd"`, Linux's
    /// `tcp_reno_ssthresh`); see [`LossContext::halved`].
    pub halve_cwnd: bool,
}

impl LossContext<'_> {
    /// The new ssthresh of a controller that halves on a loss: max(FlightSize/2, 2·MSS) as
    /// RFC 5681 §3.1 (7.1: `in_flight` at the loss), or, with `halve_cwnd`, max(cwnd/2, 2·MSS)
    /// as Linux's `tcp_reno_ssthresh`. The two differ when the window did not limit the
    /// sender (a receive window, an application, or a Multipath TCP scheduler held it back).
    pub fn halved(&self, w: Window) -> u64 {
        halved_ssthresh(if self.halve_cwnd { w.cwnd } else { self.in_flight }, w.mss)
    }
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation, as Linux's
/// `struct rate_sample` of `tcp_rate.c`), counted in packets. The sender takes one on every ACK
/// for a controller that asks for them (`CongestionControl::wants_rate_samples`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Packets delivered over `interval`.
    pub delivered: u64,
    /// The longer of the send and ACK intervals of the sample; None when this ACK gives no
    /// valid sample (nothing newly delivered was sent with a record, or the interval is
    /// shorter than the minimum RTT).
    pub interval: Option<Dur>,
    /// The connection's delivered count when the sampled packet was sent.
    pub prior_delivered: u64,
    /// The sampled packet was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// Packets this ACK newly acknowledged, cumulatively or by SACK.
    pub acked_sacked: u64,
    /// Packets this ACK newly marked lost.
    pub losses: u64,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u64,
    /// This ACK's RTT sample (Karn's rule applied).
    pub rtt: Option<Dur>,
}

/// What a controller that runs the window itself (Linux's `cong_control`) sees on each ACK.
#[derive(Clone, Copy, Debug)]
pub struct RateContext {
    pub now: SimTime,
    pub rs: RateSample,
    /// Packets delivered and marked lost since the start (Linux `tp->delivered`, `tp->lost`),
    /// and when the delivered count last grew (`tp->delivered_mstamp`).
    pub delivered: u64,
    pub lost: u64,
    pub delivered_time: SimTime,
    /// Packets in flight after this ACK.
    pub in_flight: u64,
    /// The sender's state after this ACK (recovery entered or left on it included).
    pub state: CaState,
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// When the pacing lets the next segment leave (Linux `tcp_wstamp_ns`).
    pub next_send: SimTime,
}

/// A rate-based controller's answer to an ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateControl {
    pub w: Window,
    /// Pacing rate, bytes per second (0: unpaced).
    pub pacing_rate: u64,
    /// Mark the sender application-limited (Linux sets `tp->app_limited` so): the samples
    /// of the packets sent until this flight is delivered do not lower the estimate.
    pub mark_app_limited: bool,
}

/// What a model-based controller estimates of its path, as Linux reports BBR's model
/// (`tcp_bbr_info`, shown by `ss -tin` as `bbr:(bw:...,mrtt:...,pacing_gain:...,cwnd_gain:...)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateModel {
    /// The bandwidth estimate, bit/s of full-sized segments (packets per second x MSS).
    pub bw_bps: f64,
    /// The minimum-RTT estimate (None before the first sample).
    pub min_rtt: Option<Dur>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
}

/// A congestion controller.
pub trait CongestionControl {
    /// Short name, as used in scenario files.
    fn name(&self) -> &'static str;

    /// New data was acknowledged outside loss recovery; returns the new window.
    fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window;

    /// Congestion was detected; returns the window to continue with.
    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window;

    /// A valid RTT sample was taken (Karn's rule applied). Called only if `wants_rtt_samples`
    /// says so.
    fn on_rtt_sample(&mut self, _rtt: Dur, _now: SimTime) {}

    /// Whether `on_rtt_sample` does anything (the sender skips the call otherwise, about one
    /// per packet). A controller that overrides `on_rtt_sample` must say true: the test
    /// `cc::tests::a_controller_that_declines_a_hook_is_unchanged_by_it` fails for a built-in
    /// one that does not.
    fn wants_rtt_samples(&self) -> bool {
        false
    }

    /// Every ACK, in any state, with the bytes it newly delivered (cumulatively or by SACK,
    /// possibly none) in `bytes_acked`: bandwidth estimators see each one, whereas `on_ack`
    /// is only called when the window may grow. Called only if `wants_deliveries` says so.
    fn on_delivery(&mut self, _ctx: &AckContext) {}

    /// Whether `on_delivery` does anything (the sender skips building its context otherwise).
    fn wants_deliveries(&self) -> bool {
        false
    }

    /// Every ACK, in any state, after `on_rtt_sample` took its RTT sample if it carries one and
    /// before the window's answer to it (`on_ack`, a loss response): Linux's `pkts_acked`,
    /// which `tcp_clean_rtx_queue` runs whether or not the window may grow. `bytes_acked` as for
    /// `on_delivery`. Returns the window (CUBIC's HyStart ends slow start here, by setting
    /// ssthresh). Called only if `wants_every_ack` says so.
    fn on_every_ack(&mut self, w: Window, _ctx: &AckContext) -> Window {
        w
    }

    /// Whether `on_every_ack` does anything (the sender skips building its context otherwise).
    fn wants_every_ack(&self) -> bool {
        false
    }

    /// Loss recovery ended (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, w: Window) -> Window {
        w
    }

    /// The figure this controller shares with its siblings (`SubflowState::inter_loss_bytes`).
    /// Asked only if `shares_inter_loss_bytes` says so; the siblings see 0 otherwise.
    fn inter_loss_bytes(&self) -> u64 {
        0
    }

    /// Whether `inter_loss_bytes` may answer anything but 0 (read once by the sender; the
    /// subflow's snapshot for the siblings would otherwise ask it after every ACK). A
    /// controller that overrides `inter_loss_bytes` must say true: the test
    /// `cc::tests::a_controller_that_declines_a_hook_is_unchanged_by_it` fails for a built-in
    /// one that does not.
    fn shares_inter_loss_bytes(&self) -> bool {
        false
    }

    /// For controllers that tell losses apart: fast retransmits taken for congestion and for
    /// random (wireless) loss, in that order.
    fn loss_classes(&self) -> Option<(u64, u64)> {
        None
    }

    /// Whether the controller runs the window and the pacing itself from delivery-rate samples
    /// (Linux's `cong_control`, BBR). The sender then keeps the rate estimator, calls
    /// `on_rate_sample` on every ACK in every state instead of `on_ack` and of proportional
    /// rate reduction, and paces at the rate it returns. The others keep no records.
    fn wants_rate_samples(&self) -> bool {
        false
    }

    /// Every ACK, with its rate sample (only if `wants_rate_samples`).
    fn on_rate_sample(&mut self, w: Window, _ctx: &RateContext) -> RateControl {
        RateControl { w, pacing_rate: 0, mark_app_limited: false }
    }

    /// The sender starts sending with nothing in flight (Linux `CA_EVENT_TX_START`), while
    /// application-limited or not (only if `wants_rate_samples`); `pacing_rate` is the current
    /// one.
    fn on_send_from_idle(&mut self, w: Window, pacing_rate: u64, _now: SimTime, _app_limited: bool) -> RateControl {
        RateControl { w, pacing_rate, mark_app_limited: false }
    }

    /// A reduction was found spurious and is undone: the window to continue with, given the
    /// one before the reduction (Linux `undo_cwnd`; the default is Reno's larger of the two).
    fn undo_cwnd(&mut self, w: Window, prior_cwnd: u64) -> u64 {
        w.cwnd.max(prior_cwnd)
    }

    /// Hands a controller that draws random numbers its stream (the flow's, per path).
    fn seed(&mut self, _rng: Rng) {}

    /// The controller's model of the path, for the subflow series (BBR; None for the others).
    fn model(&self) -> Option<RateModel> {
        None
    }
}

/// Declares the built-in controllers from one table: module (one file per controller) and
/// type, then each scenario name with its constructor and the one-line description `mpsim
/// list` shows. Dispatch stays static, plus a `Custom` slot for a boxed implementation.
macro_rules! controllers {
    ($($module:ident :: $ty:ident { $($name:literal => $make:expr, $desc:literal;)+ })+) => {
        $(pub mod $module; pub use $module::$ty;)+

        /// The controllers mpsim ships, plus one slot for a user implementation.
        pub enum Controller {
            $($ty($ty),)+
            /// A user-supplied controller (for example one written in Python); slower, dynamic
            /// dispatch.
            Custom(Box<dyn CongestionControl + Send>),
        }

        /// Names and one-line descriptions of the built-in controllers.
        pub const CONTROLLERS: &[(&str, &str)] = &[$($(($name, $desc),)+)+];

        impl Controller {
            /// Builds a built-in controller by name.
            pub fn by_name(name: &str) -> Option<Controller> {
                match name {
                    $($($name => Some(Controller::$ty($make)),)+)+
                    _ => None,
                }
            }

            fn inner(&mut self) -> &mut dyn CongestionControl {
                match self {
                    $(Controller::$ty(c) => c,)+
                    Controller::Custom(c) => c.as_mut(),
                }
            }

            pub fn name(&self) -> &'static str {
                match self {
                    $(Controller::$ty(c) => c.name(),)+
                    Controller::Custom(c) => c.name(),
                }
            }

            #[inline]
            pub fn on_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
                match self {
                    $(Controller::$ty(c) => c.on_ack(w, ctx),)+
                    Controller::Custom(c) => c.on_ack(w, ctx),
                }
            }

            #[inline]
            pub fn on_rtt_sample(&mut self, rtt: Dur, now: SimTime) {
                match self {
                    $(Controller::$ty(c) => c.on_rtt_sample(rtt, now),)+
                    Controller::Custom(c) => c.on_rtt_sample(rtt, now),
                }
            }

            #[inline]
            pub fn wants_rtt_samples(&self) -> bool {
                match self {
                    $(Controller::$ty(c) => c.wants_rtt_samples(),)+
                    Controller::Custom(c) => c.wants_rtt_samples(),
                }
            }

            /// The state of a built-in controller as `Debug` shows it (None for `Custom`),
            /// for tests that check a hook left it unchanged.
            #[cfg(test)]
            pub(crate) fn debug_state(&self) -> Option<String> {
                match self {
                    $(Controller::$ty(c) => Some(format!("{c:?}")),)+
                    Controller::Custom(_) => None,
                }
            }

            pub fn inter_loss_bytes(&self) -> u64 {
                match self {
                    $(Controller::$ty(c) => c.inter_loss_bytes(),)+
                    Controller::Custom(c) => c.inter_loss_bytes(),
                }
            }

            pub fn shares_inter_loss_bytes(&self) -> bool {
                match self {
                    $(Controller::$ty(c) => c.shares_inter_loss_bytes(),)+
                    Controller::Custom(c) => c.shares_inter_loss_bytes(),
                }
            }

            #[inline]
            pub fn wants_deliveries(&self) -> bool {
                match self {
                    $(Controller::$ty(c) => c.wants_deliveries(),)+
                    Controller::Custom(c) => c.wants_deliveries(),
                }
            }

            #[inline]
            pub fn on_delivery(&mut self, ctx: &AckContext) {
                match self {
                    $(Controller::$ty(c) => c.on_delivery(ctx),)+
                    Controller::Custom(c) => c.on_delivery(ctx),
                }
            }

            #[inline]
            pub fn wants_every_ack(&self) -> bool {
                match self {
                    $(Controller::$ty(c) => c.wants_every_ack(),)+
                    Controller::Custom(c) => c.wants_every_ack(),
                }
            }

            #[inline]
            pub fn on_every_ack(&mut self, w: Window, ctx: &AckContext) -> Window {
                match self {
                    $(Controller::$ty(c) => c.on_every_ack(w, ctx),)+
                    Controller::Custom(c) => c.on_every_ack(w, ctx),
                }
            }

            pub fn loss_classes(&self) -> Option<(u64, u64)> {
                match self {
                    $(Controller::$ty(c) => c.loss_classes(),)+
                    Controller::Custom(c) => c.loss_classes(),
                }
            }

            pub fn wants_rate_samples(&self) -> bool {
                match self {
                    $(Controller::$ty(c) => c.wants_rate_samples(),)+
                    Controller::Custom(c) => c.wants_rate_samples(),
                }
            }

            pub fn model(&self) -> Option<RateModel> {
                match self {
                    $(Controller::$ty(c) => c.model(),)+
                    Controller::Custom(c) => c.model(),
                }
            }
        }
    };
}

controllers! {
    reno::Reno {
        "reno" => Reno::default(), "NewReno (RFC 5681/6582): slow start, +1 MSS per RTT, halve on loss; uncoupled per subflow";
    }
    cubic::Cubic {
        "cubic" => Cubic::default(),
            "CUBIC (RFC 9438) as Linux's tcp_cubic computes it, HyStart included; uncoupled per subflow";
    }
    lia::Lia {
        "lia" => Lia::default(), "MPTCP Linked Increases (RFC 6356): coupled increase capped at Reno's, Reno decrease";
    }
    olia::Olia {
        "olia" => Olia::default(), "MPTCP OLIA (Khalili et al.): coupled increase shifting window to the best paths, Reno decrease";
    }
    balia::Balia {
        "balia" => Balia::default(), "MPTCP BALIA (Peng et al.): balanced coupled increase, decrease scaled by min(alpha, 1.5)";
    }
    westwood::Westwood {
        "westwood" => Westwood::default(),
            "TCP Westwood+ (Linux's two-stage bandwidth filter): Reno growth, ssthresh = BWE x RTTmin on loss; uncoupled per subflow";
    }
    new_jersey::NewJersey {
        "new_jersey" => NewJersey::default(),
            "TCP New Jersey: receiver-timestamp bandwidth estimate (TABE); losses with the links' congestion-warning echo cut to it, others keep the window";
    }
    bbr::Bbr {
        "bbr" => Bbr::default(),
            "BBR v1 as Linux 6.x's tcp_bbr.c: windowed max delivery rate and min RTT, gain cycling, paced; uncoupled per subflow";
    }
    receiver_rate::ReceiverRate {
        "receiver_rate" => ReceiverRate,
            "no window control: paced at the rate the receiver advertises (mptcp_rec); the window only bounds the flight";
    }
}

/// Estimators for controllers that tell wireless from congestion losses, independent of any
/// transport (seed 003: TCP New Jersey, JSCTP).
pub mod jitter_ratio;
pub mod tabe;

impl Controller {
    pub fn on_congestion(&mut self, w: Window, ev: CongestionEvent, ctx: &LossContext) -> Window {
        self.inner().on_congestion(w, ev, ctx)
    }

    pub fn on_recovery_exit(&mut self, w: Window) -> Window {
        self.inner().on_recovery_exit(w)
    }

    pub fn on_rate_sample(&mut self, w: Window, ctx: &RateContext) -> RateControl {
        self.inner().on_rate_sample(w, ctx)
    }

    pub fn on_send_from_idle(&mut self, w: Window, pacing_rate: u64, now: SimTime, app_limited: bool) -> RateControl {
        self.inner().on_send_from_idle(w, pacing_rate, now, app_limited)
    }

    pub fn undo_cwnd(&mut self, w: Window, prior_cwnd: u64) -> u64 {
        self.inner().undo_cwnd(w, prior_cwnd)
    }

    pub fn seed(&mut self, rng: Rng) {
        self.inner().seed(rng)
    }
}

/// The standard RFC 5681 loss response: ssthresh = max(FlightSize/2, 2·MSS).
pub fn halved_ssthresh(in_flight: u64, mss: u64) -> u64 {
    (in_flight / 2).max(2 * mss)
}

/// The congestion-avoidance step of a coupled controller whose increase is "one MSS per
/// `threshold` bytes acknowledged": Reno's slow start, then the threshold `coupled` computes
/// from the connection (or the subflow's own window when it is not coupled, i.e. Reno).
pub(crate) fn coupled_on_ack(acked_in_ca: &mut u64, w: Window, ctx: &AckContext, coupled: impl Fn(&Coupling) -> u64) -> Window {
    if w.in_slow_start() {
        return Reno::increase(acked_in_ca, w, ctx.bytes_acked);
    }
    let threshold = Coupling::new(w, ctx.srtt, 0, ctx.subflows, ctx.me).map_or(w.cwnd, |c| coupled(&c));
    increase_by_threshold(acked_in_ca, w, ctx.bytes_acked, threshold)
}

/// Congestion avoidance with a variable threshold: one MSS is added each time `threshold`
/// bytes have been acknowledged, so every acknowledged byte adds `MSS / threshold` bytes.
/// With `threshold = cwnd` this is exactly Reno's rule (`Reno::increase`); LIA and BALIA
/// express their smaller per-byte increase as a larger threshold, which keeps the
/// accumulation exact in integers however small the ACKs are.
pub(crate) fn increase_by_threshold(acked_in_ca: &mut u64, w: Window, bytes_acked: u64, threshold: u64) -> Window {
    let mut w = w;
    *acked_in_ca += bytes_acked;
    if *acked_in_ca >= threshold {
        *acked_in_ca -= threshold;
        w.cwnd += w.mss;
    }
    w
}

/// `x.ceil() as u64`, for every `x` (negative and NaN give 0, beyond `u64::MAX` saturates),
/// without a call to the math library's `ceil`: the coupled thresholds are worked out on many
/// ACKs. An `f64` of 2^53 or more is already an integer, and below that the truncation is exact.
#[inline]
pub(crate) fn ceil_u64(x: f64) -> u64 {
    // Below 2^63 (every threshold in practice) through the signed conversions, one instruction
    // each where the unsigned ones (and the saturation of `as u64`) take several: there the
    // truncation, its conversion back and the addition of one give the same values.
    if (0.0..9_223_372_036_854_775_808.0).contains(&x) {
        let t = x as i64;
        return if (t as f64) < x { t as u64 + 1 } else { t as u64 };
    }
    let t = x as u64;
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// One path of a coupled controller's connection, reduced to what the coupling reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Path {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Segment size, bytes (at least 1).
    pub mss: u64,
    /// Smoothed RTT, nanoseconds (at least 1, so that nothing divides by zero).
    pub rtt_ns: u64,
    /// `SubflowState::inter_loss_bytes` (OLIA's l_r).
    pub inter_loss_bytes: u64,
    /// This is the calling subflow.
    pub is_me: bool,
}

impl Path {
    /// Window in segments.
    pub fn segments(&self) -> f64 {
        self.cwnd as f64 / self.mss as f64
    }
    pub fn rtt_secs(&self) -> f64 {
        to_f64(self.rtt_ns) * 1e-9
    }
}

/// `x as f64` through the signed conversion, one instruction for a value below 2^63 (every
/// window and time here) where the unsigned one takes several; the coupled controllers
/// convert two per path on many ACKs. Equal to `x as f64` for every `x`. Where it was inlined
/// into LIA's loop the compiler turned it back into the unsigned form, so that loop converts
/// as signed and checks the values once after it (`Lia::threshold`, benches/results/hot_path.md).
#[inline(always)]
pub(crate) fn to_f64(x: u64) -> f64 {
    // (written so that the compiler does not turn it back into the unsigned conversion)
    let f = x as i64 as f64;
    if f < 0.0 {
        x as f64
    } else {
        f
    }
}

/// The set of paths a coupled controller couples over: the calling subflow, described by its
/// live window and RTT (the snapshot in `subflows` may be a step behind), and every other
/// subflow that is `active` and already has an RTT sample. A subflow without an RTT sample
/// cannot be weighed by rate, so it does not take part until it has one. Paths are visited in
/// subflow order, so floating-point sums are computed in the same order on every run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coupling<'a> {
    own: Path,
    subflows: &'a [SubflowState],
    me: usize,
}

impl<'a> Coupling<'a> {
    /// `None` when the caller has no RTT sample yet (the coupled controllers then act as Reno).
    pub fn new(w: Window, srtt: Option<Dur>, inter_loss_bytes: u64, subflows: &'a [SubflowState], me: usize) -> Option<Self> {
        let srtt = srtt.or_else(|| subflows.get(me).and_then(|s| s.srtt))?;
        let own = Path { cwnd: w.cwnd, mss: w.mss.max(1), rtt_ns: srtt.as_nanos().max(1), inter_loss_bytes, is_me: true };
        Some(Coupling { own, subflows, me })
    }

    pub fn own(&self) -> Path {
        self.own
    }

    /// The coupled paths, in subflow order (the caller included, even if its snapshot says
    /// inactive: it is the one being acknowledged).
    pub fn paths(&self) -> impl Iterator<Item = Path> + Clone + 'a {
        let (own, me) = (self.own, self.me);
        // a caller missing from the snapshot (plain TCP: empty slice) is still a path
        let missing = (me >= self.subflows.len()).then_some(own);
        self.subflows
            .iter()
            .enumerate()
            .filter_map(move |(i, s)| {
                if i == me {
                    return Some(own);
                }
                let srtt = s.srtt.filter(|_| s.active)?;
                Some(Path {
                    cwnd: s.cwnd,
                    mss: s.mss.max(1),
                    rtt_ns: srtt.as_nanos().max(1),
                    inter_loss_bytes: s.inter_loss_bytes,
                    is_me: false,
                })
            })
            .chain(missing)
    }

    /// The window (bytes) and RTT (ns) of every coupled path, in the order of
    /// [`paths`](Self::paths), handed to `f`: one plain loop, without building each `Path`
    /// (LIA's threshold, on most ACKs of a connection with many subflows).
    #[inline]
    pub fn for_each_window_and_rtt(&self, mut f: impl FnMut(u64, u64)) {
        for (i, s) in self.subflows.iter().enumerate() {
            if i == self.me {
                f(self.own.cwnd, self.own.rtt_ns);
            } else if let Some(srtt) = s.srtt.filter(|_| s.active) {
                f(s.cwnd, srtt.as_nanos().max(1));
            }
        }
        if self.me >= self.subflows.len() {
            f(self.own.cwnd, self.own.rtt_ns);
        }
    }

    /// Number of coupled paths (at least 1: the caller).
    pub fn len(&self) -> usize {
        self.paths().count()
    }
}

/// The window after a congestion signal, given the new ssthresh: continue at ssthresh after
/// a fast retransmit, restart from one segment after a timeout (RFC 5681's loss window).
pub(crate) fn loss_window(w: Window, ev: CongestionEvent, ssthresh: u64) -> Window {
    let ssthresh = ssthresh.max(2 * w.mss);
    let cwnd = match ev {
        CongestionEvent::FastRetransmit => ssthresh,
        CongestionEvent::Timeout => w.mss,
    };
    Window { cwnd, ssthresh, mss: w.mss }
}

/// Helpers shared by the controllers' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use proptest::prelude::*;

    pub const MSS: u64 = 1000;

    /// An active subflow with `cwnd_segs` segments of `MSS` and the given RTT.
    pub fn sf(cwnd_segs: u64, rtt_ms: u64) -> SubflowState {
        SubflowState {
            cwnd: cwnd_segs * MSS,
            ssthresh: 2 * MSS,
            mss: MSS,
            srtt: Some(Dur::from_millis(rtt_ms)),
            active: true,
            in_recovery: false,
            inter_loss_bytes: 0,
        }
    }

    /// The live window of subflow `s`, in congestion avoidance.
    pub fn window_of(s: &SubflowState) -> Window {
        Window { cwnd: s.cwnd, ssthresh: s.cwnd.min(s.ssthresh), mss: s.mss }
    }

    /// The coupling seen by subflow `me` of `subs` (which must have an RTT sample).
    pub fn coupling(subs: &[SubflowState], me: usize) -> Coupling<'_> {
        Coupling::new(window_of(&subs[me]), subs[me].srtt, subs[me].inter_loss_bytes, subs, me).unwrap()
    }

    pub fn ack(bytes_acked: u64, subflows: &[SubflowState], me: usize) -> AckContext<'_> {
        let srtt = subflows.get(me).and_then(|s| s.srtt);
        AckContext {
            now: SimTime::ZERO,
            bytes_acked,
            in_flight: 0,
            srtt,
            min_rtt: srtt,
            subflows,
            me,
            received_at: SimTime::ZERO,
            cw_echo: false,
        }
    }

    pub fn loss(in_flight: u64, subflows: &[SubflowState], me: usize) -> LossContext<'_> {
        let srtt = subflows.get(me).and_then(|s| s.srtt);
        LossContext { now: SimTime::ZERO, in_flight, srtt, min_rtt: srtt, subflows, me, cw_echo: false, halve_cwnd: false }
    }

    /// One step of a random ACK/loss sequence.
    #[derive(Clone, Copy, Debug)]
    pub enum Event {
        Ack(u64),
        FastRetransmit { in_flight: u64 },
        Timeout { in_flight: u64 },
    }

    /// Random ACK/loss sequences, mostly ACKs of 1 byte to 3 MSS.
    pub fn events(len: usize) -> impl Strategy<Value = Vec<Event>> {
        let ev = prop_oneof![
            20 => (1..=3 * MSS).prop_map(Event::Ack),
            1 => (0..200 * MSS).prop_map(|f| Event::FastRetransmit { in_flight: f }),
            1 => (0..200 * MSS).prop_map(|f| Event::Timeout { in_flight: f }),
        ];
        prop::collection::vec(ev, 1..len)
    }

    /// Ways of running a coupled controller that must leave it with nobody to couple with.
    /// The caller is always at index `me` of the returned snapshot.
    pub fn lonely_snapshot(variant: u8, own: SubflowState) -> (Vec<SubflowState>, usize, Option<Dur>) {
        let sibling = SubflowState { cwnd: 7 * MSS, ..sf(7, 3) };
        match variant % 5 {
            // plain TCP
            0 => (vec![], 0, own.srtt),
            // the only subflow
            1 => (vec![own], 0, own.srtt),
            // a sibling that is not active
            2 => (vec![own, SubflowState { active: false, ..sibling }], 0, own.srtt),
            // a sibling without an RTT sample
            3 => (vec![SubflowState { srtt: None, ..sibling }, own], 1, own.srtt),
            // the caller has no RTT sample itself
            _ => (vec![sibling, SubflowState { srtt: None, ..own }], 1, None),
        }
    }

    /// Drives `cc` and Reno through the same events with a snapshot in which `cc` has no
    /// coupled sibling, and asserts that every window is the same.
    pub fn assert_matches_reno(cc: &mut dyn CongestionControl, start: Window, variant: u8, events: &[Event]) {
        let mut reno = Reno::default();
        let (mut w, mut wr) = (start, start);
        for (step, ev) in events.iter().enumerate() {
            let own = SubflowState { cwnd: w.cwnd, ssthresh: w.ssthresh, mss: w.mss, ..sf(1, 40) };
            let (snap, me, srtt) = lonely_snapshot(variant, own);
            match *ev {
                Event::Ack(b) => {
                    let ctx = AckContext { srtt, ..ack(b, &snap, me) };
                    w = cc.on_ack(w, &ctx);
                    wr = reno.on_ack(wr, &ctx);
                }
                Event::FastRetransmit { in_flight } | Event::Timeout { in_flight } => {
                    let kind = match ev {
                        Event::Timeout { .. } => CongestionEvent::Timeout,
                        _ => CongestionEvent::FastRetransmit,
                    };
                    let ctx = LossContext { srtt, ..loss(in_flight, &snap, me) };
                    w = cc.on_congestion(w, kind, &ctx);
                    wr = reno.on_congestion(wr, kind, &ctx);
                }
            }
            assert_eq!(w, wr, "{} differs from Reno at step {step} ({ev:?}, variant {variant})", cc.name());
        }
    }

    /// A random connection: 1 to 4 subflows, some odd (no RTT, inactive, zero window, other
    /// MSS), and the index of the caller. The caller itself is active with a sane window.
    pub fn connection() -> impl Strategy<Value = (Vec<SubflowState>, usize)> {
        let sub = (
            0u64..20_000_000,
            prop::sample::select(vec![536u64, 1000, 1460, 9000]),
            prop::option::weighted(0.9, 1u64..3_000_000_000),
            prop::bool::weighted(0.85),
            0u64..1_000_000_000,
        )
            .prop_map(|(cwnd, mss, rtt, active, l)| SubflowState {
                cwnd,
                ssthresh: 2 * mss,
                mss,
                srtt: rtt.map(Dur::from_nanos),
                active,
                in_recovery: false,
                inter_loss_bytes: l,
            });
        (prop::collection::vec(sub, 1..=4), any::<prop::sample::Index>()).prop_map(|(mut subs, i)| {
            let me = i.index(subs.len());
            let s = &mut subs[me];
            s.cwnd = s.cwnd.max(s.mss);
            s.active = true;
            (subs, me)
        })
    }

    /// Drives `cc` through `events` on a random connection (siblings' windows also move a
    /// little between events) and checks the window invariants after every step.
    pub fn check_invariants(cc: &mut dyn CongestionControl, subs: Vec<SubflowState>, me: usize, in_ss: bool, events: &[Event]) {
        let mut subs = subs;
        let mss = subs[me].mss;
        let mut w = Window { cwnd: subs[me].cwnd, ssthresh: if in_ss { u64::MAX } else { 2 * mss }, mss };
        for (step, ev) in events.iter().enumerate() {
            subs[me].cwnd = w.cwnd;
            subs[me].ssthresh = w.ssthresh;
            subs[me].inter_loss_bytes = cc.inter_loss_bytes();
            let n = subs.len();
            // a sibling's window moves as it would under its own ACKs and losses
            let sib = (me + 1 + step) % n;
            if sib != me {
                let s = &mut subs[sib];
                s.cwnd = if step % 7 == 0 { s.cwnd / 2 } else { s.cwnd + s.mss };
            }
            let srtt = subs[me].srtt;
            match *ev {
                Event::Ack(b) => w = cc.on_ack(w, &AckContext { srtt, ..ack(b, &subs, me) }),
                Event::FastRetransmit { in_flight } => {
                    w = cc.on_congestion(w, CongestionEvent::FastRetransmit, &LossContext { srtt, ..loss(in_flight, &subs, me) })
                }
                Event::Timeout { in_flight } => {
                    w = cc.on_congestion(w, CongestionEvent::Timeout, &LossContext { srtt, ..loss(in_flight, &subs, me) })
                }
            }
            assert!(w.cwnd >= mss, "{}: cwnd {} below one MSS at step {step} ({ev:?})", cc.name(), w.cwnd);
            assert!(w.ssthresh >= 2 * mss, "{}: ssthresh {} below 2 MSS at step {step} ({ev:?})", cc.name(), w.ssthresh);
            assert_eq!(w.mss, mss);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sender skips the hooks a controller declines (`wants_rtt_samples`,
    /// `wants_deliveries`, `wants_every_ack`), so a declined hook must do nothing: for every
    /// built-in controller, through ACKs, losses and timeouts on two subflows, each declined
    /// hook is fed and must leave the controller's state (and the window) as it was. A
    /// controller that overrides a hook without saying it wants it fails here. Likewise the
    /// siblings see 0 without asking a controller that does not share `inter_loss_bytes`, so
    /// its answer must be 0 after every step.
    #[test]
    fn a_controller_that_declines_a_hook_is_unchanged_by_it() {
        let mss = 1448;
        let mut subs = [
            SubflowState { cwnd: 10 * mss, ssthresh: u64::MAX, mss, srtt: Some(Dur::from_millis(20)), active: true, ..Default::default() },
            SubflowState { cwnd: 20 * mss, ssthresh: 40 * mss, mss, srtt: Some(Dur::from_millis(50)), active: true, ..Default::default() },
        ];
        for &(name, _) in CONTROLLERS {
            let mut cc = Controller::by_name(name).unwrap();
            let mut w = Window { cwnd: 10 * mss, ssthresh: u64::MAX, mss };
            for step in 0..400u64 {
                let now = SimTime(step * 1_000_000);
                let rtt = Dur::from_millis(20 + step % 13);
                subs[0].cwnd = w.cwnd;
                subs[0].ssthresh = w.ssthresh;
                subs[0].srtt = Some(rtt);
                let ctx = AckContext {
                    now,
                    bytes_acked: mss * (1 + step % 3),
                    in_flight: w.cwnd,
                    srtt: Some(rtt),
                    min_rtt: Some(Dur::from_millis(20)),
                    subflows: &subs,
                    me: 0,
                    received_at: now,
                    cw_echo: step % 5 == 0,
                };
                let before = cc.debug_state();
                if !cc.wants_rtt_samples() {
                    cc.on_rtt_sample(rtt, now);
                    assert_eq!(cc.debug_state(), before, "{name}: on_rtt_sample changed it but wants_rtt_samples is false");
                }
                if !cc.wants_deliveries() {
                    cc.on_delivery(&ctx);
                    assert_eq!(cc.debug_state(), before, "{name}: on_delivery changed it but wants_deliveries is false");
                }
                if !cc.wants_every_ack() {
                    assert_eq!(cc.on_every_ack(w, &ctx), w, "{name}: on_every_ack moved the window");
                    assert_eq!(cc.debug_state(), before, "{name}: on_every_ack changed it but wants_every_ack is false");
                }
                // then what the sender does call, so that the state moves on
                if cc.wants_rtt_samples() {
                    cc.on_rtt_sample(rtt, now);
                }
                if cc.wants_deliveries() {
                    cc.on_delivery(&ctx);
                }
                if cc.wants_every_ack() {
                    w = cc.on_every_ack(w, &ctx);
                }
                match step % 100 {
                    50 | 99 => {
                        let ev = if step % 100 == 50 { CongestionEvent::FastRetransmit } else { CongestionEvent::Timeout };
                        let loss = LossContext {
                            now,
                            in_flight: w.cwnd,
                            srtt: Some(rtt),
                            min_rtt: Some(Dur::from_millis(20)),
                            subflows: &subs,
                            me: 0,
                            cw_echo: false,
                            halve_cwnd: false,
                        };
                        w = cc.on_congestion(w, ev, &loss);
                    }
                    51 => w = cc.on_recovery_exit(w),
                    _ => w = cc.on_ack(w, &ctx),
                }
                if !cc.shares_inter_loss_bytes() {
                    assert_eq!(cc.inter_loss_bytes(), 0, "{name}: inter_loss_bytes at step {step} but shares_inter_loss_bytes is false");
                }
            }
        }
    }

    #[test]
    fn the_windows_and_rtts_are_the_paths_in_the_same_order() {
        // random snapshots (inactive subflows, subflows without an RTT sample, a zero RTT) and
        // callers inside the snapshot or missing from it (plain TCP's empty one included)
        let mut rng = crate::rng::Rng::from_seed(32);
        for _ in 0..5_000 {
            let n = rng.below(9) as usize;
            let subs: Vec<SubflowState> = (0..n)
                .map(|_| SubflowState {
                    cwnd: rng.below(1 << 40),
                    ssthresh: u64::MAX,
                    mss: 1 + rng.below(1500),
                    srtt: (rng.below(4) > 0).then(|| Dur(rng.below(3) * rng.below(1 << 34))),
                    active: rng.below(4) > 0,
                    in_recovery: false,
                    inter_loss_bytes: 0,
                })
                .collect();
            let me = rng.below(n as u64 + 2) as usize;
            let w = Window { cwnd: rng.below(1 << 40), ssthresh: u64::MAX, mss: 1448 };
            let Some(c) = Coupling::new(w, Some(Dur(1 + rng.below(1 << 34))), 0, &subs, me) else { continue };
            let mut seen = Vec::new();
            c.for_each_window_and_rtt(|cwnd, rtt_ns| seen.push((cwnd, rtt_ns)));
            let paths: Vec<(u64, u64)> = c.paths().map(|p| (p.cwnd, p.rtt_ns)).collect();
            assert_eq!(seen, paths, "me {me} of {n}: {subs:?}");
        }
    }

    #[test]
    fn ceil_u64_is_ceil_then_cast() {
        let special = [
            0.0,
            -0.0,
            0.5,
            1.0,
            1.5,
            -0.5,
            -3.0,
            2.0f64.powi(52) + 0.5,
            2.0f64.powi(53),
            2.0f64.powi(53) + 2.0,
            2.0f64.powi(63),
            // the largest below 2^63, and the smallest above it
            f64::from_bits(2.0f64.powi(63).to_bits() - 1),
            f64::from_bits(2.0f64.powi(63).to_bits() + 1),
            2.0f64.powi(62) + 0.5,
            2.0f64.powi(64),
            2.0f64.powi(64) * 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            1e-300,
            123_456_789.000_001,
        ];
        for x in special {
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
        }
        let mut rng = crate::rng::Rng::from_seed(7);
        for _ in 0..100_000 {
            let x = f64::from_bits(rng.next_u64());
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x:e}");
            let y = rng.next_f64() * 1e7;
            assert_eq!(ceil_u64(y), y.ceil() as u64, "{y}");
        }
    }

    #[test]
    fn to_f64_is_the_unsigned_conversion() {
        let special = [0, 1, (1 << 53) - 1, 1 << 53, (1 << 53) + 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, u64::MAX - 1, u64::MAX];
        for x in special {
            assert_eq!(to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
        let mut rng = crate::rng::Rng::from_seed(8);
        for _ in 0..100_000 {
            let x = rng.next_u64();
            assert_eq!(to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
            let y = x >> rng.below(64);
            assert_eq!(to_f64(y).to_bits(), (y as f64).to_bits(), "{y}");
        }
    }
}
