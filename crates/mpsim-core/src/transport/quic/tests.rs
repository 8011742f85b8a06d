//! Connection tests on hand-built exchanges: packets are taken from the sender's output,
//! dropped or delivered to the receiving end, and the ACKs it answers with are fed back.

use super::*;
use crate::cc::Controller;
use crate::net::{Header, QuicHeader};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::PathRoutes;
use crate::transport::{Action, Arrival, TimerKind, Tx};

const RTT: Dur = Dur::from_millis(100);

fn cfg(rcv_buf: u64) -> QuicConfig {
    QuicConfig { max_datagram: 1472, max_ack_delay: Dur::from_millis(25), rcv_buf, initial_window: 10 }
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
