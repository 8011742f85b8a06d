//! Connection tests on hand-built exchanges: packets are taken from the sender's output,
//! dropped or delivered to the receiving end, and the ACKs it answers with are fed back.

use super::conn::CHALLENGE;
use super::*;
use crate::cc::Controller;
use crate::net::{Header, QuicHeader};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::PathRoutes;
use crate::transport::{Action, Arrival, TimerKind, Tx};

const RTT: Dur = Dur::from_millis(100);

fn cfg(rcv_buf: u64) -> QuicConfig {
    QuicConfig { max_datagram: 1472, max_ack_delay: Dur::from_millis(25), rcv_buf, initial_window: 10, ecn: false }
}

fn conn_with(c: QuicConfig, cc: &str) -> QuicConn {
    let path = QuicPath::new(PathRoutes { name: "p0".into(), fwd: 0, rev: 1 }, &c, Controller::by_name(cc).unwrap(), RTT);
    let mut q = QuicConn::new(c, vec![path]);
    q.check = true;
    q
}

fn conn() -> QuicConn {
    conn_with(cfg(4_000_000), "reno")
}

fn ms(v: u64) -> Dur {
    Dur::from_millis(v)
}

fn at(v: u64) -> SimTime {
    SimTime(ms(v).0)
}

/// The packets of one direction in `tx` (data or ACKs), with their wire sizes; clears `tx`.
fn take(tx: &mut Tx, acks: bool) -> Vec<(QuicHeader, u32)> {
    let out = tx
        .out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { header: Header::Quic(h), size, .. } if h.is_ack == acks => Some((*h, *size)),
            _ => None,
        })
        .collect();
    tx.out.retain(|a| !matches!(a, Action::Packet { header: Header::Quic(h), .. } if h.is_ack == acks));
    out
}

fn timers(tx: &Tx, kind: TimerKind) -> Vec<SimTime> {
    tx.out
        .iter()
        .filter_map(|a| match a {
            Action::Timer { kind: k, at, .. } if *k == kind => Some(*at),
            _ => None,
        })
        .collect()
}

fn send(q: &mut QuicConn, now: SimTime) -> Vec<QuicHeader> {
    let mut tx = Tx::default();
    q.poll_transmit(now, &mut tx);
    take(&mut tx, false).into_iter().map(|p| p.0).collect()
}

/// Delivers `pkts` at `t` (but those numbered in `drop`), then every ACK they caused at
/// `t2`; returns what the sender sent in reaction.
fn exchange(q: &mut QuicConn, t: SimTime, t2: SimTime, pkts: &[QuicHeader], drop: &[u64]) -> Vec<QuicHeader> {
    let mut tx = Tx::default();
    for h in pkts.iter().filter(|h| !drop.contains(&h.pn)) {
        q.on_packet(t, 0, h, &mut tx);
    }
    let acks = take(&mut tx, true);
    for (a, _) in acks {
        q.on_packet(t2, 0, &a, &mut tx);
        q.poll_transmit(t2, &mut tx);
    }
    take(&mut tx, false).into_iter().map(|p| p.0).collect()
}

#[test]
fn first_flight_is_the_initial_window_of_full_packets() {
    let mut q = conn();
    q.write(1 << 20);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    let pkts = take(&mut tx, false);
    assert_eq!(pkts.len(), 10);
    // 1500-byte IP packets: 28 bytes of IP and UDP, 1 + 8 of short header, 16 of AEAD tag,
    // and a STREAM frame header of 1 + 1 + offset + 2
    assert_eq!(pkts[0].1, 1500);
    assert_eq!(pkts[0].0.len, 1472 - 9 - 1 - 16 - 4);
    assert_eq!(pkts[1].0.offset, pkts[0].0.len as u64);
    assert_eq!(pkts.iter().map(|p| p.0.pn).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
    assert!(pkts.iter().all(|p| p.1 <= 1500));
}

#[test]
fn every_second_packet_is_acknowledged_at_once_and_a_lone_one_after_max_ack_delay() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let mut tx = Tx::default();
    assert!(matches!(q.on_packet(at(50), 0, &pkts[0], &mut tx), Arrival::Stream { .. }));
    assert!(take(&mut tx, true).is_empty());
    assert_eq!(timers(&tx, TimerKind::DelAck), vec![at(75)]);
    q.on_packet(at(51), 0, &pkts[1], &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ranges, vec![(0, 1)]);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ack_delay, Dur::ZERO);
    // a third packet alone waits for the timer; the ACK tells how long it was held
    q.on_packet(at(52), 0, &pkts[2], &mut tx);
    assert!(take(&mut tx, true).is_empty());
    q.on_timer(at(75), 0, TimerKind::DelAck, &mut tx);
    assert!(take(&mut tx, true).is_empty(), "the timer armed for the first packet is stale");
    q.on_timer(at(77), 0, TimerKind::DelAck, &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1);
    let rec = q.ack_record(acks[0].0.ack).unwrap();
    assert_eq!((rec.ranges.clone(), rec.ack_delay), (vec![(0, 2)], ms(25)));
}

#[test]
fn a_gap_is_acknowledged_at_once_with_ranges() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let mut tx = Tx::default();
    q.on_packet(at(50), 0, &pkts[0], &mut tx);
    q.on_packet(at(50), 0, &pkts[1], &mut tx);
    take(&mut tx, true);
    q.on_packet(at(51), 0, &pkts[3], &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1, "a gap below the packet: acknowledged at once");
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ranges, vec![(3, 3), (0, 1)]);
    // the ACK frame: type, largest, delay, count, first range, then a gap and a range
    assert_eq!(acks[0].1, 28 + 9 + 2 + 16 + 7);
    // the missing one arriving late is out of order: at once too
    q.on_packet(at(52), 0, &pkts[2], &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ranges, vec![(0, 3)]);
}

#[test]
fn a_packet_three_below_the_largest_acknowledged_is_lost_and_its_data_resent_in_a_new_packet() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let lost = pkts[2];
    let again = exchange(&mut q, at(50), at(100), &pkts, &[2]);
    assert_eq!(q.paths[0].rec.stats.packets_lost, 1);
    // the halved window is full, but one packet may go as the recovery period begins: the
    // lost data, at once
    let r = again.iter().find(|h| h.retx).expect("a retransmission");
    assert_eq!(again.iter().filter(|h| h.retx).count(), 1);
    assert_eq!((r.offset, r.len), (lost.offset, lost.len));
    assert!(r.pn >= 10, "a new packet number");
    assert_eq!(q.paths[0].rec.stats.congestion_events, 1);
    // the window was halved: Reno from the flight at the loss
    assert!(q.paths[0].rec.w.cwnd < 10 * 1472);
}

