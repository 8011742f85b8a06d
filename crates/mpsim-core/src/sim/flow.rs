//! Flows: a plain TCP connection (one subflow) or a Multipath TCP connection (one or more
//! subflows under a connection level), their application, and the handlers that move their
//! data: scheduling, transmission, reception, ACKs, timers and reinjection.

use super::record::TraceKind;
use super::{arm, handshake_rtt, Event, Simulation};
use crate::app::{App, Write};
use crate::cc::{Controller, SubflowState};
use crate::metrics::{DelayStats, Jitter};
use crate::net::{AckHeader, DataHeader, Header, Link, Packet, Route};
use crate::scenario::{AppSpec, FlowSpec, Scenario, Transport};
use crate::sched::{lowest_rtt_available, BlockedAction, Decision, Sched, SchedContext, SubflowView};
use crate::time::SimTime;
use crate::transport::mptcp::{dsn_of, Mapping, MptcpConn, Reinject};
use crate::transport::tcp::{ReceiverConfig, SenderConfig, TcpReceiver, TcpSender, TimerEvent};
use std::collections::VecDeque;

/// Bytes of MPTCP options: a DSS mapping on data segments, a DATA_ACK on ACKs (RFC 8684).
const DSS_MAPPING_BYTES: u32 = 16;
const DATA_ACK_BYTES: u32 = 8;
/// IPv4 + UDP headers.
pub(super) const UDP_HEADER_BYTES: u32 = 28;

/// A UDP flow's two ends: datagrams go out as the application writes, without feedback.
pub(super) struct UdpEnd {
    pub path_name: String,
    pub fwd: u32,
    pub sent: u64,
    pub received: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
}

/// Delivery figures of one class of writes (a frame type of a media stream).
pub(super) struct ClassStats {
    pub name: String,
    pub priority: u8,
    pub written: u64,
    pub refused: u64,
    pub delivered: u64,
    pub late: u64,
    pub delay: DelayStats,
    pub jitter: Jitter,
}

/// One TCP connection over one path: a subflow of a flow.
pub(super) struct Subflow {
    pub path_name: String,
    pub fwd: u32,
    pub rev: u32,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub rto_pending: Option<SimTime>,
    pub delack_pending: Option<SimTime>,
    pub backup: bool,
    /// False from a timeout until new data is acknowledged (Linux's potentially-failed mark).
    pub usable: bool,
    /// MPTCP: which DSN each chunk handed to this subflow carries, oldest first.
    pub map: VecDeque<Mapping>,
    /// MPTCP: everything below this subflow sequence was already offered for reinjection.
    pub reinjected_upto: u64,
    pub delivered_at_warmup: u64,
    pub delivered_at_sample: u64,
}

impl Subflow {
    fn view(&self) -> SubflowView {
        let w = self.sender.window();
        let rtt = self.sender.rtt();
        SubflowView {
            srtt: rtt.srtt(),
            latest_rtt: rtt.latest(),
            rtt_samples: rtt.samples(),
            rttvar: rtt.rttvar(),
            min_rtt: rtt.min_rtt(),
            rto: rtt.rto(),
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            mss: w.mss,
            in_flight: self.sender.in_flight(),
            queued: self.sender.unsent(),
            ca_state: self.sender.state(),
            backup: self.backup,
            usable: self.usable,
            segments_sent: self.sender.stats.segments_sent,
            retransmits: self.sender.stats.retransmits,
        }
    }

    /// Hands the chunk [dsn, dsn+len) to this subflow.
    fn assign(&mut self, dsn: u64, len: u64) {
        let seq = self.sender.write_chunk(len);
        self.map.push_back(Mapping { seq, dsn, len: len as u32 });
    }
}

