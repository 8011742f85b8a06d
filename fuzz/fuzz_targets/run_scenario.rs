//! Structure-aware: builds a random scenario of a few links, paths and flows (every
//! scheduler, controller, application, loss model, outage and TCP setting is reachable, and
//! MPTCP-rec's receiver logic with every key of its `mptcp_rec` table),
//! reads it through the scenario reader, and runs it with the simulator's invariant checks
//! on, within a budget of events and memory taken from the run's estimate. After the run,
//! checks what must hold of any output: bytes are delivered at most once, links conserve
//! packets, figures are finite, the estimate was not exceeded by much, and the same seed
//! gives the same summary.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mpsim_core::{Scenario, Simulation};
use serde_json::{json, Value};

/// Runs estimated above these are skipped: they would only slow the search down.
const MAX_EVENTS: u64 = 50_000;
const MAX_MEMORY: u64 = 256 << 20;

const SCHEDULERS: &[&str] = &[
    "lowest_rtt", "lowest_rtt_plain", "round_robin", "redundant", "single_path", "blest", "ecf", "otias", "dqs",
    "dqs_exact", "dqs_backoff", "dqs_ahead", "dqs_exact_ahead", "dqs_backoff_ahead", "po_mptcp", "po_mptcp_rr",
    "mptcp_rec",
];
const CONTROLLERS: &[&str] = &["reno", "lia", "olia", "balia", "receiver_rate"];

#[derive(Arbitrary, Debug)]
struct Input {
    seed: u8,
    duration: u8,
    links: Vec<Link>,
    paths: Vec<Path>,
    flows: Vec<Flow>,
    interval: Option<u8>,
    trace: bool,
    warmup: u8,
}

#[derive(Arbitrary, Debug)]
struct Link {
    rate: u8,
    delay: u8,
    queue: Queue,
    loss: Loss,
    reverse_loss: Loss,
    outage: Option<(u8, Option<u8>)>,
}

#[derive(Arbitrary, Debug)]
enum Queue {
    Default,
    Packets(u8),
    Bytes(u16),
}