#[test]
fn a_packet_too_close_to_the_largest_is_lost_by_the_time_threshold() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    // packet 8 missing: 9 is only one above it, so only the time threshold can declare it
    let mut tx = Tx::default();
    for h in pkts.iter().filter(|h| h.pn != 8) {
        q.on_packet(at(50), 0, h, &mut tx);
    }
    let acks = take(&mut tx, true);
    for (a, _) in &acks {
        q.on_packet(at(100), 0, a, &mut tx);
    }
    assert_eq!(q.paths[0].rec.stats.packets_lost, 0);
    // 9/8 x max(smoothed, latest) = 9/8 x 100 ms after it was sent
    let loss_time = q.paths[0].rec.loss_time.expect("a loss time");
    assert_eq!(loss_time, at(112) + Dur::from_micros(500));
    assert_eq!(q.paths[0].rec.timer(), Some(loss_time));
    tx.out.clear();
    q.on_timer(loss_time, 0, TimerKind::Rto, &mut tx);
    assert_eq!(q.paths[0].rec.stats.packets_lost, 1);
    let resent = take(&mut tx, false);
    assert!(resent.iter().any(|(h, _)| h.retx && h.offset == pkts[8].offset));
    assert_eq!(q.paths[0].rec.stats.ptos, 0);
}

#[test]
fn the_probe_timeout_sends_two_probes_and_backs_off() {
    let mut q = conn();
    q.write(20_000);
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(pkts.len(), 10);
    let last = pkts.last().unwrap().sent_at;
    // smoothed 100 + 4 x rttvar 50 + max_ack_delay 25
    let pto = ms(325);
    assert_eq!(q.paths[0].rec.timer(), Some(last + pto));
    let mut tx = Tx::default();
    q.on_timer(last + pto, 0, TimerKind::Rto, &mut tx);
    let probes = take(&mut tx, false);
    assert_eq!(probes.len(), 2, "two probes beyond the window");
    assert!(probes.iter().all(|(h, _)| h.len > 0), "probes carry data");
    assert_eq!(q.paths[0].rec.pto_count, 1);
    let t1 = last + pto;
    assert_eq!(q.paths[0].rec.timer(), Some(t1 + pto.mul(2)));
    q.on_timer(t1 + pto.mul(2), 0, TimerKind::Rto, &mut tx);
    assert_eq!(q.paths[0].rec.pto_count, 2);
    assert_eq!(q.paths[0].rec.timer(), Some(t1 + pto.mul(2) + pto.mul(4)));
    assert_eq!(q.paths[0].rec.stats.ptos, 2);
    assert_eq!(q.paths[0].rec.stats.probes, 4);
    // a timer firing early does nothing
    q.on_timer(t1 + pto.mul(3), 0, TimerKind::Rto, &mut tx);
    assert_eq!(q.paths[0].rec.stats.ptos, 2);
}

#[test]
fn losses_spanning_three_ptos_are_persistent_congestion() {
    let mut q = conn();
    q.write(1 << 20);
    let first = send(&mut q, SimTime::ZERO);
    let mut tx = Tx::default();
    // every packet and probe lost for a second and more: timeouts back off
    let mut now = SimTime::ZERO;
    let mut lost = first.clone();
    for _ in 0..3 {
        now = q.paths[0].rec.timer().unwrap();
        q.on_timer(now, 0, TimerKind::Rto, &mut tx);
        lost.extend(take(&mut tx, false).into_iter().map(|p| p.0));
    }
    let span = now - SimTime::ZERO;
    assert!(span >= ms(325).mul(3), "{span}");
    // then one probe gets through and is acknowledged: all before it are lost
    let last = *lost.last().unwrap();
    q.on_packet(now + ms(50), 0, &last, &mut tx);
    q.on_timer(now + ms(75), 0, TimerKind::DelAck, &mut tx);
    let acks = take(&mut tx, true);
    q.on_packet(now + ms(100), 0, &acks[0].0, &mut tx);
    let st = q.paths[0].rec.stats;
    assert_eq!(st.persistent_congestion, 1);
    // the minimum window, then the probe's acknowledgement in slow start
    assert_eq!(q.paths[0].rec.w.cwnd, 2 * 1472 + 1472, "the minimum window");
    assert!(st.packets_lost >= 10);
}

#[test]
fn losses_within_a_pto_are_not_persistent_congestion() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    exchange(&mut q, at(50), at(100), &pkts, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(q.paths[0].rec.stats.persistent_congestion, 0);
    assert_eq!(q.paths[0].rec.stats.packets_lost, 6);
}

#[test]
fn one_recovery_period_per_window_of_losses() {
    let mut q = conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let again = exchange(&mut q, at(50), at(100), &pkts, &[1, 4]);
    assert_eq!(q.paths[0].rec.stats.congestion_events, 1);
    let cwnd = q.paths[0].rec.w.cwnd;
    // acknowledging the retransmissions (sent after the period began) ends it
    exchange(&mut q, at(150), at(200), &again, &[]);
    assert!(!q.paths[0].rec.in_recovery);
    assert!(q.paths[0].rec.w.cwnd >= cwnd);
}

#[test]
fn flow_control_stops_the_sender_at_the_receivers_credit_until_max_data() {
    let mut q = conn_with(cfg(8 * 1442), "reno");
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(pkts.iter().map(|h| h.len as u64).sum::<u64>(), 8 * 1442);
    assert_eq!(q.next_offset, 8 * 1442);
    let mut tx = Tx::default();
    for h in &pkts {
        q.on_packet(at(50), 0, h, &mut tx);
    }
    let acks = take(&mut tx, true);
    let credit: Vec<u64> = acks.iter().filter_map(|(a, _)| q.ack_record(a.ack).unwrap().max_data).collect();
    assert!(!credit.is_empty(), "the receiver read: it grants more");
    assert_eq!(*credit.last().unwrap(), 16 * 1442);
    for (a, _) in &acks {
        q.on_packet(at(100), 0, a, &mut tx);
    }
    q.poll_transmit(at(100), &mut tx);
    let more = take(&mut tx, false);
    assert!(!more.is_empty());
    assert_eq!(q.next_offset, 16 * 1442);
}

#[test]
fn a_blocked_sender_says_so_and_the_receiver_repeats_its_credit() {
    let mut q = conn_with(cfg(4 * 1442), "reno");
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let mut tx = Tx::default();
    for h in &pkts {
        q.on_packet(at(50), 0, h, &mut tx);
    }
    // every ACK back is lost; the probe timeout's probes say the sender is blocked
    take(&mut tx, true);
    let t = q.paths[0].rec.timer().unwrap();
    q.on_timer(t, 0, TimerKind::Rto, &mut tx);
    let probes = take(&mut tx, false);
    assert!(probes.iter().all(|(h, _)| h.blocked));
    q.on_packet(t + ms(50), 0, &probes[0].0, &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().max_data, Some(8 * 1442));
}

