//! Reading applications (`app = ...` of a flow) and background traffic (`[[background]]`).

use super::units;
use super::{
    err, join, kind, AppSpec, FlowSpec, FrameClass, LinkSpec, MediaSpec, PathSpec, Reader, ScenarioError, Table, TcpConfig, TransportSpec,
    Vary, MAX_SND_BUF,
};
use crate::time::{Dur, SimTime};
use serde_json::Value;
use std::collections::HashMap;

/// Packet-size mixes by name: (wire size in bytes, share of packets).
pub const SIZE_PRESETS: &[(&str, &[(u32, f64)])] = &[
    // CMT-QA's VBR mix (seed 000, ALGORITHMS.md §10.4): 50% 44 B, 25% 576 B, 25% 1500 B
    ("cmtqa", &[(44, 0.5), (576, 0.25), (1500, 0.25)]),
    // the classic "simple IMIX": 7 x 40 B, 4 x 576 B, 1 x 1500 B
    ("imix", &[(40, 7.0 / 12.0), (576, 4.0 / 12.0), (1500, 1.0 / 12.0)]),
    ("full", &[(1500, 1.0)]),
];

const APP_KINDS: &str = "bulk, cbr, onoff, vbr, media";

impl<'a> Reader<'a> {
    fn only(&self, t: &Table, key: &str, app: &str, allowed: &[&str]) -> Result<(), ScenarioError> {
        match t.map.keys().find(|k| k.as_str() != "kind" && !allowed.contains(&k.as_str())) {
            Some(k) => Err(self.e(&join(key, k), format!("not a parameter of the {app} application (it takes {})", allowed.join(", ")))),
            None => Ok(()),
        }
    }

    fn positive_rate(&self, t: &Table, key: &str) -> Result<u64, ScenarioError> {
        let r = self.req(t, "rate", units::rate)?;
        if r == 0 {
            return Err(self.e(&join(key, "rate"), "must be greater than zero"));
        }
        Ok(r)
    }

    fn packet(&self, t: &Table, key: &str) -> Result<u32, ScenarioError> {
        let packet = self.opt(t, "packet", units::bytes)?.unwrap_or(1000);
        if packet == 0 || packet > 1 << 20 {
            return Err(self.e(&join(key, "packet"), "must be between 1 B and 1 MiB"));
        }
        Ok(packet as u32)
    }

    pub(super) fn app(&self, v: &Value, key: &str) -> Result<AppSpec, ScenarioError> {
        if let Some(s) = v.as_str() {
            return match s {
                "bulk" => Ok(AppSpec::Bulk { bytes: None }),
                other => {
                    Err(self
                        .e(key, format!("'{other}' needs parameters; write a table like {{ kind = \"{other}\", ... }}, or use \"bulk\"")))
                }
            };
        }
        let t = self.table(
            v,
            key,
            &[
                "kind",
                "bytes",
                "rate",
                "packet",
                "on",
                "off",
                "distribution",
                "sizes",
                "vary",
                "fps",
                "gop",
                "frames",
                "classes",
                "deadline",
                "backlog",
            ],
        )?;
        let kind_name = self.req_string(&t, "kind")?;
        match kind_name.as_str() {
            "bulk" => {
                self.only(&t, key, "bulk", &["bytes"])?;
                let bytes = self.opt(&t, "bytes", units::bytes)?;
                if bytes == Some(0) {
                    return Err(self.e(&join(key, "bytes"), "must be greater than zero (omit it to send without end)"));
                }
                Ok(AppSpec::Bulk { bytes })
            }
            "cbr" => {
                self.only(&t, key, "cbr", &["rate", "packet"])?;
                Ok(AppSpec::Cbr { rate_bps: self.positive_rate(&t, key)?, packet: self.packet(&t, key)? })
            }
            "onoff" => {
                self.only(&t, key, "onoff", &["rate", "packet", "on", "off", "distribution"])?;
                let on = self.req(&t, "on", units::duration)?;
                let off = self.req(&t, "off", units::duration)?;
                if on == Dur::ZERO {
                    return Err(self.e(&join(key, "on"), "must be longer than zero"));
                }
                let exponential = match self.opt_string(&t, "distribution")?.as_deref() {
                    None | Some("exponential") => true,
                    Some("constant") => false,
                    Some(o) => {
                        return Err(
                            self.e(&join(key, "distribution"), format!("unknown distribution '{o}'; expected exponential or constant"))
                        )
                    }
                };
                Ok(AppSpec::OnOff { rate_bps: self.positive_rate(&t, key)?, packet: self.packet(&t, key)?, on, off, exponential })
            }
            "vbr" => {
                self.only(&t, key, "vbr", &["rate", "sizes", "vary"])?;
                let sizes = match t.map.get("sizes") {
                    None => SIZE_PRESETS[0].1.to_vec(),
                    Some(sv) => self.sizes(sv, &join(key, "sizes"))?,
                };
                let vary = t.map.get("vary").map(|vv| self.vary(vv, &join(key, "vary"))).transpose()?;
                Ok(AppSpec::Vbr { rate_bps: self.positive_rate(&t, key)?, sizes, vary })
            }
            "media" => self.media(&t, key).map(AppSpec::Media),
            other => Err(self.e(&join(key, "kind"), format!("unknown application '{other}'; expected one of: {APP_KINDS}"))),
        }
    }

