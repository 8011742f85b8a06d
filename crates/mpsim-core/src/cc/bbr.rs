//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016) as
//! Linux 6.x's `net/ipv4/tcp_bbr.c` runs it (followed: the 6.1 to 6.12 sources, whose
//! algorithm is that of 5.x; the arithmetic is the kernel's fixed point, time in microseconds
//! and jiffies of 1 ms).
//!
//! BBR sets the window itself on every ACK from a delivery-rate sample (Linux `cong_control`,
//! here [`CongestionControl::on_rate_sample`]) and paces the sender:
//! * the model: the bottleneck bandwidth is the windowed maximum of the delivery-rate samples
//!   over 10 packet-timed round trips (app-limited samples only if they raise it), the
//!   propagation delay the minimum RTT over 10 s;
//! * STARTUP paces and sizes the window at 2/ln 2 times the model until the bandwidth has not
//!   grown by 25 % in 3 rounds; DRAIN paces at ln 2 / 2 until the flight is down to one BDP;
//!   PROBE_BW cycles the pacing gain through 5/4, 3/4 and six phases of 1, starting at a
//!   random phase other than 3/4 (from the flow's seeded stream), with a window of 2 BDP;
//!   PROBE_RTT, entered when the minimum RTT is 10 s old, holds the window at 4 packets for
//!   200 ms and one round;
//! * pacing rate = gain x bandwidth x 99 % (the kernel's 1 % margin); window = gain x BDP plus
//!   the kernel's quanta (3 TSO bursts, rounded up to even, +2 in the 5/4 phase) plus the
//!   ACK-aggregation allowance (`extra_acked`, windowed over 5-10 rounds, capped at 100 ms of
//!   bandwidth);
//! * loss: packet conservation for the first round of recovery, then growth by at most the
//!   packets acknowledged; the window from before recovery is restored on exit;
//! * long-term sampling detects a token-bucket policer (two 4-16 round intervals with at least
//!   20 % loss and rates within 1/8 or 4 kbit/s) and then paces at their mean for 48 rounds.
//!
//! Units follow the kernel: bandwidth in packets per microsecond scaled by 2^24, gains scaled
//! by 2^8, the window in packets.

use super::{CongestionControl, CongestionEvent, LossContext, RateContext, RateControl, RateModel, Window};
use crate::rng::Rng;
use crate::time::{Dur, SimTime};
use crate::view::CaState;

const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;

/// Phases of the PROBE_BW gain cycle.
const CYCLE_LEN: usize = 8;
/// Window of the bandwidth filter, in rounds.
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the minimum-RTT filter.
const MIN_RTT_WIN: Dur = Dur::from_secs(10);
/// Time PROBE_RTT holds the window at its minimum.
const PROBE_RTT_MODE: Dur = Dur::from_millis(200);
/// Below this rate (bit/s) a TSO burst is one segment.
const MIN_TSO_RATE: u64 = 1_200_000;
/// Pace this much below the estimated bandwidth, percent.
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln 2, and its inverse.
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
const CWND_GAIN: u64 = BBR_UNIT * 2;
pub const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// The random start phase is drawn among this many.
const CYCLE_RAND: u64 = 7;
/// The smallest window BBR aims at, packets.
pub const CWND_MIN_TARGET: u64 = 4;
/// STARTUP ends after `FULL_BW_CNT` rounds without growth by `FULL_BW_THRESH`.
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
pub const FULL_BW_CNT: u32 = 3;
/// Long-term sampling: interval bounds in rounds, loss threshold (of 256), consistency.
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation: gain, window in rounds, epoch reset, cap.
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// Linux's TCP_INIT_CWND.
const INIT_CWND: u64 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (320 on x86-64) and the pacing shift (10):
/// the TSO burst goal is about 1 ms of the pacing rate, at most this many bytes.
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
const PACING_SHIFT: u32 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed max filter (Linux `lib/win_minmax.c`): the best, second best
/// and third best samples of the window.
#[derive(Clone, Copy, Debug, Default)]
struct MaxFilter {
    s: [(u64, u64); 3], // (time, value)
}

impl MaxFilter {
    fn get(&self) -> u64 {
        self.s[0].1
    }
    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }
    fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s = [self.s[1], self.s[2], val];
            if t.wrapping_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// One BBR sender (per subflow: uncoupled, as Linux runs it under Multipath TCP).
