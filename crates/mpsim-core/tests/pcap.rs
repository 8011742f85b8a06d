//! Packet captures of whole runs: a finite transfer ends with a FIN on every subflow (and a
//! DATA_FIN on Multipath TCP) once everything is acknowledged; an endless one does not.

use mpsim_core::{Scenario, Simulation};

/// TCP flags and options of each TCP packet in a pcap file (raw IPv4 framing).
fn tcp_packets(pcap: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let ip = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        let ihl = (ip[0] & 0xf) as usize * 4;
        if ip[9] != 6 {
            continue;
        }
        let tcp = &ip[ihl..];
        let doff = (tcp[12] >> 4) as usize * 4;
        out.push((tcp[13], tcp[20..doff].to_vec()));
    }
    out
}

/// The DSS option's flags byte, if the options hold one (kind 30, subtype 2).
fn dss_flags(opts: &[u8]) -> Option<u8> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                if kind == 30 && opts.get(i + 2).is_some_and(|s| s >> 4 == 2) {
                    return opts.get(i + 3).copied();
                }
                i += len.max(2);
            }
        }
    }
    None
}

fn run(app: &str) -> Vec<(u8, Vec<u8>)> {
    let text = format!(
        r#"
duration = "10s"
[metrics]
pcap = true
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "b"
rate = "10Mbps"
delay = "30ms"
[[path]]
name = "p"
links = ["a"]
[[path]]
name = "q"
links = ["b"]
[[flow]]
name = "mp"
paths = ["p", "q"]
scheduler = "lowest_rtt"
app = {app}
"#
    );
    let s = Scenario::from_toml(&text, "pcap.toml").unwrap();
    let out = Simulation::new(&s).run();
    tcp_packets(&out.pcap[0].bytes)
}

const FIN: u8 = 0x01;
const DATA_FIN: u8 = 0x10;

#[test]
fn a_finite_transfer_ends_with_a_fin_per_subflow_and_a_data_fin() {
    let packets = run(r#"{ kind = "bulk", bytes = 300000 }"#);
    let fins: Vec<&(u8, Vec<u8>)> = packets.iter().filter(|(flags, _)| flags & FIN != 0).collect();
    assert_eq!(fins.len(), 2, "one FIN on each subflow");
    for (_, opts) in &fins {
        assert!(dss_flags(opts).is_some_and(|f| f & DATA_FIN != 0), "the FIN carries a DSS with DATA_FIN");
    }
    // nothing of the transfer comes after them
    let first_fin = packets.iter().position(|(flags, _)| flags & FIN != 0).unwrap();
    assert!(packets[first_fin..].iter().all(|(flags, _)| flags & FIN != 0), "FINs are the last packets");
}

#[test]
fn an_endless_transfer_has_no_fin() {
    let packets = run(r#"{ kind = "bulk" }"#);
    assert!(packets.len() > 1000);
    assert!(packets.iter().all(|(flags, _)| flags & FIN == 0));
}
