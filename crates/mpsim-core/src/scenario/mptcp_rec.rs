//! Reading a flow's `mptcp_rec` table: the reconstructed constants of MPTCP-rec's receiver
//! (TEAR and the DSRor) and sender (PCDer). Every key is optional.
//!
//! ```toml
//! [[flow]]
//! paths = ["a", "b", "c"]
//! scheduler = "mptcp_rec"
//! mptcp_rec = { sigma = 8, xi = 0.875, eta = 0.125, phi = 0.5, theta = 0.5, history = "round" }
//! ```
//!
//! `window_aware_timeout` (true or false; default true): no timeout of the receiver's
//! emulation while its own window is closed. `restore_after` (observations, at least 1;
//! default 1) and `restore_hold` (a duration; default "0s"): the hysteresis of the path
//! list's return to Full-MPTCP. `fixed_rates` (a list of rates, one per path in the flow's
//! order): a control that paces each path at a fixed rate instead of the receiver's estimate.
//! See `transport/tear.rs` and `sched/mptcp_rec.rs` for what the
//! paper says and what was chosen.

use super::reader::{join, kind, Reader};
use super::units;
use super::*;
use crate::feedback::tear::{HistoryUnit, TearConfig};
use crate::sched::PcderConfig;

/// MPTCP-rec's settings of one flow.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RecSpec {
    pub tear: TearConfig,
    pub pcder: PcderConfig,
}

const KEYS: &[&str] = &[
    "sigma",
    "xi",
    "eta",
    "phi",
    "theta",
    "dupthresh",
    "initial_window",
    "min_rto",
    "history",
    "mismatch",
    "awnd_samples",
    "min_paths",
    "burst",
    "window_aware_timeout",
    "restore_after",
    "restore_hold",
    "fixed_rates",
];

