//! Association tests on hand-built exchanges: packets are taken from the sender's output,
//! dropped or delivered to the receiving end, and the SACKs it answers with are fed back.

use super::*;
use crate::net::{Header, SctpDataHeader, SctpSackHeader};
use crate::time::{Dur, SimTime};
use crate::transport::{Action, TimerKind, Tx};

const CHUNK: u64 = 1456;

fn assoc(dests: usize, cfg: SctpConfig) -> SctpConn {
    let ds = (0..dests).map(|k| Destination::new(format!("p{k}"), 2 * k as u32, 2 * k as u32 + 1, &cfg, cfg.rcv_buf)).collect();
    let mut c = SctpConn::new(cfg, ds);
    c.check = true;
    c
}

fn data(tx: &mut Tx) -> Vec<(usize, SctpDataHeader)> {
    let out = tx
        .out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { sub, header: Header::SctpData(h), .. } => Some((*sub as usize, *h)),
            _ => None,
        })
        .collect();
    tx.out.clear();
    out
}

fn sacks(tx: &mut Tx) -> Vec<(usize, SctpSackHeader)> {
    let out = tx
        .out
        .iter()
        .filter_map(|a| match a {
            Action::Packet { sub, header: Header::SctpSack(h), .. } => Some((*sub as usize, *h)),
            _ => None,
        })
        .collect();
    tx.out.clear();
    out
}

/// Delivers `pkts` at `t` (except TSNs in `drop`) and feeds every SACK back at `t + 1 ms`;
/// returns what the sender transmitted in reaction.
fn exchange(c: &mut SctpConn, t: SimTime, pkts: &[(usize, SctpDataHeader)], drop: &[u64]) -> Vec<(usize, SctpDataHeader)> {
    let mut tx = Tx::default();
    let mut back = Vec::new();
    for (sub, h) in pkts {
        if drop.contains(&h.tsn) {
            continue;
        }
        c.on_packet(t, *sub, &Header::SctpData(*h), &mut tx);
        back.extend(sacks(&mut tx));
    }
    let t2 = t + Dur::from_millis(1);
    for (sub, s) in back {
        c.on_packet(t2, sub, &Header::SctpSack(s), &mut tx);
        c.poll_transmit(t2, &mut tx);
    }
    data(&mut tx)
}

fn immediate_sacks() -> SctpConfig {
    SctpConfig { delayed_sack: false, ..SctpConfig::default() }
}

#[test]
fn a_superseded_timer_event_is_ignored() {
    // a timer event left behind when the timer was armed earlier must not arm it again: each
    // stale event would leave one more behind (a fuzzed JSCTP run with a 1 ms minimum RTO
    // had 55,025 events for 8,036 packets sent, 7,504 with stale events ignored)
    let mut c = assoc(1, immediate_sacks());
    let mut tx = Tx::default();
    c.write(10 * CHUNK);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    data(&mut tx);
    let t3 = c.dests[0].t3.expect("armed");
    tx.out.clear();
    c.on_timer(SimTime::ZERO + Dur::from_secs(1), 0, TimerKind::Rto, &mut tx);
    assert!(tx.out.is_empty(), "a stale event armed the timer again: {:?}", tx.out);
    assert_eq!(c.dests[0].t3, Some(t3));
    // the event armed for the deadline still acts
    c.on_timer(t3, 0, TimerKind::Rto, &mut tx);
    assert_eq!(c.dests[0].stats.timeouts, 1);
}