/// A connection and its application.
pub(super) struct Flow {
    pub name: String,
    pub header: u32,
    pub mss: u32,
    pub snd_buf: u64,
    pub subs: Vec<Subflow>,
    /// The Multipath TCP connection level; None for plain TCP.
    pub mp: Option<Box<MptcpConn>>,
    /// A UDP flow (then `subs` is empty).
    pub udp: Option<UdpEnd>,
    pub background: bool,
    pub app: App,
    /// Per frame type of a media stream (empty for other applications).
    pub classes: Vec<ClassStats>,
    pub deadline: Option<crate::time::Dur>,
    /// Mean bit rate of a media stream (for the throughput-based PSNR).
    pub media_rate_bps: Option<f64>,
    pub start: SimTime,
    pub active: bool,
    pub total: Option<u64>,
    /// (end sequence, time written, class) of application writes not yet delivered.
    pub writes: VecDeque<(u64, SimTime, u8)>,
    pub delay: DelayStats,
    pub jitter: Jitter,
    /// Sum and count of the write delays since the last sample (for the delay series).
    pub interval_delay: (u128, u64),
    pub refused: u64,
    pub completed_at: Option<SimTime>,
    pub delivered_at_warmup: u64,
    pub sent_at_warmup: u64,
    pub delivered_at_sample: u64,
}

impl Flow {
    pub fn new(s: &Scenario, f: &FlowSpec, links: &[Link], routes: &[Route]) -> Flow {
        let multipath = f.scheduler.is_some();
        let udp = (f.transport == Transport::Udp).then(|| UdpEnd {
            path_name: s.paths[f.paths[0]].name.clone(),
            fwd: 2 * f.paths[0] as u32,
            sent: 0,
            received: 0,
            datagrams_sent: 0,
            datagrams_received: 0,
        });
        let mut subs = Vec::with_capacity(f.paths.len());
        for (k, &p) in f.paths.iter().enumerate().filter(|_| udp.is_none()) {
            let cfg = SenderConfig {
                mss: f.tcp.mss,
                initial_window: f.tcp.initial_window,
                rto: f.tcp.rto,
                min_rto: f.tcp.min_rto,
                max_rto: f.tcp.max_rto,
                initial_rto: f.tcp.initial_rto,
                frto: f.tcp.frto,
                rack: f.tcp.rack,
                tlp: f.tcp.tlp,
                prr: f.tcp.prr,
                ignore_rwnd: multipath,
                // the SYN-ACK announces the receive window before any data flows
                initial_rwnd: f.tcp.rcv_buf,
            };
            let rcfg = ReceiverConfig {
                // a subflow's data is held at the connection level: its own buffer never limits
                buffer: if multipath { u64::MAX / 4 } else { f.tcp.rcv_buf },
                ack_every: if f.tcp.delayed_ack { 2 } else { 1 },
                delack_timeout: f.tcp.delack_timeout,
            };
            let (fwd, rev) = (2 * p as u32, 2 * p as u32 + 1);
            let mut sender = TcpSender::new(&cfg, Controller::by_name(&f.cc).expect("validated controller name"));
            sender.seed_rtt(handshake_rtt(links, &routes[fwd as usize], &routes[rev as usize], f.tcp.header));
            subs.push(Subflow {
                path_name: s.paths[p].name.clone(),
                fwd,
                rev,
                sender,
                receiver: TcpReceiver::new(rcfg),
                rto_pending: None,
                delack_pending: None,
                backup: f.backup.get(k).copied().unwrap_or(false),
                usable: true,
                map: VecDeque::new(),
                reinjected_upto: 0,
                delivered_at_warmup: 0,
                delivered_at_sample: 0,
            });
        }
        let mp = f.scheduler.as_ref().map(|name| {
            Box::new(MptcpConn::new(Sched::by_name(name).expect("validated scheduler name"), f.tcp.rcv_buf))
        });
        let header = if udp.is_some() { UDP_HEADER_BYTES } else { f.tcp.header };
        let (classes, deadline, media_rate_bps) = match &f.app {
            AppSpec::Media(m) => (
                m.classes
                    .iter()
                    .map(|c| ClassStats {
                        name: c.name.clone(),
                        priority: c.priority,
                        written: 0,
                        refused: 0,
                        delivered: 0,
                        late: 0,
                        delay: DelayStats::default(),
                        jitter: Jitter::default(),
                    })
                    .collect(),
                m.deadline,
                Some(m.rate_bps()),
            ),
            _ => (Vec::new(), None, None),
        };
        Flow {
            name: f.name.clone(),
            header,
            mss: f.tcp.mss,
            snd_buf: f.tcp.snd_buf,
            subs,
            mp,
            udp,
            background: f.background,
            app: App::new(&f.app, s.seed, &f.name, header),
            classes,
            deadline,
            media_rate_bps,
            start: f.start,
            active: false,
            total: match f.app {
                AppSpec::Bulk { bytes } => bytes,
                _ => None,
            },
            writes: VecDeque::new(),
            delay: DelayStats::default(),
            jitter: Jitter::default(),
            interval_delay: (0, 0),
            refused: 0,
            completed_at: None,
            delivered_at_warmup: 0,
            sent_at_warmup: 0,
            delivered_at_sample: 0,
        }
    }

