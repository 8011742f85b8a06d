//! A Multipath QUIC server and client on noq (n0-computer's multipath QUIC), run by
//! `mpsim kernel` inside its two network namespaces beside mpsim's own QUIC (docs/kernel.md,
//! "Multipath QUIC on a real implementation").
//!
//! `server`: accepts one connection, opens one unidirectional stream and writes to it for
//! `--duration` seconds. Every `--bin` seconds it records, per path, what the sender knows:
//! RTT, congestion window, packets and bytes sent and lost, congestion events.
//! `client`: connects to the first `--server` address, opens one more path to each further
//! one (from the address the namespace routes to it, so one path per emulated link), reads
//! the stream and records the bytes read and, per path, the UDP bytes received per bin.
//! Each side writes one JSON document (`--out`) and, with `--qlog DIR`, noq's qlog.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use noq::congestion::{CubicConfig, NewRenoConfig};
use noq::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use noq::{ClientConfig, Connection, Endpoint, PathId, PathStatus, QlogFileFactory, ServerConfig, TransportConfig, VarInt};
use serde_json::{json, Value};

/// What both sides are told.
#[derive(Debug)]
struct Args {
    role: String,
    listen: Option<SocketAddr>,
    servers: Vec<SocketAddr>,
    duration: f64,
    bin: f64,
    cc: String,
    initial_window: u64,
    max_datagram: u16,
    rcv_buf: u64,
    cert: PathBuf,
    out: PathBuf,
    qlog: Option<PathBuf>,
}

const USAGE: &str = "usage: mpsim-quicpeer server --listen ADDR:PORT | client --server ADDR:PORT [--server ADDR:PORT ...]
  --duration S --cc reno|cubic --cert FILE --out FILE [--bin S] [--initial-window BYTES]
  [--max-datagram BYTES] [--rcv-buf BYTES] [--qlog DIR]";

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut a = Args {
        role: argv.first().cloned().ok_or(USAGE)?,
        listen: None,
        servers: Vec::new(),
        duration: 0.0,
        bin: 0.1,
        cc: "cubic".into(),
        initial_window: 14_720,
        max_datagram: 1_472,
        rcv_buf: 4 << 20,
        cert: PathBuf::new(),
        out: PathBuf::new(),
        qlog: None,
    };
    if a.role != "server" && a.role != "client" {
        return Err(format!("unknown mode '{}'\n{USAGE}", a.role));
    }
    let mut it = argv[1..].iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--listen" => a.listen = Some(v.parse().map_err(|e| bad(&e))?),
            "--server" => a.servers.push(v.parse().map_err(|e| bad(&e))?),
            "--duration" => a.duration = v.parse().map_err(|e| bad(&e))?,
            "--bin" => a.bin = v.parse().map_err(|e| bad(&e))?,
            "--cc" => a.cc = v.clone(),
            "--initial-window" => a.initial_window = v.parse().map_err(|e| bad(&e))?,
            "--max-datagram" => a.max_datagram = v.parse().map_err(|e| bad(&e))?,
            "--rcv-buf" => a.rcv_buf = v.parse().map_err(|e| bad(&e))?,
            "--cert" => a.cert = v.into(),
            "--out" => a.out = v.into(),
            "--qlog" => a.qlog = Some(v.into()),
            _ => return Err(format!("unknown option {k}\n{USAGE}")),
        }
    }
    if a.duration <= 0.0 || a.bin <= 0.0 {
        return Err("--duration and --bin must be positive".into());
    }
    if a.cert.as_os_str().is_empty() || a.out.as_os_str().is_empty() {
        return Err(format!("--cert and --out are required\n{USAGE}"));
    }
    match a.role.as_str() {
        "server" if a.listen.is_none() => return Err("server needs --listen".into()),
        "client" if a.servers.is_empty() => return Err("client needs at least one --server".into()),
        _ => {}
    }
    Ok(a)
}

/// The transport both ends use: multipath on, the controller, initial window, a fixed
/// datagram size (no MTU discovery, as mpsim's packets have one size), buffers, qlog.
fn transport(a: &Args, paths: u32) -> Result<TransportConfig, String> {
    let mut t = TransportConfig::default();
    match a.cc.as_str() {
        "reno" => {
            let mut c = NewRenoConfig::default();
            c.initial_window(a.initial_window);
            t.congestion_controller_factory(Arc::new(c));
        }
        "cubic" => {
            let mut c = CubicConfig::default();
            c.initial_window(a.initial_window);
            t.congestion_controller_factory(Arc::new(c));
        }
        other => return Err(format!("--cc {other}: the peer runs reno (noq's NewReno) or cubic (noq's Cubic)")),
    }
    t.max_concurrent_multipath_paths(paths.max(2))
        .initial_mtu(a.max_datagram)
        .min_mtu(a.max_datagram)
        .mtu_discovery_config(None)
        .enable_segmentation_offload(false)
        .stream_receive_window(VarInt::from_u64(a.rcv_buf).map_err(|e| e.to_string())?)
        .receive_window(VarInt::from_u64(a.rcv_buf).map_err(|e| e.to_string())?)
        .send_window(64 << 20)
        .max_idle_timeout(Some(Duration::from_secs(30).try_into().map_err(|e| format!("{e}"))?))
        .default_path_max_idle_timeout(Some(Duration::from_secs(30)));
    if let Some(dir) = &a.qlog {
        std::fs::create_dir_all(dir).map_err(|e| format!("--qlog {}: {e}", dir.display()))?;
        t.qlog_factory(Arc::new(QlogFileFactory::new(dir.clone()).with_prefix(&a.role)));
    }
    Ok(t)
}