#[test]
fn the_stream_is_delivered_in_order_whatever_is_lost() {
    let mut q = conn();
    q.write(300_000);
    let mut now = SimTime::ZERO;
    let mut pkts = send(&mut q, now);
    let mut k = 0u64;
    while q.progress().delivered < 300_000 {
        assert!(
            now < at(60_000),
            "stalled at {} {:?} {:?} {:?} {:?}",
            q.progress().delivered,
            q.rtx,
            q.acked,
            q.paths[0].rec.timer(),
            q.paths[0].rec.stats
        );
        // every 7th packet lost, the rest delivered after 50 ms, ACKs back after 50 more
        let drop: Vec<u64> = pkts
            .iter()
            .map(|h| h.pn)
            .filter(|_| {
                k += 1;
                k.is_multiple_of(7)
            })
            .collect();
        let next = exchange(&mut q, now + ms(50), now + ms(100), &pkts, &drop);
        now += ms(100);
        pkts = next;
        if pkts.is_empty() && q.progress().delivered < 300_000 {
            let t = q.paths[0].rec.timer().or(q.paths[0].rx_timer());
            let t = t.unwrap_or_else(|| {
                panic!("no timer at {} {:?} {:?} {:?} {}", q.progress().delivered, q.rtx, q.acked, q.paths[0].rec.stats, q.next_offset)
            });
            now = now.max(t);
            let mut tx = Tx::default();
            q.on_timer(now, 0, TimerKind::Rto, &mut tx);
            q.on_timer(now, 0, TimerKind::DelAck, &mut tx);
            let acks = take(&mut tx, true);
            for (a, _) in acks {
                q.on_packet(now, 0, &a, &mut tx);
            }
            q.poll_transmit(now, &mut tx);
            pkts = take(&mut tx, false).into_iter().map(|p| p.0).collect();
        }
    }
    // the last ACK, delayed
    let mut tx = Tx::default();
    q.on_timer(now + ms(25), 0, TimerKind::DelAck, &mut tx);
    for (a, _) in take(&mut tx, true) {
        q.on_packet(now + ms(75), 0, &a, &mut tx);
    }
    assert_eq!(q.progress().acked, 300_000);
    assert!(q.paths[0].rec.stats.packets_lost > 0);
}

// ----- Multipath QUIC -----

/// A connection over two paths (routes 0/1 and 2/3), the second with a round trip of `rtt1`.
fn two_paths(sched: &str, cc: &str, rtt1: Dur) -> QuicConn {
    let c = cfg(4_000_000);
    let path = |k: u32, rtt| {
        QuicPath::new(PathRoutes { name: format!("p{k}"), fwd: 2 * k, rev: 2 * k + 1 }, &c, Controller::by_name(cc).unwrap(), rtt)
    };
    let paths = vec![path(0, RTT), path(1, rtt1)];
    let mut q = QuicConn::new(c, paths).with_scheduler(crate::sched::Sched::by_name(sched));
    q.check = true;
    q
}

/// Validates path 1 of a connection: the first poll at 0 (what it sends is taken out), the
/// PATH_CHALLENGE answered at 20 ms, the PATH_RESPONSE back at 40 ms.
fn validate_path_1(q: &mut QuicConn, tx: &mut Tx) {
    q.poll_transmit(SimTime::ZERO, tx);
    let ch = take_routed(tx, false).into_iter().find(|p| p.1 == 1).unwrap();
    q.on_packet(at(20), 1, &ch.0, tx);
    let resp = take_routed(tx, true);
    q.on_packet(at(40), 1, &resp[0].0, tx);
}

/// The packets of one direction in `tx` with their path and route; clears `tx`.
fn take_routed(tx: &mut Tx, acks: bool) -> Vec<(QuicHeader, u8, u32, u32)> {
    let out = tx
        .out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { header: Header::Quic(h), sub, route, size } if h.is_ack == acks => Some((*h, *sub, *route, *size)),
            _ => None,
        })
        .collect();
    tx.out.retain(|a| !matches!(a, Action::Packet { header: Header::Quic(h), .. } if h.is_ack == acks));
    out
}

#[test]
fn a_second_path_carries_data_only_after_its_path_response() {
    let mut q = two_paths("round_robin", "reno", ms(40));
    q.write(1 << 20);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = take_routed(&mut tx, false);
    let on1: Vec<_> = sent.iter().filter(|p| p.1 == 1).collect();
    // one PATH_CHALLENGE on path 1, padded to 1200 bytes of UDP payload; data on path 0 only
    assert_eq!(on1.len(), 1);
    assert_eq!((on1[0].0.ack, on1[0].0.len, on1[0].2, on1[0].3), (CHALLENGE, 0, 2, 1228));
    assert_eq!(sent.iter().filter(|p| p.1 == 0 && p.0.len > 0).count(), 10);
    assert!(!q.paths[1].validated);
    // the receiver answers at once on path 1's reverse route with PATH_RESPONSE and PATH_ACK
    q.on_packet(at(20), 1, &on1[0].0, &mut tx);
    let resp = take_routed(&mut tx, true);
    assert_eq!(resp.len(), 1);
    assert_eq!((resp[0].1, resp[0].2, resp[0].3), (1, 3, 1228));
    assert!(q.ack_record(resp[0].0.ack).unwrap().path_response);
    // still nothing on path 1 until the response arrives, one round trip after the challenge
    q.poll_transmit(at(30), &mut tx);
    assert!(take_routed(&mut tx, false).iter().all(|p| p.1 != 1));
    q.on_packet(at(40), 1, &resp[0].0, &mut tx);
    assert_eq!((q.paths[1].validated, q.paths[1].validated_at), (true, Some(at(40))));
    assert_eq!(q.paths[1].rec.rtt.samples, 2, "the challenge's round trip is the path's first RTT sample");
    q.poll_transmit(at(40), &mut tx);
    let sent = take_routed(&mut tx, false);
    assert!(sent.iter().any(|p| p.1 == 1 && p.0.len > 0), "path 1 carries data once validated");
}

#[test]
fn each_path_has_its_own_number_space_acknowledged_by_path_ack_on_that_path() {
    let mut q = two_paths("round_robin", "reno", ms(40));
    q.write(1 << 20);
    let mut tx = Tx::default();
    validate_path_1(&mut q, &mut tx);
    q.poll_transmit(at(40), &mut tx);
    let sent = take_routed(&mut tx, false);
    let pns = |k: u8| sent.iter().filter(|p| p.1 == k).map(|p| p.0.pn).collect::<Vec<_>>();
    // path 1 numbers from 1 (its challenge took 0), independently of path 0
    assert_eq!(pns(1)[0], 1);
    let data1: Vec<_> = sent.iter().filter(|p| p.1 == 1).take(2).collect();
    for p in &data1 {
        q.on_packet(at(60), 1, &p.0, &mut tx);
    }
    let acks = take_routed(&mut tx, true);
    assert_eq!(acks.len(), 1);
    let (h, sub, route, size) = acks[0];
    assert_eq!((sub, route), (1, 3), "sent back on the path it acknowledges");
    assert_eq!(q.ack_record(h.ack).unwrap().ranges, vec![(0, 2)]);
    // PATH_ACK: an ACK frame plus the path identifier (1 byte)
    assert_eq!(size, 28 + 9 + 2 + 16 + wire::ack_frame(&[(0, 2)], 0) + 1);
    assert_eq!(q.paths[0].rec.largest_acked, None, "path 0's space untouched");
}