    /// Application bytes written so far.
    pub fn written(&self) -> u64 {
        match (&self.mp, &self.udp) {
            (Some(mp), _) => mp.app_limit,
            (_, Some(u)) => u.sent,
            _ => self.subs[0].sender.app_limit(),
        }
    }

    /// Application bytes acknowledged end to end (DATA_ACK, or the TCP ACK; UDP: all sent).
    pub fn acked(&self) -> u64 {
        match (&self.mp, &self.udp) {
            (Some(mp), _) => mp.data_una,
            (_, Some(u)) => u.sent,
            _ => self.subs[0].sender.snd_una(),
        }
    }

    /// Application bytes delivered to the receiving application (in order, except UDP).
    pub fn delivered(&self) -> u64 {
        match (&self.mp, &self.udp) {
            (Some(mp), _) => mp.rx.rcv_nxt(),
            (_, Some(u)) => u.received,
            _ => self.subs[0].receiver.rcv_nxt(),
        }
    }

    /// Payload bytes transmitted, retransmissions included.
    pub fn bytes_sent(&self) -> u64 {
        self.subs.iter().map(|s| s.sender.stats.bytes_sent).sum::<u64>() + self.udp.as_ref().map_or(0, |u| u.sent)
    }

    /// A short name of the transport: tcp, mptcp or udp.
    pub fn transport(&self) -> &'static str {
        match (&self.mp, &self.udp) {
            (Some(_), _) => "mptcp",
            (_, Some(_)) => "udp",
            _ => "tcp",
        }
    }

    pub fn mark_warmup(&mut self) {
        self.delivered_at_warmup = self.delivered();
        self.sent_at_warmup = self.bytes_sent();
        for s in &mut self.subs {
            s.delivered_at_warmup = s.receiver.rcv_nxt();
        }
    }

    fn subflow_states(&self, out: &mut Vec<SubflowState>) {
        out.clear();
        out.extend(self.subs.iter().map(|s| s.sender.subflow_state(s.usable && !s.backup)));
    }

    /// Records that the application's bytes up to `upto` reached the receiving application.
    fn app_delivered(&mut self, now: SimTime, upto: u64) {
        while let Some(&(end, t, class)) = self.writes.front() {
            if end > upto {
                break;
            }
            self.writes.pop_front();
            let d = now.since(t);
            self.delay.record(d);
            self.jitter.record(t, now);
            self.interval_delay.0 += d.0 as u128;
            self.interval_delay.1 += 1;
            if let Some(c) = self.classes.get_mut(class as usize) {
                c.delivered += 1;
                c.delay.record(d);
                c.jitter.record(t, now);
                if self.deadline.is_some_and(|dl| d > dl) {
                    c.late += 1;
                }
            }
        }
        if self.total == Some(upto) {
            self.completed_at = Some(now);
        }
    }
}

