//! mpsim-linkemu: emulates a scenario's paths between pairs of TUN devices.
//!
//! Usage: `mpsim-linkemu --config FILE [--report FILE] [--duration SECONDS] [--no-realtime]`,
//! `mpsim-linkemu --version`,
//! or `mpsim-linkemu --describe SCENARIO.json` to print, as JSON, the scenario as mpsim reads
//! it (defaults filled in, units resolved): what the kernel runner maps onto Linux.
//!
//! The configuration is JSON: `{"scenario": {...}, "seed": N, "bin_ms": 100,
//! "paths": [{"path": "p0", "client_tun": "mpk0c", "server_tun": "mpk0s"}, ...],
//! "origin_ns": T}`, where `scenario` is an mpsim scenario (the same keys as a scenario file)
//! whose links give each path its rate, delay, queue and loss, and `origin_ns` (optional) the
//! CLOCK_MONOTONIC time of the emulator's time zero: the run's start, where traces and
//! schedules begin, as a simulation's links begin at its time 0 (default: when the emulator
//! starts; a packet that arrives before a later time zero is taken in at time zero). The
//! emulator creates the TUN devices, prints `ready` and the CLOCK_MONOTONIC time of its time
//! zero on standard output, and forwards packets
//! until it receives SIGINT, SIGTERM or SIGHUP, its standard input is closed (the process
//! that started it is gone), or the duration has passed. It then writes its report (per-path
//! counters, delivered bytes per bin, lateness of deliveries, CPU time) as JSON. The TUN
//! devices vanish with the process, in whatever namespace they were moved to.

mod describe;
mod emu;
mod sys;

use emu::{Emulator, PathPort};
use mpsim_core::scenario::Scenario;
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;

const TOKEN_SIGNAL: u64 = u64::MAX;
const TOKEN_TIMER: u64 = u64::MAX - 1;
const TOKEN_STDIN: u64 = u64::MAX - 2;

struct Args {
    config: String,
    report: Option<String>,
    duration_s: Option<f64>,
    realtime: bool,
    describe: Option<String>,
    version: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { config: String::new(), report: None, duration_s: None, realtime: true, describe: None, version: false };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        match k.as_str() {
            "--config" => a.config = it.next().ok_or("--config needs a file")?,
            "--report" => a.report = Some(it.next().ok_or("--report needs a file")?),
            "--duration" => {
                let v = it.next().ok_or("--duration needs seconds")?;
                a.duration_s = Some(v.parse().map_err(|_| format!("--duration: not a number: {v}"))?);
            }
            "--no-realtime" => a.realtime = false,
            "--describe" => a.describe = Some(it.next().ok_or("--describe needs a scenario file")?),
            "-h" | "--help" => return Err(String::new()),
            "--version" => a.version = true,
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if a.config.is_empty() && a.describe.is_none() && !a.version {
        return Err("--config is required".into());
    }
    Ok(a)
}

/// The emulator's time zero: the configuration's `origin_ns`, else `now`.
fn origin(cfg: &Value, now: u64) -> Result<u64, String> {
    match cfg.get("origin_ns") {
        None => Ok(now),
        Some(v) => v.as_u64().ok_or_else(|| format!("config: `origin_ns` must be a CLOCK_MONOTONIC time in ns, not {v}")),
    }
}

fn ports(cfg: &Value, s: &Scenario) -> Result<Vec<PathPort>, String> {
    let list = cfg.get("paths").and_then(|v| v.as_array()).ok_or("config: `paths` must be a list")?;
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let get = |k: &str| p.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or(format!("config: paths[{i}].{k} missing"));
        let name = get("path")?;
        let spec = s.paths.iter().find(|x| x.name == name).ok_or(format!("config: no path named '{name}' in the scenario"))?;
        out.push(PathPort {
            name,
            links: spec.links.clone(),
            client_tun: get("client_tun")?,
            server_tun: get("server_tun")?,
            client_fd: -1,
            server_fd: -1,
        });
    }
    Ok(out)
}

