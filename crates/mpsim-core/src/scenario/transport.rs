//! Reading flows: their path or paths, scheduler, backups, controller, transport,
//! application, and TCP settings.

use super::reader::{join, kind, Reader};
use super::units;
use super::*;
use crate::cc::Controller;
use crate::transport::quic::ack_frequency::{AckFrequencySpec, MIN_ACK_DELAY_NS};
use crate::transport::quic::wire;
use crate::transport::sctp::SctpConfig;
use crate::transport::tcp::{DelayedAck, RtoMode, SndBufAccounting, RTO_MODES};
use serde_json::Value;
use std::collections::HashMap;

/// The largest ACK-eliciting or reordering threshold `quic.ack_frequency` takes.
const MAX_ACK_FREQUENCY_COUNT: u64 = 1000;

impl Reader<'_> {
    pub(super) fn flow(
        &self,
        v: &Value,
        key: &str,
        i: usize,
        paths: &HashMap<String, usize>,
        tcp_defaults: &TcpConfig,
        duration: Dur,
    ) -> Result<FlowSpec, ScenarioError> {
        let t = self.table(
            v,
            key,
            &[
                "name",
                "path",
                "paths",
                "scheduler",
                "backup",
                "join_delay",
                "join_at",
                "cc",
                "transport",
                "cmt",
                "start",
                "stop",
                "app",
                "tcp",
                "sctp",
                "quic",
                "mptcp_rec",
                "receiver",
            ],
        )?;
        let is_sctp = self.opt_string(&t, "transport")?.as_deref() == Some("sctp");
        let is_quic = self.opt_string(&t, "transport")?.as_deref() == Some("quic");
        let name = self.opt_name(&t, "name")?.unwrap_or_else(|| format!("flow{i}"));
        let (path_names, flow_paths, multipath) = self.flow_paths(&t, key, paths)?;
        if is_quic && multipath {
            for name in ["join_delay", "join_at", "receiver"] {
                if t.map.contains_key(name) {
                    return Err(self.e(&join(key, name), "a multipath QUIC flow validates all its paths from the start (docs/quic.md)"));
                }
            }
        }
        let (scheduler, backup, join_times) = self.multipath_settings(&t, key, multipath, is_sctp, &path_names)?;
        if is_quic && backup.first() == Some(&true) {
            return Err(self.e(&join(key, "backup"), "a QUIC flow's first path carries its handshake: mark a later one backup"));
        }
        let is_udp = self.is_udp(&t, key, multipath)?;
        let is_rec = scheduler.as_deref() == Some("mptcp_rec");
        if is_quic && is_rec {
            return Err(self.e(&join(key, "scheduler"), "mptcp_rec is a Multipath TCP scheduler; a QUIC flow cannot use it"));
        }
        let rec = self.rec_settings(&t, key, is_rec, flow_paths.len())?;
        let sctp = self.sctp_settings(&t, key, is_sctp, &path_names)?;
        let receiver = self.receiver_logic(&t, key, multipath, is_sctp)?;
        let cc = self.flow_cc(&t, key, sctp.as_ref(), is_rec, multipath)?;
        if is_quic && Controller::by_name(&cc).is_some_and(|c| c.wants_rate_samples()) {
            return Err(self.e(
                &join(key, "cc"),
                format!("{cc} runs on delivery-rate samples, which QUIC does not take here: use a window-based controller"),
            ));
        }
        let (start, stop) = self.flow_times(&t, key, duration)?;
        let app = self.flow_app(&t, key, is_udp)?;
        let tcp = self.flow_tcp(&t, key, tcp_defaults, sctp.as_ref())?;
        let (ecn, priorities, path_status) = self.quic_settings(&t, key, is_quic, &path_names)?;
        let ack_frequency = self.quic_ack_frequency(&t, key)?;
        let pacing = self.quic_pacing(&t, key)?;
        let reset_late = self.quic_reset_late(&t, key, &app)?;
        if is_quic && tcp.mss + tcp.header < crate::transport::quic::wire::MIN_IP_PACKET {
            return Err(self.e(
                &join(key, "tcp"),
                format!(
                    "a QUIC flow's packets take tcp.mss + tcp.header bytes of IP, at least {} (a UDP payload of 1200 B, RFC 9000 §14); this one has {}",
                    crate::transport::quic::wire::MIN_IP_PACKET,
                    tcp.mss + tcp.header
                ),
            ));
        }
        let transport = match (sctp, scheduler) {
            (Some(c), _) => TransportSpec::Sctp(Box::new(c)),
            (None, scheduler) if is_quic => {
                TransportSpec::Quic { scheduler, ecn, priorities, backup, path_status, ack_frequency, pacing, reset_late }
            }
            (None, Some(scheduler)) => TransportSpec::Mptcp(Box::new(MptcpSpec { scheduler, backup, join: join_times, rec, receiver })),
            (None, None) if is_udp => TransportSpec::Udp,
            (None, None) => TransportSpec::Tcp,
        };
        Ok(FlowSpec {
            name,
            paths: flow_paths,
            cc,
            transport,
            background: false,
            start: SimTime(start.0),
            stop: stop.map(|s| SimTime(s.0)),
            app,
            tcp,
        })
    }
    /// A QUIC flow's `quic` table: `ecn` (RFC 9000 §13.4; default false), `priorities`
    /// (strict priority across a media application's streams; default true) and
    /// `path_status` (Multipath QUIC's status changes, in time order, given the flow's
    /// `path_names`). ECN is not a `tcp` key on a QUIC flow, whose `tcp` table only sizes
    /// packets and buffers.
    fn quic_settings(
        &self,
        t: &Table,
        key: &str,
        is_quic: bool,
        path_names: &[(String, String)],
    ) -> Result<(bool, bool, Vec<PathStatusChange>), ScenarioError> {
        if is_quic && t.map.get("tcp").and_then(|v| v.get("ecn")).is_some() {
            return Err(self.e(&join(key, "tcp.ecn"), "a QUIC flow's ECN is `quic = { ecn = true }`, not a `tcp` key"));
        }
        let Some(v) = t.map.get("quic") else { return Ok((false, true, Vec::new())) };
        let qk = join(key, "quic");
        if !is_quic {
            return Err(self.e(&qk, "only a QUIC flow (`transport = \"quic\"`) has a `quic` table"));
        }
        let q = self.table(v, &qk, &["ecn", "priorities", "path_status", "ack_frequency", "pacing", "reset_late"])?;
        let flag = |name: &str, default: bool| match q.map.get(name) {
            None => Ok(default),
            Some(b) => b.as_bool().ok_or_else(|| self.e(&join(&qk, name), format!("expected true or false, found {}", kind(b)))),
        };
        let (ecn, priorities) = (flag("ecn", false)?, flag("priorities", true)?);
        let mut changes = Vec::new();
        if let Some(sv) = q.map.get("path_status") {
            let sk = join(&qk, "path_status");
            let example = "expected a list of status changes like [{ at = \"10s\", path = \"lte\", status = \"available\" }]";
            let arr = sv.as_array().ok_or_else(|| self.e(&sk, example))?;
            self.at_most(arr.len(), MAX_PATH_STATUS_CHANGES, &sk, "status changes")?;
            if path_names.len() < 2 {
                return Err(self.e(&sk, "only a Multipath QUIC flow (`paths` with two or more) changes a path's status"));
            }
            for (j, cv) in arr.iter().enumerate() {
                let ck = format!("{sk}[{j}]");
                let ct = self.table(cv, &ck, &["at", "path", "status"])?;
                let at = self.req(&ct, "at", units::duration)?;
                let name = self.req_name(&ct, "path")?;
                let path = path_names.iter().position(|(n, _)| *n == name).ok_or_else(|| {
                    let names: Vec<&str> = path_names.iter().map(|(n, _)| n.as_str()).collect();
                    self.e(&join(&ck, "path"), format!("'{name}' is not a path of this flow (its paths: {})", names.join(", ")))
                })?;
                let backup = match self.req_name(&ct, "status")?.as_str() {
                    "available" => false,
                    "backup" => true,
                    other => {
                        return Err(self.e(&join(&ck, "status"), format!("'{other}' is not a path status; expected available or backup")))
                    }
                };
                changes.push(PathStatusChange { at: SimTime(at.0), path, backup });
            }
            // stable: changes at the same time keep their order
            changes.sort_by_key(|c| c.at);
        }
        Ok((ecn, priorities, changes))
    }

    /// A QUIC flow's `quic.pacing` (RFC 9002 §7.7; default true: noq, the implementation
    /// `mpsim kernel` runs beside the model, always paces).
    fn quic_pacing(&self, t: &Table, key: &str) -> Result<bool, ScenarioError> {
        match t.map.get("quic").and_then(|q| q.get("pacing")) {
            None => Ok(true),
            Some(b) => b.as_bool().ok_or_else(|| self.e(&join(key, "quic.pacing"), format!("expected true or false, found {}", kind(b)))),
        }
    }

    /// A QUIC flow's `quic.reset_late` (default false): the streams of media frames past their
    /// playback deadline are reset, so the flow's application is a media one with a `deadline`.
    fn quic_reset_late(&self, t: &Table, key: &str, app: &AppSpec) -> Result<bool, ScenarioError> {
        let Some(b) = t.map.get("quic").and_then(|q| q.get("reset_late")) else { return Ok(false) };
        let rk = join(key, "quic.reset_late");
        let on = b.as_bool().ok_or_else(|| self.e(&rk, format!("expected true or false, found {}", kind(b))))?;
        if on && !matches!(app, AppSpec::Media(m) if m.deadline.is_some()) {
            return Err(self.e(
                &rk,
                "resets the streams of media frames past their deadline: the flow needs `app = { kind = \"media\", deadline = ... }`",
            ));
        }
        Ok(on)
    }

    /// A QUIC flow's `quic.ack_frequency` (draft-ietf-quic-ack-frequency-10): fixed values
    /// (`threshold`, default 1; `max_ack_delay`, default 25 ms, at least the receiver's
    /// min_ack_delay of 1 ms and at most 2^14 ms; `reordering`, default 1) or
    /// `policy = "window"` (with `reordering`). None without the key.
    fn quic_ack_frequency(&self, t: &Table, key: &str) -> Result<Option<AckFrequencySpec>, ScenarioError> {
        let Some(v) = t.map.get("quic").and_then(|q| q.get("ack_frequency")) else { return Ok(None) };
        let ak = join(key, "quic.ack_frequency");
        let a = self.table(v, &ak, &["threshold", "max_ack_delay", "reordering", "policy"])?;
        let whole = |k: &str, default: u64| match a.map.get(k) {
            None => Ok(default),
            Some(n) => match n.as_u64() {
                Some(n) if n <= MAX_ACK_FREQUENCY_COUNT => Ok(n),
                _ => Err(self.e(&join(&ak, k), format!("expected a whole number from 0 to {MAX_ACK_FREQUENCY_COUNT}, found {n}"))),
            },
        };
        let reordering = whole("reordering", 1)?;
        if let Some(p) = a.map.get("policy") {
            if p.as_str() != Some("window") {
                return Err(self.e(&join(&ak, "policy"), format!("expected \"window\" (the only policy), found {p}")));
            }
            if let Some(k) = ["threshold", "max_ack_delay"].into_iter().find(|k| a.map.contains_key(*k)) {
                return Err(self.e(&join(&ak, k), "the window policy chooses it: give either `policy` or fixed values"));
            }
            return Ok(Some(AckFrequencySpec::Window { reordering }));
        }
        let threshold = whole("threshold", 1)?;
        let max_ack_delay = self.opt(&a, "max_ack_delay", units::duration)?.unwrap_or(Dur(wire::MAX_ACK_DELAY_NS));
        if max_ack_delay.0 < MIN_ACK_DELAY_NS || max_ack_delay > Dur::from_millis(1 << 14) {
            return Err(self.e(
                &join(&ak, "max_ack_delay"),
                format!(
                    "must be from the receiver's min_ack_delay (1 ms) to 2^14 ms (RFC 9000 §18.2); got {} ms",
                    max_ack_delay.as_millis_f64()
                ),
            ));
        }
        Ok(Some(AckFrequencySpec::Fixed { threshold, max_ack_delay, reordering }))
    }

    /// A flow's `path` or `paths`: the names (with the key each was read from), their indices
    /// among the scenario's paths, and whether the flow is multipath.
    #[allow(clippy::type_complexity)]
    fn flow_paths(
        &self,
        t: &Table,
        key: &str,
        paths: &HashMap<String, usize>,
    ) -> Result<(Vec<(String, String)>, Vec<usize>, bool), ScenarioError> {
        let lookup = |pname: &str, k: &str| -> Result<usize, ScenarioError> {
            paths.get(pname).copied().ok_or_else(|| {
                let mut names: Vec<&str> = paths.keys().map(|s| s.as_str()).collect();
                names.sort();
                self.e(k, format!("no path named '{pname}' (paths: {})", names.join(", ")))
            })
        };
        let (path_names, multipath) = match (t.map.get("path"), t.map.get("paths")) {
            (Some(_), Some(_)) => return Err(self.e(key, "give either `path` (plain TCP) or `paths` (Multipath TCP), not both")),
            (None, None) => return Err(self.e(&join(key, "path"), "missing: give `path` (plain TCP) or `paths` (Multipath TCP)")),
            (Some(_), None) => (vec![(self.req_string(t, "path")?, join(key, "path"))], false),
            (None, Some(pv)) => {
                let pk = join(key, "paths");
                let arr = pv.as_array().ok_or_else(|| self.e(&pk, "expected a list of path names"))?;
                if arr.is_empty() || arr.len() > 8 {
                    return Err(self.e(&pk, "a multipath flow needs 1 to 8 paths"));
                }
                let mut names = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    let k = format!("{pk}[{j}]");
                    let n = x.as_str().ok_or_else(|| self.e(&k, format!("expected a path name, found {}", kind(x))))?;
                    if names.iter().any(|(m, _): &(String, String)| m == n) {
                        return Err(self.e(&k, format!("path '{n}' appears twice")));
                    }
                    names.push((n.to_string(), k));
                }
                (names, true)
            }
        };
        let mut flow_paths = Vec::new();
        for (n, k) in &path_names {
            flow_paths.push(lookup(n, k)?);
        }
        Ok((path_names, flow_paths, multipath))
    }

    /// A Multipath TCP flow's scheduler (None for any other flow), backup subflows and joins.
    fn multipath_settings(
        &self,
        t: &Table,
        key: &str,
        multipath: bool,
        is_sctp: bool,
        path_names: &[(String, String)],
    ) -> Result<(Option<String>, Vec<bool>, Join), ScenarioError> {
        let n_paths = path_names.len();
        let scheduler = match (multipath && !is_sctp, self.opt_string(t, "scheduler")?) {
            // an SCTP flow's scheduler is checked with its `cmt` below
            (false, Some(_)) if is_sctp => None,
            (false, Some(_)) => return Err(self.e(&join(key, "scheduler"), "only a multipath flow (`paths = [...]`) has a scheduler")),
            (false, None) => None,
            (true, None) => Some("lowest_rtt".to_string()),
            (true, Some(sname)) => {
                if crate::sched::Sched::by_name(&sname).is_none() && !is_external(&sname) {
                    let names: Vec<&str> = crate::sched::SCHEDULERS.iter().map(|c| c.0).collect();
                    return Err(self.e(
                        &join(key, "scheduler"),
                        format!("unknown scheduler '{sname}'; expected one of: {}, or \"module:Class\"", names.join(", ")),
                    ));
                }
                Some(sname)
            }
        };
        let mut backup = vec![false; n_paths];
        if let Some(bv) = t.map.get("backup") {
            let bk = join(key, "backup");
            if !multipath || is_sctp {
                return Err(self.e(&bk, "only a Multipath TCP flow has backup subflows"));
            }
            let arr = bv.as_array().ok_or_else(|| self.e(&bk, "expected a list of path names from `paths`"))?;
            for (j, x) in arr.iter().enumerate() {
                let k = format!("{bk}[{j}]");
                let n = x.as_str().ok_or_else(|| self.e(&k, "expected a path name"))?;
                let pos = path_names
                    .iter()
                    .position(|(m, _)| m == n)
                    .ok_or_else(|| self.e(&k, format!("'{n}' is not one of this flow's paths")))?;
                backup[pos] = true;
            }
        }
        for name in ["join_delay", "join_at"] {
            if is_sctp && t.map.contains_key(name) {
                return Err(self.e(
                    &join(key, name),
                    "an SCTP association uses its destinations from the start; subflows that join are Multipath TCP's",
                ));
            }
        }
        let join_times = self.join(t, key, multipath, n_paths)?;
        Ok((scheduler, backup, join_times))
    }

    /// Whether the flow is UDP (`transport`; "sctp" is read by the caller).
    fn is_udp(&self, t: &Table, key: &str, multipath: bool) -> Result<bool, ScenarioError> {
        let is_udp = match self.opt_string(t, "transport")?.as_deref() {
            None | Some("tcp") | Some("sctp") | Some("quic") => false,
            Some("udp") if multipath => return Err(self.e(&join(key, "transport"), "a multipath flow runs over TCP")),
            Some("udp") => true,
            Some(other) => {
                return Err(self.e(&join(key, "transport"), format!("unknown transport '{other}'; expected tcp, udp, sctp or quic")))
            }
        };
        Ok(is_udp)
    }

    /// MPTCP-rec's settings (`mptcp_rec`) of a flow that runs its scheduler (`is_rec`).
    fn rec_settings(&self, t: &Table, key: &str, is_rec: bool, n_paths: usize) -> Result<Option<RecSpec>, ScenarioError> {
        // MPTCP-rec: its receiver logic and settings; its rate comes from the receiver
        let rec = match (is_rec, t.map.get("mptcp_rec")) {
            (false, Some(_)) => {
                return Err(self.e(&join(key, "mptcp_rec"), "only a flow with `scheduler = \"mptcp_rec\"` takes these settings"))
            }
            (false, None) => None,
            (true, v) => Some(self.mptcp_rec(v, &join(key, "mptcp_rec"))?),
        };
        if let Some(r) = rec.as_ref().filter(|r| !r.pcder.fixed_rates.is_empty() && r.pcder.fixed_rates.len() != n_paths) {
            return Err(self.e(
                &join(&join(key, "mptcp_rec"), "fixed_rates"),
                format!("give one rate per path: {} rates for {} paths", r.pcder.fixed_rates.len(), n_paths),
            ));
        }
        Ok(rec)
    }

    /// An SCTP flow's association settings (`cmt`, `scheduler`, `cc` and the `sctp` table);
    /// None for any other flow, which may not have them.
    fn sctp_settings(
        &self,
        t: &Table,
        key: &str,
        is_sctp: bool,
        path_names: &[(String, String)],
    ) -> Result<Option<SctpConfig>, ScenarioError> {
        let sctp_sched = if is_sctp { self.opt_string(t, "scheduler")? } else { None };
        if sctp_sched.as_deref() == Some("mptcp_rec") {
            return Err(self.e(&join(key, "scheduler"), "mptcp_rec is a Multipath TCP scheduler; an SCTP flow cannot use it"));
        }
        let cmt = match t.map.get("cmt") {
            None => false,
            Some(_) if !is_sctp => {
                return Err(self.e(&join(key, "cmt"), "only an SCTP flow (`transport = \"sctp\"`) has concurrent multipath transfer"))
            }
            Some(b) => b.as_bool().ok_or_else(|| self.e(&join(key, "cmt"), format!("expected true or false, found {}", kind(b))))?,
        };
        if t.map.contains_key("sctp") && !is_sctp {
            return Err(self.e(&join(key, "sctp"), "only an SCTP flow (`transport = \"sctp\"`) has an `sctp` table"));
        }
        if t.map.contains_key("tcp") && is_sctp {
            return Err(self.e(&join(key, "tcp"), "an SCTP flow takes its settings from its `sctp` table, not `tcp`"));
        }
        let sctp = if is_sctp {
            let names: Vec<String> = path_names.iter().map(|(n, _)| n.clone()).collect();
            let mut c = self.sctp(key, &names, self.opt_string(t, "cc")?.as_deref(), cmt, t.map.get("sctp"))?;
            if let Some(name) = sctp_sched {
                let supported = crate::transport::sctp::SCTP_SCHEDULERS;
                let k = join(key, "scheduler");
                if !cmt {
                    return Err(self.e(&k, format!("only a CMT association (`cmt = true`) has a scheduler (got '{name}'): without CMT new data goes to the primary destination")));
                }
                c.scheduler = supported.iter().copied().find(|&x| x == name).ok_or_else(|| {
                    self.e(&k, format!("scheduler '{name}' is not supported on an SCTP association; supported: {}", supported.join(", ")))
                })?;
            }
            Some(c)
        } else {
            None
        };
        Ok(sctp)
    }

    /// Receiver-side logic written outside the crate ("module:Class") of a Multipath TCP flow.
    fn receiver_logic(&self, t: &Table, key: &str, multipath: bool, is_sctp: bool) -> Result<Option<String>, ScenarioError> {
        // receiver-side logic written outside the crate ("module:Class"), installed before the run
        let receiver = self.opt_string(t, "receiver")?;
        if let Some(r) = &receiver {
            if !multipath || is_sctp {
                return Err(self.e(&join(key, "receiver"), "only a Multipath TCP flow (`paths = [...]`) has receiver logic"));
            }
            if !is_external(r) {
                return Err(
                    self.e(&join(key, "receiver"), format!("expected receiver logic written in Python, \"module:Class\" (got '{r}')"))
                );
            }
        }
        Ok(receiver)
    }

    /// The flow's congestion controller (an SCTP flow's is its association's).
    fn flow_cc(&self, t: &Table, key: &str, sctp: Option<&SctpConfig>, is_rec: bool, multipath: bool) -> Result<String, ScenarioError> {
        let default_cc = if is_rec { "receiver_rate" } else { "reno" };
        let cc = match sctp {
            Some(c) => c.cc.to_string(),
            None => self.opt_string(t, "cc")?.unwrap_or_else(|| default_cc.into()),
        };
        if sctp.is_none() && Controller::by_name(&cc).is_none() && !is_external(&cc) {
            let names: Vec<&str> = crate::cc::CONTROLLERS.iter().map(|c| c.0).collect();
            return Err(self.e(
                &join(key, "cc"),
                format!("unknown congestion controller '{cc}'; expected one of: {}, or \"module:Class\"", names.join(", ")),
            ));
        }
        if cc == "receiver_rate" && !multipath {
            // it has no congestion control of its own: its rate comes from MPTCP-rec's receiver
            return Err(self.e(&join(key, "cc"), "receiver_rate leaves the rate to MPTCP-rec's receiver; a plain TCP flow has none (use it with `paths = [...]` and `scheduler = \"mptcp_rec\"`)"));
        }
        Ok(cc)
    }

    /// When the flow starts and stops.
    fn flow_times(&self, t: &Table, key: &str, duration: Dur) -> Result<(Dur, Option<Dur>), ScenarioError> {
        let start = self.opt(t, "start", units::duration)?.unwrap_or(Dur::ZERO);
        if start >= duration {
            return Err(self.e(&join(key, "start"), "the flow starts after the simulation ends"));
        }
        let stop = self.opt(t, "stop", units::duration)?;
        if let Some(s) = stop {
            if s <= start {
                return Err(self.e(&join(key, "stop"), "must be later than `start`"));
            }
        }
        Ok((start, stop))
    }

    /// The flow's application (bulk unless given).
    fn flow_app(&self, t: &Table, key: &str, is_udp: bool) -> Result<AppSpec, ScenarioError> {
        let app = match t.map.get("app") {
            None => AppSpec::Bulk { bytes: None },
            Some(av) => self.app(av, &join(key, "app"))?,
        };
        if is_udp && matches!(app, AppSpec::Bulk { .. }) {
            return Err(self.e(&join(key, "app"), "a UDP flow has no congestion control: give it a paced application (cbr, onoff or vbr)"));
        }
        if is_udp && matches!(app, AppSpec::Media(_)) {
            return Err(
                self.e(&join(key, "app"), "a media stream runs over TCP or Multipath TCP (UDP flows carry cbr, onoff or vbr traffic)")
            );
        }
        Ok(app)
    }

    /// The flow's TCP settings; an SCTP flow's packet sizes and buffers come from its
    /// association.
    fn flow_tcp(&self, t: &Table, key: &str, tcp_defaults: &TcpConfig, sctp: Option<&SctpConfig>) -> Result<TcpConfig, ScenarioError> {
        let mut tcp = match t.map.get("tcp") {
            None => tcp_defaults.clone(),
            Some(tv) => self.tcp(tv, &join(key, "tcp"), tcp_defaults)?,
        };
        if let Some(c) = sctp {
            tcp.mss = c.chunk;
            tcp.rcv_buf = c.rcv_buf;
            tcp.snd_buf = c.snd_buf;
            tcp.header = c.data_packet_wire(c.chunk, 1) - c.chunk;
            tcp.delayed_ack = if c.delayed_sack { DelayedAck::Every2 } else { DelayedAck::Off };
        }
        Ok(tcp)
    }

    /// A multipath flow's `join_delay` (a duration or "linux") or `join_at` (one time per path).
    fn join(&self, t: &Table, key: &str, multipath: bool, n_paths: usize) -> Result<Join, ScenarioError> {
        let (delay, at) = (t.map.get("join_delay"), t.map.get("join_at"));
        for (name, given) in [("join_delay", delay.is_some()), ("join_at", at.is_some())] {
            if given && !multipath {
                return Err(self.e(&join(key, name), "only a multipath flow (`paths = [...]`) has subflows that join"));
            }
        }
        match (delay, at) {
            (Some(_), Some(_)) => Err(self.e(key, "give either `join_delay` or `join_at`, not both")),
            (None, None) => Ok(Join::AtStart),
            (Some(d), None) if d.as_str() == Some("linux") => Ok(Join::Linux),
            (Some(_), None) => Ok(Join::Delay(self.opt(t, "join_delay", units::duration)?.unwrap_or(Dur::ZERO))),
            (None, Some(a)) => {
                let k = join(key, "join_at");
                let arr = a.as_array().ok_or_else(|| self.e(&k, "expected a list of times, one per path"))?;
                if arr.len() != n_paths {
                    return Err(self.e(&k, format!("expected {n_paths} times, one per path, found {}", arr.len())));
                }
                let mut out = Vec::new();
                for (j, x) in arr.iter().enumerate() {
                    let kj = format!("{k}[{j}]");
                    let s = x.as_str().ok_or_else(|| self.e(&kj, format!("expected a duration such as \"1s\", found {}", kind(x))))?;
                    out.push(units::duration(s).map_err(|m| self.e(&kj, m))?);
                }
                if out[0] != Dur::ZERO {
                    return Err(self.e(&format!("{k}[0]"), "the first subflow carries the connection's handshake: it joins at \"0s\""));
                }
                Ok(Join::At(out))
            }
        }
    }

    pub(super) fn tcp(&self, v: &Value, key: &str, base: &TcpConfig) -> Result<TcpConfig, ScenarioError> {
        let t = self.table(
            v,
            key,
            &[
                "mss",
                "initial_window",
                "rto",
                "min_rto",
                "max_rto",
                "initial_rto",
                "frto",
                "rack",
                "tlp",
                "prr",
                "dsack",
                "sack",
                "ecn",
                "delayed_ack",
                "delack_timeout",
                "rcv_buf",
                "window_scale",
                "snd_buf",
                "snd_buf_accounting",
                "ssthresh",
                "header",
            ],
        )?;
        let mut s = base.clone();
        if let Some(m) = self.opt(&t, "mss", units::bytes)? {
            if !(64..=65_000).contains(&m) {
                return Err(self.e(&join(key, "mss"), "must be between 64 B and 65000 B"));
            }
            s.mss = m as u32;
        }
        if t.map.contains_key("initial_window") {
            let iw = self.req_f64(&t, "initial_window")?;
            if iw < 1.0 || iw.fract() != 0.0 || iw > 1000.0 {
                return Err(self.e(&join(key, "initial_window"), "expected a whole number of segments from 1 to 1000"));
            }
            s.initial_window = iw as u32;
        }
        if let Some(m) = self.opt_string(&t, "rto")? {
            s.rto = RtoMode::by_name(&m).ok_or_else(|| {
                let names: Vec<&str> = RTO_MODES.iter().map(|(n, _)| *n).collect();
                self.e(&join(key, "rto"), format!("unknown timer '{m}'; expected one of: {}", names.join(", ")))
            })?;
        }
        if let Some(d) = self.opt(&t, "min_rto", units::duration)? {
            s.min_rto = Some(d);
        }
        if let Some(d) = self.opt(&t, "max_rto", units::duration)? {
            s.max_rto = Some(d);
        }
        if let Some(d) = self.opt(&t, "initial_rto", units::duration)? {
            s.initial_rto = d;
        }
        let (min_rto, max_rto) = (s.min_rto.unwrap_or(s.rto.default_min_rto()), s.max_rto.unwrap_or(s.rto.default_max_rto()));
        if min_rto > max_rto {
            return Err(self.e(&join(key, "min_rto"), format!("must not exceed max_rto ({max_rto})")));
        }
        if min_rto == Dur::ZERO {
            return Err(self.e(&join(key, "min_rto"), "must be greater than zero"));
        }
        for (name, slot) in [
            ("frto", &mut s.frto),
            ("rack", &mut s.rack),
            ("tlp", &mut s.tlp),
            ("prr", &mut s.prr),
            ("dsack", &mut s.dsack),
            ("sack", &mut s.sack),
            ("ecn", &mut s.ecn),
        ] {
            if let Some(b) = t.map.get(name) {
                *slot = b.as_bool().ok_or_else(|| self.e(&join(key, name), format!("expected true or false, found {}", kind(b))))?;
            }
        }
        if !s.sack {
            // RACK, the loss probe and D-SACK read SACK blocks: without SACK they are off, and
            // asking for one of them here is a contradiction
            for name in ["rack", "tlp", "dsack"] {
                if t.map.get(name).and_then(|b| b.as_bool()) == Some(true) {
                    return Err(self.e(&join(key, name), "needs SACK: it cannot be true with `sack = false`"));
                }
            }
            (s.rack, s.tlp, s.dsack) = (false, false, false);
        }
        if let Some(b) = t.map.get("delayed_ack") {
            s.delayed_ack = match (b.as_bool(), b.as_str()) {
                (Some(false), _) => DelayedAck::Off,
                (Some(true), _) => DelayedAck::Every2,
                (_, Some("linux")) => DelayedAck::Linux,
                _ => return Err(self.e(&join(key, "delayed_ack"), format!("expected true, false or \"linux\", found {}", kind(b)))),
            };
        }
        if let Some(d) = self.opt(&t, "delack_timeout", units::duration)? {
            s.delack_timeout = d;
        }
        if let Some(b) = self.opt(&t, "rcv_buf", units::bytes)? {
            s.rcv_buf = b;
        }
        if t.map.contains_key("window_scale") {
            let w = self.req_f64(&t, "window_scale")?;
            if !(0.0..=14.0).contains(&w) || w.fract() != 0.0 {
                return Err(self.e(&join(key, "window_scale"), format!("expected a whole number from 0 to 14 (RFC 7323), found {w}")));
            }
            s.window_scale = Some(w as u8);
        }
        // read with the send buffer's own limit, whatever the size of the number
        let snd_buf = |s: &str| match units::bytes(s) {
            Ok(b) if b <= MAX_SND_BUF => Ok(b),
            Ok(_) => Err("must be at most 1 TB".to_string()),
            Err(e) if e.contains("at most") => Err("must be at most 1 TB".to_string()),
            Err(e) => Err(e),
        };
        if let Some(b) = self.opt(&t, "snd_buf", snd_buf)? {
            s.snd_buf = b;
        }
        if let Some(b) = t.map.get("snd_buf_accounting") {
            s.snd_buf_accounting = match b.as_str() {
                Some("payload") => SndBufAccounting::Payload,
                Some("linux") => SndBufAccounting::Linux,
                _ => {
                    let found = b.as_str().map_or_else(|| kind(b).to_string(), |v| format!("\"{v}\""));
                    return Err(self.e(&join(key, "snd_buf_accounting"), format!("expected \"payload\" or \"linux\", found {found}")));
                }
            };
        }
        if let Some(b) = t.map.get("ssthresh") {
            s.ssthresh_of_cwnd = match b.as_str() {
                Some("flight") => false,
                Some("cwnd") => true,
                _ => {
                    let found = b.as_str().map_or_else(|| kind(b).to_string(), |v| format!("\"{v}\""));
                    return Err(self.e(&join(key, "ssthresh"), format!("expected \"flight\" or \"cwnd\", found {found}")));
                }
            };
        }
        if let Some(b) = self.opt(&t, "header", units::bytes)? {
            if b > 1000 {
                return Err(self.e(&join(key, "header"), "must be at most 1000 B"));
            }
            s.header = b as u32;
        }
        if s.rcv_buf > 1_000_000_000 {
            return Err(self.e(&join(key, "rcv_buf"), "must be at most 1 GB (the largest TCP window with window scaling)"));
        }
        if s.rcv_buf < s.mss as u64 {
            return Err(self.e(&join(key, "rcv_buf"), format!("must hold at least one segment ({} B)", s.mss)));
        }
        if s.snd_buf < s.mss as u64 {
            return Err(self.e(&join(key, "snd_buf"), format!("must hold at least one segment ({} B)", s.mss)));
        }
        Ok(s)
    }
}