/// Hands chunks of new data (and pending reinjections) to subflows as the scheduler decides,
/// until it says wait, the data runs out or the receive window blocks.
fn schedule(fl: &mut Flow, views: &mut Vec<SubflowView>, now: SimTime) {
    let Flow { subs, mp, mss, .. } = fl;
    let Some(mp) = mp.as_deref_mut() else { return };
    let mss = *mss as u64;
    // every pass hands out a chunk or stops; the bound only guards against a faulty scheduler
    for _ in 0..100_000 {
        views.clear();
        views.extend(subs.iter().map(Subflow::view));
        // 1. data waiting to be sent again: the first entry a subflow can take now (an entry
        //    no subflow can take, such as a copy excluded from the only working subflow,
        //    must not hold back the ones behind it)
        while mp.reinject.front().is_some_and(|r| r.dsn + r.len as u64 <= mp.data_una) {
            mp.reinject.pop_front();
        }
        let mut served = false;
        for k in 0..mp.reinject.len().min(64) {
            let r = mp.reinject[k];
            let target = match r.target {
                Some(t) => (t < views.len() && views[t].available()).then_some(t),
                None => {
                    let mut others = views.clone();
                    if let Some(x) = r.exclude {
                        others[x].usable = false;
                    }
                    lowest_rtt_available(&others)
                }
            };
            let dead_target = r.target.is_some_and(|t| t >= views.len() || !views[t].usable);
            if target.is_none() && !dead_target && r.dsn + r.len as u64 > mp.data_una {
                continue;
            }
            mp.reinject.remove(k);
            if let Some(t) = target.filter(|_| r.dsn + r.len as u64 > mp.data_una) {
                subs[t].assign(r.dsn, r.len as u64);
                if r.target.is_none() {
                    mp.reinjections += 1;
                }
            }
            served = true;
            break;
        }
        if served {
            continue;
        }
        // 2. new data
        if mp.dsn_nxt >= mp.app_limit {
            mp.note_blocked(now, false);
            return;
        }
        let len = (mp.app_limit - mp.dsn_nxt).min(mss);
        let mut ctx = SchedContext {
            now,
            subflows: views,
            unscheduled: mp.unscheduled(),
            window_room: mp.right_edge.saturating_sub(mp.dsn_nxt),
            next_len: len,
            next_priority: mp.priority_at(mp.dsn_nxt),
            hol_subflow: None,
            hol_sent_on: 0,
            send_window: mp.right_edge.saturating_sub(mp.data_una),
        };
        if mp.dsn_nxt + len > mp.right_edge {
            // receive-buffer blocking: there is data, a subflow could send, the window says no
            let any_room = views.iter().any(|v| v.available());
            mp.note_blocked(now, any_room);
            if any_room {
                (ctx.hol_subflow, ctx.hol_sent_on) = head_of_line(subs, mp.data_una);
                let act: BlockedAction = mp.sched.on_window_blocked(&ctx);
                if let Some(p) = act.penalize {
                    subs[p].sender.penalize();
                    mp.penalties += 1;
                }
                if let Some(t) = act.reinject_on {
                    if let Some(m) = subs.iter().flat_map(|s| s.map.iter()).find(|m| m.dsn == mp.data_una) {
                        let (dsn, mlen) = (m.dsn, m.len);
                        subs[t].assign(dsn, mlen as u64);
                        mp.reinjections += 1;
                    }
                }
            }
            return;
        }
        mp.note_blocked(now, false);
        match mp.sched.pick(&ctx) {
            Decision::Send(i) if i < subs.len() && views[i].usable => {
                let copies = mp.sched.copies(&ctx, i);
                let dsn = mp.dsn_nxt;
                subs[i].assign(dsn, len);
                mp.dsn_nxt += len;
                for j in (0..subs.len().min(64)).filter(|&j| copies & (1 << j) != 0) {
                    mp.reinject.push_back(Reinject { dsn, len: len as u32, target: Some(j), exclude: None });
                }
            }
            _ => return,
        }
    }
}

/// The slowest subflow holding the oldest unacknowledged data, and the mask of subflows it
/// was sent on.
fn head_of_line(subs: &[Subflow], data_una: u64) -> (Option<usize>, u64) {
    let mut holder: Option<usize> = None;
    let mut mask = 0u64;
    let srtt = |i: usize| subs[i].sender.rtt().srtt().unwrap_or_default();
    for (i, s) in subs.iter().enumerate() {
        if s.map.iter().any(|m| m.dsn <= data_una && data_una < m.dsn + m.len as u64) {
            mask |= 1 << i.min(63);
            if holder.is_none_or(|h| srtt(i) > srtt(h)) {
                holder = Some(i);
            }
        }
    }
    (holder, mask)
}

impl Simulation {
    pub(super) fn on_flow_start(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.active = true;
        match fl.app {
            App::Bulk { .. } => self.refill(f),
            App::Paced(_) => self.queue.push(self.now, Event::AppTick(f as u32)),
        }
        self.send_data(f);
    }

    /// The application writes `n` bytes at `now`, in units of at most `unit` bytes for the
    /// delay records (a segment for bulk transfers; the whole write otherwise).
    fn app_write(fl: &mut Flow, now: SimTime, n: u64, unit: u64, priority: u8, class: u8) {
        let mut seq = fl.written();
        let end = seq + n;
        while seq < end {
            seq = (seq + unit).min(end);
            fl.writes.push_back((seq, now, class));
        }
        if let Some(c) = fl.classes.get_mut(class as usize) {
            c.written += 1;
        }
        match &mut fl.mp {
            Some(mp) => mp.write(n, priority),
            None => fl.subs[0].sender.write(n),
        }
    }