fn run(a: &Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&a.config).map_err(|e| format!("{}: {e}", a.config))?;
    let cfg: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", a.config))?;
    let sv = cfg.get("scenario").ok_or("config: `scenario` missing")?;
    let s = Scenario::from_value(sv, &a.config).map_err(|e| e.to_string())?;
    let seed = cfg.get("seed").and_then(|v| v.as_u64()).unwrap_or(s.seed);
    let bin_ns = cfg.get("bin_ms").and_then(|v| v.as_u64()).unwrap_or(100).max(1) * 1_000_000;
    let mut ports = ports(&cfg, &s)?;

    let ep = sys::epoll().map_err(|e| e.to_string())?;
    let sig = sys::signalfd().map_err(|e| e.to_string())?;
    sys::epoll_add(ep, sig, TOKEN_SIGNAL).map_err(|e| e.to_string())?;
    let timer = sys::timerfd().map_err(|e| e.to_string())?;
    sys::epoll_add(ep, timer, TOKEN_TIMER).map_err(|e| e.to_string())?;
    // stdin closing means whoever started us is gone: stop (a terminal's stdin never closes)
    if unsafe { libc::isatty(0) } == 0 {
        let _ = sys::epoll_add(ep, 0, TOKEN_STDIN);
    }
    for (i, p) in ports.iter_mut().enumerate() {
        p.client_fd = sys::open_tun(&p.client_tun).map_err(|e| e.to_string())?;
        p.server_fd = sys::open_tun(&p.server_tun).map_err(|e| e.to_string())?;
        // token 2·i + d: a packet read on the client device goes client to server (route 2·i)
        sys::epoll_add(ep, p.client_fd, 2 * i as u64).map_err(|e| e.to_string())?;
        sys::epoll_add(ep, p.server_fd, 2 * i as u64 + 1).map_err(|e| e.to_string())?;
    }
    let realtime = a.realtime && sys::realtime();
    let origin = origin(&cfg, sys::now_ns())?;
    let mut emu = Emulator::new(&s, seed, ports, origin, bin_ns);
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready {origin} realtime={realtime}");
        let _ = out.flush();
    }
    let end = a.duration_s.map(|d| (d * 1e9) as u64);
    let mut buf = vec![0u8; 65_536];
    let mut tokens = Vec::new();
    let mut armed = 0u64;
    'outer: loop {
        emu.run_due();
        let mut next = emu.next_due().unwrap_or(u64::MAX);
        if let Some(e) = end {
            if emu.now() >= e {
                break;
            }
            next = next.min(e);
        }
        let at = if next == u64::MAX { 0 } else { origin + next.max(1) };
        if at != armed {
            sys::arm_timer(timer, at);
            armed = at;
        }
        sys::epoll_wait(ep, &mut tokens);
        for &tok in &tokens {
            match tok {
                TOKEN_SIGNAL => break 'outer,
                TOKEN_TIMER => {
                    sys::drain(timer);
                    armed = 0;
                }
                TOKEN_STDIN => {
                    let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        break 'outer;
                    }
                }
                t => {
                    let route = t as usize;
                    let port = &emu.ports[route / 2];
                    let fd = if route.is_multiple_of(2) { port.client_fd } else { port.server_fd };
                    while let Some(n) = sys::read_packet(fd, &mut buf).map_err(|e| format!("reading a TUN device: {e}"))? {
                        let now = emu.now();
                        emu.inject(route, &buf[..n], now);
                    }
                }
            }
        }
    }
    let wall = sys::now_ns() - origin;
    let rep = emu.report(realtime, wall);
    let text = serde_json::to_string(&rep).unwrap();
    match &a.report {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{p}: {e}"))?,
        None => println!("{text}"),
    }
    Ok(())
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("mpsim-linkemu: {e}");
            }
            eprintln!(
                "usage: mpsim-linkemu --config FILE [--report FILE] [--duration SECONDS] [--no-realtime] | --describe SCENARIO | --version"
            );
            return ExitCode::from(2);
        }
    };
    if a.version {
        println!("mpsim-linkemu {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if let Some(f) = &a.describe {
        return match describe::describe_file(f) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        };
    }
    match run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mpsim-linkemu: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::origin;
    use serde_json::json;

    #[test]
    fn time_zero_is_the_configured_origin_else_the_start() {
        assert_eq!(origin(&json!({"seed": 1}), 7), Ok(7));
        assert_eq!(origin(&json!({"origin_ns": 5_000_000_000u64}), 7), Ok(5_000_000_000));
        let e = origin(&json!({"origin_ns": "soon"}), 7).unwrap_err();
        assert!(e.contains("origin_ns"), "{e}");
    }
}
