//! Reading an SCTP flow's settings: `cc`, `cmt` and the `sctp` table (RFC 4960's defaults
//! for every key left out).

use super::reader::{join, kind, Reader};
use super::units;
use super::*;
use crate::transport::sctp::{RtxPolicy, SctpCc, SctpConfig, RTX_POLICIES, SCTP_CONTROLLERS};
use serde_json::Value;

const KEYS: &[&str] = &[
    "chunk",
    "mtu",
    "bundling",
    "initial_rto",
    "min_rto",
    "max_rto",
    "rto_initial",
    "rto_min",
    "rto_max",
    "fast_rtx_threshold",
    "path_max_retrans",
    "association_max_retrans",
    "delayed_sack",
    "sack_freq",
    "sack_delay",
    "rcv_buf",
    "snd_buf",
    "sfr",
    "cuc",
    "dac",
    "rtx_policy",
    "primary",
    "timestamps",
    "nr_sack",
    "ecn",
    "cmt_pf",
    "hb_interval",
    "jsctp_k",
    "jsctp_ignore_zero",
    "jsctp_losses",
];

/// The keys only JSCTP and JSCTP-ABE read.
const JSCTP_KEYS: &[&str] = &["jsctp_k", "jsctp_ignore_zero", "jsctp_losses"];

/// The CMT-only keys of the `sctp` table.
const CMT_KEYS: &[&str] = &["sfr", "cuc", "dac", "rtx_policy", "cmt_pf"];