/// A scheduler or controller name of the form "module:Class": an implementation outside the
/// core (written in Python), which the embedding layer resolves and installs with
/// `Simulation::with_scheduler` / `with_controller` before the run. Until it is installed
/// the flow runs the default (`lowest_rtt`, `reno`), which the summary names.
pub fn is_external(name: &str) -> bool {
    match name.split_once(':') {
        Some((module, class)) => !module.trim().is_empty() && !class.trim().is_empty(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_external;
    use crate::sim::Simulation;
    use crate::Scenario;

    const TWO_PATHS: &str = r#"
duration = "2s"
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "b"
rate = "10Mbps"
delay = "30ms"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
name = "mp"
paths = ["pa", "pb"]
"#;

    #[test]
    fn external_names_pass_through_and_are_pending_until_installed() {
        assert!(is_external("my_scheds:Greedy"));
        assert!(!is_external("greedy") && !is_external(":Greedy") && !is_external("mod:"));
        let text = format!("{TWO_PATHS}scheduler = \"my_scheds:Greedy\"\ncc = \"my_ccs:Cubic\"\n");
        let s = Scenario::from_toml(&text, "t.toml").expect("external names are accepted");
        assert_eq!(s.flows[0].scheduler(), Some("my_scheds:Greedy"));
        assert_eq!(s.flows[0].cc, "my_ccs:Cubic");
        let sim = Simulation::new(&s);
        let pending: Vec<(&str, &str)> = sim.pending_components().iter().map(|(_, k, n)| (*k, n.as_str())).collect();
        assert_eq!(pending, [("scheduler", "my_scheds:Greedy"), ("cc", "my_ccs:Cubic")]);
        let bad = format!("{TWO_PATHS}scheduler = \"greedy\"\n");
        let e = Scenario::from_toml(&bad, "t.toml").unwrap_err();
        assert_eq!(e.key, "flow[0].scheduler");
        assert!(e.message.contains("module:Class"), "{}", e.message);
    }

    #[test]
    fn a_cmt_association_takes_the_supported_schedulers_only() {
        let sctp = format!("{TWO_PATHS}transport = \"sctp\"\n");
        let s = Scenario::from_toml(&format!("{sctp}cmt = true\n"), "t.toml").unwrap();
        assert_eq!(s.flows[0].sctp().unwrap().scheduler, "round_robin");
        for name in crate::transport::sctp::SCTP_SCHEDULERS {
            let s = Scenario::from_toml(&format!("{sctp}cmt = true\nscheduler = \"{name}\"\n"), "t.toml").unwrap();
            assert_eq!(s.flows[0].sctp().unwrap().scheduler, *name);
            assert_eq!(s.flows[0].scheduler(), None);
            let out = Simulation::new(&s).run();
            assert_eq!(out.summary.flows[0].scheduler.as_deref(), Some(*name));
        }
        let e = Scenario::from_toml(&format!("{sctp}cmt = true\nscheduler = \"redundant\"\n"), "t.toml").unwrap_err();
        assert_eq!((e.origin.as_str(), e.key.as_str()), ("t.toml", "flow[0].scheduler"));
        assert!(e.message.contains("'redundant'") && e.message.contains("round_robin, lowest_rtt, blest, ecf"), "{}", e.message);
        let e = Scenario::from_toml(&format!("{sctp}scheduler = \"lowest_rtt\"\n"), "t.toml").unwrap_err();
        assert_eq!(e.key, "flow[0].scheduler");
        assert!(e.message.contains("cmt = true"), "{}", e.message);
        let e = Scenario::from_toml(&format!("{sctp}cmt = true\nscheduler = \"mptcp_rec\"\n"), "t.toml").unwrap_err();
        assert!(e.message.contains("Multipath TCP scheduler"), "{}", e.message);
    }
}