#[derive(Clone, Debug)]
pub struct Bbr {
    rng: Rng,
    started: bool,
    pub mode: Mode,
    min_rtt_us: u64,
    min_rtt_stamp: SimTime,
    probe_rtt_done_stamp: Option<SimTime>,
    bw: MaxFilter,
    pub rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: SimTime,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pub pacing_gain: u64,
    pub cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    pub cycle_idx: usize,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    full_bw: u64,
    ack_epoch_mstamp: SimTime,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Pacing rate, bytes per second (0 before the first ACK: unpaced).
    pacing_rate: u64,
    /// What the latest ACK said of the connection (for the timeout's long-term sample).
    last: (u64, u64, SimTime),
    mss: u64,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr {
            rng: Rng::from_seed(0),
            started: false,
            mode: Mode::Startup,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: SimTime::ZERO,
            probe_rtt_done_stamp: None,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: SimTime::ZERO,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: SimTime::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: 0,
            last: (0, 0, SimTime::ZERO),
            mss: 1,
        }
    }
}

fn us(d: Dur) -> u64 {
    d.as_nanos() / 1000
}

/// Microseconds from `b` to `a` (0 if `a` is earlier).
fn us_between(a: SimTime, b: SimTime) -> u64 {
    us(a.since(b))
}

impl Bbr {
    /// The windowed maximum bandwidth, packets/us << 24.
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }
    /// The bandwidth the model uses (the long-term one while policed).
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    pub fn min_rtt_us(&self) -> u64 {
        self.min_rtt_us
    }
    /// Pacing rate, bytes per second.
    pub fn pacing_rate_bps(&self) -> u64 {
        self.pacing_rate
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: rate (packets/us << 24) x gain, in bytes/s less the margin.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64) -> u64 {
        let r = ((rate as u128) * self.mss as u128 * gain as u128) >> BBR_SCALE;
        let r = r * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (r >> BW_SCALE) as u64
    }

    fn init_pacing_rate_from_rtt(&mut self, cwnd: u64, srtt: Option<Dur>) {
        let rtt_us = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                us(s).max(1)
            }
            None => 1000,
        };
        let bw = cwnd * BW_UNIT / rtt_us;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    fn set_pacing_rate(&mut self, bw: u64, gain: u64, cwnd: u64, srtt: Option<Dur>) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(cwnd, srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn tso_segs_goal(&self) -> u64 {
        let min_segs = if self.pacing_rate < MIN_TSO_RATE >> 3 { 1 } else { 2 };
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(TSO_MAX_BYTES);
        (bytes / self.mss).max(min_segs).min(0x7F)
    }

    fn save_cwnd(&mut self, cwnd: u64) {
        if !self.prev_ca_state.recovering() && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw x min_rtt x gain), packets.
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt_us == u64::MAX {
            return INIT_CWND;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        (((w * gain as u128) >> BBR_SCALE) as u64).div_ceil(BW_UNIT)
    }

    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: the flight left when the next paced packet departs.
    fn packets_in_net_at_edt(&self, inflight_now: u64, ctx: &RateContext) -> u64 {
        let interval_us = us_between(ctx.next_send, ctx.now);
        let interval_delivered = (self.bw() * interval_us) >> BW_SCALE;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += self.tso_segs_goal();
        }
        at_edt.saturating_sub(interval_delivered)
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
        ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
    }

    /// Returns (window, whether packet conservation holds it).
    fn set_cwnd_to_recover_or_restore(&mut self, cwnd: u64, acked: u64, ctx: &RateContext) -> (u64, bool) {
        let (prev, state) = (self.prev_ca_state, ctx.state);
        let mut cwnd = cwnd;
        if ctx.rs.losses > 0 {
            cwnd = cwnd.saturating_sub(ctx.rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = ctx.delivered;
            cwnd = ctx.in_flight + acked;
        } else if prev.recovering() && !state.recovering() {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(ctx.in_flight + acked), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, cwnd: u64, acked: u64, bw: u64, gain: u64, ctx: &RateContext) -> u64 {
        let mut cwnd = cwnd;
        if acked > 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(cwnd, acked, ctx);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ctx.delivered < INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        cwnd
    }

    fn is_next_cycle_phase(&self, ctx: &RateContext) -> bool {
        let is_full_length = us_between(ctx.delivered_time, self.cycle_mstamp) > self.min_rtt_us;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(ctx.rs.prior_in_flight, ctx);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (ctx.rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, delivered_time: SimTime) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = delivered_time;
    }

    fn reset_probe_bw_mode(&mut self, delivered_time: SimTime) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(delivered_time);
    }

    fn reset_mode(&mut self, delivered_time: SimTime) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, delivered: u64, lost: u64, delivered_time: SimTime) {
        self.lt_last_stamp_ms = delivered_time.as_nanos() / 1_000_000;
        self.lt_last_delivered = delivered;
        self.lt_last_lost = lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, delivered: u64, lost: u64, delivered_time: SimTime) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(delivered, lost, delivered_time);
    }

    fn lt_bw_interval_done(&mut self, bw: u64, delivered: u64, lost: u64, delivered_time: SimTime) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(delivered, lost, delivered_time);
    }

    /// `bbr_lt_bw_sampling`; `(delivered, lost, delivered_time)` are the connection's.
    fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool, conn: (u64, u64, SimTime)) {
        let (delivered, lost, delivered_time) = conn;
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(delivered, lost, delivered_time);
                    self.reset_probe_bw_mode(delivered_time);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(delivered, lost, delivered_time);
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt_bw_sampling(delivered, lost, delivered_time);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(delivered, lost, delivered_time);
            return;
        }
        if losses == 0 {
            return;
        }
        let lost_i = lost - self.lt_last_lost;
        let delivered_i = delivered - self.lt_last_delivered;
        if delivered_i == 0 || (lost_i << BBR_SCALE) < LT_LOSS_THRESH * delivered_i {
            return;
        }
        let t_ms = (delivered_time.as_nanos() / 1_000_000) as i64 - self.lt_last_stamp_ms as i64;
        if t_ms < 1 {
            return;
        }
        let bw = delivered_i * BW_UNIT / (t_ms as u64 * 1000);
        self.lt_bw_interval_done(bw, delivered, lost, delivered_time);
    }

    fn update_bw(&mut self, ctx: &RateContext) {
        self.round_start = false;
        let rs = &ctx.rs;
        let Some(interval) = rs.interval else { return };
        let interval_us = us(interval);
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = ctx.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs.losses, rs.is_app_limited, (ctx.delivered, ctx.lost, ctx.delivered_time));
        let bw = rs.delivered * BW_UNIT / interval_us;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, cwnd: u64, ctx: &RateContext) {
        let rs = &ctx.rs;
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.interval.is_none_or(|i| us(i) == 0) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = 1 - self.extra_acked_win_idx;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us_between(ctx.delivered_time, self.ack_epoch_mstamp);
        let mut expected_acked = self.bw() * epoch_us / BW_UNIT;
        if self.ack_epoch_acked <= expected_acked || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = ctx.delivered_time;
            expected_acked = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected_acked).min(cwnd);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    fn check_full_bw_reached(&mut self, ctx: &RateContext) {
        if self.full_bw_reached || !self.round_start || ctx.rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Returns the ssthresh DRAIN sets, if it starts.
    fn check_drain(&mut self, ctx: &RateContext) -> Option<u64> {
        let mut ssthresh = None;
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            ssthresh = Some(self.inflight(self.max_bw(), BBR_UNIT));
        }
        if self.mode == Mode::Drain && self.packets_in_net_at_edt(ctx.in_flight, ctx) <= self.inflight(self.max_bw(), BBR_UNIT) {
            self.reset_probe_bw_mode(ctx.delivered_time);
        }
        ssthresh
    }

    fn check_probe_rtt_done(&mut self, now: SimTime, cwnd: &mut u64, delivered_time: SimTime) {
        // in jiffies, as the kernel compares them
        if self.probe_rtt_done_stamp.is_none_or(|d| ms(now) <= ms(d)) {
            return;
        }
        self.min_rtt_stamp = now;
        *cwnd = (*cwnd).max(self.prior_cwnd);
        self.reset_mode(delivered_time);
    }

    /// Returns whether the sender must mark itself app-limited (PROBE_RTT).
    fn update_min_rtt(&mut self, cwnd: &mut u64, ctx: &RateContext) -> bool {
        let now = ctx.now;
        // jiffies of 1 ms: the filter expires strictly after 10 s
        let filter_expired = ms(now) > ms(self.min_rtt_stamp) + ms_of(MIN_RTT_WIN);
        if let Some(rtt) = ctx.rs.rtt {
            let rtt_us = us(rtt);
            if rtt_us <= self.min_rtt_us || filter_expired {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(*cwnd);
            self.probe_rtt_done_stamp = None;
        }
        let mut app_limited = false;
        if self.mode == Mode::ProbeRtt {
            app_limited = true;
            if self.probe_rtt_done_stamp.is_none() && ctx.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(SimTime(ms(now) * 1_000_000) + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = ctx.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, cwnd, ctx.delivered_time);
                }
            }
        }
        if ctx.rs.delivered > 0 {
            self.idle_restart = false;
        }
        app_limited
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx] }, CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

