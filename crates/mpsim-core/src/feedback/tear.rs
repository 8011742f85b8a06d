//! TEAR, TCP emulation at the receiver, as MPTCP-rec's DSRor uses it per path (seed 000 §3–4.1,
//! ALGORITHMS.md §7.1–7.2).
//!
//! The receiver runs TCP's window dynamics on the packets it sees on one path: an emulated
//! window `rwnd` (packets) grows by one per packet in slow start and by `1/rwnd` in congestion
//! avoidance, halves when three packets arrive above a hole, and drops to one packet when
//! nothing arrives for an RTO. A *round* is the receiver's stand-in for one RTT: it starts when
//! the receiver sends feedback (stamped with the time) and ends when the first packet that
//! echoes that stamp (or a later one) arrives, that is, the first packet the sender sent after
//! it heard from the receiver. Its length is the receiver's RTT sample. At the end of every
//! round the path's desired sending rate (DSR) is updated and pushed into a history; what the
//! receiver advertises is the history's TFRC-weighted average.
//!
//! **[RECONSTRUCTED]** the round boundary. TEAR's report (as summarised in the seed) ends a
//! round when the packet `rwnd` packets beyond the round's start arrives. With a sender paced
//! at the advertised rate that boundary measures how long the sender takes to send a window,
//! not the path's RTT: whenever the sender runs below the window's rate the rounds stretch,
//! the RTT estimate grows, the DSR falls to the arrival rate, and nothing pulls it back (we
//! measured MPTCP-rec at about 15% of NewReno's goodput on one lossy path with it). The
//! echoed stamp (TCP's timestamp echo, carried on data segments) times a round as one real
//! round trip whatever the sending rate.
//!
//! The seven states (seed 000 names them; their semantics are partly reconstructed):
//! * `SlowStart` (SS), `CongestionAvoidance` (CA): the window grows per in-order packet.
//! * `SlowStartReady` (SR), `CaReady` (CR): waiting for the current round to end before
//!   resuming SS or CA (TCP reacts one RTT later). **[RECONSTRUCTED]** SR follows a timeout
//!   (the first packet after it), CR the end of fast recovery.
//! * `Gap`: a hole was seen, loss is not confirmed; if the hole fills (reordering) the previous
//!   state returns. **[RECONSTRUCTED]** the window does not grow in GAP (TCP's duplicate ACKs
//!   do not open the window).
//! * `FastRecovery` (FR): `dupthresh` packets above the hole. `ssthresh = max(rwnd/2, 2)`,
//!   `rwnd = ssthresh`, at most once per round. Left (to CR) once the hole fills.
//! * `Timeout` (TO): nothing arrived for an RTO (RFC 6298 from the receiver's RTT estimate,
//!   with a floor). `ssthresh = max(rwnd/2, 2)`, `rwnd = 1`.
//!
//! Reconstructed choices, each a field of [`TearConfig`]:
//! * **RTT** `rtt ← ξ·rtt + η·rtt_cur` with `rtt_cur` the last round's duration; ξ = 7/8,
//!   η = 1/8 (RFC 6298's α). The RTO is `max(min_rto, srtt + 4·rttvar)`.
//! * **DSR** `DSR ← ϕ·DSR + ϑ·(n·P/rtt)` with ϕ = ϑ = 1/2. **[RECONSTRUCTED]** `n` is the
//!   emulated window in packets and the update is made once per round: the seed's per-packet
//!   update with `n` = packets received so far in the round would fall to almost zero at the
//!   start of every round, and a rate taken from arrivals alone could never grow (the sender
//!   sends at the advertised rate). TEAR's own rate is `rwnd·MSS/RTT`, which this is.
//! * **History** σ = 8 values, most recent first, weights `F_ψ = 1` for ψ ≤ σ/2 and
//!   `1 − (ψ − σ/2)/(σ/2 + 1)` beyond (TFRC). One value per round by default; per epoch (the
//!   average of the round rates between two reductions, TEAR's unit) with
//!   [`HistoryUnit::Epoch`].
//! * After a timeout the history is cleared, so the advertised rate falls to one packet per
//!   RTT at once, as a TCP sender's window does.
//! * **Feedback** goes with the ACK that starts each round, again when the round timer (one
//!   RTT) expires before the round ends, and when, half an RTT or more into a round, the rate
//!   at which packets arrive differs from the advertised DSR by more than `mismatch` (a
//!   fraction; once per round).
//! * **Loss events** follow NewReno: holes found while in FR belong to the same event; when
//!   FR ends with a newer hole open, that hole starts a new event.
//!
//! **Silence the receiver caused itself** (`window_aware_timeout`, on by default). The paper
//! says only that the receiver computes its RTO "as the standard MPTCP sender does" and that
//! the receiver is "in charge of flow/congestion control"; TEAR's rule is "no packet for an
//! RTO". It says nothing of a path that is silent because the receive window is full. A TCP
//! sender runs its retransmission timer only while data is outstanding: one that has
//! everything acknowledged and a closed window waits on the persist timer, and its window is
//! not cut. The emulation is meant to be that sender, and the receiver knows its own window,
//! so with this option the RTO does not run while the window it advertises leaves less than
//! one segment of room above the highest byte received on any path (`on_window`); the
//! silence is counted from the moment the window reopens. **[RECONSTRUCTED]** both the
//! choice and the test of "closed" (room above the highest byte, not the raw window: data
//! still in flight on a slow path fills holes below it and keeps the window open on paper
//! while the sender may send nothing new). Off, every silence of an RTO is a timeout, the
//! literal reading of TEAR's rule and the behaviour before this option existed.

