use super::*;
use crate::cc::{RateSample, SubflowState};

const MSS: u64 = 1000;
const RTT: Dur = Dur::from_millis(40);

/// Feeds BBR the ACKs of a path of `bw` packets per millisecond and 40 ms of round trip:
/// every ACK acknowledges `per_ack` packets and carries a sample of exactly `bw`.
struct Path {
    bbr: Bbr,
    w: Window,
    now: SimTime,
    delivered: u64,
    state: CaState,
    out: RateControl,
}

impl Path {
    fn new(seed: u64) -> Path {
        let mut bbr = Bbr::default();
        bbr.seed(Rng::substream(seed, "test"));
        let w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        Path { bbr, w, now: SimTime(1_000_000), delivered: 0, state: CaState::Open, out: RateControl { w, pacing_rate: 0, mark_app_limited: false } }
    }

    fn ack(&mut self, step: Dur, bw: u64, per_ack: u64, rtt: Dur, in_flight: u64, losses: u64) {
        self.now += step;
        self.delivered += per_ack;
        let sample_pkts = (bw * 40).min(self.delivered);
        let rs = RateSample {
            delivered: sample_pkts,
            interval: Some(Dur::from_micros(sample_pkts * 1000 / bw.max(1))),
            prior_delivered: self.delivered - sample_pkts,
            is_app_limited: false,
            acked_sacked: per_ack,
            losses,
            prior_in_flight: in_flight + per_ack,
            rtt: Some(rtt),
        };
        let ctx = RateContext {
            now: self.now,
            rs,
            delivered: self.delivered,
            lost: 0,
            delivered_time: self.now,
            in_flight,
            state: self.state,
            srtt: Some(rtt),
            min_rtt: Some(RTT),
            next_send: self.now,
        };
        self.out = self.bbr.on_rate_sample(self.w, &ctx);
        self.w = self.out.w;
    }

    /// One round trip of ACKs at `bw`, the flight held at `in_flight` packets.
    fn round(&mut self, bw: u64, in_flight: u64) {
        let acks = bw * 40 / 2;
        for _ in 0..acks {
            self.ack(Dur(RTT.0 / acks), bw, 2, RTT, in_flight, 0);
        }
    }

    fn cwnd(&self) -> u64 {
        self.w.cwnd / MSS
    }
}

/// `bw` packets/ms in BBR's unit (packets/us << 24).
fn unit(bw: u64) -> u64 {
    bw * BW_UNIT / 1000
}

#[test]
fn startup_ends_after_three_rounds_without_growth_then_drains_to_the_bdp() {
    let mut p = Path::new(1);
    for bw in [1, 2, 4] {
        p.round(bw, 1000);
        assert_eq!(p.bbr.mode, Mode::Startup);
        assert_eq!(p.bbr.pacing_gain, HIGH_GAIN);
    }
    // the estimate stops growing: three rounds later (and not before) STARTUP is over
    p.round(4, 1000);
    p.round(4, 1000);
    assert_eq!(p.bbr.mode, Mode::Startup, "two flat rounds");
    p.round(4, 1000);
    assert!(p.bbr.full_bw_reached());
    // the flight (1000 packets) is far above the BDP (160): DRAIN, at 1/high gain
    assert_eq!(p.bbr.mode, Mode::Drain);
    assert_eq!(p.bbr.pacing_gain, DRAIN_GAIN);
    assert_eq!(p.bbr.max_bw(), unit(4));
    // ssthresh became the BDP plus quanta
    assert!(p.w.ssthresh < u64::MAX);
    // the flight falls to the BDP: PROBE_BW
    p.ack(Dur::from_millis(1), 4, 2, RTT, 300, 0);
    assert_eq!(p.bbr.mode, Mode::Drain);
    p.ack(Dur::from_millis(1), 4, 2, RTT, 160, 0);
    assert_eq!(p.bbr.mode, Mode::ProbeBw);
}

#[test]
fn the_pacing_rate_is_gain_times_bandwidth_less_one_percent() {
    let mut p = Path::new(2);
    for _ in 0..8 {
        p.round(4, 100);
    }
    assert_eq!(p.bbr.mode, Mode::ProbeBw);
    // 4 packets/ms of 1000 bytes = 4 MB/s, x gain x 0.99
    let want = 4_000_000u128 * p.bbr.pacing_gain as u128 / 256 * 99 / 100;
    let got = p.out.pacing_rate as u128;
    assert!(got.abs_diff(want) <= want / 1000, "pacing rate {got}, want {want}");
    // window: 2 x BDP (160 packets) plus 3 TSO bursts of 2, rounded up to even (+2 in the
    // probing phase)
    let extra = if p.bbr.cycle_idx == 0 { 2 } else { 0 };
    assert!(p.cwnd() >= 2 * 160 + 6 + extra, "cwnd {}", p.cwnd());
}

