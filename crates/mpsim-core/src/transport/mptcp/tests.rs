//! The Multipath TCP connection as a component: a connection is built in a named state, and
//! packets made from templates are handed to it; the tests read the actions it answers with.

use super::*;
use crate::cc::Controller;
use crate::net::{AckHeader, DataHeader, Ecn};
use crate::transport::tcp::SenderConfig;
use crate::transport::tcp::{self, PathRoutes};
use crate::transport::Tx;

const MSS: u32 = 1000;
const HEADER: u32 = 40;
const MS: u64 = 1_000_000;

fn subflow(k: usize, rtt_ms: u64, backup: bool) -> Subflow {
    // no tail loss probe: the first timer to fire is the retransmission timeout
    let cfg = SenderConfig { mss: MSS, initial_window: 4, ignore_rwnd: true, tlp: false, ..SenderConfig::default() };
    let rcfg = ReceiverConfig { buffer: u64::MAX / 4, ack_every: 1, delack_timeout: Dur::from_millis(40), ..ReceiverConfig::default() };
    let path = PathRoutes { name: format!("p{k}"), fwd: 2 * k as u32, rev: 2 * k as u32 + 1 };
    let tcp = tcp::Subflow::new(path, &cfg, rcfg, Controller::by_name("reno").unwrap(), Dur::from_millis(rtt_ms));
    Subflow::new(tcp, backup, SimTime::ZERO, true)
}

/// A connection over a 10 ms and a 100 ms subflow (the second a backup if asked). Its
/// invariant checks, which compare both ends, stay off: the tests forge ACKs for data the
/// receiving end never saw.
fn conn(sched: &str, rcv_buf: u64, backup: bool) -> MptcpConn {
    let subs = vec![subflow(0, 10, false), subflow(1, 100, backup)];
    MptcpConn::new(subs, Sched::by_name(sched).unwrap(), rcv_buf, HEADER, MSS)
}

/// Data segments sent, as (subflow, seq, dsn, len, retransmission).
fn data(tx: &Tx) -> Vec<(u8, u64, u64, u32, bool)> {
    tx.out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { sub, header: Header::TcpData(h), .. } => Some((*sub, h.seq, h.dsn, h.len, h.retx)),
            _ => None,
        })
        .collect()
}

fn acks(tx: &Tx) -> Vec<(u8, AckHeader)> {
    tx.out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { sub, header: Header::TcpAck(h), .. } => Some((*sub, *h)),
            _ => None,
        })
        .collect()
}

fn rto_timer(tx: &Tx, sub: u16) -> Option<SimTime> {
    tx.out.iter().find_map(|a| match a {
        Action::Timer { sub: s, kind: TimerKind::Rto, at } if *s == sub => Some(*at),
        _ => None,
    })
}

/// An ACK template: cumulative ACK `ack` on the subflow, DATA_ACK and window.
fn ack(ack: u64, data_ack: u64, wnd: u64) -> Header {
    let mut h = AckHeader::new(ack, wnd);
    h.data_ack = data_ack;
    Header::TcpAck(h)
}

fn segment(seq: u64, dsn: u64, len: u32) -> Header {
    Header::TcpData(DataHeader {
        seq,
        dsn,
        len,
        retx: false,
        psh: false,
        sent_at: SimTime::ZERO,
        cw: false,
        ecn: Ecn::NotEct,
        cwr: false,
        echo: SimTime::ZERO,
    })
}

#[test]
fn new_data_fills_the_fast_subflow_first_and_carries_its_mapping() {
    let mut c = conn("lowest_rtt", 1 << 20, false);
    c.check = true;
    c.write(10 * MSS as u64, 0);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = data(&tx);
    // initial windows of 4 segments each: the 10 ms subflow first, the rest on the other
    assert_eq!(sent.iter().filter(|s| s.0 == 0).count(), 4);
    assert_eq!(sent.iter().filter(|s| s.0 == 1).count(), 4);
    assert_eq!(sent[0], (0, 0, 0, MSS, false));
    assert_eq!(sent[4], (1, 0, 4000, MSS, false), "subflow 1's own sequence space starts at 0");
    assert_eq!(c.dsn_nxt, 8000);
    // the two left over wait for window room; each subflow armed its retransmission timer
    assert_eq!(c.unscheduled(), 2000);
    assert!(rto_timer(&tx, 0).is_some() && rto_timer(&tx, 1).is_some());
    // every segment on the wire carries headers plus the DSS mapping
    for a in &tx.out {
        if let Action::Packet { size, header: Header::TcpData(h), .. } = a {
            assert_eq!(*size, h.len + HEADER + DSS_MAPPING_BYTES);
        }
    }
}