#[test]
fn data_lost_on_one_path_is_sent_again_on_another() {
    let mut q = two_paths("lowest_rtt", "reno", ms(40));
    q.write(20_000);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = take_routed(&mut tx, false);
    let ch = sent.iter().find(|p| p.1 == 1).unwrap();
    let lost: Vec<u64> = sent.iter().filter(|p| p.1 == 0).map(|p| p.0.offset).collect();
    q.on_packet(at(20), 1, &ch.0, &mut tx);
    let resp = take_routed(&mut tx, true);
    q.on_packet(at(40), 1, &resp[0].0, &mut tx);
    q.poll_transmit(at(40), &mut tx);
    take_routed(&mut tx, false);
    // path 0's flight is lost: its probe timeout puts it in the Loss state
    let pto = q.paths[0].rec.timer().unwrap();
    q.on_timer(pto, 0, TimerKind::Rto, &mut tx);
    q.on_timer(q.paths[0].rec.timer().unwrap(), 0, TimerKind::Rto, &mut tx);
    let mut seen = take_routed(&mut tx, false);
    assert_eq!(q.paths[0].rec.pto_count, 2);
    // the probes of path 0 go out on path 0; path 1 gets the rest, and ACKs of path 0's
    // probes (the first two lost packets) declare the others lost, re-queued for any path
    let probes: Vec<_> = seen.iter().filter(|p| p.1 == 0 && p.0.len > 0).map(|p| p.0).collect();
    assert!(!probes.is_empty());
    let t = probes.iter().map(|p| p.sent_at).max().unwrap() + ms(50);
    for p in &probes {
        q.on_packet(t, 0, p, &mut tx);
    }
    for a in take_routed(&mut tx, true) {
        q.on_packet(t + ms(50), 0, &a.0, &mut tx);
    }
    q.poll_transmit(t + ms(50), &mut tx);
    seen.extend(take_routed(&mut tx, false));
    let again_on_1 = seen.iter().filter(|p| p.1 == 1 && p.0.retx && lost.contains(&p.0.offset)).count();
    assert!(again_on_1 > 0, "path 0's lost data went out again on path 1");
}

#[test]
fn coupled_controllers_see_the_sibling_path() {
    let q = two_paths("lowest_rtt", "lia", ms(40));
    let sibs = q.siblings();
    assert_eq!(sibs.len(), 2);
    assert_eq!((sibs[0].active, sibs[1].active), (true, false), "a path counts once validated");
    assert!(conn().siblings().is_empty());
}

fn ecn_conn() -> QuicConn {
    conn_with(QuicConfig { ecn: true, ..cfg(4_000_000) }, "reno")
}

/// Delivers `pkts` at `t` with `mark` applied to each (the path's doing), then their ACKs at
/// `t2`; returns the ACK packets' sizes and what the sender sent in reaction.
fn exchange_marked(
    q: &mut QuicConn,
    t: SimTime,
    t2: SimTime,
    pkts: &[QuicHeader],
    mark: impl Fn(&mut QuicHeader),
) -> (Vec<u32>, Vec<QuicHeader>) {
    let mut tx = Tx::default();
    for h in pkts {
        let mut h = *h;
        mark(&mut h);
        q.on_packet(t, 0, &h, &mut tx);
    }
    let acks = take(&mut tx, true);
    for (a, _) in &acks {
        q.on_packet(t2, 0, a, &mut tx);
        q.poll_transmit(t2, &mut tx);
    }
    (acks.iter().map(|a| a.1).collect(), take(&mut tx, false).into_iter().map(|p| p.0).collect())
}

#[test]
fn with_ecn_packets_leave_ect0_and_acks_carry_the_counts() {
    use crate::net::Ecn;
    let mut plain = conn();
    plain.write(1 << 20);
    assert!(send(&mut plain, SimTime::ZERO).iter().all(|h| h.ecn == Ecn::NotEct));
    let mut q = ecn_conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    assert!(pkts.iter().all(|h| h.ecn == Ecn::Ect0));
    // ACK_ECN: the plain ACK frame and three one-byte counts
    let mut tx = Tx::default();
    q.on_packet(at(50), 0, &pkts[0], &mut tx);
    q.on_packet(at(50), 0, &pkts[1], &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1);
    let rec = q.ack_record(acks[0].0.ack).unwrap();
    assert_eq!(rec.ecn, Some(ecn::EcnCounts { ect0: 2, ect1: 0, ce: 0 }));
    let mut p2 = conn();
    p2.write(1 << 20);
    let plain_pkts = send(&mut p2, SimTime::ZERO);
    let mut tx2 = Tx::default();
    p2.on_packet(at(50), 0, &plain_pkts[0], &mut tx2);
    p2.on_packet(at(50), 0, &plain_pkts[1], &mut tx2);
    let plain_acks = take(&mut tx2, true);
    assert_eq!(acks[0].1, plain_acks[0].1 + 3);
    assert!(p2.ack_record(plain_acks[0].0.ack).unwrap().ecn.is_none());
    // the counts validate: the path is ECN-capable
    q.on_packet(at(100), 0, &acks[0].0, &mut tx);
    assert_eq!(q.paths[0].rec.ecn.state, Some(ecn::EcnState::Capable));
}

#[test]
fn a_ce_mark_is_acknowledged_at_once_and_reduces_the_window_once_per_round() {
    use crate::net::Ecn;
    let mut q = ecn_conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let cwnd0 = q.paths[0].rec.w.cwnd;
    // one packet alone, marked CE: acknowledged without waiting for a second one
    let mut tx = Tx::default();
    let mut h = pkts[0];
    h.ecn = Ecn::Ce;
    q.on_packet(at(50), 0, &h, &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1, "CE is acknowledged at once");
    q.on_packet(at(100), 0, &acks[0].0, &mut tx);
    let r = &q.paths[0].rec;
    assert_eq!((r.ecn.reductions, r.stats.congestion_events, r.stats.packets_lost), (1, 0, 0));
    assert!(r.in_recovery && r.w.cwnd < cwnd0, "{} of {cwnd0}", r.w.cwnd);
    let cwnd1 = r.w.cwnd;
    // more CE in the same round (packets sent before the reduction): no second reduction
    exchange_marked(&mut q, at(51), at(101), &pkts[1..6], |h| h.ecn = Ecn::Ce);
    assert_eq!(q.paths[0].rec.ecn.reductions, 1);
    assert_eq!(q.paths[0].rec.w.cwnd, cwnd1);
    assert_eq!(q.paths[0].ecn_received().ce, 6);
    // nothing was retransmitted
    assert_eq!(q.paths[0].stats.retransmits, 0);
}

#[test]
fn a_path_that_clears_the_marks_fails_validation_and_stops_marking() {
    use crate::net::Ecn;
    let mut q = ecn_conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let (_, next) = exchange_marked(&mut q, at(50), at(100), &pkts[..4], |h| h.ecn = Ecn::NotEct);
    assert_eq!(q.paths[0].rec.ecn.state, Some(ecn::EcnState::Failed));
    assert!(!next.is_empty() && next.iter().all(|h| h.ecn == Ecn::NotEct));
    // a path that keeps them validates
    let mut q = ecn_conn();
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    let (_, next) = exchange_marked(&mut q, at(50), at(100), &pkts[..4], |_| {});
    assert_eq!(q.paths[0].rec.ecn.state, Some(ecn::EcnState::Capable));
    assert!(next.iter().all(|h| h.ecn == Ecn::Ect0));
}

