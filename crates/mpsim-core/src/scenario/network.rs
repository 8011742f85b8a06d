//! Reading links (rate, delay, queue, loss models, outages) and paths.

use super::link_schedule;
use super::reader::{join, kind, Reader};
use super::units;
use super::*;
use crate::net::{Link, LinkTrace, LossProcess, ScheduleCursor};
use crate::rng::Rng;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Default EWMA weight of the congestion warning's average queue: [RECONSTRUCTED] ten times
/// RED's usual 0.002, as TCP-Jersey asks for "a larger weight" than RED without a figure here.
pub const DEFAULT_CW_WEIGHT: f64 = 0.02;

impl Reader<'_> {
    pub(super) fn link(&self, v: &Value, key: &str, duration: Dur) -> Result<LinkSpec, ScenarioError> {
        let t = self.table(
            v,
            key,
            &[
                "name",
                "rate",
                "trace",
                "reverse_trace",
                "delay",
                "queue",
                "loss",
                "reverse_loss",
                "down",
                "congestion_warning",
                "jitter",
                "aqm",
                "reverse_aqm",
                "schedule",
            ],
        )?;
        let name = self.req_name(&t, "name")?;
        let trace = self.link_trace(&t, "trace")?;
        let reverse_trace = self.link_trace(&t, "reverse_trace")?;
        let schedule = self.link_schedule(&t)?;
        // `rate` is the rate of each direction without a trace
        let rate = if trace.is_some() && reverse_trace.is_some() {
            if t.map.contains_key("rate") {
                return Err(self.e(&join(key, "rate"), "both directions follow traces (trace, reverse_trace): remove rate"));
            }
            0
        } else if !t.map.contains_key("rate") && trace.is_some() {
            return Err(self.e(
                &join(key, "rate"),
                "missing: the reverse direction has no trace; give it a rate (rate = \"...\") or reverse_trace = \"FILE\"",
            ));
        } else if let Some(r) = link_schedule::rate_at_zero(schedule.as_ref()).filter(|_| !t.map.contains_key("rate")) {
            r
        } else {
            let r = self.req(&t, "rate", units::rate)?;
            if r == 0 {
                return Err(self.e(&join(key, "rate"), "must be greater than zero"));
            }
            r
        };
        let mean = |tr: &Arc<LinkTrace>| (tr.mean_rate_bps().round() as u64).max(1);
        // `rate` holds until the schedule's first rate; the figure of a scheduled rate is its mean
        let schedule = schedule.map(|s| link_schedule::with_start_rate(s, rate));
        let rate = schedule.as_ref().map_or(rate, |s| s.mean_rate_bps(rate, duration));
        let rate_bps = trace.as_ref().map_or(rate, mean);
        let reverse_rate_bps = reverse_trace.as_ref().map_or(rate, mean);
        let delay = self.opt(&t, "delay", units::duration)?.unwrap_or(Dur::ZERO);
        let jitter = self.opt(&t, "jitter", units::duration)?.unwrap_or(Dur::ZERO);
        let queue = match self.opt(&t, "queue", units::queue)? {
            None => QueueLimit::Packets(100),
            Some(units::QueueSize::Packets(0)) | Some(units::QueueSize::Bytes(0)) => {
                return Err(self.e(&join(key, "queue"), "must hold at least one packet"))
            }
            Some(units::QueueSize::Packets(n)) => QueueLimit::Packets(n),
            Some(units::QueueSize::Bytes(b)) => QueueLimit::Bytes(b),
        };
        let loss = match t.map.get("loss") {
            None => LossModel::None,
            Some(lv) => self.loss(lv, &join(key, "loss"))?,
        };
        let reverse_loss = match t.map.get("reverse_loss") {
            None => LossModel::None,
            Some(lv) => self.loss(lv, &join(key, "reverse_loss"))?,
        };
        if let Some(s) = &schedule {
            self.check_link_schedule(&t, s, &loss)?;
        }
        let mut outages = Vec::new();
        if let Some(dv) = t.map.get("down") {
            let arr = dv
                .as_array()
                .ok_or_else(|| self.e(&join(key, "down"), "expected a list of outages like [{ at = \"10s\", until = \"12s\" }]"))?;
            self.at_most(arr.len(), MAX_OUTAGES_PER_LINK, &join(key, "down"), "outages")?;
            for (j, ov) in arr.iter().enumerate() {
                let okey = format!("{key}.down[{j}]");
                let ot = self.table(ov, &okey, &["at", "until"])?;
                let at = self.req(&ot, "at", units::duration)?;
                let until = self.opt(&ot, "until", units::duration)?.unwrap_or(duration + Dur::from_secs(1));
                if until <= at {
                    return Err(self.e(&join(&okey, "until"), "must be later than `at`"));
                }
                outages.push((SimTime(at.0), SimTime(until.0)));
            }
            outages.sort();
        }
        let congestion_warning =
            t.map.get("congestion_warning").map(|cv| self.congestion_warning(cv, &join(key, "congestion_warning"))).transpose()?;
        let aqm = t.map.get("aqm").map(|av| self.aqm(av, &join(key, "aqm"))).transpose()?.flatten();
        let reverse_aqm = t.map.get("reverse_aqm").map(|av| self.aqm(av, &join(key, "reverse_aqm"))).transpose()?.flatten();
        if aqm.is_some() && congestion_warning.is_some() {
            return Err(self.e(
                &join(key, "aqm"),
                "a queue discipline and congestion_warning do not combine (the warning marks by a drop-tail queue's average)",
            ));
        }
        Ok(LinkSpec {
            name,
            rate_bps,
            trace,
            reverse_rate_bps,
            reverse_trace,
            delay,
            jitter,
            queue,
            loss,
            reverse_loss,
            outages,
            congestion_warning,
            aqm,
            reverse_aqm,
            schedule,
        })
    }

    /// `trace = "FILE"` (or `reverse_trace`): a Mahimahi delivery trace, relative to the
    /// scenario's folder.
    fn link_trace(&self, t: &Table, k: &str) -> Result<Option<Arc<LinkTrace>>, ScenarioError> {
        let Some(v) = t.map.get(k) else { return Ok(None) };
        let key = join(&t.path, k);
        let name = v.as_str().ok_or_else(|| self.e(&key, format!("expected a trace file name, found {}", kind(v))))?;
        if name.is_empty() {
            return Err(self.e(&key, "expected a trace file name, found an empty string"));
        }
        let path = match self.dir {
            Some(d) => d.join(name),
            None => std::path::PathBuf::from(name),
        };
        LinkTrace::read(&path, name).map(|tr| Some(Arc::new(tr))).map_err(|e| self.e(&key, format!("{name}: {e}")))
    }

    /// `congestion_warning = { threshold = "20pkt", weight = 0.02 }`: mark every packet while
    /// the average queue is above the threshold (TCP New Jersey's routers).
    fn congestion_warning(&self, v: &Value, key: &str) -> Result<CongestionWarning, ScenarioError> {
        let t = self.table(v, key, &["threshold", "weight"])?;
        let threshold = match self.req(&t, "threshold", units::queue)? {
            units::QueueSize::Packets(n) => QueueLimit::Packets(n),
            units::QueueSize::Bytes(b) => QueueLimit::Bytes(b),
        };
        let weight = match t.map.get("weight") {
            None => DEFAULT_CW_WEIGHT,
            Some(_) => self.req_f64(&t, "weight")?,
        };
        if !(weight > 0.0 && weight <= 1.0) {
            return Err(self.e(&join(key, "weight"), format!("the average's weight must be above 0 and at most 1 (got {weight})")));
        }
        Ok(CongestionWarning { threshold, weight })
    }

    fn loss(&self, v: &Value, key: &str) -> Result<LossModel, ScenarioError> {
        if let Some(s) = v.as_str() {
            return self.uniform(units::fraction(s).map_err(|m| self.e(key, m))?, key);
        }
        if let Some(x) = v.as_f64() {
            return self.uniform(units::fraction(&x.to_string()).map_err(|m| self.e(key, m))?, key);
        }
        let t = self.table(v, key, &["model", "rate", "p", "r", "k", "h", "mean", "burst", "drops"])?;
        let model = self.req_string(&t, "model")?;
        let used = |names: &[&str]| -> Result<(), ScenarioError> {
            for k in t.map.keys() {
                if k != "model" && !names.contains(&k.as_str()) {
                    return Err(self.e(&join(key, k), format!("not a parameter of the '{model}' loss model")));
                }
            }
            Ok(())
        };
        match model.as_str() {
            "none" => {
                used(&[])?;
                Ok(LossModel::None)
            }
            "uniform" => {
                used(&["rate"])?;
                let p = self.req(&t, "rate", units::fraction)?;
                self.uniform(p, key)
            }
            "gilbert" => {
                if t.map.contains_key("mean") || t.map.contains_key("burst") {
                    used(&["mean", "burst"])?;
                    let mean = self.req(&t, "mean", units::fraction)?;
                    let burst = self.req_f64(&t, "burst")?;
                    if burst < 1.0 {
                        return Err(self.e(&join(key, "burst"), "the mean burst length is at least 1 packet"));
                    }
                    if mean >= 1.0 {
                        return Err(self.e(&join(key, "mean"), "must be below 100%"));
                    }
                    // simple Gilbert: no loss in Good, all lost in Bad (ALGORITHMS.md §10.1)
                    let r = 1.0 / burst;
                    let p = mean * r / (1.0 - mean);
                    Ok(LossModel::GilbertElliott { p, r, k: 1.0, h: 0.0 })
                } else {
                    used(&["p", "r", "k", "h"])?;
                    let p = self.req(&t, "p", units::fraction)?;
                    let r = self.req(&t, "r", units::fraction)?;
                    let k = self.opt(&t, "k", units::fraction)?.unwrap_or(1.0);
                    let h = self.opt(&t, "h", units::fraction)?.unwrap_or(0.0);
                    if r == 0.0 && p > 0.0 {
                        return Err(self.e(&join(key, "r"), "must be above 0 or the chain never leaves the Bad state"));
                    }
                    Ok(LossModel::GilbertElliott { p, r, k, h })
                }
            }
            "scripted" => {
                used(&["drops"])?;
                let dv =
                    t.map.get("drops").ok_or_else(|| self.e(&join(key, "drops"), "missing; list the 0-based packet indices to drop"))?;
                let arr = dv.as_array().ok_or_else(|| self.e(&join(key, "drops"), "expected a list of packet indices"))?;
                self.at_most(arr.len(), MAX_SCRIPTED_DROPS, &join(key, "drops"), "drops")?;
                let mut drops = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    drops.push(x.as_u64().ok_or_else(|| self.e(&format!("{key}.drops[{j}]"), "expected a non-negative integer"))?);
                }
                Ok(LossModel::Scripted { drops })
            }
            other => {
                Err(self.e(&join(key, "model"), format!("unknown loss model '{other}'; expected one of: none, uniform, gilbert, scripted")))
            }
        }
    }

    fn uniform(&self, p: f64, key: &str) -> Result<LossModel, ScenarioError> {
        if p >= 1.0 {
            return Err(self.e(key, "a loss rate of 100% delivers nothing"));
        }
        Ok(if p == 0.0 { LossModel::None } else { LossModel::Uniform { p } })
    }

    pub(super) fn path(&self, v: &Value, key: &str, links: &HashMap<String, usize>) -> Result<PathSpec, ScenarioError> {
        let t = self.table(v, key, &["name", "links"])?;
        let name = self.req_name(&t, "name")?;
        let lk = join(key, "links");
        let arr = t
            .map
            .get("links")
            .ok_or_else(|| self.e(&lk, "missing; list the link names the path crosses, in order"))?
            .as_array()
            .ok_or_else(|| self.e(&lk, "expected a list of link names"))?;
        if arr.is_empty() {
            return Err(self.e(&lk, "a path needs at least one link"));
        }
        self.at_most(arr.len(), MAX_LINKS_PER_PATH, &lk, "links")?;
        let mut idx = Vec::new();
        for (j, lv) in arr.iter().enumerate() {
            let k = format!("{lk}[{j}]");
            let n = lv.as_str().ok_or_else(|| self.e(&k, format!("expected a link name, found {}", kind(lv))))?;
            let i = *links.get(n).ok_or_else(|| {
                let mut names: Vec<&str> = links.keys().map(|s| s.as_str()).collect();
                names.sort();
                self.e(&k, format!("no link named '{n}' (links: {})", names.join(", ")))
            })?;
            if idx.contains(&i) {
                return Err(self.e(&k, format!("link '{n}' appears twice in the path")));
            }
            idx.push(i);
        }
        Ok(PathSpec { name, links: idx })
    }
}