use crate::time::{Dur, SimTime};

/// The seven states of the receiver's TCP emulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TearState {
    SlowStart,
    SlowStartReady,
    CongestionAvoidance,
    CaReady,
    Gap,
    FastRecovery,
    Timeout,
}

impl TearState {
    /// The short name seed 000 uses.
    pub fn short(self) -> &'static str {
        match self {
            TearState::SlowStart => "SS",
            TearState::SlowStartReady => "SR",
            TearState::CongestionAvoidance => "CA",
            TearState::CaReady => "CR",
            TearState::Gap => "GAP",
            TearState::FastRecovery => "FR",
            TearState::Timeout => "TO",
        }
    }
}

/// What one value of the DSR history stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryUnit {
    /// One value per round (the seed's DSR history).
    Round,
    /// One value per epoch, the mean round rate between two window reductions (TEAR).
    Epoch,
}

/// The reconstructed constants of TEAR and the DSRor; scenario key `mptcp_rec` of a flow.
#[derive(Clone, Debug, PartialEq)]
pub struct TearConfig {
    /// Length σ of the DSR history.
    pub sigma: usize,
    /// RTT weights: `rtt ← xi·rtt + eta·rtt_cur`.
    pub xi: f64,
    pub eta: f64,
    /// DSR weights: `DSR ← phi·DSR + theta·sample`.
    pub phi: f64,
    pub theta: f64,
    /// Packets above a hole that confirm a loss.
    pub dupthresh: u32,
    /// Initial emulated window, packets (the sender's initial window).
    pub initial_window: f64,
    /// Floor of the receiver's RTO.
    pub min_rto: Dur,
    pub history: HistoryUnit,
    /// Relative difference between the arrival rate over a round and the advertised DSR above
    /// which feedback is sent at once.
    pub mismatch: f64,
    /// No timeout while the receiver's own window leaves less than one segment of room
    /// (see the module notes).
    pub window_aware_timeout: bool,
}

impl Default for TearConfig {
    fn default() -> Self {
        TearConfig {
            sigma: 8,
            xi: 0.875,
            eta: 0.125,
            phi: 0.5,
            theta: 0.5,
            dupthresh: 3,
            initial_window: 10.0,
            min_rto: Dur::from_millis(200),
            history: HistoryUnit::Round,
            mismatch: 0.25,
            window_aware_timeout: true,
        }
    }
}

impl TearConfig {
    /// Checks the values; the error names the offending key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.sigma == 0 || self.sigma > 64 {
            return Err(("sigma", format!("the history length must be 1 to 64 (got {})", self.sigma)));
        }
        for (k, v) in [("xi", self.xi), ("eta", self.eta), ("phi", self.phi), ("theta", self.theta)] {
            if !v.is_finite() || v < 0.0 {
                return Err((k, format!("a weight must be a finite number at least 0 (got {v})")));
            }
        }
        if self.eta == 0.0 {
            return Err(("eta", "must be above 0, or the RTT estimate never moves".into()));
        }
        if self.theta == 0.0 {
            return Err(("theta", "must be above 0, or the DSR never moves".into()));
        }
        if self.dupthresh == 0 {
            return Err(("dupthresh", "must be at least 1".into()));
        }
        if !(self.initial_window >= 1.0 && self.initial_window.is_finite()) {
            return Err(("initial_window", "must be at least 1 packet".into()));
        }
        if !(self.mismatch > 0.0 && self.mismatch.is_finite()) {
            return Err(("mismatch", "must be a fraction above 0".into()));
        }
        Ok(())
    }
}