#[test]
fn reno_halves_the_congestion_window_not_the_flight() {
    use super::recovery::Recovery;
    use crate::cc::Window;
    use crate::net::Ecn;
    let mss = 1472u64;
    let w = Window { cwnd: 20 * mss, ssthresh: u64::MAX, mss };
    let mut r = Recovery::new(RTT, w, Controller::by_name("reno").unwrap(), ms(25));
    for _ in 0..20 {
        r.on_sent(SimTime::ZERO, mss as u32, None, false, Ecn::NotEct);
    }
    // 3 to 5 acknowledged: 0 to 2 lost, found with 17 packets in flight of a 20-packet window
    let s = r.on_ack(at(100), &[(3, 5)], Dur::ZERO, None, &[], 0);
    assert_eq!(s.lost_packets.len(), 3);
    // RFC 9002 §7.3.2: half the window (10 packets), where half the flight would be 8.5
    assert_eq!(r.w.ssthresh, 10 * mss);
    assert_eq!(r.w.cwnd, 10 * mss);
}

#[test]
fn a_stream_per_write_is_limited_by_max_streams_until_the_receiver_reads_streams_whole() {
    // 120 one-packet frames: the first 100 streams may open, the rest wait for MAX_STREAMS
    let mut q = conn_with(cfg(4_000_000), "reno").with_streams(true, true);
    q.paths[0].rec.w.cwnd = 1 << 30;
    for _ in 0..120 {
        q.write_with(1000, 0);
    }
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(q.next_offset, 100_000, "MAX_STREAMS: 100 streams");
    // a packet carries the rest of one stream and the start of the next (RFC 9000 §12.4)
    assert_eq!(pkts.len(), 70);
    let mut tx = Tx::default();
    let mut ends = Vec::new();
    for h in pkts.iter().rev() {
        if let Arrival::Message { end } = q.on_packet(at(50), 0, h, &mut tx) {
            ends.push(end);
            ends.extend(std::iter::from_fn(|| q.take_message()));
        }
    }
    // delivered newest first, each stream whole as soon as its own bytes are in
    assert_eq!(ends[0], 100_000);
    ends.sort();
    assert_eq!(ends, (1..=100).map(|k| 1000 * k).collect::<Vec<u64>>());
    let acks = take(&mut tx, true);
    let limits: Vec<u64> = acks.iter().filter_map(|(a, _)| q.ack_record(a.ack).unwrap().max_streams).collect();
    // the last packet says the sender is blocked on streams: the first stream read raises
    // the limit at once, then steps of at least a quarter of the initial limit (a packet
    // that completes two streams may step one further)
    assert!(pkts[69].blocked && !pkts[0].blocked);
    assert_eq!(limits, [101, 126, 151, 177]);
    // the ACKs back, the last first: it acknowledges every packet (the earlier ones, of the
    // newest packets alone, would have the sender take the others for lost)
    for (a, _) in acks.iter().rev() {
        q.on_packet(at(100), 0, a, &mut tx);
    }
    q.poll_transmit(at(100), &mut tx);
    assert!(!take(&mut tx, false).is_empty());
    assert_eq!(q.next_offset, 120_000, "the waiting streams open");
}

#[test]
fn a_recovery_period_ends_only_with_a_packet_sent_in_it() {
    use super::recovery::Recovery;
    use crate::cc::Window;
    use crate::net::Ecn;
    let mss = 1472u64;
    let w = Window { cwnd: 20 * mss, ssthresh: u64::MAX, mss };
    let mut r = Recovery::new(RTT, w, Controller::by_name("reno").unwrap(), ms(25));
    for _ in 0..20 {
        r.on_sent(SimTime::ZERO, mss as u32, None, false, Ecn::NotEct);
    }
    // the loss found on this ACK begins the period: the packets it acknowledges were sent
    // before, so the period goes on (RFC 9002 §7.3.2)
    r.on_ack(at(100), &[(3, 5)], Dur::ZERO, None, &[], 0);
    assert!(r.in_recovery, "the ACK that began the period ended it");
    assert_eq!(r.stats.congestion_events, 1);
    // a packet sent at the very instant the period began is sent in it
    let pn = r.on_sent(at(100), mss as u32, None, false, Ecn::NotEct);
    // more packets sent before the period: acknowledged, the period goes on
    r.on_ack(at(150), &[(6, 8), (3, 5)], Dur::ZERO, None, &[], 0);
    assert!(r.in_recovery);
    let cwnd = r.w.cwnd;
    r.on_ack(at(200), &[(pn, pn), (3, 8)], Dur::ZERO, None, &[], 0);
    assert!(!r.in_recovery, "the packet sent as the period began did not end it");
    assert_eq!(r.stats.congestion_events, 1);
    assert!(r.w.cwnd >= cwnd);
}

#[test]
fn the_scheduler_is_told_the_priority_of_lost_data_that_goes_next() {
    // an urgent frame (3 packets) then an ordinary one; the urgent frame's first packet is
    // lost: while it waits to go again, the data that goes next is urgent, though the next
    // new data is not
    let mut q = conn_with(cfg(4_000_000), "reno").with_streams(true, true);
    q.write_with(3 * 1400, 1);
    q.write_with(20 * 1400, 0);
    let pkts = send(&mut q, SimTime::ZERO);
    q.write_with(1400, 0);
    let mut tx = Tx::default();
    for h in &pkts[1..] {
        q.on_packet(at(50), 0, h, &mut tx);
    }
    for (a, _) in take(&mut tx, true) {
        q.on_packet(at(100), 0, &a, &mut tx);
    }
    assert_eq!(q.rtx.front().map(|r| r.0), Some(0), "the urgent frame's first packet is lost");
    assert_eq!(q.streams.streams[q.streams.next_stream().unwrap()].priority, 0);
    assert_eq!(q.next_priority(), 1);
}

#[test]
fn po_mptcp_places_an_urgent_stream_on_the_best_path_and_ordinary_ones_as_its_standard_scheduler() {
    // PO-MPTCP over in-order: ordinary data fills path 0 first, urgent data takes the path of
    // lowest RTT (path 1, 40 ms against 100 ms)
    let mut q = two_paths("po_mptcp_in_order", "reno", ms(40)).with_streams(true, true);
    let mut tx = Tx::default();
    validate_path_1(&mut q, &mut tx);
    q.write_with(20 * 1400, 0);
    q.write_with(5 * 1400, 1);
    q.poll_transmit(at(40), &mut tx);
    let sent = take_routed(&mut tx, false);
    let urgent = |h: &QuicHeader| h.offset >= 20 * 1400;
    assert_eq!(sent.iter().filter(|p| urgent(&p.0)).count(), 5);
    assert!(sent.iter().filter(|p| urgent(&p.0)).all(|p| p.1 == 1), "urgent data on the lowest RTT");
    assert!(sent.iter().take(5).all(|p| urgent(&p.0)), "urgent stream first");
    assert_eq!(sent.iter().filter(|p| !urgent(&p.0) && p.1 == 0).count(), 10, "ordinary data fills path 0");
}