#[test]
fn probe_bw_cycles_the_eight_gains_from_a_random_phase() {
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let mut p = Path::new(seed);
        for bw in [1, 2, 4, 4, 4, 4] {
            p.round(bw, 1000);
        }
        p.ack(Dur::from_millis(1), 4, 2, RTT, 100, 0);
        assert_eq!(p.bbr.mode, Mode::ProbeBw);
        // never the draining 3/4 phase first
        assert_ne!(p.bbr.cycle_idx, 1);
        starts.insert(p.bbr.cycle_idx);
        // each phase lasts one min RTT (the 5/4 phase also until the flight reaches 5/4 BDP,
        // the 3/4 phase at most until it falls to the BDP): the gains come in order
        let mut seen = vec![p.bbr.cycle_idx];
        for _ in 0..16 {
            let before = p.bbr.cycle_idx;
            let mut n = 0;
            while p.bbr.cycle_idx == before {
                let inflight = if p.bbr.pacing_gain > 256 { 400 } else { 300 };
                p.ack(Dur::from_millis(5), 4, 2, RTT, inflight, 0);
                n += 1;
                assert!(n < 100, "phase {before} never ends");
            }
            assert_eq!(p.bbr.cycle_idx, (before + 1) % 8);
            assert_eq!(p.bbr.pacing_gain, PACING_GAIN[p.bbr.cycle_idx]);
            seen.push(p.bbr.cycle_idx);
        }
        // 17 phases in a row: the probing phase two or three times
        assert!(seen.iter().filter(|&&i| i == 0).count() >= 2);
    }
    assert!(starts.len() >= 5, "start phases {starts:?}");
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_lower_rtt_at_four_packets_then_back() {
    let mut p = Path::new(3);
    for bw in [1, 2, 4, 4, 4, 4] {
        p.round(bw, 200);
    }
    p.ack(Dur::from_millis(1), 4, 2, RTT, 100, 0);
    assert_eq!(p.bbr.mode, Mode::ProbeBw);
    let start = p.now;
    let min_rtt = p.bbr.min_rtt_us();
    // RTT samples above the minimum for 10 s: PROBE_BW throughout
    while p.now.since(start) < Dur::from_millis(9_900) {
        p.ack(Dur::from_millis(5), 4, 2, Dur::from_millis(50), 200, 0);
        assert_eq!(p.bbr.mode, Mode::ProbeBw, "at {:?}", p.now);
    }
    let cwnd_before = p.cwnd();
    let mut n = 0;
    while p.bbr.mode != Mode::ProbeRtt {
        p.ack(Dur::from_millis(5), 4, 2, Dur::from_millis(50), 200, 0);
        n += 1;
        assert!(n < 100);
    }
    assert!(p.now.since(start) > Dur::from_millis(9_900));
    // the expired filter took the latest sample
    assert_eq!(p.bbr.min_rtt_us(), 50_000);
    assert_ne!(min_rtt, 50_000);
    assert!(p.cwnd() <= CWND_MIN_TARGET, "cwnd {} in PROBE_RTT", p.cwnd());
    assert!(p.out.mark_app_limited);
    // 200 ms with at most 4 packets in flight and a round: back to PROBE_BW, window restored
    let entered = p.now;
    while p.bbr.mode == Mode::ProbeRtt {
        p.ack(Dur::from_millis(5), 4, 1, RTT, 3, 0);
        assert!(p.cwnd() <= CWND_MIN_TARGET || p.bbr.mode != Mode::ProbeRtt);
        assert!(p.now.since(entered) < Dur::from_secs(1));
    }
    assert!(p.now.since(entered) >= Dur::from_millis(200));
    assert_eq!(p.bbr.mode, Mode::ProbeBw);
    // restored, capped by the target of the phase it returns to (2 BDP + quanta)
    assert!(cwnd_before >= 2 * 160 + 6);
    assert!(p.cwnd() >= 2 * 160 + 6, "cwnd {} restored (was {cwnd_before})", p.cwnd());
}

#[test]
fn recovery_conserves_packets_then_restores_the_window() {
    let mut p = Path::new(4);
    for bw in [1, 2, 4, 4, 4, 4, 4, 4] {
        p.round(bw, 100);
    }
    assert_eq!(p.bbr.mode, Mode::ProbeBw);
    let cwnd = p.cwnd();
    let loss = crate::cc::test_support::loss(300 * MSS, &[] as &[SubflowState], 0);
    p.w = p.bbr.on_congestion(p.w, CongestionEvent::FastRetransmit, &loss);
    assert_eq!(p.cwnd(), cwnd, "entering recovery leaves the window to the next ACK");
    p.state = CaState::Recovery;
    p.ack(Dur::from_millis(1), 4, 2, RTT, 100, 3);
    // the first round of recovery: in flight + acknowledged
    assert_eq!(p.cwnd(), 102);
    p.ack(Dur::from_millis(1), 4, 2, RTT, 90, 0);
    assert_eq!(p.cwnd(), 102, "never below the flight plus what was acknowledged");
    p.state = CaState::Open;
    p.ack(Dur::from_millis(1), 4, 2, RTT, 90, 0);
    assert!(p.cwnd() >= cwnd - 2, "restored to about {cwnd}: {}", p.cwnd());
    // a timeout: one packet, then the window grows back by what is acknowledged
    p.w = p.bbr.on_congestion(p.w, CongestionEvent::Timeout, &loss);
    assert_eq!(p.cwnd(), 1);
    p.state = CaState::Loss;
    p.ack(Dur::from_millis(1), 4, 2, RTT, 0, 0);
    assert_eq!(p.cwnd(), CWND_MIN_TARGET);
}

