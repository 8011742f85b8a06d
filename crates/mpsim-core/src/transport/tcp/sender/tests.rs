use super::*;
use crate::net::SackBlock;

const MSS: u64 = 1000;

fn sender(iw: u32) -> TcpSender {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: iw, ..SenderConfig::default() };
    TcpSender::new(&cfg, Controller::by_name("reno").unwrap())
}

fn drain(s: &mut TcpSender, now: SimTime) -> Vec<TxSegment> {
    std::iter::from_fn(|| s.next_segment(now)).collect()
}

fn ack(n: u64, sacks: &[(u64, u64)]) -> AckHeader {
    let mut h = AckHeader::new(n, 1 << 30);
    for &(a, b) in sacks {
        h.push_sack(SackBlock { start: a, end: b });
    }
    h
}

#[test]
fn sends_the_initial_window_then_waits() {
    let mut s = sender(4);
    s.write(10 * MSS);
    let segs = drain(&mut s, SimTime::ZERO);
    assert_eq!(segs.len(), 4);
    assert_eq!(s.in_flight(), 4 * MSS);
    assert!(s.rto_deadline().is_some());
}

#[test]
fn the_window_counts_short_segments_as_packets() {
    // 1-byte writes, each sent at once while the window has room: the window of 4
    // segments admits 4 of them (not 4,000 bytes' worth), and the writes made meanwhile
    // leave together in the next segment
    let mut s = sender(4);
    let mut sent = Vec::new();
    for _ in 0..10 {
        s.write(1);
        sent.extend(drain(&mut s, SimTime::ZERO));
    }
    assert_eq!(sent.iter().map(|t| t.len).collect::<Vec<_>>(), vec![1; 4]);
    assert_eq!((s.in_flight(), s.in_flight_segments()), (4, 4));
    s.on_ack(SimTime(1_000_000), &ack(1, &[]));
    let next = drain(&mut s, SimTime(1_000_000));
    assert_eq!(next.iter().map(|t| (t.seq, t.len)).collect::<Vec<_>>(), vec![(4, 6)]);
    assert!(s.check_invariants().is_ok());
    // full segments: the same limit as in bytes
    let mut s = sender(4);
    s.write(10 * MSS);
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 4);
    assert_eq!(s.in_flight_segments() * MSS, s.in_flight());
}

#[test]
fn three_dupacks_with_sack_retransmit_the_head_and_halve() {
    for prr in [false, true] {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, prr, ..SenderConfig::default() };
        let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        s.write(20 * MSS);
        drain(&mut s, SimTime::ZERO);
        let t = SimTime(Dur::from_millis(50).0);
        // segment 0 lost; 1..=3 arrive
        for k in 1..=3 {
            s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
        }
        assert_eq!(s.state(), CaState::Recovery);
        // FlightSize is the pipe before the third duplicate ACK: 10 sent, 2 SACKed
        assert_eq!(s.ssthresh(), 4 * MSS);
        // without PRR the window drops to ssthresh and the head goes out whatever the
        // pipe (6) says; with PRR the window is the pipe plus the one segment this ACK
        // allows
        assert_eq!(s.cwnd(), if prr { 7 * MSS } else { 4 * MSS });
        let segs = drain(&mut s, t);
        assert_eq!(segs, vec![TxSegment { seq: 0, len: MSS as u32, retx: true, forced: !prr, ecn: Ecn::NotEct, cwr: false }]);
        assert!(s.check_invariants().is_ok());
        // the retransmission is acknowledged with everything sent: recovery ends at
        // ssthresh, and the same ACK may add its congestion-avoidance increment
        s.on_ack(t + Dur::from_millis(50), &ack(s.snd_nxt(), &[]));
        assert_eq!(s.state(), CaState::Open);
        assert!((4 * MSS..=5 * MSS).contains(&s.cwnd()), "{}", s.cwnd());
        assert_eq!(s.stats.fast_recoveries, 1);
    }
}