// ----- several STREAM frames in one packet (RFC 9000 §12.4) -----

/// A connection with a stream per write and three frames of 300, 500 and 2,000 bytes.
fn three_small_frames() -> QuicConn {
    let mut q = conn_with(cfg(4_000_000), "reno").with_streams(true, false);
    for len in [300, 500, 2000] {
        q.write_with(len, 0);
    }
    q
}

#[test]
fn small_frames_share_a_packet_each_with_its_own_header() {
    let mut q = three_small_frames();
    q.qlog = Some(qlog::Qlog::new("t"));
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    let pkts = take(&mut tx, false);
    assert_eq!(pkts.len(), 2);
    // 1,446 bytes of frames in a full packet: streams 2 and 6 whole, each frame with a
    // 4-byte header (type, stream ID, length of 2 bytes), then 634 bytes of stream 10
    let (h, size) = pkts[0];
    assert_eq!(size, 1500);
    assert_eq!(q.stream_frames(&h), vec![(0, 300), (300, 500), (800, 634)]);
    assert_eq!(q.stream_frames(&pkts[1].0), vec![(1434, 1366)], "the rest of stream 10, at its offset 634");
    assert_eq!(pkts[1].1, 28 + 9 + 1 + 16 + (1 + 1 + 2 + 2) + 1366);
    assert_eq!(q.paths[0].stats.bytes_sent, 2800);
    // qlog lists every frame of the packet
    let text = q.qlog.take().unwrap().into_text();
    let sent: Vec<serde_json::Value> = text
        .split('\x1e')
        .skip(2)
        .map(|r| serde_json::from_str::<serde_json::Value>(r).unwrap())
        .filter(|e| e["name"] == "quic:packet_sent")
        .collect();
    let frames = &sent[0]["data"]["frames"];
    let ids: Vec<u64> = frames.as_array().unwrap().iter().map(|f| f["stream_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [2, 6, 10]);
    assert_eq!((frames[0]["fin"].as_bool(), frames[1]["fin"].as_bool(), frames[2]["fin"].as_bool()), (Some(true), Some(true), None));
    assert_eq!(sent[1]["data"]["frames"][0]["offset"], 634);
    // the receiver reads both whole streams of the first packet at once
    assert_eq!(q.on_packet(at(50), 0, &h, &mut tx), Arrival::Message { end: 300 });
    assert_eq!((q.take_message(), q.take_message()), (Some(800), None));
    assert_eq!(q.on_packet(at(50), 0, &pkts[1].0, &mut tx), Arrival::Message { end: 2800 });
    assert_eq!(q.take_message(), None);
}

#[test]
fn each_frame_of_a_lost_packet_is_sent_again() {
    // the first packet (three frames) is lost; three later ones are acknowledged
    let mut q = three_small_frames();
    for _ in 0..4 {
        q.write_with(1400, 0);
    }
    let pkts = send(&mut q, SimTime::ZERO);
    assert!(pkts.len() >= 5 && pkts[0].more);
    let again = exchange(&mut q, at(50), at(100), &pkts, &[0]);
    assert_eq!(q.paths[0].rec.stats.packets_lost, 1);
    // its three ranges leave again, together, in one new packet
    assert_eq!(again.len(), 1);
    assert!(again[0].retx && again[0].pn > pkts.last().unwrap().pn);
    assert_eq!(q.stream_frames(&again[0]), vec![(0, 300), (300, 500), (800, 634)]);
    let mut tx = Tx::default();
    assert_eq!(q.on_packet(at(150), 0, &again[0], &mut tx), Arrival::Message { end: 300 });
    assert_eq!(std::iter::from_fn(|| q.take_message()).collect::<Vec<_>>(), [800, 2800]);
    // acknowledged (after max_ack_delay), the whole of it leaves the send buffer
    q.on_timer(at(175), 0, TimerKind::DelAck, &mut tx);
    for (a, _) in take(&mut tx, true) {
        q.on_packet(at(200), 0, &a, &mut tx);
    }
    assert_eq!(q.unacked(), 0);
}

#[test]
fn a_redundant_copy_carries_every_frame_of_the_packet() {
    let mut q = two_paths("redundant", "reno", ms(40)).with_streams(true, false);
    let mut tx = Tx::default();
    validate_path_1(&mut q, &mut tx);
    for len in [300, 500, 2000] {
        q.write_with(len, 0);
    }
    q.poll_transmit(at(40), &mut tx);
    let sent = take_routed(&mut tx, false);
    let frames = |k: u8| sent.iter().filter(|p| p.1 == k).map(|p| q.stream_frames(&p.0)).collect::<Vec<_>>();
    assert_eq!(frames(0)[0], vec![(0, 300), (300, 500), (800, 634)]);
    assert_eq!(frames(0), frames(1), "each packet and its copy carry the same frames");
    assert_eq!(q.paths[1].stats.bytes_sent, 2800);
}

// ----- the ACK frequency extension -----

use super::ack_frequency::AckFrequencySpec;
use super::conn::ACK_FREQUENCY_PACKET;

fn with_ack_frequency(threshold: u64, reordering: u64) -> QuicConn {
    conn().with_ack_frequency(Some(AckFrequencySpec::Fixed { threshold, max_ack_delay: ms(40), reordering }))
}

/// An ack-eliciting packet without stream data (as a PING), numbered `pn`.
fn ping(pn: u64, immediate: bool) -> QuicHeader {
    QuicHeader {
        pn,
        offset: 0,
        sent_at: SimTime::ZERO,
        len: 0,
        ack: 0,
        path: 0,
        is_ack: false,
        retx: false,
        blocked: false,
        more: false,
        immediate,
        ecn: crate::net::Ecn::NotEct,
    }
}

/// Sends the first flight and delivers its ACK_FREQUENCY packet at `t`.
fn take_request(q: &mut QuicConn, t: SimTime) -> (QuicHeader, u32) {
    q.write(1 << 20);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    let first = take(&mut tx, false)[0];
    assert_eq!(first.0.ack, ACK_FREQUENCY_PACKET, "the frame goes first, in a packet of its own");
    q.on_packet(t, 0, &first.0, &mut tx);
    first
}

#[test]
fn ack_frequency_frames_are_sized_on_the_wire() {
    let mut q = with_ack_frequency(10, 1);
    let (h, size) = take_request(&mut q, at(50));
    // IP and UDP, short header, packet number 0 in one byte, the frame (type 0xaf in two
    // bytes, sequence 0, threshold 10, 40,000 µs in four bytes, reordering 1), AEAD tag
    assert_eq!((h.offset, size), (0, 28 + 9 + 1 + (2 + 1 + 1 + 4 + 1) + 16));
    assert_eq!(q.ack_frequency.as_ref().unwrap().sent.len(), 1);
    assert_eq!(q.paths[0].rec.max_ack_delay, ms(40), "recovery takes the larger delay while the frame is in flight");
}

#[test]
fn the_receiver_holds_its_ack_until_the_threshold_is_passed() {
    let mut q = with_ack_frequency(10, 1);
    take_request(&mut q, at(50));
    assert_eq!(q.paths[0].rx_timer(), Some(at(90)), "the frame's packet waits for the requested 40 ms");
    let mut tx = Tx::default();
    // the frame's packet was the first ack-eliciting packet; nine more make ten
    for pn in 1..10 {
        q.on_packet(at(51), 0, &ping(pn, false), &mut tx);
        assert!(take(&mut tx, true).is_empty(), "packet {pn}: at most 10 without an ACK");
    }
    q.on_packet(at(52), 0, &ping(10, false), &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1, "the eleventh is more than the threshold");
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ranges, vec![(0, 10)]);
    // a lone packet waits for the requested max_ack_delay, 40 ms
    q.on_packet(at(60), 0, &ping(11, false), &mut tx);
    assert!(take(&mut tx, true).is_empty());
    assert_eq!(q.paths[0].rx_timer(), Some(at(100)));
}

#[test]
fn a_packet_of_several_frames_is_not_read_as_an_ack_frequency_frame() {
    // with further STREAM frames the `ack` field indexes the frame log, so index 2 (the mark
    // of an ACK_FREQUENCY packet) must not make the receiver apply the sender's request
    let mut q = with_ack_frequency(10, 1);
    q.write(1 << 20);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    assert_eq!(q.ack_frequency.as_ref().unwrap().sent.len(), 1);
    let h = QuicHeader { len: 100, ack: ACK_FREQUENCY_PACKET, more: true, ..ping(1, false) };
    q.on_packet(at(50), 0, &h, &mut tx);
    assert!(q.requested.is_none(), "a data packet's frame log index read as ACK_FREQUENCY");
}

#[test]
fn without_the_frame_the_receiver_acknowledges_every_second_packet() {
    // the same packets to a receiver that got no ACK_FREQUENCY frame
    let mut q = conn();
    let mut tx = Tx::default();
    q.on_packet(at(50), 0, &ping(0, false), &mut tx);
    q.on_packet(at(50), 0, &ping(1, false), &mut tx);
    assert_eq!(take(&mut tx, true).len(), 1);
}

#[test]
fn immediate_ack_is_answered_at_once() {
    let mut q = with_ack_frequency(10, 1);
    take_request(&mut q, at(50));
    let mut tx = Tx::default();
    q.on_packet(at(51), 0, &ping(1, false), &mut tx);
    assert!(take(&mut tx, true).is_empty());
    q.on_packet(at(52), 0, &ping(2, true), &mut tx);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().ranges, vec![(0, 2)]);
}

