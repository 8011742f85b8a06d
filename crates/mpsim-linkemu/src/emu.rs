//! The emulator: mpsim's own link model (`mpsim_core::net::Link`: drop-tail queue in bytes or
//! packets, serialisation at the rate, constant delay plus the link's jitter if it has one,
//! loss after transmission) driven in real time by packets read from TUN devices.
//!
//! Every path has two directions, as in the simulator: client to server crosses the path's
//! links in order (their forward halves), server to client crosses them in reverse (their
//! reverse halves, with the link's `reverse_loss`). A packet read from a TUN device enters the
//! first link at its read time; the model then gives, without ever looking at the clock, the
//! instant it reaches each following link and finally the far end. That instant is its due
//! time: a single thread sleeps on an absolute CLOCK_MONOTONIC timer until the earliest due
//! time, writes the packet into the other namespace's TUN device, and records how late the
//! write was. Because the model runs on due times, not on the times the thread happens to
//! wake, lateness never accumulates along a path or shifts the rate.

use crate::sys;
use mpsim_core::net::{Fate, Link};
use mpsim_core::scenario::Scenario;
use mpsim_core::time::SimTime;
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::RawFd;

/// One emulated path: its TUN devices and its two directions' link sequences.
pub struct PathPort {
    pub name: String,
    /// Indices into the scenario's links.
    pub links: Vec<usize>,
    pub client_tun: String,
    pub server_tun: String,
    pub client_fd: RawFd,
    pub server_fd: RawFd,
}

/// Counters of one direction of one path.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub read_pkts: u64,
    pub read_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub down_drops: u64,
    /// Packets the receiving stack refused.
    pub write_errors: u64,
    /// Bytes delivered per bin (by due time).
    pub bins: Vec<u64>,
    pub first_due_ns: Option<u64>,
    pub last_due_ns: u64,
}

/// Delivery lateness: histogram in 1 µs buckets up to 100 ms, plus the overflow and the max.
pub struct Lateness {
    buckets: Vec<u64>,
    over: u64,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Lateness {
    const BUCKETS: usize = 100_000;
    pub fn new() -> Lateness {
        Lateness { buckets: vec![0; Self::BUCKETS], over: 0, count: 0, sum_ns: 0, max_ns: 0 }
    }
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
        match self.buckets.get_mut((ns / 1000) as usize) {
            Some(b) => *b += 1,
            None => self.over += 1,
        }
    }
    /// The q-quantile in microseconds (upper edge of its bucket).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &b) in self.buckets.iter().enumerate() {
            seen += b;
            if seen >= rank {
                return (i + 1) as f64;
            }
        }
        self.max_ns as f64 / 1000.0
    }
    pub fn to_json(&self) -> Value {
        let mean = if self.count == 0 { 0.0 } else { self.sum_ns as f64 / self.count as f64 / 1000.0 };
        json!({
            "count": self.count,
            "mean_us": mean,
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "p999_us": self.quantile_us(0.999),
            "max_us": self.max_ns as f64 / 1000.0,
            "over_100ms": self.over,
        })
    }
}

/// Marks a heap entry that is a managed link's dequeue (the rest of it is the link), not a
/// packet's slot.
const DEQUEUE: u32 = 1 << 31;

/// The hash of an IP packet's 5-tuple (addresses, protocol, ports), FNV-1a: what a flow
/// queueing discipline tells flows apart by. Packets too short to hold one hash as flow 0.
fn five_tuple_hash(ip: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u32).wrapping_mul(0x0100_0193);
        }
    };
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            eat(&ip[9..10]);
            eat(&ip[12..20]);
            eat(ip.get(ihl..ihl + 4).unwrap_or(&[]));
        }
        Some(6) if ip.len() >= 40 => {
            eat(&ip[6..7]);
            eat(&ip[8..40]);
            eat(ip.get(40..44).unwrap_or(&[]));
        }
        _ => return 0,
    }
    h
}