#[derive(Arbitrary, Debug)]
enum Loss {
    None,
    Uniform(u8),
    Gilbert { mean: u8, burst: u8 },
    GilbertFull { p: u8, r: u8, k: u8, h: u8 },
    Scripted(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Path {
    links: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
struct Flow {
    paths: Vec<u8>,
    multipath: bool,
    scheduler: u8,
    backup: Option<u8>,
    cc: u8,
    udp: bool,
    start: u8,
    stop: Option<u8>,
    app: App,
    tcp: Option<Tcp>,
    /// MPTCP-rec's settings (used when the scheduler is mptcp_rec; out-of-range values are
    /// reachable, the reader must refuse them with a message).
    rec: Option<Rec>,
}

#[derive(Arbitrary, Debug)]
struct Rec {
    sigma: u8,
    phi: u8,
    theta: u8,
    dupthresh: u8,
    epoch: bool,
    mismatch: u8,
    awnd_samples: u8,
    min_paths: u8,
    burst: u8,
    window_aware_timeout: bool,
    restore_after: u8,
    restore_hold: u8,
}

fn rec(r: &Rec) -> Value {
    json!({
        "sigma": r.sigma as u64 % 70,
        "phi": r.phi as f64 / 100.0,
        "theta": r.theta as f64 / 100.0,
        "dupthresh": r.dupthresh as u64 % 8,
        "history": if r.epoch { "epoch" } else { "round" },
        "mismatch": r.mismatch as f64 / 100.0,
        "awnd_samples": r.awnd_samples as u64 % 40,
        "min_paths": r.min_paths as u64 % 5,
        "burst": r.burst as u64 % 8,
        "window_aware_timeout": r.window_aware_timeout,
        "restore_after": r.restore_after as u64 % 20,
        "restore_hold": format!("{}ms", r.restore_hold as u64 * 8),
    })
}

#[derive(Arbitrary, Debug)]
enum App {
    Bulk(Option<u16>),
    Cbr { rate: u8, packet: u16 },
    OnOff { rate: u8, packet: u16, on: u8, off: u8, constant: bool },
    Vbr { rate: u8, preset: u8, vary: Option<(u8, u8, u8)> },
    Media { fps: u8, gop: Vec<u8>, deadline: Option<u8> },
}

#[derive(Arbitrary, Debug)]
struct Tcp {
    mss: u16,
    initial_window: u8,
    min_rto: u8,
    delayed_ack: bool,
    rcv_buf: u16,
    snd_buf: u16,
}

fn rate(r: u8) -> String {
    // 50 kbit/s to about 200 Mbit/s, evenly on a log scale
    format!("{}bps", (50e3 * 1.033f64.powi(r as i32)).round() as u64)
}

fn loss(l: &Loss) -> Value {
    match l {
        Loss::None => json!("0%"),
        Loss::Uniform(p) => json!(format!("{}%", *p as f64 / 20.0)),
        Loss::Gilbert { mean, burst } => {
            json!({"model": "gilbert", "mean": format!("{}%", *mean as f64 / 25.0), "burst": 1 + *burst as u64 % 20})
        }
        Loss::GilbertFull { p, r, k, h } => json!({
            "model": "gilbert",
            "p": *p as f64 / 2550.0,
            "r": 0.05 + *r as f64 / 300.0,
            "k": *k as f64 / 255.0,
            "h": *h as f64 / 255.0,
        }),
        Loss::Scripted(d) => json!({"model": "scripted", "drops": d.iter().take(32).map(|&x| x as u64).collect::<Vec<_>>()}),
    }
}

fn app(a: &App) -> Value {
    match a {
        App::Bulk(None) => json!("bulk"),
        App::Bulk(Some(b)) => json!({"kind": "bulk", "bytes": 1 + *b as u64 * 100}),
        App::Cbr { rate: r, packet } => json!({"kind": "cbr", "rate": rate(*r), "packet": 1 + *packet as u64 % 3000}),
        App::OnOff { rate: r, packet, on, off, constant } => json!({
            "kind": "onoff", "rate": rate(*r), "packet": 1 + *packet as u64 % 3000,
            "on": format!("{}ms", 1 + *on as u64 * 4), "off": format!("{}ms", *off as u64 * 4),
            "distribution": if *constant { "constant" } else { "exponential" },
        }),
        App::Vbr { rate: r, preset, vary } => {
            let sizes = ["cmtqa", "imix", "full"][*preset as usize % 3];
            let mut v = json!({"kind": "vbr", "rate": rate(*r), "sizes": sizes});
            if let Some((lo, hi, period)) = vary {
                let (lo, hi) = (*lo.min(hi) as f64 / 100.0, *lo.max(hi) as f64 / 100.0);
                v["vary"] = json!({"min": lo, "max": hi, "period": format!("{}ms", 1 + *period as u64 * 10)});
            }
            v
        }
        App::Media { fps, gop, deadline } => {
            let gop: String = gop.iter().take(30).map(|&c| ['I', 'P', 'B'][c as usize % 3]).collect();
            let mut v = json!({"kind": "media", "fps": 1 + *fps as u64 % 60});
            if !gop.is_empty() {
                v["gop"] = json!(gop);
            }
            if let Some(d) = deadline {
                v["deadline"] = json!(format!("{}ms", 10 + *d as u64 * 4));
            }
            v
        }
    }
}

/// The scenario as the value tree a TOML file would give.
fn scenario(inp: &Input) -> Option<Value> {
    let nl = inp.links.len().clamp(1, 4);
    if inp.links.is_empty() || inp.paths.is_empty() || inp.flows.is_empty() {
        return None;
    }
    let duration_ms = 100 + inp.duration as u64 * 12; // 0.1 s to about 3.2 s
    let links: Vec<Value> = inp
        .links
        .iter()
        .take(nl)
        .enumerate()
        .map(|(i, l)| {
            let mut v = json!({
                "name": format!("l{i}"),
                "rate": rate(l.rate),
                "delay": format!("{}ms", l.delay as u64 / 2),
                "loss": loss(&l.loss),
                "reverse_loss": loss(&l.reverse_loss),
            });
            match l.queue {
                Queue::Default => {}
                Queue::Packets(n) => v["queue"] = json!(format!("{}pkt", 1 + n as u64)),
                Queue::Bytes(b) => v["queue"] = json!(format!("{}B", 64 + b as u64)),
            }
            if let Some((at, until)) = l.outage {
                let at = at as u64 * duration_ms / 256;
                let mut o = json!({"at": format!("{at}ms")});
                if let Some(u) = until {
                    o["until"] = json!(format!("{}ms", at + 1 + u as u64 * 8));
                }
                v["down"] = json!([o]);
            }
            v
        })
        .collect();
    let paths: Vec<Value> = inp
        .paths
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, p)| {
            let mut ls: Vec<usize> = Vec::new();
            for &l in p.links.iter().take(4) {
                let l = l as usize % nl;
                if !ls.contains(&l) {
                    ls.push(l);
                }
            }
            if ls.is_empty() {
                ls.push(i % nl);
            }
            json!({"name": format!("p{i}"), "links": ls.iter().map(|l| format!("l{l}")).collect::<Vec<_>>()})
        })
        .collect();
    let np = paths.len();
    let flows: Vec<Value> = inp
        .flows
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, f)| {
            let start = f.start as u64 * duration_ms / 512;
            let mut v = json!({
                "name": format!("f{i}"),
                "cc": CONTROLLERS[f.cc as usize % CONTROLLERS.len()],
                "start": format!("{start}ms"),
                "app": app(&f.app),
            });
            if let Some(s) = f.stop {
                v["stop"] = json!(format!("{}ms", start + 1 + s as u64 * duration_ms / 256));
            }
            let mut ps: Vec<usize> = Vec::new();
            for &p in f.paths.iter().take(4) {
                let p = p as usize % np;
                if !ps.contains(&p) {
                    ps.push(p);
                }
            }
            if ps.is_empty() {
                ps.push(i % np);
            }
            if f.multipath && !f.udp {
                v["paths"] = json!(ps.iter().map(|p| format!("p{p}")).collect::<Vec<_>>());
                let sched = SCHEDULERS[f.scheduler as usize % SCHEDULERS.len()];
                v["scheduler"] = json!(sched);
                if let (Some(r), "mptcp_rec") = (&f.rec, sched) {
                    v["mptcp_rec"] = rec(r);
                }
                if let Some(b) = f.backup {
                    v["backup"] = json!([format!("p{}", ps[b as usize % ps.len()])]);
                }
                // late joins, from bits the input already has: the input's layout stays as
                // it was, so the kept corpus still decodes, and those of its inputs with these
                // bits set now exercise late joins too
                match f.scheduler / 64 {
                    1 => v["join_delay"] = json!("linux"),
                    2 => v["join_delay"] = json!(format!("{}ms", f.cc as u64 * duration_ms / 256)),
                    3 => {
                        let at: Vec<String> = (0..ps.len()).map(|k| format!("{}ms", k as u64 * f.start as u64 * duration_ms / 1024)).collect();
                        v["join_at"] = json!(at);
                    }
                    _ => {}
                }
            } else {
                v["path"] = json!(format!("p{}", ps[0]));
            }
            if f.udp {
                v["transport"] = json!("udp");
            }
            if let Some(t) = &f.tcp {
                v["tcp"] = json!({
                    "mss": 64 + t.mss as u64 % 9000,
                    "initial_window": 1 + t.initial_window as u64 % 64,
                    "min_rto": format!("{}ms", 1 + t.min_rto as u64 * 4),
                    // false, true, or Linux's delayed ACKs
                    "delayed_ack": if t.delayed_ack && t.snd_buf % 2 == 0 { json!("linux") } else { json!(t.delayed_ack) },
                    "sack": t.rcv_buf % 4 != 0,
                    "rcv_buf": format!("{}B", 9064 + t.rcv_buf as u64 * 64),
                    "snd_buf": format!("{}B", 9064 + t.snd_buf as u64 * 64),
                });
            }
            v
        })
        .collect();
    let mut metrics = json!({"trace": inp.trace, "warmup": format!("{}ms", inp.warmup as u64 * duration_ms / 512)});
    match inp.interval {
        None => metrics["interval"] = json!(false),
        Some(iv) => metrics["interval"] = json!(format!("{}ms", 1 + iv as u64)),
    }
    Some(json!({
        "name": "fuzz",
        "duration": format!("{duration_ms}ms"),
        "seed": inp.seed as u64,
        "metrics": metrics,
        "link": links,
        "path": paths,
        "flow": flows,
    }))
}