#[test]
fn a_probe_timeout_sends_immediate_ack_with_the_first_probe() {
    let mut q = with_ack_frequency(10, 1);
    q.write(1 << 20);
    let mut tx = Tx::default();
    q.poll_transmit(SimTime::ZERO, &mut tx);
    take(&mut tx, false);
    let pto = timers(&tx, TimerKind::Rto)[0];
    q.on_timer(pto, 0, TimerKind::Rto, &mut tx);
    let probes = take(&mut tx, false);
    assert_eq!(probes.len(), 2);
    assert_eq!((probes[0].0.immediate, probes[1].0.immediate), (true, false));
    // the frame's byte comes out of the stream data: both probes are full packets
    assert_eq!((probes[0].1, probes[1].1), (1500, 1500));
    assert_eq!(probes[0].0.len + 1, probes[1].0.len);
    assert_eq!(q.ack_frequency.as_ref().unwrap().immediate_acks, 1);
}

#[test]
fn the_reordering_threshold_lets_a_small_gap_wait() {
    for (reordering, acked_at) in [(1, 4), (3, 6), (0, 11)] {
        let mut q = with_ack_frequency(10, reordering);
        take_request(&mut q, at(50));
        let mut tx = Tx::default();
        let mut first_ack = None;
        // packet 3 is missing
        for pn in [1, 2, 4, 5, 6, 7, 8, 9, 10, 11] {
            q.on_packet(at(51), 0, &ping(pn, false), &mut tx);
            if !take(&mut tx, true).is_empty() && first_ack.is_none() {
                first_ack = Some(pn);
            }
        }
        assert_eq!(first_ack, Some(acked_at), "reordering threshold {reordering}");
    }
}

#[test]
fn a_lost_ack_frequency_frame_is_sent_again_with_a_new_sequence_number() {
    let mut q = with_ack_frequency(10, 1);
    q.write(1 << 20);
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(pkts[0].ack, ACK_FREQUENCY_PACKET);
    let out = exchange(&mut q, at(50), at(100), &pkts, &[0]);
    let again: Vec<_> = out.iter().filter(|h| h.ack == ACK_FREQUENCY_PACKET).collect();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].offset, 1);
    assert_eq!(q.paths[0].rec.max_ack_delay, ms(40));
}

// ----- pacing -----

/// Departure times of the first `n` packets of a sender whose window is 100 packets,
/// following its pacing wake-ups.
fn departures(pacing: bool, n: usize) -> Vec<(SimTime, u32)> {
    let mut q = conn().with_pacing(pacing);
    q.paths[0].rec.w.cwnd = 100 * 1472;
    q.write(1 << 24);
    let mut out = Vec::new();
    let mut now = SimTime::ZERO;
    let mut tx = Tx::default();
    q.poll_transmit(now, &mut tx);
    while out.len() < n {
        out.extend(take(&mut tx, false).into_iter().map(|(_, size)| (now, size)));
        let Some(wake) = timers(&tx, TimerKind::Pace).into_iter().min() else { break };
        tx.out.clear();
        now = wake;
        q.on_timer(now, 0, TimerKind::Pace, &mut tx);
    }
    out
}

#[test]
fn a_paced_sender_sends_bursts_spaced_at_the_rate() {
    // 100 packets per 100 ms RTT: N = 1.25 gives 1.25 packets per ms, bursts of 10 packets
    // (2 ms of the window is 2 packets, raised to 10; 10 ms of it is 10)
    let d = departures(true, 60);
    let rate = 1.25 * 100.0 * 1472.0 / 0.1; // bytes per second
    for k in 10..60 {
        let burst: u32 = d[k - 10..k].iter().map(|p| p.1 - 28).sum();
        let gap = (d[k].0 - d[k - 10].0).0 as f64 / 1e9;
        assert!(gap >= burst as f64 / rate * 0.99, "packet {k}: {gap} s after the packet 10 before, {burst} bytes at {rate} B/s");
    }
    // the bucket was filled for the initial window of 10 packets per 100 ms: 10 ms of it, one
    // packet; then bursts of 10
    assert_eq!((d[0].0, d[1].0, d[10].0, d[11].0), (SimTime::ZERO, at(8), at(8), at(16)));
    // unpaced: the whole window at once
    let u = departures(false, 100);
    assert_eq!(u.len(), 100);
    assert!(u.iter().all(|p| p.0 == SimTime::ZERO));
}

