//! Applications: what writes data into a flow.
//!
//! A bulk application keeps the send buffer full. Every other application is paced: at each
//! tick it makes at most one write (a packet, or a video frame) and says when it wants the
//! next tick. Random choices (on/off durations, VBR arrivals and sizes, load factors) come from
//! the application's own streams, so they never disturb another component's draws.

mod queue;

pub use queue::{Frame, FrameQueue, Outcome};

use crate::rng::Rng;
use crate::scenario::{AppSpec, MediaSpec, Vary};
use crate::time::{Dur, SimTime};

/// One write: `len` bytes with a priority (0: ordinary) and a class (the frame type of a media
/// stream; 0 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub len: u64,
    pub priority: u8,
    pub class: u8,
}

#[derive(Clone, Debug)]
enum Phase {
    On { until: SimTime },
    Off,
}

#[derive(Clone, Debug)]
enum Paced {
    Cbr {
        interval: Dur,
        packet: u32,
    },
    /// `owed`: on time still to pass before the next write, carried over from the last on
    /// period, so that on periods shorter than the packet interval keep the rate.
    OnOff {
        interval: Dur,
        packet: u32,
        on: Dur,
        off: Dur,
        exponential: bool,
        phase: Phase,
        owed: Dur,
    },
    Vbr {
        rate_bps: f64,
        cumulative: Vec<(f64, u32)>,
        mean_wire: f64,
        header: u32,
        vary: Option<Varying>,
    },
    Media {
        spec: MediaSpec,
        next: usize,
    },
}

/// A load factor redrawn every period from its own stream.
#[derive(Clone, Debug)]
struct Varying {
    vary: Vary,
    rng: Rng,
    factor: f64,
    until: SimTime,
}

impl Varying {
    fn factor_at(&mut self, now: SimTime) -> f64 {
        while now >= self.until {
            let u = self.rng.next_f64();
            self.factor = self.vary.min + (self.vary.max - self.vary.min) * u;
            self.until += self.vary.period;
        }
        self.factor
    }
}

#[derive(Clone, Debug)]
pub enum App {
    /// Keeps the send buffer full until `remaining` bytes are written (`None`: forever).
    Bulk { remaining: Option<u64> },
    /// Writes at ticks.
    Paced(Box<PacedApp>),
}

#[derive(Clone, Debug)]
pub struct PacedApp {
    kind: Paced,
    rng: Rng,
}

fn exp_sample(rng: &mut Rng, mean: f64) -> f64 {
    // inverse transform; 1 - u avoids ln(0)
    -mean * (1.0 - rng.next_f64()).ln()
}

impl App {
    /// Builds the application of flow `flow` (its name labels the random streams). `header`
    /// is the per-packet header of the flow's transport: VBR sizes are sizes on the wire.
    pub fn new(spec: &AppSpec, seed: u64, flow: &str, header: u32) -> App {
        let rng = Rng::substream(seed, &format!("flow/{flow}/app"));
        let paced = |kind| App::Paced(Box::new(PacedApp { kind, rng: rng.clone() }));
        match spec {
            AppSpec::Bulk { bytes } => App::Bulk { remaining: *bytes },
            AppSpec::Cbr { rate_bps, packet } => paced(Paced::Cbr { interval: Dur::tx_time(*packet as u64, *rate_bps), packet: *packet }),
            AppSpec::OnOff { rate_bps, packet, on, off, exponential } => paced(Paced::OnOff {
                interval: Dur::tx_time(*packet as u64, *rate_bps),
                packet: *packet,
                on: *on,
                off: *off,
                exponential: *exponential,
                phase: Phase::Off,
                owed: Dur::ZERO,
            }),
            AppSpec::Vbr { rate_bps, sizes, vary } => {
                let mut acc = 0.0;
                let cumulative = sizes
                    .iter()
                    .map(|&(s, w)| {
                        acc += w;
                        (acc, s)
                    })
                    .collect();
                let mean_wire = sizes.iter().map(|&(s, w)| s as f64 * w).sum();
                let vary = vary.as_ref().map(|v| {
                    let label = v.group.clone().unwrap_or_else(|| format!("flow/{flow}"));
                    Varying { vary: v.clone(), rng: Rng::substream(seed, &format!("{label}/vary")), factor: 1.0, until: SimTime::ZERO }
                });
                paced(Paced::Vbr { rate_bps: *rate_bps as f64, cumulative, mean_wire, header, vary })
            }
            AppSpec::Media(m) => paced(Paced::Media { spec: m.clone(), next: 0 }),
        }
    }

    /// Bytes a bulk application writes when the send buffer has `space` bytes free. It writes
    /// whole segments (so the sender never has to send a runt in the middle of a transfer),
    /// except for the tail of a finite transfer.
    pub fn bulk_write(&mut self, space: u64, mss: u64) -> u64 {
        // most ACKs leave less than a segment's room: no division for them
        let whole = || if space < mss { 0 } else { space - space % mss };
        match self {
            App::Bulk { remaining: None } => whole(),
            App::Bulk { remaining: Some(r) } => {
                let n = if *r <= space { *r } else { whole() };
                *r -= n;
                n
            }
            App::Paced(_) => 0,
        }
    }