/// The TFRC weights of a history of `sigma` values, most recent first (RFC 5348 §5.4 form):
/// `1` for ψ ≤ σ/2, then `1 − (ψ − σ/2)/(σ/2 + 1)`.
pub fn tfrc_weights(sigma: usize) -> Vec<f64> {
    let half = sigma as f64 / 2.0;
    (1..=sigma).map(|psi| if psi as f64 <= half { 1.0 } else { 1.0 - (psi as f64 - half) / (half + 1.0) }).collect()
}

/// One path's receiver-side controller.
#[derive(Clone, Debug)]
pub struct Tear {
    cfg: TearConfig,
    weights: Vec<f64>,
    mss: u64,
    state: TearState,
    /// The state GAP returns to when the hole fills.
    before_gap: TearState,
    rwnd: f64,
    ssthresh: f64,
    // sequence tracking (bytes of the subflow's sequence space)
    rcv_nxt: u64,
    /// Ranges held above `rcv_nxt`, sorted, disjoint.
    held: Vec<(u64, u64)>,
    highest: u64,
    /// Packets that arrived above the current hole.
    above_hole: u32,
    /// FR ends when everything below this has arrived.
    recovery_point: u64,
    // rounds
    round: u64,
    /// When the round started: the stamp of the feedback that opened it.
    round_start: Option<SimTime>,
    round_packets: u64,
    reduced_in_round: bool,
    mismatch_sent: bool,
    // RTT at the receiver
    srtt: Dur,
    rttvar: Dur,
    rtt_sampled: bool,
    last_arrival: Option<SimTime>,
    backoff: u64,
    // rate
    dsr: Option<f64>,
    history: Vec<f64>,
    epoch_sum: f64,
    epoch_rounds: u32,
    advertised: f64,
    /// The receiver's window leaves less than a segment of room (with `window_aware_timeout`).
    window_closed: bool,
    // feedback
    feedback_at: Option<SimTime>,
    feedback_due: bool,
    /// ∫ advertised dt (bits) since the first packet, up to `integral_at`.
    integral: f64,
    integral_at: Option<SimTime>,
    pub stats: TearStats,
}

/// Counters of one path's emulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TearStats {
    pub rounds: u64,
    pub reductions: u64,
    pub timeouts: u64,
    pub gaps: u64,
    pub reorder_returns: u64,
    /// Times the RTO was held because the receiver's window was closed.
    pub window_holds: u64,
}

impl Tear {
    /// A controller for a path with segments of `mss` bytes, its first RTT estimate `rtt`
    /// (the handshake's).
    pub fn new(cfg: TearConfig, mss: u32, rtt: Dur) -> Tear {
        let weights = tfrc_weights(cfg.sigma);
        let rwnd = cfg.initial_window;
        let mut t = Tear {
            weights,
            mss: mss as u64,
            state: TearState::SlowStart,
            before_gap: TearState::SlowStart,
            rwnd,
            ssthresh: f64::INFINITY,
            rcv_nxt: 0,
            held: Vec::new(),
            highest: 0,
            above_hole: 0,
            recovery_point: 0,
            round: 0,
            round_start: None,
            round_packets: 0,
            reduced_in_round: false,
            mismatch_sent: false,
            srtt: rtt.max(Dur(1)),
            rttvar: Dur(rtt.0 / 2),
            rtt_sampled: false,
            last_arrival: None,
            backoff: 1,
            dsr: None,
            history: Vec::new(),
            epoch_sum: 0.0,
            epoch_rounds: 0,
            advertised: 0.0,
            window_closed: false,
            feedback_at: None,
            feedback_due: false,
            integral: 0.0,
            integral_at: None,
            stats: TearStats::default(),
            cfg,
        };
        t.advertised = t.window_rate();
        t
    }

    pub fn state(&self) -> TearState {
        self.state
    }
    /// Emulated window, packets.
    pub fn rwnd(&self) -> f64 {
        self.rwnd
    }
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    pub fn round(&self) -> u64 {
        self.round
    }
    /// The stamp of the feedback that opened the current round (what a sender echoes).
    pub fn round_start(&self) -> Option<SimTime> {
        self.round_start
    }
    /// The receiver's smoothed RTT (round-based).
    pub fn srtt(&self) -> Dur {
        self.srtt
    }
    /// The receiver's retransmission timeout (RFC 6298 from the round-based RTT, with the
    /// floor `min_rto`), doubled after each timeout until a packet arrives.
    pub fn rto(&self) -> Dur {
        Dur(self.srtt.0 + 4 * self.rttvar.0).max(self.cfg.min_rto).mul(self.backoff)
    }
    /// The smoothed DSR the receiver advertises, bit/s.
    pub fn advertised(&self) -> f64 {
        self.advertised
    }
    /// The advertised rate integrated over time since the first packet, up to `now` (bits):
    /// the mean advertised rate over an interval is the difference over its length.
    pub fn advertised_integral(&self, now: SimTime) -> f64 {
        self.integral + self.integral_at.map_or(0.0, |t| self.advertised * now.since(t).as_secs_f64())
    }