/// Whether the IP packet is ECN-capable: its ECN field (the two low bits of IPv4's TOS byte or
/// of IPv6's traffic class) is ECT(0), ECT(1) or CE.
fn ip_ect(ip: &[u8]) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => ip[1] & 0x03 != 0,
        Some(6) if ip.len() >= 40 => (ip[1] >> 4) & 0x03 != 0,
        _ => false,
    }
}

/// Sets the IP packet's ECN field to CE (0b11), updating IPv4's header checksum
/// incrementally (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word that held the
/// TOS byte).
fn ip_set_ce(ip: &mut [u8]) {
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 => {
            let old = u16::from_be_bytes([ip[0], ip[1]]);
            ip[1] |= 0x03;
            let new = u16::from_be_bytes([ip[0], ip[1]]);
            let hc = u16::from_be_bytes([ip[10], ip[11]]);
            let mut sum = (!hc) as u32 + (!old) as u32 + new as u32;
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        }
        Some(6) if ip.len() >= 40 => ip[1] |= 0x30,
        _ => {}
    }
}

struct InFlight {
    buf: Vec<u8>,
    /// 2·path + direction (0: client to server, 1: server to client).
    route: usize,
    hop: usize,
}

pub struct Emulator {
    /// CLOCK_MONOTONIC at the emulator's time zero.
    pub origin_ns: u64,
    pub bin_ns: u64,
    /// Two halves per scenario link: 2·i forward, 2·i + 1 reverse.
    links: Vec<Link>,
    link_names: Vec<String>,
    /// Per route (2·path + direction): the link halves in order.
    routes: Vec<Vec<usize>>,
    pub ports: Vec<PathPort>,
    pub stats: Vec<DirStats>,
    pub lateness: Lateness,
    /// Lateness per route.
    pub route_lateness: Vec<Lateness>,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
    slots: Vec<Option<InFlight>>,
    free: Vec<u32>,
    pool: Vec<Vec<u8>>,
}

impl Emulator {
    pub fn new(s: &Scenario, seed: u64, ports: Vec<PathPort>, origin_ns: u64, bin_ns: u64) -> Emulator {
        let mut links = Vec::new();
        let mut link_names = Vec::new();
        for l in &s.links {
            for (forward, dir) in [(true, "fwd"), (false, "rev")] {
                links.push(l.link(forward, seed));
                link_names.push(format!("{}/{dir}", l.name));
            }
        }
        let mut routes = Vec::new();
        for p in &ports {
            routes.push(p.links.iter().map(|&i| 2 * i).collect());
            routes.push(p.links.iter().rev().map(|&i| 2 * i + 1).collect());
        }
        let n = routes.len();
        Emulator {
            origin_ns,
            bin_ns,
            links,
            link_names,
            routes,
            ports,
            stats: vec![DirStats::default(); n],
            lateness: Lateness::new(),
            route_lateness: (0..n).map(|_| Lateness::new()).collect(),
            heap: BinaryHeap::new(),
            seq: 0,
            slots: Vec::new(),
            free: Vec::new(),
            pool: Vec::new(),
        }
    }

    /// Emulator time now.
    pub fn now(&self) -> u64 {
        sys::now_ns().saturating_sub(self.origin_ns)
    }

    /// The earliest due time, if any packet is on its way.
    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// A packet of `route` was read at `t`: it enters the route's first link.
    pub fn inject(&mut self, route: usize, data: &[u8], t: u64) {
        let st = &mut self.stats[route];
        st.read_pkts += 1;
        st.read_bytes += data.len() as u64;
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(data);
        self.advance(InFlight { buf, route, hop: 0 }, t);
    }