    /// Tops up the send buffer of a bulk application.
    pub(super) fn refill(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if !fl.active {
            return;
        }
        let space = fl.snd_buf.saturating_sub(fl.written() - fl.acked());
        let n = fl.app.bulk_write(space, fl.mss as u64);
        if n > 0 {
            let unit = fl.mss as u64;
            Self::app_write(fl, now, n, unit, 0, 0);
        }
    }

    pub(super) fn on_app_tick(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if !fl.active {
            return;
        }
        let (write, next) = fl.app.tick(now);
        if let Some(next) = next {
            self.queue.push(next, Event::AppTick(f as u32));
        }
        let Some(w) = write else { return };
        if fl.udp.is_some() {
            self.send_datagrams(f, w);
            return;
        }
        if fl.written() - fl.acked() + w.len <= fl.snd_buf {
            Self::app_write(fl, now, w.len, w.len, w.priority, w.class);
        } else {
            // the send buffer is full: the write is refused (dropped at the sender)
            fl.refused += w.len;
            if let Some(c) = fl.classes.get_mut(w.class as usize) {
                c.refused += 1;
            }
        }
        self.send_data(f);
    }

    /// Sends a UDP write as datagrams of at most one MSS.
    fn send_datagrams(&mut self, f: usize, w: Write) {
        let now = self.now;
        let mut left = w.len;
        while left > 0 {
            let fl = &mut self.flows[f];
            let len = left.min(fl.mss as u64) as u32;
            left -= len as u64;
            let u = fl.udp.as_mut().expect("a UDP flow");
            let h = DataHeader { seq: u.sent, dsn: u.sent, len, retx: false, sent_at: now };
            u.sent += len as u64;
            u.datagrams_sent += 1;
            let pkt = Packet { flow: f as u32, route: u.fwd, hop: 0, sub: 0, size: len + UDP_HEADER_BYTES, header: Header::Datagram(h) };
            let id = self.arena.alloc(pkt);
            self.rec.trace(now, f as u32, 0, TraceKind::Send, h.seq, h.seq, len, u32::MAX);
            self.forward(id);
        }
    }

    pub(super) fn on_datagram(&mut self, f: usize, h: &DataHeader) {
        let now = self.now;
        self.rec.packets_delivered += 1;
        self.rec.trace(now, f as u32, 0, TraceKind::Recv, h.seq, h.seq, h.len, u32::MAX);
        let fl = &mut self.flows[f];
        let u = fl.udp.as_mut().expect("a UDP flow");
        u.received += h.len as u64;
        u.datagrams_received += 1;
        let d = now.since(h.sent_at);
        fl.delay.record(d);
        fl.jitter.record(h.sent_at, now);
        fl.interval_delay.0 += d.0 as u128;
        fl.interval_delay.1 += 1;
    }

    /// Schedules new data (multipath) and lets every subflow transmit what it may.
    pub(super) fn send_data(&mut self, f: usize) {
        let now = self.now;
        if self.flows[f].mp.is_some() {
            schedule(&mut self.flows[f], &mut self.views, now);
        }
        for i in 0..self.flows[f].subs.len() {
            self.transmit(f, i);
        }
    }