fn path_record(conn: &Connection, id: PathId, t: f64) -> Option<Value> {
    let s = conn.path_stats(id)?;
    let remote = conn.path(id).and_then(|p| p.remote_address().ok()).map(|r| r.ip().to_string());
    Some(json!({
        "t": t, "path_id": id.to_string(), "remote": remote,
        "rtt_ms": s.rtt.as_secs_f64() * 1e3, "cwnd": s.cwnd,
        "sent_packets": s.sent_packets, "sent_bytes": s.sent_bytes,
        "lost_packets": s.lost_packets, "lost_bytes": s.lost_bytes,
        "congestion_events": s.congestion_events, "spurious_congestion_events": s.spurious_congestion_events,
        "udp_rx_bytes": s.udp_rx.bytes, "udp_tx_bytes": s.udp_tx.bytes, "mtu": s.current_mtu,
    }))
}

/// Per path id seen so far, one record per bin (path ids are dense from 0).
fn sample(conn: &Connection, t: f64, into: &mut BTreeMap<u32, Vec<Value>>, most: u32) {
    for n in 0..most {
        if let Some(r) = path_record(conn, PathId::from(n), t) {
            into.entry(n).or_default().push(r);
        }
    }
}

async fn server(a: Args) -> Result<Value, String> {
    let key = rcgen::generate_simple_self_signed(vec!["mpsim-quicpeer".into()]).map_err(|e| e.to_string())?;
    let cert = CertificateDer::from(key.cert);
    std::fs::write(&a.cert, cert.as_ref()).map_err(|e| format!("{}: {e}", a.cert.display()))?;
    let pk = PrivatePkcs8KeyDer::from(key.signing_key.serialize_der());
    let mut cfg = ServerConfig::with_single_cert(vec![cert], pk.into()).map_err(|e| e.to_string())?;
    cfg.transport_config(Arc::new(transport(&a, 8)?));
    let ep = Endpoint::server(cfg, a.listen.expect("checked")).map_err(|e| e.to_string())?;
    println!("listening");
    let incoming = ep.accept().await.ok_or("the endpoint closed")?;
    let conn = incoming.await.map_err(|e| format!("handshake: {e}"))?;
    let start = Instant::now();
    let mut stream = conn.open_uni().await.map_err(|e| e.to_string())?;
    // the bulk writer: as fast as the stream takes it, until the end
    let written = Arc::new(AtomicU64::new(0));
    let count = written.clone();
    let writer = tokio::spawn(async move {
        let chunk = Bytes::from(vec![0u8; 256 * 1024]);
        loop {
            if let Err(e) = stream.write_chunk(chunk.clone()).await {
                return e.to_string();
            }
            count.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
    });
    let mut paths = BTreeMap::new();
    let end = start + Duration::from_secs_f64(a.duration);
    let mut next = start;
    while next < end {
        tokio::time::sleep_until(next.into()).await;
        sample(&conn, start.elapsed().as_secs_f64(), &mut paths, 8);
        next += Duration::from_secs_f64(a.bin);
    }
    tokio::time::sleep_until(end.into()).await;
    sample(&conn, start.elapsed().as_secs_f64(), &mut paths, 8);
    let error = if writer.is_finished() {
        writer.await.ok()
    } else {
        writer.abort();
        None
    };
    let written = written.load(Ordering::Relaxed);
    conn.close(VarInt::from_u32(0), b"done");
    let stats = conn.stats();
    ep.wait_idle().await;
    Ok(json!({
        "role": "server", "written_bytes": written, "error": error, "multipath": conn.is_multipath_enabled(),
        "lost_packets": stats.lost_packets, "sent_packets": stats.sent_packets,
        "paths": paths.into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect::<serde_json::Map<_, _>>(),
    }))
}

async fn client(a: Args) -> Result<Value, String> {
    let cert = std::fs::read(&a.cert).map_err(|e| format!("{}: {e}", a.cert.display()))?;
    let mut roots = noq::rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(cert)).map_err(|e| e.to_string())?;
    let mut cfg = ClientConfig::with_root_certificates(Arc::new(roots)).map_err(|e| e.to_string())?;
    let n = a.servers.len() as u32;
    cfg.transport_config(Arc::new(transport(&a, n)?));
    let ep = Endpoint::client("0.0.0.0:0".parse().expect("address")).map_err(|e| e.to_string())?;
    ep.set_default_client_config(cfg);
    let start = Instant::now();
    let conn = ep.connect(a.servers[0], "mpsim-quicpeer").map_err(|e| e.to_string())?.await.map_err(|e| format!("handshake: {e}"))?;
    let established = start.elapsed().as_secs_f64();
    let mut opened = Vec::new();
    if n > 1 && !conn.is_multipath_enabled() {
        return Err("the server did not negotiate multipath".into());
    }
    for s in &a.servers[1..] {
        // a path can be opened once the server has issued connection IDs for it (its
        // PATH_NEW_CONNECTION_ID, just after the handshake): until then the attempt is
        // refused at once, and is made again every 5 ms for up to 2 s
        let mut tries = 0;
        let outcome = loop {
            let p = conn.open_path(*s, PathStatus::Available);
            if let Some(id) = p.path_id() {
                // the path validates in the background; its Established event is not awaited
                tokio::spawn(p);
                break json!({"path_id": id.to_string(), "after_s": start.elapsed().as_secs_f64()});
            }
            let why = match p.await {
                Err(e) => e.to_string(),
                Ok(_) => "refused".into(),
            };
            tries += 1;
            if tries >= 400 {
                break json!({"error": why});
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        opened.push(json!({"server": s.ip().to_string(), "tries": tries, "outcome": outcome}));
    }
    let mut recv = conn.accept_uni().await.map_err(|e| e.to_string())?;
    let nbins = (a.duration / a.bin).ceil() as usize + 1;
    let mut bins = vec![0u64; nbins];
    let mut read: u64 = 0;
    let mut paths = BTreeMap::new();
    let mut next = start;
    // the client stops reading at the end; the server writes a little longer, so the pipe stays full
    let hard_end = start + Duration::from_secs_f64(a.duration);
    let mut error = None;
    loop {
        let now = Instant::now();
        if now >= hard_end {
            break;
        }
        if now >= next {
            sample(&conn, start.elapsed().as_secs_f64(), &mut paths, n.max(1) + 2);
            next += Duration::from_secs_f64(a.bin);
        }
        let wait = next.saturating_duration_since(Instant::now());
        tokio::select! {
            r = recv.read_chunk(1 << 20) => match r {
                Ok(Some(c)) => {
                    read += c.len() as u64;
                    let b = (start.elapsed().as_secs_f64() / a.bin) as usize;
                    if b < nbins { bins[b] += c.len() as u64; }
                }
                Ok(None) => break,
                Err(e) => { error = Some(e.to_string()); break; }
            },
            _ = tokio::time::sleep(wait) => {}
        }
    }
    sample(&conn, start.elapsed().as_secs_f64(), &mut paths, n.max(1) + 2);
    conn.close(VarInt::from_u32(0), b"done");
    ep.wait_idle().await;
    Ok(json!({
        "role": "client", "read_bytes": read, "bins": bins, "bin_s": a.bin, "established_s": established,
        "error": error, "multipath": conn.is_multipath_enabled(), "opened": opened,
        "paths": paths.into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect::<serde_json::Map<_, _>>(),
    }))
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--version") {
        println!("mpsim-quicpeer {} (noq 1.4.0)", env!("CARGO_PKG_VERSION"));
        return;
    }
    let a = match parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mpsim-quicpeer: {e}");
            std::process::exit(2);
        }
    };
    let _ = noq::rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let out = a.out.clone();
    let res = rt.block_on(async move {
        if a.role == "server" {
            server(a).await
        } else {
            client(a).await
        }
    });
    match res {
        Ok(v) => {
            if let Err(e) = std::fs::write(&out, v.to_string()) {
                eprintln!("mpsim-quicpeer: {}: {e}", out.display());
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("mpsim-quicpeer: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args, String> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_and_refuses() {
        let a = args("client --server 10.0.0.2:4433 --server 10.0.1.2:4433 --duration 5 --cc reno --cert c --out o").unwrap();
        assert_eq!(a.servers.len(), 2);
        assert_eq!(a.cc, "reno");
        assert!(args("client --duration 5 --cert c --out o").unwrap_err().contains("--server"));
        assert!(args("peer --duration 5").unwrap_err().contains("unknown mode"));
        assert!(args("server --listen 0.0.0.0:1 --duration 0 --cert c --out o").is_err());
        let mut a = args("server --listen 0.0.0.0:1 --duration 1 --cc bbr --cert c --out o").unwrap();
        assert!(transport(&a, 1).unwrap_err().contains("reno"));
        a.cc = "cubic".into();
        assert!(transport(&a, 1).is_ok());
    }
}