#[test]
fn a_policer_is_detected_from_two_lossy_intervals_of_the_same_rate() {
    let mut p = Path::new(5);
    for bw in [1, 2, 4, 4, 4, 4, 4] {
        p.round(bw, 100);
    }
    assert!(!p.bbr.lt_use_bw());
    // every ACK reports a loss for each packet delivered (50 % loss), the rate stays 4/ms:
    // after two intervals of at least 4 rounds BBR paces at the long-term rate
    let mut lost = 0;
    for _ in 0..12 {
        for _ in 0..80 {
            p.now += Dur::from_micros(500);
            p.delivered += 2;
            lost += 2;
            let sample = 160.min(p.delivered);
            let rs = RateSample {
                delivered: sample,
                interval: Some(Dur::from_micros(sample * 250)),
                prior_delivered: p.delivered - sample,
                acked_sacked: 2,
                losses: 2,
                prior_in_flight: 100,
                rtt: Some(RTT),
                ..RateSample::default()
            };
            let ctx = RateContext {
                now: p.now,
                rs,
                delivered: p.delivered,
                lost,
                delivered_time: p.now,
                in_flight: 100,
                state: CaState::Open,
                srtt: Some(RTT),
                min_rtt: Some(RTT),
                next_send: p.now,
            };
            p.out = p.bbr.on_rate_sample(p.w, &ctx);
            p.w = p.out.w;
        }
    }
    assert!(p.bbr.lt_use_bw());
    assert_eq!(p.bbr.pacing_gain, BBR_UNIT);
    let lt = p.bbr.bw();
    assert!(lt.abs_diff(unit(4)) <= unit(4) / 20, "long-term bw {lt} vs {}", unit(4));
}

#[test]
fn the_max_filter_forgets_after_its_window() {
    let mut f = MaxFilter::default();
    f.reset(0, 10);
    assert_eq!(f.running_max(10, 1, 5), 10);
    assert_eq!(f.running_max(10, 5, 7), 10);
    assert_eq!(f.running_max(10, 11, 3), 7);
    assert_eq!(f.running_max(10, 30, 2), 2);
    assert_eq!(f.running_max(10, 31, 9), 9);
}

#[test]
fn an_application_limited_restart_from_idle_paces_at_the_bandwidth() {
    let mut p = Path::new(6);
    for bw in [1, 2, 4, 4, 4, 4] {
        p.round(bw, 100);
    }
    // into the probing phase (gain 5/4)
    let mut n = 0;
    while p.bbr.cycle_idx != 0 {
        p.ack(Dur::from_millis(5), 4, 2, RTT, 300, 0);
        n += 1;
        assert!(n < 1000);
    }
    let probing = p.out.pacing_rate;
    let unit_rate = 4_000_000 * 99 / 100;
    assert!(probing > unit_rate * 6 / 5);
    // not application-limited: nothing changes
    let out = p.bbr.on_send_from_idle(p.w, probing, p.now, false);
    assert_eq!(out.pacing_rate, probing);
    let out = p.bbr.on_send_from_idle(p.w, probing, p.now, true);
    assert!(out.pacing_rate.abs_diff(unit_rate) <= unit_rate / 1000, "{} vs {unit_rate}", out.pacing_rate);
    assert_eq!(out.w, p.w);
}

#[test]
fn the_model_reads_as_linux_reports_it() {
    let mut p = Path::new(3);
    // before any sample: no bandwidth, no min RTT, STARTUP's gains
    let m = p.bbr.model().unwrap();
    assert_eq!((m.bw_bps, m.min_rtt), (0.0, None));
    assert_eq!((m.pacing_gain, m.cwnd_gain), (739.0 / 256.0, 739.0 / 256.0));
    for _ in 0..8 {
        p.round(4, 100);
    }
    // 4 packets/ms of 1000 bytes: 32 Mbit/s (bbr_get_info: bw x MSS x 10^6 >> 24, in bytes/s)
    let m = p.bbr.model().unwrap();
    assert!((m.bw_bps - 32e6).abs() <= 32e6 * 1e-4, "bw {}", m.bw_bps); // the fixed point truncates
    assert_eq!(m.min_rtt, Some(RTT));
    assert_eq!(m.pacing_gain, p.bbr.pacing_gain as f64 / 256.0);
    assert_eq!(m.cwnd_gain, 2.0);
}