fn dsack(n: u64, start: u64, end: u64) -> AckHeader {
    let mut h = AckHeader::new(n, 1 << 30);
    h.push_dsack(SackBlock { start, end });
    h
}

/// Ten segments out, the first delayed past three SACKs: fast recovery retransmits it,
/// then everything is acknowledged and recovery ends with the window reduced.
fn spurious_fast_recovery() -> (TcpSender, SimTime) {
    let mut s = sender(10);
    s.write(20 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = SimTime(Dur::from_millis(50).0);
    for k in 1..=3 {
        s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
    }
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(drain(&mut s, t).iter().filter(|x| x.retx).count(), 1);
    let t = t + Dur::from_millis(5);
    s.on_ack(t, &ack(10 * MSS, &[]));
    assert_eq!(s.state(), CaState::Open);
    assert!(s.cwnd() <= 5 * MSS, "{}", s.cwnd());
    (s, t)
}

#[test]
fn a_dsack_for_the_only_retransmission_undoes_the_reduction() {
    let (mut s, t) = spurious_fast_recovery();
    let before = s.cwnd();
    // the original arrived late; the retransmission is reported as a duplicate
    s.on_ack(t + Dur::from_millis(50), &dsack(10 * MSS, 0, MSS));
    assert_eq!(s.stats.dsacks, 1);
    assert_eq!(s.stats.dsack_undos, 1);
    assert!(s.cwnd() >= 10 * MSS && s.cwnd() > before, "{}", s.cwnd());
    assert_eq!(s.ssthresh(), u64::MAX);
    assert_eq!(s.state(), CaState::Open);
    assert!(s.check_invariants().is_ok());
    // a second report changes nothing: the episode is closed
    let w = s.cwnd();
    s.on_ack(t + Dur::from_millis(60), &dsack(10 * MSS, 0, MSS));
    assert_eq!((s.stats.dsacks, s.stats.dsack_undos, s.cwnd()), (2, 1, w));
}

#[test]
fn no_undo_without_dsack_or_while_a_retransmission_may_have_repaired_a_loss() {
    // no report: the reduction stays
    let (mut s, t) = spurious_fast_recovery();
    let w = s.cwnd();
    s.on_ack(t + Dur::from_millis(50), &ack(10 * MSS, &[]));
    assert_eq!((s.stats.dsack_undos, s.cwnd()), (0, w));
    // two retransmissions, one reported: the other may have repaired a real loss
    let mut s = sender(10);
    s.write(20 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = SimTime(Dur::from_millis(50).0);
    let mut retx = Vec::new();
    for k in 1..=6 {
        s.on_ack(t, &ack(0, &[(2 * MSS, (k + 2) * MSS)]));
        retx.extend(drain(&mut s, t).iter().filter(|x| x.retx).map(|x| x.seq));
    }
    assert_eq!(retx, [0, MSS]);
    let t = t + Dur::from_millis(50);
    let all = s.snd_nxt();
    s.on_ack(t, &ack(all, &[]));
    assert_eq!(s.state(), CaState::Open);
    let w = s.cwnd();
    s.on_ack(t, &dsack(all, 0, MSS));
    assert_eq!((s.stats.dsacks, s.stats.dsack_undos, s.cwnd()), (1, 0, w));
    // the second report completes the count
    s.on_ack(t, &dsack(all, MSS, 2 * MSS));
    assert_eq!(s.stats.dsack_undos, 1);
    assert!(s.cwnd() >= 10 * MSS);
}

#[test]
fn a_dsack_after_a_timeout_undoes_it_and_forgets_the_presumed_losses() {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 4, frto: false, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    s.write(20 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = s.rto_deadline().unwrap();
    s.on_rto(t);
    let retx = drain(&mut s, t);
    assert_eq!(retx.len(), 1);
    assert_eq!(s.state(), CaState::Loss);
    // the first segment's original arrives, then the retransmission as a duplicate
    s.on_ack(t + Dur::from_millis(1), &ack(MSS, &[]));
    assert_eq!(s.state(), CaState::Loss);
    s.on_ack(t + Dur::from_millis(2), &{
        let mut h = dsack(MSS, 0, MSS);
        h.push_sack(SackBlock { start: 2 * MSS, end: 4 * MSS });
        h
    });
    assert_eq!(s.stats.dsack_undos, 1);
    assert_eq!(s.state(), CaState::Open);
    assert!(s.cwnd() >= 4 * MSS, "{}", s.cwnd());
    assert!(s.check_invariants().is_ok());
}

/// Ten segments out over a 100 ms path, nothing acknowledged: the timer fires and the head
/// is retransmitted (F-RTO off, so that only the evidence under test can count the timeout).
fn timed_out() -> (TcpSender, SimTime) {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, frto: false, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    s.seed_rtt(Dur::from_millis(100));
    s.write(20 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = s.rto_deadline().unwrap();
    s.on_rto(t);
    assert_eq!(drain(&mut s, t).iter().map(|x| (x.seq, x.retx)).collect::<Vec<_>>(), [(0, true)]);
    (s, t)
}

#[test]
fn a_timeout_is_spurious_when_a_dsack_reports_its_retransmission_a_duplicate() {
    let (mut s, t) = timed_out();
    // everything is acknowledged a full RTT after the retransmission: it may have been
    // what got through, so no verdict yet
    let t1 = t + Dur::from_millis(150);
    s.on_ack(t1, &ack(10 * MSS, &[]));
    assert_eq!((s.stats.timeouts, s.stats.spurious_timeouts), (1, 0));
    // then the receiver reports the head a duplicate: two copies arrived, the timeout's
    // was not needed
    s.on_ack(t1 + Dur::from_millis(1), &dsack(10 * MSS, 0, MSS));
    assert_eq!(s.stats.spurious_timeouts, 1);
    // counted once
    s.on_ack(t1 + Dur::from_millis(2), &dsack(10 * MSS, 0, MSS));
    assert_eq!(s.stats.spurious_timeouts, 1);
    assert!(s.check_invariants().is_ok());
}

#[test]
fn a_dsack_of_another_segment_does_not_make_a_timeout_spurious() {
    let (mut s, t) = timed_out();
    s.on_ack(t + Dur::from_millis(150), &dsack(10 * MSS, 5 * MSS, 6 * MSS));
    assert_eq!((s.stats.dsacks, s.stats.spurious_timeouts), (1, 0));
}

#[test]
fn a_timeout_is_spurious_when_the_head_is_acknowledged_sooner_than_its_retransmission_could_be() {
    // the ACK of an earlier copy arrives 8 us after the timer fired, far below the 100 ms
    // minimum RTT: it cannot answer the timeout's retransmission
    let (mut s, t) = timed_out();
    s.on_ack(t + Dur(8_000), &ack(MSS, &[]));
    assert_eq!(s.stats.spurious_timeouts, 1);
    // a full RTT later it could be the retransmission's own ACK: no evidence
    let (mut s, t) = timed_out();
    s.on_ack(t + Dur::from_millis(100), &ack(MSS, &[]));
    assert_eq!(s.stats.spurious_timeouts, 0);
    // nor from later ACKs once the head is covered
    s.on_ack(t + Dur::from_millis(101), &ack(2 * MSS, &[]));
    assert_eq!(s.stats.spurious_timeouts, 0);
}

#[test]
fn timeout_marks_everything_lost_and_restarts_from_one_segment() {
    let mut s = sender(10);
    s.write(10 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = s.rto_deadline().unwrap();
    s.on_rto(t);
    assert_eq!((s.state(), s.cwnd()), (CaState::Loss, MSS));
    assert_eq!(s.in_flight(), 0);
    let segs = drain(&mut s, t);
    assert_eq!(segs, vec![TxSegment { seq: 0, len: MSS as u32, retx: true, forced: false, ecn: Ecn::NotEct, cwr: false }]);
    assert_eq!(s.rto_deadline(), Some(t + Dur::from_secs(2)), "backed off");
}

#[test]
fn after_a_timeout_acks_grow_the_window_at_once_and_ssthresh_is_set_once() {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, frto: false, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    s.write(40 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = s.rto_deadline().unwrap();
    s.on_rto(t);
    // ssthresh from the flight at the timeout (10 segments), one segment to start from
    assert_eq!((s.ssthresh(), s.cwnd()), (5 * MSS, MSS));
    assert_eq!(drain(&mut s, t).len(), 1);
    // the retransmission is acknowledged: still in Loss (9 segments presumed lost), yet
    // the window grows by slow start at once and two retransmissions follow
    let t1 = t + Dur::from_millis(100);
    s.on_ack(t1, &ack(MSS, &[]));
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(s.cwnd(), 2 * MSS);
    let next = drain(&mut s, t1);
    assert_eq!(next.iter().map(|x| (x.seq, x.retx)).collect::<Vec<_>>(), vec![(MSS, true), (2 * MSS, true)]);
    // originals of 3 and 4 arrive late (an RTT sample clears the backoff); a second
    // timeout in the same episode keeps ssthresh: it is not taken from the small flight
    // of the Loss state
    s.on_ack(t1 + Dur::from_millis(1), &ack(MSS, &[(3 * MSS, 5 * MSS)]));
    assert_eq!((s.state(), s.rtt().backoff()), (CaState::Loss, 0));
    drain(&mut s, t1 + Dur::from_millis(1));
    let t2 = s.rto_deadline().unwrap();
    s.on_rto(t2);
    assert_eq!((s.ssthresh(), s.cwnd()), (5 * MSS, MSS));
    assert!(s.check_invariants().is_ok());
}

#[test]
fn no_rtt_sample_from_segments_sacked_long_ago_or_from_retransmissions() {
    let mut s = sender(10);
    s.write(10 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = SimTime(Dur::from_millis(100).0);
    // 1..9 SACKed at 100 ms: a sample of 100 ms from the newest of them
    s.on_ack(t, &ack(0, &[(MSS, 10 * MSS)]));
    assert_eq!(s.rtt().latest(), Some(Dur::from_millis(100)));
    // the head is retransmitted and acknowledged at 5 s (after a timeout, say): the
    // cumulative ACK covers the retransmission and segments SACKed long ago, so no sample
    let t2 = SimTime(Dur::from_secs(5).0);
    s.on_rto(t2);
    drain(&mut s, t2);
    let n = s.rtt().samples();
    s.on_ack(t2 + Dur::from_millis(100), &ack(10 * MSS, &[]));
    assert_eq!(s.rtt().samples(), n, "Karn's rule");
    assert_eq!(s.rtt().latest(), Some(Dur::from_millis(100)));
}

#[test]
fn sack_alone_never_pushes_the_retransmission_timer_back() {
    let mut s = sender(10);
    s.write(40 * MSS);
    drain(&mut s, SimTime::ZERO);
    // segment 0 is lost; SACKs for everything else keep arriving, each with an RTT sample;
    // the third starts fast recovery, whose retransmission of the head restarts the timer
    let mut deadline = None;
    for k in 1..10 {
        let t = SimTime(Dur::from_millis(10 * k).0);
        s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
        if drain(&mut s, t).iter().any(|x| x.retx && x.seq == 0) {
            assert_eq!(deadline, None);
            deadline = Some(t + s.rtt().rto());
        }
        assert!(deadline.is_some() || k < 3);
        if deadline.is_some() {
            assert_eq!(s.rto_deadline(), deadline);
        }
    }
}

/// The head is lost and retransmitted by fast recovery 100 ms after the timer started; its
/// retransmission is acknowledged 250 ms later, after the deadline the first transmission
/// set (300 ms) and before the one the retransmission sets (400 ms). Returns the timeouts.
fn head_repaired_late(mode: RtoMode) -> u64 {
    let cfg =
        SenderConfig { mss: MSS as u32, initial_window: 10, rto: mode, min_rto: Some(Dur::from_millis(200)), ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    s.seed_rtt(Dur::from_millis(100));
    s.write(10 * MSS);
    drain(&mut s, SimTime::ZERO);
    assert_eq!(s.rto_deadline(), Some(SimTime(Dur::from_millis(300).0)));
    let t = SimTime(Dur::from_millis(100).0);
    for k in 1..=3 {
        s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
    }
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(drain(&mut s, t).iter().filter(|x| x.retx).map(|x| x.seq).collect::<Vec<_>>(), [0]);
    // the owner's event loop: timers due before the ACK fire first
    let acked_at = t + Dur::from_millis(250);
    while let Some(d) = s.timer_deadline().filter(|&d| d <= acked_at) {
        s.on_timer(d);
        drain(&mut s, d);
    }
    s.on_ack(acked_at, &ack(10 * MSS, &[]));
    assert!(s.check_invariants().is_ok());
    s.stats.timeouts
}

#[test]
fn retransmitting_the_head_restarts_the_linux_timer_but_not_rfc_6298s() {
    assert_eq!(head_repaired_late(RtoMode::Linux), 0);
    assert_eq!(head_repaired_late(RtoMode::Rfc6298), 1);
}

#[test]
fn the_handshake_window_limits_the_first_flight() {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 16, initial_rwnd: 4 * MSS, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    s.write(20 * MSS);
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 4);
}

#[test]
fn chunks_are_never_merged_into_one_segment() {
    let mut s = sender(10);
    assert_eq!(s.write_chunk(300), 0);
    assert_eq!(s.write_chunk(300), 300);
    assert_eq!(s.write_chunk(1000), 600);
    let segs = drain(&mut s, SimTime::ZERO);
    let lens: Vec<u32> = segs.iter().map(|x| x.len).collect();
    assert_eq!(lens, vec![300, 300, 1000]);
}

#[test]
fn unsent_chunks_can_be_taken_back() {
    let mut s = sender(1);
    for _ in 0..3 {
        s.write_chunk(MSS);
    }
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 1);
    assert_eq!(s.take_back_unsent(), vec![(MSS, MSS), (2 * MSS, MSS)]);
    assert_eq!(s.unsent(), 0);
    assert!(s.check_invariants().is_ok());
    assert_eq!(s.unacked_segments().collect::<Vec<_>>(), vec![(0, MSS as u32)]);
}

proptest::proptest! {
    /// Chunks of any sizes up to an MSS, full and short mixed: every segment carries
    /// exactly one chunk, and the chunks taken back are exactly those not sent.
    #[test]
    fn segments_and_chunks_taken_back_follow_the_chunks(
        lens in proptest::collection::vec(proptest::prop_oneof![proptest::strategy::Just(MSS), 1..=MSS], 1..40),
        iw in 1u32..50,
    ) {
        let mut s = sender(iw);
        let mut chunks = Vec::new();
        for &len in &lens {
            chunks.push((s.write_chunk(len), len));
        }
        let sent: Vec<(u64, u64)> = drain(&mut s, SimTime::ZERO).iter().map(|t| (t.seq, t.len as u64)).collect();
        proptest::prop_assert_eq!(&sent[..], &chunks[..sent.len()]);
        proptest::prop_assert_eq!(s.take_back_unsent(), chunks[sent.len()..].to_vec());
    }
}

#[test]
fn penalty_halves_the_window_but_never_below_one_segment() {
    let mut s = sender(10);
    s.penalize();
    assert_eq!(s.cwnd(), 5 * MSS);
    for _ in 0..5 {
        s.penalize();
    }
    assert_eq!(s.cwnd(), MSS);
}

#[test]
fn receive_window_limits_new_data_unless_ignored() {
    let mut s = sender(10);
    s.write(10 * MSS);
    s.on_ack(SimTime::ZERO, &AckHeader::new(0, 2 * MSS));
    assert_eq!(drain(&mut s, SimTime::ZERO).len(), 2);
    let cfg = SenderConfig { mss: MSS as u32, ignore_rwnd: true, ..SenderConfig::default() };
    let mut m = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    m.write(10 * MSS);
    m.on_ack(SimTime::ZERO, &AckHeader::new(0, 2 * MSS));
    assert_eq!(drain(&mut m, SimTime::ZERO).len(), 10);
}

fn ecn_sender(iw: u32) -> TcpSender {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: iw, ecn: true, ..SenderConfig::default() };
    TcpSender::new(&cfg, Controller::by_name("reno").unwrap())
}

fn ece(n: u64) -> AckHeader {
    let mut h = ack(n, &[]);
    h.set_ece(true);
    h
}

#[test]
fn ecn_marks_new_data_ect_and_never_a_retransmission() {
    let mut s = ecn_sender(4);
    s.write(10 * MSS);
    let segs = drain(&mut s, SimTime::ZERO);
    assert!(segs.iter().all(|t| t.ecn == Ecn::Ect0 && !t.cwr));
    // the head lost: three duplicate ACKs, the retransmission is Not-ECT
    let t = SimTime(Dur::from_millis(50).0);
    for k in 1..=3 {
        s.on_ack(t, &ack(0, &[(MSS, (k + 1) * MSS)]));
    }
    let rtx: Vec<_> = drain(&mut s, t).into_iter().filter(|x| x.retx).collect();
    assert!(!rtx.is_empty() && rtx.iter().all(|x| x.ecn == Ecn::NotEct));
    // without ECN nothing is ECT
    let mut plain = sender(4);
    plain.write(4 * MSS);
    assert!(drain(&mut plain, SimTime::ZERO).iter().all(|t| t.ecn == Ecn::NotEct));
}

#[test]
fn an_ecn_echo_reduces_once_per_window_and_sends_cwr_once() {
    for prr in [true, false] {
        let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, ecn: true, prr, ..SenderConfig::default() };
        let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
        s.write(100 * MSS);
        drain(&mut s, SimTime::ZERO);
        let t = SimTime(Dur::from_millis(50).0);
        // every ACK of the first window echoes CE: one reduction only
        s.on_ack(t, &ece(MSS));
        assert_eq!((s.state(), s.stats.ecn_reductions), (CaState::Cwr, 1));
        // ssthresh from Reno's loss response: half the flight before the ACK
        assert_eq!(s.ssthresh(), 5 * MSS);
        let mut sent = drain(&mut s, t);
        for k in 2..=10 {
            s.on_ack(t, &ece(k * MSS));
            sent.extend(drain(&mut s, t));
            assert!(s.check_invariants().is_ok());
        }
        let cwr: Vec<usize> = sent.iter().enumerate().filter(|(_, x)| x.cwr).map(|(i, _)| i).collect();
        assert_eq!(cwr, vec![0], "CWR on the first new segment after the reduction, and only there");
        assert_eq!(s.stats.ecn_reductions, 1, "one reduction for the window (prr {prr})");
        assert!(s.cwnd() <= 5 * MSS + MSS, "cwnd {} brought down towards ssthresh", s.cwnd());
        // the window sent before the reduction is acknowledged: ACKs beyond it end CWR, and
        // a new echo there reduces again
        s.on_ack(t, &ack(11 * MSS, &[]));
        assert_eq!(s.state(), CaState::Open);
        assert_eq!(s.cwnd(), 5 * MSS);
        drain(&mut s, t);
        s.on_ack(t, &ece(12 * MSS));
        assert_eq!((s.state(), s.stats.ecn_reductions), (CaState::Cwr, 2));
        assert_eq!(s.stats.fast_recoveries, 0);
        assert_eq!(s.stats.retransmits, 0);
    }
}

#[test]
fn a_loss_during_cwr_does_not_reduce_again() {
    let mut s = ecn_sender(10);
    s.write(40 * MSS);
    drain(&mut s, SimTime::ZERO);
    let t = SimTime(Dur::from_millis(50).0);
    s.on_ack(t, &ece(MSS));
    let after_ecn = s.ssthresh();
    drain(&mut s, t);
    // segment 1 (bytes 1000..2000) lost: SACKs of 2..=4 put the sender in recovery
    for k in 2..=4 {
        s.on_ack(t, &ack(MSS, &[(2 * MSS, (k + 1) * MSS)]));
    }
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(s.ssthresh(), after_ecn, "the reduction for this round was made already");
    assert_eq!((s.stats.ecn_reductions, s.stats.fast_recoveries), (1, 1));
    // and an echo in Recovery changes nothing
    let mut h = ack(MSS, &[(2 * MSS, 6 * MSS)]);
    h.set_ece(true);
    s.on_ack(t, &h);
    assert_eq!((s.state(), s.stats.ecn_reductions, s.ssthresh()), (CaState::Recovery, 1, after_ecn));
    assert!(s.check_invariants().is_ok());
}

/// CUBIC's slow start behind a receive window of 30 segments, one ACK per segment every
/// 2.5 ms at least (no ACK train): the path's RTT is 100 ms for the segments sent before
/// `rise_at` and 130 ms after. Returns the window when slow start ended, the time, and the
/// flight then (None if it never ended within 3 s).
fn cubic_behind_a_receive_window(rise_at: SimTime) -> Option<(u64, SimTime, u64)> {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("cubic").unwrap());
    s.write(100_000 * MSS);
    let rwnd = 30 * MSS;
    let sent = |s: &mut TcpSender, now: SimTime| drain(s, now).into_iter().map(move |t| (t.seq + t.len as u64, now)).collect::<Vec<_>>();
    let mut out: std::collections::VecDeque<(u64, SimTime)> = sent(&mut s, SimTime::ZERO).into();
    let mut last = SimTime::ZERO;
    while let Some((end, at)) = out.pop_front() {
        let rtt = Dur::from_millis(if at >= rise_at { 130 } else { 100 });
        let now = (at + rtt).max(last + Dur(2_500_000));
        last = now;
        let in_flight = s.in_flight();
        s.on_ack(now, &AckHeader::new(end, rwnd));
        if !s.window().in_slow_start() {
            return Some((s.ssthresh() / MSS, now, in_flight / MSS));
        }
        if now > SimTime(Dur::from_secs(3).0) {
            return None;
        }
        out.extend(sent(&mut s, now));
    }
    None
}

#[test]
fn cubic_leaves_slow_start_by_hystart_when_the_receive_window_limits() {
    // the flight stays at 30 segments and the window grows while it is below twice that
    // (Linux `tcp_is_cwnd_limited`): 60, reached within 0.5 s; without a rise it never ends
    assert_eq!(cubic_behind_a_receive_window(SimTime(Dur::from_secs(10).0)), None);
    // the delay rises at 1 s, when no ACK grows the window any more: HyStart's delay test
    // still hears every ACK's RTT sample (Linux `pkts_acked`) and ends slow start there
    let (cwnd, at, in_flight) = cubic_behind_a_receive_window(SimTime(Dur::from_secs(1).0)).expect("HyStart must end slow start");
    assert_eq!((cwnd, in_flight), (60, 30), "ssthresh = cwnd, twice the flight");
    assert!(at > SimTime(Dur::from_millis(1130).0) && at < SimTime(Dur::from_millis(1400).0), "left at {at:?}");
}