#[test]
fn data_ack_and_window_ride_on_every_subflow_ack() {
    let mut c = conn("lowest_rtt", 8 * MSS as u64, false);
    let mut tx = Tx::default();
    // DSN 1000..2000 arrives first on subflow 1: held out of order, the window shrinks
    let a = c.on_packet(SimTime::ZERO, 1, &segment(0, 1000, MSS), &mut tx);
    assert_eq!(a, Arrival::Nothing);
    let (sub, h) = acks(&tx)[0];
    assert_eq!((sub, h.ack, h.data_ack, h.wnd()), (1, 1000, 0, 8000), "the edge never moves left");
    assert_eq!(acks(&tx)[0].1.data_ack, 0);
    // DSN 0..1000 on subflow 0 fills the hole: both chunks reach the application
    tx.out.clear();
    let a = c.on_packet(SimTime::ZERO, 0, &segment(0, 0, MSS), &mut tx);
    assert_eq!(a, Arrival::Stream { upto: 2000 });
    let (sub, h) = acks(&tx)[0];
    assert_eq!((sub, h.ack, h.data_ack, h.wnd()), (0, 1000, 2000, 8000));
    // the ACK costs the header, the DATA_ACK option and no SACK
    match tx.out[0] {
        Action::Packet { size, .. } => assert_eq!(size, HEADER + DATA_ACK_BYTES),
        _ => panic!("an ACK first"),
    }
    assert_eq!(c.o3_max, 2000, "|0 - 2000|: the second chunk arrived 2000 bytes before its place");
}

#[test]
fn the_window_scale_caps_the_connection_window() {
    // 8 segments of buffer, at most 4 in the window field (tcp.window_scale)
    let mut c = conn("lowest_rtt", 8 * MSS as u64, false);
    c.limit_window(4 * MSS as u64);
    let mut tx = Tx::default();
    c.on_packet(SimTime::ZERO, 1, &segment(0, 1000, MSS), &mut tx);
    let (_, h) = acks(&tx)[0];
    assert_eq!((h.data_ack, h.wnd()), (0, 4000));
    // the hole fills: 4 segments beyond the DATA_ACK, the buffer's headroom unused
    tx.out.clear();
    c.on_packet(SimTime::ZERO, 0, &segment(0, 0, MSS), &mut tx);
    let (_, h) = acks(&tx)[0];
    assert_eq!((h.data_ack, h.wnd()), (2000, 4000));
}

#[test]
fn receive_window_blocks_new_data_and_the_time_is_measured() {
    // a window of 3 segments: new data stops at DSN 3000 although both subflows have room
    let mut c = conn("lowest_rtt_plain", 3 * MSS as u64, false);
    c.write(20 * MSS as u64, 0);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    assert_eq!(c.dsn_nxt, 3000);
    assert!(data(&tx).iter().all(|s| s.2 + s.3 as u64 <= 3000), "nothing beyond the window");
    tx.out.clear();
    c.poll_transmit(SimTime(5 * MS), &mut tx);
    assert!(data(&tx).is_empty());
    assert_eq!(c.blocked_time(SimTime(7 * MS)), Dur(7 * MS), "blocked from the first pass on");
    // a DATA_ACK that opens the window ends the blocking and lets data go
    c.on_packet(SimTime(10 * MS), 0, &ack(3000, 3000, 3 * MSS as u64), &mut tx);
    tx.out.clear();
    c.poll_transmit(SimTime(10 * MS), &mut tx);
    assert_eq!(c.dsn_nxt, 6000);
    assert!(!data(&tx).is_empty());
    c.on_packet(SimTime(20 * MS), 0, &ack(6000, 6000, 100 * MSS as u64), &mut tx);
    c.poll_transmit(SimTime(20 * MS), &mut tx);
    assert_eq!(c.blocked_time(SimTime(30 * MS)), Dur(20 * MS), "blocked 0-10 and 10-20 ms, not after");
}

