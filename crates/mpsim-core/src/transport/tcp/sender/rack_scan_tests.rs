//! RACK's scan over its send order (`TcpSender::rack_detect`) must mark exactly the segments,
//! and arm exactly the reordering timer, that a plain walk over every segment of the
//! scoreboard does. In test builds every call of the scan is checked against the walk below
//! (`reference_rack_scan`), so every sender test checks it too; the property test drives a
//! sender and a receiver through random loss, reordering, delay spikes, zero-delay paths and
//! lost ACKs, which reach D-SACKs (reordering windows open in recovery), lost
//! retransmissions, loss probes, timeouts and F-RTO's undo. The same run checks the sender's
//! fast path for the common ACK (`on_ack_coupled`): a second sender taking the general path
//! on every ACK is driven alongside and must send the same segments and be in the same state
//! after every event.

use super::*;
use crate::net::AckHeader;
use crate::transport::tcp::{ReceiverConfig, TcpReceiver};
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What RFC 8985 §6.2 step 5 says of every segment, by a walk over the whole scoreboard:
/// the numbers of the segments found lost (ascending), and the longest wait.
pub(super) fn reference_rack_scan(s: &TcpSender, now: SimTime, reo: Dur) -> (Vec<u64>, Option<Dur>) {
    let mut lost = Vec::new();
    let mut wait: Option<Dur> = None;
    for (i, seg) in s.segs.iter().enumerate() {
        if seg.flags & SACKED != 0 || seg.flags & (LOST | RETRANS) == LOST {
            continue;
        }
        match s.rack.check(seg.sent_at, seg.seq + seg.len as u64, now, reo) {
            Verdict::Lost => lost.push(s.segs.dropped() + i as u64),
            Verdict::Wait(d) => wait = Some(wait.map_or(d, |w| w.max(d))),
            Verdict::NotYet => {}
        }
    }
    (lost, wait)
}

pub(super) fn assert_same_rack_verdicts(expected: (Vec<u64>, Option<Dur>), mut marked: Vec<u64>, wait: Option<Dur>) {
    marked.sort_unstable();
    assert_eq!(marked, expected.0, "segments RACK marked lost (indexed scan, walk)");
    assert_eq!(wait, expected.1, "reordering timer (indexed scan, walk)");
}

const MSS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Arrival {
    Data(u64, u32),
    Ack(u64),
}

/// Draws from the test's bytes, round and round.
struct Draws<'a> {
    bytes: &'a [u8],
    k: usize,
}

impl Draws<'_> {
    fn next(&mut self) -> u8 {
        let b = self.bytes[self.k % self.bytes.len()];
        self.k += 1;
        b
    }
}

struct Net {
    /// (time, order of scheduling, what)
    queue: BinaryHeap<Reverse<(SimTime, u64, Arrival)>>,
    acks: Vec<AckHeader>,
    n: u64,
}

impl Net {
    fn at(&mut self, t: SimTime, a: Arrival) {
        self.n += 1;
        self.queue.push(Reverse((t, self.n, a)));
    }
}

struct Path {
    base_us: u64,
    jitter_us: u64,
    loss: u8,
    ack_loss: u8,
}

impl Path {
    /// A one-way delay, with now and then a spike of 300 ms (a spurious timeout).
    fn delay(&self, d: &mut Draws) -> Dur {
        let spike = if d.next() == 255 { 300_000 } else { 0 };
        let jitter = if self.jitter_us > 0 { (d.next() as u64 * 256 + d.next() as u64) % self.jitter_us } else { 0 };
        Dur::from_micros(self.base_us + jitter + spike)
    }
}

fn send_all(s: &mut TcpSender, g: &mut TcpSender, now: SimTime, net: &mut Net, path: &Path, d: &mut Draws) {
    loop {
        let t = s.next_segment(now);
        assert_eq!(t, g.next_segment(now), "segment sent (fast path, general path)");
        let Some(t) = t else { break };
        if d.next() >= path.loss {
            let at = now + path.delay(d);
            net.at(at, Arrival::Data(t.seq, t.len));
        }
    }
}

/// The sender that took the fast path for the common ACK and the one that took the general
/// path for every ACK are in the same state.
fn assert_same_sender(s: &TcpSender, g: &TcpSender) {
    let state = |x: &TcpSender| {
        format!(
            "una {} nxt {} cwnd {} ssthresh {} state {:?} rto {:?} probe {:?} reo {:?} sacked {} lost {} retrans {} dupacks {} undo {} frto_new {} timer {:?} srtt {:?} ranges {:?}",
            x.snd_una, x.snd_nxt, x.w.cwnd, x.w.ssthresh, x.state, x.rto_deadline, x.probe_deadline, x.reo_deadline,
            x.sacked_bytes, x.lost_bytes, x.retrans_bytes, x.dupacks, x.undo.is_some(), x.frto_send_new, x.timer_deadline(),
            x.rtt.srtt(), x.sacked_ranges,
        )
    };
    assert_eq!(state(s), state(g), "sender state (fast path, general path)");
}