    /// A packet-size mix: a preset name or a list of [size, share] pairs (shares normalised).
    fn sizes(&self, v: &Value, key: &str) -> Result<Vec<(u32, f64)>, ScenarioError> {
        if let Some(name) = v.as_str() {
            return SIZE_PRESETS.iter().find(|(n, _)| *n == name).map(|(_, s)| s.to_vec()).ok_or_else(|| {
                let names: Vec<&str> = SIZE_PRESETS.iter().map(|p| p.0).collect();
                self.e(
                    key,
                    format!(
                        "unknown size mix '{name}'; expected one of: {} or a list like [[44, \"50%\"], [1500, \"50%\"]]",
                        names.join(", ")
                    ),
                )
            });
        }
        let arr = v.as_array().ok_or_else(|| self.e(key, "expected a preset name or a list of [size, share] pairs"))?;
        self.at_most(arr.len(), 1000, key, "sizes")?;
        let mut out = Vec::new();
        for (j, pair) in arr.iter().enumerate() {
            let k = format!("{key}[{j}]");
            let p = pair.as_array().filter(|p| p.len() == 2).ok_or_else(|| self.e(&k, "expected a pair [size, share]"))?;
            let size = match &p[0] {
                Value::String(s) => units::bytes(s).map_err(|m| self.e(&k, m))?,
                Value::Number(n) => n.as_u64().ok_or_else(|| self.e(&k, "a size is a whole number of bytes"))?,
                other => return Err(self.e(&k, format!("expected a size, found {}", kind(other)))),
            };
            let share = match &p[1] {
                Value::String(s) => units::fraction(s).map_err(|m| self.e(&k, m))?,
                Value::Number(n) => n.as_f64().unwrap_or(-1.0),
                other => return Err(self.e(&k, format!("expected a share, found {}", kind(other)))),
            };
            if size == 0 || size > 65_000 || share.is_nan() || share < 0.0 {
                return Err(self.e(&k, "a size from 1 B to 65000 B and a share of at least 0"));
            }
            out.push((size as u32, share));
        }
        let total: f64 = out.iter().map(|p| p.1).sum();
        if total <= 0.0 {
            return Err(self.e(key, "the shares must not all be zero"));
        }
        Ok(out.into_iter().map(|(s, w)| (s, w / total)).collect())
    }

    fn vary(&self, v: &Value, key: &str) -> Result<Vary, ScenarioError> {
        let t = self.table(v, key, &["min", "max", "period"])?;
        let min = self.opt(&t, "min", units::fraction_any)?.unwrap_or(0.0);
        let max = self.opt(&t, "max", units::fraction_any)?.unwrap_or(1.0);
        let period = self.req(&t, "period", units::duration)?;
        if max < min {
            return Err(self.e(&join(key, "max"), "must not be below `min`"));
        }
        if period < Dur::from_millis(1) {
            return Err(self.e(&join(key, "period"), "must be at least 1 ms"));
        }
        Ok(Vary { min, max, period, group: None })
    }

