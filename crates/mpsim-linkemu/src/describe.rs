//! The scenario as mpsim reads it, in JSON: what the kernel runner needs to map it onto
//! Linux (or to refuse it), with every default filled in and every unit resolved, so that
//! the runner never re-parses units or re-implements defaults.

use mpsim_core::net::{LossModel, QueueLimit};
use mpsim_core::scenario::{AppSpec, Scenario};
use serde_json::{json, Value};

pub fn describe_file(path: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    // trace files a TOML scenario names are relative to its folder; a JSON scenario comes from
    // the Python front end, which has already made them relative to the current directory
    let dir = std::path::Path::new(path).parent();
    let s = if path.ends_with(".toml") { Scenario::from_toml_in(&text, path, dir) } else { Scenario::from_json(&text, path) }
        .map_err(|e| e.to_string())?;
    Ok(serde_json::to_string(&describe(&s)).unwrap())
}

fn loss(m: &LossModel) -> Value {
    match m {
        LossModel::None => json!({"model": "none", "mean": 0.0}),
        LossModel::Uniform { p } => json!({"model": "uniform", "mean": p}),
        LossModel::GilbertElliott { .. } => json!({"model": "gilbert", "mean": m.mean_loss()}),
        LossModel::Scripted { drops } => json!({"model": "scripted", "mean": 0.0, "drops": drops.len()}),
    }
}

pub fn describe(s: &Scenario) -> Value {
    let links: Vec<Value> = s
        .links
        .iter()
        .map(|l| {
            let (qk, qv) = match l.queue {
                QueueLimit::Bytes(b) => ("bytes", b),
                QueueLimit::Packets(p) => ("packets", p),
            };
            let trace = |t: &Option<std::sync::Arc<mpsim_core::net::LinkTrace>>| {
                t.as_ref().map(|t| json!({"file": t.file, "opportunities": t.opportunities(), "period_s": t.period().as_secs_f64()}))
            };
            json!({
                "name": l.name, "rate_bps": l.rate_bps, "reverse_rate_bps": l.reverse_rate_bps,
                "trace": trace(&l.trace), "reverse_trace": trace(&l.reverse_trace),
                "delay_s": l.delay.as_secs_f64(), "jitter_s": l.jitter.as_secs_f64(),
                "queue": {qk: qv}, "loss": loss(&l.loss), "reverse_loss": loss(&l.reverse_loss),
                "outages": l.outages.len(),
                "aqm": l.aqm.as_ref().map(|a| a.name()), "reverse_aqm": l.reverse_aqm.as_ref().map(|a| a.name()),
                "schedule": l.schedule.as_ref().map(|s| json!({"file": s.file, "steps": s.steps().len()})),
            })
        })
        .collect();
    let paths: Vec<Value> = s
        .paths
        .iter()
        .map(|p| json!({"name": p.name, "links": p.links.iter().map(|&i| s.links[i].name.clone()).collect::<Vec<_>>()}))
        .collect();
    let flows: Vec<Value> = s
        .flows
        .iter()
        .map(|f| {
            let app = match &f.app {
                AppSpec::Bulk { bytes } => json!({"kind": "bulk", "bytes": bytes}),
                AppSpec::Cbr { .. } => json!({"kind": "cbr"}),
                AppSpec::OnOff { .. } => json!({"kind": "onoff"}),
                AppSpec::Vbr { .. } => json!({"kind": "vbr"}),
                AppSpec::Media(_) => json!({"kind": "media"}),
            };
            let t = &f.tcp;
            json!({
                "name": f.name,
                "paths": f.paths.iter().map(|&i| s.paths[i].name.clone()).collect::<Vec<_>>(),
                "multipath": f.mptcp().is_some(),
                "scheduler": f.scheduler(),
                "backup": f.backup(),
                "cc": f.cc,
                "transport": f.transport.key(),
                "background": f.background,
                "start_s": f.start.as_secs_f64(),
                "stop_s": f.stop.map(|t| t.as_secs_f64()),
                "app": app,
                "tcp": {
                    "mss": t.mss, "initial_window": t.initial_window,
                    "min_rto_s": t.min_rto.unwrap_or(t.rto.default_min_rto()).as_secs_f64(), "max_rto_s": t.max_rto.unwrap_or(t.rto.default_max_rto()).as_secs_f64(),
                    "initial_rto_s": t.initial_rto.as_secs_f64(),
                    "delayed_ack": t.delayed_ack.name(), "sack": t.sack, "ecn": t.ecn, "delack_timeout_s": t.delack_timeout.as_secs_f64(),
                    "rcv_buf": t.rcv_buf, "window_scale": t.window_scale, "snd_buf": t.snd_buf, "header": t.header,
                    "ssthresh": if t.ssthresh_of_cwnd { "cwnd" } else { "flight" },
                },
            })
        })
        .collect();
    json!({
        "name": s.name, "duration_s": s.duration.as_secs_f64(), "seed": s.seed,
        "warmup_s": s.metrics.warmup.as_secs_f64(), "interval_s": s.metrics.interval.map(|d| d.as_secs_f64()),
        "links": links, "paths": paths, "flows": flows,
    })
}