#[test]
fn a_timed_out_subflow_gives_its_data_to_the_other_and_is_avoided() {
    let mut c = conn("lowest_rtt_plain", 1 << 20, false);
    c.write(12 * MSS as u64, 0);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let on_slow: Vec<u64> = data(&tx).iter().filter(|s| s.0 == 1).map(|s| s.2).collect();
    assert_eq!(on_slow, vec![4000, 5000, 6000, 7000]);
    let deadline = rto_timer(&tx, 1).expect("subflow 1 armed its timer");
    // subflow 0's data is acknowledged: it has room again, but the unscheduled data goes first
    tx.out.clear();
    c.on_packet(SimTime(20 * MS), 0, &ack(4000, 4000, 1 << 20), &mut tx);
    // subflow 1 times out
    tx.out.clear();
    c.on_timer(deadline, 1, TimerKind::Rto, &mut tx);
    assert!(tx.out.iter().any(|a| matches!(a, Action::Note { sub: 1, kind: TraceKind::Timeout, seq: 0, dsn: 4000 })));
    assert!(!c.subs[1].usable, "potentially failed until new data is acknowledged on it");
    let sent = data(&tx);
    // the slow subflow retransmits its first segment itself ...
    assert!(sent.contains(&(1, 0, 4000, MSS, true)));
    // ... and the fast one carries copies of everything that was in flight on it, first
    let fast: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.2).collect();
    assert_eq!(&fast[..4], &[4000, 5000, 6000, 7000]);
    assert_eq!(c.reinjections, 4);
    // new data no longer goes to the failed subflow
    assert!(sent.iter().filter(|s| s.0 == 1).all(|s| s.4), "only retransmissions on subflow 1");
    // an ACK of new data on it makes it usable again
    c.on_packet(deadline + Dur(100 * MS), 1, &ack(1000, 4000, 1 << 20), &mut tx);
    assert!(c.subs[1].usable);
}

#[test]
fn backups_carry_data_only_when_no_regular_subflow_is_usable() {
    // subflow 1 is the backup, and faster this time
    let subs = vec![subflow(0, 100, false), subflow(1, 10, true)];
    let mut c = MptcpConn::new(subs, Sched::by_name("lowest_rtt").unwrap(), 1 << 20, HEADER, MSS);
    c.write(20 * MSS as u64, 0);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    assert!(data(&tx).iter().all(|s| s.0 == 0), "the regular subflow only, though slower and full");
    let deadline = rto_timer(&tx, 0).unwrap();
    tx.out.clear();
    c.on_timer(deadline, 0, TimerKind::Rto, &mut tx);
    // the regular subflow failed: the backup takes the data, starting with the copies
    let on_backup: Vec<u64> = data(&tx).iter().filter(|s| s.0 == 1).map(|s| s.2).collect();
    assert_eq!(&on_backup[..4], &[0, 1000, 2000, 3000]);
}

#[test]
fn stale_timer_events_are_ignored_and_early_ones_rearmed() {
    let mut c = conn("lowest_rtt", 1 << 20, false);
    c.write(MSS as u64, 0);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let deadline = rto_timer(&tx, 0).unwrap();
    tx.out.clear();
    // an event at another time than the pending one is stale
    c.on_timer(deadline + Dur(1), 0, TimerKind::Rto, &mut tx);
    assert!(tx.out.is_empty());
    // the data is acknowledged: the event at the deadline finds no timer running
    c.on_packet(SimTime(10 * MS), 0, &ack(1000, 1000, 1 << 20), &mut tx);
    tx.out.clear();
    c.on_timer(deadline, 0, TimerKind::Rto, &mut tx);
    assert!(data(&tx).is_empty() && c.subs[0].usable);
}

