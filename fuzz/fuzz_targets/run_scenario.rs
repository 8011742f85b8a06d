//! Structure-aware: builds a random scenario of a few links, paths and flows (every
//! scheduler, controller, application (a media stream's `backlog` included), loss model,
//! outage and TCP setting is reachable, MPTCP-rec's receiver logic with every key of its
//! `mptcp_rec` table (the `fixed_rates` control included), links' congestion
//! warning, QUIC connections (one path and multipath), and SCTP associations, with and
//! without CMT, with every key of their `sctp` table, their controllers and schedulers),
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
    "lowest_rtt",
    "lowest_rtt_plain",
    "round_robin",
    "redundant",
    "single_path",
    "blest",
    "ecf",
    "otias",
    "dqs",
    "dqs_exact",
    "dqs_backoff",
    "dqs_ahead",
    "dqs_exact_ahead",
    "dqs_backoff_ahead",
    "dqs_round_robin",
    "po_mptcp",
    "po_mptcp_fifo",
    "po_mptcp_in_order",
    "po_mptcp_in_order_fifo",
    "po_mptcp_rr",
    "po_mptcp_rr_fifo",
    "in_order",
    "linux_upstream",
    "mptcp_rec",
];
const CONTROLLERS: &[&str] = &["reno", "lia", "olia", "balia", "receiver_rate", "cubic", "westwood", "new_jersey", "bbr"];
/// SCTP's controllers, and names it must refuse with a message.
const SCTP_CONTROLLERS: &[&str] = &["rfc4960", "newreno", "lia", "olia", "jsctp", "jsctp_abe", "reno", "cubic"];
/// CMT's schedulers, and names it must refuse with a message.
const SCTP_SCHEDULERS: &[&str] = &["round_robin", "lowest_rtt", "blest", "ecf", "redundant", "mptcp_rec"];
const RTX_POLICIES: &[&str] = &["same", "asap", "cwnd", "ssthresh", "sooner"];

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
    // added after the kept corpus was made: at the end, so that its inputs decode as before
    // (with these left out)
    /// Per link: its congestion warning (threshold in packets or bytes, weight).
    congestion_warning: Vec<Option<(u8, bool, u8)>>,
    /// Per flow: SCTP instead of TCP (or UDP).
    sctp: Vec<Option<Sctp>>,
    /// Per link: its jitter in units of 50 us (0: none).
    jitter: Vec<u8>,
    /// Per link: its queue discipline (which, a parameter, the reverse direction too).
    aqm: Vec<Option<(u8, u8, bool)>>,
    /// Per link: a schedule of a few steps (time gap, rate, delay, uniform loss); a rate
    /// of 0 is drawn too (a pause; refused, with a message, when it is the last rate).
    schedule: Vec<Vec<Step>>,
}