    fn transmit(&mut self, f: usize, i: usize) {
        let now = self.now;
        loop {
            let fl = &mut self.flows[f];
            let extra = if fl.mp.is_some() { DSS_MAPPING_BYTES } else { 0 };
            let header = fl.header + extra;
            let sub = &mut fl.subs[i];
            let Some(seg) = sub.sender.next_segment(now) else { break };
            let dsn = if fl.mp.is_some() {
                dsn_of(&sub.map, seg.seq).expect("every chunk handed to a subflow has a mapping")
            } else {
                seg.seq
            };
            if self.check {
                let w = sub.sender.window();
                assert!(
                    seg.forced || sub.sender.in_flight() <= w.cwnd.max(seg.len as u64),
                    "flow {}: in flight {} above cwnd {}",
                    fl.name,
                    sub.sender.in_flight(),
                    w.cwnd
                );
                let edge = match &fl.mp {
                    Some(mp) => mp.right_edge,
                    None => sub.sender.snd_una() + sub.sender.rwnd(),
                };
                assert!(seg.retx || dsn + seg.len as u64 <= edge, "flow {}: sent beyond the receive window", fl.name);
            }
            let h = DataHeader { seq: seg.seq, dsn, len: seg.len, retx: seg.retx, sent_at: now };
            let pkt = Packet {
                flow: f as u32,
                route: sub.fwd,
                hop: 0,
                sub: i as u8,
                size: seg.len + header,
                header: Header::TcpData(h),
            };
            let id = self.arena.alloc(pkt);
            let kind = if seg.retx { TraceKind::Retx } else { TraceKind::Send };
            self.rec.trace(now, f as u32, i as u8, kind, seg.seq, dsn, seg.len, u32::MAX);
            self.forward(id);
        }
        let sub = &mut self.flows[f].subs[i];
        let ev = Event::Rto { flow: f as u32, sub: i as u16 };
        arm(&mut self.queue, &mut sub.rto_pending, sub.sender.timer_deadline(), ev);
    }

    pub(super) fn on_data(&mut self, f: usize, i: usize, h: &DataHeader) {
        let now = self.now;
        self.rec.packets_delivered += 1;
        self.rec.trace(now, f as u32, i as u8, TraceKind::Recv, h.seq, h.dsn, h.len, u32::MAX);
        let fl = &mut self.flows[f];
        let before = fl.delivered();
        let r = fl.subs[i].receiver.on_segment(now, h.seq, h.len);
        let delivered = match &mut fl.mp {
            Some(mp) => mp.on_receive(now, h.dsn, h.len).delivered,
            None => r.delivered,
        };
        if delivered > 0 {
            fl.app_delivered(now, before + delivered);
        }
        if self.check {
            let fl = &self.flows[f];
            let rx = fl.mp.as_ref().map_or(&fl.subs[i].receiver, |mp| &mp.rx);
            assert!(rx.buffered() <= rx.capacity(), "flow {}: receive buffer over its limit", fl.name);
            assert_eq!(rx.stats.beyond_window_drops, 0, "flow {}: data beyond the receive window", fl.name);
        }
        if r.ack_now {
            self.send_ack(f, i);
        } else {
            let sub = &mut self.flows[f].subs[i];
            let ev = Event::DelAck { flow: f as u32, sub: i as u16 };
            arm(&mut self.queue, &mut sub.delack_pending, sub.receiver.delack_deadline(), ev);
        }
    }

    fn send_ack(&mut self, f: usize, i: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        let mut h: AckHeader = fl.subs[i].receiver.make_ack();
        let mut size = fl.header;
        if let Some(mp) = &mut fl.mp {
            h.data_ack = mp.rx.rcv_nxt();
            h.set_wnd(mp.rx.window());
            size += DATA_ACK_BYTES;
        }
        // SACK option: 2 bytes + 8 per block, padded to 4
        let n = h.n_sack() as u32;
        size += if n > 0 { (2 + 8 * n).div_ceil(4) * 4 } else { 0 };
        let pkt = Packet { flow: f as u32, route: fl.subs[i].rev, hop: 0, sub: i as u8, size, header: Header::TcpAck(h) };
        let id = self.arena.alloc(pkt);
        self.rec.trace(now, f as u32, i as u8, TraceKind::Ack, h.ack, h.data_ack, 0, u32::MAX);
        self.forward(id);
    }