/// DSNs of the data segments sent, in order.
fn dsns(tx: &Tx) -> Vec<u64> {
    data(tx).iter().map(|s| s.2).collect()
}

/// Ordinary 0..2000, prioritised 2000..3000, ordinary 3000..13000, prioritised 13000..15000.
fn mixed_writes(c: &mut MptcpConn) {
    c.write(2 * MSS as u64, 0);
    c.write(MSS as u64, 1);
    c.write(10 * MSS as u64, 0);
    c.write(2 * MSS as u64, 1);
}

#[test]
fn priority_dequeue_hands_out_prioritised_data_before_older_ordinary_data() {
    // eight segments of window in all (4 + 4): the three prioritised ones go first, in DSN
    // order, then ordinary data in DSN order, skipping the prioritised chunk already sent
    let mut c = conn("po_mptcp", 1 << 20, false);
    mixed_writes(&mut c);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    assert_eq!(dsns(&tx), vec![2000, 13000, 14000, 0, 1000, 3000, 4000, 5000]);
    assert!(data(&tx).iter().all(|s| s.3 == MSS), "chunks end at the class boundaries");
    assert_eq!(c.dsn_nxt, 6000);
    assert_eq!(c.unscheduled(), 15_000 - 6000 - 2000, "the prioritised bytes ahead are not counted twice");
    // in DSN order without the dequeue: the prioritised data at the end is still waiting
    let mut f = conn("po_mptcp_fifo", 1 << 20, false);
    mixed_writes(&mut f);
    let mut tx = Tx::default();
    f.poll_transmit(SimTime::ZERO, &mut tx);
    assert_eq!(dsns(&tx), (0..8).map(|k| k * 1000).collect::<Vec<_>>());
    assert_eq!(f.unscheduled(), 7000);
}

#[test]
fn priority_dequeue_keeps_every_byte_once_and_reaches_the_end() {
    // a window of 3 segments: each DATA_ACK lets more go; every DSN is handed out exactly
    // once and dsn_nxt ends at the end of the data
    let mut c = conn("po_mptcp_in_order", 1 << 20, false);
    mixed_writes(&mut c);
    let mut sent = Vec::new();
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    sent.extend(dsns(&tx));
    let mut t = 0;
    while c.dsn_nxt < c.app_limit && t < 50 {
        t += 1;
        // acknowledge everything sent so far on both subflows
        tx.out.clear();
        for k in 0..2 {
            let nxt = c.subs[k].tcp.sender.snd_nxt();
            c.on_packet(SimTime(t * MS), k, &ack(nxt, 0, 1 << 20), &mut tx);
        }
        tx.out.clear();
        c.poll_transmit(SimTime(t * MS), &mut tx);
        sent.extend(dsns(&tx));
    }
    let mut sorted = sent.clone();
    sorted.sort();
    assert_eq!(sorted, (0..15).map(|k| k * 1000).collect::<Vec<_>>(), "each chunk once: {sent:?}");
    assert_eq!(&sent[..3], &[2000, 13000, 14000]);
    assert_eq!(c.unscheduled(), 0);
}

#[test]
fn prioritised_data_takes_the_fast_subflow_when_the_standard_scheduler_fills_the_slow_one_first() {
    // slow subflow first: in_order sends ordinary data there, PO-MPTCP's priority data goes
    // to the fast one. Cutting the priority signal off before the scheduler breaks this.
    let subs = vec![subflow(0, 100, false), subflow(1, 10, false)];
    let mut c = MptcpConn::new(subs, Sched::by_name("po_mptcp_in_order").unwrap(), 1 << 20, HEADER, MSS);
    c.write(2 * MSS as u64, 0);
    c.write(2 * MSS as u64, 1);
    let mut tx = Tx::default();
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let mut on: Vec<(u64, u8)> = data(&tx).iter().map(|s| (s.2, s.0)).collect();
    on.sort();
    assert_eq!(on, vec![(0, 0), (1000, 0), (2000, 1), (3000, 1)]);
    // the baseline puts everything on the first subflow
    let subs = vec![subflow(0, 100, false), subflow(1, 10, false)];
    let mut b = MptcpConn::new(subs, Sched::by_name("in_order").unwrap(), 1 << 20, HEADER, MSS);
    b.write(2 * MSS as u64, 0);
    b.write(2 * MSS as u64, 1);
    let mut tx = Tx::default();
    b.poll_transmit(SimTime::ZERO, &mut tx);
    assert!(data(&tx).iter().all(|s| s.0 == 0));
}