    fn media(&self, t: &Table, key: &str) -> Result<MediaSpec, ScenarioError> {
        self.only(t, key, "media", &["fps", "gop", "frames", "classes", "deadline", "backlog"])?;
        let fps = match t.map.get("fps") {
            None => 25.0,
            Some(_) => self.req_f64(t, "fps")?,
        };
        if !(0.1..=1000.0).contains(&fps) {
            return Err(self.e(&join(key, "fps"), "expected frames per second from 0.1 to 1000"));
        }
        // frame classes: name -> size and priority; a sensible default for I/P/B
        let mut classes: Vec<FrameClass> = vec![
            FrameClass { name: "I".into(), size: 24_000, priority: 2 },
            FrameClass { name: "P".into(), size: 8_000, priority: 1 },
            FrameClass { name: "B".into(), size: 4_000, priority: 0 },
        ];
        if let Some(cv) = t.map.get("classes") {
            let ck = join(key, "classes");
            let ct = cv.as_object().ok_or_else(|| self.e(&ck, "expected a table like { I = { size = \"24KB\", priority = 2 }, ... }"))?;
            classes.clear();
            for (name, spec) in ct {
                let k = join(&ck, name);
                let st = self.table(spec, &k, &["size", "priority"])?;
                let size = self.req(&st, "size", units::bytes)?;
                if size == 0 || size > 10_000_000 {
                    return Err(self.e(&join(&k, "size"), "must be between 1 B and 10 MB"));
                }
                let priority = match st.map.get("priority") {
                    None => 0,
                    Some(p) => p
                        .as_u64()
                        .filter(|&p| p <= 255)
                        .ok_or_else(|| self.e(&join(&k, "priority"), "expected a whole number from 0 to 255"))?
                        as u8,
                };
                classes.push(FrameClass { name: name.clone(), size: size as u32, priority });
            }
            if classes.is_empty() {
                return Err(self.e(&ck, "name at least one frame class"));
            }
        }
        let class_of = |name: &str, k: &str| -> Result<usize, ScenarioError> {
            classes.iter().position(|c| c.name == name).ok_or_else(|| {
                let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
                self.e(k, format!("no frame class '{name}' (classes: {})", names.join(", ")))
            })
        };
        let frames = match (t.map.get("gop"), t.map.get("frames")) {
            (Some(_), Some(_)) => return Err(self.e(key, "give either `gop` or `frames`, not both")),
            (Some(_), None) | (None, None) => {
                let gop = self.opt_string(t, "gop")?.unwrap_or_else(|| "IBBPBBPBBPBB".into());
                let k = join(key, "gop");
                self.at_most(gop.chars().count(), super::MAX_MEDIA_FRAMES, &k, "frames")?;
                let mut out = Vec::new();
                for ch in gop.chars() {
                    let c = class_of(&ch.to_string(), &k)?;
                    out.push((c, classes[c].size));
                }
                out
            }
            (None, Some(fv)) => {
                let k = join(key, "frames");
                let arr = fv
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| self.e(&k, "expected a list of [type, size] pairs, e.g. [[\"I\", 24000], [\"P\", 8000]]"))?;
                self.at_most(arr.len(), super::MAX_MEDIA_FRAMES, &k, "frames")?;
                let mut out = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    let fk = format!("{k}[{j}]");
                    let p = x.as_array().filter(|p| p.len() == 2).ok_or_else(|| self.e(&fk, "expected a pair [type, size]"))?;
                    let c = class_of(p[0].as_str().ok_or_else(|| self.e(&fk, "the frame type is a class name"))?, &fk)?;
                    let size = p[1]
                        .as_u64()
                        .filter(|&s| s > 0 && s <= 10_000_000)
                        .ok_or_else(|| self.e(&fk, "the size is a whole number of bytes from 1 to 10 MB"))?;
                    out.push((c, size as u32));
                }
                out
            }
        };
        if frames.is_empty() {
            return Err(self.e(&join(key, "gop"), "the pattern needs at least one frame"));
        }
        let deadline = self.opt(t, "deadline", units::duration)?;
        // the application's queue; absent: the flow's send buffer size (known with its transport)
        let backlog = self.opt(t, "backlog", units::bytes)?;
        if let Some(b) = backlog.filter(|&b| b > MAX_SND_BUF) {
            return Err(self.e(&join(key, "backlog"), format!("must be at most 1 TB (got {b} B); \"0B\" holds no frame")));
        }
        Ok(MediaSpec { frame_interval: Dur((1e9 / fps).round() as u64), classes, frames, deadline, backlog })
    }

    /// Expands a `[[background]]` table into TCP and UDP flows generating a traffic mix.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn background(
        &self,
        v: &Value,
        key: &str,
        paths: &HashMap<String, usize>,
        path_specs: &[PathSpec],
        links: &[LinkSpec],
        tcp: &TcpConfig,
        duration: Dur,
    ) -> Result<Vec<FlowSpec>, ScenarioError> {
        let t = self.table(
            v,
            key,
            &["name", "path", "rate", "load", "tcp_share", "tcp_flows", "udp_flows", "sizes", "vary", "start", "stop", "cc"],
        )?;
        let name = self.req_name(&t, "name")?;
        let pname = self.req_string(&t, "path")?;
        let path = *paths.get(&pname).ok_or_else(|| self.e(&join(key, "path"), format!("no path named '{pname}'")))?;
        let bottleneck = path_specs[path].links.iter().map(|&l| links[l].rate_bps).min().unwrap_or(0);
        let rate_bps = match (t.map.contains_key("rate"), t.map.contains_key("load")) {
            (true, true) => return Err(self.e(key, "give either `rate` or `load`, not both")),
            (false, false) => return Err(self.e(&join(key, "load"), "missing: give `load` (a share of the path's slowest link) or `rate`")),
            (true, false) => self.req(&t, "rate", units::rate)?,
            (false, true) => (self.req(&t, "load", units::fraction)? * bottleneck as f64).round() as u64,
        };
        let tcp_share = self.opt(&t, "tcp_share", units::fraction)?.unwrap_or(0.8);
        let count = |k: &str, default: u64| -> Result<u64, ScenarioError> {
            match t.map.get(k) {
                None => Ok(default),
                Some(x) => x
                    .as_u64()
                    .filter(|&n| n <= 1000)
                    .ok_or_else(|| self.e(&join(key, k), "expected a whole number of flows from 0 to 1000")),
            }
        };
        let (n_tcp, n_udp) = (count("tcp_flows", 4)?, count("udp_flows", 1)?);
        if tcp_share > 0.0 && n_tcp == 0 {
            return Err(self.e(&join(key, "tcp_flows"), "a TCP share above 0 needs at least one TCP flow"));
        }
        if tcp_share < 1.0 && n_udp == 0 {
            return Err(self.e(&join(key, "udp_flows"), "a UDP share above 0 needs at least one UDP flow"));
        }
        let sizes = match t.map.get("sizes") {
            None => SIZE_PRESETS[0].1.to_vec(),
            Some(sv) => self.sizes(sv, &join(key, "sizes"))?,
        };
        let vary = t
            .map
            .get("vary")
            .map(|vv| self.vary(vv, &join(key, "vary")))
            .transpose()?
            .map(|v| Vary { group: Some(format!("background/{name}")), ..v });
        let start = self.opt(&t, "start", units::duration)?.unwrap_or(Dur::ZERO);
        let stop = self.opt(&t, "stop", units::duration)?;
        if start >= duration {
            return Err(self.e(&join(key, "start"), "the background starts after the simulation ends"));
        }
        let cc = self.opt_string(&t, "cc")?.unwrap_or_else(|| "reno".into());
        if crate::cc::Controller::by_name(&cc).is_none() {
            return Err(self.e(&join(key, "cc"), format!("unknown congestion controller '{cc}'")));
        }
        let mut out = Vec::new();
        let mut add = |tag: &str, n: u64, share: f64, transport: TransportSpec| {
            for i in 0..n {
                let rate = (rate_bps as f64 * share / n as f64).round() as u64;
                if rate == 0 {
                    continue;
                }
                out.push(FlowSpec {
                    name: format!("{name}.{tag}{i}"),
                    paths: vec![path],
                    cc: cc.clone(),
                    transport: transport.clone(),
                    background: true,
                    start: SimTime(start.0),
                    stop: stop.map(|s| SimTime(s.0)),
                    // one variation stream per background group: the aggregate load varies
                    app: AppSpec::Vbr { rate_bps: rate, sizes: sizes.clone(), vary: vary.clone() },
                    tcp: tcp.clone(),
                });
            }
        };
        add("tcp", n_tcp, tcp_share, TransportSpec::Tcp);
        add("udp", n_udp, 1.0 - tcp_share, TransportSpec::Udp);
        if out.is_empty() {
            return Err(err(self.origin, key, "the background generates no traffic (rate 0)"));
        }
        Ok(out)
    }
}