    fn accumulate(&mut self, now: SimTime) {
        self.integral = self.advertised_integral(now);
        self.integral_at = Some(now);
    }

    /// The DSR history, most recent first.
    pub fn history(&self) -> &[f64] {
        &self.history
    }

    /// The rate of the emulated window over the receiver's RTT, bit/s.
    fn window_rate(&self) -> f64 {
        self.rwnd * (self.mss * 8) as f64 / self.srtt.as_secs_f64()
    }

    /// The next time [`on_timer`](Self::on_timer) must run: the round's feedback timer or the
    /// receiver's retransmission timeout, whichever is first.
    pub fn deadline(&self) -> Option<SimTime> {
        let rto = self.last_arrival.filter(|_| self.state != TearState::Timeout && !self.window_closed).map(|t| t + self.rto());
        match (self.feedback_at, rto) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True once, when feedback should go to the sender now.
    pub fn take_feedback_due(&mut self) -> bool {
        std::mem::take(&mut self.feedback_due)
    }

    /// Timers due at `now`: the feedback timer (feedback becomes due) and the timeout.
    pub fn on_timer(&mut self, now: SimTime) {
        if self.integral_at.is_some() {
            self.accumulate(now);
        }
        if self.feedback_at.is_some_and(|t| t <= now) {
            // the round is not over after an RTT (the feedback or the echo was lost): say
            // it again, and again one RTT later
            self.feedback_at = Some(now + self.srtt);
            self.feedback_due = true;
        }
        if self.state != TearState::Timeout && !self.window_closed && self.last_arrival.is_some_and(|t| t + self.rto() <= now) {
            self.ssthresh = (self.rwnd / 2.0).max(2.0);
            self.rwnd = 1.0;
            self.state = TearState::Timeout;
            self.stats.timeouts += 1;
            self.epoch_rounds = 0;
            self.epoch_sum = 0.0;
            // a TCP sender's window falls to one segment at once: so does the rate
            self.history.clear();
            self.dsr = None;
            self.push_rate(self.window_rate());
            self.feedback_due = true;
            // back off like a TCP sender's timer (the RTT estimate itself is left alone)
            self.last_arrival = Some(now);
            self.backoff = (self.backoff * 2).min(64);
        }
    }

    /// The receiver's window at `now` leaves `room` bytes above the highest byte received on
    /// any path. With `window_aware_timeout`, less than one segment holds the RTO; when the
    /// window reopens the silence is counted from `now`.
    pub fn on_window(&mut self, now: SimTime, room: u64) {
        if !self.cfg.window_aware_timeout {
            return;
        }
        let closed = room < self.mss;
        if closed && !self.window_closed {
            self.stats.window_holds += 1;
        }
        if self.window_closed && !closed {
            self.last_arrival = self.last_arrival.map(|t| t.max(now));
        }
        self.window_closed = closed;
    }

    /// Whether the RTO is held by a closed window.
    pub fn window_closed(&self) -> bool {
        self.window_closed
    }

    /// A data packet [seq, seq+len) of this path arrived at `now`, echoing the feedback stamp
    /// `echo` (zero: the sender had none).
    pub fn on_packet(&mut self, now: SimTime, seq: u64, len: u32, echo: SimTime) {
        self.accumulate(now);
        self.last_arrival = Some(now);
        self.backoff = 1;
        let end = seq + len as u64;
        // stamps travel at microsecond resolution
        let closes = echo > SimTime::ZERO && self.round_start.is_some_and(|s| echo.0 / 1_000 >= s.0 / 1_000);
        if self.round_start.is_none() {
            self.start_round(now);
        }
        if self.state == TearState::Timeout {
            // the first packet after a timeout: slow start resumes with the next round
            self.state = TearState::SlowStartReady;
        }
        self.on_new_data(now, seq, end);
        if closes {
            self.end_round(now);
        }
    }

    fn on_new_data(&mut self, now: SimTime, seq: u64, end: u64) {
        if end <= self.rcv_nxt || self.is_held(seq, end) {
            return; // a duplicate: no news for the emulation
        }
        self.highest = self.highest.max(end);
        self.round_packets += 1;
        let had_hole = !self.held.is_empty();
        if seq > self.rcv_nxt {
            // above a hole
            self.hold(seq, end);
            self.above_hole += 1;
            match self.state {
                TearState::SlowStart | TearState::CongestionAvoidance | TearState::SlowStartReady | TearState::CaReady => {
                    self.before_gap = self.state;
                    self.state = TearState::Gap;
                    self.stats.gaps += 1;
                }
                _ => {}
            }
            // NewReno's rule: one reduction per loss event; losses found while recovering
            // belong to it
            if self.above_hole >= self.cfg.dupthresh && self.state == TearState::Gap {
                self.loss_inferred();
            }
        } else {
            // in order, or filling a hole
            self.rcv_nxt = self.rcv_nxt.max(end);
            self.absorb();
            if self.held.is_empty() {
                self.above_hole = 0;
                match self.state {
                    TearState::Gap if had_hole => {
                        self.state = self.before_gap;
                        self.stats.reorder_returns += 1;
                    }
                    TearState::FastRecovery => self.state = TearState::CaReady,
                    _ => {}
                }
            } else if self.state == TearState::FastRecovery && self.rcv_nxt >= self.recovery_point {
                // recovered, but a newer hole is open above: a new loss event to confirm
                self.before_gap = TearState::CaReady;
                self.state = TearState::Gap;
                self.above_hole = (self.held.iter().map(|&(s, e)| e - s).sum::<u64>() / self.mss.max(1)) as u32;
                if self.above_hole >= self.cfg.dupthresh {
                    self.loss_inferred();
                }
            }
            self.grow();
        }
        self.check_mismatch(now);
    }

    /// Feedback at once (once per round) when the rate at which packets arrive differs from
    /// the advertised one by more than `mismatch`, once half an RTT of the round has passed.
    fn check_mismatch(&mut self, now: SimTime) {
        let Some(start) = self.round_start else { return };
        let took = now.since(start);
        if self.mismatch_sent || took.0 < self.srtt.0 / 2 || took == Dur::ZERO || self.advertised <= 0.0 {
            return;
        }
        let arrived = self.round_packets as f64 * (self.mss * 8) as f64 / took.as_secs_f64();
        if (arrived - self.advertised).abs() > self.cfg.mismatch * self.advertised {
            self.mismatch_sent = true;
            self.feedback_due = true;
        }
    }

    fn grow(&mut self) {
        match self.state {
            TearState::SlowStart => {
                self.rwnd += 1.0;
                if self.rwnd >= self.ssthresh {
                    self.state = TearState::CongestionAvoidance;
                }
            }
            TearState::CongestionAvoidance => self.rwnd += 1.0 / self.rwnd,
            _ => {}
        }
    }

    /// `dupthresh` packets above a hole: one window reduction per round.
    fn loss_inferred(&mut self) {
        if self.state == TearState::Gap {
            self.state = TearState::FastRecovery;
        }
        self.recovery_point = self.highest;
        self.above_hole = 0;
        if self.reduced_in_round {
            return;
        }
        self.reduced_in_round = true;
        self.ssthresh = (self.rwnd / 2.0).max(2.0);
        self.rwnd = self.ssthresh;
        self.stats.reductions += 1;
        if self.cfg.history == HistoryUnit::Epoch && self.epoch_rounds > 0 {
            let r = self.epoch_sum / self.epoch_rounds as f64;
            self.push_history(r);
        }
        self.epoch_sum = 0.0;
        self.epoch_rounds = 0;
    }

    /// A round starts with feedback stamped `now`; the timer repeats it after an RTT.
    fn start_round(&mut self, now: SimTime) {
        self.round_start = Some(now);
        self.round_packets = 0;
        self.reduced_in_round = false;
        self.mismatch_sent = false;
        self.feedback_at = Some(now + self.srtt);
        self.feedback_due = true;
    }

    fn end_round(&mut self, now: SimTime) {
        let start = self.round_start.expect("a round is open");
        let took = now.since(start);
        self.stats.rounds += 1;
        self.round += 1;
        if took > Dur::ZERO {
            // round-based RTT: rtt ← ξ·rtt + η·rtt_cur, the deviation as RFC 6298's
            let (cur, s) = (took.as_secs_f64(), self.srtt.as_secs_f64());
            let wsum = self.cfg.xi + self.cfg.eta;
            let new = if self.rtt_sampled { (self.cfg.xi * s + self.cfg.eta * cur) / wsum } else { cur };
            let var = if self.rtt_sampled { 0.75 * self.rttvar.as_secs_f64() + 0.25 * (s - cur).abs() } else { cur / 2.0 };
            self.srtt = secs(new).max(Dur(1));
            self.rttvar = secs(var);
            self.rtt_sampled = true;
        }
        match self.state {
            TearState::SlowStartReady => self.state = TearState::SlowStart,
            TearState::CaReady => self.state = TearState::CongestionAvoidance,
            _ => {}
        }
        self.push_rate(self.window_rate());
        self.start_round(now);
    }

    /// A new rate sample: blend it into the DSR and record it in the history.
    fn push_rate(&mut self, sample: f64) {
        let dsr = match self.dsr {
            Some(d) => (self.cfg.phi * d + self.cfg.theta * sample) / (self.cfg.phi + self.cfg.theta),
            None => sample,
        };
        self.dsr = Some(dsr);
        match self.cfg.history {
            HistoryUnit::Round => self.push_history(dsr),
            HistoryUnit::Epoch => {
                self.epoch_sum += dsr;
                self.epoch_rounds += 1;
                if self.history.is_empty() {
                    // before the first epoch closes, the open one is all there is
                    self.advertised = dsr;
                }
            }
        }
    }

    fn push_history(&mut self, v: f64) {
        self.history.insert(0, v);
        self.history.truncate(self.cfg.sigma);
        self.advertised = smoothed(&self.history, &self.weights);
    }

    fn is_held(&self, seq: u64, end: u64) -> bool {
        self.held.iter().any(|&(s, e)| s <= seq && end <= e)
    }

    fn hold(&mut self, seq: u64, end: u64) {
        let i = self.held.partition_point(|&(s, _)| s < seq);
        self.held.insert(i, (seq, end));
        // merge neighbours
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.held.len());
        for &(s, e) in &self.held {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.held = merged;
    }

    /// Moves `rcv_nxt` over the held ranges it reached.
    fn absorb(&mut self) {
        while let Some(&(s, e)) = self.held.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.held.remove(0);
        }
    }
}