/// Runs a transfer of `segments` over `path`, checking the scoreboard after every event.
fn run(bytes: &[u8], path: Path, segments: u64, tlp: bool) -> Result<(), TestCaseError> {
    let cfg = SenderConfig { mss: MSS as u32, initial_window: 10, tlp, ..SenderConfig::default() };
    let mut s = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    // the same sender taking the general path on every ACK: both must decide alike
    let mut g = TcpSender::new(&cfg, Controller::by_name("reno").unwrap());
    g.general_only = true;
    let mut rx = TcpReceiver::new(ReceiverConfig { buffer: 1 << 30, ..ReceiverConfig::default() });
    let mut net = Net { queue: BinaryHeap::new(), acks: Vec::new(), n: 0 };
    let mut d = Draws { bytes, k: 0 };
    s.write(segments * MSS);
    g.write(segments * MSS);
    let mut now = SimTime::ZERO;
    send_all(&mut s, &mut g, now, &mut net, &path, &mut d);
    for _ in 0..20_000 {
        if s.snd_una() == segments * MSS {
            break;
        }
        let next_arrival = net.queue.peek().map(|Reverse((t, _, _))| *t);
        let timer = s.timer_deadline();
        let arrival_first = next_arrival.is_some_and(|a| timer.is_none_or(|t| a <= t));
        match (arrival_first, timer) {
            (true, _) => {
                let Reverse((t, _, what)) = net.queue.pop().unwrap();
                now = t;
                match what {
                    Arrival::Data(seq, len) => {
                        let r = rx.on_segment(now, seq, len);
                        if r.ack_now && d.next() >= path.ack_loss {
                            net.acks.push(rx.make_ack());
                            let at = now + path.delay(&mut d);
                            net.at(at, Arrival::Ack(net.acks.len() as u64 - 1));
                        }
                    }
                    Arrival::Ack(k) => {
                        let h = net.acks[k as usize];
                        s.on_ack(now, &h);
                        g.on_ack(now, &h);
                        assert_same_sender(&s, &g);
                    }
                }
            }
            (false, Some(t)) => {
                now = now.max(t);
                assert_eq!(s.on_timer(now), g.on_timer(now), "timer (fast path, general path)");
                assert_same_sender(&s, &g);
            }
            (false, None) => prop_assert!(false, "stalled at {now:?}"),
        }
        prop_assert_eq!(s.check_invariants(), Ok(()));
        send_all(&mut s, &mut g, now, &mut net, &path, &mut d);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_indexed_rack_scan_gives_the_walks_verdicts(
        bytes in prop::collection::vec(any::<u8>(), 16..256),
        base_us in prop_oneof![Just(0u64), 1u64..40_000],
        jitter_us in prop_oneof![Just(0u64), 1u64..30_000],
        loss in 0u8..60,
        ack_loss in 0u8..40,
        segments in 20u64..600,
        tlp in any::<bool>(),
    ) {
        run(&bytes, Path { base_us, jitter_us, loss, ack_loss }, segments, tlp)?;
    }
}

#[test]
fn same_instant_transmissions_keep_the_sequence_order() {
    let mut o = SendOrder::default();
    let t = |ms: u64| SimTime(Dur::from_millis(ms).0);
    o.push(Sent { at: t(1), seg: 5 });
    o.push(Sent { at: t(2), seg: 7 });
    // a retransmission of an older segment at the same instant goes before the new one
    o.push(Sent { at: t(2), seg: 3 });
    o.push(Sent { at: t(2), seg: 9 });
    let got: Vec<_> = o.later.iter().map(|e| (e.at, e.seg)).collect();
    assert_eq!(got, vec![(t(1), 5), (t(2), 3), (t(2), 7), (t(2), 9)]);
    // once the earlier ones are known to be sent before RACK's segment, an entry that
    // precedes them in send order joins them
    o.early.extend(o.later.drain(..2));
    o.push(Sent { at: t(2), seg: 1 });
    assert_eq!(o.early.iter().map(|e| e.seg).collect::<Vec<_>>(), vec![5, 1, 3]);
    assert_eq!(o.later.iter().map(|e| e.seg).collect::<Vec<_>>(), vec![7, 9]);
}
