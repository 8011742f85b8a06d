//! MPTCP-rec's sender side, the PCDer (seed 000 §4.2, ALGORITHMS.md §7.3).
//!
//! The receiver estimates a desired sending rate (DSR) per path and sends it back in an
//! extended NR-SACK ([`crate::feedback::Dsror`]). The sender computes no path
//! quality of its own:
//! * **Rate-based sending.** Each path in the candidate list `P_list` gets new data paced at
//!   its advertised DSR: a chunk goes to a path only when that path's pacing clock allows it
//!   and the chunk before it has left (nothing waits unsent on the subflow, so data is never
//!   committed to a path ahead of its rate). Loss recovery stays with the subflow's sender,
//!   driven by the SACK blocks; with the `receiver_rate` controller its window only bounds the
//!   flight. Before the first feedback a path runs at `initial_window` segments per srtt.
//! * **The list sorted by DSR.** New data goes to the fastest path (by DSR) that may send now.
//! * **awnd jitter indicator.** At each observation time (the arrival of an extended NR-SACK),
//!   over the last `awnd_samples` advertised windows: `awndΔ = (awnd_cur − avg)/(max − min)`
//!   (0 when max = min). **[RECONSTRUCTED]** the normalised deviation, a sliding window of
//!   samples (one per ACK) and the observation times.
//! * **RB2LOC prediction.** `awndΔ(t_κ) < awndΔ(t_{κ−1}) < 0`: the window shrinks and keeps
//!   shrinking. The path with the smallest DSR in the list is then removed (marked unused),
//!   unless that would leave fewer than `min_paths` (never the last path).
//!   **[RECONSTRUCTED]** the objective (argmin DSR) and the constraint `|P_list| ≥ 2`.
//! * **Full-MPTCP mode.** When no RB2LOC is predicted and the indicator is back at or above
//!   zero ("clear"), every removed path returns to the list. What the paper says: "in the case
//!   of non-RB2LOC event is detected, [...] the MPTCP-rec needs to switch to Full-MPTCP mode";
//!   nothing more. Read literally that is an immediate return at the first observation without
//!   a prediction. **[RECONSTRUCTED]** (ours, not the paper's) the clear condition
//!   `awndΔ ≥ 0`, which asks a little more than the literal rule, and the optional hysteresis:
//!   the removed paths come back only once the indicator has stayed clear for
//!   `restore_after` consecutive observations *and* for at least `restore_hold` of time; an
//!   observation with `awndΔ < 0` or a prediction starts the count again. The defaults (one
//!   observation, no hold) are the rule without hysteresis, because the paper gives none; a
//!   hysteresis is a departure from it, to be chosen in the scenario.

use super::{AckInfo, Decision, SchedContext, Scheduler, SubflowView};
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// The PCDer's settings (scenario key `mptcp_rec` of a flow, with the receiver's).
#[derive(Clone, Debug, PartialEq)]
pub struct PcderConfig {
    /// Advertised-window samples the jitter indicator looks at (m).
    pub awnd_samples: usize,
    /// Fewest paths the list may shrink to.
    pub min_paths: usize,
    /// Segments per srtt before the first feedback arrives.
    pub initial_window: u32,
    /// Pacing credit a path may bank while it could not send, in chunks.
    pub burst: u32,
    /// Consecutive clear observations (`awndΔ ≥ 0`, no prediction) before removed paths return.
    pub restore_after: u32,
    /// Time the indicator must have stayed clear before removed paths return.
    pub restore_hold: Dur,
    /// A control, not the paper's scheme: each path's rate fixed (bit/s, by path index) instead
    /// of the receiver's estimate; empty: the receiver's estimate (the default). The feedback
    /// still marks the time of each estimate and drives the path list.
    pub fixed_rates: Vec<f64>,
}

impl Default for PcderConfig {
    fn default() -> Self {
        PcderConfig { awnd_samples: 16, min_paths: 1, initial_window: 10, burst: 2, restore_after: 1, restore_hold: Dur::ZERO, fixed_rates: Vec::new() }
    }
}

/// Something the path list did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathEventKind {
    /// RB2LOC predicted by the awnd jitter indicator.
    Predicted,
    /// A path left the list.
    Removed,
    /// A path came back (Full-MPTCP mode).
    Restored,
}