#[test]
fn a_t3_restarted_earlier_by_a_sack_is_armed_for_its_new_time() {
    // the first T3-rtx runs 3 s (the initial RTO); the first SACK brings an RTT sample and
    // restarts it with the 1 s minimum RTO: a timer event must be armed for that deadline,
    // not left to the one pending at 3 s
    let mut c = assoc(1, immediate_sacks());
    let mut tx = Tx::default();
    c.write(10 * CHUNK);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = data(&mut tx);
    assert_eq!(c.dests[0].t3, Some(SimTime::ZERO + Dur::from_secs(3)));
    let t = SimTime::ZERO + Dur::from_millis(10);
    c.on_packet(t, 0, &Header::SctpData(sent[0].1), &mut tx);
    let back = sacks(&mut tx);
    tx.out.clear();
    let t2 = t + Dur::from_millis(1);
    c.on_packet(t2, 0, &Header::SctpSack(back[0].1), &mut tx);
    let t3 = c.dests[0].t3.expect("restarted");
    assert_eq!(t3, t2 + Dur::from_secs(1));
    let armed: Vec<SimTime> = tx
        .out
        .iter()
        .filter_map(|a| match a {
            Action::Timer { kind: TimerKind::Rto, at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    assert_eq!(armed, vec![t3], "the earlier deadline has no timer event");
}

#[test]
fn a_t3_expiry_collapses_its_destination_and_retransmits_to_the_alternate() {
    let mut c = assoc(2, immediate_sacks());
    let mut tx = Tx::default();
    c.write(10 * CHUNK);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = data(&mut tx);
    // initial cwnd 4380 B: three chunks of 1,472 booked bytes (1,456 and a 16-byte header),
    // all to the primary
    assert_eq!(sent.iter().map(|(d, h)| (*d, h.tsn)).collect::<Vec<_>>(), vec![(0, 1), (0, 2), (0, 3)]);
    let t3 = c.dests[0].t3.expect("armed");
    assert_eq!(t3, SimTime::ZERO + Dur::from_secs(3));
    let alt_before = c.dests[1].w;
    c.on_timer(t3, 0, TimerKind::Rto, &mut tx);
    let rtx = data(&mut tx);
    let d0 = &c.dests[0];
    assert_eq!((d0.w.cwnd, d0.w.ssthresh), (1500, 6000));
    assert_eq!((d0.errors, d0.rto.rto()), (1, Dur::from_secs(6)));
    assert_eq!(c.dests[1].w, alt_before, "the alternate's window is not touched");
    // one packet at once (E3) to the alternate, then what its cwnd allows; new data still
    // goes to the primary (one MTU of cwnd: two chunks, as §6.1 B lets the last one overshoot)
    let (rtx, new): (Vec<_>, Vec<_>) = rtx.into_iter().partition(|(_, h)| h.retx);
    assert!(rtx.iter().all(|(d, _)| *d == 1), "{rtx:?}");
    assert_eq!(rtx.iter().map(|(_, h)| h.tsn).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(new.iter().map(|(d, h)| (*d, h.tsn)).collect::<Vec<_>>(), vec![(0, 4), (0, 5)]);
    assert_eq!(c.dests[1].stats.retransmits, 3);
}

#[test]
fn with_bundling_an_expiry_retransmits_the_earliest_marked_chunks_in_one_packet() {
    // 200-byte chunks: 6 fit in a packet (32 + 6 x 216 <= 1500, 7 do not)
    let cfg = SctpConfig { bundling: true, chunk: 200, ..immediate_sacks() };
    let mut c = assoc(1, cfg.clone());
    let mut tx = Tx::default();
    c.write(40 * 200);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = data(&mut tx);
    let chunks: u16 = sent.iter().map(|(_, h)| h.chunks).sum();
    assert!(sent.len() > 1 && chunks > 14, "{sent:?}");
    let t3 = c.dests[0].t3.expect("armed");
    c.on_timer(t3, 0, TimerKind::Rto, &mut tx);
    let rtx: Vec<_> = data(&mut tx).into_iter().filter(|(_, h)| h.retx).collect();
    // E3: one packet at once whatever the cwnd, with as many of the earliest chunks as fit;
    // then the collapsed cwnd (one MTU, 6 x 216 booked bytes of it used) takes chunks until
    // it is full, the last one overshooting as with new data
    assert_eq!(rtx.iter().map(|(_, h)| (h.tsn, h.chunks)).collect::<Vec<_>>(), vec![(1, 6), (7, 1)], "{rtx:?}");
    assert_eq!(c.dests[0].stats.retransmits, 2, "retransmissions are counted in packets");
    assert_eq!(c.dests[0].flight, 7 * 216, "a chunk counts its header and payload in the flight");
    // without bundling every chunk goes alone
    let mut c = assoc(1, SctpConfig { bundling: false, ..cfg });
    c.write(40 * 200);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    data(&mut tx);
    let t3 = c.dests[0].t3.expect("armed");
    c.on_timer(t3, 0, TimerKind::Rto, &mut tx);
    assert!(data(&mut tx).iter().filter(|(_, h)| h.retx).all(|(_, h)| h.chunks == 1));
}

#[test]
fn path_max_retrans_expiries_make_the_primary_inactive_and_new_data_fails_over() {
    let cfg = SctpConfig { path_max_retrans: 2, ..immediate_sacks() };
    let mut c = assoc(2, cfg);
    let mut tx = Tx::default();
    c.write(40 * CHUNK);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    tx.out.clear();
    // the primary's path is dead, the alternate's alive: what goes to the alternate is
    // delivered and acknowledged; every expiry of the primary's timer moves its chunks there,
    // and new data keeps going to the primary while it is active
    let mut now = SimTime::ZERO;
    let mut expiries = 0;
    while c.dests[0].active() {
        now = c.dests[0].t3.expect("the primary has data outstanding");
        c.on_timer(now, 0, TimerKind::Rto, &mut tx);
        expiries += 1;
        assert_eq!(c.dests[0].errors, expiries);
        let mut pkts = data(&mut tx);
        let mut t = now;
        while pkts.iter().any(|(d, _)| *d == 1) {
            t += Dur::from_millis(10);
            let alive: Vec<_> = pkts.iter().copied().filter(|(d, _)| *d == 1).collect();
            pkts = exchange(&mut c, t, &alive, &[]);
        }
        assert!(expiries <= 3);
    }
    assert_eq!(expiries, 3);
    assert_eq!(c.failover_at, Some(now));
    assert!(c.dests[1].active());
    assert!(c.dests[0].outstanding == 0 && c.cum_ack > 0);
    // everything written reached the receiver through the alternate
    assert_eq!(c.rx.delivered(), 40 * CHUNK);
}

#[test]
fn cuc_grows_a_destination_whose_pseudo_cumack_advances() {
    let run = |cuc: bool| {
        // four missing reports: TSN 1 gets two (from 3 and 5) and stays unretransmitted
        let cfg = SctpConfig { cmt: true, cuc, fast_rtx_threshold: 4, ..immediate_sacks() };
        let mut c = assoc(2, cfg);
        let mut tx = Tx::default();
        c.write(6 * CHUNK);
        c.poll_transmit(SimTime::ZERO, &mut tx);
        let sent = data(&mut tx);
        // round robin: odd TSNs to destination 0, even ones to 1 (three each fill the cwnds)
        assert_eq!(
            sent.iter().map(|(d, h)| (*d, h.tsn)).collect::<Vec<_>>(),
            (1..=6).map(|t| ((t as usize + 1) % 2, t)).collect::<Vec<_>>()
        );
        let before = (c.dests[0].w.cwnd, c.dests[1].w.cwnd);
        // TSN 1 (destination 0) is lost: the cumulative ack stays at 0
        exchange(&mut c, SimTime(1_000_000), &sent, &[1]);
        assert_eq!(c.cum_ack, 0);
        (before, (c.dests[0].w.cwnd, c.dests[1].w.cwnd))
    };
    let ((a0, b0), (a1, b1)) = run(true);
    assert_eq!(a1, a0, "destination 0's pseudo-cumack (TSN 1) did not move");
    // TSN 2's SACK: one chunk's booked bytes (min(bytes acked, MTU)); TSN 4's and 6's: the
    // cwnd was no longer fully used
    assert_eq!(b1, b0 + 1472, "destination 1's pseudo-cumack moved: slow start");
    let ((a0, b0), (a1, b1)) = run(false);
    assert_eq!((a1, b1), (a0, b0), "without CUC nothing grows until the cumulative ack moves");
}

#[test]
fn newreno_retransmits_the_next_hole_on_a_partial_ack() {
    let run = |cc: &'static str| {
        let mut c = assoc(1, SctpConfig { cc, ..immediate_sacks() });
        c.dests[0].w.cwnd = 20 * 1500;
        let mut tx = Tx::default();
        c.write(10 * CHUNK);
        c.poll_transmit(SimTime::ZERO, &mut tx);
        let sent = data(&mut tx);
        assert_eq!(sent.len(), 10);
        // 2 and 9 lost: 2 gets three reports (from 3, 4, 5) and is fast-retransmitted; 9 gets one
        let rtx = exchange(&mut c, SimTime(1_000_000), &sent, &[2, 9]);
        assert_eq!(rtx.iter().map(|(_, h)| h.tsn).collect::<Vec<_>>(), vec![2]);
        assert!(c.dests[0].fast_recovery.is_some());
        // the retransmission of 2 arrives: the cumulative ack moves to 8, short of the
        // recovery point (10)
        let again = exchange(&mut c, SimTime(2_000_000), &rtx, &[]);
        assert_eq!(c.cum_ack, 8);
        again.iter().map(|(_, h)| h.tsn).collect::<Vec<_>>()
    };
    assert_eq!(run("newreno"), vec![9]);
    assert_eq!(run("rfc4960"), Vec::<u64>::new());
}

#[test]
fn timestamps_reach_the_controller_hook_with_send_and_receive_times() {
    let mut c = assoc(1, SctpConfig { timestamps: true, ..immediate_sacks() });
    let mut tx = Tx::default();
    c.write(3 * CHUNK);
    c.poll_transmit(SimTime(5), &mut tx);
    let sent = data(&mut tx);
    assert!(sent.iter().all(|(_, h)| h.sent_at == SimTime(5)));
    exchange(&mut c, SimTime(1_000_000), &sent, &[]);
    assert_eq!(c.dests[0].stats.timestamp_samples, 3);
}

#[test]
fn a_sack_older_than_the_ack_point_is_ignored() {
    let mut c = assoc(1, immediate_sacks());
    let mut tx = Tx::default();
    c.write(3 * CHUNK);
    c.poll_transmit(SimTime::ZERO, &mut tx);
    let sent = data(&mut tx);
    let mut collected = Vec::new();
    for (sub, h) in &sent {
        c.on_packet(SimTime(10), *sub, &Header::SctpData(*h), &mut tx);
        collected.extend(sacks(&mut tx));
    }
    // the last SACK first, then an older one
    c.on_packet(SimTime(20), 0, &Header::SctpSack(collected[2].1), &mut tx);
    assert_eq!(c.cum_ack, 3);
    let w = c.dests[0].w;
    c.on_packet(SimTime(30), 0, &Header::SctpSack(collected[0].1), &mut tx);
    assert_eq!((c.cum_ack, c.dests[0].w), (3, w));
}