    /// Puts a packet in a free slot.
    fn store(&mut self, p: InFlight) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(p);
                i
            }
            None => {
                self.slots.push(Some(p));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Empties a slot, its buffer back to the pool; returns the packet's route.
    fn release(&mut self, slot: u32) -> usize {
        let p = self.slots[slot as usize].take().expect("a stored packet");
        self.free.push(slot);
        self.pool.push(p.buf);
        p.route
    }

    /// A packet reaches a link whose queue an AQM manages: it joins the discipline's queue
    /// (as a slot number), and the link sends what it can.
    fn enqueue(&mut self, p: InFlight, link: usize, t: u64) {
        let (size, hash, ect) = (p.buf.len() as u32, five_tuple_hash(&p.buf), ip_ect(&p.buf));
        let route = p.route;
        let slot = self.store(p);
        if let Some(fate) = self.links[link].enqueue(SimTime(t), slot, size, hash, ect) {
            self.release(slot);
            self.count_drop(route, fate);
        }
        self.release_aqm_drops(link);
        self.serve(link, t);
    }

    /// Starts every transmission managed link `link` can start at `t`, and schedules its next.
    fn serve(&mut self, link: usize, t: u64) {
        loop {
            let l = &mut self.links[link];
            if l.dequeue_due() != Some(SimTime(t)) {
                match l.next_dequeue(SimTime(t)) {
                    None => return,
                    Some(d) if d.0 > t => {
                        self.seq += 1;
                        self.heap.push(Reverse((d.0, self.seq, DEQUEUE | link as u32)));
                        return;
                    }
                    Some(_) => {}
                }
            }
            let sent = l.dequeue(SimTime(t));
            self.release_aqm_drops(link);
            match sent {
                Some((slot, Fate::Arrives(at), marked)) => {
                    let p = self.slots[slot as usize].as_mut().expect("a queued packet");
                    p.hop += 1;
                    if marked {
                        ip_set_ce(&mut p.buf);
                    }
                    self.seq += 1;
                    self.heap.push(Reverse((at.0, self.seq, slot)));
                }
                Some((slot, fate, _)) => {
                    let route = self.release(slot);
                    self.count_drop(route, fate);
                }
                None => {}
            }
        }
    }

    fn release_aqm_drops(&mut self, link: usize) {
        let drops: Vec<u32> = self.links[link].take_drops().collect();
        for slot in drops {
            let route = self.release(slot);
            self.stats[route].queue_drops += 1;
        }
    }

    fn count_drop(&mut self, route: usize, fate: Fate) {
        let st = &mut self.stats[route];
        match fate {
            Fate::QueueDrop => st.queue_drops += 1,
            Fate::Lost => st.loss_drops += 1,
            Fate::Down | Fate::Arrives(_) => st.down_drops += 1,
        }
    }

    /// Offers the packet to its next link at `t` (or schedules its delivery).
    fn advance(&mut self, p: InFlight, t: u64) {
        let link = self.routes[p.route][p.hop];
        if self.links[link].is_managed() {
            return self.enqueue(p, link, t);
        }
        match self.links[link].offer(SimTime(t), p.buf.len() as u32) {
            Fate::Arrives(at) => {
                let slot = self.store(InFlight { hop: p.hop + 1, ..p });
                self.seq += 1;
                self.heap.push(Reverse((at.0, self.seq, slot)));
            }
            fate => {
                self.count_drop(p.route, fate);
                self.pool.push(p.buf);
            }
        }
    }

    /// Handles every packet due by now: passes it to its next link, or writes it out.
    pub fn run_due(&mut self) {
        let mut now = self.now();
        while let Some(&Reverse((due, _, slot))) = self.heap.peek() {
            if due > now {
                now = self.now();
                if due > now {
                    break;
                }
            }
            self.heap.pop();
            self.handle(due, slot);
        }
    }

    /// One heap entry come due: a managed link's dequeue, a packet on to its next link, or a
    /// packet out of its route into the other namespace.
    fn handle(&mut self, due: u64, slot: u32) {
        if slot & DEQUEUE != 0 {
            let link = (slot & !DEQUEUE) as usize;
            if self.links[link].dequeue_due() == Some(SimTime(due)) {
                self.serve(link, due);
            }
            return;
        }
        let p = self.slots[slot as usize].take().expect("scheduled packet");
        self.free.push(slot);
        if p.hop < self.routes[p.route].len() {
            self.advance(p, due);
            return;
        }
        let port = &self.ports[p.route / 2];
        let fd = if p.route.is_multiple_of(2) { port.server_fd } else { port.client_fd };
        let ok = sys::write_packet(fd, &p.buf);
        let late = self.now().saturating_sub(due);
        self.lateness.record(late);
        self.route_lateness[p.route].record(late);
        let st = &mut self.stats[p.route];
        if ok {
            st.delivered_pkts += 1;
            st.delivered_bytes += p.buf.len() as u64;
            let bin = (due / self.bin_ns) as usize;
            if st.bins.len() <= bin {
                st.bins.resize(bin + 1, 0);
            }
            st.bins[bin] += p.buf.len() as u64;
            st.first_due_ns.get_or_insert(due);
            st.last_due_ns = due;
        } else {
            st.write_errors += 1;
        }
        self.pool.push(p.buf);
    }

    pub fn report(&self, realtime: bool, wall_ns: u64) -> Value {
        let dir = |s: &DirStats, l: &Lateness| {
            json!({
                "read_pkts": s.read_pkts, "read_bytes": s.read_bytes,
                "delivered_pkts": s.delivered_pkts, "delivered_bytes": s.delivered_bytes,
                "queue_drops": s.queue_drops, "loss_drops": s.loss_drops, "down_drops": s.down_drops,
                "write_errors": s.write_errors,
                "first_due_ns": s.first_due_ns, "last_due_ns": s.last_due_ns,
                "bins": s.bins, "lateness": l.to_json(),
            })
        };
        let paths: Vec<Value> = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "name": p.name, "client_tun": p.client_tun, "server_tun": p.server_tun,
                    "fwd": dir(&self.stats[2 * i], &self.route_lateness[2 * i]),
                    "rev": dir(&self.stats[2 * i + 1], &self.route_lateness[2 * i + 1]),
                })
            })
            .collect();
        let links: Vec<Value> = self
            .links
            .iter()
            .zip(&self.link_names)
            .map(|(l, n)| {
                let mut v = json!({"link": n, "offered": l.stats.offered, "delivered": l.stats.delivered,
                       "queue_drops": l.stats.queue_drops, "loss_drops": l.stats.loss_drops,
                       "bytes_sent": l.stats.bytes_sent, "busy_s": l.stats.busy.as_secs_f64()});
                if let (Some(name), Some(s)) = (l.aqm(), l.sojourn()) {
                    let ms = |d: Option<mpsim_core::time::Dur>| d.map_or(0.0, |d| d.as_millis_f64());
                    v["aqm"] = json!(name);
                    v["aqm_drops"] = json!(l.stats.aqm_drops);
                    v["aqm_marks"] = json!(l.stats.aqm_marks);
                    v["queue_delay_mean_ms"] = json!(ms(s.mean()));
                    v["queue_delay_p95_ms"] = json!(ms(s.quantile(0.95)));
                }
                v
            })
            .collect();
        let (user, sys_) = cpu_times();
        json!({
            "origin_ns": self.origin_ns,
            "bin_ns": self.bin_ns,
            "wall_s": wall_ns as f64 * 1e-9,
            "cpu_user_s": user,
            "cpu_sys_s": sys_,
            "realtime": realtime,
            "lateness": self.lateness.to_json(),
            "paths": paths,
            "links": links,
        })
    }
}