impl Reader<'_> {
    /// The settings of SCTP flow `key` over `path_names` (its `path` or `paths`), with its
    /// `cc` name (None: RFC 4960), `cmt` and `sctp` table values.
    pub(super) fn sctp(
        &self,
        key: &str,
        path_names: &[String],
        cc: Option<&str>,
        cmt: bool,
        v: Option<&Value>,
    ) -> Result<SctpConfig, ScenarioError> {
        let mut c = SctpConfig { cmt, ..SctpConfig::default() };
        if let Some(name) = cc {
            c.cc = SCTP_CONTROLLERS.iter().find(|c| c.0 == name).map(|c| c.0).ok_or_else(|| {
                let names: Vec<&str> = SCTP_CONTROLLERS.iter().map(|c| c.0).collect();
                self.e(&join(key, "cc"), format!("unknown SCTP congestion controller '{name}'; expected one of: {}", names.join(", ")))
            })?;
        }
        if cmt && path_names.len() < 2 {
            return Err(
                self.e(&join(key, "cmt"), "concurrent multipath transfer needs several paths: give `paths = [...]` with two or more")
            );
        }
        let Some(v) = v else { return Ok(c) };
        let sk = join(key, "sctp");
        let t = self.table(v, &sk, KEYS)?;
        if !cmt {
            if let Some(k) = CMT_KEYS.iter().find(|k| t.map.contains_key(**k)) {
                return Err(self.e(&join(&sk, k), "only a CMT association has this setting: add `cmt = true` to the flow"));
            }
        }
        if !SctpCc::reads_timestamps(c.cc) {
            if let Some(k) = JSCTP_KEYS.iter().find(|k| t.map.contains_key(**k)) {
                return Err(
                    self.e(&join(&sk, k), format!("only the jsctp and jsctp_abe controllers read this (this flow's cc is '{}')", c.cc))
                );
            }
        }
        let bool_at = |name: &str| -> Result<Option<bool>, ScenarioError> {
            t.map
                .get(name)
                .map(|b| b.as_bool().ok_or_else(|| self.e(&join(&sk, name), format!("expected true or false, found {}", kind(b)))))
                .transpose()
        };
        let whole = |name: &str, lo: u64, hi: u64| -> Result<Option<u64>, ScenarioError> {
            let Some(x) = t.map.get(name) else { return Ok(None) };
            match x.as_u64() {
                Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                _ => Err(self.e(&join(&sk, name), format!("expected a whole number from {lo} to {hi}, found {x}"))),
            }
        };
        for (name, slot) in [
            ("bundling", &mut c.bundling),
            ("delayed_sack", &mut c.delayed_sack),
            ("sfr", &mut c.sfr),
            ("cuc", &mut c.cuc),
            ("dac", &mut c.dac),
            ("timestamps", &mut c.timestamps),
            ("nr_sack", &mut c.nr_sack),
            ("ecn", &mut c.ecn),
            ("cmt_pf", &mut c.cmt_pf),
            ("jsctp_ignore_zero", &mut c.jsctp_ignore_zero),
        ] {
            if let Some(b) = bool_at(name)? {
                *slot = b;
            }
        }
        if let Some(n) = self.opt(&t, "chunk", units::bytes)? {
            if !(16..=65_000).contains(&n) {
                return Err(self.e(&join(&sk, "chunk"), "must be between 16 B and 65000 B"));
            }
            c.chunk = n as u32;
        }
        if let Some(n) = self.opt(&t, "mtu", units::bytes)? {
            if !(256..=65_535).contains(&n) {
                return Err(self.e(&join(&sk, "mtu"), "must be between 256 B and 65535 B"));
            }
            c.mtu = n as u32;
        }
        // the names TCP's table uses; RFC 4960's RTO.Initial, RTO.Min and RTO.Max spellings
        // (rto_initial, ...) are kept as aliases
        let slots = [
            ("initial_rto", "rto_initial", &mut c.rto_initial),
            ("min_rto", "rto_min", &mut c.rto_min),
            ("max_rto", "rto_max", &mut c.rto_max),
        ];
        for (name, alias, slot) in slots {
            if t.map.contains_key(name) && t.map.contains_key(alias) {
                return Err(self.e(&join(&sk, alias), format!("give `{name}` or its alias `{alias}`, not both")));
            }
            let key = if t.map.contains_key(alias) { alias } else { name };
            if let Some(d) = self.opt(&t, key, units::duration)? {
                if d == Dur::ZERO {
                    return Err(self.e(&join(&sk, key), "must be greater than zero"));
                }
                *slot = d;
            }
        }
        if let Some(d) = self.opt(&t, "hb_interval", units::duration)? {
            c.hb_interval = d;
        }
        if c.rto_min > c.rto_max {
            let key = if t.map.contains_key("rto_min") { "rto_min" } else { "min_rto" };
            return Err(self.e(&join(&sk, key), format!("must not exceed max_rto ({})", c.rto_max)));
        }
        if let Some(n) = whole("fast_rtx_threshold", 1, 20)? {
            c.fast_rtx_threshold = n as u8;
        }
        if let Some(n) = whole("path_max_retrans", 0, 100)? {
            c.path_max_retrans = n as u32;
        }
        if let Some(n) = whole("association_max_retrans", 0, 1000)? {
            c.association_max_retrans = n as u32;
        }
        if let Some(n) = whole("sack_freq", 1, 16)? {
            c.sack_freq = n as u32;
        }
        if let Some(d) = self.opt(&t, "sack_delay", units::duration)? {
            // RFC 4960 §6.2: the delay MUST NOT exceed 500 ms
            if d == Dur::ZERO || d > Dur::from_millis(500) {
                return Err(self.e(&join(&sk, "sack_delay"), "must be greater than zero and at most 500 ms (RFC 4960 §6.2)"));
            }
            c.sack_delay = d;
        }
        if let Some(b) = self.opt(&t, "rcv_buf", units::bytes)? {
            if b < c.chunk as u64 || b > u32::MAX as u64 {
                return Err(self.e(
                    &join(&sk, "rcv_buf"),
                    format!("must hold at least one chunk ({} B) and at most 4 GB (a_rwnd is 32 bits)", c.chunk),
                ));
            }
            c.rcv_buf = b;
        }
        if let Some(b) = self.opt(&t, "snd_buf", units::bytes)? {
            if b < c.chunk as u64 || b > MAX_SND_BUF {
                return Err(self.e(&join(&sk, "snd_buf"), format!("must hold at least one chunk ({} B) and at most 1 TB", c.chunk)));
            }
            c.snd_buf = b;
        }
        if let Some(p) = self.opt_string(&t, "rtx_policy")? {
            c.rtx_policy = RtxPolicy::by_name(&p).ok_or_else(|| {
                let names: Vec<&str> = RTX_POLICIES.iter().map(|(n, _, _)| *n).collect();
                self.e(&join(&sk, "rtx_policy"), format!("unknown retransmission policy '{p}'; expected one of: {}", names.join(", ")))
            })?;
        }
        if SctpCc::reads_timestamps(c.cc) && !c.timestamps && t.map.contains_key("timestamps") {
            return Err(
                self.e(&join(&sk, "timestamps"), format!("the {} controller reads the timestamp chunks: leave timestamps on", c.cc))
            );
        }
        if let Some(x) = t.map.get("jsctp_k") {
            let k = self.opt(&t, "jsctp_k", units::bytes)?.unwrap_or(0);
            if k == 0 || k > 1_000_000 {
                return Err(self.e(
                    &join(&sk, "jsctp_k"),
                    format!(
                        "the k of JSCTP's k/w threshold must be from 1 B to 1 MB (the paper's best is one data chunk, 1456 B), found {x}"
                    ),
                ));
            }
            c.jsctp_k = Some(k);
        }
        if let Some(r) = self.opt_string(&t, "jsctp_losses")? {
            c.jsctp_losses = crate::cc::jitter_ratio::LossRule::by_name(&r).ok_or_else(|| {
                self.e(
                    &join(&sk, "jsctp_losses"),
                    format!("unknown loss rule '{r}'; expected jitter (JSCTP's), wireless or congestion (controls: every loss one class)"),
                )
            })?;
        }
        if let Some(p) = self.opt_string(&t, "primary")? {
            c.primary = path_names.iter().position(|n| *n == p).ok_or_else(|| {
                self.e(&join(&sk, "primary"), format!("'{p}' is not one of this flow's paths ({})", path_names.join(", ")))
            })?;
        }
        Ok(c)
    }
}