#[test]
fn a_pushed_segment_is_acknowledged_at_once_only_when_the_connection_holds_nothing() {
    // Linux's delayed ACKs on both subflows
    let linux = |k: usize| {
        let cfg = SenderConfig { mss: MSS, initial_window: 4, ignore_rwnd: true, ..SenderConfig::default() };
        let rcfg = ReceiverConfig { buffer: 1 << 30, linux_delack: true, ..ReceiverConfig::default() };
        let path = PathRoutes { name: format!("p{k}"), fwd: 2 * k as u32, rev: 2 * k as u32 + 1 };
        Subflow::new(
            tcp::Subflow::new(path, &cfg, rcfg, Controller::by_name("reno").unwrap(), Dur::from_millis(10)),
            false,
            SimTime::ZERO,
            true,
        )
    };
    let mut c = MptcpConn::new(vec![linux(0), linux(1)], Sched::by_name("linux_upstream").unwrap(), 1 << 30, HEADER, MSS);
    let pushed = |seq: u64, dsn: u64| match segment(seq, dsn, MSS) {
        Header::TcpData(h) => Header::TcpData(DataHeader { psh: true, ..h }),
        h => h,
    };
    let quick = crate::transport::tcp::delack::QUICKACKS as u64;
    let mut tx = Tx::default();
    // past subflow 0's quick ACKs
    for k in 0..quick {
        c.on_packet(SimTime::ZERO, 0, &segment(k * 1000, k * 1000, MSS), &mut tx);
    }
    tx.out.clear();
    // one segment pending on subflow 0, without PSH: the ACK waits
    c.on_packet(SimTime::ZERO, 0, &segment(quick * 1000, quick * 1000, MSS), &mut tx);
    assert!(acks(&tx).is_empty());
    // with PSH, and nothing held by the connection: acknowledged at once
    c.on_packet(SimTime::ZERO, 0, &segment((quick + 1) * 1000, (quick + 1) * 1000, MSS), &mut tx);
    tx.out.clear();
    c.on_packet(SimTime::ZERO, 0, &pushed((quick + 2) * 1000, (quick + 2) * 1000), &mut tx);
    assert_eq!(acks(&tx).len(), 1, "a pushed segment with the connection drained");
    // subflow 1 brings data from further ahead: the connection holds it out of order
    c.on_packet(SimTime::ZERO, 1, &segment(0, 100_000, MSS), &mut tx);
    tx.out.clear();
    c.on_packet(SimTime::ZERO, 0, &pushed((quick + 3) * 1000, (quick + 3) * 1000), &mut tx);
    assert!(acks(&tx).is_empty(), "the connection holds data out of order: the ACK waits");
}

/// Every subflow outside `maybe_available` is unavailable (what lets `any_available` look at
/// the others only).
fn assert_maybe_available_covers_the_available(c: &MptcpConn, when: &str) {
    for (k, v) in c.views.iter().enumerate() {
        if c.stale_views & (1 << k) == 0 && c.maybe_available & (1 << k) == 0 {
            assert!(!v.available(), "{when}: subflow {k} is available but not in maybe_available");
        }
    }
}