impl PathEventKind {
    pub fn name(self) -> &'static str {
        match self {
            PathEventKind::Predicted => "rb2loc_predicted",
            PathEventKind::Removed => "path_removed",
            PathEventKind::Restored => "path_restored",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathEvent {
    pub at: SimTime,
    pub kind: PathEventKind,
    /// The path concerned (for `Predicted`, the one the rule picked, if any).
    pub path: Option<usize>,
}

/// The MPTCP-rec scheduler.
#[derive(Clone, Debug, Default)]
pub struct MptcpRec {
    cfg: PcderConfig,
    /// Advertised DSR per path (bit/s) and the stamp of the feedback it came with.
    rate: Vec<Option<(f64, SimTime)>>,
    /// Earliest time each path may take its next chunk.
    next_at: Vec<SimTime>,
    /// Membership of the candidate list.
    listed: Vec<bool>,
    awnd: VecDeque<u64>,
    last_delta: Option<f64>,
    /// The current run of clear observations: how many, and since when.
    clear_count: u32,
    clear_since: Option<SimTime>,
    wake: Option<SimTime>,
    events: Vec<PathEvent>,
}

impl MptcpRec {
    pub fn new(cfg: PcderConfig) -> MptcpRec {
        MptcpRec { cfg, ..MptcpRec::default() }
    }

    fn fit(&mut self, n: usize) {
        if self.listed.len() < n {
            self.rate.resize(n, None);
            self.next_at.resize(n, SimTime::ZERO);
            self.listed.resize(n, true);
        }
    }

    /// The rate path `i` is paced at, bit/s: its advertised DSR, or before any feedback
    /// `initial_window` segments per srtt.
    pub fn rate_of(&self, i: usize, v: &SubflowView) -> f64 {
        if let Some(&r) = self.cfg.fixed_rates.get(i) {
            return r;
        }
        match self.rate.get(i).copied().flatten() {
            Some((r, _)) => r,
            None => {
                let srtt = v.srtt.unwrap_or(Dur::from_millis(100)).as_secs_f64().max(1e-6);
                (self.cfg.initial_window as u64 * v.mss * 8) as f64 / srtt
            }
        }
    }

    /// The advertised DSR of each path (None before its first feedback).
    pub fn advertised(&self) -> Vec<Option<f64>> {
        self.rate.iter().map(|r| r.map(|(x, _)| x)).collect()
    }

    /// Which paths are in the candidate list.
    pub fn listed(&self) -> &[bool] {
        &self.listed
    }

    /// Everything the path list did, oldest first.
    pub fn events(&self) -> &[PathEvent] {
        &self.events
    }

    /// The awnd jitter indicator over the samples held: `(cur − avg)/(max − min)`, 0 when all
    /// samples are equal; None without samples.
    pub fn awnd_delta(&self) -> Option<f64> {
        let cur = *self.awnd.back()? as f64;
        let (mut lo, mut hi, mut sum) = (u64::MAX, 0u64, 0f64);
        for &a in &self.awnd {
            lo = lo.min(a);
            hi = hi.max(a);
            sum += a as f64;
        }
        let avg = sum / self.awnd.len() as f64;
        Some(if hi > lo { (cur - avg) / (hi - lo) as f64 } else { 0.0 })
    }

    /// An observation time: predict RB2LOC, remove or restore paths.
    fn observe(&mut self, now: SimTime) {
        let Some(delta) = self.awnd_delta() else { return };
        let predicted = delta < 0.0 && self.last_delta.is_some_and(|d| delta < d && d < 0.0);
        self.last_delta = Some(delta);
        if predicted || delta < 0.0 {
            self.clear_count = 0;
            self.clear_since = None;
        } else {
            self.clear_count = self.clear_count.saturating_add(1);
            self.clear_since.get_or_insert(now);
        }
        if predicted {
            let victim = self.removal_choice();
            self.events.push(PathEvent { at: now, kind: PathEventKind::Predicted, path: victim });
            if let Some(v) = victim {
                self.listed[v] = false;
                self.events.push(PathEvent { at: now, kind: PathEventKind::Removed, path: Some(v) });
            }
        } else if self.clear_count >= self.cfg.restore_after.max(1) && self.clear_since.is_some_and(|t| now.since(t) >= self.cfg.restore_hold) {
            for i in 0..self.listed.len() {
                if !self.listed[i] {
                    self.listed[i] = true;
                    self.events.push(PathEvent { at: now, kind: PathEventKind::Restored, path: Some(i) });
                }
            }
        }
    }

    /// The listed path with the smallest advertised DSR, if the list may lose one (it keeps
    /// at least `max(min_paths, 1)` paths). Paths without feedback yet are not candidates.
    pub fn removal_choice(&self) -> Option<usize> {
        let listed = self.listed.iter().filter(|&&l| l).count();
        if listed <= self.cfg.min_paths.max(1) {
            return None;
        }
        (0..self.listed.len())
            .filter(|&i| self.listed[i])
            .filter_map(|i| self.rate[i].map(|(r, _)| (r, i)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, i)| i)
    }
}

impl Scheduler for MptcpRec {
    fn name(&self) -> &'static str {
        "mptcp_rec"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let n = ctx.subflows.len();
        self.fit(n);
        let now = ctx.now;
        // the listed paths that could take a chunk now, fastest advertised rate first
        let mut best: Option<(f64, usize)> = None;
        let mut wake: Option<SimTime> = None;
        let usable_listed = (0..n).any(|i| self.listed[i] && ctx.subflows[i].usable);
        for (i, v) in ctx.subflows.iter().enumerate() {
            // a path out of the list still counts if every listed path failed
            if !(v.usable && (self.listed[i] || !usable_listed)) {
                continue;
            }
            // wake up at the next sending time of every path that will want one (a chunk
            // just handed out is still queued when the connection asks again)
            if self.next_at[i] > now {
                wake = Some(wake.map_or(self.next_at[i], |w: SimTime| w.min(self.next_at[i])));
                continue;
            }
            if v.queued > 0 || !v.has_cwnd_room() {
                continue;
            }
            let r = self.rate_of(i, v);
            if best.is_none_or(|(br, bi)| r > br || (r == br && i < bi)) {
                best = Some((r, i));
            }
        }
        match best {
            Some((r, i)) if r > 0.0 => {
                let gap = Dur(((ctx.next_len * 8) as f64 / r * 1e9).ceil() as u64);
                // a path that waited may catch up by at most `burst` chunks
                let floor = SimTime(now.0.saturating_sub(gap.0.saturating_mul(self.cfg.burst as u64)));
                self.next_at[i] = self.next_at[i].max(floor) + gap;
                self.wake = Some(self.next_at[i].min(wake.unwrap_or(SimTime::MAX)));
                Decision::Send(i)
            }
            _ => {
                self.wake = wake;
                Decision::Wait
            }
        }
    }

    fn on_ack_info(&mut self, info: &AckInfo) {
        self.fit(info.sub + 1);
        self.awnd.push_back(info.window);
        while self.awnd.len() > self.cfg.awnd_samples.max(1) {
            self.awnd.pop_front();
        }
        if let Some(f) = info.feedback {
            let p = f.path as usize;
            self.fit(p + 1);
            // feedback older than what was already taken is stale
            if self.rate[p].is_none_or(|(_, at)| f.stamp >= at) {
                let rate = self.cfg.fixed_rates.get(p).copied().unwrap_or(f.rate_bps);
                self.rate[p] = Some((rate, f.stamp));
                self.observe(info.now);
            }
        }
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.wake
    }

    fn paced(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::net::Feedback;

    fn fb(r: &mut MptcpRec, at_ms: u64, path: u8, rate: f64, window: u64) {
        let now = SimTime(Dur::from_millis(at_ms).0);
        r.on_ack_info(&AckInfo { now, sub: path as usize, feedback: Some(Feedback { stamp: now, path, rate_bps: rate }), window });
    }

    fn ack(r: &mut MptcpRec, at_ms: u64, sub: usize, window: u64) {
        r.on_ack_info(&AckInfo { now: SimTime(Dur::from_millis(at_ms).0), sub, feedback: None, window });
    }

    #[test]
    fn fixed_rates_replace_the_receivers_estimate_but_not_the_list() {
        let mut r = MptcpRec::new(PcderConfig { fixed_rates: vec![1e6, 5e6], ..PcderConfig::default() });
        r.on_ack_info(&AckInfo { now: SimTime(Dur::from_millis(10).0), sub: 0, feedback: Some(Feedback { stamp: SimTime(Dur::from_millis(10).0), path: 0, rate_bps: 9e6 }), window: 1000 });
        assert_eq!(r.advertised(), vec![Some(1e6)]);
        let v = super::super::test_util::sf(100, 10, 0);
        assert_eq!((r.rate_of(0, &v), r.rate_of(1, &v)), (1e6, 5e6), "the fixed rate also before any feedback");
        let plain = MptcpRec::new(PcderConfig::default());
        assert!(plain.rate_of(1, &v) > 0.0 && plain.rate_of(1, &v) != 5e6);
    }

    #[test]
    fn the_indicator_is_the_normalised_deviation() {
        let mut r = MptcpRec::default();
        assert_eq!(r.awnd_delta(), None);
        for w in [100, 100] {
            ack(&mut r, 0, 0, w);
        }
        assert_eq!(r.awnd_delta(), Some(0.0));
        for w in [200, 0] {
            ack(&mut r, 0, 0, w);
        }
        // samples 100, 100, 200, 0: avg 100, range 200, current 0
        assert_eq!(r.awnd_delta(), Some(-0.5));
        // a sliding window of m samples
        let mut r = MptcpRec::new(PcderConfig { awnd_samples: 2, ..PcderConfig::default() });
        for w in [0, 1000, 100, 300] {
            ack(&mut r, 0, 0, w);
        }
        assert_eq!(r.awnd_delta(), Some(0.5));
    }

    #[test]
    fn a_shrinking_window_removes_the_slowest_path_and_a_recovered_one_restores_it() {
        let mut r = MptcpRec::default();
        fb(&mut r, 0, 0, 10e6, 100_000);
        fb(&mut r, 1, 1, 0.3e6, 100_000);
        fb(&mut r, 2, 2, 9e6, 100_000);
        // the window falls, and keeps falling
        fb(&mut r, 3, 0, 10e6, 90_000);
        assert!(r.events().is_empty(), "one fall is not a trend: {:?}", r.events());
        fb(&mut r, 4, 2, 9e6, 0);
        assert_eq!(r.listed(), &[true, false, true]);
        let kinds: Vec<_> = r.events().iter().map(|e| (e.kind, e.path)).collect();
        assert_eq!(kinds, vec![(PathEventKind::Predicted, Some(1)), (PathEventKind::Removed, Some(1))]);
        // the window comes back above its average: Full-MPTCP again
        fb(&mut r, 5, 0, 10e6, 100_000);
        assert_eq!(r.listed(), &[true, true, true]);
        assert_eq!(r.events().last().map(|e| (e.kind, e.path)), Some((PathEventKind::Restored, Some(1))));
    }

    /// Removes path 1 at 4 ms (as in the test above), then feeds `windows` as (ms, window)
    /// observations; the times at which the path came back.
    fn restore_times(cfg: PcderConfig, windows: &[(u64, u64)]) -> Vec<SimTime> {
        let mut r = MptcpRec::new(cfg);
        fb(&mut r, 0, 0, 10e6, 100_000);
        fb(&mut r, 1, 1, 0.3e6, 100_000);
        fb(&mut r, 2, 2, 9e6, 100_000);
        fb(&mut r, 3, 0, 10e6, 90_000);
        fb(&mut r, 4, 2, 9e6, 0);
        assert_eq!(r.listed(), &[true, false, true]);
        for &(at, w) in windows {
            fb(&mut r, at, (at % 2) as u8 * 2, 9e6, w);
        }
        r.events().iter().filter(|e| e.kind == PathEventKind::Restored).map(|e| e.at).collect()
    }

    #[test]
    fn hysteresis_holds_the_path_out_until_the_indicator_stays_clear() {
        let t = |ms: u64| SimTime(Dur::from_millis(ms).0);
        // clear, clear, below average (not a prediction: the indicator rose before), then clear
        let seq = [(5, 100_000), (6, 100_000), (7, 50_000), (8, 100_000), (9, 100_000), (10, 100_000), (60, 100_000)];
        // without hysteresis (the default) the first clear observation restores
        assert_eq!(restore_times(PcderConfig::default(), &seq), vec![t(5)]);
        // three clear observations in a row: the dip at 7 ms starts the count again
        let after = PcderConfig { restore_after: 3, ..PcderConfig::default() };
        assert_eq!(restore_times(after.clone(), &seq), vec![t(10)]);
        // and clear for 50 ms as well: the run that began at 8 ms is long enough at 60 ms
        let hold = PcderConfig { restore_hold: Dur::from_millis(50), ..after };
        assert_eq!(restore_times(hold, &seq), vec![t(60)]);
    }

    #[test]
    fn never_removes_the_last_path() {
        let mut r = MptcpRec::default();
        fb(&mut r, 0, 0, 10e6, 100_000);
        fb(&mut r, 1, 1, 1e6, 100_000);
        let mut w = 90_000;
        for t in 2..30 {
            fb(&mut r, t, (t % 2) as u8, if t % 2 == 0 { 10e6 } else { 1e6 }, w);
            w = w * 9 / 10;
            assert!(r.listed().iter().any(|&l| l), "the list emptied at {t}");
        }
        assert_eq!(r.listed(), &[true, false]);
        assert!(r.events().iter().filter(|e| e.kind == PathEventKind::Removed).count() == 1);
        // a constraint of two paths forbids any removal
        let mut r = MptcpRec::new(PcderConfig { min_paths: 2, ..PcderConfig::default() });
        fb(&mut r, 0, 0, 10e6, 100_000);
        fb(&mut r, 1, 1, 1e6, 100_000);
        fb(&mut r, 2, 0, 10e6, 50_000);
        fb(&mut r, 3, 1, 1e6, 10_000);
        assert_eq!(r.listed(), &[true, true]);
        assert_eq!(r.removal_choice(), None);
    }

    #[test]
    fn stale_feedback_is_ignored() {
        let mut r = MptcpRec::default();
        fb(&mut r, 10, 0, 5e6, 1000);
        let old = SimTime(Dur::from_millis(5).0);
        r.on_ack_info(&AckInfo { now: SimTime(Dur::from_millis(11).0), sub: 0, feedback: Some(Feedback { stamp: old, path: 0, rate_bps: 1e3 }), window: 1000 });
        assert_eq!(r.advertised(), vec![Some(5e6)]);
    }

    #[test]
    fn paces_each_path_at_its_rate_and_prefers_the_faster() {
        let mut r = MptcpRec::default();
        fb(&mut r, 0, 0, 8e6, 1 << 20); // 1000-byte chunks every 1 ms
        fb(&mut r, 0, 1, 0.8e6, 1 << 20); // every 10 ms
        let subs = [sf(50, 1000, 0), sf(10, 1000, 0)];
        let mut c = ctx(&subs);
        let mut sent = [0u32; 2];
        // 100 ms of decisions every 0.1 ms, each chunk leaving at once
        for k in 0..1000u64 {
            c.now = SimTime(Dur::from_micros(100 * k).0);
            while let Decision::Send(i) = r.pick(&c) {
                sent[i] += 1;
            }
        }
        assert!((99..=103).contains(&sent[0]), "{sent:?}");
        assert!((10..=12).contains(&sent[1]), "{sent:?}");
        // it asks to be woken for the next sending time
        assert!(r.wake_at().is_some_and(|w| w > c.now));
    }

    #[test]
    fn a_removed_path_gets_no_new_data() {
        let mut r = MptcpRec::default();
        fb(&mut r, 0, 0, 8e6, 100_000);
        fb(&mut r, 0, 1, 0.8e6, 100_000);
        fb(&mut r, 1, 0, 8e6, 90_000);
        fb(&mut r, 2, 0, 8e6, 0);
        assert_eq!(r.listed(), &[true, false]);
        let subs = [sf(50, 1000, 0), sf(10, 1000, 0)];
        let mut c = ctx(&subs);
        for k in 0..1000u64 {
            c.now = SimTime(Dur::from_micros(100 * k).0);
            while let Decision::Send(i) = r.pick(&c) {
                assert_eq!(i, 0);
            }
        }
    }
}