    /// A paced application's tick at `now`: what to write now and when to tick next.
    pub fn tick(&mut self, now: SimTime) -> (Option<Write>, Option<SimTime>) {
        let App::Paced(p) = self else { return (None, None) };
        let rng = &mut p.rng;
        match &mut p.kind {
            Paced::Cbr { interval, packet } => (Some(Write { len: *packet as u64, priority: 0, class: 0 }), Some(now + *interval)),
            Paced::OnOff { interval, packet, on, off, exponential, phase, owed } => {
                let draw = |rng: &mut Rng, mean: Dur| {
                    if *exponential {
                        Dur(exp_sample(rng, mean.0 as f64).round() as u64)
                    } else {
                        mean
                    }
                };
                let write = Write { len: *packet as u64, priority: 0, class: 0 };
                match *phase {
                    Phase::On { until } if now < until => {
                        // a write is due; the next one comes after another interval of on time
                        let next = now + *interval;
                        if next >= until {
                            *owed = Dur(next.0 - until.0);
                        }
                        (Some(write), Some(next.min(until)))
                    }
                    Phase::On { .. } => {
                        *phase = Phase::Off;
                        (None, Some(now + draw(rng, *off)))
                    }
                    Phase::Off => {
                        let until = now + draw(rng, *on).max(Dur(1));
                        *phase = Phase::On { until };
                        let first = now + *owed;
                        if first >= until {
                            // the whole on period passes before the next write is due
                            *owed = Dur(first.0 - until.0);
                            (None, Some(until))
                        } else if *owed > Dur::ZERO {
                            *owed = Dur::ZERO;
                            (None, Some(first))
                        } else {
                            let next = now + *interval;
                            if next >= until {
                                *owed = Dur(next.0 - until.0);
                            }
                            (Some(write), Some(next.min(until)))
                        }
                    }
                }
            }
            Paced::Vbr { rate_bps, cumulative, mean_wire, header, vary } => {
                let factor = vary.as_mut().map_or(1.0, |v| v.factor_at(now));
                let rate = *rate_bps * factor;
                if rate <= 0.0 {
                    // silent until the factor is drawn again
                    let until = vary.as_ref().map_or(SimTime::MAX, |v| v.until);
                    return (None, Some(until));
                }
                let u = rng.next_f64();
                let wire = cumulative.iter().find(|&&(c, _)| u < c).map_or(cumulative.last().map_or(1, |c| c.1), |c| c.1);
                let mean_gap_ns = *mean_wire * 8.0 / rate * 1e9;
                let gap = Dur(exp_sample(rng, mean_gap_ns).round().max(1.0) as u64);
                let len = wire.saturating_sub(*header).max(1) as u64;
                (Some(Write { len, priority: 0, class: 0 }), Some(now + gap))
            }
            Paced::Media { spec, next } => {
                let (class, size) = spec.frames[*next];
                *next = (*next + 1) % spec.frames.len();
                let w = Write { len: size as u64, priority: spec.classes[class].priority, class: class as u8 };
                (Some(w), Some(now + spec.frame_interval))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FrameClass;

    fn run(app: &mut App, until: SimTime) -> Vec<(SimTime, Write)> {
        let mut out = Vec::new();
        let mut t = SimTime::ZERO;
        while t < until {
            let (w, next) = app.tick(t);
            if let Some(w) = w {
                out.push((t, w));
            }
            match next {
                Some(n) => t = n,
                None => break,
            }
        }
        out
    }

    #[test]
    fn finite_bulk_stops_at_its_size() {
        let mut a = App::new(&AppSpec::Bulk { bytes: Some(5000) }, 1, "f", 40);
        assert_eq!(a.bulk_write(3500, 1000), 3000);
        assert_eq!(a.bulk_write(1500, 1000), 1000);
        assert_eq!(a.bulk_write(1500, 1000), 1000);
        assert_eq!(a.bulk_write(1500, 1000), 0);
        let mut u = App::new(&AppSpec::Bulk { bytes: None }, 1, "f", 40);
        assert_eq!(u.bulk_write(999, 1000), 0);
        assert_eq!(u.bulk_write(4_000_000, 1460), 3_998_940);
    }

    #[test]
    fn cbr_writes_at_its_rate() {
        let mut a = App::new(&AppSpec::Cbr { rate_bps: 1_000_000, packet: 1250 }, 1, "f", 40);
        let w = run(&mut a, SimTime(Dur::from_secs(1).0));
        assert_eq!(w.len(), 100);
        assert_eq!(w[1].0, SimTime(Dur::from_millis(10).0));
    }

    #[test]
    fn onoff_sends_only_while_on_and_averages_the_duty_cycle() {
        let spec =
            AppSpec::OnOff { rate_bps: 1_000_000, packet: 1250, on: Dur::from_millis(500), off: Dur::from_millis(500), exponential: false };
        let mut a = App::new(&spec, 1, "f", 40);
        let w = run(&mut a, SimTime(Dur::from_secs(10).0));
        // 50 packets per 500 ms on period, 10 on periods
        assert_eq!(w.len(), 500);
        assert!(w.iter().all(|(t, _)| (t.0 / 500_000_000) % 2 == 0));
        let spec =
            AppSpec::OnOff { rate_bps: 1_000_000, packet: 1250, on: Dur::from_millis(500), off: Dur::from_millis(500), exponential: true };
        let mut a = App::new(&spec, 1, "f", 40);
        let n = run(&mut a, SimTime(Dur::from_secs(400).0)).len() as f64;
        assert!((n / 20_000.0 - 1.0).abs() < 0.1, "{n}");
    }

    #[test]
    fn onoff_keeps_its_rate_when_on_periods_are_shorter_than_a_packet_interval() {
        // found by fuzzing: every on period used to start with a write, so 1 ms on periods
        // sent a 1250-byte packet every 2 ms (5 Mbit/s) where 1 Mbit/s at half duty was asked
        for exponential in [false, true] {
            let spec = AppSpec::OnOff { rate_bps: 1_000_000, packet: 1250, on: Dur::from_millis(1), off: Dur::from_millis(1), exponential };
            let mut a = App::new(&spec, 1, "f", 40);
            let n = run(&mut a, SimTime(Dur::from_secs(100).0)).len() as f64;
            // 100 s at 1 Mbit/s, on half of the time: 5,000 packets of 1250 B
            assert!((n / 5_000.0 - 1.0).abs() < 0.05, "exponential {exponential}: {n} packets");
        }
    }

    #[test]
    fn vbr_matches_its_mean_rate_and_size_mix() {
        let sizes = vec![(44, 0.5), (576, 0.25), (1500, 0.25)];
        let mut a = App::new(&AppSpec::Vbr { rate_bps: 2_000_000, sizes, vary: None }, 3, "f", 28);
        let w = run(&mut a, SimTime(Dur::from_secs(200).0));
        let wire: u64 = w.iter().map(|(_, w)| w.len + 28).sum();
        let rate = wire as f64 * 8.0 / 200.0;
        assert!((rate / 2e6 - 1.0).abs() < 0.03, "{rate}");
        let small = w.iter().filter(|(_, w)| w.len == 16).count() as f64 / w.len() as f64;
        assert!((small - 0.5).abs() < 0.02, "{small}");
    }

    #[test]
    fn vbr_load_varies_and_a_group_shares_its_factors() {
        let vary = Some(Vary { min: 0.0, max: 1.0, period: Dur::from_secs(1), group: Some("g".into()) });
        let spec = AppSpec::Vbr { rate_bps: 1_000_000, sizes: vec![(1000, 1.0)], vary };
        let per_second = |flow: &str| {
            let mut a = App::new(&spec, 9, flow, 0);
            let mut counts = vec![0u32; 20];
            for (t, _) in run(&mut a, SimTime(Dur::from_secs(20).0)) {
                counts[(t.0 / 1_000_000_000) as usize] += 1;
            }
            counts
        };
        let a = per_second("a");
        assert!(a.iter().max().unwrap() > &(a.iter().min().unwrap() + 40), "{a:?}");
        // same group: the same factor each second, so the per-second counts correlate
        let b = per_second("b");
        let both_quiet = a.iter().zip(&b).filter(|(x, y)| **x < 30 && **y < 30).count();
        let quiet_a = a.iter().filter(|x| **x < 30).count();
        assert!(both_quiet + 2 >= quiet_a, "{a:?} {b:?}");
    }

    #[test]
    fn media_follows_the_gop_with_priorities() {
        let spec = MediaSpec {
            frame_interval: Dur::from_millis(40),
            classes: vec![
                FrameClass { name: "I".into(), size: 20_000, priority: 2 },
                FrameClass { name: "P".into(), size: 5_000, priority: 0 },
            ],
            frames: vec![(0, 20_000), (1, 5_000), (1, 5_000)],
            deadline: None,
            backlog: None,
        };
        assert!((spec.rate_bps() - 30_000.0 * 8.0 / 0.12).abs() < 1e-6);
        let mut a = App::new(&AppSpec::Media(spec), 1, "v", 40);
        let w = run(&mut a, SimTime(Dur::from_millis(240).0));
        let kinds: Vec<(u64, u8)> = w.iter().map(|(_, w)| (w.len, w.priority)).collect();
        assert_eq!(kinds, vec![(20_000, 2), (5_000, 0), (5_000, 0), (20_000, 2), (5_000, 0), (5_000, 0)]);
    }
}