/// Drives `c` (four subflows, data written) through `steps` fixed pseudo-random events from
/// `seed`: after sending what it allows, one subflow in turn times out (about one event in
/// `timeout_one_in`) or has one to three more segments acknowledged. `check` runs after the
/// sending (false) and after the event (true) of each step. Returns the bytes acknowledged on
/// each subflow and the timeouts.
fn drive(
    c: &mut MptcpConn,
    seed: u64,
    steps: usize,
    timeout_one_in: u64,
    mut check: impl FnMut(&MptcpConn, usize, bool),
) -> ([u64; 4], u32) {
    let mut tx = Tx::default();
    let (mut sent, mut acked) = ([0u64; 4], [0u64; 4]);
    let mut now = SimTime::ZERO;
    let mut x = seed;
    let mut timeouts = 0;
    for step in 0..steps {
        c.poll_transmit(now, &mut tx);
        for (sub, seq, _, len, _) in data(&tx) {
            sent[sub as usize] = sent[sub as usize].max(seq + len as u64);
        }
        check(c, step, false);
        tx.out.clear();
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = (x >> 33) as usize % 4;
        now += Dur::from_millis(1);
        if (x >> 20).is_multiple_of(timeout_one_in) && sent[k] > acked[k] {
            // a retransmission timeout: the subflow's view is rebuilt, its data reinjected
            now = c.subs[k].tcp.sender.timer_deadline().unwrap_or(now).max(now);
            c.on_timer(now, k, TimerKind::Rto, &mut tx);
            timeouts += 1;
        } else if sent[k] > acked[k] {
            acked[k] = (acked[k] + (1 + (x >> 40) % 3) * MSS as u64).min(sent[k]);
            c.on_packet(now, k, &ack(acked[k], 0, 1 << 30), &mut tx);
        }
        check(c, step, true);
    }
    (acked, timeouts)
}

#[test]
fn the_subflows_that_may_be_available_include_every_available_one() {
    let subs = (0..4).map(|k| subflow(k, 10 << k, false)).collect();
    let mut c = MptcpConn::new(subs, Sched::by_name("lowest_rtt").unwrap(), 1 << 30, HEADER, MSS);
    c.write(2000 * MSS as u64, 0);
    let (acked, timeouts) = drive(&mut c, 7, 3000, 50, |c, step, after_event| {
        assert_maybe_available_covers_the_available(
            c,
            &format!("step {step}, after {}", if after_event { "the event" } else { "sending" }),
        );
    });
    assert!(timeouts > 0 && acked.iter().all(|&a| a > 50 * MSS as u64), "every subflow acknowledged, some timed out: {acked:?}");
}

#[test]
fn lowest_rtts_pass_worked_out_in_the_loop_sends_what_the_scheduler_asked_in_full_sends() {
    // The scheduling loop answers lowest-RTT's pick itself and stops after a chunk when no
    // subflow is left available (`schedule`). The same connection with that property turned
    // off asks the scheduler through the full context and makes every pass: both must send
    // the same, through ACKs that free room for one chunk or several, a receive window that
    // blocks, timeouts that queue reinjections and DATA_ACKs that drop them.
    let make = || {
        let subs = (0..4).map(|k| subflow(k, 10 << k, false)).collect();
        MptcpConn::new(subs, Sched::by_name("lowest_rtt").unwrap(), 24 * MSS as u64, HEADER, MSS)
    };
    let (mut fast, mut full) = (make(), make());
    let mut tx = [Tx::default(), Tx::default()];
    let mut now = SimTime::ZERO;
    for (c, tx) in [&mut fast, &mut full].into_iter().zip(&mut tx) {
        c.write(3000 * MSS as u64, 0);
        c.poll_transmit(now, tx);
    }
    assert!(fast.props.lowest_rtt_pick);
    full.props.lowest_rtt_pick = false;
    let (mut sent, mut acked) = ([0u64; 4], [0u64; 4]);
    let mut x = 11u64; // a fixed pseudo-random sequence of subflows and events
    let mut timeouts = 0;
    for step in 0..4000 {
        assert_eq!(format!("{:?}", tx[0].out), format!("{:?}", tx[1].out), "step {step}: the actions differ");
        for (sub, seq, _, len, _) in data(&tx[0]) {
            sent[sub as usize] = sent[sub as usize].max(seq + len as u64);
        }
        tx[0].out.clear();
        tx[1].out.clear();
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = (x >> 33) as usize % 4;
        now += Dur::from_millis(1);
        if (x >> 20).is_multiple_of(60) && sent[k] > acked[k] {
            now = fast.subs[k].tcp.sender.timer_deadline().unwrap_or(now).max(now);
            for (c, tx) in [&mut fast, &mut full].into_iter().zip(&mut tx) {
                c.on_timer(now, k, TimerKind::Rto, tx);
            }
            timeouts += 1;
        } else if sent[k] > acked[k] {
            // one, two or three segments acknowledged; the DATA_ACK somewhere up to the
            // oldest data some subflow has not had acknowledged
            let n = 1 + (x >> 40) % 3;
            acked[k] = (acked[k] + n * MSS as u64).min(sent[k]);
            let oldest = fast.subs.iter().filter_map(|s| dsn_of(&s.map, s.tcp.sender.snd_una())).fold(fast.dsn_nxt, u64::min);
            let data_ack = fast.data_una.max(fast.data_una + oldest.saturating_sub(fast.data_una) * ((x >> 45) % 5) / 4);
            for (c, tx) in [&mut fast, &mut full].into_iter().zip(&mut tx) {
                c.on_packet(now, k, &ack(acked[k], data_ack, 24 * MSS as u64), tx);
                c.poll_transmit(now, tx);
            }
        }
        let state = |c: &MptcpConn| (c.dsn_nxt, c.data_una, c.reinject.len(), c.reinjections, c.blocked_time(now));
        assert_eq!(state(&fast), state(&full), "step {step}");
    }
    let (reinjections, blocked) = (fast.reinjections, fast.blocked_time(now));
    assert!(
        timeouts > 0 && reinjections > 0 && blocked > Dur::ZERO,
        "timeouts {timeouts}, reinjections {reinjections}, blocked {blocked:?}"
    );
    assert!(acked.iter().all(|&a| a > 50 * MSS as u64), "every subflow acknowledged: {acked:?}");
}