impl LinkSpec {
    /// One direction of a scenario's link, with its own random streams for loss and jitter
    /// (`link/<name>/<fwd|rev>/loss` and `.../jitter`). Data crosses a link forward: the
    /// reverse direction, which carries only ACKs, has `reverse_loss` and no congestion warning.
    pub fn link(&self, forward: bool, seed: u64) -> Link {
        let l = self;
        let (dir, loss, cw, aqm) =
            if forward { ("fwd", &l.loss, l.congestion_warning, &l.aqm) } else { ("rev", &l.reverse_loss, None, &l.reverse_aqm) };
        let (rate, trace) = if forward { (l.rate_bps, &l.trace) } else { (l.reverse_rate_bps, &l.reverse_trace) };
        let rng = Rng::substream(seed, &format!("link/{}/{dir}/loss", l.name));
        let jitter = Rng::substream(seed, &format!("link/{}/{dir}/jitter", l.name));
        // rate and delay steps apply to both directions, loss steps to the forward one
        let schedule = l.schedule.as_ref().filter(|s| s.has_rate() || s.has_delay() || (forward && s.has_loss())).map(|s| {
            let p = if let LossModel::Uniform { p } = loss { *p } else { 0.0 };
            ScheduleCursor::new(s, rate, l.delay, p, forward)
        });
        Link::new(l.name.clone(), rate, l.delay, l.queue, LossProcess::new(loss.clone(), rng))
            .with_congestion_warning(cw)
            .with_jitter(l.jitter, jitter)
            .with_trace(trace.clone())
            .with_schedule(schedule)
            .with_aqm(aqm.as_ref(), Rng::substream(seed, &format!("link/{}/{dir}/aqm", l.name)))
    }
}