fn cpu_times() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "duration = \"10s\"\n[[link]]\nname = \"a\"\nrate = \"10Mbps\"\ndelay = \"20ms\"\nqueue = \"3pkt\"\n{extra}\n[[path]]\nname = \"p\"\nlinks = [\"a\"]\n[[flow]]\npath = \"p\"\n"
        );
        Scenario::from_toml(&text, "test").unwrap()
    }

    fn emu(s: &Scenario) -> Emulator {
        let port =
            PathPort { name: "p".into(), links: vec![0], client_tun: "c".into(), server_tun: "s".into(), client_fd: -1, server_fd: -1 };
        Emulator::new(s, 1, vec![port], 0, 100_000_000)
    }

    /// Runs every heap entry in model time (no clock, no devices: deliveries fail to write).
    fn drain(e: &mut Emulator) {
        while let Some(Reverse((due, _, slot))) = e.heap.pop() {
            e.handle(due, slot);
        }
    }

    #[test]
    fn a_managed_queue_runs_the_same_codel_as_the_simulator() {
        let s = scenario("aqm = \"codel\"");
        let s = Scenario {
            links: vec![mpsim_core::scenario::LinkSpec { queue: mpsim_core::net::QueueLimit::Packets(1000), ..s.links[0].clone() }],
            ..s
        };
        let mut e = emu(&s);
        // 300 packets at once, 1 ms each to send: sojourns pass 5 ms at once, and from 100 ms
        // on CoDel drops at the control law's times
        let mut ip = [0u8; 1250];
        ip[0] = 0x45;
        for _ in 0..300 {
            e.inject(0, &ip, 0);
        }
        // only the first is on its way; the next leaves when it has been sent
        assert_eq!(e.heap.len(), 2);
        drain(&mut e);
        let st = &e.stats[0];
        assert!(st.queue_drops >= 3, "{}", st.queue_drops);
        assert_eq!(st.write_errors + st.queue_drops, 300);
        let r = e.report(false, 0);
        assert_eq!(r["links"][0]["aqm"], "codel");
        assert_eq!(r["links"][0]["aqm_drops"].as_u64(), Some(st.queue_drops));
        assert!(r["links"][0]["queue_delay_mean_ms"].as_f64().unwrap() > 50.0);
    }

    #[test]
    fn codel_with_ecn_marks_ect_packets_where_it_would_drop_them() {
        let s = scenario("aqm = { kind = \"codel\", ecn = true }");
        let s = Scenario {
            links: vec![mpsim_core::scenario::LinkSpec { queue: mpsim_core::net::QueueLimit::Packets(1000), ..s.links[0].clone() }],
            ..s
        };
        for (tos, marks) in [(0x02u8, true), (0x00, false)] {
            let mut e = emu(&s);
            let mut ip = [0u8; 1250];
            ip[0] = 0x45;
            ip[1] = tos;
            for _ in 0..300 {
                e.inject(0, &ip, 0);
            }
            drain(&mut e);
            let r = e.report(false, 0);
            let (m, d) = (r["links"][0]["aqm_marks"].as_u64().unwrap(), r["links"][0]["aqm_drops"].as_u64().unwrap());
            if marks {
                assert!(m >= 3 && d == 0, "ECT(0): {m} marks, {d} drops");
            } else {
                assert!(m == 0 && d >= 3, "Not-ECT: {m} marks, {d} drops");
            }
        }
    }

    /// The IPv4 header checksum computed from scratch (RFC 791).
    fn ipv4_checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h.chunks(2).enumerate().filter(|(i, _)| *i != 5).map(|(_, w)| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn setting_ce_keeps_the_ipv4_checksum_valid() {
        for tos in [0x01u8, 0x02, 0xb8 | 0x02, 0xff] {
            let mut ip = [0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
            let c = ipv4_checksum(&ip);
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            assert!(ip_ect(&ip));
            ip_set_ce(&mut ip);
            assert_eq!(ip[1] & 0x03, 0x03);
            assert_eq!(ip[1] & 0xfc, tos & 0xfc, "the DSCP stays");
            assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), ipv4_checksum(&ip), "tos {tos:#x}");
        }
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        assert!(!ip_ect(&v6));
        v6[1] = 0x20; // ECT(0)
        assert!(ip_ect(&v6));
        ip_set_ce(&mut v6);
        assert_eq!((v6[1] >> 4) & 0x03, 0x03);
    }

    #[test]
    fn the_five_tuple_hash_reads_addresses_protocol_and_ports() {
        let mut a = [0u8; 40];
        a[0] = 0x45;
        a[9] = 6;
        a[12..20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        a[20..24].copy_from_slice(&[0x1f, 0x90, 0xc0, 0x00]);
        let mut b = a;
        b[23] = 1; // another destination port: another flow
        let mut c = a;
        c[30] = 99; // payload: the same flow
        assert_ne!(five_tuple_hash(&a), five_tuple_hash(&b));
        assert_eq!(five_tuple_hash(&a), five_tuple_hash(&c));
        assert_eq!(five_tuple_hash(&[0u8; 10]), 0);
    }

    #[test]
    fn due_times_follow_rate_delay_and_queue() {
        let s = scenario("");
        let mut e = emu(&s);
        // 1250 B at 10 Mbit/s: 1 ms each; the queue holds 3 behind the one in service
        for _ in 0..6 {
            e.inject(0, &[0u8; 1250], 0);
        }
        let mut dues: Vec<u64> = e.heap.iter().map(|Reverse((t, _, _))| *t).collect();
        dues.sort();
        assert_eq!(dues, vec![21_000_000, 22_000_000, 23_000_000, 24_000_000]);
        assert_eq!(e.stats[0].queue_drops, 2);
        // the reverse direction is independent
        e.inject(1, &[0u8; 125], 500_000);
        assert!(e.heap.iter().any(|Reverse((t, _, _))| *t == 20_600_000));
    }

    #[test]
    fn loss_follows_the_scenario() {
        let s = scenario("loss = \"10%\"");
        let s = Scenario {
            links: vec![mpsim_core::scenario::LinkSpec { queue: mpsim_core::net::QueueLimit::Packets(1_000_000), ..s.links[0].clone() }],
            ..s
        };
        let mut e = emu(&s);
        for i in 0..20_000u64 {
            e.inject(0, &[0u8; 100], i * 1_000_000);
        }
        let lost = e.stats[0].loss_drops as f64 / 20_000.0;
        assert!((lost - 0.1).abs() < 0.01, "{lost}");
        assert_eq!(e.stats[1].loss_drops, 0);
    }

    #[test]
    fn a_traced_link_replays_its_trace_with_the_cores_link() {
        // the same code as in the simulator: departures at the trace's opportunities (1 ms,
        // 1 ms, 3 ms), the delay after them, a queue of 3 packets that counts those not yet
        // started (so two of five are dropped), and a reverse direction at the link's rate
        let file = std::env::temp_dir().join(format!("mpsim-linkemu-trace-{}", std::process::id()));
        std::fs::write(&file, "1\n1\n3\n5\n").unwrap();
        let s = scenario(&format!("trace = {:?}", file.to_str().unwrap()));
        let _ = std::fs::remove_file(&file);
        let mut e = emu(&s);
        for _ in 0..5 {
            e.inject(0, &[0u8; 1500], 0);
        }
        let mut dues: Vec<u64> = e.heap.iter().map(|Reverse((t, _, _))| *t).collect();
        dues.sort();
        assert_eq!(dues, vec![21_000_000, 21_000_000, 23_000_000]);
        assert_eq!(e.stats[0].queue_drops, 2);
        e.inject(1, &[0u8; 125], 500_000);
        assert!(e.heap.iter().any(|Reverse((t, _, _))| *t == 20_600_000));
    }

    #[test]
    fn a_scheduled_link_follows_its_steps_with_the_cores_link() {
        // the same code as in the simulator: 10 Mbit/s and 20 ms until 2 ms, then 1 Mbit/s and
        // 30 ms; 1250-byte packets take 1 ms, then 10 ms; the delay is the one in force when
        // a packet is sent (the second leaves at 2 ms exactly); the reverse direction follows
        let s = scenario("schedule = [{ at = \"2ms\", rate = \"1Mbps\", delay = \"30ms\" }]");
        let mut e = emu(&s);
        for _ in 0..3 {
            e.inject(0, &[0u8; 1250], 0);
        }
        let mut dues: Vec<u64> = e.heap.iter().map(|Reverse((t, _, _))| *t).collect();
        dues.sort();
        assert_eq!(dues, vec![21_000_000, 32_000_000, 42_000_000]);
        e.inject(1, &[0u8; 125], 30_000_000);
        assert!(e.heap.iter().any(|Reverse((t, _, _))| *t == 61_000_000));
    }

    #[test]
    fn lateness_quantiles() {
        let mut l = Lateness::new();
        for i in 0..1000u64 {
            l.record(i * 1000);
        }
        assert_eq!(l.quantile_us(0.99), 990.0);
        assert_eq!(l.quantile_us(0.5), 500.0);
    }
}