#[test]
fn the_mappings_still_kept_are_exactly_those_of_unacknowledged_data() {
    // Mappings of acknowledged data are dropped in batches (`Subflow::assign`), not on every
    // ACK. After every event, each subflow's `mappings()` must be what dropping them on every
    // ACK would leave: contiguous in subflow sequence, the first covering `snd_una` (every
    // unacknowledged byte has its DSN), the map's entries before them all acknowledged; and
    // the acknowledged ones kept must stay fewer than a batch plus what was unacknowledged at
    // the last drop.
    let subs = (0..4).map(|k| subflow(k, 10 << k, false)).collect();
    let mut c = MptcpConn::new(subs, Sched::by_name("lowest_rtt").unwrap(), 1 << 30, HEADER, MSS);
    c.write(5000 * MSS as u64, 0);
    let mut most_live = [0usize; 4];
    let (acked, timeouts) = drive(&mut c, 5, 6000, 80, |c, step, _| {
        for (j, s) in c.subs.iter().enumerate() {
            let una = s.tcp.sender.snd_una();
            let live: Vec<Mapping> = s.mappings().copied().collect();
            let stale = s.map.len() - live.len();
            assert!(
                s.map.iter().take(stale).all(|m| m.seq + m.len as u64 <= una),
                "step {step}, subflow {j}: an unacknowledged mapping skipped"
            );
            assert!(live.iter().all(|m| m.seq + m.len as u64 > una), "step {step}, subflow {j}: an acknowledged mapping kept");
            assert!(live.first().is_none_or(|m| m.seq <= una), "step {step}, subflow {j}: data at snd_una without its mapping");
            assert!(live.windows(2).all(|w| w[0].seq + w[0].len as u64 == w[1].seq), "step {step}, subflow {j}: mappings not contiguous");
            for (seq, _) in s.tcp.sender.unacked_segments() {
                assert!(dsn_of(&s.map, seq).is_some(), "step {step}, subflow {j}: segment {seq} without a DSN");
            }
            assert!(
                stale <= most_live[j] + subflow::MAPPINGS_DROPPED_AT_ONCE,
                "step {step}, subflow {j}: {stale} acknowledged mappings kept"
            );
            most_live[j] = most_live[j].max(live.len());
        }
    });
    assert!(timeouts > 0 && acked.iter().all(|&a| a > 200 * MSS as u64), "every subflow acknowledged, some timed out: {acked:?}");
}