fn resetting(rcv_buf: u64) -> QuicConn {
    conn_with(cfg(rcv_buf), "reno").with_streams(true, false).with_reset_late(true)
}

/// The RESET_STREAM packets among `pkts`.
fn resets(pkts: &[QuicHeader]) -> Vec<QuicHeader> {
    pkts.iter().filter(|h| h.ack == super::conn::RESET_STREAM_PACKET && !h.more).copied().collect()
}

#[test]
fn a_late_streams_lost_data_is_not_sent_again_after_the_reset() {
    // frame A (stream 2) past its deadline at 80 ms, B and C later
    let mut q = resetting(4_000_000);
    q.qlog = Some(qlog::Qlog::new("t"));
    q.write_until(1000, 0, Some(at(80)));
    q.write_until(4000, 0, Some(at(900)));
    q.write_until(4000, 0, Some(at(900)));
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(q.stream_frames(&pkts[0])[0], (0, 1000));
    // the first packet is lost; at 100 ms its loss is found, A is late
    let mut tx = Tx::default();
    for h in &pkts[1..] {
        q.on_packet(at(50), 0, h, &mut tx);
    }
    for (a, _) in take(&mut tx, true) {
        q.on_packet(at(100), 0, &a, &mut tx);
    }
    q.poll_transmit(at(100), &mut tx);
    let out = take(&mut tx, false);
    let again: Vec<QuicHeader> = out.iter().map(|p| p.0).collect();
    assert_eq!(q.paths[0].rec.stats.packets_lost, 1);
    // B's part of the lost packet goes again, A's never
    let sent: Vec<recovery::StreamRange> = again.iter().filter(|h| h.len > 0).flat_map(|h| q.stream_frames(h)).collect();
    assert!(sent.iter().any(|&(off, _)| off == 1000), "B's lost bytes are sent again: {sent:?}");
    assert!(sent.iter().all(|&(off, _)| off >= 1000), "none of A's: {sent:?}");
    // one RESET_STREAM: type, stream ID 2, DELIVERY_TIMEOUT, final size 1000 (two bytes)
    let r = resets(&again);
    assert_eq!(r.len(), 1);
    let size = out.iter().find(|p| p.0.pn == r[0].pn).unwrap().1;
    assert_eq!(wire::reset_stream_frame(2, wire::DELIVERY_TIMEOUT, 1000), 1 + 1 + 1 + 2);
    assert_eq!(size, wire::IP_UDP + wire::SHORT_HEADER + 1 + 5 + wire::AEAD_TAG);
    assert_eq!(q.reset_late.as_ref().unwrap().sent[0][..], [(0, 1000)]);
    // A left the send buffer
    assert_eq!(q.unacked(), 8000 - q.acked.count_from(1000));
    let text = q.qlog.take().unwrap().into_text();
    assert!(text.contains(r#"{"error_code":2,"final_size":1000,"frame_type":"reset_stream","stream_id":2}"#), "qlog has the frame");
    // lost, the frame goes again in a new packet (the time threshold finds it)
    let later: Vec<QuicHeader> = again.iter().filter(|h| h.len > 0).copied().collect();
    for h in &later {
        q.on_packet(at(150), 0, h, &mut tx);
    }
    q.on_timer(at(175), 0, TimerKind::DelAck, &mut tx);
    for (a, _) in take(&mut tx, true) {
        q.on_packet(at(200), 0, &a, &mut tx);
    }
    let deadline = q.paths[0].rec.timer().expect("the loss timer");
    q.on_timer(deadline, 0, TimerKind::Rto, &mut tx);
    let again = resets(&take(&mut tx, false).into_iter().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(again.len(), 1, "RESET_STREAM sent again");
    assert_eq!((again[0].offset, q.reset_late.as_ref().unwrap().frames), (1, 2));
    assert_eq!(q.reset_late.as_ref().unwrap().sent[1][..], [(0, 1000)]);
}

#[test]
fn a_reset_streams_final_size_is_what_was_sent_and_the_receiver_releases_its_credit() {
    // a 4,000-byte window: A (6,000 bytes) sends 4,000, then waits for credit
    let mut q = resetting(4000);
    q.write_until(6000, 0, Some(at(10)));
    q.write_until(3000, 0, Some(at(900)));
    let pkts = send(&mut q, SimTime::ZERO);
    assert_eq!(pkts.iter().map(|h| h.len as u64).sum::<u64>(), 4000, "the stream's credit");
    // every packet lost; at 20 ms A is late: its final size is the bytes it sent
    let sent_a = q.streams.streams[0].sent;
    let out = send(&mut q, at(20));
    let r = resets(&out);
    assert_eq!(r.len(), 1);
    assert_eq!(q.reset_late.as_ref().unwrap().sent[0][..], [(0, sent_a)]);
    assert_eq!(q.unsent, 6000 - sent_a);
    // the connection's credit counts the final size: A's bytes took it, B is still blocked
    assert_eq!(q.next_offset, sent_a);
    assert!(out.iter().all(|h| h.len == 0));
    // the receiver: A closed and counted, its final size released in MAX_DATA at once
    let mut tx = Tx::default();
    q.on_packet(at(30), 0, &r[0], &mut tx);
    assert_eq!(q.streams.reset, 1);
    assert_eq!(q.released, sent_a);
    let acks = take(&mut tx, true);
    assert_eq!(acks.len(), 1);
    assert_eq!(q.ack_record(acks[0].0.ack).unwrap().max_data, Some(sent_a + 4000));
    // A's data arriving later is discarded: nothing delivered, no credit counted twice
    for h in &pkts {
        assert_eq!(q.on_packet(at(40), 0, h, &mut tx), Arrival::Nothing);
    }
    q.on_packet(at(40), 0, &r[0], &mut tx);
    assert_eq!((q.streams.reset, q.released), (1, sent_a), "a duplicate counts once");
    // B may go now
    for (a, _) in take(&mut tx, true) {
        q.on_packet(at(60), 0, &a, &mut tx);
    }
    let more = send(&mut q, at(60));
    assert!(more.iter().any(|h| h.len > 0 && h.offset >= 6000), "B is sent");
}

#[test]
fn a_stream_read_whole_is_not_counted_as_reset() {
    let mut q = resetting(4_000_000);
    q.write_until(1000, 0, Some(at(10)));
    let pkts = send(&mut q, SimTime::ZERO);
    let mut tx = Tx::default();
    assert_eq!(q.on_packet(at(5), 0, &pkts[0], &mut tx), Arrival::Message { end: 1000 });
    // the ACK is lost: the sender resets the stream, which the receiver had read
    let r = resets(&send(&mut q, at(20)));
    assert_eq!(r.len(), 1);
    q.on_packet(at(30), 0, &r[0], &mut tx);
    assert_eq!(q.streams.reset, 0);
    assert_eq!(q.released, 0);
}

#[test]
fn without_reset_late_a_late_frame_is_sent_whole() {
    let mut q = conn_with(cfg(4_000_000), "reno").with_streams(true, false);
    q.write_until(1000, 0, Some(at(10)));
    assert!(send(&mut q, at(20)).iter().any(|h| h.len == 1000));
}