fn finite(x: f64, what: &str) {
    assert!(x.is_finite() && x >= 0.0, "{what} = {x}");
}

fuzz_target!(|inp: Input| {
    let Some(v) = scenario(&inp) else { return };
    let s = match Scenario::from_value(&v, "fuzz") {
        Ok(s) => s,
        // some combinations are invalid by design (a UDP flow with a bulk application, a
        // backup on a single path); the reader must say so, not panic
        Err(e) => {
            assert!(!e.message.is_empty());
            return;
        }
    };
    let est = s.estimate();
    if est.events > MAX_EVENTS || est.memory_bytes > MAX_MEMORY {
        return;
    }
    let out = Simulation::new(&s).with_invariant_checks(true).run();
    let sum = &out.summary;
    for f in &sum.flows {
        assert!(f.bytes_delivered <= f.bytes_written, "{}: delivered {} > written {}", f.flow, f.bytes_delivered, f.bytes_written);
        finite(f.goodput_bps, "goodput_bps");
        finite(f.throughput_bps, "throughput_bps");
        finite(f.retransmit_rate, "retransmit_rate");
        finite(f.rcv_blocked_s, "rcv_blocked_s");
        assert!(f.retransmits <= f.segments_sent, "{}: {} retransmits of {} segments", f.flow, f.retransmits, f.segments_sent);
    }
    for l in &sum.links {
        let gone = l.packets_delivered + l.queue_drops + l.loss_drops + l.down_drops;
        assert!(gone <= l.packets_offered, "link {} {}: {gone} delivered or dropped of {} offered", l.link, l.direction, l.packets_offered);
        assert!((0.0..=1.0 + 1e-9).contains(&l.utilization), "link {} utilization {}", l.link, l.utilization);
    }
    // the estimate is an upper estimate: a run far beyond it could outgrow its warning
    assert!(sum.events <= 4 * est.events + 20_000, "{} events, estimated {}", sum.events, est.events);
    if let Some(t) = &out.trace {
        assert!(t.rows() as u64 <= 4 * est.trace_rows + 20_000, "{} trace rows, estimated {}", t.rows(), est.trace_rows);
    }
    serde_json::to_string(sum).expect("a summary serialises");
    // determinism, on the smaller runs
    if est.events < 20_000 {
        let again = Simulation::new(&s).run();
        assert_eq!(serde_json::to_string(sum).unwrap(), serde_json::to_string(&again.summary).unwrap());
    }
});