impl Reader<'_> {
    pub(super) fn mptcp_rec(&self, v: Option<&Value>, key: &str) -> Result<RecSpec, ScenarioError> {
        let mut s = RecSpec::default();
        let Some(v) = v else { return Ok(s) };
        let t = self.table(v, key, KEYS)?;
        let num = |k: &str| -> Result<Option<f64>, ScenarioError> {
            match t.map.get(k) {
                None => Ok(None),
                Some(x) => x.as_f64().map(Some).ok_or_else(|| self.e(&join(key, k), format!("expected a number, found {}", kind(x)))),
            }
        };
        let count = |k: &str| -> Result<Option<u64>, ScenarioError> {
            match num(k)? {
                None => Ok(None),
                Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= 1e6 => Ok(Some(x as u64)),
                Some(x) => Err(self.e(&join(key, k), format!("expected a whole number from 0 to 1000000 (got {x})"))),
            }
        };
        let tc = &mut s.tear;
        if let Some(x) = count("sigma")? {
            tc.sigma = x as usize;
        }
        for (k, slot) in [("xi", &mut tc.xi), ("eta", &mut tc.eta), ("phi", &mut tc.phi), ("theta", &mut tc.theta)] {
            if let Some(x) = num(k)? {
                *slot = x;
            }
        }
        if let Some(x) = count("dupthresh")? {
            tc.dupthresh = x as u32;
        }
        if let Some(x) = num("initial_window")? {
            tc.initial_window = x;
            s.pcder.initial_window = x.clamp(1.0, 1e6).round() as u32;
        }
        if let Some(d) = self.opt(&t, "min_rto", units::duration)? {
            tc.min_rto = d;
        }
        if let Some(h) = self.opt_string(&t, "history")? {
            tc.history = match h.as_str() {
                "round" => HistoryUnit::Round,
                "epoch" => HistoryUnit::Epoch,
                other => return Err(self.e(&join(key, "history"), format!("unknown history unit '{other}'; expected round or epoch"))),
            };
        }
        if let Some(m) = self.opt(&t, "mismatch", units::fraction_any)? {
            tc.mismatch = m;
        }
        if let Some(b) = t.map.get("window_aware_timeout") {
            tc.window_aware_timeout = b
                .as_bool()
                .ok_or_else(|| self.e(&join(key, "window_aware_timeout"), format!("expected true or false, found {}", kind(b))))?;
        }
        if let Err((k, msg)) = tc.validate() {
            return Err(self.e(&join(key, k), msg));
        }
        if let Some(x) = count("awnd_samples")? {
            if x < 2 {
                return Err(self.e(&join(key, "awnd_samples"), "the jitter indicator needs at least 2 samples"));
            }
            s.pcder.awnd_samples = x as usize;
        }
        if let Some(x) = count("min_paths")? {
            if x < 1 {
                return Err(self.e(&join(key, "min_paths"), "the list never loses its last path: at least 1"));
            }
            s.pcder.min_paths = x as usize;
        }
        if let Some(x) = count("burst")? {
            s.pcder.burst = x as u32;
        }
        if let Some(x) = count("restore_after")? {
            if x < 1 {
                return Err(self.e(&join(key, "restore_after"), "paths return after at least 1 clear observation"));
            }
            s.pcder.restore_after = x as u32;
        }
        if let Some(d) = self.opt(&t, "restore_hold", units::duration)? {
            s.pcder.restore_hold = d;
        }
        if let Some(v) = t.map.get("fixed_rates") {
            let k = join(key, "fixed_rates");
            let arr = v
                .as_array()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| self.e(&k, "expected a list of rates, one per path, e.g. [\"384kbps\", \"11Mbps\"]"))?;
            for (j, x) in arr.iter().enumerate() {
                let jk = format!("{k}[{j}]");
                let text = x.as_str().ok_or_else(|| self.e(&jk, format!("expected a rate like \"10Mbps\", found {}", kind(x))))?;
                let r = units::rate(text).map_err(|m| self.e(&jk, m))?;
                if r == 0 {
                    return Err(self.e(&jk, "a path's fixed rate must be above zero"));
                }
                s.pcder.fixed_rates.push(r as f64);
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    const BASE: &str = r#"
name = "t"
duration = "10s"
[[link]]
name = "a"
rate = "10Mbps"
[[link]]
name = "b"
rate = "10Mbps"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
paths = ["pa", "pb"]
scheduler = "mptcp_rec"
"#;

    fn parse(extra: &str) -> Result<Scenario, crate::scenario::ScenarioError> {
        Scenario::from_toml(&format!("{BASE}{extra}"), "rec.toml")
    }

    #[test]
    fn defaults_and_overrides() {
        let s = parse("").unwrap();
        let r = s.flows[0].rec().expect("mptcp_rec switches the receiver logic on");
        assert_eq!(r.tear.sigma, 8);
        assert_eq!(s.flows[0].cc, "receiver_rate");
        let s = parse("mptcp_rec = { sigma = 4, phi = 0.25, history = \"epoch\", awnd_samples = 8 }\n").unwrap();
        let r = s.flows[0].rec().unwrap();
        assert_eq!((r.tear.sigma, r.tear.phi, r.pcder.awnd_samples), (4, 0.25, 8));
        assert!(r.tear.window_aware_timeout);
        assert_eq!((r.pcder.restore_after, r.pcder.restore_hold), (1, crate::time::Dur::ZERO));
        let s = parse("mptcp_rec = { window_aware_timeout = false, restore_after = 4, restore_hold = \"300ms\" }\n").unwrap();
        let r = s.flows[0].rec().unwrap();
        assert!(!r.tear.window_aware_timeout);
        assert_eq!((r.pcder.restore_after, r.pcder.restore_hold), (4, crate::time::Dur::from_millis(300)));
        assert!(r.pcder.fixed_rates.is_empty());
        let s = parse("mptcp_rec = { fixed_rates = [\"384kbps\", \"11Mbps\"] }\n").unwrap();
        assert_eq!(s.flows[0].rec().unwrap().pcder.fixed_rates, vec![384e3, 11e6]);
    }

    #[test]
    fn bad_values_get_one_error_naming_file_and_key() {
        for (extra, key) in [
            ("mptcp_rec = { sigma = 0 }\n", "flow[0].mptcp_rec.sigma"),
            ("mptcp_rec = { phi = -0.5 }\n", "flow[0].mptcp_rec.phi"),
            ("mptcp_rec = { eta = -1 }\n", "flow[0].mptcp_rec.eta"),
            ("mptcp_rec = { sigmaa = 3 }\n", "flow[0].mptcp_rec.sigmaa"),
            ("mptcp_rec = { history = \"week\" }\n", "flow[0].mptcp_rec.history"),
            ("mptcp_rec = { min_paths = 0 }\n", "flow[0].mptcp_rec.min_paths"),
            ("mptcp_rec = { window_aware_timeout = 1 }\n", "flow[0].mptcp_rec.window_aware_timeout"),
            ("mptcp_rec = { restore_after = 0 }\n", "flow[0].mptcp_rec.restore_after"),
            ("mptcp_rec = { restore_after = 2.5 }\n", "flow[0].mptcp_rec.restore_after"),
            ("mptcp_rec = { restore_hold = \"-1s\" }\n", "flow[0].mptcp_rec.restore_hold"),
            ("mptcp_rec = { restore_hold = \"soon\" }\n", "flow[0].mptcp_rec.restore_hold"),
            ("mptcp_rec = { fixed_rates = [] }\n", "flow[0].mptcp_rec.fixed_rates"),
            ("mptcp_rec = { fixed_rates = [\"1Mbps\"] }\n", "flow[0].mptcp_rec.fixed_rates"),
            ("mptcp_rec = { fixed_rates = [\"1Mbps\", 5] }\n", "flow[0].mptcp_rec.fixed_rates[1]"),
            ("mptcp_rec = { fixed_rates = [\"1Mbps\", \"0bps\"] }\n", "flow[0].mptcp_rec.fixed_rates[1]"),
        ] {
            let e = parse(extra).unwrap_err();
            assert_eq!(e.key, key, "{extra}: {e}");
            assert!(e.to_string().contains("rec.toml"), "{e}");
        }
        // the table belongs to mptcp_rec only
        let e = Scenario::from_toml(&format!("{}mptcp_rec = {{ sigma = 4 }}\n", BASE.replace("mptcp_rec", "lowest_rtt")), "x.toml")
            .unwrap_err();
        assert_eq!(e.key, "flow[0].mptcp_rec");
        // a plain TCP flow has no receiver to take its rate from
        let plain = BASE.replace("paths = [\"pa\", \"pb\"]\nscheduler = \"mptcp_rec\"", "path = \"pa\"\ncc = \"receiver_rate\"");
        let e = Scenario::from_toml(&plain, "x.toml").unwrap_err();
        assert_eq!(e.key, "flow[0].cc", "{e}");
    }
}