fn secs(x: f64) -> Dur {
    Dur((x * 1e9).round() as u64)
}

/// `Σ F_ψ·h_ψ / Σ F_ψ` over the values present (a short history uses the first weights).
pub fn smoothed(history: &[f64], weights: &[f64]) -> f64 {
    let (num, den) = history.iter().zip(weights).fold((0.0, 0.0), |(n, d), (h, w)| (n + w * h, d + w));
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ms(x: u64) -> SimTime {
        SimTime(Dur::from_millis(x).0)
    }

    fn tear() -> Tear {
        Tear::new(TearConfig { initial_window: 4.0, ..TearConfig::default() }, MSS, Dur::from_millis(100))
    }

    /// Packet number `k` (0-based) at `at` ms, sent before any feedback reached the sender.
    fn pkt(t: &mut Tear, k: u64, at: u64) {
        t.on_packet(ms(at), k * MSS as u64, MSS, SimTime::ZERO);
    }

    /// Packet `k` at `at` ms, sent after the sender heard the feedback that opened the current
    /// round (it echoes its stamp): it ends the round.
    fn pkt_echo(t: &mut Tear, k: u64, at: u64) {
        let mark = t.round_start().expect("a round is open");
        t.on_packet(ms(at), k * MSS as u64, MSS, mark);
    }

    #[test]
    fn tfrc_weights_for_sigma_eight() {
        let w = tfrc_weights(8);
        let want = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];
        for (a, b) in w.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{w:?}");
        }
        assert_eq!(tfrc_weights(1), vec![1.0 - 0.5 / 1.5]);
        // the average weighs recent values more
        assert!((smoothed(&[10.0, 0.0], &w) - 5.0).abs() < 1e-12);
        let h = [8.0, 8.0, 8.0, 8.0, 0.0, 0.0, 0.0, 0.0];
        assert!((smoothed(&h, &w) - 32.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn slow_start_grows_one_packet_per_packet_and_a_round_ends_with_the_echo() {
        let mut t = tear();
        for k in 0..4 {
            pkt(&mut t, k, 1 + 10 * k);
        }
        assert_eq!(t.state(), TearState::SlowStart);
        assert_eq!(t.rwnd(), 8.0);
        assert_eq!(t.round(), 0);
        assert_eq!(t.round_start(), Some(ms(1)));
        // the first packet sent after the sender heard the round's feedback ends it
        pkt_echo(&mut t, 4, 101);
        assert_eq!(t.round(), 1);
        assert_eq!(t.srtt(), Dur::from_millis(100));
        assert_eq!(t.round_start(), Some(ms(101)));
        assert!(t.take_feedback_due(), "a new round starts with feedback");
    }

    #[test]
    fn reordering_returns_from_gap_to_the_previous_state() {
        let mut t = tear();
        pkt(&mut t, 0, 0);
        pkt(&mut t, 2, 1);
        assert_eq!(t.state(), TearState::Gap);
        let w = t.rwnd();
        pkt(&mut t, 3, 2);
        assert_eq!(t.state(), TearState::Gap);
        assert_eq!(t.rwnd(), w, "no growth while a hole is open");
        pkt(&mut t, 1, 3);
        assert_eq!(t.state(), TearState::SlowStart);
        assert_eq!(t.stats.reorder_returns, 1);
        assert_eq!(t.stats.reductions, 0);
    }

    #[test]
    fn three_packets_above_a_hole_enter_fast_recovery_and_halve() {
        let mut t = tear();
        pkt(&mut t, 0, 1);
        let w = t.rwnd();
        pkt(&mut t, 2, 2);
        pkt(&mut t, 3, 3);
        assert_eq!(t.state(), TearState::Gap);
        pkt(&mut t, 4, 4);
        assert_eq!(t.state(), TearState::FastRecovery);
        assert_eq!(t.rwnd(), w / 2.0);
        assert_eq!(t.ssthresh(), w / 2.0);
        // the retransmission fills the hole: CA-ready until the round ends, then CA
        pkt(&mut t, 1, 50);
        assert_eq!(t.state(), TearState::CaReady);
        pkt(&mut t, 5, 60);
        assert_eq!(t.state(), TearState::CaReady);
        pkt_echo(&mut t, 6, 101);
        assert_eq!(t.state(), TearState::CongestionAvoidance);
    }

    #[test]
    fn one_reduction_per_round() {
        let mut t = Tear::new(TearConfig { initial_window: 40.0, ..TearConfig::default() }, MSS, Dur::from_millis(100));
        pkt(&mut t, 0, 1);
        let w = t.rwnd();
        // two losses in the same round: packets 1 and 10 missing
        for k in [2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13] {
            pkt(&mut t, k, 1 + k);
        }
        assert_eq!(t.stats.reductions, 1);
        // packet 1 comes back: recovery is over, but 10 is still missing under three
        // packets, a second loss event in the same round: no second reduction
        pkt(&mut t, 1, 20);
        assert_eq!(t.state(), TearState::FastRecovery);
        assert_eq!(t.stats.reductions, 1);
        assert_eq!(t.rwnd(), w / 2.0);
        assert_eq!(t.round(), 0);
    }

    #[test]
    fn a_second_loss_in_a_later_round_reduces_again() {
        let mut t = tear();
        pkt(&mut t, 0, 1);
        for k in 2..5 {
            pkt(&mut t, k, 1 + k);
        }
        assert_eq!(t.stats.reductions, 1);
        pkt(&mut t, 1, 10);
        // two rounds in order
        pkt_echo(&mut t, 5, 101);
        pkt_echo(&mut t, 6, 201);
        assert_eq!(t.round(), 2);
        let k = 7;
        // a new hole in a new round
        for j in 1..=3 {
            pkt(&mut t, k + j, 100 + j);
        }
        assert_eq!(t.stats.reductions, 2);
    }

    #[test]
    fn silence_for_an_rto_is_a_timeout_and_the_rate_falls_at_once() {
        let mut t = tear();
        for k in 0..20 {
            pkt(&mut t, k, 1 + 5 * k);
        }
        pkt_echo(&mut t, 20, 101);
        let before = t.advertised();
        let d = t.deadline().unwrap();
        // the feedback timer may come first; run timers until the timeout fires
        let mut now = d;
        for _ in 0..10 {
            t.on_timer(now);
            if t.state() == TearState::Timeout {
                break;
            }
            now = t.deadline().unwrap();
        }
        assert_eq!(t.state(), TearState::Timeout);
        assert_eq!(t.rwnd(), 1.0);
        assert!(t.advertised() < before / 4.0, "{} vs {before}", t.advertised());
        assert!(t.take_feedback_due());
        // the next packet: slow-start ready, slow start from the next round
        pkt(&mut t, 21, now.0 / 1_000_000 + 10);
        assert_eq!(t.state(), TearState::SlowStartReady);
    }

    #[test]
    fn no_timeout_while_packets_keep_coming() {
        let mut t = tear();
        for k in 0..200 {
            pkt(&mut t, k, 10 * k);
            if let Some(d) = t.deadline() {
                if d <= ms(10 * k + 10) {
                    t.on_timer(d);
                }
            }
        }
        assert_eq!(t.stats.timeouts, 0);
    }

    /// Runs the timers of `t` up to `until`; the time of the first timeout, if any.
    fn timers_until(t: &mut Tear, until: SimTime) -> Option<SimTime> {
        while let Some(d) = t.deadline().filter(|&d| d <= until) {
            t.on_timer(d);
            if t.state() == TearState::Timeout {
                return Some(d);
            }
        }
        None
    }

    #[test]
    fn no_timeout_while_the_receivers_own_window_is_closed() {
        let mut t = tear();
        for k in 0..20 {
            pkt(&mut t, k, 1 + 5 * k);
        }
        pkt_echo(&mut t, 20, 101);
        let rto = t.rto();
        // the buffer fills: less than a segment of room above the highest byte received
        t.on_window(ms(102), MSS as u64 - 1);
        assert!(t.window_closed());
        // a silence of many RTOs while the window stays closed is no loss
        assert_eq!(timers_until(&mut t, ms(102) + rto.mul(20)), None, "timed out behind a closed window");
        assert_eq!(t.stats.timeouts, 0);
        let rwnd = t.rwnd();
        // the window reopens: the silence counts from here, and a full RTO of it is a timeout
        let open = ms(102) + rto.mul(20);
        t.on_window(open, 10 * MSS as u64);
        assert!(!t.window_closed());
        let fired = timers_until(&mut t, open + rto.mul(2)).expect("silence after the window reopened is a timeout");
        assert!(fired >= open + rto, "timed out {:?} after the reopening, RTO {:?}", fired.since(open), rto);
        assert_eq!(t.stats.timeouts, 1);
        assert!(t.rwnd() < rwnd);
        assert_eq!(t.stats.window_holds, 1);
    }

    #[test]
    fn without_the_option_a_closed_window_still_times_out() {
        let mut t = Tear::new(TearConfig { window_aware_timeout: false, ..TearConfig::default() }, MSS, Dur::from_millis(100));
        for k in 0..20 {
            pkt(&mut t, k, 1 + 5 * k);
        }
        pkt_echo(&mut t, 20, 101);
        let rto = t.rto();
        t.on_window(ms(102), 0);
        assert!(!t.window_closed());
        let fired = timers_until(&mut t, ms(102) + rto.mul(3)).expect("the literal rule: silence is a timeout");
        assert!(fired <= ms(101) + rto);
    }

    #[test]
    fn congestion_avoidance_adds_about_one_packet_per_round() {
        let mut t = Tear::new(TearConfig { initial_window: 10.0, ..TearConfig::default() }, MSS, Dur::from_millis(100));
        t.ssthresh = 10.0;
        t.state = TearState::CongestionAvoidance;
        for k in 0..10 {
            pkt(&mut t, k, k);
        }
        assert!((t.rwnd() - 10.95).abs() < 0.05, "{}", t.rwnd());
    }

    #[test]
    fn a_sender_that_follows_the_window_gets_its_rate_advertised() {
        // closed loop over a 100 ms path: every 100 ms the sender sends what the emulated
        // window allows, evenly spaced; the receiver should advertise about rwnd·MSS/100 ms
        let mut t = Tear::new(TearConfig { initial_window: 40.0, ..TearConfig::default() }, MSS, Dur::from_millis(100));
        t.ssthresh = 40.0;
        t.state = TearState::CongestionAvoidance;
        let (mut k, mut now_us) = (0u64, 1000u64);
        for _ in 0..30 {
            let n = t.rwnd().floor() as u64;
            // what the sender echoes: the feedback that opened the round, once it has heard it
            let echo = t.round_start().unwrap_or(SimTime::ZERO);
            for j in 0..n {
                t.on_packet(SimTime(Dur::from_micros(now_us + j * 100_000 / n).0), k * MSS as u64, MSS, echo);
                k += 1;
            }
            now_us += 100_000;
        }
        let want = t.rwnd() * 8000.0 / 0.1;
        assert!((t.srtt().as_secs_f64() - 0.1).abs() < 0.01, "{:?}", t.srtt());
        assert!((t.advertised() / want - 1.0).abs() < 0.1, "{} vs {want}", t.advertised());
        assert_eq!(t.stats.reductions, 0);
    }

    #[test]
    fn the_integral_of_the_advertised_rate() {
        let mut t = tear();
        assert_eq!(t.advertised_integral(ms(1000)), 0.0, "nothing before the first packet");
        pkt(&mut t, 0, 100);
        let r = t.advertised();
        assert!((t.advertised_integral(ms(600)) - r * 0.5).abs() < 1e-6 * r);
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = |c: TearConfig| c.validate().unwrap_err().0;
        assert_eq!(bad(TearConfig { sigma: 0, ..TearConfig::default() }), "sigma");
        assert_eq!(bad(TearConfig { phi: -0.5, ..TearConfig::default() }), "phi");
        assert_eq!(bad(TearConfig { eta: 0.0, ..TearConfig::default() }), "eta");
        assert!(TearConfig::default().validate().is_ok());
    }
}