#[derive(Arbitrary, Debug)]
struct Step {
    gap: u8,
    rate: Option<u8>,
    delay: Option<u8>,
    loss: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct Sctp {
    cmt: bool,
    cc: u8,
    scheduler: Option<u8>,
    /// Which keys of the `sctp` table are given (one bit each, in the order of `sctp()`).
    keys: u32,
    /// bundling, delayed_sack, sfr, cuc, dac, timestamps, nr_sack, cmt_pf, jsctp_ignore_zero;
    /// bits 9-10 pick jsctp_losses
    flags: u16,
    chunk: u16,
    mtu: u16,
    rto_initial: u8,
    rto_min: u8,
    rto_max: u8,
    fast_rtx_threshold: u8,
    path_max_retrans: u8,
    association_max_retrans: u16,
    sack_freq: u8,
    sack_delay: u8,
    rcv_buf: u16,
    snd_buf: u16,
    rtx_policy: u8,
    primary: u8,
    hb_interval: u8,
    jsctp_k: u16,
    /// Keys an SCTP flow must refuse (tcp, join_delay) stay when set.
    keep_tcp_keys: bool,
}

/// The `sctp` table: each key given or left out; out-of-range values are reachable, the
/// reader must refuse them with a message.
fn sctp(c: &Sctp, ps: &[usize]) -> Value {
    let flag = |i: u32| c.flags & (1 << i) != 0;
    let all: Vec<(&str, Value)> = vec![
        ("chunk", json!(format!("{}B", c.chunk as u64 % 9000))),
        ("mtu", json!(format!("{}B", 200 + c.mtu as u64 % 9000))),
        ("bundling", json!(flag(0))),
        ("initial_rto", json!(format!("{}ms", 10 + c.rto_initial as u64 * 12))),
        ("min_rto", json!(format!("{}ms", 1 + c.rto_min as u64 * 4))),
        ("max_rto", json!(format!("{}ms", 50 + c.rto_max as u64 * 40))),
        ("fast_rtx_threshold", json!(c.fast_rtx_threshold as u64 % 24)),
        ("path_max_retrans", json!(c.path_max_retrans as u64 % 110)),
        ("association_max_retrans", json!(c.association_max_retrans as u64 % 1100)),
        ("delayed_sack", json!(flag(1))),
        ("sack_freq", json!(c.sack_freq as u64 % 18)),
        ("sack_delay", json!(format!("{}ms", c.sack_delay as u64 * 3))),
        ("rcv_buf", json!(format!("{}B", 1000 + c.rcv_buf as u64 * 64))),
        ("snd_buf", json!(format!("{}B", 1000 + c.snd_buf as u64 * 64))),
        ("sfr", json!(flag(2))),
        ("cuc", json!(flag(3))),
        ("dac", json!(flag(4))),
        ("rtx_policy", json!(RTX_POLICIES[c.rtx_policy as usize % RTX_POLICIES.len()])),
        // one of the flow's paths, or one it does not have (refused)
        ("primary", json!(format!("p{}", ps.get(c.primary as usize % (ps.len() + 1)).copied().unwrap_or(9)))),
        ("timestamps", json!(flag(5))),
        ("nr_sack", json!(flag(6))),
        ("ecn", json!(flag(9))),
        ("cmt_pf", json!(flag(7))),
        ("hb_interval", json!(format!("{}ms", c.hb_interval as u64 * 20))),
        ("jsctp_k", json!(format!("{}B", c.jsctp_k as u64 * 20))),
        ("jsctp_ignore_zero", json!(flag(8))),
        // JSCTP's loss rule, and a name it must refuse
        ("jsctp_losses", json!(["jitter", "wireless", "congestion", "random"][(c.flags >> 9) as usize % 4])),
    ];
    let mut t = serde_json::Map::new();
    for (i, (k, v)) in all.into_iter().enumerate() {
        if c.keys & (1 << i) != 0 {
            t.insert(k.to_string(), v);
        }
    }
    Value::Object(t)
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
    /// The fixed-rate control: rates for some paths (a count that differs from the flow's
    /// paths is refused)
    fixed_rates: Option<Vec<u8>>,
}

fn rec(r: &Rec) -> Value {
    let mut v = json!({
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
    });
    if let Some(rates) = &r.fixed_rates {
        v["fixed_rates"] = json!(rates.iter().take(9).map(|&x| rate(x)).collect::<Vec<_>>());
    }
    v
}

#[derive(Arbitrary, Debug)]
enum App {
    Bulk(Option<u16>),
    Cbr { rate: u8, packet: u16 },
    OnOff { rate: u8, packet: u16, on: u8, off: u8, constant: bool },
    Vbr { rate: u8, preset: u8, vary: Option<(u8, u8, u8)> },
    Media { fps: u8, gop: Vec<u8>, deadline: Option<u8>, backlog: Option<u16> },
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

/// An application's rate: as a link's up to about 176 Mbit/s, then 1 Gbit/s to 1.6 Tbit/s,
/// where a source ticks far faster than any path carries (the estimate must count it).
fn app_rate(r: u8) -> String {
    if r >= 232 {
        format!("{}bps", (1e9 * 10f64.powf((r - 232) as f64 / 7.5)).round() as u64)
    } else {
        rate(r)
    }
}

/// An on or off period: 4 ms steps, then 1 ns to about 0.6 ms on a log scale.
fn period(p: u8, at_least: u64) -> String {
    if p >= 224 {
        format!("{}ns", 10f64.powf((p - 224) as f64 / 5.5).round() as u64)
    } else {
        format!("{}ms", at_least + p as u64 * 4)
    }
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
        App::Cbr { rate: r, packet } => json!({"kind": "cbr", "rate": app_rate(*r), "packet": 1 + *packet as u64 % 3000}),
        App::OnOff { rate: r, packet, on, off, constant } => json!({
            "kind": "onoff", "rate": app_rate(*r), "packet": 1 + *packet as u64 % 3000,
            "on": period(*on, 1), "off": period(*off, 0),
            "distribution": if *constant { "constant" } else { "exponential" },
        }),
        App::Vbr { rate: r, preset, vary } => {
            let sizes = ["cmtqa", "imix", "full"][*preset as usize % 3];
            let mut v = json!({"kind": "vbr", "rate": app_rate(*r), "sizes": sizes});
            if let Some((lo, hi, period)) = vary {
                let (lo, hi) = (*lo.min(hi) as f64 / 100.0, *lo.max(hi) as f64 / 100.0);
                v["vary"] = json!({"min": lo, "max": hi, "period": format!("{}ms", 1 + *period as u64 * 10)});
            }
            v
        }
        App::Media { fps, gop, deadline, backlog } => {
            let gop: String = gop.iter().take(30).map(|&c| ['I', 'P', 'B'][c as usize % 3]).collect();
            let mut v = json!({"kind": "media", "fps": 1 + *fps as u64 % 60});
            if !gop.is_empty() {
                v["gop"] = json!(gop);
            }
            if let Some(d) = deadline {
                v["deadline"] = json!(format!("{}ms", 10 + *d as u64 * 4));
            }
            if let Some(b) = backlog {
                v["backlog"] = json!(format!("{}B", *b as u64 * 64));
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
            if let Some(Some((threshold, packets, weight))) = inp.congestion_warning.get(i) {
                let threshold = if *packets { format!("{}pkt", *threshold as u64) } else { format!("{}B", *threshold as u64 * 100) };
                // weight 0 is refused, with a message
                v["congestion_warning"] = json!({"threshold": threshold, "weight": *weight as f64 / 255.0});
            }
            if let Some(&j) = inp.jitter.get(i) {
                v["jitter"] = json!(format!("{}us", j as u64 * 50));
            }
            if let Some(Some((kind, p, both))) = inp.aqm.get(i) {
                // (beside a congestion warning it is refused, with a message)
                let p = *p as u64;
                let mut a = match kind % 4 {
                    0 => json!({"kind": "codel", "target": format!("{}ms", 1 + p % 20), "interval": format!("{}ms", 10 + p)}),
                    1 => json!({"kind": "fq_codel", "flows": 1 + p % 8, "quantum": 64 + p * 8}),
                    2 => json!({"kind": "red", "min_th": format!("{}pkt", 1 + p % 10), "max_th": format!("{}pkt", 2 + p % 10 + p / 10), "gentle": p.is_multiple_of(2)}),
                    _ => json!({"kind": "pie", "target": format!("{}ms", 1 + p % 30), "derandomize": p.is_multiple_of(2)}),
                };
                // marking on or off (the disciplines' defaults otherwise)
                if kind / 4 % 3 != 2 {
                    a["ecn"] = json!(kind / 4 % 3 == 0);
                }
                if *both {
                    v["reverse_aqm"] = a.clone();
                }
                v["aqm"] = a;
            }
            if let Some(steps) = inp.schedule.get(i).filter(|s| !s.is_empty()) {
                let mut at = 0u64;
                let steps: Vec<Value> = steps
                    .iter()
                    .take(6)
                    .map(|&Step { gap, rate: r, delay: d, loss: p }| {
                        at += gap as u64 * duration_ms / 512;
                        let mut st = json!({"at": format!("{at}ms")});
                        if let Some(r) = r {
                            st["rate"] = json!(if r < 8 { "0".to_string() } else { rate(r) });
                        }
                        if let Some(d) = d {
                            st["delay"] = json!(format!("{}ms", d as u64 / 2));
                        }
                        if let Some(p) = p {
                            st["loss"] = json!(format!("{}%", p as f64 / 20.0));
                        }
                        st
                    })
                    .collect();
                v["schedule"] = json!(steps);
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
                        let at: Vec<String> =
                            (0..ps.len()).map(|k| format!("{}ms", k as u64 * f.start as u64 * duration_ms / 1024)).collect();
                        v["join_at"] = json!(at);
                    }
                    _ => {}
                }
            } else {
                v["path"] = json!(format!("p{}", ps[0]));
            }
            if f.udp {
                v["transport"] = json!("udp");
            } else if !f.multipath && f.scheduler % 4 == 1 {
                // a one-path flow's scheduler byte is otherwise unused: a quarter run QUIC
                v["transport"] = json!("quic");
            } else if f.multipath && f.backup.is_none() && f.scheduler / 64 == 0 && f.cc % 4 == 1 && v["scheduler"] != json!("mptcp_rec") {
                // Multipath QUIC: a quarter of the multipath flows without backups or late joins
                v["transport"] = json!("quic");
            }
            if let Some(Some(c)) = inp.sctp.get(i) {
                make_sctp(&mut v, c, &ps);
            }
            if let Some(t) = &f.tcp {
                v["tcp"] = json!({
                    "mss": 64 + t.mss as u64 % 9000,
                    "initial_window": 1 + t.initial_window as u64 % 64,
                    "min_rto": format!("{}ms", 1 + t.min_rto as u64 * 4),
                    // false, true, or Linux's delayed ACKs
                    "delayed_ack": if t.delayed_ack && t.snd_buf % 2 == 0 { json!("linux") } else { json!(t.delayed_ack) },
                    "sack": t.rcv_buf % 4 != 0,
                    "ecn": t.initial_window % 3 == 0,
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

/// Turns flow `v` (over paths `ps`) into an SCTP association.
fn make_sctp(v: &mut Value, c: &Sctp, ps: &[usize]) {
    let o = v.as_object_mut().expect("a flow is a table");
    o.insert("transport".into(), json!("sctp"));
    o.insert("cc".into(), json!(SCTP_CONTROLLERS[c.cc as usize % SCTP_CONTROLLERS.len()]));
    for k in ["scheduler", "backup", "mptcp_rec", "path", "paths"] {
        o.remove(k);
    }
    if !c.keep_tcp_keys {
        o.remove("tcp");
        o.remove("join_delay");
        o.remove("join_at");
    }
    if ps.len() > 1 {
        o.insert("paths".into(), json!(ps.iter().map(|p| format!("p{p}")).collect::<Vec<_>>()));
        o.insert("cmt".into(), json!(c.cmt));
    } else {
        o.insert("path".into(), json!(format!("p{}", ps[0])));
        if c.cmt {
            o.insert("cmt".into(), json!(true)); // refused: CMT needs several paths
        }
    }
    if let Some(sch) = c.scheduler {
        o.insert("scheduler".into(), json!(SCTP_SCHEDULERS[sch as usize % SCTP_SCHEDULERS.len()]));
    }
    if c.keys != 0 {
        o.insert("sctp".into(), sctp(c, ps));
    }
}

fn finite(x: f64, what: &str) {
    assert!(x.is_finite() && x >= 0.0, "{what} = {x}");
}

fuzz_target!(|inp: Input| {
    let Some(v) = scenario(&inp) else { return };
    // to see what an input builds (`FUZZ_SHOW_SCENARIO=1 cargo fuzz run ... INPUT`): the
    // scenario as a TOML file, which `mpsim run` takes
    if std::env::var_os("FUZZ_SHOW_SCENARIO").is_some() {
        eprintln!("{}", toml::to_string(&v).expect("a scenario value is TOML"));
    }
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
        let managed = l.aqm.as_ref().map_or(0, |a| a.aqm_drops + a.queued_at_end);
        let gone = l.packets_delivered + l.queue_drops + l.loss_drops + l.down_drops + managed;
        assert!(gone <= l.packets_offered, "link {} {}: {gone} delivered or dropped of {} offered", l.link, l.direction, l.packets_offered);
        assert!((0.0..=1.0 + 1e-9).contains(&l.utilization), "link {} utilization {}", l.link, l.utilization);
        if let Some(a) = &l.aqm {
            assert!(a.aqm_marks <= l.packets_delivered + l.loss_drops, "link {} {}: {} marks", l.link, l.direction, a.aqm_marks);
        }
    }
    // the estimate is an upper estimate: the real count is at most 4 times it (plus a margin
    // for the smallest runs), so a run cannot outgrow the budget it was checked against
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