fn ms(t: SimTime) -> u64 {
    t.as_nanos() / 1_000_000
}
fn ms_of(d: Dur) -> u64 {
    d.as_nanos() / 1_000_000
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// Never called: BBR sets the window in `on_rate_sample`.
    fn on_ack(&mut self, w: Window, _ctx: &super::AckContext) -> Window {
        w
    }

    /// `bbr_ssthresh` (save the window, leave ssthresh) and, on a timeout, `bbr_set_state`
    /// for the Loss state; the sender's loss window is then one packet, as Linux's
    /// `tcp_enter_loss` leaves it with nothing in flight.
    fn on_congestion(&mut self, w: Window, ev: CongestionEvent, _ctx: &LossContext) -> Window {
        let mss = w.mss.max(1);
        self.save_cwnd(w.cwnd / mss);
        match ev {
            CongestionEvent::FastRetransmit => w,
            CongestionEvent::Timeout => {
                self.prev_ca_state = CaState::Loss;
                self.full_bw = 0;
                self.round_start = true;
                self.lt_bw_sampling(1, false, self.last);
                Window { cwnd: mss, ..w }
            }
        }
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn seed(&mut self, rng: Rng) {
        self.rng = rng;
    }

    /// `bbr_get_info`: the bandwidth (packets x MSS per second), the min RTT and the gains.
    fn model(&self) -> Option<RateModel> {
        let bytes_per_s = ((self.bw() as u128 * self.mss as u128 * 1_000_000) >> BW_SCALE) as u64;
        Some(RateModel {
            bw_bps: bytes_per_s as f64 * 8.0,
            min_rtt: (self.min_rtt_us != u64::MAX).then(|| Dur::from_micros(self.min_rtt_us)),
            pacing_gain: self.pacing_gain as f64 / BBR_UNIT as f64,
            cwnd_gain: self.cwnd_gain as f64 / BBR_UNIT as f64,
        })
    }

    /// `bbr_cwnd_event` for `CA_EVENT_TX_START`: an application-limited sender restarting from
    /// idle paces at the estimated bandwidth in PROBE_BW (or ends a PROBE_RTT that is due).
    fn on_send_from_idle(&mut self, w: Window, pacing_rate: u64, now: SimTime, app_limited: bool) -> RateControl {
        self.pacing_rate = pacing_rate;
        let mut w = w;
        if app_limited {
            self.idle_restart = true;
            self.ack_epoch_mstamp = now;
            self.ack_epoch_acked = 0;
            match self.mode {
                Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT, w.cwnd / w.mss.max(1), None),
                Mode::ProbeRtt => {
                    let mut cwnd = w.cwnd / w.mss.max(1);
                    self.check_probe_rtt_done(now, &mut cwnd, self.last.2);
                    w.cwnd = cwnd * w.mss.max(1);
                }
                _ => {}
            }
        }
        RateControl { w, pacing_rate: self.pacing_rate, mark_app_limited: false }
    }

    /// `bbr_undo_cwnd`: a spurious reduction resets full-pipe detection and long-term sampling
    /// and keeps the current window.
    fn undo_cwnd(&mut self, w: Window, _prior_cwnd: u64) -> u64 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        let (d, l, t) = self.last;
        self.reset_lt_bw_sampling(d, l, t);
        w.cwnd
    }

    /// `bbr_main`.
    fn on_rate_sample(&mut self, w: Window, ctx: &RateContext) -> RateControl {
        let mss = w.mss.max(1);
        self.mss = mss;
        let mut cwnd = w.cwnd / mss;
        if !self.started {
            // bbr_init, at the first ACK (the handshake's RTT is the minimum so far)
            self.started = true;
            self.min_rtt_us = ctx.min_rtt.map_or(u64::MAX, us);
            self.min_rtt_stamp = ctx.now;
            self.ack_epoch_mstamp = ctx.now;
            self.reset_lt_bw_sampling(ctx.delivered, ctx.lost, ctx.delivered_time);
            self.init_pacing_rate_from_rtt(cwnd, ctx.srtt);
        }
        self.last = (ctx.delivered, ctx.lost, ctx.delivered_time);
        self.update_bw(ctx);
        self.update_ack_aggregation(cwnd, ctx);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(ctx) {
            self.advance_cycle_phase(ctx.delivered_time);
        }
        self.check_full_bw_reached(ctx);
        let ssthresh = self.check_drain(ctx);
        let mark_app_limited = self.update_min_rtt(&mut cwnd, ctx);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, cwnd, ctx.srtt);
        let cwnd = self.set_cwnd(cwnd, ctx.rs.acked_sacked, bw, self.cwnd_gain, ctx);
        let ssthresh = ssthresh.map_or(w.ssthresh, |s| s.saturating_mul(mss));
        RateControl { w: Window { cwnd: cwnd.max(1) * mss, ssthresh, mss: w.mss }, pacing_rate: self.pacing_rate, mark_app_limited }
    }
}

#[cfg(test)]
mod tests;
