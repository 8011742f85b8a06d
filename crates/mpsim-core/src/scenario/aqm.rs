//! Reading a link's `aqm` (and `reverse_aqm`): a discipline's name with its defaults, a
//! table `{ kind = "...", <parameters> }`, or "none" for drop-tail (as without the key; useful
//! in sweeps and overrides).

use super::reader::{join, kind, Reader, Table};
use super::units;
use super::ScenarioError;
use crate::net::aqm::{AqmSpec, CodelParams, AQMS};
use crate::net::QueueLimit;
use crate::time::Dur;
use serde_json::Value;

/// Every parameter any discipline takes (each checks its own below).
const AQM_KEYS: &[&str] = &[
    "kind",
    "target",
    "interval",
    "mtu",
    "flows",
    "quantum",
    "min_th",
    "max_th",
    "max_p",
    "weight",
    "gentle",
    "mean_packet",
    "tupdate",
    "alpha",
    "beta",
    "max_burst",
    "derandomize",
    "ecn",
];

fn names() -> String {
    AQMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

impl Reader<'_> {
    pub(super) fn aqm(&self, v: &Value, key: &str) -> Result<Option<AqmSpec>, ScenarioError> {
        if let Some(name) = v.as_str() {
            if name == "none" {
                return Ok(None);
            }
            return AqmSpec::default_for(name)
                .map(Some)
                .ok_or_else(|| self.e(key, format!("unknown queue discipline '{name}'; expected one of: {}, or none", names())));
        }
        if !v.is_object() {
            return Err(self
                .e(key, format!("expected a discipline's name like \"codel\" or a table {{ kind = \"codel\", ... }}, found {}", kind(v))));
        }
        let t = self.table(v, key, AQM_KEYS)?;
        let name = self.req_string(&t, "kind")?;
        let spec = AqmSpec::default_for(&name)
            .ok_or_else(|| self.e(&join(key, "kind"), format!("unknown queue discipline '{name}'; expected one of: {}", names())))?;
        self.aqm_params(&t, key, &name, spec).map(Some)
    }

    fn aqm_params(&self, t: &Table, key: &str, name: &str, spec: AqmSpec) -> Result<AqmSpec, ScenarioError> {
        let used = |names: &[&str]| -> Result<(), ScenarioError> {
            match t.map.keys().find(|k| k.as_str() != "kind" && !names.contains(&k.as_str())) {
                Some(k) => Err(self.e(&join(key, k), format!("not a parameter of {name} (it takes: {})", names.join(", ")))),
                None => Ok(()),
            }
        };
        Ok(match spec {
            AqmSpec::Codel(p) => {
                used(&["target", "interval", "mtu", "ecn"])?;
                AqmSpec::Codel(self.codel(t, p)?)
            }
            AqmSpec::FqCodel(mut p) => {
                used(&["target", "interval", "mtu", "ecn", "flows", "quantum"])?;
                p.codel = self.codel(t, p.codel)?;
                if let Some(n) = self.count(t, "flows", 1, 65_536)? {
                    p.flows = n;
                }
                if let Some(q) = self.count(t, "quantum", 64, 1_000_000)? {
                    p.quantum = q;
                }
                AqmSpec::FqCodel(p)
            }
            AqmSpec::Red(mut p) => {
                used(&["min_th", "max_th", "max_p", "weight", "gentle", "mean_packet", "ecn"])?;
                let th = |k: &str| -> Result<Option<QueueLimit>, ScenarioError> {
                    Ok(self.opt(t, k, units::queue)?.map(|q| match q {
                        units::QueueSize::Packets(n) => QueueLimit::Packets(n),
                        units::QueueSize::Bytes(b) => QueueLimit::Bytes(b),
                    }))
                };
                match (th("min_th")?, th("max_th")?) {
                    (Some(min), Some(max)) => (p.min_th, p.max_th) = (min, max),
                    (None, None) => {}
                    _ => return Err(self.e(key, "give both min_th and max_th (or neither, for 5 and 15 packets)")),
                }
                let amount = |l: QueueLimit| match l {
                    QueueLimit::Packets(n) | QueueLimit::Bytes(n) => n,
                };
                if std::mem::discriminant(&p.min_th) != std::mem::discriminant(&p.max_th) {
                    return Err(self.e(&join(key, "max_th"), "min_th and max_th must both be packets or both bytes"));
                }
                if amount(p.max_th) <= amount(p.min_th) {
                    return Err(self.e(&join(key, "max_th"), "must be above min_th"));
                }
                if let Some(x) = self.opt(t, "max_p", units::fraction)? {
                    if x == 0.0 {
                        return Err(self.e(&join(key, "max_p"), "must be above 0"));
                    }
                    p.max_p = x;
                }
                if t.map.contains_key("weight") {
                    p.weight = self.req_f64(t, "weight")?;
                    if !(p.weight > 0.0 && p.weight <= 1.0) {
                        return Err(
                            self.e(&join(key, "weight"), format!("the average's weight must be above 0 and at most 1 (got {})", p.weight))
                        );
                    }
                }
                if let Some(g) = self.flag(t, "gentle")? {
                    p.gentle = g;
                }
                if let Some(b) = self.count(t, "mean_packet", 1, 65_535)? {
                    p.mean_packet = b;
                }
                p.ecn = self.flag(t, "ecn")?.unwrap_or(p.ecn);
                AqmSpec::Red(p)
            }
            AqmSpec::Pie(mut p) => {
                used(&["target", "tupdate", "alpha", "beta", "max_burst", "mtu", "derandomize", "ecn"])?;
                p.target = self.positive_duration(t, "target")?.unwrap_or(p.target);
                p.tupdate = self.positive_duration(t, "tupdate")?.unwrap_or(p.tupdate);
                if let Some(b) = self.opt(t, "max_burst", units::duration)? {
                    p.max_burst = b;
                }
                for (k, slot) in [("alpha", &mut p.alpha), ("beta", &mut p.beta)] {
                    if t.map.contains_key(k) {
                        let x = self.req_f64(t, k)?;
                        if !(0.0..=100.0).contains(&x) {
                            return Err(self.e(&join(key, k), format!("must be between 0 and 100 per second (got {x})")));
                        }
                        *slot = x;
                    }
                }
                if let Some(m) = self.count(t, "mtu", 64, 65_535)? {
                    p.mtu = m;
                }
                if let Some(d) = self.flag(t, "derandomize")? {
                    p.derandomize = d;
                }
                p.ecn = self.flag(t, "ecn")?.unwrap_or(p.ecn);
                AqmSpec::Pie(p)
            }
        })
    }

    fn codel(&self, t: &Table, mut p: CodelParams) -> Result<CodelParams, ScenarioError> {
        p.target = self.positive_duration(t, "target")?.unwrap_or(p.target);
        p.interval = self.positive_duration(t, "interval")?.unwrap_or(p.interval);
        if let Some(m) = self.count(t, "mtu", 64, 65_535)? {
            p.mtu = m;
        }
        p.ecn = self.flag(t, "ecn")?.unwrap_or(p.ecn);
        Ok(p)
    }

    fn positive_duration(&self, t: &Table, k: &str) -> Result<Option<Dur>, ScenarioError> {
        match self.opt(t, k, units::duration)? {
            Some(Dur::ZERO) => Err(self.e(&join(&t.path, k), "must be above zero")),
            d => Ok(d),
        }
    }

    /// An optional whole number in [lo, hi] (sizes may carry a byte unit).
    fn count(&self, t: &Table, k: &str, lo: u64, hi: u64) -> Result<Option<u32>, ScenarioError> {
        let Some(n) = self.opt(t, k, units::bytes)? else { return Ok(None) };
        if n < lo || n > hi {
            return Err(self.e(&join(&t.path, k), format!("must be between {lo} and {hi} (got {n})")));
        }
        Ok(Some(n as u32))
    }

    fn flag(&self, t: &Table, k: &str) -> Result<Option<bool>, ScenarioError> {
        t.map
            .get(k)
            .map(|v| v.as_bool().ok_or_else(|| self.e(&join(&t.path, k), format!("expected true or false, found {}", kind(v)))))
            .transpose()
    }
}
