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

/// (IP ECN field, TCP flags, TCP payload length) of a TCP packet.
type TcpEcn = (u8, u8, usize);
/// (IP ECN field, chunk types) of an SCTP packet.
type SctpEcn = (u8, Vec<u8>);

/// What the ECN view shows of each TCP and each SCTP packet of a pcap file.
fn ecn_view(pcap: &[u8]) -> (Vec<TcpEcn>, Vec<SctpEcn>) {
    let (mut tcp, mut sctp) = (Vec::new(), Vec::new());
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let ip = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        let ihl = (ip[0] & 0xf) as usize * 4;
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        let l4 = &ip[ihl..];
        match ip[9] {
            6 => tcp.push((ip[1] & 3, l4[13], total - ihl - (l4[12] >> 4) as usize * 4)),
            132 => {
                let mut types = Vec::new();
                let mut i = 12;
                while i + 4 <= l4.len() {
                    types.push(l4[i]);
                    let len = u16::from_be_bytes([l4[i + 2], l4[i + 3]]) as usize;
                    i += len.div_ceil(4).max(1) * 4;
                }
                sctp.push((ip[1] & 3, types));
            }
            _ => {}
        }
    }
    (tcp, sctp)
}

const SYN: u8 = 0x02;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

#[test]
fn an_ecn_flow_shows_ect_cwr_and_ece_as_they_are() {
    let text = |transport: &str, ecn: &str| {
        format!(
            r#"
duration = "20s"
[metrics]
pcap = true
[tcp]
ecn = {ecn}
[[link]]
name = "a"
rate = "10Mbps"
delay = "20ms"
queue = "1000pkt"
aqm = {{ kind = "codel", ecn = true }}
[[path]]
name = "p"
links = ["a"]
[[flow]]
name = "f"
path = "p"
{transport}
"#
        )
    };
    let out = Simulation::new(&Scenario::from_toml(&text("", "true"), "ecn.toml").unwrap()).run();
    let (tcp, _) = ecn_view(&out.pcap[0].bytes);
    // the ECN-setup SYN (ECE and CWR) and SYN/ACK (ECE), neither ECT
    assert_eq!((tcp[0].0, tcp[0].1 & (SYN | ECE | CWR)), (0, SYN | ECE | CWR));
    assert_eq!((tcp[1].0, tcp[1].1 & (SYN | ECE | CWR)), (0, SYN | ECE));
    let data: Vec<_> = tcp.iter().filter(|p| p.2 > 0).collect();
    let acks: Vec<_> = tcp.iter().skip(2).filter(|p| p.2 == 0).collect();
    // data ECT(0) (retransmissions would be Not-ECT: there are none), ACKs Not-ECT
    assert!(data.iter().all(|p| p.0 == 2), "data is ECT(0)");
    assert!(acks.iter().all(|p| p.0 == 0), "ACKs are Not-ECT");
    let cwr = data.iter().filter(|p| p.1 & CWR != 0).count() as u64;
    let ece = acks.iter().filter(|p| p.1 & ECE != 0).count();
    let reductions = out.summary.flows[0].ecn_reductions.unwrap();
    assert!(reductions > 0 && cwr == reductions, "{cwr} CWR flags for {reductions} reductions");
    assert!(ece as u64 >= reductions, "{ece} ACKs with ECE");
    // without ECN: no ECN bits anywhere
    let out = Simulation::new(&Scenario::from_toml(&text("", "false"), "plain.toml").unwrap()).run();
    let (tcp, _) = ecn_view(&out.pcap[0].bytes);
    assert!(tcp.iter().all(|p| p.0 == 0 && p.1 & (ECE | CWR) == 0));
    // SCTP: ECT(0) DATA, ECNE chunks (12) on SACKs, CWR chunks (13) on DATA
    let out = Simulation::new(&Scenario::from_toml(&text("transport = \"sctp\"\nsctp = { ecn = true }", "false"), "s.toml").unwrap()).run();
    let (_, sctp) = ecn_view(&out.pcap[0].bytes);
    let data: Vec<_> = sctp.iter().filter(|p| p.1.contains(&0)).collect();
    assert!(!data.is_empty() && data.iter().all(|p| p.0 == 2));
    assert!(sctp.iter().any(|p| p.1.contains(&12) && p.1.contains(&3)), "an ECNE beside a SACK");
    assert!(data.iter().any(|p| p.1[0] == 13), "a CWR ahead of DATA");
}