#[cfg(test)]
mod tests {
    use crate::net::Fate;
    use crate::scenario::{Scenario, ScenarioError};
    use crate::time::{Dur, SimTime};
    use std::path::{Path, PathBuf};

    /// A fresh folder for this test's files.
    fn folder(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mpsim-link-trace-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn scenario(link: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "duration = \"10s\"\n[[link]]\nname = \"cell\"\ndelay = \"20ms\"\n{link}\n[[path]]\nname = \"p\"\nlinks = [\"cell\"]\n[[flow]]\npath = \"p\"\n"
        );
        Scenario::from_toml_in(&text, "s.toml", Some(dir))
    }

    #[test]
    fn traces_are_read_relative_to_the_scenario_and_replace_the_rate() {
        let d = folder("keys");
        std::fs::create_dir_all(d.join("traces")).unwrap();
        // 12 Mbit/s down (one opportunity a millisecond), 6 Mbit/s up
        std::fs::write(d.join("traces/down"), (1..=1000).map(|m| format!("{m}\n")).collect::<String>()).unwrap();
        std::fs::write(d.join("traces/up"), (1..=500).map(|m| format!("{}\n", 2 * m)).collect::<String>()).unwrap();

        let s = scenario("trace = \"traces/down\"\nreverse_trace = \"traces/up\"", &d).unwrap();
        let l = &s.links[0];
        assert_eq!((l.rate_bps, l.reverse_rate_bps), (12_000_000, 6_000_000));
        assert_eq!(l.trace.as_ref().map(|t| (t.file.as_str(), t.opportunities())), Some(("traces/down", 1000)));
        let (mut fwd, mut rev) = (l.link(true, 1), l.link(false, 1));
        assert_eq!(fwd.offer(SimTime::ZERO, 1500), Fate::Arrives(SimTime(1_000_000) + Dur::from_millis(20)));
        assert_eq!(rev.offer(SimTime::ZERO, 1500), Fate::Arrives(SimTime(2_000_000) + Dur::from_millis(20)));

        // a forward trace with a rate: the rate is the reverse direction's
        let s = scenario("trace = \"traces/down\"\nrate = \"100Mbps\"", &d).unwrap();
        let l = &s.links[0];
        assert_eq!((l.rate_bps, l.reverse_rate_bps, l.reverse_trace.is_none()), (12_000_000, 100_000_000, true));
        assert!(l.link(false, 1).trace().is_none());
        // a reverse trace only: the rate is the forward direction's
        let s = scenario("reverse_trace = \"traces/up\"\nrate = \"100Mbps\"", &d).unwrap();
        assert_eq!((s.links[0].rate_bps, s.links[0].reverse_rate_bps), (100_000_000, 6_000_000));
        // an absolute name is taken as it is
        let abs = d.join("traces/down");
        let s = scenario(&format!("trace = {:?}\nrate = \"1Mbps\"", abs.to_str().unwrap()), Path::new("/nonexistent")).unwrap();
        assert_eq!(s.links[0].rate_bps, 12_000_000);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_traces_and_rates_are_refused_naming_key_and_line() {
        let d = folder("errors");
        let write = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
        write("good", "1\n2\n");
        write("empty", "");
        write("decreasing", "1\n3\n2\n");
        write("fraction", "1\n1.5\n");
        write("zero", "0\n0\n0\n");
        let err = |link: &str| scenario(link, &d).unwrap_err();
        let e = err("trace = \"missing\"\nrate = \"1Mbps\"");
        assert_eq!(e.to_string(), "s.toml: link[0].trace: missing: cannot read the file: no such file");
        let e = err("trace = \"empty\"\nrate = \"1Mbps\"");
        assert_eq!(e.to_string(), "s.toml: link[0].trace: empty: is empty; a trace needs at least one delivery opportunity");
        let e = err("reverse_trace = \"decreasing\"\nrate = \"1Mbps\"");
        assert_eq!(e.key, "link[0].reverse_trace");
        assert!(e.message.starts_with("decreasing: line 3: timestamp 2 ms is earlier"), "{e}");
        let e = err("trace = \"fraction\"\nrate = \"1Mbps\"");
        assert!(e.message.starts_with("fraction: line 2: expected a whole number of milliseconds, found '1.5'"), "{e}");
        let e = err("trace = \"zero\"\nrate = \"1Mbps\"");
        assert!(e.message.starts_with("zero: line 3: the last timestamp is 0 ms"), "{e}");
        let e = err("trace = 5\nrate = \"1Mbps\"");
        assert_eq!((e.key.as_str(), e.message.as_str()), ("link[0].trace", "expected a trace file name, found a number"));
        // rate: needed for a direction without a trace, refused when no direction is left for it
        let e = err("trace = \"good\"");
        assert_eq!(e.key, "link[0].rate");
        assert!(e.message.contains("the reverse direction has no trace"), "{e}");
        let e = err("trace = \"good\"\nreverse_trace = \"good\"\nrate = \"1Mbps\"");
        assert_eq!(e.key, "link[0].rate");
        assert!(e.message.contains("both directions follow traces"), "{e}");
        let e = err("reverse_trace = \"good\"");
        assert_eq!((e.key.as_str(), e.message.starts_with("missing")), ("link[0].rate", true), "{e}");
        for e in [err("trace = \"missing\"\nrate = \"1Mbps\""), err("trace = \"zero\"\nrate = \"1Mbps\"")] {
            assert!(!e.to_string().contains('\n'), "one line: {e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