    pub(super) fn on_ack(&mut self, f: usize, i: usize, h: &AckHeader) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if fl.mp.is_some() {
            fl.subflow_states(&mut self.states);
        }
        let sub = &mut fl.subs[i];
        let una_before = sub.sender.snd_una();
        sub.sender.on_ack_coupled(now, h, &self.states, i);
        let una = sub.sender.snd_una();
        if una > una_before {
            sub.usable = true;
            while sub.map.front().is_some_and(|m| m.seq + m.len as u64 <= una) {
                sub.map.pop_front();
            }
        }
        if let Some(mp) = &mut fl.mp {
            mp.on_data_ack(h.data_ack, h.wnd());
        }
        self.states.clear();
        if self.check {
            let fl = &self.flows[f];
            let sub = &fl.subs[i];
            if let Err(e) = sub.sender.check_invariants() {
                panic!("flow {} subflow {i}: {e}", fl.name);
            }
            assert!(sub.sender.snd_una() <= sub.receiver.rcv_nxt(), "flow {}: acknowledged undelivered data", fl.name);
            assert!(fl.acked() <= fl.delivered(), "flow {}: DATA_ACK beyond delivered data", fl.name);
        }
        if matches!(self.flows[f].app, App::Bulk { .. }) {
            self.refill(f);
        }
        self.send_data(f);
    }

    pub(super) fn on_rto_event(&mut self, f: usize, i: usize) {
        let now = self.now;
        let sub = &mut self.flows[f].subs[i];
        if sub.rto_pending != Some(now) {
            return; // superseded by an earlier event
        }
        sub.rto_pending = None;
        match sub.sender.timer_deadline() {
            Some(d) if d <= now => {
                let fl = &mut self.flows[f];
                if fl.mp.is_some() {
                    fl.subflow_states(&mut self.states);
                }
                let sub = &mut fl.subs[i];
                let una = sub.sender.snd_una();
                let fired = sub.sender.on_timer_coupled(now, &self.states, i);
                self.states.clear();
                if fired == TimerEvent::Rto {
                    if fl.mp.is_some() {
                        Self::reinject_after_timeout(fl, i);
                    }
                    let dsn = fl.mp.as_ref().map_or(una, |_| dsn_of(&fl.subs[i].map, una).unwrap_or(0));
                    self.rec.trace(now, f as u32, i as u8, TraceKind::Timeout, una, dsn, 0, u32::MAX);
                }
                self.send_data(f);
            }
            d => {
                let ev = Event::Rto { flow: f as u32, sub: i as u16 };
                arm(&mut self.queue, &mut sub.rto_pending, d, ev);
            }
        }
    }

    /// A subflow timed out: mark it potentially failed, offer its unacknowledged data to the
    /// other subflows, and take back the chunks it had not sent yet (Linux reinjects the whole
    /// write queue of a failed subflow; otherwise a chunk queued there could hold the head of
    /// line for as long as the path is down).
    fn reinject_after_timeout(fl: &mut Flow, i: usize) {
        let Flow { subs, mp, .. } = fl;
        let Some(mp) = mp.as_deref_mut() else { return };
        let sub = &mut subs[i];
        sub.usable = false;
        let mut offered = Vec::new();
        // unsent chunks were never on the path and nobody else will send them: they must be
        // scheduled again, on any subflow, this one included
        for (seq, len) in sub.sender.take_back_unsent() {
            if let Some(dsn) = dsn_of(&sub.map, seq) {
                offered.push(Reinject { dsn, len: len as u32, target: None, exclude: None });
            }
        }
        let nxt = sub.sender.snd_nxt();
        while sub.map.back().is_some_and(|m| m.seq >= nxt) {
            sub.map.pop_back();
        }
        // copies of what is in flight on it, for the other subflows (the subflow still
        // retransmits its own data; whichever copy arrives second is discarded)
        if subs.len() > 1 {
            let sub = &mut subs[i];
            let from = sub.reinjected_upto;
            for (seq, len) in sub.sender.unacked_segments().filter(|&(seq, _)| seq >= from) {
                if let Some(dsn) = dsn_of(&sub.map, seq) {
                    if dsn + len as u64 > mp.data_una {
                        offered.push(Reinject { dsn, len, target: None, exclude: Some(i) });
                    }
                }
            }
            sub.reinjected_upto = sub.reinjected_upto.max(sub.sender.snd_nxt());
        }
        // ahead of other pending copies, in that order
        for r in offered.into_iter().rev() {
            mp.reinject.push_front(r);
        }
    }

    pub(super) fn on_delack_event(&mut self, f: usize, i: usize) {
        let now = self.now;
        let sub = &mut self.flows[f].subs[i];
        if sub.delack_pending != Some(now) {
            return;
        }
        sub.delack_pending = None;
        match sub.receiver.delack_deadline() {
            Some(d) if d <= now => self.send_ack(f, i),
            d => {
                let ev = Event::DelAck { flow: f as u32, sub: i as u16 };
                arm(&mut self.queue, &mut sub.delack_pending, d, ev);
            }
        }
    }
}
